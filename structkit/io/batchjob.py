"""The batch job protocol: what ``structkit.batch`` asks of a task's job to turn one block of
an input file into output bytes. The tasks' jobs live in their wings; the runner (inputs,
blocks, executors, ordered atomic outputs) in ``structkit.batch``."""
from __future__ import annotations

import re
from typing import Any, Iterator

EXTENSIONS = {"conllu": ".conllu", "conll": ".conll", "conllx": ".conllx", "json": ".jsonl"}
_SENT_ID = re.compile(rb'(?m)^(# sent_id = |\{"sent_id": )([0-9]+)(?=$|[,}])')


def continue_document(text: str, first: bool) -> str:
    """The CoNLL-U of a block of raw text: a block after the first continues the document
    (no ``# newdoc`` at its start)."""
    if not first and text.startswith("# newdoc\n"):
        return text[len("# newdoc\n"):]
    return text


def count_on(data: bytes, sentences_before: int) -> bytes:
    """The sentence ids of a block's output (``# sent_id = N``, or JSON lines'
    ``{"sent_id": N``), numbered from 1 in each block, counted on from the sentences of the
    blocks before."""
    if not sentences_before:
        return data
    return _SENT_ID.sub(lambda m: m.group(1) + b"%d" % (int(m.group(2)) + sentences_before), data)


class Tokenized:
    """A piece of a block whose sentences were made in the runner's process (``Job.divide``):
    the tokenizer's sentences, not yet analysed, sent to a worker in place of bytes. ``size``:
    the input bytes they cover (progress); ``before``: the block's sentences before them (their
    ids were counted from the block's start); ``warnings``: what reading the block warned (on
    its last piece)."""

    __slots__ = ("sents", "size", "before", "warnings")

    def __init__(self, sents: list, size: int, before: int, warnings: tuple[str, ...] = ()):
        self.sents, self.size, self.before, self.warnings = sents, size, before, warnings

    def __len__(self) -> int:
        return self.size

    def __reduce__(self):
        return Tokenized, (self.sents, self.size, self.before, self.warnings)

    def head(self, n: int) -> "Tokenized":
        """A copy of the first ``n`` sentences (warming the kernels leaves these untouched)."""
        import copy

        return Tokenized(copy.deepcopy(self.sents[:n]), 0, self.before)


class StdinContext:
    """The context of a file not sniffed (yet): standard input, or a file whose first block
    could not be read (its error comes in order, when it is processed)."""
    conllu = False
    n_columns = None


class Job:
    """What a batch command does to a block. A task's job (``Command.batch_job``) subclasses it
    (or ``RawTextJob``): ``structkit.sequence.jobs.TagJob``, ``structkit.parse.jobs.ParseJob``."""

    cut_lines = False  # raw text: a block may end at any line end (not only after a blank line)

    def sniff(self, name: str, head: bytes) -> Any:
        """What must be fixed for the whole file, from its first block (format, columns)."""
        return None

    def output_format(self, inp, ctx: Any) -> str:
        raise NotImplementedError

    def process(self, ctx: Any, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        raise NotImplementedError

    def marker(self, fmt: str, name: str, ctx: Any) -> bytes:
        """The start-of-file mark in a single output stream of several files."""
        if fmt in ("conllu", "conllx"):
            return f"# file = {name}\n".encode("utf-8")
        n = self.output_columns(ctx)
        cols = ["-DOCSTART-", name] + ["-X-"] * (n - 3) + (["O"] if n >= 3 else [])
        return ("\t".join(cols) + "\n\n").encode("utf-8")

    def divide(self, ctx: Any, name: str, data: bytes, first: bool) -> Iterator[Tokenized] | None:
        """A block too big to share among the workers (a long paragraph: raw text is cut only
        at blank lines) in pieces made here, whose output together is the block's: None when the
        job cannot (the block is then sent whole)."""
        return None

    def stdin_context(self) -> Any:
        """The file context of standard input, decided before it is read (by default: later,
        from its first block)."""
        return StdinContext()

    def output_columns(self, ctx: Any) -> int:
        return 2

    def one_document(self) -> bool:
        """Whether a file's outputs make one document, the CoNLL-U (or JSON lines) of raw text:
        a block after the first continues it (``block_output``) and numbers its sentences on
        from the blocks before (``fix_block``)."""
        return False

    def block_output(self, text: str, first: bool) -> bytes:
        """A block's output text as ``process`` returns it: bytes, continuing the document
        after a file's ``first`` block when the file is ``one_document``."""
        return (continue_document(text, first) if self.one_document() else text).encode("utf-8")

    def fix_block(self, data: bytes, ctx: Any, sentences_before: int) -> bytes:
        """Adjust a block's output for what came before it in the file (sentence ids)."""
        return count_on(data, sentences_before) if self.one_document() else data


class RawTextJob(Job):
    """A job that reads raw text when given ``text``, a language code or a learnt
    ``structkit.text.Tokenizer`` (and ``split``: "auto", or "lines" for a sentence a line), and
    otherwise CoNLL: raw text may be cut into blocks at any line end, and what it makes of a file
    is one document."""

    def __init__(self, text=None, split: str = "auto"):
        self.text = text
        self.split = split
        self.cut_lines = text is not None

    def one_document(self) -> bool:
        return self.text is not None
