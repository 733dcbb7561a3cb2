"""The beam parser's search in numpy, for a few sentences: the same parses as the numba kernel
(:func:`structkit.parse.beam.beam_parse_corpus`, plain beam search, depth 0), without numba's
import and the loading of its cached kernels (0.4-0.5 s of CPU, most of a one-sentence
``structkit parse``).

Everything the kernel computes is computed here the same way:

* the features: the atoms of ``beam._atoms`` (``ATOMS`` order) from a state kept as Python
  lists, hashed for all items and templates at once with the kernel's 64-bit mix (numpy int64
  arithmetic wraps as numba's does; ``>>`` is arithmetic in both);
* the action scores: float32 sums over the features in template order (``np.cumsum`` along
  the templates is the sequential sum ``0 + w0 + w1 + ...`` the kernel does), -inf for
  illegal actions;
* the beam: candidates in (item, action) order, path scores in float64, the B best kept by a
  stable sort (ties keep the earlier candidate, as ``beam._insert`` does).

tests/parse/test_beam_small.py checks it against the kernel on random weights (ties
included), label sets over 63 (label-set bits that wrap into the sign) and template groups.
It is used for at most ``SMALL_WORDS`` words when numba is not loaded yet
(``LabelledParser.parse_encoded``); beyond that the kernel is faster even counting its start.
"""
from __future__ import annotations

import numpy as np

from structkit.parse.beam import ATOMS, GROUPS, TEMPLATES

# Up to this many words in one call (and numba not yet imported), numpy parses: about 1.5 ms
# a word against numba's 0.4-0.5 s start (tests/parse/test_beam_small.py; results/bench-startup.md).
SMALL_WORDS = 100

_SEED = 1469598103934665603
_MULT = -7046029254386353131        # 0x9E3779B97F4A7C15 as int64
_LOW33 = 0x1FFFFFFFF
_NAMES = [a for part in ATOMS for a in part]
_IDX = {a: i for i, a in enumerate(_NAMES)}
_ZERO = len(_NAMES)                  # a column of zeros: the unused atoms


def _mix(h: np.ndarray, v) -> np.ndarray:
    h = (h ^ v) * np.int64(_MULT)
    return h ^ ((h >> 31) & np.int64(_LOW33))


def _hash(t, a, b, c) -> np.ndarray:
    """``beam._h`` on int64 arrays (broadcast)."""
    return _mix(_mix(_mix(_mix(np.full_like(np.asarray(a), _SEED, dtype=np.int64), t), a), b), c)


def _signed(x: int) -> int:
    """A 64-bit pattern as the int64 the kernel holds (label-set bit 63 is the sign)."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


class _Templates:
    """The switched-on templates' ids and atom columns (``_ZERO`` for an unused atom)."""

    def __init__(self, groups: int):
        rows = [(t, [_IDX[a] for a in atoms] + [_ZERO] * (3 - len(atoms)))
                for t, g, atoms in TEMPLATES if groups & (1 << GROUPS.index(g))]
        self.ids = np.array([t for t, _ in rows], dtype=np.int64)
        cols = np.array([c for _, c in rows], dtype=np.int64).reshape(-1, 3)
        self.c0, self.c1, self.c2 = cols[:, 0], cols[:, 1], cols[:, 2]
        self.first = _mix(np.full(len(rows), _SEED, dtype=np.int64), self.ids)


class _State:
    """An arc-standard state: the stack, the queue front and the kernel's rows per token."""
    __slots__ = ("stack", "b", "hd", "lb", "lc1", "lc2", "rc1", "rc2", "nl", "nr", "sl", "sr")

    def __init__(self, n: int | None = None):
        if n is not None:
            self.stack, self.b = [], 1
            self.hd = [-1] * (n + 2)
            for r in ("lb", "lc1", "lc2", "rc1", "rc2", "nl", "nr", "sl", "sr"):
                setattr(self, r, [0] * (n + 2))

    def copy(self) -> "_State":
        c = _State()
        for r in self.__slots__:
            v = getattr(self, r)
            setattr(c, r, v[:] if isinstance(v, list) else v)
        return c

    def apply(self, a: int, L: int) -> None:
        """``beam.apply``."""
        if a == 0:
            self.stack.append(self.b)
            self.b += 1
            return
        s0, s1 = self.stack[-1], self.stack[-2]
        if a <= L:
            dep, head, lab = s1, s0, a
            first, second, count, labs = self.lc1, self.lc2, self.nl, self.sl
            del self.stack[-2]
        else:
            dep, head, lab = s0, s1, a - L
            first, second, count, labs = self.rc1, self.rc2, self.nr, self.sr
            self.stack.pop()
        self.hd[dep] = head
        self.lb[dep] = lab
        second[head] = first[head]
        first[head] = dep
        count[head] += 1
        labs[head] = _signed(labs[head] | (1 << (lab & 63)))


def _bucket(d: int) -> int:
    return d if d < 5 else (5 if d < 10 else 6)


def _atoms(st: _State, n: int, cols) -> list[int]:
    """The state's atoms in ``ATOMS`` order, with 0 where the kernel hashes (xwp, s0w*s1w,
    s0w*n0w: filled in by :func:`_hashed_atoms`)."""
    words, tags, lemmas, morph = cols
    sp, b, S = len(st.stack), st.b, st.stack
    s0 = S[-1] if sp >= 1 else 0
    s1 = S[-2] if sp >= 2 else 0
    s2 = S[-3] if sp >= 3 else 0
    n0 = b if b <= n else 0
    n1 = b + 1 if b + 1 <= n else 0
    n2 = b + 2 if b + 2 <= n else 0

    def ch(t):
        return (st.lc1[t], st.lc2[t], st.rc1[t], st.rc2[t]) if t else (0, 0, 0, 0)

    s0c, s1c = ch(s0), ch(s1)
    items = (s0, s1, s2, n0, n1, n2) + s0c + s1c
    wp = []
    for t in items:   # words[0] and tags[0] are 0: token 0 is no token
        wp += (words[t], tags[t])
    tree = [st.lb[t] if t else 0 for t in s0c + s1c]
    for t in (s0, s1):
        tree += (st.nl[t], st.nr[t], st.sl[t], st.sr[t]) if t else (0, 0, 0, 0)
    lex = [lemmas[s0], morph[s0], 0, lemmas[s1], morph[s1], 0, lemmas[n0], morph[n0], 0]
    dist = [_bucket(s0 - s1) if (s0 and s1) else 0, _bucket(n0 - s0) if (s0 and n0) else 0, 0, 0]
    return wp + tree + lex + dist + [0]


_XWP = [(_IDX[x + "wp"], _IDX[x + "w"], _IDX[x + "p"]) for x in ("s0", "s1", "n0")]
_PAIRS = [(_IDX["s0w*s1w"], _IDX["s0w"], _IDX["s1w"]), (_IDX["s0w*n0w"], _IDX["s0w"], _IDX["n0w"])]


def _hashed_atoms(R: np.ndarray) -> None:
    for out, w, p in _XWP:
        R[:, out] = _hash(1, R[:, w], R[:, p], 0)
    for out, a, b in _PAIRS:
        R[:, out] = _hash(0, R[:, a], R[:, b], 0)


def _scores(states, n, cols, tpl: _Templates, W, mask, n_actions) -> np.ndarray:
    """The action scores of each state (float32, -inf for illegal actions)."""
    R = np.array([_atoms(st, n, cols) for st in states], dtype=np.int64)
    _hashed_atoms(R)
    h = _mix(_mix(_mix(tpl.first[None, :], R[:, tpl.c0]), R[:, tpl.c1]), R[:, tpl.c2])
    slots = (h & np.int64(mask))[:, :, None] + np.arange(n_actions, dtype=np.int64)
    sc = np.cumsum(W[slots], axis=1, dtype=np.float32)[:, -1, :]
    for i, st in enumerate(states):
        if st.b > n:
            sc[i, 0] = -np.inf
        if len(st.stack) < 2:
            sc[i, 1:] = -np.inf
    return sc


def beam_parse_small(offsets, words, tags, lemmas, morph, W, mask: int, L: int, groups: int, B: int,
                     root_label: int, heads_out: np.ndarray, labels_out: np.ndarray) -> None:
    """``beam.beam_parse_corpus`` with plain beam search (depth 0), in numpy: writes heads
    (0 = root) and label ids of every sentence into the outputs."""
    tpl = _Templates(groups)
    n_actions = 2 * L + 1
    for s in range(len(offsets) - 1):
        base, n = int(offsets[s]), int(offsets[s + 1] - offsets[s])
        if n == 0:
            continue
        # token t (1..n) at index t; index 0 (no token) holds 0
        cols = [[0] + c[base:base + n].tolist() + [0] for c in (words, tags, lemmas, morph)]
        beam = [_State(n)]
        bscore = np.zeros(1)
        for _t in range(2 * n - 1):
            sc = _scores(beam, n, cols, tpl, W, mask, n_actions)
            V = (bscore[:, None] + sc.astype(np.float64)).ravel()   # (item, action) order
            order = np.argsort(-V, kind="stable")[:B]
            order = order[V[order] > -np.inf]
            nxt = []
            for c in order.tolist():
                i, a = divmod(c, n_actions)
                st = beam[i].copy()
                st.apply(a, L)
                nxt.append(st)
            beam, bscore = nxt, V[order]
        best = beam[0]
        root = best.stack[0]
        for t in range(1, n + 1):
            heads_out[base + t - 1] = 0 if t == root else best.hd[t]
            labels_out[base + t - 1] = root_label if t == root else best.lb[t]
