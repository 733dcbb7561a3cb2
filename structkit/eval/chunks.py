"""Phrase (chunk) evaluation with the exact counting rules of the CoNLL ``conlleval`` script.

Scores reported for chunking and NER are only comparable with published numbers when they are
counted the way ``conlleval`` counts them, quirks included, so this module re-implements its
default mode (not ``-r``) rather than a "clean" span-matching F1:

* a tag splits at its first ``-`` into a prefix and a type (``"O"`` has the empty type);
* a phrase starts and ends where conlleval's start/end rules say so. Those rules understand
  IOB1 (``I-`` after ``O`` or after another type starts a phrase), IOB2, IOE and the one-token
  bracket tags ``[``/``]``; anything else only starts/ends a phrase through a type change;
* a phrase is correct when gold and prediction start it at the same token with the same type,
  neither ends it before the other, and the types stay equal until both end it together;
* after every sentence a boundary is processed as an ``O``/``O`` token that is not counted in
  the token total or in accuracy, so a phrase can never run across sentences.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from structkit.spans import end_of_chunk, split_tag, start_of_chunk

__all__ = ["TypeCounts", "ChunkScore", "ChunkCounter", "conlleval"]

def _pct(num: int, den: int) -> float:
    # Same expression order as conlleval (100*num/den) so the doubles, and hence the
    # rounded report, agree to the last digit.
    return 100 * num / den if den > 0 else 0.0


def _f1(precision: float, recall: float) -> float:
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


@dataclass
class TypeCounts:
    """Phrase counts for one phrase type."""

    found_correct: int = 0
    found_guessed: int = 0
    correct: int = 0

    @property
    def precision(self) -> float:
        """Percent of predicted phrases of this type that are correct (0.0 if none predicted)."""
        return _pct(self.correct, self.found_guessed)

    @property
    def recall(self) -> float:
        """Percent of gold phrases of this type that were found (0.0 if none in gold)."""
        return _pct(self.correct, self.found_correct)

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall, in percent (0.0 when both are 0)."""
        return _f1(self.precision, self.recall)


@dataclass
class ChunkScore:
    """Totals of a conlleval run; percentages are computed on demand."""

    tokens: int = 0
    correct_tags: int = 0
    found_correct: int = 0
    found_guessed: int = 0
    correct_chunks: int = 0
    per_type: dict[str, TypeCounts] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """Token-level tag accuracy in percent (boundaries excluded)."""
        return _pct(self.correct_tags, self.tokens)

    @property
    def precision(self) -> float:
        """Phrase precision in percent."""
        return _pct(self.correct_chunks, self.found_guessed)

    @property
    def recall(self) -> float:
        """Phrase recall in percent."""
        return _pct(self.correct_chunks, self.found_correct)

    @property
    def f1(self) -> float:
        """Phrase F1 (conlleval's FB1) in percent."""
        return _f1(self.precision, self.recall)

    def to_dict(self) -> dict:
        """Plain-data summary, e.g. for JSON result files."""
        return {
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tokens": self.tokens,
            "phrases_gold": self.found_correct,
            "phrases_predicted": self.found_guessed,
            "correct_phrases": self.correct_chunks,
            "per_type": {
                kind: {
                    "precision": tc.precision,
                    "recall": tc.recall,
                    "f1": tc.f1,
                    "gold": tc.found_correct,
                    "predicted": tc.found_guessed,
                    "correct": tc.correct,
                }
                for kind, tc in sorted(self.per_type.items())
            },
        }

    def format_report(self) -> str:
        """The report as conlleval prints it (newline-terminated lines)."""
        lines = [
            f"processed {self.tokens} tokens with {self.found_correct} phrases; "
            f"found: {self.found_guessed} phrases; correct: {self.correct_chunks}."
        ]
        if self.tokens > 0:
            lines.append(
                f"accuracy: {self.accuracy:6.2f}%; precision: {self.precision:6.2f}%; "
                f"recall: {self.recall:6.2f}%; FB1: {self.f1:6.2f}")
        for kind in sorted(self.per_type):
            tc = self.per_type[kind]
            # conlleval lists the types it saw start a phrase (gold or predicted) only.
            if not (tc.found_correct or tc.found_guessed):
                continue
            # Perl pads %17s by bytes, not characters.
            pad = " " * max(0, 17 - len(kind.encode("utf-8")))
            line = (f"{pad}{kind}: precision: {tc.precision:6.2f}%; "
                    f"recall: {tc.recall:6.2f}%; FB1: {tc.f1:6.2f}  {tc.found_guessed}")
            lines.append(line)
            # conlleval de-duplicates its merged, sorted type list with a Perl truth test
            # on the previous name, which fails for the empty type: an untyped phrase
            # kind seen in both gold and prediction is listed twice.
            if kind == "" and tc.found_correct and tc.found_guessed:
                lines.append(line)
        return "".join(line + "\n" for line in lines)


class ChunkCounter:
    """Streaming conlleval: feed sentences one at a time, ask for the score at any point."""

    def __init__(self) -> None:
        self.tokens = 0
        self.correct_tags = 0
        self.found_correct = 0
        self.found_guessed = 0
        self.correct_chunks = 0
        self._found_correct: dict[str, int] = {}
        self._found_guessed: dict[str, int] = {}
        self._correct: dict[str, int] = {}
        # Previous gold/predicted prefix and type; the start of input looks like a boundary.
        self._last_c, self._last_ct = "O", ""
        self._last_g, self._last_gt = "O", ""
        # True while the phrase being read may still turn out correct.
        self._in_correct = False

    def add_sentence(self, gold: Sequence[str], pred: Sequence[str]) -> None:
        """Count one sentence; raises ValueError when the two tag lists differ in length."""
        if len(gold) != len(pred):
            raise ValueError(
                f"gold sentence has {len(gold)} tags but predicted has {len(pred)}")
        for g, p in zip(gold, pred):
            c, ct = split_tag(g)
            q, qt = split_tag(p)
            self._step(c, ct, q, qt)
            self.tokens += 1
            if c == q and ct == qt:
                self.correct_tags += 1
        # The sentence boundary: closes open phrases but is not a token.
        self._step("O", "", "O", "")

    def _step(self, c: str, ct: str, g: str, gt: str) -> None:
        end_c = end_of_chunk(self._last_c, c, self._last_ct, ct)
        end_g = end_of_chunk(self._last_g, g, self._last_gt, gt)
        if self._in_correct:
            if end_c and end_g and self._last_gt == self._last_ct:
                self._in_correct = False
                self.correct_chunks += 1
                self._correct[self._last_ct] = self._correct.get(self._last_ct, 0) + 1
            elif end_c != end_g or gt != ct:
                self._in_correct = False
        start_c = start_of_chunk(self._last_c, c, self._last_ct, ct)
        start_g = start_of_chunk(self._last_g, g, self._last_gt, gt)
        if start_c and start_g and gt == ct:
            self._in_correct = True
        if start_c:
            self.found_correct += 1
            self._found_correct[ct] = self._found_correct.get(ct, 0) + 1
        if start_g:
            self.found_guessed += 1
            self._found_guessed[gt] = self._found_guessed.get(gt, 0) + 1
        self._last_c, self._last_ct = c, ct
        self._last_g, self._last_gt = g, gt

    def score(self) -> ChunkScore:
        """Score of everything added so far (does not change the counter)."""
        correct_chunks = self.correct_chunks
        correct = dict(self._correct)
        # A phrase still open at end of input counts if it was correct so far; in practice
        # the boundary after each sentence has already closed it.
        if self._in_correct:
            correct_chunks += 1
            correct[self._last_ct] = correct.get(self._last_ct, 0) + 1
        kinds = set(self._found_correct) | set(self._found_guessed) | set(correct)
        per_type = {
            k: TypeCounts(self._found_correct.get(k, 0), self._found_guessed.get(k, 0),
                          correct.get(k, 0))
            for k in sorted(kinds)
        }
        return ChunkScore(self.tokens, self.correct_tags, self.found_correct,
                          self.found_guessed, correct_chunks, per_type)


_MISSING = object()


def conlleval(gold: Iterable[Sequence[str]], pred: Iterable[Sequence[str]]) -> ChunkScore:
    """Score predicted against gold tag sequences, one sequence per sentence.

    Raises ValueError (naming the 0-based sentence index) when a sentence's gold and
    predicted lengths differ or the two inputs hold different numbers of sentences.
    """
    counter = ChunkCounter()
    for i, (g, p) in enumerate(itertools.zip_longest(gold, pred, fillvalue=_MISSING)):
        if g is _MISSING or p is _MISSING:
            which = "gold" if g is _MISSING else "predicted"
            raise ValueError(f"{which} input ends after {i} sentences, the other has more")
        try:
            counter.add_sentence(g, p)
        except ValueError as exc:
            raise ValueError(f"sentence {i}: {exc}") from None
    return counter.score()
