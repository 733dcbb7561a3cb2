"""Evaluating tagged CoNLL files: conlleval's one-file form (gold second-to-last column,
prediction last) or a gold file and a prediction file that must line up token by token."""
from __future__ import annotations

import itertools
from typing import Iterable, Iterator

from structkit.errors import UserError
from structkit.eval.attachment import AttachmentCounter, format_report, scoring_tags
from structkit.eval.chunks import ChunkCounter
from structkit.eval.schemes import PhraseCounter, make_counter
from structkit.eval.significance import mcnemar
from structkit.io.conll import read_conll
from structkit.io.conllu import read_trees
from structkit.io.files import display_name
from structkit.spans import SchemeDetector, bad_label, first_bad_tag


def check_labels(task: str, labels: list[str], path: str, first_line: int,
                 scheme: str | None = "iob2") -> None:
    """Chunk and NER labels must be phrase tags of ``scheme`` (iob1/iob2: the tags conlleval
    reads; None: any of IOB1, IOB2, IOBES, BILOU); a UserError names the line."""

    if task == "pos":
        return
    if scheme in ("iob1", "iob2"):
        k = first_bad_tag(labels)
        if k is not None:
            raise UserError(f"unknown label {labels[k]!r}: {task} labels are O or B-/I-/E-TYPE "
                            "(IOB1, IOB2 or IOE, as conlleval reads them)",
                            display_name(path), first_line + k)
        return

    k = bad_label(labels, scheme)
    if k is not None:
        allowed = {None: "B-/I-/E-/S-/L-/U-TYPE (IOB1, IOB2, IOBES or BILOU)",
                   "iobes": "B-/I-/E-/S-TYPE (IOBES)", "bilou": "B-/I-/L-/U-TYPE (BILOU)"}[scheme]
        raise UserError(f"unknown label {labels[k]!r}: {task} labels are O or {allowed}",
                        display_name(path), first_line + k)


def scheme_arg(scheme: str | None) -> str | None:
    """--scheme's value as the label check wants it: None for auto (any scheme's letters)."""
    return None if scheme in (None, "auto") else scheme


def sentence_triples(task: str, files: tuple[str, ...],
                     scheme: str | None = "auto") -> Iterator[tuple[list[str], list[str], list[str]]]:
    """Yield (words, gold, predicted) per sentence from one or two files; chunk and ner
    labels are checked against ``scheme`` (auto: any scheme's letters)."""
    scheme = scheme_arg(scheme)
    if len(files) == 1:
        path = files[0]
        for s in read_conll(path):
            if len(s.rows[0]) < 2:
                raise UserError("need at least 2 columns: the gold label second-to-last and the "
                                "predicted label last", display_name(path), s.first_line)
            # A gold-only POS file (`word TAG`, the training format) was scored with the
            # word as gold and the tag as prediction, printing a meaningless accuracy. Chunk and
            # NER labels are checked below, which catches that mistake; POS tags cannot be, so
            # the one-file POS form needs the word column too.
            if task == "pos" and len(s.rows[0]) < 3:
                raise UserError("need at least 3 columns for pos (word, gold tag, predicted tag); "
                                "to compare a gold file with a prediction file give both: "
                                "eval GOLD PRED", display_name(path), s.first_line)
            gold = [r[-2] for r in s.rows]
            pred = [r[-1] for r in s.rows]
            check_labels(task, gold, path, s.first_line, scheme)
            check_labels(task, pred, path, s.first_line, scheme)
            yield [r[0] for r in s.rows], gold, pred
        return
    gpath, ppath = files
    end = object()
    for gs, ps in itertools.zip_longest(read_conll(gpath), read_conll(ppath), fillvalue=end):
        if gs is end:
            raise UserError("the prediction file has more sentences than the gold file",
                            display_name(ppath), ps.first_line)
        if ps is end:
            raise UserError("the prediction file ends before the gold file "
                            f"(gold sentence at line {gs.first_line} has no prediction)",
                            display_name(ppath))
        if len(gs) != len(ps):
            raise UserError(f"sentence has {len(ps)} tokens, but the gold sentence at line "
                            f"{gs.first_line} of {display_name(gpath)} has {len(gs)}",
                            display_name(ppath), ps.first_line)
        for k, (gr, pr) in enumerate(zip(gs.rows, ps.rows)):
            if gr[0] != pr[0]:
                raise UserError(f"token {pr[0]!r} does not line up with gold token {gr[0]!r} at "
                                f"line {gs.first_line + k} of {display_name(gpath)}",
                                display_name(ppath), ps.first_line + k)
        if len(gs.rows[0]) < 2:
            raise UserError("the gold file needs a label column (the last one)",
                            display_name(gpath), gs.first_line)
        # A prediction file with only the word column was scored with the words as the
        # predicted labels (a silent 0-ish accuracy for pos).
        if len(ps.rows[0]) < 2:
            raise UserError("the prediction file needs a predicted label column (the last one)",
                            display_name(ppath), ps.first_line)
        gold = [r[-1] for r in gs.rows]
        pred = [r[-1] for r in ps.rows]
        check_labels(task, gold, gpath, gs.first_line, scheme)
        check_labels(task, pred, ppath, ps.first_line, scheme)
        yield [r[0] for r in gs.rows], gold, pred


def evaluate_files(task: str, files: tuple[str, ...], known_words: set[str] | None = None,
                   scheme: str = "auto") -> tuple[dict, str]:
    """Score tagged files; returns (result dict in percent, human-readable report)."""
    return evaluate_sentences(task, sentence_triples(task, files, scheme), known_words, scheme)


class SchemeScorer:
    """Phrase scores under a given label scheme, or under the one detected from the gold labels
    (``auto``: conlleval's counter and the IOBES/BILOU phrase counter both run, and the one the
    scheme needs is reported)."""

    def __init__(self, scheme: str = "auto") -> None:
        self.given = scheme_arg(scheme)
        self.detector = SchemeDetector()
        if self.given is None:
            self.iob, self.phrase = ChunkCounter(), PhraseCounter("iobes")
        else:
            self.counter = make_counter(self.given)

    def add_sentence(self, gold, pred) -> None:
        self.detector.add(gold)
        if self.given is not None:
            self.counter.add_sentence(gold, pred)
        else:
            self.iob.add_sentence(gold, pred)
            self.phrase.add_sentence(gold, pred)

    @property
    def scheme(self) -> str:
        if self.given is not None:
            return self.given
        if self.detector.mixed():
            raise UserError("the gold labels mix IOBES (S-/E-) and BILOU (U-/L-) prefixes; "
                            "name the scheme with --scheme")
        return self.detector.scheme

    def score(self):
        if self.given is not None:
            return self.counter.score()
        return (self.iob if self.scheme in ("iob1", "iob2") else self.phrase).score()

    def describe(self) -> str:
        return f"label scheme: {self.scheme} ({'given' if self.given else 'detected'})"


def evaluate_sentences(task: str, triples: Iterable[tuple[list[str], list[str], list[str]]],
                       known_words: set[str] | None = None, scheme: str = "auto") -> tuple[dict, str]:
    """Score (words, gold, predicted) per sentence; returns (result dict in percent, report).
    Chunk and ner phrases are read in ``scheme`` (auto: detected from the gold labels)."""
    counter = SchemeScorer(scheme) if task != "pos" else None
    tokens = correct = unk = unk_correct = sentences = 0
    for words, gold, pred in triples:
        sentences += 1
        for w, g, p in zip(words, gold, pred):
            tokens += 1
            correct += g == p
            if known_words is not None and w not in known_words:
                unk += 1
                unk_correct += g == p
        if counter is not None:
            counter.add_sentence(gold, pred)
    result: dict = {"task": task, "sentences": sentences, "tokens": tokens,
                    "accuracy": 100.0 * correct / max(tokens, 1)}
    if known_words is not None:
        result["unknown_tokens"] = unk
        result["unknown_accuracy"] = 100.0 * unk_correct / unk if unk else 0.0
    lines = []
    if counter is not None:
        score = counter.score()
        d = score.to_dict()
        d.pop("accuracy")
        result.update(d)
        result["scheme"] = counter.scheme
        lines.append(score.format_report().rstrip("\n"))
        lines.append(counter.describe())
    else:
        lines.append(f"processed {tokens} tokens in {sentences} sentences; "
                     f"accuracy: {result['accuracy']:6.2f}%")
    if known_words is not None:
        lines.append(f"words unseen in training: {unk} tokens; accuracy: {result['unknown_accuracy']:6.2f}%")
    return result, "\n".join(lines)


def evaluate_parse_files(gold_path: str, pred_path: str) -> tuple[dict, str]:
    """Score a predicted dependency file against a gold one (CoNLL-X or CoNLL-U).

    Both files are streamed side by side and must line up: the same number of sentences, of
    words per sentence, and the same word form per word (CoNLL-U multiword ranges and empty
    nodes are not words); both need heads. Any mismatch is a UserError at the prediction
    file's line (naming the gold file and line in the message); a gold sentence without heads
    is a UserError at the gold file's line; a HEAD out of range or a cycle is the reader's
    UserError at that file's line.

    Scores follow two conventions (see ``structkit.eval.attachment``): the Penn Treebank one
    (punctuation excluded: by gold POS `` '' , . : or, when the gold UPOS column holds UD
    tags, by UPOS PUNCT) and the CoNLL 2018 one (every word; LAS on the universal DEPREL).
    A predicted DEPREL the gold never uses is simply wrong; a prediction (or gold) with no
    labels at all ('_' everywhere) has its LAS values None. Returns (result dict with
    ``"task": "parse"`` and ``AttachmentCounter.score(full=True)``, the text report).
    """

    gname, pname = display_name(gold_path), display_name(pred_path)

    counter = AttachmentCounter()
    end = object()
    for gs, ps in itertools.zip_longest(read_trees(gold_path), read_trees(pred_path),
                                        fillvalue=end):
        if gs is end:
            raise UserError(f"the prediction file has more sentences than the gold file "
                            f"{gname} (which has {counter.sentences})", pname, ps.line_of(0))
        if ps is end:
            raise UserError(f"the prediction file ends before the gold file (sentence "
                            f"{counter.sentences + 1}, at line {gs.line_of(0)} of {gname}, "
                            "has no prediction)", pname)
        if len(gs) != len(ps):
            raise UserError(f"sentence has {len(ps)} tokens, but the gold sentence at line "
                            f"{gs.line_of(0)} of {gname} has {len(gs)}", pname, ps.line_of(0))
        for k, (gw, pw) in enumerate(zip(gs.forms, ps.forms)):
            if gw != pw:
                raise UserError(f"token {pw!r} does not line up with gold token {gw!r} at "
                                f"line {gs.line_of(k)} of {gname}", pname, ps.line_of(k))
        gold_heads, pred_heads = gs.heads, ps.heads
        if gold_heads is None:
            raise UserError("gold file has no heads (the HEAD column is '_'): give a gold "
                            "dependency treebank", gname, gs.line_of(0))
        if pred_heads is None:
            raise UserError(f"prediction file has no heads (the HEAD column is '_') for the "
                            f"gold sentence at line {gs.line_of(0)} of {gname}",
                            pname, ps.line_of(0))
        upos = gs.upos
        counter.add(gold_heads, pred_heads, scoring_tags(gs.xpos, upos), upos=upos,
                    gold_deprels=gs.deprels, pred_deprels=ps.deprels)
    scores = counter.score(full=True)
    return {"task": "parse", **scores}, format_report(scores)


def compare_files(task: str, files: tuple[str, ...], other: str,
                  scheme: str = "auto") -> tuple[dict, str]:
    """Both systems' scores side by side and McNemar's test between the predictions in
    ``files`` (one conlleval-layout file, or GOLD PRED) and those in ``other`` (same layout: a
    conlleval file, or a prediction file lining up with GOLD), on token-level correctness.

    The result holds McNemar's figures at the top level (as before), ``first`` and ``second``
    (accuracy, and for chunk/ner precision, recall, F1) and ``difference`` (first minus second)."""

    second = (other,) if len(files) == 1 else (files[0], other)
    end = object()
    scorers = (_SystemScore(task, scheme), _SystemScore(task, scheme))

    def lined_up():
        for i, (ta, tb) in enumerate(itertools.zip_longest(sentence_triples(task, files, scheme),
                                                           sentence_triples(task, second, scheme),
                                                           fillvalue=end)):
            if ta is end or tb is end or ta[0] != tb[0] or ta[1] != tb[1]:
                raise UserError(f"sentence {i + 1} does not line up with the first system's input "
                                "(the two systems must label the same tokens, with the same gold "
                                "labels)", display_name(other))
            scorers[0].add(ta[1], ta[2])
            scorers[1].add(tb[1], tb[2])
            yield ta[1], ta[2], tb[2]

    # Streamed: mcnemar reads the three in lockstep, so tee holds one sentence at a time
    # (both files were held in memory: 63 -> 443 MB at 10x the data). The two systems' scores
    # are counted on the way.
    t_gold, t_a, t_b = itertools.tee(lined_up(), 3)
    result = {"task": task, **mcnemar((t[0] for t in t_gold), (t[1] for t in t_a), (t[2] for t in t_b))}
    first, second_s = scorers[0].result(), scorers[1].result()
    result["first"], result["second"] = first, second_s
    result["difference"] = {k: first[k] - second_s[k] for k in first}
    if task != "pos":
        result["scheme"] = scorers[0].counter.scheme
    rows = [("", "first", "second", "difference")]
    rows += [(k, f"{first[k]:.2f}", f"{second_s[k]:.2f}", f"{result['difference'][k]:+.2f}")
             for k in first]
    widths = [max(len(r[j]) for r in rows) for j in range(4)]
    table = "\n".join(f"{r[0]:<{widths[0]}}  " + "  ".join(f"{r[j]:>{widths[j]}}" for j in (1, 2, 3))
                      for r in rows)
    report = (f"{table}\n"
              f"McNemar's test on {result['tokens']} tokens: first system right and second wrong "
              f"{result['a_only']}, second right and first wrong {result['b_only']}; exact p = "
              f"{result['exact_p']:.4g} (chi-square {result['chi2']:.2f}, p = {result['chi2_p']:.4g}); "
              f"better: {dict(a='first', b='second', tie='neither')[result['better']]}")
    if task != "pos":
        report += "\n" + scorers[0].counter.describe()
    return result, report


class _SystemScore:
    """One system's accuracy (and phrase P/R/F1 for chunk/ner), counted sentence by sentence."""

    def __init__(self, task: str, scheme: str) -> None:
        self.tokens = self.correct = 0
        self.counter = SchemeScorer(scheme) if task != "pos" else None

    def add(self, gold, pred) -> None:
        self.tokens += len(gold)
        self.correct += sum(g == p for g, p in zip(gold, pred))
        if self.counter is not None:
            self.counter.add_sentence(gold, pred)

    def result(self) -> dict:
        out = {"accuracy": 100.0 * self.correct / max(self.tokens, 1)}
        if self.counter is not None:
            s = self.counter.score()
            out |= {"precision": s.precision, "recall": s.recall, "f1": s.f1}
        return out
