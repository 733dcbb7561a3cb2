"""Exact first-order Viterbi and greedy decoding over CSR emission features (numba).

Scores: a token's emission score for label y is the sum of ``W[f, y]`` over its feature ids f
(CSR ``indptr``/``indices``). Transitions are one ``(L+1, L+1)`` matrix ``T``: ``T[a, b]`` scores
label a followed by b, and index ``L`` is the sentence boundary, so ``T[L, b]`` is the start
score and ``T[a, L]`` the end score. Second-order (label trigram) weights ``T2[a, b, c]`` are
``(L+1, L+1, L)`` with the same boundary index, used by the history-based (greedy) decoders.
"""
from __future__ import annotations

import numpy as np

from structkit.search.jit import njit


@njit
def emissions(indptr, indices, W, a, b, out):
    """out[t - a, :] = sum of W rows of token t's features, for tokens a..b-1."""
    L = W.shape[1]
    for t in range(a, b):
        row = out[t - a]
        for y in range(L):
            row[y] = 0.0
        for j in range(indptr[t], indptr[t + 1]):
            wf = W[indices[j]]
            for y in range(L):
                row[y] += wf[y]


@njit
def viterbi(E, n, T, out):
    """Best label sequence for emission scores E[:n] and transitions T; writes out[:n].

    Ties: each step keeps the lowest best predecessor and the traceback starts from the lowest
    best final label, so among equal-scoring sequences the one smallest read from the end
    backwards wins (deterministic, not lexicographic). Returns the best score.
    """
    L = E.shape[1]
    delta = np.empty((n, L))
    back = np.empty((n, L), dtype=np.int32)
    for y in range(L):
        delta[0, y] = T[L, y] + E[0, y]
        back[0, y] = -1
    for t in range(1, n):
        for y in range(L):
            best = -np.inf
            arg = 0
            for z in range(L):
                s = delta[t - 1, z] + T[z, y]
                if s > best:
                    best = s
                    arg = z
            delta[t, y] = best + E[t, y]
            back[t, y] = arg
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
def greedy(E, n, T, T2, second_order, reverse, out):
    """History-based decoding: one label at a time, left to right (or right to left when
    ``reverse``), each scored by its emissions and the one (or two) labels already chosen."""
    L = E.shape[1]
    for k in range(n):
        t = n - 1 - k if reverse else k
        if k == 0:
            p1 = L
            p2 = L
        else:
            p1 = out[t + 1] if reverse else out[t - 1]
            if k == 1:
                p2 = L
            else:
                p2 = out[t + 2] if reverse else out[t - 2]
        best = -np.inf
        arg = 0
        for y in range(L):
            s = E[t, y] + T[p1, y]
            if second_order:
                s += T2[p2, p1, y]
            if s > best:
                best = s
                arg = y
        out[t] = arg


@njit
def decode_corpus(indptr, indices, offsets, W, T, T2, method, second_order, reverse, out):
    """Decode every sentence: method 0 = Viterbi, 1 = greedy. Writes label ids into out."""
    L = W.shape[1]
    maxlen = 0
    for s in range(len(offsets) - 1):
        maxlen = max(maxlen, offsets[s + 1] - offsets[s])
    E = np.empty((max(maxlen, 1), L))
    for s in range(len(offsets) - 1):
        a = offsets[s]
        b = offsets[s + 1]
        n = b - a
        if n == 0:
            continue
        emissions(indptr, indices, W, a, b, E)
        if method == 0:
            viterbi(E, n, T, out[a:b])
        else:
            greedy(E, n, T, T2, second_order, reverse, out[a:b])
