"""The schedule of a LaRank pass (Bordes et al. 2008, Section 4.2; Mancev & Todorovic's
Algorithm 3), shared by OLaRank (``structkit.sequence.learn.olarank``) and k-best LaRank
(``structkit.sequence.learn.larank``): each new pattern's turn is one PROCESSNEW on it, then
n_R REPROCESS steps, each one PROCESSOLD and n_optimize OPTIMIZE on patterns drawn at random
with numba's generator.

A pass may be one kernel call or several on consecutive slices of its order
(``structkit.learn.pieces``): the first seeds the generator with the pass's seed, the others
get -1 and continue its stream, so the pieces draw what one call would. The kernels of a pass
can record its dual objective after every operation in a ``trace`` array (empty: no trace).
"""
from __future__ import annotations

import numpy as np

from structkit.jit import njit

NEW, OLD, OPTIMIZE = 0, 1, 2  # PROCESSNEW, PROCESSOLD, OPTIMIZE


@njit
def turn_length(n_reprocess, n_optimize):
    """The operations of a new pattern's turn: 1 + n_R (1 + n_optimize)."""
    return 1 + n_reprocess * (1 + n_optimize)


@njit
def operation(op, n_optimize):
    """What the op-th operation of a turn (0 .. ``turn_length`` - 1) is: NEW first, then per
    REPROCESS one OLD and n_optimize OPTIMIZE."""
    if op == 0:
        return NEW
    return OLD if (op - 1) % (1 + n_optimize) == 0 else OPTIMIZE


@njit
def start_pass(seed, trace):
    """A kernel's start of (a piece of) a pass: numba's generator seeded with ``seed``, or
    continued when it is negative. Returns whether the dual is traced (``trace`` not empty)."""
    if seed >= 0:
        np.random.seed(seed)
    return trace.shape[0] > 0
