"""Averaged perceptrons for sequence labelling: exact (Viterbi, Collins 2002) and
history-based with lookahead (Tsuruoka et al. 2011; ``structkit.learn.lookahead``).

Learners see only arrays (CSR features, sentence offsets, label ids) and know nothing of words.
Averaging uses the standard accumulator trick: alongside ``W`` keep ``U`` += c * update, where
c counts examples seen; the average of all intermediate weight vectors is ``W - U / c``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from structkit.features.extract import Encoded
from structkit.search.jit import njit
from structkit.search.viterbi import emissions, max_length, viterbi


@dataclass
class Weights:
    """Emission weights W[n_features, L], transitions T[L+1, L+1] (index L = boundary),
    second-order transitions T2[L+1, L+1, L] (shape (1, 1, 1) when unused) and the label
    history weights H[K, L+1, L] of the greedy OLaRank models (``structkit.learn.olarank``;
    shape (0, 1, 1) when unused)."""

    W: np.ndarray
    T: np.ndarray
    T2: np.ndarray
    H: np.ndarray = field(default_factory=lambda: np.zeros((0, 1, 1)))

    @property
    def second_order(self) -> bool:
        return self.T2.shape[0] > 1

    @classmethod
    def zeros(cls, n_features: int, n_labels: int, second_order: bool = False) -> "Weights":
        L = n_labels
        T2 = np.zeros((L + 1, L + 1, L) if second_order else (1, 1, 1))
        return cls(np.zeros((n_features, L)), np.zeros((L + 1, L + 1)), T2)


@njit
def _add_features(indptr, indices, t, W, U, y, v, cv):
    for j in range(indptr[t], indptr[t + 1]):
        f = indices[j]
        W[f, y] += v
        U[f, y] += cv


@njit
def transition_pairs(y, a, seq, t, n, L):
    """The label bigrams entering position t (0..n, n = the end) of a sentence of n tokens
    starting at y[a], for the gold labels y and another labelling seq[:n]; L = boundary.
    Returns (gold previous, gold current, other previous, other current)."""
    gp = y[a + t - 1] if t > 0 else L
    gc = y[a + t] if t < n else L
    pp = seq[t - 1] if t > 0 else L
    pc = seq[t] if t < n else L
    return gp, gc, pp, pc


@njit
def structured_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c):
    """One epoch of the structured perceptron with exact Viterbi. Returns (c, tokens wrong)."""
    L = W.shape[1]
    maxlen = max_length(offsets)
    E = np.empty((maxlen, L))
    pred = np.empty(maxlen, dtype=np.int32)
    wrong = 0
    for s in order:
        a = offsets[s]
        n = offsets[s + 1] - a
        if n == 0:
            continue
        emissions(indptr, indices, W, a, a + n, E)
        viterbi(E, n, T, pred)
        diff = 0
        for t in range(n):
            if pred[t] != y[a + t]:
                diff += 1
        if diff > 0:
            wrong += diff
            for t in range(n):
                g = y[a + t]
                p = pred[t]
                if g != p:
                    _add_features(indptr, indices, a + t, W, U, g, 1.0, c)
                    _add_features(indptr, indices, a + t, W, U, p, -1.0, -c)
            for t in range(n + 1):
                gp, gc, pp, pc = transition_pairs(y, a, pred, t, n, L)
                if gp != pp or gc != pc:
                    T[gp, gc] += 1.0
                    TU[gp, gc] += c
                    T[pp, pc] -= 1.0
                    TU[pp, pc] -= c
        c += 1.0
    return c, wrong


class Averaged:
    """Weights w, their accumulator u and the example counter c of an averaged online learner;
    the average of all intermediate weight vectors is w - u / c."""

    def __init__(self, n_features: int, n_labels: int, second_order: bool = False):
        self.w = Weights.zeros(n_features, n_labels, second_order)
        self.u = Weights.zeros(n_features, n_labels, second_order)
        self.c = 1.0

    def averaged(self) -> Weights:
        c = self.c
        return Weights(self.w.W - self.u.W / c, self.w.T - self.u.T / c, self.w.T2 - self.u.T2 / c)

    @staticmethod
    def order(data: Encoded, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
        """The sentence order of one epoch: a seeded permutation, or file order."""
        return rng.permutation(data.n_sentences) if shuffle else np.arange(data.n_sentences)


class AveragedPerceptron(Averaged):
    """Averaged perceptron over an encoded corpus: exact (``method='viterbi'``, Collins 2002)
    or history-based with lookahead (``method='lookahead'``: the margin perceptron of
    Tsuruoka et al. 2011; depth 0 with margin 0 is the plain greedy perceptron)."""

    def __init__(self, n_features: int, n_labels: int, method: str = "viterbi",
                 second_order: bool = False, reverse: bool = False, depth: int = 0,
                 margin: float = 0.0, use_dp: bool = True):
        if method not in ("viterbi", "lookahead"):
            raise ValueError(method)
        if second_order and method != "lookahead":
            raise ValueError("second-order label features need a history-based learner")
        if depth < 0 or margin < 0:
            raise ValueError("depth and margin must be non-negative")
        self.method = method
        self.second_order = second_order
        self.reverse = reverse
        self.depth = depth
        self.margin = float(margin)
        self.use_dp = use_dp
        super().__init__(n_features, n_labels, second_order)

    def epoch(self, data: Encoded, rng: np.random.Generator, shuffle: bool = True) -> dict:
        """One pass over the data in a (seeded) random sentence order."""
        order = self.order(data, rng, shuffle)
        y = data.y.astype(np.int32)
        if self.method == "viterbi":
            self.c, wrong = structured_epoch(data.indptr, data.indices, data.offsets, y, order,
                                             self.w.W, self.u.W, self.w.T, self.u.T, self.c)
            updates = wrong
        else:
            from structkit.learn.lookahead import lookahead_epoch
            self.c, wrong, updates = lookahead_epoch(
                data.indptr, data.indices, data.offsets, y, order, self.w.W, self.u.W, self.w.T,
                self.u.T, self.w.T2, self.u.T2, self.second_order, self.reverse, self.depth,
                self.margin, self.use_dp, self.c)
        # Viterbi: tokens wrong in the decoded sequences; lookahead: decisions (along the gold
        # history) whose best action was wrong, and updates = those plus margin violations.
        return {"train_token_errors": int(wrong), "train_updates": int(updates),
                "train_accuracy": 100.0 * (1 - wrong / max(data.n_tokens, 1))}
