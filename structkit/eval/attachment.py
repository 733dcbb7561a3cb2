"""Unlabeled dependency evaluation: attachment score (UAS), root accuracy and complete match.

Punctuation follows the convention of the English dependency parsing literature (Yamada &
Matsumoto 2003; Huang & Sagae 2010 and most later work on the Penn Treebank): a token is
punctuation when its GOLD part-of-speech tag is one of the Penn Treebank punctuation tags
`` '' , . : — and such tokens are left out of the headline UAS and complete match. Scores
with punctuation included are reported alongside. Note that ``#``, ``$``, ``-LRB-`` and
``-RRB-`` are *not* punctuation under this convention.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["PUNCT_TAGS", "AttachmentCounter", "is_punct", "scoring_tags"]

# The Penn Treebank punctuation tags excluded from UAS (gold POS, never the predicted one).
PUNCT_TAGS = {"``", "''", ",", ".", ":"}


def is_punct(tag: str) -> bool:
    """True if a gold POS tag marks a punctuation token (one of ``PUNCT_TAGS``)."""
    return tag in PUNCT_TAGS


def scoring_tags(xpos: Sequence[str], upos: Sequence[str]) -> list[str]:
    """The gold tag per token used to decide punctuation: the fine PTB tag (CoNLL-X POSTAG /
    CoNLL-U XPOS), falling back to the coarse one (CPOSTAG / UPOS) where it is '_'."""
    if len(xpos) != len(upos):
        raise ValueError(f"{len(xpos)} fine tags but {len(upos)} coarse tags")
    return [u if x == "_" else x for x, u in zip(xpos, upos)]


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


class AttachmentCounter:
    """Streams sentences of (gold heads, predicted heads, gold POS) and scores them.

    Heads are 1-based, 0 = the root. ``score()`` returns, percentages in 0..100:

    - ``uas``: percent of non-punctuation tokens whose predicted head is the gold head;
    - ``uas_with_punct``: the same over all tokens;
    - ``root_accuracy``: percent of gold root tokens (gold head 0; punctuation or not) whose
      predicted head is also 0. It is recall of the root attachment: a token wrongly attached
      to the root is counted by ``uas`` but not here;
    - ``complete_match``: percent of sentences in which every non-punctuation token has the
      right head (a sentence made only of punctuation counts as a match);
    - ``complete_match_with_punct``: percent of sentences in which every token has the right
      head;
    - ``tokens``, ``scored_tokens`` (non-punctuation tokens), ``root_tokens`` (gold roots),
      ``sentences``: the counts behind them.

    A percentage whose denominator is 0 (nothing added, no scored tokens) is 0.0.
    """

    def __init__(self) -> None:
        self.sentences = 0
        self.tokens = 0
        self.correct = 0               # all tokens with the right head
        self.scored_tokens = 0         # non-punctuation tokens
        self.scored_correct = 0
        self.root_tokens = 0           # gold head 0
        self.root_correct = 0
        self.complete = 0              # sentences right on every non-punctuation token
        self.complete_with_punct = 0   # sentences right on every token

    def add(self, gold_heads: Sequence[int], pred_heads: Sequence[int],
            gold_pos: Sequence[str]) -> None:
        """Count one sentence. Raises ValueError if the three sequences differ in length."""
        n = len(gold_heads)
        if len(pred_heads) != n or len(gold_pos) != n:
            raise ValueError(f"sentence {self.sentences + 1}: {n} gold heads, "
                             f"{len(pred_heads)} predicted heads and {len(gold_pos)} gold POS "
                             "tags; they must be equal")
        wrong = wrong_scored = 0
        for g, p, tag in zip(gold_heads, pred_heads, gold_pos):
            hit = g == p
            wrong += not hit
            if tag not in PUNCT_TAGS:
                self.scored_tokens += 1
                self.scored_correct += hit
                wrong_scored += not hit
            if g == 0:
                self.root_tokens += 1
                self.root_correct += hit
        self.sentences += 1
        self.tokens += n
        self.correct += n - wrong
        self.complete += wrong_scored == 0
        self.complete_with_punct += wrong == 0

    def score(self) -> dict:
        """The scores so far (see the class docstring)."""
        return {
            "uas": _percent(self.scored_correct, self.scored_tokens),
            "uas_with_punct": _percent(self.correct, self.tokens),
            "root_accuracy": _percent(self.root_correct, self.root_tokens),
            "complete_match": _percent(self.complete, self.sentences),
            "complete_match_with_punct": _percent(self.complete_with_punct, self.sentences),
            "tokens": self.tokens,
            "scored_tokens": self.scored_tokens,
            "root_tokens": self.root_tokens,
            "sentences": self.sentences,
        }
