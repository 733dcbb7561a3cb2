"""Model cards: what a model file says about how it was made.

`structkit train` (and `structkit models build`, and the API's ``fit`` then ``save``) store a card
in the model file's JSON header (``header["card"]``): the training data (path, registered corpus,
its licence, the file's sha256), the options, the dev scores (and the test scores with ``--test``),
the training time (wall and CPU) and the structkit version. The card is made here once, for every
task: training goes through :func:`train`, which times the task's training function, then scores
the trained model on the dev and test files by running the task's own command over them and
scoring the output with the task's own `eval` (:func:`score_model`), so a card's scores are the
ones `structkit eval` gives for the same files. :func:`save` writes the model with its card
(``structkit.model.card_for_saves``: the task's own ``save`` is unchanged). ``structkit info MODEL``
shows a card (:func:`card_lines`). Files written before cards existed have none and still load.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

from structkit import __version__
from structkit.batch import collect_inputs, run
from structkit.datasets import paths
from structkit.datasets.convert import sha256_file
from structkit.datasets.registry import corpora, corpus_for_path
from structkit.errors import UserError
from structkit.io.files import temporary_folder, temporary_writes
from structkit.model import card_for_saves, load_model, model_header, scratch_saves
from structkit.tasks import Command, Task

CARD_VERSION = 1


# ---- the training data ----------------------------------------------------------------------------
def _under(path: str, folder) -> str | None:
    """``path`` relative to ``folder`` (with '/'), or None where it is not inside it."""
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(str(folder)))
    except ValueError:   # another drive (Windows)
        return None
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel.replace(os.sep, "/")


def data_facts(given: str, resolved: str | None = None, sha256: str | None = None) -> dict:
    """What a card says of a data file: the path as given, its path in the data folders (which
    names its corpus), the registered corpus and licence when the file is one of a registered
    corpus (by its place in a data folder or by its sha256), whether its sha256 is the registry's,
    its size and sha256. ``sha256`` is used for a file that cannot be read again (standard input)."""

    facts: dict[str, Any] = {"path": "<stdin>" if given == "-" else str(given)}
    resolved = resolved or given
    if resolved is None or resolved == "-":
        resolved = "-"
    elif os.path.isfile(resolved):
        from pathlib import Path

        facts["sha256"] = sha256_file(Path(resolved))
        facts["bytes"] = os.path.getsize(resolved)
    elif sha256:
        facts["sha256"] = sha256
    rel = None
    if resolved != "-":
        for folder in paths.search_dirs():
            rel = _under(resolved, folder)
            if rel is not None:
                break
        if rel is None and _under(resolved, paths.sample_dir()) is not None:
            rel = "sample/" + _under(resolved, paths.sample_dir())
    if rel is not None:
        facts["data_path"] = rel
    corpus, registered = (corpus_for_path(rel) if rel else None), None
    sha = facts.get("sha256")
    for c in corpora():
        for f in c.files:
            if (sha is not None and f.sha256 == sha) or (corpus is c and rel == f.path):
                corpus, registered = c, f
                break
        if registered is not None:
            break
    if corpus is not None:
        facts["corpus"] = corpus.aliases[0] if corpus.ud is not None and corpus.aliases else corpus.name
        facts["licence"] = corpus.licence
        if registered is not None:
            facts["split"] = registered.split
            if registered.sha256 is not None and sha is not None:
                facts["registry_sha256"] = "matches" if registered.sha256 == sha else "differs"
    return facts


# ---- scores ---------------------------------------------------------------------------------------
def _numbers(d: dict, depth: int = 2) -> dict:
    """The numbers of an `eval` result: top-level scores, and the scores of tables one level
    down whose values are numbers (``conll18``, ``ptb``, ``chosen``); per-label tables and
    lists are left out."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)):
            if v == v and v not in (float("inf"), float("-inf")):
                out[k] = v
        elif isinstance(v, dict) and depth > 1:
            sub = _numbers(v, 1)
            if sub:
                out[k] = sub
    return out


def score_model(task, model_path: str, gold_path: str) -> tuple[dict, bool]:
    """The scores `structkit eval --task TASK GOLD PRED` gives for the output PRED of the task's
    command (`structkit COMMAND -m MODEL INPUT`) on ``gold_path``: INPUT is the gold file, or
    what the task's ``model_input`` makes of it (the raw text, for a tokenizer; then the second
    value is True)."""
    with temporary_folder("structkit-card-") as folder, temporary_writes(folder):
        command = task.command
        given = command.model_input(gold_path, folder)
        out = os.path.join(folder, "predicted")
        if command.batched:
            job, protect = command.batch_job(task, model_path, command.name)
            summary = run(job, collect_inputs([given]), output=out, jobs=1, protect=protect)
            if summary.failed:
                raise UserError(f"could not score the model on {gold_path}")
        else:
            command.run(task, model_path, (given,), output=out)
        result, _ = task.evaluate((gold_path, out), **_eval_options(task, model_path))
    return _numbers(result), given != gold_path


def _eval_options(task, model_path: str) -> dict:
    """The `eval` options the model's training fixed: the label column it learnt (a pos model of
    lemmas, or of a FEATS key, is scored on that column, not on UPOS)."""

    column = ((model_header(model_path) or {}).get("config") or {}).get("label_column")
    return {"label_column": column} if column and "label_column" in task.eval_options else {}


def scorable(task) -> bool:
    """Whether the task's models can be scored by its command and `eval` (a task without
    either, such as a new one being built, gets a card without dev/test scores from eval)."""

    command = task.command
    return command is not None and type(task).evaluate is not Task.evaluate \
        and (not command.batched or type(command).batch_job is not Command.batch_job) \
        and (command.batched or type(command).run is not Command.run)


# ---- making the card -------------------------------------------------------------------------------
def _cpu() -> float:
    """CPU seconds of this process and its finished children (the workers of --jobs)."""
    t = time.process_time()
    try:
        import resource

        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        t += r.ru_utime + r.ru_stime
    except (ImportError, OSError):
        pass
    return t


def _config_dict(config) -> dict:
    import dataclasses

    d = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(vars(config))
    return {k: v for k, v in d.items() if not k.startswith("_")}


def _dev_during_training(model, history: list[dict]) -> dict:
    """The dev scores training measured for the epoch it kept (or its last)."""
    info = getattr(model, "info", {}) or {}
    out: dict[str, Any] = {}
    scored = [h for h in history if isinstance(h.get("dev"), dict)]
    if not scored:
        return out
    kept = info.get("selected_epoch")
    pick = next((h for h in scored if h.get("epoch") == kept), None) if kept is not None else None
    pick = pick or (scored[kept - 1] if kept is not None and 0 < kept <= len(scored) else scored[-1])
    # "select" is the selection's own sum of scores, not a score `eval` gives
    out["scores"] = {k: v for k, v in _numbers(pick["dev"]).items() if k != "select"}
    if kept is not None:
        out["selected_epoch"] = kept
    if info.get("epochs_run") is not None:
        out["epochs_run"] = info["epochs_run"]
    if info.get("refit"):
        out["held_out"] = True   # --dev-split: scored on sentences held out of --train
    return out


def train(task, config, train_path: str, dev_path: str | None = None, test_path: str | None = None,
          on_epoch: Callable[[int, dict], None] | None = None, *, given: dict | None = None,
          recipe: dict | None = None, trainer: Callable | None = None, **train_kw) -> tuple[Any, dict]:
    """Train ``task`` with ``config`` (the task's training function, as `structkit train`
    calls it) and make the model's card; returns ``(model, card)``. ``given``: the data paths
    as the user wrote them ({"train": ..., "dev": ..., "test": ...}; default: the paths);
    ``recipe``: the `structkit models` recipe the model was built from; ``trainer``: another
    training function of the same arguments (the API's, over sentences in memory: then
    ``train_path`` is None and ``given["train"]`` names the data)."""

    given = given or {}
    history: list[dict] = []

    def record(epoch: int, stats: dict) -> None:
        if "refit" not in stats:
            history.append({"epoch": epoch, **stats})
        if on_epoch is not None:
            on_epoch(epoch, stats)

    wall0, cpu0 = time.perf_counter(), _cpu()
    model = (trainer or task.training.train_function())(config, train_path, dev_path, record, **train_kw)
    wall, cpu = time.perf_counter() - wall0, _cpu() - cpu0
    info = getattr(model, "info", {}) or {}
    data = {"train": data_facts(given.get("train") or train_path or "<in memory>", train_path,
                                info.get("train_sha256"))}
    card: dict[str, Any] = {
        "card_version": CARD_VERSION, "task": task.name, "structkit_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data": data, "options": _config_dict(config),
        "training": {"wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
                     "epochs": len(history) or None},
    }
    if recipe is not None:
        card["recipe"] = recipe
    if isinstance(info.get("vectors"), dict):   # --vectors: the file, its sha256, the limit, the clusters
        card["vectors"] = info["vectors"]
    scoring = [(k, p) for k, p in (("dev", dev_path), ("test", test_path)) if p is not None]
    for k, p in scoring:
        data[k] = data_facts(given.get(k, p), p)
    if any(isinstance(h.get("dev"), dict) for h in history):   # --dev, --dev-split, or dev in memory
        card["dev"] = {"during_training": task.training.chosen(model) or _dev_during_training(model, history)}
    readable = [(k, p) for k, p in scoring if p != "-"]
    if readable and not scorable(task):
        card["not_scored"] = (f"the {task.name} task has no command and eval to score its models "
                              "with (`structkit eval` does not take it)")
        readable = []
    if readable:
        t0 = time.perf_counter()
        with temporary_folder("structkit-card-") as folder:
            path = os.path.join(folder, "model")
            with scratch_saves(), temporary_writes(folder):   # read back once here; the user's file is compressed
                model.save(path)
            for k, p in readable:
                card.setdefault(k, {})["scores"], made = score_model(task, path, p)
            options = _eval_options(task, path)
        card["scoring_seconds"] = round(time.perf_counter() - t0, 3)
        card["scored_with"] = (f"structkit {task.command.name} -m MODEL {'TEXT' if made else 'FILE'} > OUTPUT, "
                               f"then structkit eval --task {task.name}"
                               + "".join(f" --{k.replace('_', '-')} {v}" for k, v in options.items())
                               + " FILE OUTPUT"
                               + (" (TEXT: the raw text of FILE)" if made else ""))
    return model, card


def save(model, path: str, card: dict | None) -> None:
    """Write ``model`` to ``path`` with ``card`` in its header (the task's own ``save``)."""

    with card_for_saves(card):
        model.save(path)


# ---- reading and showing a card -------------------------------------------------------------------
def read(path: str) -> tuple[dict, dict | None]:
    """The header of the model file ``path`` (verified: a damaged file or one that is not a
    model is a UserError) and its card (None for a file written before cards)."""

    header, _ = load_model(path)
    card = header.get("card")
    return header, card if isinstance(card, dict) else None


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _scores_text(scores: dict) -> str:
    parts = []
    for k, v in scores.items():
        if isinstance(v, dict) and "f1" in v:   # a precision/recall table: its F1
            parts.append(f"{k} F1 {_fmt(v['f1'])}")
        elif isinstance(v, dict):
            parts.append(f"{k} (" + ", ".join(f"{a} {_fmt(b)}" for a, b in v.items()) + ")")
        else:
            parts.append(f"{k} {_fmt(v)}")
    return ", ".join(parts)


def _data_text(d: dict) -> str:
    where = d.get("path", "?")
    if d.get("data_path") and d["data_path"] != where:
        where += f" ({d['data_path']})"
    bits = []
    if d.get("corpus"):
        bits.append(f"corpus {d['corpus']}")
    if d.get("licence"):
        bits.append(f"licence {d['licence']}")
    if d.get("sha256"):
        bits.append(f"sha256 {d['sha256']}")
    if d.get("registry_sha256"):
        bits.append(f"{d['registry_sha256']} the registry's")
    return where + ("; " + "; ".join(bits) if bits else "")


def card_lines(path: str, header: dict, card: dict | None) -> list[str]:
    """What `structkit info` prints for a model file."""
    task = header.get("task", "?")
    lines = [f"model:      {path}",
             f"task:       {task} (model file format {header.get('format_version')}, written by "
             f"structkit {header.get('structkit_version', '?')})"]
    if card is None:
        info = header.get("info") if isinstance(header.get("info"), dict) else {}
        lines.append("card:       none (this file was written before structkit stored model cards)")
        if info.get("train_file"):
            lines.append(f"train:      {info['train_file']}"
                         + (f"; sha256 {info['train_sha256']}" if info.get("train_sha256") else ""))
        return lines
    data = card.get("data", {})
    for k in ("train", "dev", "test"):
        if isinstance(data.get(k), dict):
            lines.append(f"{k + ' data:':<11} {_data_text(data[k])}")
    opts = card.get("options", {})
    if opts:
        shown = ", ".join(f"{k}={v}" for k, v in opts.items() if v is not None and k != "task"
                          and not (k == "algo" and v == "none"))   # a pipeline's parts have their own
        lines.append(f"options:    {shown}")
    vec = card.get("vectors")
    if isinstance(vec, dict):
        lines.append(f"vectors:    {vec.get('file')}; sha256 {vec.get('sha256')}; limit {vec.get('limit')}, "
                     f"{vec.get('words')} words of {vec.get('dim')} dimensions; k-means clusters "
                     f"{', '.join(map(str, vec.get('levels') or []))} (seed {vec.get('seed')}, fitted on the "
                     f"first {vec.get('fit_sample')} words"
                     + (f"; the last each of the level before split in {vec['split']}" if vec.get("split") else "")
                     + ")")
    dev = card.get("dev") or {}
    if dev.get("scores"):
        lines.append(f"dev:        {_scores_text(dev['scores'])}")
    during = dev.get("during_training") or {}
    if during.get("scores") and during.get("kept"):   # training chose between candidates
        others = "; ".join(f"{k}: {_scores_text(v)}" for k, v in (during.get("others") or {}).items())
        lines.append(f"dev (training, on the dev file's own tokens, {during['kept']} kept): "
                     f"{_scores_text(during['scores'])}"
                     + (f" (not kept: {others})" if others else ""))
    elif during.get("scores"):
        kept = (f"epoch {during['selected_epoch']} of {during.get('epochs_run', '?')} kept"
                if during.get("selected_epoch") is not None else "last epoch")
        held = ", on sentences held out of the training data" if during.get("held_out") else ""
        lines.append(f"dev (training, {kept}{held}): {_scores_text(during['scores'])}")
    test = card.get("test") or {}
    if test.get("scores"):
        lines.append(f"test:       {_scores_text(test['scores'])}")
    if card.get("scored_with"):
        lines.append(f"scored:     {card['scored_with']}")
    tr = card.get("training") or {}
    if tr:
        lines.append(f"training:   {_fmt(tr.get('wall_seconds'))} s wall, {_fmt(tr.get('cpu_seconds'))} s CPU"
                     + (f", {tr['epochs']} epochs" if tr.get("epochs") else ""))
    if card.get("recipe"):
        r = card["recipe"]
        tb = r.get("treebank") if isinstance(r.get("treebank"), dict) else {}
        how = f"--from {tb['folder']}" if tb.get("built_from") == "folder" else str(r.get("name"))
        if tb.get("trained_on") == "dev":
            how += " --train-on dev"
        lines.append(f"recipe:     {r.get('name')} (`structkit models build {how}`)")
        if tb:
            where = f"folder {tb['folder']}" if tb.get("folder") else f"release {tb.get('release', '?')}"
            lines.append(f"treebank:   {tb.get('name')}, {where}, trained on its {tb.get('trained_on')} "
                         f"file; files sha256 {tb.get('files_sha256')}")
    lines.append(f"version:    structkit {card.get('structkit_version', '?')}, {card.get('created', '?')}")
    return lines
