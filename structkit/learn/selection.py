"""Model selection on development data, shared by every trainer (taggers, parsers).

``--dev FILE`` or ``--dev-split F`` (every round(1/F)-th training sentence held out: with 0.1
the 10th, 20th, ..., as ``scripts/lookahead_experiments.py`` does) gives a dev score per epoch;
training then keeps the averaged weights of the best dev epoch (ties: the earliest), and
``--patience N`` stops after N epochs without a better dev score. With ``--dev-split`` the
held-out sentences are training data the final model should not lose: by default (``refit``)
the model is then trained again on every training sentence for the chosen number of epochs,
as ``scripts/lookahead_experiments.py`` retrains its chosen settings (``--no-refit`` keeps
the weights trained without the held-out part). Without a dev set nothing changes: the last
epoch's weights are kept and the model header is as before. The epoch loop that uses these, and
the refit, are :mod:`structkit.learn.loop`.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from structkit.errors import UserError

__all__ = ["DEV_SPLIT", "PATIENCE", "REFIT", "Selector", "check_dev_split", "check_patience", "check_refit",
           "check_with_dev", "copy_weights", "header_config", "split_every"]

DEV_SPLIT_HELP = ("Hold out every round(1/F)-th training sentence as development data (0.1: every "
                  "10th), for model selection; not with --dev.")
PATIENCE_HELP = "With --dev or --dev-split: stop after N epochs without a better dev score."
REFIT_HELP = ("With --dev-split: once the epoch is chosen on the held-out sentences, train again on "
              "every training sentence for that many epochs. [default: --refit]")
# The option names, for the one place that lists them (config fields, CLI flags).
DEV_SPLIT, PATIENCE, REFIT = "dev_split", "patience", "refit"


def check_dev_split(value: Any) -> float | None:
    """``--dev-split``: a number with 0 < F <= 0.5 (at least every 2nd sentence stays in training)."""
    if value is None:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if not ok or not 0 < value <= 0.5:
        raise UserError(f"--dev-split must be a fraction above 0 and at most 0.5 (0.1 holds out every "
                        f"10th training sentence), got {value!r}")
    return float(value)


def check_patience(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"--patience must be a positive integer (epochs without a better dev score), "
                        f"got {value!r}")
    return int(value)


def check_refit(value: Any) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"refit must be true or false, got {value!r}")
    return value


def check_with_dev(config, dev_path: str | None) -> None:
    """--dev-split and --dev exclude each other; --patience needs one of them."""
    if getattr(config, "dev_split", None) is not None and dev_path is not None:
        raise UserError("give --dev or --dev-split, not both")
    if getattr(config, "patience", None) is not None and dev_path is None \
            and getattr(config, "dev_split", None) is None:
        raise UserError("--patience needs development data: give --dev FILE or --dev-split F")
    if getattr(config, "refit", True) is False and getattr(config, "dev_split", None) is None:
        raise UserError("--no-refit applies to --dev-split (the held-out sentences it would "
                        "train on again)")


def split_every(n: int, fraction: float) -> tuple[list[int], list[int]]:
    """Training and held-out indices of ``n`` sentences: every round(1/F)-th is held out (the
    step-th, 2 step-th, ... counting from 1, as the experiments hold out theirs); deterministic.
    UserError when either side would be empty."""
    step = max(2, round(1 / fraction))
    dev = [i for i in range(n) if (i + 1) % step == 0]
    train = [i for i in range(n) if (i + 1) % step != 0]
    if not train or not dev:
        raise UserError(f"--dev-split {fraction:g} leaves no training or no development sentence "
                        f"({n} sentences)")
    return train, dev


def header_config(cfg: dict) -> dict:
    """The config as stored in a model header: the selection options and ``--vectors`` only
    when set, so a model trained without them is byte for byte what it was before they existed."""
    return {k: v for k, v in cfg.items()
            if not (k in (DEV_SPLIT, PATIENCE, "vectors", "vectors_limit") and v is None)
            and not (k == REFIT and cfg.get(DEV_SPLIT) is None)}


class Selector:
    """Keeps the best dev epoch's weights. ``key`` names the dev score to maximise (f1, uas,
    ...), or to minimise with ``lower_is_better`` (wer); ``copy`` snapshots weights (they may be
    updated in place later)."""

    def __init__(self, key: str, patience: int | None, copy: Callable[[Any], Any] | None = None,
                 lower_is_better: bool = False):
        self.key, self.patience, self.sign = key, patience, -1 if lower_is_better else 1
        self.copy = copy or (lambda w: w.copy())
        self.best_epoch: int | None = None
        self.best_score = -self.sign * math.inf
        self.best_dev: dict | None = None
        self.weights = None
        self.last_epoch = 0

    def update(self, epoch: int, dev: dict, weights: Any) -> bool:
        """Record an epoch; True when training should stop (patience run out)."""
        self.last_epoch = epoch
        s = dev[self.key]
        if self.best_epoch is None or self.sign * s > self.sign * self.best_score:
            self.best_epoch, self.best_score, self.best_dev = epoch, s, dev
            self.weights = None   # the old best freed before the new one is copied
            self.weights = self.copy(weights)
        return self.patience is not None and epoch - self.best_epoch >= self.patience

    def info(self) -> dict:
        """What the model header says: the epoch kept, its dev score, the epochs run."""
        return {"selected_epoch": self.best_epoch, "selected_dev": {self.key: self.best_score},
                "epochs_run": self.last_epoch}


def copy_weights(w: Any) -> Any:
    """A snapshot of a weight tuple (a NamedTuple of arrays, some None) or of an array."""
    if isinstance(w, tuple):
        return type(w)(*(a.copy() if hasattr(a, "copy") else a for a in w))
    return w.copy()
