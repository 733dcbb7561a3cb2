"""How ``structkit serve`` runs a task's models and shows what they give: a task's
:class:`Serving` (``Task.serving``), so that the server runs every model through the same few
calls and never asks which kind of task it is.

The server holds each request's sentences as its own records (``structkit.serve.inputs.Sent``:
words, offsets, the input's POS and CoNLL-U lines) and each model writes its part into them
here: labels, margins and explanations under the model's name, POS tags a parser after it
reads, morphological analyses, a tree. The base class serves a labeller: one label per token
(POS, chunk and NER models, the toy task of the tests); :class:`SpanServing` adds the phrases of a
B-/I- labeller; the morph, parse and pipeline wings subclass it for theirs. A mistake in a
request is a ``UserError`` here (the server answers it with a 400).

``provides`` names what a task's models give the models after them in a request, in the layers
of ``structkit.components`` plus ``tags`` (POS tags a parser after it reads, as `parse
--tagger` gives them): a parser's are ``head`` and ``deprel``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from structkit.errors import UserError

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

    def run(self, sv, sents: list, scores: bool, explain: bool) -> int:
        """Run the model over a chunk of sentences, writing its part into them; how many lacked
        what it reads (:meth:`missing` words the warning)."""
        needs_pos = sv.meta["needs_pos"]
        X = []
        for s in sents:
            if needs_pos:
                pos = s.tagger_pos()
                if pos is None:
                    raise UserError(f"model {sv.name} reads a POS tag per token: give tokens as "
                                    "[word, POS] pairs or CoNLL-U with POS, or run a pos model "
                                    "before it (POST /pipeline)")
                X.append(list(zip(s.words, pos)))
            else:
                X.append(list(s.words))
        scores = scores and sv.meta["scores"]
        out = predict(sv, X, scores=scores)
        gives_pos = sv.meta.get("gives_pos", "tags" in self.provides)
        for s, res in zip(sents, out):
            labels, margins = res if scores else (res, None)
            s.labels[sv.name] = labels
            s.scores[sv.name] = None if margins is None else [margin(m) for m in margins]
            if gives_pos and s.predicted_pos is None:
                s.predicted_pos = list(labels)
            if explain:
                s.explanations[sv.name] = self._explain(sv, s, needs_pos) if sv.meta["explain"] else None
        return 0

    def _explain(self, sv, s, with_pos: bool) -> list[dict] | None:
        """Per token: runner-up, margin and the strongest features each way; None where the
        task does not explain the model (``Task.explanations``)."""
        from structkit.io.conll import (
            Sentence,  # (served requests only: the wings import this module)
        )

        pos = s.tagger_pos() if with_pos else None
        rows = [[w, p] for w, p in zip(s.words, pos)] if pos else [[w] for w in s.words]
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

    def spans(self, sv, s) -> list[tuple[str, int, int]]:
        """Its phrases in a sentence: (type, first word, end) with 0-based word indices."""
        return []

    def tip(self, sv, s, i: int) -> list[str]:
        """The lines it adds to word ``i``'s tip in the picture (the SVG's <title>)."""
        labels = s.labels.get(sv.name)
        if labels is None:
            return []
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
        return [line]

    def fill(self, sv, s, rows: list[list[str]]) -> None:
        """Write its part into the sentence's CoNLL-U rows: the column ``structkit tag``
        writes (``write_tagged``); none for a model that names no column."""
        if sv.name not in s.labels:
            return
        output_column = getattr(sv.model, "output_column", None)
        if output_column is None:
            return
        from structkit.io.conllu import put_label

        column, key = output_column()
        for r, lab in zip(rows, s.labels[sv.name]):
            r[column] = put_label(r[column], key, lab) if key else lab


class SpanServing(Serving):
    """A labeller whose labels are phrases in a B-/I- scheme (chunk, NER): its phrases are the
    request's spans, coloured by type in the picture."""

    def span_types(self, sv) -> list[str]:
        return [re.sub(r"^[BIESLU]-", "", str(x)) for x in sv.meta.get("labels") or [] if str(x) != "O"]

    def spans(self, sv, s) -> list[tuple[str, int, int]]:
        from structkit.spans import phrases

        return phrases(s.labels[sv.name], sv.meta.get("scheme") or "iob2")
