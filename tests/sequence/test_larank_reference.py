"""k-best LaRank (structkit.sequence.learn.larank.larank_core) matched step by step against a plain-Python
reference of Mancev & Todorovic's Algorithm 3.

test_larank.py checks invariants (feasibility, eq. 6, a dual that never decreases, n_R = 0 is
SDM), which a wrong schedule satisfies as well -- e.g. always reprocessing the newest example
instead of a random processed one. Here the reference replays the pass on its own: per example
kBV-PROCESSNEW (S_n <- {y : beta > 0} with the gold kept, union the k best loss-augmented
sequences B^k_w by brute force, SMO over S_n), c += 1, then n_R times kBV-PROCESSOLD (m <-
Random[1, n] among the examples processed so far, the same as PROCESSNEW without touching c)
and maxIter kBV-OPTIMIZE (m <- Random[1, n], SMO among the coefficients of S_m that are > 0).
SMO is eqs. 17-20: y' = argmin g over the set, y'' = argmax g over beta > 0, stop when
g(y'') <= g(y') + tau, the clipped analytic step, w (and the averaging U += c * change) and g
updated after every step (g_j += delta (K_j,y' - K_j,y''), K the Gram matrix of the dF).

Random[1, n]: ``np.random.RandomState(seed).randint(0, n)`` reproduces the kernel's in-numba
``np.random.seed(seed); np.random.randint(0, n)`` exactly (numba implements numpy's legacy
Mersenne Twister and masked rejection sampling; see test_olarank_reference.py, which pins it
down). The reference draws its own picks; it never reads the kernel's.

Floating point: g is evaluated as the kernel's eq. 10 sum over dF's non-zero coordinates in
increasing index order (the ``seqref`` layout), sequence scores left to right, so ties are
broken identically: first in the set (gold, then insertion order) for SMO; the brute-force
k-best list is sorted by ``tie_key`` (``structkit.sequence.search.kbest``'s merge rule: equal heads ->
lowest previous label, then rank; the "labels read from the end backwards" order when the
arithmetic is exact), which
``test_brute_force_kbest_is_the_kernels_list_viterbi_also_in_rounding_ties`` pins down.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from seqref import F, flat, make_data, sentence, tie_key
from structkit.sequence.learn.larank import larank_core
from structkit.sequence.learn.smo import SMOLimits, init_working_sets
from structkit.sequence.chain import FirstOrder, corpus


def picker(seed):
    rs = np.random.RandomState(seed)
    return lambda n: int(rs.randint(0, n))


class LaRankReference:
    def __init__(self, d, NF, L, C, k, cap, tau, max_steps, c=1.0):
        self.d, self.NF, self.L, self.k, self.cap, self.tau, self.max_steps = d, NF, L, k, cap, tau, max_steps
        size = NF * L + (L + 1) ** 2
        self.w = np.zeros(size)     # [W.ravel(), T.ravel()]
        self.u = np.zeros(size)     # averaging accumulators [U.ravel(), TU.ravel()]
        self.W = self.w[:NF * L].reshape(NF, L)
        self.T = self.w[NF * L:].reshape(L + 1, L + 1)
        self.S = [[[sentence(d, s), C]] for s in range(len(d.offsets) - 1)]
        self.c = c
        self.steps = self.top_loss = self.dropped = 0

    def loss(self, s, seq):
        return sum(a != b for a, b in zip(sentence(self.d, s), seq))

    def kbest(self, s):
        """B^k_w (eq. 12): the k best of <w, Phi(x, y)> + Delta(y_gold, y), by enumeration."""
        L, W, T, d = self.L, self.W, self.T, self.d
        gold = sentence(d, s)
        E = []
        for t, g in zip(range(int(d.offsets[s]), int(d.offsets[s + 1])), gold):
            row = []
            for c in range(L):
                e = 0.0
                for f in d.indices[d.indptr[t]:d.indptr[t + 1]]:
                    e += W[int(f), c]
                row.append(e + 1.0 if c != g else e)
            E.append(row)
        ranked = sorted(itertools.product(range(L), repeat=len(gold)), key=lambda seq: tie_key(seq, E, T))
        return ranked[:self.k]

    def dF(self, s, seq):
        return F(self.d, s, sentence(self.d, s), self.NF, self.L) - F(self.d, s, seq, self.NF, self.L)

    def smo(self, s, members):
        S = self.S[s]
        dFs = [self.dF(s, S[j][0]) for j in members]
        K = np.array([[a @ b for b in dFs] for a in dFs])
        g = []
        for j, v in zip(members, dFs):
            acc = 0.0
            for i in np.flatnonzero(v):
                acc += self.w[i] * v[i]
            g.append(acc - float(self.loss(s, S[j][0])))
        beta = [S[j][1] for j in members]
        m = len(members)
        steps = 0
        while steps < self.max_steps:
            lo = min(range(m), key=lambda j: g[j])
            pos = [j for j in range(m) if beta[j] > 0.0]
            if not pos:
                break
            hi = max(pos, key=lambda j: g[j])
            if not g[hi] > g[lo] + self.tau:
                break
            den = K[lo, lo] + K[hi, hi] - 2.0 * K[lo, hi]
            delta = min(beta[hi], (g[hi] - g[lo]) / den) if den > 0.0 else beta[hi]
            beta[lo] += delta
            beta[hi] = 0.0 if delta == beta[hi] else beta[hi] - delta
            self.w += delta * dFs[lo]
            self.u += (self.c * delta) * dFs[lo]
            self.w += -delta * dFs[hi]
            self.u += -(self.c * delta) * dFs[hi]
            for j in range(m):
                g[j] += delta * (K[j, lo] - K[j, hi])
            steps += 1
        for j, b in zip(members, beta):
            S[j][1] = b
        self.steps += steps

    def process(self, s):
        """kBV-PROCESSNEW / kBV-PROCESSOLD on example s. Returns the loss of the best sequence."""
        S = self.S[s]
        S[1:] = [e for e in S[1:] if e[1] > 0.0]
        best = self.kbest(s)
        for seq in best:
            if all(e[0] != seq for e in S):
                if len(S) == self.cap:
                    self.dropped += 1
                else:
                    S.append([seq, 0.0])
        self.smo(s, list(range(len(S))))
        return self.loss(s, best[0])

    def optimize(self, s):
        members = [j for j, e in enumerate(self.S[s]) if e[1] > 0.0]
        if len(members) >= 2:
            self.smo(s, members)

    def dual(self):
        lin = sum(b * self.loss(s, seq) for s, S in enumerate(self.S) for seq, b in S)
        return lin - 0.5 * self.w @ self.w

    def run(self, order, nr, seed, n_opt, snapshots=None):
        """Algorithm 3, one pass. Returns the dual after every operation."""
        pick = picker(seed)
        seen = []
        trace = [self.dual()]
        for s in order:
            s = int(s)
            self.top_loss += self.process(s)
            self.c += 1.0
            seen.append(s)
            trace.append(self.dual())
            for _ in range(nr):
                self.process(seen[pick(len(seen))])
                trace.append(self.dual())
                for _ in range(n_opt):
                    self.optimize(seen[pick(len(seen))])
                    trace.append(self.dual())
            if snapshots is not None:
                snapshots.append(self.snapshot())
        return trace

    def snapshot(self):
        return {"w": self.w.copy(), "u": self.u.copy(), "c": self.c,
                "S": [[(seq, b) for seq, b in S] for S in self.S],
                "counts": (self.steps, self.top_loss, self.dropped)}


def run_kernel(d, order, NF, L, k, C, nr, seed, n_opt, tau, cap, max_steps):
    W, T = np.zeros((NF, L)), np.zeros((L + 1, L + 1))
    U, TU = np.zeros_like(W), np.zeros_like(T)
    ws = init_working_sets(d.offsets, d.y, C, cap)
    tr = np.full(len(order) * (1 + nr * (1 + n_opt)) + 1, np.nan)
    c, steps, top, dropped = larank_core(corpus(d), np.asarray(order, dtype=np.int64),
                                         FirstOrder(W, T), FirstOrder(U, TU), 1.0, k,
                                         SMOLimits(tau, max_steps), ws, nr, seed, n_opt, tr)
    return {"w": flat(W, T), "u": flat(U, TU), "c": c, "ws": ws, "counts": (steps, top, dropped)}, tr


def assert_same_state(d, got, snap, where):
    assert got["c"] == snap["c"], where
    assert tuple(got["counts"]) == snap["counts"], (where, got["counts"], snap["counts"])
    assert np.allclose(got["w"], snap["w"], rtol=0, atol=1e-9), where
    assert np.allclose(got["u"], snap["u"], rtol=0, atol=1e-9), where
    ws_seq, ws_beta, ws_m = got["ws"]
    for s, S in enumerate(snap["S"]):
        n = int(d.offsets[s + 1] - d.offsets[s])
        seqs = [tuple(int(v) for v in ws_seq[s, j, :n]) for j in range(ws_m[s])]
        assert seqs == [q for q, _ in S], (where, s)
        assert np.allclose(ws_beta[s, :ws_m[s]], [b for _, b in S], rtol=0, atol=1e-9), (where, s)


CASES = [  # data seed, k, C, n_R, maxIter, tau, cap
    (0, 1, 1.0, 2, 10, 1e-12, 64),
    (1, 2, 0.5, 3, 10, 1e-3, 64),
    (2, 3, 1.0, 1, 10, 1e-9, 64),
    (3, 2, 0.1, 2, 4, 1e-6, 64),
    (4, 2, 3.0, 2, 10, 1e-9, 3),   # full working sets: k-best sequences dropped
    (5, 1, 0.5, 4, 2, 1e-3, 64),
]


@pytest.mark.parametrize("dseed, k, C, nr, n_opt, tau, cap", CASES)
def test_larank_pass_matches_reference_after_every_operation_and_example(dseed, k, C, nr, n_opt, tau, cap):
    rng = np.random.default_rng(300 + dseed)
    NF, L, N, max_steps = 5, 3, 7, 100000
    d = make_data(rng, N, L, NF, max_n=4)
    order = rng.permutation(N)
    seed = int(rng.integers(2 ** 31))
    ref = LaRankReference(d, NF, L, C, k, cap, tau, max_steps)
    snaps = []
    ref_trace = ref.run(order, nr, seed, n_opt, snaps)
    got, tr = run_kernel(d, order, NF, L, k, C, nr, seed, n_opt, tau, cap, max_steps)
    # every operation (the dual after it; kernel trace)
    bad = np.flatnonzero(~np.isclose(tr, ref_trace, rtol=0, atol=1e-9))
    assert bad.size == 0, f"first differing operation: {bad[0]}"
    assert_same_state(d, got, snaps[-1], "end of pass")
    # every example (the kernel on the prefixes of the order, the same seed)
    for i in range(1, N):
        got, _ = run_kernel(d, order[:i], NF, L, k, C, nr, seed, n_opt, tau, cap, max_steps)
        assert_same_state(d, got, snaps[i - 1], f"after example {i}")
    if cap == 3:
        assert snaps[-1]["counts"][2] > 0


def test_brute_force_kbest_is_the_kernels_list_viterbi_also_in_rounding_ties():
    """The reference's enumeration + tie_key gives the kernel's k-best list exactly, on weights
    from a coarse grid (many exact and rounding ties); some of the cases are ties that only the
    prefix terms of tie_key resolve (the plain "reversed labels" rule would get them wrong)."""
    from structkit.sequence.search.kbest import decode_kbest

    rng = np.random.default_rng(0)
    NF = 4
    rounding_ties = 0
    for trial in range(300):
        L, k = int(rng.integers(2, 4)), int(rng.integers(1, 6))
        d = make_data(rng, 2, L, NF, max_n=4)
        grid = float(rng.choice([0.1, 0.2, 1 / 3, 1 / 6, 0.3, 0.7]))
        ref = LaRankReference(d, NF, L, 1.0, k, 64, 1e-3, 10)
        ref.W[...] = rng.integers(-3, 4, size=(NF, L)) * grid
        ref.T[...] = rng.integers(-3, 4, size=(L + 1, L + 1)) * grid
        for s in range(2):
            a, n = int(d.offsets[s]), int(d.offsets[s + 1] - d.offsets[s])
            E, seqs, sc = np.empty((n, L)), np.empty((k, n), np.int32), np.empty(k)
            m, _ = decode_kbest(corpus(d), FirstOrder(ref.W.copy(), ref.T.copy()), a, n, k, E, seqs, sc)
            want = ref.kbest(s)
            assert [tuple(int(v) for v in seqs[j]) for j in range(m)] == want, (trial, s)
            gold = sentence(d, s)
            Ea = [[sum(ref.W[int(f), c] for f in d.indices[d.indptr[t]:d.indptr[t + 1]]) + (c != g)
                   for c in range(L)] for t, g in zip(range(a, a + n), gold)]
            plain = sorted(itertools.product(range(L), repeat=n),
                           key=lambda q: (tie_key(q, Ea, ref.T)[0], q[::-1]))[:k]
            rounding_ties += plain != want
    assert rounding_ties > 0
