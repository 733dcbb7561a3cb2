"""`structkit eval`: scoring output against gold, and two systems against each other."""
from __future__ import annotations

import json

import click

from structkit.commands._util import Choice, finite, task_names
from structkit.errors import UserError

@click.command("eval", short_help="Score output against gold: accuracy, conlleval phrase F1, UAS or WER; "
                                "McNemar's or the sign test between two systems.")
@click.option("--task", required=True, type=Choice(lambda: task_names() + ["tokenize"]),
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
        click.echo(json.dumps(finite(result), sort_keys=True, allow_nan=False) if as_json else report(result))
        return
    if label_column is not None and task not in ("pos", "chunk", "ner"):
        raise UserError(f"--label-column does not apply to eval --task {task}")
    if task == "parse":
        if len(files) != 2:
            raise UserError(f"eval --task parse takes two files, GOLD PRED; got {len(files)}")
        from structkit.config import resolve_data_path
        from structkit.eval.files import evaluate_parse_files

        result, report = evaluate_parse_files(*(resolve_data_path(f, must_exist=True) for f in files))
        click.echo(json.dumps(finite(result), sort_keys=True, allow_nan=False) if as_json else report)
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
        click.echo(json.dumps(finite(result), sort_keys=True, allow_nan=False) if as_json else report)
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
        click.echo(json.dumps(finite(result), sort_keys=True, allow_nan=False))
    else:
        click.echo(report)


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
    click.echo(json.dumps(finite(res), sort_keys=True, allow_nan=False) if as_json else wer_report(res))
