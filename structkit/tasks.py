"""The tasks, by name, and :class:`Task`: the one protocol the front-ends (commands, API,
server, batch, dump, explain) use for every task, so that none of them names one.

A task is a wing of the package (``structkit/sequence``, ``structkit/parse``,
``structkit/rerank``) that registers one :class:`Task` in its light ``wing`` module. This module
is ground floor: it knows the wings by module name only (:data:`WINGS`, imported on the first
look-up) and imports nothing heavy, so the command line can list the tasks without loading
numba; a task's methods import their wing's code when called. :func:`register` adds a task
(a test's toy task, or a wing's). :func:`make_config` is the one path from option values (flags
merged over a config file) to a validated, typed config, for every task.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from structkit.errors import UserError
from structkit.learn.spec import alternatives

if TYPE_CHECKING:
    from structkit.serving import Serving

SEQUENCE = ("pos", "chunk", "ner")  # the chain-model tasks (structkit/sequence): one constant
WINGS = ("structkit.sequence.wing", "structkit.parse.wing", "structkit.rerank.wing",
         "structkit.tokenizer.wing", "structkit.ud.wing", "structkit.morph.wing",
         "structkit.pipeline.wing")


@dataclass(frozen=True)
class CommandOption:
    """One option of a task's command, declared without click (the command line makes the
    click option): its flags and parameter name, help, and kind (``bool`` for a flag, ``int``,
    ``str``, or ``choices``); ``metavar``, the value's name in ``--help`` (default: its type's)."""

    decls: tuple[str, ...]
    help: str
    kind: type = str
    choices: tuple[str, ...] = ()
    default: Any = None
    show_default: bool = False
    metavar: str | None = None


@dataclass(frozen=True)
class Training:
    """How a task trains (``Task.training``): the learner it uses by default (the config class's
    ``algo`` default; tests/test_configs.py checks they agree), the config-file spellings of
    fields whose Python names differ (``lambda`` is ``lam``), whether it trains the shards of
    parameter mixing (``train --dask``), the tasks whose learners train its parts (a pipeline's:
    `structkit algorithms --task pipeline` lists theirs), and what `train` prints. A wing subclasses it for its
    config class and training function (:meth:`setup`: a method, so that the wing imports them
    only when asked) and for what it prints differently."""

    default_algo: str
    aliases: tuple[tuple[str, str], ...] = ()
    mixes: bool = False
    parts: tuple[str, ...] = ()   # the tasks whose learners train its parts (a pipeline's)
    trains: bool = True           # False: `train` has nothing to train (ud only scores files)

    def setup(self) -> tuple[type, Any]:
        """Its config dataclass and training function, ``train(config, train_path, dev_path,
        on_epoch, ...)`` (a wing imports them here, when first asked)."""
        raise NotImplementedError

    def config_type(self) -> type:
        return self.setup()[0]

    def train_function(self):
        return self.setup()[1]

    def keys(self) -> list[str]:
        """The option keys this task takes (config-file spelling)."""
        alias = {field: key for key, field in self.aliases}
        return [alias.get(f.name, f.name) for f in fields(self.config_type())]

    def choose_algo(self, train_path: str | None) -> str | None:
        """The learner for this training data when none is named (None: the config's default)."""
        return None

    # ---- what `train` prints ---------------------------------------------------------------------
    def main_score(self) -> str:
        """The dev score that selects epochs and that `train` shows (a key of the eval dict)."""
        raise NotImplementedError

    def epoch_calls(self, config) -> int:
        """How many times training reports an epoch (the progress bar's length)."""
        return config.epochs

    def epoch_line(self, config, stats: dict) -> str:
        """One epoch's training statistics, as `train` shows them."""
        from structkit.learn.spec import default_report

        return default_report(stats)

    def dev_line(self, config, dev: dict) -> str:
        """One epoch's dev scores, as `train` shows them."""
        key = self.main_score()
        return f"dev {key} {dev[key]:.2f}"

    def trained(self, config, model) -> str:
        """What was trained, the summary's start ('N features, M labels')."""
        raise NotImplementedError

    def summary(self, config, model) -> str:
        """The line `train` prints after the model is written: what was trained, on how many
        tokens, the epoch kept (dev selection) and the time."""
        info = model.info
        kept = ""
        if info.get("selected_epoch") is not None:
            (name, score), = info["selected_dev"].items()
            kept = f", epoch {info['selected_epoch']} of {info['epochs_run']} "
            if info.get("refit"):
                kept += (f"best on the held-out {info['dev_sentences']} (dev {name} {score:.2f}), then "
                         f"{info['refit_epochs']} epochs on all {info['train_sentences']} sentences")
            else:
                kept += f"kept (best dev {name} {score:.2f})"
        return (f"{self.trained(config, model)}, {info['train_tokens']} training tokens{kept}, "
                f"{info['train_seconds']:.1f} s")

    def metrics(self, config, model, history: list[dict]) -> dict:
        """The --metrics-json document: the model's training facts and config, and the epochs."""
        return {"config": model.info | {"config": vars(config)}, "epochs": history}

    def chosen(self, model) -> dict | None:
        """What training chose between, for the model card, when it trained several candidates
        (a pipeline's parsers): ``{"kept": what, "scores": its dev scores, "others": {what:
        scores}}``; None (the default): the card reports the epoch kept."""
        return None


@dataclass(frozen=True)
class Command:
    """The command that runs a task's models, ``structkit NAME`` (``Task.command``): its
    one-line ``help`` and --help text (``doc``, default ``help``), its own options after -m and
    FILES, what -m takes (``model_noun``; ``chains``: -m can be given several times, the models
    run in a chain), and whether it runs through ``structkit.batch`` (``batched``: files,
    folders, cores, Dask; then :meth:`batch_job` makes its job, else :meth:`run` is the whole
    command). A wing subclasses it for those two and for what `explain` and the model card read."""

    name: str
    help: str = ""
    doc: str = ""
    options: tuple[CommandOption, ...] = ()
    model_noun: str = ""
    chains: bool = False
    batched: bool = True

    def model_help(self, task: str) -> str:
        """The command's help for -m/--model (``task``: the task's name)."""
        if self.model_noun:
            if self.chains:
                return (f"{self.model_noun.capitalize()} trained with `structkit train --task {task}`, or "
                        "a tokenizer, morph, POS or parse model; repeat -m to chain models in order.")
            return f"{self.model_noun.capitalize()} trained with `structkit train --task {task}`."
        return "A model trained with `structkit train`."

    def batch_job(self, task: Task, model_path: str, command: str, **options) -> tuple[Any, list[str]]:
        """The batch job of the command (checked options, ``task``'s loaded model) and the files
        no output may be (the model files)."""
        raise NotImplementedError

    def run(self, task: Task, model_path: str, files: tuple[str, ...], **options) -> None:
        """The whole command, for a task whose command is not a batch job."""
        raise NotImplementedError

    def model_input(self, gold_path: str, folder: str) -> str:
        """The file the command reads to redo ``gold_path``'s annotation (the model card scores
        a model by running the command on it, then `eval` GOLD PRED): the gold file itself, or a
        file the task writes in ``folder`` (a tokenizer's raw text)."""
        return gold_path

    def explain_input(self, file: str | None, text: str | None, number: int):
        """What `structkit explain` explains, for a task whose models do not read sentences of
        CoNLL columns: ``(unit, path)``, the ``number``-th unit (1-based) of FILE (or '-') or of
        ``text``, read as the task's models read input, and the path errors name; None (the
        default): the command reads the sentence (or tokenises ``text``) as taggers read it."""
        return None


@dataclass(frozen=True)
class Task:
    """A task as the front-ends see it: its name, how it trains (:class:`Training`), the command
    that runs its models (:class:`Command`; None: it has none), how the server runs them
    (``structkit.serving.Serving``; None: not served) and the options of `eval` it takes besides
    --json (``label_column``, ``model_path``, ``other``; ``scheme``: its labels are phrases in a
    B-/I- scheme). The methods are what a wing's models do: a wing overrides those its task has
    (the defaults say the task does not do it, or are the common case)."""

    name: str
    training: Training
    command: Command | None = None
    serving: Serving | None = None
    eval_options: tuple[str, ...] = ()

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        """The model in ``path`` (a UserError naming the file for anything wrong, a model of
        another task included: ``tasks``, this one's by default, are those the caller takes)."""
        raise NotImplementedError

    def components(self, model, path: str | None = None, **options) -> list:
        """The pipeline components (``structkit.components``) a loaded model makes, for
        `annotate -m` and ``structkit.load([...])``; none (the default): its models cannot be
        chained (:func:`chainable`)."""
        return []

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        """What `structkit dump` prints: the strongest ``top`` features (names containing
        ``pattern``)."""
        raise NotImplementedError

    def explanations(self, model, sentence, path: str, columns: str | None = None,
                     text: bool = False, depth: int | None = None, only: int | None = None):
        """Why each token got its label: an iterator of explanations (label, runner-up, margin,
        the pushes each way; ``structkit.explain.report_lines`` words one), one token at a time;
        None from a task whose models are not explained (:func:`explains`)."""
        return None

    def check_search_options(self, model, path: str, depth: int | None = None,
                             beam: int | None = None) -> int | None:
        """Check a run's search options against the model (UserError); the beam to use."""
        if depth is not None:
            raise UserError(f"--depth does not apply to {self.name} models", path)
        if beam is not None:
            raise UserError(f"--beam does not apply to {self.name} models", path)
        return beam

    def evaluate(self, files: tuple[str, ...], **options) -> tuple[dict, str]:
        """`structkit eval --task NAME FILES`: the JSON dict and the text report. ``options``:
        label_column, model_path, other (--compare) and scheme, as given."""
        raise NotImplementedError


def chainable(task: Task) -> bool:
    """Whether its models are pipeline components (it defines ``Task.components``)."""
    return type(task).components is not Task.components


def explains(task: Task) -> bool:
    """Whether `structkit explain` covers its models (it defines ``Task.explanations``)."""
    return type(task).explanations is not Task.explanations


def describe(task: Task, model) -> dict:
    """What the server says of a model (``GET /models``) besides its name, task, algorithm and
    training data: its serving's (``Serving.describe``)."""
    return task.serving.describe(model)


_TASKS: dict[str, Task] = {}
_loaded = False


def _registry() -> dict[str, Task]:
    global _loaded
    if not _loaded:
        _loaded = True
        for wing in WINGS:  # each registers its tasks when imported (light modules)
            importlib.import_module(wing)
    return _TASKS


def register(task: Task, replace: bool = False) -> Task:
    """Add a task (ValueError for a name already taken, unless ``replace``)."""
    tasks = _registry() if _loaded else _TASKS
    if task.name in tasks and not replace:
        raise ValueError(f"task {task.name!r} is already registered")
    tasks[task.name] = task
    return task


def unregister(name: str) -> None:
    _registry().pop(name, None)


def tasks() -> list[Task]:
    """Every task, in registration order."""
    return list(_registry().values())


def names() -> tuple[str, ...]:
    return tuple(_registry())


def __getattr__(attr: str) -> Any:
    # TASKS (name -> Task) and NAMES, read as module attributes, are the live registry
    if attr == "TASKS":
        return _registry()
    if attr == "NAMES":
        return names()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def get_task(name: Any) -> Task:
    """The task ``name``, or the one-line error that lists them."""
    tasks_ = _registry()
    if not isinstance(name, str) or name not in tasks_:
        raise UserError(f"--task must be {alternatives(names())}, got {name!r}")
    return tasks_[name]


def task_of_model(path: str, command: str | None, takes: list[Task] | None = None) -> Task:
    """The task of the model file ``path`` (its header's "task") among ``takes`` (those the
    command runs; every task by default). A file whose task is not among them (or that is not a
    model) is the UserError the first one's loader gives for it."""
    from structkit.model import model_task

    takes = tasks() if takes is None else takes
    name = model_task(path)
    for t in takes:
        if t.name == name:
            return t
    model = takes[0].load(path, command, tasks=tuple(t.name for t in takes))  # raises: what is wrong
    return next(t for t in takes if t.name == model.config.task)  # (its header read after all)


def all_keys() -> set[str]:
    """Every option key some task takes (what a config file may set)."""
    return {k for t in tasks() for k in t.training.keys()}


def make_config(values: dict[str, Any]):
    """A validated config for ``values['task']`` from option values (config-file spelling,
    ``None`` meaning unset). An option the task does not take is refused, naming the tasks
    that take it."""
    if values.get("task") is None:
        raise UserError(f"--task is required ({', '.join(names())}), on the command line or in --config")
    task = get_task(values["task"])
    given = {k: v for k, v in values.items() if v is not None}
    takes = task.training.keys()
    foreign = [k for k in given if k not in takes]
    if foreign:
        flags = ", ".join("--" + k.replace("_", "-") for k in foreign)
        where = []
        for k in foreign:
            others = [t.name for t in tasks() if k in t.training.keys()]
            if others:
                where.append(f"--{k.replace('_', '-')} applies to --task {', '.join(others)}")
        raise UserError(f"option(s) {flags} do not apply to --task {task.name} ("
                        + ("; ".join(where) + "; " if where else "")
                        + f"--task {task.name} takes {', '.join(k for k in takes if k != 'task')})")
    field = dict(task.training.aliases)
    config = task.training.config_type()(**{field.get(k, k): v for k, v in given.items()})
    config.validate()
    return config
