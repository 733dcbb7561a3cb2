"""A request's input: its JSON fields checked (``check_request``: the models it runs and the
tokenizer of its text, as ``Options``, before any work is queued), and its sentences (``Sent``)
read from text, token lists or CoNLL-U (``read_sentences``), within the limits on words.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

from structkit.errors import UserError
from structkit.io.conllu import read_conllu
from structkit.serve.limits import (
    MAX_SENTENCE_WORDS,
    MAX_WORDS,
    PIECE_CHARS,
    Job,
    RequestError,
)
from structkit.serve.registry import Served, Tokenizers, endpoints
from structkit.tagsets import check_models
from structkit.tasks import tasks
from structkit.text.tokenize import get_tokenizer, iter_sentences


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
    conllu: Any = None                       # structkit.io.document.Sentence read from CoNLL-U
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


def parses(sv: Served) -> bool:
    """Whether the model gives a tree (a request runs at most one)."""
    return "head" in sv.serving.provides


def tags_pos(sv: Served) -> bool:
    """Whether the model's labels are the POS tags a parser after it reads (`/parse`'s
    "tagger", as `parse --tagger`), not a whole analysis."""
    return sv.serving.provides == {"tags"}


# ---- request bodies ------------------------------------------------------------------------
@dataclass
class Options:
    sents: list[Sent]
    models: list[Served]
    scores: bool = True
    explain: bool = False
    fmt: str = "json"
    tokenizer: Any = None   # of the request's text: a Tokenizer, or a language code with rules
    render: bool = False    # add each sentence's SVG (structkit.rendering) and the span legend


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
            if sum(parses(m) for m in models) > 1:
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
            if not parses(models[0]):
                raise RequestError(400, "tagger goes with /parse (POS tags for the parser)")
            models.insert(0, named(body["tagger"], next(t.name for t in tasks() if t.serving is not None
                                                        and t.serving.provides == {"tags"})))
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
    parser = next((m for m in models if parses(m)), None)
    pos = next((m for m in sorted(models, key=lambda m: m.serving.order) if tags_pos(m)), None)
    if parser is None or pos is None:
        return

    try:
        check_models(pos.model, parser.model, f"model {pos.name}", f"parser {parser.name}", conllu)
    except UserError as e:
        raise RequestError(400, e.message) from None


def rough_words(body: dict) -> int:
    """About how many words a checked request has, before it is read: the whitespace-separated
    pieces of its text, its tokens, or its CoNLL-U lines."""
    if isinstance(body.get("text"), str):
        return len(body["text"].split())
    if isinstance(body.get("tokens"), list):
        return sum(len(s) for s in body["tokens"] if isinstance(s, list))
    if isinstance(body.get("conllu"), str):
        return body["conllu"].count("\n")
    return 0


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
