"""SMO per-example dual solver, k-best MIRA and k-best SDM (structkit.sequence.learn.smo) against dense
references: scipy SLSQP on the same dual, exact active-set enumeration, enumerated k-best."""
import itertools

import numpy as np
import pytest
from conftest import require_extra

minimize = require_extra("scipy.optimize", "test", module_level=True).minimize

from seqref import F, flat, make_data, sentence
from structkit.sequence.learn.kbest import kbest_pa_epoch
from structkit.sequence.learn.smo import (SMOLimits, init_working_sets, kbest_mira_epoch, kbest_sdm_epoch,
                                 smo_solve)
from structkit.sequence.chain import FirstOrder, SparseStack, corpus


# ---- random per-example duals ----------------------------------------------------------------
def random_problem(rng, m, NF=4, L=3, density=0.4):
    """m sparse vectors (vector 0 is the zero 'gold' vector, loss 0) in the sparse_dF key space."""
    D = NF * L + (L + 1) ** 2
    dense = np.zeros((m, D))
    for j in range(1, m):
        mask = rng.random(D) < density
        dense[j, mask] = rng.integers(-2, 3, size=mask.sum())
    keys, vals, ptr = [], [], [0]
    for j in range(m):
        nz = np.nonzero(dense[j])[0]
        keys.append(nz)
        vals.append(dense[j, nz])
        ptr.append(ptr[-1] + len(nz))
    losses = np.concatenate([[0.0], rng.integers(1, 5, size=m - 1).astype(float)])
    W = rng.normal(size=(NF, L)) * 0.3
    T = rng.normal(size=(L + 1, L + 1)) * 0.3
    return (np.concatenate(keys).astype(np.int64), np.concatenate(vals), np.array(ptr, np.int64),
            losses, dense, W, T)


def dual_obj(beta, beta0, dense, losses, w0):
    """Eq. 15: 1/2 a^T K a - a^T l with a = beta - beta0, l_j = L_j - w0 . dF_j."""
    a = beta - beta0
    v = a @ dense
    return 0.5 * v @ v - a @ (losses - dense @ w0)


def run_smo(prob, beta0, C, tau, max_steps=100000, c=3.0):
    keys, vals, ptr, losses, dense, W, T = prob
    W, T = W.copy(), T.copy()
    U, TU = np.zeros_like(W), np.zeros_like(T)
    beta = beta0.copy()
    steps = smo_solve(SparseStack(keys, vals, ptr, losses), beta, FirstOrder(W, T),
                      FirstOrder(U, TU), c, SMOLimits(tau, max_steps))
    return beta, W, T, U, TU, steps


def slsqp(dense, losses, w0, beta0, C):
    m = len(losses)
    res = minimize(lambda b: dual_obj(b, beta0, dense, losses, w0), beta0, method="SLSQP",
                   bounds=[(0, None)] * m,
                   constraints=[{"type": "eq", "fun": lambda b: b.sum() - C}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    return res.fun


CASES = [(seed, m, C, start) for seed in range(6) for m, C in [(2, 1.0), (4, 0.5), (6, 2.0)]
         for start in ("gold", "random")]


@pytest.mark.parametrize("seed,m,C,start", CASES)
def test_smo_kkt_objective_and_primal(seed, m, C, start):
    rng = np.random.default_rng(seed)
    prob = random_problem(rng, m)
    keys, vals, ptr, losses, dense, W0, T0 = prob
    if start == "gold":
        beta0 = np.zeros(m)
        beta0[0] = C
    else:   # SDM-style: previous lambdas, any feasible point
        beta0 = rng.random(m) * (rng.random(m) < 0.6)
        beta0[0] += 0.1
        beta0 *= C / beta0.sum()
    tau = 1e-9
    beta, W, T, U, TU, steps = run_smo(prob, beta0, C, tau)
    w0 = flat(W0, T0)
    w = flat(W, T)
    # feasibility
    assert np.all(beta >= 0)
    assert abs(beta.sum() - C) < 1e-12
    # eq. 9: w = w0 + sum_j alpha_j dF_j ; U accumulates c * change
    assert np.allclose(w, w0 + (beta - beta0) @ dense, atol=1e-10)
    assert np.allclose(flat(U, TU), 3.0 * (w - w0), atol=1e-10)
    # KKT (eqs. 17-18) to tau, with gradients recomputed densely (eq. 19)
    g = dense @ w - losses
    assert np.all(g[beta > 0] <= g.min() + tau + 1e-10)
    # dual objective matches a generic QP solver
    f = dual_obj(beta, beta0, dense, losses, w0)
    f_ref = slsqp(dense, losses, w0, beta0, C)
    assert f <= f_ref + 1e-6
    assert abs(f - f_ref) < 1e-6


@pytest.mark.parametrize("seed", range(5))
def test_dual_objective_monotone(seed):
    rng = np.random.default_rng(100 + seed)
    m, C = 6, 1.5
    prob = random_problem(rng, m)
    keys, vals, ptr, losses, dense, W0, T0 = prob
    beta0 = np.zeros(m)
    beta0[0] = C
    w0 = flat(W0, T0)
    _, _, _, _, _, total = run_smo(prob, beta0, C, 0.0, max_steps=200)
    assert total >= 1
    prev = 0.0
    for s in range(1, total + 1):
        beta, _, _, _, _, steps = run_smo(prob, beta0, C, 0.0, max_steps=s)
        assert steps == s
        f = dual_obj(beta, beta0, dense, losses, w0)
        assert f <= prev + 1e-12      # minimised form never increases: the dual never decreases
        prev = f


def test_smo_no_violation_no_step():
    rng = np.random.default_rng(7)
    prob = random_problem(rng, 3)
    keys, vals, ptr, losses, dense, W0, T0 = prob
    beta0 = np.array([1.0, 0.0, 0.0])
    _, _, _, _, _, steps = run_smo(prob, beta0, 1.0, 1e9)
    assert steps == 0


# ---- sequence data (dense reference) -----------------------------------------------------------
def kbest_set(w, data, s, NF, L, k):
    """Enumerated loss-augmented k-best (eq. 12), ties as kbest_viterbi (score desc, then labels
    from the last position backwards ascending)."""
    gold = sentence(data, s)
    out = []
    for seq in itertools.product(range(L), repeat=len(gold)):
        sc = w @ F(data, s, seq, NF, L) + sum(g != p for g, p in zip(gold, seq))
        out.append((-sc, tuple(reversed(seq)), seq))
    out.sort()
    return [o[2] for o in out[:k]]


def exact_qp(w0, dFs, losses, C):
    """Exact solution of min_v 1/2||v - w0||^2 + C xi, v.dF_j >= L_j - xi, xi >= 0 through its
    dual (beta_gold + sum beta_j = C, gold has dF = 0, L = 0) by enumerating active sets."""
    D = np.vstack([np.zeros(len(w0))] + list(dFs))
    Ls = np.concatenate([[0.0], losses])
    m = len(Ls)
    K = D @ D.T
    best = None
    for r in range(1, m + 1):
        for S in itertools.combinations(range(m), r):
            S = list(S)
            # g_j = w0.dF_j + sum_S beta K_jS - L_j = mu for j in S ; sum beta = C
            A = np.zeros((r + 1, r + 1))
            A[:r, :r] = K[np.ix_(S, S)]
            A[:r, r] = -1.0
            A[r, :r] = 1.0
            rhs = np.concatenate([Ls[S] - D[S] @ w0, [C]])
            sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
            if not np.allclose(A @ sol, rhs, atol=1e-10):
                continue
            b = np.zeros(m)
            b[S] = sol[:r]
            if np.any(b < -1e-12):
                continue
            w = w0 + b @ D
            g = D @ w - Ls
            if np.all(g >= sol[r] - 1e-10):
                if best is None:
                    best = w
                else:
                    assert np.allclose(best, w, atol=1e-9)   # w is unique
    assert best is not None
    return best


def mira_reference(data, order, w, u, c, k, C, NF, L):
    for s in order:
        gold = sentence(data, s)
        Fg = F(data, s, gold, NF, L)
        dFs, losses = [], []
        for seq in kbest_set(w, data, s, NF, L, k):
            loss = sum(g != p for g, p in zip(gold, seq))
            if loss:
                dFs.append(Fg - F(data, s, seq, NF, L))
                losses.append(float(loss))
        wn = exact_qp(w, dFs, np.array(losses), C)
        u = u + c * (wn - w)
        w = wn
        c += 1.0
    return w, u, c


def kernel_state(data, NF, L, w=None):
    W = np.zeros((NF, L))
    T = np.zeros((L + 1, L + 1))
    if w is not None:
        W[:] = w[:NF * L].reshape(NF, L)
        T[:] = w[NF * L:].reshape(L + 1, L + 1)
    return W, np.zeros_like(W), T, np.zeros_like(T)


@pytest.mark.parametrize("seed,k,C", [(0, 1, 1.0), (1, 2, 0.5), (2, 3, 1.0), (3, 4, 0.1),
                                      (4, 2, 10.0)])
def test_mira_epoch_matches_reference(seed, k, C):
    rng = np.random.default_rng(seed)
    NF, L = 5, 3
    data = make_data(rng, 6, L, NF)
    order = rng.permutation(6)
    w0 = rng.normal(size=NF * L + (L + 1) ** 2) * 0.2
    W, U, T, TU = kernel_state(data, NF, L, w0)
    c, steps, top = kbest_mira_epoch(corpus(data), order, FirstOrder(W, T), FirstOrder(U, TU),
                                     1.0, k, C, SMOLimits(1e-13, 100000))
    w_ref, u_ref, c_ref = mira_reference(data, order, w0, np.zeros_like(w0), 1.0, k, C, NF, L)
    assert c == c_ref
    assert steps > 0
    assert np.allclose(flat(W, T), w_ref, atol=1e-9, rtol=0)
    assert np.allclose(flat(U, TU), u_ref, atol=1e-9 * c, rtol=0)


@pytest.mark.parametrize("seed,C", [(0, 1.0), (1, 0.3), (2, 5.0), (3, 0.05)])
def test_one_best_sdm_first_epoch_equals_pa(seed, C):
    """Sec. 4.2: 1-best SDM's first epoch is 1-best MIRA = PA (eq. 21), with tau = 0."""
    rng = np.random.default_rng(seed)
    NF, L, N = 6, 3, 8
    data = make_data(rng, N, L, NF, max_n=4)
    order = rng.permutation(N)
    W1, U1, T1, TU1 = kernel_state(data, NF, L)
    c1, _, top1 = kbest_pa_epoch(corpus(data), order, FirstOrder(W1, T1), FirstOrder(U1, TU1),
                                 1.0, 1, C)
    W2, U2, T2, TU2 = kernel_state(data, NF, L)
    ws = init_working_sets(data.offsets, data.y, C, 8)
    c2, steps, top2, dropped = kbest_sdm_epoch(corpus(data), order, FirstOrder(W2, T2),
                                               FirstOrder(U2, TU2), 1.0, 1, SMOLimits(0.0, 1000),
                                               ws)
    assert c1 == c2 and top1 == top2 and dropped == 0
    assert np.allclose(flat(W1, T1), flat(W2, T2), atol=1e-12, rtol=1e-12)
    assert np.allclose(flat(U1, TU1), flat(U2, TU2), atol=1e-11, rtol=1e-12)
    W3, U3, T3, TU3 = kernel_state(data, NF, L)
    kbest_mira_epoch(corpus(data), order, FirstOrder(W3, T3), FirstOrder(U3, TU3), 1.0, 1, C,
                     SMOLimits(0.0, 1000))
    assert np.allclose(flat(W1, T1), flat(W3, T3), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 3])
def test_sdm_working_sets_persist_and_stay_optimal(k):
    rng = np.random.default_rng(11)
    NF, L, N, C = 5, 3, 5, 0.7
    data = make_data(rng, N, L, NF)
    W, U, T, TU = kernel_state(data, NF, L)
    ws = ws_seq, ws_beta, ws_m = init_working_sets(data.offsets, data.y, C, 64)
    c = 1.0
    tau = 1e-10
    for ep in range(3):
        order = rng.permutation(N)
        c, steps, top, dropped = kbest_sdm_epoch(corpus(data), order, FirstOrder(W, T),
                                                 FirstOrder(U, TU), c, k, SMOLimits(tau, 100000),
                                                 ws)
        assert dropped == 0
    assert c == 1.0 + 3 * N
    w = flat(W, T)
    # eq. 6: w = sum_n sum_y lambda_{n,y} dF_n(y), lambdas summing to C per example
    recon = np.zeros_like(w)
    for s in range(N):
        m = ws_m[s]
        n = data.offsets[s + 1] - data.offsets[s]
        assert abs(ws_beta[s, :m].sum() - C) < 1e-12
        assert np.all(ws_beta[s, :m] >= 0)
        assert tuple(ws_seq[s, 0, :n]) == sentence(data, s)
        seqs = [tuple(ws_seq[s, j, :n]) for j in range(m)]
        assert len(set(seqs)) == m
        Fg = F(data, s, sentence(data, s), NF, L)
        for j in range(m):
            recon += ws_beta[s, j] * (Fg - F(data, s, seqs[j], NF, L))
    assert np.allclose(recon, w, atol=1e-9)
