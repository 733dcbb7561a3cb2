"""The linear-chain model of sequence labelling: its weights, its joint feature vector F(x, y),
the differences dF(y) = F(x, y_gold) - F(x, y) the learners update with, and the Hamming loss.

Every chain learner (``structkit.learn``: perceptron, lookahead, k-best, SMO, LaRank, OLaRank)
uses these pieces; the decoders (``structkit.sequence.search``) score with the same weights. This module
sits below both, so neither imports the other for them.

Weights, one type per model variant (namedtuples of arrays, so numba kernels take them whole):

* ``FirstOrder(W, T)``: emissions W[n_features, L] and transitions T[L+1, L+1], index L being
  the sentence boundary (T[L, y] start, T[y, L] end).
* ``SecondOrder(W, T, T2)``: plus label-trigram transitions T2[L+1, L+1, L].
* ``GreedyHistory(W, H)``: emissions and the history weights H[K, L+1, L] of the order-K
  greedy models of Bordes et al. (2008), H[s-1, h, y] for label h s positions back (L = none).

A model file (``structkit.sequence.task``) stores every model as the arrays W, T, T2, H; a
variant without some of them reads them as the placeholders the files have always held
(``T2`` of shape (1, 1, 1), ``H`` of shape (0, 1, 1), ``T`` all zero for a history model), and
``Weights(W, T, T2, H)`` turns stored arrays back into the variant, so files keep one layout.

The joint feature vector: F(x, y) counts each CSR feature id of token t conjoined with y_t
(W[f, y_t]) and every label bigram including the start T[L, y_0] and end T[y_{n-1}, L]. Kernels
read a sentence of a ``Corpus`` (CSR features ``indptr``/``indices``, sentence ``offsets``, gold
label ids ``y``) as its first token a and length n. dF is handled sparsely: only tokens whose
label differs contribute emissions (gold +1, other -1 per feature occurrence, so duplicate ids
count twice), only bigrams that differ contribute transitions. The sorted sparse form
(``sparse_dF``) keys emissions f * L + label and transitions n_features * L + p * (L + 1) + q.

Averaging (``Averaged``): alongside the weights w keep u += c * update, c counting examples
seen from 1; the average of all intermediate weight vectors is w - u / c.

Nothing is compiled at import (``structkit.jit``).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.jit import njit

# ---- arrays that travel together through the kernels ---------------------------------------
Corpus = namedtuple("Corpus", ["indptr", "indices", "offsets", "y"])
Corpus.__doc__ = "An encoded corpus as kernels take it: CSR features, sentence offsets, gold ids."

WorkingSets = namedtuple("WorkingSets", ["seq", "beta", "m"])
WorkingSets.__doc__ = """Per-example working sets of label sequences (k-best SDM / LaRank,
OLaRankExact): seq[N, cap, maxlen] int32 (the gold at index 0), their dual coefficients
beta[N, cap] and sizes m[N]."""

SparseStack = namedtuple("SparseStack", ["keys", "vals", "ptr", "losses"])
SparseStack.__doc__ = """m sparse vectors concatenated: vector j is keys/vals[ptr[j]:ptr[j+1]]
(``sparse_dF`` key space), with its loss losses[j]."""


def corpus(data) -> Corpus:
    """The kernels' view of an ``Encoded`` corpus (label ids as int32)."""
    return Corpus(data.indptr, data.indices, data.offsets, data.y.astype(np.int32))


# ---- weights ---------------------------------------------------------------------------------
class FirstOrder(namedtuple("FirstOrder", ["W", "T"])):
    """Emissions W[n_features, L] and first-order transitions T[L+1, L+1]."""

    __slots__ = ()
    second_order = False

    @property
    def T2(self) -> np.ndarray:
        """No label trigrams: the (1, 1, 1) placeholder model files store."""
        return np.zeros((1, 1, 1))

    @property
    def H(self) -> np.ndarray:
        """No label history weights: the (0, 1, 1) placeholder model files store."""
        return np.zeros((0, 1, 1))


class SecondOrder(namedtuple("SecondOrder", ["W", "T", "T2"])):
    """Emissions W, transitions T and label-trigram transitions T2[L+1, L+1, L]."""

    __slots__ = ()
    second_order = True

    @property
    def H(self) -> np.ndarray:
        """No label history weights: the (0, 1, 1) placeholder model files store."""
        return np.zeros((0, 1, 1))


class GreedyHistory(namedtuple("GreedyHistory", ["W", "H"])):
    """Emissions W and history weights H[K, L+1, L] of an order-K greedy model."""

    __slots__ = ()
    second_order = False

    @property
    def T(self) -> np.ndarray:
        """No transitions: the all-zero T[L+1, L+1] model files store."""
        L = self.W.shape[1]
        return np.zeros((L + 1, L + 1))

    @property
    def T2(self) -> np.ndarray:
        """No label trigrams: the (1, 1, 1) placeholder model files store."""
        return np.zeros((1, 1, 1))


ChainWeights = FirstOrder | SecondOrder | GreedyHistory


def zeros(n_features: int, n_labels: int, second_order: bool = False) -> FirstOrder | SecondOrder:
    """All-zero first- (or second-) order weights."""
    L = n_labels
    W = np.zeros((n_features, L))
    T = np.zeros((L + 1, L + 1))
    if second_order:
        return SecondOrder(W, T, np.zeros((L + 1, L + 1, L)))
    return FirstOrder(W, T)


def from_arrays(W: np.ndarray, T: np.ndarray, T2: np.ndarray | None = None,
                H: np.ndarray | None = None) -> ChainWeights:
    """The variant stored as the model-file arrays W, T, T2, H (absent or placeholder arrays
    mark what the variant does not have: history weights when H has rows, label trigrams when
    T2 is larger than (1, 1, 1))."""
    if H is not None and H.shape[0] > 0:
        if np.any(T) or (T2 is not None and T2.shape[0] > 1):
            raise ValueError("a history model has no transitions")
        return GreedyHistory(W, H)
    if T2 is not None and T2.shape[0] > 1:
        return SecondOrder(W, T, T2)
    return FirstOrder(W, T)


class Weights:
    """``Weights(W, T, T2, H)``: the model variant of a model file's arrays (``from_arrays``);
    ``Weights.zeros(n_features, n_labels, second_order)``: zero weights."""

    def __new__(cls, W: np.ndarray, T: np.ndarray, T2: np.ndarray | None = None,
                H: np.ndarray | None = None) -> ChainWeights:  # type: ignore[misc]
        return from_arrays(W, T, T2, H)

    zeros = staticmethod(zeros)


def _minus_over(a: np.ndarray, b: np.ndarray, c: float) -> np.ndarray:
    """``a - b / c``: b / c rounded, then subtracted from a, as numpy computes the expression."""
    out = np.divide(b, c)
    np.subtract(a, out, out=out)
    return out


class Averaged:
    """Weights w, their accumulator u and the example counter c of an averaged online learner;
    the average of all intermediate weight vectors is w - u / c."""

    def __init__(self, n_features: int, n_labels: int, second_order: bool = False):
        self.w = zeros(n_features, n_labels, second_order)
        self.u = zeros(n_features, n_labels, second_order)
        self.c = 1.0

    def averaged(self) -> FirstOrder | SecondOrder:
        """w - u / c, array by array, in one new array each (the same numbers as ``a - b / c``
        without its temporary: a 2^20-row table is 32 MB)."""
        c = self.c
        return type(self.w)(*(_minus_over(a, b, c) for a, b in zip(self.w, self.u)))

    @staticmethod
    def order(data, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
        """The sentence order of one epoch: a seeded permutation, or file order."""
        return rng.permutation(data.n_sentences) if shuffle else np.arange(data.n_sentences)


def with_T2(w: FirstOrder | SecondOrder) -> SecondOrder:
    """w as the SecondOrder tuple the lookahead kernels take (a first-order model brings the
    placeholder T2, which they never read or write)."""
    return w if isinstance(w, SecondOrder) else SecondOrder(w.W, w.T, w.T2)


# ---- loss and joint features (numba) -------------------------------------------------------
@njit
def hamming(y, a, n, seq):
    """Hamming loss of seq[:n] against the gold labels y[a:a+n]."""
    d = 0
    for t in range(n):
        if seq[t] != y[a + t]:
            d += 1
    return d


@njit
def transition_pairs(y, a, seq, t, n, L):
    """The label bigrams entering position t (0..n, n = the end) of a sentence of n tokens
    starting at y[a], for the gold labels y and another labelling seq[:n]; L = boundary.
    Returns (gold previous, gold current, other previous, other current)."""
    gp = y[a + t - 1] if t > 0 else L
    gc = y[a + t] if t < n else L
    pp = seq[t - 1] if t > 0 else L
    pc = seq[t] if t < n else L
    return gp, gc, pp, pc


@njit
def add_features(X, t, W, U, label, v, cv):
    """W[f, label] += v and U[f, label] += cv for every feature f of token t."""
    for j in range(X.indptr[t], X.indptr[t + 1]):
        f = X.indices[j]
        W[f, label] += v
        U[f, label] += cv


@njit
def w_dot_dF(X, a, n, seq, w):
    """w . dF(seq) = w . (F(x, y_gold) - F(x, seq)) for the sentence at tokens a..a+n-1."""
    W, T, y = w.W, w.T, X.y
    L = W.shape[1]
    s = 0.0
    for t in range(n):
        g = y[a + t]
        p = seq[t]
        if g != p:
            for j in range(X.indptr[a + t], X.indptr[a + t + 1]):
                f = X.indices[j]
                s += W[f, g] - W[f, p]
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            s += T[gp, gc] - T[pp, pc]
    return s


@njit
def apply_dF(X, a, n, seq, w, u, d, cd):
    """w += d * dF(seq) and u += cd * dF(seq) (first-order weights)."""
    W, U, T, TU, y = w.W, u.W, w.T, u.T, X.y
    L = W.shape[1]
    for t in range(n):
        g = y[a + t]
        p = seq[t]
        if g != p:  # the gold label's cells, then the other's (never the same cell: g != p)
            add_features(X, a + t, W, U, g, d, cd)
            add_features(X, a + t, W, U, p, -d, -cd)
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            T[gp, gc] += d
            TU[gp, gc] += cd
            T[pp, pc] -= d
            TU[pp, pc] -= cd


@njit
def sparse_dF(X, a, n, seq, n_features, L):
    """dF(seq) as sorted unique keys (int64) and their non-zero values (``sparse_dF`` keys:
    f * L + label for emissions, n_features * L + p * (L + 1) + q for transitions)."""
    indptr, indices, y = X.indptr, X.indices, X.y
    m = 0
    for t in range(n):
        if seq[t] != y[a + t]:
            m += 2 * (indptr[a + t + 1] - indptr[a + t])
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            m += 2
    keys = np.empty(m, dtype=np.int64)
    vals = np.empty(m)
    i = 0
    for t in range(n):
        g = y[a + t]
        p = seq[t]
        if g != p:
            for j in range(indptr[a + t], indptr[a + t + 1]):
                f = np.int64(indices[j])
                keys[i] = f * L + g
                vals[i] = 1.0
                keys[i + 1] = f * L + p
                vals[i + 1] = -1.0
                i += 2
    base = np.int64(n_features) * L
    for t in range(n + 1):
        gp, gc, pp, pc = transition_pairs(y, a, seq, t, n, L)
        if gp != pp or gc != pc:
            keys[i] = base + gp * (L + 1) + gc
            vals[i] = 1.0
            keys[i + 1] = base + pp * (L + 1) + pc
            vals[i + 1] = -1.0
            i += 2
    # repeated keys (a feature twice on a token, a repeated bigram) accumulate before use
    o = np.argsort(keys, kind="mergesort")
    ok = np.empty(m, dtype=np.int64)
    ov = np.empty(m)
    q = 0
    i = 0
    while i < m:
        key = keys[o[i]]
        v = 0.0
        while i < m and keys[o[i]] == key:
            v += vals[o[i]]
            i += 1
        if v != 0.0:
            ok[q] = key
            ov[q] = v
            q += 1
    return ok[:q], ov[:q]


@njit
def sparse_dot(k1, v1, k2, v2):
    """Dot product of two sorted-unique sparse vectors (merge)."""
    i = 0
    j = 0
    s = 0.0
    while i < k1.shape[0] and j < k2.shape[0]:
        if k1[i] == k2[j]:
            s += v1[i] * v2[j]
            i += 1
            j += 1
        elif k1[i] < k2[j]:
            i += 1
        else:
            j += 1
    return s


@njit
def dF_dot(X, a, n, seq1, seq2, n_features, L):
    """dF(seq1) . dF(seq2), exactly from the sparse forms (seq1 is seq2 gives ||dF||^2)."""
    k1, v1 = sparse_dF(X, a, n, seq1, n_features, L)
    k2, v2 = sparse_dF(X, a, n, seq2, n_features, L)
    return sparse_dot(k1, v1, k2, v2)


@njit
def w_dot_sparse(keys, vals, w):
    """w . v for a sparse vector v in the key space of ``sparse_dF`` (first-order w)."""
    W, T = w.W, w.T
    L = W.shape[1]
    base = np.int64(W.shape[0]) * L
    s = 0.0
    for i in range(keys.shape[0]):
        key = keys[i]
        if key < base:
            s += W[key // L, key % L] * vals[i]
        else:
            r = key - base
            s += T[r // (L + 1), r % (L + 1)] * vals[i]
    return s


@njit
def add_sparse(keys, vals, w, d):
    """w += d * v for a sparse vector v in the key space of ``sparse_dF`` (first-order w)."""
    W, T = w.W, w.T
    L = W.shape[1]
    base = np.int64(W.shape[0]) * L
    for i in range(keys.shape[0]):
        key = keys[i]
        if key < base:
            W[key // L, key % L] += d * vals[i]
        else:
            r = key - base
            T[r // (L + 1), r % (L + 1)] += d * vals[i]


# ---- the SMO pair step -----------------------------------------------------------------------
@njit
def smo_pair_step(beta, lo, hi, gap, den):
    """The clipped analytic SMO step (Mancev & Todorovic eq. 20; Bordes et al. 2008, Sec. 5.1)
    on the dual coefficients beta of one example: moves delta = min(beta[hi], gap / den) from
    beta[hi] to beta[lo], with gap = g[hi] - g[lo] > 0 the gradient difference and
    den = ||dF_lo - dF_hi||^2. Returns delta.

    The lower clip -beta[lo] never binds since delta > 0; when den == 0 the objective is linear
    along the pair and delta = beta[hi]. The caller moves w by delta (dF_lo - dF_hi)."""
    if den > 0.0:
        delta = min(beta[hi], gap / den)
    else:
        delta = beta[hi]
    beta[lo] += delta
    # exactly 0 when the whole coefficient moved (no rounding residue keeps a support vector)
    if delta == beta[hi]:
        beta[hi] = 0.0
    else:
        beta[hi] -= delta
    return delta
