"""How ``structkit serve`` runs a pipeline model (``structkit.serving``): its chain of
components over the request's words, as `structkit annotate` runs them."""
from __future__ import annotations


from structkit.errors import UserError
from structkit.serving import Serving


class PipelineServing(Serving):
    """A pipeline model's morph model and parser over the sentences' words (its components:
    ``structkit.components``): each word's analysis (lemma, upos, xpos, feats), its UPOS as the
    model's labels and the POS later models read, and the tree when the pipeline parses."""

    def describe(self, model) -> dict:
        return {"labels": model.labels, "parts": sorted(model.parts()), "needs_pos": False,
                "scores": False, "explain": False, "facts": model.facts()}

    def run(self, sv, sents: list, scores: bool, explain: bool) -> int:
        from structkit.io.document import (
            Sentence,  # (served requests only: the wing imports this module)
        )

        conllu = []
        for s in sents:
            rows = [[str(i + 1), w, "_", "_", "_", "_", "_", "_", "_", "_"] for i, w in enumerate(s.words)]
            conllu.append(Sentence.from_lines(rows, ["\t".join(r) for r in rows], list(range(len(rows)))))
        with sv.lock:
            try:
                sv.est.chain.process(conllu, sv.name)
            except UserError as e:
                raise UserError(f"model {sv.name}: {e}") from None
        parses = "head" in sv.est.chain.provides
        for s, c in zip(sents, conllu):
            s.analysis = [tuple(r[2:6]) for r in c.rows]
            s.labels[sv.name] = [r[3] for r in c.rows]
            if s.predicted_pos is None:
                s.predicted_pos = [r[3] for r in c.rows]
            if parses:
                s.heads = [int(r[6]) for r in c.rows]
                s.deprels = [r[7] for r in c.rows]
        return 0

    def fill(self, sv, s, rows: list[list[str]]) -> None:
        """Nothing of its own: the request's analysis is written as LEMMA to FEATS."""
