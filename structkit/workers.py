"""Forked worker processes that end with the process that started them (``pool``): the batch
commands' ``--jobs`` (``structkit.batch``) and ``pipe(..., jobs=N)`` (``structkit.components``)."""
from __future__ import annotations

import concurrent.futures as cf
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time


def worker_init(parent: int) -> None:
    """A worker leaves Ctrl-C to its parent (which stops the pool and cleans up) instead of
    printing its own traceback; SIGTERM and SIGHUP end it as the default does. A worker whose
    parent is gone (ended by a signal, even SIGKILL, which runs no cleanup) exits instead of
    living on as an orphan: Linux sends it SIGTERM when its parent dies (PR_SET_PDEATHSIG), and a
    watcher thread checks every half second that its parent is still the one that started it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass  # the watcher below still ends it
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="structkit-parent-watch", daemon=True).start()


def stop(executor: cf.ProcessPoolExecutor, abort: bool = False) -> None:
    """Shut a pool down. When ``abort`` (an error, Ctrl-C, SIGTERM in the parent), its workers are
    ended first: the blocks in flight are not waited for (``annotate -j 2`` took 25-54 s to stop
    on a signal, where ``-j 1`` took 0.2 s); they hold no file, their results go to the parent."""
    if abort:
        for p in list((getattr(executor, "_processes", None) or {}).values()):
            try:
                p.terminate()
            except (OSError, ValueError, AttributeError):
                pass
        # A worker ended while writing its result leaves part of a message in the result pipe,
        # and the pool's manager thread waits for the rest for ever (shutdown then never
        # returned: seen in the tests). This process never writes there: with its own write
        # end closed, the pipe ends (EOF) once the workers are gone, and the pool counts itself
        # broken and shuts down.
        writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
        if writer is not None:
            writer.close()
    executor.shutdown(wait=True, cancel_futures=True)


def pool(jobs: int) -> cf.ProcessPoolExecutor:
    """``jobs`` forked workers (the parent's memory, models included, shared, not pickled), each
    set up by ``worker_init``."""
    return cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                                  initializer=functools.partial(worker_init, os.getpid()))
