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

Features: the templates are one table, ``TEMPLATES`` (id, group, atom names), which
``extract``, ``structkit dump`` (:mod:`structkit.parse.dump`) and tests/parse/test_beam_features.py
read. ``extract`` computes a state's atoms once (``_atoms``, named by ``ATOMS``) and hashes
each switched-on template's atoms in table order (the table unrolled by
:func:`structkit.parse.templates.unroll`).

The kernels take bundled arguments (namedtuples of arrays, as :mod:`structkit.parse.arcstandard`):
``Corpus`` (the encoded sentences), ``Sentence`` (one of them), ``Model`` (weights and feature
settings), ``Search`` (beam width and lookahead) and ``Beams`` (the search's scratch).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.parse.arcstandard import is_final, legal, max_length, span  # noqa: F401 (the same system's rules; SHIFT = 0 here too)
from structkit.jit import njit, prefetch
from structkit.parse.templates import unroll

# rows of a state
ST, HD, LB, LC1, LC2, RC1, RC2, NL, NR, SL, SR = range(11)
N_ROWS = 11

# template groups (bit i of the ``groups`` mask switches group i on)
GROUPS = ("base", "labels", "valency", "distance", "labelset", "morph")
# One more group, apart: "clusters" reads the word clusters of pretrained vectors (--vectors),
# which only a model trained with them holds (``CLUSTER_TEMPLATES``); its bit comes after GROUPS'.
CLUSTERS = "clusters"
CLUSTER_BIT = 1 << len(GROUPS)
MAX_FEATS = 128


def group_mask(names) -> int:
    m = 0
    for g in names:
        if g == CLUSTERS:
            m |= CLUSTER_BIT
            continue
        if g not in GROUPS:
            raise ValueError(f"unknown template group {g!r}; the groups are {', '.join(GROUPS)}, {CLUSTERS}")
        m |= 1 << GROUPS.index(g)
    return m


# ---- arrays that travel together through the kernels -----------------------------------------
# the clusters columns of a corpus without word clusters: none (``_cluster`` reads 0)
NO_CLUSTERS = np.zeros((0, 3), dtype=np.int64)

Corpus = namedtuple("Corpus", ["offsets", "words", "tags", "lemmas", "morph", "clusters"],
                    defaults=(NO_CLUSTERS,))
Corpus.__doc__ = """Encoded sentences (``LabelledParser.encode``): sentence s is tokens
offsets[s]..offsets[s + 1] - 1 of the word/POS/lemma/FEATS id columns and the rows of the
word-cluster array (tokens x 3, ``cluster_row``: each token's clusters of pretrained vectors;
no rows without)."""

Sentence = namedtuple("Sentence", ["words", "tags", "lemmas", "morph", "base", "n", "clusters"],
                      defaults=(NO_CLUSTERS,))
Sentence.__doc__ = """One sentence as the feature kernels read it: the corpus columns, its first
token ``base`` (token i at ``words[base + i - 1]``) and its length n."""

Model = namedtuple("Model", ["W", "U", "mask", "L", "groups"])
Model.__doc__ = """Hashed weights W[mask + 1 + 2L + 1] (float32), their averaging accumulator U
(any float32 array when only parsing), the hash mask, the number of labels L and the template
groups' bit mask."""

Search = namedtuple("Search", ["B", "D", "K"])
Search.__doc__ = """Beam width B; lookahead depth D inside the beam (0: plain beam search) and
the number K of candidates it re-ranks."""

Beams = namedtuple("Beams", ["cur", "nxt", "hist_p", "hist_a", "gscores"])
Beams.__doc__ = """Scratch of ``beam_search`` for sentences up to maxlen tokens: two beams of
states [B, N_ROWS, maxlen + 2], the back pointers (parent, action)[2 maxlen, B] and the gold
prefix scores [2 maxlen]."""


# ---- feature templates: the one table ------------------------------------------------------
# The items templates read: the stack's top three, the queue's first three, and the leftmost,
# second-leftmost, rightmost and second-rightmost children of s0 and s1 (0: no such item).
ITEMS = ("s0", "s1", "s2", "n0", "n1", "n2",
         "s0l1", "s0l2", "s0r1", "s0r2", "s1l1", "s1l2", "s1r1", "s1r2")
# The atoms, in the parts and order ``_atoms`` returns them: w/p/m/f = word/POS/lemma/FEATS
# id, l = label of the arc to the item's head, vl/vr = number of left/right children, sl/sr =
# the set of their labels (bit l for label l), xwp = the hash _h(1, xw, xp, 0); d01 = s0 - s1
# and d0n = n0 - s0 bucketed as d (d < 5), 5 (d < 10), 6 (0 unless both items exist);
# s0w*s1w and s0w*n0w = the hash _h(0, a, b, 0).
ATOMS = (tuple(x + a for x in ITEMS for a in ("w", "p")),
         tuple(x + "l" for x in ITEMS[6:]) + tuple(x + a for x in ("s0", "s1") for a in ("vl", "vr", "sl", "sr")),
         tuple(x + a for x in ("s0", "s1", "n0") for a in ("m", "f", "wp")),
         ("d01", "d0n", "s0w*s1w", "s0w*n0w"))

# (template id, group, atoms in hashing order); extract emits the switched-on groups' features
# in this order. A template's feature is _h(id, a1, a2, a3), unused atoms 0.
TEMPLATES = (
    # base: Zhang & Nivre (2011) Table 1 single/pair/triple words, on s0-n0 and s1-s0
    (0, "base", ()),  # bias
    (2, "base", ("s0wp",)), (3, "base", ("s0w",)), (4, "base", ("s0p",)),
    (5, "base", ("s1wp",)), (6, "base", ("s1w",)), (7, "base", ("s1p",)),
    (8, "base", ("n0wp",)), (9, "base", ("n0w",)), (10, "base", ("n0p",)),
    (11, "base", ("n1w", "n1p")), (12, "base", ("n1w",)), (13, "base", ("n1p",)),
    (14, "base", ("n2w", "n2p")), (15, "base", ("n2p",)),
    (16, "base", ("s2w", "s2p")), (17, "base", ("s2p",)),
    # pairs s0-n0
    (18, "base", ("s0wp", "n0wp")), (19, "base", ("s0wp", "n0w")), (20, "base", ("s0w", "n0wp")),
    (21, "base", ("s0wp", "n0p")), (22, "base", ("s0p", "n0wp")), (23, "base", ("s0w", "n0w")),
    (24, "base", ("s0p", "n0p")), (25, "base", ("n0p", "n1p")),
    # pairs s1-s0 (the arc candidates of arc-standard)
    (26, "base", ("s0wp", "s1wp")), (27, "base", ("s0wp", "s1w")), (28, "base", ("s0w", "s1wp")),
    (29, "base", ("s0wp", "s1p")), (30, "base", ("s0p", "s1wp")), (31, "base", ("s0w", "s1w")),
    (32, "base", ("s0p", "s1p")),
    # triples
    (33, "base", ("n0p", "n1p", "n2p")), (34, "base", ("s0p", "n0p", "n1p")),
    (35, "base", ("s1p", "s0p", "n0p")), (36, "base", ("s2p", "s1p", "s0p")),
    (37, "base", ("s0w", "n0p", "n1p")), (38, "base", ("s1p", "s0w", "n0p")),
    # children (first order)
    (39, "base", ("s0p", "s0l1p", "n0p")), (40, "base", ("s0p", "s0r1p", "n0p")),
    (41, "base", ("s1p", "s0p", "s0l1p")), (42, "base", ("s1p", "s0p", "s0r1p")),
    (43, "base", ("s1p", "s1l1p", "s0p")), (44, "base", ("s1p", "s1r1p", "s0p")),
    (45, "base", ("s1p", "s1r1p", "s0w")), (46, "base", ("s1p", "s0w", "s0l1p")),
    (47, "base", ("s0l1w",)), (48, "base", ("s0l1p",)), (49, "base", ("s0r1w",)),
    (50, "base", ("s0r1p",)), (51, "base", ("s1l1w",)), (52, "base", ("s1l1p",)),
    (53, "base", ("s1r1w",)), (54, "base", ("s1r1p",)),
    # second-order children
    (55, "base", ("s0l2w",)), (56, "base", ("s0l2p",)), (57, "base", ("s0r2w",)),
    (58, "base", ("s0r2p",)),
    (59, "base", ("s0p", "s0l1p", "s0l2p")), (60, "base", ("s0p", "s0r1p", "s0r2p")),
    (61, "base", ("s1p", "s1l1p", "s1l2p")), (62, "base", ("s1p", "s1r1p", "s1r2p")),
    # labels of the children
    (70, "labels", ("s0l1l",)), (71, "labels", ("s0l2l",)), (72, "labels", ("s0r1l",)),
    (73, "labels", ("s0r2l",)), (74, "labels", ("s1l1l",)), (75, "labels", ("s1r1l",)),
    (76, "labels", ("s0p", "s0l1l", "s0l2l")), (77, "labels", ("s0p", "s0r1l", "s0r2l")),
    (78, "labels", ("s1p", "s0p", "s1r1l")), (79, "labels", ("s1p", "s0p", "s0l1l")),
    # valency
    (80, "valency", ("s0w", "s0vr")), (81, "valency", ("s0p", "s0vr")),
    (82, "valency", ("s0w", "s0vl")), (83, "valency", ("s0p", "s0vl")),
    (84, "valency", ("s1w", "s1vr")), (85, "valency", ("s1p", "s1vr")),
    (86, "valency", ("s1p", "s1vl")), (87, "valency", ("s1w", "s1vl")),
    # distance
    (90, "distance", ("s0w", "d01")), (91, "distance", ("s0p", "d01")),
    (92, "distance", ("s1w", "d01")), (93, "distance", ("s1p", "d01")),
    (94, "distance", ("s0w*s1w", "d01")), (95, "distance", ("s0p", "s1p", "d01")),
    (96, "distance", ("s0w", "d0n")), (97, "distance", ("s0p", "n0p", "d0n")),
    (98, "distance", ("s0w*n0w", "d0n")),
    # label sets
    (100, "labelset", ("s0w", "s0sr")), (101, "labelset", ("s0p", "s0sr")),
    (102, "labelset", ("s0w", "s0sl")), (103, "labelset", ("s0p", "s0sl")),
    (104, "labelset", ("s1w", "s1sr")), (105, "labelset", ("s1p", "s1sr")),
    (106, "labelset", ("s1p", "s1sl")),
    # lemma and FEATS of s0, s1, n0
    (110, "morph", ("s0m",)), (111, "morph", ("n0m",)), (112, "morph", ("s1m",)),
    (113, "morph", ("s0m", "s1m")), (114, "morph", ("s0m", "n0m")),
    (115, "morph", ("s0p", "s0f")), (116, "morph", ("n0p", "n0f")), (117, "morph", ("s1p", "s1f")),
    (118, "morph", ("s0f", "s1f")),
)

# The word clusters of pretrained vectors (--vectors; xc1, xc2, xc3: item x's cluster at the
# table's coarse, middle and finest level, + 1, 0 for none: ``cluster_row``), as Koo, Carreras & Collins (2008) use
# Brown clusters: in place of words and of POS. Their atoms (``_cluster_atoms``, in this order)
# and templates, emitted after ``TEMPLATES``' when the group is on and the corpus has clusters.
CLUSTER_ATOMS = tuple(x + f"c{j}" for x in ("s0", "s1", "n0", "n1") for j in (1, 2, 3)) + ("s0p", "s1p", "n0p", "d01")
CLUSTER_TEMPLATES = (
    (120, "clusters", ("s0c2",)), (121, "clusters", ("s0c3",)), (122, "clusters", ("n0c2",)),
    (123, "clusters", ("n0c3",)), (124, "clusters", ("s1c2",)), (125, "clusters", ("s1c3",)),
    (126, "clusters", ("n1c2",)),
    (127, "clusters", ("s0c3", "n0c3")), (128, "clusters", ("s0c2", "n0c2")),
    (129, "clusters", ("s0c3", "s1c3")), (130, "clusters", ("s0c2", "s1c2")),
    (131, "clusters", ("s0c2", "n0p")), (132, "clusters", ("s0p", "n0c2")),
    (133, "clusters", ("s1c2", "s0p")), (134, "clusters", ("s1p", "s0c2")),
    (135, "clusters", ("s1c1", "s0c1", "n0c1")), (136, "clusters", ("s0c2", "s1c2", "d01")),
)


def cluster_row(ids) -> tuple[int, int, int]:
    """A token's row of the corpus's clusters array: its cluster ids at the table's first two
    levels and its finest (coarse, middle, fine: 16, 64 and 4,096 clusters in the table
    ``train --vectors`` makes; 16, 64 and 256 in a table of three levels, as before it had four),
    each + 1; 0 where there is none (``ids`` None or shorter than three). Koo et al. (2008) read
    Brown clusters' short prefixes and their full paths; French ParTUT's dev LAS preferred the
    finest level to the 256 (results/vectors-levels.md)."""
    ids = list(ids or ())
    if len(ids) > 3:
        ids = ids[:2] + ids[-1:]
    return tuple(int(c) + 1 for c in ids) + (0,) * (3 - len(ids))



# ---- the transition system ----------------------------------------------------------------
@njit
def reset(S, n):
    for r in range(N_ROWS):
        for i in range(n + 2):
            S[r, i] = 0
    for i in range(n + 2):
        S[HD, i] = -1


@njit(inline="always")
def apply_at(S, it, sp, b, a, L):
    """Apply action a in place to the state S[it] (S: states [items, N_ROWS, cols], read by
    index, so no view of an item is made in the beam's loops); returns (sp, b)."""
    if a == 0:
        S[it, ST, sp] = b
        return sp + 1, b + 1
    s0 = S[it, ST, sp - 1]
    s1 = S[it, ST, sp - 2]
    if a <= L:  # LEFT(a): s1 <- s0; s1 is left of all earlier left children of s0
        dep, head, lab, first, second, count, labs = s1, s0, a, LC1, LC2, NL, SL
        S[it, ST, sp - 2] = s0
    else:  # RIGHT(a - L): s1 -> s0; s0 is right of all earlier right children of s1
        dep, head, lab, first, second, count, labs = s0, s1, a - L, RC1, RC2, NR, SR
    S[it, HD, dep] = head
    S[it, LB, dep] = lab
    S[it, second, head] = S[it, first, head]
    S[it, first, head] = dep
    S[it, count, head] += 1
    S[it, labs, head] |= 1 << (lab & 63)
    return sp - 1, b


@njit
def apply(S, sp, b, a, L):
    """Apply action a in place to the state S [N_ROWS, cols]; returns (sp, b)."""
    return apply_at(S.reshape((1, S.shape[0], S.shape[1])), 0, sp, b, a, L)


# ---- features -------------------------------------------------------------------------------
@njit
def _mix(h, v):
    h = (h ^ v) * np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64
    return h ^ ((h >> 31) & np.int64(0x1FFFFFFFF))


@njit
def _h(t, a, b, c):
    return _mix(_mix(_mix(_mix(np.int64(1469598103934665603), t), a), b), c)


@njit
def _bucket(d):
    return d if d < 5 else (5 if d < 10 else 6)


@njit(inline="always")
def _col(col, base, t):
    """Token t's id in a corpus column (0: no such token)."""
    return col[base + t - 1] if t else 0


@njit(inline="always")
def _cluster(col, base, t, j):
    """Token t's word cluster at level j (``cluster_row``; 0: no such token, or no clusters
    array). (Read from the array: a value numba computes, such as a packed int64's bits masked
    off, lets LLVM reason from its range through the hash's signed multiplications, which then
    give another hash.)"""
    return col[base + t - 1, j] if (t and col.shape[0]) else 0


@njit(inline="always")
def _children(S, it, t):
    """Token t's leftmost, second-leftmost, rightmost and second-rightmost child in the state
    S[it] (0: none)."""
    if t == 0:
        return 0, 0, 0, 0
    return S[it, LC1, t], S[it, LC2, t], S[it, RC1, t], S[it, RC2, t]


@njit(inline="always")
def _row(S, it, r, t):
    """Row r of token t in the state S[it] (its label, valency or label set; 0 for no token)."""
    return S[it, r, t] if t else 0


@njit(inline="always")
def _atoms(S, it, sp, b, sent):
    """The atoms of the state S[it], as the parts of ``ATOMS`` (inlined into ``extract_at``:
    the atoms stay in registers)."""
    words, tags, lemmas, morph, base, n, clusters = sent
    s0 = S[it, ST, sp - 1] if sp >= 1 else 0
    s1 = S[it, ST, sp - 2] if sp >= 2 else 0
    s2 = S[it, ST, sp - 3] if sp >= 3 else 0
    n0 = b if b <= n else 0
    n1 = b + 1 if b + 1 <= n else 0
    n2 = b + 2 if b + 2 <= n else 0
    s0l1, s0l2, s0r1, s0r2 = _children(S, it, s0)
    s1l1, s1l2, s1r1, s1r2 = _children(S, it, s1)
    s0w, s0p = _col(words, base, s0), _col(tags, base, s0)
    s1w, s1p = _col(words, base, s1), _col(tags, base, s1)
    n0w, n0p = _col(words, base, n0), _col(tags, base, n0)
    wp = (s0w, s0p, s1w, s1p, _col(words, base, s2), _col(tags, base, s2), n0w, n0p,
          _col(words, base, n1), _col(tags, base, n1), _col(words, base, n2), _col(tags, base, n2),
          _col(words, base, s0l1), _col(tags, base, s0l1), _col(words, base, s0l2), _col(tags, base, s0l2),
          _col(words, base, s0r1), _col(tags, base, s0r1), _col(words, base, s0r2), _col(tags, base, s0r2),
          _col(words, base, s1l1), _col(tags, base, s1l1), _col(words, base, s1l2), _col(tags, base, s1l2),
          _col(words, base, s1r1), _col(tags, base, s1r1), _col(words, base, s1r2), _col(tags, base, s1r2))
    tree = (_row(S, it, LB, s0l1), _row(S, it, LB, s0l2), _row(S, it, LB, s0r1), _row(S, it, LB, s0r2),
            _row(S, it, LB, s1l1), _row(S, it, LB, s1l2), _row(S, it, LB, s1r1), _row(S, it, LB, s1r2),
            _row(S, it, NL, s0), _row(S, it, NR, s0), _row(S, it, SL, s0), _row(S, it, SR, s0),
            _row(S, it, NL, s1), _row(S, it, NR, s1), _row(S, it, SL, s1), _row(S, it, SR, s1))
    lex = (_col(lemmas, base, s0), _col(morph, base, s0), _h(1, s0w, s0p, 0),
           _col(lemmas, base, s1), _col(morph, base, s1), _h(1, s1w, s1p, 0),
           _col(lemmas, base, n0), _col(morph, base, n0), _h(1, n0w, n0p, 0))
    dist = (_bucket(s0 - s1) if (s0 and s1) else 0, _bucket(n0 - s0) if (s0 and n0) else 0,
            _h(0, s0w, s1w, 0), _h(0, s0w, n0w, 0))
    return wp, tree, lex, dist


@njit(inline="always")
def _cluster_atoms(S, it, sp, b, sent):
    """The atoms of ``CLUSTER_ATOMS`` of the state S[it]."""
    words, tags, lemmas, morph, base, n, clusters = sent
    s0 = S[it, ST, sp - 1] if sp >= 1 else 0
    s1 = S[it, ST, sp - 2] if sp >= 2 else 0
    n0 = b if b <= n else 0
    n1 = b + 1 if b + 1 <= n else 0
    return (_cluster(clusters, base, s0, 0), _cluster(clusters, base, s0, 1), _cluster(clusters, base, s0, 2),
            _cluster(clusters, base, s1, 0), _cluster(clusters, base, s1, 1), _cluster(clusters, base, s1, 2),
            _cluster(clusters, base, n0, 0), _cluster(clusters, base, n0, 1), _cluster(clusters, base, n0, 2),
            _cluster(clusters, base, n1, 0), _cluster(clusters, base, n1, 1), _cluster(clusters, base, n1, 2),
            _col(tags, base, s0), _col(tags, base, s1), _col(tags, base, n0),
            _bucket(s0 - s1) if (s0 and s1) else 0)


def _atom(name: str) -> str:
    """Where the unrolled kernel reads an atom: A[part][index] of ``_atoms``'s result."""
    for p, part in enumerate(ATOMS):
        if name in part:
            return f"A[{p}][{part.index(name)}]"
    raise KeyError(name)


# ``_emit(A, groups, out, r)``: the switched-on templates' hashes in table order, written to out[r].
_emit = unroll("_emit", "A, groups, out, r", "_h({t}, {atoms})",
               [(t, f"groups & {1 << GROUPS.index(g)}", [_atom(a) for a in atoms] + ["0"] * (3 - len(atoms)))
                for t, g, atoms in TEMPLATES], globals(), __file__, target="out[r, k]")


# ``_emit_clusters(A, out, r, k0)``: the cluster templates' hashes, written to out[r] from k0 on.
_emit_clusters = unroll("_emit_clusters", "A, out, r, k0", "_h({t}, {atoms})",
                        [(t, None, [f"A[{CLUSTER_ATOMS.index(a)}]" for a in atoms] + ["0"] * (3 - len(atoms)))
                         for t, _, atoms in CLUSTER_TEMPLATES], globals(), __file__, target="out[r, k0 + k]")


@njit
def extract_at(S, it, sp, b, sent, groups, out, r):
    """The hashed features of the state S[it] into out[r] (the templates of the groups switched
    on in ``groups``, in ``TEMPLATES`` order, then, with ``CLUSTER_BIT`` and a clusters column,
    ``CLUSTER_TEMPLATES``); returns their number."""
    k = _emit(_atoms(S, it, sp, b, sent), groups, out, r)
    if groups & CLUSTER_BIT and sent.clusters.shape[0]:
        k += _emit_clusters(_cluster_atoms(S, it, sp, b, sent), out, r, k)
    return k


@njit
def extract(S, sp, b, sent, groups, out):
    """``extract_at`` of one state S [N_ROWS, cols] into out [MAX_FEATS]."""
    return extract_at(S.reshape((1, S.shape[0], S.shape[1])), 0, sp, b, sent, groups,
                      out.reshape((1, out.shape[0])), 0)


# The hash mask with its sign bit cleared: a slot ``f & mask + a`` is then known to be
# non-negative, so numba drops its negative-index wrap-around from every load and the loops
# over the actions vectorize (five times faster than with a plain int64 mask).
_NONNEG = np.int64(0x7FFFFFFFFFFFFFFF)



@njit
def action_scores(feats, k, W, mask, sp, b, n, n_actions, out):
    """out[a] = sum of W[(f & mask) + a] over the first k features f, for legal a (-inf else).

    The sum runs over the features in order (float32, one rounding per addend, as
    ``out[a] += W[...]`` feature by feature), eight features per pass over the actions: one
    load and store of out per eight features instead of per feature, and eight rows fetched
    at once."""
    for a in range(n_actions):
        out[a] = 0.0
    can_shift = b <= n
    can_arc = sp >= 2
    lo = 0 if can_shift else 1
    hi = n_actions if can_arc else 1
    m = mask & _NONNEG
    i = 0
    while i + 8 <= k:
        f0, f1, f2, f3 = feats[i] & m, feats[i + 1] & m, feats[i + 2] & m, feats[i + 3] & m
        f4, f5, f6, f7 = feats[i + 4] & m, feats[i + 5] & m, feats[i + 6] & m, feats[i + 7] & m
        for a in range(lo, hi):
            out[a] = (out[a] + W[f0 + a] + W[f1 + a] + W[f2 + a] + W[f3 + a]
                      + W[f4 + a] + W[f5 + a] + W[f6 + a] + W[f7 + a])
        i += 8
    while i < k:
        f = feats[i] & m
        for a in range(lo, hi):
            out[a] += W[f + a]
        i += 1
    if not can_shift:
        out[0] = -np.inf
    if not can_arc:
        for a in range(1, n_actions):
            out[a] = -np.inf


@njit(inline="always")
def _fetch_row(W, f, n_actions):
    """Ask for the cache lines of the row W[f:f + n_actions] (a hint: no load, no result)."""
    for off in range(0, n_actions, 16):
        prefetch(W, f + off)
    prefetch(W, f + n_actions - 1)


@njit
def items_scores(feats, k, W, mask, lo, hi, who, nwho, out):
    """``action_scores`` of several states at once, template-major: out[i, a] = sum of
    W[(f & mask) + a] over the first k features f of feats[i] for a in lo[i]..hi[i] - 1 (the
    legal actions, which are contiguous; -inf elsewhere), for the items i = who[0..nwho - 1].

    Each item's sum runs over its features in order (float32, the additions of
    ``action_scores``); the loop takes eight templates at a time for every item in turn, so
    a weight row that several items share (same feature at the same template: half of the
    rows within a beam step on ParTUT) is read from the L1 cache by all but the first. The
    sums run over all actions (a loop of a known length vectorizes best; SHIFT's lane when
    the queue is empty is computed and then dropped), except for an item that can only
    shift, which sums SHIFT's lane alone.

    The rows come from a table larger than the caches (32 MB at 23 bits): the loop asks for
    each item's next eight rows (``prefetch``) while it sums the current eight, and for every
    item's first eight before it starts (15-20% of a ParTUT parse; no result changes)."""
    m = mask & _NONNEG
    n_actions = out.shape[1]
    for w in range(nwho):
        i = who[w]
        for a in range(n_actions):
            out[i, a] = 0.0
        for j in range(min(8, k)):
            _fetch_row(W, feats[i, j] & m, n_actions)
    q = 0
    while q + 8 <= k:
        for w in range(nwho):
            i = who[w]
            f0, f1, f2, f3 = feats[i, q] & m, feats[i, q + 1] & m, feats[i, q + 2] & m, feats[i, q + 3] & m
            f4, f5, f6, f7 = feats[i, q + 4] & m, feats[i, q + 5] & m, feats[i, q + 6] & m, feats[i, q + 7] & m
            o = out[i]
            for j in range(q + 8, min(q + 16, k)):  # the item's next eight rows, while these are summed
                _fetch_row(W, feats[i, j] & m, n_actions)
            if hi[i] == 1:
                o[0] = (o[0] + W[f0] + W[f1] + W[f2] + W[f3] + W[f4] + W[f5] + W[f6] + W[f7])
                continue
            for a in range(n_actions):
                o[a] = (o[a] + W[f0 + a] + W[f1 + a] + W[f2 + a] + W[f3 + a]
                        + W[f4 + a] + W[f5 + a] + W[f6 + a] + W[f7 + a])
        q += 8
    while q < k:
        for w in range(nwho):
            i = who[w]
            f = feats[i, q] & m
            o = out[i]
            if hi[i] == 1:
                o[0] += W[f]
                continue
            for a in range(n_actions):
                o[a] += W[f + a]
        q += 1
    for w in range(nwho):
        i = who[w]
        for a in range(lo[i]):
            out[i, a] = -np.inf
        for a in range(hi[i], n_actions):
            out[i, a] = -np.inf


@njit
def state_scores(S, sp, b, sent, model, feats, out):
    """The scores of every action in a state into out (-inf for illegal ones); feats is
    scratch."""
    k = extract(S, sp, b, sent, model.groups, feats)
    action_scores(feats, k, model.W, model.mask, sp, b, sent.n, 2 * model.L + 1, out)


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


@njit(inline="always")
def _copy_at(src, p, dst, j, n):
    """dst[j] = src[p] (states [items, N_ROWS, cols]), read and written by index."""
    for r in range(N_ROWS):
        for i in range(n + 2):
            dst[j, r, i] = src[p, r, i]


@njit
def new_beams(B, maxlen):
    """``beam_search``'s scratch (``Beams``) for sentences of up to maxlen tokens."""
    return Beams(np.zeros((B, N_ROWS, maxlen + 2), dtype=np.int64),
                 np.zeros((B, N_ROWS, maxlen + 2), dtype=np.int64),
                 np.zeros((2 * maxlen, B), dtype=np.int64), np.zeros((2 * maxlen, B), dtype=np.int64),
                 np.zeros(2 * maxlen))


@njit(inline="always")
def _same_features(feats, i, j, k):
    """Whether rows i and j of feats hold the same first k features."""
    for q in range(k):
        if feats[i, q] != feats[j, q]:
            return False
    return True


@njit
def beam_search(sent, model, search, bufs, gold, track):
    """Beam search over the 2n - 1 actions of a sentence (``Search`` B, D, K; scratch
    ``bufs``). Returns (tmax, the best final item's stack size): when ``track`` (training),
    gold is the oracle's action sequence and tmax the step of maximum violation (the last of
    equal ones; -1: none), where the top item bufs.hist_p/hist_a lead to is the violating one.
    bufs.hist_p/hist_a[t, j] are the parent and action of item j after step t, and
    bufs.gscores[t] the gold prefix score after step t (when tracking). The best final item is
    bufs.cur[0] on return (the two beams swap at every step; the kernel copies it there).

    Each step first extracts every item's features, then scores the items: an item whose
    features (and queue front, hence stack size) equal an earlier item's of the same step has
    the same action scores, which are not computed again (a quarter of the items on ParTUT:
    items that differ only below the features' horizon). The gold prefix, while it is in the
    beam, takes its features from its item.

    D > 0: lookahead inside the beam. The K best candidates (item, action) by path score are
    re-ranked by path score + the best sum of the next D action scores from the state after
    the candidate (:func:`lookahead_value`), and the B best by that are kept; the stored path
    score stays the plain sum of action scores. D = 0 is plain beam search."""
    n, L = sent.n, model.L
    B, D, K = search
    cur, nxt, hist_p, hist_a, scores_out = bufs
    W, mask = model.W, model.mask
    m_nonneg = mask & _NONNEG
    n_actions = 2 * L + 1
    T = 2 * n - 1
    feats = np.zeros((B, MAX_FEATS), dtype=np.int64)  # item i's features
    nfeat = np.zeros(B, dtype=np.int64)
    fsum = np.zeros(B, dtype=np.int64)  # the sum of item i's features
    src = np.zeros(B, dtype=np.int64)  # the item whose scores item i has (i, or an earlier twin)
    who = np.zeros(B, dtype=np.int64)  # the items scored (no earlier twin)
    lo = np.zeros(B, dtype=np.int64)  # their legal actions lo[i]..hi[i] - 1
    hi = np.zeros(B, dtype=np.int64)
    sc = np.zeros((B, n_actions), dtype=np.float32)  # float32 sums: twice the SIMD width
    lfeats = np.zeros(MAX_FEATS, dtype=np.int64)  # the lookahead's and the gold path's scratch
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
    # the candidates by path score: the B kept, or with lookahead the K to re-rank
    cv, cp, ca, cap = (topv, topp, topa, B) if D == 0 else (kv, kp, ka, KK)
    reset(cur[0], n)
    bsp[0] = 0
    bb[0] = 1
    bscore[0] = 0.0
    bgold[0] = True
    size = 1
    # the gold path, followed separately when training
    G = np.zeros((1, N_ROWS, n + 2), dtype=np.int64)
    reset(G[0], n)
    gsp = 0
    gb = 1
    gscore = 0.0
    tmax = -1
    vmax = -np.inf
    A = cur
    Bn = nxt
    gfeats = np.zeros((1, MAX_FEATS), dtype=np.int64)  # the gold prefix's features, when out of the beam
    for t in range(T):
        gitem = -1  # the item that is the gold prefix (when tracking and it is in the beam)
        gk = 0
        if track:
            gin = False
            for i in range(size):
                gin = gin or bgold[i]
            if not gin:  # its features now, and its action's weights asked for (prefetch) while
                gk = extract_at(G, 0, gsp, gb, sent, model.groups, gfeats, 0)  # the beam is searched
                for i in range(gk):
                    prefetch(W, (gfeats[0, i] & m_nonneg) + gold[t])
        nwho = 0
        k = 0
        for i in range(size):
            k = extract_at(A, i, bsp[i], bb[i], sent, model.groups, feats, i)
            nfeat[i] = k
            src[i] = i
            f = np.int64(0)  # a sum of the features (wrapping): twins have equal sums
            for q in range(k):
                f += feats[i, q]
            fsum[i] = f
            for j in range(i):
                if (src[j] == j and fsum[j] == f and bb[j] == bb[i] and nfeat[j] == k
                        and _same_features(feats, i, j, k)):
                    src[i] = j
                    break
            if src[i] == i:
                who[nwho] = i
                nwho += 1
                lo[i] = 0 if bb[i] <= n else 1
                hi[i] = n_actions if bsp[i] >= 2 else 1
            if track and bgold[i]:
                gitem = i
        items_scores(feats, k, W, mask, lo, hi, who, nwho, sc)  # every item has k features
        m = 0
        for i in range(size):
            row = sc[src[i]]
            for a in range(n_actions):
                if row[a] > -np.inf:
                    m = _insert(cv, cp, ca, m, cap, bscore[i] + row[a], i, a)
        if D > 0:
            mk = m
            m = 0
            for c in range(mk):  # re-rank the K best by path score + depth-D lookahead
                p = kp[c]
                _copy(A[p], look[0], n)
                sp1, b1 = apply(look[0], bsp[p], bb[p], ka[c], L)
                h = lookahead_value(look, lsc, lfeats, sp1, b1, sent, model, D)
                m = _insert(lv, lc, la, m, B, kv[c] + h, c, 0)
            for j in range(m):
                c = lc[j]
                topv[j] = kv[c]
                topp[j] = kp[c]
                topa[j] = ka[c]
        for j in range(m):
            p = topp[j]
            a = topa[j]
            _copy_at(A, p, Bn, j, n)
            nsp[j], nb[j] = apply_at(Bn, j, bsp[p], bb[p], a, L)
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
            g = gold[t]
            s = 0.0
            if gitem >= 0:  # the gold prefix is item gitem's state: its features
                for i in range(nfeat[gitem]):
                    s += W[(feats[gitem, i] & m_nonneg) + g]
            else:
                for i in range(gk):
                    s += W[(gfeats[0, i] & m_nonneg) + g]
            gscore += s
            gsp, gb = apply_at(G, 0, gsp, gb, g, L)
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
def lookahead_value(look, lsc, feats, sp, b, sent, model, D):
    """The best sum of the scores of at most D legal actions from the state look[0] (sp, b):
    max over action sequences of length D (shorter only where a final state ends them) of the
    sum of their scores; 0 for a final state or D = 0. Depth-first over look[1:], lsc[d] the
    action scores at depth d; feats is scratch."""
    n = sent.n
    if D == 0 or is_final(sp, b, n):
        return 0.0
    n_actions = 2 * model.L + 1
    dsp = np.zeros(D + 1, dtype=np.int64)
    db = np.zeros(D + 1, dtype=np.int64)
    nexta = np.zeros(D + 1, dtype=np.int64)
    acc = np.zeros(D + 1)
    best = -np.inf
    dsp[0] = sp
    db[0] = b
    state_scores(look[0], sp, b, sent, model, feats, lsc[0])
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
        sp2, b2 = apply(look[d + 1], dsp[d], db[d], a, model.L)
        if is_final(sp2, b2, n):
            if v > best:
                best = v
            continue
        d += 1
        dsp[d] = sp2
        db[d] = b2
        acc[d] = v
        nexta[d] = 0
        state_scores(look[d], sp2, b2, sent, model, feats, lsc[d])
    return best


@njit
def _path(hist_p, hist_a, t, j, out):
    """The actions of item j after step t, from the back pointers, into out[:t + 1]."""
    for s in range(t, -1, -1):
        out[s] = hist_a[s, j]
        j = hist_p[s, j]


@njit
def _update(sent, model, acts, t0, T, sign, c):
    """W += sign * phi(acts[t0:T]) (U += sign * c * phi), replaying the actions from the start
    (the first t0 without features: ``beam_epoch`` passes the steps the gold and the predicted
    sequence share, whose +phi and -phi cancel; W's cells are integers, so W is the same, and
    U's are too, the same while below 2^24 in size, as float32 holds them exactly)."""
    n, W, U, mask = sent.n, model.W, model.U, model.mask
    S = np.zeros((1, N_ROWS, n + 2), dtype=np.int64)
    reset(S[0], n)
    feats = np.zeros((2, MAX_FEATS), dtype=np.int64)  # step t's features (row t % 2) and step t + 1's
    sp = 0
    b = 1
    for t in range(t0):  # the steps both paths share: their changes cancel
        sp, b = apply_at(S, 0, sp, b, acts[t], model.L)
    k = extract_at(S, 0, sp, b, sent, model.groups, feats, t0 % 2)
    for t in range(t0, T):
        a = acts[t]
        r = t % 2
        kc = k
        sp, b = apply_at(S, 0, sp, b, a, model.L)
        if t + 1 < T:  # the next step's cells are asked for (prefetch) while this step's change
            k = extract_at(S, 0, sp, b, sent, model.groups, feats, 1 - r)
            a1 = acts[t + 1]
            for i in range(k):
                h = (feats[1 - r, i] & mask) + a1
                prefetch(W, h)
                prefetch(U, h)
        for i in range(kc):
            h = (feats[r, i] & mask) + a
            W[h] += sign
            U[h] += sign * c


@njit
def beam_epoch(X, gold_actions, order, trainable, model, search, c):
    """One epoch of max-violation perceptron training over the trainable sentences of the
    ``Corpus`` X in ``order``, updating model.W and its accumulator model.U. gold_actions holds
    each sentence's 2n - 1 oracle actions at 2 * offsets[s] - s. Returns (c, updates): the
    example counter after the epoch and the number of sentences updated (each a violation)."""
    offsets = X.offsets
    bufs = new_beams(search.B, max_length(offsets))
    path = np.zeros(bufs.gscores.shape[0], dtype=np.int64)
    updates = 0
    for s in order:
        if not trainable[s]:
            continue
        base, n = span(offsets, s)
        sent = Sentence(X.words, X.tags, X.lemmas, X.morph, base, n, X.clusters)
        g0 = 2 * base - s
        gold = gold_actions[g0:g0 + 2 * n - 1]
        tmax, _ = beam_search(sent, model, search, bufs, gold, True)
        if tmax >= 0:
            updates += 1
            _path(bufs.hist_p, bufs.hist_a, tmax, 0, path)
            t0 = 0   # the steps both share are not replayed
            while t0 <= tmax and gold[t0] == path[t0]:
                t0 += 1
            _update(sent, model, gold, t0, tmax + 1, 1.0, c)
            _update(sent, model, path, t0, tmax + 1, -1.0, c)
        c += 1.0
    return c, updates


@njit
def beam_parse_corpus(X, model, search, root_label, heads_out, labels_out):
    """Parse every sentence of the ``Corpus`` X; writes heads (0 = root) and label ids into
    the outputs."""
    offsets = X.offsets
    bufs = new_beams(search.B, max_length(offsets))
    nogold = np.zeros(bufs.gscores.shape[0], dtype=np.int64)
    for s in range(len(offsets) - 1):
        base, n = span(offsets, s)
        if n == 0:
            continue
        beam_search(Sentence(X.words, X.tags, X.lemmas, X.morph, base, n, X.clusters), model, search, bufs,
                    nogold, False)
        S = bufs.cur[0]
        root = S[ST, 0]
        S[HD, root] = 0
        S[LB, root] = root_label
        for i in range(1, n + 1):
            heads_out[base + i - 1] = S[HD, i]
            labels_out[base + i - 1] = S[LB, i]


@njit
def nonzero_cells(W, idx, vals):
    """The cells of W whose bits are not all zero, in order: their positions into idx and
    their values into vals (both of the length ``np.count_nonzero(W.view(np.int32))``)."""
    bits = W.view(np.int32)
    last = bits.shape[0] - 1   # the last nonzero cell: up to it every write below is in range
    while last >= 0 and bits[last] == 0:
        last -= 1
    j = 0
    for i in range(last + 1):  # without a branch (a fifth of the cells are nonzero, at random:
        idx[j] = i             # a branch on each was mispredicted, four times slower); a zero
        vals[j] = W[i]         # cell's write is overwritten by the next cell's
        j += bits[i] != 0
    return j


@njit
def scatter_cells(W, idx, vals):
    """W[idx[j]] = vals[j] (the inverse of ``nonzero_cells`` on a zeroed W)."""
    for j in range(idx.shape[0]):
        W[idx[j]] = vals[j]


@njit
def average_in_place(W, U, c):
    """W[i] = W[i] - U[i] / c in float32 (c float32): the averaged perceptron's weights, the
    numbers ``np.subtract(W, np.divide(U, c))`` gives, without its temporary table."""
    for i in range(W.shape[0]):
        W[i] = W[i] - U[i] / c


@njit
def hash_slots(t, atoms, mask, out):
    """out[i] = the first slot (action 0's) of template t's feature with the atom values
    atoms[i, :3] (the hash ``extract`` computes, masked; unused atoms 0): naming hashed
    weights (``structkit dump``)."""
    for i in range(atoms.shape[0]):
        out[i] = _h(t, atoms[i, 0], atoms[i, 1], atoms[i, 2]) & mask
