"""OLaRank (structkit.sequence.learn.olarank) against plain-Python references on small random problems.

References: explicit dense feature vectors Phi for every class (all labels of a token, all L**n
label sequences of a sentence), the dual D = sum b Delta - 1/2 ||w||^2 computed from them, and
a generic QP solver (scipy) for the optimum of the greedy dual.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import require_extra

from seqref import F, flat, make_data
from structkit.sequence.learn import olarank as ol
from structkit.sequence.learn.smo import init_working_sets
from structkit.sequence.chain import FirstOrder, GreedyHistory, corpus


# ---- greedy: dense reference -------------------------------------------------------------
def phi_token(d, j, hist, c, NF, L, K):
    """Dense Phi_g(x^j, hist, c): W block (NF*L) then H block (K*(L+1)*L)."""
    v = np.zeros(NF * L + K * (L + 1) * L)
    for f in d.indices[d.indptr[j]:d.indptr[j + 1]]:
        v[f * L + c] += 1
    for s in range(K):
        v[NF * L + (s * (L + 1) + hist[j, s]) * L + c] += 1
    return v


def greedy_dual_reference(d, hist, B, NF, L, K):
    """D and w recomputed from b: w = sum b(c) (Phi(gold) - Phi(c))."""
    w = np.zeros(NF * L + K * (L + 1) * L)
    lin = 0.0
    for j in range(len(d.y)):
        g = phi_token(d, j, hist, d.y[j], NF, L, K)
        for c in range(L):
            if c != d.y[j]:
                w += B[j, c] * (g - phi_token(d, j, hist, c, NF, L, K))
                lin += B[j, c]
    return lin - 0.5 * w @ w, w


@pytest.mark.parametrize("K", [1, 3])
def test_greedy_pass_dual_never_decreases_and_w_matches_b(K):
    rng = np.random.default_rng(K)
    NF, L, C = 12, 4, 0.5
    d = make_data(rng, 6, L, NF, max_n=4, nnz=3)
    learner = ol.OLaRankLearner(NF, L, "olarank-greedy", C=C, nr=2, order=K, trace=True)
    for _ in range(2):
        learner.epoch(d, rng)
    for tr in learner.trace:
        assert len(tr) == len(d.y) * (1 + 2 * 11) + 1
        assert np.all(np.diff(tr) >= -1e-9), np.diff(tr).min()
    assert learner.trace[-1][-1] > learner.trace[0][0]
    D, w = greedy_dual_reference(d, learner.state["hist"], learner.state["B"], NF, L, K)
    assert np.allclose(w, flat(learner.W, learner.H))
    assert D == pytest.approx(learner.trace[-1][-1])
    B = learner.state["B"]
    assert np.all(B >= 0) and np.allclose(B.sum(axis=1), C)


def test_greedy_step_matches_reference():
    """One PROCESSNEW step: c+ = argmin g, c- = argmax g among b > 0, the clipped step."""
    rng = np.random.default_rng(7)
    NF, L, K, C, tau = 10, 5, 2, 1.0, 1e-3
    d = make_data(rng, 3, L, NF, max_n=4, nnz=3)
    hist = ol.gold_history(d.offsets, d.y, K, L)
    for trial in range(30):
        W = rng.normal(size=(NF, L))
        H = rng.normal(size=(K, L + 1, L))
        j = int(rng.integers(len(d.y)))
        B = np.zeros((len(d.y), L))
        B[np.arange(len(d.y)), d.y] = C
        # random feasible b for token j
        b = rng.dirichlet(np.ones(L)) * C
        b[rng.random(L) < 0.4] = 0.0
        b[d.y[j]] += C - b.sum()
        B[j] = b
        w0 = flat(W, H)
        gold = phi_token(d, j, hist, d.y[j], NF, L, K)
        g = np.array([0.0 if c == d.y[j] else w0 @ (gold - phi_token(d, j, hist, c, NF, L, K)) - 1
                      for c in range(L)])
        lo = int(np.argmin(g))
        cand = [c for c in range(L) if B[j, c] > 0]
        hi = max(cand, key=lambda c: (g[c], -c))
        W2, H2, B2 = W.copy(), H.copy(), B.copy()
        gain = ol.greedy_step(corpus(d), GreedyHistory(W2, H2), ol.TokenPatterns(hist, B2), j,
                              tau, 0.0, False, np.empty(L))
        if g[hi] - g[lo] <= tau or lo == hi:
            assert gain == 0.0 and np.array_equal(B2, B)
            continue
        dF = lambda c: np.zeros_like(gold) if c == d.y[j] else gold - phi_token(d, j, hist, c, NF, L, K)  # noqa: E731
        den = np.sum((dF(lo) - dF(hi)) ** 2)
        step = min(B[j, hi], (g[hi] - g[lo]) / den)
        assert B2[j, lo] == pytest.approx(B[j, lo] + step)
        assert B2[j, hi] == pytest.approx(B[j, hi] - step)
        assert np.allclose(flat(W2, H2), w0 + step * (dF(lo) - dF(hi)))
        assert gain == pytest.approx(step * (g[hi] - g[lo]) - 0.5 * step ** 2 * den)


def test_greedy_decode_matches_reference():
    rng = np.random.default_rng(3)
    NF, L, K = 9, 4, 3
    d = make_data(rng, 8, L, NF, max_n=6, nnz=3)
    W = rng.normal(size=(NF, L))
    H = rng.normal(size=(K, L + 1, L))
    out = np.full(len(d.y), -1, dtype=np.int32)
    ol.greedy_decode(d.indptr, d.indices, d.offsets, W, H, out)
    for i in range(len(d.offsets) - 1):
        a, b = d.offsets[i], d.offsets[i + 1]
        pred = []
        for j in range(a, b):
            h = [pred[-s] if s <= len(pred) else L for s in range(1, K + 1)]
            sc = [W[d.indices[d.indptr[j]:d.indptr[j + 1]], c].sum() + sum(H[s, h[s], c] for s in range(K))
                  for c in range(L)]
            pred.append(int(np.argmax(sc)))
        assert list(out[a:b]) == pred


def test_batch_greedy_reaches_the_qp_optimum():
    """larank-greedy-batch stops when the KKT conditions hold to tau; its dual then matches a
    generic QP solution of (6) (scipy SLSQP) on a tiny problem."""
    scipy_opt = require_extra("scipy.optimize", "test")
    rng = np.random.default_rng(11)
    NF, L, K, C = 6, 3, 1, 0.7
    d = make_data(rng, 3, L, NF, max_n=3, nnz=2)
    learner = ol.OLaRankLearner(NF, L, "larank-greedy-batch", C=C, nr=1, order=K, tau=1e-7,
                                kappa=0.0, max_passes=5000)
    stats = learner.epoch(d, rng)
    assert stats["max_violation"] <= 1e-7
    hist = learner.state["hist"]
    N = len(d.y)
    # variables b[j, c] for all j, c (gold column = slack); maximise D subject to sum_c b = C
    dFs = np.array([[np.zeros(NF * L + K * (L + 1) * L) if c == d.y[j] else
                     phi_token(d, j, hist, d.y[j], NF, L, K) - phi_token(d, j, hist, c, NF, L, K)
                     for c in range(L)] for j in range(N)]).reshape(N * L, -1)
    loss = np.array([[0.0 if c == d.y[j] else 1.0 for c in range(L)] for j in range(N)]).ravel()
    Q = dFs @ dFs.T

    def neg_dual(b):
        return -(loss @ b - 0.5 * b @ Q @ b)

    cons = [{"type": "eq", "fun": (lambda b, j=j: b[j * L:(j + 1) * L].sum() - C)} for j in range(N)]
    b0 = np.zeros(N * L)
    b0[np.arange(N) * L + d.y] = C
    res = scipy_opt.minimize(neg_dual, b0, jac=lambda b: -(loss - Q @ b), bounds=[(0, None)] * (N * L),
                             constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success
    assert stats["dual"] == pytest.approx(-res.fun, abs=1e-6)


# ---- exact: dense reference over all label sequences ----------------------------------------
def test_exact_pass_dual_never_decreases_and_w_matches_b():
    rng = np.random.default_rng(5)
    NF, L, C = 10, 3, 0.4
    d = make_data(rng, 7, L, NF, max_n=4, nnz=3)
    learner = ol.OLaRankLearner(NF, L, "olarank-exact", C=C, nr=3, trace=True)
    for _ in range(2):
        learner.epoch(d, rng)
    for tr in learner.trace:
        assert np.all(np.diff(tr) >= -1e-9), np.diff(tr).min()
    ws_seq, ws_beta, ws_m = learner.state["ws"]
    w = np.zeros(NF * L + (L + 1) * (L + 1))
    lin = 0.0
    for s in range(len(d.offsets) - 1):
        a, n = d.offsets[s], d.offsets[s + 1] - d.offsets[s]
        gold = F(d, s, d.y[a:a + n], NF, L)
        assert ws_beta[s, :ws_m[s]].sum() == pytest.approx(C)
        assert np.all(ws_beta[s, :ws_m[s]] >= 0)
        for j in range(1, ws_m[s]):
            seq = ws_seq[s, j, :n]
            w += ws_beta[s, j] * (gold - F(d, s, seq, NF, L))
            lin += ws_beta[s, j] * np.sum(seq != d.y[a:a + n])
    assert np.allclose(w, flat(learner.W, learner.T))
    assert learner.trace[-1][-1] == pytest.approx(lin - 0.5 * w @ w)


def test_exact_processnew_is_the_pa_step_against_brute_force():
    """On a fresh sentence, PROCESSNEW = the PA-I step towards the brute-force loss-augmented
    argmax: d = min(C, (Delta - w.dF) / ||dF||^2)."""
    rng = np.random.default_rng(9)
    NF, L, C = 8, 3, 0.3
    d = make_data(rng, 5, L, NF, max_n=4, nnz=3)
    for trial in range(20):
        W = rng.normal(size=(NF, L))
        T = rng.normal(size=(L + 1, L + 1))
        s = int(rng.integers(len(d.offsets) - 1))
        a, n = int(d.offsets[s]), int(d.offsets[s + 1] - d.offsets[s])
        w0 = flat(W, T)
        gold = d.y[a:a + n]
        best, best_v = None, -np.inf
        for seq in itertools.product(range(L), repeat=n):
            v = w0 @ F(d, s, seq, NF, L) + np.sum(np.array(seq) != gold)
            if v > best_v + 1e-12:
                best, best_v = np.array(seq), v
        dF = F(d, s, gold, NF, L) - F(d, s, best, NF, L)
        loss = np.sum(best != gold)
        ws = init_working_sets(d.offsets, d.y, C, 8)
        W2, T2 = W.copy(), T.copy()
        maxlen = int(np.max(np.diff(d.offsets)))
        gain, dropped, vloss = ol.exact_step(corpus(d), FirstOrder(W2, T2), ws, s, 1e-9, 0.0, 0,
                                             np.empty((maxlen, L)),
                                             np.empty((1, maxlen), np.int32), np.empty(1))
        assert vloss == loss and dropped == 0
        if loss == 0 or loss - w0 @ dF <= 1e-9:
            assert gain == 0.0
            continue
        step = min(C, (loss - w0 @ dF) / (dF @ dF))
        assert np.allclose(flat(W2, T2), w0 + step * dF)
        assert ws[1][s, 1] == pytest.approx(step)


def test_pa_greedy_has_no_reprocess_and_runs_are_reproducible():
    rng = np.random.default_rng(2)
    NF, L = 15, 4
    d = make_data(rng, 10, L, NF, max_n=4, nnz=3)
    pa = ol.OLaRankLearner(NF, L, "pa-greedy", C=0.5, nr=5)
    assert pa.nr == 0
    a = ol.OLaRankLearner(NF, L, "olarank-greedy", C=0.5, nr=2, order=2)
    b = ol.OLaRankLearner(NF, L, "olarank-greedy", C=0.5, nr=2, order=2)
    a.epoch(d, np.random.default_rng(4))
    b.epoch(d, np.random.default_rng(4))
    assert np.array_equal(a.W, b.W) and np.array_equal(a.H, b.H)
    c = ol.OLaRankLearner(NF, L, "olarank-greedy", C=0.5, nr=2, order=2)
    c.epoch(d, np.random.default_rng(5))
    assert not np.array_equal(a.W, c.W)


def test_greedy_perceptron_pass_matches_reference():
    rng = np.random.default_rng(8)
    NF, L, K = 7, 3, 2
    d = make_data(rng, 6, L, NF, max_n=4, nnz=3)
    learner = ol.OLaRankLearner(NF, L, "perceptron-greedy", order=K)
    order = np.arange(len(d.offsets) - 1)
    learner.state = learner._init_state(d, d.y)
    hist = learner.state["hist"]
    c0 = learner.c
    ol.greedy_perceptron_pass(corpus(d), order, GreedyHistory(learner.W, learner.H),
                              GreedyHistory(learner.U, learner.HU), learner.c, hist)
    learner.c = c0 + len(d.y)
    # reference: plain loop with dense vectors, then the average of all intermediate w
    w = np.zeros(NF * L + K * (L + 1) * L)
    total = np.zeros_like(w)
    steps = 0
    for j in range(len(d.y)):
        sc = [w @ phi_token(d, j, hist, c, NF, L, K) for c in range(L)]
        best = int(np.argmax(sc))
        if best != d.y[j]:
            w = w + phi_token(d, j, hist, d.y[j], NF, L, K) - phi_token(d, j, hist, best, NF, L, K)
        total += w
        steps += 1
    assert np.allclose(flat(learner.W, learner.H), w)
    avg = learner.averaged()
    # the averaging convention of structkit.sequence.learn.perceptron: the mean of w_0 = 0, w_1, ..., w_N
    assert np.allclose(flat(avg.W, avg.H), total / (steps + 1))


# ---- command line -------------------------------------------------------------------------
from clitools import assert_one_line_error  # noqa: E402

FIX = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("algo, extra", [
    ("olarank-exact", []), ("olarank-greedy", ["--order", "3"]), ("pa-exact", []), ("pa-greedy", []),
    ("perceptron-exact", []), ("perceptron-greedy", ["--order", "2"]),
    ("larank-greedy-batch", ["--epochs", "3"]),
])
def test_olarank_learners_train_and_tag(sk, tmp_path, algo, extra):
    m = tmp_path / "m.npz"
    metrics = tmp_path / "metrics.json"
    r = sk("train", "--task", "chunk", "--train", FIX / "chunk_train.txt", "--model", m, "--algo", algo,
           "--C", "0.1", "--seed", "3", "--metrics-json", metrics, "-v", *extra)
    assert r.code == 0, r.err
    import json
    epochs = json.loads(metrics.read_text())["epochs"]
    assert len(epochs) == 1  # one pass (the batch learner: its passes inside one call)
    if algo not in ("perceptron-exact", "perceptron-greedy"):
        assert "dual" in r.err and epochs[0]["dual"] > 0 and epochs[0]["support_vectors"] > 0
    r = sk("chunk", "--model", m, FIX / "chunk_test.txt")
    assert r.code == 0, r.err
    rows = [l.split() for l in r.out.splitlines() if l.strip()]
    assert rows and all(len(row) == 4 for row in rows)
    # same seed, same model file contents (weights)
    m2 = tmp_path / "m2.npz"
    assert sk("train", "--task", "chunk", "--train", FIX / "chunk_train.txt", "--model", m2, "--algo", algo,
              "--C", "0.1", "--seed", "3", "-q", *extra).code == 0
    assert sk("chunk", "--model", m2, FIX / "chunk_test.txt").out == r.out


@pytest.mark.parametrize("extra, needle", [
    (["--algo", "olarank-greedy", "--order", "0"], "--order must be an integer from 1 to 10, got 0"),
    (["--algo", "olarank-greedy", "--order", "11"], "--order must be an integer from 1 to 10, got 11"),
    (["--algo", "olarank-exact", "--order", "2"], "--order applies to the greedy OLaRank learners"),
    (["--algo", "perceptron", "--order", "2"], "--order applies to the greedy OLaRank learners"),
    (["--algo", "olarank-greedy", "--direction", "rtl"], "tags left to right only"),
    (["--algo", "olarank-exact", "--C", "-1"], "--C must be a positive number, got -1.0"),
    (["--algo", "pa-greedy", "--nr", "-2"], "--nr must be a non-negative integer, got -2"),
    (["--algo", "olarank-greedy", "--label-order", "2"], "take --order K"),
])
def test_olarank_bad_options(sk, tmp_path, extra, needle):
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", FIX / "chunk_train.txt", "--model", m,
                             *extra), needle, code=1)
    assert not m.exists()
