"""The one epoch loop (structkit.learn.loop): dev selection, patience, the kept weights, the refit,
and per-epoch statistics with the same keys, in the same order, for every task."""
from dataclasses import dataclass

import numpy as np
import pytest

from structkit.learn.loop import hold_out, refit, run_epochs, train_counts, wants_refit
from structkit.datasets import sample_dir
from structkit.learn.selection import Selector

SAMPLE = str(sample_dir())


def _fake(scores):
    """A trainer whose epoch e has weights [e] and the dev score scores[e - 1]."""
    state = {"epoch": 0, "final": 0}

    def step(epoch):
        state["epoch"] = epoch
        return train_counts(10 - epoch, 5 - epoch, 20)

    def averaged():
        return np.array([float(state["epoch"])])

    def final():
        state["final"] += 1
        return np.array([-1.0])

    def dev(w):
        return {"acc": scores[int(w[0]) - 1]}

    return step, averaged, final, dev, state


def test_the_best_dev_epoch_is_kept_and_patience_stops():
    step, averaged, final, dev, state = _fake([50.0, 70.0, 70.0, 60.0, 65.0, 90.0])
    seen = []
    run = run_epochs(6, step, averaged, Selector("acc", 2), dev, lambda e, s: seen.append((e, s)), final)
    assert [e for e, _ in seen] == [1, 2, 3, 4]   # epoch 4 is the 2nd without a better score
    assert run.weights.tolist() == [2.0] and state["final"] == 0   # the earliest of the equal best
    assert run.info() == {"selected_epoch": 2, "selected_dev": {"acc": 70.0}, "epochs_run": 4}
    assert [s for _, s in seen] == run.history
    first = run.history[0]
    assert list(first) == ["epoch", "train_updates", "train_mistakes", "train_accuracy", "epoch_seconds", "dev"]
    assert first["epoch"] == 1 and first["train_updates"] == 9 and first["train_mistakes"] == 4
    assert first["train_accuracy"] == pytest.approx(80.0) and first["dev"] == {"acc": 50.0}


def test_the_kept_weights_are_a_snapshot():
    w = np.zeros(2)

    def step(epoch):
        w[:] = epoch   # trained in place, as the beam parser averages into one buffer
        return train_counts(1)

    run = run_epochs(3, step, lambda: w, Selector("acc", None), lambda x: {"acc": 10.0 - x[0]})
    assert run.weights.tolist() == [1.0, 1.0] and w.tolist() == [3.0, 3.0]


def test_without_dev_the_last_epoch_is_kept_through_final():
    step, averaged, final, _, state = _fake([])
    run = run_epochs(3, step, averaged, Selector("acc", 1), None, None, final)
    assert run.weights.tolist() == [-1.0] and state["final"] == 1 and run.info() == {}
    assert [s["epoch"] for s in run.history] == [1, 2, 3] and all("dev" not in s for s in run.history)
    run = run_epochs(2, step, averaged, Selector("acc", 1))
    assert run.weights.tolist() == [2.0]


def test_a_lower_score_can_be_the_better_one():
    step, averaged, _, dev, _ = _fake([20.0, 15.0, 15.0, 18.0, 19.0, 1.0])
    run = run_epochs(6, step, averaged, Selector("acc", 3, lower_is_better=True), dev)
    assert run.info() == {"selected_epoch": 2, "selected_dev": {"acc": 15.0}, "epochs_run": 5}


@dataclass
class _Config:
    epochs: int = 6
    dev_split: float | None = 0.25
    patience: int | None = 2
    refit: bool = True


class _Model:
    def __init__(self, config):
        self.config, self.info = config, {"train_seconds": 0.0}


def test_refit_trains_again_for_the_chosen_epochs():
    step, averaged, _, dev, _ = _fake([50.0, 70.0, 60.0, 60.0, 60.0, 60.0])
    selector = run_epochs(6, step, averaged, Selector("acc", 2), dev).selector
    cfg = _Config()
    assert wants_refit(cfg, selector) and not wants_refit(_Config(refit=False), selector)
    assert not wants_refit(_Config(dev_split=None), selector)
    told, got = [], []

    def again(c, on_epoch):
        got.append(c)
        if on_epoch is not None:
            on_epoch(1, {"epoch": 1})
        return _Model(c)

    m = refit(cfg, selector, 6, again, lambda e, s: told.append(s), 7, 0.0, dev_key="dev_utterances")
    assert got[0] == _Config(epochs=2, dev_split=None, patience=None) and m.config is cfg
    assert told == [{"epoch": 1, "refit": 2}]
    assert {k: m.info[k] for k in ("selected_epoch", "epochs_run", "dev_utterances", "refit", "refit_epochs")} \
        == {"selected_epoch": 2, "epochs_run": 4, "dev_utterances": 7, "refit": True, "refit_epochs": 2}
    # a learner whose one call runs its own passes: the refit runs the configured cap
    assert refit(cfg, selector, 1, again, None, 7, 0.0).info["refit_epochs"] == 6


def test_hold_out_takes_every_kth_item():
    data = list(range(8))
    assert hold_out(_Config(dev_split=None), data, "dev", 8, None) == (data, "dev")
    assert hold_out(_Config(dev_split=0.25), data, None, 8, lambda ix: [data[i] for i in ix]) \
        == ([0, 1, 2, 4, 5, 6], [3, 7])


def _stats_of_every_task():
    from structkit.io.nbest import read_nbest
    from structkit.parse.parser import ParserConfig, train_parser
    from structkit.rerank.task import RerankConfig, train_on
    from structkit.sequence.task import TaggerConfig, train_tagger

    out = {}

    def keep(name):
        return lambda e, s: out.setdefault(name, []).append(s)

    train_tagger(TaggerConfig(task="pos", epochs=2), f"{SAMPLE}/pos/train.txt", f"{SAMPLE}/pos/dev.txt",
                 keep("pos"))
    for algo in ("lookahead", "beam"):
        cfg = ParserConfig(algo=algo, epochs=2, **({"beam": 2} if algo == "beam" else {}))
        train_parser(cfg, f"{SAMPLE}/ud/train.conllu", f"{SAMPLE}/ud/dev.conllu", keep(algo))
    cfg = RerankConfig(epochs=2)
    cfg.validate()
    train_on(cfg, read_nbest(f"{SAMPLE}/nbest/train.jsonl"), read_nbest(f"{SAMPLE}/nbest/test.jsonl"),
             keep("rerank"))
    return out


def test_every_task_reports_the_same_statistics():
    stats = _stats_of_every_task()
    assert sorted(stats) == ["beam", "lookahead", "pos", "rerank"]
    for name, epochs in stats.items():
        assert [s["epoch"] for s in epochs] == [1, 2], name
        for s in epochs:
            keys = list(s)
            assert keys[0] == "epoch" and keys[-2:] == ["epoch_seconds", "dev"], (name, keys)
            assert isinstance(s["train_updates"], int) and s["train_updates"] >= 0, name
            if "train_accuracy" in s and "train_mistakes" in s:   # the same arithmetic everywhere
                assert 0 <= s["train_accuracy"] <= 100 and s["train_mistakes"] >= 0, name
            key = {"pos": "accuracy", "lookahead": "uas", "beam": "las", "rerank": "wer"}[name]
            assert s["epoch_seconds"] >= 0 and 0 <= s["dev"][key] <= 100, name   # a percentage
    for name in ("lookahead", "beam", "rerank"):
        assert list(stats[name][0])[1:3] == ["train_updates", "train_mistakes"], name
