"""The learner registry: one spec per training algorithm.

A spec names the algorithm and the paper it implements, the tasks it serves, its typed
parameter table (name, type, default, range or choices, one line of help), the decoder its
models tag with, its default number of epochs, how it builds its learner and how it reports an
epoch. Options are validated from the table; rules that belong to a task stay with the task.

Adding a learner is one module that calls :func:`register` (plus its tests); nothing in the
command line names a learner. Each wing lists its built-in specs in a module of its own
(``SPECS``), named in :data:`WINGS`: this module imports none of them until a learner is looked
up or listed, then registers them before any other, in that order. Installed packages add
theirs through the ``structkit.learners`` entry point.
"""
from __future__ import annotations

from structkit.errors import UserError

__all__ = ["Param", "LearnerSpec", "register", "unregister", "get", "specs", "names", "param",
           "PARAMS", "EPOCHS", "SEED", "BRUTE_LIMIT", "check_brute", "alternatives", "default_report"]

from structkit.learn.spec import (BRUTE_LIMIT, EPOCHS, PARAMS, SEED, LearnerSpec,  # noqa: E402,F401
                                  Param, alternatives, check_brute, default_report, param)

_REGISTRY: list[LearnerSpec] = []


def register(spec: LearnerSpec, replace: bool = False) -> LearnerSpec:
    """Add a learner. A name may serve several tasks through separate specs (the reranker's
    ``perceptron`` is not the tagger's), but never one task twice (ValueError, unless
    ``replace``)."""
    _load_builtin()
    clash = [s for s in _REGISTRY if s.name == spec.name and set(s.tasks) & set(spec.tasks)]
    if clash and not replace:
        raise ValueError(f"a learner named {spec.name!r} is already registered for "
                         f"{', '.join(sorted(set(clash[0].tasks) & set(spec.tasks)))}")
    for s in clash:
        _REGISTRY.remove(s)
    _REGISTRY.append(spec)
    return spec


def unregister(name: str, task: str | None = None) -> None:
    """Remove the learner ``name`` (only its spec for ``task``, when given)."""
    _REGISTRY[:] = [s for s in _REGISTRY if not (s.name == name and (task is None or task in s.tasks))]


# The wings' spec modules, by name, in the order `structkit algorithms` lists their learners:
# each holds ``SPECS``, a list of LearnerSpec (definitions only: light to import, no numba).
WINGS = ("structkit.sequence.learn.builtin", "structkit.parse.specs", "structkit.rerank.specs",
         "structkit.tokenizer.specs", "structkit.morph.specs")

_BUILTIN_LOADED = False
_PLUGINS_LOADED = False


def _load_builtin() -> None:
    """Register the built-in learners, the specs of every wing in :data:`WINGS` (once)."""
    global _BUILTIN_LOADED
    if not _BUILTIN_LOADED:
        _BUILTIN_LOADED = True
        from importlib import import_module

        _REGISTRY[:0] = [s for wing in WINGS for s in import_module(wing).SPECS]


def _load_plugins() -> None:
    """Register the learners of installed packages that declare an entry point in the group
    ``structkit.learners`` (each names a module that calls :func:`register` when imported).
    Done once, and only when a list of all learners or an unknown name needs it: scanning the
    installed packages costs about 40 ms."""
    global _PLUGINS_LOADED
    _load_builtin()
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="structkit.learners"):
        try:
            ep.load()
        except Exception as e:  # a broken plugin must not break structkit
            import warnings
            warnings.warn(f"structkit: learner plugin {ep.name!r} ({ep.value}) failed to load: {e}")


def specs(task: str | None = None) -> list[LearnerSpec]:
    """Every registered learner (for ``task`` only, when given), in registration order."""
    _load_plugins()
    return [s for s in _REGISTRY if task is None or task in s.tasks]


def names(task: str | None = None) -> list[str]:
    return list(dict.fromkeys(s.name for s in specs(task)))


def get(name: str, task: str | None = None) -> LearnerSpec:
    """The spec of ``name`` (for ``task``), or the one-line error listing the choices."""
    _load_builtin()
    for s in _REGISTRY:  # the built-ins and those registered so far, before scanning for plugins
        if s.name == name and (task is None or task in s.tasks):
            return s
    for s in specs(task):
        if s.name == name:
            return s
    where = f" for task {task}" if task else ""
    raise UserError(f"--algo must be {alternatives(names(task))}{where}, got {name!r}")
