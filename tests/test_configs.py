"""Every run config in configs/ loads with `structkit train --config` rules; the grids do not."""
from __future__ import annotations

from pathlib import Path

import pytest

from structkit.config import load_config
from structkit.errors import UserError
from structkit.tasks import make_config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RUN = sorted(CONFIGS.glob("*.toml"))
GRIDS = sorted((CONFIGS / "grids").glob("*.toml"))


@pytest.mark.parametrize("path", RUN, ids=[p.name for p in RUN])
def test_run_config_loads_and_validates(path):
    cfg = load_config(str(path))
    data = cfg.pop("data")
    assert data.get("train"), "a run config names its training data"
    for meta in ("name", "description", "experiment"):
        cfg.pop(meta, None)
    config = make_config(cfg)
    assert config.task == cfg["task"]


@pytest.mark.parametrize("path", GRIDS, ids=[p.name for p in GRIDS])
def test_grids_are_not_train_configs(path):
    with pytest.raises(UserError, match="unknown config key"):
        load_config(str(path))


def test_there_are_both():
    assert len(RUN) >= 5 and len(GRIDS) >= 8


def test_task_table_default_learners_are_the_config_defaults():
    import dataclasses

    from structkit.learn import registry
    from structkit.tasks import TASKS

    for t in TASKS.values():
        if not registry.names(t.name):   # a task that only scores files (ud): no learner
            continue
        field = {f.name: f for f in dataclasses.fields(t.training.config_type())}["algo"]
        # (a tagger's default for pos on a CoNLL-U file is kbest-pa: tasks.sequence.default_algo)
        assert field.default == t.training.default_algo, t.name
        assert registry.get(t.training.default_algo, t.name).name == t.training.default_algo
