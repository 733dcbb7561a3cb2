"""Many models at once: `structkit models build --all` (issue 43, item 2).

Every treebank found (the UD treebank folders under ``--from ROOT``, or in ``$STRUCTKIT_DATA``
and the cache), or every name of a list file, becomes one build (``structkit.recipes.build``)
run in this process, on ``--jobs N`` worker processes, or as one task each on a Dask cluster
(``--dask ADDRESS``). Each writes its model (atomically, so an interrupted run leaves no part
of one) and its card beside it as JSON; a build that fails is a row of the summary and the rest
go on; ``--skip-existing`` keeps a model already built from the same files. The summary table
(``summary.md`` in the output folder) has a row per treebank with its test scores, training
CPU time, size and the model's fingerprint, which is the same for the same model wherever it
was trained.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from structkit import recipes
from structkit.card import read as read_card
from structkit.datasets.convert import sha256_file
from structkit.datasets.paths import search_dirs
from structkit.errors import UserError
from structkit.io.files import atomic_output, temporary_folder
from structkit.model import load_model

SUMMARY = "summary.md"
# The CoNLL 2018 metrics a pipeline's row shows (its card's test scores), in order.
PIPELINE_COLUMNS = ("tokens", "words", "sentences", "upos", "ufeats", "lemmas", "uas", "las", "mlas", "blex")


@dataclass
class Built:
    """One row of the summary: a treebank's build and what came of it."""

    name: str
    output: str
    state: str = "built"          # built | kept (--skip-existing) | failed | skipped
    reason: str = ""              # why it failed or was skipped
    scores: dict = field(default_factory=dict)   # the card's test scores
    cpu_seconds: float | None = None
    fingerprint: str = ""
    size: int = 0


def fingerprint(path: str) -> str:
    """What makes the model file ``path`` the model it is, hashed (:func:`fingerprint_of`)."""
    return fingerprint_of(*load_model(path))


def fingerprint_of(header: dict, arrays: dict) -> str:
    """A loaded model's fingerprint: its arrays and the header's task, configuration, facts and
    parts, not its card (whose times and date differ between runs). A pipeline's parts are
    model files of their own: each counts by its own fingerprint."""
    h = hashlib.sha256(json.dumps({k: header.get(k) for k in ("task", "config", "facts", "parts")},
                                  sort_keys=True).encode())
    for name in sorted(arrays):
        a = arrays[name]
        h.update(name.encode())
        if name.startswith("part_"):
            with temporary_folder("structkit-part-") as folder:
                part = os.path.join(folder, "part.model")
                with open(part, "wb") as f:
                    f.write(a.tobytes())
                h.update(fingerprint(part).encode())
        else:
            h.update(str(a.dtype).encode() + str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _loaded(path: str) -> tuple[dict, dict, str]:
    """A model file read once (checked): its header, its card ({} before cards) and its
    fingerprint."""
    header, arrays = load_model(path)
    card = header.get("card")
    return header, card if isinstance(card, dict) else {}, fingerprint_of(header, arrays)


def _row(recipe: recipes.Recipe, output: str, state: str) -> Built:
    _, card, fp = _loaded(output)
    return Built(recipe.name, output, state, scores=(card.get("test") or {}).get("scores") or {},
                 cpu_seconds=(card.get("training") or {}).get("cpu_seconds"),
                 fingerprint=fp, size=os.path.getsize(output))


def build_one(recipe: recipes.Recipe, output: str, train_on: str = "train", fetch: bool = True) -> Built:
    """Build ``recipe`` into ``output`` and its card into ``output.card.json`` (the two renamed
    into place together, so a stopped run never leaves a model without its card); a mistake in
    the data or the options (a ``UserError``) or a failure of the training is the row's reason,
    never an exception: the other builds go on. Runs in a worker process or on a Dask worker."""
    try:
        recipes.build(recipe, output, fetch=fetch, train_on=train_on, card_beside=True)
        return _row(recipe, output, "built")
    except UserError as e:
        return Built(recipe.name, output, "failed", reason=str(e))
    except Exception as e:   # a bug: reported in the row, the other treebanks still build
        return Built(recipe.name, output, "failed", reason=f"{type(e).__name__}: {e}")


def _write(path: str, text: str) -> None:
    with atomic_output(path) as f:
        f.write(text)


# ---- what to build ------------------------------------------------------------------------------
def _holds_treebank(folder: str) -> bool:
    try:
        return any(recipes.UD_FILE.match(n) for n in os.listdir(folder))
    except OSError:
        return False


def found_treebanks(root: str | None) -> list[str]:
    """The UD treebank folders under ``root`` (itself, or its sub-folders), or, with no root,
    the ``ud-*`` folders of ``$STRUCTKIT_DATA`` and the cache, sorted by name."""
    if root is not None:
        if not os.path.isdir(root):
            raise UserError("not a folder: --from names a folder of treebanks", root)
        if _holds_treebank(root):
            return [root]
        return [os.path.join(root, n) for n in sorted(os.listdir(root))
                if os.path.isdir(os.path.join(root, n)) and _holds_treebank(os.path.join(root, n))]
    seen: dict[str, str] = {}
    for d in search_dirs():
        if d.is_dir():
            for p in sorted(d.iterdir()):
                if p.name.startswith("ud-") and p.is_dir() and _holds_treebank(str(p)):
                    seen.setdefault(p.name, str(p))
    return [seen[k] for k in sorted(seen)]


def listed(path: str) -> list[str]:
    """The names of a list file: one per line (a recipe, a ``ud:`` name or a treebank folder),
    blank lines and ``#`` comments ignored."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UserError(f"cannot read the list: {e.strerror or e}", path) from None
    except UnicodeDecodeError:
        raise UserError("the list is not UTF-8 text", path) from None
    names = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not names:
        raise UserError("the list names no treebank (one name or folder a line)", path)
    return names


def plan(items: list[str], task: str) -> list[recipes.Recipe]:
    """A recipe for each item: a folder (built with ``task``) or a recipe or ``ud:`` name."""
    out = []
    for item in items:
        out.append(recipes.folder_recipe(item, task) if os.path.isdir(item) else recipes.get(item))
    return out


def _current(recipe: recipes.Recipe, output: str, train_on: str) -> bool:
    """Whether ``output`` is a model built from this recipe's files as they are now (for
    ``--skip-existing``): its card names the recipe, and each file it was trained, selected and
    scored on, with the sha256 of the file there now."""
    try:
        _, card = read_card(output)
        card = card or {}
        if (card.get("recipe") or {}).get("name") != recipe.name:
            return False
        resolved, _ = recipes.source_paths(recipe, fetch=False)
        paths = recipes.training_paths(recipe, resolved, train_on)
        data = card.get("data") or {}
        return set(data) == set(paths) and all(
            (data[k] or {}).get("sha256") == sha256_file(Path(p)) for k, p in paths.items())
    except (UserError, OSError, KeyError, TypeError, AttributeError):
        return False


def _unbuildable(recipe: recipes.Recipe, train_on: str) -> str:
    """Why a treebank whose files are here cannot be built as asked (no training file, say), or
    ''; a treebank still to fetch is checked when it is built."""
    try:
        paths = recipes.files(recipe)
        if paths:
            recipes.training_paths(recipe, paths, train_on)
    except UserError as e:
        return str(e)
    return ""


# ---- running them -------------------------------------------------------------------------------
def build_all(chosen: list[recipes.Recipe], outputs: list[str], *, jobs: int = 1,
              dask_address: str | None = None, skip_existing: bool = False, train_on: str = "train",
              fetch: bool = True, progress: bool = False,
              on_row: Callable[[Built], None] | None = None) -> list[Built]:
    """Build each recipe into its output, ``jobs`` at a time or on a Dask cluster; the rows in
    the recipes' order. ``on_row`` hears each as it finishes."""
    rows: list[Built | None] = [None] * len(chosen)
    todo = []
    for k, (r, out) in enumerate(zip(chosen, outputs)):
        reason = _unbuildable(r, train_on)
        if reason:
            rows[k] = Built(r.name, out, "skipped", reason=reason)
        elif skip_existing and os.path.exists(out) and _current(r, out, train_on):
            rows[k] = _row(r, out, "kept")
        else:
            todo.append(k)
        if rows[k] is not None and on_row is not None:
            on_row(rows[k])
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(chosen), initial=len(chosen) - len(todo), unit="treebank", file=sys.stderr)

    def done(k: int, row: Built) -> None:
        rows[k] = row
        if bar is not None:
            failed = sum(1 for x in rows if x is not None and x.state == "failed")
            bar.set_postfix(running=len(todo) - sum(1 for j in todo if rows[j] is not None), failed=failed,
                            refresh=False)
            bar.update(1)
        if on_row is not None:
            on_row(row)

    try:
        if dask_address is not None:
            _on_dask(chosen, outputs, todo, dask_address, train_on, fetch, done)
        elif jobs > 1 and len(todo) > 1:
            _on_processes(chosen, outputs, todo, jobs, train_on, fetch, done)
        else:
            for k in todo:
                done(k, build_one(chosen[k], outputs[k], train_on, fetch))
    finally:
        if bar is not None:
            bar.close()
    return [r for r in rows if r is not None]


# In a build worker: the run's "stopping" event (``_on_processes``), set once the run is stopped.
_STOPPING = None


def _init_build_worker(stopping) -> None:
    global _STOPPING
    _STOPPING = stopping


def _build_queued(recipe: recipes.Recipe, output: str, train_on: str, fetch: bool) -> Built | None:
    """``build_one`` in a worker, unless the run was stopped while this build waited in the
    pool's queue (None): a build already handed to the pool cannot be cancelled, and each took
    a minute after Ctrl-C."""
    if _STOPPING is not None and _STOPPING.is_set():
        return None
    return build_one(recipe, output, train_on, fetch)


def _on_processes(chosen, outputs, todo, jobs, train_on, fetch, done) -> None:
    """The builds on ``jobs`` processes. When the run stops (Ctrl-C, which also ends the builds
    running in the workers, or any error here), no build not yet begun begins: the pool's queue
    holds builds ``cancel`` cannot take back, and each would have trained in full before the
    run ended."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    stopping = context.Event()
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=context,
                             initializer=_init_build_worker, initargs=(stopping,)) as pool:
        futures = {}
        try:
            for k in todo:
                futures[pool.submit(_build_queued, chosen[k], outputs[k], train_on, fetch)] = k
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
        except BaseException:
            stopping.set()
            for f in futures:
                f.cancel()
            raise


def _on_dask(chosen, outputs, todo, address, train_on, fetch, done) -> None:
    from structkit.distributed import connect, die_then

    client, cluster = connect(address)
    try:
        from dask.distributed import as_completed

        work = die_then(build_one)   # the tests' fault hook: a worker lost in the middle of a build
        futures = {client.submit(work, chosen[k], outputs[k], train_on, fetch, pure=False): k
                   for k in todo}
        for fut in as_completed(futures):
            done(futures[fut], fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def headline(scores: dict, picks: tuple) -> list[tuple[str, str | None, float]]:
    """(key, sub-key, value) of the ``picks`` (key, sub-key or None) a card's scores have, in
    order; a parser's UAS without punctuation is left out where it has CoNLL 2018's (every word)."""
    out = []
    for key, sub in picks:
        if key == "uas" and "conll18" in scores:
            continue
        v = scores.get(key)
        if sub is not None:
            v = v.get(sub) if isinstance(v, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append((key, sub, float(v)))
    return out


def main_scores(scores: dict) -> str:
    """A few headline numbers of a card's scores, for the build summary: a pipeline's words,
    LAS, MLAS and BLEX (CoNLL 2018, from raw text), a tokenizer's tokens, words and sentences, a
    parser's UAS and LAS, a tagger's accuracy or F1."""
    picks = (("accuracy", None), ("f1", None), ("conll18", "uas"), ("conll18", "las"), ("uas", None),
             ("las", "f1"), ("mlas", "f1"), ("blex", "f1"),
             ("tokens", "f1"), ("words", "f1"), ("sentences", "f1"), ("alltags", None), ("lemmas", None),
             ("chosen", "wer"))
    got = headline(scores, picks)
    if any(key == "las" for key, _, _ in got):   # a pipeline: words first, then the three metrics
        got = [g for g in got if g[0] == "words"] + [g for g in got if g[0] in ("las", "mlas", "blex")]
    return ", ".join(f"{key.upper() if key in ('las', 'mlas', 'blex') else key if sub in (None, 'f1') else sub.upper()}"
                     f" {v:.2f}" for key, sub, v in got[:4])


# ---- what is built: the catalogue -----------------------------------------------------------------
MODEL_SUFFIXES = (".model", ".skm")


def catalogue(folder: str) -> list[dict[str, Any]]:
    """A row per model file under ``folder`` (``*.model``, ``*.skm``), sorted by path: its task,
    recipe, test scores, size and date from its card; a file that is not a model, or is
    damaged, is a row that says so (the listing goes on)."""
    if not os.path.isdir(folder):
        raise UserError("not a folder: --built names a folder of models", folder)
    paths = sorted(os.path.join(d, n) for d, _, names in os.walk(folder) for n in names
                   if n.endswith(MODEL_SUFFIXES))
    rows = []
    for path in paths:
        row: dict[str, Any] = {"path": path, "bytes": os.path.getsize(path)}
        try:
            header, card, fp = _loaded(path)
        except UserError as e:
            row["error"] = str(e).removeprefix(path + ": ")
            rows.append(row)
            continue
        recipe = card.get("recipe") or {}
        row.update({"task": header.get("task"), "recipe": recipe.get("name"),
                    "treebank": (recipe.get("treebank") or {}).get("name"),
                    "created": card.get("created"), "fingerprint": fp,
                    "test": (card.get("test") or {}).get("scores") or {},
                    "train_cpu_seconds": (card.get("training") or {}).get("cpu_seconds")})
        rows.append(row)
    return rows


# ---- the summary ----------------------------------------------------------------------------------
def _score(scores: dict, key: str) -> str:
    """A CoNLL 2018 metric's F1 (a dict with "f1"), or '' (another task's count of the same name)."""
    v = scores.get(key)
    v = v.get("f1") if isinstance(v, dict) else None
    return f"{v:.2f}" if isinstance(v, (int, float)) else ""


def summary_lines(rows: list[Built], seconds: float | None = None) -> list[str]:
    """The summary as a Markdown table: a pipeline's test scores in the CoNLL 2018 metrics
    (F1), another model's headline score, training CPU seconds, size and fingerprint."""
    cols = [c for c in PIPELINE_COLUMNS if any(_score(r.scores, c) for r in rows)]
    pipeline = bool(cols)
    cols = cols or ["score"]
    lines = ["| treebank | state | " + " | ".join(c if c != "score" else "test score" for c in cols)
             + " | train CPU s | MB | model |",
             "|---|---|" + "---:|" * len(cols) + "---:|---:|---|"]
    for r in rows:
        if pipeline:
            cells = [_score(r.scores, c) for c in cols]
        else:
            cells = [main_scores(r.scores)]
        state = r.state if not r.reason else f"{r.state}: {r.reason.removeprefix(r.name + ': ')}"
        cpu = f"{r.cpu_seconds:.1f}" if r.cpu_seconds is not None else ""
        mb = f"{r.size / 1e6:.1f}" if r.size else ""
        lines.append(f"| {r.name} | {state.replace('|', '/')} | " + " | ".join(cells)
                     + f" | {cpu} | {mb} | {r.fingerprint} |")
    built = [r for r in rows if r.state in ("built", "kept")]
    cpu = sum(r.cpu_seconds or 0 for r in rows if r.state == "built")
    tail = (f"{len(built)} of {len(rows)} built or kept, {sum(r.state == 'failed' for r in rows)} failed; "
            f"training CPU {cpu:.1f} s (this run)")
    if seconds is not None:
        tail += f", {seconds:.1f} s wall"
    return lines + ["", tail + "."]


def write_summary(folder: str, rows: list[Built], seconds: float | None = None) -> str:
    path = os.path.join(folder, SUMMARY)
    _write(path, "\n".join(summary_lines(rows, seconds)) + "\n")
    return path


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return fn(), time.perf_counter() - t0
