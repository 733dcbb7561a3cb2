"""Averaged perceptrons for sequence labelling: exact (Viterbi, Collins 2002) and
history-based with lookahead (Tsuruoka et al. 2011; ``structkit.sequence.learn.lookahead``).

Learners see only arrays (CSR features, sentence offsets, label ids) and know nothing of words.
Averaging uses the standard accumulator trick (``structkit.sequence.chain.Averaged``): alongside
``W`` keep ``U`` += c * update, where c counts examples seen; the average of all intermediate
weight vectors is ``W - U / c``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from structkit.jit import njit
from structkit.learn.pieces import sum_in_pieces
from structkit.sequence.chain import (
    Averaged,
    add_features,
    corpus,
    transition_pairs,
    with_T2,
)
from structkit.sequence.learn.ipm import EpochKernel
from structkit.sequence.learn.lookahead import lookahead_epoch
from structkit.sequence.search.viterbi import emissions, max_length, viterbi

if TYPE_CHECKING:
    from structkit.sequence.features import Encoded


@njit
def structured_epoch(X, order, w, u, c):
    """One epoch of the structured perceptron with exact Viterbi over the sentences of the
    corpus X in ``order``; w += dF(prediction), u += c * dF. Returns (c, tokens wrong)."""
    W, T, U, TU, y = w.W, w.T, u.W, u.T, X.y
    L = W.shape[1]
    maxlen = max_length(X.offsets)
    E = np.empty((maxlen, L))
    pred = np.empty(maxlen, dtype=np.int32)
    wrong = 0
    for s in order:
        a = X.offsets[s]
        n = X.offsets[s + 1] - a
        if n == 0:
            continue
        emissions(X.indptr, X.indices, W, a, a + n, E)
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
                    add_features(X, a + t, W, U, g, 1.0, c)
                    add_features(X, a + t, W, U, p, -1.0, -c)
            for t in range(n + 1):
                gp, gc, pp, pc = transition_pairs(y, a, pred, t, n, L)
                if gp != pp or gc != pc:
                    T[gp, gc] += 1.0
                    TU[gp, gc] += c
                    T[pp, pc] -= 1.0
                    TU[pp, pc] -= c
        c += 1.0
    return c, wrong


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
        X = corpus(data)
        run, args = _RUN[self.method], self._args()

        def piece(part: np.ndarray) -> tuple:  # the kernel on a slice of the order (learn.pieces)
            self.c, got = run(X, part, self.w, self.u, self.c, *args)
            return got["train_token_errors"], got["train_updates"]

        wrong, updates = sum_in_pieces(order, piece, 2)
        # Viterbi: tokens wrong in the decoded sequences; lookahead: decisions (along the gold
        # history) whose best action was wrong, and updates = those plus margin violations.
        return {"train_token_errors": int(wrong), "train_updates": int(updates),
                "train_accuracy": 100.0 * (1 - wrong / max(data.n_tokens, 1))}

    def _args(self) -> tuple:
        if self.method == "viterbi":
            return ()
        return (self.second_order, self.reverse, self.depth, self.margin, self.use_dp)

    def epoch_kernel(self):
        """This learner's epoch as a worker runs it (``structkit.sequence.learn.ipm``)."""

        return EpochKernel(self.method, _RUN[self.method], self._args())


def run_viterbi(X, order, w, u, c) -> tuple[float, dict]:
    """The exact perceptron's epoch kernel over ``order``: (c, counters)."""
    c, wrong = structured_epoch(X, order, w, u, c)
    return c, {"train_token_errors": int(wrong), "train_updates": int(wrong)}


def run_lookahead(X, order, w, u, c, *args) -> tuple[float, dict]:
    """The history-based perceptron's epoch kernel over ``order`` (``args``: second order,
    reverse, depth, margin, use_dp): (c, counters)."""
    c, wrong, updates = lookahead_epoch(X, order, with_T2(w), with_T2(u), c, *args)
    return c, {"train_token_errors": int(wrong), "train_updates": int(updates)}


_RUN = {"viterbi": run_viterbi, "lookahead": run_lookahead}
