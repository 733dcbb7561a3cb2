"""The decoders a sequence model can tag with, by the name its learner's spec gives
(``structkit.learn.registry.LearnerSpec.decoder``)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from structkit.sequence.chain import with_T2
from structkit.sequence.search.greedy import greedy_decode, greedy_values
from structkit.sequence.search.lookahead import lookahead_decode, lookahead_values
from structkit.sequence.search.viterbi import decode_corpus

__all__ = ["DECODERS", "decode", "history_values", "margins_from_values"]


def _viterbi(enc, w, config, depth, out) -> None:
    decode_corpus(enc.indptr, enc.indices, enc.offsets, w.W, w.T, out)


def _lookahead(enc, w, config, depth, out) -> None:
    lookahead_decode(enc.indptr, enc.indices, enc.offsets, with_T2(w), config.label_order == 2,
                     config.direction == "rtl", config.depth if depth is None else depth,
                     config.search == "dp", out)


def _greedy_history(enc, w, config, depth, out) -> None:
    greedy_decode(enc.indptr, enc.indices, enc.offsets, w.W, w.H, out)


def viterbi_numpy(enc, w) -> np.ndarray:
    """``structkit.sequence.search.viterbi.decode_corpus`` in numpy, for a few sentences without numba:
    each token's emissions sum its features' W rows in CSR order, and each Viterbi step takes
    the first (lowest) best predecessor, so the labels are the kernel's."""
    W, T = w.W, w.T
    L = W.shape[1]
    n = enc.n_tokens
    indptr, indices = enc.indptr, enc.indices
    counts = np.diff(indptr)
    E = np.zeros((n, L))
    for k in range(int(counts.max()) if n else 0):
        tok = np.flatnonzero(counts > k)
        E[tok] += W[indices[indptr[tok] + k]]
    out = np.zeros(n, dtype=np.int32)
    trans = T[:L, :L]
    for s in range(enc.n_sentences):
        a, b = int(enc.offsets[s]), int(enc.offsets[s + 1])
        if b == a:
            continue
        back = np.zeros((b - a, L), dtype=np.int64)
        delta = T[L, :L] + E[a]
        for t in range(1, b - a):
            scores = delta[:, None] + trans
            arg = np.argmax(scores, axis=0)
            back[t] = arg
            delta = scores[arg, np.arange(L)] + E[a + t]
        y = int(np.argmax(delta + T[:L, L]))
        out[b - 1] = y
        for t in range(b - a - 1, 0, -1):
            y = int(back[t, y])
            out[a + t - 1] = y
    return out


# name -> decode(encoded corpus, weights, config, depth override or None, out label ids)
DECODERS: dict[str, Callable] = {"viterbi": _viterbi, "lookahead": _lookahead,
                                 "greedy-history": _greedy_history}


def decode(name: str, enc, weights, config, depth: int | None = None) -> np.ndarray:
    """Label ids of every token of ``enc`` with the decoder ``name``."""
    out = np.zeros(enc.n_tokens, dtype=np.int32)
    DECODERS[name](enc, weights, config, depth, out)
    return out


def history_values(name: str, enc, w, config, labels: np.ndarray, depth: int | None = None,
                   continuations: bool = False,
                   continuation_of: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The decisions of a history-based decoder (``lookahead``, ``greedy-history``) with
    ``labels`` as the labels already decided: V[t, a] = the score the decoder compares for
    label a at token t's decision (lookahead: a's own score plus its best continuation), and,
    with ``continuations``, cont[t, :d] = the best continuation after labels[t] (or after
    ``continuation_of[t]``, at the same decision): the labels of the next d decisions in
    decoding order, -1 past the window (greedy: no columns)."""

    labels = np.ascontiguousarray(labels, dtype=np.int32)
    cont_of = labels if continuation_of is None else np.ascontiguousarray(continuation_of, dtype=np.int32)
    L = w.W.shape[1]
    V = np.zeros((enc.n_tokens, L))
    if name == "greedy-history":
        greedy_values(enc.indptr, enc.indices, enc.offsets, w.W, w.H, labels, V)
        return V, (np.full((enc.n_tokens, 0), -1, dtype=np.int64) if continuations else None)
    if name != "lookahead":
        raise ValueError(f"{name} is not a history-based decoder")

    D = config.depth if depth is None else depth
    cont = np.full((enc.n_tokens, D) if continuations else (0, 0), -1, dtype=np.int64)
    lookahead_values(enc.indptr, enc.indices, enc.offsets, with_T2(w), config.label_order == 2,
                     config.direction == "rtl", D, config.search == "dp", labels, V, cont, cont_of)
    return V, (cont if continuations else None)


def margins_from_values(V: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per token t: V[t, labels[t]] minus the best V[t, a] of another label a (+inf with a
    single label), and that runner-up a (the lowest on a tie; -1 with a single label)."""
    n, L = V.shape
    idx = np.arange(n)
    labels = np.asarray(labels, dtype=np.int64)
    if L == 1:
        return np.full(n, np.inf), np.full(n, -1, dtype=np.int64)
    other = V.copy()
    other[idx, labels] = -np.inf
    runner = other.argmax(axis=1)
    return V[idx, labels] - other[idx, runner], runner
