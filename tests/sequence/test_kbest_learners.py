"""k-best perceptron / PA / restricted PA (structkit.sequence.learn.kbest) against brute-force dense
references on tiny problems (all label sequences enumerated)."""
import itertools

import numpy as np
import pytest

import seqref
from seqref import F, flat, sentence
from structkit.sequence.features import Encoded
from structkit.sequence.learn.kbest import (KBestLearner, kbest_pa_epoch, kbest_perceptron_epoch,
                                   kbest_rpa_epoch)
from structkit.sequence.learn.perceptron import structured_epoch
from structkit.sequence.chain import FirstOrder, corpus, dF_dot
from structkit.sequence.search.viterbi import decode_corpus

KERNELS = {"perceptron": kbest_perceptron_epoch, "pa": kbest_pa_epoch, "rpa": kbest_rpa_epoch}


def make_data(rng, n_sent, L, NF, max_n=4):
    return seqref.make_data(rng, n_sent, L, NF, max_n, duplicate_first=True)


# ---- dense reference -----------------------------------------------------------------------
def ranked(w, data, s, NF, L, loss_aug):
    """All sequences sorted as kbest_viterbi / viterbi break ties: score desc, then labels read
    from the last position backwards ascending."""
    gold = sentence(data, s)
    out = []
    for seq in itertools.product(range(L), repeat=len(gold)):
        sc = w @ F(data, s, seq, NF, L)
        if loss_aug:
            sc += sum(g != p for g, p in zip(gold, seq))
        out.append((-sc, tuple(reversed(seq)), seq))
    out.sort()
    return [o[2] for o in out]


def reference_epoch(algo, data, order, w, u, c, k, C, NF, L):
    """Algorithm 4 of the paper, dense: B^k once per example with w_n, online inside."""
    for s in order:
        gold = sentence(data, s)
        Fg = F(data, s, gold, NF, L)
        Bk = ranked(w, data, s, NF, L, True)[:k]
        for seq in Bk:
            loss = sum(g != p for g, p in zip(gold, seq))
            if loss == 0:
                continue
            dF = Fg - F(data, s, seq, NF, L)
            if algo == "perceptron":
                if w @ dF > 0:
                    continue
                d = 1.0
            else:
                l = loss - w @ dF
                if not l > 0:
                    continue
                if algo == "rpa":
                    yhat = ranked(w, data, s, NF, L, False)[0]
                    lhat = sum(g != p for g, p in zip(gold, yhat)) - w @ (Fg - F(data, s, yhat, NF, L))
                    if l < lhat:
                        continue
                d = min(l / (dF @ dF), C)
            w = w + d * dF
            u = u + c * d * dF
        c += 1.0
    return w, u, c


def run_kernel(algo, data, order, W, U, T, TU, c, k, C):
    return KERNELS[algo](corpus(data), order, FirstOrder(W, T), FirstOrder(U, TU), c, k, C)


# ---- tests ---------------------------------------------------------------------------------
def test_dF_dot_sparse_matches_dense():
    rng = np.random.default_rng(0)
    NF, L = 4, 3
    data = make_data(rng, 6, L, NF)
    for s in range(data.n_sentences):
        a = data.offsets[s]
        n = data.offsets[s + 1] - a
        seqs = list(itertools.product(range(L), repeat=n))
        Fg = F(data, s, sentence(data, s), NF, L)
        for _ in range(6):
            s1 = seqs[rng.integers(len(seqs))]
            s2 = seqs[rng.integers(len(seqs))]
            d1 = Fg - F(data, s, s1, NF, L)
            d2 = Fg - F(data, s, s2, NF, L)
            for x1, x2, ref in ((s1, s2, d1 @ d2), (s1, s1, d1 @ d1)):
                got = dF_dot(corpus(data), a, n, np.array(x1, np.int32), np.array(x2, np.int32),
                             NF, L)
                assert got == ref


@pytest.mark.parametrize("algo", ["perceptron", "pa", "rpa"])
@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("seed,start", [(1, "zero"), (2, "random"), (3, "random")])
def test_two_epochs_match_reference(algo, k, seed, start):
    rng = np.random.default_rng(seed)
    L = 2 + seed % 2
    NF = 4
    data = make_data(rng, 4, L, NF)
    C = 0.7
    W = np.zeros((NF, L))
    T = np.zeros((L + 1, L + 1))
    if start == "random":  # breaks score ties, which float rounding could otherwise order
        W = rng.normal(size=W.shape)
        T = rng.normal(size=T.shape)
    U = np.zeros_like(W)
    TU = np.zeros_like(T)
    w = flat(W, T)
    u = flat(U, TU)
    c = c_ref = 1.0
    for ep in range(2):
        order = rng.permutation(data.n_sentences)
        c, upd, _ = run_kernel(algo, data, order, W, U, T, TU, c, k, C)
        w, u, c_ref = reference_epoch(algo, data, order, w, u, c_ref, k, C, NF, L)
        assert c == c_ref
        np.testing.assert_allclose(flat(W, T), w, rtol=0, atol=1e-9)
        np.testing.assert_allclose(flat(U, TU), u, rtol=0, atol=1e-9)
    assert np.abs(w).sum() > 0  # something was learnt


def pa1_reference(data, order, w, C, NF, L):
    """Crammer et al. (2006) PA-I, max-loss (loss-augmented) prediction, Hamming loss."""
    for s in order:
        gold = sentence(data, s)
        best, ybar = -np.inf, None
        for seq in itertools.product(range(L), repeat=len(gold)):
            sc = w @ F(data, s, seq, NF, L) + sum(g != p for g, p in zip(gold, seq))
            if sc > best:
                best, ybar = sc, seq
        dF = F(data, s, gold, NF, L) - F(data, s, ybar, NF, L)
        ell = max(0.0, sum(g != p for g, p in zip(gold, ybar)) - w @ dF)
        if ell > 0:
            w = w + min(C, ell / (dF @ dF)) * dF
    return w


@pytest.mark.parametrize("C", [0.05, 1.0, 100.0])
def test_k1_pa_is_one_best_pa(C):
    rng = np.random.default_rng(7)
    L, NF = 3, 4
    data = make_data(rng, 5, L, NF)
    W = rng.normal(size=(NF, L))
    T = rng.normal(size=(L + 1, L + 1))
    w = flat(W, T)
    c = 1.0
    for _ in range(2):
        order = rng.permutation(data.n_sentences)
        c, _, _ = run_kernel("pa", data, order, W, np.zeros_like(W), T, np.zeros_like(T), c, 1, C)
        w = pa1_reference(data, order, w, C, NF, L)
        np.testing.assert_allclose(flat(W, T), w, rtol=0, atol=1e-9)


def test_k1_perceptron_is_structured_perceptron_when_margin_large():
    """k-best perceptron with k = 1 updates on the loss-augmented argmax (eq. 12), the structured
    perceptron on the plain Viterbi argmax. Where these coincide -- weights scaled so that the
    best sequence beats every other by more than n (the largest possible Hamming loss) and the
    example is misclassified -- one step of each must produce identical W, U, T, TU and c."""
    rng = np.random.default_rng(11)
    L, NF = 3, 4
    checked = 0
    for trial in range(60):
        data = make_data(rng, 1, L, NF)
        W = rng.integers(-3, 4, size=(NF, L)).astype(float) * 10.0
        T = rng.integers(-3, 4, size=(L + 1, L + 1)).astype(float) * 10.0
        w = flat(W, T)
        gold = sentence(data, 0)
        scores = sorted((w @ F(data, 0, seq, NF, L), seq)
                        for seq in itertools.product(range(L), repeat=len(gold)))
        (s1, best), (s2, _) = scores[-1], scores[-2]
        if best == gold or s1 - s2 <= len(gold):
            continue
        order = np.arange(1)
        a = (W.copy(), np.zeros_like(W), T.copy(), np.zeros_like(T))
        b = (W.copy(), np.zeros_like(W), T.copy(), np.zeros_like(T))
        ca, wrong = structured_epoch(corpus(data), order, FirstOrder(a[0], a[2]),
                                     FirstOrder(a[1], a[3]), 3.0)
        cb, upd, _ = run_kernel("perceptron", data, order, *b, 3.0, 1, 1.0)
        assert wrong > 0 and upd == 1 and ca == cb
        for x, z in zip(a, b):
            np.testing.assert_array_equal(x, z)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("algo", ["perceptron", "pa", "rpa"])
def test_learns_separable_problem(algo):
    rng = np.random.default_rng(5)
    L, n_sent = 3, 12
    lens = rng.integers(2, 5, size=n_sent)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nt = int(offsets[-1])
    y = rng.integers(0, L, size=nt).astype(np.int32)
    rows = [[int(v), L + int(rng.integers(0, 3))] for v in y]  # label-revealing id + noise id
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    data = Encoded(indptr, np.array(sum(rows, []), np.int32), offsets, y)
    learner = KBestLearner(L + 3, L, algo=algo, k=3, C=1.0)
    g = np.random.default_rng(0)
    for _ in range(5):
        stats = learner.epoch(data, g)
    assert stats["train_updates"] == 0
    avg = learner.averaged()
    out = np.empty(nt, np.int32)
    decode_corpus(data.indptr, data.indices, data.offsets, avg.W, avg.T, out)
    assert (out == y).all()


def test_bad_arguments():
    """An unknown algorithm and k = 0 are refused."""
    with pytest.raises(ValueError):
        KBestLearner(3, 2, algo="beam")
    with pytest.raises(ValueError):
        KBestLearner(3, 2, k=0)


def test_rpa_restriction_is_exercised():
    """A case where eq. 28's restriction rejects PA updates; both still match the reference."""
    rng = np.random.default_rng(1)
    L, NF, k, C = 3, 4, 4, 0.7
    data = make_data(rng, 4, L, NF)
    order = np.arange(4)
    out = {}
    for algo in ("pa", "rpa"):
        r = np.random.default_rng(101)
        W = r.normal(size=(NF, L))
        T = r.normal(size=(L + 1, L + 1))
        w0 = flat(W, T)
        U, TU = np.zeros_like(W), np.zeros_like(T)
        c, upd, _ = run_kernel(algo, data, order, W, U, T, TU, 1.0, k, C)
        w, u, _ = reference_epoch(algo, data, order, w0, np.zeros_like(w0), 1.0, k, C, NF, L)
        np.testing.assert_allclose(flat(W, T), w, rtol=0, atol=1e-9)
        np.testing.assert_allclose(flat(U, TU), u, rtol=0, atol=1e-9)
        out[algo] = (upd, w)
    assert out["rpa"][0] < out["pa"][0]
    assert np.abs(out["pa"][1] - out["rpa"][1]).max() > 1e-3


def test_each_kbest_learner_trains_after_another_filled_the_cache(tmp_path):
    """The k-best learners share their decoding kernel. Each trains in a process of its own with
    the kernels the one before it left in numba's (empty at first) cache: when an epoch loop
    read a numba generator, the second learner's process failed with a KeyError in numba's
    generator lowering (k-best PA, then SDM, as scripts/model_fingerprints.py trains them)."""
    import os
    import subprocess

    from clitools import sk_cmd, sk_env

    env = {**sk_env(), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    for algo in ("kbest-pa", "kbest-sdm", "kbest-mira"):
        r = subprocess.run(sk_cmd("train", "--task", "chunk", "--train", "sample/chunk/train.txt", "--algo", algo,
                                  "--k", "2", "--epochs", "1", "--model", tmp_path / f"{algo}.model", "-q"),
                           env=env, capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, (algo, r.stderr[-400:])
        assert os.path.getsize(tmp_path / f"{algo}.model") > 0
