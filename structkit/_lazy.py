"""Module attributes imported on first use (PEP 562), so that ``import structkit`` stays
instant: numpy and numba load only when a public name is touched."""
from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_getattr(module_name: str, table: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]`` and caches the value in
    ``namespace`` (the module's globals)."""
    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value
    return __getattr__
