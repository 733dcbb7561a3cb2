"""Lookahead search and the lookahead margin perceptron (Tsuruoka et al. 2011, Section 3,
Figures 2-3) against plain-Python references on seeded random inputs.

Conventions under test (see ``structkit.sequence.search.lookahead``): CSR features (indptr int64,
indices int32); W[n_features, L]; T[L+1, L+1] (index L = sentence boundary); T2[L+1, L+1, L]
indexed [two back, previous, current]; decision k is token k, or token n-1-k when ``reverse``;
a state's score is the sum over its decisions of emission + T[prev, label] (+ T2[two back,
prev, label]) -- no end-of-sentence transition; during training the history is the GOLD
labels and every decision is one averaging example (c += 1).

The references below are literal transcriptions of the pseudo code:

* ``ref_search`` is Figure 2: recursive SEARCH(d, S) exploring actions 0..L-1 in order and
  keeping the first strictly better leaf; at the end of the sentence a state has no actions
  and is its own leaf (the window is truncated there).
* ``ref_epoch`` is Figure 3 applied at every decision along the gold path, with
  w += phi(S*_c) - phi(S*) computed from whole states (phi from scratch, the common prefix
  cancelling in the difference) and the averaging accumulators U += c * update.

Values are the scores of the actions from the current decision on (the prefix's score is
the same for every action); they are summed left to right, the order the brute-force kernel
uses, so brute force must agree with them bit for bit even on real-valued weights. The
training comparisons use integer-valued weights, so every sum is exact.
"""
from __future__ import annotations

import itertools
import math
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from structkit.cli import main
from structkit.sequence.features import Encoded
from structkit.sequence.learn.lookahead import lookahead_epoch
from structkit.sequence.learn.perceptron import AveragedPerceptron
from structkit.sequence.chain import Corpus, SecondOrder
from structkit.sequence.search.lookahead import (Scratch, decide, decision_rows, lookahead_decode,
                                        search_brute, step_score, window_dp, window_path)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def flat_lookahead_epoch(indptr, indices, offsets, y, order, W, U, T, TU, T2, T2U, second_order,
                         reverse, depth, margin, use_dp, c):
    """``lookahead_epoch`` with the arrays in this file's flat order."""
    return lookahead_epoch(Corpus(indptr, indices, offsets, y), order, SecondOrder(W, T, T2),
                           SecondOrder(U, TU, T2U), c, second_order, reverse, depth, margin, use_dp)

CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
MARGINS = (0.0, 0.5, 1.0, 2.0)
NO_T2 = np.zeros((1, 1, 1))
NO_W = np.zeros((0, 1))  # the emission weights, which the search kernels never read


# ---- random inputs ------------------------------------------------------------------------
def random_csr(rng, n_tokens, n_features, max_nnz=3):
    """CSR feature ids per token (some tokens featureless, repeated ids allowed)."""
    counts = rng.integers(0, max_nnz + 1, size=n_tokens)
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(counts)
    indices = rng.integers(0, n_features, size=int(indptr[-1])).astype(np.int32)
    return indptr, indices


def random_offsets(rng, n_sentences, max_len, min_len=1, empty=False):
    lengths = rng.integers(min_len, max_len + 1, size=n_sentences)
    if empty:  # an empty sentence somewhere: no decision, not an example
        lengths[int(rng.integers(0, n_sentences))] = 0
    offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(lengths)
    return offsets


def random_problem(rng, L, n_features=8, n_sentences=4, max_len=6, empty=False):
    offsets = random_offsets(rng, n_sentences, max_len, empty=empty)
    n_tokens = int(offsets[-1])
    indptr, indices = random_csr(rng, n_tokens, n_features)
    y = rng.integers(0, L, size=n_tokens).astype(np.int32)
    return indptr, indices, offsets, y


def small_ints(rng, shape, zeros=0.6):
    """Integer-valued floats, mostly zero (lots of exact ties)."""
    v = rng.integers(-2, 3, size=shape).astype(float)
    v[rng.random(shape) < zeros] = 0.0
    return v


def start_weights(rng, nF, L, second_order, kind):
    """(W, U, T, TU, T2, T2U, c): all zero with c = 1, or small random integers."""
    s2 = (L + 1, L + 1, L) if second_order else (1, 1, 1)
    if kind == "zero":
        arrs = [np.zeros((nF, L)), np.zeros((nF, L)), np.zeros((L + 1, L + 1)),
                np.zeros((L + 1, L + 1)), np.zeros(s2), np.zeros(s2)]
        return arrs + [1.0]
    W, T = small_ints(rng, (nF, L), 0.5), small_ints(rng, (L + 1, L + 1), 0.5)
    T2 = small_ints(rng, s2, 0.5) if second_order else np.zeros(s2)
    U, TU = small_ints(rng, (nF, L), 0.3), small_ints(rng, (L + 1, L + 1), 0.3)
    T2U = small_ints(rng, s2, 0.3) if second_order else np.zeros(s2)
    return [W, U, T, TU, T2, T2U, 6.0]


# ---- plain-Python references --------------------------------------------------------------
class Ctx:
    """One sentence's search context: E rows in decoding order (Python floats)."""

    def __init__(self, E, T, T2, second_order, n):
        self.E = [list(map(float, r)) for r in E]
        self.T = np.asarray(T).tolist()
        self.T2 = np.asarray(T2).tolist()
        self.so = bool(second_order)
        self.n = n
        self.L = len(self.T) - 1


def ref_step(ctx, state, a):
    """Score of action a (a label for decision len(state)) after the labels in ``state``."""
    k = len(state)
    L = ctx.L
    p1 = state[-1] if k >= 1 else L
    p2 = state[-2] if k >= 2 else L
    s = ctx.E[k][a] + ctx.T[p1][a]
    if ctx.so:
        s = s + ctx.T2[p2][p1][a]
    return s


def ref_search(ctx, state, d, value):
    """Figure 2: SEARCH(d, S) -> (best leaf state, its value). ``value`` is S's score (from the
    current decision on). No actions at the sentence end: the state is its own leaf."""
    if d == 0 or len(state) == ctx.n:
        return tuple(state), value
    best_S, best_v = None, -math.inf
    for a in range(ctx.L):
        S, v = ref_search(ctx, state + [a], d - 1, value + ref_step(ctx, state, a))
        if v > best_v:  # first strictly better leaf
            best_S, best_v = S, v
    return best_S, best_v


def ref_backed_up(ctx, hist, depth):
    """[(S', v')] for every action a at decision len(hist): SEARCH(D, UPDATESTATE(S0, a))."""
    return [ref_search(ctx, hist + [a], depth, ref_step(ctx, hist, a)) for a in range(ctx.L)]


def first_argmax(values):
    best, arg = -math.inf, 0
    for i, v in enumerate(values):
        if v > best:
            best, arg = v, i
    return arg


def ref_choose(res, gold, margin):
    """Figure 3 lines 8-16: (a*, S*, S*_c) and the plain best action (no margin)."""
    a_star, S_star, v_best, S_c = None, None, -math.inf, None
    for a, (S, v) in enumerate(res):
        if a == gold:
            v = v - margin
            S_c = S
        if v > v_best:
            a_star, S_star, v_best = a, S, v
    plain = first_argmax([v for _, v in res])
    return a_star, S_star, S_c, plain


def ref_phi(feats, state, L, second_order):
    """phi of a state: emission features of each decided token for its label, T[prev, label]
    and, second order, T2[two back, prev, label] (boundary L)."""
    c = Counter()
    for k, yk in enumerate(state):
        for f in feats[k]:
            c["W", f, yk] += 1
        p1 = state[k - 1] if k >= 1 else L
        p2 = state[k - 2] if k >= 2 else L
        c["T", p1, yk] += 1
        if second_order:
            c["T2", p2, p1, yk] += 1
    return c


def ref_rows(W, feats, k0, k1):
    """E rows k0..k1-1 (None elsewhere), summed in feature order like the kernel."""
    L = W.shape[1]
    rows = [None] * len(feats)
    for k in range(k0, k1):
        row = [0.0] * L
        for f in feats[k]:
            for z in range(L):
                row[z] += float(W[f, z])
        rows[k] = row
    return rows


def sentence_tokens(offsets, s, reverse):
    a = int(offsets[s])
    n = int(offsets[s + 1]) - a
    return [a + (n - 1 - k if reverse else k) for k in range(n)]


def ref_epoch(indptr, indices, offsets, y, order, W, U, T, TU, T2, T2U, second_order, reverse,
              depth, margin, c, log=None):
    """Figure 3 at every decision along the gold path; returns new arrays and counts."""
    W, U, T, TU, T2, T2U = (A.copy() for A in (W, U, T, TU, T2, T2U))
    L = W.shape[1]
    mistakes = updates = 0
    for s in order:
        toks = sentence_tokens(offsets, int(s), reverse)
        n = len(toks)
        feats = [[int(f) for f in indices[indptr[t]:indptr[t + 1]]] for t in toks]
        gold = [int(y[t]) for t in toks]
        for k in range(n):
            # the rows this decision's window needs, with the CURRENT weights
            rows = ref_rows(W, feats, k, min(n, k + depth + 1))
            ctx = Ctx([r if r is not None else [0.0] * L for r in rows], T, T2, second_order, n)
            hist = gold[:k]
            res = ref_backed_up(ctx, hist, depth)
            g = gold[k]
            a_star, S_star, S_c, plain = ref_choose(res, g, margin)
            mistakes += plain != g
            if a_star != g:
                updates += 1
                delta = ref_phi(feats, S_c, L, second_order)
                delta.subtract(ref_phi(feats, S_star, L, second_order))
                for key, v in delta.items():
                    if not v:
                        continue
                    A, AU = {"W": (W, U), "T": (T, TU), "T2": (T2, T2U)}[key[0]]
                    A[key[1:]] += v
                    AU[key[1:]] += c * v
                if log is not None:
                    log.append((k, S_c, S_star))
            c += 1.0
    return W, U, T, TU, T2, T2U, c, mistakes, updates


def ref_decode(indptr, indices, offsets, W, T, T2, second_order, reverse, depth):
    """At each decision the first action with the best lookahead value, PREDICTED history."""
    out = np.full(int(offsets[-1]), -1, dtype=np.int32)
    for s in range(len(offsets) - 1):
        toks = sentence_tokens(offsets, s, reverse)
        n = len(toks)
        feats = [[int(f) for f in indices[indptr[t]:indptr[t + 1]]] for t in toks]
        ctx = Ctx(ref_rows(W, feats, 0, n), T, T2, second_order, n)
        hist = []
        for k in range(n):
            hist.append(first_argmax([v for _, v in ref_backed_up(ctx, hist, depth)]))
            out[toks[k]] = hist[-1]
    return out


def run_kernel_epochs(data, state, order, second_order, reverse, depth, margin, use_dp, epochs):
    indptr, indices, offsets, y = data
    arrs = [A.copy() for A in state[:6]]
    c = state[6]
    stats = []
    for _ in range(epochs):
        c, m, u = flat_lookahead_epoch(indptr, indices, offsets, y, order, *arrs, second_order,
                                  reverse, depth, margin, use_dp, c)
        stats.append((m, u))
    return arrs, c, stats


ARR_NAMES = ("W", "U", "T", "TU", "T2", "T2U")


def assert_state_equal(got, exp):
    for name, g, e in zip(ARR_NAMES, got, exp):
        np.testing.assert_array_equal(g, e, err_msg=name)


# ---- 0. the reference itself --------------------------------------------------------------
def test_reference_search_is_lexicographic_first_best():
    """Figure 2's first-strictly-better DFS keeps the lexicographically first best leaf."""
    rng = np.random.default_rng(1)
    for _ in range(40):
        L, n, depth = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(0, 4))
        so = bool(rng.integers(0, 2))
        ctx = Ctx(small_ints(rng, (n, L)), small_ints(rng, (L + 1, L + 1)),
                  small_ints(rng, (L + 1, L + 1, L)) if so else NO_T2, so, n)
        k = int(rng.integers(0, n))
        hist = [int(v) for v in rng.integers(0, L, size=k)]
        for a in range(L):
            S, v = ref_search(ctx, hist + [a], depth, ref_step(ctx, hist, a))
            d = min(depth, n - 1 - k)
            leaves = []
            for cont in itertools.product(range(L), repeat=d):
                st, val = hist + [a], ref_step(ctx, hist, a)
                for z in cont:
                    val += ref_step(ctx, st, z)
                    st = st + [z]
                leaves.append((val, tuple(st)))
            best = max(val for val, _ in leaves)
            assert v == best
            assert S == min(st for val, st in leaves if val == best)


# ---- 1. lookahead_epoch vs Figure 3 -------------------------------------------------------
@pytest.mark.parametrize("use_dp", [True, False], ids=["dp", "brute"])
@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
@pytest.mark.parametrize("reverse", [False, True], ids=["ltr", "rtl"])
def test_lookahead_epoch_vs_figure3(use_dp, second_order, reverse):
    rng = np.random.default_rng(10_000 + 4 * use_dp + 2 * second_order + reverse)
    nF = 8
    total_updates = total_margin_only = total_deep = 0
    for case, (depth, margin) in enumerate(itertools.product(range(4), MARGINS)):
        L = int(rng.integers(1, 5)) if case % 5 else 1 + case % 4
        data = random_problem(rng, L, nF, n_sentences=4, max_len=6, empty=case % 7 == 3)
        state = start_weights(rng, nF, L, second_order, "zero" if case % 2 == 0 else "ints")
        order = (rng.permutation(len(data[2]) - 1) if case % 3 else
                 np.arange(len(data[2]) - 1)).astype(np.int64)
        ref = [A.copy() for A in state[:6]] + [state[6]]
        arrs, c = [A.copy() for A in state[:6]], state[6]
        for epoch in range(3 if depth < 3 else 2):
            c, mistakes, updates = flat_lookahead_epoch(*data, order, *arrs, second_order, reverse,
                                                   depth, margin, use_dp, c)
            log = []
            *ref_arrs, rc, rm, ru = ref_epoch(*data, order, *ref[:6], second_order, reverse,
                                              depth, margin, ref[6], log)
            ref = ref_arrs + [rc]
            ctx = (case, epoch, L, depth, margin)
            assert (mistakes, updates) == (rm, ru), ctx
            assert c == rc, ctx
            assert_state_equal(arrs, ref_arrs)
            total_updates += updates
            total_margin_only += updates - mistakes
            # updates whose gold and winner continuations differ after the first action
            total_deep += sum(Sc[k + 1:] != Ss[k + 1:] for k, Sc, Ss in log)
    assert total_updates > 0 and total_margin_only > 0 and total_deep > 0


# ---- 2. dp == brute force; decoding --------------------------------------------------------
@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
@pytest.mark.parametrize("reverse", [False, True], ids=["ltr", "rtl"])
def test_dp_equals_brute_training_and_decoding(second_order, reverse):
    rng = np.random.default_rng(20_000 + 2 * second_order + reverse)
    nF = 10
    for case in range(14):
        L = int(rng.integers(1, 7))
        depth = int(rng.integers(0, 5))
        margin = MARGINS[case % 4]
        data = random_problem(rng, L, nF, n_sentences=6, max_len=7, empty=case == 5)
        state = start_weights(rng, nF, L, second_order, "zero" if case % 2 else "ints")
        order = rng.permutation(len(data[2]) - 1).astype(np.int64)
        a_dp, c_dp, st_dp = run_kernel_epochs(data, state, order, second_order, reverse, depth,
                                              margin, True, 3)
        a_bf, c_bf, st_bf = run_kernel_epochs(data, state, order, second_order, reverse, depth,
                                              margin, False, 3)
        assert st_dp == st_bf and c_dp == c_bf, (case, L, depth, margin)
        assert_state_equal(a_dp, a_bf)
        indptr, indices, offsets, _ = data
        W, U, T, TU, T2, T2U = a_dp
        # integer (current) weights, then real-valued averaged weights
        for w in ((W, T, T2), (W - U / c_dp, T - TU / c_dp, T2 - T2U / c_dp)):
            outs = []
            for use_dp in (True, False):
                out = np.full(int(offsets[-1]), -1, dtype=np.int32)
                lookahead_decode(indptr, indices, offsets, SecondOrder(*w), second_order, reverse, depth,
                                 use_dp, out)
                outs.append(out)
            np.testing.assert_array_equal(outs[0], outs[1])
            assert (outs[0] >= 0).all() and (outs[0] < L).all()


@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
@pytest.mark.parametrize("reverse", [False, True], ids=["ltr", "rtl"])
@pytest.mark.parametrize("kind", ["ties", "real"])
def test_lookahead_decode_vs_reference(second_order, reverse, kind):
    rng = np.random.default_rng(30_000 + 4 * (kind == "real") + 2 * second_order + reverse)
    nF = 8
    n_tied = 0
    for case in range(16):
        L = int(rng.integers(1, 5))
        depth = case % 4
        indptr, indices, offsets, _ = random_problem(rng, L, nF, n_sentences=4, max_len=6,
                                                     empty=case == 2)
        s2 = (L + 1, L + 1, L) if second_order else (1, 1, 1)
        if kind == "ties":
            W, T = small_ints(rng, (nF, L), 0.7), small_ints(rng, (L + 1, L + 1), 0.7)
            T2 = small_ints(rng, s2, 0.7) if second_order else np.zeros(s2)
        else:
            W, T = rng.normal(size=(nF, L)), rng.normal(size=(L + 1, L + 1))
            T2 = rng.normal(size=s2) if second_order else np.zeros(s2)
        expected = ref_decode(indptr, indices, offsets, W, T, T2, second_order, reverse, depth)
        for use_dp in (True, False):
            out = np.full(int(offsets[-1]), -1, dtype=np.int32)
            lookahead_decode(indptr, indices, offsets, SecondOrder(W, T, T2), second_order, reverse, depth,
                             use_dp, out)
            np.testing.assert_array_equal(out, expected, err_msg=f"case {case} use_dp {use_dp}")
        if kind == "ties":  # count decisions where several first actions tie at the top
            for s in range(len(offsets) - 1):
                toks = sentence_tokens(offsets, s, reverse)
                feats = [[int(f) for f in indices[indptr[t]:indptr[t + 1]]] for t in toks]
                ctx = Ctx(ref_rows(W, feats, 0, len(toks)), T, T2, second_order, len(toks))
                hist = [int(expected[t]) for t in toks]
                for k in range(len(toks)):
                    vals = [v for _, v in ref_backed_up(ctx, hist[:k], depth)]
                    n_tied += vals.count(max(vals)) > 1
    if kind == "ties":
        assert n_tied > 10  # tie-breaking was exercised


def test_lookahead_decode_lookahead_changes_decision():
    """Hand-checked: greedy takes label 1 (emission 1 vs 0); with depth 1 the transition
    1 -> 1 = -5 (forced by the next token) makes label 0 better."""
    L = 2
    W = np.array([[0.0, 1.0], [-10.0, 0.0]])  # feature 0: first token; feature 1: second
    indptr = np.array([0, 1, 2], dtype=np.int64)
    indices = np.array([0, 1], dtype=np.int32)
    offsets = np.array([0, 2], dtype=np.int64)
    T = np.zeros((L + 1, L + 1))
    T[1, 1] = -5.0
    for use_dp in (True, False):
        out = np.empty(2, dtype=np.int32)
        lookahead_decode(indptr, indices, offsets, SecondOrder(W, T, NO_T2), False, False, 0, use_dp, out)
        assert list(out) == [1, 1]
        lookahead_decode(indptr, indices, offsets, SecondOrder(W, T, NO_T2), False, False, 1, use_dp, out)
        assert list(out) == [0, 1]


# ---- 3. the search kernels directly -------------------------------------------------------
def _buffers(depth, L):
    return (np.empty(depth + 1, dtype=np.int64), np.empty(depth + 1), np.empty(L),
            np.full(depth + 3, -7, dtype=np.int64), np.empty((depth + 1, L)),
            np.empty((depth + 1, L, L)))


@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
@pytest.mark.parametrize("kind", ["ties", "real"])
def test_search_kernels_vs_recursive_reference(second_order, kind):
    rng = np.random.default_rng(40_000 + 2 * (kind == "real") + second_order)
    checked_short = 0
    for case in range(40):
        L = int(rng.integers(1, 5))
        n = int(rng.integers(1, 7))
        depth = int(rng.integers(0, 5))
        if kind == "ties":
            E = small_ints(rng, (n + 1, L), 0.6)  # one extra row that must never be read
            T = small_ints(rng, (L + 1, L + 1), 0.6)
            T2 = small_ints(rng, (L + 1, L + 1, L), 0.6) if second_order else NO_T2
        else:
            E, T = rng.normal(size=(n + 1, L)), rng.normal(size=(L + 1, L + 1))
            T2 = rng.normal(size=(L + 1, L + 1, L)) if second_order else NO_T2
        E[n] = np.nan
        ctx = Ctx(E[:n], T, T2, second_order, n)
        for k in range(n):
            hist = [int(v) for v in rng.integers(0, L, size=k)]
            p1 = hist[-1] if k >= 1 else L
            p2 = hist[-2] if k >= 2 else L
            labels, pre, row, path, B1, B2 = _buffers(depth, L)
            values = np.full(L, np.nan)
            w = SecondOrder(NO_W, T, T2)  # the search reads T and T2 only
            paths = np.empty((3, depth + 1), dtype=np.int64)
            s_dp = Scratch(E, B1, B2, values, labels, pre, paths)
            s_bf = Scratch(E, B1, B2, row, labels, pre, paths)  # its own score row
            d_dp = window_dp(w, s_dp, k, min(depth, n - 1 - k), p1, second_order)
            assert d_dp == min(depth, n - 1 - k)
            checked_short += d_dp < depth
            for a in range(L):
                S, v = ref_search(ctx, hist + [a], depth, ref_step(ctx, hist, a))
                cont = list(S[k + 1:])
                d = len(cont)
                assert d == d_dp
                path[:] = -7
                vb, db = search_brute(w, s_bf, k, min(depth, n - 1 - k), p1, p2, a, second_order,
                                      path)
                assert db == d
                assert vb == v, (case, k, a)  # same summation order: bit for bit
                assert list(path[:d]) == cont and (path[d:] == -7).all()
                # dp: the continuation value excludes a's own score
                v0 = step_score(E, T, T2, k, p1, p2, a, second_order)
                assert v0 == ref_step(ctx, hist, a)
                if kind == "ties":
                    assert v0 + values[a] == v
                else:
                    assert v0 + values[a] == pytest.approx(v, rel=1e-12, abs=1e-12)
                path[:] = -7
                window_path(w, s_dp, k, d, p1, a, second_order, path)
                assert list(path[:d]) == cont and (path[d:] == -7).all(), (case, k, a)
    assert checked_short > 0


@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
def test_decide_vs_figure3(second_order):
    """decide(): (a*, plain best, d) and the continuations of gold and winner."""
    rng = np.random.default_rng(50_000 + second_order)
    n_update = 0
    for case in range(60):
        L = int(rng.integers(1, 5))
        n = int(rng.integers(1, 6))
        depth = int(rng.integers(0, 4))
        margin = MARGINS[case % 4]
        E = small_ints(rng, (n, L), 0.5)
        T = small_ints(rng, (L + 1, L + 1), 0.5)
        T2 = small_ints(rng, (L + 1, L + 1, L), 0.5) if second_order else NO_T2
        ctx = Ctx(E, T, T2, second_order, n)
        k = int(rng.integers(0, n))
        hist = [int(v) for v in rng.integers(0, L, size=k)]
        p1 = hist[-1] if k >= 1 else L
        p2 = hist[-2] if k >= 2 else L
        gold = int(rng.integers(-1, L))  # -1: no gold (decoding)
        res = ref_backed_up(ctx, hist, depth)
        a_star, S_star, S_c, plain = ref_choose(res, gold, margin)
        for use_dp in (True, False):
            labels, pre, _, _, B1, B2 = _buffers(depth, L)
            values = np.empty(L)
            paths = np.full((3, depth + 1), -7, dtype=np.int64)
            best, pl, d = decide(SecondOrder(NO_W, T, T2), Scratch(E, B1, B2, values, labels, pre, paths),
                                 k, min(depth, n - 1 - k), p1, p2, gold, margin, second_order, use_dp)
            assert (best, pl, d) == (a_star, plain, min(depth, n - 1 - k)), (case, use_dp)
            if gold >= 0 and best != gold:
                assert list(paths[1][:d]) == list(S_c[k + 1:])
                assert list(paths[2][:d]) == list(S_star[k + 1:])
                n_update += d > 0
    assert n_update > 0


def test_decision_rows_order():
    rng = np.random.default_rng(5)
    nF, L = 6, 3
    indptr, indices = random_csr(rng, 9, nF)
    W = small_ints(rng, (nF, L), 0.2)
    a, n = 2, 5
    for reverse in (False, True):
        E = np.full((n + 1, L), np.nan)
        decision_rows(indptr, indices, W, a, 4, reverse, 1, E, n)  # rows 1..3 only
        assert np.isnan(E[0]).all() and np.isnan(E[4:]).all()
        for k in range(1, 4):
            t = a + (n - 1 - k if reverse else k)
            feats = [[int(f) for f in indices[indptr[t]:indptr[t + 1]]]]
            assert list(E[k]) == ref_rows(W, feats, 0, 1)[0]


# ---- 4. depth 0, margin 0 = the plain greedy perceptron ------------------------------------
def ref_greedy_epoch(indptr, indices, offsets, y, order, W, U, T, TU, T2, T2U, second_order,
                     reverse, c):
    """Local perceptron: one example per token, gold history, update on the first argmax."""
    W, U, T, TU, T2, T2U = (A.copy() for A in (W, U, T, TU, T2, T2U))
    L = W.shape[1]
    wrong = 0
    for s in order:
        toks = sentence_tokens(offsets, int(s), reverse)
        gold = [int(y[t]) for t in toks]
        for k, t in enumerate(toks):
            p1 = gold[k - 1] if k >= 1 else L
            p2 = gold[k - 2] if k >= 2 else L
            feats = [int(f) for f in indices[indptr[t]:indptr[t + 1]]]
            scores = []
            for z in range(L):
                v = sum((W[f, z] for f in feats), 0.0) + T[p1, z]
                scores.append(v + (T2[p2, p1, z] if second_order else 0.0))
            p, g = first_argmax(scores), gold[k]
            if p != g:
                wrong += 1
                for f in feats:
                    W[f, g] += 1
                    U[f, g] += c
                    W[f, p] -= 1
                    U[f, p] -= c
                T[p1, g] += 1
                TU[p1, g] += c
                T[p1, p] -= 1
                TU[p1, p] -= c
                if second_order:
                    T2[p2, p1, g] += 1
                    T2U[p2, p1, g] += c
                    T2[p2, p1, p] -= 1
                    T2U[p2, p1, p] -= c
            c += 1.0
    return W, U, T, TU, T2, T2U, c, wrong


@pytest.mark.parametrize("use_dp", [True, False], ids=["dp", "brute"])
@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
@pytest.mark.parametrize("reverse", [False, True], ids=["ltr", "rtl"])
def test_depth0_margin0_is_greedy_perceptron(use_dp, second_order, reverse):
    rng = np.random.default_rng(60_000 + 4 * use_dp + 2 * second_order + reverse)
    nF = 8
    total = 0
    for case in range(5):
        L = int(rng.integers(2, 5))
        data = random_problem(rng, L, nF, n_sentences=5, max_len=6)
        state = start_weights(rng, nF, L, second_order, "zero" if case % 2 else "ints")
        order = rng.permutation(len(data[2]) - 1).astype(np.int64)
        ref = [A.copy() for A in state[:6]] + [state[6]]
        arrs, c = [A.copy() for A in state[:6]], state[6]
        for _ in range(3):
            c, m, u = flat_lookahead_epoch(*data, order, *arrs, second_order, reverse, 0, 0.0,
                                      use_dp, c)
            *ra, rc, rw = ref_greedy_epoch(*data, order, *ref[:6], second_order, reverse, ref[6])
            ref = ra + [rc]
            assert m == u == rw and c == rc
            assert_state_equal(arrs, ra)
            total += m
        # decoding at depth 0 is greedy decoding with the predicted history
        indptr, indices, offsets, _ = data
        W, T, T2 = arrs[0], arrs[2], arrs[4]
        out = np.empty(int(offsets[-1]), dtype=np.int32)
        lookahead_decode(indptr, indices, offsets, SecondOrder(W, T, T2), second_order, reverse, 0, use_dp, out)
        exp = np.empty_like(out)
        for s in range(len(offsets) - 1):
            toks = sentence_tokens(offsets, s, reverse)
            prev = []
            for k, t in enumerate(toks):
                p1 = prev[-1] if k >= 1 else L
                p2 = prev[-2] if k >= 2 else L
                feats = [int(f) for f in indices[indptr[t]:indptr[t + 1]]]
                sc = [sum((W[f, z] for f in feats), 0.0) + T[p1, z]
                      + (T2[p2, p1, z] if second_order else 0.0) for z in range(L)]
                prev.append(first_argmax(sc))
                exp[t] = prev[-1]
        np.testing.assert_array_equal(out, exp)
    assert total > 0


# ---- 5. the margin ------------------------------------------------------------------------
@pytest.mark.parametrize("use_dp", [True, False], ids=["dp", "brute"])
def test_margin_update_without_mistake_hand_checked(use_dp):
    """One token, one feature, L = 2, zero weights: both labels score 0 and the plain best is
    label 0 (the first), which is gold -- no mistake. With C = 1 gold's value becomes -1 and
    label 1 wins: an update towards gold on a correct decision."""
    indptr = np.array([0, 1], dtype=np.int64)
    indices = np.array([0], dtype=np.int32)
    offsets = np.array([0, 1], dtype=np.int64)
    y = np.array([0], dtype=np.int32)
    order = np.array([0], dtype=np.int64)
    for margin, expect_update in ((0.0, False), (1.0, True)):
        W, U = np.zeros((1, 2)), np.zeros((1, 2))
        T, TU = np.zeros((3, 3)), np.zeros((3, 3))
        c, m, u = flat_lookahead_epoch(indptr, indices, offsets, y, order, W, U, T, TU, NO_T2.copy(),
                                  NO_T2.copy(), False, False, 2, margin, use_dp, 3.0)
        assert c == 4.0 and m == 0 and u == int(expect_update)
        if expect_update:
            np.testing.assert_array_equal(W, [[1, -1]])
            np.testing.assert_array_equal(U, [[3, -3]])
            exp_T = np.zeros((3, 3))
            exp_T[2, 0], exp_T[2, 1] = 1, -1
            np.testing.assert_array_equal(T, exp_T)
            np.testing.assert_array_equal(TU, 3 * exp_T)
        else:
            assert not W.any() and not T.any() and not U.any() and not TU.any()


def _separable(rng, L=3, n_noise=4, n_sentences=12, max_len=5):
    """Token label = its indicator feature id (0..L-1), plus one noise feature."""
    offsets = random_offsets(rng, n_sentences, max_len)
    n_tokens = int(offsets[-1])
    y = rng.integers(0, L, size=n_tokens).astype(np.int32)
    rows = [[int(y[t]), L + int(rng.integers(0, n_noise))] for t in range(n_tokens)]
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.array([f for r in rows for f in r], dtype=np.int32)
    return (indptr, indices, offsets, y), L + n_noise, L


@pytest.mark.parametrize("config", [(1, 2.0, False, False, True), (2, 1.0, True, True, True),
                                    (2, 2.0, False, True, False), (1, 0.5, True, False, False)])
def test_margin_reaches_margin_on_separable_problem(config):
    depth, margin, second_order, reverse, use_dp = config
    data, nF, L = _separable(np.random.default_rng(70_000 + depth))
    state = start_weights(None, nF, L, second_order, "zero")
    arrs, c = state[:6], state[6]
    rng = np.random.default_rng(0)
    history = []
    for _ in range(60):
        order = rng.permutation(len(data[2]) - 1).astype(np.int64)
        c, m, u = flat_lookahead_epoch(*data, order, *arrs, second_order, reverse, depth, margin,
                                  use_dp, c)
        assert u >= m
        history.append((m, u))
        if u == 0:
            break
    assert history[-1] == (0, 0), history
    if margin >= 1:  # margin violations without mistakes happened on the way
        assert any(u > m for m, u in history), history
    # no update in the last epoch: at every decision along the gold path gold's backed-up
    # value beats every other action by at least C (recomputed with the reference)
    W, T, T2 = arrs[0], arrs[2], arrs[4]
    indptr, indices, offsets, y = data
    n_checked = 0
    for s in range(len(offsets) - 1):
        toks = sentence_tokens(offsets, s, reverse)
        feats = [[int(f) for f in indices[indptr[t]:indptr[t + 1]]] for t in toks]
        gold = [int(y[t]) for t in toks]
        ctx = Ctx(ref_rows(W, feats, 0, len(toks)), T, T2, second_order, len(toks))
        for k in range(len(toks)):
            vals = [v for _, v in ref_backed_up(ctx, gold[:k], depth)]
            g = gold[k]
            for a in range(L):
                if a != g:
                    assert vals[g] - vals[a] >= margin, (s, k, a, vals)
                    if a < g:  # an earlier action would win an exact tie
                        assert vals[g] - vals[a] > margin
            n_checked += 1
    assert n_checked == int(offsets[-1])


@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
def test_margin_updates_at_least_mistakes(second_order):
    rng = np.random.default_rng(80_000 + second_order)
    extra = 0
    for case in range(8):
        L = int(rng.integers(2, 5))
        data = random_problem(rng, L, 8, n_sentences=5, max_len=6)
        state = start_weights(rng, 8, L, second_order, "zero")
        order = np.arange(len(data[2]) - 1, dtype=np.int64)
        for margin in (1.0, 2.0):
            _, _, stats = run_kernel_epochs(data, state, order, second_order, case % 2 == 1,
                                            case % 4, margin, True, 3)
            for m, u in stats:
                assert u >= m
                extra += u - m
    assert extra > 0


# ---- 6. AveragedPerceptron: dp vs brute ---------------------------------------------------
@pytest.mark.parametrize("second_order", [False, True], ids=["o1", "o2"])
@pytest.mark.parametrize("reverse", [False, True], ids=["ltr", "rtl"])
def test_averaged_perceptron_lookahead_dp_equals_brute(second_order, reverse):
    rng = np.random.default_rng(90_000 + 2 * second_order + reverse)
    nF, L = 10, 3
    indptr, indices, offsets, y = random_problem(rng, L, nF, n_sentences=6, max_len=6)
    data = Encoded(indptr, indices, offsets, y)
    learners = [AveragedPerceptron(nF, L, "lookahead", second_order, reverse, depth=2, margin=1,
                                   use_dp=use_dp) for use_dp in (True, False)]
    stats = [[lr.epoch(data, np.random.default_rng(3 + e)) for e in range(3)] for lr in learners]
    assert stats[0] == stats[1]
    assert learners[0].c == learners[1].c == 3 * data.n_tokens + 1
    a, b = learners[0].averaged(), learners[1].averaged()
    for x, z in ((a.W, b.W), (a.T, b.T), (a.T2, b.T2)):
        np.testing.assert_array_equal(x, z)
    assert np.abs(a.W).sum() > 0
    assert a.second_order == second_order
    # and both equal the reference with the same sentence orders
    ref = start_weights(None, nF, L, second_order, "zero")
    for e in range(3):
        order = np.random.default_rng(3 + e).permutation(data.n_sentences)
        *arrs, c, m, u = ref_epoch(indptr, indices, offsets, y, order, *ref[:6], second_order,
                                   reverse, 2, 1.0, ref[6])
        ref = arrs + [c]
        assert (stats[0][e]["train_token_errors"], stats[0][e]["train_updates"]) == (m, u)
    np.testing.assert_array_equal(learners[0].w.W, ref[0])
    np.testing.assert_array_equal(learners[0].u.W, ref[1])
    np.testing.assert_array_equal(learners[0].w.T, ref[2])
    np.testing.assert_array_equal(learners[0].u.T2, ref[5])


def test_averaged_perceptron_rejects_negative_depth_and_margin():
    with pytest.raises(ValueError):
        AveragedPerceptron(3, 2, "lookahead", depth=-1)
    with pytest.raises(ValueError):
        AveragedPerceptron(3, 2, "lookahead", margin=-0.5)


# ---- 7. command line ----------------------------------------------------------------------
def run_cli(capsys, *args):
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    code = ei.value.code
    return (0 if code is None else code), out, err


def assert_one_line_error(code, out, err, *needles):
    assert code != 0, (code, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("structkit"), err
    for n in needles:
        assert n in lines[0], (n, err)
    assert out == ""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A lookahead model (depth 2, margin 1, rtl, label trigrams) and a Viterbi model."""
    d = tmp_path_factory.mktemp("models")
    paths = {"lookahead": d / "la.model", "perceptron": d / "vit.model"}
    common = ["train", "--task", "chunk", "--train", CHUNK_TRAIN, "--epochs", "3", "-q"]
    for args in (["--model", paths["lookahead"], "--algo", "lookahead", "--depth", "2",
                  "--margin", "1", "--direction", "rtl", "--label-order", "2"],
                 ["--model", paths["perceptron"], "--algo", "perceptron"]):
        with pytest.raises(SystemExit) as ei:
            main([str(a) for a in common + args])
        assert ei.value.code in (0, None)
    return paths


@pytest.mark.parametrize("bad,needle", [
    (["--algo", "lookahead", "--depth", "-1"], "--depth"),
    (["--algo", "lookahead", "--margin", "-1"], "--margin"),
    (["--algo", "lookahead", "--margin", "nan"], "--margin"),
    (["--algo", "lookahead", "--search", "bfs"], "--search"),
    (["--algo", "lookahead", "--direction", "up"], "--direction"),
    (["--algo", "greedy", "--depth", "2"], "--depth"),
    (["--algo", "perceptron", "--depth", "2"], "--depth"),
    (["--algo", "perceptron", "--margin", "1"], "--margin"),
])
def test_cli_train_bad_lookahead_options(capsys, tmp_path, bad, needle):
    model = tmp_path / "m.model"
    code, out, err = run_cli(capsys, "train", "--task", "chunk", "--train", CHUNK_TRAIN,
                             "--model", model, "--epochs", "1", *bad)
    assert_one_line_error(code, out, err, needle)
    assert not model.exists()
    assert os.listdir(tmp_path) == []


def test_cli_chunk_bad_depth(capsys, models):
    code, out, err = run_cli(capsys, "chunk", "--model", models["lookahead"], "--depth", "-1",
                             CHUNK_TEST)
    assert_one_line_error(code, out, err, "--depth")
    code, out, err = run_cli(capsys, "chunk", "--model", models["perceptron"], "--depth", "2",
                             CHUNK_TEST)
    assert_one_line_error(code, out, err, "--depth")


def _token_rows(text):
    return [line.split() for line in text.splitlines() if line.strip()]


def test_cli_lookahead_round_trip(capsys, models, tmp_path):
    from structkit.sequence.task import SequenceTagger

    tagger = SequenceTagger.load(str(models["lookahead"]))
    c = tagger.config
    assert (c.algo, c.depth, c.margin, c.direction, c.label_order, c.search) == \
        ("lookahead", 2, 1.0, "rtl", 2, "dp")
    assert tagger.weights.T2.shape == (len(tagger.labels) + 1, len(tagger.labels) + 1,
                                       len(tagger.labels))
    inp = _token_rows(Path(CHUNK_TEST).read_text())
    outputs = {}
    for extra in ([], ["--depth", "0"], ["--depth", "2"]):
        code, out, err = run_cli(capsys, "chunk", "--model", models["lookahead"], *extra,
                                 CHUNK_TEST)
        assert code == 0, err
        assert "Traceback" not in err
        rows = _token_rows(out)
        assert len(rows) == len(inp)
        for r, i in zip(rows, inp):
            assert r[:-1] == i and len(r) == len(i) + 1
            assert r[-1] in tagger.labels
        outputs[tuple(extra)] = [r[-1] for r in rows]
    assert outputs[()] == outputs[("--depth", "2")]  # the model's own depth by default
    # written to a file with -o as well
    dest = tmp_path / "out.txt"
    code, out, err = run_cli(capsys, "chunk", "--model", models["lookahead"], "-o", dest,
                             CHUNK_TEST)
    assert code == 0 and out == ""
    assert [r[-1] for r in _token_rows(dest.read_text())] == outputs[()]


def test_cli_search_brute_trains_the_same_model(capsys, models, tmp_path):
    """--search brute (Figure 2) and the default dp give the same averaged weights."""
    from structkit.sequence.task import SequenceTagger

    brute = tmp_path / "brute.model"
    code, _, err = run_cli(capsys, "train", "--task", "chunk", "--train", CHUNK_TRAIN,
                           "--epochs", "3", "-q", "--model", brute, "--algo", "lookahead",
                           "--depth", "2", "--margin", "1", "--direction", "rtl",
                           "--label-order", "2", "--search", "brute")
    assert code == 0, err
    a = SequenceTagger.load(str(models["lookahead"]))
    b = SequenceTagger.load(str(brute))
    assert (a.config.search, b.config.search) == ("dp", "brute")
    assert a.labels == b.labels
    for x, z in ((a.weights.W, b.weights.W), (a.weights.T, b.weights.T),
                 (a.weights.T2, b.weights.T2)):
        np.testing.assert_array_equal(x, z)
    outs = []
    for m in (models["lookahead"], brute):
        code, out, err = run_cli(capsys, "chunk", "--model", m, CHUNK_TEST)
        assert code == 0, err
        outs.append(out)
    assert outs[0] == outs[1]
