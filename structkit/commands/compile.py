"""``structkit compile``: the numba kernels compiled into their cache before first use."""
from __future__ import annotations

import time

import click

from structkit.errors import UserError


@click.command("compile", short_help="Compile the numba kernels into numba's cache now, so that the "
                                     "first training or analysis does not wait for it.")
@click.option("--all", "every", is_flag=True,
              help="Also every other learning algorithm (--algo), one short training run each.")
def compile_cmd(every: bool) -> None:
    """Compile the numba kernels of the commands, once, into numba's cache (beside the package,
    or $NUMBA_CACHE_DIR), by running each command's work on the shipped samples: training and
    using a pipeline, a chunker, POS and NER taggers, a parser, a morph model and a reranker.
    Otherwise the first command pays for compiling what it calls (a pipeline's first training:
    about 70 CPU seconds more). `make install` runs it; after `pip install structkit`, run it
    once. Takes a few minutes; --all longer."""
    from structkit import precompile

    jobs = list(precompile.DEFAULTS) + (precompile.every_learner() if every else [])
    failed = []
    t0 = time.perf_counter()
    for k, (what, err) in enumerate(precompile.run(jobs), 1):
        status = "ok" if err is None else "FAILED"
        click.echo(f"[{k}/{len(jobs)}] {what}: {status} ({time.perf_counter() - t0:.0f} s so far)", err=True)
        if err is not None:
            failed.append(f"{what}: {err}")
    if failed:
        raise UserError(f"{len(failed)} of {len(jobs)} failed; the first: {failed[0]}")
    click.echo(f"compiled: the kernels of {len(jobs)} jobs are in numba's cache "
               f"({time.perf_counter() - t0:.0f} s)")
