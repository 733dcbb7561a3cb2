"""Running the models over a request's sentences, a chunk at a time, each model under its lock
(``infer``: each model's ``structkit.serving.Serving`` runs it); a request's whole work, run in a worker thread: decode, check, tokenise, run and
write the answer (``answer``); and ``warm_up``, which runs every model once before the first
request.
"""
from __future__ import annotations

from structkit.errors import UserError
from structkit.jit import load_numba
from structkit.serve.inputs import (
    Options,
    _from_text,
    check_request,
    decode_body,
    rough_words,
    tags_pos,
)
from structkit.serve.limits import MAX_WORDS, Job, RequestError, _chunks
from structkit.serve.registry import Served, Tokenizers
from structkit.serve.views import (
    _dumps,
    _legend,
    _sentence_json,
    span_colours,
    to_conllu,
    to_json,
)
from structkit.serving import Output, Results

WARM_TEXT = "The cat sat on the mat in Paris, didn't it? Mr. Smith said so."


def run(opts: Options, job: Job | None = None) -> tuple[dict | str, list[str]]:
    """Run the models over the sentences: the JSON response (or CoNLL-U text)."""
    warnings = infer(opts, job or Job())
    if opts.fmt == "conllu":
        return to_conllu(opts), warnings
    return to_json(opts, warnings), warnings


def infer(opts: Options, job: Job) -> list[str]:
    """Run the models over the sentences, a chunk at a time (checking ``job`` and taking each
    model's lock per chunk), each model's output kept in ``opts.results``; the warnings."""
    warnings: list[str] = []
    n = sum(len(s) for s in opts.sents)
    if n > MAX_WORDS:
        raise RequestError(413, f"the request has {n} words; the limit is {MAX_WORDS}")
    opts.results = Results()
    chunks = list(_chunks(opts.sents))
    for sv in sorted(opts.models, key=lambda m: m.serving.order):
        out = Output()
        for at, part in chunks:
            job.check()
            try:
                out.extend(sv.serving.run(sv, part, opts.results.at(at), opts.scores, opts.explain))
            except UserError as e:
                raise RequestError(400, e.message) from None
        opts.results.add(sv.name, out)
        if out.missing:
            warnings.append(sv.serving.missing(sv, out.missing))
    job.check()
    return warnings


def answer(body: bytes | dict, endpoint: str, served: dict[str, Served], job: Job,
           opts: Options | None = None, tokenizers: Tokenizers | None = None) -> tuple[bytes, str]:
    """A request's whole work, run in a worker thread: decode and check (unless given ``opts``,
    the checked request of the decoded ``body``), tokenise, run the models and write the
    answer (bytes and media type), checking ``job`` between chunks."""
    data = decode_body(body) if isinstance(body, bytes) else body
    del body
    if opts is None:
        opts = check_request(data, endpoint, served, tokenizers)
    job.check()
    notes: list[str] = []
    job.words(rough_words(data))   # its time limit grows with its words: roughly, to read them
    opts.read(data, job, notes)
    del data
    job.words(sum(len(s) for s in opts.sents))   # then as many as they are
    warnings = notes + infer(opts, job)
    if opts.fmt == "conllu":
        parts = []
        for at, part in _chunks(opts.sents):
            job.check()
            parts.append(to_conllu(opts, at, at + len(part)))
        return "".join(parts).encode("utf-8"), "text/plain; charset=utf-8"
    colours = span_colours(opts.models) if opts.render else None
    parts = [b'{"models":', _dumps([{"name": m.name, "task": m.task} for m in opts.models])]
    if colours is not None:
        parts += [b',"legend":', _dumps(_legend(colours))]
    parts.append(b',"sentences":[')
    for k in range(len(opts.sents)):
        if k % 64 == 0:
            job.check()
        if k:
            parts.append(b",")
        parts.append(_dumps(_sentence_json(opts, k, colours)))
    parts += [b'],"warnings":', _dumps(warnings), b"}"]
    return b"".join(parts), "application/json"


def warm_up(served: dict[str, Served], tokenizers: Tokenizers | None = None) -> None:
    """Run every model once (and the tokenizers), so numba compiles (or loads its cache) before
    the first request. numba is imported first, so that the warm-up (and every request after
    it) takes the kernels, not the numpy paths of one-shot commands for a few sentences."""

    load_numba()
    for t in (tokenizers.models.values() if tokenizers is not None else ()):
        _from_text(WARM_TEXT, t.tokenizer)
    sents_for = lambda: _from_text(WARM_TEXT, "en")  # noqa: E731
    pos = [m for m in served.values() if tags_pos(m)]
    for sv in served.values():
        models = [sv] if tags_pos(sv) or not pos else [pos[0], sv]
        sents = sents_for()
        if sv.meta.get("needs_pos") and not pos:
            for s in sents:   # POS in the input, as XPOS
                for k in range(len(s)):
                    s.set_columns(k, {4: "NN"})
        run(Options(sents, models, scores=True, explain=True, text=WARM_TEXT))
        run(Options(sents_for(), models, scores=True, explain=False, fmt="conllu", text=WARM_TEXT))
