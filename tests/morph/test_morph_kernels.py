"""The morph kernels against plain-Python references on random small inputs: Viterbi over a
candidate lattice against every candidate sequence, the lemma classifier against a max over
its candidates, and the averaged perceptron's epoch against the update it must make."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from structkit.lattice import kernels as K

M64 = (1 << 64) - 1


def slot(f: int, c: int, mask: int) -> int:
    x = ((f ^ (((c + 2) * 0x9E3779B97F4A7C15) & M64)) * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 31
    x = (x * 0x94D049BB133111EB) & M64
    x ^= x >> 29
    return x & mask


def emission(W, feats, i, t, parts_ptr, parts) -> float:
    mask = W.shape[0] - 1
    return sum(W[slot(int(f), int(parts[p]), mask)] for f in feats[i] for p in range(parts_ptr[t], parts_ptr[t + 1]))


def transition(W, prev, t, parts_ptr, parts) -> float:
    mask = W.shape[0] - 1
    pf, pu = (-1, -1) if prev < 0 else (int(parts[parts_ptr[prev]]), int(parts[parts_ptr[prev] + 1]))
    return (W[slot(K.TRANS_FULL ^ (pf + 7), int(parts[parts_ptr[t]]), mask)]
            + sum(W[slot(K.TRANS_UPOS ^ (pu + 7), int(parts[p]), mask)] for p in range(parts_ptr[t] + 1, parts_ptr[t + 1])))


def sequence_score(W, feats, a, seq, parts_ptr, parts) -> float:
    s, prev = 0.0, -1
    for k, t in enumerate(seq):
        s += emission(W, feats, a + k, t, parts_ptr, parts) + transition(W, prev, t, parts_ptr, parts)
        prev = t
    return s


def random_problem(rng, n_tags=6, n_tokens=5, bits=8, n_feats=3):
    """Random weights, tags with 2-4 parts (full tag, UPOS, others), tokens with 1-3 candidates."""
    W = rng.normal(size=1 << bits)
    ptr, parts = [0], []
    for t in range(n_tags):
        parts += [100 + t, 200 + t % 3] + list(rng.choice(10, size=rng.integers(0, 3), replace=False))
        ptr.append(len(parts))
    feats = rng.integers(0, 1 << 62, size=(n_tokens, n_feats)).astype(np.uint64)
    cands = [sorted(rng.choice(n_tags, size=rng.integers(1, 4), replace=False).tolist()) for _ in range(n_tokens)]
    cand_ptr = np.array([0] + np.cumsum([len(c) for c in cands]).tolist(), dtype=np.int64)
    return (W, feats, cand_ptr, np.array([x for c in cands for x in c], dtype=np.int64),
            np.array(ptr, dtype=np.int64), np.array(parts, dtype=np.int64), cands)


@pytest.mark.parametrize("seed", range(25))
def test_viterbi_is_the_best_candidate_sequence(seed):
    rng = np.random.default_rng(seed)
    W, feats, cand_ptr, cands, pptr, parts, lists = random_problem(rng, n_tokens=int(rng.integers(1, 6)))
    n = feats.shape[0]
    a = int(rng.integers(0, n))   # a sentence that starts inside the corpus arrays
    mask = W.shape[0] - 1
    emit = K.emissions(W, mask, feats, a, n, cand_ptr, cands, pptr, parts)
    for j in range(cand_ptr[a], cand_ptr[n]):
        i = int(np.searchsorted(cand_ptr, j, side="right") - 1)
        assert emit[j - cand_ptr[a]] == pytest.approx(emission(W, feats, i, int(cands[j]), pptr, parts))
    path, score = K.viterbi(W, mask, emit, a, n, cand_ptr, cands, pptr, parts)
    best = max(sequence_score(W, feats, a, seq, pptr, parts) for seq in itertools.product(*lists[a:n]))
    assert score == pytest.approx(best)
    assert all(t in lists[a + k] for k, t in enumerate(path))
    assert sequence_score(W, feats, a, path.tolist(), pptr, parts) == pytest.approx(best)
    out = np.full(n, -5, dtype=np.int64)
    K.tag_corpus(W, feats, np.array([0, a, n], dtype=np.int64), cand_ptr, cands, pptr, parts, out)
    assert out[a:].tolist() == path.tolist()


@pytest.mark.parametrize("seed", range(10))
def test_tag_epoch_makes_the_perceptron_update(seed):
    """One sentence: the kernel's prediction is Viterbi's, and the weights move by exactly
    phi(gold) - phi(pred) (U by the clock times that); no move when the prediction is right."""
    rng = np.random.default_rng(100 + seed)
    W, feats, cand_ptr, cands, pptr, parts, lists = random_problem(rng, bits=12)
    n = feats.shape[0]
    gold = np.array([rng.choice(c) for c in lists], dtype=np.int64)
    W0 = W.copy()
    U = np.zeros_like(W)
    cnt = np.array([3], dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    mask = W.shape[0] - 1
    path, _ = K.viterbi(W0, mask, K.emissions(W0, mask, feats, 0, n, cand_ptr, cands, pptr, parts), 0, n,
                        cand_ptr, cands, pptr, parts)
    ups = K.tag_epoch(W, U, cnt, feats, np.array([0, n], dtype=np.int64), np.array([0], dtype=np.int64),
                      cand_ptr, cands, pptr, parts, gold, out)
    assert out.tolist() == path.tolist() and cnt[0] == 4
    assert ups == int(path.tolist() != gold.tolist())
    # the score difference of gold over pred moved by ||phi(gold) - phi(pred)||^2 >= 0 (brute check)
    delta = W - W0
    assert np.allclose(U, 3 * delta)
    expect = np.zeros_like(W)

    def add(seq, v):
        prev = -1
        for k, t in enumerate(seq):
            for f in feats[k]:
                for p in range(pptr[t], pptr[t + 1]):
                    expect[slot(int(f), int(parts[p]), mask)] += v
            pf, pu = (-1, -1) if prev < 0 else (int(parts[pptr[prev]]), int(parts[pptr[prev] + 1]))
            expect[slot(K.TRANS_FULL ^ (pf + 7), int(parts[pptr[t]]), mask)] += v
            for p in range(pptr[t] + 1, pptr[t + 1]):
                expect[slot(K.TRANS_UPOS ^ (pu + 7), int(parts[p]), mask)] += v
            prev = t

    if path.tolist() != gold.tolist():
        add(gold.tolist(), 1.0)
        add(path.tolist(), -1.0)
    assert np.allclose(delta, expect)


@pytest.mark.parametrize("seed", range(10))
def test_classifier_picks_the_best_candidate(seed):
    rng = np.random.default_rng(200 + seed)
    W = rng.normal(size=1 << 8)
    feats = rng.integers(0, 1 << 62, size=(6, 4)).astype(np.uint64)
    lists = [sorted(rng.choice(9, size=rng.integers(1, 5), replace=False).tolist()) for _ in range(6)]
    ptr = np.array([0] + np.cumsum([len(c) for c in lists]).tolist(), dtype=np.int64)
    flat = np.array([x for c in lists for x in c], dtype=np.int64)
    cf = np.where(rng.random(flat.size) < 0.5, 0, rng.integers(1, 1 << 62, size=flat.size)).astype(np.uint64)
    out = np.zeros(6, dtype=np.int64)
    K.classify(W, feats, ptr, flat, cf, out)

    def scores(i):
        return [sum(W[slot(int(f), r, 255)] for f in feats[i]) + (W[slot(int(cf[j]), -1, 255)] if cf[j] else 0.0)
                for j, r in zip(range(ptr[i], ptr[i + 1]), lists[i])]

    for i, c in enumerate(lists):
        assert out[i] == c[int(np.argmax(scores(i)))]
    # an epoch over token 0: if wrong, it moves its gold candidate's score up and the predicted one's down
    gold = np.array([c[-1] for c in lists], dtype=np.int64)
    U, cnt, got = np.zeros_like(W), np.array([1], dtype=np.int64), np.zeros(6, dtype=np.int64)
    before = [scores(i) for i in range(6)]
    ups = K.class_epoch(W, U, cnt, feats, np.array([0], dtype=np.int64), ptr, flat, cf, gold, got)
    assert got[0] == out[0] and cnt[0] == 2 and ups == int(out[0] != gold[0])
    if out[0] != gold[0]:     # the update moved gold's score up against the prediction's
        after = scores(0)
        p = lists[0].index(out[0])
        assert after[-1] - after[p] > before[0][-1] - before[0][p]


def test_average_is_weights_minus_sums_over_clock():
    rng = np.random.default_rng(7)
    W, U = rng.normal(size=64), rng.normal(size=64)
    out = np.empty(64, dtype=np.float32)
    K.average(W, U, np.array([5], dtype=np.int64), out)
    assert np.allclose(out, W - U / 5, atol=1e-6)
