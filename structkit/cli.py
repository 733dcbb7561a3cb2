"""The ``structkit`` command line (Click). Options, configs, progress and printing only:
the work is done in ``structkit.tasks``."""
from __future__ import annotations

import json
import os
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

    def refit(self, epoch: int, total: int, msg: str, seconds: float) -> None:
        """An epoch of the retraining on every sentence after --dev-split chose the epochs."""
        if self.bar is not None:
            if epoch == 1:
                self.bar.reset(total=total)
                self.bar.set_description(self.bar.desc.replace("train", "refit", 1))
            self.bar.set_postfix_str(msg)
            self.bar.update(1)
        elif self.verbose:
            click.echo(f"refit on all, epoch {epoch}/{total}: {msg} ({seconds:.2f} s)", err=True)

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
def _selection_help(name: str) -> str:
    from structkit.learn import selection
    return getattr(selection, name)


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
@_opt("--dev-split", type=float, group="Data and model", metavar="F", help=_selection_help("DEV_SPLIT_HELP"))
@_opt("--patience", type=int, group="Data and model", metavar="N", help=_selection_help("PATIENCE_HELP"))
@_opt("--refit/--no-refit", default=None, group="Data and model", help=_selection_help("REFIT_HELP"))
@_opt("-m", "--model", "model_path", type=str, required=True, group="Data and model", help="Where to write the model file.")
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
@_opt("--scheme", type=str, group="Sequence tasks (pos, chunk, ner)",
      help="Chunk/ner label scheme: iob1, iob2, iobes or bilou. [default: auto, detected from "
           "the training labels]")
@_opt("--cutoff", type=int, group="Sequence tasks (pos, chunk, ner)",
      help="Keep features seen at least this often. [default: 1]")
@_opt("--features", type=str, group="Reranking (rerank)",
      help="Feature families, comma-separated from ngram, trigger, backoff, topic (or all, or none). "
           "The recogniser's score and rank are always used. [default: ngram]")
@_opt("--dask", "dask_address", type=str, metavar="ADDRESS", group="Learner",
      help="With --jobs N: train the N shards of parameter mixing on a Dask cluster (a scheduler "
           "address, or local[:W]); needs structkit[dask].")
@_opt("--metrics-json", type=str, group="Output", help="Write the per-epoch scores to this JSON file.")
@_opt("-q", "--quiet", is_flag=True, group="Output", help="No progress bar or summary.")
@_opt("-v", "--verbose", is_flag=True, group="Output", help="Print one line per epoch, even in a pipe.")
def train(train_path, dev_path, model_path, config_path, metrics_json, quiet, verbose, templates=None,
          dask_address=None, **options) -> None:
    """Train a model and write it to --model.

    Options come from the flags, over a --config file; each is checked against the task and the
    learner (`structkit algorithms NAME` shows what a learner takes)."""
    from structkit.config import load_config, resolve_data_path
    from structkit.io.files import check_outputs
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
        from structkit.sequence.task import default_algo

        cfg["algo"] = default_algo(cfg["task"], train_path and resolve_data_path(train_path))
    config = make_config(cfg)
    if train_path is None:
        raise UserError("--train is required, on the command line or as data.train in --config")
    train_path = resolve_data_path(train_path, must_exist=True)
    dev_path = resolve_data_path(dev_path, must_exist=True) if dev_path else None
    # A bad --model / --metrics-json destination was only noticed after training, and a
    # missing --metrics-json folder failed after the model had been written (a failed command
    # leaving a model behind). Check both before any work.
    # The model over the training data (or the metrics over the model) destroyed a file.
    check_outputs([model_path, metrics_json], [p for p in (train_path, dev_path, config_path) if p])
    for out in (model_path, metrics_json):  # writable folder, checked by writing, before training
        _check_writable(out)
    show = _progress_enabled(quiet)
    printer = _TrainPrinter.of(config)
    history: list[dict] = []
    refit_history: list[dict] = []
    report = _EpochReport(printer.n_calls, f"train {config.task}", quiet, verbose)

    def on_epoch(epoch: int, stats: dict) -> None:
        if "refit" in stats:   # --dev-split chose the epochs: training again on every sentence
            refit_history.append(stats)
            report.refit(epoch, stats["refit"], printer.line(stats), stats["epoch_seconds"])
            return
        history.append(stats)
        report(epoch, printer.line(stats), stats["epoch_seconds"])

    from structkit.tasks import get_task
    kw, close = {}, None
    if dask_address:
        if config.task not in ("pos", "chunk", "ner") or (getattr(config, "jobs", None) or 1) < 2:
            raise UserError("--dask trains the shards of parameter mixing: give --jobs N (N >= 2) "
                            "with a learner that mixes (`structkit algorithms`)")
        from structkit.distributed import connect, dask_mapper
        client, cluster = connect(dask_address)
        kw["mapper"] = dask_mapper(client)

        def close() -> None:
            client.close()
            if cluster is not None:
                cluster.close()
    try:
        model = get_task(config.task).train_function()(config, train_path, dev_path, on_epoch, **kw)
    finally:
        report.close()
        if close is not None:
            close()
    writers = [(model_path, model.save)]
    if metrics_json:
        def write_metrics(tmp: str) -> None:
            metrics = printer.metrics(model, history)
            if refit_history:
                metrics["refit_history"] = refit_history
            text = json.dumps(_finite(metrics), indent=2, allow_nan=False)
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        writers.append((metrics_json, write_metrics))
    _commit_together(writers)
    _say(f"wrote {model_path}: {printer.summary(model)}", show or verbose)


def _check_writable(path: str | None) -> None:
    """Refuse an output whose folder cannot be written, by creating (and removing) a temporary
    file there: a read-only folder was only found after the whole training."""
    import os
    import tempfile

    if path is None or path == "-":
        return
    if os.path.exists(path) and not os.path.isfile(path):
        # a model is renamed into place: that would replace a device node or FIFO
        raise UserError("cannot write: not a regular file (a model is written to a file)", path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(os.path.realpath(path)))
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UserError(f"cannot write: {e.strerror or e}", path) from None
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UserError("cannot write: permission denied", path)


def _commit_together(writers) -> None:
    """Write each ``(path, write(tmp_path))`` to a temporary file beside its path, and rename
    them all into place only when every one was written: a failed metrics file leaves the old
    model alone (and the other way round). OSErrors (a full disk) are one line naming the file."""
    import os
    import tempfile

    done: list[tuple[str, str]] = []
    try:
        umask = os.umask(0)
        os.umask(umask)
        for shown, write in writers:
            # Through a link (a symlinked model, /dev/stdout redirected to a file) the file it
            # names is replaced and the link stays, as `-o` does: never renamed over the link.
            path = os.path.realpath(shown)
            if os.path.exists(path) and not os.path.isfile(path):
                raise UserError("cannot write: not a regular file (a model is written to a file)", shown)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path),
                                       dir=os.path.dirname(path))
            os.close(fd)
            done.append((tmp, path))
            try:
                write(tmp)
                try:  # an existing file keeps its permissions
                    mode = os.stat(path).st_mode & 0o7777
                except OSError:
                    mode = 0o666 & ~umask
                os.chmod(tmp, mode)
            except OSError as e:
                raise UserError(f"cannot write: {_reason(e)}", shown) from None
        for tmp, path in done:
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise UserError(f"cannot write: {_reason(e)}", path) from None
    except BaseException:
        for tmp, _ in done:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def _reason(e: OSError) -> str:
    import errno

    return "no space left on the device (disk full)" if e.errno == errno.ENOSPC else (e.strerror or str(e))


def _finite(obj):
    """``obj`` with every infinite or NaN float replaced by None: JSON has no Infinity."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


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
                       lambda d: f"dev WER {d['wer']:.2f}%")
        if config.task == "parse":
            return cls(config, config.epochs, default_report, lambda d: f"dev uas {d['uas']:.2f}")
        from structkit.sequence.task import main_score

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
                    f"epoch {info['chosen_epoch']} kept"
                    + (f" of {info['epochs_run']} (best dev WER {info['selected_dev']['wer']:.2f}%)"
                       if "selected_dev" in info else "")
                    + (f", then {info['refit_epochs']} epochs on all {info['train_utterances']} utterances"
                       if info.get("refit") else "") + f", {info['train_seconds']:.1f} s")
        if self.config.task == "parse":
            what = (f"{info['train_sentences']} training sentences ({info['skipped_unbuildable']} "
                    "skipped: not projective or not single-rooted)")
        else:
            what = f"{info['n_features']} features, {len(model.labels)} labels"
            if "scheme" in info:
                how = "detected" if info.get("scheme_detected", True) else "given"
                what += f" ({info['scheme'].upper()} scheme, {how})"
            chosen = getattr(model, "default_templates", None)
            if chosen:
                why = " (the input has no POS column)" if chosen.endswith("-nopos") else ""
                what += f", templates {chosen}{why}"
        kept = ""
        if info.get("selected_epoch") is not None:
            (name, score), = info["selected_dev"].items()
            kept = f", epoch {info['selected_epoch']} of {info['epochs_run']} "
            if info.get("refit"):
                kept += (f"best on the held-out {info['dev_sentences']} (dev {name} {score:.2f}), then "
                         f"{info['refit_epochs']} epochs on all {info['train_sentences']} sentences")
            else:
                kept += f"kept (best dev {name} {score:.2f})"
        return f"{what}, {info['train_tokens']} training tokens{kept}, {info['train_seconds']:.1f} s"



# ---- explain ----------------------------------------------------------------------------------
@cli.command(short_help="Why each token got its label: runner-up, margin and the features for each.")
@click.option("-m", "--model", "model_path", required=True, help="A tagging model.")
@click.argument("file", required=False)
@click.option("--text", "text", type=str, help="Explain this sentence (tokenised) instead of a file's.")
@click.option("--sentence", "sentence_no", type=click.IntRange(min=1), default=1, show_default=True,
              help="Which sentence of FILE (1-based).")
@click.option("--token", type=click.IntRange(min=1), help="Only this token (1-based).")
@click.option("--top", type=click.IntRange(min=1, max=1000), default=5, show_default=True,
              help="Features shown for each side.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per token.")
@click.option("--depth", type=int,
              help="Lookahead depth for history-based models (default: the depth trained with).")
def explain(model_path, file, text, sentence_no, token, top, as_json, depth) -> None:
    """For each token of a sentence (of FILE, CoNLL columns or CoNLL-U, or --text): the predicted
    label, the runner-up and the margin, then the features and transitions that push towards each
    with their weight differences (the neighbours' labels as predicted).

    Viterbi models: the runner-up is the label of the best sequence with another label there, the
    margin the difference between the two sequences' scores (max-marginals). History-based models
    (greedy, lookahead, OLaRank greedy): the decision margin, with the labels already decided as
    the history (in decoding order): the label's score with its best lookahead continuation minus
    the runner-up's, and the continuations the search found (the next labels it looked at); the
    contributions, history weights and the continuations' difference included, add up to it."""
    from structkit.explain import iter_explanations, report_lines
    from structkit.sequence.task import SequenceTagger

    if (file is None) == (text is None):
        raise UserError("give a FILE (or '-') or --text SENTENCE")
    tagger = SequenceTagger.load(model_path, command="explain")
    if depth is not None:
        tagger.check_depth(depth, model_path)
    if text is not None:
        import io

        from structkit.io.conllu import read_raw_text

        stream = io.BytesIO(text.encode("utf-8", "surrogateescape"))
        sent = next(iter(read_raw_text("--text", "en", "auto", stream=stream)))
        path, as_text = "--text", True
    else:
        from structkit.config import resolve_data_path
        from structkit.io.conllu import read_sequence

        path = resolve_data_path(file, must_exist=True) if file != "-" else "-"
        sent, seen = None, 0
        for s in read_sequence(path):  # counted, not islice'd: any --sentence number is fine
            seen += 1
            if seen == sentence_no:
                sent = s
                break
        if sent is None:
            raise UserError(f"there is no sentence {sentence_no} (the file has {seen})", path)
        as_text = False
    if token is not None and token > len(sent.rows):
        raise UserError(f"--token {token}: the sentence has {len(sent.rows)} tokens")
    # One token at a time, printed as it comes: a sentence of any length in bounded memory.
    for e in iter_explanations(tagger, sent, path, text=as_text, depth=depth, only=token):
        if as_json:
            click.echo(json.dumps({"index": e.index, "word": e.word, "label": e.label,
                                   "runner_up": e.runner_up,
                                   "margin": e.margin if e.margin != float("inf") else None,
                                   "features": [[p.name, p.weight] for p in e.pushes[:2 * top]],
                                   **({"continuation": e.continuation,
                                       "runner_up_continuation": e.runner_up_continuation}
                                      if e.continuation is not None else {})}))
        else:
            for line in report_lines(e, top, token):
                click.echo(line)


# ---- plot -----------------------------------------------------------------------------------
@cli.command(short_help="Draw learning curves (train and dev per epoch) from --metrics-json files.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", required=True, help="The picture to write (.png, .svg or .pdf).")
@click.option("--metric", type=str, help="The dev score to draw (f1, accuracy, uas, las, wer; "
              "default: the task's main one).")
@click.option("--title", type=str, help="A title for the plot.")
def plot(files, output, metric, title) -> None:
    """Draw the learning curves of one or more training runs on one plot: the dev score per
    epoch (solid) and the training accuracy of each pass (dashed), one colour per run.

    \b
    structkit train --task ner --train conll2002/esp.train --dev conll2002/esp.testa \\
        --epochs 15 --model m --metrics-json run.json
    structkit plot run.json other.json -o curves.png"""
    from structkit.io.files import check_outputs
    from structkit.plot import plot as draw

    if os.path.splitext(output)[1].lower() not in (".png", ".svg", ".pdf"):
        raise UserError("-o must end in .png, .svg or .pdf", output)
    check_outputs([output], list(files))
    curves = draw(list(files), output, metric, title)
    click.echo(f"wrote {output}: {len(curves)} run(s)", err=True)


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


# ---- tagging and parsing collections --------------------------------------------------------
def _batch_options(fn):
    """Inputs and outputs for collections, cores and clusters: the same for tag, chunk, ner
    and parse (``structkit.batch``)."""
    opts = [
        click.option("-o", "--output", type=str,
                     help="Write one stream here instead of standard output (several files: "
                          "each file's start is marked, '# file = NAME' or a -DOCSTART- row)."),
        click.option("--output-dir", type=str,
                     help="Write one output per input into this folder, mirroring the inputs' "
                          "relative paths, with the output format's suffix (.conll, .conllu, .conllx)."),
        click.option("--glob", "pattern", type=str,
                     help="In folders, only files matching this pattern (e.g. '*.txt'; by name, or "
                          "by relative path when it has a '/'). Folders are read recursively."),
        click.option("--skip-existing", is_flag=True,
                     help="With --output-dir: skip inputs whose output is already there (outputs "
                          "appear only when complete), so an interrupted run resumes."),
        click.option("--keep-going", is_flag=True,
                     help="Report a bad file and carry on with the others (its output is dropped); "
                          "exit 1 at the end if any failed."),
        click.option("-j", "--jobs", type=str, default=None,
                     help="Worker processes: an integer, or 'auto' for every core (the default)."),
        click.option("--dask", "dask_address", type=str, metavar="ADDRESS",
                     help="Run on a Dask cluster: a scheduler address (tcp://host:8786), or "
                          "local[:N] for a local cluster of N workers (needs structkit[dask])."),
        click.option("--shared-fs", is_flag=True,
                     help="With --dask and --output-dir: workers read the inputs and write the "
                          "outputs themselves (a file system every worker sees); otherwise blocks "
                          "go to the workers and results come back to this machine."),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar on a terminal."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _run_batch(job, files, output, output_dir, pattern, skip_existing, keep_going, jobs,
               dask_address, shared_fs, quiet, protect) -> None:
    """The batch run behind tag/chunk/ner/parse: checks the options, runs, reports failures."""
    from structkit.batch import collect_inputs, parse_jobs, run

    if output and output_dir:
        raise UserError("give -o/--output (one stream) or --output-dir (one file per input), not both")
    if skip_existing and not output_dir:
        raise UserError("--skip-existing goes with --output-dir")
    if shared_fs and not (dask_address and output_dir):
        raise UserError("--shared-fs goes with --dask and --output-dir")
    n = parse_jobs(jobs)
    inputs = collect_inputs(list(files), pattern)
    if dask_address and any(i.path == "-" for i in inputs):
        raise UserError("--dask reads files, not standard input")
    show = _progress_enabled(quiet)

    def report(e: UserError) -> None:
        click.echo(f"structkit: error: {e}", err=True)

    if dask_address:
        from structkit.distributed import run_dask

        summary = run_dask(job, inputs, dask_address, output=output, output_dir=output_dir,
                           keep_going=keep_going, skip_existing=skip_existing, shared_fs=shared_fs,
                           progress=show, protect=protect, on_error=report)
    else:
        summary = run(job, inputs, output=output, output_dir=output_dir, jobs=n, keep_going=keep_going,
                      skip_existing=skip_existing, progress=show, protect=protect, on_error=report)
    if summary.skipped and show:
        _say(f"{summary.skipped} of {summary.files} files skipped (output already there)", True)
    if summary.failed:
        raise UserError(f"{len(summary.failed)} of {summary.files} files failed (reported above); "
                        "the others were written")


def _tag_command(name: str, task: str, help_text: str):
    @cli.command(name, help=help_text + "\n\nFILES may be files, folders (read recursively; see "
                 "--glob) or '-'; none is standard input.", short_help=help_text)
    @click.option("-m", "--model", "model_path", required=True, help="A model trained with `structkit train`.")
    @click.argument("files", nargs=-1)
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
    @click.option("--scores", is_flag=True,
                  help="Add each token's margin (a last column, or Margin= in CoNLL-U MISC): for Viterbi "
                       "models the best sequence's score minus the best with another label at that token "
                       "(max-marginals); for history-based models (greedy, lookahead, OLaRank greedy) the "
                       "decision margin: the chosen label's score with its best lookahead continuation "
                       "minus the best other label's. Small margins are the doubtful tags.")
    @_batch_options
    def command(model_path, files, text, no_split, fmt, lang, columns, depth, scores, output, output_dir,
                pattern, skip_existing, keep_going, jobs, dask_address, shared_fs, quiet):
        import gc

        from structkit.batch import TagJob
        from structkit.sequence.task import SequenceTagger

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
        if text:
            from structkit.text.tokenize import get_tokenizer
            get_tokenizer(lang)  # an unknown language is an error before any input is read
        job = TagJob(tagger, columns, text, "lines" if no_split else "auto", fmt, lang, depth, scores)
        _run_batch(job, files, output, output_dir, pattern, skip_existing, keep_going, jobs,
                   dask_address, shared_fs, quiet, [model_path])
        gc.freeze()  # a quick exit: nothing left for the collector to scan
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
              help="Another system's output on the same tokens: both systems' scores side by side, "
                   "and McNemar's test between the two.")
@click.option("--scheme", type=str, default="auto", show_default=True,
              help="Chunk/ner label scheme: auto (detected from the gold labels), iob1, iob2, iobes or bilou.")
def eval_cmd(task, files, as_json, label_column, model_path, other, scheme) -> None:
    """Score tagged output: FILE with gold second-to-last and prediction last (conlleval's
    layout), or GOLD PRED as two files that line up token by token (columns or CoNLL-U).

    Chunk and NER scores are phrase precision, recall and F1 as conlleval computes them. POS on
    CoNLL-U gives UPOS and XPOS accuracy, a per-tag table and the most frequent confusions.
    --task parse scores GOLD PRED dependency files (CoNLL-X or CoNLL-U): UAS and LAS under the
    Penn Treebank convention (punctuation excluded) and the CoNLL 2018 one (every word, LAS on
    the universal DEPREL), root accuracy, complete match and a per-label table.
    --task tokenize compares the tokens, words and sentences of two CoNLL-U files by their
    characters, as the CoNLL 2018 shared task does.

    Chunk and NER labels may be in IOB1, IOB2, IOBES or BILOU (--scheme; detected from the gold
    labels by default, and named in the report). IOB1/IOB2 are scored exactly as conlleval;
    IOBES/BILOU phrases are read by the same start/end rules and scored on exact matches."""
    from structkit.eval.schemes import SCHEMES

    scheme = scheme.lower()
    if scheme not in ("auto",) + SCHEMES:
        raise UserError(f"--scheme must be auto, {', '.join(SCHEMES)}; got {scheme!r}")
    if scheme != "auto" and task not in ("chunk", "ner"):
        raise UserError(f"--scheme applies to eval --task chunk or ner, not {task}")
    if task == "tokenize":
        if len(files) != 2:
            raise UserError(f"eval --task tokenize takes two CoNLL-U files, GOLD PRED; got {len(files)}")
        from structkit.config import resolve_data_path
        from structkit.eval.tokenize import evaluate_tokenization, report

        result = evaluate_tokenization(*(resolve_data_path(f, must_exist=True) for f in files))
        click.echo(json.dumps(_finite(result), sort_keys=True, allow_nan=False) if as_json else report(result))
        return
    if label_column is not None and task not in ("pos", "chunk", "ner"):
        raise UserError(f"--label-column does not apply to eval --task {task}")
    if task == "parse":
        if len(files) != 2:
            raise UserError(f"eval --task parse takes two files, GOLD PRED; got {len(files)}")
        from structkit.config import resolve_data_path
        from structkit.eval.files import evaluate_parse_files

        result, report = evaluate_parse_files(*(resolve_data_path(f, must_exist=True) for f in files))
        click.echo(json.dumps(_finite(result), sort_keys=True, allow_nan=False) if as_json else report)
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
                                       resolve_data_path(other, must_exist=True), scheme)
        click.echo(json.dumps(_finite(result), sort_keys=True, allow_nan=False) if as_json else report)
        return
    known = None
    if model_path:
        from structkit.sequence.task import SequenceTagger
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

        result, report = evaluate_sentences(task, conllu_label_triples(task, *paths, label_column), known,
                                            scheme)
    else:
        result, report = evaluate_files(task, paths, known, scheme)
    if as_json:
        click.echo(json.dumps(_finite(result), sort_keys=True, allow_nan=False))
    else:
        click.echo(report)


# ---- dump --------------------------------------------------------------------------------
@cli.command(short_help="Show a model: labels, transitions, history weights and the strongest features "
                        "(per label, or per action for a parser).")
@click.option("-m", "--model", "model_path", required=True, help="A model of any kind (tagger, parser, reranker).")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many features to show (per action, for a parser).")
@click.option("--feature", "pattern", type=str,
              help="Only features whose name contains this text, e.g. 'w[0]=bank' or 'suf3[0]=' "
                   "(a parser's: 's0t=NN', 'q0w=the').")
def dump(model_path, top, pattern) -> None:
    """Show a model. Taggers: labels, transition weights (label trigrams of lookahead models with
    --label-order 2, history weights H of OLaRank greedy models) and the strongest features by
    name. Parsers: per action (shift, reduceL, reduceR; a beam parser's left-LABEL and
    right-LABEL) the features with the largest weights for it; the weights are hashed, so the
    names are those of the features enumerated from the model's vocabularies that hash to each
    row. Rerankers: the strongest features."""
    from structkit.dump import dump_lines

    for line in dump_lines(model_path, top, pattern):
        click.echo(line)


def _printable(s: str) -> str:
    """``s`` with terminal control characters (ESC, BEL, CR, ...) written as escapes (\\x1b),
    so showing a model cannot drive the user's terminal."""
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in s)


# ---- not yet ----------------------------------------------------------------------------
class NotImplementedYet(Exception):
    def __init__(self, what: str):
        super().__init__(f"{what} is not implemented yet")


@cli.command(short_help="Parse CoNLL-U (back into CoNLL-U), CoNLL-X or `word POS` files: heads and labels.")
@click.option("-m", "--model", "model_path", required=True, help="A parser trained with `structkit train --task parse`.")
@click.argument("files", nargs=-1)
@click.option("--depth", type=int, help="Lookahead depth of a lookahead parser, or of the lookahead inside the beam "
              "of a beam parser (0..3; default: the depth trained with).")
@click.option("--beam", type=int, help="Beam width of a beam parser (default: the width trained with).")
@click.option("--tagger", "tagger_path", type=str,
              help="POS-tag the words first with this tagger model (`structkit train --task pos`).")
@_batch_options
def parse(model_path, files, depth, beam, tagger_path, output, output_dir, pattern, skip_existing,
          keep_going, jobs, dask_address, shared_fs, quiet) -> None:
    """Parse CoNLL-X or CoNLL-U files (or `word POS` columns): CoNLL-U comes back as CoNLL-U
    with HEAD and DEPREL predicted and every other line and column as read; other input as
    CoNLL-X. An unlabelled parser writes DEPREL '_', never the input's. FILES may be files,
    folders (read recursively; see --glob) or '-'; none is standard input."""
    from structkit.batch import ParseJob
    from structkit.parse.labelled import LabelledParser
    from structkit.parse.parser import DependencyParser

    parser = DependencyParser.load(model_path, command="parse")
    labelled = isinstance(parser, LabelledParser)
    if depth is not None:
        if labelled:  # lookahead inside the beam: re-rank the 2B best candidates by depth-D lookahead
            from structkit.parse.parser import BEAM_MAX_DEPTH
            if not 0 <= depth <= BEAM_MAX_DEPTH:
                raise UserError(f"--depth of a beam parser (lookahead inside the beam) is "
                                f"0..{BEAM_MAX_DEPTH}, got {depth}", model_path)
        else:
            from structkit.parse.parser import DEPTH
            DEPTH.check(depth)
    if beam is not None:
        if not labelled:
            raise UserError("--beam applies to beam parsers (--algo beam, the default)", model_path)
        from structkit.learn.registry import PARAMS
        beam = PARAMS["beam"].check(beam)
    tagger = None
    protect = [model_path]
    if tagger_path:
        from structkit.sequence.task import SequenceTagger
        tagger = SequenceTagger.load(tagger_path, command="parse --tagger", tasks=("pos",))
        protect.append(tagger_path)
    _run_batch(ParseJob(parser, tagger, depth, beam), files, output, output_dir, pattern, skip_existing,
               keep_going, jobs, dask_address, shared_fs, quiet, protect)


# ---- rerank (n-best lists of speech recognition hypotheses) --------------------------------
def _eval_rerank(files, as_json, other) -> None:
    """`structkit eval --task rerank NBEST [CHOSEN] [--compare OTHER]`."""
    from structkit.config import resolve_data_path
    from structkit.io.nbest import read_chosen, read_nbest
    from structkit.rerank.task import evaluate_nbest, wer_report

    if len(files) not in (1, 2):
        raise UserError(f"eval --task rerank takes NBEST [CHOSEN], got {len(files)} file(s)")
    if other is not None and len(files) != 2:
        raise UserError("--compare needs a CHOSEN file to compare with")
    ns = read_nbest(resolve_data_path(files[0], must_exist=True))
    ns.require_references("eval")
    chosen = read_chosen(resolve_data_path(files[1], must_exist=True), len(ns)) if len(files) == 2 else None
    oth = read_chosen(resolve_data_path(other, must_exist=True), len(ns)) if other is not None else None
    res = evaluate_nbest(ns, chosen, oth)
    click.echo(json.dumps(_finite(res), sort_keys=True, allow_nan=False) if as_json else wer_report(res))


@cli.command(short_help="Choose one hypothesis per utterance from n-best lists with a trained reranker.")
@click.option("-m", "--model", "model_path", required=True, help="A reranker trained with `structkit train --task rerank`.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", type=str, help="Write here instead of standard output.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per utterance: id, group, index (0-based), score, text.")
def rerank(model_path, files, output, as_json) -> None:
    """Rerank n-best lists (HyPoradise JSON, JSON lines, or a Kaldi-style directory): writes the
    chosen hypothesis of each utterance, one per line."""
    from structkit.config import resolve_data_path
    from structkit.io.files import atomic_output, check_outputs
    from structkit.rerank.task import Reranker

    model = Reranker.load(model_path, command="rerank")
    paths = [resolve_data_path(f, must_exist=True) for f in files] or ["-"]
    check_outputs([output], paths + [model_path])
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


# ---- serve ---------------------------------------------------------------------------------
@cli.command(short_help="A JSON API and a web page over models loaded once (the serve extra).")
@click.option("-m", "--model", "models", multiple=True, required=True, metavar="[NAME=]PATH",
              help="A pos, chunk, ner or parse model; repeat for more. Named by the file's stem, "
                   "or NAME=PATH.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="The port (0: any free one; the line on stderr says which).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=1 << 20, show_default=True,
              help="Largest request body (413 above it).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, help="Seconds a request may take, queueing included (503 after).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept this name in the Host header, and cross-origin POSTs from pages "
                   "on it (repeatable; '*' for any). By default only localhost names, IP "
                   "addresses and the --host value.")
@click.option("--read-timeout", type=click.FloatRange(min=0, min_open=True), default=15.0,
              show_default=True, help="Seconds for a request's headers and body to arrive (408 after).")
@click.option("--max-connections", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Open connections at most (and below the open-file limit).")
def serve(models, host, port, max_bytes, timeout, allow_hosts, read_timeout, max_connections) -> None:
    """Serve models over HTTP: POST /tag, /chunk, /ner, /parse and /pipeline take JSON (text,
    token lists or CoNLL-U) and return tokens with offsets, labels, scores, spans and trees
    (or CoNLL-U); GET /models, /health, /openapi.json; GET / is a web page that draws the result.
    Each model is loaded once and run once before the first request; SIGTERM stops cleanly."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise UserError("structkit serve needs the serve extra: pip install 'structkit[serve]'") from None
    from structkit.serve import serve as run_server

    run_server(list(models), host, port, max_bytes, timeout,
               echo=lambda line: click.echo(line, err=True), allow_hosts=tuple(allow_hosts),
               read_timeout=read_timeout, max_connections=max_connections)


# Click >= 8.2 raises this (a UsageError whose message is the whole help) for a bare `structkit`.
_NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Signalled(BaseException):
    """SIGTERM or SIGHUP, raised where the program is, so the cleanup that SIGINT's
    KeyboardInterrupt runs (temporary files removed) runs for these too."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame) -> None:
    raise _Signalled(signum)


def _signal_cause(e: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or _Signalled in ``e``'s chain of causes, if any."""
    seen = 0
    while e is not None and seen < 16:
        if isinstance(e, (KeyboardInterrupt, _Signalled)):
            return e
        e = e.__cause__ or e.__context__
        seen += 1
    return None


def _install_signal_handlers() -> dict:
    """Handlers for SIGTERM and SIGHUP where they have the default one; returns what they
    replaced (restored when ``main`` returns, for in-process callers such as the tests)."""
    import signal

    replaced = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            old = signal.getsignal(sig)
            if old in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)
                replaced[sig] = old
        except (ValueError, OSError):  # not the main thread, or an embedding that forbids it
            pass
    return replaced


class _ClosedStdout:
    """Standard output when the process was started without one (``>&-``): commands that
    write nothing there run as usual; a write is the one-line error 'standard output: closed'
    (it was discarded without a word, or a traceback)."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        import errno

        raise OSError(errno.EBADF, "closed (the command was started with standard output closed)")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def buffer(self):
        return self


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so the interpreter's final flush does
    not fail again (which turned a broken pipe into a silent exit 1)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass


def _os_error_line(e: OSError) -> str:
    """One line for an OSError that no command turned into a UserError: the file it is about
    (standard output when none is named) and the system's reason."""
    import errno as _errno

    where = e.filename
    if where is None:  # a write to an open file: the output being written, if one is
        tb = e.__traceback__
        while tb is not None:
            f = tb.tb_frame
            if f.f_code.co_name == "atomic_output" and isinstance(f.f_locals.get("path"), str) \
                    and f.f_locals["path"] != "-":
                where = f.f_locals["path"]
            tb = tb.tb_next
    if where is None and e.errno in (_errno.ENOSPC, _errno.EPIPE, _errno.EIO, _errno.EFBIG,
                                     _errno.EDQUOT, _errno.EBADF):
        where = "standard output"
    reason = e.strerror or str(e) or type(e).__name__
    if e.errno == _errno.ENOSPC:
        reason = "no space left on the device (disk full)"
    return f"structkit: error: {where}: {reason}" if where else f"structkit: error: {reason}"


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, never a traceback.

    Exit codes (README, "Exit codes"): 0 success (also when the reader of standard output
    closed the pipe early, e.g. ``| head``); 1 an error, shown as one line; 2 a usage error;
    130 interrupted (Ctrl-C); 128 + N killed by signal N that structkit handles (SIGTERM 143,
    SIGHUP 129), after removing its temporary files."""
    import os
    import signal

    replaced = _install_signal_handlers()
    try:
        _main(argv)
    finally:
        for sig, old in replaced.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError):
                pass


def _main(argv: list[str] | None) -> None:
    import os

    if sys.stdin is None:  # started with standard input closed (<&-)
        sys.stdin = open(os.devnull)
    if sys.stdout is None:  # started with standard output closed (>&-): writing to it fails
        sys.stdout = _ClosedStdout()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    try:
        rv = cli.main(args=argv, prog_name="structkit", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe on stdout is reported here, not at exit
    except UserError as e:
        click.echo(f"structkit: error: {e}", err=True)
        sys.exit(1)
    except NotImplementedYet as e:
        click.echo(f"structkit: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("structkit: aborted", err=True)
        sys.exit(130)
    except SystemExit as e:
        # Click turns a broken pipe (EPIPE) into a silent exit 1, having wrapped stdout.
        if e.code == 1 and type(sys.stdout).__name__ == "_PacifyFlushWrapper":
            _quiet_stdout()
            sys.exit(0)
        raise
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
    except SystemError as e:
        # A signal's exception raised while numba's dispatcher runs Python code comes out of
        # the call as "SystemError: ... returned a result with an exception set", the signal's
        # exception as its cause: the signal it is, not an internal error.
        sig = _signal_cause(e)
        if sig is None:
            raise
        if isinstance(sig, KeyboardInterrupt):
            click.echo("structkit: interrupted", err=True)
            sys.exit(130)
        import signal
        click.echo(f"structkit: stopped by {signal.Signals(sig.signum).name}", err=True)
        sys.exit(128 + sig.signum)
    except KeyboardInterrupt:
        click.echo("structkit: interrupted", err=True)
        sys.exit(130)
    except _Signalled as e:
        import signal
        click.echo(f"structkit: stopped by {signal.Signals(e.signum).name}", err=True)
        sys.exit(128 + e.signum)
    except BrokenPipeError:
        # The reader closed the pipe (`structkit chunk big | head -1`): it wanted no more.
        # End quietly with success, so `set -o pipefail` scripts do not fail.
        _quiet_stdout()
        sys.exit(0)
    except RecursionError:
        click.echo("structkit: error: input nested too deeply", err=True)
        sys.exit(1)
    except OSError as e:
        if e.errno in (32,):  # EPIPE raised as a plain OSError
            _quiet_stdout()
            sys.exit(0)
        click.echo(_os_error_line(e), err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
