"""k-best online learners for sequence labelling (Mancev & Todorovic, k-best structured SVMs,
Sec. 4.4-4.5, Algorithm 4): the k-best perceptron (eq. 36), the k-best passive-aggressive
algorithm (PA, eqs. 22-25) and the k-best restricted PA (RPA, eqs. 26-28), all with Hamming loss.

Per example (x, y_gold) with weights w_n = w^1 the learner first computes the k-best set
B^k = (y^(1), ..., y^(k)) of the loss-augmented search (eq. 12, ``kbest_viterbi_loss``: the k
best of w.F(x, y) + Hamming(y_gold, y), best first, computed ONCE with w_n), then traverses it in
that order, j = 1..k, updating online w^{j+1} = w^j + delta_j dF(y^(j)) with
dF(y) = F(x, y_gold) - F(x, y) and the loss evaluated with the CURRENT weights w^j:
l_j = Hamming(y_gold, y^(j)) - w^j . dF(y^(j)).

* perceptron (eq. 36, Algorithm 4): update with delta = 1 iff w^j . dF(y^(j)) <= 0.
* PA (eqs. 24-25): update iff l_j > 0 (Algorithm 4's ``w.dF < L``) with
  delta = min(l_j / ||dF||^2, C). The paper's k-best PA is a sequence of k one-constraint
  problems (eqs. 22-23) each solved in closed form -- there is no joint QP over the k
  constraints (that is k-best MIRA, eqs. 13-14, not implemented here).
* RPA (eq. 28): as PA, but only if y^(j) is in A_{w^j} (eq. 27), i.e.
  l_j >= l(w^j; y_hat) with y_hat = argmax w^j.F(x, y) (eq. 26, plain Viterbi). y_hat is
  recomputed whenever w changed since it was last computed (Algorithm 4's ``update`` flag is this
  cache; the membership test itself is applied to every y^(j), as eq. 28 states).

Sequences of B^k equal to y_gold (dF = 0, loss 0) are skipped by every learner (for the
perceptron the eq. 36 update would add the zero vector). For PA/RPA a y != y_gold with
||dF||^2 == 0 is skipped as well (no direction to move; the update would be the zero vector).

The joint feature vector and the averaging are those of ``structkit.sequence.chain``: F(x, y)
counts each CSR feature id of token t conjoined with y_t (W[f, y_t]) and every transition
including the start T[L, y_0] and end T[y_{n-1}, L]; averaging keeps U += c * update with c the
number of examples seen (starting at 1), averaged = W - U / c. A step delta adds delta to W and
c * delta to U.

dF is handled sparsely: only tokens whose label differs contribute emission features (the gold
label +1, the other label -1 for each feature occurrence, so duplicate ids count twice), and
only positions whose (previous, current) label pair differs contribute transitions.
w . dF is read directly from the current W, T. ||dF||^2 (and the dot product of two difference
vectors, ``structkit.sequence.chain.dF_dot``) is computed exactly from the sparse form: entries keyed by
f * L + label (emissions) and n_features * L + p * (L + 1) + q (transitions) are sorted and
summed, so repeated keys (a feature twice on a token, the same feature on two tokens with the
same label pair, a repeated transition) accumulate before squaring.

Stats returned by every kernel: (c, n_updates, top_loss) where n_updates counts the
(non-zero-vector) updates made and top_loss sums the Hamming loss of y^(1) over the epoch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from structkit.jit import njit
from structkit.learn.pieces import sum_in_pieces
from structkit.sequence.chain import (
    Averaged,
    apply_dF,
    corpus,
    hamming,
    sparse_dF,
    sparse_dot,
    w_dot_dF,
)
from structkit.sequence.learn.ipm import EpochKernel
from structkit.sequence.learn.larank import LaRankPlan, larank_steps
from structkit.sequence.learn.smo import (
    SMOLimits,
    init_working_sets,
    kbest_mira_epoch,
    kbest_sdm_epoch,
)
from structkit.sequence.search.kbest import decode_buffers, decode_example
from structkit.sequence.search.viterbi import emissions, viterbi

if TYPE_CHECKING:
    from structkit.sequence.features import Encoded

PERCEPTRON, PA, RPA = 0, 1, 2
ALGOS = {"perceptron": PERCEPTRON, "pa": PA, "rpa": RPA}


@njit
def _kbest_epoch(X, order, w, u, c, k, C, algo):
    NF = w.W.shape[0]
    L = w.W.shape[1]
    maxlen, E, seqs, scores = decode_buffers(X.offsets, L, k)
    pred = np.empty(maxlen, dtype=np.int32)
    n_updates = 0
    top_loss = 0
    for s in order:
        a, n, m, loss0 = decode_example(X, w, s, k, E, seqs, scores)
        if n == 0:
            continue
        top_loss += loss0
        stale = True      # y_hat must be (re)computed for the current weights (RPA)
        lhat = 0.0
        for j in range(m):
            seq = seqs[j]
            loss = hamming(X.y, a, n, seq)
            if loss == 0:
                continue  # y_gold itself: dF = 0
            wd = w_dot_dF(X, a, n, seq, w)
            if algo == PERCEPTRON:
                if wd > 0.0:
                    continue
                d = 1.0
            else:
                lj = loss - wd
                if not lj > 0.0:
                    continue
                if algo == RPA:
                    if stale:
                        emissions(X.indptr, X.indices, w.W, a, a + n, E)
                        viterbi(E, n, w.T, pred)
                        lhat = hamming(X.y, a, n, pred) - w_dot_dF(X, a, n, pred, w)
                        stale = False
                    if lj < lhat:
                        continue
                kf, vf = sparse_dF(X, a, n, seq, NF, L)
                nrm = sparse_dot(kf, vf, kf, vf)
                if nrm <= 0.0:
                    continue
                d = min(lj / nrm, C)
            apply_dF(X, a, n, seq, w, u, d, c * d)
            n_updates += 1
            stale = True
        c += 1.0
    return c, n_updates, top_loss


@njit
def kbest_perceptron_epoch(X, order, w, u, c, k, C):
    """One epoch of the k-best perceptron (eq. 36; C is unused). Returns (c, updates, top_loss)."""
    return _kbest_epoch(X, order, w, u, c, k, C, 0)


@njit
def kbest_pa_epoch(X, order, w, u, c, k, C):
    """One epoch of the k-best PA (eqs. 22-25). Returns (c, updates, top_loss)."""
    return _kbest_epoch(X, order, w, u, c, k, C, 1)


@njit
def kbest_rpa_epoch(X, order, w, u, c, k, C):
    """One epoch of the k-best restricted PA (eqs. 26-28). Returns (c, updates, top_loss)."""
    return _kbest_epoch(X, order, w, u, c, k, C, 2)


_KERNELS = {"perceptron": kbest_perceptron_epoch, "pa": kbest_pa_epoch, "rpa": kbest_rpa_epoch}


class KBestLearner(Averaged):
    """Averaged k-best online learner, mirroring ``AveragedPerceptron`` (first-order
    transitions only): ``algo`` 'perceptron', 'pa', 'rpa' (Algorithm 4), or 'mira'
    (Algorithm 1), 'sdm' (Algorithm 2) and 'larank' (Algorithm 3, one pass per epoch with
    ``nr`` reprocess steps per new example), whose per-example QPs are solved by SMO
    (``structkit.sequence.learn.smo``) to the KKT tolerance ``tau``. SDM and LaRank keep each
    example's working set across epochs, at most ``cap`` sequences (default 5k + 1);
    sequences that do not fit are counted in the epoch's ``dropped``."""

    def __init__(self, n_features: int, n_labels: int, algo: str = "pa", k: int = 1,
                 C: float = 1.0, tau: float = 1e-3, max_steps: int = 1000, cap: int | None = None,
                 nr: int = 5):
        if algo not in _KERNELS and algo not in ("mira", "sdm", "larank"):
            raise ValueError(algo)
        if k < 1:
            raise ValueError("k must be >= 1")
        if not C > 0:
            raise ValueError("C must be positive")
        if not tau >= 0:
            raise ValueError("tau must be non-negative")
        self.algo = algo
        self.k = int(k)
        self.C = float(C)
        self.tau = float(tau)
        self.max_steps = int(max_steps)
        self.cap = int(cap) if cap is not None else 5 * self.k + 1
        if nr < 0:
            raise ValueError("nr must be non-negative")
        self.nr = int(nr)
        super().__init__(n_features, n_labels)
        self._working_sets = None

    def epoch(self, data: Encoded, rng: np.random.Generator, shuffle: bool = True) -> dict:
        order = self.order(data, rng, shuffle)
        X = corpus(data)
        smo = SMOLimits(self.tau, self.max_steps)
        def piece(part: np.ndarray) -> tuple:  # the kernel on a slice of the order (learn.pieces)
            if self.algo == "sdm":
                self.c, s, top, d = kbest_sdm_epoch(X, part, self.w, self.u, self.c, self.k, smo,
                                                    self._working_sets)
                return s, top, d
            self.c, got = run_kbest(X, part, self.w, self.u, self.c, *self._args())
            return got["train_updates"], got["train_top_loss"], 0

        if self.algo in ("sdm", "larank") and self._working_sets is None:
            self._working_sets = init_working_sets(data.offsets, X.y, self.C, self.cap)
        if self.algo != "larank":
            steps, top_loss, dropped = sum_in_pieces(order, piece, 3)
            out = {"train_updates": int(steps), "train_top_loss": int(top_loss)}
            if self.algo == "sdm":
                out["dropped"] = int(dropped)
            return out
        seed = int(rng.integers(2 ** 31))  # LaRank's random reprocessing, from --seed
        seen = np.empty(len(order), dtype=np.int64)
        pass_state = [0, seed]  # examples seen so far, the next piece's seed

        def larank_piece(part: np.ndarray) -> tuple:  # numba's generator continues (seed -1)
            n_seen, next_seed = pass_state
            self.c, s, top, d, pass_state[0] = larank_steps(
                X, part, self.w, self.u, self.c, self.k, smo, self._working_sets,
                LaRankPlan(self.nr, 10, next_seed), seen, n_seen, np.empty(0))
            pass_state[1] = -1
            return s, top, d

        steps, top_loss, dropped = sum_in_pieces(order, larank_piece, 3)
        return {"train_updates": int(steps), "train_top_loss": int(top_loss), "dropped": int(dropped)}

    def epoch_kernel(self):
        """This learner's epoch as a worker runs it (``structkit.sequence.learn.ipm``). SDM and LaRank
        keep per-example working sets (dual state) across epochs, which parameter mixing
        cannot combine: they have none."""

        if self.algo in ("sdm", "larank"):
            raise ValueError(f"k-best {self.algo} keeps working sets across epochs and cannot be "
                             "trained by parameter mixing")
        return EpochKernel("kbest", run_kbest, self._args())

    def _args(self) -> tuple:
        return self.algo, self.k, self.C, self.tau, self.max_steps


def run_kbest(X, order, w, u, c, algo, k, C, tau, max_steps) -> tuple[float, dict]:
    """The epoch kernel of the k-best perceptron, PA, RPA or MIRA over ``order``: (c, counters)."""
    if algo == "mira":
        c, steps, top_loss = kbest_mira_epoch(X, order, w, u, c, k, C, SMOLimits(tau, max_steps))
    else:
        c, steps, top_loss = _KERNELS[algo](X, order, w, u, c, k, C)
    return c, {"train_updates": int(steps), "train_top_loss": int(top_loss)}
