"""The lookahead margin perceptron (Tsuruoka et al. 2011, Figure 3) for the arc-standard
parser: the learner walks the oracle's action sequence; at each state every legal action is
scored with a depth-D lookahead search, the margin C is subtracted from the oracle action's
score, and when another action wins, w += phi(S*_c) - phi(S*) over the actions of the two
best paths (each state's hashed features conjoined with the action taken there). Averaged;
each decision is one example."""
from __future__ import annotations

import numpy as np

from structkit.parse.arcstandard import (N_TEMPLATES, Sentence, _buffers, apply, apply_gold, decide,
                                          features, is_final, max_length, oracle, span, start_gold, undo)
from structkit.jit import njit


@njit
def _update_path(sign, first, cont, c, st, sp, b, sent, w, buf):
    """Add sign * phi of the path (first, cont...) from the current state to the weights w
    (and c times it to their accumulator), then restore the state. The path ends after
    ``len(cont)`` further actions, at a -1 in cont, or at a final state. Scratch: buf.feats[0],
    buf.acts, buf.olds (length >= len(cont) + 1)."""
    W, U, mask = w.W, w.U, w.mask
    feats, acts, olds = buf.feats[0], buf.acts, buf.olds
    n = sent.n
    depth = cont.shape[0]
    m = 0
    a = first
    while True:
        features(st, sp, b, sent, mask, feats)
        for i in range(N_TEMPLATES):
            h = feats[i]
            W[h, a] += sign
            U[h, a] += sign * c
        sp, b, old = apply(a, st, sp, b)
        acts[m] = a
        olds[m] = old
        m += 1
        if m > depth or cont[m - 1] < 0 or is_final(sp, b, n):
            break
        a = cont[m - 1]
    for j in range(m - 1, -1, -1):
        sp, b = undo(acts[j], st, sp, b, olds[j])


@njit
def parser_epoch(X, order, trainable, w, c, depth, margin):
    """One epoch over the trainable sentences of the ``Treebank`` X in ``order``, updating the
    ``HashedWeights`` w (W and the accumulator U). Returns (c, mistakes, updates)."""
    offsets, words, tags, gold_heads = X
    maxlen = max_length(offsets)
    st, buf = _buffers(maxlen, depth)
    pg, pb = buf.path_gold, buf.path_best
    gold = np.zeros(maxlen + 2, dtype=np.int64)
    pending = np.zeros(maxlen + 2, dtype=np.int64)
    mistakes = 0
    updates = 0
    for s in order:
        if not trainable[s]:
            continue
        base, n = span(offsets, s)
        sent = Sentence(words, tags, base, n)
        start_gold(gold_heads, base, n, st, gold, pending)
        sp = 0
        b = 1
        while not is_final(sp, b, n):
            g = oracle(st, sp, b, n, gold, pending)
            best, plain = decide(depth, margin, g, st, sp, b, sent, w, buf)
            if plain != g:
                mistakes += 1
            if best != g:
                updates += 1
                _update_path(1.0, g, pg[:depth], c, st, sp, b, sent, w, buf)
                _update_path(-1.0, best, pb[:depth], c, st, sp, b, sent, w, buf)
            sp, b = apply_gold(g, st, sp, b, pending)
            c += 1.0
    return c, mistakes, updates
