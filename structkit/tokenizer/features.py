"""Character features of the learnt tokenizer, computed by one numba kernel over code points.

For the decision after character ``i`` (does a token, or a sentence, end here?) the features
are hashed into ``2**bits`` rows, each the hash of a template id and its values:
character n-grams (lower-cased) in a window of three either side, the characters' classes
(space, upper, lower, caseless letter, mark, digit, other number, full stop, other
punctuation, symbol, other) and their n-grams, the case-sensitive characters at ``i`` and
``i+1``, the class and character of the next non-space character, the length of the letter or
digit run that ends at ``i``, and what the training data knows about the surrounding
letters: the longest token of the training data (lower-cased, up to ``MAX_KNOWN`` characters)
that ends at ``i``, starts at ``i+1``, or runs across the boundary after ``i``.

Optional groups of features (``GROUPS``, a model's ``--features``; dev chose the default
``short,url``, results/tokenize-dev.md): ``short``, the letters (vowel signs not counted) of the
word before and of the word ending at the boundary, with the class of what precedes that word
(initials and dotted abbreviations: "ப. செல்வசிங்", "ஐ.நா."); ``url``, whether the
whitespace-delimited chunk is a web or e-mail address; ``rules``, the English rules' label at
the character (for English; the rules run too).

``n_features(feats)`` features per character, so the CSR of a text is ``indptr = arange * n``.
Everything is linear in the text: the known-token lookups are ``MAX_KNOWN`` hash probes per
character into an open-addressing table of 64-bit hashes.
"""
from __future__ import annotations

import numpy as np

from structkit.jit import njit
from structkit.text.english import EnglishTokenizer

MAX_KNOWN = 16         # longest known token looked up (characters; Vietnamese words run to 15)
BASE_FEATURES = 47     # features per character always computed (template ids 0-46)
# optional feature groups, a bit mask (``TokenizeConfig.features`` names them; chosen on dev,
# results/tokenize-dev.md): SHORT = the letters, without vowel signs, of the word before and
# the word ending at a boundary with what precedes that word (initials, abbreviations);
# URL = whether the whitespace-delimited chunk looks like a web address or an e-mail address;
# RULES = the English rules' decision at the character (``rule_labels``: inside a token, token
# end, sentence end, space), for English, at the cost of running the rules too
SHORT, URL, RULES = 1, 2, 4
GROUP_SIZES = ((SHORT, 4), (URL, 2), (RULES, 3))
ALL_GROUPS = SHORT | URL | RULES
N_FEATURES = BASE_FEATURES + sum(k for _, k in GROUP_SIZES)   # the most, with every group
GROUPS = {"short": SHORT, "url": URL, "rules": RULES}


def group_names(value) -> tuple[str, ...]:
    """The feature groups named by ``value`` (comma-separated names, "all" or "none", or a
    list of names), in ``GROUPS`` order; ValueError naming a bad one."""
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(v, str) for v in names):
        raise ValueError(f"expected feature group names, got {value!r}")
    names = [v for v in names if v]
    if names in (["all"], ["none"]):
        return tuple(GROUPS) if names == ["all"] else ()
    bad = [v for v in names if v not in GROUPS]
    if bad:
        raise ValueError(f"unknown tokenizer feature group {bad[0]!r} (known: {', '.join(GROUPS)}, "
                         "or all, or none)")
    return tuple(g for g in GROUPS if g in names)


def group_mask(names) -> int:
    """The bit mask of the groups ``names`` (None, as in a model saved before groups: 0)."""
    return sum(GROUPS[g] for g in names or ())


PAD = 0                # the class of the positions before and after the text
CLASSES = ("pad", "space", "upper", "lower", "letter", "mark", "digit", "number", "period",
           "punct", "symbol", "other")


# Unicode general categories (the full one, else its first letter) -> class
_CATEGORY = {"Lu": "upper", "Lt": "upper", "Ll": "lower", "L": "letter", "M": "mark", "Nd": "digit",
             "N": "number", "P": "punct", "S": "symbol"}


def class_tables() -> tuple[np.ndarray, np.ndarray]:
    """(class, lower-cased code point) of every code point below 0x10000 (above it: the class
    ``other`` and the code point itself), from Python's Unicode data; built once per process."""
    import unicodedata

    cls = np.full(0x10000, CLASSES.index("other"), dtype=np.int8)
    low = np.arange(0x10000, dtype=np.uint32)
    ids = {name: k for k, name in enumerate(CLASSES)}
    for cp in range(0x10000):
        ch = chr(cp)
        if ch.isspace():
            cls[cp] = ids["space"]
            continue
        cat = unicodedata.category(ch)
        c = "period" if ch == "." else _CATEGORY.get(cat) or _CATEGORY.get(cat[0], "other")
        cls[cp] = ids[c]
        lo = ch.lower()
        if len(lo) == 1:
            low[cp] = ord(lo)
    return cls, low


_TABLES: tuple[np.ndarray, np.ndarray] | None = None


def tables() -> tuple[np.ndarray, np.ndarray]:
    global _TABLES
    if _TABLES is None:
        _TABLES = class_tables()
    return _TABLES


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as uint32 (surrogate escapes kept as their code point)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@njit
def _mix(h, v):
    """One step of a 64-bit multiplicative hash (the splitmix64 finaliser over h ^ v)."""
    x = (h ^ np.uint64(v)) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(32)
    return x


@njit
def _fnv(cps, low, a, b):
    """The hash of the lower-cased characters a..b-1 (the known-token table's key)."""
    h = np.uint64(0xCBF29CE484222325)
    for k in range(a, b):
        c = cps[k]
        if c < 0x10000:
            c = low[c]
        h = (h ^ np.uint64(c)) * np.uint64(0x100000001B3)
    return h | np.uint64(1)  # never 0, the empty slot


@njit
def _probe(table, key):
    """The slot of ``key`` in the open-addressing table, or the empty slot where it would go:
    at most one pass over the table (a table with no empty slot, which no training writes and
    the loader refuses, ends the probe where it started)."""
    mask = np.uint64(table.shape[0] - 1)
    slot = key & mask
    for _ in range(table.shape[0]):
        if table[slot] == key or table[slot] == 0:
            return slot
        slot = (slot + np.uint64(1)) & mask
    return slot


@njit
def known_lookup(table, key):
    return table[_probe(table, key)] == key


@njit
def known_insert(table, key):
    table[_probe(table, key)] = key


@njit
def known_masks(cps, low, known, out):
    """out[j]: bit l-1 set when characters j..j+l-1 (l <= MAX_KNOWN) are a known token."""
    n = cps.shape[0]
    for j in range(n):
        m = 0
        if known.shape[0] > 1:
            h = np.uint64(0xCBF29CE484222325)
            for l in range(1, MAX_KNOWN + 1):
                if j + l > n:
                    break
                c = cps[j + l - 1]
                if c < 0x10000:
                    c = low[c]
                h = (h ^ np.uint64(c)) * np.uint64(0x100000001B3)
                if known_lookup(known, h | np.uint64(1)):
                    m |= 1 << (l - 1)
        out[j] = m


@njit
def _feature(tid, a, b, c, mask):
    h = _mix(np.uint64(tid + 1), a)
    h = _mix(h, b)
    h = _mix(h, c)
    return np.int32(h & mask)


@njit
def prepare(cps, tab, known, rl):
    """Per-character arrays the features read, padded by P = 4 positions either side:
    lower-cased code points and classes; and, unpadded, the rules' labels ``rl`` (1 + a label,
    0 where ``rl`` is empty), the known-token masks, the next
    non-space position after each character, and the letter/digit run ending at each."""
    cls_t, low = tab
    n = cps.shape[0]
    P = 4
    lc = np.zeros(n + 2 * P, dtype=np.int64)
    cl = np.zeros(n + 2 * P, dtype=np.int64)
    for i in range(n):
        c = cps[i]
        if c < 0x10000:
            lc[i + P] = low[c]
            cl[i + P] = cls_t[c]
        else:
            lc[i + P] = c
            cl[i + P] = 11
    for i in range(P):
        lc[i] = -1
        lc[n + P + i] = -2
    km = np.zeros(n + 1, dtype=np.int64)
    known_masks(cps, low, known, km[:n])
    lmax = np.zeros(n + 1, dtype=np.int64)   # the longest known token starting at each j
    for j in range(n):
        m = km[j]
        for l in range(MAX_KNOWN, 0, -1):
            if m & (1 << (l - 1)):
                lmax[j] = l
                break
    nxt = np.empty(n + 1, dtype=np.int64)
    nxt[n] = n
    for i in range(n - 1, -1, -1):
        nxt[i] = i if cl[i + P] != 1 else nxt[i + 1]
    run = np.zeros(n, dtype=np.int64)
    # the letters (not marks) of the run ending at each i, and the class before the run
    syl = np.zeros(n, dtype=np.int64)
    bcl = np.zeros(n, dtype=np.int64)
    # hashes of the letter/digit run ending at each i (0 outside runs) and of the rest of the
    # run starting at each j: the word before a boundary and the word after it
    wend = np.zeros(n + 1, dtype=np.uint64)
    wbeg = np.zeros(n + 1, dtype=np.uint64)
    r = 0
    s = 0
    b = 0
    h = np.uint64(0)
    for i in range(n):
        if 2 <= cl[i + P] <= 7:
            r = r + 1 if r < 20 else 20
            h = _mix(h, lc[i + P]) if r > 1 else _mix(np.uint64(7), lc[i + P])
            if r == 1:
                s = 0
                b = cl[i + P - 1]
            if cl[i + P] != 5 and s < 6:
                s += 1
        else:
            r = 0
            s = 0
            b = 0
            h = np.uint64(0)
        run[i] = r
        syl[i] = s
        bcl[i] = b
        wend[i] = h
    for j in range(n - 1, -1, -1):
        if 2 <= cl[j + P] <= 7:
            wbeg[j] = _mix(wbeg[j + 1] + np.uint64(11), lc[j + P])
        # web and e-mail addresses: each whitespace-delimited chunk with "://", starting "www."
    # (1), or with an "@" between letters or digits (2); linear, one pass per chunk
    url = np.zeros(n, dtype=np.int64)
    a = 0
    while a < n:
        if cl[a + P] == 1:
            a += 1
            continue
        b = a
        flag = 0
        while b < n and cl[b + P] != 1:
            if lc[b + P] == 58 and b + 2 < n and lc[b + P + 1] == 47 and lc[b + P + 2] == 47:
                flag = 1
            elif lc[b + P] == 64 and flag == 0 and b > a and b + 1 < n and 2 <= cl[b + P - 1] <= 7 \
                    and 2 <= cl[b + P + 1] <= 7:
                flag = 2
            b += 1
        if flag == 0 and b - a > 4 and lc[a + P] == 119 and lc[a + P + 1] == 119 and lc[a + P + 2] == 119 \
                and lc[a + P + 3] == 46:
            flag = 1
        for q in range(a, b):
            url[q] = flag
        a = b
    rul = np.zeros(n + 1, dtype=np.int64)
    if rl.shape[0] == n:
        for i in range(n):
            rul[i] = rl[i] + 1
    return lc, cl, km, nxt, run, wend, wbeg, syl, bcl, url, rul, lmax


@njit
def char_row(i, cps, prep, mask, feats, o):
    """The hashed feature rows of the decision after character i, into o (the base ones,
    then the groups in the bit mask ``feats``); returns how many (``n_features(feats)``)."""
    lc, cl, km, nxt, run, wend, wbeg, syl, bcl, url, rul, lmax = prep
    n = cps.shape[0]
    P = 4
    p = i + P
    k = 0
    o[k] = _feature(0, 0, 0, 0, mask); k += 1
    for d in range(-3, 4):
        o[k] = _feature(1 + d + 3, lc[p + d], 0, 0, mask); k += 1           # 7 unigrams
    o[k] = _feature(8, lc[p - 2], lc[p - 1], 0, mask); k += 1
    o[k] = _feature(9, lc[p - 1], lc[p], 0, mask); k += 1
    o[k] = _feature(10, lc[p], lc[p + 1], 0, mask); k += 1
    o[k] = _feature(11, lc[p + 1], lc[p + 2], 0, mask); k += 1
    o[k] = _feature(12, lc[p - 2], lc[p - 1], lc[p], mask); k += 1
    o[k] = _feature(13, lc[p - 1], lc[p], lc[p + 1], mask); k += 1
    o[k] = _feature(14, lc[p], lc[p + 1], lc[p + 2], mask); k += 1
    o[k] = _feature(15, lc[p + 1], lc[p + 2], lc[p + 3], mask); k += 1
    o[k] = _feature(16, cl[p], cl[p + 1], 0, mask); k += 1                # class n-grams
    o[k] = _feature(17, cl[p - 1], cl[p], 0, mask); k += 1
    o[k] = _feature(18, cl[p + 1], cl[p + 2], 0, mask); k += 1
    o[k] = _feature(19, cl[p], 0, 0, mask); k += 1
    o[k] = _feature(20, cl[p + 1], 0, 0, mask); k += 1
    o[k] = _feature(21, cl[p], cl[p + 1], cl[p + 2], mask); k += 1
    o[k] = _feature(22, cl[p - 2], cl[p - 1], cl[p], mask); k += 1
    o[k] = _feature(23, cl[p - 1], cl[p], cl[p + 1], mask); k += 1
    o[k] = _feature(24, cl[p - 2] * 16 + cl[p - 1], cl[p], cl[p + 1] * 16 + cl[p + 2], mask); k += 1
    o[k] = _feature(25, cl[p], lc[p + 1], 0, mask); k += 1
    o[k] = _feature(26, lc[p], cl[p + 1], 0, mask); k += 1
    o[k] = _feature(27, np.int64(cps[i]), 0, 0, mask); k += 1                  # case kept
    o[k] = _feature(28, np.int64(cps[i + 1]) if i + 1 < n else -2, 0, 0, mask); k += 1
    j = nxt[i + 1] if i + 1 < n else n
    ncl = cl[j + P] if j < n else 0
    nlc = lc[j + P] if j < n else -2
    o[k] = _feature(29, cl[p], ncl, cl[p + 1], mask); k += 1
    o[k] = _feature(30, lc[p], nlc, cl[p + 1], mask); k += 1
    o[k] = _feature(31, run[i], cl[p + 1], ncl, mask); k += 1
    # known tokens: ending at i, starting at i+1, running across the boundary after i (the
    # longest starting at j0 crosses it if any from j0 does: lmax, the longest from each j0)
    ends = 0
    for l in range(min(MAX_KNOWN, i + 1), 0, -1):
        if km[i - l + 1] & (1 << (l - 1)):
            ends = l
            break
    cross = 0
    for j0 in range(max(0, i - MAX_KNOWN + 1), i + 1):
        l = lmax[j0]
        if l > i - j0 + 1 and l > cross:
            cross = l
    starts = lmax[i + 1] if i + 1 < n else 0
    o[k] = _feature(32, ends, starts, cross, mask); k += 1
    o[k] = _feature(33, ends, cl[p + 1], 0, mask); k += 1
    o[k] = _feature(34, starts, cl[p], 0, mask); k += 1
    o[k] = _feature(35, cross, cl[p], cl[p + 1], mask); k += 1
    o[k] = _feature(36, ends, lc[p], lc[p + 1], mask); k += 1
    o[k] = _feature(37, cross, lc[p], lc[p + 1], mask); k += 1
    o[k] = _feature(38, lc[p], ncl, run[i], mask); k += 1
    o[k] = _feature(39, cl[p - 1], cl[p], ncl, mask); k += 1
    nw = wbeg[j] if j < n else np.uint64(0)
    o[k] = _feature(40, wend[i], lc[p + 1], 0, mask); k += 1
    o[k] = _feature(41, wend[i], ncl, cl[p + 1], mask); k += 1
    o[k] = _feature(42, nw, cl[p], 0, mask); k += 1
    o[k] = _feature(43, wend[i], nw, lc[p + 1], mask); k += 1
    # the word just before a punctuation mark (abbreviations, initials: "Mrd.", "டி.")
    pw = wend[i - 1] if i > 0 else np.uint64(0)
    pr = run[i - 1] if i > 0 else 0
    o[k] = _feature(44, pr, lc[p], ncl, mask); k += 1
    o[k] = _feature(45, pw, lc[p], 0, mask); k += 1
    # the words either side of a space (inside a Vietnamese word, or between two)
    o[k] = _feature(46, pw, nw, cl[p], mask); k += 1
    # short words and what comes before them: initials and abbreviations ("ப. செல்வசிங்",
    # "ஐ.நா."), counted in letters without their vowel signs
    ps = syl[i - 1] if i > 0 else 0
    pb = bcl[i - 1] if i > 0 else 0
    ws = syl[i]
    wb = bcl[i]
    if feats & 1:
        o[k] = _feature(47, ps, pb, lc[p], mask); k += 1
        o[k] = _feature(48, ps * 16 + pb, cl[p], ncl * 16 + cl[p + 1], mask); k += 1
        o[k] = _feature(49, ws, wb, lc[p + 1], mask); k += 1
        o[k] = _feature(50, ws * 16 + wb, cl[p + 1], ncl, mask); k += 1
    if feats & 2:    # inside a web or e-mail address
        u = url[i]
        o[k] = _feature(51, u, cl[p], cl[p + 1], mask); k += 1
        o[k] = _feature(52, u, lc[p], lc[p + 1], mask); k += 1
    if feats & 4:    # the English rules' label here (and before)
        r = rul[i]
        o[k] = _feature(53, r, cl[p], cl[p + 1], mask); k += 1
        o[k] = _feature(54, r, lc[p], lc[p + 1], mask); k += 1
        o[k] = _feature(55, r, rul[i - 1] if i > 0 else 0, ncl, mask); k += 1
    return k


@njit
def n_features(feats):
    """The features per character with the optional groups ``feats``."""
    k = BASE_FEATURES
    for g, size in GROUP_SIZES:
        if feats & g:
            k += size
    return k


@njit
def char_features(cps, tab, known, bits, feats, rl, out):
    """The feature rows of every character of a text (``out`` [n, n_features(feats)], int32);
    ``rl`` its rules' labels (``rule_labels``; empty without the group RULES)."""
    prep = prepare(cps, tab, known, rl)
    mask = np.uint64((1 << bits) - 1)
    for i in range(cps.shape[0]):
        char_row(i, cps, prep, mask, feats, out[i])


@njit
def known_build(cps, offsets, low, table):
    """Insert the lower-cased hash of each string cps[offsets[k]:offsets[k+1]] into table."""
    for k in range(offsets.shape[0] - 1):
        known_insert(table, _fnv(cps, low, offsets[k], offsets[k + 1]))


def known_table(forms, size_hint: int = 0) -> np.ndarray:
    """An open-addressing table of the lower-cased hashes of ``forms`` (at most MAX_KNOWN
    characters each), a power of two at least twice as large as the set."""
    forms = [f for f in forms if 0 < len(f) <= MAX_KNOWN]
    size = 2
    while size < 2 * max(len(forms), size_hint, 1):
        size *= 2
    table = np.zeros(size, dtype=np.uint64)
    _, low = tables()
    offsets = np.zeros(len(forms) + 1, dtype=np.int64)
    np.cumsum([len(f) for f in forms], out=offsets[1:])
    known_build(code_points("".join(forms)), offsets, low, table)
    return table


NO_RULES = np.zeros(0, dtype=np.int64)


def rule_labels(text: str, feats: int, words: dict | None = None) -> np.ndarray:
    """The English rules' label of each character of ``text`` (``structkit.text.english``; 0
    inside a token, 1 its last character, 2 a sentence's last, 3 outside tokens), int64, as
    the group RULES reads them; empty without that group. ``words``, if given, receives the
    rules' words of each of their tokens of several words, by ``(start, end)``."""
    if not feats & RULES:
        return NO_RULES

    out = np.full(len(text), 3, dtype=np.int64)
    for sent, _ in EnglishTokenizer().sentences(text):
        for t in sent:
            out[t.start:t.end] = 0
            if t.end > t.start:
                out[t.end - 1] = 1
            if words is not None and len(t.words) > 1:
                words[t.start, t.end] = t.words
        if sent and sent[-1].end > sent[-1].start:
            out[sent[-1].end - 1] = 2
    return out
