"""Model selection on dev (--dev, --dev-split, --patience) and templates chosen from the input's
columns, on small slices of the public corpora."""
import json

import numpy as np
import pytest

from clitools import assert_one_line_error
from structkit.errors import UserError
from structkit.learn import selection
from structkit.model import load_model
from structkit.sequence.task import SequenceTagger, TaggerConfig, read_labelled, train_tagger


def _slice(src, dst, n_sentences: int) -> str:
    blocks = src.read_text(encoding="utf-8").strip().split("\n\n")[:n_sentences]
    dst.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return str(dst)


@pytest.fixture
def chunk_slice(corpus, tmp_path):
    return _slice(corpus("conll2000/train.txt"), tmp_path / "train.txt", 400)


def test_split_every_is_deterministic_and_matches_the_experiments():
    train, dev = selection.split_every(25, 0.1)
    assert dev == [9, 19]  # the 10th and 20th, as scripts/lookahead_experiments.py holds out
    assert sorted(train + dev) == list(range(25)) and not set(train) & set(dev)
    assert selection.split_every(25, 0.1) == (train, dev)
    assert selection.split_every(9, 0.25)[1] == [3, 7]
    with pytest.raises(UserError, match="no training or no development"):
        selection.split_every(1, 0.5)
    with pytest.raises(UserError, match="no training or no development"):
        selection.split_every(9, 0.1)


@pytest.mark.parametrize("value", [0, 0.0, -0.1, 0.6, 2, float("nan"), True, "0.1"])
def test_bad_dev_split_is_refused(value):
    with pytest.raises(UserError, match="--dev-split must be"):
        TaggerConfig(task="chunk", dev_split=value).validate()


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2"])
def test_bad_patience_is_refused(value):
    with pytest.raises(UserError, match="--patience must be"):
        TaggerConfig(task="chunk", patience=value).validate()


def test_cli_refuses_dev_with_dev_split_and_patience_without_dev(sk, chunk_slice, tmp_path):
    m = tmp_path / "m.skm"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", chunk_slice, "--dev", chunk_slice,
                             "--dev-split", "0.1", "-m", m), "--dev or --dev-split, not both")
    assert_one_line_error(sk("train", "--task", "chunk", "--train", chunk_slice, "--patience", "2",
                             "-m", m), "--patience needs development data")
    assert_one_line_error(sk("train", "--task", "chunk", "--train", chunk_slice, "--dev-split", "0",
                             "-m", m), "--dev-split must be")
    assert_one_line_error(sk("train", "--task", "chunk", "--train", chunk_slice, "--no-refit", "-m", m),
                          "--no-refit applies to --dev-split")
    assert not m.exists()


@pytest.mark.parametrize("algo", [{"algo": "perceptron"}, {"algo": "lookahead", "depth": 1},
                                  {"algo": "perceptron", "jobs": 2}])
def test_the_best_dev_epoch_is_kept(chunk_slice, algo):
    """--no-refit: the model kept is the one a run stopped at the best dev epoch writes (the
    earliest of equal scores). --refit (the default): the same epochs trained again on every
    sentence, as a run without a held-out part gives. The header says which epoch and its score."""
    seen, refit = {}, []

    def on_epoch(e, s):
        if "refit" in s:
            refit.append(s)
        else:
            seen[e] = s["dev"]["f1"]

    kept = train_tagger(TaggerConfig(task="chunk", epochs=6, dev_split=0.1, refit=False, **algo), chunk_slice,
                        on_epoch=on_epoch)
    assert sorted(seen) == list(range(1, 7)) and not refit
    best = max(seen.values())
    first_best = min(e for e, f in seen.items() if f == best)
    assert kept.info["selected_epoch"] == first_best
    assert kept.info["selected_dev"] == {"f1": best}
    assert kept.info["epochs_run"] == 6 and "refit" not in kept.info
    again = train_tagger(TaggerConfig(task="chunk", epochs=first_best, dev_split=0.1, refit=False, **algo),
                         chunk_slice)
    for a, b in zip(kept.weights, again.weights):
        if a is not None:
            assert np.array_equal(a, b)

    seen.clear()
    model = train_tagger(TaggerConfig(task="chunk", epochs=6, dev_split=0.1, **algo), chunk_slice,
                         on_epoch=on_epoch)
    assert sorted(seen) == list(range(1, 7)) and max(seen.values()) == best
    assert [s["epoch"] for s in refit] == list(range(1, first_best + 1))
    assert all(s["refit"] == first_best and "dev" not in s for s in refit)
    assert model.info["selected_epoch"] == first_best and model.info["selected_dev"] == {"f1": best}
    assert model.info["refit"] is True and model.info["refit_epochs"] == first_best
    n = len(read_labelled(chunk_slice, None).sentences)
    assert model.info["train_sentences"] == n and model.info["dev_sentences"] == n // 10
    whole = train_tagger(TaggerConfig(task="chunk", epochs=first_best, **algo), chunk_slice)
    assert model.features.n_features == whole.features.n_features > kept.features.n_features
    for a, b in zip(model.weights, whole.weights):
        if a is not None:
            assert np.array_equal(a, b)
    assert model.config.dev_split == 0.1 and model.config.epochs == 6


def test_dev_split_holds_out_every_kth_sentence(chunk_slice):
    model = train_tagger(TaggerConfig(task="chunk", epochs=1, dev_split=0.2, refit=False), chunk_slice)
    n = len(read_labelled(chunk_slice, None).sentences)
    assert model.info["dev_sentences"] == len(range(4, n, 5))
    assert model.info["train_sentences"] == n - model.info["dev_sentences"]


def test_patience_stops_early(chunk_slice):
    seen = []
    cfg = TaggerConfig(task="chunk", epochs=30, dev_split=0.1, patience=1)
    model = train_tagger(cfg, chunk_slice, on_epoch=lambda e, s: "refit" in s or seen.append(s["dev"]["f1"]))
    run = model.info["epochs_run"]
    assert run == len(seen) < 30
    # it stopped at the first epoch that did not improve on the best before it
    assert seen[-1] <= max(seen[:-1])
    assert all(seen[i] > max(seen[:i]) for i in range(1, len(seen) - 1))
    assert model.info["selected_epoch"] == run - 1


def test_without_dev_the_header_is_unchanged(chunk_slice, tmp_path):
    """No selection options in the header unless given: a model is what it was before."""
    model = train_tagger(TaggerConfig(task="chunk", epochs=1), chunk_slice)
    model.save(str(tmp_path / "m.skm"))
    header, _ = load_model(str(tmp_path / "m.skm"), ("chunk",), None)
    assert "dev_split" not in header["config"] and "patience" not in header["config"]
    assert "selected_epoch" not in header["info"]
    assert SequenceTagger.load(str(tmp_path / "m.skm")).config.dev_split is None


def test_cli_summary_header_and_metrics_say_which_epoch(sk, chunk_slice, tmp_path):
    m, js = tmp_path / "m.skm", tmp_path / "m.json"
    r = sk("train", "--task", "chunk", "--train", chunk_slice, "--dev-split", "0.1", "--epochs", "4",
           "--patience", "3", "-m", m, "--metrics-json", js, "-v")
    assert r.code == 0, r
    metrics = json.loads(js.read_text())
    scores = [e["dev"]["f1"] for e in metrics["epochs"]]
    best = scores.index(max(scores)) + 1
    assert metrics["config"]["selected_epoch"] == best
    assert metrics["config"]["config"]["dev_split"] == 0.1
    n = len(read_labelled(chunk_slice, None).sentences)
    assert (f"epoch {best} of {len(scores)} best on the held-out {n // 10} (dev f1 {max(scores):.2f}), "
            f"then {best} epochs on all {n} sentences") in r.err + r.out
    assert [e["epoch"] for e in metrics["refit_history"]] == list(range(1, best + 1))
    assert f"refit on all, epoch {best}/{best}:" in r.err
    header, _ = load_model(str(m), ("chunk",), None)
    assert header["info"]["selected_epoch"] == best and header["config"]["patience"] == 3


def test_config_file_takes_the_selection_options(sk, chunk_slice, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('task = "chunk"\nepochs = 2\ndev_split = 0.1\npatience = 1\n')
    r = sk("train", "--config", cfg, "--train", chunk_slice, "-m", tmp_path / "m.skm")
    assert r.code == 0, r
    header, _ = load_model(str(tmp_path / "m.skm"), ("chunk",), None)
    assert header["config"]["dev_split"] == 0.1 and "selected_epoch" in header["info"]
    cfg.write_text('task = "chunk"\ndev_split = 1.5\n')
    assert_one_line_error(sk("train", "--config", cfg, "--train", chunk_slice, "-m", tmp_path / "n.skm"),
                          "--dev-split must be")


def test_parser_keeps_the_best_dev_epoch(corpus, tmp_path):
    from structkit.parse.parser import ParserConfig, train_parser

    src = corpus("ud-english-partut/en_partut-ud-train.conllu")
    blocks = src.read_text(encoding="utf-8").strip().split("\n\n")[:150]
    path = tmp_path / "train.conllu"
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    for algo, key in (("lookahead", "uas"), ("beam", "las")):
        seen = {}
        cfg = ParserConfig(algo=algo, epochs=4, dev_split=0.2, **({"beam": 2} if algo == "beam" else {}))
        parser = train_parser(cfg, str(path),
                              on_epoch=lambda e, s, seen=seen, key=key: "refit" in s or seen.__setitem__(e, s["dev"][key]))
        best = max(seen.values())
        assert parser.info["selected_epoch"] == min(e for e, v in seen.items() if v == best)
        assert parser.info["selected_dev"] == {key: best}
        assert parser.info["refit"] and parser.info["refit_epochs"] == parser.info["selected_epoch"]
        assert parser.info["train_sentences"] == 150 and parser.info["dev_sentences"] == 30


# ---- templates chosen from the input ------------------------------------------------------
def test_default_templates_adapt_to_a_file_without_pos(sk, corpus, tmp_path):
    path = _slice(corpus("jnlpba/Genia4ERtask2.iob2"), tmp_path / "jn.txt", 60)
    r = sk("train", "--task", "ner", "--train", path, "--epochs", "1", "-m", tmp_path / "m.skm", "-v")
    assert r.code == 0, r
    assert "templates ner-nopos (the input has no POS column)" in r.err + r.out
    header, _ = load_model(str(tmp_path / "m.skm"), ("ner",), None)
    assert header["config"]["templates"] == "ner-nopos"
    # a set named explicitly is still checked against the columns
    assert_one_line_error(sk("train", "--task", "ner", "--train", path, "--templates", "ner",
                             "-m", tmp_path / "n.skm"), "need a POS column")


def test_default_templates_keep_pos_when_the_file_has_it(chunk_slice, tmp_path):
    from structkit.io.conll import Columns

    model = train_tagger(TaggerConfig(task="chunk", epochs=1), chunk_slice)
    assert model.config.templates == "chunk" and model.default_templates == "chunk"
    # word and label only: chunking falls back to its no-POS set, which reads no POS
    with open(chunk_slice, encoding="utf-8") as f:
        rows = [ln.split() for ln in f]
    nopos = tmp_path / "nopos.txt"
    nopos.write_text("".join(f"{r[0]} {r[-1]}\n" if r else "\n" for r in rows), encoding="utf-8")
    model = train_tagger(TaggerConfig(task="chunk", epochs=1), str(nopos))
    assert model.config.templates == "chunk-nopos"
    assert TaggerConfig(task="ner").default_templates(Columns.default(2)) == "ner-nopos"
    assert TaggerConfig(task="pos").default_templates(Columns.default(2)) == "pos"


def test_reranker_dev_split_and_patience(tmp_path):
    from structkit.io.nbest import read_nbest
    from structkit.rerank.task import RerankConfig, Reranker, train_on

    train = read_nbest("tests/fixtures/nbest/train_hyporadise.json")
    seen = []
    cfg = RerankConfig(epochs=10, dev_split=0.25, patience=2)
    cfg.validate()
    m = train_on(cfg, train, on_epoch=lambda e, s: "refit" in s or seen.append(s["dev"]["wer"]))
    best = min(seen)
    assert m.info["selected_epoch"] == m.info["chosen_epoch"] == seen.index(best) + 1
    assert m.info["selected_dev"] == {"wer": best} and m.info["epochs_run"] == len(seen)
    assert len(seen) == min(10, seen.index(best) + 1 + 2)
    assert m.info["train_utterances"] == len(train) and m.info["refit_epochs"] == seen.index(best) + 1
    held = RerankConfig(epochs=10, dev_split=0.25, patience=2, refit=False)
    held.validate()
    assert train_on(held, train).info["train_utterances"] == len(train) - len(range(3, len(train), 4))
    m.save(str(tmp_path / "r.npz"))
    assert Reranker.load(str(tmp_path / "r.npz")).config.patience == 2
    plain = RerankConfig(epochs=1)
    plain.validate()
    train_on(plain, train).save(str(tmp_path / "p.npz"))
    header, _ = load_model(str(tmp_path / "p.npz"), ("rerank",), None)
    assert "dev_split" not in header["config"] and "selected_epoch" not in header["info"]
    with pytest.raises(UserError, match="--patience needs development data"):
        train_on(RerankConfig(patience=1), train)
