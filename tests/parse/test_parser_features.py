"""The parser's hashed feature templates (``structkit.parse.arcstandard.features``) against
hand-derived atoms.

The parser tests in test_parser.py call the kernel's own ``features`` to score actions, so a
template that reads the wrong atom (q1t for q2t, s1lct for s1rct, ...) or a wrong distance
bucket is invisible to them. Here every template of every state is written out by hand: the
states are reached with the kernel's ``apply`` from literal action strings, their stack / queue
front / leftmost and rightmost children are checked against hand-written values, and for each
of the N_TEMPLATES = 33 templates the expected feature id is ``_hash(k, a, b, c, d, mask)`` of
the literal atom ids written below (unused trailing atoms are 0). ``_hash`` itself is pinned
separately: a plain-Python re-implementation and a few literal ids.

The sentence: tokens 1..12, token i has word id 100 + i and tag id 200 + i, stored at
``words[BASE + i - 1]`` between other sentences' tokens (ids 9xx, never expected). Atom id 0
stands for "no such item" (empty stack slot, queue position past n, no child).

Template legend (k: atoms, in hashing order; s0/s1/s2 = stack top, second, third; q0/q1/q2 =
queue front and the next two; w/t = word/tag id; lct/rct = tag of the leftmost/rightmost child;
dist = s0 - s1 capped at 5, 6 when >= 10, 0 unless both s0 and s1 exist):
  (1) unigrams   0 s0w | 1 s0t | 2 s0w s0t | 3 s1w | 4 s1t | 5 s1w s1t | 6 q0w | 7 q0t | 8 q0w q0t
  (2) bigrams    9 s0w s1w | 10 s0t s1t | 11 s0t q0t | 12 s0w s0t s1t | 13 s0t s1w s1t |
                 14 s0w s1w s1t | 15 s0w s0t s1w | 16 s0w s0t s1w s1t
  (3) trigrams   17 s0t q0t q1t | 18 s1t s0t q0t | 19 s0w q0t q1t | 20 s1t s0w q0t
  (4) children   21 s1t s1lct s0t | 22 s1t s1rct s0t | 23 s1t s0t s0rct | 24 s1t s1lct s0w |
                 25 s1t s1rct s0w | 26 s1t s0w s0lct
  (5) stack      27 s2t s1t s0t
  distance etc.  28 dist s0t s1t | 29 dist s0w s1w | 30 dist | 31 q0t q1t q2t | 32 bias (no atoms)
"""
from __future__ import annotations

import numpy as np
import pytest

from structkit.parse.arcstandard import (LEFT, N_TEMPLATES, RIGHT, SHIFT, Sentence, State,
                                          _hash, apply, features)

N = 12
BASE = 3
# three tokens of an earlier sentence, the 12 tokens, two tokens of a later one
WORDS = np.array([901, 902, 903] + [100 + i for i in range(1, N + 1)] + [904, 905], dtype=np.int64)
TAGS = np.array([991, 992, 993] + [200 + i for i in range(1, N + 1)] + [994, 995], dtype=np.int64)
FULL = (1 << 63) - 1  # no masking: distinct atoms give distinct ids
MASKS = (FULL, 2 ** 10 - 1, 2 ** 18 - 1)
ACTION = {"S": SHIFT, "L": LEFT, "R": RIGHT}


def build(actions):
    """The state after a literal action string (S shift, L reduceL, R reduceR), with the
    kernel's apply; garbage above the stack pointer (dead storage the features must not read)."""
    stack = np.zeros(N + 2, dtype=np.int64)
    heads = np.full(N + 2, -1, dtype=np.int64)
    lc = np.zeros(N + 2, dtype=np.int64)
    rc = np.zeros(N + 2, dtype=np.int64)
    sp, b = 0, 1
    for ch in actions:
        sp, b, _ = apply(ACTION[ch], State(stack, heads, lc, rc), sp, b)
    stack[sp:] = 7
    return stack, sp, b, lc, rc


def run_features(stack, sp, b, lc, rc, mask, words=WORDS, tags=TAGS, base=BASE, n=N):
    out = np.full(N_TEMPLATES, -1, dtype=np.int64)
    heads = np.full_like(lc, -1)  # not read by the features
    features(State(stack, heads, lc, rc), sp, b, Sentence(words, tags, base, n), mask, out)
    return out


def expected_ids(templates, mask):
    assert len(templates) == N_TEMPLATES == 33
    ids = []
    for k, atoms in enumerate(templates):
        assert len(atoms) <= 4
        a = tuple(atoms) + (0,) * (4 - len(atoms))
        ids.append(int(_hash(k, a[0], a[1], a[2], a[3], mask)))
    return ids


# Each state: the action string; the hand-derived stack (bottom first), queue front b, the
# non-zero leftmost / rightmost children lc / rc of ALL tokens (including reduced ones, which
# the features must ignore); and the atoms of templates 0..32 in legend order.
STATES = {
    # empty stack: every s-atom and dist are 0; queue 1, 2, 3
    "initial": {
        "actions": "", "stack": [], "b": 1, "lc": {}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (0,), (0,), (0, 0), (0,), (0,), (0, 0), (101,), (201,), (101, 201),
            # 9-16 (2) bigrams
            (0, 0), (0, 0), (0, 201), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0, 0),
            # 17-20 (3) trigrams
            (0, 201, 202), (0, 0, 201), (0, 201, 202), (0, 0, 201),
            # 21-26 (4) children
            (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0),
            # 27 (5) stack trigram
            (0, 0, 0),
            # 28-32 distance (3), queue tag trigram, bias
            (0, 0, 0), (0, 0, 0), (0,), (201, 202, 203), (),
        ]},
    # one item: s0 = 1 but no s1 (so dist = 0); queue 2, 3, 4
    "one_shift": {
        "actions": "S", "stack": [1], "b": 2, "lc": {}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (101,), (201,), (101, 201), (0,), (0,), (0, 0), (102,), (202,), (102, 202),
            # 9-16 (2) bigrams
            (101, 0), (201, 0), (201, 202), (101, 201, 0), (201, 0, 0), (101, 0, 0), (101, 201, 0),
            (101, 201, 0, 0),
            # 17-20 (3) trigrams
            (201, 202, 203), (0, 201, 202), (101, 202, 203), (0, 101, 202),
            # 21-26 (4) children
            (0, 0, 201), (0, 0, 201), (0, 201, 0), (0, 0, 101), (0, 0, 101), (0, 101, 0),
            # 27 (5) stack trigram
            (0, 0, 201),
            # 28-32 distance (3), queue tag trigram, bias
            (0, 201, 0), (0, 101, 0), (0,), (202, 203, 204), (),
        ]},
    # s2 = 1, s1 = 3 (children 2 left, 4 right), s0 = 6 (children 5 left, 7 right);
    # queue 8, 9, 10; dist 6 - 3 = 3
    "children": {
        "actions": "SSSLSRSSLSR", "stack": [1, 3, 6], "b": 8,
        "lc": {3: 2, 6: 5}, "rc": {3: 4, 6: 7},
        "templates": [
            # 0-8 (1) unigrams
            (106,), (206,), (106, 206), (103,), (203,), (103, 203), (108,), (208,), (108, 208),
            # 9-16 (2) bigrams
            (106, 103), (206, 203), (206, 208), (106, 206, 203), (206, 103, 203), (106, 103, 203),
            (106, 206, 103), (106, 206, 103, 203),
            # 17-20 (3) trigrams
            (206, 208, 209), (203, 206, 208), (106, 208, 209), (203, 106, 208),
            # 21-26 (4) children
            (203, 202, 206), (203, 204, 206), (203, 206, 207), (203, 202, 106), (203, 204, 106),
            (203, 106, 205),
            # 27 (5) stack trigram
            (201, 203, 206),
            # 28-32 distance (3), queue tag trigram, bias
            (3, 206, 203), (3, 106, 103), (3,), (208, 209, 210), (),
        ]},
    # s2 = 1, s1 = 2, s0 = 6 (left child 5); queue 7, 8, 9; dist 6 - 2 = 4
    "dist4": {
        "actions": "SSSSLSLSL", "stack": [1, 2, 6], "b": 7, "lc": {4: 3, 5: 4, 6: 5}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (106,), (206,), (106, 206), (102,), (202,), (102, 202), (107,), (207,), (107, 207),
            # 9-16 (2) bigrams
            (106, 102), (206, 202), (206, 207), (106, 206, 202), (206, 102, 202), (106, 102, 202),
            (106, 206, 102), (106, 206, 102, 202),
            # 17-20 (3) trigrams
            (206, 207, 208), (202, 206, 207), (106, 207, 208), (202, 106, 207),
            # 21-26 (4) children
            (202, 0, 206), (202, 0, 206), (202, 206, 0), (202, 0, 106), (202, 0, 106),
            (202, 106, 205),
            # 27 (5) stack trigram
            (201, 202, 206),
            # 28-32 distance (3), queue tag trigram, bias
            (4, 206, 202), (4, 106, 102), (4,), (207, 208, 209), (),
        ]},
    # s0 = 7 (left child 6); queue 8, 9, 10; dist 7 - 2 = 5 (the cap itself)
    "dist5": {
        "actions": "SSSSLSLSLSL", "stack": [1, 2, 7], "b": 8,
        "lc": {4: 3, 5: 4, 6: 5, 7: 6}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (107,), (207,), (107, 207), (102,), (202,), (102, 202), (108,), (208,), (108, 208),
            # 9-16 (2) bigrams
            (107, 102), (207, 202), (207, 208), (107, 207, 202), (207, 102, 202), (107, 102, 202),
            (107, 207, 102), (107, 207, 102, 202),
            # 17-20 (3) trigrams
            (207, 208, 209), (202, 207, 208), (107, 208, 209), (202, 107, 208),
            # 21-26 (4) children
            (202, 0, 207), (202, 0, 207), (202, 207, 0), (202, 0, 107), (202, 0, 107),
            (202, 107, 206),
            # 27 (5) stack trigram
            (201, 202, 207),
            # 28-32 distance (3), queue tag trigram, bias
            (5, 207, 202), (5, 107, 102), (5,), (208, 209, 210), (),
        ]},
    # s0 = 8 (left child 7); queue 9, 10, 11; 8 - 2 = 6, capped to 5
    "dist6": {
        "actions": "SSSSLSLSLSLSL", "stack": [1, 2, 8], "b": 9,
        "lc": {4: 3, 5: 4, 6: 5, 7: 6, 8: 7}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (108,), (208,), (108, 208), (102,), (202,), (102, 202), (109,), (209,), (109, 209),
            # 9-16 (2) bigrams
            (108, 102), (208, 202), (208, 209), (108, 208, 202), (208, 102, 202), (108, 102, 202),
            (108, 208, 102), (108, 208, 102, 202),
            # 17-20 (3) trigrams
            (208, 209, 210), (202, 208, 209), (108, 209, 210), (202, 108, 209),
            # 21-26 (4) children
            (202, 0, 208), (202, 0, 208), (202, 208, 0), (202, 0, 108), (202, 0, 108),
            (202, 108, 207),
            # 27 (5) stack trigram
            (201, 202, 208),
            # 28-32 distance (3), queue tag trigram, bias
            (5, 208, 202), (5, 108, 102), (5,), (209, 210, 211), (),
        ]},
    # s0 = 9 (left child 8); queue 10, 11, 12: q2 is the last token; 9 - 2 = 7, capped to 5
    "dist7_q2_last": {
        "actions": "SSSSLSLSLSLSLSL", "stack": [1, 2, 9], "b": 10,
        "lc": {4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (109,), (209,), (109, 209), (102,), (202,), (102, 202), (110,), (210,), (110, 210),
            # 9-16 (2) bigrams
            (109, 102), (209, 202), (209, 210), (109, 209, 202), (209, 102, 202), (109, 102, 202),
            (109, 209, 102), (109, 209, 102, 202),
            # 17-20 (3) trigrams
            (209, 210, 211), (202, 209, 210), (109, 210, 211), (202, 109, 210),
            # 21-26 (4) children
            (202, 0, 209), (202, 0, 209), (202, 209, 0), (202, 0, 109), (202, 0, 109),
            (202, 109, 208),
            # 27 (5) stack trigram
            (201, 202, 209),
            # 28-32 distance (3), queue tag trigram, bias
            (5, 209, 202), (5, 109, 102), (5,), (210, 211, 212), (),
        ]},
    # s0 = 10 (left child 9); queue 11, 12 and no q2 (0); 10 - 2 = 8, capped to 5
    "dist8_queue2": {
        "actions": "SSSSLSLSLSLSLSLSL", "stack": [1, 2, 10], "b": 11,
        "lc": {4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8, 10: 9}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (110,), (210,), (110, 210), (102,), (202,), (102, 202), (111,), (211,), (111, 211),
            # 9-16 (2) bigrams
            (110, 102), (210, 202), (210, 211), (110, 210, 202), (210, 102, 202), (110, 102, 202),
            (110, 210, 102), (110, 210, 102, 202),
            # 17-20 (3) trigrams
            (210, 211, 212), (202, 210, 211), (110, 211, 212), (202, 110, 211),
            # 21-26 (4) children
            (202, 0, 210), (202, 0, 210), (202, 210, 0), (202, 0, 110), (202, 0, 110),
            (202, 110, 209),
            # 27 (5) stack trigram
            (201, 202, 210),
            # 28-32 distance (3), queue tag trigram, bias
            (5, 210, 202), (5, 110, 102), (5,), (211, 212, 0), (),
        ]},
    # s0 = 11 (left child 10); queue 12 only (q1 = q2 = 0); 11 - 2 = 9, capped to 5
    "dist9_queue1": {
        "actions": "SSSSLSLSLSLSLSLSLSL", "stack": [1, 2, 11], "b": 12,
        "lc": {4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8, 10: 9, 11: 10}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (111,), (211,), (111, 211), (102,), (202,), (102, 202), (112,), (212,), (112, 212),
            # 9-16 (2) bigrams
            (111, 102), (211, 202), (211, 212), (111, 211, 202), (211, 102, 202), (111, 102, 202),
            (111, 211, 102), (111, 211, 102, 202),
            # 17-20 (3) trigrams
            (211, 212, 0), (202, 211, 212), (111, 212, 0), (202, 111, 212),
            # 21-26 (4) children
            (202, 0, 211), (202, 0, 211), (202, 211, 0), (202, 0, 111), (202, 0, 111),
            (202, 111, 210),
            # 27 (5) stack trigram
            (201, 202, 211),
            # 28-32 distance (3), queue tag trigram, bias
            (5, 211, 202), (5, 111, 102), (5,), (212, 0, 0), (),
        ]},
    # s0 = 12 (left child 11); empty queue; 12 - 2 = 10 >= 10: dist 6
    "dist10_empty_queue": {
        "actions": "SSSSLSLSLSLSLSLSLSLSL", "stack": [1, 2, 12], "b": 13,
        "lc": {4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8, 10: 9, 11: 10, 12: 11}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (112,), (212,), (112, 212), (102,), (202,), (102, 202), (0,), (0,), (0, 0),
            # 9-16 (2) bigrams
            (112, 102), (212, 202), (212, 0), (112, 212, 202), (212, 102, 202), (112, 102, 202),
            (112, 212, 102), (112, 212, 102, 202),
            # 17-20 (3) trigrams
            (212, 0, 0), (202, 212, 0), (112, 0, 0), (202, 112, 0),
            # 21-26 (4) children
            (202, 0, 212), (202, 0, 212), (202, 212, 0), (202, 0, 112), (202, 0, 112),
            (202, 112, 211),
            # 27 (5) stack trigram
            (201, 202, 212),
            # 28-32 distance (3), queue tag trigram, bias
            (6, 212, 202), (6, 112, 102), (6,), (0, 0, 0), (),
        ]},
    # s1 = 1 (no children), s0 = 12 (left child 11), no s2; empty queue; 12 - 1 = 11: dist 6
    "dist11_no_s2": {
        "actions": "SSSLSLSLSLSLSLSLSLSLSL", "stack": [1, 12], "b": 13,
        "lc": {3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8, 10: 9, 11: 10, 12: 11}, "rc": {},
        "templates": [
            # 0-8 (1) unigrams
            (112,), (212,), (112, 212), (101,), (201,), (101, 201), (0,), (0,), (0, 0),
            # 9-16 (2) bigrams
            (112, 101), (212, 201), (212, 0), (112, 212, 201), (212, 101, 201), (112, 101, 201),
            (112, 212, 101), (112, 212, 101, 201),
            # 17-20 (3) trigrams
            (212, 0, 0), (201, 212, 0), (112, 0, 0), (201, 112, 0),
            # 21-26 (4) children
            (201, 0, 212), (201, 0, 212), (201, 212, 0), (201, 0, 112), (201, 0, 112),
            (201, 112, 211),
            # 27 (5) stack trigram
            (0, 201, 212),
            # 28-32 distance (3), queue tag trigram, bias
            (6, 212, 201), (6, 112, 101), (6,), (0, 0, 0), (),
        ]},
    # final: s0 = 1 = the root with right child 12, nothing else (s0rct without s1)
    "final": {
        "actions": "SSSLSLSLSLSLSLSLSLSLSLR", "stack": [1], "b": 13,
        "lc": {3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8, 10: 9, 11: 10, 12: 11}, "rc": {1: 12},
        "templates": [
            # 0-8 (1) unigrams
            (101,), (201,), (101, 201), (0,), (0,), (0, 0), (0,), (0,), (0, 0),
            # 9-16 (2) bigrams
            (101, 0), (201, 0), (201, 0), (101, 201, 0), (201, 0, 0), (101, 0, 0), (101, 201, 0),
            (101, 201, 0, 0),
            # 17-20 (3) trigrams
            (201, 0, 0), (0, 201, 0), (101, 0, 0), (0, 101, 0),
            # 21-26 (4) children
            (0, 0, 201), (0, 0, 201), (0, 201, 212), (0, 0, 101), (0, 0, 101), (0, 101, 0),
            # 27 (5) stack trigram
            (0, 0, 201),
            # 28-32 distance (3), queue tag trigram, bias
            (0, 201, 0), (0, 101, 0), (0,), (0, 0, 0), (),
        ]},
}


def py_hash(t, a, b, c, d, mask):
    """``_hash`` re-implemented in plain Python (int64 arithmetic: wrap-around multiply,
    arithmetic right shift), to pin the hash function itself."""
    def wrap(x):
        x &= (1 << 64) - 1
        return x - (1 << 64) if x >= 1 << 63 else x

    h = 1469598103934665603
    for v in (t, a, b, c, d):
        h = wrap((h ^ v) * 1099511628211)
        h = h ^ (h >> 29)
    return h & mask


def test_hash_function_pinned():
    # literal ids (FULL mask): the bias template, and two that the states below produce
    assert _hash(32, 0, 0, 0, 0, FULL) == 544047480014035734
    assert _hash(31, 208, 209, 210, 0, FULL) == 8980891276309184118  # "children": q0t q1t q2t
    assert _hash(30, 5, 0, 0, 0, FULL) == 5175240732410050016  # dist 5
    assert _hash(30, 4, 0, 0, 0, FULL) == 2105193463945891552  # dist 4 (differs)
    assert _hash(32, 0, 0, 0, 0, 2 ** 10 - 1) == 790
    rng = np.random.default_rng(11)
    for _ in range(2000):
        bits = int(rng.choice([4, 12, 40, 62]))
        args = [int(x) for x in rng.integers(0, 1 << bits, size=5)]
        mask = int(rng.choice([FULL, 2 ** 10 - 1, 2 ** 22 - 1]))
        assert _hash(*args, mask) == py_hash(*args, mask)
    # every atom position matters, and atoms are not interchangeable
    base = _hash(31, 208, 209, 210, 0, FULL)
    assert len({base, _hash(31, 208, 209, 209, 0, FULL), _hash(31, 208, 210, 209, 0, FULL),
                _hash(30, 208, 209, 210, 0, FULL), _hash(31, 208, 209, 210, 1, FULL)}) == 5


@pytest.mark.parametrize("name", list(STATES))
def test_features_against_hand_written_atoms(name):
    spec = STATES[name]
    stack, sp, b, lc, rc = build(spec["actions"])
    # the state is the hand-derived one
    assert stack[:sp].tolist() == spec["stack"] and b == spec["b"]
    assert {i: int(lc[i]) for i in range(1, N + 1) if lc[i]} == spec["lc"]
    assert {i: int(rc[i]) for i in range(1, N + 1) if rc[i]} == spec["rc"]
    for mask in MASKS:
        got = run_features(stack, sp, b, lc, rc, mask).tolist()
        want = expected_ids(spec["templates"], mask)
        bad = [k for k in range(N_TEMPLATES) if got[k] != want[k]]
        assert not bad, f"{name}: templates {bad} differ from the hand-written atoms (mask {mask})"
        assert all(0 <= h <= mask for h in got)
    out = run_features(stack, sp, b, lc, rc, FULL)
    assert out[32] == 544047480014035734  # the bias feature: the same in every state
    if name == "children":
        assert out[31] == 8980891276309184118  # q0t q1t q2t = tags of tokens 8, 9, 10
    if name == "dist5":
        assert out[30] == 5175240732410050016  # dist 5
    # under FULL the 33 ids of a state are distinct (the template id is hashed in)
    assert len(set(out.tolist())) == N_TEMPLATES


# s0 - s1 -> the distance atom: the value itself up to 5, 5 for 6..9, 6 from 10 on
DIST = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 5, 7: 5, 8: 5, 9: 5, 10: 6, 11: 6}


def test_distance_atom_for_every_gap():
    """Templates 28-30 for a two-item stack [s1, s0] at every gap 1..11 (hand-built arrays;
    reachable: shift s1, shift and reduce the tokens between, shift s0)."""
    seen = set()
    for s1 in range(1, N):
        for s0 in range(s1 + 1, N + 1):
            stack = np.full(N + 2, 7, dtype=np.int64)
            stack[:2] = [s1, s0]
            lc = np.zeros(N + 2, dtype=np.int64)
            rc = np.zeros(N + 2, dtype=np.int64)
            out = run_features(stack, 2, s0 + 1, lc, rc, FULL)
            d = DIST[s0 - s1]
            seen.add(d)
            s0w, s0t, s1w, s1t = 100 + s0, 200 + s0, 100 + s1, 200 + s1
            assert out[28] == _hash(28, d, s0t, s1t, 0, FULL), (s1, s0)
            assert out[29] == _hash(29, d, s0w, s1w, 0, FULL), (s1, s0)
            assert out[30] == _hash(30, d, 0, 0, 0, FULL), (s1, s0)
    assert seen == {1, 2, 3, 4, 5, 6}
