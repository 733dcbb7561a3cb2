"""Plain-Python references shared by the learner tests: small random encoded corpora, the
dense first-order joint feature vector Phi_e(x, y) in the ``[W.ravel(), T.ravel()]`` layout
(emissions f * L + label, then transitions with the boundary index L), and the tie order of
the (k-)best searches (``tie_key``)."""
from __future__ import annotations

import numpy as np

from structkit.sequence.features import Encoded


def make_data(rng, n_sent, L, NF, max_n=3, nnz=None, duplicate_first=False):
    """Sentences of 1..max_n tokens. Each token has 1-3 feature ids drawn with replacement
    (duplicates possible), or with ``nnz`` exactly nnz distinct sorted ids;
    ``duplicate_first`` makes token 0's features [0, 0, 1] (a certain duplicate)."""
    lens = rng.integers(1, max_n + 1, size=n_sent)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nt = int(offsets[-1])
    if nnz is None:
        rows = [rng.integers(0, NF, size=int(rng.integers(1, 4))) for _ in range(nt)]
    else:
        rows = [np.sort(rng.choice(NF, size=nnz, replace=False)) for _ in range(nt)]
    if duplicate_first:
        rows[0] = np.array([0, 0, 1])
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate(rows).astype(np.int32)
    y = rng.integers(0, L, size=nt).astype(np.int32)
    return Encoded(indptr, indices, offsets, y)


def F(data, s, seq, NF, L):
    """Dense Phi_e of sentence s labelled seq."""
    a = data.offsets[s]
    v = np.zeros(NF * L + (L + 1) ** 2)
    for t in range(len(seq)):
        for f in data.indices[data.indptr[a + t]:data.indptr[a + t + 1]]:
            v[f * L + seq[t]] += 1
    full = [L] + list(seq) + [L]
    for p, q in zip(full[:-1], full[1:]):
        v[NF * L + p * (L + 1) + q] += 1
    return v


def sentence(data, s):
    """The gold labels of sentence s, as a tuple."""
    return tuple(int(v) for v in data.y[data.offsets[s]:data.offsets[s + 1]])


def flat(W, T):
    """Weights in the layout of ``F``."""
    return np.concatenate([W.ravel(), T.ravel()])


def tie_key(seq, E, T):
    """Sort key of a label sequence for the (k-)best search: best first, ties broken as by
    Viterbi / the list-Viterbi merge of ``structkit.sequence.search`` (lowest best predecessor, traceback
    from the lowest best final label). The score is accumulated left to right,
    h_t = p_{t-1} + T[y_{t-1}, y_t], p_t = h_t + E[t, y_t], total = p_{n-1} + T[y_{n-1}, end];
    the key is (-total, y_{n-1}, -h_{n-1}, y_{n-2}, ..., -h_1, y_0). With exact arithmetic it is
    "score descending, then the labels read from the end backwards"; the h terms only matter
    when different prefix scores round to the same total."""
    L = len(E[0])
    p = T[L, seq[0]] + E[0][seq[0]]
    hs = []
    for t in range(1, len(seq)):
        h = p + T[seq[t - 1], seq[t]]
        hs.append(h)
        p = h + E[t][seq[t]]
    key = [-(p + T[seq[-1], L]), seq[-1]]
    for t in range(len(seq) - 1, 0, -1):
        key += [-hs[t - 1], seq[t - 1]]
    return tuple(key)
