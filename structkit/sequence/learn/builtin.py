"""The sequence wing's learners' specs (``SPECS``), which :mod:`structkit.learn.registry`
registers before any other (it names this module in ``WINGS``).

Each spec below is the one definition of its algorithm outside its kernels: its parameters,
defaults, decoder, epochs and report. Learner modules are imported only when a learner is built,
so listing the learners (``--help``) stays fast.
"""
from __future__ import annotations

from structkit.errors import UserError
from structkit.learn.spec import (
    LearnerSpec,
    check_brute,
    default_report,
    greedy_depth,
    param,
)
from structkit.tasks import SEQUENCE

SPECS: list[LearnerSpec] = []  # in the order `structkit algorithms` lists them

SEQ = SEQUENCE  # the sequence tasks (structkit.tasks: one constant)
TSURUOKA = "Tsuruoka, Miyao & Kazama (2011), Learning with Lookahead, Figure 3"
COLLINS = "Collins (2002), the averaged structured perceptron"
MANCEV = "Mancev & Todorovic, k-best max-margin learners"
BORDES = "Bordes, Usunier & Bottou (2008), Sequence labelling SVMs trained in one pass (OLaRank)"


# ---- reports ---------------------------------------------------------------------------------
def _dual_report(stats: dict) -> str:
    """The default line, then OLaRank's dual objective and support counts (where the learner
    has a dual) and a batch learner's passes and KKT violation."""
    msg = default_report(stats)
    if "dual" in stats:
        msg += (f", dual {stats['dual']:.1f}, {stats['support_patterns']} support patterns, "
                f"{stats['support_vectors']} support vectors")
    if "passes" in stats:
        msg += f", {stats['passes']} passes, KKT violation {stats['max_violation']:.2g}"
    return msg


# ---- builders --------------------------------------------------------------------------------
def _perceptron(config, n_features: int, n_labels: int):
    from structkit.sequence.learn.perceptron import AveragedPerceptron

    return AveragedPerceptron(n_features, n_labels, "viterbi")


def _history(config, n_features: int, n_labels: int):
    from structkit.sequence.learn.perceptron import AveragedPerceptron

    check_brute(config.search, config.depth, n_labels)  # the labels are known from here on

    return AveragedPerceptron(n_features, n_labels, "lookahead", config.label_order == 2,
                              config.direction == "rtl", config.depth or 0, config.margin,
                              config.search == "dp")


def _kbest(algo: str):
    def build(config, n_features: int, n_labels: int):
        from structkit.sequence.learn.kbest import KBestLearner

        return KBestLearner(n_features, n_labels, algo, config.k, config.C, config.tau, nr=config.nr)
    return build


def _olarank(config, n_features: int, n_labels: int):
    from structkit.sequence.learn.olarank import OLaRankLearner

    return OLaRankLearner(n_features, n_labels, config.algo, config.C, config.nr, config.order,
                          config.tau, max_passes=config.epochs if config.algo == "larank-greedy-batch" else 1)


def _history_order(config) -> None:
    if config.label_order not in (None, 1):
        raise UserError("--label-order is for the lookahead learners; the OLaRank greedy "
                        "learners take --order K")


# ---- defaults (issue 17): chosen on development data, the same for every data set ------------
# results/defaults.md (scripts/defaults_experiments.py): lookahead depth 1 with margin C in
# {0, 1, 4, 16, 64, 256} on CoNLL-2000, CoNLL-2002 Spanish, JNLPBA and the PTB sample; C = 64
# has the best mean dev score (86.84; 16, the old experiments' most frequent pick: 86.57), and
# the mean dev score after 20 epochs beats the one after 10 at every C but 0. The k-best
# learners' C: 0.1, the value results/kbest.md's dev grid picked most often (22 of the 40 rows with a
# C; 0.01: 11, 1: 5, 10: 2) and picked by every family; their picked epochs run 10-30 (LaRank, run one pass
# there, keeps its 10).
HISTORY_MARGIN = 64.0
KBEST_C = 0.1
EPOCHS_SEQ = 20   # a cap with --dev/--dev-split, which choose the epoch

# ---- the history-based and exact perceptrons ------------------------------------------------
HISTORY = (param("margin", default=HISTORY_MARGIN), param("label_order"), param("direction"), param("search"))
JOBS = param("jobs")  # iterative parameter mixing (structkit.sequence.learn.ipm): the learners with epoch_kernel()
SPECS.append(LearnerSpec(
    "perceptron", "averaged structured perceptron, exact first-order Viterbi", COLLINS, SEQ, (JOBS,),
    "viterbi", EPOCHS_SEQ, _perceptron, family="perceptron"))
SPECS.append(LearnerSpec(
    "greedy", "history-based averaged perceptron, one decision at a time (lookahead depth 0)",
    TSURUOKA, SEQ, (*HISTORY, JOBS), "lookahead", EPOCHS_SEQ, _history, check=greedy_depth,
    fixed={"depth": 0}, family="lookahead"))
SPECS.append(LearnerSpec(
    "lookahead", "history-based margin perceptron with depth-D lookahead search", TSURUOKA, SEQ,
    (param("depth"), *HISTORY, JOBS), "lookahead", EPOCHS_SEQ, _history, family="lookahead"))

# ---- k-best max-margin learners (Mancev & Todorovic) ------------------------------------------
K, C, TAU = param("k"), param("C", default=KBEST_C), param("tau")
for name, algo, summary, ps in (
        ("kbest-perceptron", "perceptron", "k-best perceptron (eq. 36)", (K, JOBS)),
        ("kbest-pa", "pa", "k-best passive-aggressive (eqs. 22-25)", (K, C, JOBS)),
        ("kbest-rpa", "rpa", "k-best restricted PA (eqs. 26-28, Algorithm 4)", (K, C, JOBS)),
        ("kbest-mira", "mira", "k-best MIRA: each example's QP by SMO (Algorithm 1)", (K, C, TAU, JOBS)),
        ("kbest-sdm", "sdm", "k-best SDM: working sets kept across epochs, SMO (Algorithm 2)", (K, C, TAU)),
        ("kbest-larank", "larank", "k-best LaRank: ProcessNew, ProcessOld, Optimize (Algorithm 3)",
         (K, C, TAU, param("nr")))):
    SPECS.append(LearnerSpec(name, summary, MANCEV, SEQ, ps, "viterbi", 10 if algo == "larank" else EPOCHS_SEQ,
                             _kbest(algo),
                             family="kbest", fixed={"nr": 1}))

# ---- OLaRank and its baselines (Bordes et al. 2008) ----------------------------------------
OC = param("C", default=0.1)
ORDER = param("order")
ONE = {"C": 0.1, "nr": 1}
for name, summary, ps, decoder, epochs, fixed in (
        ("olarank-exact", "OLaRank, exact first-order model with Viterbi, one pass",
         (OC, TAU, param("nr", default=5)), "viterbi", 1, {}),
        ("olarank-greedy", "OLaRank, greedy order-K model, one pass",
         (OC, TAU, param("nr", default=1), ORDER), "greedy-history", 1, {}),
        ("pa-exact", "passive-aggressive baseline, exact model (no reprocessing), one pass",
         (OC, TAU), "viterbi", 1, ONE),
        ("pa-greedy", "passive-aggressive baseline, greedy order-K model, one pass",
         (OC, TAU, ORDER), "greedy-history", 1, ONE),
        ("perceptron-exact", "averaged perceptron baseline, exact model, one pass",
         (), "viterbi", 1, ONE),
        ("perceptron-greedy", "averaged perceptron baseline, greedy order-K model, one pass",
         (ORDER,), "greedy-history", 1, ONE),
        ("larank-greedy-batch", "batch LaRank on the greedy model: passes until KKT holds to "
         "--tau (at most --epochs)", (OC, TAU, param("nr", default=1), ORDER), "greedy-history", 50,
         {})):
    exact_perceptron = name == "perceptron-exact"
    SPECS.append(LearnerSpec(
        name, summary, BORDES, SEQ, ps, decoder, epochs,
        _perceptron if exact_perceptron else _olarank,
        report=default_report if exact_perceptron else _dual_report,
        epoch_calls=(lambda config: 1) if name == "larank-greedy-batch" else (lambda config: config.epochs),
        check=_history_order if decoder == "greedy-history" else None,
        family="olarank", fixed=fixed))
