"""Word-level edit distance (Levenshtein over words), the loss of Section 3 and WER.

``edit_distances`` runs one numba kernel over many (hypothesis, reference) pairs given as
integer word ids; ``word_edits`` is the single-pair convenience. The loss of hypothesis b of
utterance i is Delta_i(b) = edits(b) - min over the list of edits, so G_i (loss 0) is the set
of least errorful hypotheses.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from structkit.vocab import Vocab
from structkit.jit import njit

__all__ = ["edit_distances", "word_edits", "losses"]


# Pairs with at most this many DP cells use the plain dynamic programme; larger ones the
# diagonal algorithm below, whose time grows with the distance, not with the product of the
# lengths (a 1M-word hypothesis against a short reference, or two long near-identical ones).
DP_CELLS = 4096


@njit
def _dp_distance(hyp_ids, a0, n, ref_ids, b0, m, prev, cur):  # pragma: no cover - jit
    """Levenshtein distance by the O(n m) dynamic programme in two rows (the reference)."""
    for j in range(m + 1):
        prev[j] = j
    for i in range(1, n + 1):
        cur[0] = i
        wa = hyp_ids[a0 + i - 1]
        for j in range(1, m + 1):
            best = prev[j - 1] + (0 if wa == ref_ids[b0 + j - 1] else 1)
            d = prev[j] + 1
            if d < best:
                best = d
            d = cur[j - 1] + 1
            if d < best:
                best = d
            cur[j] = best
        for j in range(m + 1):
            prev[j] = cur[j]
    return prev[m]


@njit
def _ond_distance(hyp_ids, a0, n, ref_ids, b0, m, prev, cur):  # pragma: no cover - jit
    """Levenshtein distance by Ukkonen's (1985) furthest-reaching diagonals, O((n + m) D) time
    for distance D and O(n + m) memory. Round d holds, for each diagonal k = j - i, the
    furthest row i reachable with at most d edits, extended along matching words; diagonals
    that cannot reach the end within max(n, m) edits (an upper bound on D) are skipped, so a
    round visits at most min(n, m) + 1 of them."""
    NEG = -(1 << 60)
    delta = m - n
    ub = n if n > m else m
    off = n + 1
    i = 0
    while i < n and i < m and hyp_ids[a0 + i] == ref_ids[b0 + i]:
        i += 1
    if delta == 0 and i >= n:
        return 0
    prev[off] = i
    plo = 0
    phi = 0
    for d in range(1, ub + 1):
        lo = max(-d, -n, delta + d - ub)
        hi = min(d, m, delta + ub - d)
        for k in range(lo, hi + 1):
            best = NEG
            if plo <= k <= phi:                # substitution: down the same diagonal
                best = prev[k + off] + 1
            if plo <= k + 1 <= phi:            # a hypothesis word deleted
                t = prev[k + 1 + off] + 1
                if t > best:
                    best = t
            if plo <= k - 1 <= phi:            # a reference word inserted
                t = prev[k - 1 + off]
                if t > best:
                    best = t
            if best == NEG:
                cur[k + off] = NEG
                continue
            lim = n if n < m - k else m - k
            if best > lim:
                best = lim
            i = best
            while i < n and i + k < m and hyp_ids[a0 + i] == ref_ids[b0 + i + k]:
                i += 1
            cur[k + off] = i
        if lo <= delta <= hi and cur[delta + off] >= n:
            return d
        prev, cur = cur, prev
        plo = lo
        phi = hi
    return ub


@njit
def _edits_kernel(hyp_ids, hyp_off, ref_ids, ref_off, pair_ref, out, dp_cells):  # pragma: no cover - jit
    """out[k] = Levenshtein distance between hypothesis k and reference pair_ref[k]."""
    n_pairs = hyp_off.shape[0] - 1
    maxh = 0
    for k in range(n_pairs):
        if hyp_off[k + 1] - hyp_off[k] > maxh:
            maxh = hyp_off[k + 1] - hyp_off[k]
    maxr = 0
    for r in range(ref_off.shape[0] - 1):
        if ref_off[r + 1] - ref_off[r] > maxr:
            maxr = ref_off[r + 1] - ref_off[r]
    prev = np.empty(maxh + maxr + 3, dtype=np.int64)
    cur = np.empty(maxh + maxr + 3, dtype=np.int64)
    for k in range(n_pairs):
        r = pair_ref[k]
        a0, n = hyp_off[k], hyp_off[k + 1] - hyp_off[k]
        b0, m = ref_off[r], ref_off[r + 1] - ref_off[r]
        if n * m <= dp_cells:
            out[k] = _dp_distance(hyp_ids, a0, n, ref_ids, b0, m, prev, cur)
        else:
            out[k] = _ond_distance(hyp_ids, a0, n, ref_ids, b0, m, prev, cur)
    return out


def _pack(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    if seqs:
        off[1:] = np.cumsum([len(s) for s in seqs])
    flat = np.fromiter((w for s in seqs for w in s), dtype=np.int64, count=int(off[-1]))
    return flat, off


def edit_distances(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]],
                   pair_ref: Sequence[int] | None = None, dp_cells: int = DP_CELLS) -> np.ndarray:
    """Word edit distance of each hypothesis (a word list) to ``refs[pair_ref[k]]`` (default:
    the k-th reference). ``dp_cells``: pairs up to this many DP cells use the plain dynamic
    programme, larger ones the O((n + m) D) diagonal algorithm (0: always the latter, -1:
    always the former; the tests compare the two)."""
    if pair_ref is None:
        if len(hyps) != len(refs):
            raise ValueError("hyps and refs differ in length")
        pair_ref = range(len(hyps))
    v = Vocab()
    h_ids, h_off = _pack([v.encode(h) for h in hyps])
    r_ids, r_off = _pack([v.encode(r) for r in refs])
    pr = np.asarray(list(pair_ref), dtype=np.int64)
    if len(pr) != len(hyps):
        raise ValueError("pair_ref must have one entry per hypothesis")
    out = np.zeros(len(hyps), dtype=np.int64)
    if len(hyps):
        _edits_kernel(h_ids, h_off, r_ids, r_off, pr, out, dp_cells)
    return out


def word_edits(hyp: str, ref: str) -> int:
    """Edit distance between two strings of space-separated words."""
    return int(edit_distances([hyp.split()], [ref.split()])[0])


def losses(edits: np.ndarray) -> np.ndarray:
    """Delta for one n-best list: edits minus the fewest edits in the list."""
    edits = np.asarray(edits)
    return edits - edits.min()
