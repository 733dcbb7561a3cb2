"""The one epoch loop of every trainer (the taggers, both parsers, the reranker), with its dev
selection (:mod:`structkit.learn.selection`) and the refit after ``--dev-split``.

A trainer supplies only what is its own: ``step(epoch)``, one epoch of training returning its
counts (:func:`train_counts`); ``averaged()``, the weights a model would have now; ``dev(w)``,
its dev scores with weights ``w``; and a :class:`~structkit.learn.selection.Selector` naming the
score to select on. :func:`run_epochs` does the rest; :func:`hold_out` and :func:`refit` are the
``--dev-split`` parts before and after it.

The per-epoch statistics (``on_epoch(epoch, stats)``, ``--metrics-json``, the reranker's
header) mean the same for every task, in this order:

- ``epoch``: the epoch's number, from 1;
- the step's counts: ``train_updates``, the weight updates made; where the task counts them,
  ``train_mistakes``, the training decisions that were wrong, and ``train_accuracy``, the
  percentage that were right (100 x (1 - mistakes / decisions)). A decision is what the task's
  search decides at once: a token's label (taggers), a transition (the arc-standard parser), a
  sentence (the beam parser, which updates once per sentence on the maximal violation), an
  utterance's hypothesis (the reranker). A sequence learner reports the tokens it got wrong
  as ``train_token_errors`` and may add its own diagnostics (``dual``, ``passes``, ...);
- ``epoch_seconds``: the wall time of the step (dev scoring not included);
- ``dev``: with dev data, the dev scores with the epoch's averaged weights (percentages; the
  selector's key among them);
- ``refit``: during the refit only, its number of epochs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from structkit.learn.selection import Selector, split_every

__all__ = ["Run", "hold_out", "refit", "run_epochs", "train_counts", "wants_refit"]

OnEpoch = Callable[[int, dict], None]


def train_counts(updates, mistakes=None, decisions=None) -> dict:
    """A step's counts as every task reports them: ``train_updates``, then ``train_mistakes``
    when counted, then ``train_accuracy`` when the decisions are counted too."""
    out = {"train_updates": int(updates)}
    if mistakes is not None:
        out["train_mistakes"] = int(mistakes)
        if decisions is not None:
            out["train_accuracy"] = 100.0 * (1 - mistakes / max(decisions, 1))
    return out


@dataclass
class Run:
    """What :func:`run_epochs` gives back: the kept weights (the best dev epoch's, else the last
    epoch's), the selector (which epoch, its score, the epochs run) and every epoch's stats."""

    weights: Any
    selector: Selector
    history: list[dict]

    def info(self) -> dict:
        """The model header's selection fields: empty without dev data (the header as before)."""
        return self.selector.info() if self.selector.best_epoch is not None else {}


def run_epochs(calls: int, step: Callable[[int], dict], averaged: Callable[[], Any], selector: Selector,
               dev: Callable[[Any], dict] | None = None, on_epoch: OnEpoch | None = None,
               final: Callable[[], Any] | None = None) -> Run:
    """Call ``step(epoch)`` for epochs 1..``calls``; with ``dev``, score each epoch's
    ``averaged()`` weights and let ``selector`` keep the best (and stop when its patience has run
    out); report each epoch's stats to ``on_epoch``. Without a selected epoch the weights kept are
    ``final()`` (default ``averaged()``; a trainer may average in place once training is over)."""
    history: list[dict] = []
    for epoch in range(1, calls + 1):
        te = time.perf_counter()
        stats = {"epoch": epoch} | step(epoch)
        stats["epoch_seconds"] = time.perf_counter() - te
        stop = False
        if dev is not None:
            w = averaged()
            stats["dev"] = dev(w)
            stop = selector.update(epoch, stats["dev"], w)
            del w   # the selector keeps what it needs: gone before the next epoch's average
        history.append(stats)
        if on_epoch is not None:
            on_epoch(epoch, stats)
        if stop:
            break
    weights = selector.weights if selector.weights is not None else (final or averaged)()
    return Run(weights, selector, history)


def hold_out(config, data, dev, n: int, subset: Callable[[list[int]], Any]) -> tuple[Any, Any]:
    """``(training data, dev data)``: with ``config.dev_split`` every round(1/F)-th of the ``n``
    items of ``data`` is held out (``subset(indices)`` takes items); else ``(data, dev)``."""
    if config.dev_split is None:
        return data, dev
    keep, held = split_every(n, config.dev_split)
    return subset(keep), subset(held)


def wants_refit(config, selector: Selector) -> bool:
    """Whether a run that chose its epoch on held-out training sentences trains again on all."""
    return config.dev_split is not None and config.refit and selector.best_epoch is not None


def refit(config, selector: Selector, calls: int, train_again: Callable[[Any, OnEpoch | None], Any],
          on_epoch: OnEpoch | None, n_dev: int, t0: float, dev_key: str = "dev_sentences"):
    """Train again on every training sentence for the chosen epochs: ``train_again(config,
    on_epoch)`` with the selection options off, its ``on_epoch`` stats saying ``refit: N``. For a
    learner whose one call runs its own passes (``calls`` != epochs: batch LaRank) the refit runs
    the configured cap. The model keeps ``config`` and its header says the choice."""
    epochs = selector.best_epoch if calls == config.epochs else config.epochs
    again = replace(config, dev_split=None, patience=None, epochs=epochs)
    told = None if on_epoch is None else (lambda epoch, stats: on_epoch(epoch, stats | {"refit": epochs}))
    model = train_again(again, told)
    model.config = config
    model.info |= selector.info() | {dev_key: n_dev, "refit": True, "refit_epochs": epochs,
                                     "train_seconds": round(time.perf_counter() - t0, 3)}
    return model
