"""A POS tagger as a pipeline component (``structkit.components``)."""
from __future__ import annotations

from structkit.components import Component
from structkit.io.document import Sentence
from structkit.tagsets import tagger_facts


class Tagger(Component):
    """A POS tagger (a sequence model of `--task pos`): its tag as UPOS and as XPOS."""

    kind = "pos"
    noun = "a POS tagger"
    requires = frozenset({"words"})
    provides = frozenset({"upos", "xpos"})

    def facts(self) -> dict:
        return tagger_facts(self.model)

    def process(self, sents: list[Sentence], name: str = "-") -> None:
        if not sents:
            return
        rows = [Sentence.from_rows([[r[1]] for r in s.rows], 0) for s in sents]
        k = 0
        for _, labels in self.model.tag_batches(rows, name, text=True):
            for tags in labels:
                for i, t in enumerate(tags):
                    sents[k].set_columns(i, {3: t, 4: t})
                k += 1
