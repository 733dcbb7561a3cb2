"""What a learner is, for the registry: its typed parameters (:class:`Param`) and its spec
(:class:`LearnerSpec`), and the parameters learners and tasks share (one definition each, so
every learner and task says the same thing). Definitions only: no registry state, no numba."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from structkit.errors import UserError

__all__ = ["Param", "LearnerSpec", "PARAMS", "EPOCHS", "SEED", "BRUTE_LIMIT", "check_brute", "param", "alternatives",
           "default_report", "greedy_depth"]


@dataclass(frozen=True)
class Param:
    """One typed option of a learner: ``name`` is its config key (``--name`` on the command
    line, ``_`` spelled ``-``); ``low``/``high`` bound it (inclusive), ``positive`` excludes 0."""

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    positive: bool = False
    choices: tuple = ()
    # An upper bound derived from cost (time or memory grows with the value), for a parameter
    # whose range has no natural top: refused with its own message, so an integer >= 2^63
    # never reaches numba and a huge value never becomes a MemoryError or a hang.
    cap: int | None = None
    cap_why: str = "the cost grows with it"
    # Where a learner that does not take this parameter is told so: a format string over
    # {flag}, {value}, {algo} and {takers} (the algorithms that take it).
    elsewhere: str = "{flag} does not apply to --algo {algo} (it is taken by {takers})"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def range_text(self) -> str:
        """The accepted values, as the help and the errors say them."""
        if self.choices:
            return alternatives(self.choices)
        if self.kind is int:
            if self.low is not None and self.high is not None:
                return f"{self.low:g}..{self.high:g}"
            text = ">= 1" if self.low == 1 else ">= 0" if self.low == 0 else "any integer"
            return text + (f", at most {self.cap:,}" if self.cap is not None else "")
        if self.positive:
            return "> 0"
        return ">= 0" if self.low == 0 else "any number"

    def check(self, value: Any) -> Any:
        """``value`` converted to the parameter's type, or a UserError in the one wording used
        for every parameter of its kind."""
        if self.choices:
            if value not in self.choices:
                raise UserError(f"{self.flag} must be {self.range_text()}, got {value!r}")
            return value
        if self.kind is int:
            bad = isinstance(value, bool) or not isinstance(value, int)
            if not bad and self.low is not None and self.high is not None:
                if not self.low <= value <= self.high:
                    bad = True
            elif not bad and self.low is not None and value < self.low:
                bad = True
            if not bad and self.cap is not None and value > self.cap:
                raise UserError(f"{self.flag} must be at most {self.cap:,} ({self.cap_why}), got {value!r}")
            if bad:
                if self.low is not None and self.high is not None:
                    what = f"an integer from {self.low:g} to {self.high:g}"
                else:
                    what = {1: "a positive integer", 0: "a non-negative integer"}.get(self.low, "an integer")
                raise UserError(f"{self.flag} must be {what}, got {value!r}")
            return int(value)
        if self.kind is float:
            ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
            if ok and self.positive:
                ok = value > 0
            elif ok and self.low is not None:
                ok = value >= self.low
            if not ok:
                what = ("a positive number" if self.positive else
                        "a non-negative number" if self.low == 0 else "a finite number")
                raise UserError(f"{self.flag} must be {what}, got {value!r}")
            return float(value)
        if not isinstance(value, self.kind):
            raise UserError(f"{self.flag} must be a {self.kind.__name__}, got {value!r}")
        return value


def alternatives(xs) -> str:
    """How every structkit message names a set of allowed values: 'a or b', or 'one of a, b
    or c' when there are more than two."""
    xs = [str(x) for x in xs]
    if len(xs) <= 2:
        return " or ".join(xs)
    return "one of " + ", ".join(xs[:-1]) + " or " + xs[-1]


def default_report(stats: dict) -> str:
    """The per-epoch line: training accuracy where the learner knows it, else its updates."""
    if "train_accuracy" in stats:
        return f"train acc {stats['train_accuracy']:.2f}"
    return f"updates {stats['train_updates']}"


@dataclass(frozen=True)
class LearnerSpec:
    """Everything the tasks and the command line know about one algorithm.

    ``build(config, n_features, n_labels)`` returns the learner: an object with
    ``epoch(data, rng) -> dict`` and ``averaged() -> weights``. ``decoder`` names the search
    its models tag with (``viterbi``, ``lookahead`` or ``greedy-history``). ``check(config)``
    holds rules between parameters that a table cannot say. ``epoch_calls(config)`` is how
    many times ``epoch`` is called (a batch learner that runs its own passes answers 1)."""

    name: str
    summary: str
    paper: str
    tasks: tuple[str, ...]
    params: tuple[Param, ...]
    decoder: str
    epochs: int
    build: Callable[..., Any] | None
    report: Callable[[dict], str] = default_report
    check: Callable[[Any], None] | None = None
    epoch_calls: Callable[[Any], int] = lambda config: config.epochs
    family: str = ""
    # Header values of the parameters this learner does not take (defaults: the task's).
    fixed: dict = field(default_factory=dict)

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def takes(self, name: str) -> bool:
        return self.param(name) is not None


def param(name: str, **changes) -> Param:
    """A shared parameter definition, with some fields changed (e.g. its default)."""
    from dataclasses import replace

    return replace(PARAMS[name], **changes)


# The options every task shares, and the parameters learners share: one definition each, so
# every task and learner says the same thing.
EPOCHS = Param("epochs", int, 10, "Passes over the training data.", low=1, cap=10_000)
# numpy's and numba's generators take seeds below 2^32
SEED = Param("seed", int, 0, "Seed for shuffling and random choices: same seed, same model.", low=0,
             cap=2 ** 32 - 1, cap_why="seeds are 32-bit")
# Brute-force lookahead visits L^(D+1) label sequences per decision (L labels, depth D); past
# this it is refused and --search dp (the same result in O(D L^2)) is suggested.
BRUTE_LIMIT = 10 ** 6


def check_brute(search: str | None, depth: int | None, n_labels: int, where: str | None = None) -> None:
    """Refuse ``--search brute`` whose L^(D+1) sequences per decision pass BRUTE_LIMIT."""
    if search == "brute" and depth and n_labels ** (depth + 1) > BRUTE_LIMIT:
        raise UserError(f"--search brute at --depth {depth} visits {n_labels}^{depth + 1} label "
                        f"sequences per decision ({n_labels} labels), more than {BRUTE_LIMIT:,}; "
                        "use --search dp (the same result, O(depth x labels^2))", where)
def greedy_depth(config) -> None:
    """The check of every learner called ``greedy`` (a tagger's, a parser's): depth 0 only."""
    if config.depth not in (None, 0):
        raise UserError(f"--algo greedy searches to depth 0; use --algo lookahead for --depth {config.depth}")


PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("depth", int, 1, "Lookahead search depth D: each decision looks D decisions ahead.", low=0,
          cap=64,
          elsewhere="{flag} applies to history-based learners ({takers}); exact Viterbi already "
                    "searches the whole sentence"),
    Param("margin", float, 0.0, "Margin C of the lookahead perceptron (Figure 3).", low=0,
          elsewhere="{flag} applies to history-based learners (--algo {takers})"),
    Param("label_order", int, 1, "2 adds label-trigram features (history-based learners).", choices=(1, 2),
          elsewhere="{flag} {value} needs a history-based learner ({takers}); --algo {algo} "
                    "decodes with first-order labels"),
    Param("direction", str, "ltr", "Tagging direction of history-based models.", choices=("ltr", "rtl"),
          elsewhere="{flag} applies to {takers}; --algo {algo} tags left to right only (--direction ltr)"),
    Param("search", str, "dp", "Lookahead search: dp (exact window DP) or brute (Figure 2); same result.",
          choices=("dp", "brute")),
    Param("k", int, 1, "How many loss-augmented best sequences an update uses.", low=1, cap=1000),
    Param("C", float, 1.0, "C of the max-margin objective (slack penalty / step cap).", positive=True),
    Param("tau", float, 1e-3, "KKT tolerance of the SMO solver.", low=0),
    Param("nr", int, 5, "Reprocess steps (PROCESSOLD + OPTIMIZE) per new example.", low=0, cap=1000),
    Param("beam", int, 8, "Beam width of the labelled beam parser (1 = greedy).", low=1, high=256),
    Param("hash_bits", int, 22, "Size of the hashed weight table: 2^hash_bits entries.", low=16, high=28),
    Param("order", int, 1, "Markov order K of the label history (greedy models).", low=1, high=10,
          elsewhere="{flag} applies to the greedy OLaRank learners ({takers}); --algo {algo} is "
                    "first order"),
    Param("jobs", int, 1, "Train on N threads by iterative parameter mixing (McDonald et al. 2010): "
                          "N seeded shards trained from the same weights each epoch, then averaged. "
                          "1 trains serially; N > 1 gives a different (seed-determined) model; "
                          "each thread keeps its own copy of the weights.", low=1, high=256,
          elsewhere="{flag} {value} applies to the learners trained by parameter mixing ({takers}); "
                    "--algo {algo} trains on one core (--jobs 1)"),
)}
