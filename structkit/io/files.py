"""Opening inputs ('-' is stdin) and writing outputs atomically (temporary file, then rename)."""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from typing import IO, Iterator

from structkit.errors import UserError


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else str(path)


@contextlib.contextmanager
def open_input(path: str, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """Open a text file for reading; '-' reads standard input. Errors become UserError."""
    if path == "-":
        stream = io.TextIOWrapper(sys.stdin.buffer, encoding=encoding, errors="strict") \
            if hasattr(sys.stdin, "buffer") else sys.stdin
        yield stream
        return
    try:
        f = open(path, encoding=encoding, errors="strict")
    except FileNotFoundError:
        raise UserError("no such file", path) from None
    except IsADirectoryError:
        raise UserError("is a directory, not a file", path) from None
    except PermissionError:
        raise UserError("permission denied", path) from None
    with f:
        yield f


def iter_lines(path: str, stream: IO[str]) -> Iterator[tuple[int, str]]:
    """Yield (line number, line without newline); a decoding error is a UserError."""
    lineno = 0
    try:
        for lineno, line in enumerate(stream, 1):
            yield lineno, line.rstrip("\r\n")
    except UnicodeDecodeError as e:
        raise UserError(f"not valid UTF-8 text ({e.reason})", display_name(path), lineno + 1) from None


@contextlib.contextmanager
def atomic_output(path: str | None, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to ``path`` through a temporary file in the same folder, renamed into place only
    when the block finishes without error. ``None`` or '-' writes to standard output."""
    if path is None or path == "-":
        if "b" in mode:
            yield sys.stdout.buffer
        else:
            yield sys.stdout
        sys.stdout.flush()
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError("cannot write: the folder does not exist", path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
