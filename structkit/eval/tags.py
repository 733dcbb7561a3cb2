"""Scoring tagged CoNLL-U against gold CoNLL-U: UPOS and XPOS accuracy, a per-tag precision /
recall / F1 table and the most frequent confusions; or, for chunk and ner, conlleval's scores
on the labels a column (or a MISC key) holds. The two files must line up word by word."""
from __future__ import annotations

import itertools
from collections import Counter
from typing import Iterator

from structkit.errors import UserError
from structkit.io.conll import Sentence
from structkit.io.conllu import KEYED, NAMES, key_value, read_conllu
from structkit.io.files import display_name
from structkit.spans import bad_label

TOP_CONFUSIONS = 10


def aligned(gold_path: str, pred_path: str) -> Iterator[tuple[Sentence, Sentence]]:
    """Gold and predicted sentences side by side; a mismatch in sentences, word counts or
    forms is a UserError at the prediction file's line."""
    gname, pname = display_name(gold_path), display_name(pred_path)
    end = object()
    for gs, ps in itertools.zip_longest(read_conllu(gold_path, check_text=False),
                                        read_conllu(pred_path, check_text=False), fillvalue=end):
        if gs is end:
            raise UserError(f"the prediction file has more sentences than the gold file {gname}",
                            pname, ps.first_line)
        if ps is end:
            raise UserError(f"the prediction file ends before the gold file (the sentence at line "
                            f"{gs.first_line} of {gname} has no prediction)", pname)
        if len(gs) != len(ps):
            raise UserError(f"sentence has {len(ps)} words, but the gold sentence at line "
                            f"{gs.first_line} of {gname} has {len(gs)}", pname, ps.first_line)
        for k, (g, p) in enumerate(zip(gs.rows, ps.rows)):
            if g[1] != p[1]:
                raise UserError(f"word {p[1]!r} does not line up with gold word {g[1]!r} at line "
                                f"{gs.line_of(k)} of {gname}", pname, ps.line_of(k))
        yield gs, ps


def _label_getter(spec: str):
    base, _, key = spec.partition(".")
    if base not in NAMES or base in ("id", "form") or (key and base not in KEYED):
        raise UserError(f"--label-column must be a CoNLL-U column (upos, xpos, ...) or a key of "
                        f"feats or misc such as misc.NER, got {spec!r}")
    i = NAMES.index(base)
    if key:
        return lambda row: key_value(row[i], key) or "_"
    return lambda row: row[i]


def per_tag_table(pairs: list[tuple[str, str]]) -> tuple[dict, list[list]]:
    """Per-tag precision/recall/F1 (percent) with counts, and the confusions, most frequent first."""
    gold, pred, correct = Counter(), Counter(), Counter()
    confusions = Counter()
    for g, p in pairs:
        gold[g] += 1
        pred[p] += 1
        if g == p:
            correct[g] += 1
        else:
            confusions[(g, p)] += 1
    table = {}
    for tag in sorted(set(gold) | set(pred)):
        c = correct[tag]
        prec = 100.0 * c / pred[tag] if pred[tag] else 0.0
        rec = 100.0 * c / gold[tag] if gold[tag] else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        table[tag] = {"precision": prec, "recall": rec, "f1": f1, "gold": gold[tag],
                      "predicted": pred[tag], "correct": c}
    ranked = sorted(confusions.items(), key=lambda kv: (-kv[1], kv[0]))
    return table, [[g, p, n] for (g, p), n in ranked]


def evaluate_conllu_pos(gold_path: str, pred_path: str, label_column: str = "upos",
                        known_words: set[str] | None = None) -> tuple[dict, str]:
    """UPOS and XPOS accuracy, and for the ``label_column`` tags the per-tag table and the
    confusions. A column the prediction has exactly as the gold file (a tagger writes one
    column and passes the other through) is reported as such, not as 100% accuracy; so is one
    the prediction leaves empty ('_')."""
    main = _label_getter(label_column)
    upos, xpos, tagged = [], [], []
    words = sentences = 0
    filled = {"upos": False, "xpos": False}
    unk = unk_correct = 0
    for gs, ps in aligned(gold_path, pred_path):
        sentences += 1
        for g, p in zip(gs.rows, ps.rows):
            words += 1
            upos.append(g[3] == p[3])
            xpos.append(g[4] == p[4])
            filled["upos"] = filled["upos"] or p[3] != "_"
            filled["xpos"] = filled["xpos"] or p[4] != "_"
            pair = (main(g), main(p))
            tagged.append(pair)
            if known_words is not None and g[1] not in known_words:
                unk += 1
                unk_correct += pair[0] == pair[1]
    table, confusions = per_tag_table(tagged)
    acc = 100.0 * sum(g == p for g, p in tagged) / max(words, 1)
    result: dict = {"task": "pos", "format": "conllu", "sentences": sentences, "tokens": words,
                    "label_column": label_column, "accuracy": acc,
                    "per_tag": table, "confusions": confusions[:TOP_CONFUSIONS]}
    said = []
    for col, hits in (("upos", upos), ("xpos", xpos)):
        if not filled[col]:
            result[f"{col}_accuracy"], note = None, "not predicted ('_')"
        elif all(hits) and col != label_column:
            result[f"{col}_accuracy"], note = None, "the gold file's own (passed through, not scored)"
        else:
            result[f"{col}_accuracy"] = 100.0 * sum(hits) / max(words, 1)
            note = f"{result[f'{col}_accuracy']:6.2f}%"
        said.append(f"{col.upper()} accuracy: {note}")
    lines = [f"processed {words} words in {sentences} sentences; " + "; ".join(said)]
    if label_column not in ("upos", "xpos"):
        lines.append(f"{label_column} accuracy: {acc:6.2f}%")
    if known_words is not None:
        result["unknown_tokens"] = unk
        result["unknown_accuracy"] = 100.0 * unk_correct / unk if unk else 0.0
        lines.append(f"words unseen in training: {unk} tokens; accuracy: {result['unknown_accuracy']:6.2f}%")
    w = max([len(t) for t in table] + [len(label_column)])
    lines.append(f"{label_column:<{w}}  precision  recall      F1   gold  predicted")
    for tag, r in table.items():
        lines.append(f"{tag:<{w}}  {r['precision']:9.2f}  {r['recall']:6.2f}  {r['f1']:6.2f}  "
                     f"{r['gold']:5d}  {r['predicted']:9d}")
    if confusions:
        lines.append("most frequent confusions (gold -> predicted): "
                     + ", ".join(f"{g} -> {p} {n}" for g, p, n in confusions[:TOP_CONFUSIONS]))
    return result, "\n".join(lines)


def conllu_label_triples(task: str, gold_path: str, pred_path: str, label_column: str
                         ) -> Iterator[tuple[list[str], list[str], list[str]]]:
    """(words, gold, predicted) per sentence from the ``label_column`` of two CoNLL-U files,
    for chunk and ner scoring."""

    get = _label_getter(label_column)
    for gs, ps in aligned(gold_path, pred_path):
        gold = [get(r) for r in gs.rows]
        pred = [get(r) for r in ps.rows]
        for labels, path, sent in ((gold, gold_path, gs), (pred, pred_path, ps)):
            k = bad_label(labels, None)
            if k is not None:
                raise UserError(f"unknown label {labels[k]!r} in {label_column}: {task} labels are O "
                                f"or B-/I-/E-/S-/L-/U-TYPE (IOB1, IOB2, IOBES or BILOU)",
                                display_name(path), sent.line_of(k))
        yield [r[1] for r in gs.rows], gold, pred
