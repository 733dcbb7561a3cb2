"""Phrase label schemes: IOB1, IOB2, IOBES and BILOU.

A label is ``O`` or ``P-TYPE`` with a prefix letter P. The schemes differ in their letters:

* IOB1: ``I-`` inside a phrase; ``B-`` only starts a phrase right after one of the same type;
* IOB2: ``B-`` starts every phrase, ``I-`` continues it;
* IOBES: ``S-`` is a one-token phrase, ``B-``/``I-``/``E-`` begin, continue and end longer ones;
* BILOU: as IOBES with ``U-`` for ``S-`` and ``L-`` for ``E-``.

IOB1 and IOB2 are scored by the conlleval re-implementation in :mod:`structkit.eval.chunks`.
IOBES and BILOU are decoded into phrases with the same start/end rules that conlleval applies
(a phrase starts at ``B-``/``S-``/``U-``, or at ``I-``/``E-``/``L-`` after ``O``, after a
phrase's last token or after another type; it ends at ``E-``/``S-``/``L-``/``U-``, before
``O``, before a phrase start or at a type change) and scored on exact (type, start, end) matches.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from structkit.eval.chunks import ChunkCounter, ChunkScore, TypeCounts, split_tag

__all__ = ["SCHEMES", "SchemeDetector", "detect_scheme", "phrases", "encode", "convert",
           "bad_label", "PhraseCounter", "make_counter"]

SCHEMES = ("iob1", "iob2", "iobes", "bilou")

# Letters each scheme may use. IOB1/IOB2 keep E- (IOE), which conlleval reads.
_LETTERS = {"iob1": "BIE", "iob2": "BIE", "iobes": "BIES", "bilou": "BILU"}
_ANY = re.compile(r"^(O|[BIELSU]-.+)$")
_SINGLE = {"S", "U"}
_LAST = {"E", "L"}


def bad_label(tags: Sequence[str], scheme: str | None) -> int | None:
    """Index of the first tag that is not O or a prefix letter of ``scheme`` (None: any scheme)."""
    if scheme is None:
        for k, tag in enumerate(tags):
            if not _ANY.match(tag):
                return k
        return None
    pat = re.compile(rf"^(O|[{_LETTERS[scheme]}]-.+)$")
    for k, tag in enumerate(tags):
        if not pat.match(tag):
            return k
    return None


class SchemeDetector:
    """Watches labels sentence by sentence and says which scheme they are in."""

    def __init__(self) -> None:
        self.letters: set[str] = set()
        self.iob1 = False

    def add(self, tags: Sequence[str]) -> None:
        prev, prev_type = "O", ""
        for tag in tags:
            p, t = split_tag(tag)
            self.letters.add(p)
            if p == "I" and (prev == "O" or prev_type != t):
                self.iob1 = True
            prev, prev_type = p, t

    @property
    def scheme(self) -> str:
        """S-, or E- together with B- => iobes; U-/L- => bilou; an I- starting a phrase =>
        iob1; otherwise iob2. (E- without B- or S- is IOE, which conlleval reads: iob1/iob2.)"""
        ls = self.letters
        if "U" in ls or "L" in ls:
            return "bilou"
        if "S" in ls or ("E" in ls and "B" in ls):
            return "iobes"
        return "iob1" if self.iob1 else "iob2"

    def mixed(self) -> bool:
        """Whether letters of both IOBES (S-/E-) and BILOU (U-/L-) were seen."""
        return bool(self.letters & {"U", "L"}) and bool(self.letters & {"S", "E"})


def detect_scheme(sentences: Iterable[Sequence[str]]) -> str:
    """The scheme of some label sequences (see :class:`SchemeDetector`)."""
    d = SchemeDetector()
    for s in sentences:
        d.add(s)
    return d.scheme


def phrases(tags: Sequence[str], scheme: str) -> list[tuple[str, int, int]]:
    """Phrases of one sentence as (type, start, end-exclusive) under ``scheme``."""
    if scheme in ("iob1", "iob2"):
        from structkit.eval.chunks import chunks
        return chunks(tags)
    out: list[tuple[str, int, int]] = []
    open_at: int | None = None
    open_type = ""
    prev, prev_type = "O", ""
    for i, tag in enumerate(tags):
        p, t = split_tag(tag)
        if p == "O":
            start = False
        elif p == "B" or p in _SINGLE:
            start = True
        else:
            start = open_at is None or prev_type != t or prev in _LAST or prev in _SINGLE
        if open_at is not None and (p == "O" or start):
            out.append((open_type, open_at, i))
            open_at = None
        if start:
            open_at, open_type = i, t
        if open_at is not None and (p in _LAST or p in _SINGLE):
            out.append((open_type, open_at, i + 1))
            open_at = None
        prev, prev_type = p, t
    if open_at is not None:
        out.append((open_type, open_at, len(tags)))
    return out


def encode(spans: Sequence[tuple[str, int, int]], n: int, scheme: str) -> list[str]:
    """Labels of ``n`` tokens holding the non-overlapping phrases ``spans`` in ``scheme``."""
    tags = ["O"] * n
    last_end, last_type = -1, None
    for kind, a, b in sorted(spans, key=lambda s: s[1]):
        if scheme == "iob1":
            for k in range(a, b):
                tags[k] = f"I-{kind}"
            if a == last_end and kind == last_type:
                tags[a] = f"B-{kind}"
        elif scheme == "iob2":
            for k in range(a, b):
                tags[k] = f"I-{kind}"
            tags[a] = f"B-{kind}"
        else:
            single, last = ("S", "E") if scheme == "iobes" else ("U", "L")
            if b - a == 1:
                tags[a] = f"{single}-{kind}"
            else:
                tags[a] = f"B-{kind}"
                for k in range(a + 1, b - 1):
                    tags[k] = f"I-{kind}"
                tags[b - 1] = f"{last}-{kind}"
        last_end, last_type = b, kind
    return tags


def convert(tags: Sequence[str], source: str, target: str) -> list[str]:
    """Rewrite one sentence's labels from scheme ``source`` to ``target``."""
    return encode(phrases(tags, source), len(tags), target)


class PhraseCounter:
    """Phrase P/R/F1 on exact (type, start, end) matches, for IOBES and BILOU; the same
    interface and :class:`ChunkScore` as :class:`ChunkCounter`."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme
        self.tokens = self.correct_tags = 0
        self.gold: dict[str, int] = {}
        self.pred: dict[str, int] = {}
        self.correct: dict[str, int] = {}

    def add_sentence(self, gold: Sequence[str], pred: Sequence[str]) -> None:
        if len(gold) != len(pred):
            raise ValueError(f"gold sentence has {len(gold)} tags but predicted has {len(pred)}")
        for g, p in zip(gold, pred):
            self.tokens += 1
            self.correct_tags += split_tag(g) == split_tag(p)
        gs = phrases(gold, self.scheme)
        ps = phrases(pred, self.scheme)
        for kind, *_ in gs:
            self.gold[kind] = self.gold.get(kind, 0) + 1
        for kind, *_ in ps:
            self.pred[kind] = self.pred.get(kind, 0) + 1
        for kind, *_ in set(gs) & set(ps):
            self.correct[kind] = self.correct.get(kind, 0) + 1

    def score(self) -> ChunkScore:
        kinds = sorted(set(self.gold) | set(self.pred))
        per_type = {k: TypeCounts(self.gold.get(k, 0), self.pred.get(k, 0), self.correct.get(k, 0))
                    for k in kinds}
        return ChunkScore(self.tokens, self.correct_tags, sum(self.gold.values()),
                          sum(self.pred.values()), sum(self.correct.values()), per_type)


def make_counter(scheme: str):
    """conlleval's counter for IOB1/IOB2, the phrase counter for IOBES/BILOU."""
    return ChunkCounter() if scheme in ("iob1", "iob2") else PhraseCounter(scheme)
