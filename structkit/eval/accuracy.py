"""Token-level tag accuracy, optionally split out for words not seen in training."""
from __future__ import annotations

import itertools
from typing import Iterable, Sequence

__all__ = ["token_accuracy"]

_MISSING = object()


def token_accuracy(gold_sents: Iterable[Sequence[str]], pred_sents: Iterable[Sequence[str]],
                   known_words: set[str] | None = None,
                   words: Iterable[Sequence[str]] | None = None) -> dict:
    """Percent of tokens whose predicted tag equals the gold tag.

    Returns ``{"accuracy", "tokens", "correct"}``. When both ``known_words`` (the training
    vocabulary) and ``words`` (the sentences' words, parallel to ``gold_sents``) are given,
    also ``"unknown_accuracy"``, ``"unknown_tokens"`` and ``"unknown_correct"`` for tokens
    whose word is not in ``known_words``. Percentages are 0.0 when there is nothing to count.
    Raises ValueError (naming the 0-based sentence index) on any length mismatch.
    """
    with_unknown = known_words is not None and words is not None
    # Walk the word sentences alongside the tags so nothing has to be held in memory.
    word_iter = iter(words) if with_unknown else itertools.repeat(None)
    tokens = correct = unk_tokens = unk_correct = 0
    n_sents = 0
    for i, (g, p) in enumerate(itertools.zip_longest(gold_sents, pred_sents,
                                                     fillvalue=_MISSING)):
        if g is _MISSING or p is _MISSING:
            which = "gold" if g is _MISSING else "predicted"
            raise ValueError(f"{which} input ends after {i} sentences, the other has more")
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: gold has {len(g)} tags but predicted has {len(p)}")
        ws = next(word_iter, _MISSING)
        if with_unknown and (ws is _MISSING or len(ws) != len(g)):
            raise ValueError(f"sentence {i}: words do not line up with the gold tags")
        for j, (gt, pt) in enumerate(zip(g, p)):
            hit = gt == pt
            tokens += 1
            correct += hit
            if with_unknown and ws[j] not in known_words:
                unk_tokens += 1
                unk_correct += hit
        n_sents = i + 1
    if with_unknown and next(word_iter, _MISSING) is not _MISSING:
        raise ValueError(f"more word sentences than the {n_sents} tagged sentences")

    result = {"accuracy": 100 * correct / tokens if tokens else 0.0,
              "tokens": tokens, "correct": correct}
    if with_unknown:
        result.update({
            "unknown_accuracy": 100 * unk_correct / unk_tokens if unk_tokens else 0.0,
            "unknown_tokens": unk_tokens,
            "unknown_correct": unk_correct,
        })
    return result
