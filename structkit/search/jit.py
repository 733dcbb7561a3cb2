"""The one place numba is configured.

Kernels are compiled lazily on first call (never at import, so ``structkit --help`` is instant)
and cached on disk so the second run of a command does not recompile. Set
``STRUCTKIT_NO_CACHE=1`` for read-only installs where the cache cannot be written.
"""
from __future__ import annotations

import os

from numba import njit as _njit

CACHE = os.environ.get("STRUCTKIT_NO_CACHE", "") in ("", "0")


def _compile(fn, kwargs):
    """``_njit(**kwargs)(fn)``; where the on-disk cache cannot be written (a read-only install
    with no writable HOME or __pycache__: numba's "no locator available"), caching is turned
    off for the rest of the run, with one notice on stderr."""
    global CACHE
    if not kwargs.get("cache"):
        return _njit(**kwargs)(fn)
    try:
        return _njit(**kwargs)(fn)
    except RuntimeError as e:
        if "cannot cache" not in str(e):
            raise
        if CACHE:
            CACHE = False
            import sys
            print("structkit: note: numba cannot write its cache here (read-only install or "
                  "HOME); compiling without it (set NUMBA_CACHE_DIR to a writable folder, or "
                  "STRUCTKIT_NO_CACHE=1 to silence this)", file=sys.stderr)
        return _njit(**{**kwargs, "cache": False})(fn)


def njit(fn=None, **kwargs):
    """``numba.njit`` with structkit's defaults (on-disk cache unless disabled or unwritable)."""
    if "cache" not in kwargs:
        kwargs["cache"] = CACHE
    kwargs.setdefault("nogil", True)
    if fn is None:
        return lambda f: _compile(f, kwargs)
    return _compile(fn, kwargs)
