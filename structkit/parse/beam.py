"""Labelled arc-standard parsing with beam search (Zhang & Clark 2008) and rich non-local
features (Zhang & Nivre 2011), trained with the max-violation perceptron (Huang, Fayong & Guo
2012). Numba kernels over plain arrays.

Transitions (2L + 1 actions, L labels with ids 1..L, 0 = no label): SHIFT = 0; LEFT(l) = l
makes s1 a dependent of s0 with label l; RIGHT(l) = L + l makes s0 a dependent of s1. A parse
ends with an empty queue and one item on the stack, which gets head 0 and the root label.

A state is one int64 array S[N_ROWS, maxlen + 2] (rows below, indexed by token 1..n) plus the
stack size sp and the queue front b. Beam items are rows of a [B, N_ROWS, maxlen + 2] array;
expanding an item copies its parent's first n + 2 columns and applies one action.

Weights: one hashed table W[2^bits + 2L + 1] over (feature, action) pairs: a feature's 64-bit
hash f (a mix of its template id and atom values) gives the slot of action a as
(f & mask) + a, so the scores of all actions of one feature are one contiguous block (the
table is padded by 2L + 1 so no block wraps around).
"""
from __future__ import annotations

import numpy as np

from structkit.parse.arcstandard import is_final, legal  # noqa: F401 (the same system's rules; SHIFT = 0 here too)
from structkit.jit import njit

# rows of a state
ST, HD, LB, LC1, LC2, RC1, RC2, NL, NR, SL, SR = range(11)
N_ROWS = 11

# template groups (bit i of the ``groups`` mask switches group i on)
GROUPS = ("base", "labels", "valency", "distance", "labelset", "morph")
MAX_FEATS = 128


def group_mask(names) -> int:
    m = 0
    for g in names:
        if g not in GROUPS:
            raise ValueError(f"unknown template group {g!r}; the groups are {', '.join(GROUPS)}")
        m |= 1 << GROUPS.index(g)
    return m


# ---- the transition system ----------------------------------------------------------------
@njit
def reset(S, n):
    for r in range(N_ROWS):
        for i in range(n + 2):
            S[r, i] = 0
    for i in range(n + 2):
        S[HD, i] = -1


@njit
def apply(S, sp, b, a, L):
    """Apply action a in place; returns (sp, b)."""
    if a == 0:
        S[ST, sp] = b
        return sp + 1, b + 1
    s0 = S[ST, sp - 1]
    s1 = S[ST, sp - 2]
    if a <= L:  # LEFT(a): s1 <- s0; s1 is left of all earlier left children of s0
        lab = a
        S[HD, s1] = s0
        S[LB, s1] = lab
        S[LC2, s0] = S[LC1, s0]
        S[LC1, s0] = s1
        S[NL, s0] += 1
        S[SL, s0] |= 1 << (lab & 63)
        S[ST, sp - 2] = s0
        return sp - 1, b
    lab = a - L  # RIGHT(lab): s1 -> s0; s0 is right of all earlier right children of s1
    S[HD, s0] = s1
    S[LB, s0] = lab
    S[RC2, s1] = S[RC1, s1]
    S[RC1, s1] = s0
    S[NR, s1] += 1
    S[SR, s1] |= 1 << (lab & 63)
    return sp - 1, b


# ---- features -------------------------------------------------------------------------------
@njit
def _mix(h, v):
    h = (h ^ v) * np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64
    return h ^ ((h >> 31) & np.int64(0x1FFFFFFFF))


@njit
def _h(t, a, b, c):
    return _mix(_mix(_mix(_mix(np.int64(1469598103934665603), t), a), b), c)


@njit
def extract(S, sp, b, n, words, tags, lemmas, morph, base, groups, out):
    """The hashed features of a state into out; returns their number. Atoms: w/p = word/POS
    id, l = label of the arc to the parent, lc1/lc2/rc1/rc2 = (second) left-/rightmost child,
    vl/vr = number of left/right children, sl/sr = the set of left/right children's labels."""
    s0 = S[ST, sp - 1] if sp >= 1 else 0
    s1 = S[ST, sp - 2] if sp >= 2 else 0
    s2 = S[ST, sp - 3] if sp >= 3 else 0
    n0 = b if b <= n else 0
    n1 = b + 1 if b + 1 <= n else 0
    n2 = b + 2 if b + 2 <= n else 0
    # word/tag of token t, 0 if t == 0; "n + 1" plays none
    s0w = words[base + s0 - 1] if s0 else 0
    s0p = tags[base + s0 - 1] if s0 else 0
    s1w = words[base + s1 - 1] if s1 else 0
    s1p = tags[base + s1 - 1] if s1 else 0
    s2w = words[base + s2 - 1] if s2 else 0
    s2p = tags[base + s2 - 1] if s2 else 0
    n0w = words[base + n0 - 1] if n0 else 0
    n0p = tags[base + n0 - 1] if n0 else 0
    n1w = words[base + n1 - 1] if n1 else 0
    n1p = tags[base + n1 - 1] if n1 else 0
    n2w = words[base + n2 - 1] if n2 else 0
    n2p = tags[base + n2 - 1] if n2 else 0
    s0l1 = S[LC1, s0] if s0 else 0
    s0l2 = S[LC2, s0] if s0 else 0
    s0r1 = S[RC1, s0] if s0 else 0
    s0r2 = S[RC2, s0] if s0 else 0
    s1l1 = S[LC1, s1] if s1 else 0
    s1l2 = S[LC2, s1] if s1 else 0
    s1r1 = S[RC1, s1] if s1 else 0
    s1r2 = S[RC2, s1] if s1 else 0
    s0l1w = words[base + s0l1 - 1] if s0l1 else 0
    s0l1p = tags[base + s0l1 - 1] if s0l1 else 0
    s0l2w = words[base + s0l2 - 1] if s0l2 else 0
    s0l2p = tags[base + s0l2 - 1] if s0l2 else 0
    s0r1w = words[base + s0r1 - 1] if s0r1 else 0
    s0r1p = tags[base + s0r1 - 1] if s0r1 else 0
    s0r2w = words[base + s0r2 - 1] if s0r2 else 0
    s0r2p = tags[base + s0r2 - 1] if s0r2 else 0
    s1l1w = words[base + s1l1 - 1] if s1l1 else 0
    s1l1p = tags[base + s1l1 - 1] if s1l1 else 0
    s1l2p = tags[base + s1l2 - 1] if s1l2 else 0
    s1r1w = words[base + s1r1 - 1] if s1r1 else 0
    s1r1p = tags[base + s1r1 - 1] if s1r1 else 0
    s1r2p = tags[base + s1r2 - 1] if s1r2 else 0
    k = 0
    if groups & 1:  # base: Zhang & Nivre (2011) Table 1 single/pair/triple words, on s0-n0 and s1-s0
        s0wp = _h(1, s0w, s0p, 0)
        s1wp = _h(1, s1w, s1p, 0)
        n0wp = _h(1, n0w, n0p, 0)
        out[k] = _h(0, 0, 0, 0); k += 1  # bias
        out[k] = _h(2, s0wp, 0, 0); k += 1
        out[k] = _h(3, s0w, 0, 0); k += 1
        out[k] = _h(4, s0p, 0, 0); k += 1
        out[k] = _h(5, s1wp, 0, 0); k += 1
        out[k] = _h(6, s1w, 0, 0); k += 1
        out[k] = _h(7, s1p, 0, 0); k += 1
        out[k] = _h(8, n0wp, 0, 0); k += 1
        out[k] = _h(9, n0w, 0, 0); k += 1
        out[k] = _h(10, n0p, 0, 0); k += 1
        out[k] = _h(11, n1w, n1p, 0); k += 1
        out[k] = _h(12, n1w, 0, 0); k += 1
        out[k] = _h(13, n1p, 0, 0); k += 1
        out[k] = _h(14, n2w, n2p, 0); k += 1
        out[k] = _h(15, n2p, 0, 0); k += 1
        out[k] = _h(16, s2w, s2p, 0); k += 1
        out[k] = _h(17, s2p, 0, 0); k += 1
        # pairs s0-n0
        out[k] = _h(18, s0wp, n0wp, 0); k += 1
        out[k] = _h(19, s0wp, n0w, 0); k += 1
        out[k] = _h(20, s0w, n0wp, 0); k += 1
        out[k] = _h(21, s0wp, n0p, 0); k += 1
        out[k] = _h(22, s0p, n0wp, 0); k += 1
        out[k] = _h(23, s0w, n0w, 0); k += 1
        out[k] = _h(24, s0p, n0p, 0); k += 1
        out[k] = _h(25, n0p, n1p, 0); k += 1
        # pairs s1-s0 (the arc candidates of arc-standard)
        out[k] = _h(26, s0wp, s1wp, 0); k += 1
        out[k] = _h(27, s0wp, s1w, 0); k += 1
        out[k] = _h(28, s0w, s1wp, 0); k += 1
        out[k] = _h(29, s0wp, s1p, 0); k += 1
        out[k] = _h(30, s0p, s1wp, 0); k += 1
        out[k] = _h(31, s0w, s1w, 0); k += 1
        out[k] = _h(32, s0p, s1p, 0); k += 1
        # triples
        out[k] = _h(33, n0p, n1p, n2p); k += 1
        out[k] = _h(34, s0p, n0p, n1p); k += 1
        out[k] = _h(35, s1p, s0p, n0p); k += 1
        out[k] = _h(36, s2p, s1p, s0p); k += 1
        out[k] = _h(37, s0w, n0p, n1p); k += 1
        out[k] = _h(38, s1p, s0w, n0p); k += 1
        # children (first order)
        out[k] = _h(39, s0p, s0l1p, n0p); k += 1
        out[k] = _h(40, s0p, s0r1p, n0p); k += 1
        out[k] = _h(41, s1p, s0p, s0l1p); k += 1
        out[k] = _h(42, s1p, s0p, s0r1p); k += 1
        out[k] = _h(43, s1p, s1l1p, s0p); k += 1
        out[k] = _h(44, s1p, s1r1p, s0p); k += 1
        out[k] = _h(45, s1p, s1r1p, s0w); k += 1
        out[k] = _h(46, s1p, s0w, s0l1p); k += 1
        out[k] = _h(47, s0l1w, 0, 0); k += 1
        out[k] = _h(48, s0l1p, 0, 0); k += 1
        out[k] = _h(49, s0r1w, 0, 0); k += 1
        out[k] = _h(50, s0r1p, 0, 0); k += 1
        out[k] = _h(51, s1l1w, 0, 0); k += 1
        out[k] = _h(52, s1l1p, 0, 0); k += 1
        out[k] = _h(53, s1r1w, 0, 0); k += 1
        out[k] = _h(54, s1r1p, 0, 0); k += 1
        # second-order children
        out[k] = _h(55, s0l2w, 0, 0); k += 1
        out[k] = _h(56, s0l2p, 0, 0); k += 1
        out[k] = _h(57, s0r2w, 0, 0); k += 1
        out[k] = _h(58, s0r2p, 0, 0); k += 1
        out[k] = _h(59, s0p, s0l1p, s0l2p); k += 1
        out[k] = _h(60, s0p, s0r1p, s0r2p); k += 1
        out[k] = _h(61, s1p, s1l1p, s1l2p); k += 1
        out[k] = _h(62, s1p, s1r1p, s1r2p); k += 1
    if groups & 2:  # labels of the children
        s0l1l = S[LB, s0l1] if s0l1 else 0
        s0l2l = S[LB, s0l2] if s0l2 else 0
        s0r1l = S[LB, s0r1] if s0r1 else 0
        s0r2l = S[LB, s0r2] if s0r2 else 0
        s1l1l = S[LB, s1l1] if s1l1 else 0
        s1r1l = S[LB, s1r1] if s1r1 else 0
        out[k] = _h(70, s0l1l, 0, 0); k += 1
        out[k] = _h(71, s0l2l, 0, 0); k += 1
        out[k] = _h(72, s0r1l, 0, 0); k += 1
        out[k] = _h(73, s0r2l, 0, 0); k += 1
        out[k] = _h(74, s1l1l, 0, 0); k += 1
        out[k] = _h(75, s1r1l, 0, 0); k += 1
        out[k] = _h(76, s0p, s0l1l, s0l2l); k += 1
        out[k] = _h(77, s0p, s0r1l, s0r2l); k += 1
        out[k] = _h(78, s1p, s0p, s1r1l); k += 1
        out[k] = _h(79, s1p, s0p, s0l1l); k += 1
    if groups & 4:  # valency
        s0vl = S[NL, s0] if s0 else 0
        s0vr = S[NR, s0] if s0 else 0
        s1vl = S[NL, s1] if s1 else 0
        s1vr = S[NR, s1] if s1 else 0
        out[k] = _h(80, s0w, s0vr, 0); k += 1
        out[k] = _h(81, s0p, s0vr, 0); k += 1
        out[k] = _h(82, s0w, s0vl, 0); k += 1
        out[k] = _h(83, s0p, s0vl, 0); k += 1
        out[k] = _h(84, s1w, s1vr, 0); k += 1
        out[k] = _h(85, s1p, s1vr, 0); k += 1
        out[k] = _h(86, s1p, s1vl, 0); k += 1
        out[k] = _h(87, s1w, s1vl, 0); k += 1
    if groups & 8:  # distance
        d01 = s0 - s1 if (s0 and s1) else 0
        d01 = d01 if d01 < 5 else (5 if d01 < 10 else 6)
        d0n = n0 - s0 if (s0 and n0) else 0
        d0n = d0n if d0n < 5 else (5 if d0n < 10 else 6)
        out[k] = _h(90, s0w, d01, 0); k += 1
        out[k] = _h(91, s0p, d01, 0); k += 1
        out[k] = _h(92, s1w, d01, 0); k += 1
        out[k] = _h(93, s1p, d01, 0); k += 1
        out[k] = _h(94, _h(0, s0w, s1w, 0), d01, 0); k += 1
        out[k] = _h(95, s0p, s1p, d01); k += 1
        out[k] = _h(96, s0w, d0n, 0); k += 1
        out[k] = _h(97, s0p, n0p, d0n); k += 1
        out[k] = _h(98, _h(0, s0w, n0w, 0), d0n, 0); k += 1
    if groups & 16:  # label sets
        s0sl = S[SL, s0] if s0 else 0
        s0sr = S[SR, s0] if s0 else 0
        s1sl = S[SL, s1] if s1 else 0
        s1sr = S[SR, s1] if s1 else 0
        out[k] = _h(100, s0w, s0sr, 0); k += 1
        out[k] = _h(101, s0p, s0sr, 0); k += 1
        out[k] = _h(102, s0w, s0sl, 0); k += 1
        out[k] = _h(103, s0p, s0sl, 0); k += 1
        out[k] = _h(104, s1w, s1sr, 0); k += 1
        out[k] = _h(105, s1p, s1sr, 0); k += 1
        out[k] = _h(106, s1p, s1sl, 0); k += 1
    if groups & 32:  # lemma and FEATS of s0, s1, n0
        s0m = lemmas[base + s0 - 1] if s0 else 0
        s1m = lemmas[base + s1 - 1] if s1 else 0
        n0m = lemmas[base + n0 - 1] if n0 else 0
        s0f = morph[base + s0 - 1] if s0 else 0
        s1f = morph[base + s1 - 1] if s1 else 0
        n0f = morph[base + n0 - 1] if n0 else 0
        out[k] = _h(110, s0m, 0, 0); k += 1
        out[k] = _h(111, n0m, 0, 0); k += 1
        out[k] = _h(112, s1m, 0, 0); k += 1
        out[k] = _h(113, s0m, s1m, 0); k += 1
        out[k] = _h(114, s0m, n0m, 0); k += 1
        out[k] = _h(115, s0p, s0f, 0); k += 1
        out[k] = _h(116, n0p, n0f, 0); k += 1
        out[k] = _h(117, s1p, s1f, 0); k += 1
        out[k] = _h(118, s0f, s1f, 0); k += 1
    return k


@njit
def action_scores(feats, k, W, mask, sp, b, n, n_actions, out):
    """out[a] = sum of W[(f & mask) + a] over the first k features f, for legal a (-inf else)."""
    for a in range(n_actions):
        out[a] = 0.0
    can_shift = b <= n
    can_arc = sp >= 2
    lo = 0 if can_shift else 1
    hi = n_actions if can_arc else 1
    for i in range(k):
        f = feats[i] & mask
        for a in range(lo, hi):
            out[a] += W[f + a]
    if not can_shift:
        out[0] = -np.inf
    if not can_arc:
        for a in range(1, n_actions):
            out[a] = -np.inf


# ---- beam search ----------------------------------------------------------------------------
@njit
def _insert(topv, topp, topa, size, B, v, p, a):
    """Keep the B best (v, parent, action) in descending order; returns the new size. Ties
    keep the earlier candidate first."""
    if size == B and v <= topv[size - 1]:
        return size
    j = size if size < B else B - 1
    while j > 0 and topv[j - 1] < v:
        topv[j] = topv[j - 1]
        topp[j] = topp[j - 1]
        topa[j] = topa[j - 1]
        j -= 1
    topv[j] = v
    topp[j] = p
    topa[j] = a
    return size + 1 if size < B else size


@njit
def _copy(src, dst, n):
    for r in range(N_ROWS):
        for i in range(n + 2):
            dst[r, i] = src[r, i]


@njit
def beam_search(words, tags, lemmas, morph, base, n, W, mask, L, groups, B,
                cur, nxt, hist_p, hist_a, scores_out, gold, track, D=0, K=0):
    """Beam search over the 2n - 1 actions of a sentence. Returns (final beam size, tmax, jmax,
    gold_scores filled) where, when ``track`` (training), gold is the oracle's action sequence
    and tmax is the step of maximum violation (-1: none) with jmax the violating item (0: the
    top). hist_p/hist_a[t, j] are the parent and action of item j after step t. The best final
    item is cur[0] on return (the arrays are swapped internally an even/odd number of times,
    so the kernel copies it there). scores_out[t] gets the gold prefix score after step t.

    D > 0: lookahead inside the beam. The K best candidates (item, action) by path score are
    re-ranked by path score + the best sum of the next D action scores from the state after
    the candidate (:func:`lookahead_value`), and the B best by that are kept; the stored path
    score stays the plain sum of action scores. D = 0 is plain beam search."""
    n_actions = 2 * L + 1
    T = 2 * n - 1
    feats = np.zeros(MAX_FEATS, dtype=np.int64)
    sc = np.zeros(n_actions, dtype=np.float32)  # float32 sums: twice the SIMD width
    topv = np.zeros(B)
    topp = np.zeros(B, dtype=np.int64)
    topa = np.zeros(B, dtype=np.int64)
    bsp = np.zeros(B, dtype=np.int64)
    bb = np.zeros(B, dtype=np.int64)
    bscore = np.zeros(B)
    bgold = np.zeros(B, dtype=np.bool_)
    nsp = np.zeros(B, dtype=np.int64)
    nb = np.zeros(B, dtype=np.int64)
    nscore = np.zeros(B)
    ngold = np.zeros(B, dtype=np.bool_)
    KK = max(K, B) if D > 0 else 1
    kv = np.zeros(KK)
    kp = np.zeros(KK, dtype=np.int64)
    ka = np.zeros(KK, dtype=np.int64)
    lv = np.zeros(B)
    lc = np.zeros(B, dtype=np.int64)
    la = np.zeros(B, dtype=np.int64)
    look = np.zeros((D + 1, N_ROWS, n + 2), dtype=np.int64)
    lsc = np.zeros((D + 1, n_actions), dtype=np.float32)
    reset(cur[0], n)
    bsp[0] = 0
    bb[0] = 1
    bscore[0] = 0.0
    bgold[0] = True
    size = 1
    # the gold path, followed separately when training
    G = np.zeros((N_ROWS, n + 2), dtype=np.int64)
    reset(G, n)
    gsp = 0
    gb = 1
    gscore = 0.0
    tmax = -1
    vmax = -np.inf
    A = cur
    Bn = nxt
    for t in range(T):
        m = 0
        if D == 0:
            for i in range(size):
                k = extract(A[i], bsp[i], bb[i], n, words, tags, lemmas, morph, base, groups, feats)
                action_scores(feats, k, W, mask, bsp[i], bb[i], n, n_actions, sc)
                for a in range(n_actions):
                    if sc[a] > -np.inf:
                        m = _insert(topv, topp, topa, m, B, bscore[i] + sc[a], i, a)
        else:
            mk = 0
            for i in range(size):
                k = extract(A[i], bsp[i], bb[i], n, words, tags, lemmas, morph, base, groups, feats)
                action_scores(feats, k, W, mask, bsp[i], bb[i], n, n_actions, sc)
                for a in range(n_actions):
                    if sc[a] > -np.inf:
                        mk = _insert(kv, kp, ka, mk, KK, bscore[i] + sc[a], i, a)
            for c in range(mk):  # re-rank the K best by path score + depth-D lookahead
                p = kp[c]
                _copy(A[p], look[0], n)
                sp1, b1 = apply(look[0], bsp[p], bb[p], ka[c], L)
                h = lookahead_value(look, lsc, feats, sp1, b1, n, words, tags, lemmas, morph,
                                    base, W, mask, L, groups, D)
                m = _insert(lv, lc, la, m, B, kv[c] + h, c, 0)
            for j in range(m):
                c = lc[j]
                topv[j] = kv[c]
                topp[j] = kp[c]
                topa[j] = ka[c]
        for j in range(m):
            p = topp[j]
            a = topa[j]
            _copy(A[p], Bn[j], n)
            nsp[j], nb[j] = apply(Bn[j], bsp[p], bb[p], a, L)
            nscore[j] = topv[j]
            ngold[j] = track and bgold[p] and a == gold[t]
            hist_p[t, j] = p
            hist_a[t, j] = a
        size = m
        for j in range(m):
            bsp[j] = nsp[j]
            bb[j] = nb[j]
            bscore[j] = nscore[j]
            bgold[j] = ngold[j]
        A, Bn = Bn, A
        if track:
            k = extract(G, gsp, gb, n, words, tags, lemmas, morph, base, groups, feats)
            g = gold[t]
            s = 0.0
            for i in range(k):
                s += W[(feats[i] & mask) + g]
            gscore += s
            gsp, gb = apply(G, gsp, gb, g, L)
            scores_out[t] = gscore
            if not bgold[0]:
                v = bscore[0] - gscore
                if v >= vmax:
                    vmax = v
                    tmax = t
    if T % 2 == 1:  # A is nxt: bring the best final item to cur[0]
        _copy(A[0], cur[0], n)
    return tmax, bsp[0]


@njit
def lookahead_value(look, lsc, feats, sp, b, n, words, tags, lemmas, morph, base, W, mask, L,
                    groups, D):
    """The best sum of the scores of at most D legal actions from the state look[0] (sp, b):
    max over action sequences of length D (shorter only where a final state ends them) of the
    sum of their scores; 0 for a final state or D = 0. Depth-first over look[1:], lsc[d] the
    action scores at depth d."""
    if D == 0 or is_final(sp, b, n):
        return 0.0
    n_actions = 2 * L + 1
    dsp = np.zeros(D + 1, dtype=np.int64)
    db = np.zeros(D + 1, dtype=np.int64)
    nexta = np.zeros(D + 1, dtype=np.int64)
    acc = np.zeros(D + 1)
    best = -np.inf
    dsp[0] = sp
    db[0] = b
    k = extract(look[0], sp, b, n, words, tags, lemmas, morph, base, groups, feats)
    action_scores(feats, k, W, mask, sp, b, n, n_actions, lsc[0])
    nexta[0] = 0
    acc[0] = 0.0
    d = 0
    while d >= 0:
        a = nexta[d]
        if a >= n_actions:
            d -= 1
            continue
        nexta[d] = a + 1
        s = lsc[d, a]
        if s == -np.inf:
            continue
        v = acc[d] + s
        if d + 1 == D:
            if v > best:
                best = v
            continue
        _copy(look[d], look[d + 1], n)
        sp2, b2 = apply(look[d + 1], dsp[d], db[d], a, L)
        if is_final(sp2, b2, n):
            if v > best:
                best = v
            continue
        d += 1
        dsp[d] = sp2
        db[d] = b2
        acc[d] = v
        nexta[d] = 0
        k = extract(look[d], sp2, b2, n, words, tags, lemmas, morph, base, groups, feats)
        action_scores(feats, k, W, mask, sp2, b2, n, n_actions, lsc[d])
    return best


@njit
def _path(hist_p, hist_a, t, j, out):
    """The actions of item j after step t, from the back pointers, into out[:t + 1]."""
    for s in range(t, -1, -1):
        out[s] = hist_a[s, j]
        j = hist_p[s, j]


@njit
def _update(words, tags, lemmas, morph, base, n, W, U, mask, L, groups, acts, T, sign, c):
    """W += sign * phi(acts[:T]) (U += sign * c * phi), replaying the actions from the start."""
    S = np.zeros((N_ROWS, n + 2), dtype=np.int64)
    reset(S, n)
    feats = np.zeros(MAX_FEATS, dtype=np.int64)
    sp = 0
    b = 1
    for t in range(T):
        a = acts[t]
        k = extract(S, sp, b, n, words, tags, lemmas, morph, base, groups, feats)
        for i in range(k):
            h = (feats[i] & mask) + a
            W[h] += sign
            U[h] += sign * c
        sp, b = apply(S, sp, b, a, L)


@njit
def beam_epoch(offsets, words, tags, lemmas, morph, gold_actions, order, trainable, W, U, mask,
               L, groups, B, c, D=0, K=0):
    """One epoch of max-violation perceptron training. gold_actions holds each sentence's
    2n - 1 oracle actions at 2 * offsets[s] - s. Returns (c, updates, final-state errors)."""
    maxlen = 1
    for s in range(len(offsets) - 1):
        maxlen = max(maxlen, offsets[s + 1] - offsets[s])
    cur = np.zeros((B, N_ROWS, maxlen + 2), dtype=np.int64)
    nxt = np.zeros((B, N_ROWS, maxlen + 2), dtype=np.int64)
    hist_p = np.zeros((2 * maxlen, B), dtype=np.int64)
    hist_a = np.zeros((2 * maxlen, B), dtype=np.int64)
    gscores = np.zeros(2 * maxlen)
    path = np.zeros(2 * maxlen, dtype=np.int64)
    updates = 0
    for s in order:
        if not trainable[s]:
            continue
        base = offsets[s]
        n = offsets[s + 1] - base
        g0 = 2 * base - s
        gold = gold_actions[g0:g0 + 2 * n - 1]
        tmax, _ = beam_search(words, tags, lemmas, morph, base, n, W, mask, L, groups, B,
                              cur, nxt, hist_p, hist_a, gscores, gold, True, D, K)
        if tmax >= 0:
            updates += 1
            _path(hist_p, hist_a, tmax, 0, path)
            _update(words, tags, lemmas, morph, base, n, W, U, mask, L, groups, gold, tmax + 1, 1.0, c)
            _update(words, tags, lemmas, morph, base, n, W, U, mask, L, groups, path, tmax + 1, -1.0, c)
        c += 1.0
    return c, updates


@njit
def beam_parse_corpus(offsets, words, tags, lemmas, morph, W, mask, L, groups, B, root_label,
                      heads_out, labels_out, D=0, K=0):
    """Parse every sentence; writes heads (0 = root) and label ids into the outputs."""
    maxlen = 1
    for s in range(len(offsets) - 1):
        maxlen = max(maxlen, offsets[s + 1] - offsets[s])
    cur = np.zeros((B, N_ROWS, maxlen + 2), dtype=np.int64)
    nxt = np.zeros((B, N_ROWS, maxlen + 2), dtype=np.int64)
    hist_p = np.zeros((2 * maxlen, B), dtype=np.int64)
    hist_a = np.zeros((2 * maxlen, B), dtype=np.int64)
    gscores = np.zeros(2 * maxlen)
    nogold = np.zeros(2 * maxlen, dtype=np.int64)
    for s in range(len(offsets) - 1):
        base = offsets[s]
        n = offsets[s + 1] - base
        if n == 0:
            continue
        beam_search(words, tags, lemmas, morph, base, n, W, mask, L, groups, B,
                    cur, nxt, hist_p, hist_a, gscores, nogold, False, D, K)
        S = cur[0]
        root = S[ST, 0]
        S[HD, root] = 0
        S[LB, root] = root_label
        for i in range(1, n + 1):
            heads_out[base + i - 1] = S[HD, i]
            labels_out[base + i - 1] = S[LB, i]


@njit
def hash_slots(t, atoms, mask, out):
    """out[i] = the first slot (action 0's) of template t's feature with the atom values
    atoms[i, :3] (the hash ``extract`` computes, masked; unused atoms 0): naming hashed
    weights (``structkit dump``)."""
    for i in range(atoms.shape[0]):
        out[i] = _h(t, atoms[i, 0], atoms[i, 1], atoms[i, 2]) & mask
