#!/usr/bin/env python3
"""Rewrite the label column of a CoNLL column file from one phrase label scheme to another.

    python scripts/convert_scheme.py --to iobes esp.train > /tmp/esp.train.iobes
    python scripts/convert_scheme.py --from iob1 --to iob2 --column -2 in.txt -o out.txt

Sentences are separated by blank lines; ``-DOCSTART-`` lines and other lines are copied as
they are. The label column is the last one unless --column says otherwise (0-based; negative
counts from the end). --from defaults to detecting the scheme from the file's labels.
"""
from __future__ import annotations

import argparse
import sys

from structkit.spans import SCHEMES, convert, detect_scheme


def read_blocks(lines):
    block: list[str] = []
    for line in lines:
        if line.strip():
            block.append(line.rstrip("\n"))
        else:
            if block:
                yield block
            block = []
            yield None
    if block:
        yield block


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="CoNLL column file ('-' for standard input)")
    ap.add_argument("--from", dest="source", choices=("auto",) + SCHEMES, default="auto")
    ap.add_argument("--to", dest="target", choices=SCHEMES, required=True)
    ap.add_argument("--column", type=int, default=-1, help="label column (default: the last)")
    ap.add_argument("-o", "--output", help="output file (default: standard output)")
    args = ap.parse_args(argv)

    src = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    with src:
        lines = src.readlines()
    blocks = list(read_blocks(lines))

    def label_rows(block):
        return [r for r in block if not r.startswith("-DOCSTART-")]

    col = args.column
    source = args.source
    if source == "auto":
        source = detect_scheme([r.split()[col] for r in label_rows(b)] for b in blocks if b)
        print(f"convert_scheme: detected {source}", file=sys.stderr)
    out = []
    for b in blocks:
        if b is None:
            out.append("")
            continue
        rows = label_rows(b)
        cells = [r.split() for r in rows]
        new = convert([c[col] for c in cells], source, args.target)
        it = iter(zip(cells, new))
        for line in b:
            if line.startswith("-DOCSTART-"):
                out.append(line)
                continue
            c, lab = next(it)
            c[col] = lab
            out.append(" ".join(c))
    text = "\n".join(out) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
