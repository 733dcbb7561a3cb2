"""The parser's batch job (``structkit.batch``; ``parse``, ``parse --tagger``, ``parse --text``):
a block of CoNLL-U (written back as CoNLL-U), CoNLL-X / `word POS` rows, or raw text (tokenised,
tagged and written as CoNLL-U) in, parsed sentences out."""
from __future__ import annotations

from dataclasses import dataclass

from structkit.io.batchjob import RawTextJob
from structkit.io.conllu import _conllu_signs
from structkit.parse.conllio import parse_stream


@dataclass
class ParseContext:
    conllu: bool


class ParseJob(RawTextJob):
    """parse: a block of CoNLL-U (written back as CoNLL-U) or CoNLL-X / `word POS` rows; with
    ``text`` (a language code or a ``structkit.text.Tokenizer``, such as a learnt one) a block
    of raw text, tokenised into the CoNLL-U sentences ``tag --text --format conllu`` writes."""

    def __init__(self, parser, tagger=None, depth: int | None = None, beam: int | None = None,
                 text=None, split: str = "auto"):
        super().__init__(text, split)
        self.parser = parser
        self.tagger = tagger
        self.depth = depth
        self.beam = beam

    def sniff(self, name: str, head: bytes) -> ParseContext:
        if self.text is not None:
            return ParseContext(True)

        lines = head[:1 << 16].decode("utf-8", "replace").splitlines()[:10000]
        line = next((ln for ln in lines if ln.strip() and not ln.startswith("#")), "")
        return ParseContext(_conllu_signs(name, lines, line, by_rows=False))

    def stdin_context(self):
        return ParseContext(True) if self.text is not None else super().stdin_context()

    def output_format(self, inp, ctx: ParseContext) -> str:
        return "conllu" if self.text is not None or ctx.conllu else "conllx"

    def process(self, ctx: ParseContext, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        import io

        out = io.StringIO()
        tokens, sentences = parse_stream(self.parser, self.tagger, name, io.BytesIO(data), ctx.conllu,
                                         out, self.depth, self.beam, self.text, self.split)
        return self.block_output(out.getvalue(), first), tokens, sentences
