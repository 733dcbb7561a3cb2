"""Multiword tokens: which tokens are several syntactic words, and which words.

A token seen in training splits as it split there most often (``della`` -> ``di la``; a form
seen mostly whole stays whole). Other tokens go to a classifier over edit rules learnt from
the training pairs: a rule replaces a suffix ``X`` of the token and gives the words
``P + R[0], R[1], ...`` where ``P`` is the rest of the token (``considerarsi`` -> ``considerar
si`` is the rule ``si -> ("", "si")``; ``Shakespeare's`` -> ``Shakespeare 's`` is ``'s -> ("",
"'s")``). The classifier is an averaged perceptron over the rules whose ``X`` ends the token, and
"no split", with the end of the stem ``P`` (its last one to four characters), the token's
length and its capitalisation as features; it is trained on the token types of the training
data, and used only where dev says it helps (``use_rules``).

Where multiword tokens are spelled by their words (Coptic ``ⲙⲡⲙⲁⲙⲙⲱⲛⲁⲥ`` -> ``ⲙ ⲡ ⲙⲁⲙⲙⲱⲛⲁⲥ``,
Turkish ``mahalledeki`` -> ``mahallede ki``: at least ``SEGMENT_MIN_TYPES`` such types in
training), a ``Segmenter`` is also learnt: it reads an unseen token left to right and decides at
each character boundary whether a word ends there (a binary averaged perceptron over the
characters around the boundary, the piece so far, and whether the piece and the rest are words
of the training data). Prefixes, which the suffix rules cannot split, are its part. It answers
for tokens the dictionaries do not know, before the rules (which see the tokens it leaves
whole), and only where dev says it helps (``task.train_tokenizer``); otherwise it is dropped
and the splitter is the one it would be without it.

Predicting (``MultiwordSplitter.predict_rule``) builds no feature string: the weights are
regrouped once per model into a table per rule (``_tables``: its key, length and capitalisation
weights, and a dict per stem-ending length), the token's endings are walked only while they
end some rule's ``X``, and a rule whose best possible stem endings cannot beat the best score so
far is not looked up further. The scores are the same floats, added in the same order, as
``plain_predict_rule`` (the feature strings of ``_features``, which training uses); the tests
check the two against each other. The segmenter does the same: ``Segmenter.cuts`` reads tables
per feature template (``Segmenter._tables``: a dict by the feature's characters, or a list by
its flags, lengths or count) and adds at each boundary the same weights, in the same order, as
``plain_cuts`` over the feature strings of ``_seg_features`` (which training uses); the fewest
words that spell each rest are found walking the lexicon's word prefixes, and what depends only
on a boundary's characters or on a rest is remembered between tokens (bounded).
"""
from __future__ import annotations

import math
import random
import re

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

NONE = ("", ())  # the rule "not a multiword token"
MEMO = 1 << 17   # unseen forms whose split is remembered (cleared when full: bounded memory)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")   # Unicode's control characters (Cc): exactly these


def _no_word(strings: list, empty: bool = False) -> int | None:
    """The index of the first of ``strings`` that no treebank word can be (not a string, a
    control character in it, or, unless ``empty``, empty), else None. All are checked at once
    by one regular expression (a model's lists hold thousands; a character at a time took
    0.02 s of loading a Turkish pipeline); the loop that finds the bad one runs only when there
    is one."""
    if set(map(type, strings)) <= {str} and (empty or all(strings)) and not _CONTROL.search("".join(strings)):
        return None
    return next(i for i, s in enumerate(strings)
                if not isinstance(s, str) or not (s or empty) or _CONTROL.search(s))


SEGMENT_MIN_TYPES = 10   # multiword token types spelled by their words that a Segmenter needs
SEGMENT_EPOCHS = 5
SEG_MEMO = 1 << 15  # windows, and rests, whose weights and flags a Segmenter remembers (each; then cleared)
_NONE = 1 << 30     # no words spell the rest


def _rule(token: str, words: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """The edit rule that turns ``token`` into ``words``: the suffix X of the token after the
    longest prefix it shares (case-insensitively) with the first word."""
    first = words[0]
    lcp = 0
    for a, b in zip(token.lower(), first.lower()):
        if a != b:
            break
        lcp += 1
    if lcp == 0:
        return None  # nothing kept of the token: only the dictionary can know it
    return token[lcp:], (first[lcp:], *words[1:])


@lru_cache(maxsize=1 << 12)
def _key(rule: tuple[str, tuple[str, ...]]) -> str:
    return repr(rule)


def _features(token: str, rule: tuple[str, tuple[str, ...]]) -> list[str]:
    x = rule[0]
    stem = token[:len(token) - len(x)] if x else token
    key = _key(rule)
    feats = [key, f"{key}|len={min(len(token), 12)}",
             f"{key}|cap={token[:1].isupper()}{token.isupper()}"]
    low = stem.lower()
    for k in range(1, 5):
        feats.append(f"{key}|s{k}={low[-k:]}")
    return feats


WORD, FIRST, LAST = 1, 2, 4   # a Segmenter's lexicon flags: a training word; first, last word of a multiword token


def _low(s: str) -> str:
    """``s`` in lower case character for character, so that positions in it are positions in
    ``s`` (a character whose lower case is longer, Turkish ``İ``, stays as it is)."""
    low = s.lower()
    if len(low) == len(s):   # no character grew (none shrinks): the same positions
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in s)


def spelling(form: str, words: tuple[str, ...]) -> tuple[int, ...] | None:
    """Where in ``form`` its words end, but the last (``("ab", "c")`` of ``"abc"``: ``(2,)``), when
    the words spell the form (case aside); None when they do not (``della`` -> ``di la``) or
    there is one word."""
    if len(words) < 2:
        return None
    low = _low(form)
    pos, cuts = 0, []
    for w in words:
        lw = _low(w)
        if not lw or low[pos:pos + len(lw)] != lw:
            return None
        pos += len(lw)
        cuts.append(pos)
    return tuple(cuts[:-1]) if pos == len(low) else None


def _rest_pieces(low: str, flags, longest: int) -> list:
    """For each position j of ``low``, the fewest training words that spell ``low[j:]`` (a
    string, capped at "4"; "x" when none do); ``flags`` gives a string's lexicon flags."""
    n = len(low)
    best = [0] * (n + 1)
    big = n + 1
    for j in range(n - 1, -1, -1):
        m = big
        for k in range(j + 1, min(n, j + longest) + 1):
            if best[k] + 1 < m and flags(low[j:k]) & WORD:
                m = best[k] + 1
        best[j] = m
    return [str(min(b, 4)) if b < big else "x" for b in best]


def _seg_features(low: str, i: int, start: int, splits: int, flags, rest: list) -> list[str]:
    """The features of the boundary before ``low[i]``: the characters around it, the piece since
    the last word end (``start``), what the lexicon says of the piece, of the rest and of both
    together, the fewest words that spell the rest, lengths, and how many words ended before."""
    piece, after = low[start:i], low[i:]
    a1, b1 = low[i - 1], low[i]
    a2, b2 = low[max(0, i - 2):i], low[i:i + 2]
    a3, b3 = low[max(0, i - 3):i], low[i:i + 3]
    kp, kr, kw = flags(piece), flags(after), flags(low[start:])
    pl, rl = min(len(piece), 8), min(len(after), 8)
    p = piece if len(piece) <= 10 else "~"
    rm = rest[i]
    return ["b", "a1=" + a1, "b1=" + b1, "a2=" + a2, "b2=" + b2, "a3=" + a3, "b3=" + b3,
            "ab=" + a1 + b1, "aab=" + a2 + "|" + b1, "abb=" + a1 + "|" + b2,
            "p=" + p, f"p|b1={p}|{b1}", f"p|s={p}|{start == 0}",
            f"kp={kp}|{start == 0}", f"kr={kr}", f"kw={kw}", f"k={kp}|{kr}", f"rm={rm}", f"kp|rm={kp}|{rm}",
            f"kp|b2={kp}|{b2}", f"kr|a2={kr}|{a2}", f"len={pl}|{rl}", f"ns={min(splits, 3)}"]


@dataclass
class Segmenter:
    """Splits a token into the words that spell it, left to right: at each character boundary
    a word ends where the averaged perceptron's ``weights`` over ``_seg_features`` score above 0.
    ``lexicon`` maps the lower-cased words of the training data to their flags (``WORD``,
    ``FIRST``, ``LAST``)."""
    weights: dict[str, float]
    lexicon: dict[str, int]
    _longest: int = field(default=-1, repr=False, compare=False)
    _fast: tuple = field(default=(), repr=False, compare=False)   # what _tables gives

    def cuts(self, token: str) -> tuple[int, ...]:
        """Where the token's words end, but the last (none: the token is one word):
        ``plain_cuts``' answer, from weight tables per feature template (``_tables``) instead of
        a feature string per boundary. At each boundary the same weights are added in the same
        order, so the scores are the same floats: a feature without a weight adds 0.0 in
        ``plain_cuts`` (``weights.get(f, 0.0)``) and is skipped here only where adding 0.0 is
        all it does (the piece's features once the piece begins no key of theirs). What depends
        only on the characters around a boundary (the weights of ``b`` to ``abb``, added first)
        or on the rest of the token (its flags, the fewest words that spell it) is remembered
        (``forget`` clears it; ``SEG_MEMO`` entries at most)."""
        low = _low(token)
        n = len(low)
        if n < 2:
            return ()
        t = self._fast
        if not (t and t[0] is self.weights and t[1] == len(t[0]) and t[2] is self.lexicon
                and t[3] == len(t[2])):
            t = self._tables()
        t = t[4]
        if t is None:   # flags the tables do not cover (no model file holds them)
            return self.plain_cuts(token)
        (wb, A1, B1, A2, B2, A3, B3, AB, AAB, ABB, P, PB1, PS, KPS, KR, KW, K, RM, KPRM, KPB2, KRA2,
         LEN, NS, pre, windows, rests) = t
        lex = self.lexicon.get
        pget = pre.get
        # each rest low[j:]: the fewest words that spell it (as _rest_pieces: a word's prefixes
        # are walked only while they begin a word) as the code of ``rm`` (0-4, 5 for none), and
        # its flags (``kr``, and ``kw`` at a word's start)
        if len(rests) >= SEG_MEMO:
            rests.clear()
        best = [0] * (n + 1)
        code = [0] * n
        after = [0] * n
        for j in range(n - 1, -1, -1):
            rest = low[j:]
            got = rests.get(rest)
            if got is None:
                m = _NONE
                for k in range(j + 1, n + 1):
                    g = pget(low[j:k], 0)
                    if not g & 2:
                        break
                    if g & 1 and best[k] + 1 < m:
                        m = best[k] + 1
                got = rests[rest] = (m, m if m < 4 else 4 if m < _NONE else 5, lex(rest, 0))
            best[j], code[j], after[j] = got
        if len(windows[1]) + len(windows[2]) + len(windows[3]) >= SEG_MEMO:
            for d in windows:
                d.clear()
        out: list[int] = []
        start = 0
        alive = 4   # the piece begins a key of p, p|b1, p|s or the lexicon
        piece = ""
        # what stays the same until the next word end
        psg, kps, kw_w, ns_w = PS[1].get, KPS[1], KW[after[0]], NS[0]
        for i in range(1, n):
            b1 = low[i]
            a2 = low[i - 2:i] if i > 1 else low[0]
            b2 = low[i:i + 2]
            if i > 2:
                win, seen = low[i - 3:i + 3], windows[3]
            else:
                win, seen = low[:i + 3], windows[i]
            score = seen.get(win)
            if score is None:   # the weights of b, a1, b1, a2, b2, a3, b3, ab, aab, abb, in order
                a1 = low[i - 1]
                score = 0.0
                score += wb
                score += A1.get(a1, 0.0)
                score += B1.get(b1, 0.0)
                score += A2.get(a2, 0.0)
                score += B2.get(b2, 0.0)
                score += A3.get(low[i - 3:i] if i > 2 else low[:i], 0.0)
                score += B3.get(low[i:i + 3], 0.0)
                score += AB.get(a1 + b1, 0.0)
                score += AAB.get(a2 + b1, 0.0)
                score += ABB.get(a1 + b2, 0.0)
                seen[win] = score
            pl = i - start
            if alive:
                piece = low[start:i]
                alive = pget(piece, 0) & 4
            if pl <= 10:
                if alive:
                    score += P.get(piece, 0.0)
                    score += PB1.get(piece + b1, 0.0)
                    score += psg(piece, 0.0)
                    kp = lex(piece, 0)
                else:
                    kp = 0
            else:
                score += P.get("~", 0.0)
                score += PB1.get("~" + b1, 0.0)
                score += psg("~", 0.0)
                kp = lex(piece, 0) if alive else 0
            kr = after[i]
            rm = code[i]
            rl = n - i
            score += kps[kp]
            score += KR[kr]
            score += kw_w
            score += K[kp][kr]
            score += RM[rm]
            score += KPRM[kp][rm]
            score += KPB2[kp].get(b2, 0.0)
            score += KRA2[kr].get(a2, 0.0)
            score += LEN[pl if pl < 8 else 8][rl if rl < 8 else 8]
            score += ns_w
            if score > 0.0:
                out.append(i)
                start = i
                alive = 4
                psg, kps, kw_w, ns_w = PS[0].get, KPS[0], KW[after[i]], NS[min(len(out), 3)]
        return tuple(out)

    def forget(self) -> None:
        """Forget what ``cuts`` remembers of the windows and rests it has seen."""
        if self._fast and self._fast[4] is not None:
            for d in (*self._fast[4][-2], self._fast[4][-1]):
                d.clear()

    def plain_cuts(self, token: str) -> tuple[int, ...]:
        """``cuts`` the plain way: every boundary's feature strings (``_seg_features``) looked up."""
        low = _low(token)
        n = len(low)
        if n < 2:
            return ()
        if self._longest < 0:
            self._longest = max(map(len, self.lexicon), default=0)
        lexicon = self.lexicon.get

        def flags(w: str) -> int:
            return lexicon(w, 0)

        get = self.weights.get
        rest = _rest_pieces(low, flags, self._longest)
        out: list[int] = []
        start = 0
        for i in range(1, n):
            score = 0.0
            for f in _seg_features(low, i, start, len(out), flags, rest):
                score += get(f, 0.0)
            if score > 0.0:
                out.append(i)
                start = i
        return tuple(out)

    def _tables(self) -> tuple:
        """``(weights, their number, lexicon, its size, tables)``, the tables ``cuts`` reads: the
        weight of each feature ``_seg_features`` can give, by template and keyed by the feature's
        parts (a dict by the characters, or a list by the flags, lengths, count or ``rm`` code),
        with 0.0 where a list's feature has no weight; every prefix of the lexicon's words and of
        the piece features' keys with what it is (bits 1, 2 and 4 below); and the dicts of what
        ``cuts`` remembers (windows by the number of characters before the boundary, rests). A
        weight whose name is no feature the templates give (none can fire) is left out.
        ``tables`` is None when a lexicon flag is not an int in 1..7 (``from_json`` and
        ``train_segmenter`` give no other): ``cuts`` is then ``plain_cuts``. Made when first
        needed, and again when another weights or lexicon dict (or one of another size) is set;
        a weight changed in place, the size kept, is not seen (as ``MultiwordSplitter._tables``)."""
        w, lexicon = self.weights, self.lexicon
        if any(type(v) is not int or not 1 <= v <= 7 for v in lexicon.values()):
            self._fast = (w, len(w), lexicon, len(lexicon), None)
            return self._fast
        simple = {name: {} for name in ("a1", "b1", "a2", "b2", "a3", "b3", "ab", "p")}
        AAB, ABB, PB1, PS = {}, {}, {}, ({}, {})          # PS[start == 0]
        flags8 = {str(k): k for k in range(8)}
        KPS = ([0.0] * 8, [0.0] * 8)                       # KPS[start == 0][kp]
        kps_names = {f"{k}|{s}": (s, k) for s in (False, True) for k in range(8)}
        KR, KW, NS, RM = [0.0] * 8, [0.0] * 8, [0.0] * 4, [0.0] * 6
        rm_codes = {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "x": 5}
        K = [[0.0] * 8 for _ in range(8)]
        LEN = [[0.0] * 9 for _ in range(9)]
        pairs8 = {f"{a}|{b}": (a, b) for a in range(8) for b in range(8)}
        pairs9 = {f"{a}|{b}": (a, b) for a in range(9) for b in range(9)}
        KPRM = [[0.0] * 6 for _ in range(8)]
        KPB2, KRA2 = [{} for _ in range(8)], [{} for _ in range(8)]
        by_flag = {"kp|b2": KPB2, "kr|a2": KRA2}
        wb = 0.0
        for f, v in w.items():
            name, eq, x = f.partition("=")
            if not eq:
                if f == "b":
                    wb = v
            elif name in simple:
                simple[name][x] = v
            elif name in ("aab", "p|b1"):         # a2 or p, "|", one character
                if len(x) >= 3 and x[-2] == "|":
                    (AAB if name == "aab" else PB1)[x[:-2] + x[-1]] = v
            elif name == "abb":                     # one character, "|", b2
                if len(x) >= 3 and x[1] == "|":
                    ABB[x[0] + x[2:]] = v
            elif name == "p|s":
                if x.endswith("|True"):
                    PS[1][x[:-5]] = v
                elif x.endswith("|False"):
                    PS[0][x[:-6]] = v
            elif name == "kp":
                if x in kps_names:
                    a, b = kps_names[x]
                    KPS[a][b] = v
            elif name in ("kr", "kw"):
                if x in flags8:
                    (KR if name == "kr" else KW)[flags8[x]] = v
            elif name == "k":
                if x in pairs8:
                    a, b = pairs8[x]
                    K[a][b] = v
            elif name == "rm":
                if x in rm_codes:
                    RM[rm_codes[x]] = v
            elif name == "kp|rm":
                if x[:1] in flags8 and x[1:2] == "|" and x[2:] in rm_codes:
                    KPRM[flags8[x[:1]]][rm_codes[x[2:]]] = v
            elif name in by_flag:                   # a flag, "|", characters
                if x[:1] in flags8 and x[1:2] == "|":
                    by_flag[name][flags8[x[:1]]][x[2:]] = v
            elif name == "len":
                if x in pairs9:
                    a, b = pairs9[x]
                    LEN[a][b] = v
            elif name == "ns":
                if x in ("0", "1", "2", "3"):
                    NS[int(x)] = v
        # every prefix of: a word (1: a training word, 2: it begins one) and a key of the
        # piece's features (4: it begins a lexicon word, or a p, p|b1 (but its last character)
        # or p|s key)
        # (a training word is a lexicon word, so its prefixes have bit 4 too: 6, and it 7)
        P = simple["p"]
        words = [x for x, f in lexicon.items() if f & WORD]
        pre = dict.fromkeys({x[:k] for keys in (lexicon, P, PS[0], PS[1], (x[:-1] for x in PB1))
                             for x in keys for k in range(1, len(x) + 1)}, 4)
        pre.update(dict.fromkeys({x[:k] for x in words for k in range(1, len(x) + 1)}, 6))
        pre.update(dict.fromkeys(words, 7))
        s = simple
        tables = (wb, s["a1"], s["b1"], s["a2"], s["b2"], s["a3"], s["b3"], s["ab"], AAB, ABB, P, PB1,
                  PS, KPS, KR, KW, K, RM, KPRM, KPB2, KRA2, LEN, NS, pre, ({}, {}, {}, {}), {})
        self._fast = (w, len(w), lexicon, len(lexicon), tables)
        return self._fast

    def split(self, token: str) -> tuple[str, ...]:
        cuts = self.cuts(token)
        if not cuts:
            return (token,)
        ends = (*cuts, len(token))
        return tuple(token[a:b] for a, b in zip((0, *cuts), ends))

    def to_json(self) -> dict:
        return {"weights": self.weights, "lexicon": self.lexicon}

    @classmethod
    def from_json(cls, d) -> "Segmenter":
        """ValueError unless ``d`` is what ``to_json`` writes: feature strings with finite
        weights, and words (no control character) with flags 1 to 7."""
        if not isinstance(d, dict) or set(d) != {"weights", "lexicon"}:
            raise ValueError("the segmenter of the multiword tokens is not an object of weights and lexicon")
        weights, lexicon = d["weights"], d["lexicon"]
        if not isinstance(weights, dict) or not isinstance(lexicon, dict):
            raise ValueError("the segmenter's weights and lexicon are not objects")
        for f, v in weights.items():
            if not isinstance(f, str) or isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(v):
                raise ValueError(f"the segmenter's weight {f!r:.40} is {v!r:.40}, not a number")
        words = list(lexicon)
        bad = _no_word(words)
        if bad is not None:
            raise ValueError(f"the segmenter's lexicon holds {words[bad]!r:.40}, which is no word")
        if not all(type(v) is int and 1 <= v <= 7 for v in lexicon.values()):
            w, v = next((w, v) for w, v in lexicon.items() if type(v) is not int or not 1 <= v <= 7)
            raise ValueError(f"the segmenter's lexicon gives {w!r:.40} the flags {v!r:.40}")
        return cls({f: float(v) for f, v in weights.items()}, dict(lexicon))


def train_segmenter(seen: dict[str, tuple[str, ...]], epochs: int = SEGMENT_EPOCHS,
                    seed: int = 0) -> Segmenter | None:
    """The segmenter of a treebank whose token forms split as ``seen`` says (each form's usual
    words), or None when fewer than ``SEGMENT_MIN_TYPES`` multiword forms are spelled by their
    words. It learns from those forms (a word ends at each of their words' ends, nowhere else)
    and from the forms that stay whole (no word ends inside them); multiword forms whose words
    do not spell them (``della`` -> ``di la``) are left out. Each form sees the lexicon without
    what it adds itself (a word only it holds is unknown to it, as the words of an unseen token
    often are). A binary averaged perceptron, ``epochs`` passes over the forms in an order
    drawn from ``seed``: the same data give the same weights."""
    examples = []
    for form, words in seen.items():
        if len(words) == 1:
            examples.append((form, ()))
        else:
            cuts = spelling(form, words)
            if cuts is not None:
                examples.append((form, cuts))
    if sum(1 for _, c in examples if c) < SEGMENT_MIN_TYPES:
        return None
    # what each lower-cased form adds to the lexicon, and the number of forms adding each flag
    adds: dict[str, dict[str, int]] = {}
    for form, words in seen.items():
        own = adds.setdefault(_low(form), {})
        lows = [_low(w) for w in words]
        for k, w in enumerate(lows):
            bits = WORD
            if len(lows) > 1:
                bits |= (FIRST if k == 0 else 0) | (LAST if k == len(lows) - 1 else 0)
            own[w] = own.get(w, 0) | bits
    counts: dict[str, list[int]] = {}
    for own in adds.values():
        for w, bits in own.items():
            c = counts.setdefault(w, [0, 0, 0])
            for j, bit in enumerate((WORD, FIRST, LAST)):
                if bits & bit:
                    c[j] += 1
    longest = max(map(len, counts), default=0)
    index: dict[str, int] = {}
    data = []   # per form: [(feature ids, word ends here)] of each boundary
    for form, cuts in sorted(examples):
        low = _low(form)
        own = adds[low]

        def flags(w: str, own=own) -> int:
            c = counts.get(w)
            if c is None:
                return 0
            o = own.get(w, 0)
            return ((WORD if c[0] > (o & 1) else 0) | (FIRST if c[1] > (o >> 1 & 1) else 0)
                    | (LAST if c[2] > (o >> 2 & 1) else 0))

        rest = _rest_pieces(low, flags, longest)
        rows, start, splits = [], 0, 0
        for i in range(1, len(low)):
            ids = [index.setdefault(f, len(index)) for f in _seg_features(low, i, start, splits, flags, rest)]
            cut = i in cuts
            rows.append((ids, cut))
            if cut:
                start, splits = i, splits + 1
        if rows:
            data.append(rows)
    w = [0.0] * len(index)
    u = [0.0] * len(index)
    c = 1
    rng = random.Random(seed)
    order = list(range(len(data)))
    for _ in range(epochs):
        rng.shuffle(order)
        for k in order:
            for ids, cut in data[k]:
                score = 0.0
                for j in ids:
                    score += w[j]
                if (score > 0.0) != cut:
                    d = 1.0 if cut else -1.0
                    for j in ids:
                        w[j] += d
                        u[j] += d * c
                c += 1
    names = sorted(index, key=index.get)
    weights = {}
    for f, j in zip(names, range(len(names))):
        v = w[j] - u[j] / c
        if v != 0.0:
            weights[f] = v
    lexicon = {}
    for word, cs in sorted(counts.items()):
        lexicon[word] = (WORD if cs[0] else 0) | (FIRST if cs[1] else 0) | (LAST if cs[2] else 0)
    return Segmenter(weights, lexicon)


@dataclass
class MultiwordSplitter:
    seen: dict[str, tuple[str, ...]] = field(default_factory=dict)     # form -> words (or (form,))
    rules: dict[str, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)  # X -> rules
    weights: dict[str, float] = field(default_factory=dict)
    use_rules: bool = True
    segmenter: Segmenter | None = None   # for unseen tokens, before the rules (None: not used)
    _memo: dict = field(default_factory=dict, repr=False)  # unseen form -> words (bounded)
    # until dev has chosen (``keep_segmenter``): the segmenter train_splitter learnt, and the
    # whole forms kept in ``seen`` only because it would split them
    _spare: tuple = field(default=(), repr=False, compare=False)
    _ends: tuple = field(default=(), repr=False)  # (rules it was made for, their endings, longest)
    _fast: tuple = field(default=(), repr=False, compare=False)  # (weights, their number, rules, what _tables gives)

    def set_rules(self, use: bool) -> None:
        """Use the learnt rules for unseen tokens, or not (the remembered splits are forgotten)."""
        self.use_rules = use
        self.forget()

    def has_segmenter(self) -> bool:
        """Whether train_splitter learnt a segmenter that dev has still to choose for or against."""
        return bool(self._spare)

    def set_segmenter(self, use: bool) -> None:
        """Use the segmenter train_splitter learnt for unseen tokens, or not, while dev chooses
        (the remembered splits are forgotten); nothing without one."""
        if self._spare:
            self.segmenter = self._spare[0] if use else None
        self.forget()

    def keep_segmenter(self, keep: bool) -> None:
        """Dev's choice made: with ``keep`` the segmenter stays; without, it is dropped with the
        forms ``seen`` held only for it, and the splitter is the one trained without it."""
        if self._spare:
            seg, extra = self._spare
            self._spare = ()
            self.segmenter = seg if keep else None
            if not keep and extra:
                self.seen = {f: w for f, w in self.seen.items() if f not in extra}
        self.forget()

    def forget(self) -> None:
        """Forget the splits remembered for unseen tokens, and what the segmenter remembers
        (speed is then measured cold)."""
        self._memo.clear()
        if self.segmenter is not None:
            self.segmenter.forget()

    def candidates(self, token: str) -> list[tuple[str, tuple[str, ...]]]:
        """No split, then the rules whose ending the token has, shortest ending first; only
        endings as long as the longest rule's are looked up (a long token costs no more), and
        none longer than the first that ends no rule's ending."""
        out = [NONE]
        ends = self._suffixes()
        for k in range(1, min(len(token), self._ends[2] + 1)):  # the stem keeps at least one character
            x = token[-k:]
            if x not in ends:
                break
            out.extend(self.rules.get(x, ()))
        return out

    def _suffixes(self) -> frozenset:
        """Every non-empty ending of a rule's ending ``X`` (kept with the rules it was made for)."""
        if not self._ends or self._ends[0] is not self.rules:
            self._ends = (self.rules, frozenset(x[-k:] for x in self.rules for k in range(1, len(x) + 1)),
                          max(map(len, self.rules), default=0))
        return self._ends[1]

    def _score(self, token: str, rule) -> float:
        get = self.weights.get
        total = 0.0
        for f in _features(token, rule):
            total += get(f, 0.0)
        return total

    def predict_rule(self, token: str):
        """The best-scoring candidate (no split on ties): ``plain_predict_rule``'s answer, from
        per-rule weight tables (``_tables``) instead of a feature string per candidate."""
        fast = self._fast
        if fast and fast[0] is self.weights and fast[1] == len(fast[0]) and fast[2] is self.rules:
            by_end, top, none = fast[3]
        else:
            by_end, top, none = self._tables()
        n = len(token)
        found = None
        for k in range(1, min(n, top + 1)):   # candidates' walk over the token's endings
            e = by_end.get(token[-k:])
            if e is None:
                break
            if e:
                found = e if found is None else found + e
        if found is None:
            return NONE
        length = min(n, 12)
        cap = 2 * token[:1].isupper() + token.isupper()
        # lower case letter by letter (the same for any stem) only for ASCII
        whole = token.lower() if token.isascii() else None
        best, best_score = NONE, 0.0
        if none is not None:
            best_score = _total(none, whole if whole is not None else token.lower(), length, cap)
        for rule, cut, t in found:   # after NONE: a rule must score strictly higher
            if t is None:    # a rule with no weight at all scores 0.0
                score = 0.0
            else:   # _total, inline
                base, lens, caps, sufs, most, slack = t
                score = 0.0
                score += base
                score += lens[length]
                score += caps[cap]
                if sufs:
                    if score + most + slack < best_score:
                        continue   # even its best stem endings would not beat the best so far
                    low = whole[:n - cut] if whole is not None else token[:n - cut].lower()
                    for k, d in sufs:
                        score += d.get(low[-k:], 0.0)
            if score > best_score:
                best, best_score = rule, score
        return best

    def plain_predict_rule(self, token: str):
        """``predict_rule`` the plain way: every candidate's feature strings looked up."""
        cands = self.candidates(token)
        if len(cands) == 1:
            return NONE
        return max(cands, key=lambda r: (self._score(token, r), r == NONE))

    def _tables(self) -> tuple:
        """``(by_end, longest ending, NONE's table)``: ``by_end`` maps every ending of a rule's
        ``X`` to the ``(rule, len(X), table)`` of the rules whose ``X`` it is (in ``rules``'
        order; empty when it is only part of a longer ``X``). A table holds the weights
        ``_features`` would find for the rule, by feature kind: ``(the key's weight, [len
        0..12], [cap FF, FT, TF, TT], ((k, {stem ending of length k: weight}) for each k in
        1..4 that has one), the most those endings can add, a bound on a sum's rounding)``; None
        when the rule has no weight (its score is then 0.0). Made from ``weights`` when first
        needed, and again when another weights dict (or rules dict) is set."""
        w = self.weights
        if self._fast and self._fast[0] is w and self._fast[1] == len(w) and self._fast[2] is self.rules:
            return self._fast[3]
        rules = [NONE] + [r for rs in self.rules.values() for r in rs]
        by_key = {_key(r): r for r in rules}
        get = w.get
        sufs: dict = {}
        for f, v in w.items():   # every way f reads as key + "|s<k>=" + ending, key a rule's
            p = f.find("|s")
            while p > 0:
                rule = by_key.get(f[:p])
                if rule is not None and f[p + 2:p + 3] in ("1", "2", "3", "4") and f[p + 3:p + 4] == "=":
                    suf = f[p + 4:]
                    k = int(f[p + 2])
                    if len(suf) <= k:
                        sufs.setdefault(rule, [{}, {}, {}, {}])[k - 1][suf] = float(v)
                p = f.find("|s", p + 1)
        tables = {}
        for key, rule in by_key.items():
            lens = [float(get(f"{key}|len={m}", 0.0)) for m in range(13)]
            caps = [float(get(f"{key}|cap={a}{b}", 0.0)) for a in (False, True) for b in (False, True)]
            base = float(get(key, 0.0))
            if rule in sufs or base or any(lens) or any(caps):
                ends = tuple((k + 1, d) for k, d in enumerate(sufs.get(rule, ())) if d)
                # what the stem endings can add at most, and a bound on the rounding of a sum
                most = sum(max(0.0, max(d.values())) for _, d in ends)
                slack = 1e-9 * (1.0 + abs(base) + max(map(abs, lens)) + max(map(abs, caps))
                                + sum(max(map(abs, d.values())) for _, d in ends))
                tables[rule] = (base, lens, caps, ends, most, slack)
        by_end: dict = {x: [] for x in self._suffixes()}
        for x, rs in self.rules.items():
            if x:
                by_end[x].extend((r, len(x), tables.get(r)) for r in rs)
        out = (by_end, self._ends[2], tables.get(NONE))
        self._fast = (w, len(w), self.rules, out)
        return out

    def words(self, token: str) -> tuple[str, ...]:
        got = self.seen.get(token)
        if got is not None:
            return got
        got = self._memo.get(token)
        if got is None:
            if len(self._memo) >= MEMO:
                self._memo.clear()
            got = self._memo[token] = self._words(token)
        return got

    def _words(self, token: str) -> tuple[str, ...]:
        low = self.seen.get(token.lower())
        if low is not None and len(low) > 1:
            rule = _rule(token.lower(), low)
            if rule is not None:
                return apply(token, rule)
        if self.segmenter is not None:
            got = self.segmenter.split(token)
            if len(got) > 1:
                return got
        if not self.use_rules or not self.weights:
            return (token,)
        rule = self.predict_rule(token)
        return (token,) if rule == NONE else apply(token, rule)

    def to_json(self) -> dict:
        """The splitter as a model file holds it; ``segmenter`` only when there is one (a file
        written before segmenters existed has none, and reads as it did)."""
        d = {"seen": {k: list(v) for k, v in self.seen.items()},
             "rules": [[x, list(r)] for rules in self.rules.values() for x, r in rules],
             "weights": self.weights, "use_rules": self.use_rules}
        if self.segmenter is not None:
            d["segmenter"] = self.segmenter.to_json()
        return d

    @classmethod
    def from_json(cls, d: dict) -> "MultiwordSplitter":
        """The splitter a model file holds; ValueError for a string that no treebank word can be
        (a tab, a line break or another control character would break the CoNLL-U written;
        format characters such as ZWNJ, which words of some scripts hold, are kept)."""
        rules: dict[str, list] = {}
        for x, r in d["rules"]:
            rules.setdefault(x, []).append((x, tuple(r)))
        strings = [*d["seen"], *(w for v in d["seen"].values() for w in v), *rules,
                   *(w for rs in rules.values() for _, r in rs for w in r)]
        bad = _no_word(strings, empty=True)
        if bad is not None:
            raise ValueError(f"a multiword token's words hold {strings[bad]!r:.40}, which is no word")
        seg = Segmenter.from_json(d["segmenter"]) if d.get("segmenter") is not None else None
        return cls({k: tuple(v) for k, v in d["seen"].items()}, rules,
                   {k: float(v) for k, v in d["weights"].items()}, bool(d["use_rules"]), seg)


def _total(table, low: str, length: int, cap: int) -> float:
    """A rule's score from its table (``MultiwordSplitter._tables``), ``low`` its stem in lower
    case: the weights added in ``_features``' order (key, len, cap, s1..s4), so the float is the
    one ``_score`` gives (a missing weight adds 0.0, which changes no sum started at 0.0)."""
    base, lens, caps, sufs = table[:4]
    score = 0.0
    score += base
    score += lens[length]
    score += caps[cap]
    for k, d in sufs:
        score += d.get(low[-k:], 0.0)
    return score


def apply(token: str, rule) -> tuple[str, ...]:
    x, r = rule
    stem = token[:len(token) - len(x)]
    return (stem + r[0], *r[1:])


def train_splitter(tokens: dict[str, int], mwt: dict[str, dict[tuple[str, ...], int]],
                   epochs: int = 5, segment: bool = True) -> MultiwordSplitter | None:
    """The splitter of a treebank: ``tokens`` every token form with its count, ``mwt`` how
    the multiword ones split. None when the treebank has no multiword tokens. With
    ``segment``, a ``Segmenter`` is learnt where the treebank has enough multiword forms spelled
    by their words (``train_segmenter``): it is not used until ``set_segmenter`` or
    ``keep_segmenter`` says so (the splitter answers as it would without it)."""
    if not mwt:
        return None
    seen: dict[str, tuple[str, ...]] = {}
    for form, count in tokens.items():
        splits = mwt.get(form, {})
        whole = count - sum(splits.values())
        best, n = max(splits.items(), key=lambda kv: kv[1]) if splits else ((form,), 0)
        seen[form] = best if n > whole else (form,)
    rules: dict[str, list] = {}
    gold: dict[str, tuple] = {}
    for form, words in seen.items():
        if len(words) > 1:
            rule = _rule(form, words)
            if rule is None:
                continue
            gold[form] = rule
            if rule not in rules.get(rule[0], []):
                rules.setdefault(rule[0], []).append(rule)
        else:
            gold[form] = NONE
    sp = MultiwordSplitter(seen, rules)
    # averaged perceptron over the token types, in a fixed order
    w: Counter = Counter()
    u: Counter = Counter()
    c = 1
    forms = sorted(gold)
    for _ in range(epochs):
        for form in forms:
            cands = sp.candidates(form)
            if len(cands) == 1:
                continue
            sp.weights = w
            pred = max(cands, key=lambda r: (sp._score(form, r), r == NONE))
            if pred != gold[form]:
                for f in _features(form, gold[form]):
                    w[f] += 1.0
                    u[f] += c
                for f in _features(form, pred):
                    w[f] -= 1.0
                    u[f] -= c
            c += 1
    sp.weights = {f: w[f] - u[f] / c for f in w if w[f] - u[f] / c != 0.0}
    # keep of the seen forms those the rest would get wrong: every multiword one, and a whole
    # one that the lower-cased dictionary or the rules would split
    # (``_words`` answers as if the form were unseen, with the whole dictionary in view: a
    # whole "Del" must stay in ``seen`` when its lower case "del" is a multiword token)
    keep = {form for form, words in seen.items() if len(words) > 1 or sp._words(form) != words}
    seg = train_segmenter(seen) if segment else None
    extra: frozenset = frozenset()
    if seg is not None:
        # and a whole one the segmenter would split (before the rules, after the dictionaries)
        extra = frozenset(form for form in seen if form not in keep and len(seg.split(form)) > 1)
        sp._spare = (seg, extra)   # not used until set_segmenter(True) or keep_segmenter(True)
    sp.seen = {form: words for form, words in seen.items() if form in keep or form in extra}
    sp._memo.clear()
    return sp
