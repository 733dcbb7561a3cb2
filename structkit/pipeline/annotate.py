"""Writing what a pipeline (``structkit.components.Chain``) makes of raw text:
CoNLL-U sentences (``# sent_id``, ``# text``, multiword token lines, ``SpaceAfter=No``) or one
JSON object per sentence, and `structkit annotate`'s batch job (``AnnotateJob``), which runs a
chain over each block of its input as ``structkit.load(...)(text)`` runs it over a text."""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import IO, Iterable, Iterator

from structkit.components import batches
from structkit.errors import UserError
from structkit.io.batchjob import Job, Tokenized, count_on
from structkit.io.conllu import keep_warnings, looks_like_conllu, read_conllu, take_warnings, warn
from structkit.io.document import write_conllu

BATCH = 1024   # sentences analysed and parsed at a time
PIECE_WORDS = 4096   # words a piece of a divided block holds (``AnnotateJob.divide``)


def to_conllu(sents: Iterable, out: IO[str]) -> None:
    write_conllu(sents, out)


def sentence_json(s) -> dict:
    """One annotated sentence as JSON: its id and text, its words (every CoNLL-U column but
    DEPS) and its multiword tokens."""
    sid = text = None
    multiword = []
    for line in s.lines:
        if line.startswith("# sent_id = "):
            sid = line[len("# sent_id = "):]
        elif line.startswith("# text = "):
            text = line[len("# text = "):]
        elif not line.startswith("#"):
            cols = line.split("\t")
            if "-" in cols[0]:
                a, b = cols[0].split("-")
                multiword.append({"first": int(a), "last": int(b), "form": cols[1]})
    words = [{"id": int(r[0]), "form": r[1], "lemma": r[2], "upos": r[3], "xpos": r[4], "feats": r[5],
              "head": int(r[6]) if r[6].isdigit() else None, "deprel": r[7], "misc": r[9]} for r in s.rows]
    out: dict = {"sent_id": int(sid) if sid is not None and sid.isdigit() else sid, "text": text,
                 "words": words}
    if multiword:
        out["multiword"] = multiword
    return out


def to_json_lines(sents: Iterable, out: IO[str]) -> None:
    for s in sents:
        out.write(json.dumps(sentence_json(s), ensure_ascii=False))
        out.write("\n")


@dataclass
class _Context:
    conllu: bool = True


class AnnotateJob(Job):
    """`structkit annotate`: a block of raw text in, what the pipeline ``chain`` makes of it out
    (CoNLL-U or JSON lines)."""

    def __init__(self, chain, fmt: str = "conllu", conllu: bool = False):
        self.chain = chain
        self.fmt = fmt
        self.conllu = conllu        # the input is CoNLL-U: its sentences analysed as given
        self.cut_lines = not conllu

    def sniff(self, name: str, head: bytes) -> _Context:
        return _Context()

    def stdin_context(self) -> _Context:
        return _Context()

    def output_format(self, inp, ctx) -> str:
        return self.fmt

    def marker(self, fmt: str, name: str, ctx) -> bytes:
        if fmt == "json":
            return (json.dumps({"file": name}, ensure_ascii=False) + "\n").encode("utf-8")
        return super().marker(fmt, name, ctx)

    def divide(self, ctx, name: str, data: bytes, first: bool) -> Iterator[Tokenized] | None:
        """Raw text: the block tokenized here, its sentences sent on in pieces of about
        ``PIECE_WORDS`` words, which the workers analyse while the rest is tokenized. A long
        paragraph is tokenized as one text (its sentence ends depend on all of it), so this is
        how a file with no blank line uses every core; the output is the block's, as one
        process writes it."""
        if self.conllu:
            return None
        if first:
            _refuse_conllu(name, data)
        return self._pieces(name, data)

    def _pieces(self, name: str, data: bytes) -> Iterator[Tokenized]:
        it = iter(self.chain.tokenizer.sentences(io.BytesIO(data), name))
        piece: list = []
        words = before = size = given = 0
        said: tuple[str, ...] = ()
        while True:
            with keep_warnings():   # the long-sentence warning comes with the last sentence
                s = next(it, None)
                said += take_warnings()
            if s is None:
                break
            piece.append(s)
            words += len(s)
            size += _text_bytes(s)
            if words >= PIECE_WORDS:
                size = min(size, len(data) - given)
                yield Tokenized(piece, size, before)
                given += size
                before += len(piece)
                piece, words, size = [], 0, 0
        if piece or said:
            yield Tokenized(piece, len(data) - given, before, said)

    def process(self, ctx, name: str, data, first: bool) -> tuple[bytes, int, int]:
        out = io.StringIO()
        words = count = 0
        write = to_json_lines if self.fmt == "json" else to_conllu
        if isinstance(data, Tokenized):   # a piece of a divided block: tokenized, to analyse
            for w in data.warnings:
                warn(w)
            chunks = _batches(data.sents, self.chain, name)
        elif self.conllu:
            chunks = _batches(read_conllu(name, io.BytesIO(data), check_text=False), self.chain, name)
        else:
            if first:
                _refuse_conllu(name, data)
            chunks = self.chain.sentences(io.BytesIO(data), name, BATCH)
        for chunk in chunks:
            write(chunk, out)
            words += sum(len(s.rows) for s in chunk)
            count += len(chunk)
        data_out = self.block_output(out.getvalue(), first)
        if isinstance(data, Tokenized):   # numbered from the block's start: from the piece's, as a block's
            data_out = count_on(data_out, -data.before)
        return data_out, words, count

    def one_document(self) -> bool:
        return not self.conllu   # CoNLL-U in keeps its sentence ids


def _batches(sents, chain, name: str):
    """CoNLL-U sentences, ``BATCH`` at a time, analysed by the chain's models after its
    tokenizer (their tokens and sentences are the input's)."""
    for chunk in batches(sents, BATCH):
        chain.process(chunk, name)
        yield chunk


def _text_bytes(s) -> int:
    """The UTF-8 bytes of a sentence's ``# text`` and a space (a piece's share of the input)."""
    for line in s.lines:
        if line.startswith("# text = "):
            return len(line.encode("utf-8")) - len("# text = ") + 1
    return 0


def _refuse_conllu(name: str, data: bytes) -> None:
    """Raw text whose first line that is not blank or a comment is a CoNLL-U token row: a
    one-line error, before it is tokenised as words (``# sent_id``, ``1``, ``The``...)."""
    for k, line in enumerate(data[:1 << 16].decode("utf-8", "replace").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if looks_like_conllu(line):
            raise UserError("this looks like CoNLL-U (ten tab-separated columns, an ID first), and "
                            "annotate reads raw text: give --input conllu to analyse its words as "
                            "given", name, k)
        return
