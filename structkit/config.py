"""TOML run configs and where corpora are found.

A config holds the options of ``structkit train`` (any key of a task's config class, see
``structkit.tasks``: ``task``, ``algo``, ``epochs``, ``templates``, ``C``, ...) and a ``[data]``
table of ``train``/``dev``/``test`` paths, relative to the data folder.
"""
from __future__ import annotations

import os
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
    p = os.fspath(p)
    if p == "-" or os.path.exists(p):   # as resolve() begins, without importing the datasets
        return p
    from structkit.datasets.paths import resolve

    return resolve(p, must_exist=must_exist)


def load_config(path: str) -> dict[str, Any]:
    """Read and check a config file ('-': standard input): unknown keys and wrong types are
    UserErrors."""
    from structkit.io.files import open_input

    try:
        # '-' is standard input (open_input); a path is opened here, so that its errors say
        # "config file".
        with open_input(path) if path == "-" else open(path, "rb") as f:
            blob = f.read(MAX_CONFIG_BYTES + 1)
        if isinstance(blob, str):
            blob = blob.encode("utf-8")
        if len(blob) > MAX_CONFIG_BYTES:
            raise UserError(f"not a config file: larger than {MAX_CONFIG_BYTES >> 20} MB", path)
        raw = tomllib.loads(blob.decode("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"not valid TOML: {e}", path) from None
    except RecursionError:
        raise UserError("not valid TOML: nested too deeply", path) from None
    except UnicodeDecodeError as e:
        raise UserError(f"not valid TOML: not UTF-8 text ({e.reason} at byte {e.start})", path) from None
    except MemoryError:
        raise UserError("not valid TOML: too large to parse", path) from None
    except OSError as e:
        from structkit.io.files import read_error

        raise read_error(e, path, "config file") from None
    data = raw.pop("data", {})
    if not isinstance(data, dict):
        raise UserError("[data] must be a table of train/dev/test paths", path)
    from structkit.tasks import all_keys

    train_keys = all_keys()  # what some task's config takes (structkit.tasks)
    unknown = (set(raw) - train_keys - META_KEYS) | {f"data.{k}" for k in set(data) - DATA_KEYS}
    if unknown:
        raise UserError(f"unknown config key(s): {', '.join(sorted(unknown))} "
                        f"(known: {', '.join(sorted(train_keys | META_KEYS))}, data.train/dev/test)", path)
    from structkit.options import check_all

    check_all(raw, path)  # the kinds the config classes declare: one message with the CLI and API
    raw["data"] = {k: resolve_data_path(str(v)) for k, v in data.items()}
    return raw


def two_files(task: str, files: tuple[str, ...], model_path: str | None, other: str | None,
              what: str = "GOLD PRED") -> tuple[str, str]:
    """`eval --task TASK GOLD PRED` of a task that scores two CoNLL-U files and takes no model:
    the two paths, resolved (a UserError for anything else given)."""
    if model_path or other:
        raise UserError(f"{'--model' if model_path else '--compare'} does not apply to eval --task {task}")
    if len(files) != 2:
        raise UserError(f"eval --task {task} takes two CoNLL-U files, {what}; got {len(files)}")
    gold, pred = (resolve_data_path(f, must_exist=True) for f in files)
    return gold, pred
