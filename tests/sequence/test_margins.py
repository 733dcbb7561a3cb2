"""--scores: per-token margins from max-marginals, checked against brute force over every label
sequence on random small problems, and the command line that prints them."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from structkit.sequence.search.viterbi import decode_corpus, margins_corpus, max_marginals

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "structkit", "data", "sample")


def seq_score(E, T, ys) -> float:
    L = E.shape[1]
    s = T[L, ys[0]] + T[ys[-1], L]
    for t, y in enumerate(ys):
        s += E[t, y]
        if t:
            s += T[ys[t - 1], y]
    return s


def brute_max_marginals(E, T):
    n, L = E.shape
    m = np.full((n, L), -np.inf)
    for ys in itertools.product(range(L), repeat=n):
        s = seq_score(E, T, ys)
        for t, y in enumerate(ys):
            m[t, y] = max(m[t, y], s)
    return m


@pytest.mark.parametrize("seed", range(30))
def test_max_marginals_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, L = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    E = rng.normal(size=(n, L))
    T = rng.normal(size=(L + 1, L + 1))
    m = np.empty((n, L))
    max_marginals(E, n, T, m)
    assert np.allclose(m, brute_max_marginals(E, T))


@pytest.mark.parametrize("seed", range(20))
def test_margins_of_the_viterbi_labels_equal_brute_force(seed):
    """A corpus of random sentences in CSR form: each decoded label's margin is the best score
    minus the best score of a sequence with another label at that token."""
    rng = np.random.default_rng(100 + seed)
    L, F = int(rng.integers(2, 4)), 7
    W = rng.normal(size=(F, L))
    T = rng.normal(size=(L + 1, L + 1))
    lengths = rng.integers(1, 5, size=3)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    feats = [rng.choice(F, size=int(rng.integers(0, 4)), replace=False) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(f) for f in feats])]).astype(np.int64)
    indices = np.concatenate([np.asarray(f, dtype=np.int32) for f in feats] + [np.zeros(0, np.int32)])
    labels = np.zeros(n, dtype=np.int32)
    decode_corpus(indptr, indices, offsets, W, T, labels)
    got = np.zeros(n)
    margins_corpus(indptr, indices, offsets, W, T, labels, got)
    for s in range(len(lengths)):
        a, b = offsets[s], offsets[s + 1]
        E = np.array([W[indices[indptr[t]:indptr[t + 1]]].sum(axis=0) for t in range(a, b)])
        scores = {ys: seq_score(E, T, ys) for ys in itertools.product(range(L), repeat=b - a)}
        best = max(scores.values())
        for t in range(b - a):
            y = labels[a + t]
            other = max(v for ys, v in scores.items() if ys[t] != y)
            assert got[a + t] == pytest.approx(best - other)
            assert got[a + t] >= -1e-9  # the Viterbi label is never beaten


def test_cli_scores_column_and_conllu_misc(sk, tmp_path):
    model = tmp_path / "c.model"
    train = os.path.join(SAMPLE, "chunk", "train.txt")
    assert sk("train", "--task", "chunk", "--train", train, "--epochs", "2", "-m", model).code == 0
    test = os.path.join(SAMPLE, "chunk", "test.txt")
    plain = sk("chunk", "-m", model, test)
    scored = sk("chunk", "-m", model, test, "--scores")
    assert scored.code == 0
    for a, b in zip(plain.out.splitlines(), scored.out.splitlines()):
        if a:
            head, _, margin = b.rpartition(" ")
            assert head == a and float(margin) >= 0
    ud = tmp_path / "u.model"
    assert sk("train", "--task", "pos", "--train", os.path.join(SAMPLE, "ud", "train.conllu"), "--epochs", "1",
              "-m", ud).code == 0
    r = sk("tag", "-m", ud, os.path.join(SAMPLE, "ud", "test.conllu"), "--scores")
    rows = [ln.split("\t") for ln in r.out.splitlines() if ln and not ln.startswith("#")]
    assert r.code == 0 and all("Margin=" in c[9] for c in rows if "-" not in c[0] and "." not in c[0])


HISTORY_MODELS = [("greedy", []), ("lookahead", ["--depth", "2"]),
                  ("lookahead", ["--depth", "1", "--direction", "rtl", "--label-order", "2"]),
                  ("lookahead", ["--depth", "2", "--search", "brute"]),
                  ("olarank-greedy", ["--order", "2"])]


@pytest.mark.parametrize("algo,opts", HISTORY_MODELS)
def test_cli_scores_of_history_based_models(sk, tmp_path, algo, opts):
    """--scores on a history-based model: the labels are those without --scores, and the
    margin column is the decision margin the plain-Python brute force of
    tests/sequence/test_history_margins.py gives on the model's own weights."""
    from structkit.io.conllu import read_sequence
    from structkit.sequence.task import SequenceTagger, columns_from
    from test_history_margins import emission_rows, ref_greedy, ref_lookahead

    model = tmp_path / "h.model"
    train = os.path.join(SAMPLE, "chunk", "train.txt")
    assert sk("train", "--task", "chunk", "--train", train, "--algo", algo, "--epochs", "2", *opts,
              "-m", model).code == 0
    test = os.path.join(SAMPLE, "chunk", "test.txt")
    plain = sk("chunk", "-m", model, test)
    scored = sk("chunk", "-m", model, test, "--scores")
    assert plain.code == 0 and scored.code == 0
    pl, sc = plain.out.splitlines(), scored.out.splitlines()
    assert len(pl) == len(sc)
    margins = []
    for a, b in zip(pl, sc):
        if a:
            head, _, margin = b.rpartition(" ")
            assert head == a and float(margin) >= 0
            margins.append(float(margin))
    # the first sentence's margins against brute force over every continuation
    tg = SequenceTagger.load(str(model))
    c = tg.config
    sent = next(iter(read_sequence(test)))
    cols, _ = tg.input_columns(len(sent.rows[0]), None)
    words, pos, _, offsets = columns_from([sent], cols)
    enc = tg.encode(words, pos, offsets)
    n = len(words)
    labels = [tg.label_index[ln.split()[-1]] for ln in pl[:n]]
    rows = emission_rows(enc, tg.weights.W, 0, n)
    if c.spec.decoder == "greedy-history":
        values = ref_greedy(rows, tg.weights.H, labels)
    else:
        order = list(range(n))[::-1] if c.direction == "rtl" else list(range(n))
        ref = ref_lookahead([rows[t] for t in order], tg.weights.T, tg.weights.T2, c.label_order == 2,
                            c.depth, [labels[t] for t in order])
        values = [None] * n
        for k, t in enumerate(order):
            values[t] = ref[k][0]
    for t in range(n):
        want = values[t][labels[t]] - max(v for z, v in enumerate(values[t]) if z != labels[t])
        assert margins[t] == pytest.approx(want, abs=6e-4)
    # --depth at tagging time: the margins of that search
    if c.spec.decoder == "lookahead" and c.search == "dp":
        r = sk("chunk", "-m", model, test, "--scores", "--depth", "3")
        assert r.code == 0 and all(float(ln.rpartition(" ")[2]) >= 0 for ln in r.out.splitlines() if ln)
