"""A parser as a pipeline component (``structkit.components``)."""
from __future__ import annotations

from typing import Any

from structkit.components import Component
from structkit.io.conllu import checked_tree
from structkit.io.document import Sentence
from structkit.parse.parser import check_search_options
from structkit.tagsets import check_chain, parser_facts


class Parser(Component):
    """A dependency parser: HEAD and DEPREL of every word, from the words and the POS column it
    was trained on (and FEATS and LEMMA when its features read them)."""

    kind = "parse"
    noun = "a parser"
    provides = frozenset({"head", "deprel"})

    def __init__(self, model: Any, path: str | None = None, beam: int | None = None):
        super().__init__(model, path)
        if beam is not None:
            beam = check_search_options(model, None, beam, path)[1]
        self.beam = beam
        self.reads = parser_facts(model)
        self.requires = frozenset({"words", self.reads["column"]})

    def check_upstream(self, upstream: Component | None) -> None:
        if upstream is not None and upstream.facts() is not None:
            check_chain(upstream.facts(), self.reads, upstream.name, self.name)

    def process(self, sents: list[Sentence], name: str = "-") -> None:
        if not sents:
            return
        for s in sents:   # the input's HEAD column is checked (a tree or '_'), then not read
            checked_tree(s, name)
        kw = {"beam": self.beam} if self.beam is not None else {}
        k = 0
        for _, heads, deprels in self.model.parse_batches(sents, name, **kw):
            for h, d in zip(heads, deprels if deprels is not None else [None] * len(heads)):
                s = sents[k]
                s.fill_columns({6: [str(x) for x in h], 7: d if d is not None else ["_"] * len(s)})
                k += 1
