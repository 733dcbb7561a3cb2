"""Parsing a stream of CoNLL-U or CoNLL-X sentences into an output stream (the body of
``structkit parse`` and of its batch blocks)."""
from __future__ import annotations

import itertools
from typing import IO

from structkit.errors import UserError
from structkit.io.conll import Sentence
from structkit.io.conllu import checked_tree, read_conllu, read_raw_text, write_parsed
from structkit.io.conllx import read_conllx
from structkit.parse.labelled import LabelledParser


def parse_stream(parser, tagger, name: str, stream: IO, conllu: bool, out: IO[str],
                 depth: int | None = None, beam: int | None = None, text=None,
                 split: str = "auto") -> tuple[int, int]:
    """Parse every sentence of ``stream`` and write it to ``out``: CoNLL-U comes back with only
    HEAD and DEPREL changed (and, with a POS ``tagger``, UPOS and XPOS); CoNLL-X or `word POS`
    input is written as CoNLL-X (the lines ``structkit.io.conllx.read_conllx`` holds). An
    unlabelled parser writes DEPREL '_', never the input's.
    ``text``: the stream is raw text, tokenised by this tokenizer (a language code or a
    ``structkit.text.Tokenizer``, such as a learnt one) into the CoNLL-U sentences ``tag --text
    --format conllu`` writes (``# text``, ``SpaceAfter=No``, range lines), tagged by ``tagger``
    and parsed; ``split`` as ``structkit.text.iter_sentences`` takes it.
    Returns (words, sentences) parsed."""

    kw = {"beam": beam} if isinstance(parser, LabelledParser) else {}
    if text is not None:
        sents = read_raw_text(name, text, split, stream=stream)
        return _parse_conllu(parser, tagger, name, sents, depth, out, **kw)
    if conllu:
        sents = read_conllu(name, stream, check_text=False)
        return _parse_conllu(parser, tagger, name, sents, depth, out, **kw)

    words = count = 0
    for batch, heads, deprels in tag_then_parse(parser, read_conllx(name, stream), name, tagger,
                                                depth=depth, **kw):
        # the one writer: HEAD and DEPREL set in each sentence's lines (an unlabelled parse
        # writes DEPREL '_': the input's would pass for a prediction)
        write_parsed(batch, heads, deprels, out)
        words += sum(len(s) for s in batch)
        count += len(batch)
    return words, count


def _parse_conllu(parser, tagger, name: str, it, depth, out: IO[str], batch: int = 2048,
                  **kw) -> tuple[int, int]:
    """Parse the CoNLL-U sentences ``it`` (``structkit.io.document.Sentence``): their HEAD
    column checked (``checked_tree``), tagged in their lines by ``tagger``, written back with
    the parse."""

    words = count = 0
    while chunk := list(itertools.islice(it, batch)):
        for s in chunk:
            checked_tree(s, name)
        for done, heads, deprels in tag_then_parse(parser, chunk, name, tagger, depth=depth, batch=batch, **kw):
            write_parsed(done, heads, deprels, out)
        words += sum(len(s) for s in chunk)
        count += len(chunk)
    return words, count


def tag_then_parse(parser, sentences, name: str, tagger=None, tags=None, depth: int | None = None,
                   **kw):
    """The one tag-then-parse path (``parse --tagger``, the batch job, the server's pipelines):
    the sentences (``structkit.io.document.Sentence``) get POS tags in both UPOS and XPOS --
    from ``tagger`` (a POS tagging model), or ``tags`` already predicted (a tag list per
    sentence; None keeps the sentence's own) -- then are parsed. Yields ``parse_batches``'
    (batch, heads, deprels)."""
    if tagger is not None:  # a list is tagged whole first; a stream as it is parsed
        tagged = pos_tagged(tagger, sentences, name)
        sentences = list(tagged) if isinstance(sentences, list) else tagged
    elif tags is not None:
        sentences = list(sentences)
        for k, (s, t) in enumerate(zip(sentences, tags)):
            if t is not None:
                t = list(t)
                if len(t) != len(s):   # (set in the sentence's columns: one a word)
                    raise UserError(f"pos: sentence {k + 1} has {len(s)} words but {len(t)} POS tags")
                set_pos(s, t)
    yield from parser.parse_batches(sentences, name, depth, **kw)


def set_pos(sentence, tags) -> None:
    """A tagger's POS tags as a sentence's UPOS and XPOS (what the parser reads)."""
    sentence.fill_columns({3: tags, 4: tags})


def pos_tagged(tagger, sentences, name: str, batch: int = 1024):
    """Replace each sentence's POS columns with the tagger's predictions (streamed, batched)."""

    it = iter(sentences)
    while chunk := list(itertools.islice(it, batch)):
        rows = [Sentence.from_rows([[w] for w in s.forms], s.line_of(0)) for s in chunk]
        for _, labels in tagger.tag_batches(rows, name, text=True, batch=batch):
            for s, tags in zip(chunk, labels):
                set_pos(s, tags)
        yield from chunk
