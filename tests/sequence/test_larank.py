"""k-best LaRank (structkit.sequence.learn.larank, Algorithm 3): feasibility, eq. 6, monotone dual,
n_R = 0 equals k-best SDM's first epoch, seeding."""
import numpy as np
import pytest

from seqref import F, flat, make_data
from structkit.sequence.learn.larank import kbest_larank_epoch, larank_core
from structkit.sequence.learn.smo import SMOLimits, init_working_sets, kbest_sdm_epoch
from structkit.sequence.chain import FirstOrder, corpus


def zero_state(NF, L):
    W = np.zeros((NF, L))
    T = np.zeros((L + 1, L + 1))
    return W, np.zeros_like(W), T, np.zeros_like(T)


def run(data, order, NF, L, k, C, n_r, seed, n_opt=10, tau=1e-12, cap=64, trace=False):
    W, U, T, TU = zero_state(NF, L)
    ws = init_working_sets(data.offsets, data.y, C, cap)
    N = len(order)
    tr = np.full(N * (1 + n_r * (1 + n_opt)) + 1, np.nan) if trace else np.empty(0)
    out = larank_core(corpus(data), order, FirstOrder(W, T), FirstOrder(U, TU), 1.0, k,
                      SMOLimits(tau, 100000), ws, n_r, seed, n_opt, tr)
    return out, W, U, T, TU, ws, tr


def reconstruct(data, ws, NF, L, C):
    """Check feasibility and return (sum_n sum_y beta dF_n(y), sum beta L) (eq. 6, dual)."""
    ws_seq, ws_beta, ws_m = ws
    w = np.zeros(NF * L + (L + 1) ** 2)
    lin = 0.0
    for s in range(len(data.offsets) - 1):
        m = ws_m[s]
        a, b = data.offsets[s], data.offsets[s + 1]
        gold = tuple(int(v) for v in data.y[a:b])
        beta = ws_beta[s, :m]
        assert np.all(beta >= 0)
        assert abs(beta.sum() - C) < 1e-12
        seqs = [tuple(int(v) for v in ws_seq[s, j, :b - a]) for j in range(m)]
        assert seqs[0] == gold and len(set(seqs)) == m
        Fg = F(data, s, gold, NF, L)
        for j in range(m):
            w += beta[j] * (Fg - F(data, s, seqs[j], NF, L))
            lin += beta[j] * sum(g != p for g, p in zip(gold, seqs[j]))
    return w, lin


CASES = [(0, 1, 1.0, 2), (1, 2, 0.5, 3), (2, 3, 1.0, 1), (3, 4, 0.1, 2), (4, 2, 10.0, 4)]


@pytest.mark.parametrize("seed,k,C,n_r", CASES)
def test_feasible_eq6_and_monotone_dual(seed, k, C, n_r):
    rng = np.random.default_rng(seed)
    NF, L, N = 5, 3, 7
    data = make_data(rng, N, L, NF)
    order = rng.permutation(N)
    (c, steps, top, dropped), W, U, T, TU, ws, tr = run(data, order, NF, L, k, C, n_r, seed,
                                                        trace=True)
    assert c == 1.0 + N and dropped == 0 and steps > 0
    w_rec, lin = reconstruct(data, ws, NF, L, C)
    # Proposition 1: at most N((n_R + 1) k + 1) support vectors after the first pass
    n_sv = sum(int(np.sum(ws[1][s, :ws[2][s]] > 0)) for s in range(N))
    assert n_sv <= N * ((n_r + 1) * k + 1)
    w = flat(W, T)
    assert np.allclose(w, w_rec, atol=1e-9, rtol=0)
    # trace: dual after every operation, never decreasing; last value = dual from beta
    assert not np.any(np.isnan(tr))
    assert tr[0] == 0.0
    assert np.all(np.diff(tr) >= -1e-10)
    assert abs(tr[-1] - (lin - 0.5 * w_rec @ w_rec)) < 1e-9
    # the per-example checkpoints (after PROCESSNEW + its n_R reprocess steps) as well
    per = 1 + n_r * 11
    ex = tr[per::per]
    assert len(ex) == N and np.all(np.diff(np.concatenate([[0.0], ex])) >= -1e-10)


@pytest.mark.parametrize("seed,k,C", [(0, 1, 1.0), (1, 2, 0.5), (2, 3, 1.0), (5, 2, 3.0)])
def test_nr_zero_is_sdm_first_epoch(seed, k, C):
    """Paper Sec. 4.3 / Fig. 1 4): n_R = 0 reduces k-best LaRank to k-best SDM's first epoch."""
    rng = np.random.default_rng(seed)
    NF, L, N = 6, 3, 8
    data = make_data(rng, N, L, NF, max_n=4)
    order = rng.permutation(N)
    W1, U1, T1, TU1 = zero_state(NF, L)
    ws1 = init_working_sets(data.offsets, data.y, C, 32)
    r1 = kbest_sdm_epoch(corpus(data), order, FirstOrder(W1, T1), FirstOrder(U1, TU1), 1.0, k,
                         SMOLimits(1e-12, 100000), ws1)
    W2, U2, T2, TU2 = zero_state(NF, L)
    ws2 = init_working_sets(data.offsets, data.y, C, 32)
    r2 = kbest_larank_epoch(corpus(data), order, FirstOrder(W2, T2), FirstOrder(U2, TU2), 1.0,
                            k, SMOLimits(1e-12, 100000), ws2, 0, 123)
    assert tuple(r1) == tuple(r2)
    for a, b in zip((W1, U1, T1, TU1) + ws1, (W2, U2, T2, TU2) + ws2):
        assert np.array_equal(a, b)


def test_same_seed_identical_different_seed_differs():
    rng = np.random.default_rng(7)
    NF, L, N, C, k = 6, 3, 10, 1.0, 2
    data = make_data(rng, N, L, NF, max_n=4)
    order = rng.permutation(N)

    def go(seed):
        W, U, T, TU = zero_state(NF, L)
        ws = init_working_sets(data.offsets, data.y, C, 64)
        r = kbest_larank_epoch(corpus(data), order, FirstOrder(W, T), FirstOrder(U, TU), 1.0, k,
                               SMOLimits(1e-3, 3), ws, 2, seed)
        return r, (W, U, T, TU) + ws

    ra, sa = go(5)
    rb, sb = go(5)
    assert tuple(ra) == tuple(rb)
    assert all(np.array_equal(a, b) for a, b in zip(sa, sb))
    differs = False
    for other in range(6, 16):
        rc, sc = go(other)
        if not all(np.array_equal(a, b) for a, b in zip(sa, sc)):
            differs = True
            break
    assert differs


def test_optimize_on_tau_optimal_set_is_a_no_op():
    """While only the first example has been seen, every kBV-OPTIMIZE follows an SMO that left
    that example's working set tau-optimal; its non-zero subset is then tau-optimal too, so
    OPTIMIZE changes nothing, while PROCESSOLD (which re-decodes with the updated w) may add
    violating sequences and raise the dual."""
    rng = np.random.default_rng(3)
    NF, L, N, C, k, n_r = 5, 3, 6, 1.0, 2, 2
    data = make_data(rng, N, L, NF)
    order = rng.permutation(N)
    _, _, _, _, _, _, tr0 = run(data, order, NF, L, k, C, 0, 0, trace=True)
    _, _, _, _, _, _, tr2 = run(data, order, NF, L, k, C, n_r, 0, trace=True)
    assert tr0[1] == tr2[1]                      # same PROCESSNEW on the first example
    for r in range(n_r):
        old = 2 + r * 11                         # trace index after PROCESSOLD number r
        assert np.all(tr2[old + 1:old + 11] == tr2[old])
    assert tr2[2 + 11 * n_r - 1] >= tr2[1]


def test_full_working_sets_drop_and_stay_feasible():
    rng = np.random.default_rng(9)
    NF, L, N, C, k, n_r = 5, 3, 6, 1.0, 4, 2
    data = make_data(rng, N, L, NF, max_n=4)
    order = rng.permutation(N)
    (c, steps, top, dropped), W, U, T, TU, ws, tr = run(data, order, NF, L, k, C, n_r, 1,
                                                        cap=2, trace=True)
    assert dropped > 0 and c == 1.0 + N
    assert np.all(ws[2] <= 2)
    w_rec, lin = reconstruct(data, ws, NF, L, C)
    assert np.allclose(flat(W, T), w_rec, atol=1e-9, rtol=0)
    assert np.all(np.diff(tr) >= -1e-10)
