"""Looking into models and runs: `explain`, `dump`, `plot`, `algorithms`."""
from __future__ import annotations

import json
import os

import click

from structkit.commands._util import INT, Choice, task_names
from structkit.config import resolve_data_path
from structkit.errors import UserError
from structkit.io.files import check_outputs, printable_line
from structkit.learn import registry
from structkit.tasks import explains, get_task, task_of_model, tasks


@click.command(short_help="Why each token got its label: runner-up, margin and the features for each.")
@click.option("-m", "--model", "model_path", required=True, help="A tagging model or a tokenizer.")
@click.argument("file", required=False)
@click.option("--text", "text", type=str, help="Explain this sentence (tokenised; raw text for a tokenizer) "
              "instead of a file's.")
@click.option("--sentence", "sentence_no", type=click.IntRange(min=1), default=1, show_default=True,
              help="Which sentence of FILE (1-based; a tokenizer: which paragraph).")
@click.option("--token", type=click.IntRange(min=1), help="Only this token (1-based).")
@click.option("--top", type=click.IntRange(min=1, max=1000), default=5, show_default=True,
              help="Features shown for each side.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per token.")
@click.option("--depth", type=INT,
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
    contributions, history weights and the continuations' difference included, add up to it.

    Tokenizers (`structkit train --task tokenize`) read raw text as `structkit tokenize` does
    (paragraphs, as without --no-split):
    for each token of the paragraph, the label of the character that ends it (token end, or a
    space between tokens) against no boundary, or a sentence end against the best other label,
    with the margins `tokenize --scores` writes (TokMargin, SentMargin), and what pushes each
    way: the character's features (named by what they saw: characters, classes, known tokens,
    the words either side), the transitions and the rest of the two best label sequences.

    Morph models (`structkit train --task morph`): each word's UPOS, XPOS and FEATS (against the
    tag of the best sequence with another value of that part: the margins `morph --scores`
    writes) and LEMMA (against the best other edit rule), with the feature columns that push
    each way (named by what they read) and, for the tags, what the transitions and the other
    words' tags add."""
    from structkit.explain import iter_explanations, report_lines
    from structkit.io.conllu import read_raw_text, read_sequence

    if (file is None) == (text is None):
        raise UserError("give a FILE (or '-') or --text SENTENCE")
    takes = [t for t in tasks() if explains(t)]
    task = task_of_model(model_path, "explain", takes)
    tagger = task.load(model_path, "explain", tuple(t.name for t in takes))
    if depth is not None:
        task.check_search_options(tagger, model_path, depth)
    got = task.command.explain_input(file, text, sentence_no)   # raw text, for models that read it
    if got is not None:
        sent, path = got
        as_text = True
    elif text is not None:
        import io

        stream = io.BytesIO(text.encode("utf-8", "surrogateescape"))
        sent = next(iter(read_raw_text("--text", "en", "auto", stream=stream)))
        path, as_text = "--text", True
    else:
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
    if token is not None and got is None and token > len(sent.rows):
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
                click.echo(printable_line(line))


@click.command(short_help="Draw learning curves (train and dev per epoch) from --metrics-json files.")
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
    from structkit.plot import plot as draw

    if os.path.splitext(output)[1].lower() not in (".png", ".svg", ".pdf"):
        raise UserError("-o must end in .png, .svg or .pdf", output)
    check_outputs([output], list(files))
    curves = draw(list(files), output, metric, title)
    click.echo(f"wrote {output}: {len(curves)} run(s)", err=True)


@click.command(short_help="List the learning algorithms, or show one's parameters, defaults and paper.")
@click.argument("name", required=False)
@click.option("--task", type=Choice(task_names), help="Only the learners of this task.")
def algorithms(name, task) -> None:
    """List the learners with their tasks, or show NAME's parameter table: type, default,
    range and help, with its decoder, default epochs and paper (CRFsuite's -H)."""
    takes = (task,)
    if task is not None:
        parts = get_task(task).training.parts   # a task trained by its parts' learners (pipeline)
        takes = parts or takes
        if not any(registry.specs(t) for t in takes):
            click.echo(f"--task {task} has no learners: it trains no model")
            return
        if parts and name is None:
            click.echo(f"--task {task} trains its parts ({', '.join(parts)}) with their learners:")
    specs = list({id(s): s for t in takes for s in registry.specs(t)}.values())
    if name is None:
        rows = [(s.name, ", ".join(s.tasks), s.summary) for s in specs]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        for r in rows:
            click.echo(f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}")
        return
    specs = [s for s in specs if s.name == name]
    if not specs:
        registry.get(name, takes[0])  # the one-line error listing the choices
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


@click.command(short_help="Show a model: labels, transitions, history weights and the strongest features "
                        "(per label, or per action for a parser).")
@click.option("-m", "--model", "model_path", required=True, help="A model of any kind (tagger, parser, reranker, tokenizer, morph).")
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
    row. Rerankers: the strongest features. Tokenizers: the label transitions, the weight per
    label and the multiword tokens they split (remembered, and the suffix rules for unseen ones).
    Morph models, and taggers of a label set too large for dense weights (hashed candidate
    lattices): their facts and most frequent tags, edit rules or labels (hashed weights have no
    feature names)."""
    from structkit.dump import dump_lines

    for line in dump_lines(model_path, top, pattern):
        click.echo(printable_line(line))
