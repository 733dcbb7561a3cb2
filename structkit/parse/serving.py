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
            checked_tree,  # (served requests only: the wing imports this module)
        )
        from structkit.io.document import Sentence
        from structkit.serving import predict

        X: list = []
        no_pos = 0
        for s in sents:
            pos = s.tagger_pos()
            if pos is None and s.analyses is None:
                no_pos += 1
            if s.conllu is not None:   # a copy: the analyses below go into what the parser reads
                X.append(checked_tree(s.conllu, "conllu").copy())
            elif s.analyses is not None:
                p = pos or ["_"] * len(s.words)
                X.append(Sentence.from_rows([[str(k), w, "_", t, t, "_", "_", "_", "_", "_"]
                                             for k, (w, t) in enumerate(zip(s.words, p), 1)], 0))
            else:
                X.append(list(zip(s.words, pos or ["_"] * len(s.words))))
            if s.analyses is not None:   # a morph model ran before: its LEMMA, UPOS, XPOS and FEATS
                X[-1].fill_columns({c: [a[part] for a in s.analyses]
                                    for c, part in ((2, "lemma"), (3, "upos"), (4, "xpos"), (5, "feats"))
                                    if s.analyses and part in s.analyses[0]})
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
