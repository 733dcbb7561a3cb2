"""Tokenise the raw text of a CoNLL-U treebank and score the result against the treebank.

    python scripts/tokenize_eval.py GOLD.conllu [GOLD.conllu ...] [--split lines] [--save OUT]

The raw text is rebuilt from the file: each sentence's ``# text``; sentences of a paragraph
joined by one space; a blank line before every sentence marked ``# newpar`` or ``# newdoc``
(a file with neither marks is one paragraph). That is as close to the original documents as
the treebank lets us get: UD keeps no line breaks inside a paragraph. With ``--split lines``
every sentence is a line of its own (paragraphs still separated by a blank line) and the
tokenizer is told to take lines as sentences, which scores tokens with gold sentence splits.
The tokenizer's output goes to a temporary CoNLL-U file (or ``--save``), scored by
``structkit.eval.tokenize``; the time printed is that of tokenising alone.
"""
from __future__ import annotations

import argparse
import io
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


def raw_text(path: str, split: str = "auto") -> str:
    """The text of a CoNLL-U file: paragraphs (``# newpar``/``# newdoc``) separated by a
    blank line, a paragraph's sentences (``# text``) joined by a space, or by a newline with
    ``split="lines"``."""
    paragraphs: list[list[str]] = []
    for sent in read_conllx(path):
        text = None
        new_par = not paragraphs
        for comment in sent.comments:
            if comment.startswith(("# newpar", "# newdoc")):
                new_par = True
            elif comment.startswith("# text ="):
                text = comment[len("# text ="):].strip()
        if text is None:
            raise UserError("sentence has no '# text = ...' comment", path, sent.first_line)
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
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gold", nargs="+", help="CoNLL-U files with # text comments (paths, or names "
                    "found in $STRUCTKIT_DATA or the cache)")
    ap.add_argument("--split", choices=("auto", "lines"), default="auto",
                    help="auto: find sentences in running text; lines: gold sentence splits")
    ap.add_argument("--save", help="write the system CoNLL-U here (one gold file only)")
    args = ap.parse_args()
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
