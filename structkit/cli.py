"""The ``structkit`` command line (Click). Options, configs, progress and printing only:
the work is done in ``structkit.tasks``."""
from __future__ import annotations

import json
import sys

import click

from structkit import __version__
from structkit.errors import UserError



def _progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _say(msg: str, enabled: bool) -> None:
    if enabled:
        click.echo(msg, err=True)


class _EpochReport:
    """Training progress: a tqdm bar on a terminal (not with -q), else one line per epoch on
    stderr with -v, else nothing. Call it with each epoch's message; close() at the end."""

    def __init__(self, total: int, desc: str, quiet: bool, verbose: bool):
        self.total = total
        self.verbose = verbose
        self.bar = None
        if _progress_enabled(quiet):
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="epoch", file=sys.stderr)

    def __call__(self, epoch: int, msg: str, seconds: float) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(msg)
            self.bar.update(1)
        elif self.verbose:
            click.echo(f"epoch {epoch}/{self.total}: {msg} ({seconds:.2f} s)", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="structkit")
def cli() -> None:
    """structkit: structured prediction for NLP.

    \b
    Fetch CoNLL-2000, train a chunker and chunk a file:
      structkit data fetch conll2000
      structkit train --task chunk --train conll2000/train.txt --model chunk.model
      structkit chunk --model chunk.model conll2000/test.txt > out.txt
      structkit eval --task chunk out.txt

    Relative data paths that do not exist are looked up in $STRUCTKIT_DATA, then in
    the cache that `structkit data fetch` fills. '-' reads standard input wherever a
    file is read.
    """


# ---- help: choices, option groups ------------------------------------------------------------
class Choice(click.Choice):
    """A Click choice (listed in --help, completed by shells) whose refusal is structkit's
    one-line error, in the wording the config checks use for the same option. ``choices`` may
    be a function, read when used: a learner registered after import is a valid --algo."""

    def __init__(self, choices):
        self._source = choices
        super().__init__(())

    @property
    def choices(self):
        return tuple(self._source() if callable(self._source) else self._source)

    @choices.setter
    def choices(self, value) -> None:  # click.Choice.__init__ assigns; the source stays
        pass

    def convert(self, value, param, ctx):
        if value in self.choices:
            return value
        flag = param.opts[-1] if param is not None and param.opts else "value"
        from structkit.learn.registry import alternatives

        raise UserError(f"{flag} must be {alternatives(self.choices)}, got {value!r}")


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


def _learner_options(fn):
    """The learner parameters as options, generated from their one definition in the
    registry: help, range, default and the learners that take each."""
    from structkit.learn import registry

    def label(s) -> str:
        return s.name + (f" ({', '.join(s.tasks)})" if s.tasks in (("parse",), ("rerank",)) else "")

    for p in reversed(list(registry.PARAMS.values())):
        takers = [s for s in registry.specs() if s.takes(p.name)]
        defaults = list(dict.fromkeys(s.param(p.name).default for s in takers))
        default = (f"{defaults[0]:g}" if len(defaults) == 1 and p.kind is not str else
                   f"{defaults[0]}" if len(defaults) == 1 else
                   "; ".join(f"{d:g} for {', '.join(label(s) for s in takers if s.param(p.name).default == d)}"
                             for d in defaults))
        kind = Choice([str(c) for c in p.choices]) if p.choices and p.kind is str else p.kind
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
  structkit train --config configs/chunk-conll2000-perceptron.toml --model chunk.model

\b
Each learner's parameters, defaults and paper: structkit algorithms [NAME]."""


def _epochs_help() -> str:
    """The default epochs of the learners, from their specs: 'N for a, b; M for c'."""
    from structkit.learn import registry

    by: dict[int, list[str]] = {}
    for s in registry.specs():
        label = s.name + (f" ({s.tasks[0]})" if s.tasks in (("parse",), ("rerank",)) else "")
        by.setdefault(s.epochs, []).append(label)
    return "; ".join(f"{e} for {', '.join(names)}" for e, names in sorted(by.items(), key=lambda x: -len(x[1])))


def _default_algos() -> str:
    from structkit.tasks import TASKS

    by: dict[str, list[str]] = {}
    for t in TASKS.values():
        by.setdefault(t.default_algo, []).append(t.name)
    return "; ".join(f"{algo} ({', '.join(tasks)})" for algo, tasks in by.items()) + \
        "; kbest-pa for pos on CoNLL-U"


def _task_names() -> list[str]:
    from structkit.tasks import NAMES
    return list(NAMES)


def _algo_names() -> list[str]:
    from structkit.learn import registry
    return registry.names()


# ---- train -------------------------------------------------------------------------------
def _opt(*args, group: str, **kwargs):
    return click.option(*args, cls=GroupedOption, group=group, **kwargs)


@cli.command(cls=GroupedCommand, epilog=TRAIN_EXAMPLES,
             short_help="Train a tagger, chunker, NER model, parser or reranker and write it to --model.")
@_opt("--task", type=Choice(_task_names()), group="Data and model",
      help="What to train (or set task in --config).")
@_opt("--train", "train_path", type=str, group="Data and model",
      help="Training data: CoNLL columns (word first, label last) or CoNLL-U (UPOS by default), "
           "CoNLL-X/U for parse, n-best lists for rerank.")
@_opt("--dev", "dev_path", type=str, group="Data and model", help="Development data, scored after each epoch.")
@_opt("--model", "model_path", type=str, required=True, group="Data and model", help="Where to write the model file.")
@_opt("--config", "config_path", type=str, group="Data and model",
      help="TOML config (any option below, and a [data] table); flags override its values.")
@_opt("--algo", type=Choice(_algo_names), metavar="NAME", group="Learner",
      help=f"The learning algorithm ({', '.join(_algo_names())}); `structkit algorithms` lists "
           f"them with their tasks, parameters and papers. [default: {_default_algos()}]")
@_opt("--epochs", type=int, group="Learner",
      help="Passes over the training data (a batch learner: at most this many). "
           f"[default: the learner's: {_epochs_help()}]")
@_opt("--seed", type=int, group="Learner",
      help="Seed for shuffling and random choices: same seed, same model. [default: 0]")
@_learner_options
@_opt("--templates", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="Feature template set (pos, chunk, ner, ner-nopos, ud) or comma-separated templates, "
           "e.g. 'w[0],w[-1]|w[0]'; any named column too: 'lemma[0]', 'cluster[-1]|cluster[0]', "
           "'feats.Number[0]'. [default: the task's set; ud for pos on CoNLL-U]")
@_opt("--columns", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="Name the columns of a column file, e.g. 'word,pos,label', 'word,-,label' or "
           "'word,pos,cluster,label' (other names are columns templates can read). [default: "
           "word first, label last, a middle column is the POS]")
@_opt("--label-column", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="CoNLL-U: the column to learn, upos, xpos, or a key of feats or misc such as misc.NER. "
           "[default: upos for pos; chunk and ner must name one]")
@_opt("--cutoff", type=int, group="Sequence tasks (pos, chunk, ner)",
      help="Keep features seen at least this often. [default: 1]")
@_opt("--features", type=str, group="Reranking (rerank)",
      help="Feature families, comma-separated from ngram, trigger, backoff, topic (or all, or none). "
           "The recogniser's score and rank are always used. [default: ngram]")
@_opt("--metrics-json", type=str, group="Output", help="Write the per-epoch scores to this JSON file.")
@_opt("-q", "--quiet", is_flag=True, group="Output", help="No progress bar or summary.")
@_opt("-v", "--verbose", is_flag=True, group="Output", help="Print one line per epoch, even in a pipe.")
def train(train_path, dev_path, model_path, config_path, metrics_json, quiet, verbose, templates=None,
          **options) -> None:
    """Train a model and write it to --model.

    Options come from the flags, over a --config file; each is checked against the task and the
    learner (`structkit algorithms NAME` shows what a learner takes)."""
    from structkit.config import load_config, resolve_data_path
    from structkit.io.files import check_output_path
    from structkit.tasks import make_config

    cfg: dict = load_config(config_path) if config_path else {"data": {}}
    data = cfg.pop("data")
    for meta in ("name", "description", "experiment"):
        cfg.pop(meta, None)
    if templates is not None:
        options["templates"] = [t for t in templates.split(",") if t.strip()]
    cfg.update({k: v for k, v in options.items() if v is not None})
    train_path = train_path or data.get("train")
    dev_path = dev_path or data.get("dev")
    if cfg.get("task") in ("pos", "chunk", "ner") and cfg.get("algo") is None:
        from structkit.tasks.sequence import default_algo

        cfg["algo"] = default_algo(cfg["task"], train_path and resolve_data_path(train_path))
    config = make_config(cfg)
    if train_path is None:
        raise UserError("--train is required, on the command line or as data.train in --config")
    train_path = resolve_data_path(train_path, must_exist=True)
    dev_path = resolve_data_path(dev_path, must_exist=True) if dev_path else None
    # A bad --model / --metrics-json destination was only noticed after training, and a
    # missing --metrics-json folder failed after the model had been written (a failed command
    # leaving a model behind). Check both before any work.
    check_output_path(model_path)
    check_output_path(metrics_json)
    show = _progress_enabled(quiet)
    printer = _TrainPrinter.of(config)
    history: list[dict] = []
    report = _EpochReport(printer.n_calls, f"train {config.task}", quiet, verbose)

    def on_epoch(epoch: int, stats: dict) -> None:
        history.append(stats)
        report(epoch, printer.line(stats), stats["epoch_seconds"])

    from structkit.tasks import get_task
    try:
        model = get_task(config.task).train_function()(config, train_path, dev_path, on_epoch)
    finally:
        report.close()
    model.save(model_path)
    if metrics_json:
        from structkit.io.files import atomic_output
        with atomic_output(metrics_json) as f:
            json.dump(printer.metrics(model, history), f, indent=2)
            f.write("\n")
    _say(f"wrote {model_path}: {printer.summary(model)}", show or verbose)


class _TrainPrinter:
    """What `train` prints for a task: the epoch line, the summary and the metrics file."""

    def __init__(self, config, n_calls: int, epoch_line, dev_line):
        self.config, self.n_calls, self._epoch_line, self._dev_line = config, n_calls, epoch_line, dev_line

    @classmethod
    def of(cls, config) -> "_TrainPrinter":
        from structkit.learn.registry import default_report

        if config.task == "rerank":
            return cls(config, config.epochs,
                       lambda s: f"updates {s['train_updates']}, mistakes {s['train_mistakes']}",
                       lambda d: f"dev WER {100 * d['wer']:.2f}%")
        if config.task == "parse":
            return cls(config, config.epochs, default_report, lambda d: f"dev uas {d['uas']:.2f}")
        from structkit.tasks.sequence import main_score

        key = main_score(config.task)
        spec = config.spec
        return cls(config, spec.epoch_calls(config), spec.report, lambda d: f"dev {key} {d[key]:.2f}")

    def line(self, stats: dict) -> str:
        msg = self._epoch_line(stats)
        return msg + (f", {self._dev_line(stats['dev'])}" if "dev" in stats else "")

    def metrics(self, model, history: list[dict]) -> dict:
        config, info = self.config, model.info
        if config.task == "rerank":
            return {"config": {k: v for k, v in info.items() if k != "epochs"}
                    | {"config": {**vars(config), "features": list(config.features),
                                  "topic_levels": list(config.topic_levels)}},
                    "epochs": info["epochs"]}
        return {"config": info | {"config": vars(config)}, "epochs": history}

    def summary(self, model) -> str:
        info = model.info
        if self.config.task == "rerank":
            return (f"{info['n_features']} features, {info['train_utterances']} training utterances, "
                    f"epoch {info['chosen_epoch']} kept, {info['train_seconds']:.1f} s")
        if self.config.task == "parse":
            what = (f"{info['train_sentences']} training sentences ({info['skipped_unbuildable']} "
                    "skipped: not projective or not single-rooted)")
        else:
            what = f"{info['n_features']} features, {len(model.labels)} labels"
        return f"{what}, {info['train_tokens']} training tokens, {info['train_seconds']:.1f} s"



# ---- algorithms ---------------------------------------------------------------------------
@cli.command(short_help="List the learning algorithms, or show one's parameters, defaults and paper.")
@click.argument("name", required=False)
@click.option("--task", type=Choice(_task_names()), help="Only the learners of this task.")
def algorithms(name, task) -> None:
    """List the learners with their tasks, or show NAME's parameter table: type, default,
    range and help, with its decoder, default epochs and paper (CRFsuite's -H)."""
    from structkit.learn import registry

    if name is None:
        rows = [(s.name, ", ".join(s.tasks), s.summary) for s in registry.specs(task)]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        for r in rows:
            click.echo(f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}")
        return
    specs = [s for s in registry.specs(task) if s.name == name]
    if not specs:
        registry.get(name, task)  # the one-line error listing the choices
    for i, s in enumerate(specs):
        if i:
            click.echo("")
        click.echo(f"{s.name}: {s.summary}")
        click.echo(f"  paper:   {s.paper}")
        click.echo(f"  tasks:   {', '.join(s.tasks)}")
        click.echo(f"  decoder: {s.decoder}")
        click.echo(f"  epochs:  {s.epochs} (default)")
        if not s.params:
            click.echo("  parameters: none")
            continue
        click.echo("  parameters:")
        rows = [(p.flag, p.kind.__name__, str(p.default), p.range_text(), p.help) for p in s.params]
        widths = [max(len(r[j]) for r in rows) for j in range(4)]
        for r in rows:
            click.echo("    " + "  ".join(f"{r[j]:<{widths[j]}}" for j in range(4)) + "  " + r[4])


# ---- tagging -----------------------------------------------------------------------------
def _tag_command(name: str, task: str, help_text: str):
    @cli.command(name, help=help_text, short_help=help_text)
    @click.option("--model", "model_path", required=True, help="A model trained with `structkit train`.")
    @click.argument("files", nargs=-1)
    @click.option("-o", "--output", type=str, help="Write here instead of standard output.")
    @click.option("--text", is_flag=True,
                  help="Input is raw text: tokenised (UD English conventions) and split into sentences; "
                       "a blank line ends a paragraph.")
    @click.option("--no-split", is_flag=True, help="With --text: each line is one sentence.")
    @click.option("--format", "fmt", type=Choice(["conll", "conllu"]),
                  help="With --text: 'word label' rows (conll, the default) or CoNLL-U with # sent_id, "
                       "# text and SpaceAfter=No (conllu; pipe it to `structkit parse`).")
    @click.option("--lang", default="en", show_default=True, help="With --text: the tokenizer's language.")
    @click.option("--columns", type=str, help="Name the input columns, e.g. 'word,pos' or 'word,pos,label'.")
    @click.option("--depth", type=int,
                  help="Lookahead depth for history-based models (default: the depth trained with).")
    def command(model_path, files, output, text, no_split, fmt, lang, columns, depth):
        import gc

        from structkit.config import resolve_data_path
        from structkit.io.conll import Sentence, write_conll
        from structkit.io.conllu import read_raw_text, read_sequence, write_tagged
        from structkit.io.files import atomic_output, open_input
        from structkit.tasks.fastpath import tag_column_file
        from structkit.tasks.sequence import SequenceTagger

        if not text and (no_split or fmt):
            raise UserError(f"{'--no-split' if no_split else '--format'} goes with --text")
        if text and columns:
            raise UserError("--columns does not apply to --text (raw text has no columns)")
        # The collector would scan the model's objects (and numba's) over and over while they
        # are built; frozen, they are never scanned again, nor torn down one by one at exit.
        gc.disable()
        try:
            tagger = SequenceTagger.load(model_path, command=name, tasks=(task,))
        finally:
            gc.freeze()
            gc.enable()
        if depth is not None:
            tagger.check_depth(depth, model_path)
        paths = [resolve_data_path(f, must_exist=True) for f in files] or ["-"]
        column, key = tagger.output_column()
        with atomic_output(output) as out:
            for path in paths:
                if not text:
                    with open_input(path) as f:
                        # column files go block by block through the fast path; what it leaves
                        # (CoNLL-U, ...) comes back as the lines read so far and the rest
                        rest = tag_column_file(tagger, f, path, columns, depth, out)
                        if rest is None:
                            continue
                        sents = read_sequence(path, rest)
                        for batch, labels in tagger.tag_batches(sents, path, columns, text, depth=depth):
                            if batch[0].lines is not None:
                                write_tagged(batch, labels, out, column, key)
                            else:
                                write_conll(batch, labels, out)
                    continue
                sents = (read_raw_text(path, lang, "lines" if no_split else "auto") if text
                         else read_sequence(path))
                for batch, labels in tagger.tag_batches(sents, path, columns, text, depth=depth):
                    if batch[0].lines is not None and (not text or fmt == "conllu"):
                        write_tagged(batch, labels, out, column, key)  # CoNLL-U in, CoNLL-U out
                    elif text:
                        write_conll([Sentence([[r[1]] for r in s.rows], s.first_line) for s in batch],
                                    labels, out)
                    else:
                        write_conll(batch, labels, out)
        gc.freeze()   # a quick exit: nothing left for the collector to scan
    return command


_tag_command("tag", "pos", "POS-tag CoNLL files (or --text); writes each row plus the predicted tag.")
_tag_command("chunk", "chunk", "Chunk CoNLL files (word POS [gold]); writes each row plus the predicted chunk tag.")
_tag_command("ner", "ner", "Find named entities in CoNLL files; writes each row plus the predicted tag.")


# ---- eval --------------------------------------------------------------------------------
@cli.command("eval", short_help="Score output against gold: accuracy, conlleval phrase F1, UAS or WER; "
                                "McNemar's or the sign test between two systems.")
@click.option("--task", required=True, type=Choice(lambda: _task_names() + ["tokenize"]),
              help="What the files hold (tokenize: tokens and sentences of GOLD.conllu PRED.conllu).")
@click.argument("files", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the report.")
@click.option("--label-column", type=str,
              help="CoNLL-U: the column scored (upos by default for pos; chunk and ner name one, e.g. misc.NER).")
@click.option("--model", "model_path", type=str,
              help="The model that tagged the file: adds accuracy on words unseen in training.")
@click.option("--compare", "other", type=str,
              help="Another system's output on the same tokens: McNemar's test between the two.")
def eval_cmd(task, files, as_json, label_column, model_path, other) -> None:
    """Score tagged output: FILE with gold second-to-last and prediction last (conlleval's
    layout), or GOLD PRED as two files that line up token by token (columns or CoNLL-U).

    Chunk and NER scores are phrase precision, recall and F1 as conlleval computes them. POS on
    CoNLL-U gives UPOS and XPOS accuracy, a per-tag table and the most frequent confusions.
    --task parse scores GOLD PRED dependency files (CoNLL-X or CoNLL-U): UAS and LAS under the
    Penn Treebank convention (punctuation excluded) and the CoNLL 2018 one (every word, LAS on
    the universal DEPREL), root accuracy, complete match and a per-label table.
    --task tokenize compares the tokens, words and sentences of two CoNLL-U files by their
    characters, as the CoNLL 2018 shared task does."""
    if task == "tokenize":
        if len(files) != 2:
            raise UserError(f"eval --task tokenize takes two CoNLL-U files, GOLD PRED; got {len(files)}")
        from structkit.config import resolve_data_path
        from structkit.eval.tokenize import evaluate_tokenization, report

        result = evaluate_tokenization(*(resolve_data_path(f, must_exist=True) for f in files))
        click.echo(json.dumps(result, sort_keys=True) if as_json else report(result))
        return
    if label_column is not None and task not in ("pos", "chunk", "ner"):
        raise UserError(f"--label-column does not apply to eval --task {task}")
    if task == "parse":
        if len(files) != 2:
            raise UserError(f"eval --task parse takes two files, GOLD PRED; got {len(files)}")
        from structkit.config import resolve_data_path
        from structkit.eval.files import evaluate_parse_files

        result, report = evaluate_parse_files(*(resolve_data_path(f, must_exist=True) for f in files))
        click.echo(json.dumps(result, sort_keys=True) if as_json else report)
        return
    if task == "rerank":
        if model_path:
            raise UserError("--model does not apply to eval --task rerank")
        return _eval_rerank(files, as_json, other)
    if len(files) not in (1, 2):
        raise UserError(f"eval takes one file (gold and prediction columns) or two (GOLD PRED), got {len(files)}")
    from structkit.config import resolve_data_path
    from structkit.eval.files import evaluate_files

    if other is not None:
        from structkit.eval.files import compare_files

        result, report = compare_files(task, tuple(resolve_data_path(f, must_exist=True) for f in files),
                                       resolve_data_path(other, must_exist=True))
        click.echo(json.dumps(result, sort_keys=True) if as_json else report)
        return
    known = None
    if model_path:
        from structkit.tasks.sequence import SequenceTagger
        known = SequenceTagger.load(model_path).features.known_words()
    paths = tuple(resolve_data_path(f, must_exist=True) for f in files)
    from structkit.io.conllu import is_conllu_file

    conllu = len(paths) == 2 and is_conllu_file(paths[0])
    if conllu and not is_conllu_file(paths[1]):
        raise UserError("the gold file is CoNLL-U, the prediction file is not: give both as CoNLL-U",
                        paths[1])
    if label_column is not None and not conllu:
        raise UserError("--label-column is for CoNLL-U files (GOLD PRED); in column files the "
                        "label is the last column")
    if conllu and task == "pos":
        from structkit.eval.tags import evaluate_conllu_pos

        result, report = evaluate_conllu_pos(*paths, label_column or "upos", known)
    elif conllu:
        if label_column is None:
            raise UserError(f"eval --task {task} on CoNLL-U needs --label-column, e.g. misc.NER")
        from structkit.eval.files import evaluate_sentences
        from structkit.eval.tags import conllu_label_triples

        result, report = evaluate_sentences(task, conllu_label_triples(task, *paths, label_column), known)
    else:
        result, report = evaluate_files(task, paths, known)
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))
    else:
        click.echo(report)


# ---- dump --------------------------------------------------------------------------------
@cli.command(short_help="Show a tagging model: labels, strongest transitions and features by name.")
@click.option("--model", "model_path", required=True, help="A tagging model.")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many features to show.")
@click.option("--feature", "pattern", type=str,
              help="Only features whose name contains this text, e.g. 'w[0]=bank' or 'suf3[0]='.")
def dump(model_path, top, pattern) -> None:
    """Show a model: labels, transition weights and the strongest features by name."""
    import numpy as np

    from structkit.tasks.sequence import SequenceTagger

    tg = SequenceTagger.load(model_path)
    c = tg.config
    click.echo(f"task {c.task}, algo {c.algo}, {len(tg.labels)} labels, {tg.features.n_features} features, "
               f"templates: {' '.join(t.text for t in tg.features.templates)}")
    click.echo("labels: " + " ".join(tg.labels))
    T = tg.weights.T
    names = tg.labels + ["<S/E>"]
    order = np.argsort(-np.abs(T), axis=None)[:top]
    click.echo("\nstrongest transitions (previous -> next, <S/E> = sentence boundary):")
    for k in order:
        a, b = divmod(int(k), T.shape[1])
        if T[a, b] != 0:
            click.echo(f"  {names[a]:>12} -> {names[b]:<12} {T[a, b]:+.3f}")
    W = tg.weights.W
    strength = np.abs(W).max(axis=1) if W.size else np.zeros(0)
    ids = np.argsort(-strength, kind="stable")
    shown = 0
    click.echo(f"\nstrongest features{' matching ' + repr(pattern) if pattern else ''} "
               "(the labels they favour most):")
    for fid in ids:
        if strength[fid] == 0 or shown >= top:
            break
        name = tg.features.feature_name(int(fid))
        if pattern and pattern not in name:
            continue
        best = np.argsort(-np.abs(W[fid]))[:3]
        parts = ", ".join(f"{tg.labels[j]} {W[fid, j]:+.3f}" for j in best if W[fid, j] != 0)
        click.echo(f"  {name}: {parts}")
        shown += 1
    if shown == 0:
        click.echo("  (none)")


# ---- not yet ----------------------------------------------------------------------------
class NotImplementedYet(Exception):
    def __init__(self, what: str):
        super().__init__(f"{what} is not implemented yet")


@cli.command(short_help="Parse CoNLL-U (back into CoNLL-U), CoNLL-X or `word POS` files: heads and labels.")
@click.option("--model", "model_path", required=True, help="A parser trained with `structkit train --task parse`.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", type=str, help="Write here instead of standard output.")
@click.option("--depth", type=int, help="Lookahead depth of a lookahead parser, or of the lookahead inside the beam "
              "of a beam parser (0..3; default: the depth trained with).")
@click.option("--beam", type=int, help="Beam width of a beam parser (default: the width trained with).")
@click.option("--tagger", "tagger_path", type=str,
              help="POS-tag the words first with this tagger model (`structkit train --task pos`).")
def parse(model_path, files, output, depth, beam, tagger_path) -> None:
    """Parse CoNLL-X or CoNLL-U files (or `word POS` columns): CoNLL-U comes back as CoNLL-U
    with HEAD and DEPREL predicted and every other line and column as read; other input as
    CoNLL-X. An unlabelled parser writes DEPREL '_', never the input's."""
    from structkit.config import resolve_data_path
    from structkit.io.conllu import is_conllu_file
    from structkit.io.conllx import read_conllx, write_conllx
    from structkit.io.files import atomic_output
    from structkit.tasks.parser import DependencyParser

    from structkit.tasks.labelled import LabelledParser

    parser = DependencyParser.load(model_path, command="parse")
    labelled = isinstance(parser, LabelledParser)
    if depth is not None:
        if labelled:  # lookahead inside the beam: re-rank the 2B best candidates by depth-D lookahead
            from structkit.tasks.parser import BEAM_MAX_DEPTH
            if not 0 <= depth <= BEAM_MAX_DEPTH:
                raise UserError(f"--depth of a beam parser (lookahead inside the beam) is "
                                f"0..{BEAM_MAX_DEPTH}, got {depth}", model_path)
        else:
            from structkit.tasks.parser import DEPTH
            DEPTH.check(depth)
    if beam is not None:
        if not labelled:
            raise UserError("--beam applies to beam parsers (--algo beam, the default)", model_path)
        from structkit.learn.registry import PARAMS
        beam = PARAMS["beam"].check(beam)
        if not labelled:
            depth = None
    kw = {"beam": beam} if labelled else {}
    tagger = None
    if tagger_path:
        from structkit.tasks.sequence import SequenceTagger
        tagger = SequenceTagger.load(tagger_path, command="parse --tagger", tasks=("pos",))
    paths = [resolve_data_path(f, must_exist=True) for f in files] or ["-"]
    with atomic_output(output) as out:
        for path in paths:
            if is_conllu_file(path, by_rows=False):  # CoNLL-X (no UD comments) stays CoNLL-X
                _parse_conllu(parser, tagger, path, depth, out, **kw)
                continue
            sents = read_conllx(path)
            if tagger is not None:
                sents = _pos_tagged(tagger, sents, path)
            for batch, heads, deprels in parser.parse_batches(sents, path, depth, **kw):
                if deprels is None:  # an unlabelled parse: the input's DEPREL would pass for a prediction
                    deprels = [["_"] * len(s) for s in batch]
                write_conllx(batch, out, heads=heads, deprels=deprels)


def _parse_conllu(parser, tagger, path: str, depth, out, batch: int = 2048, **kw) -> None:
    """Parse a CoNLL-U file and write it back with only HEAD and DEPREL changed (and, with a
    tagger, UPOS and XPOS): comments, ranges, empty nodes and MISC pass through."""
    import itertools

    from structkit.io.conllu import dep_view, read_conllu, write_parsed

    it = read_conllu(path, check_text=False)
    while chunk := list(itertools.islice(it, batch)):
        views = [dep_view(s, path) for s in chunk]
        if tagger is not None:
            views = list(_pos_tagged(tagger, views, path))
            for raw, v in zip(chunk, views):
                for k, i in enumerate(raw.word_at):
                    cols = raw.lines[i].split("\t")
                    cols[3], cols[4] = v.upos[k], v.xpos[k]
                    raw.lines[i] = "\t".join(cols)
        for _, heads, deprels in parser.parse_batches(views, path, depth, batch=batch, **kw):
            write_parsed(chunk, heads, deprels, out)


def _pos_tagged(tagger, sentences, path, batch: int = 1024):
    """Replace each sentence's POS columns with the tagger's predictions (streamed, batched)."""
    import itertools

    from structkit.io.conll import Sentence

    it = iter(sentences)
    while chunk := list(itertools.islice(it, batch)):
        rows = [Sentence([[w] for w in s.words], s.first_line) for s in chunk]
        for _, labels in tagger.tag_batches(rows, path, text=True, batch=batch):
            for s, tags in zip(chunk, labels):
                s.xpos = list(tags)
                s.upos = list(tags)
        yield from chunk


# ---- rerank (n-best lists of speech recognition hypotheses) --------------------------------
def _eval_rerank(files, as_json, other) -> None:
    """`structkit eval --task rerank NBEST [CHOSEN] [--compare OTHER]`."""
    from structkit.config import resolve_data_path
    from structkit.io.nbest import read_chosen, read_nbest
    from structkit.tasks.rerank import evaluate_nbest, wer_report

    if len(files) not in (1, 2):
        raise UserError(f"eval --task rerank takes NBEST [CHOSEN], got {len(files)} file(s)")
    if other is not None and len(files) != 2:
        raise UserError("--compare needs a CHOSEN file to compare with")
    ns = read_nbest(resolve_data_path(files[0], must_exist=True))
    ns.require_references("eval")
    chosen = read_chosen(resolve_data_path(files[1], must_exist=True), len(ns)) if len(files) == 2 else None
    oth = read_chosen(resolve_data_path(other, must_exist=True), len(ns)) if other is not None else None
    res = evaluate_nbest(ns, chosen, oth)
    click.echo(json.dumps(res, sort_keys=True) if as_json else wer_report(res))


@cli.command(short_help="Choose one hypothesis per utterance from n-best lists with a trained reranker.")
@click.option("--model", "model_path", required=True, help="A reranker trained with `structkit train --task rerank`.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", type=str, help="Write here instead of standard output.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per utterance: id, group, index (0-based), score, text.")
def rerank(model_path, files, output, as_json) -> None:
    """Rerank n-best lists (HyPoradise JSON, JSON lines, or a Kaldi-style directory): writes the
    chosen hypothesis of each utterance, one per line."""
    from structkit.config import resolve_data_path
    from structkit.io.files import atomic_output, check_output_path
    from structkit.tasks.rerank import Reranker

    model = Reranker.load(model_path, command="rerank")
    check_output_path(output)
    paths = [resolve_data_path(f, must_exist=True) for f in files] or ["-"]
    results = []
    for path in paths:
        ns = model.read(path)
        idx, score = model.rerank(ns)
        results.append((ns, idx, score))
    with atomic_output(output) as out:
        for ns, idx, score in results:
            for u, g, k, s in zip(ns.utterances, ns.groups, idx, score):
                text = u.hypotheses[int(k)]
                if as_json:
                    out.write(json.dumps({"id": u.id, "group": g, "index": int(k),
                                          "score": float(s), "text": text}) + "\n")
                else:
                    out.write(text + "\n")


# ---- data ----------------------------------------------------------------------------------
@cli.group(short_help="List, fetch and locate the public corpora (CoNLL-2000, UD treebanks, ...).")
def data() -> None:
    """The public corpora structkit knows: where each comes from, its licence and size, and
    whether it is here. Files go to $STRUCTKIT_DATA if set, else the user's cache folder
    (~/.cache/structkit on Linux); commands find them there by relative path, e.g.
    conll2000/train.txt.

    \b
    structkit data list
    structkit data fetch conll2000 ptb
    structkit data fetch ud:English-EWT@r2.14
    structkit data path conll2000
    """


def _size(n: int, known: bool = True) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            text = f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
            return text if known else f">{text}" if n else "?"
        n /= 1000
    return "?"


@data.command("list", short_help="Each corpus: size, licence, and whether it is here and verified.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per corpus, one per line.")
def data_list(as_json) -> None:
    """Each registered corpus with its size, licence, splits and status: present and verified
    (sha256), partial, changed or missing, and where it was found. Any Universal Dependencies
    treebank can also be fetched by name: ud:Language-Name@release."""
    from structkit.datasets import corpora, data_home, status, summary
    from structkit.datasets.paths import describe_dirs

    for c in corpora():
        st = status(c)
        where = sorted({str(s.path.parent) for s in st if s.path is not None})
        if as_json:
            click.echo(json.dumps({
                "name": c.name, "description": c.description, "licence": c.licence,
                "size": c.size if c.size_known else None, "splits": list(c.splits),
                "status": summary(st), "where": where, "homepage": c.homepage,
                "urls": [u for d in c.downloads for u in d.urls],
                "files": [{"path": s.file.path, "split": s.file.split, "sha256": s.file.sha256,
                           "size": s.file.size, "state": s.state} for s in st]}))
            continue
        click.echo(f"{c.name:<18} {_size(c.size, c.size_known):>8}  {summary(st)}"
                   + (f"  ({', '.join(where)})" if where else ""))
        click.echo(f"{'':<18} {c.description}")
        click.echo(f"{'':<18} splits: {', '.join(c.splits)}; licence: {c.licence}")
    if not as_json:
        click.echo(f"\nLooked in {describe_dirs()}; `structkit data fetch NAME` writes to "
                   f"{data_home()}. Also: ud:Language-Name@release, any Universal Dependencies "
                   f"treebank from github.com/UniversalDependencies.")


@data.command("fetch", short_help="Download, check (sha256) and install corpora by name.")
@click.argument("names", nargs=-1, required=True)
@click.option("--from", "from_files", multiple=True, metavar="FILE",
              help="Use this downloaded file instead of the network (repeat for several).")
@click.option("--mirror", metavar="URL", help="Fetch https://host/path from URL/host/path "
              "instead (also $STRUCTKIT_MIRROR).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary line.")
def data_fetch(names, from_files, mirror, quiet) -> None:
    """Fetch each NAME (see `structkit data list`; ud:Language-Name@release for a Universal
    Dependencies treebank) into $STRUCTKIT_DATA or the cache: download with a progress bar,
    check every file's sha256, convert where needed, then move the files into place. A corpus
    already present and verified is left alone; nothing partial is left by a failure."""
    from structkit.datasets import fetch, get

    if from_files and len(names) != 1:
        raise UserError("--from goes with one corpus name")
    for name in names:
        get(name)  # every name checked before the first download
    show = _progress_enabled(quiet)
    for name in names:
        res = fetch(name, mirror=mirror, from_files=list(from_files) or None, progress=show,
                    say=lambda m: _say(m, show))
        if quiet:
            continue
        where = ", ".join(str(p) for p in res.where)
        if res.written:
            click.echo(f"{res.corpus.name}: {len(res.written)} files fetched and verified in {where}", err=True)
        else:
            click.echo(f"{res.corpus.name}: already present and verified in {where}", err=True)


@data.command("path", short_help="Where a corpus (or a corpus file) is, for scripts.")
@click.argument("name")
def data_path(name) -> None:
    """Print the folder of corpus NAME (one line per folder), or the full path of a file such
    as conll2000/train.txt; exit 1 with the fetch command where it is not here."""
    from structkit.datasets import get, status
    from structkit.datasets.paths import describe_dirs, resolve

    if "/" in name.replace("\\", "/") and not name.startswith("ud:"):
        click.echo(resolve(name))
        return
    corpus = get(name)
    st = status(corpus)
    found = [s for s in st if s.path is not None]
    if not found or len(found) < len(st):
        lacking = "is not here" if not found else "is only partly here"
        raise UserError(f"{corpus.name} {lacking} (looked in {describe_dirs()}); "
                        f"`structkit data fetch {name}` gets it")
    for folder in dict.fromkeys(str(s.path.parent) for s in found):
        click.echo(folder)


# Click >= 8.2 raises this (a UsageError whose message is the whole help) for a bare `structkit`.
_NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", ())


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, never a traceback."""
    try:
        rv = cli.main(args=argv, prog_name="structkit", standalone_mode=False)
    except UserError as e:
        click.echo(f"structkit: error: {e}", err=True)
        sys.exit(1)
    except NotImplementedYet as e:
        click.echo(f"structkit: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("structkit: aborted", err=True)
        sys.exit(130)
    except _NoArgsIsHelp as e:
        # `structkit` with no arguments printed the whole help as one "error: Usage: ..."
        # message; show the help as Click itself does (stderr, exit 2).
        click.echo(e.ctx.get_help(), err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        ctx = getattr(e, "ctx", None)
        where = f"{ctx.command_path}: " if ctx is not None else "structkit: "
        click.echo(f"{where}error: {e.format_message()} (see --help)", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("structkit: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(rv if isinstance(rv, int) else 0)
