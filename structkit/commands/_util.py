"""What the commands share: progress and messages, option types and help groups, the batch
options and run, JSON-safe numbers. No task is named here."""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, fields

import click

from structkit.errors import UserError
from structkit.io.files import printable
from structkit.learn import registry
from structkit.learn.registry import alternatives
from structkit.tasks import CommandOption, names, tasks


def progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def say(msg: str, enabled: bool) -> None:
    if enabled:
        click.echo(msg, err=True)


class EpochReport:
    """Training progress: a tqdm bar on a terminal (not with -q), else one line per epoch on
    stderr with -v, else nothing. Call it with each epoch's message; close() at the end."""

    def __init__(self, total: int, desc: str, quiet: bool, verbose: bool):
        self.total = total
        self.verbose = verbose
        self.desc = desc
        self.done = 0
        self.bar = None
        if progress_enabled(quiet):
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="epoch", file=sys.stderr)

    def __call__(self, epoch: int, msg: str, seconds: float, stage: str | None = None,
                 expect: int | None = None) -> None:
        """One epoch done. A task trained in stages (a pipeline) names the ``stage`` and how
        many epochs are still to come in all of them (``expect``): the bar's length follows."""
        self.done += 1
        if expect is not None:
            self.total = self.done + expect
        if self.bar is not None:
            if stage is not None:
                self.bar.set_description(f"{self.desc}: {stage}", refresh=False)
            if expect is not None and self.bar.total != self.total:
                self.bar.total = self.total
            self.bar.set_postfix_str(msg)
            self.bar.update(1)
        elif self.verbose:
            click.echo(f"epoch {self.done}/{self.total}: {msg} ({seconds:.2f} s)", err=True)

    def refit(self, epoch: int, total: int, msg: str, seconds: float) -> None:
        """An epoch of the retraining on every sentence after --dev-split chose the epochs."""
        if self.bar is not None:
            if epoch == 1:
                self.bar.reset(total=total)
                self.bar.set_description(self.bar.desc.replace("train", "refit", 1))
            self.bar.set_postfix_str(msg)
            self.bar.update(1)
        elif self.verbose:
            click.echo(f"refit on all, epoch {epoch}/{total}: {msg} ({seconds:.2f} s)", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---- help: choices, option groups ------------------------------------------------------------
class Choice(click.Choice):
    """A Click choice (listed in --help, completed by shells) whose refusal is structkit's
    one-line error, in the wording the config checks use for the same option. ``choices`` may
    be a function, read when used: a learner registered after import is a valid --algo."""

    def __init__(self, choices, accept=None):
        self._source = choices
        self._accept = accept   # also taken, though not offered (their own error says why)
        super().__init__(())

    @property
    def choices(self):
        return tuple(self._source() if callable(self._source) else self._source)

    @choices.setter
    def choices(self, value) -> None:  # click.Choice.__init__ assigns; the source stays
        pass

    def convert(self, value, param, ctx):
        if value in self.choices or (self._accept is not None and value in self._accept()):
            return value
        flag = param.opts[-1] if param is not None and param.opts else "value"

        raise UserError(f"{flag} must be {alternatives(self.choices)}, got {value!r}")


class Typed(click.ParamType):
    """An integer or number option whose refusal is the message a config file or the API gives
    for the same value (``structkit.options``), as a usage error: ``--epochs must be an
    integer, got 'ten'``."""

    def __init__(self, kind: type):
        self.kind = kind.__name__
        self.name = {"int": "integer", "float": "float"}.get(self.kind, self.kind)

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        from structkit.options import parse_text

        flag = param.opts[-1] if param is not None and param.opts else "value"
        try:
            return parse_text(value, self.kind, flag)
        except UserError as e:
            raise click.UsageError(str(e), ctx) from None


INT, FLOAT = Typed(int), Typed(float)


class GroupedOption(click.Option):
    """An option that --help shows under a heading (``group``)."""

    def __init__(self, *args, group: str = "Options", **kwargs):
        super().__init__(*args, **kwargs)
        self.group = group


class GroupedCommand(click.Command):
    """A command whose --help lists its options under headings, in the order they appear."""

    def format_options(self, ctx, formatter) -> None:
        groups: dict[str, list] = {}
        for p in self.get_params(ctx):
            rec = p.get_help_record(ctx)
            if rec is not None:
                groups.setdefault(getattr(p, "group", "Help"), []).append(rec)
        for name, rows in groups.items():
            with formatter.section(name):
                formatter.write_dl(rows)


def task_names() -> list[str]:
    return list(names())   # read when used: a task registered after import is a valid --task


def trained_task_names() -> list[str]:
    """The tasks `train` trains (ud only scores files)."""
    return [t.name for t in tasks() if t.training.trains]


def algo_names() -> list[str]:
    return registry.names()


def opt(*args, group: str, **kwargs):
    return click.option(*args, cls=GroupedOption, group=group, **kwargs)


def finite(obj):
    """``obj`` with every infinite or NaN float replaced by None: JSON has no Infinity."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


# ---- tagging and parsing collections --------------------------------------------------------
@dataclass(frozen=True)
class BatchOptions:
    """The batch options of a command, as one object (``batch_options`` makes it from the
    command line; ``run_batch`` checks and uses it)."""

    output: str | None = None
    output_dir: str | None = None
    pattern: str | None = None
    skip_existing: bool = False
    keep_going: bool = False
    jobs: str | None = None
    dask_address: str | None = None
    shared_fs: bool = False
    quiet: bool = False


# The batch options, as the tasks declare their own (``structkit.tasks.CommandOption``), made
# into click options by the one ``click_option``.
BATCH_OPTIONS = (
    CommandOption(("-o", "--output"), "Write one stream here instead of standard output (several files: "
                  "each file's start is marked, '# file = NAME' or a -DOCSTART- row)."),
    CommandOption(("--output-dir",), "Write one output per input into this folder, mirroring the inputs' "
                  "relative paths, with the output format's suffix (.conll, .conllu, .conllx)."),
    CommandOption(("--glob", "pattern"), "In folders, only files matching this pattern (e.g. '*.txt'; by "
                  "name, or by relative path when it has a '/'). Folders are read recursively."),
    CommandOption(("--skip-existing",), "With --output-dir: skip inputs whose output is already there "
                  "(outputs appear only when complete), so an interrupted run resumes.", bool),
    CommandOption(("--keep-going",), "Report a bad file and carry on with the others (its output is "
                  "dropped); exit 1 at the end if any failed.", bool),
    CommandOption(("-j", "--jobs"), "Worker processes: an integer, or 'auto' for every core (the default)."),
    CommandOption(("--dask", "dask_address"), "Run on a Dask cluster: a scheduler address (tcp://host:8786), "
                  "or local[:N] for a local cluster of N workers (needs structkit-nlp[dask]).",
                  metavar="ADDRESS"),
    CommandOption(("--shared-fs",), "With --dask and --output-dir: workers read the inputs and write the "
                  "outputs themselves (a file system every worker sees); otherwise blocks go to the "
                  "workers and results come back to this machine.", bool),
    CommandOption(("-q", "--quiet"), "No progress bar on a terminal.", bool),
)


def click_option(o: CommandOption):
    """The click option of a ``CommandOption`` (a task's, or a batch option)."""
    if o.kind is bool:
        return click.option(*o.decls, is_flag=True, help=o.help)
    kind = Choice(list(o.choices)) if o.choices else INT if o.kind is int else o.kind
    extra = {"default": o.default, "show_default": True} if o.show_default else {}
    if o.metavar is not None:
        extra["metavar"] = o.metavar
    return click.option(*o.decls, type=kind, help=o.help, **extra)


def batch_options(fn):
    """Inputs and outputs for collections, cores and clusters, the same for every batch
    command (``structkit.batch``): the command gets them as one ``batch`` (``BatchOptions``)."""
    names = [f.name for f in fields(BatchOptions)]

    @functools.wraps(fn)
    def command(*args, **kwargs):
        batch = BatchOptions(**{k: kwargs.pop(k) for k in names})
        return fn(*args, batch=batch, **kwargs)

    for o in reversed(BATCH_OPTIONS):
        command = click_option(o)(command)
    return command


def run_batch(job, files, batch: BatchOptions, protect) -> None:
    """The batch run behind every batch command: checks the options, runs, reports failures."""
    from structkit.batch import collect_inputs, parse_jobs, run

    b = batch
    if b.output and b.output_dir:
        raise UserError("give -o/--output (one stream) or --output-dir (one file per input), not both")
    if b.output_dir == "-":  # made a folder named '-'
        raise UserError("--output-dir is a folder (one output file per input); standard output "
                        "('-') is -o -, or no -o")
    if b.skip_existing and not b.output_dir:
        raise UserError("--skip-existing goes with --output-dir")
    if b.shared_fs and not (b.dask_address and b.output_dir):
        raise UserError("--shared-fs goes with --dask and --output-dir")
    n = parse_jobs(b.jobs)
    inputs = collect_inputs(list(files), b.pattern)
    if b.dask_address and any(i.path == "-" for i in inputs):
        raise UserError("--dask reads files, not standard input")
    show = progress_enabled(b.quiet)

    def report(e: UserError) -> None:
        click.echo(printable(f"structkit: error: {e}"), err=True)

    if b.dask_address:
        from structkit.distributed import run_dask

        summary = run_dask(job, inputs, b.dask_address, output=b.output, output_dir=b.output_dir,
                           keep_going=b.keep_going, skip_existing=b.skip_existing, shared_fs=b.shared_fs,
                           progress=show, protect=protect, on_error=report)
    else:
        summary = run(job, inputs, output=b.output, output_dir=b.output_dir, jobs=n, keep_going=b.keep_going,
                      skip_existing=b.skip_existing, progress=show, protect=protect, on_error=report)
    if summary.skipped and show:
        say(f"{summary.skipped} of {summary.files} files skipped (output already there)", True)
    if summary.failed:
        raise UserError(f"{len(summary.failed)} of {summary.files} files failed (reported above); "
                        "the others were written")
