"""Arc-standard shift-reduce dependency parsing with lookahead search (numba).

The transition system of Nivre (2004) as the paper's Figure 1 uses it: a stack and a queue of
token indices 1..n; ``shift`` moves the queue's front onto the stack; ``reduceL`` makes the
second item s1 a dependent of the top s0 (s1 leaves the stack); ``reduceR`` makes s0 a
dependent of s1 (s0 leaves). Parsing ends with an empty queue and one item on the stack, the
root (head 0): every parse is a projective tree with exactly one root.

A state is the arrays ``stack``, ``heads``, ``lc``/``rc`` (leftmost/rightmost child so far, 0 if
none) plus the stack size and the queue front, changed in place by ``apply`` and restored by
``undo`` so the depth-first lookahead search never copies a state. The score of an action in a
state is the sum of ``W[h, action]`` over the hashed Huang & Sagae (2010) features ``h`` of the
state (``features``, which unrolls the one table ``TEMPLATES``); a path's score is the sum over its actions, computed incrementally.

Sentence arrays: ``words``/``tags`` hold ids for tokens 1..n at ``words[base + i - 1]``; id 0
stands for "no such item" and 1 for an unknown word or tag.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.jit import njit
from structkit.lookahead import weigh_action
from structkit.offsets import max_length, span  # noqa: F401 (span: the parse kernels' too)
from structkit.parse.templates import unroll

SHIFT, LEFT, RIGHT = 0, 1, 2
N_ACTIONS = 3
ACTION_NAMES = ("shift", "reduceL", "reduceR")

# ---- the feature templates: the one table ------------------------------------------------------
# The atoms (0 = no such item): s0/s1/s2 = the stack's top three, q0/q1/q2 = the queue's first
# three; w/t = word/tag id; lct/rct = the tag of the leftmost/rightmost child; dist = s0 - s1
# capped at 5, 6 when >= 10 (0 unless both exist). In the order ``_atoms`` returns them.
ATOMS = ("s0w", "s0t", "s1w", "s1t", "s2t", "q0w", "q0t", "q1t", "q2t",
         "s0lct", "s0rct", "s1lct", "s1rct", "dist")
# Template k (its id in the hash) is TEMPLATES[k], its atoms in hashing order (unused ones 0):
# Huang & Sagae (2010) Table 1, plus the s0-s1 distance. ``features``, ``structkit dump`` and
# tests read this table.
TEMPLATES = (
    # (1) unigrams
    ("s0w",), ("s0t",), ("s0w", "s0t"), ("s1w",), ("s1t",), ("s1w", "s1t"),
    ("q0w",), ("q0t",), ("q0w", "q0t"),
    # (2) bigrams
    ("s0w", "s1w"), ("s0t", "s1t"), ("s0t", "q0t"), ("s0w", "s0t", "s1t"), ("s0t", "s1w", "s1t"),
    ("s0w", "s1w", "s1t"), ("s0w", "s0t", "s1w"), ("s0w", "s0t", "s1w", "s1t"),
    # (3) trigrams
    ("s0t", "q0t", "q1t"), ("s1t", "s0t", "q0t"), ("s0w", "q0t", "q1t"), ("s1t", "s0w", "q0t"),
    # (4) children
    ("s1t", "s1lct", "s0t"), ("s1t", "s1rct", "s0t"), ("s1t", "s0t", "s0rct"),
    ("s1t", "s1lct", "s0w"), ("s1t", "s1rct", "s0w"), ("s1t", "s0w", "s0lct"),
    # (5) stack trigram
    ("s2t", "s1t", "s0t"),
    # distance between s0 and s1, the queue's tag trigram and a bias (action prior)
    ("dist", "s0t", "s1t"), ("dist", "s0w", "s1w"), ("dist",), ("q0t", "q1t", "q2t"), (),
)
N_TEMPLATES = len(TEMPLATES)


# ---- arrays that travel together through the kernels -----------------------------------------
State = namedtuple("State", ["stack", "heads", "lc", "rc"])
State.__doc__ = """The arrays of a parser state (indexed by token 1..n; ``stack[:sp]`` live). The
stack size ``sp`` and the queue front ``b`` change at every action, so kernels take and return
them as plain scalars next to the state."""

Sentence = namedtuple("Sentence", ["words", "tags", "base", "n"])
Sentence.__doc__ = """One sentence as the feature kernels read it: corpus word/tag id arrays, the
sentence's first token ``base`` (token i at ``words[base + i - 1]``) and its length n."""

Treebank = namedtuple("Treebank", ["offsets", "words", "tags", "heads"])
Treebank.__doc__ = """An encoded treebank: sentence offsets, word/tag ids and gold heads per token."""

HashedWeights = namedtuple("HashedWeights", ["W", "U", "mask"])
HashedWeights.__doc__ = """Hashed weights W[mask + 1, N_ACTIONS], their averaging accumulator U
(a (0, N_ACTIONS) placeholder when only parsing) and the hash mask."""

Scratch = namedtuple("Scratch", ["feats", "scores", "acts", "olds", "acc", "path", "path_gold",
                                 "path_best"])
Scratch.__doc__ = """Per-level buffers of the lookahead search: feature ids feats[level], action
scores scores[level], the action tried and its undo value (acts/olds), the path score acc, the
best path found (path) and ``decide``'s continuations of the gold and the chosen action."""


# ---- the transition system ----------------------------------------------------------------
@njit
def legal(action, sp, b, n):
    """Whether ``action`` can be applied with stack size sp and queue front b (1-based)."""
    if action == SHIFT:
        return b <= n
    return sp >= 2


@njit
def is_final(sp, b, n):
    return b > n and sp == 1


@njit
def apply(action, st, sp, b):
    """Apply an action to the state in place; returns (sp, b, undo) where undo restores lc/rc."""
    stack, heads, lc, rc = st.stack, st.heads, st.lc, st.rc
    if action == SHIFT:
        stack[sp] = b
        return sp + 1, b + 1, 0
    s0 = stack[sp - 1]
    s1 = stack[sp - 2]
    if action == LEFT:
        heads[s1] = s0
        old = lc[s0]
        if old == 0 or s1 < old:
            lc[s0] = s1
        stack[sp - 2] = s0
        return sp - 1, b, old
    heads[s0] = s1
    old = rc[s1]
    if s0 > old:
        rc[s1] = s0
    return sp - 1, b, old


@njit
def undo(action, st, sp, b, old):
    """Undo ``apply`` (given the state after it and its undo value); returns (sp, b)."""
    stack, heads, lc, rc = st.stack, st.heads, st.lc, st.rc
    if action == SHIFT:
        return sp - 1, b - 1
    if action == LEFT:
        s0 = stack[sp - 1]
        # reduceL attached s1 left of all earlier left children of s0, so lc[s0] is s1
        s1 = lc[s0]
        stack[sp - 1] = s1
        stack[sp] = s0
        heads[s1] = -1
        lc[s0] = old
        return sp + 1, b
    s1 = stack[sp - 1]
    s0 = rc[s1]  # reduceR attached s0 right of all earlier right children of s1
    stack[sp] = s0
    heads[s0] = -1
    rc[s1] = old
    return sp + 1, b


@njit
def oracle(st, sp, b, n, gold, pending):
    """Static arc-standard oracle: reduceL if s1's gold head is s0; reduceR if s0's gold head is
    s1 and s0 has all its dependents; else shift. Returns -1 when no action is right (the gold
    tree is not reachable: non-projective, or several roots)."""
    stack = st.stack
    if sp >= 2:
        s0 = stack[sp - 1]
        s1 = stack[sp - 2]
        if gold[s1] == s0 and pending[s1] == 0:
            return LEFT
        if gold[s0] == s1 and pending[s0] == 0:
            return RIGHT
    if b <= n:
        return SHIFT
    return -1


# ---- features -------------------------------------------------------------------------------
@njit
def _mix(h, v):
    h = (h ^ v) * 1099511628211
    return h ^ (h >> 29)


@njit
def _hash(t, a, b, c, d, mask):
    h = _mix(_mix(_mix(_mix(_mix(1469598103934665603, t), a), b), c), d)
    return h & mask


@njit(inline="always")
def _atoms(st, sp, b, sent):
    """The atoms of a state, in the order of ``ATOMS`` (inlined into ``features``)."""
    stack, lc, rc = st.stack, st.lc, st.rc
    words, tags, base, n = sent.words, sent.tags, sent.base, sent.n
    s0 = stack[sp - 1] if sp >= 1 else 0
    s1 = stack[sp - 2] if sp >= 2 else 0
    s2 = stack[sp - 3] if sp >= 3 else 0
    q0 = b if b <= n else 0
    q1 = b + 1 if b + 1 <= n else 0
    q2 = b + 2 if b + 2 <= n else 0
    s0lc = lc[s0] if s0 else 0
    s0rc = rc[s0] if s0 else 0
    s1lc = lc[s1] if s1 else 0
    s1rc = rc[s1] if s1 else 0
    dist = 0
    if s0 and s1:
        dist = min(s0 - s1, 5) if s0 - s1 < 10 else 6
    return (words[base + s0 - 1] if s0 else 0, tags[base + s0 - 1] if s0 else 0,
            words[base + s1 - 1] if s1 else 0, tags[base + s1 - 1] if s1 else 0,
            tags[base + s2 - 1] if s2 else 0,
            words[base + q0 - 1] if q0 else 0, tags[base + q0 - 1] if q0 else 0,
            tags[base + q1 - 1] if q1 else 0, tags[base + q2 - 1] if q2 else 0,
            tags[base + s0lc - 1] if s0lc else 0, tags[base + s0rc - 1] if s0rc else 0,
            tags[base + s1lc - 1] if s1lc else 0, tags[base + s1rc - 1] if s1rc else 0,
            dist)


# ``_emit(A, mask, out)``: template k's hash into out[k], written out.
_emit = unroll("_emit", "A, mask, out", "_hash({t}, {atoms}, mask)",
               [(k, None, [f"A[{ATOMS.index(a)}]" for a in atoms] + ["0"] * (4 - len(atoms)))
                for k, atoms in enumerate(TEMPLATES)], globals(), __file__)


@njit
def features(st, sp, b, sent, mask, out):
    """The hashed feature ids of a state: template k's into out[k] (``TEMPLATES``)."""
    _emit(_atoms(st, sp, b, sent), mask, out)


@njit
def action_scores(feats, W, out):
    """out[a] = sum over feature ids of W[h, a]."""
    for a in range(N_ACTIONS):
        out[a] = 0.0
    for i in range(feats.shape[0]):
        row = W[feats[i]]
        for a in range(N_ACTIONS):
            out[a] += row[a]


# ---- lookahead search (Figure 2) -------------------------------------------------------------
@njit
def search(d, st, sp, b, sent, w, buf):
    """SEARCH(d, S) of Figure 2, depth first and without recursion: the best score of the next
    d actions from the current state (a final state ends a path early; 0 if d = 0). The first
    best path in action order is written to ``buf.path[:d]`` (-1 where the parse ended earlier).
    ``buf``'s feats/scores/acts/olds/acc are per-level scratch; the state is restored."""
    n = sent.n
    W, mask = w.W, w.mask
    feats, scores, acts, olds, acc, path = buf.feats, buf.scores, buf.acts, buf.olds, buf.acc, buf.path
    for j in range(d):
        path[j] = -1
    if d == 0 or is_final(sp, b, n):
        return 0.0
    best = -np.inf
    j = 0
    acc[0] = 0.0
    features(st, sp, b, sent, mask, feats[0])
    action_scores(feats[0], W, scores[0])
    acts[0] = -1
    while True:
        a = acts[j] + 1
        while a < N_ACTIONS and not legal(a, sp, b, n):
            a += 1
        acts[j] = a
        if a >= N_ACTIONS:  # this level is done: back up
            if j == 0:
                break
            j -= 1
            sp, b = undo(acts[j], st, sp, b, olds[j])
            continue
        v = acc[j] + scores[j, a]
        sp, b, olds[j] = apply(a, st, sp, b)
        if j + 1 == d or is_final(sp, b, n):  # a leaf
            if v > best:
                best = v
                for i in range(j + 1):
                    path[i] = acts[i]
                for i in range(j + 1, d):
                    path[i] = -1
            sp, b = undo(a, st, sp, b, olds[j])
            continue
        j += 1
        acc[j] = v
        features(st, sp, b, sent, mask, feats[j])
        action_scores(feats[j], W, scores[j])
        acts[j] = -1
    return best


@njit
def decide(depth, margin, gold, st, sp, b, sent, w, buf):
    """Figure 3's choice: each legal action scored by its own score plus SEARCH(depth) after
    it; the margin is subtracted from the gold action's (gold < 0: plain search). Returns
    (chosen, plain best); buf.path_gold/buf.path_best get the continuations (-1 padded). Level
    0 of feats/scores is this state's; the search uses levels 1.."""
    n = sent.n
    feats, scores, path, path_gold, path_best = buf.feats, buf.scores, buf.path, buf.path_gold, buf.path_best
    features(st, sp, b, sent, w.mask, feats[0])
    action_scores(feats[0], w.W, scores[0])
    inner = Scratch(feats[1:], scores[1:], buf.acts, buf.olds, buf.acc, path, path_gold, path_best)
    best = (-np.inf, -1, -np.inf, -1)  # (chosen score, chosen action, plain score, plain action)
    for a in range(N_ACTIONS):
        if not legal(a, sp, b, n):
            continue
        sp1, b1, old = apply(a, st, sp, b)
        v = scores[0, a] + search(depth, st, sp1, b1, sent, w, inner)
        undo(a, st, sp1, b1, old)
        best = weigh_action(a, v, gold, margin, path, depth, path_gold, path_best, best)
    _, best_a, _, plain_a = best
    return best_a, plain_a


@njit
def _buffers(maxlen, depth):
    """A state for sentences of up to maxlen tokens and the search's scratch for ``depth``."""
    st = State(np.zeros(maxlen + 2, dtype=np.int64), np.full(maxlen + 2, -1, dtype=np.int64),
               np.zeros(maxlen + 2, dtype=np.int64), np.zeros(maxlen + 2, dtype=np.int64))
    buf = Scratch(np.zeros((depth + 2, N_TEMPLATES), dtype=np.int64),
                  np.zeros((depth + 2, N_ACTIONS)),
                  np.zeros(depth + 1, dtype=np.int64),  # the search's acts
                  np.zeros(depth + 1, dtype=np.int64),  # and olds
                  np.zeros(depth + 1),
                  np.full(depth + 1, -1, dtype=np.int64),
                  np.full(depth + 1, -1, dtype=np.int64),
                  np.full(depth + 1, -1, dtype=np.int64))
    return st, buf


@njit
def _reset(n, st):
    heads, lc, rc = st.heads, st.lc, st.rc
    for i in range(n + 1):
        heads[i] = -1
        lc[i] = 0
        rc[i] = 0


@njit
def parse_corpus(offsets, words, tags, W, mask, depth, out):
    """Parse every sentence with lookahead search; writes heads (0 = root) into out."""
    maxlen = max_length(offsets)
    st, buf = _buffers(maxlen, depth)
    w = HashedWeights(W, np.zeros((0, N_ACTIONS)), mask)
    heads, stack = st.heads, st.stack
    for s in range(len(offsets) - 1):
        base, n = span(offsets, s)
        if n == 0:
            continue
        sent = Sentence(words, tags, base, n)
        _reset(n, st)
        sp = 0
        b = 1
        while not is_final(sp, b, n):
            a, _ = decide(depth, 0.0, -1, st, sp, b, sent, w, buf)
            sp, b, _ = apply(a, st, sp, b)
        heads[stack[0]] = 0
        for i in range(1, n + 1):
            out[base + i - 1] = heads[i]


@njit
def start_gold(gold_heads, base, n, st, gold, pending):
    """Reset the state for a sentence and load its gold heads (gold[1..n]) and the number of
    gold dependents each token still waits for (pending), as the oracle needs them."""
    _reset(n, st)
    for i in range(n + 1):
        pending[i] = 0
    for i in range(1, n + 1):
        gold[i] = gold_heads[base + i - 1]
        if gold[i] > 0:
            pending[gold[i]] += 1


@njit
def apply_gold(a, st, sp, b, pending):
    """Apply an oracle action, counting the attached dependent off its head's pending count."""
    if a == LEFT:
        pending[st.stack[sp - 1]] -= 1
    elif a == RIGHT:
        pending[st.stack[sp - 2]] -= 1
    sp, b, _ = apply(a, st, sp, b)
    return sp, b


@njit
def oracle_actions(offsets, gold_heads, out_actions, ok):
    """The oracle's action sequence per sentence (2n - 1 actions, at 2 * offsets[s] - s);
    ok[s] = False where the gold tree cannot be built (non-projective or several roots)."""
    maxlen = max_length(offsets)
    st, _ = _buffers(maxlen, 0)
    stack = st.stack
    gold = np.zeros(maxlen + 2, dtype=np.int64)
    pending = np.zeros(maxlen + 2, dtype=np.int64)
    for s in range(len(offsets) - 1):
        base, n = span(offsets, s)
        start_gold(gold_heads, base, n, st, gold, pending)
        sp = 0
        b = 1
        k = 2 * base - s
        good = True
        steps = 0
        while not is_final(sp, b, n):
            a = oracle(st, sp, b, n, gold, pending)
            if a < 0 or steps >= 2 * n - 1:
                good = False
                break
            sp, b = apply_gold(a, st, sp, b, pending)
            out_actions[k + steps] = a
            steps += 1
        if good and gold[stack[0]] != 0:
            good = False
        ok[s] = good


@njit
def hash_slots(t, atoms, mask, out):
    """out[i] = the weight row of template t's feature with the atom values atoms[i, :4] (the
    hash ``features`` computes; unused atoms 0): naming hashed rows (``structkit dump``)."""
    for i in range(atoms.shape[0]):
        out[i] = _hash(t, atoms[i, 0], atoms[i, 1], atoms[i, 2], atoms[i, 3], mask)
