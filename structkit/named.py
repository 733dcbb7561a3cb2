"""A table of named things (corpora, model recipes): the built-in ones, made on first use, and
those that plugins and tests add."""
from __future__ import annotations

from typing import Callable, Generic, Iterable, TypeVar

T = TypeVar("T")


class Table(Generic[T]):
    """Things by their ``name``, in listing order; ``builtin()`` makes the built-in ones."""

    def __init__(self, builtin: Callable[[], Iterable[T]]):
        self._builtin = builtin
        self._items: dict[str, T] = {}

    def items(self) -> dict[str, T]:
        """The table, name -> thing (the built-in ones made on first use)."""
        if not self._items:
            for x in self._builtin():
                self._items[x.name] = x   # type: ignore[attr-defined]
        return self._items

    def all(self) -> list[T]:
        """Every thing, in listing order."""
        return list(self.items().values())

    def register(self, item: T) -> None:
        """Add a thing (a later one with the same name replaces it): for plugins and tests."""
        self.items()[item.name] = item   # type: ignore[attr-defined]

    def unregister(self, name: str) -> None:
        self.items().pop(name, None)
