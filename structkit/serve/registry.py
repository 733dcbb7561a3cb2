"""The models and tokenizers that ``structkit serve`` loads once (``--model``, ``--tokenizer``),
each by its name in the API, with the metadata that ``GET /models`` shows; and the endpoints of
the served tasks (from the task registry).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import structkit.api  # noqa: F401 (the API estimators register what they serve: structkit.serving.serves)
import structkit.pipeline.api  # noqa: F401
from structkit.config import resolve_data_path
from structkit.errors import UserError
from structkit.model import model_task
from structkit.serve.limits import FairLock, RequestError
from structkit.serving import estimator_of
from structkit.tasks import get_task, tasks
from structkit.text.tokenize import TOKENIZERS
from structkit.tokenizer.wing import TOKENIZE

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def endpoints() -> dict[str, str]:
    """Each served task's endpoint: {"tag": "pos", ...} (from the task registry)."""

    return {t.serving.endpoint: t.name for t in tasks() if t.serving is not None and t.serving.endpoint}


@dataclass
class Served:
    """One loaded model: its name in the API, the Python API estimator, and its metadata."""
    name: str
    path: str
    task: str
    est: Any                      # the API estimator: structkit.api.Tagger, ... (structkit.serving.serves)
    meta: dict
    lock: FairLock = field(default_factory=FairLock)

    @property
    def model(self) -> Any:
        return self.est.model_

    @property
    def kind(self) -> Any:
        """The model's ``structkit.tasks.Task``."""

        return get_task(self.task)

    @property
    def serving(self) -> Any:
        """How the server runs the model (``structkit.serving.Serving``)."""
        return self.kind.serving


def _split_spec(spec: str, flag: str = "--model") -> tuple[str, str]:
    """``NAME=PATH`` or ``PATH`` (named by the file's stem)."""
    name, eq, path = spec.partition("=")
    if not eq or os.path.exists(spec):
        path = spec
        name = os.path.basename(spec)
        for ext in (".npz", ".model", ".skm"):
            if name.endswith(ext) and len(name) > len(ext):
                name = name[:-len(ext)]
                break
    if not name or not set(name) <= _NAME_CHARS:
        raise UserError(f"{flag} {spec}: a {flag[2:]} name is letters, digits, '_', '.' and '-' "
                        "(give NAME=PATH)")
    return name, path


def load_models(specs: list[str]) -> dict[str, Served]:
    """Load each ``--model`` once (UserError for a missing, damaged or unsuitable file)."""

    if not specs:
        raise UserError("give at least one --model")
    served: dict[str, Served] = {}
    for spec in specs:
        name, path = _split_spec(spec)
        if name in served:
            raise UserError(f"two models are named {name!r}: name them with --model NAME=PATH")
        path = resolve_data_path(path, must_exist=True)
        # a task the server runs (with an endpoint, or a whole pipeline: POST /pipeline runs it)
        takes = [t for t in tasks() if t.serving is not None]
        of = model_task(path)
        task = next((t for t in takes if t.name == of), None)
        if task is None and of == TOKENIZE.name:
            raise UserError("a tokenizer model: give it with --tokenizer (it tokenises the text of "
                            "requests), not --model", path)
        if task is None:  # not a model, or one of a task not served: the loader says which
            try:
                loaded = takes[0].load(path, tasks=tuple(t.name for t in takes))
            except UserError as e:
                if "trained for task" in e.message:
                    names = [t.name for t in takes]
                    raise UserError(f"{e.message} (serve takes {', '.join(names[:-1])} and {names[-1]} "
                                    "models)", e.path) from None
                raise
            task = next(t for t in takes if t.name == loaded.config.task)  # (read after all)
        est = estimator_of(task.name).load(path)
        served[name] = Served(name, path, task.name, est, {})
        served[name].meta = _metadata(served[name])
    return served


@dataclass
class ServedTokenizer:
    """One ``--tokenizer`` model: its name (what a request's "lang" names), the loaded
    ``structkit.text.Tokenizer`` and its metadata."""
    name: str
    path: str
    tokenizer: Any
    meta: dict


class Tokenizers:
    """What tokenises a request's text: the ``--tokenizer`` models by name (the first is the
    default, in place of the English rules) and the rules of the languages that have them
    (``structkit.text.TOKENIZERS``); a model named as a language stands for its rules."""

    def __init__(self, models: dict[str, ServedTokenizer] | None = None):
        self.models = dict(models or {})

    @property
    def default(self) -> str:
        return next(iter(self.models), "en")

    def resolve(self, lang: str | None):
        """The tokenizer of a request's "lang" (None: the default): a model's Tokenizer, or a
        language code with rules; RequestError 400 for a name with neither."""

        name = self.default if lang is None else lang
        if name in self.models:
            return self.models[name].tokenizer
        if name in TOKENIZERS:
            return name
        rules = ", ".join(sorted(TOKENIZERS))
        models = ", ".join(self.models) or "none"
        shown = name if len(name) <= 40 and name.isprintable() and " " not in name else "LANG"
        raise RequestError(400, f"no tokenizer for language {name[:40]!r} on this server (rules: {rules}; "
                                f"tokenizer models: {models}): start it with --tokenizer "
                                f"{shown}=tok.model, a model of `structkit train --task tokenize`")

    def listing(self) -> list[dict]:
        """What ``GET /models`` says of them: the models, then the rules not replaced by one."""

        default = self.default
        out = [dict(t.meta, default=t.name == default) for t in self.models.values()]
        out += [{"name": lang, "kind": "rules", "default": lang == default}
                for lang in sorted(TOKENIZERS) if lang not in self.models]
        return out


def load_tokenizers(specs: list[str]) -> Tokenizers:
    """Load each ``--tokenizer`` once (UserError for a missing, damaged or other model)."""

    models: dict[str, ServedTokenizer] = {}
    for spec in specs:
        name, path = _split_spec(spec, "--tokenizer")
        if name in models:
            raise UserError(f"two tokenizers are named {name!r}: name them with --tokenizer NAME=PATH")
        path = resolve_data_path(path, must_exist=True)
        model = TOKENIZE.load(path, "serve --tokenizer")
        info = getattr(model, "info", {}) or {}
        meta = {"name": name, "kind": "model", "task": model.config.task,
                "algorithm": model.config.algo, "train_file": info.get("train_file"),
                "train_sha256": info.get("train_sha256")}
        models[name] = ServedTokenizer(name, path, model.tokenizer, meta)
    return Tokenizers(models)


def pipeline_tokenizers(served: dict[str, Served], tokenizers: Tokenizers) -> None:
    """Each pipeline model's tokenizer, named as the model, among the tokenizers (after the
    --tokenizer ones: the first of all is the default)."""
    for sv in served.values():
        chain = getattr(sv.est, "chain", None)   # a pipeline (structkit.components.Chain)
        tok = chain.tokenizer.model if chain is not None else None
        if tok is not None and not isinstance(tok, str) and sv.name not in tokenizers.models:
            info = getattr(sv.model, "info", {}) or {}   # the model's own card: its training file
            meta = {"name": sv.name, "kind": "model", "task": sv.task, "algorithm": tok.config.algo,
                    "train_file": info.get("train_file"), "train_sha256": info.get("train_sha256")}
            tokenizers.models[sv.name] = ServedTokenizer(sv.name, sv.path, tok.tokenizer, meta)


def _metadata(sv: Served) -> dict:
    model = sv.model
    info = getattr(model, "info", {}) or {}
    meta = {"name": sv.name, "task": sv.task, "algorithm": model.config.algo,
            "train_file": info.get("train_file"), "train_sha256": info.get("train_sha256")}
    meta.update(sv.serving.describe(model))
    return meta
