"""Opening inputs ('-' is stdin) and writing outputs atomically (temporary file, then rename)."""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from typing import IO, Iterator, Sequence

from structkit.errors import UserError


# Temporary files holding standard input (``spooled_stdin``): shown as <stdin>, not by their name.
_SPOOLED: set[str] = set()


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" or path in _SPOOLED else str(path)


# Temporary files and folders are named ``BASE + PID.HOST-...`` (``owned``): one that a killed
# process left (SIGKILL, a power cut: no ``finally`` ran) is removed by the next run that makes
# one of its kind in that folder (``sweep_stale``), never one of a live process or another host.
_NODE = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
_HOST = hashlib.sha1(_NODE.encode("utf-8", "replace")).hexdigest()[:8]
_SWEPT: set[tuple[str, str]] = set()


def owned(base: str) -> str:
    """The prefix of a temporary name of this process: ``base``, its id, its host's hash."""
    return f"{base}{os.getpid()}.{_HOST}-"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep_stale(folder: str, base: str) -> int:
    """Remove what dead processes of this host left in ``folder`` under ``base`` (``owned``
    names whose process no longer runs); once per folder and base in a process. Returns how
    many were removed; a folder that cannot be read or an entry that cannot be removed is left."""
    key = (os.path.realpath(folder), base)
    if key in _SWEPT:
        return 0
    _SWEPT.add(key)
    removed = 0
    try:
        entries = os.scandir(folder)
    except OSError:
        return 0
    with entries:
        for e in entries:
            if not e.name.startswith(base):
                continue
            pid, _, rest = e.name[len(base):].partition(".")
            if not (pid.isdigit() and len(pid) < 10 and rest[:8] == _HOST and rest[8:9] == "-"):
                continue
            if _alive(int(pid)):
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path)
                else:
                    os.unlink(e.path)
                removed += 1
            except OSError:
                pass
    return removed


def temporary_file(base: str, suffix: str = "", folder: str | None = None) -> tuple[int, str]:
    """``tempfile.mkstemp`` in ``folder`` (the temporary folder by default) named by ``owned``,
    after sweeping what dead processes left there under ``base``. An OSError is left to the
    caller, who names the output it was for (a temporary beside an output)."""
    folder = folder or tempfile.gettempdir()
    sweep_stale(folder, base)
    return tempfile.mkstemp(prefix=owned(base), suffix=suffix, dir=folder)


def temporary_error(e: OSError | str) -> UserError:
    """One line for a failed write in the temporary folder (a full disk under TMPDIR was
    reported as 'standard output: no space left'): it names the temporary folder."""
    reason = e if isinstance(e, str) else os_reason(e)
    return UserError(f"cannot write a temporary file: {reason} (set TMPDIR to a folder with room)",
                     tempfile.gettempdir())


@contextlib.contextmanager
def temporary_folder(base: str) -> Iterator[str]:
    """A ``tempfile.TemporaryDirectory`` named by ``owned``, after sweeping the stale ones; one
    that cannot be made is ``temporary_error``, as are the caller's writes it wraps in
    ``temporary_writes``."""
    sweep_stale(tempfile.gettempdir(), base)
    try:
        made = tempfile.TemporaryDirectory(prefix=owned(base))
    except OSError as e:
        raise temporary_error(e) from None
    with made as folder:
        yield folder


@contextlib.contextmanager
def temporary_writes(folder: str | None = None) -> Iterator[None]:
    """Writes in the temporary folder: an OSError, or a failed write that names a file in
    ``folder`` (one of ``temporary_folder``: a model saved there), is ``temporary_error``."""
    try:
        yield
    except OSError as e:
        raise temporary_error(e) from None
    except UserError as e:
        inside = folder is not None and e.path is not None and \
            os.path.realpath(str(e.path)).startswith(os.path.join(os.path.realpath(folder), ""))
        if not (inside and e.message.startswith("cannot write")):
            raise
        raise temporary_error(e.message.split(": ", 1)[-1]) from None


def _spool_error(e: OSError) -> UserError:
    return UserError(f"cannot keep standard input in a temporary file in {tempfile.gettempdir()}: "
                     f"{os_reason(e)} (set TMPDIR to a folder with room)", "<stdin>")


def stdin_once(*named: tuple[str, str | None]) -> None:
    """Refuse '-' for more than one input of a command: standard input can be read once.
    ``named`` is (option or argument as the user wrote it, value) pairs."""
    given = [name for name, value in named if value == "-"]
    if len(given) > 1:
        raise UserError(f"standard input ('-') can be only one of the inputs; it was given for "
                        f"{' and '.join(given)}: give files for the others")


@contextlib.contextmanager
def spooled_stdin(paths: Sequence[str | None]) -> Iterator[list[str | None]]:
    """``paths`` for readers that open a file by name or read it twice (sniff, then read): a
    '-' (at most one: ``stdin_once``) becomes a temporary file holding all of standard input,
    removed when the block ends. Messages show it as <stdin>: ``display_name`` names it so, and
    a UserError raised in the block that names the temporary file is reworded."""
    if sum(p == "-" for p in paths) > 1:
        stdin_once(*((f"file {k + 1}", p) for k, p in enumerate(paths)))
    if "-" not in paths:
        yield list(paths)
        return
    try:
        fd, tmp = temporary_file("structkit-stdin-")
    except OSError as e:
        raise _spool_error(e) from None
    _SPOOLED.add(tmp)
    try:
        try:
            with os.fdopen(fd, "wb") as out, open_input("-") as f:
                while block := f.read(1 << 20):
                    out.write(block.encode("utf-8") if isinstance(block, str) else block)
        except OSError as e:
            raise _spool_error(e) from None
        try:
            yield [tmp if p == "-" else p for p in paths]
        except UserError as e:
            if tmp not in str(e):
                raise
            raise UserError(e.message.replace(tmp, "<stdin>"),
                            "<stdin>" if e.path == tmp else e.path, e.line) from None
    finally:
        _SPOOLED.discard(tmp)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


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


def read_error(e: OSError, path: str, what: str = "file") -> UserError:
    """The one line for a file that cannot be opened for reading (``what``: file, model file,
    config file): missing, a directory, not permitted, or the system's reason."""
    if path == "-":  # a reader that opens by name, where standard input is not taken
        return UserError(f"standard input ('-') cannot be read as the {what} here: give its path", path)
    if isinstance(e, FileNotFoundError):
        return UserError(f"no such {what}", path)
    if isinstance(e, IsADirectoryError):
        return UserError(f"is a directory, not a {what}", path)
    if isinstance(e, PermissionError):
        return UserError(f"cannot read the {what}: permission denied", path)
    return UserError(f"cannot read the {what}: {e.strerror or e}", path)


def open_binary(path: str) -> IO[bytes]:
    """Open a file for reading as bytes, the caller closing it; errors become UserError."""
    try:
        return open(path, "rb")
    except OSError as e:
        raise read_error(e, path) from None


# The longest line a line-based format (CoNLL, CoNLL-U, CoNLL-X, n-best lines, raw text) may
# have: a line is read whole, so without a bound one line of /dev/zero would fill the memory.
MAX_LINE_BYTES = 16 << 20


def bounded_lines(path: str, stream, limit: int = MAX_LINE_BYTES) -> Iterator:
    """The raw lines (bytes or str, newline kept) of a stream, none longer than ``limit``:
    a longer line is a UserError naming the file and line, raised after reading at most
    ``limit`` + 1 bytes of it. A stream without ``readline`` (a list, a generator: lines the
    caller already holds) is checked line by line as well."""
    readline = getattr(stream, "readline", None)
    lineno = 0
    if readline is None:
        for line in stream:
            lineno += 1
            if not isinstance(line, (str, bytes)):
                raise UserError(f"expected lines of text (str or bytes), got {type(line).__name__}",
                                display_name(path), lineno)
            if len(line) > limit:
                raise _too_long(path, lineno, limit)
            yield line
        return
    while True:
        line = readline(limit + 1)
        if not line:
            return
        lineno += 1
        if not isinstance(line, (str, bytes)):
            raise UserError(f"expected lines of text (str or bytes), got {type(line).__name__}",
                            display_name(path), lineno)
        if len(line) > limit and not (len(line) == limit + 1 and line[-1:] in (b"\n", "\n")):
            raise _too_long(path, lineno, limit)
        yield line


def size_text(n: int) -> str:
    """A byte limit for a message: '16 MB', or '100 bytes' below a megabyte."""
    return f"{n >> 20} MB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


def _too_long(path: str, lineno: int, limit: int) -> UserError:
    return UserError(f"line longer than {size_text(limit)} (the limit for one line; is this a "
                     "text file?)", display_name(path), lineno)


def read_capped(path: str, limit: int, what: str, env: str | None = None) -> bytes:
    """The whole content of a file read whole (a JSON document, a config), at most ``limit``
    bytes: a larger file (or a FIFO or device that never ends) is a UserError after reading
    ``limit`` + 1 bytes, not a memory blow-up."""
    with open_input(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        how = f"; {env} raises it" if env else ""
        raise UserError(f"larger than {size_text(limit)}, the limit for {what}{how}",
                        display_name(path))
    return data


def env_limit(name: str, default: int) -> int:
    """A byte limit from the environment variable ``name`` (a positive integer), else ``default``."""
    try:
        v = int(os.environ.get(name, default))
    except ValueError:
        return default
    return v if v > 0 else default


def iter_lines(path: str, stream: IO, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """Yield (line number, line without its newline) from a bytes or text stream; bytes are
    decoded as UTF-8 (a leading byte-order mark is dropped), and a line that is not valid
    UTF-8 is a UserError naming that line, as is one longer than ``limit``
    (``bounded_lines``)."""
    for lineno, line in enumerate(bounded_lines(path, stream, limit), 1):
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
        fd, tmp = temporary_file(".tmp-", os.path.basename(target), folder)
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


def check_writable(path: str | None, what: str = "this output") -> None:
    """Refuse an output whose folder cannot be written, by creating (and removing) a temporary
    file there: a read-only folder was only found after the whole training. '-' is refused
    (``what``, e.g. '--model', names the output in the message)."""
    if path is None:
        return
    if path == "-":  # would have written a file named '-'
        raise UserError(f"{what} is written to a file (renamed into place when complete), not to "
                        "standard output: give a path", path)
    if os.path.exists(path) and not os.path.isfile(path):
        # a model is renamed into place: that would replace a device node or FIFO
        raise UserError("cannot write: not a regular file (a model is written to a file)", path)
    try:
        fd, tmp = temporary_file(".tmp-", "", os.path.dirname(os.path.realpath(path)))
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UserError(f"cannot write: {e.strerror or e}", path) from None
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UserError("cannot write: permission denied", path)


def commit_together(writers) -> None:
    """Write each ``(path, write(tmp_path))`` to a temporary file beside its path, and rename
    them all into place only when every one was written: a failed metrics file leaves the old
    model alone (and the other way round). OSErrors (a full disk) are one line naming the file."""
    done: list[tuple[str, str]] = []
    try:
        umask = os.umask(0)
        os.umask(umask)
        for shown, write in writers:
            # Through a link (a symlinked model, /dev/stdout redirected to a file) the file it
            # names is replaced and the link stays, as `-o` does: never renamed over the link.
            path = os.path.realpath(shown)
            if os.path.exists(path) and not os.path.isfile(path):
                raise UserError("cannot write: not a regular file (a model is written to a file)", shown)
            fd, tmp = temporary_file(".tmp-", os.path.basename(path), os.path.dirname(path))
            os.close(fd)
            done.append((tmp, path))
            try:
                write(tmp)
                try:  # an existing file keeps its permissions
                    mode = os.stat(path).st_mode & 0o7777
                except OSError:
                    mode = 0o666 & ~umask
                os.chmod(tmp, mode)
            except OSError as e:
                raise UserError(f"cannot write: {os_reason(e)}", shown) from None
        for tmp, path in done:
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise UserError(f"cannot write: {os_reason(e)}", path) from None
    except BaseException:
        for tmp, _ in done:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def os_reason(e: OSError) -> str:
    """The system's reason for an OSError, a full disk said plainly."""
    import errno

    return "no space left on the device (disk full)" if e.errno == errno.ENOSPC else (e.strerror or str(e))


def printable_line(line: str) -> str:
    """A line shown on the terminal, each tab-separated field through :func:`printable` (a
    line break, ESC or BEL in a model's strings is shown escaped, not obeyed)."""
    if line.isprintable():
        return line
    return "\t".join(printable(part) for part in line.split("\t"))


def printable(s: str) -> str:
    """``s`` with terminal control characters (ESC, BEL, CR, ...) written as escapes (\\x1b),
    so showing a model cannot drive the user's terminal."""
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in s)
