"""structkit explain: labels, runner-ups, margins and feature contributions."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.clitools import assert_one_line_error

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "sample")
TEST = os.path.join(SAMPLE, "chunk", "test.txt")


@pytest.fixture(scope="module")
def chunker():
    from structkit.tasks.sequence import TaggerConfig, train_tagger

    return train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=2),
                        os.path.join(SAMPLE, "chunk", "train.txt"))


def test_explanations_agree_with_tagging_and_margins(chunker):
    from structkit.explain import explain_sentence
    from structkit.io.conllu import read_sequence
    from structkit.tasks.sequence import columns_from

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
    g = tmp_path / "g.model"
    assert sk("train", "--task", "chunk", "--train", os.path.join(SAMPLE, "chunk", "train.txt"), "--algo",
              "greedy", "--epochs", "1", "-m", g).code == 0
    assert_one_line_error(sk("explain", "-m", g, TEST), "explain covers Viterbi models")


def test_dump_shows_history_weights_of_greedy_models(sk, tmp_path):
    from structkit.tasks.sequence import SequenceTagger

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
