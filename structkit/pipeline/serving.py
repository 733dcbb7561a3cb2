"""How ``structkit serve`` runs a pipeline model (``structkit.serving``): its chain of
components over the request's words, as `structkit annotate` runs them."""
from __future__ import annotations


from structkit.errors import UserError
from structkit.serving import Output, Serving


class PipelineServing(Serving):
    """A pipeline model's morph model and parser over the sentences' words (its components:
    ``structkit.components``): each word's analysis (lemma, upos, xpos, feats), its UPOS as the
    model's labels and the POS later models read, and the tree when the pipeline parses."""

    def describe(self, model) -> dict:
        return {"labels": model.labels, "parts": sorted(model.parts()), "needs_pos": False,
                "scores": False, "explain": False, "facts": model.facts()}

    def run(self, sv, sents: list, before, scores: bool, explain: bool) -> Output:
        from structkit.io.document import (
            Sentence,  # (served requests only: the wing imports this module)
        )
        from structkit.serving import forms

        conllu = []
        for s in sents:
            rows = [[str(i + 1), w, "_", "_", "_", "_", "_", "_", "_", "_"] for i, w in enumerate(forms(s))]
            conllu.append(Sentence.from_lines(rows, ["\t".join(r) for r in rows], list(range(len(rows)))))
        with sv.lock:
            try:
                sv.est.chain.process(conllu, sv.name)
            except UserError as e:
                raise UserError(f"model {sv.name}: {e}") from None
        out = Output(labels=[[r[3] for r in c.rows] for c in conllu], pos=True,
                     analysis=[[tuple(r[2:6]) for r in c.rows] for c in conllu])
        if "head" in sv.est.chain.provides:
            out.heads = [[int(r[6]) for r in c.rows] for c in conllu]
            out.deprels = [[r[7] for r in c.rows] for c in conllu]
        return out

    def fill(self, sv, out: Output, k: int, rows: list[list[str]]) -> None:
        """Nothing of its own: the request's analysis is written as LEMMA to FEATS."""
