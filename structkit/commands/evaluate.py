"""`structkit eval`: scoring output against gold, and two systems against each other."""
from __future__ import annotations

import json

import click

from structkit.commands._util import Choice, finite, task_names
from structkit.errors import UserError
from structkit.io.files import spooled_stdin, stdin_once
from structkit.tasks import get_task, tasks


@click.command("eval", short_help="Score output against gold: accuracy, conlleval phrase F1, UAS/LAS, "
                                "the CoNLL 2018 metrics (ud, morph, pipeline, tokenize) or WER; "
                                "McNemar's or the sign test between two systems.")
@click.option("--task", required=True, type=Choice(task_names),
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
    characters, as the CoNLL 2018 shared task does. --task morph scores UPOS, XPOS, UFeats,
    AllTags and Lemmas of GOLD PRED (same words). --task ud (and --task pipeline, for
    `annotate`'s output) gives every metric of the CoNLL 2018 shared task: tokens, sentences,
    words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS, CLAS, MLAS and BLEX, aligned by
    characters. --task rerank scores n-best choices by WER.

    Chunk and NER labels may be in IOB1, IOB2, IOBES or BILOU (--scheme; detected from the gold
    labels by default, and named in the report). IOB1/IOB2 are scored exactly as conlleval;
    IOBES/BILOU phrases are read by the same start/end rules and scored on exact matches."""
    from structkit.spans import SCHEMES

    scheme = scheme.lower()
    if scheme not in ("auto",) + SCHEMES:
        raise UserError(f"--scheme must be auto, {', '.join(SCHEMES)}; got {scheme!r}")

    t = get_task(task)
    if scheme != "auto" and "scheme" not in t.eval_options:
        raise UserError(f"--scheme applies to eval --task {_span_tasks()}, not {task}")
    if label_column is not None and "label_column" not in t.eval_options:
        raise UserError(f"--label-column does not apply to eval --task {task}")
    # '-' is standard input for any one of the files: kept in a temporary file, since readers
    # sniff a file's format before reading it, or read two files in step.

    stdin_once(*((f"FILES ({k + 1})", f) for k, f in enumerate(files)), ("--compare", other))
    with spooled_stdin([*files, other]) as paths:
        result, report = t.evaluate(tuple(paths[:-1]), label_column=label_column,
                                    model_path=model_path, other=paths[-1], scheme=scheme)
    click.echo(json.dumps(finite(result), sort_keys=True, allow_nan=False) if as_json else report)


def _span_tasks() -> str:
    """The tasks whose labels are phrases ('chunk or ner')."""

    return " or ".join(t.name for t in tasks() if "scheme" in t.eval_options)
