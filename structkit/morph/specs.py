"""The morph wing's learner spec (``SPECS``), registered by :mod:`structkit.learn.registry` (it
names this module in ``WINGS``): the averaged structured perceptron over hashed weights that
trains the morphological tagger and the lemmatizer (``structkit.lattice.kernels``)."""
from __future__ import annotations

from structkit.learn.spec import LearnerSpec, param

SPECS: list[LearnerSpec] = []

EPOCHS = 10  # a cap with --dev/--dev-split, which choose the epoch
SPECS.append(LearnerSpec(
    "perceptron", "averaged structured perceptron over candidate-tag lattices (hashed weights), "
    "and an averaged multiclass perceptron over lemma edit rules",
    "Collins (2002), the averaged structured perceptron", ("morph",),
    (param("hash_bits", default=22),), "viterbi", EPOCHS, None))
