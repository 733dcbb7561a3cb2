"""`structkit serve`: models loaded once behind a small JSON API, and a web page that draws
the result (``structkit/web/index.html``).

The server is Starlette on uvicorn (the ``serve`` extra). Starlette because it is a thin,
well-kept ASGI toolkit with no opinions about models or validation (we check the few JSON fields
ourselves, to give structkit's one-line messages), and uvicorn because it is the reference ASGI
server: it handles keep-alive, SIGTERM (a graceful stop) and needs nothing compiled. Inference is
plain synchronous Python and numba; it runs in a thread pool so that the event loop keeps
accepting and timing requests, with one lock per model (the decoders' work arrays are not meant
to be shared by two threads at once).

One request cannot stall the others: its work (JSON decoding, tokenising, each model, writing the
answer) runs in chunks of sentences, and between chunks it checks its deadline and the server's
stop flag, so a request past its time, or a server told to stop, stops within one chunk instead
of running on unseen; a model's lock is a first-come first-served lock taken per chunk, so small
requests take their turn between a big request's chunks; and big bodies have their own lane (one
thread), so several at once cannot occupy every worker. Slow clients are bounded at the
connection: a request's headers and body must arrive within ``--read-timeout`` and at most
``--max-connections`` connections are open (a new one closes the longest-idle connection that
is between requests). A Host header naming someone else's domain, or a cross-origin Origin on
a POST, is refused (DNS rebinding).

Requests never name files: the models are the ones given on the command line, by name.
Every error is ``{"error": "one line"}`` with its status code; never a traceback.
"""
from __future__ import annotations

import asyncio
import io
import json
import math
import os
import re
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from structkit.errors import UserError

MAX_BYTES = 1 << 20        # request bodies above this are refused (413)
TIMEOUT = 10.0             # seconds per request, queueing included (503 after)
MAX_SENTENCE_WORDS = 1000  # words per sentence: the beam parser's time grows with the square of
#                            a sentence's length (3,200 words: 2.6 s; 100,000: some 40 minutes
#                            by that square, and over 5 minutes when tried),
#                            and a sentence is the smallest unit of work that can be stopped
MAX_WORDS = 100_000        # words per request (413 above)
PIECE_CHARS = 20_000       # characters of text the tokenizer takes at a time
CHUNK_WORDS = 500          # words per unit of work between deadline checks and lock turns
BIG_BYTES = 16 << 10       # bodies above this (some 2,000 words) run in the big-request lane (one thread)
READ_TIMEOUT = 15.0        # seconds for a request's headers and body to arrive (408 after)
MAX_CONNECTIONS = 1000     # open connections (bounded further by the file-descriptor limit)
TOP_FEATURES = 5           # features shown per side in an explanation
WARM_TEXT = "The cat sat on the mat in Paris, didn't it? Mr. Smith said so."
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def endpoints() -> dict[str, str]:
    """Each served task's endpoint: {"tag": "pos", ...} (from the task registry)."""
    from structkit.tasks import tasks

    return {t.endpoint: t.name for t in tasks() if t.endpoint}


class RequestError(Exception):
    """A request's mistake: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Cancelled(Exception):
    """A request's work stopped at a check: its deadline passed or the server is stopping."""


class Job:
    """One request's deadline and cancel flag, checked between units of work."""

    def __init__(self, timeout: float | None = None, stopping: threading.Event | None = None):
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.cancelled = threading.Event()
        self.stopping = stopping

    def cancel(self) -> None:
        self.cancelled.set()

    def check(self) -> None:
        if self.cancelled.is_set() or (self.stopping is not None and self.stopping.is_set()) \
                or (self.deadline is not None and time.monotonic() > self.deadline):
            raise Cancelled()


class FairLock:
    """A lock handed to its waiters in arrival order (threading.Lock lets the thread that
    releases it take it straight back, so a big request releasing between chunks could keep
    it for its whole run)."""

    def __init__(self):
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque = deque()

    def acquire(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        turn.acquire()  # released by release(), which hands the lock over held

    def release(self) -> None:
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._held = False

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _chunks(sents: list, words: int = CHUNK_WORDS):
    """Consecutive runs of sentences of about ``words`` words (a longer sentence alone)."""
    at, n = 0, 0
    for k, s in enumerate(sents):
        n += len(s.words)
        if n >= words:
            yield sents[at:k + 1]
            at, n = k + 1, 0
    if at < len(sents):
        yield sents[at:]


def _margin(m: float) -> float | None:
    """A margin for JSON: None where it is infinite (a model with one label has no runner-up)."""
    m = float(m)
    return round(m, 4) if math.isfinite(m) else None


def release_memory() -> None:
    """Give freed heap pages back to the system (glibc's malloc_trim; a no-op elsewhere)."""
    global _libc
    if _libc is None:
        try:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc: Any = None


# ---- models ------------------------------------------------------------------------------------
@dataclass
class Served:
    """One loaded model: its name in the API, the Python API estimator, and its metadata."""
    name: str
    path: str
    task: str
    est: Any                      # structkit.api.Tagger or structkit.api.Parser
    meta: dict
    lock: FairLock = field(default_factory=FairLock)

    @property
    def model(self) -> Any:
        return self.est._fitted()

    @property
    def kind(self) -> Any:
        """The model's ``structkit.tasks.Task``."""
        from structkit.tasks import get_task

        return get_task(self.task)


def _split_spec(spec: str, flag: str = "--model") -> tuple[str, str]:
    """``NAME=PATH`` or ``PATH`` (named by the file's stem)."""
    name, eq, path = spec.partition("=")
    if not eq or os.path.exists(spec):
        path = spec
        name = os.path.basename(spec)
        for ext in (".npz", ".model", ".skm"):
            if name.endswith(ext) and len(name) > len(ext):
                name = name[:-len(ext)]
                break
    if not name or not set(name) <= _NAME_CHARS:
        raise UserError(f"{flag} {spec}: a {flag[2:]} name is letters, digits, '_', '.' and '-' "
                        "(give NAME=PATH)")
    return name, path


def load_models(specs: list[str]) -> dict[str, Served]:
    """Load each ``--model`` once (UserError for a missing, damaged or unsuitable file)."""
    import importlib

    from structkit.config import resolve_data_path
    from structkit.model import model_task
    from structkit.tasks import tasks

    if not specs:
        raise UserError("give at least one --model")
    served: dict[str, Served] = {}
    for spec in specs:
        name, path = _split_spec(spec)
        if name in served:
            raise UserError(f"two models are named {name!r}: name them with --model NAME=PATH")
        path = resolve_data_path(path, must_exist=True)
        # a task with an endpoint, or a whole pipeline (an estimator, no endpoint: POST
        # /pipeline runs it)
        takes = [t for t in tasks() if t.endpoint or t.estimator]
        of = model_task(path)
        task = next((t for t in takes if t.name == of), None)
        if task is None and any(t.name == of and t.output == "tokens" for t in tasks()):
            raise UserError("a tokenizer model: give it with --tokenizer (it tokenises the text of "
                            "requests), not --model", path)
        if task is None:  # not a model, or one of a task not served: the loader says which
            try:
                loaded = takes[0].load(path, tasks=tuple(t.name for t in takes))
            except UserError as e:
                if "trained for task" in e.message:
                    names = [t.name for t in takes]
                    raise UserError(f"{e.message} (serve takes {', '.join(names[:-1])} and {names[-1]} "
                                    "models)", e.path) from None
                raise
            task = next(t for t in takes if t.name == loaded.config.task)  # (read after all)
        module, _, cls = task.estimator.partition(":")
        est = getattr(importlib.import_module(module), cls).load(path)
        served[name] = Served(name, path, task.name, est, {})
        served[name].meta = _metadata(served[name])
    return served


@dataclass
class ServedTokenizer:
    """One ``--tokenizer`` model: its name (what a request's "lang" names), the loaded
    ``structkit.text.Tokenizer`` and its metadata."""
    name: str
    path: str
    tokenizer: Any
    meta: dict


class Tokenizers:
    """What tokenises a request's text: the ``--tokenizer`` models by name (the first is the
    default, in place of the English rules) and the rules of the languages that have them
    (``structkit.text.TOKENIZERS``); a model named as a language stands for its rules."""

    def __init__(self, models: dict[str, ServedTokenizer] | None = None):
        self.models = dict(models or {})

    @property
    def default(self) -> str:
        return next(iter(self.models), "en")

    def resolve(self, lang: str | None):
        """The tokenizer of a request's "lang" (None: the default): a model's Tokenizer, or a
        language code with rules; RequestError 400 for a name with neither."""
        from structkit.text.tokenize import TOKENIZERS

        name = self.default if lang is None else lang
        if name in self.models:
            return self.models[name].tokenizer
        if name in TOKENIZERS:
            return name
        rules = ", ".join(sorted(TOKENIZERS))
        models = ", ".join(self.models) or "none"
        shown = name if len(name) <= 40 and name.isprintable() and " " not in name else "LANG"
        raise RequestError(400, f"no tokenizer for language {name[:40]!r} on this server (rules: {rules}; "
                                f"tokenizer models: {models}): start it with --tokenizer "
                                f"{shown}=tok.model, a model of `structkit train --task tokenize`")

    def listing(self) -> list[dict]:
        """What ``GET /models`` says of them: the models, then the rules not replaced by one."""
        from structkit.text.tokenize import TOKENIZERS

        default = self.default
        out = [dict(t.meta, default=t.name == default) for t in self.models.values()]
        out += [{"name": lang, "kind": "rules", "default": lang == default}
                for lang in sorted(TOKENIZERS) if lang not in self.models]
        return out


def load_tokenizers(specs: list[str]) -> Tokenizers:
    """Load each ``--tokenizer`` once (UserError for a missing, damaged or other model)."""
    from structkit.config import resolve_data_path
    from structkit.tasks import tasks

    task = next(t for t in tasks() if t.output == "tokens")
    models: dict[str, ServedTokenizer] = {}
    for spec in specs:
        name, path = _split_spec(spec, "--tokenizer")
        if name in models:
            raise UserError(f"two tokenizers are named {name!r}: name them with --tokenizer NAME=PATH")
        path = resolve_data_path(path, must_exist=True)
        model = task.load(path, "serve --tokenizer")
        info = getattr(model, "info", {}) or {}
        meta = {"name": name, "kind": "model", "task": model.config.task,
                "algorithm": model.config.algo, "train_file": info.get("train_file"),
                "train_sha256": info.get("train_sha256")}
        models[name] = ServedTokenizer(name, path, model.tokenizer, meta)
    return Tokenizers(models)


def pipeline_tokenizers(served: dict[str, Served], tokenizers: Tokenizers) -> None:
    """Each pipeline model's tokenizer, named as the model, among the tokenizers (after the
    --tokenizer ones: the first of all is the default)."""
    for sv in served.values():
        tok = sv.est.model.tokenizer if sv.kind.output == "analysis" else None
        if tok is not None and sv.name not in tokenizers.models:
            meta = {"name": sv.name, "kind": "model", "task": sv.task, "algorithm": tok.config.algo,
                    "train_file": tok.info.get("train_file"), "train_sha256": tok.info.get("train_sha256")}
            tokenizers.models[sv.name] = ServedTokenizer(sv.name, sv.path, tok.tokenizer, meta)


def _metadata(sv: Served) -> dict:
    model = sv.model
    info = getattr(model, "info", {}) or {}
    meta = {"name": sv.name, "task": sv.task, "algorithm": model.config.algo,
            "train_file": info.get("train_file"), "train_sha256": info.get("train_sha256")}
    meta.update(sv.kind.describe(model))
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
    analyses: list[dict] | None = None       # from the first morph model (lemma, upos, xpos, feats per word)
    labels: dict = field(default_factory=dict)        # model -> labels
    scores: dict = field(default_factory=dict)        # model -> margins
    explanations: dict = field(default_factory=dict)  # model -> per-token dicts (or None)
    heads: list[int] | None = None
    deprels: list[str] | None = None
    offset: int = 0  # where ``text`` begins in the request's text (starts/ends count from there)
    analysis: list | None = None   # a pipeline model's (lemma, upos, xpos, feats) per word

    def tagger_pos(self) -> list[str] | None:
        return self.predicted_pos if self.predicted_pos is not None else self.pos


def _from_text(text: str, lang: str, job: Job | None = None,
               warnings: list[str] | None = None) -> list[Sent]:
    """The tokenizer's sentences; one over MAX_SENTENCE_WORDS is cut into pieces of at most
    that many words (at token boundaries), said in ``warnings``."""
    from structkit.text.tokenize import get_tokenizer, iter_sentences

    get_tokenizer(lang)   # an unknown language: its UserError before any work
    out: list[Sent] = []
    cut = total = 0
    prev_cut = False
    for s, base in ((s, base) for base, piece in _pieces(text) for s in iter_sentences(piece, lang)):
        if job is not None:
            job.check()
        pieces: list[list] = [[]]
        n = 0
        for tok in s.tokens:
            if n + len(tok.words) > MAX_SENTENCE_WORDS and pieces[-1]:
                pieces.append([])
                n = 0
            pieces[-1].append(tok)
            n += len(tok.words)
        cut += (len(pieces) > 1 or s.cut) and not prev_cut  # a run of cut pieces is one sentence
        prev_cut = s.cut
        for toks in pieces:
            words, starts, ends, space, mwt = [], [], [], [], []
            for tok in toks:
                if len(tok.words) > 1:
                    mwt.append({"first": len(words) + 1, "last": len(words) + len(tok.words),
                                "form": tok.form, "start": base + tok.start, "end": base + tok.end})
                for k, w in enumerate(tok.words):
                    words.append(w)
                    starts.append(base + tok.start)
                    ends.append(base + tok.end)
                    space.append(tok.space_after if k == len(tok.words) - 1 else False)
            own = s.text if len(pieces) == 1 else \
                s.text[toks[0].start - s.start:toks[-1].end - s.start]
            at = base + (s.start if len(pieces) == 1 else toks[0].start)
            out.append(Sent(words, starts, ends, own, multiword=mwt, space_after=space, offset=at))
            total += len(words)
        if total > MAX_WORDS:
            raise RequestError(413, f"the text has over {MAX_WORDS} words; the limit is {MAX_WORDS}")
    if cut and warnings is not None:
        warnings.append(f"{cut} sentence(s) of the text had over {MAX_SENTENCE_WORDS} words: each "
                        f"was cut into pieces of at most {MAX_SENTENCE_WORDS} words")
    return out


def _pieces(text: str, size: int = PIECE_CHARS):
    """``text`` in pieces of at most about ``size`` characters, each with its offset, for the
    tokenizer to take one at a time (a long paragraph is otherwise one step that cannot be
    stopped: a 1 MB one takes seconds). A piece ends at a blank line, else after a sentence's
    final punctuation and a space, else at a space, in its second half; so a sentence is cut
    only where a stretch of ``size / 2`` characters has neither."""
    at, n = 0, len(text)
    while n - at > size:
        lo, hi = at + size // 2, at + size
        end = text.rfind("\n\n", lo, hi - 2)
        if end < 0:
            end = max(text.rfind(p, lo, hi - 2) for p in (". ", "? ", "! ", ".\n", "?\n", "!\n"))
            end = end + 1 if end >= 0 else -1
        if end < 0:
            end = max(text.rfind(" ", lo, hi - 1), text.rfind("\n", lo, hi - 1))
        end = hi if end < 0 else end + 1   # the piece keeps the space after its last word
        yield at, text[at:end]
        at = end
    yield at, text[at:]


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
        if len(words) > MAX_SENTENCE_WORDS:
            raise RequestError(413, f"tokens: sentence {i + 1} has {len(words)} words; the limit "
                                    f"is {MAX_SENTENCE_WORDS} per sentence")
        text, starts, ends = _joined(words, [True] * len(words))
        out.append(Sent(words, starts, ends, text, pos=pos or None,
                        space_after=[True] * len(words)))
    return out


def _from_conllu(data: str, job: Job | None = None) -> list[Sent]:
    from structkit.io.conllu import read_conllu

    sents = []
    try:
        for s in read_conllu("conllu", io.BytesIO(data.encode("utf-8"))):
            if job is not None and len(sents) % 64 == 0:
                job.check()
            sents.append(s)
    except UserError as e:
        raise RequestError(400, f"conllu: {e.message}" + (f" (line {e.line})" if e.line else "")) \
            from None
    out = []
    for k, s in enumerate(sents):
        if len(s.rows) > MAX_SENTENCE_WORDS:
            raise RequestError(413, f"conllu: sentence {k + 1} has {len(s.rows)} words; the limit "
                                    f"is {MAX_SENTENCE_WORDS} per sentence")
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


CONLLU_PART = {"lemma": 2, "upos": 3, "xpos": 4, "feats": 5}   # an analysis's parts: their CoNLL-U columns


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


def _spans(sv: Served, labels: list[str]) -> list[tuple[str, int, int]]:
    from structkit.spans import phrases

    return phrases(labels, sv.meta.get("scheme") or "iob2")


@dataclass
class Options:
    sents: list[Sent]
    models: list[Served]
    scores: bool = True
    explain: bool = False
    fmt: str = "json"
    tokenizer: Any = None   # of the request's text: a Tokenizer, or a language code with rules
    render: bool = False    # add each sentence's SVG (structkit.rendering) and the span legend


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


def _dumps(obj: Any) -> bytes:
    # as Starlette's JSONResponse writes it
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


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


def to_json(sents: list[Sent], models: list[Served], scores: bool, explain: bool,
            warnings: list[str], render: bool = False) -> dict:
    colours = span_colours(models) if render else None
    out: dict = {"models": [{"name": m.name, "task": m.task} for m in models]}
    if colours is not None:
        out["legend"] = _legend(colours)
    out["sentences"] = [_sentence_json(s, models, scores, explain, colours, k)
                        for k, s in enumerate(sents)]
    out["warnings"] = warnings
    return out


# ---- the picture: structkit.rendering, the one renderer of the page, notebooks and render() ----
def span_colours(models: list[Served]) -> dict[tuple[str, str], str]:
    """The colour of each (span model, type) of a request: the palette over the types of its
    span models (their labels without the B-/I- prefix), in the request's order."""
    from structkit.rendering import span_colours as colours

    def types(sv: Served) -> list[str]:
        labels = sv.meta.get("labels") or []
        return [re.sub(r"^[BIESLU]-", "", str(x)) for x in labels if str(x) != "O"]

    return colours((sv.name, types(sv)) for sv in models if sv.kind.spans)


def _legend(colours: dict[tuple[str, str], str]) -> list[dict]:
    return [{"model": m, "type": t, "colour": c} for (m, t), c in colours.items()]


def _tip(s: Sent, i: int, models: list[Served]) -> str:
    """The plain-text tip of word ``i`` (the SVG's <title>): form, id, offsets, each model's
    label (with margin, runner-up and top features when explained), head and label."""
    lines = [f"{s.words[i]}  #{i + 1} [{s.starts[i]}-{s.ends[i]})"]
    analysis = getattr(s, "analysis", None)   # a pipeline model's (lemma, upos, xpos, feats)
    if analysis is not None:
        lines += [f"{k}: {v}" for k, v in zip(("lemma", "upos", "xpos", "feats"), analysis[i]) if v != "_"]
    for sv in models:
        if sv.kind.output == "tree":
            if s.heads is not None:
                lines.append(f"{sv.name}: head {s.heads[i]}, {s.deprels[i]}")
            continue
        labels = s.labels.get(sv.name)
        if labels is None:
            continue
        if sv.kind.output == "analyses":   # a morph model: each part, with its margin
            ms = (s.scores.get(sv.name) or [None] * (i + 1))[i] or {}
            lines.append(f"{sv.name}: " + ", ".join(
                f"{k} {v}" + (f" ({ms[k]:.2f})" if ms.get(k) is not None else "") for k, v in labels[i].items()))
            continue
        line = f"{sv.name}: {labels[i]}"
        ex = (s.explanations.get(sv.name) or [None] * (i + 1))[i]
        margins = s.scores.get(sv.name)
        if ex and ex.get("runner_up") is not None:
            m = ex.get("margin")
            line += f", runner-up {ex['runner_up']}, margin {'-' if m is None else f'{m:.3f}'}"
            if ex.get("for"):
                line += f"\n  for {labels[i]}: " + ", ".join(f"{f} {w:+.2f}" for f, w in ex["for"])
            if ex.get("against"):
                line += f"\n  for {ex['runner_up']}: " + ", ".join(f"{f} {w:.2f}" for f, w in ex["against"])
        elif margins is not None and margins[i] is not None:
            line += f", margin {margins[i]:.3f}"
        lines.append(line)
    return "\n".join(lines)


def sentence_view(s: Sent, models: list[Served], colours: dict[tuple[str, str], str]):
    """What the picture of a sentence shows: its words, the first POS model's tags under them
    (else the input's POS), the parser's arcs, one row of spans per span model, then a row of
    its multiword tokens."""
    from structkit.rendering import MULTIWORD_COLOUR, View, ViewSpan, ViewWord

    tags = s.tagger_pos()   # the first POS model's of the request, else the input's
    if s.predicted_pos is None and s.analyses and "upos" in s.analyses[0]:
        tags = [a["upos"] for a in s.analyses]   # else a morph model's UPOS
    words = [ViewWord(w, None if tags is None else tags[i],
                      None if s.heads is None else s.heads[i],
                      None if s.deprels is None else s.deprels[i], _tip(s, i, models))
             for i, w in enumerate(s.words)]
    spans, row = [], 0
    for sv in models:
        if not sv.kind.spans:
            continue
        for typ, a, b in _spans(sv, s.labels[sv.name]):
            text = s.text[s.starts[a] - s.offset:s.ends[b - 1] - s.offset]
            spans.append(ViewSpan(row, a, b, typ, sv.name, colours.get((sv.name, typ), "#5b6673"),
                                  f'{sv.name}: {typ} "{text}"'))
        row += 1
    if s.multiword:   # a row of the multiword tokens, as a Doc's picture has
        for m in s.multiword:
            spans.append(ViewSpan(row, m["first"] - 1, m["last"], m["form"], "token", MULTIWORD_COLOUR,
                                  f"token {m['form']!r}: " + " ".join(s.words[m["first"] - 1:m["last"]])))
        row += 1
    return View(s.text, words, spans, row)


def _sentence_json(s: Sent, models: list[Served], scores: bool, explain: bool,
                   colours: dict | None = None, k: int = 0) -> dict:
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
        if s.analysis is not None:
            t.update(zip(("lemma", "upos", "xpos", "feats"), s.analysis[i]))
        if s.heads is not None:
            t["head"] = s.heads[i]
            t["deprel"] = s.deprels[i]
        toks.append(t)
    spans = []
    for sv in models:
        if sv.kind.spans:
            for typ, a, b in _spans(sv, s.labels[sv.name]):
                spans.append({"model": sv.name, "task": sv.task, "type": typ, "start": a,
                              "end": b, "char_start": s.starts[a], "char_end": s.ends[b - 1],
                              "text": s.text[s.starts[a] - s.offset:s.ends[b - 1] - s.offset]})
    sent = {"text": s.text, "tokens": toks, "spans": spans}
    if s.multiword:
        sent["multiword"] = s.multiword
    if colours is not None:
        from structkit.rendering import sentence_svg

        sent["svg"] = sentence_svg(sentence_view(s, models, colours), k)
    return sent


def to_conllu(sents: list[Sent], models: list[Served], first: int = 1) -> str:
    """CoNLL-U: the input's lines (CoNLL-U in) or fresh ones, with each model's column filled
    where ``structkit tag`` would put it and HEAD/DEPREL from the parser."""
    from structkit.io.conllu import put_label

    buf = []
    for k, s in enumerate(sents):
        if s.conllu is not None:
            lines = list(s.conllu.lines)
            word_at = list(s.conllu.word_at)
            rows = [list(r) for r in s.conllu.rows]
        else:
            lines = [f"# sent_id = {first + k}", f"# text = {' '.join(s.text.split())}"]
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
            if sv.kind.output == "analyses" and sv.name in s.labels:
                for r, a in zip(rows, s.labels[sv.name]):
                    for part, v in a.items():
                        r[CONLLU_PART[part]] = v
                continue
            if sv.kind.output != "labels" or sv.name not in s.labels:
                continue
            column, key = sv.model.output_column()   # as structkit tag writes it (write_tagged)
            for r, lab in zip(rows, s.labels[sv.name]):
                r[column] = put_label(r[column], key, lab) if key else lab
        if s.analysis is not None:
            for r, a in zip(rows, s.analysis):
                r[2:6] = a
        if s.heads is not None:
            for r, h, d in zip(rows, s.heads, s.deprels):
                r[6], r[7] = str(h), d
        for at, r in zip(word_at, rows):
            lines[at] = "\t".join(r)
        buf.append("\n".join(lines) + "\n\n")
    return "".join(buf)


# ---- request bodies ------------------------------------------------------------------------
_FIELDS = {"text", "tokens", "conllu", "model", "models", "tagger", "scores", "explain", "format",
           "lang", "render"}


def _check_strings(body: dict) -> None:
    """Every string in the request is Unicode text: JSON can spell a lone surrogate
    (``"\\ud800"``), which is no character and cannot be written back as UTF-8 (a 400 naming
    the field)."""
    for key, value in body.items():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise RequestError(400, f"a field name is not Unicode text: {key!r}") from None
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError as e:
                    raise RequestError(400, f"{key} is not Unicode text: a lone surrogate "
                                            f"(U+{ord(v[e.start]):04X}) at character "
                                            f"{e.start + 1} of a string") from None
            elif isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, dict):
                stack.extend(v.keys())
                stack.extend(v.values())


def parse_request(body: Any, endpoint: str, served: dict[str, Served],
                  job: Job | None = None, tokenizers: Tokenizers | None = None) -> Options:
    """Check a request's JSON, pick its models and read its sentences; RequestError (400/404)
    for a mistake."""
    opts = check_request(body, endpoint, served, tokenizers)
    opts.sents = read_sentences(body, job, None, opts.tokenizer)
    return opts


def decode_body(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestError(400, "the request body is not UTF-8") from None
    except (ValueError, RecursionError) as e:
        raise RequestError(400, f"bad JSON: {str(e)[:200]}") from None


def check_request(body: Any, endpoint: str, served: dict[str, Served],
                  tokenizers: Tokenizers | None = None) -> Options:
    """Check a request's JSON, pick its models and, for text, its tokenizer (``tokenizers``;
    the rules of the languages that have them without) -- no sentences yet: ``read_sentences``;
    RequestError (400/404) for a mistake. Cheap: the server runs it before the request's
    work is queued."""
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    _check_strings(body)
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise RequestError(400, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(_FIELDS))})")
    given = [k for k in ("text", "tokens", "conllu") if body.get(k) is not None]
    if len(given) != 1:
        raise RequestError(400, "give exactly one of text, tokens or conllu")
    for k, typ, what in (("text", str, "a string"), ("conllu", str, "a string"),
                         ("model", str, "a model name"), ("tagger", str, "a model name"),
                         ("lang", str, "a language code"), ("scores", bool, "true or false"),
                         ("explain", bool, "true or false"), ("render", bool, "true or false"),
                         ("format", str, '"json" or "conllu"')):
        if body.get(k) is not None and not isinstance(body[k], typ):
            raise RequestError(400, f"{k} must be {what}, got {type(body[k]).__name__}")
    fmt = body.get("format") or "json"
    if fmt not in ("json", "conllu"):
        raise RequestError(400, f'format must be "json" or "conllu", got {fmt!r}')

    from structkit.tasks import get_task, tasks

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
            if sum(m.kind.output == "tree" for m in models) > 1:
                raise RequestError(400, "a pipeline has at most one parser")
    else:
        if body.get("models") is not None:
            raise RequestError(400, f"/{endpoint} runs one model: name it in \"model\" "
                                    "(POST /pipeline runs several)")
        task = endpoints()[endpoint]
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
            if get_task(task).output != "tree":
                raise RequestError(400, "tagger goes with /parse (POS tags for the parser)")
            models.insert(0, named(body["tagger"], next(t.name for t in tasks() if t.provides_pos)))
    _check_chain(models, body.get("conllu") is not None)
    tokenizer = None
    if body.get("text") is not None:
        tokenizer = (tokenizers or Tokenizers()).resolve(body.get("lang") or None)
    return Options([], models, bool(body.get("scores", True)), bool(body.get("explain", False)),
                   fmt, tokenizer, bool(body.get("render", False)))


def _check_chain(models: list[Served], conllu: bool) -> None:
    """A 400 (one line) when the POS model that feeds the parser gives tags it does not know,
    or when the parser reads FEATS and LEMMA that neither that model nor the input has
    (``structkit.tagsets``)."""
    parser = next((m for m in models if m.kind.output == "tree"), None)
    pos = next((m for m in sorted(models, key=lambda m: m.kind.serve_order) if m.kind.provides_pos), None)
    if parser is None or pos is None:
        return
    from structkit.tagsets import check_models

    try:
        check_models(pos.model, parser.model, f"model {pos.name}", f"parser {parser.name}", conllu)
    except UserError as e:
        raise RequestError(400, e.message) from None


def read_sentences(body: dict, job: Job | None = None,
                   warnings: list[str] | None = None, tokenizer: Any = None) -> list[Sent]:
    """The sentences of a checked request (``check_request``): text tokenised by ``tokenizer``
    (its ``Options.tokenizer``; None: the rules of the request's "lang"), token lists or
    CoNLL-U (RequestError 400 for a mistake in them)."""
    lang = tokenizer if tokenizer is not None else body.get("lang") or "en"
    if body.get("text") is not None:
        try:
            sents = _from_text(body["text"], lang, job, warnings)
        except UserError as e:
            raise RequestError(400, str(e)) from None
        if not sents:
            raise RequestError(400, "text has no words")
    elif body.get("tokens") is not None:
        sents = _from_tokens(body["tokens"])
        if not sents:
            raise RequestError(400, "tokens has no sentences")
    else:
        sents = _from_conllu(body["conllu"], job)
    return sents


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
        "render": {"type": "boolean", "default": False,
                   "description": "Add each sentence's picture (\"svg\": words, tags, spans and "
                                  "arcs, as the page and structkit.render draw them) and a "
                                  "\"legend\" of the span colours."},
        "lang": {"type": "string", "description": "The text's tokenizer: a --tokenizer model's name or a "
                                                  "language with rules (en); default: the first "
                                                  "--tokenizer, else en (GET /models lists them)."}}}
    err = {"description": "An error", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    result = {"description": "Sentences with tokens (offsets, labels and scores per model, head "
                             "and deprel after a parser) and spans; text/plain CoNLL-U with "
                             "format=conllu",
              "content": {"application/json": {"schema": {"type": "object"}},
                          "text/plain": {"schema": {"type": "string"}}}}
    post = {"requestBody": {"required": True, "content": {"application/json": {"schema": inp}}},
            "responses": {"200": result, "400": err, "403": err, "404": err, "408": err, "413": err,
                          "503": err}}
    paths = {f"/{ep}": {"post": {**post, "summary": f"Run a {task} model"}} for ep, task in endpoints().items()}
    paths["/pipeline"] = {"post": {**post, "summary": "Tokenise, tag, then parse with several models"}}
    paths["/models"] = {"get": {"summary": "Each model's metadata (task, labels, algorithm, training "
                                           "data checksum)", "responses": {"200": {"description": "models"}}}}
    paths["/health"] = {"get": {"summary": "For monitoring", "responses": {"200": {"description": "ok"}}}}
    paths["/"] = {"get": {"summary": "The web page", "responses": {"200": {"description": "HTML"}}}}
    from structkit import __version__

    return {"openapi": "3.0.3", "info": {"title": "structkit serve", "version": __version__},
            "paths": paths}


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def _host_name(value: str) -> str | None:
    """The host of a Host header (``name``, ``name:port``, ``[v6]:port``), lower-case and
    without brackets or a trailing dot; None when it is not one."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
    else:
        name, colon, port = value.partition(":")
        if colon and not port.isdigit():
            return None
    name = name.rstrip(".")
    return name or None


def _is_ip(name: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostGuard:
    """ASGI middleware against DNS rebinding: the Host header must name this server (localhost,
    an IP address, the ``--host`` value or an ``--allow-host`` name; ``*`` allows any), and a
    POST that carries an Origin must come from the server's own origin (or an ``--allow-host``
    name). A web page on another domain can make a browser send requests to 127.0.0.1 (by
    re-pointing its own name there); the browser then sends that domain in Host, or its own
    origin in Origin. An IP address in Host cannot be such a rebinding, so any is accepted."""

    def __init__(self, app, hosts: tuple[str, ...] = (), allow: tuple[str, ...] = (), on_refuse=None):
        self.app = app
        self.allow = {h.lower().strip("[]").rstrip(".") for h in allow}
        self.hosts = {h.lower().strip("[]").rstrip(".") for h in (*LOCAL_NAMES, *hosts)} | self.allow
        self.on_refuse = on_refuse

    def refusal(self, scope) -> str | None:
        host = origin = None
        for k, v in scope.get("headers", ()):
            if k == b"host" and host is None:
                host = v.decode("latin-1")
            elif k == b"origin" and origin is None:
                origin = v.decode("latin-1")
        if host is not None and "*" not in self.hosts:
            name = _host_name(host)
            if name is None or not (name in self.hosts or _is_ip(name)):
                return (f"Host {host!r} is not this server's name: start it with --allow-host "
                        "NAME to accept it")
        if origin is not None and scope.get("method") not in ("GET", "HEAD", "OPTIONS"):
            from urllib.parse import urlsplit

            try:
                o = urlsplit(origin)
                o_host = o.hostname
            except ValueError:
                o, o_host = None, None
            same = o is not None and o.scheme in ("http", "https") and host is not None \
                and o.netloc.lower() == host.strip().lower()
            if not same and not (o_host and ("*" in self.allow or o_host.rstrip(".") in self.allow)):
                return (f"a cross-origin request (Origin {origin!r}) is refused: start the server "
                        "with --allow-host NAME to accept one from NAME")
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            why = self.refusal(scope)
            if why is not None:
                await self.on_refuse(403, why)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(served: dict[str, Served], max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT,
               workers: int | None = None, hosts: tuple[str, ...] = (),
               allow_hosts: tuple[str, ...] = (), tokenizers: Tokenizers | None = None):
    """The Starlette application over the loaded models. ``app.state.stopping`` (an Event) stops
    the requests in flight at their next check; ``app.state.pool`` and ``app.state.big`` are the
    worker pools (small requests; bodies over BIG_BYTES, one at a time)."""
    from importlib.resources import files

    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    page = files("structkit").joinpath("web/index.html").read_text(encoding="utf-8")
    pool = ThreadPoolExecutor(max_workers=workers or min(8, (os.cpu_count() or 2) + 2),
                              thread_name_prefix="structkit-serve")
    big = ThreadPoolExecutor(max_workers=1, thread_name_prefix="structkit-serve-big")
    stopping = threading.Event()
    stats = {"started": time.time(), "requests": 0, "errors": 0, "working": 0, "stopped": 0}
    tokenizers = tokenizers or Tokenizers()
    models_doc = {"models": [sv.meta for sv in served.values()], "tokenizers": tokenizers.listing()}
    api_doc = openapi(served)

    def error(status: int, message: str) -> JSONResponse:
        stats["errors"] += 1
        # one line, and writable as UTF-8 whatever a message quoted
        line = " ".join(str(message).split()).encode("utf-8", "backslashreplace").decode("utf-8")
        return JSONResponse({"error": line}, status_code=status)

    async def read_body(request: Request) -> bytes:
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
        return b"".join(chunks)

    counting = threading.Lock()

    def count(key: str, by: int) -> None:
        with counting:
            stats[key] += by

    def work(body: bytes | dict, name: str, job: Job, opts: Options | None = None,
             trim: bool = False) -> tuple[bytes, str]:
        count("working", 1)
        try:
            return answer(body, name, served, job, opts, tokenizers)
        except Cancelled:
            count("stopped", 1)
            raise
        finally:
            count("working", -1)
            if trim:
                release_memory()   # the request's sentences and tables are freed by now

    def late() -> Response:
        if stopping.is_set():
            return error(503, "the server is stopping")
        return error(503, f"the request took longer than the limit of {timeout:g} s")

    def endpoint(name: str):
        async def handle(request: Request) -> Response:
            stats["requests"] += 1
            job, trim = None, False
            try:
                if stopping.is_set():
                    raise Cancelled()
                body = await read_body(request)
                job = Job(timeout, stopping)
                loop = asyncio.get_running_loop()
                if len(body) > BIG_BYTES:
                    trim = True
                    fut = loop.run_in_executor(big, work, body, name, job, None, True)
                else:
                    # a small body is checked at once: a mistake is its 4xx whatever the load
                    data = decode_body(body)
                    opts = check_request(data, name, served, tokenizers)
                    fut = loop.run_in_executor(pool, work, data, name, job, opts)
                    del data
                del body
                content, media = await asyncio.wait_for(fut, timeout)
            except RequestError as e:
                return error(e.status, e.message)
            except (asyncio.TimeoutError, Cancelled):
                if job is not None:
                    job.cancel()  # the worker stops at its next check
                return late()
            except UserError as e:
                return error(400, str(e))
            if not trim:
                return Response(content, media_type=media)
            # and again once the answer is written (the transport's buffer held a copy)
            return Response(content, media_type=media,
                            background=BackgroundTask(release_memory))
        return handle

    async def models(request: Request) -> Response:
        return JSONResponse(models_doc)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "models": len(served),
                             "uptime_s": round(time.time() - stats["started"], 1),
                             "requests": stats["requests"], "errors": stats["errors"],
                             "working": stats["working"], "stopped": stats["stopped"]})

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
    routes += [Route(f"/{ep}", endpoint(ep), methods=["POST"]) for ep in (*endpoints(), "pipeline")]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: internal},
                    middleware=[Middleware(HostGuard, hosts=tuple(hosts), allow=tuple(allow_hosts),
                                           on_refuse=error)])
    app.state.pool = pool
    app.state.big = big
    app.state.stopping = stopping
    return app


def guarded_protocol(read_timeout: float = READ_TIMEOUT, max_connections: int = MAX_CONNECTIONS):
    """uvicorn's h11 protocol with two guards against slow clients: a request's headers and
    body must arrive within ``read_timeout`` seconds of its first byte (else 408 and the
    connection is closed; a connection that sends nothing in that time is closed), and at most
    ``max_connections`` are open: a new connection over the limit closes the longest-idle
    connection that is between requests (still reading headers, or kept alive), or is itself
    closed when every connection is busy with a request."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    body408 = json.dumps({"error": f"the request did not arrive within {read_timeout:g} s"}).encode()
    raw408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
              b"connection: close\r\ncontent-length: " + str(len(body408)).encode() + b"\r\n\r\n"
              + body408)
    reading = (h11.IDLE, h11.SEND_BODY)

    class Guarded(H11Protocol):
        _read_timer = None
        _idle_since = 0.0

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._idle_since = time.monotonic()
            if len(self.connections) > max_connections:
                idle = [c for c in self.connections
                        if c is not self and isinstance(c, Guarded) and c._between_requests()]
                if not idle:
                    self.transport.close()
                    return
                min(idle, key=lambda c: c._idle_since).transport.close()
            self._arm()

        def _between_requests(self) -> bool:
            return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

        def _arm(self) -> None:
            if self._read_timer is None:
                self._read_timer = self.loop.call_later(read_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state in reading:
                self._arm()
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._idle_since = time.monotonic()
            self._disarm()   # the keep-alive timeout takes over until the next request's bytes
            if self.conn.their_state is h11.SEND_BODY or self.conn.trailing_data[0]:
                self._arm()  # a pipelined request is already arriving

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _too_slow(self) -> None:
            self._read_timer = None
            if self.transport.is_closing() or self.conn.their_state not in reading:
                return
            started = self.conn.their_state is h11.SEND_BODY or bool(self.conn.trailing_data[0])
            if started and (self.cycle is None or self.cycle.response_complete
                            or not self.cycle.response_started):
                self.transport.write(raw408)
            self.transport.close()

    return Guarded


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


def _fd_limit() -> int:
    """The soft limit on open files, raised to the hard limit where it is lower."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return 1 << 16
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 16
    if soft == resource.RLIM_INFINITY:
        return hard
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def serve(specs: list[str], host: str, port: int, max_bytes: int, timeout: float,
          echo=print, allow_hosts: tuple[str, ...] = (), read_timeout: float = READ_TIMEOUT,
          max_connections: int = MAX_CONNECTIONS, tokenizer_specs: list[str] = ()) -> None:
    """``structkit serve``: bind, load and warm the models, then serve until SIGTERM/SIGINT."""
    import signal
    import sys

    import uvicorn

    sock = bind_socket(host, port)
    t0 = time.perf_counter()
    try:
        served = load_models(specs)
        tokenizers = load_tokenizers(list(tokenizer_specs))
        pipeline_tokenizers(served, tokenizers)
        warm_up(served, tokenizers)
        app = create_app(served, max_bytes, timeout, hosts=(host,), allow_hosts=tuple(allow_hosts),
                         tokenizers=tokenizers)
    except BaseException:
        sock.close()
        raise
    # connections stay below the file-descriptor limit (models, pools and the listening socket
    # need some): past it, accept() fails and nobody is served
    max_connections = max(1, min(max_connections, _fd_limit() - 64))
    sock.listen(2048)
    real_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    toks = ""
    if tokenizers.models:
        toks = (f" and {len(tokenizers.models)} tokenizer(s) ({', '.join(tokenizers.models)}; "
                f"{tokenizers.default} tokenises text that names no lang)")
    echo(f"structkit serve: {len(served)} model(s) ({', '.join(f'{n}: {m.task}' for n, m in served.items())})"
         f"{toks} loaded and warmed in {time.perf_counter() - t0:.1f} s; listening on "
         f"http://{shown}:{real_port}/")
    if host in ("0.0.0.0", "::", ""):
        echo(f"structkit serve: warning: listening on all interfaces ({host or '*'}) with no "
             "authentication: anyone who can reach this machine can use the server")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2,
                            http=guarded_protocol(read_timeout, max_connections))

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            app.state.stopping.set()   # requests in flight stop at their next check (503)
            super().handle_exit(sig, frame)

    server = Server(config)
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
        app.state.stopping.set()
        sys.setswitchinterval(interval)
        signal.signal(signal.SIGTERM, old)
        for pool in (app.state.pool, app.state.big):
            pool.shutdown(wait=False, cancel_futures=True)
        sock.close()
    # Work in flight stops within one chunk of sentences (well under a second); should a
    # thread still be inside one long step, the process does not wait for it past this.
    deadline = time.monotonic() + 2.0
    for t in threading.enumerate():
        if t.name.startswith("structkit-serve"):
            t.join(max(0.0, deadline - time.monotonic()))
    if any(t.name.startswith("structkit-serve") and t.is_alive() for t in threading.enumerate()):
        echo("structkit serve: stopped (a request's work was cut short)")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(0)
    echo("structkit serve: stopped")
