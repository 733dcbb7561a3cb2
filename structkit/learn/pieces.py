"""Epochs in pieces, so that a signal is answered within a fraction of a second.

A numba kernel that runs a whole epoch holds the interpreter until it returns: SIGTERM or
Ctrl-C waited for the end of the epoch (15 s on a large treebank). The epoch kernels take the
sentence order as an array and treat its sentences one after another, carrying all their state
(weights, the averaging counter, working sets) in their arguments and return values; so running
a kernel on consecutive slices of the order, feeding each call's returned state to the next,
gives exactly the result of one call over the whole order. ``run_in_pieces`` does that, with
slices sized so that a call takes about ``TARGET_SECONDS``: Python's signal handlers run
between calls. The size adapts to the measured time only; the result never depends on it.

Learners whose kernels draw random numbers inside a pass (LaRank, OLaRank) are not cut: a
slice would restart their random stream and change the model.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

TARGET_SECONDS = 0.1   # one call's work: signals wait at most about this long
FIRST_SENTENCES = 64   # the first slice, before any call has been timed
MAX_SENTENCES: int | None = None  # tests set a cap (e.g. 1: a call per sentence)


def run_in_pieces(order: np.ndarray, call: Callable[[np.ndarray], None]) -> int:
    """Call ``call(order[a:b])`` on consecutive slices covering ``order``; returns the number
    of calls. ``call`` carries the kernel's state from one slice to the next."""
    n = len(order)
    size = FIRST_SENTENCES if MAX_SENTENCES is None else min(FIRST_SENTENCES, MAX_SENTENCES)
    a = calls = 0
    while a < n:
        b = min(n, a + max(1, size))
        t0 = time.perf_counter()
        call(order[a:b])
        spent = time.perf_counter() - t0
        calls += 1
        done = b - a
        a = b
        if spent > 0:  # aim the next slice at TARGET_SECONDS, growing at most 4x a time
            size = int(min(4 * done, max(1, done * TARGET_SECONDS / spent)))
        else:
            size = 4 * done
        if MAX_SENTENCES is not None:
            size = min(size, MAX_SENTENCES)
    return calls


def sum_in_pieces(order: np.ndarray, call: Callable[[np.ndarray], tuple], n: int) -> list:
    """``run_in_pieces`` for an epoch kernel's counters: ``call(part)`` runs the kernel on a
    slice (carrying its state itself) and returns its ``n`` counters; returns their sums."""
    tot = [0] * n

    def piece(part: np.ndarray) -> None:
        for i, v in enumerate(call(part)):
            tot[i] += v

    run_in_pieces(order, piece)
    return tot
