"""How ``structkit serve`` runs a task's models and shows what they give: a task's
:class:`Serving` (``Task.serving``), so that the server runs every model through the same few
calls and never asks which kind of task it is.

The server holds each request's sentences as document sentences
(``structkit.io.document.Sentence``), held as the commands hold them: CoNLL-U the request gave,
as read; its text, tokenised into CoNLL-U lines (multiword tokens, ``SpaceAfter=No``) placed in
it by ``start`` and ``end``; its token lists, as a column file's rows (a word, and the POS of a
[word, POS] pair). Models do not change them: what a model gives a request is its :class:`Output`
(labels, margins and explanations, one list entry per sentence, under the model's name; POS
tags a parser after it reads, morphological analyses, a tree), gathered in the request's
:class:`Results`, and written into the words of the answer (``Serving.fill``: the columns its
command writes). The base class serves a labeller: one label per token (POS, chunk and NER
models, the toy task of the tests); :class:`SpanServing` adds the phrases of a B-/I- labeller;
the morph, parse and pipeline wings subclass it for theirs. A mistake in a request is a
``UserError`` here (the server answers it with a 400).

``provides`` names what a task's models give the models after them in a request, in the layers
of ``structkit.components`` plus ``tags`` (POS tags a parser after it reads, as `parse
--tagger` gives them): a parser's are ``head`` and ``deprel``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from structkit.errors import UserError
from structkit.io.document import Sentence

TOP_FEATURES = 5    # features shown per side in an explanation
CONLLU_PART = {"lemma": 2, "upos": 3, "xpos": 4, "feats": 5}   # an analysis's parts: their CoNLL-U columns


_ESTIMATORS: dict[str, type] = {}


def serves(*tasks: str):
    """Class decorator: the API estimator the server runs for models of these tasks (it has
    ``load(path)``, ``predict`` and ``model_``: ``structkit.api.Tagger`` and its kin)."""
    def register(cls: type) -> type:
        for name in tasks:
            _ESTIMATORS[name] = cls
        return cls
    return register


def estimator_of(task: str) -> type:
    """The API estimator registered for ``task`` (by :func:`serves`)."""
    return _ESTIMATORS[task]


def margin(m: float) -> float | None:
    """A margin for JSON: None where it is infinite (a model with one label has no runner-up)."""
    m = float(m)
    return round(m, 4) if math.isfinite(m) else None


def explanation_json(e) -> dict:
    """A token's explanation (``structkit.explanation.TokenExplanation``) as the server shows
    it: label, runner-up, margin and the strongest features each way."""
    return {"label": e.label, "runner_up": e.runner_up, "margin": margin(e.margin),
            "for": [[p.name, round(p.weight, 4)] for p in e.pushes if p.weight > 0][:TOP_FEATURES],
            "against": [[p.name, round(p.weight, 4)] for p in e.pushes if p.weight < 0][:TOP_FEATURES]}


def predict(sv, X: list, **options) -> list:
    """``sv``'s estimator over ``X``, under the model's lock (a UserError naming the model)."""
    with sv.lock:
        try:
            return sv.est.predict(X, **options)
        except UserError as e:
            raise UserError(f"model {sv.name}: {e}") from None


def forms(s: Sentence) -> list[str]:
    """The word forms of a request's sentence: FORM of its CoNLL-U rows, or the first column of
    a token list's rows."""
    return [r[1] for r in s.rows] if s.held_as_lines else [r[0] for r in s.rows]


def input_pos(s: Sentence) -> list[str] | None:
    """The POS tags a request gave a sentence: of CoNLL-U rows each word's XPOS, else its UPOS
    ('_' for neither; None when no word has one); of a token list's rows their second column
    (None when it gave words alone)."""
    rows = s.rows
    if s.held_as_lines:
        pos = [r[4] if r[4] != "_" else r[3] for r in rows]
        return None if all(p == "_" for p in pos) else pos
    return [r[1] for r in rows] if len(rows[0]) > 1 else None


def given_as_conllu(s: Sentence) -> bool:
    """Whether a request's sentence is CoNLL-U the request gave (one made of its text was read
    from no file: it has no ``first_line``)."""
    return s.held_as_lines and s.first_line is not None


@dataclass
class Output:
    """What one model gave the sentences of a request, each list one entry per sentence (None:
    the model gives none): its ``labels`` (per word a label, or a morph model's analysis: a
    dict of CoNLL-U parts), its ``scores`` (per word a margin, or a dict of them; None for a
    sentence without) and ``explanations`` (per word a dict; None for a sentence without), a
    pipeline's ``analysis`` (LEMMA, UPOS, XPOS and FEATS per word) and a tree (``heads``,
    ``deprels``). ``pos``: its labels are POS tags the models after it read; ``analyses``: they
    are analyses a parser after it reads. ``missing``: how many sentences lacked what it reads.
    It holds no words: the sentences are the request's."""

    labels: list | None = None
    scores: list | None = None
    explanations: list | None = None
    analysis: list | None = None
    heads: list | None = None
    deprels: list | None = None
    pos: bool = False
    analyses: bool = False
    missing: int = 0

    def extend(self, part: "Output") -> None:
        """Add what the model gave the next chunk of sentences (``part``, of the same fields)."""
        for name in ("labels", "scores", "explanations", "analysis", "heads", "deprels"):
            got = getattr(part, name)
            if got is not None:
                setattr(self, name, (getattr(self, name) or []) + got)
        self.pos, self.analyses = self.pos or part.pos, self.analyses or part.analyses
        self.missing += part.missing


class Results:
    """What the models of a request gave its sentences: each model's :class:`Output` by name,
    in the order they ran, and the layers later models read and the answer shows, found among
    them. Sentence ``k`` is the request's ``first + k`` (:meth:`at`: a chunk's view)."""

    def __init__(self, outputs: dict[str, Output] | None = None, first: int = 0):
        self.outputs: dict[str, Output] = {} if outputs is None else outputs
        self.first = first

    def at(self, first: int) -> "Results":
        """The same outputs, sentence 0 being the request's ``first``."""
        return Results(self.outputs, first)

    def add(self, name: str, out: Output) -> None:
        """A model's output, once it has run over every sentence."""
        self.outputs[name] = out

    def get(self, name: str) -> Output | None:
        return self.outputs.get(name)

    def pos(self, k: int) -> list[str] | None:
        """The POS tags of sentence ``k`` that later models read: the first POS model's."""
        out = next((o for o in self.outputs.values() if o.pos), None)
        return None if out is None else out.labels[self.first + k]

    def analyses(self, k: int) -> list[dict] | None:
        """The first morph model's analyses of sentence ``k`` (what a parser after it reads)."""
        out = next((o for o in self.outputs.values() if o.analyses), None)
        return None if out is None else out.labels[self.first + k]

    def analysis(self, k: int) -> list | None:
        """A pipeline's (lemma, upos, xpos, feats) of each word of sentence ``k`` (the last one's)."""
        out = next((o for o in reversed(self.outputs.values()) if o.analysis is not None), None)
        return None if out is None else out.analysis[self.first + k]

    def tree(self, k: int) -> tuple[list[int], list[str]] | None:
        """The heads and labels of sentence ``k``'s words, when a model of the request parsed."""
        out = next((o for o in reversed(self.outputs.values()) if o.heads is not None), None)
        if out is None:
            return None
        return out.heads[self.first + k], out.deprels[self.first + k]


def tagger_pos(s: Sentence, before: Results, k: int) -> list[str] | None:
    """The POS tags a model reads in sentence ``s`` (``before``'s ``k``): those of the first
    POS model before it, else the input's."""
    pos = before.pos(k)
    return pos if pos is not None else input_pos(s)


@dataclass(frozen=True)
class Serving:
    """A labeller's serving: its endpoint (``POST /ENDPOINT``; None: only in /pipeline), where
    it runs among a request's models (``order``, lower first) and what it gives the models after
    it (``provides``)."""

    endpoint: str | None = None
    order: int = 1
    provides: frozenset = frozenset()

    def describe(self, model) -> dict:
        """What the server says of a model (``GET /models``) besides its name, task, algorithm
        and training data; ``needs_pos`` (it reads a POS tag per token), ``scores`` (per-token
        margins) and ``explain`` are what the server asks of it."""
        return {"labels": [str(x) for x in getattr(model, "labels", [])], "needs_pos": False,
                "scores": False, "explain": False}

    def run(self, sv, sents: list[Sentence], before: Results, scores: bool, explain: bool) -> Output:
        """Run the model over a chunk of a request's sentences: what it gives them. ``before``
        is what the models before it gave (sentence 0: the chunk's first); ``Output.missing``
        counts the sentences that lacked what it reads (:meth:`missing` words the warning)."""
        needs_pos = sv.meta["needs_pos"]
        X, words = [], []
        for k, s in enumerate(sents):
            words.append(forms(s))
            if needs_pos:
                pos = tagger_pos(s, before, k)
                if pos is None:
                    raise UserError(f"model {sv.name} reads a POS tag per token: give tokens as "
                                    "[word, POS] pairs or CoNLL-U with POS, or run a pos model "
                                    "before it (POST /pipeline)")
                X.append(list(zip(words[-1], pos)))
            else:
                X.append(list(words[-1]))
        scores = scores and sv.meta["scores"]
        gives_pos = sv.meta.get("gives_pos", "tags" in self.provides)
        labelled, margins, explained = [], [], []
        for k, (s, res) in enumerate(zip(sents, predict(sv, X, scores=scores))):
            labels, ms = res if scores else (res, None)
            labelled.append(labels)
            margins.append(None if ms is None else [margin(m) for m in ms])
            if explain:
                pos = None
                if needs_pos:   # what it read; its own tags when it gives the first of the request
                    pos = before.pos(k)
                    pos = pos if pos is not None else labels if gives_pos else input_pos(s)
                explained.append(self._explain(sv, words[k], pos) if sv.meta["explain"] else None)
        return Output(labelled, margins, explained if explain else None, pos=gives_pos)

    def _explain(self, sv, words: list[str], pos: list[str] | None) -> list[dict] | None:
        """Per token: runner-up, margin and the strongest features each way (reading ``pos``
        when given); None where the task does not explain the model (``Task.explanations``)."""
        rows = [[w, p] for w, p in zip(words, pos)] if pos else [[w] for w in words]
        try:
            got = sv.kind.explanations(sv.model, Sentence.from_rows(rows, 1), "<request>", text=not pos)
            return None if got is None else [explanation_json(e) for e in got]
        except UserError:
            return None

    def missing(self, sv, n: int) -> str:
        """The warning for ``n`` sentences that lacked what the model reads."""
        return ""

    def span_types(self, sv) -> list[str]:
        """The phrase types its labels make (none: it makes no phrases)."""
        return []

    def spans(self, sv, out: Output, k: int) -> list[tuple[str, int, int]]:
        """Its phrases in sentence ``k`` (``out``: what it gave the request): (type, first word,
        end) with 0-based word indices."""
        return []

    def tip(self, sv, out: Output, k: int, i: int) -> list[str]:
        """The lines it adds to the tip of word ``i`` of sentence ``k`` in the picture (the
        SVG's <title>)."""
        if out.labels is None:
            return []
        labels = out.labels[k]
        line = f"{sv.name}: {labels[i]}"
        ex = out.explanations[k][i] if out.explanations is not None and out.explanations[k] else None
        margins = out.scores[k] if out.scores is not None else None
        if ex and ex.get("runner_up") is not None:
            m = ex.get("margin")
            line += f", runner-up {ex['runner_up']}, margin {'-' if m is None else f'{m:.3f}'}"
            if ex.get("for"):
                line += f"\n  for {labels[i]}: " + ", ".join(f"{f} {w:+.2f}" for f, w in ex["for"])
            if ex.get("against"):
                line += f"\n  for {ex['runner_up']}: " + ", ".join(f"{f} {w:.2f}" for f, w in ex["against"])
        elif margins is not None and margins[i] is not None:
            line += f", margin {margins[i]:.3f}"
        return [line]

    def fill(self, sv, out: Output, k: int, rows: list[list[str]]) -> None:
        """Write what it gave sentence ``k`` into the rows of its CoNLL-U answer: the column
        ``structkit tag`` writes (``write_tagged``); none for a model that names no column."""
        if out.labels is None:
            return
        output_column = getattr(sv.model, "output_column", None)
        if output_column is None:
            return
        from structkit.io.conllu import put_label

        column, key = output_column()
        for r, lab in zip(rows, out.labels[k]):
            r[column] = put_label(r[column], key, lab) if key else lab


class SpanServing(Serving):
    """A labeller whose labels are phrases in a B-/I- scheme (chunk, NER): its phrases are the
    request's spans, coloured by type in the picture."""

    def span_types(self, sv) -> list[str]:
        return [re.sub(r"^[BIESLU]-", "", str(x)) for x in sv.meta.get("labels") or [] if str(x) != "O"]

    def spans(self, sv, out: Output, k: int) -> list[tuple[str, int, int]]:
        from structkit.spans import phrases

        return phrases(out.labels[k], sv.meta.get("scheme") or "iob2")
