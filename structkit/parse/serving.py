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
            checked_tree,  # (served requests only: the wing imports this module)
        )
        from structkit.io.document import Sentence
        from structkit.serving import forms, given_as_conllu, predict, tagger_pos

        X: list = []
        no_pos = 0
        for k, s in enumerate(sents):
            pos = tagger_pos(s, before, k)
            analyses = before.analyses(k)
            if pos is None and analyses is None:
                no_pos += 1
            words = forms(s)
            if given_as_conllu(s):   # a copy: the analyses below go into what the parser reads
                X.append(checked_tree(s, "conllu").copy())
            elif analyses is not None:
                p = pos or ["_"] * len(words)
                X.append(Sentence.from_rows([[str(k), w, "_", t, t, "_", "_", "_", "_", "_"]
                                             for k, (w, t) in enumerate(zip(words, p), 1)], 0))
            else:
                X.append(list(zip(words, pos or ["_"] * len(words))))
            if analyses is not None:   # a morph model ran before: its LEMMA, UPOS, XPOS and FEATS
                X[-1].fill_columns({c: [a[part] for a in analyses]
                                    for c, part in ((2, "lemma"), (3, "upos"), (4, "xpos"), (5, "feats"))
                                    if analyses and part in analyses[0]})
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
