"""Running a pipeline on raw text: tokenise and split into sentences (the pipeline's tokenizer,
or a language's rules), analyse each word (morph: LEMMA, UPOS, XPOS, FEATS) and parse (HEAD,
DEPREL); out come CoNLL-U sentences (``# sent_id``, ``# text``, multiword token lines,
``SpaceAfter=No``) or one JSON object per sentence. The one path of `structkit annotate` (its
batch job, ``AnnotateJob``), ``structkit.load(...)(text)`` and the server's pipeline models."""
from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from typing import IO, Iterable, Iterator

from structkit.io.batchjob import Job

BATCH = 1024   # sentences analysed and parsed at a time
_SENT_ID = re.compile(rb'(?m)^(# sent_id = |\{"sent_id": )([0-9]+)')


def annotate_sentences(model, sents: list, name: str = "-", beam: int | None = None) -> None:
    """Fill LEMMA, UPOS, XPOS, FEATS (the morph part) and HEAD, DEPREL (the parser) of
    CoNLL-U sentences (``structkit.io.document.Sentence``), in place."""
    if model.morph is not None and sents:
        for s, analysis in zip(sents, model.morph.analyse([[r[1] for r in s.rows] for s in sents])):
            for k, (lemma, upos, xpos, feats) in enumerate(analysis):
                s.set_columns(k, {2: lemma, 3: upos, 4: xpos, 5: feats})
    if model.parser is not None and sents:
        from structkit.io.conllu import dep_view

        views = [dep_view(s, name) for s in sents]
        for v in views:
            v.heads = None
        kw = {"beam": beam} if beam is not None else {}
        k = 0
        for batch, heads, deprels in model.parser.parse_batches(views, name, **kw):
            for h, d in zip(heads, deprels if deprels is not None else [None] * len(heads)):
                s = sents[k]
                for i in range(len(s.rows)):
                    s.set_columns(i, {6: str(h[i]), 7: d[i] if d is not None else "_"})
                k += 1


def tokenizer_of(model, lang: str = "en"):
    """What tokenises the text: the pipeline's tokenizer, else the rules of ``lang``."""
    if model.tokenizer is not None:
        return model.tokenizer.tokenizer
    from structkit.text.tokenize import get_tokenizer

    get_tokenizer(lang)
    return lang


def annotate_stream(model, name: str, stream: IO, tokenizer, split: str = "auto",
                    beam: int | None = None) -> Iterator[list]:
    """The annotated sentences of raw text ``stream``, ``BATCH`` at a time."""
    import itertools

    from structkit.io.conllu import read_raw_text

    it = read_raw_text(name, tokenizer, split, stream=stream)
    while chunk := list(itertools.islice(it, BATCH)):
        annotate_sentences(model, chunk, name, beam)
        yield chunk


def to_conllu(sents: Iterable, out: IO[str]) -> None:
    for s in sents:
        out.write("\n".join(s.lines))
        out.write("\n\n")


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
    """`structkit annotate`: a block of raw text in, its annotated sentences out (CoNLL-U or
    JSON lines)."""

    cut_lines = True

    def __init__(self, model, fmt: str = "conllu", lang: str = "en", split: str = "auto",
                 beam: int | None = None):
        self.model = model
        self.fmt = fmt
        self.tokenizer = tokenizer_of(model, lang)
        self.split = split
        self.beam = beam

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

    def process(self, ctx, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        out = io.StringIO()
        words = count = 0
        write = to_json_lines if self.fmt == "json" else to_conllu
        for chunk in annotate_stream(self.model, name, io.BytesIO(data), self.tokenizer, self.split, self.beam):
            write(chunk, out)
            words += sum(len(s.rows) for s in chunk)
            count += len(chunk)
        text = out.getvalue()
        if not first and text.startswith("# newdoc\n"):
            text = text[len("# newdoc\n"):]  # a block after the first continues the document
        return text.encode("utf-8"), words, count

    def fix_block(self, data: bytes, ctx, sentences_before: int) -> bytes:
        if sentences_before:  # sentence ids count on from the blocks before
            return _SENT_ID.sub(lambda m: m.group(1) + b"%d" % (int(m.group(2)) + sentences_before), data)
        return data
