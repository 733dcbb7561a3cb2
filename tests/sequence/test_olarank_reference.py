"""OLaRank (structkit.sequence.learn.olarank) matched step by step against a plain-Python reference.

The invariant tests of test_olarank.py (the dual never decreases, w = sum b dF, feasibility)
hold for wrong schedules too: a PROCESSOLD that never adds the new Viterbi sequence, or an
OPTIMIZE that is not restricted to the support vectors, still only takes ascent steps. Here an
independent reference, written from Bordes, Usunier & Bottou (2008), Sections 4.1-4.2, and the
module docstring -- dense Phi vectors (``seqref.F``), brute force over all label sequences
instead of Viterbi, Python lists for the per-pattern support vectors -- replays the same pass
and must agree with the numba kernels after every operation (the dual, from the kernels'
``trace``) and after every example (the whole state, by running the kernel on prefixes of the
order): weights, coefficients and their order, support patterns, counters.

Random choices. The kernels call ``np.random.seed(seed)`` and then
``np.random.randint(0, n_support_patterns)`` inside numba. Numba's generator is the Mersenne
Twister of numpy's legacy ``RandomState`` (same ``init_genrand`` seeding for an integer seed), and
its ``np.random.randint(low, high)`` is numpy's legacy masked rejection sampler: draw 32-bit
outputs, keep the lowest bit_length(high - low - 1) bits, retry while >= high - low, and draw
nothing when high - low == 1. So ``np.random.RandomState(seed).randint(0, n)`` reproduces the
kernel's stream exactly (``test_numba_randint_is_numpy_legacy_randint`` pins this down); the
reference draws its own picks and never reads the kernel's. The pick is an index into the list
of current support patterns kept as an O(1) set: a new support pattern is appended, one that
stops being a support pattern is overwritten by the last entry (module docstring, "a set with
O(1) add, remove and uniform pick").

Floating point. The reference computes every quantity the kernels branch on (scores, gradients)
with the same summation order as the natural formula evaluated token by token, so ties and
near-ties (after an unclipped step the two coefficients' gradients are equal up to rounding)
are resolved identically: among equal values the first candidate wins (labels ascending for
greedy; for exact, the gold sequence first, then the support vectors in the order they were
added). The brute-force Viterbi ranks all label sequences by ``tie_key``: loss-augmented score
descending, ties by Viterbi's documented rule (lowest best predecessor, traceback from the lowest
best final label) applied to the left-to-right prefix scores -- with exact arithmetic "the
labels read from the end backwards", but with two labels the weights are antisymmetric and
different prefixes often round to equal totals (test_larank_reference.py checks the rule
against the kernels' decoder on such ties).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from numba import njit

from seqref import F, flat, make_data, sentence, tie_key
from structkit.sequence.learn import olarank as ol
from structkit.sequence.learn.smo import init_working_sets
from structkit.sequence.chain import FirstOrder, GreedyHistory, corpus

N_OPT = 10  # OPTIMIZE steps per REPROCESS (paper, Section 4.2)
NEW, OLD, OPT = "processnew", "processold", "optimize"


# ---- the random stream ------------------------------------------------------------------------
@njit(cache=False)
def _numba_randint_stream(seed, highs):
    np.random.seed(seed)
    out = np.empty(highs.shape[0], dtype=np.int64)
    for i in range(highs.shape[0]):
        out[i] = np.random.randint(0, highs[i])
    return out


def picker(seed):
    """The kernels' ``np.random.seed(seed)`` + ``np.random.randint(0, n)``, outside numba."""
    rs = np.random.RandomState(seed)
    return lambda n: int(rs.randint(0, n))


def test_numba_randint_is_numpy_legacy_randint():
    rng = np.random.default_rng(0)
    for seed in (0, 1, 17, 2 ** 31 - 1):
        highs = rng.integers(1, 50, size=3000).astype(np.int64)
        highs[::5] = 1  # n == 1 consumes nothing
        highs[::13] = rng.integers(2 ** 32, 2 ** 40, size=highs[::13].shape[0])  # two 32-bit draws
        pick = picker(seed)
        assert _numba_randint_stream(seed, highs).tolist() == [pick(int(h)) for h in highs]


class SupportPatterns:
    """The current support patterns, in the list the uniform pick indexes into."""

    def __init__(self):
        self.items: list[int] = []

    def update(self, p, is_sv):
        if is_sv and p not in self.items:
            self.items.append(p)
        elif not is_sv and p in self.items:
            i = self.items.index(p)
            last = self.items.pop()
            if last != p:
                self.items[i] = last


# ---- exact: dual (5), patterns = sentences, classes = label sequences -------------------------
class ExactReference:
    """OLaRankExact: per pattern the gold sequence (its coefficient the slack) and the support
    vectors in insertion order, as [sequence, b] lists; w = [W.ravel(), T.ravel()] (``seqref``
    layout) with W, T views into it."""

    def __init__(self, d, NF, L, C, cap, tau, kappa):
        self.d, self.NF, self.L, self.C, self.cap, self.tau, self.kappa = d, NF, L, C, cap, tau, kappa
        self.w = np.zeros(NF * L + (L + 1) ** 2)
        self.W = self.w[:NF * L].reshape(NF, L)
        self.T = self.w[NF * L:].reshape(L + 1, L + 1)
        self.S = [[[sentence(d, s), C]] for s in range(len(d.offsets) - 1)]
        self.sp = SupportPatterns()

    def tokens(self, s):
        return range(int(self.d.offsets[s]), int(self.d.offsets[s + 1]))

    def feats(self, t):
        return [int(f) for f in self.d.indices[self.d.indptr[t]:self.d.indptr[t + 1]]]

    def loss(self, s, seq):
        return sum(a != b for a, b in zip(sentence(self.d, s), seq))

    def loss_augmented_argmax(self, s):
        """argmax_y <w, Phi(x, y)> + Delta(y_gold, y) by enumeration; the score accumulated left to
        right (start transition, then per token the transition and the emission, then the end)."""
        L, W, T = self.L, self.W, self.T
        gold = sentence(self.d, s)
        E = []
        for t, g in zip(self.tokens(s), gold):
            row = []
            for c in range(L):
                e = 0.0
                for f in self.feats(t):
                    e += W[f, c]
                row.append(e + 1.0 if c != g else e)
            E.append(row)
        return min(itertools.product(range(L), repeat=len(gold)), key=lambda seq: tie_key(seq, E, T))

    def gradient(self, s, seq):
        """g(y) = <w, Phi(gold) - Phi(y)> - Delta(gold, y), summed token by token."""
        L, W, T = self.L, self.W, self.T
        gold = sentence(self.d, s)
        v = 0.0
        for t, g, p in zip(self.tokens(s), gold, seq):
            for f in self.feats(t):
                v += W[f, g] - W[f, p]
        fg = (L,) + gold + (L,)
        fp = (L,) + tuple(seq) + (L,)
        for i in range(len(fg) - 1):
            v += T[fg[i], fg[i + 1]] - T[fp[i], fp[i + 1]]
        return v - float(self.loss(s, seq))

    def dF(self, s, seq):
        return F(self.d, s, sentence(self.d, s), self.NF, self.L) - F(self.d, s, seq, self.NF, self.L)

    def is_sv(self, s):
        return any(b > 0.0 for _, b in self.S[s][1:])

    def step(self, s, op):
        """One SMO step on sentence s. Returns (dual increase, dropped, Viterbi loss or -1)."""
        S = self.S[s]
        S[1:] = [e for e in S[1:] if e[1] > 0.0]  # the support vectors (and the gold)
        dropped, vloss = 0, -1
        if op in (NEW, OLD):  # c+ over all sequences: the loss-augmented Viterbi one joins S
            v = self.loss_augmented_argmax(s)
            vloss = self.loss(s, v)
            if vloss > 0 and all(e[0] != v for e in S[1:]):
                if len(S) < self.cap:
                    S.append([v, 0.0])
                else:
                    dropped = 1
        g = [self.gradient(s, seq) for seq, _ in S]
        plus = [j for j in range(len(S)) if op != OPT or j == 0 or S[j][1] > 0.0]
        minus = [j for j in range(len(S)) if S[j][1] > self.kappa]
        lo = min(plus, key=lambda j: g[j])
        if not minus:
            return 0.0, dropped, vloss
        hi = max(minus, key=lambda j: g[j])
        gap = g[hi] - g[lo]
        if lo == hi or not gap > self.tau:
            return 0.0, dropped, vloss
        dlo, dhi = self.dF(s, S[lo][0]), self.dF(s, S[hi][0])
        den = float(np.sum((dlo - dhi) ** 2))
        d = min(S[hi][1], gap / den) if den > 0.0 else S[hi][1]
        S[lo][1] += d
        S[hi][1] = 0.0 if d == S[hi][1] else S[hi][1] - d
        self.w += d * dlo
        self.w += -d * dhi
        return d * gap - 0.5 * d * d * den, dropped, vloss

    def dual(self):
        lin = sum(b * self.loss(s, seq) for s, S in enumerate(self.S) for seq, b in S[1:])
        return lin - 0.5 * self.w @ self.w

    def run_pass(self, order, nr, seed, snapshots=None):
        pick = picker(seed)
        steps = errors = dropped = 0
        gain = 0.0
        trace = [self.dual()]

        def op(s, kind):
            nonlocal steps, errors, dropped, gain
            dg, dr, vl = self.step(s, kind)
            dropped += dr
            if kind == NEW:
                errors += vl
            if dg != 0.0:
                steps += 1
                gain += dg
            self.sp.update(s, self.is_sv(s))
            trace.append(self.dual())

        for s in order:
            op(int(s), NEW)
            for _ in range(nr):
                for it in range(1 + N_OPT):
                    if not self.sp.items:
                        break
                    op(self.sp.items[pick(len(self.sp.items))], OLD if it == 0 else OPT)
            if snapshots is not None:
                snapshots.append(self.snapshot())
        return (len(self.sp.items), steps, gain, errors, dropped), trace

    def snapshot(self):
        return {"w": self.w.copy(), "S": [[(seq, b) for seq, b in S] for S in self.S],
                "sp": list(self.sp.items)}


class ExactKernel:
    """The numba pass with its state (the learner's layout)."""

    def __init__(self, d, NF, L, C, cap):
        self.d = d
        self.W = np.zeros((NF, L))
        self.T = np.zeros((L + 1, L + 1))
        self.ws = init_working_sets(d.offsets, d.y, C, cap)
        n = len(d.offsets) - 1
        self.sp_list = np.zeros(n, dtype=np.int64)
        self.sp_pos = np.full(n, -1, dtype=np.int64)
        self.n_sp = 0

    def run_pass(self, order, nr, seed, tau, kappa):
        d = self.d
        n_ops = len(order) * (1 + nr * (1 + N_OPT)) + 1
        tr = np.full(n_ops, np.nan)
        out = ol.olarank_exact_pass(corpus(d), np.asarray(order, dtype=np.int64),
                                    FirstOrder(self.W, self.T), self.ws,
                                    ol.SupportSet(self.sp_list, self.sp_pos), self.n_sp,
                                    tau, kappa, nr, seed, tr)
        self.n_sp = out[0]
        return out, tr


def assert_same_exact_state(ker, snap, where):
    ws_seq, ws_beta, ws_m = ker.ws
    d = ker.d
    assert np.allclose(flat(ker.W, ker.T), snap["w"], rtol=0, atol=1e-9), where
    for s, S in enumerate(snap["S"]):
        n = int(d.offsets[s + 1] - d.offsets[s])
        got = [(tuple(int(v) for v in ws_seq[s, j, :n]), float(ws_beta[s, j])) for j in range(ws_m[s])]
        assert [q for q, _ in got] == [q for q, _ in S], (where, s)
        assert np.allclose([b for _, b in got], [b for _, b in S], rtol=0, atol=1e-9), (where, s)
    assert list(ker.sp_list[:ker.n_sp]) == snap["sp"], where
    assert all(ker.sp_pos[p] == i for i, p in enumerate(snap["sp"])), where


def assert_same_trace(tr, ref_trace, where):
    k = len(ref_trace)
    assert np.all(np.isnan(tr[k:])) and not np.any(np.isnan(tr[:k])), where
    assert np.allclose(tr[:k], ref_trace, rtol=0, atol=1e-9), (where, np.flatnonzero(
        ~np.isclose(tr[:k], ref_trace, rtol=0, atol=1e-9))[:1])


def assert_same_counters(out, ref_out, where):
    assert tuple(out[i] for i in (0, 1, 3, 4)) == tuple(ref_out[i] for i in (0, 1, 3, 4)), (where, out, ref_out)
    assert out[2] == pytest.approx(ref_out[2], abs=1e-9), where


EXACT_CASES = [  # data seed, labels, C, nr, cap, tau, kappa
    (0, 3, 0.4, 1, 32, 1e-3, 1e-8),
    (1, 3, 1.0, 2, 32, 1e-9, 0.0),
    (2, 2, 0.3, 3, 32, 1e-3, 1e-8),
    (3, 3, 0.1, 2, 3, 1e-6, 1e-8),   # small sets: Viterbi sequences get dropped
    (4, 3, 2.0, 0, 32, 1e-3, 1e-8),  # PAExact
]


@pytest.mark.parametrize("dseed, L, C, nr, cap, tau, kappa", EXACT_CASES)
def test_exact_pass_matches_reference_after_every_operation_and_example(dseed, L, C, nr, cap, tau, kappa):
    rng = np.random.default_rng(100 + dseed)
    NF, N = 5, 7
    d = make_data(rng, N, L, NF, max_n=4)
    order = rng.permutation(N)
    seeds = [int(v) for v in rng.integers(2 ** 31, size=2)]
    ref = ExactReference(d, NF, L, C, cap, tau, kappa)
    snaps = []
    ref_out, ref_trace = ref.run_pass(order, nr, seeds[0], snaps)
    # every operation: the dual after it (kernel trace)
    ker = ExactKernel(d, NF, L, C, cap)
    out, tr = ker.run_pass(order, nr, seeds[0], tau, kappa)
    assert_same_trace(tr, ref_trace, "pass 1")
    assert_same_counters(out, ref_out, "pass 1")
    assert_same_exact_state(ker, snaps[-1], "pass 1")
    # every example: the kernel on the prefixes of the order (same seed, same stream prefix)
    for i in range(1, N):
        pre = ExactKernel(d, NF, L, C, cap)
        pre.run_pass(order[:i], nr, seeds[0], tau, kappa)
        assert_same_exact_state(pre, snaps[i - 1], f"after example {i}")
    # a second pass from the state of the first (other order, other seed)
    order2 = rng.permutation(N)
    ref_out, ref_trace = ref.run_pass(order2, nr, seeds[1])
    out, tr = ker.run_pass(order2, nr, seeds[1], tau, kappa)
    assert_same_trace(tr, ref_trace, "pass 2")
    assert_same_counters(out, ref_out, "pass 2")
    assert_same_exact_state(ker, ref.snapshot(), "pass 2")
    if cap == 3:
        assert out[4] > 0


def test_exact_learner_epochs_match_reference():
    """OLaRankLearner wires the pass as the reference expects: order, then seed, from the rng."""
    rng = np.random.default_rng(21)
    NF, L, N, C, nr = 6, 3, 6, 0.5, 2
    d = make_data(rng, N, L, NF, max_n=3)
    learner = ol.OLaRankLearner(NF, L, "olarank-exact", C=C, nr=nr)
    ref = ExactReference(d, NF, L, C, learner.cap, learner.tau, learner.kappa)
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(2):
        stats = learner.epoch(d, r1)
        order = r2.permutation(N)
        (_, steps, _, errors, dropped), _ = ref.run_pass(order, nr, int(r2.integers(2 ** 31)))
        assert (stats["train_updates"], stats["train_token_errors"], stats["dropped"]) == (steps, errors, dropped)
        assert np.allclose(flat(learner.W, learner.T), ref.w, rtol=0, atol=1e-9)
        assert stats["dual"] == pytest.approx(ref.dual(), abs=1e-9)


# ---- greedy: dual (6), patterns = tokens, classes = labels -------------------------------------
class GreedyReference:
    """OLaRankGreedy: b[j, c] per token (gold column = slack); w = [W.ravel(), H.ravel()] with
    Phi_g(x^j, h, c) = x^j (x) e_c plus, for s = 1..K, the indicator of (s, h_s, c), h the gold
    history (label L before the sentence start)."""

    def __init__(self, d, NF, L, K, C, tau, kappa):
        self.d, self.NF, self.L, self.K, self.C, self.tau, self.kappa = d, NF, L, K, C, tau, kappa
        self.w = np.zeros(NF * L + K * (L + 1) * L)
        self.W = self.w[:NF * L].reshape(NF, L)
        self.H = self.w[NF * L:].reshape(K, L + 1, L)
        nt = len(d.y)
        self.B = np.zeros((nt, L))
        self.B[np.arange(nt), d.y] = C
        self.hist = []
        for s in range(len(d.offsets) - 1):
            a, b = int(d.offsets[s]), int(d.offsets[s + 1])
            for j in range(a, b):
                self.hist.append([int(d.y[j - r]) if j - r >= a else L for r in range(1, K + 1)])
        self.sp = SupportPatterns()

    def feats(self, j):
        return [int(f) for f in self.d.indices[self.d.indptr[j]:self.d.indptr[j + 1]]]

    def phi(self, j, c):
        v = np.zeros_like(self.w)
        for f in self.feats(j):
            v[f * self.L + c] += 1
        for r, h in enumerate(self.hist[j]):
            v[self.NF * self.L + (r * (self.L + 1) + h) * self.L + c] += 1
        return v

    def score(self, j, c):
        v = 0.0
        for f in self.feats(j):
            v += self.W[f, c]
        for r, h in enumerate(self.hist[j]):
            v += self.H[r, h, c]
        return v

    def is_sv(self, j):
        return any(self.B[j, c] > 0.0 for c in range(self.L) if c != self.d.y[j])

    def step(self, j, op):
        L, B = self.L, self.B
        gold = int(self.d.y[j])
        sc = [self.score(j, c) for c in range(L)]
        g = [0.0 if c == gold else sc[gold] - sc[c] - 1.0 for c in range(L)]
        plus = [c for c in range(L) if op != OPT or c == gold or B[j, c] > 0.0]
        minus = [c for c in range(L) if B[j, c] > self.kappa]
        lo = min(plus, key=lambda c: g[c])
        if not minus:
            return 0.0
        hi = max(minus, key=lambda c: g[c])
        gap = g[hi] - g[lo]
        if lo == hi or not gap > self.tau:
            return 0.0
        diff = self.phi(j, hi) - self.phi(j, lo)  # dF(lo) - dF(hi)
        den = float(diff @ diff)
        d = min(B[j, hi], gap / den)
        B[j, lo] += d
        B[j, hi] = 0.0 if d == B[j, hi] else B[j, hi] - d
        self.w += d * diff
        return d * gap - 0.5 * d * d * den

    def dual(self):
        mask = np.ones_like(self.B, dtype=bool)
        mask[np.arange(len(self.d.y)), self.d.y] = False
        return self.B[mask].sum() - 0.5 * self.w @ self.w

    def run_pass(self, order, nr, seed, snapshots=None):
        pick = picker(seed)
        steps = new_steps = 0
        gain = 0.0
        trace = [self.dual()]

        def op(j, kind):
            nonlocal steps, new_steps, gain
            dg = self.step(j, kind)
            if dg != 0.0:
                steps += 1
                gain += dg
                new_steps += kind == NEW
            self.sp.update(j, self.is_sv(j))
            trace.append(self.dual())

        for s in order:
            for j in range(int(self.d.offsets[s]), int(self.d.offsets[s + 1])):
                op(j, NEW)
                for _ in range(nr):
                    for it in range(1 + N_OPT):
                        if not self.sp.items:
                            break
                        op(self.sp.items[pick(len(self.sp.items))], OLD if it == 0 else OPT)
            if snapshots is not None:
                snapshots.append({"w": self.w.copy(), "B": self.B.copy(), "sp": list(self.sp.items)})
        return (len(self.sp.items), steps, gain, new_steps), trace


class GreedyKernel:
    def __init__(self, d, NF, L, K, C):
        self.d, self.C = d, C
        self.W = np.zeros((NF, L))
        self.H = np.zeros((K, L + 1, L))
        nt = len(d.y)
        self.B = np.zeros((nt, L))
        self.B[np.arange(nt), d.y] = C
        self.hist = ol.gold_history(d.offsets, d.y, K, L)
        self.sp_list = np.zeros(nt, dtype=np.int64)
        self.sp_pos = np.full(nt, -1, dtype=np.int64)
        self.n_sp = 0

    def run_pass(self, order, nr, seed, tau, kappa):
        d = self.d
        tr = np.full(len(d.y) * (1 + nr * (1 + N_OPT)) + 1, np.nan)
        out = ol.olarank_greedy_pass(corpus(d), np.asarray(order, dtype=np.int64),
                                     GreedyHistory(self.W, self.H), ol.TokenPatterns(self.hist, self.B),
                                     ol.SupportSet(self.sp_list, self.sp_pos), self.n_sp, tau, kappa,
                                     nr, seed, tr)
        self.n_sp = out[0]
        return out, tr


def assert_same_greedy_state(ker, snap, where):
    assert np.allclose(flat(ker.W, ker.H), snap["w"], rtol=0, atol=1e-9), where
    assert np.allclose(ker.B, snap["B"], rtol=0, atol=1e-9), where
    assert np.array_equal(ker.B > 0, snap["B"] > 0), where
    assert list(ker.sp_list[:ker.n_sp]) == snap["sp"], where


GREEDY_CASES = [  # data seed, labels, Markov order K, C, nr, tau, kappa
    (0, 3, 1, 0.5, 1, 1e-3, 1e-8),
    (1, 4, 2, 1.0, 2, 1e-9, 0.0),
    (2, 3, 3, 0.2, 3, 1e-3, 1e-8),
    (3, 2, 1, 2.0, 2, 1e-6, 1e-8),
    (4, 3, 2, 0.5, 0, 1e-3, 1e-8),  # PAGreedy
]


@pytest.mark.parametrize("dseed, L, K, C, nr, tau, kappa", GREEDY_CASES)
def test_greedy_pass_matches_reference_after_every_operation_and_example(dseed, L, K, C, nr, tau, kappa):
    rng = np.random.default_rng(200 + dseed)
    NF, N = 8, 5
    d = make_data(rng, N, L, NF, max_n=4, nnz=3)  # distinct ids: ||x||^2 = nnz
    order = rng.permutation(N)
    seeds = [int(v) for v in rng.integers(2 ** 31, size=2)]
    ref = GreedyReference(d, NF, L, K, C, tau, kappa)
    snaps = []
    ref_out, ref_trace = ref.run_pass(order, nr, seeds[0], snaps)
    ker = GreedyKernel(d, NF, L, K, C)
    out, tr = ker.run_pass(order, nr, seeds[0], tau, kappa)
    assert_same_trace(tr, ref_trace, "pass 1")
    assert (out[0], out[1], out[3]) == (ref_out[0], ref_out[1], ref_out[3])
    assert out[2] == pytest.approx(ref_out[2], abs=1e-9)
    assert_same_greedy_state(ker, snaps[-1], "pass 1")
    for i in range(1, N):
        pre = GreedyKernel(d, NF, L, K, C)
        pre.run_pass(order[:i], nr, seeds[0], tau, kappa)
        assert_same_greedy_state(pre, snaps[i - 1], f"after sentence {i}")
    order2 = rng.permutation(N)
    ref_out, ref_trace = ref.run_pass(order2, nr, seeds[1])
    out, tr = ker.run_pass(order2, nr, seeds[1], tau, kappa)
    assert_same_trace(tr, ref_trace, "pass 2")
    assert (out[0], out[1], out[3]) == (ref_out[0], ref_out[1], ref_out[3])
    assert_same_greedy_state(ker, {"w": ref.w, "B": ref.B, "sp": ref.sp.items}, "pass 2")


def test_greedy_learner_epochs_match_reference():
    rng = np.random.default_rng(22)
    NF, L, N, K, C, nr = 7, 3, 5, 2, 0.5, 2
    d = make_data(rng, N, L, NF, max_n=4, nnz=2)
    learner = ol.OLaRankLearner(NF, L, "olarank-greedy", C=C, nr=nr, order=K)
    ref = GreedyReference(d, NF, L, K, C, learner.tau, learner.kappa)
    r1, r2 = np.random.default_rng(6), np.random.default_rng(6)
    for _ in range(2):
        stats = learner.epoch(d, r1)
        order = r2.permutation(N)
        (_, steps, _, _), _ = ref.run_pass(order, nr, int(r2.integers(2 ** 31)))
        assert stats["train_updates"] == steps
        assert np.allclose(flat(learner.W, learner.H), ref.w, rtol=0, atol=1e-9)
        assert np.allclose(learner.state["B"], ref.B, rtol=0, atol=1e-9)
