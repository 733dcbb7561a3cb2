"""k-best LaRank (Mancev & Todorovic, k-best structured SVMs, Sec. 4.3, Algorithm 3), one pass,
Hamming loss, on the flat per-example working sets of ``structkit.sequence.learn.smo``.

For each example n of ``order`` (one pass):

* kBV-PROCESSNEW(n): S_n <- {y : lambda_{n,y} > 0} (gold kept) union B^k_w (eq. 12, current w),
  then SMO over the whole S_n until the KKT conditions hold up to tau (eqs. 17-20). This is
  exactly k-best SDM's per-example step, so it is performed by calling
  ``kbest_sdm_epoch`` on the one-element order [n] (no duplicated code); c += 1 afterwards.
* then n_R times kBV-REPROCESS:
  - kBV-PROCESSOLD: m <- uniformly random example among those already processed by
    PROCESSNEW in this pass (the paper's Random[1, n]); S_m <- {non-zero coefficients} union
    B^k_w with the current w; SMO over S_m (again ``kbest_sdm_epoch`` on [m], with the returned
    c discarded: c counts only PROCESSNEW examples).
  - ``maxIter`` (= n_optimize, 10 as in OLaRank; ``kbest_larank_epoch`` uses 10) times
    kBV-OPTIMIZE: m <- random processed example; SMO restricted to the coefficients of S_m that
    are non-zero (beta > 0), no decoding, so no new support vectors.

The schedule (one PROCESSNEW, then n_R x (PROCESSOLD + maxIter x OPTIMIZE)) is OLaRank's, in
``structkit.sequence.learn.schedule``. The paper's kBV operations all run SMO "while the KKT
conditions are violated more than tau"; none of them is a single SMO step (that is the 1-best
OLaRank's PROCESSNEW / PROCESSOLD), so every SMO call here runs to tau-optimality (capped at
max_steps per call).

Deviation: the paper picks y'' among y with beta > kappa (a second tolerance kappa > 0); we
reuse ``smo_solve``, which uses beta > 0, i.e. kappa = 0.

Randomness: ``np.random.seed(seed)`` inside the kernel (numba's own generator), then
``np.random.randint``; the same seed gives bit-identical results.

Averaging: every change d of W (T) adds c * d to U (TU) with the current c (done by
``smo_solve``); c += 1 per example processed by PROCESSNEW. Returns (c, smo_steps, top_loss,
dropped): smo_steps counts all SMO steps of all operations, top_loss the Hamming loss of the
best loss-augmented sequence at PROCESSNEW, dropped the k-best sequences not stored because a
working set was full (PROCESSNEW and PROCESSOLD).

With n_R = 0 the pass is k-best SDM's first epoch (paper: "n_R = 0 reduces OLaRank to the ...
SDM for the first epoch", Fig. 1 4)).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.sequence.learn.smo import kbest_sdm_epoch, smo_solve, stack
from structkit.sequence.learn.schedule import NEW, OPTIMIZE, operation, start_pass, turn_length
from structkit.sequence.chain import hamming
from structkit.jit import njit

LaRankPlan = namedtuple("LaRankPlan", ["n_reprocess", "n_optimize", "seed"])
LaRankPlan.__doc__ = ("Algorithm 3's schedule: n_reprocess REPROCESS steps per new example, n_optimize "
                      "OPTIMIZE steps per REPROCESS; the seed of numba's generator (-1: continue it).")


@njit
def _lin(X, ws, s):
    """sum_y beta_{s,y} L_s(y): example s's share of the dual's linear term."""
    a = X.offsets[s]
    n = X.offsets[s + 1] - a
    v = 0.0
    for j in range(ws.m[s]):
        if ws.beta[s, j] != 0.0:
            v += ws.beta[s, j] * hamming(X.y, a, n, ws.seq[s, j])
    return v


@njit
def _optimize(X, s, w, u, c, smo, ws):
    """kBV-OPTIMIZE on example s: SMO among its non-zero coefficients only. Returns steps."""
    NF = w.W.shape[0]
    L = w.W.shape[1]
    a = X.offsets[s]
    n = X.offsets[s + 1] - a
    m = ws.m[s]
    idx = np.empty(m, dtype=np.int64)
    cnt = 0
    for j in range(m):
        if ws.beta[s, j] > 0.0:
            idx[cnt] = j
            cnt += 1
    if cnt < 2:
        return 0
    S = np.empty((cnt, n), dtype=np.int32)
    beta = np.empty(cnt)
    for i in range(cnt):
        S[i, :] = ws.seq[s, idx[i], :n]
        beta[i] = ws.beta[s, idx[i]]
    V = stack(X, a, n, S, cnt, NF, L)
    steps = smo_solve(V, beta, w, u, c, smo)
    for i in range(cnt):
        ws.beta[s, idx[i]] = beta[i]
    return steps


@njit
def _dual(w, lin):
    """The dual objective given its linear term lin (``_lin`` summed)."""
    return lin - 0.5 * (np.sum(w.W * w.W) + np.sum(w.T * w.T))


@njit
def larank_core(X, order, w, u, c, k, smo, ws, n_reprocess, seed, n_optimize, trace):
    """Algorithm 3, one pass. If trace.shape[0] > 0 it receives, after every operation, the dual
    objective D = sum_{n,y} beta_{n,y} L_n(y) - 1/2 ||w||^2 (eqs. 4-6; only meaningful when
    w = sum beta dF on entry, e.g. w = 0 with fresh working sets); trace must then hold
    len(order) * (1 + n_reprocess * (1 + n_optimize)) + 1 values (trace[0] = on entry). Entries
    for skipped (empty) examples are left untouched. Returns (c, smo_steps, top_loss, dropped)."""
    seen = np.empty(order.shape[0], dtype=np.int64)
    c, total, top_loss, dropped, _ = larank_steps(X, order, w, u, c, k, smo, ws,
                                                  LaRankPlan(n_reprocess, n_optimize, seed), seen, 0, trace)
    return c, total, top_loss, dropped


@njit
def _operate(X, m, w, u, c, k, smo, ws, kind, one):
    """Algorithm 3's operation ``kind`` (``structkit.sequence.learn.schedule``) on example m:
    kBV-PROCESSNEW or kBV-PROCESSOLD, both k-best SDM's step (``kbest_sdm_epoch`` on the
    one-element order [m], in ``one``), or kBV-OPTIMIZE (``_optimize``). Returns (c after it,
    SMO steps, top loss, dropped)."""
    if kind == OPTIMIZE:
        return c, _optimize(X, m, w, u, c, smo, ws), 0, 0
    one[0] = m
    return kbest_sdm_epoch(X, one, w, u, c, k, smo, ws)


@njit
def larank_steps(X, order, w, u, c, k, smo, ws, plan, seen, n_seen, trace):
    """The steps of Algorithm 3 (scheduled by the ``LaRankPlan`` plan) for the examples of
    ``order``, continuing a pass that has seen ``seen[:n_seen]`` (PROCESSOLD and OPTIMIZE draw
    from them): a pass is one call, or several on consecutive slices of its order
    (``structkit.learn.pieces``), the first with the pass's seed and the others with -1, which
    continues numba's generator instead of seeding it. Returns (c, smo_steps, top_loss,
    dropped, n_seen)."""
    n_optimize = plan.n_optimize
    rec = start_pass(plan.seed, trace)
    N = order.shape[0]
    one = np.empty(1, dtype=order.dtype)
    total = 0
    top_loss = 0
    dropped = 0
    lin = 0.0
    if rec:
        for s in range(ws.m.shape[0]):
            lin += _lin(X, ws, s)
        trace[0] = _dual(w, lin)
    per = turn_length(plan.n_reprocess, n_optimize)
    for i in range(N):
        s = order[i]
        if X.offsets[s + 1] - X.offsets[s] == 0:
            continue
        pos = 1 + i * per
        for op in range(per):
            kind = operation(op, n_optimize)
            # PROCESSNEW on s, the others on a random example processed in this pass
            m = s if kind == NEW else seen[np.random.randint(0, n_seen)]
            if rec:
                lin -= _lin(X, ws, m)
            c_op, st, tl, dr = _operate(X, m, w, u, c, k, smo, ws, kind, one)
            total += st
            dropped += dr
            if kind == NEW:  # c and top_loss count PROCESSNEW's examples only
                c = c_op
                top_loss += tl
                seen[n_seen] = s
                n_seen += 1
            if rec:
                lin += _lin(X, ws, m)
                trace[pos] = _dual(w, lin)
                pos += 1
    return c, total, top_loss, dropped, n_seen


@njit
def kbest_larank_epoch(X, order, w, u, c, k, smo, ws, n_reprocess, seed):
    """One pass of k-best LaRank (Algorithm 3) with maxIter = 10 OPTIMIZE steps per REPROCESS
    (OLaRank's scheduling). Returns (c, smo_steps, top_loss, dropped)."""
    return larank_core(X, order, w, u, c, k, smo, ws, n_reprocess, seed, 10,
                       np.empty(0))
