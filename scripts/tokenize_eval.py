"""Tokenise the raw text of a CoNLL-U treebank and score the result against the treebank.

    python scripts/tokenize_eval.py GOLD.conllu [GOLD.conllu ...] [--split lines] [--save OUT]
    python scripts/tokenize_eval.py --results [--out results/tokenize-rules]

The raw text is rebuilt from the file: each sentence's ``# text``; sentences of a paragraph
joined by one space; a blank line before every sentence marked ``# newpar`` or ``# newdoc``
(a file with neither marks is one paragraph). That is as close to the original documents as
the treebank lets us get: UD keeps no line breaks inside a paragraph. With ``--split lines``
every sentence is a line of its own (paragraphs still separated by a blank line) and the
tokenizer is told to take lines as sentences, which scores tokens with gold sentence splits.
The tokenizer's output goes to a temporary CoNLL-U file (or ``--save``), scored by
``structkit.eval.tokenize``; the time printed is that of tokenising alone.

``--results`` measures the README's figures into results/tokenize-rules.json and .md: the rules
on UD English EWT test and dev and ParTUT test (tokens/s: the best of three timings of
tokenising EWT test ten times, per CPU second and per wall second), and, on EWT dev scored the same way, the libraries we compared them with
(``pip install -e '.[tokbench]'``): syntok's segmenter, NLTK's Treebank word tokenizer and
sacremoses' Moses tokenizer, each on every paragraph. A library that is not installed is left
out with a note saying so. NLTK's and Moses' tokenizers do not split sentences (NLTK's splitter
needs a model download): each paragraph is one sentence for them, so only their token and word
scores compare. Each tool's tokens are put back on the text by their character offsets
(syntok's offsets, NLTK's ``span_tokenize``; Moses' tokens, which are substrings of the text
with ``escape=False``, by searching forward); characters a tool drops (syntok gives hyphens as
spacing) become tokens of their own, counted in the results.
"""
from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from structkit.errors import UserError  # noqa: E402
from structkit.eval.tokenize import evaluate_tokenization, report  # noqa: E402
from structkit.io.conllx import read_conllx  # noqa: E402
from structkit.text import tokenize, write_conllu  # noqa: E402
from structkit.text.base import Sentence, Token  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EWT_TEST, EWT_DEV = "ud-english-ewt/en_ewt-ud-test.conllu", "ud-english-ewt/en_ewt-ud-dev.conllu"
PARTUT_TEST = "ud-english-partut/en_partut-ud-test.conllu"
SPEED_REPEAT = 10  # one timing tokenises EWT test this many times (CPU clocks tick coarsely)


def raw_text(path: str, split: str = "auto") -> str:
    """The text of a CoNLL-U file: paragraphs (``# newpar``/``# newdoc``) separated by a
    blank line, a paragraph's sentences (``# text``) joined by a space, or by a newline with
    ``split="lines"``."""
    paragraphs: list[list[str]] = []
    for sent in read_conllx(path):
        text = None
        new_par = not paragraphs
        for comment in (line for line in sent.lines if line.startswith("#")):
            if comment.startswith(("# newpar", "# newdoc")):
                new_par = True
            elif comment.startswith("# text ="):
                text = comment[len("# text ="):].strip()
        if text is None:
            raise UserError("sentence has no '# text = ...' comment", path, sent.line_of(0))
        if new_par:
            paragraphs.append([])
        paragraphs[-1].append(text)
    joiner = "\n" if split == "lines" else " "
    return "\n\n".join(joiner.join(par) for par in paragraphs) + "\n"


def run(gold: str, split: str, save: str | None) -> dict:
    """Tokenise the text of ``gold``, score it, print the table; return the scores."""
    text = raw_text(gold, split)
    t0 = time.perf_counter()
    sentences = tokenize(text, split=split)
    seconds = time.perf_counter() - t0
    n_tokens = sum(len(s.tokens) for s in sentences)
    buf = io.StringIO()
    write_conllu(sentences, buf)
    if save:
        out_path = save
    else:
        fd, out_path = tempfile.mkstemp(suffix=".conllu")
        os.close(fd)
    try:
        Path(out_path).write_text(buf.getvalue(), encoding="utf-8")
        result = evaluate_tokenization(gold, out_path)
    finally:
        if not save:
            os.unlink(out_path)
    print(f"== {gold} (split={split})")
    print(report(result))
    print(f"tokenised {len(text)} characters into {len(sentences)} sentences, {n_tokens} "
          f"tokens in {seconds:.3f} s ({n_tokens / seconds:,.0f} tokens/s)")
    result["timing"] = {"characters": len(text), "system_tokens": n_tokens, "seconds": seconds}
    return result


# ----------------------------------------------------------------------------- baselines

def _paragraphs(text: str, split: str = "auto"):
    """(offset, block) for each blank-line separated block of ``text``, or for each line with
    ``split="lines"``."""
    pos = 0
    sep = "\n" if split == "lines" else "\n\n"
    for block in text.split(sep):
        if block.strip():
            yield pos, block
        pos += len(block) + len(sep)


def _align(para: str, forms: list[str]) -> tuple[list[tuple[int, int]], int]:
    """Spans of ``forms`` in ``para``, searched forward; returns the spans and how many forms
    were not found where expected (skipped)."""
    spans, pos, missed = [], 0, 0
    for f in forms:
        f = f.strip()
        if not f:
            continue
        i = para.find(f, pos)
        if i < 0 or para[pos:i].strip() and i - pos > 50:
            missed += 1
            continue
        spans.append((i, i + len(f)))
        pos = i + len(f)
    return spans, missed


def _cover(para: str, spans: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """``spans`` (sorted, non-overlapping) plus a token for every run of non-space characters
    that no span covers; returns all spans in order and how many were added."""
    out, pos, added = [], 0, 0
    for a, b in sorted(spans) + [(len(para), len(para))]:
        if a < pos:  # overlapping span: keep the earlier one
            continue
        gap = para[pos:a]
        j = 0
        for piece in gap.split():
            k = gap.index(piece, j)
            out.append((pos + k, pos + k + len(piece)))
            added += 1
            j = k + len(piece)
        if b > a:
            out.append((a, b))
        pos = max(pos, b)
    return out, added


def _to_sentences(text: str, base: int, para: str, groups: list[list[tuple[int, int]]], first: bool) -> list[Sentence]:
    sents = []
    for g, spans in enumerate(groups):
        toks = [Token(para[a:b], base + a, base + b, (para[a:b],),
                      not (b < len(para) and not para[b].isspace())) for a, b in spans]
        if toks:
            sents.append(Sentence(toks, toks[0].start, toks[-1].end, text[toks[0].start:toks[-1].end],
                                  new_par=g == 0, new_doc=first and g == 0))
    return sents


def baseline_syntok(text: str, split: str):
    import syntok.segmenter as segmenter

    sents, fixes = [], 0
    for n, (base, para) in enumerate(_paragraphs(text, split)):
        groups = []
        for p in segmenter.analyze(para):
            for s in p:
                groups.append([(t.offset, t.offset + len(t.value)) for t in s if t.value])
        flat, added = _cover(para, [sp for g in groups for sp in g])
        fixes += added
        # regroup: each added token joins the sentence of the span before it
        ends = [g[-1][1] for g in groups if g]
        regrouped, k = [[] for _ in ends] or [[]], 0
        for a, b in flat:
            while k < len(ends) - 1 and a >= ends[k]:
                k += 1
            regrouped[k].append((a, b))
        sents += _to_sentences(text, base, para, regrouped, n == 0)
    return sents, fixes


def _paragraph_tool(text: str, split: str, spans_of) -> tuple[list[Sentence], int]:
    sents, fixes = [], 0
    for n, (base, para) in enumerate(_paragraphs(text, split)):
        spans, missed = spans_of(para)
        flat, added = _cover(para, spans)
        fixes += missed + added
        sents += _to_sentences(text, base, para, [flat], n == 0)
    return sents, fixes


def baseline_nltk(text: str, split: str):
    from nltk.tokenize import TreebankWordTokenizer

    tok = TreebankWordTokenizer()
    return _paragraph_tool(text, split, lambda p: (list(tok.span_tokenize(p)), 0))


def baseline_sacremoses(text: str, split: str):
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang="en")
    return _paragraph_tool(text, split, lambda p: _align(p, tok.tokenize(p, escape=False)))


BASELINES = {  # name: (module to import, its PyPI package, function, what it is)
    "syntok": ("syntok", "syntok", baseline_syntok, "syntok.segmenter.analyze (sentences and tokens)"),
    "nltk": ("nltk", "nltk", baseline_nltk, "nltk TreebankWordTokenizer.span_tokenize (no sentence splitting)"),
    "sacremoses": ("sacremoses", "sacremoses", baseline_sacremoses,
                   "sacremoses MosesTokenizer(lang='en').tokenize(escape=False) (no sentence splitting)"),
}


def score_sentences(gold: str, sentences: list[Sentence]) -> dict:
    fd, out_path = tempfile.mkstemp(suffix=".conllu")
    os.close(fd)
    try:
        with open(out_path, "w", encoding="utf-8") as f:
            write_conllu(sentences, f)
        return evaluate_tokenization(gold, out_path)
    finally:
        os.unlink(out_path)


def results(out: str) -> None:
    """The README's tokenizer figures, into ``out``.json and ``out``.md."""
    from importlib.metadata import PackageNotFoundError, version

    from structkit.config import resolve_data_path

    sys.path.insert(0, str(ROOT / "scripts"))
    from common import dump_json, machine

    f1s = lambda r: {m: round(r[m]["f1"], 2) for m in ("tokens", "words", "sentences")}  # noqa: E731
    rules = {}
    for name in (EWT_TEST, EWT_DEV, PARTUT_TEST):
        r = run(resolve_data_path(name, must_exist=True), "auto", None)
        rules[name] = {**f1s(r), "gold_tokens": r["tokens"]["gold"]}
    text = raw_text(resolve_data_path(EWT_TEST, must_exist=True))
    best = best_cpu = None
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        n = sum(len(s.tokens) for _ in range(SPEED_REPEAT) for s in tokenize(text))
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        best = secs if best is None else min(best, secs)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    speed = {"file": EWT_TEST, "tokens": n, "seconds": round(best, 3), "tokens_per_second": round(n / best),
             "cpu_seconds": round(best_cpu, 3), "tokens_per_cpu_second": round(n / best_cpu)}
    dev_path = resolve_data_path(EWT_DEV, must_exist=True)
    baselines, notes = {}, []
    for split in ("auto", "lines"):
        r = run(dev_path, split, None)
        baselines[f"structkit rules/{split}"] = {**f1s(r), "version": "-", "split": split,
                                                 "what": "structkit.text.tokenize", "tokens_added_or_missed": "-"}
    for name, (module, package, fn, what) in BASELINES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            notes.append(f"{name}: not installed (pip install -e '.[tokbench]'); left out")
            print(f"note: {notes[-1]}", file=sys.stderr)
            continue
        try:
            ver = version(package)
        except PackageNotFoundError:
            ver = "?"
        for split in ("auto", "lines"):
            sents, fixes = fn(raw_text(dev_path, split), split)
            r = score_sentences(dev_path, sents)
            baselines[f"{name}/{split}"] = {**f1s(r), "version": ver, "what": what, "split": split,
                                            "tokens_added_or_missed": fixes}
            print(f"{name} {ver} {split}: {baselines[f'{name}/{split}']}")
    obj = {"command": "python scripts/tokenize_eval.py --results", "machine": machine(), "rules": rules,
           "rules_speed": speed, "baselines_ewt_dev": baselines, "notes": notes}
    dump_json(obj, Path(out + ".json"))
    m = obj["machine"]
    lines = ["# The rules tokenizer (`--text`) on UD raw text, and libraries on EWT dev", "",
             f"`{obj['command']}` ({m['date']}, commit {m['commit']}). Raw text rebuilt from `# text` "
             "(paragraphs from `# newpar`/`# newdoc`), tokenised, scored by `structkit.eval.tokenize` "
             "(CoNLL 2018: F1 of token, word and sentence spans).", "",
             "| text | token F1 | word F1 | sentence F1 |", "|---|---|---|---|"]
    for name, r in rules.items():
        lines.append(f"| {name} | {r['tokens']} | {r['words']} | {r['sentences']} |")
    lines += ["", f"Speed: {speed['tokens_per_cpu_second']:,} tokens per CPU second, {speed['tokens_per_second']:,} "
              f"tokens/s of wall time ({speed['tokens']} tokens, {EWT_TEST} {SPEED_REPEAT} times, in {speed['cpu_seconds']} s CPU, "
              f"{speed['seconds']} s wall; the best of three timings, one process on a 2-core machine shared "
              "with other jobs).", "",
              f"## Libraries on {EWT_DEV}, scored the same way", "",
              "Input: `auto` = each paragraph of running text (the tool finds the sentences, if it "
              "can); `lines` = each gold sentence on its own (gold sentence splits, the input NLTK's and "
              "Moses' word tokenizers expect; sentence F1 then says nothing). A tool's tokens are put "
              "back on the text by character offsets; characters a tool drops or that could not be "
              "found become tokens of their own (counted). NLTK and Moses do not split sentences "
              "(a paragraph is one sentence in `auto`).", "",
              "| tool | version | what | input | token F1 | word F1 | sentence F1 | tokens added/missed |",
              "|---|---|---|---|---|---|---|---|"]
    for name, r in baselines.items():
        lines.append(f"| {name.split('/')[0]} | {r['version']} | {r['what']} | {r['split']} | {r['tokens']} | "
                     f"{r['words']} | {r['sentences']} | {r['tokens_added_or_missed']} |")
    lines += [f"\nNote: {n}." for n in notes]
    Path(out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gold", nargs="*", help="CoNLL-U files with # text comments (paths, or names "
                    "found in $STRUCTKIT_DATA or the cache)")
    ap.add_argument("--split", choices=("auto", "lines"), default="auto",
                    help="auto: find sentences in running text; lines: gold sentence splits")
    ap.add_argument("--save", help="write the system CoNLL-U here (one gold file only)")
    ap.add_argument("--results", action="store_true", help="measure the README's figures (rules on "
                    "EWT test/dev and ParTUT test, libraries on EWT dev) into --out .json/.md")
    ap.add_argument("--out", default=str(ROOT / "results" / "tokenize-rules"))
    args = ap.parse_args()
    if args.results:
        try:
            results(args.out)
        except UserError as e:
            sys.exit(f"error: {e}")
        return
    if not args.gold:
        ap.error("name a gold file, or --results")
    if args.save and len(args.gold) > 1:
        ap.error("--save takes one gold file")
    try:
        from structkit.config import resolve_data_path

        for gold in args.gold:  # a corpus name such as ud-english-ewt/en_ewt-ud-test.conllu works too
            run(resolve_data_path(gold, must_exist=True), args.split, args.save)
    except UserError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
