"""Batch work over collections: files, folders and standard input, tagged or parsed block by
block on every core (or a Dask cluster), written in input order.

The pipeline, the same whatever runs the blocks:

1. ``collect_inputs`` expands files, folders (recursively, ``--glob``) and '-' into an ordered
   list of inputs, each with the relative name its output mirrors under ``--output-dir``.
2. ``iter_blocks`` cuts each input into blocks of whole sentences (about 1 MB, cut after a
   blank line, each block starting with a non-blank line), read as bytes: memory is a few
   blocks per worker, whatever the size of the input.
3. A *job* (``structkit.io.batchjob.Job``: the task's, ``Command.batch_job``) turns one block into
   output bytes. A block's result does
   not depend on where the blocks were cut: what must be the same for the whole file (CoNLL-U
   or columns, the column count) is decided once from its first block (``job.sniff``).
4. ``run`` sends blocks to an executor (inline, processes, threads or Dask) with a bounded
   window of blocks in flight and writes the results in input order, so the output is
   byte-identical to ``--jobs 1``. Each output is written atomically; with ``--keep-going`` a
   bad file is reported, its output dropped, and the run carries on.
"""
from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import IO, Any, Callable, Iterator

from structkit.config import resolve_data_path
from structkit.errors import UserError
from structkit.io.batchjob import EXTENSIONS, Job
from structkit.io.batchjob import StdinContext as _StdinContext
from structkit.io.batchjob import Tokenized
from structkit.io.blocks import BLOCK_BYTES, iter_blocks  # noqa: F401 (the one block cutter)
from structkit.io.blocks import cut_point as _cut_point
from structkit.io.conllu import take_warnings, keep_warnings
from structkit.io.files import atomic_output, check_outputs, open_binary, open_input, sweep_stale
from structkit.workers import pool, stop


# ---- inputs ---------------------------------------------------------------------------------
@dataclass
class Input:
    path: str               # a readable file, or '-'
    rel: str                # relative name: mirrored under --output-dir, shown in markers
    # A stream that cannot be read twice (a FIFO, /dev/stdin on a pipe, <(...)), opened and
    # its first bytes read to plan the output's name: (open file, those bytes), which the run
    # then reads first. Never pickled (Dask's --shared-fs refuses such inputs).
    peeked: Any = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return "<stdin>" if self.path == "-" else self.path


def collect_inputs(specs: list[str] | tuple[str, ...], glob: str | None = None) -> list[Input]:
    """Files, folders (walked recursively in sorted order; hidden files and folders skipped;
    files matched against ``glob`` by name, or by relative path when it has a '/') and '-'.
    No files at all is standard input. A missing file or a folder with no matching file is a
    UserError, before any work starts."""

    if not specs:
        return [Input("-", "stdin")]
    out: list[Input] = []
    for spec in specs:
        if spec == "-":
            out.append(Input("-", "stdin"))
            continue
        path = spec if os.path.isdir(spec) else resolve_data_path(spec, must_exist=True)
        if not os.path.isdir(path):
            out.append(Input(path, os.path.basename(path)))
            continue
        found = []
        for root, dirs, files in os.walk(path, onerror=_walk_error):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                if f.startswith("."):
                    continue
                full = os.path.join(root, f)
                rel = os.path.relpath(full, path)
                if glob and not PurePath(rel).match(glob):
                    continue
                if os.path.isfile(full):
                    found.append(Input(full, rel))
        if not found:
            what = f"no file matching {glob!r}" if glob else "no files"
            raise UserError(f"{what} in this folder", path)
        out.extend(found)
    return out


def _walk_error(e: OSError) -> None:
    raise UserError(f"cannot read folder: {e.strerror or e}", e.filename)


def output_name(rel: str, ext: str) -> str:
    """The output's relative path under --output-dir: the input's, with the format's suffix."""
    p = PurePath(rel)
    return str(p.with_suffix(ext)) if p.suffix else str(p) + ext


def relocated(e: UserError, name: str, first_line: int) -> UserError:
    """A UserError raised reading a block, with its line number counted in the whole file."""
    if first_line > 1 and e.path == name and e.line is not None:
        return UserError(e.message, e.path, e.line + first_line - 1)
    return e


# ---- results ----------------------------------------------------------------------------------
@dataclass
class Block:
    """One unit of work: block ``index`` of input ``file`` (with the file's context)."""
    file: int
    index: int
    first_line: int
    data: bytes | Tokenized   # Tokenized: a piece of a block the job divided (Job.divide)
    ctx: Any
    name: str


@dataclass
class Result:
    file: int
    index: int
    size: int                       # input bytes (progress)
    data: bytes = b""
    tokens: int = 0
    sentences: int = 0
    error: UserError | None = None
    warnings: tuple[str, ...] = ()   # what reading it warned (said by the run, once an input)


def run_block(job: "Job", b: Block) -> Result:
    """Process one block; a user error is returned (it belongs to the file, in order)."""
    try:
        if b.index > 0 and isinstance(b.data, bytes) and not b.data.strip():
            return Result(b.file, b.index, len(b.data))
        with keep_warnings():
            data, tokens, sentences = job.process(b.ctx, b.name, b.data, b.index == 0)
            said = take_warnings()
        return Result(b.file, b.index, len(b.data), data, tokens, sentences, warnings=said)
    except UserError as e:
        return Result(b.file, b.index, len(b.data), error=relocated(e, b.name, b.first_line))


# ---- executors ------------------------------------------------------------------------------
_PROCESS_JOB: Job | None = None


def _process_block(b: Block) -> Result:
    return run_block(_PROCESS_JOB, b)


class Executor:
    """Runs ``run_block(job, block)``; ``submit`` returns an object with ``.result()``."""

    def __init__(self, job: Job):
        self.job = job

    def submit(self, block: Block):
        return _Done(run_block(self.job, block))

    def close(self, abort: bool = False) -> None:
        pass


class _Done:
    def __init__(self, r: Result):
        self.r = r

    def result(self) -> Result:
        return self.r


class PoolExecutor(Executor):
    """Processes (forked: the loaded model is shared, not copied per task) or threads (the
    numba kernels release the GIL). The pool starts with the second block, so a small input
    never pays for it."""

    def __init__(self, job: Job, jobs: int, kind: str = "process"):
        super().__init__(job)
        self.jobs = jobs
        self.kind = kind
        self.pool = None
        self.count = 0

    def submit(self, block: Block):
        self.count += 1
        if self.count == 1:
            self.first = block
            return _Lazy(self, block)
        if self.pool is None:
            if self.kind == "process":
                self._warm()
            self._start()
        if self.kind == "thread":
            return self.pool.submit(run_block, self.job, block)
        return self.pool.submit(_process_block, block)

    def _warm(self) -> None:
        """Run the first sentences of the first block here before forking, so that the kernels
        (numba's import and its cache) are loaded once and shared with the workers."""
        b = self.first
        if isinstance(b.data, Tokenized):   # a divided block's first sentences (copied)
            run_block(self.job, Block(b.file, b.index, b.first_line, b.data.head(3), b.ctx, b.name))
            return
        q = _cut_point(b.data[:8192])
        if q > 0:
            run_block(self.job, Block(b.file, b.index, b.first_line, b.data[:q], b.ctx, b.name))

    def _start(self) -> None:
        import concurrent.futures as cf

        if self.kind == "thread":
            self.pool = cf.ThreadPoolExecutor(self.jobs)
            return
        import gc

        global _PROCESS_JOB
        _PROCESS_JOB = self.job
        gc.freeze()  # the collector would touch (and so copy) every shared page in each worker
        self.pool = pool(self.jobs)

    def close(self, abort: bool = False) -> None:
        if self.pool is not None:
            if self.kind == "process":
                stop(self.pool, abort)
            else:
                self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class _Lazy:
    """The first block: run in this process when its result is wanted, unless a pool started
    meanwhile (then it goes to the pool like the others)."""

    def __init__(self, ex: PoolExecutor, block: Block):
        self.ex = ex
        self.block = block
        self.future = None

    def start(self) -> None:
        if self.ex.pool is not None and self.future is None:
            self.future = (self.ex.pool.submit(run_block, self.ex.job, self.block) if self.ex.kind == "thread"
                           else self.ex.pool.submit(_process_block, self.block))

    def result(self) -> Result:
        self.start()
        if self.future is not None:
            return self.future.result()
        return run_block(self.ex.job, self.block)


def parse_jobs(value: str | int | None) -> int:
    """--jobs: a positive integer, or 'auto' (or nothing) for every core of this machine."""
    if value is None or value == "auto":
        return default_jobs()
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UserError(f"--jobs must be a positive integer or 'auto', got {value!r}") from None
    if not 1 <= n <= 1024:
        raise UserError(f"--jobs must be 1..1024 or 'auto', got {value!r}")
    return n


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# ---- the run ----------------------------------------------------------------------------------
@dataclass
class Summary:
    files: int = 0
    skipped: int = 0
    failed: list[UserError] = field(default_factory=list)
    tokens: int = 0
    sentences: int = 0
    written: list[str] = field(default_factory=list)


def _no_link_inside(output_dir: str, out: str) -> None:
    """An output is written inside ``output_dir``: a symbolic link already there, as the output
    file or as a folder on its way, would send it elsewhere (over the file it points to). The
    folder given may itself be a link (the user named it)."""
    path = output_dir
    for part in os.path.relpath(out, output_dir).split(os.sep):
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise UserError(f"{path} is a symbolic link: --output-dir writes only inside its folder, "
                            "never through a link (remove the link, or choose another folder)")


def plan_outputs(job: Job, inputs: list[Input], output_dir: str) -> list[str]:
    """Each input's output path under ``output_dir`` (mirrored relative path, suffix of the
    output format). Two inputs mapping to one output, an output that is an input, or a symbolic
    link on an output's way inside the folder, is a UserError before any work."""
    outs: list[str] = []
    seen: dict[str, str] = {}
    for inp in inputs:
        fmt = job.output_format(inp, _peek_context(job, inp))
        out = os.path.join(output_dir, output_name(inp.rel, EXTENSIONS[fmt]))
        key = os.path.normcase(os.path.abspath(out))
        if key in seen:
            raise UserError(f"two inputs would write the same output {out!r}: {seen[key]} and {inp.name}; "
                            "rename one, or give the folders separately")
        seen[key] = inp.name
        _no_link_inside(output_dir, out)
        outs.append(out)
    for folder in dict.fromkeys(os.path.dirname(o) for o in outs):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create folder: {e.strerror or e}", folder) from None
        sweep_stale(folder, ".tmp-")   # what a killed run left, even if --skip-existing writes nothing
    return outs


def rereadable(path: str) -> bool:
    """Whether opening ``path`` again reads the same bytes from the start: a regular file."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # it will fail when opened, with its one-line error


def _peek_context(job: Job, inp: Input) -> Any:
    """The file context from the first block of a file (standard input: decided later). A
    stream that cannot be reread is read once: its first bytes are kept for the run."""
    if inp.path == "-":
        return job.stdin_context()
    if not rereadable(inp.path):
        if inp.peeked is None:
            f = open_binary(inp.path)
            head = b""
            while len(head) < 1 << 16 and (piece := f.read((1 << 16) - len(head))):
                head += piece
            inp.peeked = (f, head)
        head = inp.peeked[1]
        try:
            return job.sniff(inp.name, head)
        except (UserError, StopIteration):
            return _StdinContext()
    with open_input(inp.path) as f:
        head = next(iter_blocks(f, 1 << 16))[1]
    try:
        return job.sniff(inp.name, head)
    except (UserError, StopIteration):
        return _StdinContext()  # a bad file is reported in order, when it is processed


class _Chained:
    """The bytes already read from a stream, then the rest of it."""

    def __init__(self, head: bytes, f):
        self.head, self.f = head, f

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n is None or n < 0:
                out, self.head = self.head + self.f.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self.f.read(n)


@contextlib.contextmanager
def _reopen(inp: Input):
    """Open an input for the run: a peeked stream continues where the planning left it."""
    if inp.peeked is not None:
        f, head = inp.peeked
        inp.peeked = None
        try:
            yield _Chained(head, f)
        finally:
            f.close()
        return
    with open_input(inp.path) as f:
        yield f


def run(job: Job, inputs: list[Input], *, output: str | None = None, output_dir: str | None = None,
        jobs: int = 1, executor: Executor | None = None, keep_going: bool = False,
        skip_existing: bool = False, progress: bool = False, protect: list[str] = (),
        block_bytes: int = BLOCK_BYTES, window: int | None = None,
        on_error: Callable[[UserError], None] | None = None) -> Summary:
    """Run ``job`` over ``inputs``: one output per input under ``output_dir``, or one stream
    (``output``, or standard output) with each file's start marked when there are several.
    ``protect`` lists files no output may be (the model). Returns what was done; the caller
    decides the exit status from ``summary.failed``."""

    outs = plan_outputs(job, inputs, output_dir) if output_dir is not None else None
    check_outputs(outs if outs is not None else [output], [i.path for i in inputs] + list(protect))
    todo = list(range(len(inputs)))
    summary = Summary(files=len(inputs))
    if skip_existing and outs is not None:
        done = [k for k in todo if os.path.exists(outs[k])]
        summary.skipped = len(done)
        todo = [k for k in todo if not os.path.exists(outs[k])]
    own = executor is None
    if executor is None:
        executor = Executor(job) if jobs <= 1 else PoolExecutor(job, jobs)
    # in one process (the plain Executor, not a pool: its subclasses) a block is done when
    # submitted: written at once (output streams as it comes); workers get several in flight
    window = window or (1 if type(executor) is Executor else max(4, 2 * getattr(executor, "jobs", jobs) + 2))
    bar = _Progress(inputs, todo, summary, progress)
    marks = outs is None and len(inputs) > 1
    aborted = True   # an error or a signal: the workers' blocks in flight are not waited for
    try:
        if outs is None:
            with atomic_output(output, "wb") as sink:
                _run_files(job, inputs, todo, executor, window, block_bytes, keep_going, summary, bar,
                           lambda k: _Stream(sink, keep_going), marks, on_error)
        else:
            _run_files(job, inputs, todo, executor, window, block_bytes, keep_going, summary, bar,
                       lambda k: _FileSink(outs[k], atomic_output), False, on_error)
        aborted = False
    finally:
        bar.close()
        if own:
            executor.close(abort=aborted)
    return summary


class _Stream:
    """One file's part of a single output stream. With ``--keep-going`` what was written of a
    file that then fails is taken back: truncated in a regular file, or, where the stream is
    not one (a pipe), held in a spooled temporary file until the file ends. Without it, a
    failure ends the run and the stream's own cleanup applies."""

    def __init__(self, sink: IO[bytes], keep_going: bool):
        import stat
        import tempfile

        self.sink = sink
        self.mark = None
        self.held = None
        if not keep_going:
            return
        try:
            regular = stat.S_ISREG(os.fstat(sink.fileno()).st_mode)
        except (OSError, ValueError, AttributeError):
            regular = False
        if regular:
            self.mark = sink.tell()
        else:
            self.held = tempfile.SpooledTemporaryFile(max_size=16 << 20)

    def write(self, data: bytes) -> None:
        if self.held is not None:
            self.held.write(data)
            return
        self.sink.write(data)
        try:   # a pipe or a terminal gets each block as it is done, not when a buffer fills
            self.sink.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def commit(self) -> None:
        if self.held is not None:
            import shutil

            self.held.seek(0)
            shutil.copyfileobj(self.held, self.sink)
            self.held.close()
            self.held = None

    def rollback(self) -> None:
        if self.mark is not None:
            try:
                self.sink.seek(self.mark)
                self.sink.truncate()
            except (OSError, ValueError):
                pass
        if self.held is not None:
            self.held.close()
            self.held = None


class _FileSink:
    """One output file, written atomically (temporary file, renamed when the file is done)."""

    def __init__(self, path: str, atomic_output):
        self.path = path
        self.cm = atomic_output(path, "wb")
        self.f = self.cm.__enter__()

    def write(self, data: bytes) -> None:
        self.f.write(data)

    def commit(self) -> None:
        self.cm.__exit__(None, None, None)

    def rollback(self) -> None:
        try:
            raise _Rollback
        except _Rollback:
            self.cm.__exit__(*sys.exc_info())


class _Rollback(Exception):
    pass


# With several workers, a file smaller than a block a worker is cut into smaller blocks, about
# SHARES per worker and none under MIN_SHARED_BLOCK, so that one file of 50,000 words (400 KB)
# keeps every core busy (a block is the unit a worker takes); standard input is read
# MIN_SHARED_BLOCK at a time. Output does not depend on where blocks are cut. (8 blocks a worker
# of at least 16 KB ran 2,000 short texts no faster: 1.55 s wall both ways, --jobs 2.)
SHARES = 2
MIN_SHARED_BLOCK = 64 << 10


def _regular_size(inp: Input) -> int | None:
    """The size of a regular file (a pipe's, standard input's or a missing file's: None)."""
    if inp.path == "-":
        return None
    try:
        st = os.stat(inp.path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _block_size(inp: Input, block_bytes: int, jobs: int) -> int:
    """The block size for ``inp``: ``block_bytes``, or less for a regular file that would
    otherwise give ``jobs`` workers fewer than ``SHARES`` blocks each, and for standard input
    with several workers: its blocks are read as they come, and a read of a whole
    ``block_bytes`` waits for that much (`yes | annotate -` read 1 MB, cut one block of it, and
    waited for more while the workers' window held the rest unsent)."""
    if jobs <= 1:
        return block_bytes
    if inp.path == "-":
        return min(block_bytes, MIN_SHARED_BLOCK)
    size = _regular_size(inp)
    if size is None:   # a pipe's size is not known: blocks as they come
        return block_bytes
    return min(block_bytes, max(MIN_SHARED_BLOCK, size // (SHARES * jobs)))


def _divide_above(inp: Input, target: int, jobs: int) -> int | None:
    """The size over which a block of ``inp`` is divided by the job (``Job.divide``): more than
    a worker's share of the file (with no blank line to cut at, one worker would be left with
    it) and than two blocks; None with one worker, or for a stream (its size is not known)."""
    size = _regular_size(inp) if jobs > 1 else None
    return None if size is None else max(size // jobs, 2 * target)


def _run_files(job, inputs, todo, executor, window, block_bytes, keep_going, summary, bar,
               sink_for, marks, on_error) -> None:
    pending: deque = deque()
    contexts: dict[int, Any] = {}
    state = {"file": None, "sink": None, "sentences": 0, "failed": set(), "warned": set()}

    workers = getattr(executor, "jobs", 1) if isinstance(executor, PoolExecutor) else 1

    def blocks() -> Iterator[Block]:
        for k in todo:
            inp = inputs[k]
            try:
                with _reopen(inp) as f:
                    target = _block_size(inp, block_bytes, getattr(executor, "jobs", 1))
                    above = _divide_above(inp, target, workers)
                    # a regular file's blocks are made smaller only at blank lines, to share it
                    # among the workers: text without one is cut where a single process cuts
                    # it, so that the output does not depend on the number of workers
                    cut_at = block_bytes if inp.path != "-" else None
                    index = 0
                    for i, (line, data) in enumerate(iter_blocks(f, target, job.cut_lines, inp.name, cut_at)):
                        if i == 0:
                            try:
                                contexts[k] = job.sniff(inp.name, data)
                            except StopIteration:  # no sentence in the file: the job says so
                                contexts[k] = _StdinContext()
                            except UserError as e:
                                yield _Failed(k, relocated(e, inp.name, line))
                                break
                        # a block over a worker's share of the file (text with no blank line to
                        # cut at): made into pieces here, if the job can, for the workers to share
                        pieces = job.divide(contexts[k], inp.name, data, i == 0) \
                            if above is not None and len(data) > above else None
                        for piece in (data,) if pieces is None else _relocating(pieces, inp.name, line):
                            yield Block(k, index, line, piece, contexts[k], inp.name)
                            index += 1
            except UserError as e:
                yield _Failed(k, e)

    def finish_file(ok: bool) -> None:
        sink = state["sink"]
        if sink is None:
            return
        if ok:
            sink.commit()
            summary.written.append(getattr(sink, "path", None))
        else:
            sink.rollback()
        state["sink"] = None

    def handle(r: Result) -> None:
        k = r.file
        if k in state["failed"]:
            return
        if k != state["file"]:
            finish_file(True)
            if state["file"] is not None:
                bar.file_done()
            state["file"] = k
            state["sentences"] = 0
            if r.error is not None:  # failed before any output (its first block could not be
                state["sink"] = None  # read): no sink to open, no start-of-file mark to write
            else:
                state["sink"] = sink_for(k)
            if marks and r.error is None:
                fmt = job.output_format(inputs[k], contexts.get(k, _StdinContext()))
                state["sink"].write(job.marker(fmt, inputs[k].rel if inputs[k].path == "-" else inputs[k].name,
                                               contexts.get(k)))
        if r.error is not None:
            finish_file(False)
            state["failed"].add(k)
            state["file"] = None
            if not keep_going:
                raise r.error
            summary.failed.append(r.error)
            if on_error is not None:
                on_error(r.error)
            bar.file_done()
            return
        for w in r.warnings:   # each kind once an input, whichever worker read the block
            kind = (k, "".join(c for c in w if not c.isdigit()))
            if kind not in state["warned"]:
                state["warned"].add(kind)
                sys.stderr.write(w)
        data = job.fix_block(r.data, contexts.get(k), state["sentences"])
        state["sentences"] += max(r.sentences, 0)
        state["sink"].write(data)
        summary.tokens += max(r.tokens, 0)
        summary.sentences += max(r.sentences, 0)
        bar.block(r)

    from concurrent.futures import BrokenExecutor

    died = ("a worker process died (out of memory, or killed); nothing of the unfinished file "
            "was written; rerun with fewer --jobs")

    def result(p) -> Result:
        try:
            return p.result()
        except BrokenExecutor:  # a worker process was killed (out of memory, a signal)
            raise UserError(died) from None

    try:
        for b in blocks():
            if isinstance(b, _Failed):
                pending.append(_Done(Result(b.file, 0, 0, error=b.error)))
            else:
                pending.append(executor.submit(b))
            for p in pending:
                if isinstance(p, _Lazy):
                    p.start()
            while len(pending) >= window:
                handle(result(pending.popleft()))
        while pending:
            handle(result(pending.popleft()))
        finish_file(True)
        if state["file"] is not None:
            bar.file_done()
    except BrokenExecutor:  # the pool broke before a block was sent to it (submit, start)
        if state["sink"] is not None:
            state["sink"].rollback()
        raise UserError(died) from None
    except BaseException:
        if state["sink"] is not None:
            state["sink"].rollback()
        raise


def _relocating(pieces: Iterator, name: str, first_line: int) -> Iterator:
    """The pieces of a divided block; a user error making them counts its line in the file."""
    try:
        yield from pieces
    except UserError as e:
        raise relocated(e, name, first_line) from None


@dataclass
class _Failed:
    file: int
    error: UserError


class _Progress:
    """A tqdm bar over the input bytes (time remaining), with files done and tokens/s."""

    def __init__(self, inputs: list[Input], todo: list[int], summary: Summary, enabled: bool):
        self.bar = None
        self.summary = summary
        self.n_files = len(todo)
        self.files = 0
        if not enabled:
            return
        import time

        import tqdm as _tqdm
        from tqdm import tqdm

        _tqdm.tqdm.monitor_interval = 0  # no monitor thread: worker processes are forked later
        sizes = []
        for k in todo:
            try:
                sizes.append(os.path.getsize(inputs[k].path) if inputs[k].path != "-" else None)
            except OSError:
                sizes.append(None)
        total = None if None in sizes else sum(sizes)
        self.t0 = time.perf_counter()
        self.bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr,
                        desc="files 0/%d" % self.n_files, smoothing=0.1, dynamic_ncols=True)

    def block(self, r: Result) -> None:
        if self.bar is None:
            return
        import time

        self.bar.update(r.size)
        rate = self.summary.tokens / max(time.perf_counter() - self.t0, 1e-9)
        if self.summary.tokens:
            self.bar.set_postfix_str(f"{rate / 1000:.0f}k tokens/s", refresh=False)

    def file_done(self) -> None:
        self.files += 1
        if self.bar is not None:
            self.bar.set_description_str(f"files {self.files}/{self.n_files}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
