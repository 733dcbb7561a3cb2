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

Predicting (``MultiwordSplitter.predict_rule``) builds no feature string: the weights are
regrouped once per model into a table per rule (``_tables``: its key, length and capitalisation
weights, and a dict per stem-ending length), the token's endings are walked only while they
end some rule's ``X``, and a rule whose best possible stem endings cannot beat the best score so
far is not looked up further. The scores are the same floats, added in the same order, as
``plain_predict_rule`` (the feature strings of ``_features``, which training uses); the tests
check the two against each other.
"""
from __future__ import annotations

import unicodedata

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

NONE = ("", ())  # the rule "not a multiword token"
MEMO = 1 << 17   # unseen forms whose split is remembered (cleared when full: bounded memory)


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


@dataclass
class MultiwordSplitter:
    seen: dict[str, tuple[str, ...]] = field(default_factory=dict)     # form -> words (or (form,))
    rules: dict[str, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)  # X -> rules
    weights: dict[str, float] = field(default_factory=dict)
    use_rules: bool = True
    _memo: dict = field(default_factory=dict, repr=False)  # unseen form -> words (bounded)
    _ends: tuple = field(default=(), repr=False)  # (rules it was made for, their endings, longest)
    _fast: tuple = field(default=(), repr=False, compare=False)  # (weights, their number, rules, what _tables gives)

    def set_rules(self, use: bool) -> None:
        """Use the learnt rules for unseen tokens, or not (the remembered splits are forgotten)."""
        self.use_rules = use
        self.forget()

    def forget(self) -> None:
        """Forget the splits remembered for unseen tokens (speed is then measured cold)."""
        self._memo.clear()

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
        if not self.use_rules or not self.weights:
            return (token,)
        rule = self.predict_rule(token)
        return (token,) if rule == NONE else apply(token, rule)

    def to_json(self) -> dict:
        return {"seen": {k: list(v) for k, v in self.seen.items()},
                "rules": [[x, list(r)] for rules in self.rules.values() for x, r in rules],
                "weights": self.weights, "use_rules": self.use_rules}

    @classmethod
    def from_json(cls, d: dict) -> "MultiwordSplitter":
        """The splitter a model file holds; ValueError for a string that no treebank word can be
        (a tab, a line break or another control character would break the CoNLL-U written;
        format characters such as ZWNJ, which words of some scripts hold, are kept)."""
        rules: dict[str, list] = {}
        for x, r in d["rules"]:
            rules.setdefault(x, []).append((x, tuple(r)))
        for s in [*d["seen"], *(w for v in d["seen"].values() for w in v), *rules,
                  *(w for rs in rules.values() for _, r in rs for w in r)]:
            if not isinstance(s, str) or any(unicodedata.category(c) == "Cc" for c in s):
                raise ValueError(f"a multiword token's words hold {s!r:.40}, which is no word")
        return cls({k: tuple(v) for k, v in d["seen"].items()}, rules,
                   {k: float(v) for k, v in d["weights"].items()}, bool(d["use_rules"]))


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
                   epochs: int = 5) -> MultiwordSplitter | None:
    """The splitter of a treebank: ``tokens`` every token form with its count, ``mwt`` how
    the multiword ones split. None when the treebank has no multiword tokens."""
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
    sp.seen = {form: words for form, words in seen.items() if len(words) > 1 or sp._words(form) != words}
    sp._memo.clear()
    return sp
