"""What the training data says of word forms: the tag dictionary and the lemma rules seen with
each form, and, for words it lacks, with each suffix (1-5 characters, lower-cased) and with
numbers and punctuation. A token's candidates (tags, rules) come from here.

Suffix counts are over distinct (form, tag) and (form, rule) pairs (word types): an unseen
word resembles the many rare words with its ending more than the few frequent ones.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from structkit.lattice.features import word_class
from structkit.lattice.rules import IDENTITY, LOWER, applies

MAX_SUFFIX = 5
ENRICH = 0          # guessed tags (from the suffixes) added to a known form's dictionary tags ...
ENRICH_RARE = 1 << 30   # ... when the form was seen at most this many times


def _suffixes(form: str):
    low = form.lower()
    for k in range(min(MAX_SUFFIX, len(low)), 0, -1):
        yield low[-k:]


class PackedCounts(Mapping):
    """Read-only counts by key, each held as the flat list ``[id, count, id, count, ...]`` a
    model file stores and made a dict (id -> count) when first read: a loaded model reads the
    counts of the forms and suffixes it meets, a few of its tens of thousands, and making them
    all took a sixth of a pipeline's loading.

    ``PackedCounts(raw)``: the lists by key (model format 3 kept them in the JSON header);
    :meth:`from_arrays`: key i's list is ``pairs[ptr[i]:ptr[i + 1]]`` (format 4's arrays)."""

    __slots__ = ("_raw", "_made", "_ptr", "_pairs")

    def __init__(self, raw: dict[str, list[int]]):
        self._raw = raw
        self._made: dict[str, dict[int, int]] = {}
        self._ptr = self._pairs = None

    @classmethod
    def from_arrays(cls, keys: list[str], ptr, pairs) -> "PackedCounts":
        """Key ``keys[i]``'s flat list is ``pairs[ptr[i]:ptr[i + 1]]`` (numpy arrays, checked by
        the caller)."""
        c = cls(dict(zip(keys, range(len(keys)))))
        c._ptr, c._pairs = ptr, pairs
        return c

    def __getitem__(self, key: str) -> dict[int, int]:
        d = self._made.get(key)
        if d is None:
            raw = self._raw[key]
            if self._ptr is not None:
                raw = self._pairs[self._ptr[raw]:self._ptr[raw + 1]].tolist()
            pairs = iter(raw)
            d = self._made[key] = dict(zip(pairs, pairs))
        return d

    def get(self, key, default=None):
        return self[key] if key in self._raw else default

    def __contains__(self, key) -> bool:
        return key in self._raw

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class Lexicon:
    """Tag and rule counts by form, by suffix and by word class (ids of the model's tags and rules)."""

    def __init__(self, max_candidates: int = 20):
        self.cap = max_candidates
        self.form_tags: dict[str, Counter] = defaultdict(Counter)
        self.form_rules: dict[str, Counter] = defaultdict(Counter)
        self.suffix_tags: dict[str, Counter] = defaultdict(Counter)
        self.suffix_rules: dict[str, Counter] = defaultdict(Counter)
        self.class_tags: dict[str, Counter] = defaultdict(Counter)
        self.all_tags: Counter = Counter()
        self.lemmas: set[str] = set()       # lower-cased
        self._casings: dict[str, str] | None = None
        # a counter's keys, most frequent first (ties by id), by id(counter): (counter, keys)
        self._ranks: dict[int, tuple[Counter, list[int]]] = {}

    def surface(self, form: str) -> str:
        """``form`` when training saw it (or it has no capitals), else the casing of it that
        training saw most often (``IL`` -> ``il``, ``GIOVANNI`` -> ``Giovanni``), else ``form``:
        what a word in capitals is analysed as (``structkit.morph.task._views``), so that text in
        capitals is lemmatised as the words it spells, not letter-case-wise (``TUTTI`` ->
        ``tutto``, not ``TUTTo``)."""
        if form in self.form_rules:
            return form
        low = form.lower()
        if low == form:
            return form
        if self._casings is None:
            best: dict[str, tuple[int, str]] = {}
            for f, c in self.form_rules.items():
                n = sum(c.values())
                k = f.lower()
                if k not in best or (n, f) > best[k]:
                    best[k] = (n, f)
            self._casings = {k: f for k, (n, f) in best.items()}
        return self._casings.get(low, form)

    def add(self, tokens) -> "Lexicon":
        """Count ``(form, tag id, rule id, lemma)`` tuples."""
        pairs_t, pairs_r = set(), set()
        self._casings = None
        self._ranks = {}
        for form, tag, rule, lemma in tokens:
            self.lemmas.add(lemma.lower())
            self.form_tags[form][tag] += 1
            self.form_rules[form][rule] += 1
            self.all_tags[tag] += 1
            pairs_t.add((form, tag))
            pairs_r.add((form, rule))
        for form, tag in pairs_t:
            wc = word_class(form)
            if wc is not None:
                self.class_tags[wc][tag] += 1
            for s in _suffixes(form):
                self.suffix_tags[s][tag] += 1
        for form, rule in pairs_r:
            for s in _suffixes(form):
                self.suffix_rules[s][rule] += 1
        return self

    def _ranked(self, c: Counter) -> list[int]:
        """The keys of ``c``, most frequent first, ties by id; sorted once per counter (the
        counts do not change once trained: ``add`` forgets them)."""
        got = self._ranks.get(id(c))
        if got is None or got[0] is not c:
            got = self._ranks[id(c)] = (c, [t for t, _ in sorted(c.items(), key=lambda x: (-x[1], x[0]))])
        return got[1]

    def _top(self, counters, cap: int) -> list[int]:
        out: dict[int, None] = {}
        for c in counters:
            for t in self._ranked(c):
                if len(out) >= cap:
                    return list(out)
                out.setdefault(t)
        return list(out)

    def tags(self, form: str) -> tuple[list[int], bool]:
        """The candidate tags of ``form`` (most frequent first) and whether the form is known."""
        known = self.form_tags.get(form)
        if known:
            seen = self._top([known], 1 << 30)
            if ENRICH and sum(known.values()) <= ENRICH_RARE:
                guessed = self._top([self.suffix_tags[s] for s in _suffixes(form) if s in self.suffix_tags],
                                    len(seen) + ENRICH)
                seen += [t for t in guessed if t not in known][:ENRICH]
            return seen, True
        chain = []
        low = form.lower()
        if low != form and low in self.form_tags:
            chain.append(self.form_tags[low])
        wc = word_class(form)
        if wc is not None and wc in self.class_tags:
            chain.append(self.class_tags[wc])
        chain += [self.suffix_tags[s] for s in _suffixes(form) if s in self.suffix_tags]
        chain.append(self.all_tags)
        return self._top(chain, self.cap), False

    def rules(self, form: str, rule_of) -> list[int]:
        """The candidate rules of ``form`` (ids; ``rule_of(id)`` is the rule), applicable ones only:
        those seen with the form, else with its lower-cased form, else with its suffixes, and
        identity (and lower-casing) for an unknown word."""
        def ok(ids):
            return [r for r in ids if applies(rule_of(r), form)]

        known = self.form_rules.get(form)
        if known:
            got = ok(self._top([known], 1 << 30))
            if got:
                return got
        chain = []
        low = form.lower()
        if low != form and low in self.form_rules:
            chain.append(self.form_rules[low])
        chain += [self.suffix_rules[s] for s in _suffixes(form) if s in self.suffix_rules]
        return ok(self._top(chain, self.cap))


def base_rules() -> tuple:
    """The rules every model knows (ids 0 and 1): identity and lower-casing."""
    return IDENTITY, LOWER
