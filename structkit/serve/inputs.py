"""A request's input: its JSON fields checked (``check_request``: the models it runs and the
tokenizer of its text, as ``Options``, before any work is queued), and its sentences read from
text, token lists or CoNLL-U (``read_sentences``), within the limits on words: document
sentences (``structkit.io.document.Sentence``) held as the commands hold them. Of text, the
CoNLL-U lines of its tokens (as ``structkit tokenize`` writes them: multiword tokens,
``SpaceAfter=No``), placed in the text by ``start`` and ``end``; of token lists, a column file's
rows (the word, and the POS of a [word, POS] pair); of CoNLL-U, the sentences as read.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

from structkit.errors import UserError
from structkit.io.conllu import read_conllu
from structkit.io.document import Sentence, new_sentence
from structkit.serve.limits import (
    MAX_SENTENCE_WORDS,
    MAX_WORDS,
    PIECE_CHARS,
    Job,
    RequestError,
)
from structkit.serve.registry import Served, Tokenizers, endpoints
from structkit.serving import Results
from structkit.tagsets import check_models
from structkit.tasks import tasks
from structkit.text.tokenize import get_tokenizer, iter_sentences


# ---- the input: text, token lists or CoNLL-U -> sentences ----------------------------------------
def _from_text(text: str, lang: str, job: Job | None = None,
               warnings: list[str] | None = None) -> list[Sentence]:
    """The sentences of ``text`` as the tokenizer cuts them (``_sentence``); one over
    MAX_SENTENCE_WORDS is cut into pieces of at most that many words (at token boundaries),
    said in ``warnings``. Once its words are counted, ``job``'s time limit grows with them
    (``Job.words``), before their sentences are made."""

    get_tokenizer(lang)   # an unknown language: its UserError before any work
    cuts: list[tuple[list, int]] = []   # the tokens of each sentence, and its piece's offset
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
            cuts.append((toks, base))
            total += sum(len(tok.words) for tok in toks)
        if total > MAX_WORDS:
            raise RequestError(413, f"the text has over {MAX_WORDS} words; the limit is {MAX_WORDS}")
    if cut and warnings is not None:
        warnings.append(f"{cut} sentence(s) of the text had over {MAX_SENTENCE_WORDS} words: each "
                        f"was cut into pieces of at most {MAX_SENTENCE_WORDS} words")
    if job is not None:
        job.words(total)
    out: list[Sentence] = []
    for toks, base in cuts:
        if job is not None and len(out) % 64 == 0:
            job.check()
        out.append(_sentence(text, toks, base, len(out) + 1))
    return out


def _sentence(text: str, toks: list, base: int, n: int) -> Sentence:
    """Sentence ``n`` of ``text``: the CoNLL-U lines of the tokenizer's tokens ``toks``
    (``structkit.text.Token``) of the piece at ``base``, under its ``# sent_id`` and ``# text``,
    placed in ``text`` by ``start`` and ``end`` (read from no file: no ``first_line``)."""
    start, end = base + toks[0].start, base + toks[-1].end
    s = new_sentence(((tok.form, tok.words, tok.space_after) for tok in toks),
                     [f"# sent_id = {n}", f"# text = {' '.join(text[start:end].split())}"])
    s.start, s.end, s.first_line = start, end, None
    return s


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


def _from_tokens(tokens: Any) -> list[Sentence]:
    """Sentences of token lists, each a column file's rows: [word] or [word, POS]."""
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
        out.append(Sentence.from_rows([[w, p] for w, p in zip(words, pos)] if pos else [[w] for w in words]))
    return out


def _from_conllu(data: str, job: Job | None = None) -> list[Sentence]:
    sents = []
    try:
        for s in read_conllu("conllu", io.BytesIO(data.encode("utf-8"))):
            if job is not None and len(sents) % 64 == 0:
                job.check()
            sents.append(s)
    except UserError as e:
        raise RequestError(400, f"conllu: {e.message}" + (f" (line {e.line})" if e.line else "")) \
            from None
    for k, s in enumerate(sents):
        if len(s) > MAX_SENTENCE_WORDS:
            raise RequestError(413, f"conllu: sentence {k + 1} has {len(s)} words; the limit "
                                    f"is {MAX_SENTENCE_WORDS} per sentence")
    return sents


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
    """A checked request: its sentences (``read``), the models it runs and how it wants the
    answer; then what the models gave the sentences (``results``, ``inference.infer``)."""
    sents: list[Sentence]
    models: list[Served]
    scores: bool = True
    explain: bool = False
    fmt: str = "json"
    tokenizer: Any = None   # of the request's text: a Tokenizer, or a language code with rules
    render: bool = False    # add each sentence's SVG (structkit.rendering) and the span legend
    text: str | None = None  # the request's text, its sentences placed in it (None: tokens, CoNLL-U)
    results: Results = field(default_factory=Results)

    def read(self, body: dict, job: Job | None = None, warnings: list[str] | None = None) -> None:
        """The sentences of the checked request ``body`` (``read_sentences``), and its text."""
        self.sents = read_sentences(body, job, warnings, self.tokenizer)
        self.text = body.get("text")


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
    opts.read(body, job)
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
    if parser is None or pos is None or "tags" in parser.serving.provides:
        return   # (a model that makes its own tags, a pipeline, reads none: nothing to match)

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
                   warnings: list[str] | None = None, tokenizer: Any = None) -> list[Sentence]:
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
