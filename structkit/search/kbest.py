"""Exact k-best first-order Viterbi (list Viterbi) and its loss-augmented variant (numba).

Conventions are those of ``structkit.search.viterbi``: emission scores ``E[t, y]`` for the
tokens of one sentence, one transition matrix ``T`` of shape ``(L+1, L+1)`` whose index ``L`` is
the sentence boundary (``T[L, y]`` start score, ``T[y, L]`` end score). The score of a label
sequence y_0..y_{n-1} is, accumulated in exactly this order (the same as ``viterbi``)::

    s = T[L, y_0] + E[0, y_0]
    s = (s + T[y_{t-1}, y_t]) + E[t, y_t]      for t = 1..n-1
    s = s + T[y_{n-1}, L]

This is the k-best set B^k of Mancev & Todorovic (k-best structured SVMs, Sec. 4.1); with
Hamming-loss-augmented emissions it is the k-best version of the loss-augmented argmax of their
eq. (12), score(y) + L(y_gold, y).

Algorithm (list Viterbi). For every (position t, label y) the kernel keeps, sorted best first,
the scores of the up to k best prefixes ending in label y at t, each with a back-pointer
(previous label z, rank r in the list of (t-1, z)). The list of (t, y) is the k-way merge, over
the previous labels z, of the already sorted lists ``S[t-1, z, :] + T[z, y]`` (each consumed in
rank order), stopped after k picks, then ``E[t, y]`` is added. The end is one more merge of
``S[n-1, y, :] + T[y, L]`` over y, and the k results are read back through the pointers.
Each merge is a binary heap over the L list heads, O(L + k log L), so the cost is
O(n L (L + k log L)) time (viterbi is O(n L^2)) and O(n L k) memory (scores float64 and two
int32 back-pointer arrays, allocated inside the kernel).

Exactness. Adding a constant is monotone (also under floating-point rounding), so a prefix
dropped from a list of k can always be replaced by k kept prefixes that extend at least as well;
hence the multiset of returned scores is exactly the top-min(k, L^n) multiset of all sequence
scores, and each score is bit-identical to the score of its sequence computed in the order
above. Returned sequences are pairwise distinct (each list holds distinct prefixes, and distinct
(z, r) pointers give distinct extensions). Rank 0 of every list is exactly viterbi's delta and
back-pointer, so the first returned sequence and score are exactly ``viterbi``'s (also in ties).

Tie rule. A merge pick takes the largest head score; among equal heads the lowest label z wins
(the heap orders heads by score descending, then z ascending),
and within one list ranks are consumed in order. So among candidates with equal scores the
order is by (previous label, rank), i.e. a stable merge of the z-ordered lists. Consequence when
the arithmetic is exact (e.g. integer-valued scores): the output is exactly the first
min(k, L^n) sequences of the total order "score descending, then the label sequence read from
the LAST position backwards, ascending" (y_{n-1} first, then y_{n-2}, ...) -- the same rule as
``viterbi`` -- and in particular, of the sequences tied at the k-th score, the ones smallest in
that order are returned. With inexact float arithmetic two different prefix scores can round to
equal totals, and with -inf scores (forbidden transitions) all sequences through a -inf step tie
at -inf whatever their other scores; then ties are still deterministic (by the merge rule) but
may deviate from that order; the score multiset stays exact. NaN scores are not supported.

Nothing is compiled at import; kernels compile on first call and are cached on disk
(``structkit.search.jit``).
"""
from __future__ import annotations

import numpy as np

from structkit.search.jit import njit


@njit
def _n_sequences(L, n, k):
    """min(k, L**n) without overflow (0 if k <= 0, L == 0 or n <= 0)."""
    if k <= 0 or L <= 0 or n <= 0:
        return 0
    m = 1
    for _ in range(n):
        m *= L
        if m >= k:
            return k
    return m


@njit
def _sift_down(hs, hz, size, i):
    """Restore the heap below i; the root is the best (score desc, then label z asc)."""
    while True:
        c = 2 * i + 1
        if c >= size:
            return
        d = c + 1
        if d < size and (hs[d] > hs[c] or (hs[d] == hs[c] and hz[d] < hz[c])):
            c = d
        if hs[c] > hs[i] or (hs[c] == hs[i] and hz[c] < hz[i]):
            ts = hs[i]
            hs[i] = hs[c]
            hs[c] = ts
            tz = hz[i]
            hz[i] = hz[c]
            hz[c] = tz
            i = c
        else:
            return


@njit
def _merge(S, cnt, t, B, y, k, add, S_out, Z_out, R_out, to, yo, ptr, hs, hz):
    """k-way merge of the sorted lists S[t, z, :cnt[t, z]] + B[z, y] over z (stable in (z, rank)).

    Writes the best min(k, sum cnt) values plus ``add`` into S_out[to, yo], with (z, rank) into
    Z_out[to, yo] / R_out[to, yo], best first; returns how many were written. (Whole arrays and
    indices, not slices: a slice per call costs more than the merge itself.) A binary heap holds one head per
    list, ordered by score descending then z ascending, so among equal heads the lowest z is
    taken and ranks within one list are consumed in order. O(L + k log L).
    ``ptr``, ``hz`` (int64) and ``hs`` (float64) are scratch of length L.
    """
    L = S.shape[1]
    size = 0
    for z in range(L):
        ptr[z] = 0
        if cnt[t, z] > 0:
            hs[size] = S[t, z, 0] + B[z, y]
            hz[size] = z
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(hs, hz, size, i)
    j = 0
    while j < k and size > 0:
        z = hz[0]
        S_out[to, yo, j] = hs[0] + add
        Z_out[to, yo, j] = z
        p = ptr[z]
        R_out[to, yo, j] = p
        p += 1
        ptr[z] = p
        if p < cnt[t, z]:
            hs[0] = S[t, z, p] + B[z, y]
        else:
            size -= 1
            hs[0] = hs[size]
            hz[0] = hz[size]
        _sift_down(hs, hz, size, 0)
        j += 1
    return j


@njit
def kbest_viterbi(E, n, T, k, out_seqs, out_scores):
    """The k best label sequences for emission scores E[:n] and transitions T, best first.

    Writes out_seqs[:m, :n] (label ids) and out_scores[:m] and returns m = min(k, L**n)
    (0 for k <= 0 or n <= 0). Sequences are distinct; their scores are exactly the top-m
    multiset of all L**n sequence scores, in non-increasing order. Ties: among equal scores the
    lowest previous label, then the lower rank, comes first (stable merge); with exact
    arithmetic this returns the first m sequences ordered by score descending, then by labels
    read from the last position backwards (viterbi's rule) -- see the module docstring.
    ``out_seqs`` needs shape (>= m, >= n), ``out_scores`` >= m entries (ValueError otherwise).
    O(n L (L + k log L)) time, O(n L k) memory.
    """
    L = E.shape[1]
    m_max = _n_sequences(L, n, k)
    if m_max == 0:
        return 0
    if E.shape[0] < n:
        raise ValueError("kbest_viterbi: E has fewer than n rows")
    if T.shape[0] != L + 1 or T.shape[1] != L + 1:
        raise ValueError("kbest_viterbi: T must have shape (L+1, L+1)")
    if out_seqs.shape[0] < m_max or out_seqs.shape[1] < n or out_scores.shape[0] < m_max:
        raise ValueError("kbest_viterbi: output buffers too small for min(k, L**n) sequences")
    S = np.empty((n + 1, L, k))  # row n holds the final merge
    BZ = np.empty((n + 1, L, k), dtype=np.int32)
    BR = np.empty((n + 1, L, k), dtype=np.int32)
    cnt = np.zeros((n, L), dtype=np.int64)
    ptr = np.empty(L, dtype=np.int64)
    hs = np.empty(L)
    hz = np.empty(L, dtype=np.int64)
    for y in range(L):
        S[0, y, 0] = T[L, y] + E[0, y]
        BZ[0, y, 0] = -1
        BR[0, y, 0] = -1
        cnt[0, y] = 1
    for t in range(1, n):
        for y in range(L):
            cnt[t, y] = _merge(S, cnt, t - 1, T, y, k, E[t, y], S, BZ, BR, t, y, ptr, hs, hz)
    # final merge over the last label, with the end transition T[y, L], into row n
    m = _merge(S, cnt, n - 1, T, L, k, 0.0, S, BZ, BR, n, 0, ptr, hs, hz)
    for j in range(m):
        out_scores[j] = S[n, 0, j]
        y = BZ[n, 0, j]
        r = BR[n, 0, j]
        for t in range(n - 1, -1, -1):
            out_seqs[j, t] = y
            z = BZ[t, y, r]
            r = BR[t, y, r]
            y = z
    return m


@njit
def loss_augmented_emissions(E, n, gold, out):
    """out[t, y] = E[t, y] + (1 if y != gold[t] else 0) for t < n (Hamming loss augmentation).

    Summed over a sequence this adds its Hamming loss to the gold sequence ``gold[:n]``, so
    kbest_viterbi on ``out`` is the k-best loss-augmented search (eq. 12). ``out`` may be E.
    """
    L = E.shape[1]
    for t in range(n):
        g = gold[t]
        for y in range(L):
            if y != g:
                out[t, y] = E[t, y] + 1.0
            else:
                out[t, y] = E[t, y]


@njit
def kbest_viterbi_loss(E, n, T, gold, k, out_seqs, out_scores):
    """k best sequences of score + Hamming loss to gold[:n]; like kbest_viterbi otherwise.

    out_scores holds the loss-augmented scores. Scratch emissions are allocated inside.
    """
    L = E.shape[1]
    if n <= 0 or k <= 0:
        return 0
    if E.shape[0] < n or gold.shape[0] < n:
        raise ValueError("kbest_viterbi_loss: E or gold has fewer than n rows")
    A = np.empty((n, L))
    loss_augmented_emissions(E, n, gold, A)
    return kbest_viterbi(A, n, T, k, out_seqs, out_scores)
