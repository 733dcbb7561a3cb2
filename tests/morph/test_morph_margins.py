"""The margin kernels (``structkit.lattice.margins``) against brute force on random small lattices:
each candidate's max-marginal is the best score of the candidate sequences through it, the
joint margins and runner-ups follow, and the lemma classifier's margin is the score of its
choice minus the best other candidate's."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from structkit.lattice import kernels as K
from structkit.lattice.margins import class_margins, corpus_max_marginals, lattice_margins, max_marginals
from test_morph_kernels import random_problem, sequence_score, slot


@pytest.mark.parametrize("seed", range(25))
def test_max_marginals_are_the_best_sequences_through_each_candidate(seed):
    rng = np.random.default_rng(500 + seed)
    W, feats, cand_ptr, cands, pptr, parts, lists = random_problem(rng, n_tokens=int(rng.integers(1, 6)))
    n = feats.shape[0]
    a = int(rng.integers(0, n))   # a sentence starting inside the corpus arrays
    mm = max_marginals(W, feats, a, n, cand_ptr, cands, pptr, parts)
    seqs = list(itertools.product(*lists[a:n]))
    scores = {seq: sequence_score(W, feats, a, seq, pptr, parts) for seq in seqs}
    for i in range(a, n):
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            want = max(v for seq, v in scores.items() if seq[i - a] == cands[j])
            assert mm[j - cand_ptr[a]] == pytest.approx(want)
    # the corpus version writes each sentence's into place
    out = np.full(cands.size, np.nan)
    corpus_max_marginals(W, feats, np.array([0, a, n], dtype=np.int64), cand_ptr, cands, pptr, parts, out)
    assert out[cand_ptr[a]:cand_ptr[n]] == pytest.approx(mm)
    # margins of the Viterbi path: its max-marginal minus the best other candidate's
    mask = W.shape[0] - 1
    path, _ = K.viterbi(W, mask, K.emissions(W, mask, feats, a, n, cand_ptr, cands, pptr, parts), a, n,
                        cand_ptr, cands, pptr, parts)
    pred = np.zeros(n, dtype=np.int64)
    pred[a:] = path
    margin = np.zeros(n)
    runner = np.zeros(n, dtype=np.int64)
    lattice_margins(W, feats, np.array([a, n], dtype=np.int64), cand_ptr, cands, pptr, parts, pred, margin, runner)
    best = max(scores.values())
    for i in range(a, n):
        others = {seq[i - a]: v for seq, v in scores.items() if seq[i - a] != path[i - a]}
        others = {t: max(v for seq, v in scores.items() if seq[i - a] == t) for t in others}
        if not others:
            assert margin[i] == np.inf and runner[i] == -1
            continue
        r = max(others, key=others.get)
        assert margin[i] == pytest.approx(best - others[r])
        assert margin[i] >= -1e-9
        assert others[runner[i]] == pytest.approx(others[r])


@pytest.mark.parametrize("seed", range(15))
def test_class_margins_are_the_score_differences(seed):
    rng = np.random.default_rng(900 + seed)
    n, bits = int(rng.integers(1, 7)), 10
    W = rng.normal(size=1 << bits)
    mask = W.shape[0] - 1
    feats = rng.integers(0, 1 << 62, size=(n, 4)).astype(np.uint64)
    lists = [sorted(rng.choice(8, size=rng.integers(1, 4), replace=False).tolist()) for _ in range(n)]
    cand_ptr = np.array([0] + np.cumsum([len(c) for c in lists]).tolist(), dtype=np.int64)
    cands = np.array([x for c in lists for x in c], dtype=np.int64)
    cand_feats = np.where(rng.random(cands.size) < 0.5, 0, rng.integers(1, 1 << 62, size=cands.size)).astype(np.uint64)

    def score(i, j):
        s = sum(W[slot(int(f), int(cands[j]), mask)] for f in feats[i])
        return s + (W[slot(int(cand_feats[j]), -1, mask)] if cand_feats[j] else 0.0)

    pred = np.array([cands[max(range(cand_ptr[i], cand_ptr[i + 1]), key=lambda j: score(i, j))] for i in range(n)],
                    dtype=np.int64)
    margin, runner = np.zeros(n), np.zeros(n, dtype=np.int64)
    class_margins(W, feats, cand_ptr, cands, cand_feats, pred, margin, runner)
    for i in range(n):
        js = range(cand_ptr[i], cand_ptr[i + 1])
        mine = next(score(i, j) for j in js if cands[j] == pred[i])
        other = [(score(i, j), int(cands[j])) for j in js if cands[j] != pred[i]]
        if not other:
            assert margin[i] == np.inf and runner[i] == -1
        else:
            assert margin[i] == pytest.approx(mine - max(other)[0])
            assert runner[i] == max(other)[1]
