"""A morph model as a pipeline component (``structkit.components``)."""
from __future__ import annotations

from structkit.components import Component
from structkit.io.document import Sentence
from structkit.tagsets import morph_facts


class Morph(Component):
    """A morph model: LEMMA, UPOS, XPOS and FEATS of every word."""

    kind = "morph"
    noun = "a morph model"
    requires = frozenset({"words"})
    provides = frozenset({"lemma", "upos", "xpos", "feats"})

    def facts(self) -> dict:
        return morph_facts(self.model)

    def process(self, sents: list[Sentence], name: str = "-") -> None:
        if not sents:
            return
        for s, analysis in zip(sents, self.model.analyse([[r[1] for r in s.rows] for s in sents])):
            if analysis:
                lemmas, upos, xpos, feats = zip(*analysis)
                s.fill_columns({2: lemmas, 3: upos, 4: xpos, 5: feats})
