"""The Python API (structkit.Tagger, Parser, Reranker): the README's examples run, Python
data gives the same models as files and the command line, round trips, and every mistake is
one UserError with a one-line message."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import FIXTURES, ROOT

import structkit
from structkit.errors import UserError

CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
POS_TRAIN = str(FIXTURES / "pos_train.txt")
NER_TRAIN = str(FIXTURES / "ner_train.txt")
PARSE_TRAIN = str(FIXTURES / "parse_train.conll")
NBEST_TRAIN = str(FIXTURES / "nbest" / "train_hyporadise.json")
NBEST_TEST = str(FIXTURES / "nbest" / "test_hyporadise.json")


def readme_examples() -> list[str]:
    """The ```python blocks of the guide's "Python API" page (docs/guide/python-api.md)."""
    section = (ROOT / "docs" / "guide" / "python-api.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def one_line_error(excinfo) -> str:
    msg = str(excinfo.value)
    assert isinstance(excinfo.value, UserError)
    assert msg and "\n" not in msg, msg
    return msg


# ---- the package ---------------------------------------------------------------------------------
def test_import_structkit_is_cheap():
    code = ("import sys, structkit; heavy = [m for m in ('numpy', 'numba', 'click') if m in sys.modules];"
            " assert not heavy, heavy")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_public_names():
    for name in ("Tagger", "Parser", "Reranker", "UserError", "StructkitError", "read_conll",
                 "write_conll", "read_text", "read_conllx", "write_conllx", "read_nbest",
                 "read_chosen", "load_conll", "load_conllx"):
        assert name in structkit.__all__ and getattr(structkit, name) is not None
    assert sorted(structkit.__all__) == sorted(["UserError", "StructkitError", "__version__",
                                                *structkit._LAZY])
    assert structkit.StructkitError is structkit.UserError is UserError
    # the format modules' functions behind argument checks, the same in structkit and structkit.io
    from structkit import api_io
    assert structkit.read_conll is api_io.read_conll is structkit.io.read_conll
    assert structkit.write_conllx is api_io.write_conllx is structkit.io.write_conllx
    assert structkit.io.read_nbest is api_io.read_nbest is structkit.read_nbest
    with pytest.raises(AttributeError):
        structkit.NoSuchThing  # noqa: B018


def test_readme_has_an_example_per_task():
    blocks = readme_examples()
    for cls in ("Tagger", "Parser", "Reranker", "UserError"):
        assert any(f"structkit.{cls}" in b for b in blocks), cls


@pytest.mark.parametrize("block", range(len(readme_examples())))
def test_readme_example_runs(block, tmp_path, monkeypatch, capsys):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "fixtures").symlink_to(FIXTURES)
    (tmp_path / "data").symlink_to(ROOT / "data")  # the shipped sample, as from the project folder
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_examples()[block], f"README.md python block {block + 1}", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out.strip()


# ---- tagging -------------------------------------------------------------------------------------
def test_tagger_lists_give_the_model_of_the_file():
    from structkit.sequence.task import TaggerConfig, train_tagger

    X, y = structkit.load_conll(CHUNK_TRAIN)
    from_lists = structkit.Tagger(task="chunk", epochs=3, seed=2).fit(X, y)
    from_file = structkit.Tagger(task="chunk", epochs=3, seed=2).fit(CHUNK_TRAIN)
    direct = train_tagger(TaggerConfig(task="chunk", epochs=3, seed=2), CHUNK_TRAIN)
    for t in (from_lists, from_file):
        w = t._model.weights
        assert t.labels == direct.labels
        for a, b in ((w.W, direct.weights.W), (w.T, direct.weights.T), (w.T2, direct.weights.T2)):
            assert np.array_equal(a, b)
    Xt, _ = structkit.load_conll(CHUNK_TEST)
    assert from_lists.predict(Xt) == from_file.predict(CHUNK_TEST)
    assert len(from_lists.history_) == 3
    assert from_lists.info["train_sentences"] == len(X)


def test_tagger_dev_as_lists_or_file():
    X, y = structkit.load_conll(CHUNK_TRAIN)
    Xd, yd = structkit.load_conll(CHUNK_TEST)
    a = structkit.Tagger(task="chunk", epochs=2).fit(X, y, dev=(Xd, yd))
    b = structkit.Tagger(task="chunk", epochs=2).fit(CHUNK_TRAIN, dev=CHUNK_TEST)
    assert [h["dev"] for h in a.history_] == [h["dev"] for h in b.history_]


def test_tagger_matches_the_command_line(sk, tmp_path):
    model = tmp_path / "chunk.model"
    out = tmp_path / "out.txt"
    assert sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", model, "--epochs", "3",
              "-q").code == 0
    assert sk("chunk", "--model", model, CHUNK_TEST, "-o", out).code == 0
    cli_pred = [[line.split()[-1] for line in block.splitlines()]
                for block in out.read_text().strip().split("\n\n")]
    tagger = structkit.Tagger(task="chunk", epochs=3).fit(*structkit.load_conll(CHUNK_TRAIN))
    assert tagger.predict(CHUNK_TEST) == cli_pred
    assert structkit.Tagger.load(model).predict(CHUNK_TEST) == cli_pred
    r = sk("eval", "--task", "chunk", out, "--json")
    assert r.code == 0
    assert json.loads(r.out) == json.loads(json.dumps(tagger.score(CHUNK_TEST)))
    Xt, yt = structkit.load_conll(CHUNK_TEST)
    assert tagger.score(Xt, yt) == tagger.score(CHUNK_TEST)


def test_tagger_save_load_round_trip(tmp_path):
    X, y = structkit.load_conll(NER_TRAIN)
    tagger = structkit.Tagger(task="ner", algo="greedy", epochs=2).fit(X, y)
    tagger.save(tmp_path / "ner.model")
    back = structkit.Tagger.load(tmp_path / "ner.model")
    assert back.task == "ner" and back.labels == tagger.labels
    assert back.predict(X) == tagger.predict(X)
    assert back.score(X, y) == tagger.score(X, y)
    assert back.predict(X, depth=1) == tagger.predict(X, depth=1)


def test_tagger_words_dicts_and_call():
    X, y = structkit.load_conll(POS_TRAIN)           # word TAG: no POS feature column
    words = [[w for (w,) in s] for s in X]
    tagger = structkit.Tagger(task="pos", epochs=3).fit(words, y)
    assert tagger.predict(words) == tagger.predict(POS_TRAIN)
    dicts = [[{"word": w} for w in s] for s in words]
    assert tagger.predict(dicts) == tagger.predict(words)
    pairs = tagger(" ".join(words[0]))
    assert [w for w, _ in pairs] == words[0]
    assert [t for _, t in pairs] == tagger.predict(words[:1])[0]
    assert tagger.score(words, y)["accuracy"] == tagger.score(POS_TRAIN)["accuracy"]


# ---- parsing -------------------------------------------------------------------------------------
def test_parser_lists_give_the_model_of_the_file():
    from structkit.parse.parser import ParserConfig, train_parser

    X, heads = structkit.load_conllx(PARSE_TRAIN)
    a = structkit.Parser(algo="lookahead", depth=1, epochs=3).fit(X, heads)
    b = structkit.Parser(algo="lookahead", depth=1, epochs=3).fit(PARSE_TRAIN)
    direct = train_parser(ParserConfig(algo="lookahead", depth=1, epochs=3), PARSE_TRAIN)
    assert np.array_equal(a._model.W, direct.W) and np.array_equal(b._model.W, direct.W)
    assert a.predict(X) == b.predict(PARSE_TRAIN)
    dicts = [[{"word": w, "pos": p} for w, p in s] for s in X]
    assert a.predict(dicts) == a.predict(X)


def test_parser_matches_the_command_line(sk, tmp_path):
    model = tmp_path / "p.model"
    out = tmp_path / "out.conll"
    assert sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--model", model, "--epochs", "2",
              "-q").code == 0
    assert sk("parse", "--model", model, PARSE_TRAIN, "-o", out).code == 0
    parser = structkit.Parser.load(model)
    _, cli_heads = structkit.load_conllx(out)
    assert parser.predict(PARSE_TRAIN) == cli_heads
    r = sk("eval", "--task", "parse", PARSE_TRAIN, out, "--json")
    assert r.code == 0
    # Parser.score is eval's dict: LAS null here (the unlabelled parser writes DEPREL '_')
    api, cli = json.loads(json.dumps(parser.score(PARSE_TRAIN))), json.loads(r.out)
    assert api == cli
    assert cli["labelled"] is False and cli["ptb"]["uas"] == api["uas"]


def test_labelled_parser_score_matches_the_command_line(sk, tmp_path):
    model, out = tmp_path / "b.model", tmp_path / "out.conll"
    assert sk("train", "--task", "parse", "--train", PARSE_TRAIN, "--model", model, "--epochs", "2",
              "-q").code == 0
    assert sk("parse", "--model", model, PARSE_TRAIN, "-o", out).code == 0
    cli = json.loads(sk("eval", "--task", "parse", PARSE_TRAIN, out, "--json").out)
    api = json.loads(json.dumps(structkit.Parser.load(model).score(PARSE_TRAIN)))
    assert api == cli and cli["labelled"] is False  # the fixture's gold has no labels
    from structkit.io.conllx import read_conllx

    pairs = structkit.Parser.load(model).predict(PARSE_TRAIN, labels=True)
    written = list(read_conllx(str(out)))
    assert [h for h, _ in pairs] == [s.heads for s in written]
    assert [list(d) for _, d in pairs] == [s.deprels for s in written]


def test_parser_save_load_round_trip(tmp_path):
    X, heads = structkit.load_conllx(PARSE_TRAIN)
    parser = structkit.Parser(algo="lookahead", epochs=2).fit(X, heads)
    parser.save(tmp_path / "p.model")
    back = structkit.Parser.load(tmp_path / "p.model")
    assert back.predict(X) == parser.predict(X)
    assert back.score(X, heads) == parser.score(X, heads)
    with pytest.raises(UserError) as ei:   # a parser model is not a tagger
        structkit.Tagger.load(tmp_path / "p.model")
    one_line_error(ei)


# ---- reranking -----------------------------------------------------------------------------------
def _jsonl_utterances() -> list[dict]:
    with open(NBEST_TRAIN, encoding="utf-8") as f:
        data = json.load(f)
    return [{"id": u["id"], "group": u["id"][:3], "reference": u["output"],
             "hypotheses": [{"text": t, "score": s} for t, s in zip(u["input"], u["am_score"])]}
            for u in data]


def test_reranker_lists_give_the_model_of_the_file(tmp_path):
    utts = _jsonl_utterances()
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(u) + "\n" for u in utts))
    a = structkit.Reranker(features="all", epochs=3).fit(utts)
    b = structkit.Reranker(features="all", epochs=3).fit(path)
    assert np.array_equal(a._model.weights, b._model.weights)
    assert a.predict(utts) == b.predict(path)
    refs = [u.pop("reference") for u in utts]
    c = structkit.Reranker(features="all", epochs=3).fit(utts, refs)
    assert np.array_equal(a._model.weights, c._model.weights)
    assert a.predict_index(path) == [u["hypotheses"].index(next(h for h in u["hypotheses"]
                                                                if h["text"] == t))
                                     for u, t in zip(utts, a.predict(path))]


def test_reranker_matches_the_command_line(sk, tmp_path):
    model = tmp_path / "r.npz"
    chosen = tmp_path / "chosen.txt"
    assert sk("train", "--task", "rerank", "--train", NBEST_TRAIN, "--model", model, "--epochs", "3",
              "-q").code == 0
    assert sk("rerank", "--model", model, NBEST_TEST, "-o", chosen).code == 0
    reranker = structkit.Reranker.load(model)
    assert reranker.predict(NBEST_TEST) == chosen.read_text().splitlines()
    own = structkit.Reranker(epochs=3).fit(NBEST_TRAIN)
    assert own.predict(NBEST_TEST) == reranker.predict(NBEST_TEST)
    r = sk("eval", "--task", "rerank", NBEST_TEST, chosen, "--json")
    assert r.code == 0
    assert json.loads(r.out) == json.loads(json.dumps(reranker.score(NBEST_TEST)))


def test_reranker_save_load_round_trip(tmp_path):
    reranker = structkit.Reranker(features="ngram,trigger", epochs=2).fit(NBEST_TRAIN)
    reranker.save(tmp_path / "r.model")
    back = structkit.Reranker.load(tmp_path / "r.model")
    assert back.predict(NBEST_TEST) == reranker.predict(NBEST_TEST)
    assert back.score(NBEST_TEST) == reranker.score(NBEST_TEST)


# ---- mistakes: one UserError, one line -----------------------------------------------------------
CX, CY = structkit.load_conll(CHUNK_TRAIN)
PX, PH = structkit.load_conllx(PARSE_TRAIN)

BAD = {
    "tagger: X and y differ in length": (lambda: structkit.Tagger(task="chunk").fit(CX, CY[:-1]),
                                         "but y has"),
    "tagger: labels and tokens differ": (lambda: structkit.Tagger(task="chunk").fit(
        CX[:2], [CY[0], CY[1][:-1]]), "sentence 2 has"),
    "tagger: unknown algo": (lambda: structkit.Tagger(task="chunk", algo="crf"), "crf"),
    "tagger: bad epochs": (lambda: structkit.Tagger(task="chunk", epochs=0),
                           "epochs must be a positive integer"),
    "tagger: epochs not a number": (lambda: structkit.Tagger(epochs="5"), "epochs must be an integer, got '5'"),
    "tagger: unknown option": (lambda: structkit.Tagger(task="chunk", epoch=3), "unknown option"),
    "tagger: unknown task": (lambda: structkit.Tagger(task="tagging"), "tagging"),
    "tagger: empty training data": (lambda: structkit.Tagger(task="pos").fit([], []), "no sentences"),
    "tagger: empty sentence": (lambda: structkit.Tagger(task="pos").fit([[]], [[]]), "empty"),
    "tagger: string sentence": (lambda: structkit.Tagger(task="pos").fit(["a b"], [["X", "Y"]]),
                                "string"),
    "tagger: bad chunk label": (lambda: structkit.Tagger(task="chunk").fit(
        [["a", "b"]], [["B-NP", "X-NP"]]), "X-NP"),
    "tagger: ragged columns": (lambda: structkit.Tagger(task="pos").fit(
        [[("a", "DT"), ("b",)]], [["X", "Y"]]), "columns"),
    "tagger: y missing": (lambda: structkit.Tagger(task="pos").fit([["a"]]), "y"),
    "tagger: not trained": (lambda: structkit.Tagger().predict([["a"]]), "not trained"),
    "tagger: missing file": (lambda: structkit.Tagger().fit("no/such/file.txt"), "no such file"),
    "tagger: not a model file": (lambda: structkit.Tagger.load(CHUNK_TRAIN), "not a structkit model"),
    "parser: bad depth": (lambda: structkit.Parser(algo="lookahead", depth=9), "depth"),
    "parser: unknown algo": (lambda: structkit.Parser(algo="eisner"), "eisner"),
    "parser: unknown option": (lambda: structkit.Parser(C=1.0), "unknown option"),
    "parser: empty training data": (lambda: structkit.Parser().fit([], []), "no sentences"),
    "parser: heads length": (lambda: structkit.Parser().fit(PX[:1], [PH[0][:-1]]), "heads"),
    "parser: not a tree": (lambda: structkit.Parser().fit([["a", "b"]], [[2, 1]]), "not a tree"),
    "parser: X and heads differ": (lambda: structkit.Parser().fit(PX, PH[:3]), "but heads has"),
    "reranker: unknown algo": (lambda: structkit.Reranker(algo="svm"), "svm"),
    "reranker: unknown features": (lambda: structkit.Reranker(features="ngram,bogus"), "bogus"),
    "reranker: bad lambda": (lambda: structkit.Reranker(lam="x"), "lam"),
    "reranker: empty training data": (lambda: structkit.Reranker().fit([]), "no utterances"),
    "reranker: no hypotheses": (lambda: structkit.Reranker().fit([{"hypotheses": [], "reference": "a"}]),
                                "no hypotheses"),
    "reranker: no reference": (lambda: structkit.Reranker().fit([["a b", "a c"]]), "reference"),
    "reranker: refs length": (lambda: structkit.Reranker().fit([["a b", "a c"]], ["a", "b"]),
                              "1 utterances but y has 2"),
    "tagger: bad template": (lambda: structkit.Tagger(task="chunk", templates=["w[0]|nope[1"]),
                             "nope"),
    "tagger: option of another learner": (lambda: structkit.Tagger(task="pos", k=3), "k"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_mistakes_raise_one_line_user_error(case):
    call, needle = BAD[case]
    with pytest.raises(UserError) as ei:
        call()
    assert needle in one_line_error(ei), str(ei.value)
