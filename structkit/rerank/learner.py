"""Averaged perceptrons for n-best reranking (Singh-Miller & Collins, Section 3, Figure 1).

Utterance i has hypotheses with losses Delta_i (0 for the set G_i, >= 1 for B_i) and feature
rows Phi_i(w) in a CSR matrix. With s(w) = <alpha, Phi_i(w)>, a pair (y in G_i, z in B_i)
*violates the margin* when s(y) - s(z) < lambda * Delta_i(z); when the scores tie exactly, the
pair also violates when z precedes y in the recogniser's order (decoding breaks ties that way,
so with lambda = 0 a tie that would make the decoder pick z still counts; for lambda > 0 this
changes nothing).

* ``loss-perceptron`` (Figure 1 with the tau of Section 3): C_i = members of G_i with a
  violator, E_i = members of B_i violated by some member of G_i; tau(c) = 1/|C_i|,
  tau(e) = sum_{c in C_i} v_c(e) / (|C_i| v_c^total); alpha += sum tau(c) Phi(c) - sum tau(e) Phi(e).
* ``perceptron`` (the baseline, lambda = 0): c' = the member of G_i the recogniser ranks
  first; if some member of B_i violates c', alpha += Phi(c') - Phi(e) for e the highest-scoring
  member of B_i (first in recogniser order on ties).

Both return averaged weights (the average of alpha after every utterance of every epoch).
One numba kernel runs a whole epoch over the CSR matrix: scores are sparse dot products, and
updates add tau-weighted rows into alpha and into the averaging accumulator.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.learn.pieces import sum_in_pieces
from structkit.jit import njit

__all__ = ["ALGOS", "Perceptron", "csr_scores", "decode"]

ALGOS = ("loss-perceptron", "perceptron")

Hypotheses = namedtuple("Hypotheses", ["indptr", "indices", "data", "starts", "loss"])
Hypotheses.__doc__ = """The n-best lists as the epoch kernel takes them: hypothesis feature rows
(CSR indptr/indices/data), utterance i's rows starts[i]:starts[i+1], and each row's loss."""


@njit
def _row_scores(indptr, indices, data, w, a, b, s):  # pragma: no cover - jit
    for r in range(a, b):
        t = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            t += data[k] * w[indices[k]]
        s[r - a] = t


@njit
def _csr_scores_kernel(indptr, indices, data, w, out):  # pragma: no cover - jit
    _row_scores(indptr, indices, data, w, 0, indptr.shape[0] - 1, out)
    return out


@njit
def _violates(sy, sz, lam, dz, y, z):  # pragma: no cover - jit
    return (sy - sz < lam * dz) or (sy == sz and z < y)


@njit
def _add_row(indptr, indices, data, r, coef, c, w, u):  # pragma: no cover - jit
    for k in range(indptr[r], indptr[r + 1]):
        j = indices[k]
        d = coef * data[k]
        w[j] += d
        u[j] += c * d


@njit
def _epoch_kernel(X, order, w, u, c, lam, baseline):  # pragma: no cover - jit
    """One pass over the utterances of the ``Hypotheses`` X in ``order``, updating the weights
    w and their averaging accumulator u; returns (updates, mistakes, new c)."""
    indptr, indices, data, starts, loss = X
    maxn = 0
    for i in range(starts.shape[0] - 1):
        if starts[i + 1] - starts[i] > maxn:
            maxn = starts[i + 1] - starts[i]
    s = np.empty(maxn)
    tau = np.empty(maxn)
    vtot = np.empty(maxn, dtype=np.int64)
    updates = 0
    mistakes = 0
    for ii in range(order.shape[0]):
        i = order[ii]
        a = starts[i]
        n = starts[i + 1] - a
        _row_scores(indptr, indices, data, w, a, a + n, s)
        best = 0
        for r in range(1, n):
            if s[r] > s[best]:
                best = r
        if loss[a + best] > 0:
            mistakes += 1
        n_good = 0
        for r in range(n):
            if loss[a + r] == 0:
                n_good += 1
        if n_good == 0 or n_good == n:
            c += 1.0
            continue
        for r in range(n):
            tau[r] = 0.0
        if baseline:
            cp = 0
            while loss[a + cp] != 0:
                cp += 1
            top = -1
            hit = False
            for z in range(n):
                if loss[a + z] > 0:
                    if _violates(s[cp], s[z], lam, loss[a + z], cp, z):
                        hit = True
                    if top < 0 or s[z] > s[top]:
                        top = z
            if hit:
                tau[cp] = 1.0
                tau[top] = -1.0
        else:
            n_c = 0
            for y in range(n):
                vtot[y] = 0
                if loss[a + y] == 0:
                    for z in range(n):
                        if loss[a + z] > 0 and _violates(s[y], s[z], lam, loss[a + z], y, z):
                            vtot[y] += 1
                    if vtot[y] > 0:
                        n_c += 1
            if n_c > 0:
                for y in range(n):
                    if loss[a + y] == 0 and vtot[y] > 0:
                        tau[y] = 1.0 / n_c
                        share = 1.0 / (n_c * vtot[y])
                        for z in range(n):
                            if loss[a + z] > 0 and _violates(s[y], s[z], lam, loss[a + z], y, z):
                                tau[z] -= share
        changed = False
        for r in range(n):
            if tau[r] != 0.0:
                _add_row(indptr, indices, data, a + r, tau[r], c, w, u)
                changed = True
        if changed:
            updates += 1
        c += 1.0
    return updates, mistakes, c


def csr_scores(rows, w: np.ndarray) -> np.ndarray:
    """<w, Phi> for every row of a CSR feature matrix."""
    out = np.zeros(rows.n_rows)
    if rows.n_rows:
        _csr_scores_kernel(rows.indptr, rows.indices, rows.data, np.ascontiguousarray(w, dtype=np.float64), out)
    return out


def decode(rows, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Chosen hypothesis (index within its list; ties go to the recogniser's earlier one) and
    its score, per utterance."""
    s = csr_scores(rows, w)
    st = rows.starts
    idx = np.empty(len(st) - 1, dtype=np.int64)
    best = np.empty(len(st) - 1)
    for i in range(len(st) - 1):
        seg = s[st[i]:st[i + 1]]
        k = int(np.argmax(seg))
        idx[i] = k
        best[i] = seg[k]
    return idx, best


class Perceptron:
    """Online training state: alpha, the averaging accumulator and the example counter."""

    def __init__(self, n_features: int, algo: str = "loss-perceptron", lam: float = 1.0):
        if algo not in ALGOS:
            raise ValueError(f"unknown algo {algo!r}")
        self.algo = algo
        self.lam = 0.0 if algo == "perceptron" else float(lam)
        self.w = np.zeros(n_features)
        self.u = np.zeros(n_features)
        self.c = 1.0

    def grow(self, n_features: int) -> None:
        if n_features > len(self.w):
            self.w = np.concatenate([self.w, np.zeros(n_features - len(self.w))])
            self.u = np.concatenate([self.u, np.zeros(n_features - len(self.u))])

    def epoch(self, rows, loss: np.ndarray, order: np.ndarray | None = None) -> dict:
        """One pass; ``loss`` has one integer Delta per row."""
        self.grow(rows.n_features)
        if order is None:
            order = np.arange(len(rows.starts) - 1, dtype=np.int64)
        X = Hypotheses(rows.indptr, rows.indices, rows.data, rows.starts,
                       np.asarray(loss, dtype=np.int64))
        def piece(part: np.ndarray) -> tuple:  # the kernel on a slice of the order (learn.pieces)
            u, m, self.c = _epoch_kernel(X, part, self.w, self.u, self.c, self.lam,
                                         self.algo == "perceptron")
            return u, m

        updates, mistakes = sum_in_pieces(np.asarray(order, dtype=np.int64), piece, 2)
        return {"updates": int(updates), "mistakes": int(mistakes)}

    def averaged(self) -> np.ndarray:
        return self.w - self.u / self.c
