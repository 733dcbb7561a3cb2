"""Model files: one ``.npz`` archive, never pickle.

The archive holds numpy arrays only (loaded with ``allow_pickle=False``, so a model file from a
stranger cannot run code) and a JSON header stored as bytes in the array ``__header__``: format
name and version, task, and whatever the task adapter records (labels, templates, config, a
checksum of the training data). A sha256 over all arrays is kept in the header and checked on
load, so a damaged file is refused instead of silently predicting nonsense. Files are written
to a temporary name and renamed, so an interrupted save never leaves half a model behind.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from typing import Any

import numpy as np

from structkit import __version__
from structkit.errors import UserError
from structkit.io.files import atomic_output

FORMAT = "structkit-model"
FORMAT_VERSION = 1
_HEADER = "__header__"


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_model(path: str, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write a model file atomically."""
    if _HEADER in arrays:
        raise ValueError(f"array name {_HEADER} is reserved")
    full = {"format": FORMAT, "format_version": FORMAT_VERSION,
            "structkit_version": __version__, **header, "checksum": _checksum(arrays)}
    blob = np.frombuffer(json.dumps(full, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    with atomic_output(path, "wb") as f:
        np.savez_compressed(f, **{_HEADER: blob}, **arrays)


def load_model(path: str, tasks: tuple[str, ...] | None = None,
               command: str | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and verify a model file; ``tasks`` lists the tasks the caller can use.

    Every failure (missing, not a model, damaged, other format version, wrong task) is a
    UserError naming the file.
    """
    try:
        z = np.load(path, allow_pickle=False)
        # A plain .npy file loads as an ndarray, which is not a context manager (TypeError
        # traceback); only an .npz archive can be a model.
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive")
        with z:
            arrays = {name: z[name] for name in z.files}
    except FileNotFoundError:
        raise UserError("no such model file", path) from None
    except IsADirectoryError:
        raise UserError("is a directory, not a model file", path) from None
    # Zlib.error (damaged compressed data inside the archive) is not an OSError or
    # ValueError and escaped as a traceback.
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, zipfile.LargeZipFile,
            zlib.error) as e:
        kind = "zlib.error" if isinstance(e, zlib.error) else type(e).__name__
        raise UserError(f"not a structkit model file, or a damaged one ({kind})", path) from None
    # NpzFile returns the raw bytes of a zip member that is not an .npy file; a zip that
    # merely holds such a member is not a model (``bytes`` has no ``.tobytes`` below).
    if not all(isinstance(a, np.ndarray) for a in arrays.values()):
        raise UserError("not a structkit model file (an archive member is not an array)", path)
    if _HEADER not in arrays:
        raise UserError("not a structkit model file (no header)", path)
    try:
        header = json.loads(arrays.pop(_HEADER).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UserError("damaged model file: unreadable header", path) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise UserError("not a structkit model file (unknown format)", path)
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise UserError(f"model file format version {version} is not supported by this structkit "
                        f"(it reads version {FORMAT_VERSION}); retrain the model", path)
    if header.get("checksum") != _checksum(arrays):
        raise UserError("damaged model file: checksum mismatch", path)
    task = header.get("task")
    if tasks is not None and task not in tasks:
        how = f" (`structkit {command}` needs a {' or '.join(tasks)} model)" if command else ""
        raise UserError(f"this model was trained for task {task!r}{how}", path)
    return header, arrays
