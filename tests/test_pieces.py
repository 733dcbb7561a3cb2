"""Epochs run in pieces (structkit.learn.pieces): the epoch kernels are called on consecutive
slices of the sentence order, so a signal is handled between calls instead of at the end of the
epoch (issue 30, item 7); the models are bit for bit those of one call per epoch."""
from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from structkit.learn import pieces


@pytest.fixture
def interruptible():
    """SIGINT as an interactive Python process has it (KeyboardInterrupt): a suite started in the
    background by a non-interactive shell (`make test &`, nohup) inherits it ignored, and these
    tests send themselves SIGINT."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK = os.path.join(ROOT, "structkit", "data", "sample", "chunk")
UD = os.path.join(ROOT, "structkit", "data", "sample", "ud")


@pytest.mark.parametrize("n,cap", [(0, None), (1, None), (100, None), (100, 1), (1000, 7)])
def test_slices_cover_the_order_once_in_order(monkeypatch, n, cap):
    monkeypatch.setattr(pieces, "MAX_SENTENCES", cap)
    order = np.random.default_rng(n).permutation(n)
    seen = []
    calls = pieces.run_in_pieces(order, lambda part: seen.append(part.copy()))
    got = np.concatenate(seen) if seen else np.zeros(0, dtype=order.dtype)
    assert np.array_equal(got, order) and calls == len(seen)
    if cap is not None and n:
        assert max(len(s) for s in seen) <= cap and calls >= n // cap


def _arrays(model) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.npz")
        model.save(p)
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k].copy() for k in z.files if not k.startswith("__")}


def _train_tagger(algo: str, **kw):
    from structkit.sequence.task import TaggerConfig, train_tagger

    cfg = TaggerConfig.for_learner("chunk", algo, epochs=2, **kw)
    return train_tagger(cfg, os.path.join(CHUNK, "train.txt"))


def _train_parser(algo: str):
    from structkit.parse.parser import ParserConfig, train_parser

    return train_parser(ParserConfig(algo=algo, epochs=2), os.path.join(UD, "train.conllu"))


def _train_reranker():
    from structkit.api import Reranker

    r = Reranker(features="ngram,trigger", epochs=3)
    return r.fit(os.path.join(ROOT, "tests", "fixtures", "nbest", "train_hyporadise.json"))


CASES = [("perceptron", lambda: _train_tagger("perceptron")),
         ("lookahead", lambda: _train_tagger("lookahead", depth=1)),
         ("kbest-pa", lambda: _train_tagger("kbest-pa")),
         ("kbest-mira", lambda: _train_tagger("kbest-mira")),
         ("kbest-sdm", lambda: _train_tagger("kbest-sdm")),
         ("kbest-larank", lambda: _train_tagger("kbest-larank")),
         ("olarank-exact", lambda: _train_tagger("olarank-exact")),
         ("olarank-greedy", lambda: _train_tagger("olarank-greedy", order=2)),
         ("larank-greedy-batch", lambda: _train_tagger("larank-greedy-batch")),
         ("perceptron-greedy", lambda: _train_tagger("perceptron-greedy")),
         ("parser-lookahead", lambda: _train_parser("lookahead")),
         ("parser-beam", lambda: _train_parser("beam")),
         ("reranker", _train_reranker)]


@pytest.mark.parametrize("name,train", CASES, ids=[c[0] for c in CASES])
def test_a_call_per_sentence_gives_the_same_model(monkeypatch, name, train):
    whole = _arrays(train())
    monkeypatch.setattr(pieces, "MAX_SENTENCES", 1)
    one_by_one = _arrays(train())
    assert whole.keys() == one_by_one.keys()
    for k in whole:
        assert np.array_equal(whole[k], one_by_one[k]), k


def test_a_signal_is_handled_between_pieces(monkeypatch, sk, tmp_path, interruptible):
    """SIGINT arriving during a piece stops training before the next piece (not at the end of
    the epoch): the kernel is wrapped to send it during its third call."""
    import structkit.sequence.learn.perceptron as perceptron

    real = perceptron.structured_epoch
    calls = []

    def wrapped(*args):
        calls.append(1)
        out = real(*args)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return out

    monkeypatch.setattr(perceptron, "structured_epoch", wrapped)
    monkeypatch.setattr(pieces, "MAX_SENTENCES", 2)
    r = sk("train", "--task", "chunk", "--train", os.path.join(CHUNK, "train.txt"), "-m", str(tmp_path / "m"))
    assert r.code == 130
    assert len(calls) == 3  # the epoch has more pieces than that: none ran after the signal
    assert not (tmp_path / "m").exists()


def test_parameter_mixing_in_pieces_gives_the_same_model(monkeypatch):
    whole = _arrays(_train_tagger("perceptron", jobs=2))
    monkeypatch.setattr(pieces, "MAX_SENTENCES", 1)
    one_by_one = _arrays(_train_tagger("perceptron", jobs=2))
    for k in whole:
        assert np.array_equal(whole[k], one_by_one[k]), k


def test_a_signal_stops_the_shard_threads_of_parameter_mixing(monkeypatch, interruptible):
    """--jobs N training: SIGINT reaches the main thread while the shards run in their threads;
    the shards then stop at their next piece (ipm.STOP) instead of finishing the epoch, which
    the pool's shutdown would wait for."""
    import structkit.sequence.learn.ipm as ipm

    real = ipm._run_kernel
    calls = []
    lock = threading.Lock()

    def wrapped(*args):
        with lock:   # the shards call this from two threads: each call gets its own number
            calls.append(1)
            n = len(calls)
        out = real(*args)
        if n == 2:   # (reading len(calls) here instead raced: the other shard's calls could
            os.kill(os.getpid(), signal.SIGINT)   # pass 2 before either looked, and none sent it)
        if n >= 2:  # the sample's pieces are tiny: give the main thread its turn to react
            ipm.STOP.wait(2)  # (a bound; the main thread sets STOP when it gets the signal)
        return out

    monkeypatch.setattr(ipm, "_run_kernel", wrapped)
    monkeypatch.setattr(pieces, "MAX_SENTENCES", 1)
    n_sentences = open(os.path.join(CHUNK, "train.txt")).read().strip().count("\n\n") + 1

    with pytest.raises(KeyboardInterrupt):
        _train_tagger("perceptron", jobs=2)
    # The interrupt may leave the pool's threads running in the background (the process would
    # wait for them at exit): join them, then count. One call per sentence would be needed
    # for the epoch; each shard stopped at its next piece.
    for th in threading.enumerate():
        if th.name.startswith("structkit-ipm"):
            for _ in range(1200):  # a thread the pool was starting is listed before it runs
                try:
                    th.join(120)  # a hang guard
                    break
                except RuntimeError:  # "cannot join thread before it is started": soon will be
                    threading.Event().wait(0.01)
    assert len(calls) <= 4 < n_sentences
    ipm.STOP.clear()


@pytest.mark.parametrize("cause,code,line", [("term", 143, "structkit: stopped by SIGTERM"),
                                             ("int", 130, "structkit: interrupted")])
def test_a_signal_wrapped_in_a_system_error_is_still_the_signal(monkeypatch, sk, tmp_path, cause, code, line):
    """A signal's exception raised while numba's dispatcher runs Python code surfaces as
    'SystemError: ... returned a result with an exception set' with the signal as its cause
    (seen once in four SIGTERMs during training): it exits as that signal, not with a traceback."""
    import structkit.cli as cli
    import structkit.sequence.learn.perceptron as perceptron

    def broken(*args):
        inner = cli._Signalled(signal.SIGTERM) if cause == "term" else KeyboardInterrupt()
        raise SystemError("<numba dispatcher> returned a result with an exception set") from inner

    monkeypatch.setattr(perceptron, "structured_epoch", broken)
    r = sk("train", "--task", "chunk", "--train", os.path.join(CHUNK, "train.txt"), "-m", str(tmp_path / "m"))
    assert r.code == code and r.err.strip() == line
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("signum,code,line", [(signal.SIGTERM, 143, "structkit: stopped by SIGTERM"),
                                              (signal.SIGINT, 130, "structkit: interrupted")])
def test_a_signal_lost_in_numbas_compiler_is_still_the_signal(monkeypatch, sk, tmp_path, signum, code, line,
                                                              interruptible):
    """Found while checking issue 41, item 6: SIGTERM while numba compiled (a cold cache) was
    raised inside a ctypes callback, which printed 'Exception ignored ... _Signalled: 15', and
    the compiler then failed with 'RuntimeError: no compiled object yet' and a traceback. A run
    that received a signal and then fails ends as that signal, in one line, and the exception
    swallowed where it could not propagate is not printed."""
    import sys

    import structkit.cli as cli
    import structkit.sequence.learn.perceptron as perceptron

    def broken(*args):
        handler = signal.getsignal(signum)   # what the command line installed for the signal
        try:
            handler(signum, None)
        except BaseException as e:           # as a ctypes callback does: reported, not raised
            sys.unraisablehook(type("U", (), {"exc_type": type(e), "exc_value": e, "exc_traceback": None,
                                              "err_msg": "Exception ignored", "object": None})())
        raise RuntimeError("no compiled object yet for <Library '_feature'>")

    monkeypatch.setattr(perceptron, "structured_epoch", broken)
    r = sk("train", "--task", "chunk", "--train", os.path.join(CHUNK, "train.txt"), "-m", str(tmp_path / "m"))
    assert r.code == code and r.err.strip() == line, r.err
    assert not (tmp_path / "m").exists()
    assert cli._RECEIVED == [signum]


def test_the_beam_parser_parses_in_pieces_with_the_same_trees(monkeypatch):
    from structkit.io.conllx import read_conllx

    parser = _train_parser("beam")
    sents = list(read_conllx(os.path.join(UD, "test.conllu")))
    whole = parser.parse_sentences(sents)
    monkeypatch.setattr(pieces, "MAX_SENTENCES", 1)
    assert parser.parse_sentences(sents) == whole
