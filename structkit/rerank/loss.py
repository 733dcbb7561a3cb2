"""Word-level edit distance (Levenshtein over words), the loss of Section 3 and WER.

``edit_distances`` runs one numba kernel over many (hypothesis, reference) pairs given as
integer word ids; ``word_edits`` is the single-pair convenience. The loss of hypothesis b of
utterance i is Delta_i(b) = edits(b) - min over the list of edits, so G_i (loss 0) is the set
of least errorful hypotheses.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from structkit.features.vocab import Vocab
from structkit.search.jit import njit

__all__ = ["edit_distances", "word_edits", "losses"]


@njit
def _edits_kernel(hyp_ids, hyp_off, ref_ids, ref_off, pair_ref, out):  # pragma: no cover - jit
    """out[k] = Levenshtein distance between hypothesis k and reference pair_ref[k]."""
    n = hyp_off.shape[0] - 1
    maxlen = 0
    for r in range(ref_off.shape[0] - 1):
        if ref_off[r + 1] - ref_off[r] > maxlen:
            maxlen = ref_off[r + 1] - ref_off[r]
    prev = np.empty(maxlen + 1, dtype=np.int64)
    cur = np.empty(maxlen + 1, dtype=np.int64)
    for k in range(n):
        r = pair_ref[k]
        a0, a1 = hyp_off[k], hyp_off[k + 1]
        b0, b1 = ref_off[r], ref_off[r + 1]
        m = b1 - b0
        for j in range(m + 1):
            prev[j] = j
        for i in range(1, a1 - a0 + 1):
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
        out[k] = prev[m]
    return out


def _pack(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    if seqs:
        off[1:] = np.cumsum([len(s) for s in seqs])
    flat = np.fromiter((w for s in seqs for w in s), dtype=np.int64, count=int(off[-1]))
    return flat, off


def edit_distances(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]],
                   pair_ref: Sequence[int] | None = None) -> np.ndarray:
    """Word edit distance of each hypothesis (a word list) to ``refs[pair_ref[k]]`` (default:
    the k-th reference)."""
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
        _edits_kernel(h_ids, h_off, r_ids, r_off, pr, out)
    return out


def word_edits(hyp: str, ref: str) -> int:
    """Edit distance between two strings of space-separated words."""
    return int(edit_distances([hyp.split()], [ref.split()])[0])


def losses(edits: np.ndarray) -> np.ndarray:
    """Delta for one n-best list: edits minus the fewest edits in the list."""
    edits = np.asarray(edits)
    return edits - edits.min()
