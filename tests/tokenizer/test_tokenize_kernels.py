"""The learnt tokenizer's numba kernels against plain-Python references on random inputs: the
hashed character features (every feature id, recomputed from its definition), the known-token
table, and constrained Viterbi decoding (brute force over every label sequence)."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from structkit.tokenizer import features as F
from structkit.tokenizer.model import tag_chars, NEG

M64 = (1 << 64) - 1
ALPHABET = "aB. ,'-1çЖ中\t@:/wா"


def mix(h: int, v: int) -> int:
    x = ((h ^ (v & M64)) * 0x9E3779B97F4A7C15) & M64
    x ^= x >> 29
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 32
    return x


def feature(tid, a, b, c, bits):
    h = mix(tid + 1, a)
    h = mix(h, b)
    h = mix(h, c)
    return h & ((1 << bits) - 1)


def fnv(s: str) -> int:
    h = 0xCBF29CE484222325
    for ch in s:
        h = ((h ^ ord(ch)) * 0x100000001B3) & M64
    return h | 1


def reference_rows(text: str, known: set[str], bits: int, feats: int = 0, rl=None) -> list[list[int]]:
    cls_t, low = F.tables()
    n = len(text)
    cps = [ord(c) for c in text]
    lo = [int(low[c]) if c < 0x10000 else c for c in cps]
    cl = [int(cls_t[c]) if c < 0x10000 else 11 for c in cps]
    LC = lambda i: lo[i] if 0 <= i < n else (-1 if i < 0 else -2)
    CL = lambda i: cl[i] if 0 <= i < n else 0
    lowered = "".join(chr(c) for c in lo)
    def starts(j):  # known lengths starting at j
        return [l for l in range(1, F.MAX_KNOWN + 1) if j + l <= n and lowered[j:j + l] in known]
    def inrun(i):
        return 2 <= CL(i) <= 7
    def run(i):
        r = 0
        while i - r >= 0 and inrun(i - r):
            r += 1
        return min(r, 20)
    def wend(i):
        if not inrun(i):
            return 0
        a = i
        while a - 1 >= 0 and inrun(a - 1):
            a -= 1
        h = mix(7, LC(a))
        for k in range(a + 1, i + 1):
            h = mix(h, LC(k))
        return h
    def wbeg(j):
        if j >= n or not inrun(j):
            return 0
        b = j
        while b + 1 < n and inrun(b + 1):
            b += 1
        h = 0
        for k in range(b, j - 1, -1):
            h = mix((h + 11) & M64, LC(k))
        return h
    rows = []
    for i in range(n):
        f = [(0, 0, 0, 0)]
        f += [(1 + d + 3, LC(i + d), 0, 0) for d in range(-3, 4)]
        f += [(8, LC(i - 2), LC(i - 1), 0), (9, LC(i - 1), LC(i), 0), (10, LC(i), LC(i + 1), 0),
              (11, LC(i + 1), LC(i + 2), 0), (12, LC(i - 2), LC(i - 1), LC(i)),
              (13, LC(i - 1), LC(i), LC(i + 1)), (14, LC(i), LC(i + 1), LC(i + 2)),
              (15, LC(i + 1), LC(i + 2), LC(i + 3))]
        f += [(16, CL(i), CL(i + 1), 0), (17, CL(i - 1), CL(i), 0), (18, CL(i + 1), CL(i + 2), 0),
              (19, CL(i), 0, 0), (20, CL(i + 1), 0, 0), (21, CL(i), CL(i + 1), CL(i + 2)),
              (22, CL(i - 2), CL(i - 1), CL(i))]
        f += [(23, CL(i - 1), CL(i), CL(i + 1)),
              (24, CL(i - 2) * 16 + CL(i - 1), CL(i), CL(i + 1) * 16 + CL(i + 2)),
              (25, CL(i), LC(i + 1), 0), (26, LC(i), CL(i + 1), 0), (27, cps[i], 0, 0),
              (28, cps[i + 1] if i + 1 < n else -2, 0, 0)]
        j = next((k for k in range(i + 1, n) if CL(k) != 1), n)
        ncl = CL(j) if j < n else 0
        nlc = LC(j) if j < n else -2
        f += [(29, CL(i), ncl, CL(i + 1)), (30, LC(i), nlc, CL(i + 1)), (31, run(i), CL(i + 1), ncl)]
        ends = max([l for j0 in range(max(0, i - F.MAX_KNOWN + 1), i + 1) for l in starts(j0) if j0 + l - 1 == i], default=0)
        cross = max([l for j0 in range(max(0, i - F.MAX_KNOWN + 1), i + 1) for l in starts(j0) if j0 + l - 1 > i], default=0)
        st = max(starts(i + 1), default=0) if i + 1 < n else 0
        nw = wbeg(j)
        f += [(32, ends, st, cross), (33, ends, CL(i + 1), 0), (34, st, CL(i), 0),
              (35, cross, CL(i), CL(i + 1)), (36, ends, LC(i), LC(i + 1)), (37, cross, LC(i), LC(i + 1)),
              (38, LC(i), ncl, run(i)), (39, CL(i - 1), CL(i), ncl),
              (40, wend(i), LC(i + 1), 0), (41, wend(i), ncl, CL(i + 1)), (42, nw, CL(i), 0),
              (43, wend(i), nw, LC(i + 1)),
              (44, run(i - 1) if i > 0 else 0, LC(i), ncl), (45, wend(i - 1) if i > 0 else 0, LC(i), 0),
              (46, wend(i - 1) if i > 0 else 0, nw, CL(i))]
        def letters(i):   # (letters without marks of the run ending at i, the class before it)
            if i < 0 or not inrun(i):
                return 0, 0
            a = i
            while a - 1 >= 0 and inrun(a - 1):
                a -= 1
            return min(6, sum(1 for q in range(a, i + 1) if CL(q) != 5)), CL(a - 1)
        if feats & F.SHORT:
            ps, pb = letters(i - 1)
            ws, wb = letters(i)
            f += [(47, ps, pb, LC(i)), (48, ps * 16 + pb, CL(i), ncl * 16 + CL(i + 1)),
                  (49, ws, wb, LC(i + 1)), (50, ws * 16 + wb, CL(i + 1), ncl)]
        if feats & F.URL:
            a = i
            while a - 1 >= 0 and CL(a - 1) != 1:
                a -= 1
            b = i
            while b < n and CL(b) != 1:
                b += 1
            chunk = text[a:b].lower() if CL(i) != 1 else ""
            at = any(chunk[q] == "@" and 0 < q < len(chunk) - 1 and 2 <= CL(a + q - 1) <= 7
                     and 2 <= CL(a + q + 1) <= 7 for q in range(len(chunk)))
            u = 1 if "://" in chunk or (chunk.startswith("www.") and len(chunk) > 4) else (2 if at else 0)
            f += [(51, u, CL(i), CL(i + 1)), (52, u, LC(i), LC(i + 1))]
        if feats & F.RULES:
            R = lambda q: rl[q] + 1 if rl is not None and len(rl) == n and 0 <= q else 0   # noqa: E731
            f += [(53, R(i), CL(i), CL(i + 1)), (54, R(i), LC(i), LC(i + 1)), (55, R(i), R(i - 1), ncl)]
        assert len(f) == F.n_features(feats)
        rows.append([feature(t, a, b, c, bits) for t, a, b, c in f])
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_char_features_against_the_reference(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30)))
    words = {"".join(rng.choice("ab.,") for _ in range(rng.randint(1, 4))) for _ in range(6)} | {"b.", "a"}
    bits = rng.choice([10, 16, 20])
    feats = seed % (F.ALL_GROUPS + 1)
    known = F.known_table(sorted(words))
    rl = np.array([rng.randrange(4) for _ in text], dtype=np.int64) if seed % 3 else F.NO_RULES
    out = np.zeros((len(text), F.n_features(feats)), dtype=np.int32)
    F.char_features(F.code_points(text), F.tables(), known, bits, feats, rl, out)
    assert out.tolist() == reference_rows(text, {w.lower() for w in words}, bits, feats, rl.tolist())


@pytest.mark.parametrize("text", ["see http://x.org/a now", "www.abc.de, www.", "mail a@b.c ok @x a@ ",
                                  "ப. செல்வசிங், ஐ.நா. ஆர். x", "Mr. J. R. R. Tolkien wrote"])
def test_feature_groups_against_the_reference(text):
    """Every group on texts with what they look for: addresses, initials, dotted abbreviations."""
    known = F.known_table(["a", "ஐ.நா."])
    for feats in range(F.ALL_GROUPS + 1):
        out = np.zeros((len(text), F.n_features(feats)), dtype=np.int32)
        rl = F.rule_labels(text, feats)
        F.char_features(F.code_points(text), F.tables(), known, 16, feats, rl, out)
        assert out.tolist() == reference_rows(text, {"a", "ஐ.நா."}, 16, feats, rl.tolist())


def test_rule_labels_are_the_english_rules_segmentation():
    text = "I can't go. Mr. Smith came."
    got = "".join("NTSW"[y] for y in F.rule_labels(text, F.RULES))
    assert got == "TWNNNNTWNTSWNNTWNNNNTWNNNTS"   # "can't" one token (two words)
    assert F.rule_labels(text, F.SHORT | F.URL).shape == (0,)


def test_known_table_holds_exactly_its_forms():
    forms = ["Mrd.", "ca.", "du", "中国", "x" * (F.MAX_KNOWN + 1)]
    table = F.known_table(forms)
    for f, expect in [("mrd.", True), ("CA.", True), ("du", True), ("中国", True), ("d", False),
                      ("x" * (F.MAX_KNOWN + 1), False), ("mrd", False)]:
        assert F.known_lookup(table, np.uint64(fnv(f.lower()))) is expect, f
    assert int(np.count_nonzero(table)) == 4


def brute_force(text, Wt, Tt, rows):
    """The best constrained label sequence by enumeration (ties: as viterbi_ws breaks them is
    not asserted; the score is)."""
    n, L = len(text), Wt.shape[1]
    E = [[sum(Wt[r, y] for r in rows[i]) for y in range(L)] for i in range(n)]
    last = max((i for i, c in enumerate(text) if not c.isspace()), default=-1)
    def allowed(i, y):
        if text[i].isspace():
            return y in (0, 3)
        return y != 3 and not (i == last and y in (0, 1))
    best = -np.inf
    for seq in itertools.product(range(L), repeat=n):
        if not all(allowed(i, y) for i, y in enumerate(seq)):
            continue
        s = Tt[L, seq[0]] + Tt[seq[-1], L] + sum(E[i][y] for i, y in enumerate(seq))
        s += sum(Tt[a, b] for a, b in zip(seq, seq[1:]))
        best = max(best, s)
    return best


@pytest.mark.parametrize("seed", range(10))
def test_tag_chars_finds_the_best_allowed_sequence(seed):
    rng = np.random.default_rng(seed)
    text = "".join(rng.choice(list("ab. 1")) for _ in range(int(rng.integers(1, 7))))
    bits = 8
    Wt = rng.normal(size=(1 << bits, 4))
    Tt = rng.normal(size=(5, 5))
    known = F.known_table(["a", "b."])
    feats = seed % (F.ALL_GROUPS + 1)
    rl = F.rule_labels(text, feats)
    out = tag_chars(F.code_points(text), F.tables(), known, bits, feats, rl, Wt, Tt)
    rows = np.zeros((len(text), F.n_features(feats)), dtype=np.int32)
    F.char_features(F.code_points(text), F.tables(), known, bits, feats, rl, rows)
    L = 4
    E = [[sum(Wt[r, y] for r in rows[i]) for y in range(L)] for i in range(len(text))]
    seq = out.tolist()
    got = Tt[L, seq[0]] + Tt[seq[-1], L] + sum(E[i][y] for i, y in enumerate(seq)) + \
        sum(Tt[a, b] for a, b in zip(seq, seq[1:]))
    assert got == pytest.approx(brute_force(text, Wt, Tt, rows.tolist()))
    for i, y in enumerate(seq):  # the constraints hold
        assert (y in (0, 3)) if text[i].isspace() else y != 3


def reference_spans(text: str, labels: list[int]):
    """Token spans by the rules in words: tokens run to a character labelled T or S (S ends a
    sentence), a W ends the token before it, whitespace never starts or ends a token, and the
    last token ends a sentence."""
    toks, sent, start = [], [], None
    for i, y in enumerate(labels + [3]):
        if start is None:
            if y != 3 and i < len(text) and not text[i].isspace():
                start = i
            else:
                continue
        if y == 3:
            end = i
            while end > start and text[end - 1].isspace():
                end -= 1
            toks.append((start, end))
            sent.append(False)
            start = None
        elif y in (1, 2):
            toks.append((start, i + 1))
            sent.append(y == 2)
            start = None
    if sent:
        sent[-1] = True
    return toks, sent


@pytest.mark.parametrize("seed", range(30))
def test_token_spans_against_the_reference(seed):
    from structkit.tokenizer.model import token_spans

    rng = random.Random(seed)
    text = "".join(rng.choice("ab .\t") for _ in range(rng.randint(0, 25)))
    labels = [rng.randrange(4) for _ in text]
    space = np.array([c.isspace() for c in text], dtype=np.bool_)
    starts, ends, sent = token_spans(np.array(labels, dtype=np.int32), space)
    toks, ref_sent = reference_spans(text, labels)
    assert list(zip(starts.tolist(), ends.tolist())) == toks
    assert sent.tolist() == ref_sent
