"""Opening inputs ('-' is stdin) and writing outputs atomically (temporary file, then rename)."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import IO, Iterator

from structkit.errors import UserError


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else str(path)


@contextlib.contextmanager
def open_input(path: str) -> Iterator[IO[bytes]]:
    """Open a file for reading as bytes ('-' is standard input); errors become UserError.

    Bytes, so that ``iter_lines`` decodes line by line and can name the exact line of a
    decoding error (a text stream decodes in blocks and loses the line)."""
    if path == "-":
        yield sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
        return
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise UserError("no such file", path) from None
    except IsADirectoryError:
        raise UserError("is a directory, not a file", path) from None
    except PermissionError:
        raise UserError("permission denied", path) from None
    with f:
        yield f


def iter_lines(path: str, stream: IO) -> Iterator[tuple[int, str]]:
    """Yield (line number, line without its newline) from a bytes or text stream; bytes are
    decoded as UTF-8 (a leading byte-order mark is dropped), and a line that is not valid
    UTF-8 is a UserError naming that line."""
    for lineno, line in enumerate(stream, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise UserError(f"not valid UTF-8 text ({e.reason} at byte {e.start})",
                                display_name(path), lineno) from None
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        yield lineno, line.rstrip("\r\n")


def check_output_path(path: str | None) -> None:
    """Raise UserError if ``path`` (None or '-': standard output) clearly cannot be written:
    its folder is missing or it is a directory. Commands call this before long work (training,
    tagging a large file) so the mistake is reported at once, not after the work is done."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise UserError("cannot write: is a directory", path)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UserError("cannot write: the folder does not exist", path)


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
    check_output_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    # An unwritable folder made mkstemp raise a raw OSError (a traceback); it is a user error.
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    except OSError as e:
        raise UserError(f"cannot write: {e.strerror or e}", path) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
        # mkstemp creates 0600; give the file the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        # Renaming onto a directory (or another OS refusal) raised a raw OSError after all
        # the work was done; report it as one line, and the temporary file is removed below.
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise UserError(f"cannot write: {e.strerror or e}", path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
