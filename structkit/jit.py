"""The one place numba is configured.

Kernels are compiled lazily on first call (never at import, so ``structkit --help`` is instant)
and cached on disk so the second run of a command does not recompile. Set
``STRUCTKIT_NO_CACHE=1`` for read-only installs where the cache cannot be written.

numba itself is imported only when a kernel is first called (its import costs 0.35-0.45 s):
``njit`` returns a :class:`LazyKernel`, which builds the numba dispatcher on first use. A kernel
that calls another finds it in its module's globals; before the caller is compiled, the lazy
callees it names there are swapped for their dispatchers (so numba sees, and can inline, them),
and numba is also taught to type a ``LazyKernel`` as its dispatcher.
"""
from __future__ import annotations

import os
import threading

CACHE = os.environ.get("STRUCTKIT_NO_CACHE", "") in ("", "0")

_lock = threading.RLock()
_typeof_registered = False


def _import_numba() -> None:
    """Import numba and its CPU target's array functions without scipy: numba's arraymath asks
    at import whether scipy's BLAS is there (``_HAVE_BLAS``), importing scipy.linalg (0.1 s of
    CPU) for the few array functions that would use it (np.dot and the like; no structkit kernel
    does). Where scipy is not imported yet it is hidden during that import, so the answer is
    "no" and those functions take numba's loops; ``np.dot`` in a kernel still imports scipy
    when it is compiled. Imported here once, the module is then numba's for good."""
    import sys

    if "numba.np.arraymath" in sys.modules:
        return
    hide = "scipy" not in sys.modules
    if hide:
        sys.modules["scipy"] = None   # `import scipy...` raises ImportError meanwhile
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if hide and sys.modules.get("scipy", 0) is None:
            del sys.modules["scipy"]


def _register_typeof() -> None:
    global _typeof_registered
    if _typeof_registered:
        return
    _import_numba()
    from numba.extending import typeof_impl

    @typeof_impl.register(LazyKernel)
    def _typeof_lazy(val, c):
        return typeof_impl(val.dispatcher, c)

    _typeof_registered = True


def _code_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


class LazyKernel:
    """A numba kernel compiled on first call; calls and attributes (``py_func``,
    ``signatures``...) go to the numba dispatcher, created (and numba imported) on first use."""

    def __init__(self, fn, kwargs: dict):
        self.py_func = fn
        self._kwargs = kwargs
        self._dispatcher = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    @property
    def dispatcher(self):
        d = self._dispatcher
        if d is None:
            with _lock:
                if self._dispatcher is None:
                    _register_typeof()
                    g = self.py_func.__globals__
                    for name in _code_names(self.py_func.__code__):
                        v = g.get(name)
                        if isinstance(v, (LazyKernel, LazyIntrinsic)):
                            g[name] = v.dispatcher
                    self._dispatcher = _compile(self.py_func, self._kwargs)
                d = self._dispatcher
        return d

    def __call__(self, *args, **kwargs):
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_dispatcher", "_kwargs", "py_func"):
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        return f"<lazy numba kernel {self.__qualname__}>"


class LazyIntrinsic:
    """A numba intrinsic built (numba imported) when the first kernel that names it is
    compiled: ``build()`` returns it. Kernels find it in their module's globals as they find
    lazy kernels."""

    def __init__(self, build):
        self._build = build
        self._intrinsic = None
        self.__name__ = build.__name__
        self.__doc__ = build.__doc__

    @property
    def dispatcher(self):
        with _lock:
            if self._intrinsic is None:
                self._intrinsic = self._build()
        return self._intrinsic

    def __repr__(self) -> str:
        return f"<lazy numba intrinsic {self.__name__}>"


def _build_prefetch():
    """``prefetch(a, i)``: a hint to fetch the cache line of a[i] (1-D array) for reading
    (LLVM's llvm.prefetch, kept in all cache levels). No load happens, so i may be out of
    range; it changes no result, only when memory is read."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, arr, idx):
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                                "llvm.prefetch.p0i8")
            # read (0), keep in every cache level (3), data cache (1)
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                              ir.Constant(i32, 1)])
            return context.get_dummy_value()

        if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
            return None
        return types.void(arr, idx), codegen

    return prefetch


prefetch = LazyIntrinsic(_build_prefetch)


def _njit(**kwargs):
    """``numba.njit``, imported on first use."""
    from numba import njit

    return njit(**kwargs)


def _compile(fn, kwargs):
    """``_njit(**kwargs)(fn)``; where the on-disk cache cannot be written (a read-only install
    with no writable HOME or __pycache__: numba's "no locator available"), caching is turned
    off for the rest of the run, with one notice on stderr."""
    global CACHE
    if not kwargs.get("cache") or not CACHE:  # off, or found unwritable by an earlier kernel
        return _njit(**{**kwargs, "cache": False})(fn)
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
    """``numba.njit`` with structkit's defaults (on-disk cache unless disabled, nogil), made
    lazy: numba is imported and the dispatcher built when the kernel is first called."""
    kwargs.setdefault("cache", CACHE)
    kwargs.setdefault("nogil", True)
    if fn is None:
        return lambda f: LazyKernel(f, dict(kwargs))
    return LazyKernel(fn, dict(kwargs))


def load_numba() -> None:
    """Import numba now (as the first kernel call would): for a long-running process (the
    server) whose first small inputs would otherwise take the numpy paths meant for one-shot
    commands (those paths are chosen while numba is not loaded)."""
    with _lock:
        _register_typeof()


def numba_loaded() -> bool:
    """Whether numba has been imported in this process (a kernel then costs no import)."""
    import sys

    return "numba" in sys.modules
