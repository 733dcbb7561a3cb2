"""The model card (structkit.card): what `structkit train` stores in every model file, and
`structkit info`. Scores are checked against `structkit eval` run on the same files, never
against hard-coded figures."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from clitools import assert_one_line_error, leftovers

import structkit
from structkit import card as cards
from structkit.datasets.paths import sample_dir

UD = sample_dir() / "ud"
CHUNK = sample_dir() / "chunk"


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def eval_json(sk, task: str, model, gold, folder, *extra) -> dict:
    """`structkit eval --task TASK --json GOLD PRED` for the output of the task's command."""
    from structkit.tasks import get_task

    t = get_task(task)
    inp = t.command.model_input(str(gold), str(folder))
    out = folder / f"{task}.pred"
    r = sk(t.command.name, "-m", model, inp, "-o", out, *extra)
    assert r.code == 0, r
    r = sk("eval", "--task", task, "--json", gold, out)
    assert r.code == 0, r
    return json.loads(r.out)


def same_numbers(card_scores: dict, evaluated: dict) -> None:
    """Every number of the card equals eval's; the card holds eval's top-level numbers."""
    assert card_scores
    for k, v in card_scores.items():
        if isinstance(v, dict):
            for a, b in v.items():
                assert evaluated[k][a] == pytest.approx(b, abs=0), (k, a)
        else:
            assert evaluated[k] == pytest.approx(v, abs=0), k
    tops = {k for k, v in evaluated.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert tops <= set(card_scores)


@pytest.mark.parametrize("task,train,dev,test,opts", [
    ("pos", UD / "train.conllu", UD / "dev.conllu", UD / "test.conllu", ("--epochs", "4")),
    ("parse", UD / "train.conllu", UD / "dev.conllu", UD / "test.conllu", ("--epochs", "3")),
    ("tokenize", UD / "train.conllu", UD / "dev.conllu", UD / "test.conllu", ("--epochs", "3")),
    ("chunk", CHUNK / "train.txt", None, CHUNK / "test.txt", ("--epochs", "3", "--algo", "perceptron")),
])
def test_card_fields_match_files_and_eval(sk, tmp_path, task, train, dev, test, opts):
    model = tmp_path / f"{task}.model"
    args = ["train", "--task", task, "--train", train, "--test", test, "-m", model, "-q", *opts]
    if dev is not None:
        args += ["--dev", dev]
    r = sk(*args)
    assert r.code == 0, r
    header, card = cards.read(str(model))
    assert card["task"] == task == header["task"]
    assert card["structkit_version"] == structkit.__version__
    # the data: the paths as given, the sha256 of each file
    assert card["data"]["train"]["path"] == str(train)
    assert card["data"]["train"]["sha256"] == sha(train)
    assert card["data"]["train"]["bytes"] == train.stat().st_size
    assert card["data"]["test"]["sha256"] == sha(test)
    # the options: the config the model holds, the flags given among them
    assert card["options"]["epochs"] == int(opts[1])
    assert card["options"]["task"] == task
    if "--algo" in opts:
        assert card["options"]["algo"] == opts[opts.index("--algo") + 1]
    # training works: CPU was spent, and no more than the cores could give in the wall time
    import os

    tr = card["training"]
    assert 0 < tr["cpu_seconds"] <= tr["wall_seconds"] * (os.cpu_count() or 1) + 0.05
    # the scores are what eval gives for the model's output on the same files
    same_numbers(card["test"]["scores"], eval_json(sk, task, model, test, tmp_path))
    if dev is not None:
        same_numbers(card["dev"]["scores"], eval_json(sk, task, model, dev, tmp_path))
        assert card["data"]["dev"]["sha256"] == sha(dev)
        during = card["dev"]["during_training"]
        assert 1 <= during["selected_epoch"] <= during["epochs_run"] <= int(opts[1])
    else:
        assert "dev" not in card


def test_dev_score_during_training_is_eval_score(sk, tmp_path):
    """The dev accuracy training measured for the kept epoch is eval's on that model."""
    model = tmp_path / "pos.model"
    r = sk("train", "--task", "pos", "--train", UD / "train.conllu", "--dev", UD / "dev.conllu",
           "--epochs", "5", "-m", model, "-q")
    assert r.code == 0, r
    _, card = cards.read(str(model))
    assert "test" not in card and "test" not in card["data"]
    during = card["dev"]["during_training"]["scores"]["accuracy"]
    assert during == pytest.approx(eval_json(sk, "pos", model, UD / "dev.conllu", tmp_path)["accuracy"])


def test_registered_corpus_and_licence(sk, tmp_path, monkeypatch):
    """A file of a registered corpus, found in $STRUCTKIT_DATA: the card names the corpus and
    its licence, and says the checksum is the registry's."""
    from structkit.datasets import registry

    data = tmp_path / "data"
    (data / "toycorpus").mkdir(parents=True)
    for n in ("train", "dev"):
        shutil.copy(UD / f"{n}.conllu", data / "toycorpus" / f"{n}.conllu")
    monkeypatch.setenv("STRUCTKIT_DATA", str(data))
    toy = registry.Corpus("toycorpus", "a toy corpus", "CC0 (test licence)",
                          (registry.File("toycorpus/train.conllu", "train", sha(UD / "train.conllu")),
                           registry.File("toycorpus/dev.conllu", "dev", "0" * 64)))
    registry.register(toy)
    try:
        model = tmp_path / "m.model"
        r = sk("train", "--task", "pos", "--train", "toycorpus/train.conllu", "--dev", "toycorpus/dev.conllu",
               "--epochs", "2", "-m", model, "-q")
        assert r.code == 0, r
        _, card = cards.read(str(model))
        train = card["data"]["train"]
        assert train["path"] == "toycorpus/train.conllu" == train["data_path"]
        assert (train["corpus"], train["licence"], train["split"]) == ("toycorpus", "CC0 (test licence)", "train")
        assert train["registry_sha256"] == "matches"
        assert card["data"]["dev"]["registry_sha256"] == "differs"
        r = sk("info", model)
        assert r.code == 0, r
        assert "corpus toycorpus" in r.out and "licence CC0 (test licence)" in r.out
    finally:
        registry.unregister("toycorpus")


def test_info_text_and_json(sk, tmp_path):
    model = tmp_path / "pos.model"
    r = sk("train", "--task", "pos", "--train", UD / "train.conllu", "--test", UD / "test.conllu",
           "--epochs", "2", "-m", model, "-q")
    assert r.code == 0, r
    _, card = cards.read(str(model))
    r = sk("info", model)
    assert r.code == 0, r
    assert r.err == ""
    text = r.out
    assert sha(UD / "train.conllu") in text
    assert f"structkit {structkit.__version__}" in text
    assert f"accuracy {card['test']['scores']['accuracy']:.2f}" in text
    assert "epochs=2" in text and "s CPU" in text
    r = sk("info", "--json", model)
    assert r.code == 0, r
    assert json.loads(r.out) == card


def test_info_refuses_what_is_not_a_model(sk, tmp_path):
    assert_one_line_error(sk("info", UD / "train.conllu"), "train.conllu", "not a structkit model")
    assert_one_line_error(sk("info", tmp_path / "missing.model"), "missing.model")
    model = tmp_path / "pos.model"
    assert sk("train", "--task", "pos", "--train", UD / "train.conllu", "--epochs", "1", "-m", model, "-q").code == 0
    raw = model.read_bytes()
    damaged = tmp_path / "damaged.model"
    damaged.write_bytes(raw[: len(raw) // 2])
    assert_one_line_error(sk("info", damaged), "damaged.model")
    assert_one_line_error(sk("info", "-"), "standard input")


def test_model_without_card_still_loads(sk, tmp_path):
    """A model written before cards (the task's own save, no card) loads, runs and has an
    `info` that says it has no card."""
    from structkit.sequence.task import SequenceTagger, TaggerConfig, train_tagger

    model = train_tagger(TaggerConfig(task="pos", epochs=1), str(UD / "train.conllu"))
    old = tmp_path / "old.model"
    model.save(str(old))          # outside card_for_saves: no card, as before
    header, card = cards.read(str(old))
    assert card is None and "card" not in header
    assert SequenceTagger.load(str(old)).labels == model.labels
    r = sk("tag", "-m", old, UD / "test.conllu")
    assert r.code == 0 and r.out, r
    r = sk("info", old)
    assert r.code == 0, r
    assert "card:       none" in r.out and str(UD / "train.conllu") in r.out
    r = sk("info", "--json", old)
    assert r.code == 0 and json.loads(r.out) is None


def test_bad_test_file_is_one_line_and_no_model(sk, tmp_path):
    model = tmp_path / "pos.model"
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tword\n", encoding="utf-8")
    assert_one_line_error(sk("train", "--task", "pos", "--train", UD / "train.conllu", "--test",
                             tmp_path / "nope.conllu", "-m", model, "-q"), "nope.conllu")
    r = sk("train", "--task", "pos", "--train", UD / "train.conllu", "--test", bad, "--epochs", "1",
           "-m", model, "-q")
    assert_one_line_error(r, "bad.conllu")
    assert not model.exists() and not leftovers(tmp_path)


def test_test_file_from_stdin(sk, tmp_path):
    model = tmp_path / "pos.model"
    r = sk("train", "--task", "pos", "--train", UD / "train.conllu", "--test", "-", "--epochs", "2",
           "-m", model, "-q", stdin=(UD / "test.conllu").read_bytes())
    assert r.code == 0, r
    _, card = cards.read(str(model))
    assert card["data"]["test"]["path"] == "<stdin>"
    assert card["data"]["test"]["sha256"] == sha(UD / "test.conllu")
    same_numbers(card["test"]["scores"], eval_json(sk, "pos", model, UD / "test.conllu", tmp_path))


def test_api_fit_and_save_write_a_card(tmp_path):
    from structkit.api import Tagger

    t = Tagger(task="pos", epochs=2).fit(str(UD / "train.conllu"), dev=str(UD / "dev.conllu"))
    t.save(tmp_path / "api.model")
    _, card = cards.read(str(tmp_path / "api.model"))
    assert card["data"]["train"]["sha256"] == sha(UD / "train.conllu")
    assert card["options"]["epochs"] == 2
    assert card["dev"]["scores"]["accuracy"] == pytest.approx(card["dev"]["during_training"]["scores"]["accuracy"])
    X = [["The", "dog", "runs"], ["A", "cat", "sleeps"]]
    y = [["DET", "NOUN", "VERB"]] * 2
    t = Tagger(task="pos", epochs=2).fit(X, y)
    t.save(tmp_path / "mem.model")
    _, card = cards.read(str(tmp_path / "mem.model"))
    assert card["data"]["train"]["sha256"] == t.info["train_sha256"]
    assert card["structkit_version"] == structkit.__version__


def test_dump_of_a_model_without_named_weights_points_to_info(sk, tmp_path, monkeypatch):
    """A task with no dump of its own (the tokenizer's, before it had one) says so in one line."""
    from structkit.tasks import Task, get_task

    model = tmp_path / "tok.model"
    assert sk("train", "--task", "tokenize", "--train", UD / "train.conllu", "--epochs", "1", "-m", model,
              "-q").code == 0
    assert sk("dump", "-m", model).code == 0    # the tokenizer's own dump (tests/tokenizer/test_tokenize_dump.py)
    monkeypatch.setattr(type(get_task("tokenize")), "dump_lines", Task.dump_lines)
    assert_one_line_error(sk("dump", "-m", model), "structkit info")


def test_a_task_without_a_command_gets_a_card_without_scores(sk, tmp_path):
    """A task without a command to run its models (as a new wing may be while it is built)
    still trains and gets a card, which says it was not scored."""
    import dataclasses

    from structkit.sequence.task import TaggerConfig
    from structkit.tasks import get_task

    bare = dataclasses.replace(get_task("pos"), name="barepos", command=None)
    assert not cards.scorable(bare) and cards.scorable(get_task("pos"))
    model, card = cards.train(bare, TaggerConfig(task="pos", epochs=2), str(UD / "train.conllu"),
                              str(UD / "dev.conllu"), str(UD / "test.conllu"))
    assert "scores" not in card.get("test", {}) and "not_scored" in card
    assert card["data"]["test"]["sha256"] == sha(UD / "test.conllu")
    # the dev accuracy training measured is the model's, as `structkit tag` + `eval` give it
    path = tmp_path / "bare.model"
    model.save(str(path))
    during = card["dev"]["during_training"]["scores"]["accuracy"]
    assert during == pytest.approx(eval_json(sk, "pos", path, UD / "dev.conllu", tmp_path)["accuracy"])


@pytest.mark.parametrize("name", ["chunk-fixed-width.npz", "parse-fixed-width.npz", "beam-fixed-width.npz"])
def test_info_on_the_old_format_fixtures(sk, name):
    """Model files of format version 1 (tests/fixtures/old_models), written long before cards:
    `info` shows what their header has and says there is no card."""
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "old_models" / name
    header, card = cards.read(str(path))
    assert card is None and header["format_version"] == 1
    r = sk("info", path)
    assert r.code == 0, r
    assert "card:       none" in r.out and f"task:       {header['task']}" in r.out
    assert header["info"]["train_sha256"] in r.out
    assert json.loads(sk("info", "--json", path).out) is None


def test_info_on_a_card_of_the_wrong_shape_is_one_line(sk, tmp_path):
    """The header is not covered by the arrays' checksum: a card edited into another shape is
    one line from `info` (and printed as stored by --json), not a traceback."""
    import numpy as np

    from structkit.model import save_model

    path = tmp_path / "odd.model"
    save_model(str(path), {"task": "pos", "card": {"data": [1, 2], "training": "x", "dev": 3}},
               {"a": np.zeros(2)})
    assert_one_line_error(sk("info", path), "damaged model card")
    r = sk("info", "--json", path)
    assert r.code == 0 and json.loads(r.out)["data"] == [1, 2]


def test_api_load_then_save_keeps_the_card(tmp_path, sk):
    from structkit.api import Parser, Tagger

    model = tmp_path / "pos.model"
    assert sk("train", "--task", "pos", "--train", UD / "train.conllu", "--test", UD / "test.conllu",
              "--epochs", "2", "-m", model, "-q").code == 0
    _, card = cards.read(str(model))
    t = Tagger.load(model)
    assert t.card == card
    t.save(tmp_path / "again.model")
    assert cards.read(str(tmp_path / "again.model"))[1] == card
    from pathlib import Path

    old = Parser.load(Path(__file__).parent / "fixtures" / "old_models" / "parse-fixed-width.npz")
    assert old.card is None
    old.save(tmp_path / "old-again.model")
    assert cards.read(str(tmp_path / "old-again.model"))[1] is None


def test_a_pipeline_card_names_the_parser_training_kept(sk, tmp_path):
    """The pipeline trains a parser on gold and one on jackknifed morphology and keeps one: the
    card says which, with the dev scores training chose it on (not the last epoch of whichever
    parser trained last), and the other's; no `algo=none` (its parts have their own learners)."""
    from pathlib import Path

    tiny = Path(__file__).resolve().parent / "fixtures" / "tiny_ud" / "train.conllu"
    model = tmp_path / "p.skm"
    r = sk("train", "--task", "pipeline", "--train", tiny, "--dev", tiny, "--model", model, "-q")
    assert r.code == 0, r.err
    out = sk("info", model).out
    info = structkit.load(str(model)).model.info
    kept, dev = info["parser_morphology"], info["parser_dev"]
    other = next(k for k in dev if k != kept)
    line = next(x for x in out.splitlines() if x.startswith("dev (training"))
    assert f"the parser on {kept} morphology kept): " in line
    assert f"las {dev[kept]['las']:.2f}" in line.split("(not kept")[0]
    assert f"not kept: the parser on {other} morphology: las {dev[other]['las']:.2f}" in line
    assert "algo=none" not in out and "last epoch" not in out
