"""The pipeline's training decisions, each checked against what it must be by definition:
the jackknife (each fold analysed by a morph model that never saw it, trained on every other
sentence) and the choice between the parser on gold and on jackknifed morphology."""
from __future__ import annotations

from conftest import FIXTURES

TINY = FIXTURES / "tiny_ud" / "train.conllu"


def test_each_fold_is_analysed_by_a_model_trained_on_exactly_the_other_folds(monkeypatch):
    """A stand-in for the morph trainer records the sentences of the file each fold's model
    is trained on; its analysis of a word names the model that made it."""
    import structkit.morph.task as morph_task
    from structkit.pipeline.train import jackknife, read_training

    sents, _ = read_training(str(TINY))
    ids = [next(line for line in s.lines if line.startswith("# sent_id")) for s in sents]
    trained_on: list[set[str]] = []

    class Model:
        def __init__(self, k):
            self.k = k

        def analyse(self, words):
            return [[(f"m{self.k}", "X", "X", "_") for _ in ws] for ws in words]

    def fake_train(cfg, path, dev, *a, **kw):
        assert dev is None     # the folds train without dev, for the full model's epochs
        with open(path, encoding="utf-8") as f:
            trained_on.append({line.strip() for line in f if line.startswith("# sent_id")})
        return Model(len(trained_on) - 1)

    monkeypatch.setattr(morph_task, "train_morph", fake_train)
    folds = 3
    analyses = jackknife(str(TINY), sents, folds, epochs=2)
    assert len(trained_on) == folds
    for k in range(folds):
        assert trained_on[k] == {ids[i] for i in range(len(sents)) if i % folds != k}
    for i, a in enumerate(analyses):
        assert {w[0] for w in a} == {f"m{i % folds}"}, i   # fold i % folds's model, which lacks it


def test_the_parser_kept_is_the_better_on_dev():
    from structkit.pipeline.train import choose_parser

    assert choose_parser({"gold": {"las": 80.0}, "jackknifed": {"las": 81.5}}, ["jackknifed", "gold"]) == "jackknifed"
    assert choose_parser({"jackknifed": {"las": 79.0}, "gold": {"las": 80.0}}, ["jackknifed", "gold"]) == "gold"
    # a tie goes to the parser trained on what it will read: predicted morphology
    assert choose_parser({"gold": {"las": 80.0}, "jackknifed": {"las": 80.0}}, ["jackknifed", "gold"]) == "jackknifed"
    # no dev: the one trained
    assert choose_parser({}, ["gold"]) == "gold"


def test_training_names_every_stage_and_counts_its_epochs_honestly(tmp_path):
    """`train --task pipeline -v`: each stage named (the tokenizer, the morph model, each
    jackknife fold, each parser), its epochs counted from 1, every figure named, and the total
    in "epoch k/N" ends equal to the epochs run (the count follows the folds and early stops)."""
    import re

    from click.testing import CliRunner

    from structkit.cli import cli

    r = CliRunner().invoke(cli, ["train", "--task", "pipeline", "--train", str(TINY), "--dev", str(TINY),
                                 "--model", str(tmp_path / "p.skm"), "-v"])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("epoch ")]
    stages = [re.match(r"epoch \d+/\d+: (.+?) epoch \d+:", x).group(1) for x in lines]
    assert list(dict.fromkeys(stages)) == ["tokenize", "morph"] + [f"morph fold {k}/5" for k in range(1, 6)] \
        + ["parse (jackknifed morphology)", "parse (gold morphology)"]
    k, n = re.match(r"epoch (\d+)/(\d+):", lines[-1]).groups()
    assert int(k) == int(n) == len(lines)
    for x in lines:
        assert re.search(r"train (characters right|tags right|sentences with no update) \d+\.\d\d%", x), x
        assert "dev words 1" not in x and "train acc" not in x, x
    assert any("dev words F1 " in x for x in lines) and any("dev UAS " in x for x in lines)


def test_a_sentence_the_parser_refuses_stops_training_before_any_stage(monkeypatch, tmp_path):
    """Issue 41, item 13: a 50,000-word sentence trained the tokenizer and the morphology (53 s,
    1.35 GB) before the parser's length limit refused it; the limit is checked first now."""
    import pytest

    from structkit.errors import UserError
    from structkit.parse import labelled
    from structkit.pipeline import train as ptrain
    from structkit.pipeline.model import PipelineConfig

    def never(*a, **k):
        raise AssertionError("a stage trained before the length check")

    monkeypatch.setattr(labelled, "MAX_SENTENCE_WORDS", 5)   # the tiny file has longer sentences
    monkeypatch.setattr(ptrain, "train_tokenizer", never)
    monkeypatch.setattr(ptrain.morph_task, "train_morph", never)
    with pytest.raises(UserError) as e:
        ptrain.train_pipeline(PipelineConfig(), str(TINY))
    assert "the beam parser takes at most 5 words per sentence" in str(e.value)
    assert "train.conllu" in e.value.format()


def test_the_pipeline_keeps_the_parser_its_dev_scores_chose(monkeypatch):
    """With dev, parsers on jackknifed and on gold morphology are trained one after the other;
    only the better so far is kept (issue 42: the other's tables are freed before the next
    trains). Stand-ins: each 'parser' is its kind, and its dev LAS is set by hand, so the kept
    object must be the one with the better LAS (and jackknifed on a tie)."""
    import structkit.pipeline.train as train
    from structkit.pipeline.model import PipelineConfig

    for las, want in (({"jackknifed": 70.0, "gold": 75.0}, "gold"),
                      ({"jackknifed": 76.0, "gold": 75.0}, "jackknifed"),
                      ({"jackknifed": 75.0, "gold": 75.0}, "jackknifed")):
        made = []

        class Parser:
            info: dict = {}

            def __init__(self, kind):
                self.kind = kind

        def fake_parser(cfg, data, dev, *a, **kw):
            made.append(Parser(("jackknifed", "gold")[len(made)]))   # trained in this order
            return made[-1]

        monkeypatch.setattr(train, "train_parser_on", fake_parser)
        monkeypatch.setattr(train, "parser_dev_scores", lambda p, dev: {"las": las[p.kind], "uas": las[p.kind]})
        monkeypatch.setattr(train.PipelineModel, "check", lambda self, path: None)
        model = train.train_pipeline(PipelineConfig(parts=["morph", "parse"], epochs=1), str(TINY), str(TINY))
        assert [p.kind for p in made] == ["jackknifed", "gold"]
        assert model.parser.kind == want and model.info["parser_morphology"] == want
        assert model.info["parser_dev"] == {k: {"las": v, "uas": v} for k, v in las.items()}


def test_training_has_large_blocks_mapped_by_glibc(monkeypatch):
    """Issue 42 (training memory): pipeline training asks glibc's malloc for a fixed mmap
    threshold of 128 KB, ``mallopt(M_MMAP_THRESHOLD, 131072)``; M_MMAP_THRESHOLD is -3 in
    glibc's malloc.h. A C library without mallopt is left alone."""
    import ctypes
    import sys

    from structkit.pipeline import train

    calls = []

    class Libc:
        def mallopt(self, option, value):
            calls.append((option, value))
            return 1

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    train.large_blocks_mapped()
    assert calls == [(-3, 131072)]

    class NotGlibc:
        pass

    monkeypatch.setattr(ctypes, "CDLL", lambda name: NotGlibc())
    train.large_blocks_mapped()   # no mallopt: nothing raised
    assert calls == [(-3, 131072)]
