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

The joint feature vector and the averaging are those of ``structkit.learn.perceptron``: F(x, y)
counts each CSR feature id of token t conjoined with y_t (W[f, y_t]) and every transition
including the start T[L, y_0] and end T[y_{n-1}, L]; averaging keeps U += c * update with c the
number of examples seen (starting at 1), averaged = W - U / c. A step delta adds delta to W and
c * delta to U.

dF is handled sparsely: only tokens whose label differs contribute emission features (the gold
label +1, the other label -1 for each feature occurrence, so duplicate ids count twice), and
only positions whose (previous, current) label pair differs contribute transitions.
w . dF is read directly from the current W, T. ||dF||^2 (and the dot product of two difference
vectors, ``dF_dot``) is computed exactly from the sparse form: entries keyed by
f * L + label (emissions) and n_features * L + p * (L + 1) + q (transitions) are sorted and
summed, so repeated keys (a feature twice on a token, the same feature on two tokens with the
same label pair, a repeated transition) accumulate before squaring.

Stats returned by every kernel: (c, n_updates, top_loss) where n_updates counts the
(non-zero-vector) updates made and top_loss sums the Hamming loss of y^(1) over the epoch.
"""
from __future__ import annotations

import numpy as np

from structkit.features.extract import Encoded
from structkit.learn.perceptron import Averaged, transition_pairs
from structkit.search.jit import njit
from structkit.search.kbest import kbest_viterbi_loss
from structkit.search.viterbi import emissions, max_length, viterbi

PERCEPTRON, PA, RPA = 0, 1, 2
ALGOS = {"perceptron": PERCEPTRON, "pa": PA, "rpa": RPA}


@njit
def _hamming(y, a, n, seq):
    d = 0
    for t in range(n):
        if seq[t] != y[a + t]:
            d += 1
    return d


@njit
def _w_dot_dF(indptr, indices, a, n, y, seq, W, T):
    """w . (F(x, y_gold) - F(x, seq)) with the current W, T (sentence tokens a..a+n-1)."""
    L = W.shape[1]
    s = 0.0
    for t in range(n):
        g = y[a + t]
        p = seq[t]
        if g != p:
            for j in range(indptr[a + t], indptr[a + t + 1]):
                f = indices[j]
                s += W[f, g] - W[f, p]
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            s += T[gp, gc] - T[pp, pc]
    return s


@njit
def _apply(indptr, indices, a, n, y, seq, W, U, T, TU, d, cd):
    """W += d * dF(seq), U += cd * dF(seq) (emissions in W/U, transitions in T/TU)."""
    L = W.shape[1]
    for t in range(n):
        g = y[a + t]
        p = seq[t]
        if g != p:
            for j in range(indptr[a + t], indptr[a + t + 1]):
                f = indices[j]
                W[f, g] += d
                U[f, g] += cd
                W[f, p] -= d
                U[f, p] -= cd
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            T[gp, gc] += d
            TU[gp, gc] += cd
            T[pp, pc] -= d
            TU[pp, pc] -= cd


@njit
def sparse_dF(indptr, indices, a, n, y, seq, n_features, L):
    """dF = F(x, y_gold) - F(x, seq) as sorted unique keys (int64) and non-zero values.

    Keys: f * L + label for emissions, n_features * L + p * (L + 1) + q for transitions."""
    m = 0
    for t in range(n):
        if seq[t] != y[a + t]:
            m += 2 * (indptr[a + t + 1] - indptr[a + t])
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            m += 2
    keys = np.empty(m, dtype=np.int64)
    vals = np.empty(m)
    i = 0
    for t in range(n):
        g = y[a + t]
        p = seq[t]
        if g != p:
            for j in range(indptr[a + t], indptr[a + t + 1]):
                f = np.int64(indices[j])
                keys[i] = f * L + g
                vals[i] = 1.0
                keys[i + 1] = f * L + p
                vals[i + 1] = -1.0
                i += 2
    base = np.int64(n_features) * L
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            keys[i] = base + gp * (L + 1) + gc
            vals[i] = 1.0
            keys[i + 1] = base + pp * (L + 1) + pc
            vals[i + 1] = -1.0
            i += 2
    o = np.argsort(keys, kind="mergesort")
    ok = np.empty(m, dtype=np.int64)
    ov = np.empty(m)
    q = 0
    i = 0
    while i < m:
        key = keys[o[i]]
        v = 0.0
        while i < m and keys[o[i]] == key:
            v += vals[o[i]]
            i += 1
        if v != 0.0:
            ok[q] = key
            ov[q] = v
            q += 1
    return ok[:q], ov[:q]


@njit
def sparse_dot(k1, v1, k2, v2):
    """Dot product of two sorted-unique sparse vectors (merge)."""
    i = 0
    j = 0
    s = 0.0
    while i < k1.shape[0] and j < k2.shape[0]:
        if k1[i] == k2[j]:
            s += v1[i] * v2[j]
            i += 1
            j += 1
        elif k1[i] < k2[j]:
            i += 1
        else:
            j += 1
    return s


@njit
def dF_dot(indptr, indices, a, n, y, seq1, seq2, n_features, L):
    """dF(seq1) . dF(seq2), exactly from the sparse forms (seq1 is seq2 gives ||dF||^2)."""
    k1, v1 = sparse_dF(indptr, indices, a, n, y, seq1, n_features, L)
    k2, v2 = sparse_dF(indptr, indices, a, n, y, seq2, n_features, L)
    return sparse_dot(k1, v1, k2, v2)


@njit
def decode_buffers(offsets, L, k):
    """Scratch for ``decode_kbest`` over a corpus: (longest sentence, emissions E, k
    sequences, k scores), sized for the longest sentence."""
    maxlen = max_length(offsets)
    kk = max(k, 1)
    return (maxlen, np.empty((maxlen, L)), np.empty((kk, maxlen), dtype=np.int32),
            np.empty(kk))


@njit
def decode_kbest(indptr, indices, W, T, y, a, n, k, E, seqs, scores):
    """The k best loss-augmented sequences (eq. 12) of the sentence at tokens a..a+n-1 under the
    current weights, into seqs/scores; returns (how many, Hamming loss of the best)."""
    emissions(indptr, indices, W, a, a + n, E)
    m = kbest_viterbi_loss(E, n, T, y[a:a + n], k, seqs, scores)
    return m, (_hamming(y, a, n, seqs[0]) if m > 0 else 0)


@njit
def _kbest_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C, algo):
    NF = W.shape[0]
    L = W.shape[1]
    maxlen, E, seqs, scores = decode_buffers(offsets, L, k)
    pred = np.empty(maxlen, dtype=np.int32)
    n_updates = 0
    top_loss = 0
    for s in order:
        a = offsets[s]
        n = offsets[s + 1] - a
        if n == 0:
            continue
        m, loss0 = decode_kbest(indptr, indices, W, T, y, a, n, k, E, seqs, scores)
        top_loss += loss0
        stale = True      # y_hat must be (re)computed for the current weights (RPA)
        lhat = 0.0
        for j in range(m):
            seq = seqs[j]
            loss = _hamming(y, a, n, seq)
            if loss == 0:
                continue  # y_gold itself: dF = 0
            wd = _w_dot_dF(indptr, indices, a, n, y, seq, W, T)
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
                        emissions(indptr, indices, W, a, a + n, E)
                        viterbi(E, n, T, pred)
                        lhat = _hamming(y, a, n, pred) - _w_dot_dF(indptr, indices, a, n, y,
                                                                   pred, W, T)
                        stale = False
                    if lj < lhat:
                        continue
                kf, vf = sparse_dF(indptr, indices, a, n, y, seq, NF, L)
                nrm = sparse_dot(kf, vf, kf, vf)
                if nrm <= 0.0:
                    continue
                d = min(lj / nrm, C)
            _apply(indptr, indices, a, n, y, seq, W, U, T, TU, d, c * d)
            n_updates += 1
            stale = True
        c += 1.0
    return c, n_updates, top_loss


@njit
def kbest_perceptron_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C):
    """One epoch of the k-best perceptron (eq. 36; C is unused). Returns (c, updates, top_loss)."""
    return _kbest_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C, 0)


@njit
def kbest_pa_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C):
    """One epoch of the k-best PA (eqs. 22-25). Returns (c, updates, top_loss)."""
    return _kbest_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C, 1)


@njit
def kbest_rpa_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C):
    """One epoch of the k-best restricted PA (eqs. 26-28). Returns (c, updates, top_loss)."""
    return _kbest_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, k, C, 2)


_KERNELS = {"perceptron": kbest_perceptron_epoch, "pa": kbest_pa_epoch, "rpa": kbest_rpa_epoch}


class KBestLearner(Averaged):
    """Averaged k-best online learner, mirroring ``AveragedPerceptron`` (first-order
    transitions only): ``algo`` 'perceptron', 'pa', 'rpa' (Algorithm 4), or 'mira'
    (Algorithm 1), 'sdm' (Algorithm 2) and 'larank' (Algorithm 3, one pass per epoch with
    ``nr`` reprocess steps per new example), whose per-example QPs are solved by SMO
    (``structkit.learn.smo``) to the KKT tolerance ``tau``. SDM and LaRank keep each
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
        y = data.y.astype(np.int32)
        args = (data.indptr, data.indices, data.offsets, y, order, self.w.W, self.u.W, self.w.T,
                self.u.T, self.c, self.k)
        if self.algo == "mira":
            from structkit.learn.smo import kbest_mira_epoch
            self.c, steps, top_loss = kbest_mira_epoch(*args, self.C, self.tau, self.max_steps)
            return {"train_updates": int(steps), "train_top_loss": int(top_loss)}
        if self.algo in ("sdm", "larank"):
            from structkit.learn.smo import init_working_sets, kbest_sdm_epoch
            if self._working_sets is None:
                self._working_sets = init_working_sets(data.offsets, y, self.C, self.cap)
            if self.algo == "sdm":
                self.c, steps, top_loss, dropped = kbest_sdm_epoch(
                    *args, self.tau, self.max_steps, *self._working_sets)
            else:
                from structkit.learn.larank import kbest_larank_epoch
                seed = int(rng.integers(2 ** 31))  # LaRank's random reprocessing, from --seed
                self.c, steps, top_loss, dropped = kbest_larank_epoch(
                    *args, self.tau, self.max_steps, self.nr, *self._working_sets, seed)
            return {"train_updates": int(steps), "train_top_loss": int(top_loss),
                    "dropped": int(dropped)}
        self.c, updates, top_loss = _KERNELS[self.algo](*args, self.C)
        return {"train_updates": int(updates), "train_top_loss": int(top_loss)}
