"""k-best Viterbi decoding cost against 1-best Viterbi on CoNLL-2000 train (emissions
included), with the weights of a chunking model trained here (exact perceptron, 10 epochs).

    python scripts/bench_kbest.py
"""
from __future__ import annotations

import tempfile
import time

import numpy as np
from numba import njit

from structkit.config import resolve_data_path
from structkit.sequence.search.kbest import kbest_viterbi
from structkit.sequence.search.viterbi import emissions, max_length, viterbi
from structkit.sequence.task import SequenceTagger, TaggerConfig, read_labelled, train_tagger


@njit
def decode_all(indptr, indices, offsets, W, T, k):
    L = W.shape[1]
    m = max_length(offsets)
    E = np.empty((m, L))
    out = np.empty(m, np.int32)
    seqs = np.empty((max(k, 1), m), np.int32)
    scores = np.empty(max(k, 1))
    total = 0.0
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        emissions(indptr, indices, W, a, b, E)
        if k == 0:
            total += viterbi(E, b - a, T, out)
        else:
            kbest_viterbi(E, b - a, T, k, seqs, scores)
            total += scores[0]
    return total


def main() -> None:
    train = resolve_data_path("conll2000/train.txt")
    with tempfile.TemporaryDirectory() as tmp:
        tagger = train_tagger(TaggerConfig(task="chunk"), train)
        tagger.save(f"{tmp}/m.model")
        tagger = SequenceTagger.load(f"{tmp}/m.model")
    c = read_labelled(train, None)
    enc = tagger.encode(c.words, c.pos, c.offsets)
    w = tagger.weights
    for k in (0, 1, 5, 10):
        decode_all(enc.indptr, enc.indices, enc.offsets[:3], w.W, w.T, k)
    base = None
    for k in (0, 1, 5, 10):
        best = min(_time(lambda: decode_all(enc.indptr, enc.indices, enc.offsets, w.W, w.T, k))
                   for _ in range(3))
        base = base or best
        name = "1-best Viterbi" if k == 0 else f"k-best Viterbi, k = {k}"
        print(f"{name}: {best:.3f} s for {enc.n_sentences} sentences ({best / base:.1f}x Viterbi)")


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
