"""Where corpora live: ``$STRUCTKIT_DATA`` if set, then the user's cache folder; and how a
relative data path such as ``conll2000/train.txt`` is found in them. The sample corpora ship
inside the package (``structkit/data/sample/``): ``sample/chunk/train.txt`` is found there,
from any folder, after the data folders."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from structkit.datasets.registry import corpus_for_path
from structkit.errors import UserError

ENV = "STRUCTKIT_DATA"


def cache_dir() -> Path:
    """structkit's folder in the user's cache: ``$XDG_CACHE_HOME/structkit`` (default
    ``~/.cache/structkit``) on Linux, ``~/Library/Caches/structkit`` on macOS,
    ``%LOCALAPPDATA%\\structkit\\Cache`` on Windows."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "structkit" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "structkit"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "structkit"


def env_dir() -> Path | None:
    """``$STRUCTKIT_DATA`` as a path, or None where it is unset or empty."""
    env = os.environ.get(ENV)
    return Path(env).expanduser() if env else None


def data_home() -> Path:
    """Where ``structkit data fetch`` writes: ``$STRUCTKIT_DATA`` if set, else the cache."""
    return env_dir() or cache_dir()


def search_dirs() -> list[Path]:
    """The folders a relative data path is looked up in, in order."""
    dirs = [d for d in (env_dir(), cache_dir()) if d is not None]
    return list(dict.fromkeys(dirs))


def describe_dirs() -> str:
    """The searched folders as the error messages name them."""
    env = env_dir()
    parts = [f"${ENV}={env}" if env else f"${ENV} (unset)"]
    parts.append(f"the cache {cache_dir()}")
    return ", ".join(parts)


def shipped_dir() -> Path:
    """The package's own data folder (``structkit/data``, holding ``sample/``), found with
    ``importlib.resources`` so that an installed wheel finds its copy."""
    from importlib.resources import files

    return Path(str(files("structkit").joinpath("data")))


def sample_dir() -> Path:
    """The shipped sample corpora: ``sample_dir() / "chunk" / "train.txt"``."""
    return shipped_dir() / "sample"


def find(rel: str) -> Path | None:
    """The first existing ``folder/rel`` of :func:`search_dirs`, then of the package's own data
    folder (``sample/...``), or None."""
    for d in (*search_dirs(), shipped_dir()):
        p = d / rel
        if p.exists():
            return p
    return None


def resolve(path: str | os.PathLike, must_exist: bool = True) -> str:
    """A data path for reading: as given if it exists (or is '-'), else looked up in
    ``$STRUCTKIT_DATA`` and then the cache. A path found nowhere is a UserError naming the
    folders searched and, for a file of a registered corpus, the fetch command that gets it
    (with ``must_exist=False`` it is returned as given, for the reader to report later)."""
    p = os.fspath(path)
    if p == "-" or os.path.exists(p):
        return p
    if not os.path.isabs(p):
        found = find(p)
        if found is not None:
            return str(found)
    if not must_exist:
        return p
    hint = ""

    corpus = corpus_for_path(p)
    if corpus is not None:
        hint = f"; `structkit data fetch {corpus.name}` gets it"
    if os.path.isabs(p):
        raise UserError("no such file" + hint, p)
    raise UserError(f"no such file here or in the data folders ({describe_dirs()}){hint}", p)
