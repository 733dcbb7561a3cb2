"""The one place numba is configured.

Kernels are compiled lazily on first call (never at import, so ``structkit --help`` is instant)
and cached on disk so the second run of a command does not recompile. Set
``STRUCTKIT_NO_CACHE=1`` for read-only installs where the cache cannot be written.
"""
from __future__ import annotations

import os

from numba import njit as _njit

CACHE = os.environ.get("STRUCTKIT_NO_CACHE", "") in ("", "0")


def njit(fn=None, **kwargs):
    """``numba.njit`` with structkit's defaults (on-disk cache unless disabled)."""
    kwargs.setdefault("cache", CACHE)
    kwargs.setdefault("nogil", True)
    if fn is None:
        return lambda f: _njit(**kwargs)(f)
    return _njit(**kwargs)(fn)
