"""The lookahead margin perceptron (Tsuruoka et al. 2011, Figure 3) for sequence labelling.

At each decision along the gold path (the learner walks the correct history), every action is
scored by the best leaf of a depth-D lookahead search (``structkit.sequence.search.lookahead``); the
margin C is subtracted from the gold action's backed-up score, and when another action wins,
w += phi(S*_c) - phi(S*): the features of the gold action's best leaf minus those of the
winner's, over the decisions they span. Each decision is one example for averaging. Depth 0
with C = 0 is the plain greedy history-based perceptron.
"""
from __future__ import annotations

import numpy as np

from structkit.sequence.chain import add_features
from structkit.jit import njit
from structkit.sequence.search.lookahead import _scratch, decide, decision_rows
from structkit.sequence.search.viterbi import max_length


@njit
def lookahead_epoch(X, order, w, u, c, second_order, reverse, depth, margin, use_dp):
    """One epoch of Figure 3 over the sentences of the corpus X in ``order``, with the
    ``SecondOrder`` weights w and accumulators u (T2 a placeholder unless ``second_order``).

    Returns (c, mistakes, updates): mistakes = decisions whose best action (without margin)
    is wrong; updates = decisions that changed the weights (mistakes plus margin violations).
    """
    indptr, indices, offsets, y = X
    W, T, T2, U, TU, T2U = w.W, w.T, w.T2, u.W, u.T, u.T2
    L = W.shape[1]
    maxlen = max_length(offsets)
    sc = _scratch(maxlen, L, depth, second_order)
    E, paths = sc.E, sc.paths
    gold_dec = np.empty(maxlen, dtype=np.int64)
    pc = np.empty(depth + 3, dtype=np.int64)  # [p2, p1, gold, gold's continuation...]
    ps = np.empty(depth + 3, dtype=np.int64)  # [p2, p1, winner, winner's continuation...]
    mistakes = 0
    updates = 0
    for s in order:
        a = offsets[s]
        n = offsets[s + 1] - a
        if n == 0:
            continue
        for k in range(n):
            gold_dec[k] = y[a + (n - 1 - k if reverse else k)]
        fresh = 0  # E rows [k, fresh) are scored with the current weights
        for k in range(n):
            need = min(n, k + depth + 1)
            if fresh < need:
                decision_rows(indptr, indices, W, a, need, reverse, fresh, E, n)
                fresh = need
            p1 = gold_dec[k - 1] if k >= 1 else L
            p2 = gold_dec[k - 2] if k >= 2 else L
            g = gold_dec[k]
            best, plain, d = decide(w, sc, k, min(depth, n - 1 - k), p1, p2, g, margin, second_order,
                                    use_dp)
            if plain != g:
                mistakes += 1
            if best != g:
                updates += 1
                pc[0] = p2
                pc[1] = p1
                pc[2] = g
                ps[0] = p2
                ps[1] = p1
                ps[2] = best
                for j in range(d):
                    pc[j + 3] = paths[1][j]
                    ps[j + 3] = paths[2][j]
                for j in range(d + 1):
                    kk = k + j
                    t = a + (n - 1 - kk if reverse else kk)
                    lc = pc[j + 2]
                    ls = ps[j + 2]
                    if lc != ls:
                        add_features(X, t, W, U, lc, 1.0, c)
                        add_features(X, t, W, U, ls, -1.0, -c)
                    if pc[j + 1] != ps[j + 1] or lc != ls:
                        T[pc[j + 1], lc] += 1.0
                        TU[pc[j + 1], lc] += c
                        T[ps[j + 1], ls] -= 1.0
                        TU[ps[j + 1], ls] -= c
                    if second_order and (pc[j] != ps[j] or pc[j + 1] != ps[j + 1] or lc != ls):
                        T2[pc[j], pc[j + 1], lc] += 1.0
                        T2U[pc[j], pc[j + 1], lc] += c
                        T2[ps[j], ps[j + 1], ls] -= 1.0
                        T2U[ps[j], ps[j + 1], ls] -= c
                # the weights changed: rows after k are stale, rescored when next needed
                fresh = k + 1
            c += 1.0
    return c, mistakes, updates
