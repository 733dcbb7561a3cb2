"""The one type check of option values, for the command line, config files and the Python API.

What each option may hold is read from the config dataclasses of the tasks (their field
annotations, ``int | None``, ``str | list[str] | None``, ...), so a new option is checked as
soon as a config class declares it. One message for all three:
``epochs must be an integer, got 'ten'``; the command line names the flag (``--epochs``), a
config file adds its path, the API the object (``Tagger: ...``). Ranges and choices are the
parameter tables' (``structkit.learn.registry``) and each config's ``validate()``.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any, Callable

from structkit.errors import UserError
from structkit.tasks import TASKS


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _list_of(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, (list, tuple)) and all(ok(x) for x in v)


# annotation -> (what the message says, the test)
KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "int": ("an integer", _is_int),
    "float": ("a number", _is_number),
    "str": ("a string", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "list": ("a list", lambda v: isinstance(v, (list, tuple))),
    "tuple": ("a list", lambda v: isinstance(v, (list, tuple))),
    "list[str]": ("a list of strings", _list_of(lambda x: isinstance(x, str))),
    "list[int]": ("a list of integers", _list_of(_is_int)),
}


def kinds_of(annotation: str) -> tuple[str, ...]:
    """The kinds an annotation allows (``None`` aside): ``'str | list[str] | None'`` ->
    ``('str', 'list[str]')``; a kind this module does not know is left out."""
    parts = [p.strip() for p in str(annotation).split("|")]
    return tuple(p for p in parts if p in KINDS)


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for task in TASKS.values():
        alias = {field: key for key, field in task.training.aliases}
        for f in dataclasses.fields(task.training.config_type()):
            kinds = kinds_of(f.type)
            for name in {f.name, alias.get(f.name, f.name)}:
                table[name] = tuple(dict.fromkeys(table.get(name, ()) + kinds))
    return table


def describe(kinds: tuple[str, ...]) -> str:
    words = list(dict.fromkeys(KINDS[k][0] for k in kinds))
    return " or ".join(words)


def check(name: str, value: Any, shown: str | None = None, kinds: tuple[str, ...] | None = None,
          path: str | None = None) -> None:
    """UserError unless ``value`` is of a kind option ``name`` takes (``None``, unset, always
    is); ``shown`` is how the message names it (``--epochs`` on the command line)."""
    if value is None:
        return
    kinds = _table().get(name, ()) if kinds is None else kinds
    if not kinds or any(KINDS[k][1](value) for k in kinds):
        return
    raise UserError(f"{shown or name} must be {describe(kinds)}, got {value!r}"[:300], path)


def check_all(values: dict[str, Any], path: str | None = None) -> None:
    """:func:`check` for every item of ``values`` (config-file or field spelling)."""
    for name, value in values.items():
        check(name, value, path=path)


def parse_text(text: str, kind: str, shown: str) -> Any:
    """A command-line string as option kind ``kind`` (int or float), or the same message."""
    try:
        return int(text) if kind == "int" else float(text) if kind == "float" else text
    except ValueError:
        raise UserError(f"{shown} must be {describe((kind,))}, got {text!r}"[:300]) from None
