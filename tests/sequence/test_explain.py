"""structkit explain: labels, runner-ups, margins and feature contributions."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.clitools import assert_one_line_error

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "structkit", "data", "sample")
TEST = os.path.join(SAMPLE, "chunk", "test.txt")


@pytest.fixture(scope="module")
def chunker():
    from structkit.sequence.task import TaggerConfig, train_tagger

    return train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=2),
                        os.path.join(SAMPLE, "chunk", "train.txt"))


def test_explanations_agree_with_tagging_and_margins(chunker):
    from structkit.explain import explain_sentence
    from structkit.io.conllu import read_sequence
    from structkit.sequence.task import columns_from

    sent = next(iter(read_sequence(TEST)))
    expl = explain_sentence(chunker, sent, TEST)
    (_, labels), = list(chunker.tag_batches([sent], TEST))
    assert [e.label for e in expl] == labels[0]
    (_, _, margins), = list(chunker.tag_batches([sent], TEST, margins=True))
    assert np.allclose([e.margin for e in expl], margins[0])
    cols, _ = chunker.input_columns(len(sent.rows[0]), None)
    words, pos, _, offsets = columns_from([sent], cols)
    enc = chunker.encode(words, pos, offsets)
    W = chunker.weights.W
    li = chunker.label_index
    for t, e in enumerate(expl):
        assert e.runner_up != e.label and e.margin >= 0
        feats = enc.indices[enc.indptr[t]:enc.indptr[t + 1]]
        want = {chunker.features.feature_name(int(f)): W[f, li[e.label]] - W[f, li[e.runner_up]]
                for f in feats if W[f, li[e.label]] != W[f, li[e.runner_up]]}
        got = {p.name: p.weight for p in e.pushes if not p.name.startswith("transition")}
        assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k]) for k in want)
        assert [abs(p.weight) for p in e.pushes] == sorted((abs(p.weight) for p in e.pushes), reverse=True)


def test_explain_cli(sk, chunker, tmp_path):
    model = tmp_path / "c.model"
    chunker.save(str(model))
    r = sk("explain", "-m", model, TEST, "--top", "2")
    assert r.code == 0 and "runner-up" in r.out and "margin" in r.out
    r = sk("explain", "-m", model, TEST, "--sentence", "2", "--token", "3", "--json")
    rows = [json.loads(ln) for ln in r.out.splitlines()]
    assert r.code == 0 and len(rows) == 1 and rows[0]["index"] == 3 and rows[0]["margin"] >= 0
    assert_one_line_error(sk("explain", "-m", model), "give a FILE")
    assert_one_line_error(sk("explain", "-m", model, TEST, "--sentence", "100000"), "no sentence 100000")
    assert_one_line_error(sk("explain", "-m", model, TEST, "--token", "999"), "--token 999")


def test_explain_text_and_refusals(sk, tmp_path):
    ud = tmp_path / "u.model"
    assert sk("train", "--task", "pos", "--train", os.path.join(SAMPLE, "ud", "train.conllu"), "--epochs", "1",
              "-m", ud).code == 0
    r = sk("explain", "-m", ud, "--text", "The cat sat on the mat.")
    assert r.code == 0 and r.out.startswith("  1 The:")
    assert_one_line_error(sk("explain", "-m", ud, "--text", "The cat", "--depth", "2"), "--depth applies to")


def test_dump_shows_history_weights_of_greedy_models(sk, tmp_path):
    from structkit.sequence.task import SequenceTagger

    g = tmp_path / "olg.model"
    assert sk("train", "--task", "chunk", "--train", os.path.join(SAMPLE, "chunk", "train.txt"), "--algo",
              "olarank-greedy", "-m", g).code == 0
    r = sk("dump", "-m", g, "--top", "3")
    assert r.code == 0 and "strongest history weights" in r.out
    tg = SequenceTagger.load(str(g))
    H = tg.weights.H
    s_, a, b = np.unravel_index(int(np.argmax(np.abs(H))), H.shape)
    names = tg.labels + ["<S/E>"]
    first = r.out.split("strongest history weights")[1].splitlines()[1].split()
    assert first[:5] == [str(s_ + 1), "back", names[a], "->", names[b]]
    assert float(first[5]) == pytest.approx(H[s_, a, b], abs=1e-3)


HISTORY = [("greedy", {}), ("lookahead", {"depth": 2}),
           ("lookahead", {"depth": 1, "direction": "rtl", "label_order": 2}),
           ("lookahead", {"depth": 3, "search": "brute"}),
           ("olarank-greedy", {"order": 2})]


@pytest.fixture(scope="module", params=HISTORY, ids=lambda p: p[0] + "".join(f"-{k}{v}" for k, v in p[1].items()))
def history_tagger(request):
    from structkit.sequence.task import TaggerConfig, train_tagger

    algo, opts = request.param
    return train_tagger(TaggerConfig.for_learner("chunk", algo, epochs=2, **opts),
                        os.path.join(SAMPLE, "chunk", "train.txt"))


def test_history_explanations_agree_with_tagging_and_scores(history_tagger):
    """History-based models: the label is the tagger's, the margin the --scores margin, the
    continuation as long as the search looks (min(D, tokens left in decoding order)), and the
    contributions add up to the margin: the features' weight differences, the history weights,
    and the two continuations' difference."""
    from structkit.explain import explain_sentence
    from structkit.io.conllu import read_sequence
    from structkit.sequence.task import columns_from

    tg = history_tagger
    c = tg.config
    sents = list(read_sequence(TEST))[:4]
    (_, labels, margins), = list(tg.tag_batches(sents, TEST, margins=True))
    W, li = tg.weights.W, tg.label_index
    D = c.depth if c.spec.decoder == "lookahead" else 0
    for s, sent in enumerate(sents):
        expl = explain_sentence(tg, sent, TEST)
        n = len(expl)
        assert [e.label for e in expl] == labels[s]
        assert np.allclose([e.margin for e in expl], margins[s], rtol=0, atol=1e-9)
        cols, _ = tg.input_columns(len(sent.rows[0]), None)
        words, pos, _, offsets = columns_from([sent], cols)
        enc = tg.encode(words, pos, offsets)
        for t, e in enumerate(expl):
            assert e.runner_up != e.label and e.margin >= 0
            left = t if c.direction == "rtl" else n - 1 - t
            if c.spec.decoder == "lookahead":
                assert len(e.continuation) == min(D, left) == len(e.runner_up_continuation)
                assert all(x in li for x in e.continuation)
            else:
                assert e.continuation is None
            assert sum(p.weight for p in e.pushes) == pytest.approx(e.margin, abs=1e-6)
            feats = enc.indices[enc.indptr[t]:enc.indptr[t + 1]]
            want = {tg.features.feature_name(int(f)): W[f, li[e.label]] - W[f, li[e.runner_up]]
                    for f in feats if W[f, li[e.label]] != W[f, li[e.runner_up]]}
            got = {p.name: p.weight for p in e.pushes
                   if not p.name.startswith(("transition", "trigram", "history", "continuation"))}
            assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k]) for k in want)
        if c.spec.decoder == "greedy-history" and any(e.margin for e in expl):
            assert any(p.name.startswith("history ") for e in expl for p in e.pushes)


def test_explain_cli_history_model(sk, tmp_path):
    model = tmp_path / "la.model"
    assert sk("train", "--task", "chunk", "--train", os.path.join(SAMPLE, "chunk", "train.txt"), "--algo",
              "lookahead", "--depth", "2", "--epochs", "2", "-m", model).code == 0
    r = sk("explain", "-m", model, TEST, "--top", "2")
    assert r.code == 0 and "runner-up" in r.out and "continuation: " in r.out
    r = sk("explain", "-m", model, TEST, "--json")
    rows = [json.loads(ln) for ln in r.out.splitlines()]
    scored = sk("chunk", "-m", model, TEST, "--scores")
    first = scored.out.split("\n\n")[0].splitlines()
    assert len(rows) == len(first)
    for row, line in zip(rows, first):
        *_, label, margin = line.split()
        assert row["label"] == label and f"{row['margin']:.3f}" == margin
        assert len(row["continuation"]) == min(2, len(rows) - row["index"])
    r = sk("explain", "-m", model, TEST, "--json", "--depth", "0")
    assert r.code == 0 and all(json.loads(ln)["continuation"] == [] for ln in r.out.splitlines())
