"""Numba kernels (structkit.sequence.search.viterbi, structkit.sequence.learn.perceptron) against plain-Python
references on seeded random inputs.

Conventions under test: CSR features (indptr int64, indices int32); W[n_features, L];
T[L+1, L+1] with index L the sentence boundary (T[L, y] start, T[y, L] end);
T2[L+1, L+1, L] indexed [two back, previous, current] with L as boundary;
averaging W_avg = W - U / c, c starting at 1 and counting examples.

Viterbi tie-breaking, as implemented: each back-pointer and the final label take the first
(lowest-id) maximum, so among several optimal sequences the kernel returns the one that is
smallest when compared from the LAST position backwards -- not in general the
lexicographically smallest one (e.g. n=2, L=2, T[0,1]=T[1,0]=1: optimal (0,1) and (1,0), the
kernel returns (1,0)). The references below pick ties with ``_tie_key`` to match that, and the
lexicographic comparison is only asserted where both rules agree.
"""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from structkit.sequence.features import Encoded
from structkit.sequence.learn.lookahead import lookahead_epoch
from structkit.sequence.learn.perceptron import AveragedPerceptron, structured_epoch
from structkit.sequence.chain import Corpus, FirstOrder, SecondOrder, Weights
from structkit.sequence.search.lookahead import lookahead_decode
from structkit.sequence.search.viterbi import decode_corpus as viterbi_corpus
from structkit.sequence.search.viterbi import emissions, viterbi


# Greedy history-based decoding and learning are lookahead search at depth 0 (with margin 0);
# these wrappers keep the plain-Python references below checking exactly that.
def greedy(E, n, T, T2, second_order, reverse, out):
    """Greedy decoding of one sentence from emission rows E[:n] (one feature per token)."""
    E = np.ascontiguousarray(E[:n], dtype=float)
    indptr = np.arange(n + 1, dtype=np.int64)
    indices = np.arange(n, dtype=np.int32)
    res = np.empty(n, dtype=np.int32)
    lookahead_decode(indptr, indices, np.array([0, n], dtype=np.int64), SecondOrder(E, T, T2),
                     second_order, reverse, 0, True, res)
    out[:n] = res


def greedy_epoch(indptr, indices, offsets, y, order, W, U, T, TU, T2, T2U, second_order, reverse, c):
    c, mistakes, updates = lookahead_epoch(Corpus(indptr, indices, offsets, y), order,
                                           SecondOrder(W, T, T2), SecondOrder(U, TU, T2U), c,
                                           second_order, reverse, 0, 0.0, True)
    assert mistakes == updates  # no margin: every mistake is an update and nothing else
    return c, mistakes


def decode_corpus(indptr, indices, offsets, W, T, T2, method, second_order, reverse, out):
    if method == 0:
        viterbi_corpus(indptr, indices, offsets, W, T, out)
    else:
        lookahead_decode(indptr, indices, offsets, SecondOrder(W, T, T2), second_order, reverse, 0, True, out)


def _learner(nF, L, method, second_order=False, reverse=False):
    if method == "greedy":
        return AveragedPerceptron(nF, L, "lookahead", second_order, reverse, depth=0, margin=0.0)
    return AveragedPerceptron(nF, L, method, second_order, reverse)


# ---- random inputs ------------------------------------------------------------------------
def random_csr(rng: np.random.Generator, n_tokens: int, n_features: int, max_nnz: int = 4,
               duplicates: bool = True):
    """CSR feature ids per token (some tokens with no features, optional repeated ids)."""
    counts = rng.integers(0, max_nnz + 1, size=n_tokens)
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(counts)
    if duplicates:
        indices = rng.integers(0, n_features, size=int(indptr[-1])).astype(np.int32)
    else:
        indices = np.concatenate(
            [rng.choice(n_features, size=int(k), replace=False) for k in counts]
            + [np.zeros(0, dtype=np.int64)]).astype(np.int32)
    return indptr, indices


def random_offsets(rng: np.random.Generator, n_sentences: int, max_len: int, min_len: int = 0):
    lengths = rng.integers(min_len, max_len + 1, size=n_sentences)
    offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(lengths)
    return offsets


# ---- plain-Python references --------------------------------------------------------------
def ref_emissions(indptr, indices, W, t):
    L = W.shape[1]
    row = [0.0] * L
    for j in range(int(indptr[t]), int(indptr[t + 1])):
        f = int(indices[j])
        for y in range(L):
            row[y] += float(W[f, y])
    return row


def seq_score(E, T, seq, L):
    """Start + emissions + transitions + end score of one label sequence."""
    s = float(T[L, seq[0]])
    for t, y in enumerate(seq):
        s += float(E[t][y])
        if t > 0:
            s += float(T[seq[t - 1], y])
    return s + float(T[seq[-1], L])


def _tie_key(seq):
    """The kernel's preference among equally good sequences: smallest read right to left."""
    return tuple(reversed(seq))


def brute_force(E, n, T, L):
    """All L**n sequences: (best score, all sequences attaining it exactly, their scores)."""
    scored = [(seq_score(E, T, seq, L), seq) for seq in itertools.product(range(L), repeat=n)]
    best = max(s for s, _ in scored)
    return best, [seq for s, seq in scored if s == best], scored


def ref_viterbi_decode(E, n, T, L):
    """Brute-force argmax with the kernel's tie rule (exact when scores are integer-valued)."""
    _, argmaxes, _ = brute_force(E, n, T, L)
    return min(argmaxes, key=_tie_key)


def _history(labels, k, t, n, L, reverse):
    """(previous, two back) labels for the k-th decision (position t), boundary L."""
    if k == 0:
        return L, L
    p1 = labels[t + 1] if reverse else labels[t - 1]
    if k == 1:
        return p1, L
    return p1, (labels[t + 2] if reverse else labels[t - 2])


def _first_argmax(scores):
    best, arg = -np.inf, 0
    for z, s in enumerate(scores):
        if s > best:
            best, arg = s, z
    return arg


def ref_greedy(E, n, T, T2, second_order, reverse, L):
    out = [None] * n
    for k in range(n):
        t = n - 1 - k if reverse else k
        p1, p2 = _history(out, k, t, n, L, reverse)
        scores = []
        for y in range(L):
            s = E[t][y] + T[p1, y]
            if second_order:
                s += T2[p2, p1, y]
            scores.append(s)
        out[t] = _first_argmax(scores)
    return out


def phi(feats, seq, L):
    """Global feature counts of a labelled sentence: emissions and boundary transitions."""
    c = Counter()
    for t, y in enumerate(seq):
        for f in feats[t]:
            c["W", f, y] += 1
    path = [L] + list(seq) + [L]
    for a, b in zip(path, path[1:]):
        c["T", a, b] += 1
    return c


def ref_structured_epoch(indptr, indices, offsets, y, order, W, U, T, TU, c, snapshots=None):
    """Collins (2002) averaged perceptron, one epoch, c-counter averaging. Returns new arrays."""
    W, U, T, TU = W.copy(), U.copy(), T.copy(), TU.copy()
    L = W.shape[1]
    wrong = 0
    for s in order:
        a, b = int(offsets[s]), int(offsets[s + 1])
        n = b - a
        if n == 0:  # kernel convention: an empty sentence is not an example
            continue
        feats = [[int(f) for f in indices[indptr[t]:indptr[t + 1]]] for t in range(a, b)]
        E = [ref_emissions(indptr, indices, W, t) for t in range(a, b)]
        pred = ref_viterbi_decode(E, n, T, L)
        gold = [int(v) for v in y[a:b]]
        wrong += sum(p != g for p, g in zip(pred, gold))
        delta = phi(feats, gold, L)
        delta.subtract(phi(feats, pred, L))
        for (kind, i, j), v in delta.items():
            if v:
                A, AU = (W, U) if kind == "W" else (T, TU)
                A[i, j] += v
                AU[i, j] += c * v
        c += 1.0
        if snapshots is not None:
            snapshots.append((W.copy(), T.copy()))
    return W, U, T, TU, c, wrong


def ref_greedy_epoch(indptr, indices, offsets, y, order, W, U, T, TU, T2, T2U, second_order,
                     reverse, c, snapshots=None):
    """History-based perceptron: one example per token, scored with the gold history."""
    W, U, T, TU, T2, T2U = (A.copy() for A in (W, U, T, TU, T2, T2U))
    L = W.shape[1]
    wrong = 0
    for s in order:
        a = int(offsets[s])
        n = int(offsets[s + 1]) - a
        gold = [int(v) for v in y[a:a + n]]
        for k in range(n):
            t = n - 1 - k if reverse else k
            p1, p2 = _history(gold, k, t, n, L, reverse)
            row = ref_emissions(indptr, indices, W, a + t)
            scores = [row[z] + T[p1, z] + (T2[p2, p1, z] if second_order else 0.0)
                      for z in range(L)]
            arg = _first_argmax(scores)
            g = gold[t]
            if arg != g:
                wrong += 1
                for j in range(int(indptr[a + t]), int(indptr[a + t + 1])):
                    f = int(indices[j])
                    W[f, g] += 1.0
                    U[f, g] += c
                    W[f, arg] -= 1.0
                    U[f, arg] -= c
                T[p1, g] += 1.0
                TU[p1, g] += c
                T[p1, arg] -= 1.0
                TU[p1, arg] -= c
                if second_order:
                    T2[p2, p1, g] += 1.0
                    T2U[p2, p1, g] += c
                    T2[p2, p1, arg] -= 1.0
                    T2U[p2, p1, arg] -= c
            c += 1.0
            if snapshots is not None:
                snapshots.append((W.copy(), T.copy(), T2.copy()))
    return W, U, T, TU, T2, T2U, c, wrong


# ---- 1. emissions -------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_emissions_vs_python_sum(seed):
    rng = np.random.default_rng(100 + seed)
    n_tokens, n_features, L = int(rng.integers(1, 12)), int(rng.integers(1, 15)), int(rng.integers(1, 6))
    indptr, indices = random_csr(rng, n_tokens, n_features)
    W = rng.normal(size=(n_features, L))
    for _ in range(8):
        a = int(rng.integers(0, n_tokens))
        b = int(rng.integers(a, n_tokens + 1))
        out = np.full((b - a + 2, L), np.nan)  # extra rows must stay untouched
        emissions(indptr, indices, W, a, b, out)
        for t in range(a, b):
            np.testing.assert_allclose(out[t - a], ref_emissions(indptr, indices, W, t),
                                       rtol=0, atol=1e-12)
        assert np.isnan(out[b - a:]).all()


def test_emissions_overwrites_stale_rows():
    W = np.arange(6, dtype=float).reshape(3, 2)
    indptr = np.array([0, 0, 2, 5], dtype=np.int64)
    indices = np.array([0, 2, 1, 1, 2], dtype=np.int32)  # token 2 has feature 1 twice
    out = np.full((3, 2), 99.0)
    emissions(indptr, indices, W, 0, 3, out)
    np.testing.assert_array_equal(out, [[0, 0], [4, 6], [8, 11]])


# ---- 2. viterbi ---------------------------------------------------------------------------
@pytest.mark.parametrize("L", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_viterbi_vs_brute_force(n, L):
    rng = np.random.default_rng(1000 * n + L)
    for _ in range(8):
        extra = int(rng.integers(0, 3))
        E = rng.normal(size=(n + extra, L))  # rows past n must be ignored
        T = rng.normal(size=(L + 1, L + 1))
        out = np.full(n + 2, -7, dtype=np.int32)
        got = viterbi(E, n, T, out)
        best, argmaxes, scored = brute_force(E, n, T, L)
        assert got == pytest.approx(best, abs=1e-9)
        seq = tuple(int(v) for v in out[:n])
        assert all(0 <= v < L for v in seq)
        assert seq_score(E, T, seq, L) == pytest.approx(best, abs=1e-9)
        gap = sorted((s for s, _ in scored), reverse=True)
        if len(gap) == 1 or gap[0] - gap[1] > 1e-9:
            assert seq == argmaxes[0]
        assert (out[n:] == -7).all()


@pytest.mark.parametrize("L", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_viterbi_all_zero_ties_lexicographic(n, L):
    E = np.zeros((n, L))
    T = np.zeros((L + 1, L + 1))
    out = np.empty(n, dtype=np.int32)
    assert viterbi(E, n, T, out) == 0.0
    _, argmaxes, _ = brute_force(E, n, T, L)
    lex_first = min(argmaxes)
    assert tuple(out) == lex_first == (0,) * n


def test_viterbi_integer_ties_attain_max():
    """Integer-valued scores (many exact ties). The kernel's tie rule is NOT the
    lexicographically smallest best sequence, so only optimality is asserted against the
    brute force, plus the rule it does follow (smallest when read right to left)."""
    rng = np.random.default_rng(7)
    n_differs = 0
    for _ in range(60):
        n, L = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        E = rng.integers(-1, 2, size=(n, L)).astype(float)
        T = rng.integers(-1, 2, size=(L + 1, L + 1)).astype(float)
        out = np.empty(n, dtype=np.int32)
        got = viterbi(E, n, T, out)
        best, argmaxes, _ = brute_force(E, n, T, L)
        seq = tuple(int(v) for v in out)
        assert got == best
        assert seq_score(E, T, seq, L) == best
        assert seq in argmaxes
        assert seq == min(argmaxes, key=_tie_key)
        n_differs += seq != min(argmaxes)
    assert n_differs > 0  # the two tie rules do differ on this sample


def test_viterbi_tie_rule_example():
    """Two optimal paths (0,1) and (1,0): the kernel returns (1,0), lexicographic would be (0,1)."""
    L, n = 2, 2
    E = np.zeros((n, L))
    T = np.zeros((L + 1, L + 1))
    T[0, 1] = T[1, 0] = 1.0
    out = np.empty(n, dtype=np.int32)
    assert viterbi(E, n, T, out) == 1.0
    _, argmaxes, _ = brute_force(E, n, T, L)
    assert sorted(argmaxes) == [(0, 1), (1, 0)]
    assert tuple(out) in argmaxes
    assert tuple(out) == (1, 0)


# ---- 3. greedy ----------------------------------------------------------------------------
@pytest.mark.parametrize("second_order", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_greedy_vs_reference(second_order, reverse):
    rng = np.random.default_rng(200 + 2 * second_order + reverse)
    for _ in range(25):
        n, L = int(rng.integers(1, 8)), int(rng.integers(1, 5))
        E = rng.normal(size=(n + int(rng.integers(0, 3)), L))
        T = rng.normal(size=(L + 1, L + 1))
        T2 = rng.normal(size=(L + 1, L + 1, L)) if second_order else np.zeros((1, 1, 1))
        out = np.full(n + 1, -7, dtype=np.int32)
        greedy(E, n, T, T2, second_order, reverse, out)
        assert list(out[:n]) == ref_greedy(E, n, T, T2, second_order, reverse, L)
        assert out[n] == -7


@pytest.mark.parametrize("second_order", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_greedy_integer_ties_take_lowest_label(second_order, reverse):
    rng = np.random.default_rng(300 + 2 * second_order + reverse)
    for _ in range(15):
        n, L = int(rng.integers(1, 7)), int(rng.integers(1, 5))
        E = rng.integers(-1, 2, size=(n, L)).astype(float)
        T = rng.integers(-1, 2, size=(L + 1, L + 1)).astype(float)
        T2 = (rng.integers(-1, 2, size=(L + 1, L + 1, L)).astype(float) if second_order
              else np.zeros((1, 1, 1)))
        out = np.empty(n, dtype=np.int32)
        greedy(E, n, T, T2, second_order, reverse, out)
        assert list(out) == ref_greedy(E, n, T, T2, second_order, reverse, L)
    out = np.empty(4, dtype=np.int32)
    greedy(np.zeros((4, 3)), 4, np.zeros((4, 4)), np.zeros((4, 4, 3)), second_order, reverse, out)
    assert list(out) == [0, 0, 0, 0]


def test_greedy_uses_boundary_and_history():
    """Hand-checked: the start score T[L, .] and the trigram T2[L, L, .] drive the first
    decision; T2[two back, previous, current] the third."""
    L = 2
    E = np.zeros((3, L))
    T = np.zeros((L + 1, L + 1))
    T2 = np.zeros((L + 1, L + 1, L))
    T[L, 1] = 1.0           # start prefers 1
    T[1, 0] = 0.5           # after 1 prefer 0
    T2[1, 0, 1] = 2.0       # (1, 0) -> 1 in second order
    out = np.empty(3, dtype=np.int32)
    greedy(E, 3, T, T2, False, False, out)
    assert list(out) == [1, 0, 0]  # first order: after 0 all tie -> lowest label
    greedy(E, 3, T, T2, True, False, out)
    assert list(out) == [1, 0, 1]


# ---- 4. decode_corpus ---------------------------------------------------------------------
@pytest.mark.parametrize("config", [(0, False, False), (1, False, False), (1, False, True),
                                    (1, True, False), (1, True, True)])
def test_decode_corpus_vs_per_sentence(config):
    method, second_order, reverse = config
    rng = np.random.default_rng(400 + 4 * method + 2 * second_order + reverse)
    for _ in range(6):
        L, n_features = int(rng.integers(1, 5)), int(rng.integers(1, 12))
        offsets = random_offsets(rng, int(rng.integers(1, 7)), 5)
        offsets = np.insert(offsets, 1, 0)  # an empty first sentence as well
        n_tokens = int(offsets[-1])
        indptr, indices = random_csr(rng, n_tokens, n_features)
        W = rng.normal(size=(n_features, L))
        T = rng.normal(size=(L + 1, L + 1))
        T2 = rng.normal(size=(L + 1, L + 1, L)) if second_order else np.zeros((1, 1, 1))
        out = np.full(n_tokens, -1, dtype=np.int32)
        decode_corpus(indptr, indices, offsets, W, T, T2, method, second_order, reverse, out)
        expected = []
        for s in range(len(offsets) - 1):
            a, b = int(offsets[s]), int(offsets[s + 1])
            if a == b:
                continue
            E = [ref_emissions(indptr, indices, W, t) for t in range(a, b)]
            if method == 0:
                _, argmaxes, _ = brute_force(E, b - a, T, L)
                expected.extend(min(argmaxes, key=_tie_key))
            else:
                expected.extend(ref_greedy(E, b - a, T, T2, second_order, reverse, L))
        assert list(out) == expected


# ---- 5. structured_epoch ------------------------------------------------------------------
def _tiny_data(rng, n_sentences=6, n_features=10, L=3, max_len=5):
    offsets = random_offsets(rng, n_sentences, max_len, min_len=1)
    n_tokens = int(offsets[-1])
    indptr, indices = random_csr(rng, n_tokens, n_features, max_nnz=3)
    y = rng.integers(0, L, size=n_tokens).astype(np.int32)
    return indptr, indices, offsets, y


@pytest.mark.parametrize("seed", range(8))
def test_structured_epoch_vs_reference(seed):
    rng = np.random.default_rng(500 + seed)
    nF, L = 10, 3
    indptr, indices, offsets, y = _tiny_data(rng, n_features=nF, L=L)
    if seed % 2:  # start from an arbitrary integer state and counter
        W = rng.integers(-2, 3, size=(nF, L)).astype(float)
        U = rng.integers(-5, 6, size=(nF, L)).astype(float)
        T = rng.integers(-2, 3, size=(L + 1, L + 1)).astype(float)
        TU = rng.integers(-5, 6, size=(L + 1, L + 1)).astype(float)
        c = 7.0
    else:
        W, U = np.zeros((nF, L)), np.zeros((nF, L))
        T, TU = np.zeros((L + 1, L + 1)), np.zeros((L + 1, L + 1))
        c = 1.0
    if seed == 4:  # an empty sentence in the middle: skipped, not counted as an example
        offsets = np.insert(offsets, 3, offsets[2])
    order = (np.arange(len(offsets) - 1) if seed < 4
             else rng.permutation(len(offsets) - 1)).astype(np.int64)
    rW, rU, rT, rTU, rc = W.copy(), U.copy(), T.copy(), TU.copy(), c
    total_wrong = 0
    for _ in range(3):
        c, wrong = structured_epoch(Corpus(indptr, indices, offsets, y), order, FirstOrder(W, T),
                                    FirstOrder(U, TU), c)
        rW, rU, rT, rTU, rc, rwrong = ref_structured_epoch(indptr, indices, offsets, y, order,
                                                           rW, rU, rT, rTU, rc)
        assert wrong == rwrong
        assert c == rc
        np.testing.assert_array_equal(W, rW)
        np.testing.assert_array_equal(U, rU)
        np.testing.assert_array_equal(T, rT)
        np.testing.assert_array_equal(TU, rTU)
        total_wrong += wrong
    assert total_wrong > 0  # the comparison exercised updates


def _encoded(indptr, indices, offsets, y):
    return Encoded(indptr, indices, offsets, y)


def _literal_average(snapshots, n_slots):
    """Mean of the initial (zero) weights and the weights after every example."""
    return [sum(s[i] for s in snapshots) / (len(snapshots) + 1) for i in range(n_slots)]


@pytest.mark.parametrize("seed", range(3))
def test_averaged_perceptron_viterbi_is_literal_average(seed):
    """c starts at 1 and increments after each example; after N examples c = N+1 and
    W - U/c = (w_0 + w_1 + ... + w_N) / (N+1) with w_0 = 0 the initial weights and w_k the
    weights after the k-th example."""
    rng = np.random.default_rng(600 + seed)
    nF, L = 10, 3
    data = _encoded(*_tiny_data(rng, n_features=nF, L=L))
    learner = AveragedPerceptron(nF, L, "viterbi")
    rng_k, rng_r = np.random.default_rng(seed), np.random.default_rng(seed)
    W, T = np.zeros((nF, L)), np.zeros((L + 1, L + 1))
    U, TU, c = np.zeros_like(W), np.zeros_like(T), 1.0
    snapshots = []
    for _ in range(3):
        stats = learner.epoch(data, rng_k)
        order = rng_r.permutation(data.n_sentences)
        W, U, T, TU, c, wrong = ref_structured_epoch(data.indptr, data.indices, data.offsets,
                                                     data.y, order, W, U, T, TU, c, snapshots)
        assert stats["train_token_errors"] == wrong
    assert learner.c == len(snapshots) + 1 == 3 * data.n_sentences + 1
    np.testing.assert_array_equal(learner.w.W, W)
    np.testing.assert_array_equal(learner.w.T, T)
    avg = learner.averaged()
    aW, aT = _literal_average(snapshots, 2)
    np.testing.assert_allclose(avg.W, aW, rtol=0, atol=1e-12)
    np.testing.assert_allclose(avg.T, aT, rtol=0, atol=1e-12)
    assert not avg.second_order and avg.T2.shape == (1, 1, 1)
    assert np.abs(aW).sum() > 0


# ---- 6. greedy_epoch ----------------------------------------------------------------------
@pytest.mark.parametrize("second_order", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_greedy_epoch_vs_reference(second_order, reverse):
    rng = np.random.default_rng(700 + 2 * second_order + reverse)
    nF, L = 10, 3
    for case in range(4):
        indptr, indices, offsets, y = _tiny_data(rng, n_features=nF, L=L)
        shape2 = (L + 1, L + 1, L) if second_order else (1, 1, 1)
        if case % 2:
            W = rng.integers(-2, 3, size=(nF, L)).astype(float)
            T = rng.integers(-2, 3, size=(L + 1, L + 1)).astype(float)
            T2 = rng.integers(-2, 3, size=shape2).astype(float)
            U, TU, T2U = (rng.integers(-5, 6, size=A.shape).astype(float) for A in (W, T, T2))
            c = 5.0
        else:
            W, T, T2 = np.zeros((nF, L)), np.zeros((L + 1, L + 1)), np.zeros(shape2)
            U, TU, T2U = np.zeros_like(W), np.zeros_like(T), np.zeros_like(T2)
            c = 1.0
        order = (rng.permutation(len(offsets) - 1) if case >= 2
                 else np.arange(len(offsets) - 1)).astype(np.int64)
        ref = [A.copy() for A in (W, U, T, TU, T2, T2U)] + [c]
        total_wrong = 0
        for _ in range(3):
            c, wrong = greedy_epoch(indptr, indices, offsets, y, order, W, U, T, TU, T2, T2U,
                                    second_order, reverse, c)
            *ref, rwrong = ref_greedy_epoch(indptr, indices, offsets, y, order, *ref[:6],
                                            second_order, reverse, ref[6])
            assert wrong == rwrong
            assert c == ref[6]
            for got, exp in zip((W, U, T, TU, T2, T2U), ref[:6]):
                np.testing.assert_array_equal(got, exp)
            total_wrong += wrong
        assert total_wrong > 0


@pytest.mark.parametrize("second_order", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_averaged_perceptron_greedy_is_literal_average(second_order, reverse):
    rng = np.random.default_rng(800 + 2 * second_order + reverse)
    nF, L = 10, 3
    data = _encoded(*_tiny_data(rng, n_features=nF, L=L))
    learner = _learner(nF, L, "greedy", second_order, reverse)
    w, u = Weights.zeros(nF, L, second_order), Weights.zeros(nF, L, second_order)
    state = [w.W, u.W, w.T, u.T, w.T2, u.T2, 1.0]
    snapshots = []
    for _ in range(3):
        stats = learner.epoch(data, rng, shuffle=False)
        *state, wrong = ref_greedy_epoch(data.indptr, data.indices, data.offsets, data.y,
                                         np.arange(data.n_sentences), *state[:6],
                                         second_order, reverse, state[6], snapshots)
        assert stats["train_token_errors"] == wrong
    assert learner.c == len(snapshots) + 1 == 3 * data.n_tokens + 1
    avg = learner.averaged()
    aW, aT, aT2 = _literal_average(snapshots, 3)
    np.testing.assert_allclose(avg.W, aW, rtol=0, atol=1e-12)
    np.testing.assert_allclose(avg.T, aT, rtol=0, atol=1e-12)
    np.testing.assert_allclose(avg.T2, aT2, rtol=0, atol=1e-12)
    assert avg.second_order == second_order


def test_averaged_perceptron_rejects_bad_configs():
    with pytest.raises(ValueError):
        AveragedPerceptron(3, 2, "beam")
    with pytest.raises(ValueError):
        AveragedPerceptron(3, 2, "viterbi", second_order=True)


# ---- 7. learnability ----------------------------------------------------------------------
def _separable(rng, L=4, n_noise=6, n_sentences=20, max_len=6):
    """Token label = its indicator feature id (0..L-1); plus 2 noise features from L.."""
    offsets = random_offsets(rng, n_sentences, max_len, min_len=1)
    n_tokens = int(offsets[-1])
    y = rng.integers(0, L, size=n_tokens).astype(np.int32)
    rows = [[int(y[t])] + list(L + rng.choice(n_noise, size=2, replace=False)) for t in range(n_tokens)]
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.array([f for r in rows for f in r], dtype=np.int32)
    return Encoded(indptr, indices, offsets, y), L + n_noise, L


@pytest.mark.parametrize("config", [("viterbi", False, False), ("greedy", False, False),
                                    ("greedy", False, True), ("greedy", True, False),
                                    ("greedy", True, True)])
def test_learns_separable_problem(config):
    method, second_order, reverse = config
    data, nF, L = _separable(np.random.default_rng(900))
    learner = _learner(nF, L, method, second_order, reverse)
    rng = np.random.default_rng(0)
    errors = [learner.epoch(data, rng)["train_token_errors"] for _ in range(6)]
    assert errors[0] > 0 and 0 in errors, errors
    # after an epoch without mistakes no update happens any more, so the current weights decode
    # the training data exactly (for greedy: right at every step with the gold history means
    # decoding follows the gold path); the averaged weights are not guaranteed to be perfect
    method_id = 0 if method == "viterbi" else 1
    for weights, min_acc in ((learner.w, 1.0), (learner.averaged(), 0.95)):
        out = np.full(data.n_tokens, -1, dtype=np.int32)
        decode_corpus(data.indptr, data.indices, data.offsets, weights.W, weights.T, weights.T2,
                      method_id, second_order, reverse, out)
        assert np.mean(out == data.y) >= min_acc
