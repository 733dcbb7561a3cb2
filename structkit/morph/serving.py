"""How ``structkit serve`` runs a morph model (``structkit.serving``): an analysis per word."""
from __future__ import annotations


from structkit.serving import Output, Serving


class MorphServing(Serving):
    """A morph model's output is an analysis per word (a dict of CoNLL-U parts: lemma, upos,
    xpos, feats): its labels are those dicts, its scores a dict of margins per word, its
    explanations a dict per part; the first such model's analyses are what a parser after it
    reads."""

    def describe(self, model) -> dict:
        from structkit.morph.explain import predicted_parts

        return {"labels": [], "parts": list(predicted_parts(model)), "needs_pos": False,
                "scores": True, "explain": True}

    def run(self, sv, sents: list, before, scores: bool, explain: bool) -> Output:
        from structkit.serving import forms, margin, predict

        scores = scores and sv.meta["scores"]
        words = [forms(s) for s in sents]
        labels, margins, explained = [], [], []
        for w, res in zip(words, predict(sv, [list(x) for x in words], scores=scores)):
            analyses, ms = res if scores else (res, None)
            labels.append(analyses)
            margins.append(None if ms is None else [{p: margin(m) for p, m in d.items()} for d in ms])
            if explain:
                explained.append(self._per_part(sv, w) if sv.meta["explain"] else None)
        return Output(labels, margins, explained if explain else None, analyses=True)

    def _per_part(self, sv, words: list[str]) -> list[dict]:
        from structkit.io.conll import (
            Sentence,  # (served requests only: the wing imports this module)
        )
        from structkit.serving import explanation_json

        per: list[dict] = [{} for _ in words]
        for e in sv.kind.explanations(sv.model, Sentence.from_rows([[w] for w in words], 1), "<request>", text=True):
            per[e.index - 1][e.word.rsplit("[", 1)[-1].rstrip("]").lower()] = explanation_json(e)
        return per

    def tip(self, sv, out: Output, k: int, i: int) -> list[str]:
        if out.labels is None:
            return []
        margins = out.scores[k] if out.scores is not None else None
        ms = (margins[i] if margins is not None else None) or {}
        return [f"{sv.name}: " + ", ".join(f"{key} {v}" + (f" ({ms[key]:.2f})" if ms.get(key) is not None else "")
                                           for key, v in out.labels[k][i].items())]

    def fill(self, sv, out: Output, k: int, rows: list[list[str]]) -> None:
        from structkit.serving import CONLLU_PART

        for r, a in zip(rows, out.labels[k] if out.labels is not None else ()):
            for part, v in a.items():
                r[CONLLU_PART[part]] = v
