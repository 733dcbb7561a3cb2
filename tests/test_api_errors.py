"""Issue 30 item 6: tracebacks that should be one line. Each bad call of the Python API is a
``structkit.UserError`` naming the argument (not a TypeError, AttributeError, OSError or
UnicodeEncodeError from deep inside); a model whose strings hold a lone surrogate is a damaged
model file; an on_epoch callback's own exception passes through unchanged and leaves no model
behind; overflowing rerank scores are one line without numpy's warnings before it."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import structkit
from structkit import UserError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
X = [["The", "dog", "runs"], ["A", "cat"]]
Y = [["DT", "NN", "VBZ"], ["DT", "NN"]]


@pytest.fixture(scope="module")
def tagger():
    return structkit.Tagger(task="pos", epochs=1).fit(X, Y)


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("m") / "chunk.model")
    structkit.Tagger(task="chunk", epochs=1).fit(str(FIXTURES / "chunk_train.txt")).save(path)
    return path


BAD_CALLS = {
    "Tagger.load(None)": (lambda t: structkit.Tagger.load(None), "path"),
    "Parser.load(None)": (lambda t: structkit.Parser.load(None), "path"),
    "Reranker.load(5)": (lambda t: structkit.Reranker.load(5), "path"),
    "Tagger.load(NUL)": (lambda t: structkit.Tagger.load("a\x00b"), "path"),
    "Tagger(task=None)": (lambda t: structkit.Tagger(task=None), "task"),
    "Tagger(task=[])": (lambda t: structkit.Tagger(task=[]), "task"),
    "templates=[1, 2]": (lambda t: structkit.Tagger(task="pos", templates=[1, 2]), "templates"),
    "surrogate in a token (fit)": (lambda t: structkit.Tagger(task="pos").fit([["a\udc80"]], [["NN"]]),
                                   "X: sentence 1, token 1"),
    "surrogate in a label": (lambda t: structkit.Tagger(task="pos").fit([["a"]], [["N\ud800"]]),
                             "label 1"),
    "surrogate in a token (predict)": (lambda t: t.predict([["a\udc80"]]), "X: sentence 1, token 1"),
    "surrogate in a string (call)": (lambda t: t("a \udc80"), "text"),
    "save(None)": (lambda t: t.save(None), "path"),
    "save(5)": (lambda t: t.save(5), "path"),
    "save(/dev/full)": (lambda t: t.save("/dev/full"), "/dev/full: cannot write the model"),
    "tokenize(None)": (lambda t: structkit.tokenize(None), "text"),
    "tokenize(b'x')": (lambda t: structkit.tokenize(b"x"), "text"),
    "tokenize(lang=[])": (lambda t: structkit.tokenize("x", lang=[]), "lang"),
    "tokenize(surrogate)": (lambda t: structkit.tokenize("a\udc80"), "text"),
    "read_conll(None)": (lambda t: structkit.read_conll(None), "path"),
    "read_conllx(5)": (lambda t: structkit.read_conllx(5), "path"),
    "read_conllu(b'x')": (lambda t: structkit.read_conllu(b"x"), "path"),
    "read_text(None)": (lambda t: structkit.read_text(None), "path"),
    "read_nbest(None)": (lambda t: structkit.read_nbest(None), "path"),
    "read_chosen(None, 1)": (lambda t: structkit.read_chosen(None, 1), "path"),
    "read_conll(stream=5)": (lambda t: structkit.read_conll("x", 5), "stream"),
    "read_conll(stream=[1])": (lambda t: list(structkit.read_conll("x", [1])), "lines of text"),
    "load_conll(None)": (lambda t: structkit.load_conll(None), "path"),
    "load_conllx(5)": (lambda t: structkit.load_conllx(5), "path"),
    "write_conll(None, ...)": (lambda t: structkit.write_conll(None, [], io.StringIO()), "sentences"),
    "write_conll(out=None)": (lambda t: structkit.write_conll([], [], None), "out"),
    "write_conll([1], ...)": (lambda t: structkit.write_conll([1], [["x"]], io.StringIO()), "sentences[0]"),
    "write_conllx(5, ...)": (lambda t: structkit.write_conllx(5, io.StringIO()), "sentences"),
    "write_conllx(stream=5)": (lambda t: structkit.write_conllx([], 5), "stream"),
    "write_conllu(5, ...)": (lambda t: structkit.write_conllu(5, io.StringIO()), "sentences"),
    "pos(123): a tagger called with a number": (lambda t: t(123), "text"),
    "fit(on_epoch=5)": (lambda t: structkit.Tagger(task="pos").fit(X, Y, on_epoch=5), "on_epoch"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_call_is_a_user_error_naming_the_argument(tagger, name):
    call, needle = BAD_CALLS[name]
    with pytest.raises(UserError) as ei:
        call(tagger)
    msg = str(ei.value)
    assert needle in msg and "\n" not in msg, msg


def test_write_to_a_closed_or_full_stream_is_a_user_error(tmp_path):
    sents = list(structkit.read_conll(CHUNK_TEST))[:2]
    preds = [["O"] * len(s.rows) for s in sents]
    closed = io.StringIO()
    closed.close()
    with pytest.raises(UserError, match="cannot write to out"):
        structkit.write_conll(sents, preds, closed)
    full = open("/dev/full", "w")
    try:
        with pytest.raises(UserError, match="cannot write to out: No space left"):
            structkit.write_conll(sents, preds, full)   # buffered: the writer flushes at its end
    finally:
        try:
            full.close()       # the file still holds what it could not write: ours to drop
        except OSError:
            pass
    out = io.StringIO()
    structkit.write_conll(sents, preds, out)
    assert out.getvalue().count("\n\n") == 2


def test_on_epoch_exception_passes_through_and_no_model_is_left(tmp_path):
    class Stop(Exception):
        pass

    stop = Stop("enough")

    def on_epoch(epoch, stats):
        if epoch == 2:
            raise stop

    t = structkit.Tagger(task="pos", epochs=3)
    with pytest.raises(Stop) as ei:
        t.fit(X, Y, on_epoch=on_epoch)
    assert ei.value is stop                     # unchanged: the caller's own exception
    assert len(t.history_) == 2                 # the epochs before it are recorded
    with pytest.raises(UserError, match="not trained"):
        t.save(str(tmp_path / "m.model"))      # no half-trained model to save
    assert os.listdir(tmp_path) == []
    # a trained estimator keeps its model when a later fit is stopped
    t.fit(X, Y)
    before = t.predict(X)
    with pytest.raises(Stop):
        t.fit(str(FIXTURES / "pos_train.txt"), on_epoch=on_epoch)
    assert t.predict(X) == before


def test_model_with_a_lone_surrogate_in_its_labels_is_one_line(chunk_model, tmp_path, sk):
    from clitools import assert_one_line_error
    from structkit.model import _checksum

    with np.load(chunk_model, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("__header__").tobytes().decode())
    off, data = arrays["labels__off"], arrays["labels__utf8"].tobytes()
    bad = "\udc80x".encode("utf-8", "surrogatepass")
    arrays["labels__utf8"] = np.frombuffer(bad + data[off[1]:], dtype=np.uint8).copy()
    arrays["labels__off"] = np.concatenate([[0], off[1:] - off[1] + len(bad)]).astype(np.int64)
    header["checksum"] = _checksum(arrays)
    path = tmp_path / "surrogate.model"
    with open(path, "wb") as f:
        np.savez_compressed(f, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8),
                            **arrays)
    r = sk("chunk", "--model", path, CHUNK_TEST)
    assert_one_line_error(r, str(path), "damaged model file", "not UTF-8")


OVERFLOW = [{"id": f"u{i}", "reference": "a b",
             "hypotheses": [{"text": "a b", "score": 1e308}, {"text": "a c", "score": -1e308},
                            {"text": "b c", "score": 1.7e308}]} for i in range(6)]


def test_rerank_scores_that_overflow_are_one_line_without_warnings(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # numpy's RuntimeWarning would fail the test
        with pytest.raises(UserError, match="span more than a float can hold"):
            structkit.Reranker(epochs=1).fit(OVERFLOW)
    p = tmp_path / "ovf.jsonl"
    p.write_text("".join(json.dumps(u) + "\n" for u in OVERFLOW))
    r = subprocess.run([sys.executable, "-m", "structkit", "train", "--task", "rerank", "--train",
                        str(p), "-m", str(tmp_path / "r.model")], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [r.stderr.strip()] and "span more than a float" in r.stderr, r.stderr


def test_rerank_of_overflowing_scores_with_a_trained_model_is_one_line(tmp_path):
    ok = [{"id": f"u{i}", "reference": "a b",
           "hypotheses": [{"text": "a b", "score": 1.7e308}, {"text": "a c", "score": 0.5e308}]}
          for i in range(6)]
    r = structkit.Reranker(epochs=1).fit(ok)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserError, match="span more than a float can hold"):
            r.predict(OVERFLOW)


@pytest.mark.parametrize("cls,data", [("Parser", "parse_train.conll"),
                                      ("Reranker", "nbest/train_hyporadise.json")])
def test_on_epoch_exception_passes_through_parser_and_reranker(cls, data):
    def on_epoch(epoch, stats):
        raise KeyError("mine")

    est = getattr(structkit, cls)(epochs=2)
    with pytest.raises(KeyError, match="mine"):
        est.fit(str(FIXTURES / data), on_epoch=on_epoch)
    with pytest.raises(UserError, match="not trained"):
        est.save("unused.model")
