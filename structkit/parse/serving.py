"""How ``structkit serve`` runs a parser (``structkit.serving``): a tree per sentence."""
from __future__ import annotations


from structkit.serving import Output, Serving


class ParseServing(Serving):
    """A parser reads the POS tags of the request's input, of a pos model before it (as `parse
    --tagger` does) or a morph model's analyses (LEMMA, UPOS, XPOS, FEATS), and gives each
    word's head and label."""

    def describe(self, model) -> dict:
        labels = list(getattr(model, "labels", []) or [])
        return {"labels": labels, "labelled": bool(labels), "pos_column": model.config.pos,
                "scores": False, "explain": False}

    def run(self, sv, sents: list, before, scores: bool, explain: bool) -> Output:
        from structkit.io.conllu import (
            dep_view,  # (served requests only: the wing imports this module)
        )
        from structkit.io.conllx import DepSentence
        from structkit.serving import forms, given_as_conllu, predict, tagger_pos

        X: list = []
        no_pos = 0
        for k, s in enumerate(sents):
            pos = tagger_pos(s, before, k)
            analyses = before.analyses(k)
            if pos is None and analyses is None:
                no_pos += 1
            words = forms(s)
            if given_as_conllu(s):   # its columns, as `parse` reads them
                d = dep_view(s, "conllu")
                d.heads = None
                X.append(d)
            elif analyses is not None:
                n = len(words)
                p = pos or ["_"] * n
                X.append(DepSentence(list(words), ["_"] * n, list(p), list(p), ["_"] * n, None, ["_"] * n))
            else:
                X.append(list(zip(words, pos or ["_"] * len(words))))
            if analyses is not None:   # a morph model ran before: its LEMMA, UPOS, XPOS and FEATS
                d = X[-1]
                for part, attr in (("lemma", "lemmas"), ("upos", "upos"), ("xpos", "xpos"), ("feats", "feats")):
                    if analyses and part in analyses[0]:
                        setattr(d, attr, [a[part] for a in analyses])
        # a pos model's tags, in the request before it, as `parse --tagger` reads them
        got = predict(sv, X, labels=True, pos=[before.pos(k) for k in range(len(sents))])
        return Output(heads=[[int(h) for h in heads] for heads, _ in got],
                      deprels=[[str(r) for r in rels] for _, rels in got], missing=no_pos)

    def missing(self, sv, n: int) -> str:
        return (f"parser {sv.name} read no POS tags in {n} sentence(s): give POS or run a pos model "
                "before it")

    def tip(self, sv, out: Output, k: int, i: int) -> list[str]:
        return [] if out.heads is None else [f"{sv.name}: head {out.heads[k][i]}, {out.deprels[k][i]}"]

    def fill(self, sv, out: Output, k: int, rows: list[list[str]]) -> None:
        """Nothing of its own: the request's tree is written as HEAD and DEPREL."""
