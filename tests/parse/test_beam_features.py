"""The labelled beam parser's feature templates (``structkit.parse.beam.TEMPLATES``, the one
table the kernel ``extract`` unrolls) against atoms computed here by hand, independently of
the kernel.

test_beam_parser.py's plain-Python beam search scores states with the kernel's own ``extract``,
so a template that reads the wrong atom (s1's leftmost child's label for its rightmost, a
wrong distance bucket, ...) is invisible there. Here each state is written out by hand as its
stack (bottom first), queue front b and arcs {dependent: (head, label)}; every atom of the
Zhang & Nivre (2011) templates the kernel uses is computed from that description in plain
Python (``atoms``), each template's feature is hashed with a plain-Python copy of the hash
(``py_h``, pinned against the kernel's ``_h``), and the kernel's features of the same state,
reached with the kernel's ``apply`` from a literal action string, must be these, in order.

Atom legend (0 = no such item): s0/s1/s2 = stack top, second, third; n0/n1/n2 = queue front and
the next two (none past the sentence's end); w/p/m/f = word/POS/lemma/FEATS id; l = label of the
arc to the item's head; l1/l2 = leftmost/second-leftmost child, r1/r2 = rightmost/second-
rightmost child; vl/vr = number of left/right children; sl/sr = the set of left/right
children's labels (bit l set for label l); d01 = s0 - s1, d0n = n0 - s0, each bucketed as
d (d < 5), 5 (5 <= d < 10), 6 (d >= 10) and 0 unless both items exist. "xwp" is the hash
_h(1, xw, xp, 0) of a word/POS pair; "s0w*s1w" and "s0w*n0w" are _h(0, a, b, 0).
"""
from __future__ import annotations

import numpy as np
import pytest

from structkit.parse import beam as bm

L = 5  # labels 1..5: LEFT(l) = l, RIGHT(l) = L + l
PINNED = "a98f531f480e5d09"  # sha256 of repr(TEMPLATES), first 16 hex digits
BASE = 3  # the sentence's first token is at index BASE of the corpus arrays
ALL = bm.group_mask(bm.GROUPS)

# template id -> atom names, by group (the kernel's order), read from the parser's one template
# table; the legend above defines the names, and ``atoms`` computes each of them by hand
TEMPLATES = {g: [(tid, *names) for tid, grp, names in bm.TEMPLATES if grp == g] for g in bm.GROUPS}


def test_table_atoms_are_the_legends():
    """Every atom the table names is one ``atoms`` computes by hand (and the kernel's atom
    parts name each once), and the groups' templates come in the table's order."""
    legend = set(atoms(14, [1, 4, 9], 12, {}))
    named = [a for part in bm.ATOMS for a in part]
    assert len(named) == len(set(named)) and set(named) <= legend
    assert {a for _, _, names in bm.TEMPLATES for a in names} <= set(named)
    assert [t for g in bm.GROUPS for t, *_ in TEMPLATES[g]] == [t for t, _, _ in bm.TEMPLATES]
    assert len({t for t, _, _ in bm.TEMPLATES}) == len(bm.TEMPLATES) <= bm.MAX_FEATS


def test_table_is_pinned():
    """The table decides what every saved beam model's weights mean: a changed template id,
    atom or order makes old models parse differently. Change this digest only with a new
    model format."""
    import hashlib

    assert hashlib.sha256(repr(bm.TEMPLATES).encode()).hexdigest()[:16] == PINNED


# ---- the hash, in plain Python ----------------------------------------------------------------
M64 = (1 << 64) - 1


def _signed(x):
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def py_mix(h, v):
    h = _signed((h ^ v) * 0x9E3779B97F4A7C15)
    return h ^ ((h >> 31) & 0x1FFFFFFFF)  # >> on a negative int64 is arithmetic, as here


def py_h(t, a=0, b=0, c=0):
    return py_mix(py_mix(py_mix(py_mix(1469598103934665603, t), a), b), c)


def test_hash_pinned():
    for args in [(0, 0, 0, 0), (1, 101, 201, 0), (94, py_h(0, 5, 9), 6, 0), (118, -3, 2 ** 40, 7)]:
        assert int(bm._h(*args)) == py_h(*args)
    assert py_h(0) == int(bm._h(0, 0, 0, 0)) != py_h(1)


# ---- sentences and hand-built states -----------------------------------------------------------
def corpus(n):
    """Token i (1..n) has word 100 + i, POS 200 + i, lemma 300 + i, FEATS 400 + i, stored at
    index BASE + i - 1 between three tokens of an earlier and two of a later sentence (9xx ids,
    never expected)."""
    def col(k):
        return np.array([900 + k, 910 + k, 920 + k] + [100 * k + i for i in range(1, n + 1)]
                        + [930 + k, 940 + k], dtype=np.int64)

    return col(1), col(2), col(3), col(4)


def kernel_state(n, actions):
    """The state after a literal action string (S, Ll = LEFT with label l, Rl = RIGHT), with
    the kernel's apply; the stack row above the stack pointer holds garbage."""
    S = np.zeros((bm.N_ROWS, n + 2), dtype=np.int64)
    bm.reset(S, n)
    sp, b = 0, 1
    for a in actions.split():
        act = 0 if a == "S" else int(a[1:]) + (0 if a[0] == "L" else L)
        sp, b = bm.apply(S, sp, b, act, L)
    S[bm.ST, sp:] = 7
    return S, sp, b


def lefts(arcs, h):
    """h's left children, leftmost first."""
    return sorted(d for d, (hd, _) in arcs.items() if hd == h and d < h)


def rights(arcs, h):
    """h's right children, rightmost first."""
    return sorted((d for d, (hd, _) in arcs.items() if hd == h and d > h), reverse=True)


def bucket(d):
    return d if d < 5 else (5 if d < 10 else 6)


def atoms(n, stack, b, arcs):
    """Every atom of the legend, from the hand-written state."""
    def st(k):
        return stack[-1 - k] if len(stack) > k else 0

    def q(k):
        return b + k if b + k <= n else 0

    def w(t):
        return 100 + t if t else 0

    def p(t):
        return 200 + t if t else 0

    def lab(t):
        return arcs[t][1] if t else 0

    def nth(xs, k):
        return xs[k] if len(xs) > k else 0

    a = {}
    items = {"s0": st(0), "s1": st(1), "s2": st(2), "n0": q(0), "n1": q(1), "n2": q(2)}
    for name, t in items.items():
        a[name + "w"], a[name + "p"] = w(t), p(t)
    for name in ("s0", "s1", "n0"):
        t = items[name]
        a[name + "wp"] = py_h(1, w(t), p(t))
        a[name + "m"] = 300 + t if t else 0
        a[name + "f"] = 400 + t if t else 0
    for name in ("s0", "s1"):
        t = items[name]
        left, right = (lefts(arcs, t), rights(arcs, t)) if t else ([], [])
        kids = {"l1": nth(left, 0), "l2": nth(left, 1), "r1": nth(right, 0), "r2": nth(right, 1)}
        for k, c in kids.items():
            a[f"{name}{k}w"], a[f"{name}{k}p"], a[f"{name}{k}l"] = w(c), p(c), lab(c)
        a[name + "vl"], a[name + "vr"] = len(left), len(right)
        a[name + "sl"] = sum(1 << lb for lb in {lab(c) for c in left})
        a[name + "sr"] = sum(1 << lb for lb in {lab(c) for c in right})
    s0, s1, n0 = items["s0"], items["s1"], items["n0"]
    a["d01"] = bucket(s0 - s1) if s0 and s1 else 0
    a["d0n"] = bucket(n0 - s0) if s0 and n0 else 0
    a["s0w*s1w"] = py_h(0, a["s0w"], a["s1w"])
    a["s0w*n0w"] = py_h(0, a["s0w"], a["n0w"])
    return a


def expected(n, stack, b, arcs, groups):
    a = atoms(n, stack, b, arcs)
    out = []
    for g in groups:
        for tid, *names in TEMPLATES[g]:
            out.append((tid, py_h(tid, *[a[x] for x in names])))
    return out


def kernel_features(S, sp, b, n, groups):
    words, tags, lemmas, morph = corpus(n)
    out = np.zeros(bm.MAX_FEATS, dtype=np.int64)
    k = bm.extract(S, sp, b, bm.Sentence(words, tags, lemmas, morph, BASE, n), bm.group_mask(groups), out)
    return [int(f) for f in out[:k]]


# name: (n, the action string, the hand-written stack (bottom first), b, arcs {dep: (head, label)})
STATES = {
    # s2 = 1; s1 = 4 with left children 2 (label 2), 3 (label 1) and right children 5 (3), 6 (4);
    # s0 = 9 with left children 7 (1), 8 (5) and right children 10 (2), 11 (3); queue 12 13 14.
    "rich": (14, "S S S S L1 L2 S R3 S R4 S S S L5 L1 S R2 S R3", [1, 4, 9], 12,
             {3: (4, 1), 2: (4, 2), 5: (4, 3), 6: (4, 4), 8: (9, 5), 7: (9, 1), 10: (9, 2), 11: (9, 3)}),
    "empty stack": (14, "", [], 1, {}),
    "one item, full queue": (14, "S", [1], 2, {}),
    # s1 = 1 with one right child 2; s0 = 13 with ten left children 3..12 (labels 1, 2, 3 in
    # turn from 12 down); s0 - s1 = 12 (bucket 6); queue: 14 only.
    "far apart, one right child, long left valency": (
        14, "S S R4 " + "S " * 11 + "L1 L2 L3 L1 L2 L3 L1 L2 L3 L1", [1, 13], 14,
        {2: (1, 4), **{12 - i: (13, 1 + i % 3) for i in range(10)}}),
    # the queue is empty (the later sentence's tokens must not be read): s0 = 2 with its one
    # right child 3, s1 = 1; one-child second-order atoms are 0.
    "queue empty": (3, "S S S R2", [1, 2], 4, {3: (2, 2)}),
    # s2 = 3 with left children 1 (label 4) and 2 (label 3), s1 = 5 with one left child 4
    # (label 2), s0 = 7 with one left child 6 (label 5); no right children; queue 8 9.
    "mixed": (9, "S S S L3 L4 S S L2 S S L5", [3, 5, 7], 8, {2: (3, 3), 1: (3, 4), 4: (5, 2), 6: (7, 5)}),
    # s0 - s1 = 5 (the first gap bucketed as 5), s0 with four left children of one label
    "distance edges": (16, "S " * 6 + "L1 L1 L1 L1", [1, 6], 7, {5: (6, 1), 4: (6, 1), 3: (6, 1), 2: (6, 1)}),
}


@pytest.mark.parametrize("name", list(STATES))
def test_hand_built_state_is_the_kernels(name):
    """The hand-written stack / queue front / arcs are what the kernel's apply builds."""
    n, actions, stack, b, arcs = STATES[name]
    S, sp, kb = kernel_state(n, actions)
    assert (sp, kb) == (len(stack), b)
    assert S[bm.ST, :sp].tolist() == stack
    for t in range(1, n + 1):
        head, label = arcs.get(t, (-1, 0))
        assert (S[bm.HD, t], S[bm.LB, t]) == (head, label), t


@pytest.mark.parametrize("name", list(STATES))
def test_features_against_hand_computed_atoms(name):
    n, actions, stack, b, arcs = STATES[name]
    S, sp, kb = kernel_state(n, actions)
    want = expected(n, stack, b, arcs, bm.GROUPS)
    got = kernel_features(S, sp, kb, n, bm.GROUPS)
    assert len(got) == len(want) == sum(len(t) for t in TEMPLATES.values())
    wrong = [tid for (tid, f), g in zip(want, got) if f != g]
    assert not wrong, f"templates {wrong} differ from the hand-computed atoms"


@pytest.mark.parametrize("group", bm.GROUPS)
def test_each_group_alone(group):
    n, actions, stack, b, arcs = STATES["rich"]
    S, sp, kb = kernel_state(n, actions)
    assert kernel_features(S, sp, kb, n, [group]) == [f for _, f in expected(n, stack, b, arcs, [group])]


def test_rich_state_atoms_are_distinct_where_templates_could_be_confused():
    """The "rich" state tells apart what a misread template would confuse: leftmost from
    second-leftmost and rightmost children, their labels, s0's from s1's, left from right."""
    n, _, stack, b, arcs = STATES["rich"]
    a = atoms(n, stack, b, arcs)
    assert (a["s1l1l"], a["s1l2l"], a["s1r1l"], a["s1r2l"]) == (2, 1, 4, 3)
    assert (a["s0l1l"], a["s0l2l"], a["s0r1l"], a["s0r2l"]) == (1, 5, 3, 2)
    assert (a["s0l1w"], a["s0l2w"], a["s0r1w"], a["s0r2w"]) == (107, 108, 111, 110)
    assert (a["s1l1p"], a["s1l2p"], a["s1r1p"], a["s1r2p"]) == (202, 203, 206, 205)
    assert (a["d01"], a["d0n"], a["s0sl"], a["s0sr"], a["s1sl"], a["s1sr"]) == (5, 3, 0b100010, 0b1100, 0b110, 0b11000)


@pytest.mark.parametrize("gap", range(1, 13))
def test_distance_buckets_for_every_gap(gap):
    """s1 = 1 and s0 = 1 + gap (the tokens between are s0's left children), n0 = s0 + 1."""
    n = gap + 2
    actions = "S " * (gap + 1) + "L1 " * (gap - 1)
    stack, b = [1, gap + 1], gap + 2
    arcs = {t: (gap + 1, 1) for t in range(2, gap + 1)}
    S, sp, kb = kernel_state(n, actions)
    want = expected(n, stack, b, arcs, ["distance"])
    assert atoms(n, stack, b, arcs)["d01"] == (gap if gap < 5 else 5 if gap < 10 else 6)
    assert kernel_features(S, sp, kb, n, ["distance"]) == [f for _, f in want]
