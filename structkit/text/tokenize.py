"""Raw text to sentences of tokens with character offsets: the language-independent driver.

``tokenize`` and ``iter_sentences`` cut the input into blocks (paragraphs, or single lines
with ``split="lines"``), hand each block to the tokenizer of the language (``TOKENIZERS``)
and turn what it returns into ``Sentence`` objects whose offsets point into the input. Only
one block is held in memory at a time, so a large file costs memory in proportion to its
largest paragraph (at most ``MAX_BLOCK_CHARS`` plus a line), and every step is linear in the
length of the input.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from structkit.errors import UserError
from structkit.text.base import MAX_SENTENCE_TOKENS, Sentence, Token, Tokenizer
from structkit.text.english import EnglishTokenizer

__all__ = ["Token", "Sentence", "Tokenizer", "TOKENIZERS", "SPLIT_MODES", "get_tokenizer",
           "tokenize", "iter_sentences"]

SPLIT_MODES = ("auto", "lines")
# A paragraph is tokenised as one block; one longer than this (a file without blank lines) is
# cut after the line that passes it, so that memory follows this bound and not the file. The
# cut ends a sentence there.
MAX_BLOCK_CHARS = 1 << 20

TOKENIZERS: dict[str, Tokenizer] = {"en": EnglishTokenizer()}


def get_tokenizer(lang: "str | Tokenizer") -> Tokenizer:
    """The tokenizer of language ``lang`` (or ``lang`` itself, a tokenizer such as a learnt
    one, ``structkit.tokenizer``); an unknown code is a UserError listing the known and saying
    how to train a tokenizer for it."""
    if isinstance(lang, Tokenizer):
        return lang
    try:
        return TOKENIZERS[lang]
    except KeyError:
        known = ", ".join(sorted(TOKENIZERS))
        raise UserError(f"no tokenizer for language {lang!r}; known: {known}; train one on a UD "
                        f"treebank with `structkit train --task tokenize --train X.conllu --model "
                        f"tok.model` and give it with --tokenizer tok.model") from None


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their '\\n' kept (only '\\n' ends a line; '\\r' and other
    separators are whitespace inside it), so that the lines concatenate back to ``text``."""
    pos = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl + 1
        yield text[pos:end]
        pos = end


def _blocks(lines: Iterable[str], split: str) -> Iterator[tuple[int, str, bool]]:
    """Yield (offset, block text, starts a paragraph) for each block of non-blank lines.

    ``auto``: a block is a paragraph (lines up to a blank line). ``lines``: a block is one
    line; it starts a paragraph when it is the first or follows a blank line.
    """
    offset = 0          # position of the next line in the input
    block: list[str] = []
    block_start = 0
    size = 0            # characters in block
    new_par = True      # whether block starts a paragraph (not when a long one was cut)
    after_blank = True
    for line in lines:
        if not line or line.isspace():
            if block:
                yield block_start, "".join(block), new_par
                block, size, new_par = [], 0, True
            after_blank = True
        elif split == "lines":
            yield offset, line, after_blank
            after_blank = False
        else:
            if not block:
                block_start = offset
            block.append(line)
            size += len(line)
            if size >= MAX_BLOCK_CHARS:  # a paragraph without end: cut after this line
                yield block_start, "".join(block), new_par
                block, size, new_par = [], 0, False
        offset += len(line)
    if block:
        yield block_start, "".join(block), new_par


def iter_sentences(source: str | Iterable[str], lang: str = "en",
                   split: str = "auto") -> Iterator[Sentence]:
    """The sentences of ``source``, produced one at a time.

    ``source`` is the whole text, or its lines as a file yields them (line endings kept);
    offsets count characters of the concatenated input. ``split="auto"``: a blank line ends
    a paragraph, a single newline is plain whitespace and the tokenizer finds the sentences.
    ``split="lines"``: each non-blank line is exactly one sentence. The first sentence opens
    the document; the first of each paragraph (``lines``: after a blank line) opens one.
    An unknown language or mode is a UserError at once, before any input is read.
    """
    if split not in SPLIT_MODES:
        raise UserError(f"unknown sentence split mode {split!r}; known: {', '.join(SPLIT_MODES)}")
    tokenizer = get_tokenizer(lang)
    lines = _lines(source) if isinstance(source, str) else source
    return _sentences(tokenizer, _blocks(lines, split), split)


def _sentences(tokenizer: Tokenizer, blocks: Iterable[tuple[int, str, bool]],
               split: str) -> Iterator[Sentence]:
    first = True
    for offset, block, new_par in blocks:
        if split == "auto":
            groups = tokenizer.sentences(block, offset)
        else:
            groups = _whole(tokenizer.tokens(block, offset))
        for toks, cut in groups:
            start, end = toks[0].start, toks[-1].end
            yield Sentence(list(toks), start, end, block[start - offset:end - offset],
                           new_par=new_par, new_doc=first, cut=cut)
            first = new_par = False


def _whole(tokens: Iterable[Token]) -> Iterator[tuple[list[Token], bool]]:
    """All tokens of a block as one sentence (none if the block has no tokens), cut into
    sentences of ``MAX_SENTENCE_TOKENS`` when it has more (as ``Tokenizer.sentences``)."""
    toks: list[Token] = []
    for tok in tokens:
        if len(toks) == MAX_SENTENCE_TOKENS:
            yield toks, True
            toks = []
        toks.append(tok)
    if toks:
        yield toks, False


def tokenize(text: str, lang: str = "en", split: str = "auto") -> list[Sentence]:
    """The sentences of ``text``, tokenized by the rules of language ``lang``.

    See ``iter_sentences`` for ``split``; raises UserError for an unknown language or mode.
    """
    return list(iter_sentences(text, lang, split))
