"""Exact first-order Viterbi decoding over CSR emission features (numba).

Scores: a token's emission score for label y is the sum of ``W[f, y]`` over its feature ids f
(CSR ``indptr``/``indices``). Transitions are one ``(L+1, L+1)`` matrix ``T``: ``T[a, b]`` scores
label a followed by b, and index ``L`` is the sentence boundary, so ``T[L, b]`` is the start
score and ``T[a, L]`` the end score. History-based (greedy and lookahead) decoding, which can
also use second-order label weights, is in ``structkit.sequence.search.lookahead``.
"""
from __future__ import annotations

import numpy as np

from structkit.jit import njit
from structkit.offsets import max_length  # noqa: F401 (the decoders and learners import it from here)


@njit
def token_row(indptr, indices, W, t, row):
    """row[:] = the sum, in CSR order, of the W rows of token t's features."""
    L = W.shape[1]
    for y in range(L):
        row[y] = 0.0
    for j in range(indptr[t], indptr[t + 1]):
        wf = W[indices[j]]
        for y in range(L):
            row[y] += wf[y]


@njit
def emissions(indptr, indices, W, a, b, out):
    """out[t - a, :] = sum of W rows of token t's features, for tokens a..b-1."""
    for t in range(a, b):
        token_row(indptr, indices, W, t, out[t - a])


@njit
def sentence_emissions(indptr, indices, offsets, W, s, out):
    """(a, n): sentence s's first token and length, its emissions in out[:n] (when n > 0)."""
    a = offsets[s]
    n = offsets[s + 1] - a
    if n > 0:
        emissions(indptr, indices, W, a, a + n, out)
    return a, n


@njit
def viterbi(E, n, T, out):
    """Best label sequence for emission scores E[:n] and transitions T; writes out[:n].

    Ties: each step keeps the lowest best predecessor and the traceback starts from the lowest
    best final label, so among equal-scoring sequences the one smallest read from the end
    backwards wins (deterministic, not lexicographic). Returns the best score.
    """
    L = E.shape[1]
    return viterbi_ws(E, n, T, out, np.empty((n, L)), np.empty((n, L), dtype=np.int32), np.empty(L))


@njit
def viterbi_ws(E, n, T, out, delta, back, top):
    """``viterbi`` in the work space given: ``delta``/``back`` [>= n, L], ``top`` [L] (a caller
    decoding many sentences allocates them once)."""
    L = E.shape[1]
    for y in range(L):
        delta[0, y] = T[L, y] + E[0, y]
    for t in range(1, n):
        # the label loop innermost (contiguous in T's rows, 1.5x faster); the same sums, and
        # the same ties: predecessors z are tried in order, a later one must score higher
        bt = back[t]
        for y in range(L):
            top[y] = -np.inf
            bt[y] = 0
        for z in range(L):
            dz = delta[t - 1, z]
            for y in range(L):
                s = dz + T[z, y]
                c = s > top[y]
                top[y] = s if c else top[y]
                bt[y] = z if c else bt[y]
        for y in range(L):
            delta[t, y] = top[y] + E[t, y]
    best = -np.inf
    arg = 0
    for y in range(L):
        s = delta[n - 1, y] + T[y, L]
        if s > best:
            best = s
            arg = y
    out[n - 1] = arg
    for t in range(n - 1, 0, -1):
        out[t - 1] = back[t, out[t]]
    return best


@njit
def decode_corpus(indptr, indices, offsets, W, T, out):
    """Viterbi-decode every sentence; writes label ids into out."""
    L = W.shape[1]
    E = np.empty((max_length(offsets), L))
    for s in range(len(offsets) - 1):
        a, n = sentence_emissions(indptr, indices, offsets, W, s, E)
        if n > 0:
            viterbi(E, n, T, out[a:a + n])


@njit
def max_marginals(E, n, T, m):
    """m[t, y] = the score of the best label sequence that puts label y at token t (a max
    forward pass and a max backward pass: m = alpha + beta), for emissions E[:n]."""
    L = E.shape[1]
    alpha = np.empty((n, L))
    beta = np.empty((n, L))
    for y in range(L):
        alpha[0, y] = T[L, y] + E[0, y]
        beta[n - 1, y] = T[y, L]
    for t in range(1, n):
        for y in range(L):
            best = -np.inf
            for z in range(L):
                s = alpha[t - 1, z] + T[z, y]
                if s > best:
                    best = s
            alpha[t, y] = best + E[t, y]
    for t in range(n - 2, -1, -1):
        for y in range(L):
            best = -np.inf
            for z in range(L):
                s = T[y, z] + E[t + 1, z] + beta[t + 1, z]
                if s > best:
                    best = s
            beta[t, y] = best
    for t in range(n):
        for y in range(L):
            m[t, y] = alpha[t, y] + beta[t, y]


@njit
def margins_corpus(indptr, indices, offsets, W, T, labels, out):
    """out[t] = how much the best sequence with ``labels[t]`` at token t outscores the best
    sequence with any other label there (0 on a tie; +inf with a single label): the margin of
    each decoded label, from max-marginals."""
    L = W.shape[1]
    n_max = max_length(offsets)
    E = np.empty((n_max, L))
    M = np.empty((n_max, L))
    for s in range(len(offsets) - 1):
        a, n = sentence_emissions(indptr, indices, offsets, W, s, E)
        if n == 0:
            continue
        max_marginals(E, n, T, M)
        for t in range(n):
            y = labels[a + t]
            other = -np.inf
            for z in range(L):
                if z != y and M[t, z] > other:
                    other = M[t, z]
            out[a + t] = M[t, y] - other
