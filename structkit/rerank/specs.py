"""The rerank wing's learners' specs (``SPECS``), which :mod:`structkit.learn.registry`
registers (it names this module in ``WINGS``). Definitions only: the reranker trains in
``structkit.rerank.task``."""
from __future__ import annotations

from structkit.learn.spec import LearnerSpec

SPECS: list[LearnerSpec] = []  # in the order `structkit algorithms` lists them

# ---- the n-best reranker (Singh-Miller & Collins 2007) ---------------------------------------
RERANK = "Singh-Miller & Collins (2007), Trigger-based language modeling using a loss-sensitive perceptron"
SPECS.append(LearnerSpec(
    "loss-perceptron", "averaged loss-sensitive perceptron: margin lambda * word errors (Figure 1)",
    RERANK, ("rerank",), (), "rerank", 5, None, family="reranker"))
SPECS.append(LearnerSpec(
    "perceptron", "averaged perceptron baseline: the best hypothesis against the chosen one",
    RERANK, ("rerank",), (), "rerank", 5, None, family="reranker"))
