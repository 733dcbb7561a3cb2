"""Batch jobs on a Dask distributed cluster (``--dask ADDRESS``; ``pip install structkit-nlp[dask]``).

The model goes to every worker once (``Client.scatter(..., broadcast=True)``); the same blocks
as a local run become tasks, and their results are written by this process in input order,
so the output is identical to ``--jobs 1``. With ``--shared-fs`` each file is one task: the
worker reads the input and writes its output atomically (temporary file, then rename) into
``--output-dir``.

A worker that dies takes its running tasks with it; the scheduler runs them again on another
worker. Nothing is written twice: results are collected by block index (streaming) or renamed
into place whole (shared file system), so a repeated task replaces, never appends.
"""
from __future__ import annotations

import os
from typing import Callable

from structkit.batch import (
    BLOCK_BYTES,
    Block,
    Executor,
    Input,
    Result,
    Summary,
    default_jobs,
    plan_outputs,
    run,
    run_block,
)
from structkit.errors import UserError
from structkit.io.batchjob import Job
from structkit.io.files import check_outputs

# Fault injection for the tests: the first task to find this file deletes it and kills its
# worker process, so that a worker is lost in the middle of a job.
KILL_ENV = "STRUCTKIT_TEST_KILL_WORKER"


def _maybe_die() -> None:
    path = os.environ.get(KILL_ENV)
    if path:
        try:
            os.remove(path)
        except OSError:
            return
        os._exit(1)


class die_then:
    """``fn`` behind the fault hook (tests: a worker dies in the middle of training)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        _maybe_die()
        return self.fn(*args)


def dask_block(job: Job, block: Block) -> Result:
    _maybe_die()
    return run_block(job, block)


def dask_file(job: Job, inp: Input, out: str) -> Summary:
    """One whole file on a worker (shared file system): read, process, write atomically."""
    _maybe_die()
    return run(job, [inp], output=out, jobs=1, keep_going=True)


class DaskExecutor(Executor):
    def __init__(self, job: Job, client, job_future):
        super().__init__(job)
        self.client = client
        self.job_future = job_future

    def submit(self, block: Block):
        return self.client.submit(dask_block, self.job_future, block, pure=False)


def dask_mapper(client):
    """``Executor.map`` semantics on a Dask client, for parameter mixing's shards
    (``structkit.sequence.learn.ipm``): the shards of one epoch are tasks, their results in order. A
    shard lost with its worker is run again by the scheduler."""
    def mapper(fn, items):
        return client.gather(client.map(fn, list(items), pure=False))
    return mapper


def connect(address: str):
    """A Client for ``address``: a scheduler (tcp://host:port, host:port) or ``local[:N]``, a
    LocalCluster of N single-threaded worker processes on 127.0.0.1 (N: every core)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UserError("--dask needs Dask: pip install 'structkit-nlp[dask]'") from None
    if address == "local" or address.startswith("local:"):
        n = address.partition(":")[2]
        if n and not (n.isdigit() and 1 <= int(n) <= 256):
            raise UserError(f"--dask local:N needs N in 1..256, got {address!r}")
        cluster = LocalCluster(n_workers=int(n) if n else default_jobs(), threads_per_worker=1,
                               processes=True, host="127.0.0.1", dashboard_address=":0")
        return Client(cluster), cluster
    try:
        return Client(address, timeout="20s"), None
    except (OSError, TimeoutError, ValueError) as e:
        raise UserError(f"cannot reach the Dask scheduler at {address!r}: {e}") from None


def run_dask(job: Job, inputs: list[Input], address: str, *, output: str | None = None,
             output_dir: str | None = None, keep_going: bool = False, skip_existing: bool = False,
             shared_fs: bool = False, progress: bool = False, protect: list[str] = (),
             on_error: Callable[[UserError], None] | None = None, block_bytes: int = BLOCK_BYTES,
             client=None) -> Summary:
    """``structkit.batch.run`` with a Dask cluster doing the work (``client``, or one made
    from ``address``)."""
    own = client is None
    cluster = None
    if own:
        client, cluster = connect(address)
    try:
        n = max(1, len(client.scheduler_info().get("workers", {})))
        job_future = client.scatter(job, broadcast=True, hash=False)
        if not shared_fs:
            return run(job, inputs, output=output, output_dir=output_dir, keep_going=keep_going,
                       skip_existing=skip_existing, progress=progress, protect=protect,
                       on_error=on_error, block_bytes=block_bytes, window=4 * n + 4,
                       executor=DaskExecutor(job, client, job_future))
        return _run_shared(job, inputs, client, job_future, output_dir, keep_going, skip_existing,
                           progress, protect, on_error)
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()


def _run_shared(job, inputs, client, job_future, output_dir, keep_going, skip_existing, progress,
                protect, on_error) -> Summary:
    from dask.distributed import as_completed

    outs = plan_outputs(job, inputs, output_dir)
    for inp in inputs:
        if inp.peeked is not None:  # the workers open the files: a stream cannot be read there
            inp.peeked[0].close()
            raise UserError("--shared-fs has the workers open each file, and this is a stream that "
                            "cannot be read twice (a pipe or device); drop --shared-fs", inp.name)
    check_outputs(outs, [i.path for i in inputs] + list(protect))
    summary = Summary(files=len(inputs))
    todo = [k for k in range(len(inputs)) if not (skip_existing and os.path.exists(outs[k]))]
    summary.skipped = len(inputs) - len(todo)
    futures = {client.submit(dask_file, job_future, inputs[k], outs[k], pure=False): k for k in todo}
    bar = None
    if progress:
        import sys

        from tqdm import tqdm
        bar = tqdm(total=len(todo), unit="file", file=sys.stderr)
    try:
        for fut in as_completed(futures):
            s = fut.result()
            summary.tokens += s.tokens
            summary.sentences += s.sentences
            if bar is not None:
                bar.update(1)
            if s.failed:
                if not keep_going:
                    for f in futures:
                        f.cancel()
                    raise s.failed[0]
                summary.failed.extend(s.failed)
                if on_error is not None:
                    on_error(s.failed[0])
            else:
                summary.written.append(outs[futures[fut]])
    finally:
        if bar is not None:
            bar.close()
    return summary
