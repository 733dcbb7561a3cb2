"""Phrases written as labels, one per token: how a sequence of ``O`` and ``P-TYPE`` labels makes
phrases, in the schemes IOB1, IOB2, IOBES and BILOU. Taggers decode their spans here, the
renderer draws them and ``structkit.eval`` counts them.

A label is ``O`` or ``P-TYPE`` with a prefix letter P. The schemes differ in their letters:

* IOB1: ``I-`` inside a phrase; ``B-`` only starts a phrase right after one of the same type;
* IOB2: ``B-`` starts every phrase, ``I-`` continues it;
* IOBES: ``S-`` is a one-token phrase, ``B-``/``I-``/``E-`` begin, continue and end longer ones;
* BILOU: as IOBES with ``U-`` for ``S-`` and ``L-`` for ``E-``.

IOB1 and IOB2 phrases start and end where the CoNLL ``conlleval`` script's rules say
(:func:`start_of_chunk`, :func:`end_of_chunk`: they understand IOB1, IOB2, IOE and the one-token
bracket tags ``[``/``]``; anything else only starts or ends a phrase through a type change), so
that phrases are the ones ``structkit.eval.chunks`` counts. IOBES and BILOU are decoded with the
same start/end rules (a phrase starts at ``B-``/``S-``/``U-``, or at ``I-``/``E-``/``L-`` after
``O``, after a phrase's last token or after another type; it ends at ``E-``/``S-``/``L-``/``U-``,
before ``O``, before a phrase start or at a type change).
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

__all__ = ["SCHEMES", "SchemeDetector", "detect_scheme", "phrases", "encode", "convert", "bad_label",
           "split_tag", "first_bad_tag", "chunks", "start_of_chunk", "end_of_chunk"]

# The tags whose phrases conlleval reads as intended: O, and B-/I-/E- with a type.
_PHRASE_TAG = re.compile(r"^(O|[BIE]-.+)$")


def first_bad_tag(tags: Sequence[str]) -> int | None:
    """Index of the first tag that is not O or B-/I-/E-TYPE, or None when all are."""
    for k, tag in enumerate(tags):
        if not _PHRASE_TAG.match(tag):
            return k
    return None


def split_tag(tag: str) -> tuple[str, str]:
    """Split ``tag`` into (prefix, type) at the first ``-``; no ``-`` means the empty type."""
    prefix, dash, kind = tag.partition("-")
    if not dash:
        return tag, ""
    # conlleval tests the type for Perl truth, and the string "0" is false in Perl: a type
    # spelled "0" is treated as no type at all.
    if kind == "0":
        kind = ""
    return prefix, kind


def end_of_chunk(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    """Whether a phrase open at the previous token ends before the current one."""
    if prev in ("B", "I") and tag in ("B", "O"):
        return True
    if prev == "E" and tag in ("E", "I", "O"):
        return True
    # Any prefix other than O ends its phrase when the type changes; conlleval also
    # exempts the prefix ".", so we do too.
    if prev != "O" and prev != "." and prev_type != kind:
        return True
    # Bracket tags always mark one-token phrases.
    return prev in ("[", "]")


def start_of_chunk(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    """Whether a phrase starts at the current token, given the previous one."""
    if tag == "B" and prev in ("B", "I", "O"):
        return True
    # IOB1: I- opens a phrase after O; IOE: I- or E- opens one after an E- or O.
    if tag == "I" and prev in ("O", "E"):
        return True
    if tag == "E" and prev in ("E", "O"):
        return True
    if tag != "O" and tag != "." and prev_type != kind:
        return True
    return tag in ("[", "]")


def chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Phrases of one sentence as (type, start, end-exclusive), by conlleval's rules.

    There is one span per phrase conlleval counts. A span ends where conlleval's end rule
    fires, or where the next phrase starts if that comes first (possible only with unusual
    tag mixes such as ``I-X`` followed by ``[-X``).
    """
    spans: list[tuple[str, int, int]] = []
    open_at: int | None = None
    open_type = ""
    prev, prev_type = "O", ""
    n = len(tags)
    for i in range(n + 1):
        # Position n is the sentence boundary, an O that closes whatever is open.
        tag, kind = split_tag(tags[i]) if i < n else ("O", "")
        if open_at is not None and end_of_chunk(prev, tag, prev_type, kind):
            spans.append((open_type, open_at, i))
            open_at = None
        if i < n and start_of_chunk(prev, tag, prev_type, kind):
            if open_at is not None:
                spans.append((open_type, open_at, i))
            open_at, open_type = i, kind
        prev, prev_type = tag, kind
    if open_at is not None:
        spans.append((open_type, open_at, n))
    return spans


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
