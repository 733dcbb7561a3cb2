"""The tasks, by name: the config class each trains from and the function that trains it.

This module is light (it names modules, it does not import them), so the command line can list
the tasks without loading numba. :func:`make_config` is the one path from option values (flags
merged over a config file) to a validated, typed config, for every task.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from typing import Any

from structkit.errors import UserError
from structkit.learn.registry import alternatives

SEQUENCE = ("pos", "chunk", "ner")


@dataclass(frozen=True)
class Task:
    """A task: its module, the config class and the training function named in it, the
    learner it uses by default (the config class's ``algo`` default; tests/test_configs.py
    checks they agree), and the config-file spellings of fields whose Python names differ
    (``lambda`` is ``lam``)."""

    name: str
    module: str
    config_class: str
    trainer: str
    default_algo: str
    aliases: tuple[tuple[str, str], ...] = ()

    def config_type(self) -> type:
        return getattr(importlib.import_module(self.module), self.config_class)

    def train_function(self):
        return getattr(importlib.import_module(self.module), self.trainer)

    def keys(self) -> list[str]:
        """The option keys this task takes (config-file spelling)."""
        alias = {field: key for key, field in self.aliases}
        return [alias.get(f.name, f.name) for f in fields(self.config_type())]


TASKS: dict[str, Task] = {t.name: t for t in (
    *(Task(n, "structkit.sequence.task", "TaggerConfig", "train_tagger", "perceptron") for n in SEQUENCE),
    Task("parse", "structkit.parse.parser", "ParserConfig", "train_parser", "beam"),
    Task("rerank", "structkit.rerank.task", "RerankConfig", "train_reranker", "loss-perceptron",
         (("lambda", "lam"),)),
)}
NAMES = tuple(TASKS)


def get_task(name: Any) -> Task:
    """The task ``name``, or the one-line error that lists them."""
    if name not in TASKS:
        raise UserError(f"--task must be {alternatives(NAMES)}, got {name!r}")
    return TASKS[name]


def all_keys() -> set[str]:
    """Every option key some task takes (what a config file may set)."""
    return {k for t in TASKS.values() for k in t.keys()}


def make_config(values: dict[str, Any]):
    """A validated config for ``values['task']`` from option values (config-file spelling,
    ``None`` meaning unset). An option the task does not take is refused, naming the tasks
    that take it."""
    if values.get("task") is None:
        raise UserError(f"--task is required ({', '.join(NAMES)}), on the command line or in --config")
    task = get_task(values["task"])
    given = {k: v for k, v in values.items() if v is not None}
    takes = task.keys()
    foreign = [k for k in given if k not in takes]
    if foreign:
        flags = ", ".join("--" + k.replace("_", "-") for k in foreign)
        where = []
        for k in foreign:
            others = [t.name for t in TASKS.values() if k in t.keys()]
            if others:
                where.append(f"--{k.replace('_', '-')} applies to --task {', '.join(others)}")
        raise UserError(f"option(s) {flags} do not apply to --task {task.name} ("
                        + ("; ".join(where) + "; " if where else "")
                        + f"--task {task.name} takes {', '.join(k for k in takes if k != 'task')})")
    field = dict(task.aliases)
    config = task.config_type()(**{field.get(k, k): v for k, v in given.items()})
    config.validate()
    return config
