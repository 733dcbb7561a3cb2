"""The parser's batch job (``structkit.batch``; ``parse``, ``parse --tagger``): a block of CoNLL-U
(written back as CoNLL-U) or CoNLL-X / `word POS` rows in, parsed sentences out."""
from __future__ import annotations

from dataclasses import dataclass

from structkit.io.batchjob import Job


@dataclass
class ParseContext:
    conllu: bool


class ParseJob(Job):
    """parse: a block of CoNLL-U (written back as CoNLL-U) or CoNLL-X / `word POS` rows."""

    def __init__(self, parser, tagger=None, depth: int | None = None, beam: int | None = None):
        self.parser = parser
        self.tagger = tagger
        self.depth = depth
        self.beam = beam

    def sniff(self, name: str, head: bytes) -> ParseContext:
        from structkit.io.conllu import _conllu_signs

        lines = head[:1 << 16].decode("utf-8", "replace").splitlines()[:10000]
        line = next((ln for ln in lines if ln.strip() and not ln.startswith("#")), "")
        return ParseContext(_conllu_signs(name, lines, line, by_rows=False))

    def output_format(self, inp, ctx: ParseContext) -> str:
        return "conllu" if ctx.conllu else "conllx"

    def process(self, ctx: ParseContext, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        import io

        from structkit.parse.conllio import parse_stream

        out = io.StringIO()
        tokens, sentences = parse_stream(self.parser, self.tagger, name, io.BytesIO(data), ctx.conllu,
                                         out, self.depth, self.beam)
        return out.getvalue().encode("utf-8"), tokens, sentences
