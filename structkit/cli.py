"""The ``structkit`` entry point: the command group, assembled from ``structkit.commands``
(one module per group of commands), and the process plumbing around it: one-line errors and exit
codes, signals, closed or broken standard streams."""
from __future__ import annotations

import sys

import click

from structkit import __version__
from structkit.commands import compile, data, evaluate, inspect, models, serve, train
from structkit.errors import UserError
from structkit.io.files import os_reason, printable
from structkit.tasks import tasks


class _Group(click.Group):
    """The command group: the fixed commands, and each registered task's command, read from the
    task registry when listed or called (a task registered after import has its command)."""

    def list_commands(self, ctx) -> list[str]:
        return sorted({*self.commands, *(t.command.name for t in tasks() if t.command)})

    def get_command(self, ctx, name: str):
        from structkit.commands.run import task_command

        if name in self.commands:
            return self.commands[name]

        for t in tasks():
            if t.command is not None and t.command.name == name:
                return task_command(t)
        return None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="structkit")
def cli() -> None:
    """structkit: structured prediction for NLP.

    \b
    Fetch CoNLL-2000, train a chunker and chunk a file:
      structkit data fetch conll2000
      structkit train --task chunk --train conll2000/train.txt --model chunk.model
      structkit chunk --model chunk.model conll2000/test.txt > out.txt
      structkit eval --task chunk out.txt

    Relative data paths that do not exist are looked up in $STRUCTKIT_DATA, then in
    the cache that `structkit data fetch` fills. '-' reads standard input wherever a
    file is read.
    """


def _add_commands() -> None:
    for command in (train.train, evaluate.eval_cmd, inspect.explain, inspect.dump, inspect.plot,
                    inspect.algorithms, data.data, serve.serve, models.info, models.models,
                    compile.compile_cmd):
        cli.add_command(command)


_add_commands()


# Click >= 8.2 raises this (a UsageError whose message is the whole help) for a bare `structkit`.
_NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Signalled(BaseException):
    """SIGTERM or SIGHUP, raised where the program is, so the cleanup that SIGINT's
    KeyboardInterrupt runs (temporary files removed) runs for these too."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


# The signals received in this run: one raised inside numba's compiler (a cold cache) comes out
# of it as another exception (a RuntimeError, a SystemError) after Python reported it as
# "Exception ignored": it is still the signal, reported as such in one line.
_RECEIVED: list[int] = []


def _on_signal(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise _Signalled(signum)


def _on_interrupt(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise KeyboardInterrupt


def _unraisable(hook):
    """``sys.unraisablehook`` that stays quiet about a signal's exception raised where Python
    cannot propagate it (a ctypes callback in numba's compiler): the run ends on it anyway."""
    def quiet(u) -> None:
        if isinstance(u.exc_value, (KeyboardInterrupt, _Signalled)):
            return
        hook(u)
    return quiet


def _signal_cause(e: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or _Signalled in ``e``'s chain of causes, if any."""
    seen = 0
    while e is not None and seen < 16:
        if isinstance(e, (KeyboardInterrupt, _Signalled)):
            return e
        e = e.__cause__ or e.__context__
        seen += 1
    return None


def _install_signal_handlers() -> dict:
    """Handlers for SIGTERM and SIGHUP where they have the default one; returns what they
    replaced (restored when ``main`` returns, for in-process callers such as the tests)."""
    import signal

    replaced = {}
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_interrupt)
            replaced[signal.SIGINT] = signal.default_int_handler
    except (ValueError, OSError):
        pass
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            old = signal.getsignal(sig)
            if old in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)
                replaced[sig] = old
        except (ValueError, OSError):  # not the main thread, or an embedding that forbids it
            pass
    return replaced


class _ClosedStdout:
    """Standard output when the process was started without one (``>&-``): commands that
    write nothing there run as usual; a write is the one-line error 'standard output: closed'
    (it was discarded without a word, or a traceback)."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        import errno

        raise OSError(errno.EBADF, "closed (the command was started with standard output closed)")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def buffer(self):
        return self


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so the interpreter's final flush does
    not fail again (which turned a broken pipe into a silent exit 1)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass


def _os_error_line(e: OSError) -> str:
    """One line for an OSError that no command turned into a UserError: the file it is about
    (standard output when none is named) and the system's reason."""
    import errno as _errno

    where = e.filename
    if where is None:  # a write to an open file: the output being written, if one is
        tb = e.__traceback__
        while tb is not None:
            f = tb.tb_frame
            if f.f_code.co_name == "atomic_output" and isinstance(f.f_locals.get("path"), str) \
                    and f.f_locals["path"] != "-":
                where = f.f_locals["path"]
            tb = tb.tb_next
    if where is None and e.errno in (_errno.ENOSPC, _errno.EPIPE, _errno.EIO, _errno.EFBIG,
                                     _errno.EDQUOT, _errno.EBADF):
        where = "standard output"
    reason = os_reason(e) or type(e).__name__
    line = f"structkit: error: {where}: {reason}" if where else f"structkit: error: {reason}"
    return printable(line)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, never a traceback.

    Exit codes (docs/guide/commands.md): 0 success (also when the reader of standard output
    closed the pipe early, e.g. ``| head``); 1 an error, shown as one line; 2 a usage error;
    130 interrupted (Ctrl-C); 128 + N killed by signal N that structkit handles (SIGTERM 143,
    SIGHUP 129), after removing its temporary files."""
    import signal

    replaced = _install_signal_handlers()
    del _RECEIVED[:]
    hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(hook)
    try:
        _main(argv)
    finally:
        sys.unraisablehook = hook
        for sig, old in replaced.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError):
                pass


def _main(argv: list[str] | None) -> None:
    import os

    if sys.stdin is None:  # started with standard input closed (<&-)
        sys.stdin = open(os.devnull)
    if sys.stdout is None:  # started with standard output closed (>&-): writing to it fails
        sys.stdout = _ClosedStdout()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    try:
        rv = cli.main(args=argv, prog_name="structkit", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe on stdout is reported here, not at exit
    except UserError as e:
        click.echo(printable(f"structkit: error: {e}"), err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("structkit: aborted", err=True)
        sys.exit(130)
    except SystemExit as e:
        # Click turns a broken pipe (EPIPE) into a silent exit 1, having wrapped stdout.
        if e.code == 1 and type(sys.stdout).__name__ == "_PacifyFlushWrapper":
            _quiet_stdout()
            sys.exit(0)
        raise
    except _NoArgsIsHelp as e:
        # `structkit` with no arguments printed the whole help as one "error: Usage: ..."
        # message; show the help as Click itself does (stderr, exit 2).
        click.echo(e.ctx.get_help(), err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        ctx = getattr(e, "ctx", None)
        where = f"{ctx.command_path}: " if ctx is not None else "structkit: "
        click.echo(printable(f"{where}error: {e.format_message()} (see --help)"), err=True)
        sys.exit(e.exit_code)
    except SystemError as e:
        # A signal's exception raised while numba's dispatcher runs Python code comes out of
        # the call as "SystemError: ... returned a result with an exception set", the signal's
        # exception as its cause: the signal it is, not an internal error.
        sig = _signal_cause(e)
        if sig is None:
            if _RECEIVED:
                _stopped(_RECEIVED[0])
            raise
        if isinstance(sig, KeyboardInterrupt):
            click.echo("structkit: interrupted", err=True)
            sys.exit(130)
        _stopped(sig.signum)
    except KeyboardInterrupt:
        click.echo("structkit: interrupted", err=True)
        sys.exit(130)
    except _Signalled as e:
        _stopped(e.signum)
    except BrokenPipeError:
        # The reader closed the pipe (`structkit chunk big | head -1`): it wanted no more.
        # End quietly with success, so `set -o pipefail` scripts do not fail.
        _quiet_stdout()
        sys.exit(0)
    except RecursionError:
        click.echo("structkit: error: input nested too deeply", err=True)
        sys.exit(1)
    except OSError as e:
        if e.errno in (32,):  # EPIPE raised as a plain OSError
            _quiet_stdout()
            sys.exit(0)
        if _RECEIVED:
            _stopped(_RECEIVED[0])
        click.echo(_os_error_line(e), err=True)
        sys.exit(1)
    except Exception:
        if _RECEIVED:   # a signal turned into another exception on its way out (numba's compiler)
            _stopped(_RECEIVED[0])
        raise
    sys.exit(rv if isinstance(rv, int) else 0)


def _stopped(signum: int) -> None:
    """End as stopped by the signal ``signum``: one line, exit 130 for Ctrl-C, else 128 + N."""
    import signal

    if signum == signal.SIGINT:
        click.echo("structkit: interrupted", err=True)
        sys.exit(130)
    click.echo(f"structkit: stopped by {signal.Signals(signum).name}", err=True)
    sys.exit(128 + signum)
