"""`structkit serve`: models loaded once behind a small JSON API, and a web page that draws
the result (``structkit/web/index.html``).

The server is Starlette on uvicorn (the ``serve`` extra). Starlette because it is a thin,
well-kept ASGI toolkit with no opinions about models or validation (we check the few JSON fields
ourselves, to give structkit's one-line messages), and uvicorn because it is the reference ASGI
server: it handles keep-alive, SIGTERM (a graceful stop) and needs nothing compiled. Inference is
plain synchronous Python and numba; it runs in a thread pool so that the event loop keeps
accepting and timing requests, with one lock per model (the decoders' work arrays are not meant
to be shared by two threads at once).

Requests never name files: the models are the ones given on the command line, by name.
Every error is ``{"error": "one line"}`` with its status code; never a traceback.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from structkit.errors import UserError

TASKS = ("pos", "chunk", "ner", "parse")
ENDPOINTS = {"tag": "pos", "chunk": "chunk", "ner": "ner", "parse": "parse"}
MAX_BYTES = 1 << 20        # request bodies above this are refused (413)
TIMEOUT = 10.0             # seconds per request, queueing included (503 after)
MAX_WORDS = 100_000        # words per request (413 above: a time limit alone would let one
#                            request occupy a worker long after its client was told 503)
TOP_FEATURES = 5           # features shown per side in an explanation
WARM_TEXT = "The cat sat on the mat in Paris, didn't it? Mr. Smith said so."
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_ORDER = {"pos": 0, "chunk": 1, "ner": 1, "parse": 2}


class RequestError(Exception):
    """A request's mistake: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# ---- models ------------------------------------------------------------------------------------
@dataclass
class Served:
    """One loaded model: its name in the API, the Python API estimator, and its metadata."""
    name: str
    path: str
    task: str
    est: Any                      # structkit.api.Tagger or structkit.api.Parser
    meta: dict
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def model(self) -> Any:
        return self.est._fitted()


def _split_spec(spec: str) -> tuple[str, str]:
    """``NAME=PATH`` or ``PATH`` (named by the file's stem)."""
    name, eq, path = spec.partition("=")
    if not eq or os.path.exists(spec):
        path = spec
        name = os.path.basename(spec)
        for ext in (".npz", ".model"):
            if name.endswith(ext) and len(name) > len(ext):
                name = name[:-len(ext)]
                break
    if not name or not set(name) <= _NAME_CHARS:
        raise UserError(f"--model {spec}: a model name is letters, digits, '_', '.' and '-' "
                        "(give NAME=PATH)")
    return name, path


def load_models(specs: list[str]) -> dict[str, Served]:
    """Load each ``--model`` once (UserError for a missing, damaged or unsuitable file)."""
    from structkit.api import Parser, Tagger
    from structkit.config import resolve_data_path

    if not specs:
        raise UserError("give at least one --model")
    served: dict[str, Served] = {}
    for spec in specs:
        name, path = _split_spec(spec)
        if name in served:
            raise UserError(f"two models are named {name!r}: name them with --model NAME=PATH")
        path = resolve_data_path(path, must_exist=True)
        try:
            est = Tagger.load(path)
        except UserError as e:
            if "trained for task 'parse'" not in e.message:
                if "trained for task" in e.message:
                    raise UserError(f"{e.message} (serve takes pos, chunk, ner and parse models)",
                                    e.path) from None
                raise
            est = Parser.load(path)
        served[name] = Served(name, path, est.task if isinstance(est, Tagger) else "parse", est,
                              {})
        served[name].meta = _metadata(served[name])
    return served


def _metadata(sv: Served) -> dict:
    model = sv.model
    info = getattr(model, "info", {}) or {}
    config = model.config
    meta = {"name": sv.name, "task": sv.task, "algorithm": config.algo,
            "train_file": info.get("train_file"), "train_sha256": info.get("train_sha256")}
    if sv.task == "parse":
        labels = list(getattr(model, "labels", []) or [])
        meta.update(labels=labels, labelled=bool(labels), pos_column=config.pos,
                    scores=False, explain=False)
    else:
        # margins: max-marginals for Viterbi models, the decision margin for history-based ones
        meta.update(labels=[str(l) for l in model.labels], decoder=config.spec.decoder,
                    needs_pos=bool(model.features.uses_pos), scheme=info.get("scheme"),
                    scores=True, explain=True)
    return meta


# ---- the input: text, token lists or CoNLL-U -> sentences ----------------------------------------
@dataclass
class Sent:
    words: list[str]
    starts: list[int]
    ends: list[int]
    text: str
    pos: list[str] | None = None            # POS from the input (token pairs, CoNLL-U)
    multiword: list[dict] = field(default_factory=list)
    space_after: list[bool] | None = None
    conllu: Any = None                       # structkit.io.conll.Sentence read from CoNLL-U
    predicted_pos: list[str] | None = None   # from the first pos model of the request
    labels: dict = field(default_factory=dict)        # model -> labels
    scores: dict = field(default_factory=dict)        # model -> margins
    explanations: dict = field(default_factory=dict)  # model -> per-token dicts (or None)
    heads: list[int] | None = None
    deprels: list[str] | None = None

    def tagger_pos(self) -> list[str] | None:
        return self.predicted_pos if self.predicted_pos is not None else self.pos


def _from_text(text: str, lang: str) -> list[Sent]:
    from structkit.text.tokenize import tokenize

    out = []
    for s in tokenize(text, lang):
        words, starts, ends, space, mwt = [], [], [], [], []
        for tok in s.tokens:
            if len(tok.words) > 1:
                mwt.append({"first": len(words) + 1, "last": len(words) + len(tok.words),
                            "form": tok.form, "start": tok.start, "end": tok.end})
            for k, w in enumerate(tok.words):
                words.append(w)
                starts.append(tok.start)
                ends.append(tok.end)
                space.append(tok.space_after if k == len(tok.words) - 1 else False)
        out.append(Sent(words, starts, ends, s.text, multiword=mwt, space_after=space))
    return out


def _joined(words: list[str], space_after: list[bool]) -> tuple[str, list[int], list[int]]:
    """A sentence's text rebuilt from its words, and each word's offsets in it."""
    parts, starts, ends, at = [], [], [], 0
    for w, sp in zip(words, space_after):
        starts.append(at)
        ends.append(at + len(w))
        parts.append(w + (" " if sp else ""))
        at += len(w) + (1 if sp else 0)
    return "".join(parts).rstrip(" "), starts, ends


def _from_tokens(tokens: Any) -> list[Sent]:
    if not isinstance(tokens, list):
        raise RequestError(400, "tokens must be a list of sentences, each a list of words or "
                                "[word, POS] pairs")
    out = []
    for i, sent in enumerate(tokens):
        if not isinstance(sent, list) or not sent:
            raise RequestError(400, f"tokens: sentence {i + 1} must be a non-empty list of words "
                                    "or [word, POS] pairs")
        words, pos = [], []
        for k, tok in enumerate(sent):
            if isinstance(tok, list) and len(tok) == 2 and all(isinstance(c, str) for c in tok):
                words.append(tok[0])
                pos.append(tok[1])
            elif isinstance(tok, str):
                words.append(tok)
            else:
                raise RequestError(400, f"tokens: sentence {i + 1}, token {k + 1} must be a word "
                                        "or a [word, POS] pair of strings")
            w = words[-1]
            if not w or w != w.strip() or any(c.isspace() for c in w):
                raise RequestError(400, f"tokens: sentence {i + 1}, token {k + 1}: a word is a "
                                        f"non-empty string without whitespace, got {w!r}")
        if pos and len(pos) != len(words):
            raise RequestError(400, f"tokens: sentence {i + 1} mixes words and [word, POS] pairs")
        text, starts, ends = _joined(words, [True] * len(words))
        out.append(Sent(words, starts, ends, text, pos=pos or None,
                        space_after=[True] * len(words)))
    return out


def _from_conllu(data: str) -> list[Sent]:
    from structkit.io.conllu import read_conllu

    try:
        sents = list(read_conllu("conllu", io.BytesIO(data.encode("utf-8"))))
    except UserError as e:
        raise RequestError(400, f"conllu: {e.message}" + (f" (line {e.line})" if e.line else "")) \
            from None
    out = []
    for s in sents:
        words = [r[1] for r in s.rows]
        space = ["SpaceAfter=No" not in r[9].split("|") for r in s.rows]
        text, starts, ends = _joined(words, space)
        pos = [r[4] if r[4] != "_" else r[3] for r in s.rows]
        out.append(Sent(words, starts, ends, text, pos=None if all(p == "_" for p in pos) else pos,
                        space_after=space, conllu=s))
    return out


# ---- running the models ------------------------------------------------------------------------
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
                    "margin": None if e.margin == float("inf") else round(e.margin, 4),
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
            s.scores[sv.name] = None if margins is None else [round(float(m), 4) for m in margins]
            if sv.task == "pos" and s.predicted_pos is None:
                s.predicted_pos = list(labels)
            if explain:
                s.explanations[sv.name] = _explain(sv, s, needs_pos)


def _run_parser(sv: Served, sents: list[Sent], warnings: list[str]) -> None:
    from structkit.io.conllu import dep_view

    X: list = []
    no_pos = 0
    for s in sents:
        pos = s.tagger_pos()
        if pos is None:
            no_pos += 1
        if s.conllu is not None:
            d = dep_view(s.conllu, "conllu")
            d.heads = None
            if s.predicted_pos is not None:
                d.upos = list(s.predicted_pos)
                d.xpos = list(s.predicted_pos)
            X.append(d)
        else:
            X.append(list(zip(s.words, pos or ["_"] * len(s.words))))
    if no_pos:
        warnings.append(f"parser {sv.name} read no POS tags in {no_pos} sentence(s): give POS "
                        "or run a pos model before it")
    with sv.lock:
        try:
            out = sv.est.predict(X, labels=True)
        except UserError as e:
            raise RequestError(400, f"model {sv.name}: {e}") from None
    for s, (heads, rels) in zip(sents, out):
        s.heads = [int(h) for h in heads]
        s.deprels = [str(r) for r in rels]


def _spans(sv: Served, labels: list[str]) -> list[tuple[str, int, int]]:
    from structkit.eval.schemes import phrases

    return phrases(labels, sv.meta.get("scheme") or "iob2")


@dataclass
class Options:
    sents: list[Sent]
    models: list[Served]
    scores: bool = True
    explain: bool = False
    fmt: str = "json"


def run(opts: Options) -> tuple[dict | str, list[str]]:
    """Run the models over the sentences: the JSON response (or CoNLL-U text)."""
    warnings: list[str] = []
    n = sum(len(s.words) for s in opts.sents)
    if n > MAX_WORDS:
        raise RequestError(413, f"the request has {n} words; the limit is {MAX_WORDS}")
    for sv in sorted(opts.models, key=lambda m: _ORDER[m.task]):
        if sv.task == "parse":
            _run_parser(sv, opts.sents, warnings)
        else:
            _run_tagger(sv, opts.sents, opts.scores, opts.explain)
    if opts.fmt == "conllu":
        return to_conllu(opts.sents, opts.models), warnings
    return to_json(opts.sents, opts.models, opts.scores, opts.explain, warnings), warnings


def to_json(sents: list[Sent], models: list[Served], scores: bool, explain: bool,
            warnings: list[str]) -> dict:
    out = []
    for s in sents:
        toks = []
        for i, w in enumerate(s.words):
            t: dict = {"id": i + 1, "form": w, "start": s.starts[i], "end": s.ends[i]}
            if s.pos is not None:
                t["input_pos"] = s.pos[i]
            t["labels"] = {name: lab[i] for name, lab in s.labels.items()}
            if scores:
                t["scores"] = {name: (m[i] if m is not None else None) for name, m in s.scores.items()}
            if explain:
                t["explanations"] = {name: (e[i] if e is not None else None)
                                     for name, e in s.explanations.items()}
            if s.heads is not None:
                t["head"] = s.heads[i]
                t["deprel"] = s.deprels[i]
            toks.append(t)
        spans = []
        for sv in models:
            if sv.task in ("chunk", "ner"):
                for typ, a, b in _spans(sv, s.labels[sv.name]):
                    spans.append({"model": sv.name, "task": sv.task, "type": typ, "start": a,
                                  "end": b, "char_start": s.starts[a], "char_end": s.ends[b - 1],
                                  "text": s.text[s.starts[a]:s.ends[b - 1]]})
        sent = {"text": s.text, "tokens": toks, "spans": spans}
        if s.multiword:
            sent["multiword"] = s.multiword
        out.append(sent)
    return {"models": [{"name": m.name, "task": m.task} for m in models], "sentences": out,
            "warnings": warnings}


def to_conllu(sents: list[Sent], models: list[Served]) -> str:
    """CoNLL-U: the input's lines (CoNLL-U in) or fresh ones, with each model's column filled
    where ``structkit tag`` would put it and HEAD/DEPREL from the parser."""
    from structkit.io.conllu import set_key

    buf = []
    for k, s in enumerate(sents):
        if s.conllu is not None:
            lines = list(s.conllu.lines)
            word_at = list(s.conllu.word_at)
            rows = [list(r) for r in s.conllu.rows]
        else:
            lines = [f"# sent_id = {k + 1}", f"# text = {' '.join(s.text.split())}"]
            word_at, rows = [], []
            mwt = {m["first"]: m for m in s.multiword}
            for i, w in enumerate(s.words):
                m = mwt.get(i + 1)
                if m is not None:
                    last_space = s.space_after[m["last"] - 1] if s.space_after else True
                    lines.append(f"{m['first']}-{m['last']}\t{m['form']}\t_\t_\t_\t_\t_\t_\t_\t"
                                 + ("_" if last_space else "SpaceAfter=No"))
                inside = any(mm["first"] <= i + 1 <= mm["last"] for mm in s.multiword)
                space = True if inside else (s.space_after[i] if s.space_after else True)
                word_at.append(len(lines))
                lines.append("")
                pos = s.pos[i] if s.pos else "_"
                rows.append([str(i + 1), w, "_", "_", pos, "_", "_", "_", "_",
                             "_" if space else "SpaceAfter=No"])
        for sv in models:
            if sv.task == "parse" or sv.name not in s.labels:
                continue
            column, key = sv.model.output_column()   # as structkit tag writes it (write_tagged)
            for r, lab in zip(rows, s.labels[sv.name]):
                r[column] = set_key(r[column], key, lab) if key else lab
        if s.heads is not None:
            for r, h, d in zip(rows, s.heads, s.deprels):
                r[6], r[7] = str(h), d
        for at, r in zip(word_at, rows):
            lines[at] = "\t".join(r)
        buf.append("\n".join(lines) + "\n\n")
    return "".join(buf)


# ---- request bodies ------------------------------------------------------------------------
_FIELDS = {"text", "tokens", "conllu", "model", "models", "tagger", "scores", "explain", "format",
           "lang"}


def parse_request(body: Any, endpoint: str, served: dict[str, Served]) -> Options:
    """Check a request's JSON and pick its models; RequestError (400/404) for a mistake."""
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise RequestError(400, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(_FIELDS))})")
    given = [k for k in ("text", "tokens", "conllu") if body.get(k) is not None]
    if len(given) != 1:
        raise RequestError(400, "give exactly one of text, tokens or conllu")
    for k, typ, what in (("text", str, "a string"), ("conllu", str, "a string"),
                         ("model", str, "a model name"), ("tagger", str, "a model name"),
                         ("lang", str, "a language code"), ("scores", bool, "true or false"),
                         ("explain", bool, "true or false"), ("format", str, '"json" or "conllu"')):
        if body.get(k) is not None and not isinstance(body[k], typ):
            raise RequestError(400, f"{k} must be {what}, got {type(body[k]).__name__}")
    fmt = body.get("format") or "json"
    if fmt not in ("json", "conllu"):
        raise RequestError(400, f'format must be "json" or "conllu", got {fmt!r}')

    def named(name: str, task: str | None = None) -> Served:
        sv = served.get(name)
        if sv is None or (task is not None and sv.task != task):
            raise RequestError(404, f"no {task + ' ' if task else ''}model named {name!r} "
                                    f"(loaded: {', '.join(sorted(served)) or 'none'})")
        return sv

    if endpoint == "pipeline":
        if body.get("model") is not None or body.get("tagger") is not None:
            raise RequestError(400, "a pipeline names its models in \"models\"")
        names = body.get("models")
        if names is None:
            models = list(served.values())
        else:
            if not isinstance(names, list) or not names or not all(isinstance(x, str) for x in names):
                raise RequestError(400, "models must be a non-empty list of model names")
            if len(set(names)) != len(names):
                raise RequestError(400, "models names a model twice")
            models = [named(x) for x in names]
            if sum(m.task == "parse" for m in models) > 1:
                raise RequestError(400, "a pipeline has at most one parser")
    else:
        if body.get("models") is not None:
            raise RequestError(400, f"/{endpoint} runs one model: name it in \"model\" "
                                    "(POST /pipeline runs several)")
        task = ENDPOINTS[endpoint]
        if body.get("model") is not None:
            models = [named(body["model"], task)]
        else:
            of_task = sorted(n for n, m in served.items() if m.task == task)
            if not of_task:
                raise RequestError(404, f"no {task} model is loaded")
            if len(of_task) > 1:
                raise RequestError(400, f"several {task} models are loaded ({', '.join(of_task)}): "
                                        "name one in \"model\"")
            models = [served[of_task[0]]]
        if body.get("tagger") is not None:
            if task != "parse":
                raise RequestError(400, "tagger goes with /parse (POS tags for the parser)")
            models.insert(0, named(body["tagger"], "pos"))
    lang = body.get("lang") or "en"
    if "text" in given:
        try:
            sents = _from_text(body["text"], lang)
        except UserError as e:
            raise RequestError(400, str(e)) from None
        if not sents:
            raise RequestError(400, "text has no words")
    elif "tokens" in given:
        sents = _from_tokens(body["tokens"])
        if not sents:
            raise RequestError(400, "tokens has no sentences")
    else:
        sents = _from_conllu(body["conllu"])
    return Options(sents, models, bool(body.get("scores", True)), bool(body.get("explain", False)),
                   fmt)


def warm_up(served: dict[str, Served]) -> None:
    """Run every model once (and the tokenizer), so numba compiles (or loads its cache) before
    the first request."""
    sents_for = lambda: _from_text(WARM_TEXT, "en")  # noqa: E731
    pos = [m for m in served.values() if m.task == "pos"]
    for sv in served.values():
        models = [sv] if sv.task == "pos" or not pos else [pos[0], sv]
        if sv.task != "parse" and sv.meta["needs_pos"] and not pos:
            sents = sents_for()
            for s in sents:
                s.pos = ["NN"] * len(s.words)
        else:
            sents = sents_for()
        run(Options(sents, models, scores=True, explain=True))
        run(Options(sents_for(), models, scores=True, explain=False, fmt="conllu"))


# ---- the web application ---------------------------------------------------------------------
def openapi(served: dict[str, Served]) -> dict:
    """The OpenAPI 3 description of the endpoints (hand-written: the schema is small)."""
    inp = {"type": "object", "additionalProperties": False, "properties": {
        "text": {"type": "string", "description": "Raw text: tokenised and split into sentences."},
        "tokens": {"type": "array", "description": "Sentences of words, or of [word, POS] pairs.",
                   "items": {"type": "array", "items": {"oneOf": [
                       {"type": "string"},
                       {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}]}}},
        "conllu": {"type": "string", "description": "CoNLL-U sentences."},
        "model": {"type": "string", "description": "The model (optional when one of the task is loaded)."},
        "tagger": {"type": "string", "description": "/parse only: a pos model to tag with first."},
        "models": {"type": "array", "items": {"type": "string"},
                   "description": "/pipeline only: models to run (taggers, then the parser)."},
        "scores": {"type": "boolean", "default": True, "description": "Per-token margins (Viterbi models)."},
        "explain": {"type": "boolean", "default": False,
                    "description": "Per-token runner-up, margin and top features."},
        "format": {"type": "string", "enum": ["json", "conllu"], "default": "json"},
        "lang": {"type": "string", "default": "en", "description": "The tokenizer's language."}}}
    err = {"description": "An error", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    result = {"description": "Sentences with tokens (offsets, labels and scores per model, head "
                             "and deprel after a parser) and spans; text/plain CoNLL-U with "
                             "format=conllu",
              "content": {"application/json": {"schema": {"type": "object"}},
                          "text/plain": {"schema": {"type": "string"}}}}
    post = {"requestBody": {"required": True, "content": {"application/json": {"schema": inp}}},
            "responses": {"200": result, "400": err, "404": err, "413": err, "503": err}}
    paths = {f"/{ep}": {"post": {**post, "summary": f"Run a {task} model"}} for ep, task in ENDPOINTS.items()}
    paths["/pipeline"] = {"post": {**post, "summary": "Tokenise, tag, then parse with several models"}}
    paths["/models"] = {"get": {"summary": "Each model's metadata (task, labels, algorithm, training "
                                           "data checksum)", "responses": {"200": {"description": "models"}}}}
    paths["/health"] = {"get": {"summary": "For monitoring", "responses": {"200": {"description": "ok"}}}}
    paths["/"] = {"get": {"summary": "The web page", "responses": {"200": {"description": "HTML"}}}}
    from structkit import __version__

    return {"openapi": "3.0.3", "info": {"title": "structkit serve", "version": __version__},
            "paths": paths}


def create_app(served: dict[str, Served], max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT,
               workers: int | None = None):
    """The Starlette application over the loaded models."""
    from importlib.resources import files

    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    page = files("structkit").joinpath("web/index.html").read_text(encoding="utf-8")
    pool = ThreadPoolExecutor(max_workers=workers or min(8, (os.cpu_count() or 2) + 2),
                              thread_name_prefix="structkit-serve")
    stats = {"started": time.time(), "requests": 0, "errors": 0}
    models_doc = {"models": [sv.meta for sv in served.values()]}
    api_doc = openapi(served)

    def error(status: int, message: str) -> JSONResponse:
        stats["errors"] += 1
        return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)

    async def read_json(request: Request) -> Any:
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise RequestError(400, "bad Content-Length")
            if int(length) > max_bytes:
                raise RequestError(413, f"the request body has {length} bytes; the limit is {max_bytes}")
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise RequestError(413, f"the request body is over the limit of {max_bytes} bytes")
                chunks.append(chunk)
        except ClientDisconnect:
            raise RequestError(400, "the client went away") from None
        try:
            return json.loads(b"".join(chunks).decode("utf-8"))
        except UnicodeDecodeError:
            raise RequestError(400, "the request body is not UTF-8") from None
        except (ValueError, RecursionError) as e:
            raise RequestError(400, f"bad JSON: {str(e)[:200]}") from None

    def endpoint(name: str):
        async def handle(request: Request) -> Response:
            stats["requests"] += 1
            try:
                body = await read_json(request)
                opts = parse_request(body, name, served)
                loop = asyncio.get_running_loop()
                result, _ = await asyncio.wait_for(loop.run_in_executor(pool, run, opts), timeout)
            except RequestError as e:
                return error(e.status, e.message)
            except asyncio.TimeoutError:
                return error(503, f"the request took longer than the limit of {timeout:g} s")
            except UserError as e:
                return error(400, str(e))
            if isinstance(result, str):
                return PlainTextResponse(result)
            return JSONResponse(result)
        return handle

    async def models(request: Request) -> Response:
        return JSONResponse(models_doc)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "models": len(served),
                             "uptime_s": round(time.time() - stats["started"], 1),
                             "requests": stats["requests"], "errors": stats["errors"]})

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def api(request: Request) -> Response:
        return JSONResponse(api_doc)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        messages = {404: f"no such endpoint: {request.url.path}",
                    405: f"{request.method} is not allowed on {request.url.path}"}
        return error(exc.status_code, messages.get(exc.status_code, exc.detail))

    async def internal(request: Request, exc: Exception) -> Response:
        return error(500, f"internal error: {type(exc).__name__}")

    routes = [Route("/", index, methods=["GET"]), Route("/models", models, methods=["GET"]),
              Route("/health", health, methods=["GET"]),
              Route("/openapi.json", api, methods=["GET"])]
    routes += [Route(f"/{ep}", endpoint(ep), methods=["POST"]) for ep in (*ENDPOINTS, "pipeline")]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: internal})
    app.state.pool = pool
    return app


def bind_socket(host: str, port: int):
    """The server's socket, bound (not yet listening); a UserError when it cannot be."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it a kept-alive connection waits for the
    # client's delayed ACK (40 ms) between the response's header and body writes (Nagle).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    except (OverflowError, TypeError) as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e}") from None
    return sock


def serve(specs: list[str], host: str, port: int, max_bytes: int, timeout: float,
          echo=print) -> None:
    """``structkit serve``: bind, load and warm the models, then serve until SIGTERM/SIGINT."""
    import signal
    import socket
    import sys

    import uvicorn

    sock = bind_socket(host, port)
    t0 = time.perf_counter()
    try:
        served = load_models(specs)
        warm_up(served)
        app = create_app(served, max_bytes, timeout)
    except BaseException:
        sock.close()
        raise
    sock.listen(2048)
    real_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    echo(f"structkit serve: {len(served)} model(s) ({', '.join(f'{n}: {m.task}' for n, m in served.items())}) "
         f"loaded and warmed in {time.perf_counter() - t0:.1f} s; listening on "
         f"http://{shown}:{real_port}/")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    # uvicorn stops gracefully on SIGTERM, then raises the signal again for the caller; here a
    # SIGTERM is the ordinary way to stop a server, so that second raise must not kill us.
    old = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    # A request's work drops the GIL for each numba kernel and must take it back after; with the
    # default 5 ms switch interval, under load every retake waits for another thread's 5 ms
    # (16 clients on /tag: 340 requests/s; at 0.5 ms: 640, one client's latency unchanged).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        server.run(sockets=[sock])
    finally:
        sys.setswitchinterval(interval)
        signal.signal(signal.SIGTERM, old)
        app.state.pool.shutdown(wait=False, cancel_futures=True)
        sock.close()
    echo("structkit serve: stopped")
