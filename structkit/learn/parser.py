"""The lookahead margin perceptron (Tsuruoka et al. 2011, Figure 3) for the arc-standard
parser: the learner walks the oracle's action sequence; at each state every legal action is
scored with a depth-D lookahead search, the margin C is subtracted from the oracle action's
score, and when another action wins, w += phi(S*_c) - phi(S*) over the actions of the two
best paths (each state's hashed features conjoined with the action taken there). Averaged;
each decision is one example."""
from __future__ import annotations

import numpy as np

from structkit.search.arcstandard import (N_TEMPLATES, _buffers, apply, apply_gold, decide,
                                          features, is_final, oracle, start_gold, undo)
from structkit.search.jit import njit


@njit
def _update_path(sign, first, cont, depth, stack, sp, b, n, heads, lc, rc, words, tags, base,
                 W, U, c, mask, feats, acts, olds):
    """Add sign * phi of the path (first, cont...) from the current state, then restore it."""
    m = 0
    a = first
    while True:
        features(stack, sp, b, n, lc, rc, words, tags, base, mask, feats)
        for i in range(N_TEMPLATES):
            h = feats[i]
            W[h, a] += sign
            U[h, a] += sign * c
        sp, b, old = apply(a, stack, sp, b, heads, lc, rc)
        acts[m] = a
        olds[m] = old
        m += 1
        if m > depth or cont[m - 1] < 0 or is_final(sp, b, n):
            break
        a = cont[m - 1]
    for j in range(m - 1, -1, -1):
        sp, b = undo(acts[j], stack, sp, b, heads, lc, rc, olds[j])


@njit
def parser_epoch(offsets, words, tags, gold_heads, order, trainable, W, U, mask, depth, margin, c):
    """One epoch over the trainable sentences in ``order``. Returns (c, mistakes, updates)."""
    maxlen = 1
    for s in range(len(offsets) - 1):
        maxlen = max(maxlen, offsets[s + 1] - offsets[s])
    stack, heads, lc, rc, feats, scores, scratch, acc, path = _buffers(maxlen, depth)
    gold = np.zeros(maxlen + 2, dtype=np.int64)
    pending = np.zeros(maxlen + 2, dtype=np.int64)
    pg = np.full(depth + 1, -1, dtype=np.int64)
    pb = np.full(depth + 1, -1, dtype=np.int64)
    fbuf = np.zeros(N_TEMPLATES, dtype=np.int64)
    acts = np.zeros(depth + 2, dtype=np.int64)
    olds = np.zeros(depth + 2, dtype=np.int64)
    mistakes = 0
    updates = 0
    for s in order:
        if not trainable[s]:
            continue
        base = offsets[s]
        n = offsets[s + 1] - base
        start_gold(gold_heads, base, n, heads, lc, rc, gold, pending)
        sp = 0
        b = 1
        while not is_final(sp, b, n):
            g = oracle(stack, sp, b, n, gold, pending)
            best, plain = decide(depth, margin, g, stack, sp, b, n, heads, lc, rc, words, tags,
                                 base, W, mask, feats, scores, scratch, acc, path, pg, pb)
            if plain != g:
                mistakes += 1
            if best != g:
                updates += 1
                _update_path(1.0, g, pg, depth, stack, sp, b, n, heads, lc, rc, words, tags,
                             base, W, U, c, mask, fbuf, acts, olds)
                _update_path(-1.0, best, pb, depth, stack, sp, b, n, heads, lc, rc, words, tags,
                             base, W, U, c, mask, fbuf, acts, olds)
            sp, b = apply_gold(g, stack, sp, b, heads, lc, rc, pending)
            c += 1.0
    return c, mistakes, updates
