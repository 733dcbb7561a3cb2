"""The parse wing's learners' specs (``SPECS``), which :mod:`structkit.learn.registry` registers
(it names this module in ``WINGS``). Definitions only: the parsers train in
``structkit.parse.parser`` and ``structkit.parse.labelled``, which read these specs' parameters."""
from __future__ import annotations

from structkit.learn.spec import LearnerSpec, greedy_depth, param

SPECS: list[LearnerSpec] = []  # in the order `structkit algorithms` lists them

# The arc-standard parser (one data set, results/parse.md): the dev pick at its default depth 0
# is C = 1 after 19 of 20 epochs.
PARSER_MARGIN = 1.0
EPOCHS = 20   # a cap with --dev/--dev-split, which choose the epoch

# ---- the arc-standard parser (Tsuruoka et al. 2011, Table 4) --------------------------------
PARSE = "Tsuruoka, Miyao & Kazama (2011), Learning with Lookahead, Table 4 (arc-standard parsing)"
SPECS.append(LearnerSpec(
    "lookahead", "margin perceptron over arc-standard actions, depth-D lookahead search", PARSE,
    ("parse",), (param("depth", default=0, high=6, help="Lookahead search depth D over arc-standard "
                                                        "actions (brute force: 3^(D+1) paths)."),
                 param("margin", default=PARSER_MARGIN)), "arc-standard", EPOCHS, None,
    family="parser"))
SPECS.append(LearnerSpec(
    "greedy", "margin perceptron over arc-standard actions, no lookahead (depth 0)", PARSE,
    ("parse",), (param("margin", default=PARSER_MARGIN),), "arc-standard", EPOCHS, None, check=greedy_depth,
    fixed={"depth": 0}, family="parser"))

ZN = ("Zhang & Nivre (2011) rich non-local features; Zhang & Clark (2008) beam search; "
      "Huang, Fayong & Guo (2012) max-violation perceptron")
SPECS.append(LearnerSpec(
    "beam", "labelled arc-standard parser: beam search, max-violation averaged perceptron", ZN,
    ("parse",), (param("beam"), param("hash_bits", default=23)), "beam", 8, None,
    family="parser"))
