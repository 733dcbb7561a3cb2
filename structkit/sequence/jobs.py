"""The tagging tasks' batch job (``structkit.batch``; ``tag``, ``chunk``, ``ner``): a block of
CoNLL columns, CoNLL-U or raw text in, tagged rows out."""
from __future__ import annotations

from dataclasses import dataclass

from structkit.io.batchjob import Job
from structkit.io.conll import Sentence, read_conll, write_conll
from structkit.io.conllu import (
    read_conllu,
    read_raw_text,
    read_sequence,
    set_key,
    write_tagged,
)


@dataclass
class TagContext:
    conllu: bool
    n_columns: int | None




class TagJob(Job):
    """tag/chunk/ner: a block of CoNLL columns, CoNLL-U or raw text in, tagged rows out."""

    def __init__(self, tagger, columns: str | None = None, text: bool = False,
                 split: str = "auto", fmt: str | None = None, lang: str = "en",
                 depth: int | None = None, scores: bool = False):
        self.scores = scores
        self.tagger = tagger
        self.columns = columns
        self.text = text
        self.cut_lines = text
        self.split = split
        self.fmt = fmt
        self.lang = lang
        self.depth = depth

    def sniff(self, name: str, head: bytes) -> TagContext:
        if self.text:
            return TagContext(False, None)
        import io

        first = next(iter(read_sequence(name, io.BytesIO(head))))
        return TagContext(first.lines is not None, len(first.rows[0]))

    def stdin_context(self):
        return self.sniff("<stdin>", b"") if self.text else super().stdin_context()

    def output_format(self, inp, ctx: TagContext) -> str:
        if self.text:
            return "conllu" if self.fmt == "conllu" else "conll"
        return "conllu" if ctx.conllu else "conll"

    def output_columns(self, ctx: TagContext) -> int:
        return 2 if self.text or ctx.n_columns is None else ctx.n_columns + 1

    def process(self, ctx: TagContext, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        import io

        tagger = self.tagger
        if not self.text and not ctx.conllu and not self.scores:
            out = tagger.tag_conll_bytes(data, name, 1, self.columns, self.depth, ctx.n_columns)
            return out, _rows(out), -1
        stream = io.BytesIO(data)
        if self.text:
            sents = read_raw_text(name, self.lang, self.split, stream=stream)
        elif ctx.conllu:
            sents = read_conllu(name, stream)
        else:
            sents = read_conll(name, stream, n_columns=ctx.n_columns)
        out = io.StringIO()
        column, key = tagger.output_column()
        tokens = sentences = 0
        for batch, labels, *margins in tagger.tag_batches(sents, name, self.columns, self.text,
                                                          depth=self.depth, margins=self.scores):
            tokens += sum(len(s.rows) for s in batch)
            sentences += len(batch)
            if margins:
                _write_scored(batch, labels, margins[0], out, column, key, self.text, self.fmt)
            elif batch[0].lines is not None and (not self.text or self.fmt == "conllu"):
                write_tagged(batch, labels, out, column, key)  # CoNLL-U in, CoNLL-U out
            elif self.text:
                write_conll([Sentence.from_rows([[r[1]] for r in s.rows], s.first_line) for s in batch],
                            labels, out)
            else:
                write_conll(batch, labels, out)
        return self.block_output(out.getvalue(), first), tokens, sentences

    def one_document(self) -> bool:
        return bool(self.text) and self.fmt == "conllu"


def _write_scored(batch, labels, margins, out, column, key, text, fmt) -> None:
    """Tagged output with each token's margin (``--scores``): a last column after the label in
    CoNLL columns, ``Margin=`` in MISC in CoNLL-U."""

    if batch[0].lines is not None and (not text or fmt == "conllu"):
        for s, ms in zip(batch, margins):
            for k, (row, m) in enumerate(zip(s.rows, ms)):
                s.set_columns(k, {9: set_key(row[9], "Margin", f"{m:.3f}")})
        write_tagged(batch, labels, out, column, key)
        return
    rows = ([[r[1]] for r in s.rows] if text else s.rows for s in batch)
    scored = [Sentence.from_rows([r + [lab] for r, lab in zip(rs, labs)], s.first_line)
              for rs, labs, s in zip(rows, labels, batch)]
    write_conll(scored, [[f"{m:.3f}" for m in ms] for ms in margins], out)


def _rows(data: bytes) -> int:
    """Token rows of CoNLL column output (lines less blank lines), for the progress bar."""
    return data.count(b"\n") - data.count(b"\n\n")
