"""The Python face of a pipeline: ``nlp = structkit.load("xx.skm")``, ``doc = nlp("Some
text.")`` (a ``structkit.Doc``), ``nlp.pipe(texts, jobs=N)``.

``structkit.load`` also chains separate model files (``tokenizer=``, ``tagger=`` a morph or POS
model, ``parser=``), checked as `structkit annotate`, `parse --text --tagger` and the server
check them: parts whose tag sets do not fit are refused in one line (``UserError``)."""
from __future__ import annotations

import io
import os
from typing import Any, Iterable, Iterator

from structkit.errors import UserError


class _PosAnalyser:
    """A POS tagger in a morph model's place: its tags as UPOS and XPOS, no FEATS or LEMMA."""

    def __init__(self, tagger: Any):
        self.tagger = tagger
        self.info = getattr(tagger, "info", {})

    def analyse(self, sentences: list[list[str]]) -> list[list[tuple[str, str, str, str]]]:
        from structkit.io.conll import Sentence

        rows = [Sentence([[w] for w in s], 0) for s in sentences]
        out = []
        for _, labels in self.tagger.tag_batches(rows, "-", text=True):
            out += [[("_", t, t, "_") for t in tags] for tags in labels]
        return out


class Pipeline:
    """A loaded pipeline: call it on text for a ``structkit.Doc``."""

    def __init__(self, model: Any, path: str | None = None, lang: str = "en"):
        from structkit.pipeline.annotate import tokenizer_of

        self.model = model
        self.path = path
        self.tokenizer = tokenizer_of(model, lang)
        if model.parser is not None and model.morph is None:
            raise UserError("this pipeline has a parser but no morph model or tagger: raw text has no "
                            "POS tags for it to read", path)

    def __repr__(self) -> str:
        return f"<Pipeline {', '.join(self.model.parts()) or 'rules'}{f' from {self.path}' if self.path else ''}>"

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Pipeline":
        """The pipeline model file ``path`` (what ``structkit.load(path)`` gives)."""
        return load(path)

    def _fitted(self) -> Any:   # what the server asks of an estimator: the loaded model
        return self.model

    @property
    def parts(self) -> list[str]:
        return list(self.model.parts())

    @property
    def info(self) -> dict:
        return self.model.info

    def to_conllu(self, text: str) -> str:
        """The CoNLL-U analysis of ``text`` (as `structkit annotate` writes it)."""
        from structkit.pipeline.annotate import annotate_stream, to_conllu

        if not isinstance(text, str):
            raise UserError(f"expected text as a str, got {type(text).__name__}")
        out = io.StringIO()
        if not text.strip():
            return ""
        for chunk in annotate_stream(self.model, "<text>", io.BytesIO(text.encode("utf-8")), self.tokenizer):
            to_conllu(chunk, out)
        return out.getvalue()

    def __call__(self, text: str):
        """The analysis of ``text``: a ``structkit.Doc`` whose token offsets point into it."""
        from structkit.doc import Doc

        conllu = self.to_conllu(text)
        if not conllu:
            return Doc([], text)
        return Doc.from_conllu(conllu, text=text)

    def pipe(self, texts: Iterable[str], jobs: int | str | None = 1, chunk: int = 16) -> Iterator:
        """A ``Doc`` for each text, in order; ``jobs`` processes (forked: the model is shared),
        ``"auto"`` for every core."""
        from structkit.doc import Doc

        n = _jobs(jobs)
        if isinstance(texts, str):
            raise UserError("pipe takes an iterable of texts; call the pipeline on a single text")
        if n == 1:
            for t in texts:
                yield self(t)
            return
        import concurrent.futures as cf
        import multiprocessing

        global _WORKER
        _WORKER = self
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise UserError(f"expected texts as str, got {type(t).__name__}")
        self.to_conllu("Warm up.")   # numba's kernels loaded once, before the fork
        with cf.ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"),
                                    initializer=_ignore_sigint) as pool:
            for t, conllu in zip(texts, pool.map(_annotate, texts, chunksize=max(1, chunk))):
                yield Doc.from_conllu(conllu, text=t) if conllu else Doc([], t)


_WORKER: Pipeline | None = None


def _jobs(jobs: Any) -> int:
    """``jobs`` of ``pipe``: 1..1024, or "auto"/None for every core."""
    if jobs is None or jobs == "auto":
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if type(jobs) is not int or not 1 <= jobs <= 1024:
        raise UserError(f"jobs must be an integer in 1..1024 or 'auto', got {jobs!r}")
    return jobs


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _annotate(text: str) -> str:
    assert _WORKER is not None
    return _WORKER.to_conllu(text)


def load(path: str | os.PathLike | None = None, *, tokenizer: str | os.PathLike | None = None,
         tagger: str | os.PathLike | None = None, parser: str | os.PathLike | None = None,
         lang: str = "en") -> Pipeline:
    """A pipeline: the model file ``path`` (`structkit train --task pipeline`), or separate
    models chained (``tokenizer``; ``tagger``, a morph or POS model; ``parser``), refused in
    one line when their tag sets do not fit. Without a tokenizer the rules of ``lang`` split
    the text."""
    from structkit.config import resolve_data_path
    from structkit.pipeline.compat import check_models
    from structkit.pipeline.model import PipelineConfig, PipelineModel

    if path is not None:
        if any(x is not None for x in (tokenizer, tagger, parser)):
            raise UserError("load: give a pipeline model file, or tokenizer=, tagger=, parser= (not both)")
        p = resolve_data_path(os.fspath(path), must_exist=True)
        return Pipeline(PipelineModel.load(p), p, lang)
    if all(x is None for x in (tokenizer, tagger, parser)):
        raise UserError("load: give a pipeline model file (`structkit train --task pipeline`), or "
                        "tokenizer=, tagger=, parser=")
    model = PipelineModel(PipelineConfig())
    from structkit.model import model_task
    from structkit.tasks import get_task

    if tokenizer is not None:
        p = resolve_data_path(os.fspath(tokenizer), must_exist=True)
        model.tokenizer = get_task("tokenize").load(p, "load(tokenizer=...)")
    upstream = None
    if tagger is not None:
        tp = resolve_data_path(os.fspath(tagger), must_exist=True)
        if model_task(tp) == "morph":
            model.morph = get_task("morph").load(tp, "load(tagger=...)")
        else:
            model.morph = _PosAnalyser(get_task("pos").load(tp, "load(tagger=...)"))
        upstream = tp
    if parser is not None:
        pp = resolve_data_path(os.fspath(parser), must_exist=True)
        model.parser = get_task("parse").load(pp, "load(parser=...)")
        if model.morph is not None:
            check_models(model.morph, model.parser, upstream, pp)
    return Pipeline(model, None, lang)
