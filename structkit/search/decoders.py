"""The decoders a sequence model can tag with, by the name its learner's spec gives
(``structkit.learn.registry.LearnerSpec.decoder``)."""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["DECODERS", "decode"]


def _viterbi(enc, w, config, depth, out) -> None:
    from structkit.search.viterbi import decode_corpus

    decode_corpus(enc.indptr, enc.indices, enc.offsets, w.W, w.T, out)


def _lookahead(enc, w, config, depth, out) -> None:
    from structkit.models.chain import with_T2
    from structkit.search.lookahead import lookahead_decode

    lookahead_decode(enc.indptr, enc.indices, enc.offsets, with_T2(w), config.label_order == 2,
                     config.direction == "rtl", config.depth if depth is None else depth,
                     config.search == "dp", out)


def _greedy_history(enc, w, config, depth, out) -> None:
    from structkit.search.greedy import greedy_decode

    greedy_decode(enc.indptr, enc.indices, enc.offsets, w.W, w.H, out)


# name -> decode(encoded corpus, weights, config, depth override or None, out label ids)
DECODERS: dict[str, Callable] = {"viterbi": _viterbi, "lookahead": _lookahead,
                                 "greedy-history": _greedy_history}


def decode(name: str, enc, weights, config, depth: int | None = None) -> np.ndarray:
    """Label ids of every token of ``enc`` with the decoder ``name``."""
    out = np.zeros(enc.n_tokens, dtype=np.int32)
    DECODERS[name](enc, weights, config, depth, out)
    return out
