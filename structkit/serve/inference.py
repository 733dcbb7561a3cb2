"""Running the models over a request's sentences, a chunk at a time, each model under its lock
(``infer``); a request's whole work, run in a worker thread: decode, check, tokenise, run and
write the answer (``answer``); and ``warm_up``, which runs every model once before the first
request.
"""
from __future__ import annotations

import math

from structkit.errors import UserError
from structkit.serve.inputs import (Options, Sent, _from_text, check_request, decode_body,
                                    read_sentences)
from structkit.serve.limits import MAX_WORDS, Job, RequestError, _chunks
from structkit.serve.registry import Served, Tokenizers
from structkit.serve.views import _dumps, _legend, _sentence_json, span_colours, to_conllu, to_json

TOP_FEATURES = 5           # features shown per side in an explanation
WARM_TEXT = "The cat sat on the mat in Paris, didn't it? Mr. Smith said so."


def _margin(m: float) -> float | None:
    """A margin for JSON: None where it is infinite (a model with one label has no runner-up)."""
    m = float(m)
    return round(m, 4) if math.isfinite(m) else None


def _explain(sv: Served, s: Sent, with_pos: bool) -> list[dict] | None:
    """Per token: runner-up, margin and the strongest features each way; None where
    ``explain_sentence`` does not cover the model (a UserError)."""
    from structkit.explain import explain_sentence
    from structkit.io.conll import Sentence

    pos = s.tagger_pos() if with_pos else None
    rows = [[w, p] for w, p in zip(s.words, pos)] if pos else [[w] for w in s.words]
    try:
        expl = explain_sentence(sv.model, Sentence(rows, 1), "<request>", text=not pos)
    except UserError:
        return None
    out = []
    for e in expl:
        out.append({"label": e.label, "runner_up": e.runner_up,
                    "margin": _margin(e.margin),
                    "for": [[p.name, round(p.weight, 4)] for p in e.pushes if p.weight > 0][:TOP_FEATURES],
                    "against": [[p.name, round(p.weight, 4)] for p in e.pushes
                                if p.weight < 0][:TOP_FEATURES]})
    return out


def _run_tagger(sv: Served, sents: list[Sent], scores: bool, explain: bool) -> None:
    needs_pos = sv.meta["needs_pos"]
    X = []
    for s in sents:
        if needs_pos:
            pos = s.tagger_pos()
            if pos is None:
                raise RequestError(400, f"model {sv.name} reads a POS tag per token: give tokens as "
                                        "[word, POS] pairs or CoNLL-U with POS, or run a pos model "
                                        "before it (POST /pipeline)")
            X.append(list(zip(s.words, pos)))
        else:
            X.append(list(s.words))
    scores = scores and sv.meta["scores"]
    with sv.lock:
        try:
            out = sv.est.predict(X, scores=scores)
        except UserError as e:
            raise RequestError(400, f"model {sv.name}: {e}") from None
        for s, res in zip(sents, out):
            labels, margins = res if scores else (res, None)
            s.labels[sv.name] = labels
            s.scores[sv.name] = None if margins is None else [_margin(m) for m in margins]
            if sv.meta.get("gives_pos", sv.kind.provides_pos) and s.predicted_pos is None:
                s.predicted_pos = list(labels)
            if explain:
                s.explanations[sv.name] = _explain(sv, s, needs_pos) if sv.meta["explain"] else None


def _run_analyser(sv: Served, sents: list[Sent], scores: bool, explain: bool) -> None:
    """A model whose output is an analysis per word (a dict of CoNLL-U parts: lemma, upos, xpos,
    feats): labels are those dicts, scores a dict of margins per word, explanations a dict per
    part; the first such model's analyses are what a parser after it reads."""
    from structkit.explain import explain_sentence
    from structkit.io.conll import Sentence

    scores = scores and sv.meta["scores"]
    with sv.lock:
        try:
            out = sv.est.predict([list(s.words) for s in sents], scores=scores)
        except UserError as e:
            raise RequestError(400, f"model {sv.name}: {e}") from None
        for s, res in zip(sents, out):
            analyses, margins = res if scores else (res, None)
            s.labels[sv.name] = analyses
            s.scores[sv.name] = None if margins is None else [{p: _margin(m) for p, m in d.items()}
                                                                for d in margins]
            if s.analyses is None:
                s.analyses = analyses
            if explain and sv.meta["explain"]:
                per = [dict() for _ in s.words]
                for e in explain_sentence(sv.model, Sentence([[w] for w in s.words], 1), "<request>", text=True):
                    part = e.word.rsplit("[", 1)[-1].rstrip("]").lower()
                    per[e.index - 1][part] = {
                        "label": e.label, "runner_up": e.runner_up, "margin": _margin(e.margin),
                        "for": [[p.name, round(p.weight, 4)] for p in e.pushes if p.weight > 0][:TOP_FEATURES],
                        "against": [[p.name, round(p.weight, 4)] for p in e.pushes if p.weight < 0][:TOP_FEATURES]}
                s.explanations[sv.name] = per
            elif explain:
                s.explanations[sv.name] = None


def _run_parser(sv: Served, sents: list[Sent]) -> int:
    """Parse; the number of sentences that had no POS tags."""
    from structkit.io.conllu import dep_view
    from structkit.io.conllx import DepSentence

    X: list = []
    no_pos = 0
    for s in sents:
        pos = s.tagger_pos()
        if pos is None and s.analyses is None:
            no_pos += 1
        if s.conllu is not None:
            d = dep_view(s.conllu, "conllu")
            d.heads = None
            X.append(d)
        elif s.analyses is not None:
            n = len(s.words)
            p = pos or ["_"] * n
            X.append(DepSentence(list(s.words), ["_"] * n, list(p), list(p), ["_"] * n, None, ["_"] * n))
        else:
            X.append(list(zip(s.words, pos or ["_"] * len(s.words))))
        if s.analyses is not None:   # a morph model ran before: its LEMMA, UPOS, XPOS and FEATS
            d = X[-1]
            for part, attr in (("lemma", "lemmas"), ("upos", "upos"), ("xpos", "xpos"), ("feats", "feats")):
                if s.analyses and part in s.analyses[0]:
                    setattr(d, attr, [a[part] for a in s.analyses])
    with sv.lock:
        try:  # a pos model's tags, in the pipeline before, as `parse --tagger` reads them
            out = sv.est.predict(X, labels=True, pos=[s.predicted_pos for s in sents])
        except UserError as e:
            raise RequestError(400, f"model {sv.name}: {e}") from None
    for s, (heads, rels) in zip(sents, out):
        s.heads = [int(h) for h in heads]
        s.deprels = [str(r) for r in rels]
    return no_pos


def _run_pipeline(sv: Served, sents: list[Sent]) -> None:
    """A pipeline model's morph model and parser over the sentences' words (its components, as
    `structkit annotate` runs them: ``structkit.components``)."""
    from structkit.io.document import Sentence

    conllu = []
    for s in sents:
        rows = [[str(i + 1), w, "_", "_", "_", "_", "_", "_", "_", "_"] for i, w in enumerate(s.words)]
        conllu.append(Sentence.from_lines(rows, ["\t".join(r) for r in rows], list(range(len(rows)))))
    with sv.lock:
        try:
            sv.est.chain.process(conllu, sv.name)
        except UserError as e:
            raise RequestError(400, f"model {sv.name}: {e}") from None
    for s, c in zip(sents, conllu):
        s.analysis = [tuple(r[2:6]) for r in c.rows]
        s.labels[sv.name] = [r[3] for r in c.rows]
        if s.predicted_pos is None:
            s.predicted_pos = [r[3] for r in c.rows]
        if "head" in sv.est.chain.provides:
            s.heads = [int(r[6]) for r in c.rows]
            s.deprels = [r[7] for r in c.rows]


def run(opts: Options, job: Job | None = None) -> tuple[dict | str, list[str]]:
    """Run the models over the sentences: the JSON response (or CoNLL-U text)."""
    warnings = infer(opts, job or Job())
    if opts.fmt == "conllu":
        return to_conllu(opts.sents, opts.models), warnings
    return to_json(opts.sents, opts.models, opts.scores, opts.explain, warnings,
                   opts.render), warnings


def infer(opts: Options, job: Job) -> list[str]:
    """Run the models over the sentences, a chunk at a time (checking ``job`` and taking each
    model's lock per chunk); the warnings."""
    warnings: list[str] = []
    n = sum(len(s.words) for s in opts.sents)
    if n > MAX_WORDS:
        raise RequestError(413, f"the request has {n} words; the limit is {MAX_WORDS}")
    for sv in sorted(opts.models, key=lambda m: m.kind.serve_order):
        no_pos = 0
        for part in _chunks(opts.sents):
            job.check()
            if sv.kind.output == "tree":
                no_pos += _run_parser(sv, part)
            elif sv.kind.output == "analyses":
                _run_analyser(sv, part, opts.scores, opts.explain)
            elif sv.kind.output == "analysis":
                _run_pipeline(sv, part)
            else:
                _run_tagger(sv, part, opts.scores, opts.explain)
        if no_pos:
            warnings.append(f"parser {sv.name} read no POS tags in {no_pos} sentence(s): give "
                            "POS or run a pos model before it")
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
    opts.sents = read_sentences(data, job, notes, opts.tokenizer)
    del data
    warnings = notes + infer(opts, job)
    if opts.fmt == "conllu":
        parts, first = [], 1
        for part in _chunks(opts.sents):
            job.check()
            parts.append(to_conllu(part, opts.models, first))
            first += len(part)
        return "".join(parts).encode("utf-8"), "text/plain; charset=utf-8"
    colours = span_colours(opts.models) if opts.render else None
    parts = [b'{"models":', _dumps([{"name": m.name, "task": m.task} for m in opts.models])]
    if colours is not None:
        parts += [b',"legend":', _dumps(_legend(colours))]
    parts.append(b',"sentences":[')
    for k, s in enumerate(opts.sents):
        if k % 64 == 0:
            job.check()
        if k:
            parts.append(b",")
        parts.append(_dumps(_sentence_json(s, opts.models, opts.scores, opts.explain, colours, k)))
    parts += [b'],"warnings":', _dumps(warnings), b"}"]
    return b"".join(parts), "application/json"


def warm_up(served: dict[str, Served], tokenizers: Tokenizers | None = None) -> None:
    """Run every model once (and the tokenizers), so numba compiles (or loads its cache) before
    the first request. numba is imported first, so that the warm-up (and every request after
    it) takes the kernels, not the numpy paths of one-shot commands for a few sentences."""
    from structkit.jit import load_numba

    load_numba()
    for t in (tokenizers.models.values() if tokenizers is not None else ()):
        _from_text(WARM_TEXT, t.tokenizer)
    sents_for = lambda: _from_text(WARM_TEXT, "en")  # noqa: E731
    pos = [m for m in served.values() if m.kind.provides_pos]
    for sv in served.values():
        models = [sv] if sv.kind.provides_pos or not pos else [pos[0], sv]
        if sv.meta.get("needs_pos") and not pos:
            sents = sents_for()
            for s in sents:
                s.pos = ["NN"] * len(s.words)
        else:
            sents = sents_for()
        run(Options(sents, models, scores=True, explain=True))
        run(Options(sents_for(), models, scores=True, explain=False, fmt="conllu"))
