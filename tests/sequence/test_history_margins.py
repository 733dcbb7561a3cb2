"""Decision margins of the history-based decoders (lookahead search of depth D, greedy, OLaRank
greedy order K): the value of every label at every decision, the margins and the best
continuations, checked against a plain-Python brute force that enumerates every continuation,
on random small problems; and the command line's --scores for these models."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from structkit.sequence.features import Encoded
from structkit.sequence.chain import GreedyHistory, SecondOrder
from structkit.sequence.search.decoders import history_values, margins_from_values
from structkit.sequence.search.greedy import greedy_decode
from structkit.sequence.search.lookahead import lookahead_decode

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "structkit", "data", "sample")


def random_corpus(rng, n_features, lengths):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    rows = [rng.choice(n_features, size=int(rng.integers(0, 4)), replace=False) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate([np.asarray(r, dtype=np.int32) for r in rows] + [np.zeros(0, np.int32)])
    return Encoded(indptr, indices, offsets, None)


class Config:
    def __init__(self, depth, label_order, direction, search):
        self.depth, self.label_order, self.direction, self.search = depth, label_order, direction, search


# ---- the plain-Python reference ------------------------------------------------------------
def emission_rows(enc, W, a, b):
    return [[sum(W[f, y] for f in enc.indices[enc.indptr[t]:enc.indptr[t + 1]]) for y in range(W.shape[1])]
            for t in range(a, b)]


def ref_lookahead(E, T, T2, second_order, depth, history):
    """E: emission rows in decoding order; history: the labels decided, in decoding order.
    Per decision k: (the value of each label a = max over every continuation of the next
    d = min(depth, n-1-k) decisions of the path's score, the best continuation of each a)."""
    n, L = len(E), len(E[0])

    def step(k, p1, p2, y):
        s = E[k][y] + T[p1, y]
        return s + T2[p2, p1, y] if second_order else s

    out = []
    for k in range(n):
        p1 = history[k - 1] if k >= 1 else L
        p2 = history[k - 2] if k >= 2 else L
        d = min(depth, n - 1 - k)
        values, conts = [], []
        for a in range(L):
            best, best_c = -np.inf, None
            for c in itertools.product(range(L), repeat=d):  # lexicographic: the first best kept
                path = (a,) + c
                q1, q2, s = p1, p2, 0.0
                for j, y in enumerate(path):
                    s += step(k + j, q1, q2, y)
                    q1, q2 = y, q1
                if s > best:
                    best, best_c = s, c
            values.append(best)
            conts.append(best_c)
        out.append((values, conts))
    return out


def ref_greedy(rows, H, history):
    L = len(rows[0])
    out = []
    for t in range(len(rows)):
        v = list(rows[t])
        for s in range(1, H.shape[0] + 1):
            h = history[t - s] if t - s >= 0 else L
            for y in range(L):
                v[y] += H[s - 1, h, y]
        out.append(v)
    return out


def first_argmax(v):
    return max(range(len(v)), key=lambda a: (v[a], -a))


# ---- kernels against the reference ---------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("direction", ["ltr", "rtl"])
@pytest.mark.parametrize("label_order", [1, 2])
@pytest.mark.parametrize("search", ["dp", "brute"])
def test_lookahead_values_margins_and_continuations_equal_brute_force(seed, depth, direction,
                                                                      label_order, search):
    rng = np.random.default_rng(1000 * seed + 10 * depth + label_order)
    L, NF = int(rng.integers(2, 4)), 6
    enc = random_corpus(rng, NF, rng.integers(1, 6, size=3))
    second = label_order == 2
    w = SecondOrder(rng.normal(size=(NF, L)), rng.normal(size=(L + 1, L + 1)),
                    rng.normal(size=(L + 1, L + 1, L)) if second else np.zeros((1, 1, 1)))
    cfg = Config(depth, label_order, direction, search)
    labels = np.zeros(enc.n_tokens, dtype=np.int32)
    lookahead_decode(enc.indptr, enc.indices, enc.offsets, w, second, direction == "rtl", depth,
                     search == "dp", labels)
    V, cont = history_values("lookahead", enc, w, cfg, labels, continuations=True)
    margins, runner = margins_from_values(V, labels)
    assert cont.shape == (enc.n_tokens, depth)
    V2, cont_r = history_values("lookahead", enc, w, cfg, labels, continuations=True, continuation_of=runner)
    assert np.array_equal(V, V2)
    for s in range(enc.n_sentences):
        a, b = int(enc.offsets[s]), int(enc.offsets[s + 1])
        order = list(range(a, b))[::-1] if direction == "rtl" else list(range(a, b))
        E = [emission_rows(enc, w.W, t, t + 1)[0] for t in order]
        hist = [int(labels[t]) for t in order]
        ref = ref_lookahead(E, w.T, w.T2, second, depth, hist)
        for k, t in enumerate(order):
            values, conts = ref[k]
            assert np.allclose(V[t], values, rtol=0, atol=1e-9)
            # the decoder's label is the first best value, computed the same way
            assert labels[t] == first_argmax(list(V[t])) == first_argmax(values)
            others = [values[z] for z in range(L) if z != labels[t]]
            assert margins[t] == pytest.approx(values[labels[t]] - max(others), abs=1e-9)
            assert margins[t] >= 0 and runner[t] != labels[t]
            assert V[t, runner[t]] == max(V[t, z] for z in range(L) if z != labels[t])
            d = min(depth, b - a - 1 - k)
            assert tuple(cont[t, :d]) == conts[labels[t]] and all(cont[t, d:] == -1)
            assert tuple(cont_r[t, :d]) == conts[runner[t]] and all(cont_r[t, d:] == -1)


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("K", [1, 2])
def test_greedy_history_values_equal_brute_force(seed, K):
    rng = np.random.default_rng(seed + 77 * K)
    L, NF = int(rng.integers(1, 5)), 6
    enc = random_corpus(rng, NF, rng.integers(1, 7, size=3))
    w = GreedyHistory(rng.normal(size=(NF, L)), rng.normal(size=(K, L + 1, L)))
    labels = np.zeros(enc.n_tokens, dtype=np.int32)
    greedy_decode(enc.indptr, enc.indices, enc.offsets, w.W, w.H, labels)
    V, cont = history_values("greedy-history", enc, w, None, labels, continuations=True)
    margins, runner = margins_from_values(V, labels)
    assert cont.shape == (enc.n_tokens, 0)
    for s in range(enc.n_sentences):
        a, b = int(enc.offsets[s]), int(enc.offsets[s + 1])
        ref = ref_greedy(emission_rows(enc, w.W, a, b), w.H, [int(v) for v in labels[a:b]])
        for i, t in enumerate(range(a, b)):
            assert np.allclose(V[t], ref[i], rtol=0, atol=1e-9)
            assert labels[t] == first_argmax(ref[i])
            if L == 1:
                assert margins[t] == np.inf and runner[t] == -1
            else:
                want = ref[i][labels[t]] - max(v for z, v in enumerate(ref[i]) if z != labels[t])
                assert margins[t] == pytest.approx(want, abs=1e-9) and margins[t] >= 0


def test_values_follow_the_history_given():
    """With another labelling as the history, the values are those after that history (the
    margin of a label the decoder would not take is negative)."""
    rng = np.random.default_rng(5)
    L, NF = 3, 5
    enc = random_corpus(rng, NF, [6])
    w = SecondOrder(rng.normal(size=(NF, L)), rng.normal(size=(L + 1, L + 1)), np.zeros((1, 1, 1)))
    cfg = Config(1, 1, "ltr", "dp")
    hist = rng.integers(0, L, size=6).astype(np.int32)
    V, _ = history_values("lookahead", enc, w, cfg, hist)
    E = emission_rows(enc, w.W, 0, 6)
    ref = ref_lookahead(E, w.T, w.T2, False, 1, list(hist))
    assert np.allclose(V, [r[0] for r in ref])
    margins, _ = margins_from_values(V, hist)
    assert any(m < 0 for m in margins) or all(hist[t] == first_argmax(ref[t][0]) for t in range(6))
