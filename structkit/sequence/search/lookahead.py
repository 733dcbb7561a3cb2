"""Lookahead search for history-based sequence labelling (Tsuruoka et al. 2011), in numba.

The transition system: a state is (decision index k, the labels already chosen); an action is
a label for the k-th token in decoding order (left to right, or right to left); the
incremental score of action y in a state is

    s_k(y | p1, p2) = E[k, y] + T[p1, y] (+ T2[p2, p1, y] with label-trigram features)

where p1, p2 are the previous and two-back labels in decoding order (``L`` = sentence boundary)
and E[k] is the emission score row of the k-th decision. A state's score w . phi(S) is the sum
of its actions' scores; states are never rescored from scratch (the paper's footnote 2).

Two search strategies compute the same thing:

* ``brute``: Figure 2's depth-first SEARCH(d, S) enumerating every sequence of the next d
  actions (O(m^(d+1)) per decision, m labels), keeping the first best leaf in action order.
* ``dp``: the same maxima by dynamic programming over the window of d further decisions
  (O(d m^2) first order, O(d m^3) second order); the best leaf's path is rebuilt by taking, at
  each step, the lowest label that attains the maximum, which is exactly the leaf the
  depth-first search keeps (the lexicographically first best sequence).

Both sum a path's scores in a fixed order, so on integer-valued weights (the perceptron's, during
training) they agree exactly, ties included. With real-valued (averaged) weights the two
orders of summation can differ in the last bit, which could only matter for a near-exact tie.

E rows are in decoding order: row k is token ``n-1-k`` when tagging right to left.

The kernels take the weights as one ``SecondOrder(W, T, T2)`` tuple w (``structkit.sequence.chain``;
T2 a placeholder unless ``second_order``; the search itself reads only T and T2) and their
buffers as one ``Scratch`` s; a decision is (k, d): decision k of the sentence with a window of
d = min(depth, n - 1 - k) further decisions, after the labels p1 (previous) and p2 (two back).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.jit import njit
from structkit.lookahead import weigh_action
from structkit.sequence.search.viterbi import max_length, token_row

Scratch = namedtuple("Scratch", ["E", "B1", "B2", "values", "labels", "pre", "paths"])
Scratch.__doc__ = """The buffers of the lookahead search (``_scratch``): emission rows E[maxlen, L]
in decoding order; the window DP's tables B1[depth + 1, L] (first order) and B2[depth + 1, L, L]
(second order; (1, 1, 1) otherwise); ``values`` (L): the DP's continuation value per first
action, and the brute-force search's score row; ``labels``/``pre`` (depth + 1): the brute-force
odometer and its prefix scores; ``paths[3, depth + 1]``: rows 0 (the brute-force search's
current best), 1 (the gold action's continuation) and 2 (the chosen action's)."""


@njit
def step_score(E, T, T2, k, p1, p2, y, second_order):
    """Score of giving label y to decision k after labels p1 (previous) and p2 (two back)."""
    s = E[k, y] + T[p1, y]
    if second_order:
        s += T2[p2, p1, y]
    return s


# ---- brute force: Figure 2 ---------------------------------------------------------------
@njit
def search_brute(w, s, k, d, p1, p2, a, second_order, path):
    """Value of the best leaf reached by action ``a`` at decision k followed by the d further
    actions of its window, enumerated depth first.

    ``s.labels``/``s.pre`` (length >= d + 1) and ``s.values`` (length L, the score row) are
    scratch; the best continuation's labels are written to ``path[:d]``. Returns (value, d)."""
    E, T, T2 = s.E, w.T, w.T2
    labels, pre, row = s.labels, s.pre, s.values
    L = E.shape[1]
    v0 = step_score(E, T, T2, k, p1, p2, a, second_order)
    if d == 0:
        return v0, 0
    best = -np.inf
    # labels[0] = a, labels[j] = label of decision k + j; pre[j] = score of the path to j.
    labels[0] = a
    pre[0] = v0
    for j in range(1, d + 1):
        labels[j] = 0
    # prefix scores of the first path 0, 0, ..., 0
    for j in range(1, d):
        q1 = labels[j - 1]
        q2 = labels[j - 2] if j >= 2 else p1
        pre[j] = pre[j - 1] + step_score(E, T, T2, k + j, q1, q2, labels[j], second_order)
    while True:
        # The deepest level: every label z in order, the first maximum kept. Scored as one
        # row first (a loop LLVM vectorises), then scanned: max_z fl(base + s_z) equals
        # fl(base + max_z s_z) because rounding is monotone, and the first z whose own sum
        # reaches it is the one a leaf-by-leaf scan would keep.
        q1 = labels[d - 1]
        q2 = labels[d - 2] if d >= 2 else p1
        base = pre[d - 1]
        kk = k + d
        if second_order:
            for z in range(L):
                row[z] = (E[kk, z] + T[q1, z]) + T2[q2, q1, z]
        else:
            for z in range(L):
                row[z] = E[kk, z] + T[q1, z]
        m = row[0]
        for z in range(1, L):
            m = max(m, row[z])
        v = base + m
        if v > best:
            best = v
            for z in range(L):
                if base + row[z] == v:
                    path[d - 1] = z
                    break
            for j in range(1, d):
                path[j - 1] = labels[j]
        # advance the odometer over levels d-1 .. 1
        j = d - 1
        while j >= 1:
            labels[j] += 1
            if labels[j] < L:
                break
            labels[j] = 0
            j -= 1
        if j < 1:
            break
        for i in range(j, d):
            q1 = labels[i - 1]
            q2 = labels[i - 2] if i >= 2 else p1
            pre[i] = pre[i - 1] + step_score(E, T, T2, k + i, q1, q2, labels[i], second_order)
    return best, d


# ---- dynamic programming over the lookahead window ----------------------------------------
@njit
def window_dp(w, s, k, d, p1, second_order):
    """Best continuation values after each first action: s.values[a] = max over the d further
    actions of the window of the path score after a (not counting a's own score).

    First order fills ``s.B1[j, y]`` (best score of decisions k+j+1..k+d with label y at k+j);
    second order fills ``s.B2[j, p, y]`` (labels p at k+j-1 and y at k+j). Returns d."""
    E, T, T2 = s.E, w.T, w.T2
    B1, B2, values_out = s.B1, s.B2, s.values
    L = E.shape[1]
    if d == 0:
        for a in range(L):
            values_out[a] = 0.0
        return 0
    if not second_order:
        for y in range(L):
            B1[d, y] = 0.0
        for j in range(d - 1, -1, -1):
            kk = k + j + 1
            for y in range(L):
                best = -np.inf
                for z in range(L):  # max(), not a branch: the loop vectorises
                    best = max(best, (E[kk, z] + T[y, z]) + B1[j + 1, z])
                B1[j, y] = best
        for a in range(L):
            values_out[a] = B1[0, a]
        return d
    for p in range(L):
        for y in range(L):
            B2[d, p, y] = 0.0
    for j in range(d - 1, 0, -1):
        kk = k + j + 1
        for p in range(L):
            for y in range(L):
                best = -np.inf
                for z in range(L):
                    best = max(best, ((E[kk, z] + T[y, z]) + T2[p, y, z]) + B2[j + 1, y, z])
                B2[j, p, y] = best
    kk = k + 1
    for a in range(L):
        best = -np.inf
        for z in range(L):
            best = max(best, ((E[kk, z] + T[a, z]) + T2[p1, a, z]) + B2[1, a, z])
        values_out[a] = best
    return d


@njit
def window_path(w, s, k, d, p1, a, second_order, path):
    """Rebuild the best continuation after action a from ``window_dp``'s tables into path[:d]:
    at each step the lowest label attaining the maximum (the leaf depth-first search keeps)."""
    E, T, T2 = s.E, w.T, w.T2
    B1, B2 = s.B1, s.B2
    L = E.shape[1]
    q1 = a
    q2 = p1
    for j in range(1, d + 1):
        kk = k + j
        best = -np.inf
        arg = 0
        for z in range(L):
            if second_order:
                rest = B2[j, q1, z] if j < d else 0.0
                v = ((E[kk, z] + T[q1, z]) + T2[q2, q1, z]) + rest
            else:
                rest = B1[j, z] if j < d else 0.0
                v = (E[kk, z] + T[q1, z]) + rest
            if v > best:
                best = v
                arg = z
        path[j - 1] = arg
        q2 = q1
        q1 = arg


# ---- one decision ---------------------------------------------------------------------------
@njit
def decide(w, s, k, d, p1, p2, gold, margin, second_order, use_dp):
    """Figure 3's choice at decision k with a window of d further decisions: the action whose
    backed-up score is highest after subtracting ``margin`` from the gold action's (gold < 0:
    no gold, plain search).

    Returns (chosen action, plain best action without the margin, d). When the chosen action
    is not gold, ``s.paths[1, :d]``/``s.paths[2, :d]`` hold the continuations of the gold and
    the chosen action (for the update)."""
    E, T, T2 = s.E, w.T, w.T2
    values = s.values
    path_tmp, path_gold, path_best = s.paths[0], s.paths[1], s.paths[2]
    L = E.shape[1]
    best = (-np.inf, 0, -np.inf, 0)  # (chosen score, chosen action, plain score, plain action)
    if use_dp:
        d = window_dp(w, s, k, d, p1, second_order)
        for a in range(L):
            v = step_score(E, T, T2, k, p1, p2, a, second_order) + values[a]
            # no path to copy (d = 0): the DP rebuilds the two that are needed below
            best = weigh_action(a, v, gold, margin, path_tmp, 0, path_gold, path_best, best)
        _, best_a, _, plain_a = best
        if gold >= 0 and best_a != gold and d > 0:
            window_path(w, s, k, d, p1, gold, second_order, path_gold)
            window_path(w, s, k, d, p1, best_a, second_order, path_best)
        return best_a, plain_a, d
    for a in range(L):
        if d == 0:  # nothing to look ahead at: the action's own score
            v = step_score(E, T, T2, k, p1, p2, a, second_order)
        else:
            v, d = search_brute(w, s, k, d, p1, p2, a, second_order, path_tmp)
        best = weigh_action(a, v, gold, margin, path_tmp, d, path_gold, path_best, best)
    _, best_a, _, plain_a = best
    return best_a, plain_a, d


@njit
def decision_rows(indptr, indices, W, a, k1, reverse, k0, E, n):
    """E[k] = emission scores of the k-th decision's token (sentence of n tokens starting at
    token a), for k = k0 .. k1-1."""
    for k in range(k0, k1):
        token_row(indptr, indices, W, a + (n - 1 - k if reverse else k), E[k])


@njit
def sentence_rows(indptr, indices, offsets, W, s, reverse, E):
    """(a, n): sentence s's first token and length, the emissions of its n decisions in E[:n]."""
    a = offsets[s]
    n = offsets[s + 1] - a
    decision_rows(indptr, indices, W, a, n, reverse, 0, E, n)
    return a, n


@njit
def _scratch(maxlen, L, depth, second_order):
    E = np.empty((maxlen, L))
    B1 = np.empty((depth + 1, L))
    B2 = np.empty((depth + 1, L, L) if second_order else (1, 1, 1))
    values = np.empty(L)
    labels = np.empty(depth + 1, dtype=np.int64)
    pre = np.empty(depth + 1)
    paths = np.empty((3, depth + 1), dtype=np.int64)
    return Scratch(E, B1, B2, values, labels, pre, paths)


@njit
def lookahead_decode(indptr, indices, offsets, w, second_order, reverse, depth, use_dp, out):
    """Tag every sentence with the ``SecondOrder`` weights w: at each decision, the action with
    the best lookahead score."""
    W = w.W
    L = W.shape[1]
    sc = _scratch(max_length(offsets), L, depth, second_order)
    E = sc.E
    for s in range(len(offsets) - 1):
        a, n = sentence_rows(indptr, indices, offsets, W, s, reverse, E)
        p1 = L
        p2 = L
        for k in range(n):
            y, _, _ = decide(w, sc, k, min(depth, n - 1 - k), p1, p2, -1, 0.0, second_order, use_dp)
            out[a + (n - 1 - k if reverse else k)] = y
            p2 = p1
            p1 = y


# ---- decision values: the margins of ``--scores`` and ``explain`` ----------------------------
@njit
def decision_values(w, s, k, d, p1, p2, second_order, use_dp, vals):
    """vals[a] = the backed-up score of action a at decision k (its own score plus its best
    continuation over the window of d further decisions): the values ``decide`` compares, summed
    in the same order, so the first maximum of vals is the action ``decide`` takes. Returns d.

    Leaves ``window_dp``'s tables filled (dp), for ``continuation``."""
    E, T, T2 = s.E, w.T, w.T2
    L = E.shape[1]
    if use_dp:
        d = window_dp(w, s, k, d, p1, second_order)
        for a in range(L):
            vals[a] = step_score(E, T, T2, k, p1, p2, a, second_order) + s.values[a]
        return d
    for a in range(L):
        if d == 0:
            vals[a] = step_score(E, T, T2, k, p1, p2, a, second_order)
        else:
            v, d = search_brute(w, s, k, d, p1, p2, a, second_order, s.paths[0])
            vals[a] = v
    return d


@njit
def continuation(w, s, k, d, p1, p2, a, second_order, use_dp, path):
    """The best continuation after action a at decision k into path[:d] (decoding order), right
    after ``decision_values`` at the same decision: the leaf the search keeps."""
    if d == 0:
        return
    if use_dp:
        window_path(w, s, k, d, p1, a, second_order, path)
    else:
        search_brute(w, s, k, d, p1, p2, a, second_order, path)


@njit
def lookahead_values(indptr, indices, offsets, w, second_order, reverse, depth, use_dp, labels, V, cont,
                     cont_of):
    """For each token t, with ``labels`` as the labels already decided (the history):
    V[t, a] = the backed-up score of label a at t's decision (``decision_values``); with
    cont of shape (n_tokens, depth), cont[t, :d] = the best continuation after label
    cont_of[t] at that decision (the next d decisions' labels, decoding order) and -1 beyond
    the window. cont of shape (0, 0): no continuations."""
    W = w.W
    L = W.shape[1]
    sc = _scratch(max_length(offsets), L, depth, second_order)
    E = sc.E
    vals = np.empty(L)
    path = np.empty(depth + 1, dtype=np.int64)
    want = cont.shape[0] > 0
    for s in range(len(offsets) - 1):
        a, n = sentence_rows(indptr, indices, offsets, W, s, reverse, E)
        p1 = L
        p2 = L
        for k in range(n):
            t = a + (n - 1 - k if reverse else k)
            d = decision_values(w, sc, k, min(depth, n - 1 - k), p1, p2, second_order, use_dp, vals)
            for z in range(L):
                V[t, z] = vals[z]
            y = labels[t]
            if want:
                continuation(w, sc, k, d, p1, p2, cont_of[t], second_order, use_dp, path)
                for j in range(cont.shape[1]):
                    cont[t, j] = path[j] if j < d else -1
            p2 = p1
            p1 = y
