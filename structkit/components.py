"""The component contract: every model that analyses a document is a component, and a pipeline
is a list of them, checked when it is built.

A component says which layers of a document it reads (``requires``) and which it writes
(``provides``), from ``LAYERS``: the text; the sentences, tokens and words a tokenizer makes;
the LEMMA, UPOS, XPOS and FEATS columns; HEAD and DEPREL. It is called on a ``structkit.Doc``
(``component(doc) -> doc``, ``component.pipe(docs)``); inside, it works on a batch of sentences
at a time (``process``), each held as its CoNLL-U lines (``structkit.io.document.Sentence``),
so that a pipeline streams a file of any size without building a ``Doc`` of it.

A task says which components its models make (``Task.components``): a tokenizer (here, and a
language's rules), a morph model (LEMMA, UPOS, XPOS, FEATS: ``structkit.morph.component``), a POS
tagger (its tags as UPOS and XPOS: ``structkit.sequence.component``), a parser (HEAD, DEPREL:
``structkit.parse.component``). A pipeline model file (`train --task pipeline`) is the list of
its parts. ``chain`` builds a pipeline from model files in the order given (`annotate -m A -m B`,
``structkit.load([A, B])``) and refuses, in one line, a component whose ``requires`` nothing
before it provides, a tokenizer after the first place, or a parser that cannot read the tags
the model before it gives (``structkit.tagsets``).
"""
from __future__ import annotations

import collections
import gc
import io
import itertools
import os
from typing import IO, Any, Iterable, Iterator

from structkit.errors import UserError
from structkit.io.conllu import read_raw_text
from structkit.io.document import Doc, Sentence, gc_paused, text_bytes
from structkit.model import load_model, model_task
from structkit.tasks import chainable, get_task, tasks
from structkit.text.tokenize import get_tokenizer

LAYERS = ("text", "sentences", "tokens", "words", "lemma", "upos", "xpos", "feats", "head", "deprel")
_TAGS = {"lemma", "upos", "xpos", "feats"}


class Component:
    """A model that reads some layers of a document and writes others."""

    kind = ""                                # the task of its model file
    noun = "a model"
    requires: frozenset[str] = frozenset()
    provides: frozenset[str] = frozenset()

    def __init__(self, model: Any, path: str | None = None):
        self.model = model
        self.path = path

    @property
    def name(self) -> str:
        return self.path or f"the {self.kind} model"

    def facts(self) -> dict | None:
        """The tags it gives (``structkit.tagsets``), for the parts after it to be checked."""
        return None

    def check_upstream(self, upstream: "Component | None") -> None:
        """Refuse (one line) the component before it when its output cannot be read here."""

    def process(self, sents: list[Sentence], name: str = "-") -> None:
        """Fill this component's layers of a batch of sentences, in place."""
        raise NotImplementedError

    def __call__(self, doc: Doc) -> Doc:
        return self.many([doc])[0]

    def pipe(self, docs: Iterable, jobs: int | str | None = 1, chunk: int = 16) -> Iterator[Doc]:
        """``self(doc)`` of each doc, in order; ``jobs`` processes (forked: the model is shared;
        "auto" for every core). The sentences of many short docs are analysed together, a batch
        at a time (``batched``), as those of one long doc are."""
        return batched(self, docs, jobs, chunk)

    def many(self, docs: list[Doc]) -> list[Doc]:
        """``self(doc)`` of each doc, their sentences analysed as one batch."""
        if any(not isinstance(d, Doc) for d in docs):
            raise UserError(f"{self.name}: {self.noun} analyses a Doc's sentences; give it Docs "
                            "(a tokenizer or a pipeline makes them from text)")
        self.process([s for d in docs for s in d.sents], "<doc>")
        return docs

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class Tokenizer(Component):
    """Text into sentences, tokens and words: a trained tokenizer, or the rules of a language
    (``model`` is then the language's code)."""

    kind = "tokenize"
    noun = "a tokenizer"
    requires = frozenset({"text"})
    provides = frozenset({"sentences", "tokens", "words"})

    def __init__(self, model: Any, path: str | None = None, split: str = "auto"):
        super().__init__(model, path)
        self.split = split
        if isinstance(model, str):
            get_tokenizer(model)   # an unknown language is refused now
            self.kind = f"rules:{model}"
        self.tokenize = model if isinstance(model, str) else model.tokenizer

    def sentences(self, stream: IO, name: str = "-") -> Iterator[Sentence]:
        """The sentences of a raw-text stream, one paragraph at a time (an empty text has none)."""
        return read_raw_text(name, self.tokenize, self.split, stream=stream, allow_empty=True)

    def __call__(self, doc: Doc | str) -> Doc:
        text = doc if isinstance(doc, str) else doc.text
        sents = list(self.sentences(io.BytesIO(text_bytes(text)), "<text>"))
        return Doc(sents, text)

    def process(self, sents: list[Sentence], name: str = "-") -> None:
        raise UserError(f"{self.name}: a tokenizer reads text, not sentences")

    def many(self, docs: list) -> list[Doc]:
        return [self(d) for d in docs]


class Chain:
    """A pipeline: a tokenizer, then the components that analyse its sentences, in order."""

    def __init__(self, components: list[Component], lang: str = "en"):
        comps = list(components)
        if not comps or not isinstance(comps[0], Tokenizer):
            comps.insert(0, Tokenizer(lang))
        provided = set(comps[0].provides) | {"text"}
        for k, c in enumerate(comps[1:], 1):
            if isinstance(c, Tokenizer):
                raise UserError(f"{c.name}: a tokenizer can only come first in a pipeline")
            missing = [x for x in LAYERS if x in c.requires - provided]
            if missing:
                hint = " (give a morph model or POS tagger before it)" if set(missing) <= _TAGS else ""
                raise UserError(f"{c.name}: {c.noun} reads {', '.join(m.upper() for m in missing)}, "
                                f"which no model before it in the pipeline gives{hint}")
            c.check_upstream(_last_giving(comps[1:k], c.requires - {"words"}))
            provided |= c.provides
        self.components = comps
        self.provides = frozenset(provided)

    @property
    def tokenizer(self) -> Tokenizer:
        return self.components[0]   # type: ignore[return-value]

    @property
    def analysers(self) -> list[Component]:
        return self.components[1:]

    def process(self, sents: list[Sentence], name: str = "-") -> None:
        for c in self.analysers:
            c.process(sents, name)

    def sentences(self, stream: IO, name: str = "-", batch: int = 1024) -> Iterator[list[Sentence]]:
        """The analysed sentences of a raw-text stream, ``batch`` at a time (and at most about
        ``BATCH_WORDS`` words: a batch of long sentences stays small)."""
        for chunk in batches(self.tokenizer.sentences(stream, name), batch):
            self.process(chunk, name)
            yield chunk

    def __call__(self, doc: Doc | str) -> Doc:
        """The analysis of a text (or of a ``Doc``'s text, when it has no sentences yet; else of
        its sentences, in place)."""
        if isinstance(doc, Doc) and doc.sents:
            self.process(doc.sents, "<doc>")
            return doc
        text = doc if isinstance(doc, str) else doc.text
        stream = io.BytesIO(text_bytes(text))
        return Doc([s for chunk in self.sentences(stream, "<text>") for s in chunk], text)

    def pipe(self, docs: Iterable, jobs: int | str | None = 1, chunk: int = 16) -> Iterator[Doc]:
        """The analysis of each text (or Doc), in order; ``jobs`` as in :meth:`Component.pipe`."""
        return batched(self, docs, jobs, chunk)

    def many(self, docs: list) -> list[Doc]:
        """``self(doc)`` of each text or Doc: each text tokenized, then the sentences of them all
        analysed a batch at a time."""
        return made_docs(self.analysed(docs))

    def analysed(self, docs: list) -> list[tuple]:
        """What ``many`` makes its Docs of: (the Doc given, or None; the text; its sentences,
        held as their lines when made here: light to send from a forked process)."""
        made = []   # (the Doc given, or None; the text; its sentences)
        for d in docs:
            if isinstance(d, Doc) and d.sents:
                made.append((d, None, d.sents))
            else:
                text = d if isinstance(d, str) else d.text
                made.append((None, text, list(self.tokenizer.sentences(io.BytesIO(text_bytes(text)), "<text>"))))
        for chunk in batches(s for _, _, ss in made for s in ss):
            self.process(chunk, "<text>")
        return made


def made_docs(made: list[tuple]) -> list[Doc]:
    """The Docs of ``Chain.analysed``: made last, as a sentence is analysed as its lines (as
    `annotate` does) and turned into objects once."""
    with gc_paused():   # all of them at once: see gc_paused
        return [d if d is not None else Doc(ss, text) for d, text, ss in made]

    def __repr__(self) -> str:
        return "<Chain " + " -> ".join(c.kind for c in self.components) + ">"


BATCH_WORDS = 50_000   # words analysed at a time at most (the kernels' arrays grow with them)


def batches(sents: Iterable[Sentence], batch: int = 1024) -> Iterator[list[Sentence]]:
    """``sents`` in lists of at most ``batch`` sentences and about ``BATCH_WORDS`` words."""
    chunk: list[Sentence] = []
    words = 0
    for s in sents:
        chunk.append(s)
        words += len(s)
        if len(chunk) >= batch or words >= BATCH_WORDS:
            yield chunk
            chunk, words = [], 0
    if chunk:
        yield chunk


def _last_giving(before: list[Component], layers: frozenset) -> Component | None:
    for c in reversed(before):
        if c.provides & layers:
            return c
    return None


def components_of(path: str, command: str | None = None, beam: int | None = None) -> list[Component]:
    """The components in a model file (one, or a pipeline file's parts), made by its task
    (``Task.components``). A model whose task makes none is refused in one line."""

    name = model_task(path)
    if name is None:   # not a readable model file: the loader says what is wrong
        load_model(path, None, command)
    task = get_task(name) if name in {t.name for t in tasks()} else None
    if task is None or not chainable(task):
        kinds = ", ".join(t.name for t in tasks() if chainable(t))
        what = f"a {name} model" if name else "this file"
        raise UserError(f"{what} cannot be part of a pipeline (these can: {kinds})", path)
    model = task.load(path, command, tasks=(name,))
    return task.components(model, path, beam=beam)


def chain(paths: Iterable[str], command: str | None = None, lang: str = "en", split: str = "auto",
          beam: int | None = None) -> Chain:
    """The pipeline of the model files ``paths``, in order (each one a component or a pipeline)."""
    comps: list[Component] = []
    for p in paths:
        comps += components_of(p, command, beam)
    if beam is not None and not any("head" in c.provides for c in comps):
        raise UserError("--beam: this pipeline has no parser")
    if comps and isinstance(comps[0], Tokenizer):
        comps[0].split = split
    else:
        comps.insert(0, Tokenizer(lang, None, split))
    return Chain(comps, lang)


# ---- many documents on every core -------------------------------------------------------------
def n_jobs(jobs: Any) -> int:
    """``jobs`` of ``pipe``: 1..1024, or "auto"/None for every core."""
    if jobs is None or jobs == "auto":
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if type(jobs) is not int or not 1 <= jobs <= 1024:
        raise UserError(f"jobs must be an integer in 1..1024 or 'auto', got {jobs!r}")
    return jobs


_CALL: Any = None   # what a forked worker calls (set before the fork)


def _call(x: Any) -> Any:
    return _CALL(x)


GROUP_CHARACTERS = 100_000   # texts analysed together by ``batched``: about this much text ...
GROUP_TEXTS = 1000           # ... or this many texts
FORKED_GROUP_CHARACTERS = 20_000   # with jobs > 1: groups small enough for each process to get several


def _groups(items: Iterable, characters: int = GROUP_CHARACTERS) -> Iterator[list]:
    group, size = [], 0
    for x in items:
        if not isinstance(x, (str, Doc)):
            raise UserError(f"pipe takes texts (str) or Docs, got {type(x).__name__}")
        group.append(x)
        size += len(x) if isinstance(x, str) else len(x.text or "")
        if size >= characters or len(group) >= GROUP_TEXTS:
            yield group
            group, size = [], 0
    if group:
        yield group


def batched(analyser: Any, items: Iterable, jobs: int | str | None = 1, chunk: int = 16) -> Iterator[Doc]:
    """``analyser(x)`` of each text or Doc, in order, computed ``analyser.many(group)`` a group of
    texts at a time (``GROUP_CHARACTERS``, ``GROUP_TEXTS``): the models' per-call costs (features of
    each word type, kernel calls) are paid once per group, not once per text. Lazy: ``items`` is
    read as the results are asked for, at most a few groups ahead. ``jobs``: the first text is
    analysed here (numba's kernels loaded before the fork), the rest in groups of about
    ``FORKED_GROUP_CHARACTERS`` shared among forked processes (``fork_map``); a pipeline's
    sentences travel back as their lines and the Docs are made here. ``chunk`` is kept for
    compatibility: groups are what the processes share."""
    if isinstance(items, (str, Doc)):
        raise UserError("pipe takes an iterable of texts or Docs; call it on a single one")
    if items is None or not hasattr(items, "__iter__"):
        raise UserError(f"pipe takes an iterable of texts or Docs, got {type(items).__name__}")
    n = n_jobs(jobs)
    if n == 1:
        for group in _groups(items):
            yield from analyser.many(group)
        return
    groups = _groups(items, FORKED_GROUP_CHARACTERS)
    first = next(groups, None)
    if first is None:
        return
    yield from analyser.many(first[:1])
    rest = itertools.chain([first[1:]] if len(first) > 1 else [], groups)
    if hasattr(analyser, "analysed"):   # a pipeline: sentences travel back as lines, Docs made here
        for done in fork_map(analyser.analysed, rest, n, warm=False):
            yield from made_docs(done)
        return
    for done in fork_map(analyser.many, rest, n, warm=False):
        yield from done


def fork_map(fn: Any, items: Iterable, jobs: int | str | None = 1, chunk: int = 16,
             warm: bool = True) -> Iterator:
    """``fn(x)`` of each item, in order, in ``jobs`` forked processes (``structkit.workers.pool``:
    ``fn`` and its models are shared, not pickled, and the workers end with this process; with
    ``warm`` the first item runs here first, so numba's kernels are loaded once, before the
    fork). Items and results travel by pickle. Lazy and bounded: ``items`` is read as results
    are taken, at most ``2 * jobs`` items in flight (``chunk``: unused, kept for callers)."""
    global _CALL
    n = n_jobs(jobs)
    it = iter(items)
    if n == 1:
        yield from map(fn, it)
        return
    if warm:
        for first in it:
            yield fn(first)
            break
        else:
            return
    _CALL = fn
    from structkit.workers import pool, stop   # multiprocessing: imported when first forked

    workers = pool(n)
    window: collections.deque = collections.deque()
    aborted = True   # an error, a signal, or the caller stopped early: the workers end now
    # The workers are forked at the first submit. What is alive then (the models, numba's
    # objects) is frozen for them: their collector never walks it (walking writes to each
    # object, which copies the shared pages into every worker). Here it is unfrozen right
    # after, unless something had frozen objects before (a command, the server).
    thaw = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        for x in it:
            window.append(workers.submit(_call, x))
            if thaw:
                gc.unfreeze()
                thaw = False
            if len(window) >= 2 * n:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
        aborted = False
    finally:
        if thaw:   # no item was submitted
            gc.unfreeze()
        stop(workers, abort=aborted)
