"""TOML run configs and where corpora are found.

A config holds the options of ``structkit train`` (any key of a task's config class, see
``structkit.tasks``: ``task``, ``algo``, ``epochs``, ``templates``, ``C``, ...) and a ``[data]``
table of ``train``/``dev``/``test`` paths, relative to the data folder.
"""
from __future__ import annotations

import tomllib
from typing import Any

from structkit.errors import UserError

DATA_KEYS = {"train", "dev", "test"}
META_KEYS = {"name", "description", "experiment"}
# A config is a page of options: more than this is not a config (and /dev/zero never ends).
MAX_CONFIG_BYTES = 1 << 20


def resolve_data_path(p: str, must_exist: bool = False) -> str:
    """A path as given if it exists, else looked up in ``$STRUCTKIT_DATA`` and the cache
    (``structkit.datasets.resolve``); with ``must_exist`` a path found nowhere is a UserError
    naming the folders searched and the fetch command."""
    from structkit.datasets.paths import resolve

    return resolve(p, must_exist=must_exist)


def load_config(path: str) -> dict[str, Any]:
    """Read and check a config file: unknown keys and wrong types are UserErrors."""
    try:
        with open(path, "rb") as f:
            blob = f.read(MAX_CONFIG_BYTES + 1)
        if len(blob) > MAX_CONFIG_BYTES:
            raise UserError(f"not a config file: larger than {MAX_CONFIG_BYTES >> 20} MB", path)
        raw = tomllib.loads(blob.decode("utf-8"))
    except FileNotFoundError:
        raise UserError("no such config file", path) from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"not valid TOML: {e}", path) from None
    except RecursionError:
        raise UserError("not valid TOML: nested too deeply", path) from None
    except UnicodeDecodeError as e:
        raise UserError(f"not valid TOML: not UTF-8 text ({e.reason} at byte {e.start})", path) from None
    except IsADirectoryError:
        raise UserError("is a directory, not a config file", path) from None
    except MemoryError:
        raise UserError("not valid TOML: too large to parse", path) from None
    except OSError as e:
        raise UserError(f"cannot read config file: {e.strerror or e}", path) from None
    data = raw.pop("data", {})
    if not isinstance(data, dict):
        raise UserError("[data] must be a table of train/dev/test paths", path)
    from structkit.tasks import all_keys

    train_keys = all_keys()  # what some task's config takes (structkit.tasks)
    unknown = (set(raw) - train_keys - META_KEYS) | {f"data.{k}" for k in set(data) - DATA_KEYS}
    if unknown:
        raise UserError(f"unknown config key(s): {', '.join(sorted(unknown))} "
                        f"(known: {', '.join(sorted(train_keys | META_KEYS))}, data.train/dev/test)", path)
    for k in ("epochs", "cutoff", "seed", "label_order", "depth", "k", "nr", "window", "min_cluster",
              "jobs"):
        if k in raw and (not isinstance(raw[k], int) or isinstance(raw[k], bool)):
            raise UserError(f"config key {k!r} must be an integer, got {raw[k]!r}", path)
    for k in ("margin", "C", "tau", "lambda"):
        if k in raw and (isinstance(raw[k], bool) or not isinstance(raw[k], (int, float))):
            raise UserError(f"config key {k!r} must be a number, got {raw[k]!r}", path)
    for k in ("task", "algo", "direction", "columns", "search", "label_column"):
        if k in raw and not isinstance(raw[k], str):
            raise UserError(f"config key {k!r} must be a string, got {raw[k]!r}", path)
    if "templates" in raw and not (isinstance(raw["templates"], str) or
                                   (isinstance(raw["templates"], list)
                                    and all(isinstance(t, str) for t in raw["templates"]))):
        raise UserError("config key 'templates' must be a template set name or a list of templates", path)
    if "features" in raw and not (isinstance(raw["features"], str) or
                                  (isinstance(raw["features"], list)
                                   and all(isinstance(t, str) for t in raw["features"]))):
        raise UserError("config key 'features' must be a string like 'ngram,trigger' or a list of "
                        "feature families", path)
    if "topic_levels" in raw and not (isinstance(raw["topic_levels"], list) and all(
            isinstance(t, int) and not isinstance(t, bool) for t in raw["topic_levels"])):
        raise UserError("config key 'topic_levels' must be a list of integers", path)
    raw["data"] = {k: resolve_data_path(str(v)) for k, v in data.items()}
    return raw
