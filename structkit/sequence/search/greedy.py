"""Greedy left-to-right decoding of the order-K history models (Bordes et al. 2008, eq. 2):
each token's label is the best under its features and the previous K predicted labels."""
from __future__ import annotations

import numpy as np

from structkit.jit import njit
from structkit.sequence.search.viterbi import token_row


@njit
def token_scores(indptr, indices, W, H, j, h, out):
    """out[y] = <w, Phi_g(x^j, h, y)> for all labels y (h: the K history labels)."""
    L = W.shape[1]
    token_row(indptr, indices, W, j, out)
    for s in range(H.shape[0]):
        hs = H[s, h[s]]
        for c in range(L):
            out[c] += hs[c]


@njit
def history(labels, a, j, K, L, h):
    """h[s - 1] = the label s tokens before token j of the sentence from a (L before it), for
    s = 1..K."""
    for s in range(1, K + 1):
        h[s - 1] = labels[j - s] if j - s >= a else L


@njit
def greedy_decode(indptr, indices, offsets, W, H, out):
    """Greedy left-to-right tagging with the predicted history (eq. 2); ties: lowest label."""
    L = W.shape[1]
    K = H.shape[0]
    sc = np.empty(L)
    h = np.empty(max(K, 1), dtype=np.int32)
    for i in range(offsets.shape[0] - 1):
        a = offsets[i]
        for j in range(a, offsets[i + 1]):
            history(out, a, j, K, L, h)
            token_scores(indptr, indices, W, H, j, h, sc)
            best = 0
            for k in range(1, L):
                if sc[k] > sc[best]:
                    best = k
            out[j] = best


@njit
def greedy_values(indptr, indices, offsets, W, H, labels, V):
    """V[t] = the label scores ``greedy_decode`` compares at token t, with ``labels`` as the
    history (so the first maximum of V[t] is its label when labels are its output)."""
    L = W.shape[1]
    K = H.shape[0]
    h = np.empty(max(K, 1), dtype=np.int32)
    for i in range(offsets.shape[0] - 1):
        a = offsets[i]
        for j in range(a, offsets[i + 1]):
            history(labels, a, j, K, L, h)
            token_scores(indptr, indices, W, H, j, h, V[j])
