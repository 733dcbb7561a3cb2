"""The data types of tokenisation and the interface a language's tokenizer implements."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterator

__all__ = ["Token", "Sentence", "Tokenizer", "MAX_SENTENCE_TOKENS"]

# The most tokens one sentence of raw text may have: a longer run without a sentence end (a
# 10 MB line of "a,a,a,...", a list without punctuation) is cut into sentences of this many
# tokens, so that tokenising and tagging it take bounded memory. Tokens are never cut.
MAX_SENTENCE_TOKENS = 1000


@dataclass(slots=True)
class Token:
    """A surface token: ``form == text[start:end]`` of the text it was cut from.

    ``words`` are its syntactic words: ``(form,)`` normally, several for a token that UD
    writes as a multiword token (``Google's`` -> ``Google`` ``'s``). ``space_after`` is False
    when the next character of the text is not whitespace (CoNLL-U ``SpaceAfter=No``).
    Not frozen only because a frozen dataclass takes four times as long to build, which
    counts at millions of tokens: treat tokens (and sentences) as read-only.
    """

    form: str
    start: int
    end: int
    words: tuple[str, ...]
    space_after: bool


@dataclass(slots=True)
class Sentence:
    """A sentence: its tokens, the offsets of its first and last character, ``text`` (the
    exact input from ``start`` to ``end``), and whether it opens a paragraph or a document."""

    tokens: list[Token]
    start: int
    end: int
    text: str
    new_par: bool
    new_doc: bool
    cut: bool = False  # cut at MAX_SENTENCE_TOKENS with no end in sight: it goes on in the next


class Tokenizer(ABC):
    """The rules of one language: how a block of text becomes tokens, and tokens sentences.

    A block is one paragraph (or one line with ``split="lines"``); it never contains a blank
    line. Implementations must run in time linear in the block's length on any input.
    """

    @abstractmethod
    def tokens(self, text: str, offset: int = 0) -> Iterator[Token]:
        """The tokens of ``text`` in order, with offsets shifted by ``offset`` (the position
        of ``text`` in the whole input); together they hold every non-space character."""

    @abstractmethod
    def sentences(self, text: str, offset: int = 0) -> Iterator[tuple[list[Token], bool]]:
        """The tokens of the paragraph ``text`` grouped into sentences (consecutive, none
        empty, none longer than ``MAX_SENTENCE_TOKENS``), offsets as for ``tokens``, each with
        whether it was cut at ``MAX_SENTENCE_TOKENS`` with no end in sight (it goes on in the
        next). A separate method and not a pass over ``tokens``' output so that an
        implementation can decide both in one scan."""
