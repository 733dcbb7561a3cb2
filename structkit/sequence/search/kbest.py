"""Exact k-best first-order Viterbi (list Viterbi) and its loss-augmented variant (numba).

Conventions are those of ``structkit.sequence.search.viterbi``: emission scores ``E[t, y]`` for the
tokens of one sentence, one transition matrix ``T`` of shape ``(L+1, L+1)`` whose index ``L`` is
the sentence boundary (``T[L, y]`` start score, ``T[y, L]`` end score). The score of a label
sequence y_0..y_{n-1} is, accumulated in exactly this order (the same as ``viterbi``)::

    s = T[L, y_0] + E[0, y_0]
    s = (s + T[y_{t-1}, y_t]) + E[t, y_t]      for t = 1..n-1
    s = s + T[y_{n-1}, L]

This is the k-best set B^k of Mancev & Todorovic (k-best structured SVMs, Sec. 4.1); with
Hamming-loss-augmented emissions it is the k-best version of the loss-augmented argmax of their
eq. (12), score(y) + L(y_gold, y).

Algorithm (lazy list Viterbi). For every (position t, label y) there is a list, sorted best
first, of the best prefixes ending in label y at t, each entry with a back-pointer (previous
label z, rank r in the list of (t-1, z)). The list of (t, y) is the stable merge, over the
previous labels z, of the sorted lists ``S[t-1, z, :] + T[z, y]``, plus ``E[t, y]``; the end is
one more merge of ``S[n-1, y, :] + T[y, L]`` over y. Rank 0 of every list is plain Viterbi,
computed eagerly. Further entries are computed on demand only (Huang & Chiang 2005, "lazy"
k-best): the end list is asked for ranks 1..k-1, and a list extends itself by one pick, asking
its predecessor for one more entry only when a pick has used up that predecessor's last
computed one. Only the lists of the k best heads of a merge can contribute to its first k
picks, so a list keeps at most k candidate slots. Cost: one Viterbi, O(n L^2), plus O(L + k)
for each of the at most k n cells that are ever extended -- at k = 5 about 2.5x Viterbi on
CoNLL-2000 (``scripts/bench_kbest.py``), where the eager merge of every cell cost 5-8x.
Memory O(n L k).

Exactness. Adding a constant is monotone (also under floating-point rounding), so a prefix
dropped from a list of k can always be replaced by k kept prefixes that extend at least as well;
hence the multiset of returned scores is exactly the top-min(k, L^n) multiset of all sequence
scores, and each score is bit-identical to the score of its sequence computed in the order
above. Returned sequences are pairwise distinct (each list holds distinct prefixes, and distinct
(z, r) pointers give distinct extensions). Rank 0 of every list is exactly viterbi's delta and
back-pointer, so the first returned sequence and score are exactly ``viterbi``'s (also in ties).

Tie rule. A merge pick takes the largest head score; among equal heads the lowest label z wins
(slots are compared by score descending, then z ascending), and within one list ranks are consumed in order. So among candidates with equal scores the
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
(``structkit.jit``).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.sequence.chain import hamming
from structkit.jit import njit
from structkit.sequence.search.viterbi import emissions, max_length

KBestLists = namedtuple("KBestLists", ["S", "BZ", "BR", "cnt", "fin"])
KBestLists.__doc__ = """The sorted lists of every cell (t, y), row n the end cell: prefix scores
S[t, y, j] with back-pointers (previous label BZ, its rank BR), cnt[t, y] entries computed so far,
fin[t, y] != 0 once the list is complete."""

LazyMerge = namedtuple("LazyMerge", ["ini", "hs", "hz", "hr", "ns", "pend"])
LazyMerge.__doc__ = """The lazy merge state per cell (t, y): ini[t, y] != 0 once its candidate
slots are set up; slot i holds the current score hs, label hz and rank hr of a predecessor list
(ns[t, y] slots); pend[t, y] the slot whose next score is still to look up (-1: none)."""


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


@njit(inline="always")  # inlined: a call passing a dozen arrays per cell costs more than the work
def _extend(E, T, n, k, t, y, lists, merge):
    """Try to add the next entry to the list of cell (t, y) (t == n: the end cell, y == 0).

    Returns -1 when an entry was added or the cell turned out exhausted, else the label z of
    the cell (t-1, z) whose entry of rank ``hr[t, y, pend[t, y]]`` must be computed first.

    The cell's candidates are the entries S[t-1, z, r] + T[z, col] of the predecessor lists,
    taken in the total order (score desc, z asc, rank asc). A list's head precedes its other
    entries in that order, so when k heads precede the head of list z, no entry of z is ever
    among the cell's first k: on first extension only the lists of the k best heads are kept
    (slots hs/hz/hr: current score, label, rank; ns of them). Rank 0 of every cell is Viterbi's
    (computed eagerly), so initialisation consumes the best slot. After a pick the slot moves to
    its list's next rank, whose score is looked up lazily ("pending"), on the next extension:
    that is what keeps the predecessor lists short (Huang & Chiang 2005, lazy k-best).
    """
    S, BZ, BR, cnt, fin = lists
    ini, hs, hz, hr, ns, pend = merge
    L = E.shape[1]
    col = y if t < n else L
    if ini[t, y] == 0:
        ini[t, y] = 1
        size = 0
        for z in range(L):
            v = S[t - 1, z, 0] + T[z, col]
            # keep the k best heads sorted; z grows, so an equal score goes after (z asc)
            if size == k:
                if not (v > hs[t, y, k - 1]):
                    continue
                i = k - 1
            else:
                i = size
                size += 1
            while i > 0 and v > hs[t, y, i - 1]:
                hs[t, y, i] = hs[t, y, i - 1]
                hz[t, y, i] = hz[t, y, i - 1]
                i -= 1
            hs[t, y, i] = v
            hz[t, y, i] = z
        for i in range(size):
            hr[t, y, i] = 0
        ns[t, y] = size
        # slot 0 is the best head: Viterbi's rank-0 entry, already recorded
        hr[t, y, 0] = 1
        pend[t, y] = 0
    p = pend[t, y]
    if p >= 0:
        z = hz[t, y, p]
        r = hr[t, y, p]
        if cnt[t - 1, z] > r:
            hs[t, y, p] = S[t - 1, z, r] + T[z, col]
        elif fin[t - 1, z] != 0:
            last = ns[t, y] - 1
            hs[t, y, p] = hs[t, y, last]
            hz[t, y, p] = hz[t, y, last]
            hr[t, y, p] = hr[t, y, last]
            ns[t, y] = last
        else:
            return z
        pend[t, y] = -1
    size = ns[t, y]
    if size == 0:
        fin[t, y] = 1
        return -1
    b = 0
    for i in range(1, size):
        if hs[t, y, i] > hs[t, y, b] or (hs[t, y, i] == hs[t, y, b] and hz[t, y, i] < hz[t, y, b]):
            b = i
    j = cnt[t, y]
    S[t, y, j] = hs[t, y, b] + (E[t, y] if t < n else 0.0)
    BZ[t, y, j] = hz[t, y, b]
    BR[t, y, j] = hr[t, y, b]
    cnt[t, y] = j + 1
    if j + 1 >= k:
        fin[t, y] = 1  # never asked for more than k
    hr[t, y, b] += 1
    pend[t, y] = b
    return -1


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
    O(n L^2 + k n (L + k)) time, O(n L k) memory.
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
    # per cell (t, y); row n is the end cell (column 0 only)
    S = np.empty((n + 1, L, k))
    BZ = np.empty((n + 1, L, k), dtype=np.int32)
    BR = np.empty((n + 1, L, k), dtype=np.int32)
    cnt = np.ones((n + 1, L), dtype=np.int64)
    fin = np.zeros((n + 1, L), dtype=np.uint8)
    ini = np.zeros((n + 1, L), dtype=np.uint8)
    # rank 0 of every cell: plain Viterbi (lowest best predecessor among ties)
    for y in range(L):
        S[0, y, 0] = T[L, y] + E[0, y]
        BZ[0, y, 0] = -1
        BR[0, y, 0] = -1
        fin[0, y] = 1  # a first-position cell has exactly one prefix
    for t in range(1, n + 1):
        ycount = L if t < n else 1
        for y in range(ycount):
            col = y if t < n else L
            best = -np.inf
            arg = 0
            for z in range(L):
                v = S[t - 1, z, 0] + T[z, col]
                if v > best:
                    best = v
                    arg = z
            S[t, y, 0] = best + (E[t, y] if t < n else 0.0)
            BZ[t, y, 0] = arg
            BR[t, y, 0] = 0
            if k == 1:
                fin[t, y] = 1
    m = 1
    if m_max > 1:
        hs = np.empty((n + 1, L, k))
        hz = np.empty((n + 1, L, k), dtype=np.int64)
        hr = np.empty((n + 1, L, k), dtype=np.int64)
        ns = np.zeros((n + 1, L), dtype=np.int64)
        pend = np.full((n + 1, L), -1, dtype=np.int64)
        st_t = np.empty(n + 2, dtype=np.int64)
        st_y = np.empty(n + 2, dtype=np.int64)
        st_j = np.empty(n + 2, dtype=np.int64)
        lists = KBestLists(S, BZ, BR, cnt, fin)
        merge = LazyMerge(ini, hs, hz, hr, ns, pend)
        # ask the end cell for ranks 1..m_max-1; a request needs at most one lower-row entry
        # at a time, so an explicit stack of depth <= n + 1 replaces the recursion
        for want in range(1, m_max):
            sp = 0
            st_t[0] = n
            st_y[0] = 0
            st_j[0] = want
            sp = 1
            while sp > 0:
                t = st_t[sp - 1]
                y = st_y[sp - 1]
                if cnt[t, y] > st_j[sp - 1] or fin[t, y] != 0:
                    sp -= 1
                    continue
                z = _extend(E, T, n, k, t, y, lists, merge)
                if z >= 0:
                    st_t[sp] = t - 1
                    st_y[sp] = z
                    st_j[sp] = hr[t, y, pend[t, y]]
                    sp += 1
            if cnt[n, 0] <= want:
                break
        m = cnt[n, 0]
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


@njit
def decode_buffers(offsets, L, k):
    """Scratch for ``decode_kbest`` over a corpus: (longest sentence, emissions E, k
    sequences, k scores), sized for the longest sentence."""
    maxlen = max_length(offsets)
    kk = max(k, 1)
    return (maxlen, np.empty((maxlen, L)), np.empty((kk, maxlen), dtype=np.int32),
            np.empty(kk))


@njit
def decode_kbest(X, w, a, n, k, E, seqs, scores):
    """The k best loss-augmented sequences (eq. 12) of the sentence at tokens a..a+n-1 of the
    corpus X (``structkit.sequence.chain.Corpus``) under the first-order weights w, into
    seqs/scores (scratch E: ``decode_buffers``); returns (how many, Hamming loss of the best)."""
    emissions(X.indptr, X.indices, w.W, a, a + n, E)
    m = kbest_viterbi_loss(E, n, w.T, X.y[a:a + n], k, seqs, scores)
    return m, (hamming(X.y, a, n, seqs[0]) if m > 0 else 0)


@njit
def decode_example(X, w, s, k, E, seqs, scores):
    """Sentence s of the corpus decoded by ``decode_kbest`` into seqs/scores with the weights w
    as they are (a learner's epoch calls it for each sentence of its order, updating w in
    between): (its first token a, its length n, how many sequences, Hamming loss of the best);
    n = 0 and nothing decoded for an empty sentence. (A numba generator over the order did
    the same, but a kernel holding a generator loaded from numba's cache made another kernel
    using it fail to compile in the same process: KeyError in numba's generator lowering.)"""
    a = X.offsets[s]
    n = X.offsets[s + 1] - a
    if n == 0:
        return a, n, 0, 0
    m, loss0 = decode_kbest(X, w, a, n, k, E, seqs, scores)
    return a, n, m, loss0
