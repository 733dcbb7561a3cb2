"""Phrase P/R/F1 for the schemes conlleval does not read: IOBES and BILOU phrases (decoded by
``structkit.spans``) scored on exact (type, start, end) matches, with the same interface and
:class:`~structkit.eval.chunks.ChunkScore` as conlleval's counter (:func:`make_counter` picks the
one for a scheme)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from structkit.eval.chunks import ChunkCounter, ChunkScore, TypeCounts
from structkit.spans import phrases, split_tag

if TYPE_CHECKING:
    from structkit.eval.chunks import ChunkScore

__all__ = ["PhraseCounter", "make_counter"]


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
