"""How ``structkit serve`` runs a parser (``structkit.serving``): a tree per sentence."""
from __future__ import annotations


from structkit.serving import Serving


class ParseServing(Serving):
    """A parser reads the POS tags of the request's input, of a pos model before it (as `parse
    --tagger` does) or a morph model's analyses (LEMMA, UPOS, XPOS, FEATS), and gives each
    word's head and label."""

    def describe(self, model) -> dict:
        labels = list(getattr(model, "labels", []) or [])
        return {"labels": labels, "labelled": bool(labels), "pos_column": model.config.pos,
                "scores": False, "explain": False}

    def run(self, sv, sents: list, scores: bool, explain: bool) -> int:
        from structkit.io.conllu import (
            dep_view,  # (served requests only: the wing imports this module)
        )
        from structkit.io.conllx import DepSentence
        from structkit.serving import predict

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
        # a pos model's tags, in the request before it, as `parse --tagger` reads them
        out = predict(sv, X, labels=True, pos=[s.predicted_pos for s in sents])
        for s, (heads, rels) in zip(sents, out):
            s.heads = [int(h) for h in heads]
            s.deprels = [str(r) for r in rels]
        return no_pos

    def missing(self, sv, n: int) -> str:
        return (f"parser {sv.name} read no POS tags in {n} sentence(s): give POS or run a pos model "
                "before it")

    def tip(self, sv, s, i: int) -> list[str]:
        return [] if s.heads is None else [f"{sv.name}: head {s.heads[i]}, {s.deprels[i]}"]

    def fill(self, sv, s, rows: list[list[str]]) -> None:
        """Nothing of its own: the request's tree is written as HEAD and DEPREL."""
