"""The arc-standard parser (Tsuruoka et al. 2011, Sections 2, 3 and 4.2; Figures 1-3) against
plain-Python references on seeded random inputs, plus corpus checks and the command line.

References used below (all independent of the numba kernels except for ``features``, the
hashed Huang & Sagae feature function, which the references call to score an action):

* ``PyState``: the arc-standard transition system of Section 2 / Figure 1 in plain Python
  (stack, queue front, heads, leftmost/rightmost child), functional (apply returns a copy).
* ``py_oracle``: the static oracle, recomputing each token's pending dependents from scratch.
* ``ref_search``: Figure 2 as a recursion over the legal actions in order shift (0), reduceL
  (1), reduceR (2); a final state ends a path early; the score of a path is the sum of its
  actions' scores w . phi(state, action), added in path order; the first strictly better leaf
  wins.
* ``ref_decide``: Figure 3's choice (margin subtracted from the gold action's backed-up score).
* ``ref_epoch``: Figure 3 at every state of the oracle path: w += phi(S*_c) - phi(S*) over the
  (state, action) features of both paths, U += c * update, c += 1 per decision.

Weights in the exact comparisons are small integers, so every sum is exact and ties (which
exercise the first-best rule) are frequent.
"""
from __future__ import annotations

import io
import itertools
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from clitools import assert_one_line_error, leftovers
from structkit.cli import main
from structkit.io.conllx import check_tree, is_projective, read_conllx
from structkit.parse.learn import parser_epoch
from structkit.parse.arcstandard import (LEFT, N_ACTIONS, N_TEMPLATES, RIGHT, SHIFT,
                                          HashedWeights, Scratch, Sentence, State, Treebank, apply,
                                          decide, features, is_final, legal, oracle_actions,
                                          parse_corpus, search, undo)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PARSE_TRAIN = str(FIXTURES / "parse_train.conll")
POS_TRAIN = str(FIXTURES / "pos_train.txt")
MASK = 2 ** 10 - 1
NO_U = np.zeros((0, N_ACTIONS))  # the accumulator placeholder of weights only parsed with


# ---- plain-Python transition system -------------------------------------------------------
class PyState:
    """An arc-standard configuration; tokens 1..n, heads -1 = not attached yet."""

    def __init__(self, n: int):
        self.n = n
        self.stack: list[int] = []
        self.b = 1
        self.heads = [-1] * (n + 1)
        self.lc = [0] * (n + 1)
        self.rc = [0] * (n + 1)

    def copy(self) -> "PyState":
        s = PyState.__new__(PyState)
        s.n, s.stack, s.b = self.n, list(self.stack), self.b
        s.heads, s.lc, s.rc = list(self.heads), list(self.lc), list(self.rc)
        return s

    def legal(self, a: int) -> bool:
        return self.b <= self.n if a == SHIFT else len(self.stack) >= 2

    def final(self) -> bool:
        return self.b > self.n and len(self.stack) == 1

    def apply(self, a: int) -> "PyState":
        assert self.legal(a)
        s = self.copy()
        if a == SHIFT:
            s.stack.append(s.b)
            s.b += 1
        elif a == LEFT:  # s1 <- s0
            s0 = s.stack.pop()
            s1 = s.stack.pop()
            s.heads[s1] = s0
            s.lc[s0] = min(s1, s.lc[s0]) if s.lc[s0] else s1
            s.stack.append(s0)
        else:  # s0 <- s1
            s0 = s.stack.pop()
            s1 = s.stack[-1]
            s.heads[s0] = s1
            s.rc[s1] = max(s0, s.rc[s1])
        return s

    def tree(self) -> list[int]:
        """Heads 1..n of a final state (the one stack item is the root)."""
        assert self.final()
        h = list(self.heads)
        h[self.stack[0]] = 0
        return h[1:]

    def arrays(self):
        """(stack, sp, b, heads, lc, rc) as the kernels hold them."""
        n = self.n
        stack = np.zeros(n + 2, dtype=np.int64)
        stack[:len(self.stack)] = self.stack
        heads = np.full(n + 2, -1, dtype=np.int64)
        heads[:n + 1] = self.heads
        lc = np.zeros(n + 2, dtype=np.int64)
        lc[:n + 1] = self.lc
        rc = np.zeros(n + 2, dtype=np.int64)
        rc[:n + 1] = self.rc
        return stack, len(self.stack), self.b, heads, lc, rc


def assert_kernel_state(py: PyState, stack, sp, b, heads, lc, rc, ctx=None):
    n = py.n
    assert (sp, b) == (len(py.stack), py.b), ctx
    assert stack[:sp].tolist() == py.stack, ctx
    assert heads[1:n + 1].tolist() == py.heads[1:], ctx
    assert lc[1:n + 1].tolist() == py.lc[1:], ctx
    assert rc[1:n + 1].tolist() == py.rc[1:], ctx


def py_oracle(st: PyState, gold: list[int]) -> int:
    """gold: heads 1..n at gold[1..n]. -1 when no action leads to the gold tree."""
    pending = [0] * (st.n + 1)
    for d in range(1, st.n + 1):
        if gold[d] > 0 and st.heads[d] == -1:
            pending[gold[d]] += 1
    if len(st.stack) >= 2:
        s0, s1 = st.stack[-1], st.stack[-2]
        if gold[s1] == s0 and pending[s1] == 0:
            return LEFT
        if gold[s0] == s1 and pending[s0] == 0:
            return RIGHT
    return SHIFT if st.b <= st.n else -1


def py_replay(n: int, actions) -> list[int] | None:
    """Heads built by an action sequence (None if it is illegal or does not end final)."""
    st = PyState(n)
    for a in actions:
        if not st.legal(a):
            return None
        st = st.apply(a)
    return st.tree() if st.final() else None


# ---- random trees ----------------------------------------------------------------------------
def random_projective_tree(rng, n: int) -> list[int]:
    """A random projective single-rooted tree (every one has non-zero probability): the root r
    heads the whole span; each side of a head is cut into random consecutive chunks, each chunk
    gets a random head attached to it, recursively."""
    heads = [0] * (n + 1)

    def side(lo, hi, h):  # tokens lo..hi (inclusive), all dependents-or-descendants of h
        i = lo
        while i <= hi:
            j = int(rng.integers(i, hi + 1))  # chunk i..j
            c = int(rng.integers(i, j + 1))
            heads[c] = h
            side(i, c - 1, c)
            side(c + 1, j, c)
            i = j + 1

    r = int(rng.integers(1, n + 1))
    heads[r] = 0
    side(1, r - 1, r)
    side(r + 1, n, r)
    return heads[1:]


def random_tree(rng, n: int, roots: int = 1) -> list[int]:
    """A random (usually non-projective for larger n) tree with ``roots`` root tokens."""
    perm = [int(x) + 1 for x in rng.permutation(n)]
    heads = [0] * n
    for k, t in enumerate(perm):
        heads[t - 1] = 0 if k < roots else perm[int(rng.integers(0, k))]
    return heads


def buildable(heads) -> bool:
    return check_tree(heads, single_root=True) is None and is_projective(heads)


def corpus_arrays(trees):
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in trees], out=offsets[1:])
    flat = np.array([h for t in trees for h in t], dtype=np.int64)
    return offsets, flat


def run_oracle(trees):
    offsets, flat = corpus_arrays(trees)
    actions = np.full(max(2 * int(offsets[-1]), 1), -7, dtype=np.int64)
    ok = np.zeros(len(trees), dtype=np.bool_)
    oracle_actions(offsets, flat, actions, ok)
    return offsets, actions, ok


# ---- 1. transition system --------------------------------------------------------------------
def test_legal_and_is_final():
    for n in range(0, 5):
        for sp in range(0, n + 1):
            for b in range(1, n + 2):
                assert legal(SHIFT, sp, b, n) == (b <= n)
                assert legal(LEFT, sp, b, n) == legal(RIGHT, sp, b, n) == (sp >= 2)
                assert is_final(sp, b, n) == (b == n + 1 and sp == 1)
                if is_final(sp, b, n):
                    assert not any(legal(a, sp, b, n) for a in range(N_ACTIONS))
    # every reachable non-final state has a legal action (no dead ends)
    assert legal(SHIFT, 0, 1, 1) and not is_final(0, 1, 1)


def test_apply_undo_restores_state_on_random_walks():
    rng = np.random.default_rng(1)
    n_checked = n_multi = 0
    for case in range(150):
        n = int(rng.integers(1, 13))
        py = PyState(n)
        stack, sp, b, heads, lc, rc = py.arrays()
        stack[:] = rng.integers(-5, 50, size=stack.shape)  # garbage above the stack pointer
        while True:
            assert_kernel_state(py, stack, sp, b, heads, lc, rc, case)
            for a in range(N_ACTIONS):
                assert legal(a, sp, b, n) == py.legal(a)
            if is_final(sp, b, n):
                assert py.final()
                break
            # every legal action: apply (matches the Python system), then undo restores
            for a in range(N_ACTIONS):
                if not legal(a, sp, b, n):
                    continue
                before = [A.copy() for A in (stack, heads, lc, rc)]
                sp1, b1, old = apply(a, State(stack, heads, lc, rc), sp, b)
                assert_kernel_state(py.apply(a), stack, sp1, b1, heads, lc, rc, (case, a))
                assert undo(a, State(stack, heads, lc, rc), sp1, b1, old) == (sp, b)
                for name, A, B in zip(("stack", "heads", "lc", "rc"), (stack, heads, lc, rc), before):
                    if name == "stack" and a == SHIFT:
                        # shift wrote the queue front into the free slot above the stack;
                        # undo leaves it there (dead storage, never read)
                        assert A[:sp].tolist() == B[:sp].tolist() and A[sp] == b
                        assert A[sp + 1:].tolist() == B[sp + 1:].tolist()
                    else:
                        np.testing.assert_array_equal(A, B, err_msg=f"{name} {case} {a}")
                n_checked += 1
            # a random multi-step excursion, undone in reverse order (as the search does)
            if rng.random() < 0.3:
                snap = [A.copy() for A in (heads, lc, rc)]
                live = stack[:sp].copy()
                trail, s2, b2, q = [], sp, b, py
                for _ in range(int(rng.integers(1, 6))):
                    acts = [a for a in range(N_ACTIONS) if legal(a, s2, b2, n)]
                    if not acts:
                        break
                    a = acts[int(rng.integers(0, len(acts)))]
                    s2, b2, old = apply(a, State(stack, heads, lc, rc), s2, b2)
                    q = q.apply(a)
                    assert_kernel_state(q, stack, s2, b2, heads, lc, rc)
                    trail.append((a, old))
                for a, old in reversed(trail):
                    s2, b2 = undo(a, State(stack, heads, lc, rc), s2, b2, old)
                assert (s2, b2) == (sp, b) and stack[:sp].tolist() == live.tolist()
                for A, B in zip((heads, lc, rc), snap):
                    np.testing.assert_array_equal(A, B)
                n_multi += 1
            acts = [a for a in range(N_ACTIONS) if legal(a, sp, b, n)]
            a = acts[int(rng.integers(0, len(acts)))]
            sp, b, _ = apply(a, State(stack, heads, lc, rc), sp, b)
            py = py.apply(a)
        # a complete action sequence: one root, one head per token, projective
        heads[stack[0]] = 0
        tree = heads[1:n + 1].tolist()
        assert tree == py.tree()
        assert check_tree(tree, single_root=True) is None, tree
        assert is_projective(tree), tree
    assert n_checked > 1000 and n_multi > 50


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_reachable_trees_are_exactly_the_projective_single_rooted_ones(n):
    """Exhaustive: the trees of all complete action sequences == all single-rooted projective
    head vectors (so every parse is valid, and every valid tree is reachable)."""
    reached = set()
    n_seq = 0

    def walk(st):
        nonlocal n_seq
        if st.final():
            reached.add(tuple(st.tree()))
            n_seq += 1
            return
        for a in range(N_ACTIONS):
            if st.legal(a):
                walk(st.apply(a))

    walk(PyState(n))
    expected = {h for h in itertools.product(range(n + 1), repeat=n) if buildable(list(h))}
    assert reached == expected
    assert len(reached) == {1: 1, 2: 2, 3: 7, 4: 30, 5: 143}[n]
    assert n_seq >= len(reached)  # arc-standard has spurious ambiguity (n >= 3)


# ---- 2. oracle -------------------------------------------------------------------------------
def test_random_tree_generators():
    rng = np.random.default_rng(2)
    for _ in range(300):
        n = int(rng.integers(1, 15))
        t = random_projective_tree(rng, n)
        assert buildable(t), t
    # the projective generator reaches every projective tree of 4 tokens
    seen = {tuple(random_projective_tree(rng, 4)) for _ in range(3000)}
    assert len(seen) == 30


def test_oracle_rebuilds_projective_trees_and_flags_the_others():
    rng = np.random.default_rng(3)
    trees, kinds = [], []
    for i in range(600):
        n = int(rng.integers(1, 16))
        kind = ("proj", "random", "multiroot")[i % 3]
        if kind == "proj":
            t = random_projective_tree(rng, n)
        elif kind == "random":
            t = random_tree(rng, n)
        else:
            t = random_tree(rng, n, roots=int(rng.integers(2, n + 1)) if n >= 2 else 1)
        trees.append(t)
        kinds.append(kind)
    offsets, actions, ok = run_oracle(trees)
    n_nonproj = n_multi = 0
    for s, t in enumerate(trees):
        n = len(t)
        expect = buildable(t)
        n_nonproj += not is_projective(t)
        n_multi += sum(h == 0 for h in t) > 1
        assert bool(ok[s]) == expect, (s, t)
        if kinds[s] == "proj":
            assert expect
        if not expect:
            continue
        k = 2 * int(offsets[s]) - s
        acts = actions[k:k + 2 * n - 1].tolist()
        assert set(acts) <= {SHIFT, LEFT, RIGHT}
        assert py_replay(n, acts) == t, (s, t, acts)
        # the same sequence replayed with the kernels' apply
        stack, sp, b, heads, lc, rc = PyState(n).arrays()
        for a in acts:
            assert legal(a, sp, b, n)
            sp, b, _ = apply(a, State(stack, heads, lc, rc), sp, b)
        assert is_final(sp, b, n)
        heads[stack[0]] = 0
        assert heads[1:n + 1].tolist() == t
        # the kernel's static oracle is the textbook one
        st = PyState(n)
        gold = [0] + t
        for a in acts:
            assert py_oracle(st, gold) == a
            st = st.apply(a)
    assert n_nonproj > 50 and n_multi > 50
    # every slot of a buildable sentence was written, and the slots are laid out back to back
    total = 2 * int(offsets[-1]) - len(trees)
    assert all(actions[2 * int(offsets[s]) - s] != -7 for s in range(len(trees)) if ok[s])
    assert (actions[total:] == -7).all()


def test_oracle_small_hand_checked():
    # 'I saw a dog' (Figure 1 without the PP): I <- saw -> dog -> a
    offsets, actions, ok = run_oracle([[2, 0, 4, 2], [0], [0, 0], [3, 4, 0, 3]])
    assert ok.tolist() == [True, True, False, False]  # two roots; 1->3 crosses 2->4
    assert actions[:7].tolist() == [SHIFT, SHIFT, LEFT, SHIFT, SHIFT, LEFT, RIGHT]
    assert actions[7] == SHIFT


def _read_heads(path):
    return [s.heads for s in read_conllx(str(path))]


@pytest.mark.corpus
@pytest.mark.parametrize("rel", ["ptb-dep/train.conll",
                                 "ud-english-partut/en_partut-ud-train.conllu"])
def test_oracle_on_corpus(rel, corpus):
    path = corpus(rel)
    trees = _read_heads(path)
    offsets, actions, ok = run_oracle(trees)
    proj = np.array([is_projective(t) for t in trees])
    single = np.array([sum(h == 0 for h in t) == 1 for t in trees])
    assert all(check_tree(t) is None for t in trees)
    # flagged == exactly the non-projective or multi-rooted trees
    assert ok.tolist() == (proj & single).tolist()
    for s, t in enumerate(trees):
        if ok[s]:
            k = 2 * int(offsets[s]) - s
            assert py_replay(len(t), actions[k:k + 2 * len(t) - 1].tolist()) == t, s
    n_nonproj, n_multi = int((~proj).sum()), int((~single).sum())
    print(f"\n{rel}: {len(trees)} trees, {n_nonproj} non-projective, {n_multi} multi-rooted, "
          f"{int((~ok).sum())} flagged")
    if rel.startswith("ud-"):
        assert n_nonproj > 0  # the test has something to flag (35 in the shipped copy)


# ---- 3. search vs Figure 2 ---------------------------------------------------------------------
@dataclass
class Ctx:
    words: np.ndarray
    tags: np.ndarray
    base: int
    W: np.ndarray
    mask: int = MASK

    def feats(self, st: PyState) -> list[int]:
        stack, sp, b, heads, lc, rc = st.arrays()
        out = np.zeros(N_TEMPLATES, dtype=np.int64)
        features(State(stack, heads, lc, rc), sp, b, Sentence(self.words, self.tags, self.base, st.n),
                 self.mask, out)
        return out.tolist()

    def score(self, st: PyState, a: int) -> float:
        v = 0.0
        for f in self.feats(st):
            v += self.W[f, a]
        return v


def ref_search(ctx: Ctx, st: PyState, d: int, acc: float = 0.0):
    """Figure 2 -> (best leaf value, its actions); first strictly better leaf in action order."""
    if d == 0 or st.final():
        return acc, []
    best, path = -math.inf, None
    for a in range(N_ACTIONS):
        if not st.legal(a):
            continue
        v, p = ref_search(ctx, st.apply(a), d - 1, acc + ctx.score(st, a))
        if v > best:
            best, path = v, [a] + p
    return best, path


def ref_decide(ctx: Ctx, st: PyState, depth: int, margin: float, gold: int):
    """Figure 3 lines 8-16 -> (a*, plain best, gold continuation, a*'s continuation)."""
    best_v = plain_v = -math.inf
    best_a = plain_a = -1
    pg = pb = None
    for a in range(N_ACTIONS):
        if not st.legal(a):
            continue
        cv, cont = ref_search(ctx, st.apply(a), depth)
        v = ctx.score(st, a) + cv
        if v > plain_v:
            plain_v, plain_a = v, a
        if a == gold:
            v -= margin
            pg = cont
        if v > best_v:
            best_v, best_a, pb = v, a, cont
    return best_a, plain_a, pg, pb


def pad(path, d):
    return list(path) + [-1] * (d - len(path))


def small_ints(rng, shape, p_zero=0.3, lo=-3, hi=4):
    A = rng.integers(lo, hi, size=shape).astype(np.float64)
    A[rng.random(shape) < p_zero] = 0.0
    return A


def random_sentence(rng, n, n_words=8, n_tags=5):
    """Word/tag id arrays holding the sentence at a random base (ids >= 1 for real tokens)."""
    base = int(rng.integers(0, 4))
    size = base + n + int(rng.integers(0, 3))
    words = rng.integers(1, n_words, size=size).astype(np.int64)
    tags = rng.integers(1, n_tags, size=size).astype(np.int64)
    return words, tags, base


def random_prefix(rng, n, stop_p=0.25):
    """A state reached by random legal actions (possibly the initial or a final state)."""
    st = PyState(n)
    while not st.final() and rng.random() > stop_p:
        acts = [a for a in range(N_ACTIONS) if st.legal(a)]
        st = st.apply(acts[int(rng.integers(0, len(acts)))])
    return st


def search_scratch(d):
    k = max(d, 1) + 1
    return (np.zeros((k, N_TEMPLATES), dtype=np.int64), np.zeros((k, N_ACTIONS)),
            np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64), np.zeros(k))


def test_search_vs_figure2():
    rng = np.random.default_rng(4)
    n_short = n_final = 0
    for case in range(120):
        n = int(rng.integers(1, 7))
        words, tags, base = random_sentence(rng, n)
        W = small_ints(rng, (MASK + 1, N_ACTIONS), p_zero=0.2 if case % 3 else 0.9)
        ctx = Ctx(words, tags, base, W)
        st = random_prefix(rng, n)
        n_final += st.final()
        for d in range(5):
            stack, sp, b, heads, lc, rc = st.arrays()
            stack[sp:] = 99  # dead storage
            feats, scores, acts, olds, acc = search_scratch(d)
            path = np.full(d + 3, -7, dtype=np.int64)
            v = search(d, State(stack, heads, lc, rc), sp, b, Sentence(words, tags, base, n),
                       HashedWeights(W, NO_U, MASK), Scratch(feats, scores, acts, olds, acc, path, path, path))
            rv, rp = ref_search(ctx, st, d)
            assert v == rv, (case, d)
            assert path[:d].tolist() == pad(rp, d), (case, d)
            assert (path[d:] == -7).all()
            n_short += 0 < len(rp) < d
            assert_kernel_state(st, stack, sp, b, heads, lc, rc, (case, d))  # unchanged
    assert n_short > 10 and n_final > 0


# ---- 4. decide (Figure 3) and parser_epoch ------------------------------------------------------
def decide_buffers(depth):
    feats = np.zeros((depth + 2, N_TEMPLATES), dtype=np.int64)
    scores = np.zeros((depth + 2, N_ACTIONS))
    scratch = np.zeros((2, depth + 1), dtype=np.int64)
    acc = np.zeros(depth + 1)
    path = np.full(depth + 1, -1, dtype=np.int64)
    return feats, scores, scratch, acc, path


def test_decide_vs_figure3():
    rng = np.random.default_rng(5)
    n_margin_flip = n_diff_paths = 0
    for case in range(300):
        n = int(rng.integers(1, 7))
        words, tags, base = random_sentence(rng, n)
        W = small_ints(rng, (MASK + 1, N_ACTIONS))
        ctx = Ctx(words, tags, base, W)
        st = random_prefix(rng, n)
        if st.final():
            continue
        depth = int(rng.integers(0, 4))
        margin = float((0, 1, 2, 0.5)[case % 4])
        legal_acts = [a for a in range(N_ACTIONS) if st.legal(a)]
        gold = -1 if case % 5 == 0 else legal_acts[int(rng.integers(0, len(legal_acts)))]
        stack, sp, b, heads, lc, rc = st.arrays()
        feats, scores, scratch, acc, path = decide_buffers(depth)
        pg = np.full(depth + 1, -7, dtype=np.int64)
        pb = np.full(depth + 1, -7, dtype=np.int64)
        best, plain = decide(depth, margin, gold, State(stack, heads, lc, rc), sp, b,
                             Sentence(words, tags, base, n), HashedWeights(W, NO_U, MASK),
                             Scratch(feats, scores, scratch[0], scratch[1], acc, path, pg, pb))
        r_best, r_plain, r_pg, r_pb = ref_decide(ctx, st, depth, margin, gold)
        assert (best, plain) == (r_best, r_plain), case
        assert pb[:depth].tolist() == pad(r_pb, depth), case
        if gold >= 0:
            assert pg[:depth].tolist() == pad(r_pg, depth), case
            n_diff_paths += best != gold and r_pg != r_pb and depth > 0
        else:
            assert (pg == -7).all()
        n_margin_flip += best != plain
        assert_kernel_state(st, stack, sp, b, heads, lc, rc, case)
    assert n_margin_flip > 0 and n_diff_paths > 0


def phi_path(ctx: Ctx, st: PyState, actions):
    """[(feature ids of the state, action taken there)] along a path from st."""
    out = []
    for a in actions:
        out.append((ctx.feats(st), a))
        st = st.apply(a)
    return out


def ref_epoch(offsets, words, tags, gold_heads, order, trainable, W, U, depth, margin, c, log=None):
    W, U = W.copy(), U.copy()
    ctx = Ctx(words, tags, 0, W)
    mistakes = updates = 0
    for s in order:
        if not trainable[s]:
            continue
        base, n = int(offsets[s]), int(offsets[s + 1] - offsets[s])
        ctx.base = base
        gold = [0] + gold_heads[base:base + n].tolist()
        st = PyState(n)
        while not st.final():
            g = py_oracle(st, gold)
            assert g >= 0
            best, plain, pg, pb = ref_decide(ctx, st, depth, margin, g)
            mistakes += plain != g
            if best != g:
                updates += 1
                delta = np.zeros_like(W)
                for fs, a in phi_path(ctx, st, [g] + pg):
                    for f in fs:
                        delta[f, a] += 1
                for fs, a in phi_path(ctx, st, [best] + pb):
                    for f in fs:
                        delta[f, a] -= 1
                W += delta  # in place: ctx.W is W
                U += c * delta
                if log is not None:
                    log.append((pg, pb))
            st = st.apply(g)
            c += 1.0
    return W, U, c, mistakes, updates


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_parser_epoch_vs_figure3(depth, margin):
    rng = np.random.default_rng(60 + 2 * depth + int(margin))
    tot_updates = tot_margin_only = tot_deep = 0
    for case in range(6):
        trees = []
        for i in range(5):
            n = int(rng.integers(1, 7))
            trees.append(random_projective_tree(rng, n) if i != 3 else random_tree(rng, n, 2 if n > 1 else 1))
        offsets, heads = corpus_arrays(trees)
        N = int(offsets[-1])
        words = rng.integers(1, 6, size=N).astype(np.int64)
        tags = rng.integers(1, 4, size=N).astype(np.int64)
        _, _, trainable = run_oracle(trees)
        assert trainable.tolist() == [buildable(t) for t in trees]
        W = small_ints(rng, (MASK + 1, N_ACTIONS), p_zero=0.5, lo=-1, hi=2) if case % 2 else np.zeros((MASK + 1, N_ACTIONS))
        U = small_ints(rng, (MASK + 1, N_ACTIONS))
        c = float(1 + case)
        rW, rU, rc = W.copy(), U.copy(), c
        for epoch in range(2):
            order = rng.permutation(len(trees)).astype(np.int64)
            c, mistakes, updates = parser_epoch(Treebank(offsets, words, tags, heads), order, trainable,
                                                HashedWeights(W, U, MASK), c, depth, margin)
            log = []
            rW, rU, rc, rm, ru = ref_epoch(offsets, words, tags, heads, order, trainable, rW, rU,
                                           depth, margin, rc, log)
            ctx = (case, epoch)
            assert (mistakes, updates) == (rm, ru), ctx
            assert c == rc == float(1 + case) + (epoch + 1) * sum(
                2 * len(t) - 1 for t, ok in zip(trees, trainable) if ok), ctx
            np.testing.assert_array_equal(W, rW, err_msg=str(ctx))
            np.testing.assert_array_equal(U, rU, err_msg=str(ctx))
            tot_updates += updates
            tot_margin_only += updates - mistakes
            tot_deep += sum(g != b for g, b in log)
    assert tot_updates > 0
    if margin > 0:
        assert tot_margin_only > 0, (tot_updates, tot_margin_only)
    if depth > 0:
        assert tot_deep > 0


# ---- 5. parse_corpus ------------------------------------------------------------------------
def ref_parse(ctx: Ctx, n: int, depth: int) -> list[int]:
    st = PyState(n)
    while not st.final():
        a, _, _, _ = ref_decide(ctx, st, depth, 0.0, -1)
        st = st.apply(a)
    return st.tree()


def ref_greedy(ctx: Ctx, n: int) -> list[int]:
    """Depth 0 written out: the first legal action with the highest w . phi(S, a)."""
    st = PyState(n)
    while not st.final():
        best, best_a = -math.inf, None
        for a in range(N_ACTIONS):
            if st.legal(a) and ctx.score(st, a) > best:
                best, best_a = ctx.score(st, a), a
        st = st.apply(best_a)
    return st.tree()


def random_corpus(rng, n_sent, max_len, empty=True):
    lens = [int(rng.integers(1, max_len + 1)) for _ in range(n_sent)]
    if empty:
        lens[int(rng.integers(0, n_sent))] = 0
    offsets = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    N = int(offsets[-1])
    return offsets, rng.integers(1, 9, size=N).astype(np.int64), rng.integers(1, 6, size=N).astype(np.int64)


def test_parse_corpus_always_returns_valid_trees():
    rng = np.random.default_rng(7)
    for depth in range(4):
        for kind in ("normal", "ints", "zero"):
            offsets, words, tags = random_corpus(rng, 12, 14 if depth < 3 else 9)
            W = {"normal": lambda: rng.normal(size=(MASK + 1, N_ACTIONS)),
                 "ints": lambda: small_ints(rng, (MASK + 1, N_ACTIONS)),
                 "zero": lambda: np.zeros((MASK + 1, N_ACTIONS))}[kind]()
            out = np.full(int(offsets[-1]) + 1, -7, dtype=np.int64)
            parse_corpus(offsets, words, tags, W, MASK, depth, out)
            assert out[-1] == -7
            for s in range(len(offsets) - 1):
                t = out[offsets[s]:offsets[s + 1]].tolist()
                if not t:
                    continue
                assert check_tree(t, single_root=True) is None, (depth, kind, t)
                assert is_projective(t), (depth, kind, t)
                if kind == "zero":  # all ties: shift while possible, then reduceL: all -> last
                    assert t == [len(t)] * (len(t) - 1) + [0]


def test_parse_corpus_equals_references():
    rng = np.random.default_rng(8)
    # depth 0 with real-valued weights: same summation order, so bit-for-bit the greedy parse
    for _ in range(5):
        offsets, words, tags = random_corpus(rng, 10, 12)
        W = rng.normal(size=(MASK + 1, N_ACTIONS))
        out = np.zeros(int(offsets[-1]), dtype=np.int64)
        parse_corpus(offsets, words, tags, W, MASK, 0, out)
        for s in range(len(offsets) - 1):
            ctx = Ctx(words, tags, int(offsets[s]), W)
            n = int(offsets[s + 1] - offsets[s])
            if n:
                assert out[offsets[s]:offsets[s + 1]].tolist() == ref_greedy(ctx, n)
    # lookahead depths with integer weights (ties everywhere): Figure 3's choice, no gold
    for depth in range(1, 3):
        for _ in range(3):
            offsets, words, tags = random_corpus(rng, 6, 6)
            W = small_ints(rng, (MASK + 1, N_ACTIONS), p_zero=0.5)
            out = np.zeros(int(offsets[-1]), dtype=np.int64)
            parse_corpus(offsets, words, tags, W, MASK, depth, out)
            for s in range(len(offsets) - 1):
                n = int(offsets[s + 1] - offsets[s])
                if n:
                    ctx = Ctx(words, tags, int(offsets[s]), W)
                    assert out[offsets[s]:offsets[s + 1]].tolist() == ref_parse(ctx, n, depth)


# ---- 6. learning on the PTB sample ------------------------------------------------------------
def _first_sentences(src: Path, dst: Path, k: int) -> Path:
    blocks = src.read_text(encoding="utf-8").strip("\n").split("\n\n")[:k]
    dst.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return dst


@pytest.mark.corpus
def test_small_ptb_slice_learns(tmp_path, corpus):
    from structkit.parse.parser import ParserConfig, attachment, encode, train_parser

    train, dev = corpus("ptb-dep/train.conll"), corpus("ptb-dep/dev.conll")
    tr = _first_sentences(train, tmp_path / "train.conll", 300)
    dv = _first_sentences(dev, tmp_path / "dev.conll", 100)
    parser = train_parser(ParserConfig(algo="lookahead", epochs=3, depth=0, hash_bits=20), str(tr))
    sents = list(read_conllx(str(dv)))
    assert len(sents) == 100
    tb = encode(sents, parser.words, parser.tags, "xpos", grow=False)
    uas = attachment(tb, parser.parse_encoded(tb))["uas"]
    baselines = {}
    for name, head in (("right", lambda i, n: i + 1 if i < n else 0),
                       ("left", lambda i, n: i - 1)):
        pred = np.array([head(i, len(s)) for s in sents for i in range(1, len(s) + 1)], dtype=np.int64)
        baselines[name] = attachment(tb, pred)["uas"]
    base = max(baselines.values())
    print(f"\nUAS {uas:.2f} (baselines {baselines})")
    assert uas > base + 20, (uas, baselines)


# ---- 7. command line ------------------------------------------------------------------------
def conll_blocks(text: str) -> list[list[list[str]]]:
    return [[line.split("\t") for line in block.splitlines()]
            for block in text.strip("\n").split("\n\n")]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("parse_models")
    paths = {"parse": str(d / "parse.npz"), "pos": str(d / "pos.npz")}
    for args in (["train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--model", paths["parse"],
                  "--epochs", "8", "-q"],
                 ["train", "--task", "pos", "--train", POS_TRAIN, "--model", paths["pos"],
                  "--epochs", "3", "-q"]):
        with pytest.raises(SystemExit) as ei:
            main(args)
        assert ei.value.code in (0, None)
    return paths


def test_fixture_is_projective():
    sents = list(read_conllx(PARSE_TRAIN))
    assert len(sents) >= 10
    assert all(buildable(s.heads) for s in sents)


def test_cli_train_parse_eval_round_trip(sk, models, tmp_path):
    r = sk("parse", "--model", models["parse"], PARSE_TRAIN)
    assert r.code == 0 and r.err == ""
    gold = conll_blocks(Path(PARSE_TRAIN).read_text())
    got = conll_blocks(r.out)
    assert len(got) == len(gold)
    for g, p in zip(gold, got):
        assert len(g) == len(p)
        assert [row[:6] for row in p] == [row[:6] for row in g]  # input columns kept
        heads = [int(row[6]) for row in p]
        assert buildable(heads), heads
    pred = tmp_path / "pred.conll"
    pred.write_text(r.out)
    rj = sk("eval", "--task", "parse", PARSE_TRAIN, pred, "--json")
    assert rj.code == 0
    j = json.loads(rj.out)
    assert j["task"] == "parse"
    for key in ("uas", "uas_with_punct", "root_accuracy", "complete_match", "complete_match_with_punct"):
        assert 0 <= j[key] <= 100, key
    n_tok = sum(len(g) for g in gold)
    n_punct = sum(row[4] in (".", ",") for g in gold for row in g)
    assert (j["tokens"], j["sentences"], j["scored_tokens"]) == (n_tok, len(gold), n_tok - n_punct)
    # the training set, 8 epochs: well fitted (memorised), far above attaching to a neighbour
    assert j["uas"] > 80, j
    # the same numbers from the kernels directly
    from structkit.parse.parser import DependencyParser, attachment, encode
    parser = DependencyParser.load(models["parse"])
    tb = encode(list(read_conllx(PARSE_TRAIN)), parser.words, parser.tags, "xpos", grow=False)
    heads = parser.parse_encoded(tb)
    assert heads.tolist() == [int(row[6]) for p in got for row in p]
    assert attachment(tb, heads)["uas"] == j["uas"]
    rr = sk("eval", "--task", "parse", PARSE_TRAIN, pred)
    assert rr.code == 0 and rr.out.startswith("UAS ") and f"{j['uas']:.2f}%" in rr.out
    # -o writes the same as standard output
    out = tmp_path / "o.conll"
    assert sk("parse", "--model", models["parse"], PARSE_TRAIN, "-o", out).code == 0
    assert out.read_text() == r.out


def test_cli_parse_stdin_and_two_column_input(sk, models, tmp_path):
    ref = sk("parse", "--model", models["parse"], PARSE_TRAIN).out
    r = sk("parse", "--model", models["parse"], "-", stdin=Path(PARSE_TRAIN).read_bytes())
    assert r.code == 0 and r.out == ref
    r = sk("parse", "--model", models["parse"], stdin=Path(PARSE_TRAIN).read_bytes())  # no file
    assert r.code == 0 and r.out == ref
    # `word POS` columns: the same words and tags, so the same heads
    two = tmp_path / "two.txt"
    two.write_text("\n\n".join("\n".join(f"{row[1]} {row[4]}" for row in block)
                               for block in conll_blocks(Path(PARSE_TRAIN).read_text())) + "\n")
    r = sk("parse", "--model", models["parse"], two)
    assert r.code == 0, r
    got, exp = conll_blocks(r.out), conll_blocks(ref)
    assert [[row[6] for row in b] for b in got] == [[row[6] for row in b] for b in exp]
    assert [[row[1] for row in b] for b in got] == [[row[1] for row in b] for b in exp]
    assert all(len(row) == 10 for b in got for row in b)


def test_cli_depth_override(sk, models):
    from structkit.parse.parser import DependencyParser, encode
    parser = DependencyParser.load(models["parse"])
    assert parser.config.depth == 0
    tb = encode(list(read_conllx(PARSE_TRAIN)), parser.words, parser.tags, "xpos", grow=False)
    for depth in (0, 2):
        r = sk("parse", "--model", models["parse"], "--depth", depth, PARSE_TRAIN)
        assert r.code == 0
        heads = [int(row[6]) for b in conll_blocks(r.out) for row in b]
        assert heads == parser.parse_encoded(tb, depth=depth).tolist()
    # the override really reaches the search: some depth changes some head on random weights
    W = np.random.default_rng(9).normal(size=parser.W.shape)
    assert any((parser.parse_encoded(tb, depth=d, W=W) != parser.parse_encoded(tb, depth=0, W=W)).any()
               for d in (1, 2))


def test_cli_train_with_depth_and_margin_records_config(sk, tmp_path):
    m = tmp_path / "m.npz"
    r = sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--model", m, "--epochs", 2,
           "--depth", 1, "--margin", 1, "-q")
    assert r.code == 0, r
    from structkit.parse.parser import DependencyParser
    p = DependencyParser.load(str(m))
    assert (p.config.depth, p.config.margin, p.config.epochs) == (1, 1.0, 2)
    assert p.info["train_sentences"] == len(list(read_conllx(PARSE_TRAIN)))
    assert p.info["skipped_unbuildable"] == 0
    # parse without --depth searches to the trained depth
    from structkit.parse.parser import encode
    tb = encode(list(read_conllx(PARSE_TRAIN)), p.words, p.tags, "xpos", grow=False)
    r = sk("parse", "--model", m, PARSE_TRAIN)
    assert [int(row[6]) for b in conll_blocks(r.out) for row in b] == p.parse_encoded(tb, depth=1).tolist()


def test_cli_parse_with_tagger(sk, models, tmp_path):
    r = sk("parse", "--model", models["parse"], "--tagger", models["pos"], PARSE_TRAIN)
    assert r.code == 0, r
    got = conll_blocks(r.out)
    # the tags the tagger gives the words (same model through `structkit tag --text`)
    text = "\n".join(" ".join(row[1] for row in b) for b in conll_blocks(Path(PARSE_TRAIN).read_text()))
    rt = sk("tag", "--model", models["pos"], "--text", "-", stdin=(text + "\n").encode())
    assert rt.code == 0
    tagged = [[line.split() for line in block.splitlines()] for block in rt.out.strip("\n").split("\n\n")]
    assert [[row[3] for row in b] for b in got] == [[row[-1] for row in b] for b in tagged]
    assert [[row[4] for row in b] for b in got] == [[row[-1] for row in b] for b in tagged]
    # the heads are those of parsing `word PREDICTED-POS`
    two = tmp_path / "auto.txt"
    two.write_text("\n\n".join("\n".join(f"{row[0]} {row[-1]}" for row in b) for b in tagged) + "\n")
    r2 = sk("parse", "--model", models["parse"], two)
    assert [[row[6] for row in b] for b in conll_blocks(r2.out)] == [[row[6] for row in b] for b in got]


@pytest.mark.parametrize("extra,needle", [
    (["--algo", "lookahead", "--templates", "base"], "--templates applies to --algo beam"),
    (["--templates", "base,x"], "--templates for --algo beam is a comma-separated list"),
    (["--algo", "lookahead", "--beam", "4"], "--beam applies to --algo beam"),
    (["--depth", "4"], "--depth (lookahead inside the beam) of --algo beam is 0..3, got 4")])
def test_cli_train_parse_beam_options_are_checked(sk, tmp_path, extra, needle):
    m = tmp_path / "m.npz"
    r = sk("train", "--task", "parse", "--train", PARSE_TRAIN, "--model", m, *extra)
    assert_one_line_error(r, needle, code=1)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("extra", [["--label-order", "2"], ["--search", "dp"],
                                   ["--cutoff", "2"], ["--direction", "rtl"], ["--columns", "word,pos"]])
def test_cli_train_parse_rejects_tagger_options(sk, tmp_path, extra):
    """(--templates is taken by --algo beam: its template groups; see the next test.)"""
    m = tmp_path / "m.npz"
    r = sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--model", m, *extra)
    assert_one_line_error(r, extra[0], "do not apply to --task parse", code=1)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("extra, needle", [
    # the same rule and wording as `structkit parse --depth` (test_cli_parse_bad_depth)
    (["--depth", "-1"], "--depth must be an integer from 0 to 6, got -1"),
    (["--depth", "7"], "--depth must be an integer from 0 to 6, got 7"),
    (["--margin", "-1"], "--margin must be a non-negative number"),
    (["--epochs", "0"], "--epochs must be a positive integer"),
    (["--algo", "perceptron"], "--algo for parsing is beam, lookahead"),
    (["--algo", "greedy", "--depth", "2"], "--algo greedy searches to depth 0"),
])
def test_cli_train_parse_bad_values(sk, tmp_path, extra, needle):
    m = tmp_path / "m.npz"
    r = sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--model", m, *extra)
    assert_one_line_error(r, needle, code=1)
    assert os.listdir(tmp_path) == []


FIXTURE_TEXT = Path(PARSE_TRAIN).read_text()


def _row(i, w, h, ncol=10):
    return "\t".join([str(i), w, "_", "NN", "NN", "_", str(h), "_", "_", "_"][:ncol])


# (name, text appended after the good fixture, line within the appended text, message)
BAD_INPUTS = [
    ("bad_head_word", [_row(1, "a", "x"), _row(2, "b", 0)], 1, "HEAD 'x' of token 1 is not an integer"),
    ("head_out_of_range", [_row(1, "a", 2), _row(2, "b", 9)], 2, "HEAD 9 of token 2 is out of range"),
    ("cycle", [_row(1, "a", 2), _row(2, "b", 1), _row(3, "c", 0)], 1, "not a tree: token 1 is in a cycle"),
    ("missing_columns", [_row(1, "a", 0), _row(2, "b", 1, ncol=9)], 2, "found 9 columns"),
]


@pytest.mark.parametrize("name, rows, k, needle", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_cli_malformed_training_data(sk, tmp_path, name, rows, k, needle):
    bad = tmp_path / "bad.conll"
    bad.write_text(FIXTURE_TEXT + "\n".join(rows) + "\n")
    line_no = FIXTURE_TEXT.count("\n") + k
    m = tmp_path / "m.npz"
    line = assert_one_line_error(sk("train", "--task", "parse", "--algo", "lookahead", "--train", bad, "--model", m), code=1)
    assert line.startswith(f"structkit: error: {bad}:{line_no}: ") and needle in line, line
    assert not m.exists() and leftovers(tmp_path) == []
    # as --dev data too, naming the dev file
    line = assert_one_line_error(sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--dev", bad,
                                    "--model", m), code=1)
    assert line.startswith(f"structkit: error: {bad}:{line_no}: ") and needle in line, line
    assert not m.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("name, rows, k, needle", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_cli_malformed_parse_input(sk, models, tmp_path, name, rows, k, needle):
    bad = tmp_path / "bad.conll"
    bad.write_text(FIXTURE_TEXT + "\n".join(rows) + "\n")
    line_no = FIXTURE_TEXT.count("\n") + k
    out = tmp_path / "out.conll"
    line = assert_one_line_error(sk("parse", "--model", models["parse"], bad, "-o", out), code=1)
    assert line.startswith(f"structkit: error: {bad}:{line_no}: ") and needle in line, line
    assert not out.exists() and leftovers(tmp_path) == []


def test_cli_missing_columns_on_first_row_and_empty_file(sk, models, tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("1\tThe\t_\tDT\tDT\t_\t2\t_\n")
    m, out = tmp_path / "m.npz", tmp_path / "out.conll"
    assert_one_line_error(sk("train", "--task", "parse", "--algo", "lookahead", "--train", bad, "--model", m),
                          f"{bad}:1: expected 10 tab-separated columns")
    assert_one_line_error(sk("parse", "--model", models["parse"], bad, "-o", out), f"{bad}:1: ")
    empty = tmp_path / "empty.conll"
    empty.write_text("")
    assert_one_line_error(sk("train", "--task", "parse", "--algo", "lookahead", "--train", empty, "--model", m), f"{empty}:1: empty file")
    assert not m.exists() and not out.exists() and leftovers(tmp_path) == []


def test_cli_training_data_without_heads_or_without_buildable_trees(sk, tmp_path):
    m = tmp_path / "m.npz"
    two = tmp_path / "two.txt"
    two.write_text("The DT\ncat NN\n\nA DT\ndog NN\n")
    assert_one_line_error(sk("train", "--task", "parse", "--algo", "lookahead", "--train", two, "--model", m),
                          f"{two}:1: no HEAD column")
    nonproj = tmp_path / "np.conll"
    nonproj.write_text("\n".join([_row(1, "a", 3), _row(2, "b", 0), _row(3, "c", 2), _row(4, "d", 1)]) + "\n\n"
                       + "\n".join([_row(1, "a", 0), _row(2, "b", 0)]) + "\n")
    assert_one_line_error(sk("train", "--task", "parse", "--algo", "lookahead", "--train", nonproj, "--model", m),
                          f"{nonproj}: no training tree can be built")
    assert not m.exists() and leftovers(tmp_path) == []


def test_cli_wrong_model_kinds(sk, models, tmp_path):
    out = tmp_path / "out.conll"
    assert_one_line_error(sk("parse", "--model", models["pos"], PARSE_TRAIN, "-o", out),
                          f"{models['pos']}: this model was trained for task 'pos'", "parse", code=1)
    assert_one_line_error(sk("tag", "--model", models["parse"], "--text", "-", "-o", out, stdin=b"The cat\n"),
                          f"{models['parse']}: this model was trained for task 'parse'", code=1)
    assert_one_line_error(sk("parse", "--model", models["parse"], "--tagger", models["parse"], PARSE_TRAIN,
                             "-o", out), f"{models['parse']}: this model was trained for task 'parse'", code=1)
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("depth", ["-1", "7"])
def test_cli_parse_bad_depth(sk, models, tmp_path, depth):
    out = tmp_path / "out.conll"
    assert_one_line_error(sk("parse", "--model", models["parse"], "--depth", depth, PARSE_TRAIN, "-o", out),
                          f"--depth must be an integer from 0 to 6", f"got {depth}", code=1)
    assert not out.exists() and leftovers(tmp_path) == []


def test_cli_eval_parse_errors(sk, tmp_path):
    assert_one_line_error(sk("eval", "--task", "parse", PARSE_TRAIN), "takes two files")
    short = tmp_path / "short.conll"
    short.write_text(FIXTURE_TEXT.split("\n\n")[0] + "\n")
    assert_one_line_error(sk("eval", "--task", "parse", PARSE_TRAIN, short), f"{short}: ",
                          "ends before the gold file")


# ---- training driver and model files ----------------------------------------------------------
def test_train_parser_is_averaged_kernel_epochs_and_model_round_trips(tmp_path):
    """train_parser == parser_epoch over seeded permutations, averaged as W - U / c; the saved
    model loads back with the same weights and vocabularies."""
    from structkit.parse.parser import (DependencyParser, ParserConfig, Vocab, encode,
                                        train_parser)

    cfg = ParserConfig(algo="lookahead", epochs=3, depth=1, margin=1.0, seed=3, hash_bits=16)
    parser = train_parser(cfg, PARSE_TRAIN)
    wv, tv = Vocab(), Vocab()
    tb = encode(list(read_conllx(PARSE_TRAIN)), wv, tv, "xpos", grow=True)
    assert wv.items == parser.words.items and tv.items == parser.tags.items
    n_sent = len(tb.offsets) - 1
    _, _, trainable = run_oracle([s.heads for s in tb.sentences])
    W = np.zeros((1 << 16, N_ACTIONS))
    U = np.zeros_like(W)
    c = 1.0
    rng = np.random.default_rng(3)
    for _ in range(3):
        c, _, _ = parser_epoch(Treebank(tb.offsets, tb.words, tb.tags, tb.heads),
                               rng.permutation(n_sent), trainable, HashedWeights(W, U, (1 << 16) - 1),
                               c, 1, 1.0)
    np.testing.assert_array_equal(parser.W, W - U / c)
    assert c == 1 + 3 * (2 * int(tb.offsets[-1]) - n_sent)
    m = tmp_path / "m.npz"
    parser.save(str(m))
    back = DependencyParser.load(str(m))
    np.testing.assert_array_equal(back.W, parser.W)
    assert back.config == parser.config and back.words.items == parser.words.items
    assert back.parse_encoded(tb).tolist() == parser.parse_encoded(tb).tolist()


def test_cli_dev_scores_per_epoch(sk, tmp_path):
    m, mj = tmp_path / "m.npz", tmp_path / "m.json"
    r = sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--dev", PARSE_TRAIN, "--model", m,
           "--epochs", 3, "--metrics-json", mj, "-q")
    assert r.code == 0, r
    epochs = json.loads(mj.read_text())["epochs"]
    assert [e["epoch"] for e in epochs] == [1, 2, 3]
    pred = tmp_path / "pred.conll"
    assert sk("parse", "--model", m, PARSE_TRAIN, "-o", pred).code == 0
    final = json.loads(sk("eval", "--task", "parse", "--json", PARSE_TRAIN, pred).out)
    # the last epoch's dev score is the saved (averaged) model's score
    assert epochs[-1]["dev"]["uas"] == final["uas"]
    assert epochs[-1]["dev"]["tokens"] == final["tokens"]


def test_cli_train_from_stdin(sk, tmp_path):
    m = tmp_path / "m.npz"
    r = sk("train", "--task", "parse", "--algo", "lookahead", "--train", "-", "--model", m, "--epochs", 2, "-q",
           stdin=Path(PARSE_TRAIN).read_bytes())
    assert r.code == 0, r
    m2 = tmp_path / "m2.npz"
    assert sk("train", "--task", "parse", "--algo", "lookahead", "--train", PARSE_TRAIN, "--model", m2, "--epochs", 2, "-q").code == 0
    a = sk("parse", "--model", m, PARSE_TRAIN).out
    assert a == sk("parse", "--model", m2, PARSE_TRAIN).out


CONLLU = """# sent_id = 1
# text = It's red.
1-2\tIt's\t_\t_\t_\t_\t_\t_\t_\t_
1\tIt\tit\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2\t's\tbe\tAUX\tVBZ\t_\t3\tcop\t_\t_
3\tred\tred\tADJ\tJJ\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = 2
1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_
2.1\tloudly\tloudly\tADV\tRB\t_\t_\t_\t_\t_
3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_
"""


def test_cli_conllu_input_keeps_comments_and_ranges(sk, models, tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    r = sk("parse", "--model", models["parse"], src)
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert lines[:3] == ["# sent_id = 1", "# text = It's red.", "1-2\tIt's" + "\t_" * 8]
    # CoNLL-U comes back as CoNLL-U: empty nodes (not part of the basic tree) pass through as read
    empty = [ln for ln in CONLLU.splitlines() if ln.startswith("2.1\t")]
    assert empty and [ln for ln in lines if ln.startswith("2.1\t")] == empty
    pred = tmp_path / "pred.conll"
    pred.write_text(r.out)
    j = json.loads(sk("eval", "--task", "parse", "--json", src, pred).out)
    assert (j["tokens"], j["scored_tokens"], j["sentences"]) == (7, 5, 2)
    sents = list(read_conllx(str(pred)))
    assert [len(s) for s in sents] == [4, 3] and all(buildable(s.heads) for s in sents)


def test_cli_train_accuracy_counts_only_trained_sentences(sk, tmp_path):
    train = tmp_path / "t.conll"
    nonproj = "\n".join([_row(1, "a", 3), _row(2, "b", 0), _row(3, "c", 2), _row(4, "d", 1)])
    train.write_text(FIXTURE_TEXT + nonproj + "\n")
    m, mj = tmp_path / "m.npz", tmp_path / "m.json"
    assert sk("train", "--task", "parse", "--algo", "lookahead", "--train", train, "--model", m, "--epochs", 1,
              "--metrics-json", mj, "-q").code == 0
    doc = json.loads(mj.read_text())
    assert doc["config"]["skipped_unbuildable"] == 1
    e = doc["epochs"][0]
    sents = list(read_conllx(str(train)))
    decisions = sum(2 * len(s) - 1 for s in sents if buildable(s.heads))
    assert e["train_accuracy"] == pytest.approx(100.0 * (1 - e["train_mistakes"] / decisions))
