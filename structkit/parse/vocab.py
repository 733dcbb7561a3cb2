"""What both parsers encode a sentence with: the POS column they read and their vocabularies
(id 0 = no such item, 1 = unknown)."""
from __future__ import annotations

from typing import Iterable

from structkit.io.document import Sentence
from structkit.vocab import Vocab as BaseVocab

SPECIAL = ["<none>", "<unk>"]  # ids 0 (no such item) and 1 (unknown)


def pos_column(s: Sentence, which: str, rows: list[list[str]] | None = None) -> list[str]:
    """The POS tags the parser reads: XPOS (falling back to UPOS where XPOS is '_'), or UPOS
    (``rows``: the sentence's, when already at hand)."""
    if rows is None:
        rows = s.rows
    if which == "upos":
        return [r[3] for r in rows]
    return [r[4] if r[4] != "_" else r[3] for r in rows]


class Vocab(BaseVocab):
    """Words or tags to ids, with 0 = no such item and 1 = unknown (``SPECIAL``)."""

    def __init__(self, items: list[str] | None = None):
        super().__init__(SPECIAL if items is None else items, reserved=len(SPECIAL))

    def ids(self, ws: Iterable[str], default: int = 1) -> list[int]:
        return super().ids(ws, default)

    @property
    def items(self) -> list[str]:  # type: ignore[override]  (the model file's word list)
        return self.words
