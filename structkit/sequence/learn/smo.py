"""SMO for the per-example structural-SVM dual, k-best MIRA and k-best SDM (Mancev & Todorovic,
k-best structured SVMs, Sec. 3-4: eqs. 7-10, 15-20, Algorithms 1 and 2), Hamming loss.

Per-example dual. For example n with working set S_n (a list of label sequences, the gold
sequence y_n always at index 0) the variables are the total dual values beta_y = lambda_{n,y} +
alpha_{n,y} >= 0 with sum_{y in S_n} beta_y = C (eqs. 5, 8, 16). The gold sequence has
dF = 0 and L = 0: its beta is the slack of the single per-example slack variable xi_n, so the
non-gold betas satisfy sum beta <= C. SMO minimises eq. 15,
f(alpha) = 1/2 alpha^T K alpha - alpha^T l, K_ij = dF_i . dF_j, l_j = L_j - w_0 . dF_j,
keeping w in the primal (eq. 9: w = w_0 + sum_j alpha_j dF_j), so the gradient (eqs. 10, 19) is
g_j = sum_z alpha_z K_jz - l_j = w . dF_j - L_j with the CURRENT w. Each step picks the maximum
violating pair (eq. 18) y' = argmin_S g, y'' = argmax_{beta > 0} g, stops when
g_{y''} <= g_{y'} + tau (eq. 17) and otherwise moves beta_{y'} += delta, beta_{y''} -= delta
with the clipped analytic step of eq. 20 (``structkit.sequence.chain.smo_pair_step``, shared with
LaRank and OLaRank; the lower clip -beta_{y'} never binds since delta > 0; when
||dF_{y'} - dF_{y''}||^2 == 0 the objective is linear along the pair and delta = beta_{y''}).
w, the averaging accumulators and g are updated after every step.

Sparse vectors are those of ``structkit.sequence.chain.sparse_dF`` (keys f * L + label for
emissions, n_features * L + p * (L + 1) + q for transitions, sorted unique); the Gram matrix is
computed once per ``smo_solve`` call with ``sparse_dot``. Averaging as in
``structkit.sequence.chain``: every change d of W (T) adds c * d to U (TU); c += 1 per example.

k-best MIRA (Algorithm 1), solved in the dual with SMO: per example S_n = {y_n} + B^k_w (eq. 12,
``kbest_viterbi_loss``, sequences equal to y_n dropped), beta = (C, 0, ...), SMO, S_n discarded:
SDM's step below on a working set that starts afresh at every example (``smo_epoch`` runs both).
Note: Algorithm 1 as printed writes a slack xi_{n,y} per constraint; we use the single
per-example slack of eqs. 2-5 / 15-16 (sum constraint), which is the form Sec. 4.2 compares with
SDM ("only the first epoch will be the same") and reduces to PA (eq. 21) for k = 1.

k-best SDM (Algorithm 2, kBV-PROCESSNEW): the working sets and their betas persist across
epochs in flat arrays ``ws_seq[N, cap, maxlen]`` (int32), ``ws_beta[N, cap]``, ``ws_m[N]``
(a ``structkit.sequence.chain.WorkingSets``, initialised by ``init_working_sets``: S_n = {y_n},
beta = C). At each visit the non-gold entries with beta == 0 are removed
(S_n = {y : lambda_{n,y} > 0}), the current k-best sequences not yet in S_n are appended
(dropped and counted if the capacity is full), and SMO runs over the whole S_n. LaRank (Algorithm 3) is in structkit.sequence.learn.larank.
"""
from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

import numpy as np

from structkit.jit import njit
from structkit.sequence.chain import (
    SparseStack,
    WorkingSets,
    add_sparse,
    hamming,
    smo_pair_step,
    sparse_dF,
    sparse_dot,
    w_dot_sparse,
)
from structkit.sequence.search.kbest import decode_buffers, decode_example
from structkit.sequence.search.viterbi import max_length

if TYPE_CHECKING:
    from structkit.sequence.chain import WorkingSets

SMOLimits = namedtuple("SMOLimits", ["tau", "max_steps"])
SMOLimits.__doc__ = "When SMO stops: KKT violation at most tau (eq. 17), or max_steps steps."


@njit
def gram(V):
    """K_ij = v_i . v_j for the vectors of the ``SparseStack`` V."""
    keys, vals, ptr = V.keys, V.vals, V.ptr
    m = ptr.shape[0] - 1
    K = np.empty((m, m))
    for i in range(m):
        for j in range(i, m):
            v = sparse_dot(keys[ptr[i]:ptr[i + 1]], vals[ptr[i]:ptr[i + 1]],
                           keys[ptr[j]:ptr[j + 1]], vals[ptr[j]:ptr[j + 1]])
            K[i, j] = v
            K[j, i] = v
    return K


@njit
def smo_solve(V, beta, w, u, c, smo):
    """SMO over one example's working set (eqs. 17-20, w updated by eq. 9).

    V holds the dF vectors and losses (``SparseStack``); beta (>= 0, summing to C) is updated
    in place, as are the first-order weights w and accumulators u; ``SMOLimits`` smo: the KKT
    tolerance and the most steps. Returns the number of SMO steps taken."""
    keys, vals, ptr, losses = V
    m = losses.shape[0]
    if m == 0:
        return 0
    K = gram(V)
    g = np.empty(m)
    for j in range(m):
        g[j] = w_dot_sparse(keys[ptr[j]:ptr[j + 1]], vals[ptr[j]:ptr[j + 1]], w) - losses[j]
    tau = smo.tau
    steps = 0
    while steps < smo.max_steps:
        lo = 0
        for j in range(1, m):
            if g[j] < g[lo]:
                lo = j
        hi = -1
        for j in range(m):
            if beta[j] > 0.0 and (hi < 0 or g[j] > g[hi]):
                hi = j
        if hi < 0 or not g[hi] > g[lo] + tau:
            break
        den = K[lo, lo] + K[hi, hi] - 2.0 * K[lo, hi]
        delta = smo_pair_step(beta, lo, hi, g[hi] - g[lo], den)
        klo, vlo = keys[ptr[lo]:ptr[lo + 1]], vals[ptr[lo]:ptr[lo + 1]]
        khi, vhi = keys[ptr[hi]:ptr[hi + 1]], vals[ptr[hi]:ptr[hi + 1]]
        add_sparse(klo, vlo, w, delta)
        add_sparse(klo, vlo, u, c * delta)
        add_sparse(khi, vhi, w, -delta)
        add_sparse(khi, vhi, u, -c * delta)
        for j in range(m):
            g[j] += delta * (K[j, lo] - K[j, hi])
        steps += 1
    return steps


@njit
def stack(X, a, n, seqs, m, NF, L):
    """The ``SparseStack`` of dF(seqs[j][:n]) and Hamming losses, j < m, for the sentence at
    tokens a..a+n-1 of the corpus X."""
    indptr = X.indptr
    bound = 2 * (indptr[a + n] - indptr[a]) + 2 * (n + 1)
    keys = np.empty(m * bound, dtype=np.int64)
    vals = np.empty(m * bound)
    ptr = np.zeros(m + 1, dtype=np.int64)
    losses = np.empty(m)
    for j in range(m):
        kj, vj = sparse_dF(X, a, n, seqs[j], NF, L)
        q = ptr[j]
        keys[q:q + kj.shape[0]] = kj
        vals[q:q + kj.shape[0]] = vj
        ptr[j + 1] = q + kj.shape[0]
        losses[j] = hamming(X.y, a, n, seqs[j])
    return SparseStack(keys[:ptr[m]], vals[:ptr[m]], ptr, losses)


def init_working_sets(offsets: np.ndarray, y: np.ndarray, C: float, cap: int) -> WorkingSets:
    """Flat SDM working sets: S_n = {y_n} with beta = C (Algorithm 2's initialisation)."""
    N = len(offsets) - 1
    maxlen = int(np.max(np.diff(offsets))) if N else 0
    ws_seq = np.zeros((N, cap, max(maxlen, 1)), dtype=np.int32)
    ws_beta = np.zeros((N, cap))
    ws_m = np.ones(N, dtype=np.int64)
    for s in range(N):
        a, b = offsets[s], offsets[s + 1]
        ws_seq[s, 0, :b - a] = y[a:b]
        ws_beta[s, 0] = C
    return WorkingSets(ws_seq, ws_beta, ws_m)


@njit
def prune_working_set(ws, s, n):
    """S_s = {y : beta_y > 0}, the gold kept at index 0: drops the other entries whose
    coefficient is 0, in place (order kept). Returns the new size (also in ws.m[s])."""
    m = 1
    for j in range(1, ws.m[s]):
        if ws.beta[s, j] > 0.0:
            if m != j:
                ws.seq[s, m, :n] = ws.seq[s, j, :n]
                ws.beta[s, m] = ws.beta[s, j]
            m += 1
    ws.m[s] = m
    return m


@njit
def stored_equals(ws, s, j, seq, n):
    """Whether entry j of example s's working set is the label sequence seq[:n]."""
    for t in range(n):
        if ws.seq[s, j, t] != seq[t]:
            return False
    return True


@njit
def add_kbest(ws, i, seqs, r, n):
    """kBV-PROCESSNEW's new working set i (the gold first, label sequences of length n):
    S_i = {y : beta_y > 0} (``prune_working_set``) union the k-best sequences seqs[:r] not in it
    yet, appended with beta = 0 (dropped, and counted, when the set is full). Returns (its size,
    also in ws.m[i]; dropped)."""
    cap = ws.seq.shape[1]
    m = prune_working_set(ws, i, n)
    dropped = 0
    for j in range(r):
        new = True
        for q in range(m):
            if stored_equals(ws, i, q, seqs[j], n):
                new = False
                break
        if not new:
            continue
        if m == cap:
            dropped += 1
            continue
        ws.seq[i, m, :n] = seqs[j, :n]
        ws.beta[i, m] = 0.0
        m += 1
    ws.m[i] = m
    return m, dropped


@njit
def smo_epoch(X, order, w, u, c, k, C, smo, ws, fresh):
    """One epoch of k-best SDM (Algorithm 2) on the ``WorkingSets`` ws, or with ``fresh`` of
    k-best MIRA (Algorithm 1): per example its working set gets the current k-best sequences
    (``add_kbest``), then SMO runs over the whole set. SDM keeps example s's set in row s across
    epochs; MIRA's is row 0, reset to S_n = {y_n} with beta = C before each example (its k-best
    sequences, pairwise distinct, all fit when ws holds k + 1). Returns (c, smo_steps, top_loss,
    dropped)."""
    NF = w.W.shape[0]
    L = w.W.shape[1]
    _, E, seqs, scores = decode_buffers(X.offsets, L, k)
    total = 0
    top_loss = 0
    dropped = 0
    for s in order:
        a, n, r, loss0 = decode_example(X, w, s, k, E, seqs, scores)
        if n == 0:
            continue
        top_loss += loss0
        i = 0 if fresh else s
        if fresh:
            ws.seq[0, 0, :n] = X.y[a:a + n]
            ws.beta[0, 0] = C
            ws.m[0] = 1
        m, dr = add_kbest(ws, i, seqs, r, n)
        dropped += dr
        V = stack(X, a, n, ws.seq[i, :, :n], m, NF, L)
        beta = ws.beta[i, :m].copy()
        total += smo_solve(V, beta, w, u, c, smo)
        ws.beta[i, :m] = beta
        c += 1.0
    return c, total, top_loss, dropped


@njit
def kbest_mira_epoch(X, order, w, u, c, k, C, smo):
    """One epoch of k-best MIRA (Algorithm 1) solved by SMO. Returns (c, smo_steps, top_loss)."""
    cap = max(k, 1) + 1
    ws = WorkingSets(np.empty((1, cap, max_length(X.offsets)), dtype=np.int32), np.empty((1, cap)),
                     np.ones(1, dtype=np.int64))
    c, total, top_loss, _ = smo_epoch(X, order, w, u, c, k, C, smo, ws, True)
    return c, total, top_loss


@njit
def kbest_sdm_epoch(X, order, w, u, c, k, smo, ws):
    """One epoch of k-best SDM (Algorithm 2) on the ``WorkingSets`` ws. Returns
    (c, smo_steps, top_loss, dropped)."""
    return smo_epoch(X, order, w, u, c, k, 0.0, smo, ws, False)
