"""The Python face of a pipeline: ``nlp = structkit.load("xx.skm")``, ``doc = nlp("Some
text.")`` (a ``structkit.Doc``), ``nlp.pipe(texts, jobs=N)``.

``structkit.load`` also chains separate model files (``load([tok, morph, parser])``, or
``tokenizer=``, ``tagger=`` a morph or POS model, ``parser=``) into one pipeline
(``structkit.components``), checked as `structkit annotate -m A -m B` checks them."""
from __future__ import annotations

import io
import os
from typing import Any, Iterable, Iterator

from structkit.components import Chain, chain
from structkit.config import resolve_data_path
from structkit.errors import UserError
from structkit.io.document import Doc, text_bytes
from structkit.model import model_task
from structkit.pipeline.annotate import BATCH, to_conllu
from structkit.pipeline.model import PipelineModel
from structkit.serving import serves


@serves("pipeline")
class Pipeline:
    """A loaded pipeline (``structkit.components.Chain``): call it on text for a
    ``structkit.Doc``. ``model``: the pipeline model file's parts, when it was loaded from one."""

    def __init__(self, chain: Chain, path: str | None = None, model: Any = None):
        self.chain = chain
        self.path = path
        self.model = model

    def __repr__(self) -> str:
        return f"<Pipeline {', '.join(self.parts)}{f' from {self.path}' if self.path else ''}>"

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Pipeline":
        """The pipeline model file ``path`` (what ``structkit.load(path)`` gives)."""
        return load(path)

    @property
    def model_(self) -> Any:   # what the server asks of an estimator: the loaded model
        return self.model

    @property
    def parts(self) -> list[str]:
        """The kind of each component, in order (``rules:en`` for a language's rules)."""
        return [c.kind for c in self.chain.components]

    @property
    def components(self) -> list:
        return list(self.chain.components)

    @property
    def info(self) -> dict:
        return self.model.info if self.model is not None else {}

    def to_conllu(self, text: str) -> str:
        """The CoNLL-U analysis of ``text`` (as `structkit annotate` writes it)."""

        out = io.StringIO()
        for chunk in self.chain.sentences(io.BytesIO(text_bytes(text)), "<text>", BATCH):
            to_conllu(chunk, out)
        return out.getvalue()

    def __call__(self, text: str) -> Doc:
        """The analysis of ``text``: a ``structkit.Doc`` whose token offsets point into it."""
        text_bytes(text)   # a str of Unicode text, or one line saying what it is not
        return self.chain(text)

    def pipe(self, texts: Iterable[str], jobs: int | str | None = 1, chunk: int = 16) -> Iterator[Doc]:
        """A ``Doc`` for each text, in order; ``jobs`` processes (forked: the model is shared),
        ``"auto"`` for every core; many short texts are analysed together, a group at a time
        (``structkit.components.batched``)."""
        return self.chain.pipe(texts, jobs, chunk)


def load(path: str | os.PathLike | Iterable[str | os.PathLike] | None = None, *,
         tokenizer: str | os.PathLike | None = None, tagger: str | os.PathLike | None = None,
         parser: str | os.PathLike | None = None, lang: str = "en") -> Pipeline:
    """A pipeline: the model file ``path`` (`structkit train --task pipeline`), or a list of
    model files chained in order as `annotate -m A -m B` chains them (a tokenizer, a morph model
    or POS tagger, a parser, or a pipeline file), or the same named (``tokenizer``, ``tagger``,
    ``parser``). A chain that does not fit (a model reading what nothing before it gives, tag
    sets that do not match) is refused in one line (``UserError``). Without a tokenizer the
    rules of ``lang`` split the text."""

    if path is not None and not isinstance(path, (str, os.PathLike)) and not hasattr(path, "__iter__"):
        raise UserError(f"load: expected a model file path or a list of them, got {type(path).__name__}")
    named = [x for x in (tokenizer, tagger, parser) if x is not None]
    if path is not None and named:
        raise UserError("load: give a pipeline model file or a list of model files, or tokenizer=, "
                        "tagger=, parser= (not both)")
    if path is None and not named:
        raise UserError("load: give a pipeline model file (`structkit train --task pipeline`), a list "
                        "of model files, or tokenizer=, tagger=, parser=")
    paths = named if path is None else [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise UserError("load: expected model file paths")
    paths = [resolve_data_path(os.fspath(p), must_exist=True) for p in paths]
    if len(paths) == 1 and model_task(paths[0]) == "pipeline":
        model = PipelineModel.load(paths[0], "load")
        return Pipeline(Chain(model.components(paths[0]), lang), paths[0], model)
    return Pipeline(chain(paths, "load", lang), None)
