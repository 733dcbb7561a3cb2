"""Running models over files: each task's command (`tag`, `chunk`, `ner`, `parse`, `rerank`, and any
registered task's), built from its ``Task``: -m/--model, FILES, the task's own options (``Command.options``), then the
batch options (collections, cores, clusters) when its job runs through ``structkit.batch``."""
from __future__ import annotations

import click

from structkit.commands._util import batch_options, click_option, run_batch


def task_command(task) -> click.Command:
    """`structkit COMMAND` for ``task`` (``task.command``: a ``structkit.tasks.Command``)."""
    spec = task.command
    if spec.batched:
        def command(model_path, files, batch, **options):
            import gc

            job, protect = spec.batch_job(task, model_path, spec.name, **options)
            # the model's objects (and numba's), kept to the end, are never scanned again by
            # the collector, which the work's allocations set off (and nothing is torn down one
            # object at a time at exit)
            gc.freeze()
            run_batch(job, files, batch, protect)
            gc.freeze()  # a quick exit: nothing left for the collector to scan
        fn = batch_options(command)
    else:
        def command(model_path, files, **options):
            spec.run(task, model_path, files, **options)
        fn = command
    for o in reversed(spec.options):
        fn = click_option(o)(fn)
    fn = click.argument("files", nargs=-1)(fn)
    fn = click.option("-m", "--model", "model_path", required=True, multiple=spec.chains,
                      help=spec.model_help(task.name))(fn)
    return click.command(spec.name, help=spec.doc or spec.help, short_help=spec.help)(fn)
