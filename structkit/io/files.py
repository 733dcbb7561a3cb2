"""Opening inputs ('-' is stdin) and writing outputs atomically (temporary file, then rename)."""
from __future__ import annotations

import contextlib
import os
import stat
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
        if sys.stdin is None:
            raise UserError("standard input is closed", "<stdin>")
        yield sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
        return
    with open_binary(path) as f:
        yield f


def open_binary(path: str) -> IO[bytes]:
    """Open a file for reading as bytes, the caller closing it; errors become UserError."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise UserError("no such file", path) from None
    except IsADirectoryError:
        raise UserError("is a directory, not a file", path) from None
    except PermissionError:
        raise UserError("permission denied", path) from None
    except OSError as e:
        raise UserError(f"cannot read: {e.strerror or e}", path) from None


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
    its folder is missing, is not writable, or it is a directory. Commands call this before
    long work (training, tagging a large file) so the mistake is reported at once, not after
    the work is done."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise UserError("cannot write: is a directory", path)
    if _direct(path):
        return
    folder = os.path.dirname(os.path.abspath(os.path.realpath(path)))
    if not os.path.isdir(folder):
        raise UserError("cannot write: the folder does not exist", path)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError("cannot write: permission denied (the folder is not writable)", path)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the same inode, or the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _is_stdin(path: str) -> bool:
    """Whether ``path`` is the file standard input reads (``-o /dev/stdin`` with ``< FILE``)."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdin.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def check_outputs(outputs: list[str | None], inputs: list[str]) -> None:
    """Refuse, before any work, an output that is the same file as an input (or the model, or
    another output) or that cannot be written. '-' and None are standard output; an input '-'
    is standard input, so an output that is the file behind it (``/dev/stdin``) is refused."""
    real = [o for o in outputs if o is not None and o != "-"]
    for k, out in enumerate(real):
        check_output_path(out)
        if _direct(out) and not os.path.exists(out):
            continue
        for inp in inputs:
            if inp == "-" and _is_stdin(out):
                raise UserError("refusing to write over standard input, which this command reads; "
                                "choose another output", out)
            if inp is not None and inp != "-" and same_file(out, inp):
                raise UserError(f"refusing to write over {inp!r}, which this command reads; "
                                "choose another output", out)
        for other in real[:k]:
            if same_file(out, other):
                raise UserError(f"two outputs are the same file ({other!r}); give each its own", out)


def _direct(path: str) -> bool:
    """Outputs written in place rather than through a temporary file and a rename: anything
    that is not a regular file (a FIFO, a device, /dev/stdout on a pipe or terminal). A path
    that resolves to a regular file (``/dev/stdout`` redirected to a file) is written through a
    temporary file beside that file and renamed onto it: never onto the link itself."""
    try:
        st = os.stat(path)
    except OSError:
        return path.startswith(("/dev/", "/proc/"))
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


@contextlib.contextmanager
def atomic_output(path: str | None, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to ``path`` through a temporary file in the same folder, renamed into place only
    when the block finishes without error; an existing file keeps its permissions, and a
    symlink stays a link (its target is replaced). ``None`` or '-' writes to standard output;
    a FIFO or device (``/dev/null``, ``/dev/stdout``) is written directly."""
    if path is None or path == "-":
        if sys.stdout is None:
            raise UserError("standard output is closed", "<stdout>")
        if "b" in mode:
            yield sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
        else:
            yield sys.stdout
        sys.stdout.flush()
        return
    if _direct(path) and not os.path.isdir(path):
        try:
            f = open(path, mode, encoding=encoding if "b" not in mode else None)
        except OSError as e:
            raise UserError(f"cannot write: {e.strerror or e}", path) from None
        with f:
            yield f
        return
    check_output_path(path)
    target = os.path.realpath(path)  # through a symlink: the link stays, its file is replaced
    folder = os.path.dirname(target)
    # An unwritable folder made mkstemp raise a raw OSError (a traceback); it is a user error.
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(target), dir=folder)
    except OSError as e:
        raise UserError(f"cannot write: {e.strerror or e}", path) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
        try:
            perms = stat.S_IMODE(os.stat(target).st_mode)  # an existing file keeps its mode
        except OSError:
            umask = os.umask(0)  # mkstemp creates 0600; a new file gets what open() would give
            os.umask(umask)
            perms = 0o666 & ~umask
        os.chmod(tmp, perms)
        # Renaming onto a directory (or another OS refusal) raised a raw OSError after all
        # the work was done; report it as one line, and the temporary file is removed below.
        try:
            os.replace(tmp, target)
        except OSError as e:
            raise UserError(f"cannot write: {e.strerror or e}", path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
