"""`structkit info MODEL` (a model's card) and `structkit models list | build NAME` (ready models
of the registered corpora, built from recipes)."""
from __future__ import annotations

import json
import os

import click

from structkit.commands._util import finite, progress_enabled, say
from structkit.errors import UserError
from structkit.io.files import check_outputs, check_writable, printable_line


@click.command(short_help="Show a model's card: training data, licence, options, scores, time, version.")
@click.argument("model_path", metavar="MODEL")
@click.option("--json", "as_json", is_flag=True,
              help="Print the card as one JSON object (null for a model written before cards).")
def info(model_path, as_json) -> None:
    """Show the card stored in MODEL by `structkit train` or `structkit models build`: the
    training data (path, registered corpus, licence, sha256), the options, the dev scores (and
    the test scores of `train --test`), as `structkit eval` gives them for the model's output,
    the training time (wall and CPU) and the structkit version. The file is checked whole first
    (a damaged file, or one that is not a model, is one error line). `structkit dump` shows the
    weights."""
    from structkit import card as cards

    header, card = cards.read(model_path)
    if as_json:
        click.echo(json.dumps(finite(card), sort_keys=True, allow_nan=False) if card is not None else "null")
        return
    try:
        lines = cards.card_lines(model_path, header, card)
    except (AttributeError, TypeError, ValueError, KeyError):   # a header edited by hand or damaged
        raise UserError("damaged model card (its fields are not what structkit writes); "
                        "`structkit info --json` prints it as stored", model_path) from None
    for line in lines:
        click.echo(printable_line(line))


@click.group(short_help="Ready models of the registered corpora: list the recipes, build one.")
def models() -> None:
    """Recipes for ready models of the registered corpora (`structkit data list`): each names
    the corpus, the task and the options, and `build` fetches the corpus (or finds it in
    $STRUCTKIT_DATA or the cache), trains with dev selection, scores the model on the test file
    and writes it with its card (`structkit info MODEL`).

    \b
    structkit models list
    structkit models build ud:English-ParTUT/pos --output en-pos.model
    structkit info en-pos.model
    """


@models.command("list", short_help="The recipes (or, with --built DIR, the models built there).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per recipe (or model), one per line.")
@click.option("--built", type=str, metavar="DIR",
              help="List the models built in DIR (its *.model and *.skm files, sub-folders too): "
                   "task, recipe, test scores, size and date, from each model's card.")
def models_list(as_json, built) -> None:
    """Each recipe: its name (for `structkit models build NAME`), task, corpus and the corpus's
    licence (the licence of the data a model learns from), its options, and whether the
    corpus is here or must be fetched first. With `--built DIR`: the models in DIR instead."""
    from structkit import recipes
    from structkit.datasets import get as get_corpus

    if built is not None:
        _list_built(built, as_json)
        return

    rows = []
    for r in recipes.recipes():
        licence = get_corpus(r.corpus).licence if r.corpus else ""
        rows.append((r, licence, recipes.status(r)))
    if as_json:
        for r, licence, state in rows:
            click.echo(json.dumps({"name": r.name, "task": r.task, "corpus": r.corpus, "licence": licence,
                                   "language": r.language, "options": r.options, "files": recipes.files(r),
                                   "description": r.description, "status": state,
                                   "output": r.default_output()}, sort_keys=True))
        return
    width = max((len(r.name) for r, _, _ in rows), default=4)
    for r, licence, state in rows:
        opts = ", ".join(f"{k}={v}" for k, v in r.options.items()) or "the task's defaults"
        click.echo(f"{r.name:<{width}}  {r.task:<9} {state}")
        click.echo(f"{'':<{width}}  {r.description}; options: {opts}; licence: {licence or '?'}")


@models.command("build", short_help="Train the model of recipe NAME and write it with its card.")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("-o", "--output", type=str, help="Where to write the model (one NAME only). "
              "[default: NAME's file name, e.g. ud-english-partut.pos.model, in --output-dir]")
@click.option("--output-dir", type=str, default=".", show_default=True,
              help="The folder for the models (created if needed).")
@click.option("--no-fetch", is_flag=True, help="Do not download a corpus that is not here: fail instead.")
@click.option("--from", "source", type=str, metavar="DIR",
              help="A folder that holds the corpus's files as its release ships them (e.g. a UD "
                   "release's UD_Italian-ParTUT/): train on those, fetch nothing. The card records "
                   "their checksums, which are not required to match the registry's. Without NAME: "
                   "build from the UD treebank in DIR, whichever it is (its *-ud-train.conllu, "
                   "-dev and -test files).")
@click.option("--task", "task_name", type=str, default=None, metavar="TASK",
              help="With --from DIR and no NAME: the model to build from the treebank. "
                   "[default: pipeline]")
@click.option("--train-on", type=click.Choice(["train", "dev"]), default="train", show_default=True,
              help="The split to train on: `dev` for a treebank that ships no training file (the "
                   "model then has no epoch selection, and its card says so).")
@click.option("--all", "build_all", is_flag=True,
              help="Build every treebank found: the UD treebank folders under --from ROOT, or the "
                   "ud-* folders of $STRUCTKIT_DATA and the cache. Writes each model, its card "
                   "(MODEL.card.json) and summary.md into --output-dir, and prints the summary.")
@click.option("--list", "list_file", type=str, metavar="FILE",
              help="Like --all, for the names in FILE: one a line (a recipe, ud:Language-Name"
                   "[@release][/TASK] or a treebank folder); # starts a comment.")
@click.option("-j", "--jobs", type=str, default="auto", show_default=True,
              help="With --all or --list: treebanks built at once, each in a worker process: an "
                   "integer, or 'auto' for every core.")
@click.option("--dask", "dask_address", type=str, metavar="ADDRESS",
              help="With --all or --list: one task per treebank on a Dask cluster (a scheduler "
                   "address, or local[:N]; needs structkit-nlp[dask]).")
@click.option("--skip-existing", is_flag=True,
              help="With --all or --list: keep a model already in --output-dir that was built from "
                   "the same recipe and files (its card says so): resumes an interrupted run.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary lines.")
def models_build(names, output, output_dir, no_fetch, quiet, source, task_name, train_on,
                 build_all, list_file, jobs, dask_address, skip_existing) -> None:
    """Build each recipe NAME (`structkit models list`), or any UD treebank
    (`ud:Language-Name[@release][/task]`, the task `pipeline` when not named; or a folder:
    `--from DIR` with no NAME): find or fetch its files, train on the training file with the
    recorded options, select the epoch on the dev file (a treebank without one trains without
    selection), score the model on the test file, and write it with its card. Every NAME is
    checked before anything is trained.

    \b
    structkit models build ud:Afrikaans-AfriBooms@r2.14
    structkit models build --from UD_Afrikaans-AfriBooms/
    structkit models build --from UD_Finnish-TDT/ --train-on dev
    """
    from structkit import recipes
    from structkit.tasks import get_task

    if build_all or list_file is not None:
        _build_many(names, output, output_dir, no_fetch, quiet, source, task_name, train_on,
                    list_file, jobs, dask_address, skip_existing)
        return
    for flag, given in (("--dask", dask_address is not None), ("--skip-existing", skip_existing),
                        ("--jobs", jobs != "auto")):
        if given:
            raise UserError(f"{flag} goes with --all or --list (many treebanks at once)")
    if task_name is not None:
        if names or source is None:
            raise UserError("--task goes with --from DIR and no NAME (a NAME names its task: "
                            "ud:Language-Name/TASK)")
        get_task(task_name)
    if not names:
        if source is None:
            raise UserError("name a model to build (`structkit models list`), a UD treebank "
                            "(ud:Language-Name[@release]), or a treebank folder with --from DIR")
        chosen = [recipes.folder_recipe(source, task_name or recipes.DEFAULT_TASK)]
    else:
        chosen = [recipes.get(n) for n in names]   # every name checked first
    if output is not None and len(chosen) > 1:
        raise UserError("--output names one model: give one NAME, or --output-dir for several")
    if output is None and output_dir == "-":
        raise UserError("--output-dir is a folder (the models are written into it), not standard output")
    outs = [output or os.path.join(output_dir, r.default_output()) for r in chosen]
    if output is None and output_dir and not os.path.isdir(output_dir):
        try:
            os.makedirs(output_dir, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot make the folder: {e.strerror or e}", output_dir) from None
    check_outputs(outs, [])
    for out in outs:   # before any fetch or training
        check_writable(out, "--output")
    if source is not None:   # every recipe's files found there before anything is trained
        for r in chosen:
            recipes.training_paths(r, recipes.local_files(r, source), train_on)
    elif no_fetch:   # every recipe's data checked before anything is trained
        for r in chosen:
            state = recipes.status(r)
            if state != "here":
                raise UserError(f"recipe {r.name}: {state} (or --from DIR, a folder with its files)")
    from structkit.builds import main_scores

    show = not quiet
    for r, out in zip(chosen, outs):
        _, card = recipes.build(r, out, fetch=not no_fetch, progress=progress_enabled(quiet),
                                say=lambda m: say(m, show), source=source if r.folder is None else None,
                                train_on=train_on)
        if source is None:   # files found here that are not the registered ones: said even with -q
            for split, facts in (card.get("data") or {}).items():
                if isinstance(facts, dict) and facts.get("registry_sha256") == "differs":
                    click.echo(f"structkit: warning: {out}: the {split} file {facts.get('path')} is not the "
                               f"registered corpus's (sha256 differs: modified or another release); the "
                               f"model card records its checksum", err=True)
        scores = []
        for k in ("dev", "test"):
            s = (card.get(k) or {}).get("scores") or {}
            main = main_scores(s)
            if main:
                scores.append(f"{k} {main}")
        tr = card["training"]
        say(f"wrote {out}: {', '.join(scores) or 'no scores'}; trained in {tr['wall_seconds']:.1f} s "
            f"({tr['cpu_seconds']:.1f} s CPU)", show)


def _list_built(folder: str, as_json: bool) -> None:
    from structkit import builds
    from structkit.builds import main_scores

    if folder == "-":
        raise UserError("--built is a folder of models, not standard input ('-')")
    rows = builds.catalogue(folder)
    if as_json:
        for row in rows:
            click.echo(json.dumps(finite(row), sort_keys=True, allow_nan=False))
        return
    if not rows:
        say(f"no models in {folder} (*.model, *.skm)", True)
        return
    for row in rows:
        if "error" in row:
            click.echo(printable_line(f"{row['path']}  not a usable model: {row['error']}"))
            continue
        scores = main_scores(row["test"]) or "no test scores"
        click.echo(printable_line(
            f"{row['path']}  {row['task']}  {row['recipe'] or '(no recipe: structkit train)'}  "
            f"test {scores}  {row['bytes'] / 1e6:.1f} MB  {row['created'] or '?'}"))


def _build_many(names, output, output_dir, no_fetch, quiet, source, task_name, train_on,
                list_file, jobs, dask_address, skip_existing) -> None:
    """`models build --all | --list FILE`: every treebank found or listed (``structkit.builds``)."""
    import sys

    from structkit import builds, recipes
    from structkit.batch import parse_jobs
    from structkit.tasks import get_task

    if list_file == "-":
        raise UserError("--list names a file (a treebank a line); standard input ('-') is not read for it")
    if names:
        raise UserError("--all and --list build the treebanks found or listed: give NAMEs or those, not both")
    if output is not None:
        raise UserError("--all and --list write one model per treebank into --output-dir, not --output")
    if list_file is not None and source is not None:
        raise UserError("--from ROOT says where --all looks; --list names its treebanks itself")
    if output_dir == "-":
        raise UserError("--output-dir is a folder (the models are written into it), not standard output")
    if dask_address is not None and jobs != "auto":
        raise UserError("--jobs and --dask: give one (the cluster's workers build the treebanks)")
    n_jobs = parse_jobs(jobs)
    task = task_name or recipes.DEFAULT_TASK
    get_task(task)
    items = builds.listed(list_file) if list_file is not None else builds.found_treebanks(source)
    if not items:
        raise UserError("no UD treebank found (folders holding *-ud-train.conllu, -dev, -test files)",
                        source or "$STRUCTKIT_DATA and the cache")
    chosen = builds.plan(items, task)
    outs = [os.path.join(output_dir, r.default_output()) for r in chosen]
    seen: dict[str, str] = {}
    for r, out in zip(chosen, outs):
        if out in seen:
            raise UserError(f"{seen[out]} and {r.name} would both be written to {out}")
        seen[out] = r.name
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot make the folder: {e.strerror or e}", output_dir) from None
    check_outputs(outs, [])
    show = not quiet

    def heard(row) -> None:
        if row.state == "failed":   # said even with -q: the run goes on without it
            click.echo(f"structkit: {row.name}: failed: {row.reason}", err=True)
        else:
            say(f"{row.name}: {row.state}" + (f" ({row.reason})" if row.reason else ""), show)

    rows, seconds = builds.timed(lambda: builds.build_all(
        chosen, outs, jobs=n_jobs, dask_address=dask_address, skip_existing=skip_existing,
        train_on=train_on, fetch=not no_fetch, progress=progress_enabled(quiet), on_row=heard))
    path = builds.write_summary(output_dir, rows, seconds)
    if show:
        for line in builds.summary_lines(rows, seconds):
            click.echo(line)
        say(f"wrote {path}", show)
    failed = [r for r in rows if r.state == "failed"]
    if failed:
        click.echo(f"structkit: error: {len(failed)} of {len(rows)} treebanks failed: "
                   f"{', '.join(r.name for r in failed)} (their rows in {path} say why)", err=True)
        sys.exit(1)
