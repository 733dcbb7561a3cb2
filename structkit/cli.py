"""The ``structkit`` command line (Click). Options, configs, progress and printing only:
the work is done in ``structkit.tasks``."""
from __future__ import annotations

import json
import sys

import click

from structkit import __version__
from structkit.errors import UserError

SEQ_TASKS = ("pos", "chunk", "ner")


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
    Train a chunker on CoNLL-2000 and chunk a file:
      structkit train --task chunk --train conll2000/train.txt --model chunk.model
      structkit chunk --model chunk.model conll2000/test.txt > out.txt
      structkit eval --task chunk out.txt

    Relative data paths that do not exist are looked up in $STRUCTKIT_DATA
    (default ../shared/data). '-' reads standard input wherever a file is read.
    """


# ---- train -------------------------------------------------------------------------------
@cli.command()
@click.option("--task", type=str, help="pos, chunk or ner (or set in --config).")
@click.option("--train", "train_path", type=str, help="Training data: CoNLL columns, word first, label last.")
@click.option("--dev", "dev_path", type=str, help="Development data, scored after each epoch.")
@click.option("--model", "model_path", type=str, required=True, help="Where to write the model file.")
@click.option("--algo", type=str,
              help="perceptron (exact Viterbi, default), greedy (history-based), lookahead "
                   "(history-based with lookahead search, Tsuruoka et al. 2011), or the k-best "
                   "learners kbest-perceptron, kbest-pa, kbest-rpa, kbest-mira, kbest-sdm, kbest-larank "
                   "(Mancev & Todorovic), or the one-pass learners olarank-exact, olarank-greedy, "
                   "pa-exact, pa-greedy, perceptron-exact, perceptron-greedy and the batch "
                   "larank-greedy-batch (Bordes et al. 2008).")
@click.option("--epochs", type=int, help="Passes over the training data (default 10; 1 for the one-pass "
              "OLaRank family; larank-greedy-batch: at most this many passes, default 50).")
@click.option("--config", "config_path", type=str, help="TOML config; flags override its values.")
@click.option("--seed", type=int, help="Seed for shuffling (default 0): same seed, same model.")
@click.option("--cutoff", type=int, help="Keep features seen at least this often (default 1).")
@click.option("--templates", type=str,
              help="Feature template set (pos, chunk, ner) or comma-separated templates, e.g. 'w[0],w[-1]|w[0]'.")
@click.option("--columns", type=str, help="Name the columns, e.g. 'word,pos,label' or 'word,-,label'.")
@click.option("--label-order", type=int,
              help="1 (default) or 2: label trigram features (greedy and lookahead only).")
@click.option("--direction", type=str, help="ltr (default) or rtl: history-based tagging direction.")
@click.option("--depth", type=int, help="Lookahead search depth D (default 1; greedy is depth 0).")
@click.option("--margin", type=float, help="Margin C of the lookahead perceptron (default 0).")
@click.option("--k", "k", type=int, help="k-best learners: how many best sequences per update (default 1).")
@click.option("--C", "C", type=float, help="k-best PA/RPA/MIRA/SDM: the C of the max-margin objective (default 1).")
@click.option("--tau", type=float, help="k-best MIRA/SDM/LaRank: KKT tolerance of the SMO solver (default 0.001).")
@click.option("--nr", type=int, help="LaRank / OLaRank: reprocess steps per new example (default 5 for "
              "kbest-larank and olarank-exact, 1 for olarank-greedy); LaRank is a one-pass learner, "
              "so use --epochs 1 for the paper's setting.")
@click.option("--order", type=int, help="Greedy OLaRank learners: Markov order K of the label history, "
              "1 to 10 (default 1).")
@click.option("--search", type=str,
              help="Lookahead search: dp (dynamic programming, default) or brute (depth-first, "
                   "the paper's Figure 2); both give the same decisions.")
@click.option("--metrics-json", type=str, help="Write the per-epoch scores to this JSON file.")
@click.option("--features", type=str,
              help="--task rerank: feature families, comma-separated from ngram, trigger, backoff, "
                   "topic (or all, or none); default ngram. The recogniser's score and rank are always used.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print one line per epoch, even in a pipe.")
def train(task, train_path, dev_path, model_path, algo, epochs, config_path, seed, cutoff, templates,
          columns, label_order, direction, depth, margin, k, C, tau, nr, search, metrics_json, quiet,
          verbose, features=None, order=None) -> None:
    """Train a model and write it to --model."""
    from structkit.config import load_config, resolve_data_path

    cfg: dict = load_config(config_path) if config_path else {"data": {}}
    data = cfg.pop("data")
    for meta in ("name", "description", "experiment"):
        cfg.pop(meta, None)
    flags = {"task": task, "algo": algo, "epochs": epochs, "seed": seed, "cutoff": cutoff,
             "columns": columns, "label_order": label_order, "direction": direction,
             "depth": depth, "margin": margin, "search": search, "k": k, "C": C, "tau": tau, "nr": nr,
             "order": order}
    if templates is not None:
        flags["templates"] = [t for t in templates.split(",") if t.strip()]
    cfg.update({k: v for k, v in flags.items() if v is not None})
    if train_path is None:
        train_path = data.get("train")
    if dev_path is None:
        dev_path = data.get("dev")
    if "task" not in cfg:
        raise UserError("--task is required (pos, chunk, ner or parse), on the command line or in --config")
    if train_path is None:
        raise UserError("--train is required, on the command line or as data.train in --config")
    if cfg["task"] == "rerank":
        return _train_rerank(cfg, train_path, dev_path, model_path, features, metrics_json, quiet, verbose)
    if features is not None or RERANK_ONLY_KEYS & set(cfg):
        what = "--features" if features is not None else ", ".join(sorted(RERANK_ONLY_KEYS & set(cfg)))
        raise UserError(f"{what} applies to --task rerank only")
    train_path = resolve_data_path(train_path)
    dev_path = resolve_data_path(dev_path) if dev_path else None

    if cfg["task"] == "parse":
        from structkit.tasks.parser import ParserConfig, train_parser

        unused = sorted(k for k in cfg if k not in ("task", "algo", "epochs", "depth", "margin", "seed"))
        if unused:
            raise UserError(f"option(s) {', '.join('--' + k.replace('_', '-') for k in unused)} do "
                            "not apply to --task parse (it takes --algo, --epochs, --depth, --margin, --seed)")
        cfg.setdefault("algo", "lookahead")
        config = ParserConfig(**cfg)
        trainer = train_parser
        key = "uas"
    else:
        from structkit.tasks.sequence import TaggerConfig, main_score, train_tagger

        config = TaggerConfig(**cfg)
        trainer = train_tagger
        key = main_score(config.task)
    config.validate()
    from structkit.learn.registry import default_report
    # A bad --model / --metrics-json destination was only noticed after training, and a
    # missing --metrics-json folder failed after the model had been written (a failed command
    # leaving a model behind). Check both before any work.
    from structkit.io.files import check_output_path
    check_output_path(model_path)
    check_output_path(metrics_json)
    show = _progress_enabled(quiet)
    history: list[dict] = []
    # larank-greedy-batch runs all its passes in one epoch call
    if config.task == "parse":
        n_calls, report_line = config.epochs, default_report
    else:
        n_calls, report_line = config.spec.epoch_calls(config), config.spec.report
    report = _EpochReport(n_calls, f"train {config.task}", quiet, verbose)

    def on_epoch(epoch: int, stats: dict) -> None:
        history.append(stats)
        msg = report_line(stats)
        if "dev" in stats:
            msg += f", dev {key} {stats['dev'][key]:.2f}"
        report(epoch, msg, stats["epoch_seconds"])

    try:
        tagger = trainer(config, train_path, dev_path, on_epoch)
    finally:
        report.close()
    tagger.save(model_path)
    if metrics_json:
        from structkit.io.files import atomic_output
        with atomic_output(metrics_json) as f:
            json.dump({"config": tagger.info | {"config": vars(config)}, "epochs": history}, f, indent=2)
            f.write("\n")
    info = tagger.info
    if config.task == "parse":
        what = (f"{info['train_sentences']} training sentences ({info['skipped_unbuildable']} skipped: "
                "not projective or not single-rooted)")
    else:
        what = f"{info['n_features']} features, {len(tagger.labels)} labels"
    _say(f"wrote {model_path}: {what}, {info['train_tokens']} training tokens, "
         f"{info['train_seconds']:.1f} s", show or verbose)


# ---- tagging -----------------------------------------------------------------------------
def _tag_command(name: str, task: str, help_text: str):
    @cli.command(name, help=help_text)
    @click.option("--model", "model_path", required=True, help="A model trained with `structkit train`.")
    @click.argument("files", nargs=-1)
    @click.option("-o", "--output", type=str, help="Write here instead of standard output.")
    @click.option("--text", is_flag=True, help="Input is raw text: one sentence per line, tokens split on spaces.")
    @click.option("--columns", type=str, help="Name the input columns, e.g. 'word,pos' or 'word,pos,label'.")
    @click.option("--depth", type=int,
                  help="Lookahead depth for history-based models (default: the depth trained with).")
    def command(model_path, files, output, text, columns, depth):
        from structkit.config import resolve_data_path
        from structkit.io.conll import read_conll, read_text, write_conll
        from structkit.io.files import atomic_output
        from structkit.tasks.sequence import SequenceTagger

        tagger = SequenceTagger.load(model_path, command=name, tasks=(task,))
        if depth is not None:
            if depth < 0:
                raise UserError(f"--depth must be a non-negative integer, got {depth}")
            if not tagger.config.history_based:
                raise UserError("--depth applies to history-based models (trained with --algo "
                                "greedy or lookahead); this one decodes with exact Viterbi", model_path)
        paths = [resolve_data_path(f) for f in files] or ["-"]
        with atomic_output(output) as out:
            for path in paths:
                sents = read_text(path) if text else read_conll(path)
                for batch, labels in tagger.tag_batches(sents, path, columns, text, depth=depth):
                    write_conll(batch, labels, out)
    return command


_tag_command("tag", "pos", "POS-tag CoNLL files (or --text); writes each row plus the predicted tag.")
_tag_command("chunk", "chunk", "Chunk CoNLL files (word POS [gold]); writes each row plus the predicted chunk tag.")
_tag_command("ner", "ner", "Find named entities in CoNLL files; writes each row plus the predicted tag.")


# ---- eval --------------------------------------------------------------------------------
@cli.command("eval")
@click.option("--task", required=True, type=str, help="pos, chunk or ner.")
@click.argument("files", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the report.")
@click.option("--model", "model_path", type=str,
              help="The model that tagged the file: adds accuracy on words unseen in training.")
@click.option("--compare", "other", type=str,
              help="Another system's output on the same tokens: McNemar's test between the two.")
def eval_cmd(task, files, as_json, model_path, other) -> None:
    """Score tagged output: FILE with gold second-to-last and prediction last (conlleval's
    layout), or GOLD PRED as two files that line up token by token.

    Chunk and NER scores are phrase precision, recall and F1 as conlleval computes them."""
    if task == "parse":
        if len(files) != 2:
            raise UserError(f"eval --task parse takes two files, GOLD PRED; got {len(files)}")
        from structkit.config import resolve_data_path
        from structkit.eval.files import evaluate_parse_files

        result, report = evaluate_parse_files(*(resolve_data_path(f) for f in files))
        click.echo(json.dumps(result, sort_keys=True) if as_json else report)
        return
    if task == "rerank":
        if model_path:
            raise UserError("--model does not apply to eval --task rerank")
        return _eval_rerank(files, as_json, other)
    if task not in SEQ_TASKS:
        raise UserError(f"--task must be one of {', '.join(SEQ_TASKS)}, got {task!r}")
    if len(files) not in (1, 2):
        raise UserError(f"eval takes one file (gold and prediction columns) or two (GOLD PRED), got {len(files)}")
    from structkit.config import resolve_data_path
    from structkit.eval.files import evaluate_files

    if other is not None:
        from structkit.eval.files import compare_files

        result, report = compare_files(task, tuple(resolve_data_path(f) for f in files),
                                       resolve_data_path(other))
        click.echo(json.dumps(result, sort_keys=True) if as_json else report)
        return
    known = None
    if model_path:
        from structkit.tasks.sequence import SequenceTagger
        known = SequenceTagger.load(model_path).features.known_words()
    result, report = evaluate_files(task, tuple(resolve_data_path(f) for f in files), known)
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))
    else:
        click.echo(report)


# ---- dump --------------------------------------------------------------------------------
@cli.command()
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
    click.echo(f"\nstrongest transitions (previous -> next, <S/E> = sentence boundary):")
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


@cli.command()
@click.option("--model", "model_path", required=True, help="A parser trained with `structkit train --task parse`.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", type=str, help="Write here instead of standard output.")
@click.option("--depth", type=int, help="Lookahead depth (default: the depth trained with).")
@click.option("--tagger", "tagger_path", type=str,
              help="POS-tag the words first with this tagger model (`structkit train --task pos`).")
def parse(model_path, files, output, depth, tagger_path) -> None:
    """Parse CoNLL-X or CoNLL-U files (or `word POS` columns) into CoNLL-X with predicted heads."""
    from structkit.config import resolve_data_path
    from structkit.io.conllx import read_conllx, write_conllx
    from structkit.io.files import atomic_output
    from structkit.tasks.parser import DependencyParser

    parser = DependencyParser.load(model_path, command="parse")
    if depth is not None and not 0 <= depth <= 6:
        raise UserError(f"--depth must be an integer from 0 to 6 (brute-force search visits "
                        f"3^(D+1) paths per decision), got {depth}")
    tagger = None
    if tagger_path:
        from structkit.tasks.sequence import SequenceTagger
        tagger = SequenceTagger.load(tagger_path, command="parse --tagger", tasks=("pos",))
    paths = [resolve_data_path(f) for f in files] or ["-"]
    with atomic_output(output) as out:
        for path in paths:
            sents = read_conllx(path)
            if tagger is not None:
                sents = _pos_tagged(tagger, sents, path)
            for batch, heads in parser.parse_batches(sents, path, depth):
                write_conllx(batch, out, heads=heads)


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
RERANK_ONLY_KEYS = {"features", "lambda", "window", "min_cluster", "topic_levels"}
RERANK_KEYS = {"task", "algo", "epochs", "seed"} | RERANK_ONLY_KEYS


def _train_rerank(cfg, train_path, dev_path, model_path, features, metrics_json, quiet, verbose) -> None:
    """`structkit train --task rerank`: the loss-sensitive or baseline perceptron reranker."""
    from structkit.config import resolve_data_path
    from structkit.io.files import atomic_output, check_output_path
    from structkit.tasks.rerank import RerankConfig, train_reranker

    unused = sorted(k for k in cfg if k not in RERANK_KEYS)
    if unused:
        raise UserError(f"option(s) {', '.join('--' + k.replace('_', '-') for k in unused)} do not "
                        "apply to --task rerank (it takes --algo, --epochs, --features, --seed; a "
                        "config may also set lambda, window, min_cluster, topic_levels)")
    if features is not None:
        cfg["features"] = features
    kw = {k: cfg[k] for k in ("algo", "epochs", "seed", "features", "window", "min_cluster",
                              "topic_levels") if k in cfg}
    if "lambda" in cfg:
        kw["lam"] = cfg["lambda"]
    config = RerankConfig(**kw)
    config.validate()
    check_output_path(model_path)
    check_output_path(metrics_json)
    train_path = resolve_data_path(train_path)
    dev_path = resolve_data_path(dev_path) if dev_path else None
    show = _progress_enabled(quiet)
    report = _EpochReport(config.epochs, "train rerank", quiet, verbose)

    def on_epoch(epoch: int, stats: dict) -> None:
        msg = f"updates {stats['train_updates']}, mistakes {stats['train_mistakes']}"
        if "dev" in stats:
            msg += f", dev WER {100 * stats['dev']['wer']:.2f}%"
        report(epoch, msg, stats["epoch_seconds"])

    try:
        model = train_reranker(config, train_path, dev_path, on_epoch)
    finally:
        report.close()
    model.save(model_path)
    if metrics_json:
        with atomic_output(metrics_json) as f:
            json.dump({"config": {k: v for k, v in model.info.items() if k != "epochs"}
                       | {"config": {**vars(config), "features": list(config.features),
                                     "topic_levels": list(config.topic_levels)}},
                       "epochs": model.info["epochs"]}, f, indent=2)
            f.write("\n")
    info = model.info
    _say(f"wrote {model_path}: {info['n_features']} features, {info['train_utterances']} training "
         f"utterances, epoch {info['chosen_epoch']} kept, {info['train_seconds']:.1f} s", show or verbose)


def _eval_rerank(files, as_json, other) -> None:
    """`structkit eval --task rerank NBEST [CHOSEN] [--compare OTHER]`."""
    from structkit.config import resolve_data_path
    from structkit.io.nbest import read_chosen, read_nbest
    from structkit.tasks.rerank import evaluate_nbest, wer_report

    if len(files) not in (1, 2):
        raise UserError(f"eval --task rerank takes NBEST [CHOSEN], got {len(files)} file(s)")
    if other is not None and len(files) != 2:
        raise UserError("--compare needs a CHOSEN file to compare with")
    ns = read_nbest(resolve_data_path(files[0]))
    ns.require_references("eval")
    chosen = read_chosen(resolve_data_path(files[1]), len(ns)) if len(files) == 2 else None
    oth = read_chosen(resolve_data_path(other), len(ns)) if other is not None else None
    res = evaluate_nbest(ns, chosen, oth)
    click.echo(json.dumps(res, sort_keys=True) if as_json else wer_report(res))


@cli.command()
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
    paths = [resolve_data_path(f) for f in files] or ["-"]
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
