"""The tokenize wing's learners' specs (``SPECS``), registered by :mod:`structkit.learn.registry`
(it names this module in ``WINGS``). The tokenizer trains structkit's own sequence learners over
characters (``structkit.tokenizer.task``)."""
from __future__ import annotations

from structkit.learn.spec import LearnerSpec, param

SPECS: list[LearnerSpec] = []

EPOCHS = 20  # a cap with --dev/--dev-split, which choose the epoch
SPECS.append(LearnerSpec(
    "perceptron", "averaged structured perceptron over characters (token and sentence ends)",
    "Collins (2002), the averaged structured perceptron", ("tokenize",),
    (param("hash_bits", default=20),), "viterbi", EPOCHS, None))
SPECS.append(LearnerSpec(
    "pa", "passive-aggressive over characters (1-best, Mancev & Todorovic eqs. 22-25)",
    "Mancev & Todorovic, k-best max-margin learners", ("tokenize",),
    (param("hash_bits", default=20), param("C")), "viterbi", EPOCHS, None))
