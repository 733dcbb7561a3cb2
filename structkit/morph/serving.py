"""How ``structkit serve`` runs a morph model (``structkit.serving``): an analysis per word."""
from __future__ import annotations


from structkit.serving import Serving


class MorphServing(Serving):
    """A morph model's output is an analysis per word (a dict of CoNLL-U parts: lemma, upos,
    xpos, feats): its labels are those dicts, its scores a dict of margins per word, its
    explanations a dict per part; the first such model's analyses are what a parser after it
    reads."""

    def describe(self, model) -> dict:
        from structkit.morph.explain import predicted_parts

        return {"labels": [], "parts": list(predicted_parts(model)), "needs_pos": False,
                "scores": True, "explain": True}

    def run(self, sv, sents: list, scores: bool, explain: bool) -> int:
        from structkit.serving import margin, predict

        scores = scores and sv.meta["scores"]
        out = predict(sv, [list(s.words) for s in sents], scores=scores)
        for s, res in zip(sents, out):
            analyses, margins = res if scores else (res, None)
            s.labels[sv.name] = analyses
            s.scores[sv.name] = None if margins is None else [{p: margin(m) for p, m in d.items()}
                                                                for d in margins]
            if s.analyses is None:
                s.analyses = analyses
            if explain:
                s.explanations[sv.name] = self._per_part(sv, s) if sv.meta["explain"] else None
        return 0

    def _per_part(self, sv, s) -> list[dict]:
        from structkit.io.conll import (
            Sentence,  # (served requests only: the wing imports this module)
        )
        from structkit.serving import explanation_json

        per: list[dict] = [{} for _ in s.words]
        for e in sv.kind.explanations(sv.model, Sentence.from_rows([[w] for w in s.words], 1), "<request>", text=True):
            per[e.index - 1][e.word.rsplit("[", 1)[-1].rstrip("]").lower()] = explanation_json(e)
        return per

    def tip(self, sv, s, i: int) -> list[str]:
        labels = s.labels.get(sv.name)
        if labels is None:
            return []
        ms = (s.scores.get(sv.name) or [None] * (i + 1))[i] or {}
        return [f"{sv.name}: " + ", ".join(f"{k} {v}" + (f" ({ms[k]:.2f})" if ms.get(k) is not None else "")
                                           for k, v in labels[i].items())]

    def fill(self, sv, s, rows: list[list[str]]) -> None:
        from structkit.serving import CONLLU_PART

        for r, a in zip(rows, s.labels.get(sv.name) or ()):
            for part, v in a.items():
                r[CONLLU_PART[part]] = v
