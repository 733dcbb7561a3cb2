"""structkit.sequence.search.kbest (list Viterbi, exact k best sequences) against brute-force enumeration
of all L**n label sequences (itertools.product) on seeded random small problems.

Conventions: E[n, L] emissions, T[L+1, L+1] with index L the boundary (T[L, y] start, T[y, L]
end). The brute-force score is accumulated in the kernels' order (start + E[0], then
(+ T) + E per step, then + end), so scores can be compared bit-for-bit where that is asserted.

Tie rule under test (integer-valued scores, i.e. exact arithmetic, so lots of ties): the kernel
returns exactly the first min(k, L**n) sequences ordered by score descending, then by the labels
read from the LAST position backwards ascending (viterbi's rule).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from structkit.sequence.search.kbest import kbest_viterbi, kbest_viterbi_loss, loss_augmented_emissions
from structkit.sequence.search.viterbi import viterbi

KMAX = 20


def all_sequences(n, L):
    return np.array(list(itertools.product(range(L), repeat=n)), dtype=np.int64).reshape(-1, n)


def brute_scores(E, n, T, Y):
    """Scores of all rows of Y (same accumulation order as the kernels)."""
    L = E.shape[1]
    s = T[L, Y[:, 0]] + E[0, Y[:, 0]]
    for t in range(1, n):
        s = (s + T[Y[:, t - 1], Y[:, t]]) + E[t, Y[:, t]]
    return s + T[Y[:, n - 1], L]


def seq_score(E, n, T, y):
    L = E.shape[1]
    s = T[L, y[0]] + E[0, y[0]]
    for t in range(1, n):
        s = (s + T[y[t - 1], y[t]]) + E[t, y[t]]
    return s + T[y[n - 1], L]


def brute_order(Y, s):
    """Indices of Y sorted by score descending, then labels from the last position backwards."""
    n = Y.shape[1]
    keys = tuple(Y[:, t] for t in range(n)) + (-s,)
    return np.lexsort(keys)


def run_kbest(E, n, T, k, extra_rows=0):
    seqs = np.full((max(k, 1) + extra_rows, n + extra_rows), -7, dtype=np.int32)
    scores = np.full(max(k, 1) + extra_rows, np.nan)
    m = kbest_viterbi(E, n, T, k, seqs, scores)
    return m, seqs, scores


def random_problem(rng, n, L, integer):
    rows = n + int(rng.integers(0, 2))  # sometimes a longer emission buffer, as in decode_corpus
    if integer:
        E = rng.integers(-2, 3, size=(rows, L)).astype(np.float64)
        T = rng.integers(-2, 3, size=(L + 1, L + 1)).astype(np.float64)
    else:
        E = rng.normal(size=(rows, L))
        T = rng.normal(size=(L + 1, L + 1))
    return E, T


def check_against_brute(E, n, T, k, m, seqs, scores, brute_s, Y, exact):
    L = E.shape[1]
    total = L ** n
    assert m == min(k, total)
    got = scores[:m]
    out = seqs[:m, :n]
    # labels in range, nothing written past row m / column n
    assert out.min() >= 0 and out.max() < L
    assert np.all(seqs[m:] == -7) and np.all(seqs[:, n:] == -7)
    # distinct sequences
    assert len({tuple(r) for r in out.tolist()}) == m
    # best first
    assert np.all(got[:-1] >= got[1:])
    # each reported score is the score of its sequence (bit-identical accumulation order)
    for j in range(m):
        assert got[j] == seq_score(E, n, T, out[j])
    # top-k multiset of all scores
    top = np.sort(brute_s)[::-1][:m]
    if exact:
        assert np.array_equal(got, top)
    else:
        np.testing.assert_allclose(got, top, rtol=0, atol=1e-9)
    # first sequence = viterbi (score and sequence, tie rule included)
    vout = np.empty(n, dtype=np.int32)
    vbest = viterbi(E, n, T, vout)
    assert got[0] == vbest
    assert np.array_equal(out[0], vout)


def sizes(rng):
    n = int(rng.integers(1, 6))
    L = int(rng.integers(1, 5))
    k = int(rng.integers(1, KMAX + 1))
    return n, L, k


@pytest.mark.parametrize("integer", [False, True])
def test_kbest_against_brute_force(integer):
    rng = np.random.default_rng(1234 + integer)
    for _ in range(150):
        n, L, k = sizes(rng)
        E, T = random_problem(rng, n, L, integer)
        Y = all_sequences(n, L)
        bs = brute_scores(E, n, T, Y)
        m, seqs, scores = run_kbest(E, n, T, k, extra_rows=int(rng.integers(0, 2)))
        check_against_brute(E, n, T, k, m, seqs, scores, bs, Y, exact=integer)
        if integer:
            # exact arithmetic: the documented total order, including which of the sequences
            # tied at the k-th score are returned
            order = brute_order(Y, bs)[:m]
            assert np.array_equal(seqs[:m, :n], Y[order])
            assert np.array_equal(scores[:m], bs[order])


def test_k_larger_than_all_sequences_returns_all():
    rng = np.random.default_rng(7)
    for n, L in [(1, 1), (1, 3), (2, 2), (3, 2), (2, 4), (5, 1)]:
        E, T = random_problem(rng, n, L, integer=True)
        m, seqs, scores = run_kbest(E, n, T, KMAX)
        assert m == L ** n
        everything = set(itertools.product(range(L), repeat=n))
        assert {tuple(r) for r in seqs[:m, :n].tolist()} == everything


@pytest.mark.parametrize("integer", [False, True])
def test_k1_equals_viterbi(integer):
    rng = np.random.default_rng(99 + integer)
    for _ in range(60):
        n, L, _k = sizes(rng)
        E, T = random_problem(rng, n, L, integer)
        m, seqs, scores = run_kbest(E, n, T, 1)
        vout = np.empty(n, dtype=np.int32)
        vbest = viterbi(E, n, T, vout)
        assert m == 1
        assert scores[0] == vbest
        assert np.array_equal(seqs[0, :n], vout)


@pytest.mark.parametrize("integer", [False, True])
def test_loss_augmented_against_brute_force(integer):
    rng = np.random.default_rng(555 + integer)
    for _ in range(80):
        n, L, k = sizes(rng)
        E, T = random_problem(rng, n, L, integer)
        gold = rng.integers(0, L, size=n).astype(np.int32)
        A = np.empty((n, L))
        loss_augmented_emissions(E, n, gold, A)
        for t in range(n):
            for y in range(L):
                assert A[t, y] == E[t, y] + (1.0 if y != gold[t] else 0.0)
        Y = all_sequences(n, L)
        hamming = (Y != gold[None, :]).sum(axis=1)
        plain = brute_scores(E, n, T, Y)
        augmented = brute_scores(A, n, T, Y)  # same accumulation order as the kernel
        np.testing.assert_allclose(augmented, plain + hamming, rtol=0, atol=1e-9)
        seqs = np.full((k, n), -7, dtype=np.int32)
        scores = np.full(k, np.nan)
        m = kbest_viterbi_loss(E, n, T, gold, k, seqs, scores)
        check_against_brute(A, n, T, k, m, seqs, scores, augmented, Y, exact=integer)
        top = np.sort(plain + hamming)[::-1][:m]
        np.testing.assert_allclose(scores[:m], top, rtol=0, atol=1e-9)
        for j in range(m):
            h = int((seqs[j, :n] != gold).sum())
            assert abs(scores[j] - (seq_score(E, n, T, seqs[j, :n]) + h)) <= 1e-9
        # same as kbest_viterbi on the augmented emissions
        m2, seqs2, scores2 = run_kbest(A, n, T, k)
        assert m2 == m
        assert np.array_equal(seqs2[:m, :n], seqs[:m]) and np.array_equal(scores2[:m], scores[:m])


def test_forbidden_transitions_minus_inf():
    """-inf transitions (forbidden) still give min(k, L**n) distinct sequences, -inf last."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n, L, k = sizes(rng)
        E, T = random_problem(rng, n, L, integer=True)
        T[rng.random(T.shape) < 0.3] = -np.inf
        Y = all_sequences(n, L)
        bs = brute_scores(E, n, T, Y)
        m, seqs, scores = run_kbest(E, n, T, k)
        check_against_brute(E, n, T, k, m, seqs, scores, bs, Y, exact=True)
        # the documented order holds among finite scores; adding -inf is not strictly
        # monotone, so sequences tied at -inf come in merge order instead
        order = brute_order(Y, bs)[:m]
        f = int(np.isfinite(bs[order]).sum())
        assert np.array_equal(seqs[:f, :n], Y[order[:f]])
        assert np.all(np.isneginf(scores[f:m]))


def test_degenerate_arguments():
    E = np.zeros((3, 2))
    T = np.zeros((3, 3))
    seqs = np.zeros((4, 3), dtype=np.int32)
    scores = np.zeros(4)
    assert kbest_viterbi(E, 3, T, 0, seqs, scores) == 0
    assert kbest_viterbi(E, 0, T, 4, seqs, scores) == 0
    # 2**3 = 8 sequences exist: 5 requested rows do not fit in 4
    with pytest.raises(ValueError):
        kbest_viterbi(E, 3, T, 5, seqs, scores)
    # but k = 5 with only 2**2 = 4 sequences does fit
    assert kbest_viterbi(E, 2, T, 5, seqs, scores) == 4
    with pytest.raises(ValueError):
        kbest_viterbi(E, 4, T, 2, seqs, scores)  # E has only 3 rows


def documented_order(Y, s):
    """The documented total order, written out independently of ``brute_order`` (and of the
    kernel): score descending, then the label sequence read from the LAST position backwards,
    ascending (y_{n-1} first, then y_{n-2}, ...)."""
    return sorted(range(len(Y)), key=lambda i: (-s[i], tuple(int(v) for v in Y[i, ::-1])))


def tie_problem(rng, n, L):
    """Integer scores from a tiny range (sometimes all zero), so nearly every merge has ties."""
    kind = int(rng.integers(0, 4))
    if kind == 0:  # everything ties: the output is the order on the label sequences alone
        return np.zeros((n, L)), np.zeros((L + 1, L + 1))
    lo, hi = ((0, 2), (-1, 2), (-2, 3))[kind - 1]
    E = rng.integers(lo, hi, size=(n, L)).astype(np.float64)
    T = rng.integers(lo, hi, size=(L + 1, L + 1)).astype(np.float64)
    return E, T


def k_around(L, total, rng):
    """k below, equal to and above the number of labels L (and around L**n)."""
    ks = {1, 2, L - 1, L, L + 1, 2 * L - 1, L * L, total - 1, total, total + 1,
          int(rng.integers(1, KMAX + 1))}
    return sorted(k for k in ks if k >= 1)


def test_kbest_tie_order_with_k_below_equal_and_above_L():
    """The documented tie order with k on both sides of L (a merge keeps at most k heads, so
    which of several equal heads is kept or picked first only shows when k < L or ties
    straddle the cut). Exact arithmetic: the output must be exactly the first min(k, L**n)
    sequences of the documented total order -- also which of the sequences tied at the k-th
    score are returned -- for plain and Hamming-loss-augmented scores."""
    rng = np.random.default_rng(2024)
    n_below = n_equal = n_above = n_straddle_below = 0
    for case in range(150):
        while True:
            n = int(rng.integers(1, 6))
            L = int(rng.integers(2, 7))
            if L ** n <= 256:
                break
        E, T = tie_problem(rng, n, L)
        Y = all_sequences(n, L)
        total = L ** n
        gold = rng.integers(0, L, size=n).astype(np.int32)
        A = np.empty((n, L))
        loss_augmented_emissions(E, n, gold, A)
        bs = brute_scores(E, n, T, Y)
        bs_loss = brute_scores(A, n, T, Y)
        order = documented_order(Y, bs)
        order_loss = documented_order(Y, bs_loss)
        # the two independent spellings of the reference order agree
        assert order == brute_order(Y, bs).tolist()
        assert order_loss == brute_order(Y, bs_loss).tolist()
        for k in k_around(L, total, rng):
            m, seqs, scores = run_kbest(E, n, T, k)
            check_against_brute(E, n, T, k, m, seqs, scores, bs, Y, exact=True)
            expect = Y[order[:m]]
            assert np.array_equal(seqs[:m, :n], expect), (case, n, L, k)
            assert np.array_equal(scores[:m], bs[order[:m]]), (case, n, L, k)
            # loss-augmented search: same rule on the augmented scores
            ls = np.full((max(k, 1), n), -7, dtype=np.int32)
            lsc = np.full(max(k, 1), np.nan)
            ml = kbest_viterbi_loss(E, n, T, gold, k, ls, lsc)
            assert ml == m
            assert np.array_equal(ls[:m], Y[order_loss[:m]]), (case, n, L, k, "loss")
            assert np.array_equal(lsc[:m], bs_loss[order_loss[:m]]), (case, n, L, k, "loss")
            n_below += k < L
            n_equal += k == L
            n_above += k > L
            # a tie across the cut: some sequence left out scores the same as the k-th
            if k < L and m < total and bs[order[m]] == bs[order[m - 1]]:
                n_straddle_below += 1
    assert n_below > 200 and n_equal == 150 and n_above > 500
    assert n_straddle_below > 100


# (n, L, k, E, expected sequences): T = 0, so a sequence scores the sum of its emissions;
# expected lists written out by hand from the documented order (score descending, then last
# label ascending, then the one before, ...)
HAND_TIES = [
    # everything ties at 0: the order on the labels alone
    (1, 3, 2, [[0, 0, 0]], [[0], [1]]),
    (2, 3, 2, [[0, 0, 0], [0, 0, 0]], [[0, 0], [1, 0]]),
    (2, 3, 4, [[0, 0, 0], [0, 0, 0]], [[0, 0], [1, 0], [2, 0], [0, 1]]),
    (3, 2, 3, [[0, 0], [0, 0], [0, 0]], [[0, 0, 0], [1, 0, 0], [0, 1, 0]]),
    # last label 1 or 2 scores 1: six sequences tie at the top, k = 2 < L keeps the first two
    (2, 3, 2, [[0, 0, 0], [0, 1, 1]], [[0, 1], [1, 1]]),
    # labels 1 and 2 tie at position 0 (score 1), label 0 is worse: (1, 0) before (2, 0)
    (2, 3, 3, [[0, 1, 1], [0, 0, 0]], [[1, 0], [2, 0], [1, 1]]),
    # first position 2 best (2), then 0 and 1 tie (1); last position all tie
    (2, 3, 4, [[1, 1, 2], [0, 0, 0]], [[2, 0], [2, 1], [2, 2], [0, 0]]),
]


@pytest.mark.parametrize("n, L, k, E, expect", HAND_TIES,
                         ids=[f"n{c[0]}-L{c[1]}-k{c[2]}-{i}" for i, c in enumerate(HAND_TIES)])
def test_kbest_ties_hand_checked(n, L, k, E, expect):
    E = np.array(E, dtype=np.float64)
    T = np.zeros((L + 1, L + 1))
    m, seqs, scores = run_kbest(E, n, T, k)
    assert m == k
    assert seqs[:m, :n].tolist() == expect
    assert scores[:m].tolist() == [float(sum(E[t, y[t]] for t in range(n))) for y in expect]
