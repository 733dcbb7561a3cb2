"""`structkit train`: options from the learner and task tables, progress, the summary."""
from __future__ import annotations

import json

import click

from structkit.commands._util import (
    FLOAT,
    INT,
    Choice,
    EpochReport,
    GroupedCommand,
    GroupedOption,
    Typed,
    algo_names,
    finite,
    opt,
    progress_enabled,
    say,
    task_names,
    trained_task_names,
)
from structkit.config import load_config, resolve_data_path
from structkit.errors import UserError
from structkit.io.files import (
    check_outputs,
    check_writable,
    commit_together,
    spooled_stdin,
    stdin_once,
)
from structkit.learn import registry, selection
from structkit.tasks import SEQUENCE, TASKS, get_task, make_config


def _one_other_task(spec) -> bool:
    """Whether a learner serves one task outside the sequence wing (its name is then shown with
    the task's: the reranker's perceptron is not the taggers')."""

    return len(spec.tasks) == 1 and spec.tasks[0] not in SEQUENCE


def _learner_options(fn):
    """The learner parameters as options, generated from their one definition in the
    registry: help, range, default and the learners that take each."""

    def label(s) -> str:
        return s.name + (f" ({s.tasks[0]})" if _one_other_task(s) else "")

    for p in reversed(list(registry.PARAMS.values())):
        takers = [s for s in registry.specs() if s.takes(p.name)]
        defaults = list(dict.fromkeys(s.param(p.name).default for s in takers))
        default = (f"{defaults[0]:g}" if len(defaults) == 1 and p.kind is not str else
                   f"{defaults[0]}" if len(defaults) == 1 else
                   "; ".join(f"{d:g} for {', '.join(label(s) for s in takers if s.param(p.name).default == d)}"
                             for d in defaults))
        kind = (Choice([str(c) for c in p.choices]) if p.choices and p.kind is str
                else Typed(p.kind) if p.kind in (int, float) else p.kind)
        fn = click.option(p.flag, p.name, type=kind, cls=GroupedOption, group="Learner parameters",
                          help=f"{p.help} Range: {p.range_text()}. Taken by: "
                               f"{', '.join(dict.fromkeys(label(s) for s in takers))}. "
                               f"[default: {default}]")(fn)
    return fn


TRAIN_EXAMPLES = """\b
Examples:
  structkit train --task chunk --train conll2000/train.txt --model chunk.model
  structkit train --task ner --train conll2002/esp.train --dev conll2002/esp.testa \\
      --algo lookahead --depth 2 --label-order 2 --model esp.model
  structkit train --task chunk --train conll2000/train.txt --algo kbest-sdm --k 5 --C 0.1 --model m
  structkit train --task parse --train ud-english-partut/en_partut-ud-train.conllu --model parser.model
  structkit train --task parse --algo lookahead --train ptb-dep/train.conll --depth 1 --model p.model
  structkit train --task rerank --train hyporadise/train_atis.json --features all --model atis.npz
  structkit train --task tokenize --train ud-italian-partut/it_partut-ud-train.conllu --model it-tok.skm
  structkit train --task morph --train ud-italian-partut/it_partut-ud-train.conllu --model it-morph.skm
  structkit train --task pipeline --train ud-italian-partut/it_partut-ud-train.conllu \\
      --dev ud-italian-partut/it_partut-ud-dev.conllu --model it.skm
  structkit train --config configs/chunk-conll2000-perceptron.toml --model chunk.model

\b
Each learner's parameters, defaults and paper: structkit algorithms [NAME]."""


def _epochs_help() -> str:
    """The default epochs of the learners, from their specs: 'N for a, b; M for c'."""

    by: dict[int, list[str]] = {}
    for s in registry.specs():
        label = s.name + (f" ({s.tasks[0]})" if _one_other_task(s) else "")
        by.setdefault(s.epochs, []).append(label)
    return "; ".join(f"{e} for {', '.join(names)}" for e, names in sorted(by.items(), key=lambda x: -len(x[1])))


def _default_algos() -> str:
    by: dict[str, list[str]] = {}
    for t in TASKS.values():
        if t.training.default_algo != "none":   # a task that only scores files (ud)
            by.setdefault(t.training.default_algo, []).append(t.name)
    return "; ".join(f"{algo} ({', '.join(tasks)})" for algo, tasks in by.items()) + \
        "; kbest-pa for pos on CoNLL-U"


def _selection_help(name: str) -> str:
    return getattr(selection, name)


@click.command(cls=GroupedCommand, epilog=TRAIN_EXAMPLES,
             short_help="Train a model of any task (tagger, parser, tokenizer, morph, pipeline, ...) and write it to --model.")
@opt("--task", type=Choice(trained_task_names, accept=task_names), group="Data and model",
      help="What to train (or set task in --config).")
@opt("--train", "train_path", type=str, group="Data and model",
      help="Training data: CoNLL columns (word first, label last) or CoNLL-U (UPOS by default), "
           "CoNLL-X/U for parse, n-best lists for rerank.")
@opt("--dev", "dev_path", type=str, group="Data and model", help="Development data, scored after each epoch.")
@opt("--test", "test_path", type=str, group="Data and model",
      help="Test data: the trained model is scored on it (the task's command, then `eval`) and "
           "the scores go into the model card (`structkit info MODEL`).")
@opt("--dev-split", type=FLOAT, group="Data and model", metavar="F", help=_selection_help("DEV_SPLIT_HELP"))
@opt("--patience", type=INT, group="Data and model", metavar="N", help=_selection_help("PATIENCE_HELP"))
@opt("--refit/--no-refit", default=None, group="Data and model", help=_selection_help("REFIT_HELP"))
@opt("-m", "--model", "model_path", type=str, required=True, group="Data and model", help="Where to write the model file.")
@opt("--config", "config_path", type=str, group="Data and model",
      help="TOML config (any option below, and a [data] table); flags override its values.")
@opt("--algo", type=Choice(algo_names), metavar="NAME", group="Learner",
      help=f"The learning algorithm ({', '.join(algo_names())}); `structkit algorithms` lists "
           f"them with their tasks, parameters and papers. [default: {_default_algos()}]")
@opt("--epochs", type=INT, group="Learner",
      help="Passes over the training data (a batch learner: at most this many). "
           f"[default: the learner's: {_epochs_help()}]")
@opt("--seed", type=INT, group="Learner",
      help="Seed for shuffling and random choices: same seed, same model. [default: 0]")
@_learner_options
@opt("--templates", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="Feature template set (pos, chunk, ner, ner-nopos, ud) or comma-separated templates, "
           "e.g. 'w[0],w[-1]|w[0]'; any named column too: 'lemma[0]', 'cluster[-1]|cluster[0]', "
           "'feats.Number[0]'. [default: the task's set; ud for pos on CoNLL-U]")
@opt("--columns", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="Name the columns of a column file, e.g. 'word,pos,label', 'word,-,label' or "
           "'word,pos,cluster,label' (other names are columns templates can read). [default: "
           "word first, label last, a middle column is the POS]")
@opt("--label-column", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="CoNLL-U: the column to learn, upos, xpos, or a key of feats or misc such as misc.NER. "
           "[default: upos for pos; chunk and ner must name one]")
@opt("--scheme", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="Chunk/ner label scheme: iob1, iob2, iobes or bilou. [default: auto, detected from "
           "the training labels]")
@opt("--cutoff", type=INT, group="Sequence tasks (pos, chunk, ner)",
      help="Keep features seen at least this often. [default: 1]")
@opt("--features", type=str, group="Reranking (rerank)",
      help="Feature families, comma-separated from ngram, trigger, backoff, topic (or all, or none). "
           "The recogniser's score and rank are always used. [default: ngram] With --task "
           "tokenize: the optional character feature groups, from short, url, rules (the English "
           "rules' decisions, for English) (or all, or none). "
           "[default: short,url]")
@opt("--vectors", type=str, metavar="FILE", group="Pretrained word vectors (morph, parse, pipeline, pos, chunk, ner)",
      help="Word vectors in the word2vec/fastText text format (.vec, gzipped or not): their k-means "
           "clusters (16, 64 and 256 clusters, and each of the 256 split in 16) become features of the morph "
           "model, the beam parser and the sequence taggers (the template set 'vectors': vc1[0] ... vc4[0] "
           "and neighbours), and the word -> clusters table is stored in the model. [default: none]")
@opt("--vectors-limit", type=INT, metavar="N", group="Pretrained word vectors (morph, parse, pipeline, pos, chunk, ner)",
      help="Keep the first N words of --vectors (a .vec file lists the most frequent first); reading "
           "stops there. [default: 200000]")
@opt("--dask", "dask_address", type=str, metavar="ADDRESS", group="Learner",
      help="With --jobs N: train the N shards of parameter mixing on a Dask cluster (a scheduler "
           "address, or local[:W]); needs structkit-nlp[dask].")
@opt("--metrics-json", type=str, group="Output", help="Write the per-epoch scores to this JSON file.")
@opt("-q", "--quiet", is_flag=True, group="Output", help="No progress bar or summary.")
@opt("-v", "--verbose", is_flag=True, group="Output", help="Print one line per epoch, even in a pipe.")
def train(train_path, dev_path, test_path, model_path, config_path, metrics_json, quiet, verbose, templates=None,
          dask_address=None, **options) -> None:
    """Train a model and write it to --model.

    Options come from the flags, over a --config file; each is checked against the task and the
    learner (`structkit algorithms NAME` shows what a learner takes)."""

    stdin_once(("--train", train_path), ("--dev", dev_path), ("--test", test_path), ("--config", config_path))
    if options.get("vectors") == "-":   # refused whatever the task, as --model -
        from structkit.vectors import check_options as check_vector_options
        check_vector_options("-", None)
    cfg: dict = load_config(config_path) if config_path else {"data": {}}
    data = cfg.pop("data")
    for meta in ("name", "description", "experiment"):
        cfg.pop(meta, None)
    if templates is not None:
        options["templates"] = [t for t in templates.split(",") if t.strip()]
    cfg.update({k: v for k, v in options.items() if v is not None})
    train_path = train_path or data.get("train")
    dev_path = dev_path or data.get("dev")

    if cfg.get("algo") is None and isinstance(cfg.get("task"), str) and cfg["task"] in TASKS:
        algo = get_task(cfg["task"]).training.choose_algo(train_path)
        if algo is not None:
            cfg["algo"] = algo
    config = make_config(cfg)
    if train_path is None:
        raise UserError("--train is required, on the command line or as data.train in --config")
    given = {"train": train_path, "dev": dev_path, "test": test_path}   # as written, for the card
    train_path = resolve_data_path(train_path, must_exist=True)
    dev_path = resolve_data_path(dev_path, must_exist=True) if dev_path else None
    test_path = resolve_data_path(test_path, must_exist=True) if test_path else None
    # A bad --model / --metrics-json destination was only noticed after training, and a
    # missing --metrics-json folder failed after the model had been written (a failed command
    # leaving a model behind). Check both before any work.
    # The model over the training data (or the metrics over the model) destroyed a file.
    check_outputs([model_path, metrics_json], [p for p in (train_path, dev_path, test_path, config_path) if p])
    for opt, out in (("--model", model_path), ("--metrics-json", metrics_json)):
        check_writable(out, opt)  # writable folder, checked by writing, before training; not '-'
    show = progress_enabled(quiet)
    printer = _TrainPrinter(get_task(config.task), config)
    history: list[dict] = []
    refit_history: list[dict] = []
    report = EpochReport(printer.n_calls, f"train {config.task}", quiet, verbose)

    def on_epoch(epoch: int, stats: dict) -> None:
        if "refit" in stats:   # --dev-split chose the epochs: training again on every sentence
            refit_history.append(stats)
            report.refit(epoch, stats["refit"], printer.line(stats), stats["epoch_seconds"])
            return
        history.append(stats)
        report(epoch, printer.line(stats), stats["epoch_seconds"], stats.get("part"), stats.get("expect"))

    task = get_task(config.task)
    kw, close = {}, None
    if dask_address:
        if not task.training.mixes or (getattr(config, "jobs", None) or 1) < 2:
            raise UserError("--dask trains the shards of parameter mixing: give --jobs N (N >= 2) "
                            "with a learner that mixes (`structkit algorithms`)")
        from structkit.distributed import connect, dask_mapper
        client, cluster = connect(dask_address)
        kw["mapper"] = dask_mapper(client)

        def close() -> None:
            client.close()
            if cluster is not None:
                cluster.close()
    from structkit import card as cards

    try:   # '-' for --test: kept in a file, read by the command and by eval
        with spooled_stdin([test_path]) as (test_file,):
            model, card = cards.train(task, config, train_path, dev_path, test_file, on_epoch,
                                      given=given, **kw)
    finally:
        report.close()
        if close is not None:
            close()
    writers = [(model_path, lambda tmp: cards.save(model, tmp, card))]
    if metrics_json:
        def write_metrics(tmp: str) -> None:
            metrics = printer.metrics(model, history)
            if refit_history:
                metrics["refit_history"] = refit_history
            text = json.dumps(finite(metrics), indent=2, allow_nan=False)
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        writers.append((metrics_json, write_metrics))
    commit_together(writers)
    say(f"wrote {model_path}: {printer.summary(model)}", show or verbose)


class _TrainPrinter:
    """What `train` prints for a task (its ``Task`` words it): the epoch line, the summary and
    the metrics file."""

    def __init__(self, task, config):
        self.training, self.config = task.training, config
        self.n_calls = task.training.epoch_calls(config)

    def line(self, stats: dict) -> str:
        msg = self.training.epoch_line(self.config, stats)
        return msg + (f", {self.training.dev_line(self.config, stats['dev'])}" if "dev" in stats else "")

    def metrics(self, model, history: list[dict]) -> dict:
        return self.training.metrics(self.config, model, history)

    def summary(self, model) -> str:
        return self.training.summary(self.config, model)
