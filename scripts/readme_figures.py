"""Every figure in the README's prose (and the documentation's, ``docs/``) comes from a file
under ``results/``.

    python scripts/readme_figures.py            # list every unsourced figure with its README line; exit 1 if any
    python scripts/readme_figures.py --all      # every figure found, with its source

``tests/test_readme_figures.py`` runs the check in ``make test``.

What is checked
---------------
The README is cut into *blocks*: a paragraph (lines up to a blank line), a bullet item (a
line starting with ``- `` or ``N. `` starts a new block), a table, a fenced code block, a
heading. Two regions are left out: the generated results table (between the
``<!-- results-table: ... -->`` markers; ``tests/test_readme_table.py`` checks it) and the
example outputs between ``<!-- example: NAME -->`` and ``<!-- example: end -->``
(``scripts/readme_examples.py`` writes them; ``tests/test_readme_examples.py`` checks them).
In a fenced code block only comments (from `` #`` to the end of the line) are prose; in the
other blocks inline code spans (`` `...` ``) are commands, options and values, not figures, and
HTML comments are markers (see *quoted*, below).

A *figure* is a number written in one of these forms:

* with a decimal point: ``95.66``, ``4.2``, ``0.0``;
* a percentage: ``95%``, ``95.66%``;
* with thousands separators: ``11,000``, ``300,000``;
* an integer followed by a unit of measurement (``s``, ``seconds``, ``ms``, ``min``, ``h``,
  ``MB``, ``GB``, ``KB``, ``MiB``, ``GiB``, ``x`` and ``tokens/s``, ``sentences/s``,
  ``words/s``, ``requests/s``, ``sent/s``): ``12 s``, ``279 MB``, ``2x``; in a range ``43-47 s``
  both ends are figures.

Not figures, by rule: plain integers (epochs, C = 64, 2 cores, beam 8, exit code 143, years,
table and section numbers); a number joined to a letter, ``_``, ``^`` or ``.`` (``r2.14``,
``x10``, ``2^23``, ``conll2000``); versions (two or more dots, ``1.4.4``, or after ``Python``);
option values (after ``=`` or after ``--option``); bounds (after ``at most``, ``below``,
``up to``, ``within``: limits the code enforces, not measurements); and the few settings in
``ALLOWED`` (each with the code constant that holds it, checked by the tests).

Where a figure comes from
-------------------------
A block *cites* the results files it names (``results/ud-parse.md``; a file's siblings with the
same stem, ``results/ud-parse.json``, count as cited: one script writes both). A table or code
block also cites what the paragraph just before it cites (the paragraph that introduces it).
A figure is *sourced* when a number in a cited file equals it after rounding that number to
the figure's precision (``95.57`` gives ``95.6``; ``4.82`` gives ``about 5 s``; an integer
ending in zeros, ``300,000``, is rounded at its last non-zero digit; a shorter number must be
equal: ``84.6`` gives ``84.60``). Signs are ignored (``-0.17`` is ``0.17``).

A block with figures must cite its file. Looking figures up in *every* results file instead
would source nearly anything: the JSON files hold thousands of unrounded numbers, so a figure
of two decimals, let alone ``about 5 s``, is found somewhere by chance. (``--any-file`` shows
which file would match, to help find the one to cite.)

A figure quoted from a paper or from another system's publication is marked in its block:
``<!-- quoted: 86.50, 84.71, 526 s (UDPipe 1: Straka & Strakova 2017, Table 3) -->``. Each figure
listed must appear in the block and the marker must name its source; the figures listed are
then not looked up in ``results/``.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
README = ROOT / "README.md"


def documents() -> list[Path]:
    """The texts whose figures are checked: the README and the documentation's hand-written
    pages (``docs/``, the guide in ``docs/guide/``)."""
    return [README] + sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs" / "guide").glob("*.md"))


def all_text() -> str:
    """Every document, one after the other (blank lines between, so no block spans two)."""
    return "\n\n".join(p.read_text(encoding="utf-8") for p in documents())

TABLE_START = "<!-- results-table:"
TABLE_END = "<!-- results-table: end -->"
EXAMPLE_START = re.compile(r"^<!-- example: (?P<name>[\w.-]+) -->\s*$")
EXAMPLE_END = "<!-- example: end -->"

UNITS = ("tokens/s", "sentences/s", "words/s", "requests/s", "sent/s", "seconds", "second", "minutes",
         "hours", "ms", "min", "MiB", "GiB", "KiB", "MB", "GB", "KB", "h", "s")
_UNIT = "|".join(re.escape(u) for u in UNITS)
# A number: digits with optional thousands groups and decimals (or more dots: a version), then an
# attached % or x, or a space and a unit, or a range "-N" with a unit after it.
NUMBER = re.compile(
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)"
    r"(?:(?P<attached>%|x)(?![\w])|(?P<range>-\d+(?:\.\d+)?)? ?(?P<unit>" + _UNIT + r")(?![\w/]))?")
# What before a number makes it a setting, a bound or a version rather than a figure.
SETTING_BEFORE = re.compile(r"(?:=\s*|--[\w-]+\s+|\b(?:at most|below|up to|within|Python|version)\s+)$")
CITE = re.compile(r"results/[\w./-]+\.(?:md|json|txt)")
QUOTED = re.compile(r"<!--\s*quoted:\s*(?P<body>.*?)-->", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
INLINE_CODE = re.compile(r"`+[^`\n]*`+")

# Settings the rules above do not recognise: (figure, words around it in the README, the code
# constant that holds it as ``module:NAME``). They are not measurements but limits and defaults,
# so their source is the code: tests/test_readme_figures.py imports each constant and checks that
# the figure is its value (a figure with MB/MiB/KiB/GiB in powers of two). A measured figure
# never belongs here.
ALLOWED = [
    ("1 MiB", "(1 MiB)", "structkit.serve:MAX_BYTES"),
    ("100,000", "more than 100,000 words", "structkit.serve:MAX_WORDS"),
    ("1 MB", "about 1 MB of whole sentences", "structkit.io.blocks:BLOCK_BYTES"),
    ("1,000", "CoNLL-U over 1,000 words", "structkit.serve:MAX_SENTENCE_WORDS"),
    ("1,000", "of 1,000 words, with a warning", "structkit.serve:MAX_SENTENCE_WORDS"),
    ("20,000", "tokenising text 20,000", "structkit.serve:PIECE_CHARS"),
    ("16 KiB", "bodies over 16 KiB", "structkit.serve:BIG_BYTES"),
    ("1,000", "`--max-connections` (1,000", "structkit.serve:MAX_CONNECTIONS"),
    ("16 MB", "a line of a file 16 MB", "structkit.io.files:MAX_LINE_BYTES"),
    ("1 MB", "a config 1 MB", "structkit.config:MAX_CONFIG_BYTES"),
    ("256 MB", "256 MB (`STRUCTKIT_MAX_NBEST_BYTES`)", "structkit.io.nbest:MAX_NBEST_BYTES"),
    ("1 GiB", "stops at 1 GiB", "structkit.datasets.fetch:MAX_BYTES"),
    ("2,048", "label set over 2,048", "structkit.parse.labelled:MAX_LABELS"),
    ("64 MB", "its first 64 MB", "structkit.io.blocks:MAX_BLOCK_BYTES"),
    ("10,000", "request has 10,000 words", "structkit.serve:TIMEOUT_WORDS"),
]


def setting_value(fig: str) -> int:
    """The number a setting's figure stands for: '16 KiB' -> 16384, '1,000' -> 1000."""
    num, _, unit = fig.partition(" ")
    scale = {"": 1, "KiB": 1 << 10, "MB": 1 << 20, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
    return int(num.replace(",", "")) * scale


@dataclass
class Figure:
    text: str          # as written, e.g. "95.66", "11,000", "12 s"
    value: Decimal     # the number, unsigned, without separators
    line: int          # 1-based README line
    line_text: str

    @property
    def places(self) -> int:
        s = self.text_number
        return len(s.split(".", 1)[1]) if "." in s else 0

    @property
    def text_number(self) -> str:
        return NUMBER.match(self.text).group("num").replace(",", "")


@dataclass
class Block:
    kind: str                     # "paragraph", "table", "code", "heading"
    start: int                    # 1-based line of its first line
    lines: list[str]
    cites: set[str] = field(default_factory=set)
    quoted: dict[str, str] = field(default_factory=dict)     # figure -> source
    figures: list[Figure] = field(default_factory=list)


# ---- reading the README into blocks ---------------------------------------------------------

def blocks(text: str) -> list[Block]:
    """The README's blocks, without the generated table and the example outputs."""
    out: list[Block] = []
    lines = text.split("\n")
    cur: Block | None = None
    skip_until = None
    fence = None

    def close():
        nonlocal cur
        if cur is not None and any(l.strip() for l in cur.lines):
            out.append(cur)
        cur = None

    for i, line in enumerate(lines, 1):
        s = line.strip()
        if skip_until is not None:
            if s == skip_until:
                skip_until = None
            continue
        if fence is not None:
            cur.lines.append(line)
            if s.startswith(fence):
                fence = None
                close()
            continue
        if s.startswith(TABLE_START) and s != TABLE_END:
            close()
            skip_until = TABLE_END
            continue
        if EXAMPLE_START.match(s):
            close()
            skip_until = EXAMPLE_END
            continue
        if s.startswith("```"):
            close()
            fence = s[:3]
            cur = Block("code", i, [line])
            continue
        if not s:
            close()
            continue
        kind = "table" if s.startswith("|") else "heading" if s.startswith("#") else "paragraph"
        starts_item = bool(re.match(r"(?:[-*]|\d+\.)\s", s))
        if cur is None or cur.kind != kind or kind == "heading" or (kind == "paragraph" and starts_item):
            close()
            cur = Block(kind, i, [])
        cur.lines.append(line)
    close()
    for b in out:
        _annotate(b)
    # A table or code block also cites what the paragraph just before it cites.
    for prev, b in zip(out, out[1:]):
        if b.kind in ("table", "code") and prev.kind == "paragraph" and prev.start + len(prev.lines) <= b.start:
            b.cites |= prev.cites
    return out


def _prose(line: str, kind: str) -> str:
    """The part of a line whose numbers are figures, other text blanked out (same length, so
    that positions stay those of the line)."""
    if kind == "code":
        m = re.search(r"(?:^|\s)#(?!!)", line)
        if not m or line.lstrip().startswith("```"):
            return " " * len(line)
        line = " " * m.start() + line[m.start():]
    blank = lambda m: " " * len(m.group(0))
    line = COMMENT.sub(blank, line)
    if kind != "code":
        line = INLINE_CODE.sub(blank, line)
    return line


def _annotate(b: Block) -> None:
    text = "\n".join(b.lines)
    b.cites = set(CITE.findall(text))
    for m in QUOTED.finditer(INLINE_CODE.sub("", text) if b.kind != "code" else ""):   # not `<!-- ... -->` shown as code
        body = m.group("body").strip()
        src = re.search(r"\((.+)\)\s*$", body, re.S)
        figs = body[:src.start()] if src else body
        for f in (x.strip() for x in figs.split(",")):
            if f:
                b.quoted[f] = src.group(1).strip() if src else ""
    for k, line in enumerate(b.lines):
        b.figures.extend(extract(_prose(line, b.kind), b.start + k, line))


def extract(prose: str, line_no: int = 0, line_text: str | None = None) -> list[Figure]:
    """The figures of one line of prose (see the module docstring for what counts)."""
    line_text = prose if line_text is None else line_text
    found = []
    for m in NUMBER.finditer(prose):
        num, start, end = m.group("num"), m.start(), m.end()
        before = prose[:start]
        prev = prose[start - 1] if start else " "
        nxt = prose[end] if end < len(prose) else " "
        if prev.isalnum() or prev in "_^.\\$" or (prev == "," and start > 1 and prose[start - 2].isdigit()):
            continue                                  # r2.14, x10, 2^23, \$3.50: part of a name
        if not (m.group("attached") or m.group("unit")) and (nxt.isalpha() or nxt in "_^"):
            continue                                  # 4ERtask, 2nd
        if num.count(".") > 1:
            continue                                  # a version: 1.4.4
        if prev == "-" and start > 1 and prose[start - 2].isdigit():
            continue                                  # the second end of a range, taken with the first
        if SETTING_BEFORE.search(before):
            continue
        unit = m.group("attached") or (" " + m.group("unit") if m.group("unit") else "")
        figs = []
        if unit or "." in num or "," in num:
            figs.append(num + unit)
        if m.group("range") and unit:
            figs.append(m.group("range")[1:] + unit)
        for f in figs:
            if _allowed(f, line_text):
                continue
            found.append(Figure(f, Decimal(NUMBER.match(f).group("num").replace(",", "")), line_no, line_text))
    return found


def _allowed(fig: str, line: str) -> bool:
    return any(fig == f and ctx in line for f, ctx, _ in ALLOWED)


# ---- the numbers of results files -------------------------------------------------------------

RESULT_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def result_numbers(path: Path) -> set[Decimal]:
    """Every number written in a results file (unsigned; thousands separators dropped)."""
    out = set()
    for m in RESULT_NUMBER.finditer(path.read_text(errors="replace")):
        try:
            out.add(Decimal(m.group(0).replace(",", "")))
        except ArithmeticError:
            pass
    return out


def results_files(results: Path = RESULTS) -> dict[str, Path]:
    """results/-relative name ("results/bench.md") -> path, for every text file under results/."""
    return {"results/" + p.relative_to(results).as_posix(): p
            for p in sorted(results.rglob("*")) if p.is_file() and p.suffix in (".md", ".json", ".txt")}


def matches(fig: Figure, value: Decimal) -> bool:
    """Is the README's figure this results value, written at the figure's precision?"""
    target = fig.value
    places = fig.places
    if value.adjusted() > target.adjusted() + 1:   # no rounding brings it down that far (and a
        return False                              # hex digest read as 4e40 would overflow quantize)
    if places == 0 and "," in fig.text and target == target.to_integral_value():
        digits = fig.text_number.rstrip("0")
        zeros = len(fig.text_number) - len(digits)
        if zeros:
            q = Decimal(10) ** zeros
            return any((value / q).quantize(Decimal(1), rounding=r) * q == target
                       for r in (ROUND_HALF_UP, ROUND_HALF_EVEN))
    value_places = -value.as_tuple().exponent if value.as_tuple().exponent < 0 else 0
    if value_places <= places:
        return value == target
    q = Decimal(1).scaleb(-places)
    return any(value.quantize(q, rounding=r) == target for r in (ROUND_HALF_UP, ROUND_HALF_EVEN))


# ---- the check ------------------------------------------------------------------------------

@dataclass
class Finding:
    figure: Figure
    block: Block
    source: str | None      # "results/x.md", "quoted: ...", or None (unsourced)
    cited: bool             # found in a file its block cites (or quoted)


def _siblings(name: str, files: dict[str, Path]) -> list[str]:
    stem = name.rsplit(".", 1)[0]
    return [n for n in files if n.rsplit(".", 1)[0] == stem]


def check(text: str, results: Path = RESULTS, any_file: bool = False) -> tuple[list[Finding], list[str]]:
    """Every figure of the README text with its source, and the problems of its markers (a
    quoted figure not in its block, a quote without a source, a cited file that does not
    exist). ``any_file``: a block that cites nothing may match any results file (a hint for
    ``--all``, never the check)."""
    files = results_files(results)
    cache: dict[str, set[Decimal]] = {}

    def numbers(name):
        if name not in cache:
            cache[name] = result_numbers(files[name])
        return cache[name]

    findings, problems = [], []
    for b in blocks(text):
        texts = {f.text for f in b.figures} | {f.text_number for f in b.figures}
        for q, src in b.quoted.items():
            if q not in texts:
                problems.append(f"README.md:{b.start}: quoted figure {q!r} is not in its paragraph")
            if not src:
                problems.append(f"README.md:{b.start}: quoted figure {q!r} names no source")
        for name in sorted(b.cites):
            if name not in files:
                problems.append(f"README.md:{b.start}: cites {name}, which does not exist")
        cited = sorted({s for c in b.cites if c in files for s in _siblings(c, files)})
        for fig in b.figures:
            if fig.text in b.quoted or fig.text_number in b.quoted:
                findings.append(Finding(fig, b, "quoted: " + (b.quoted.get(fig.text) or b.quoted[fig.text_number]), True))
                continue
            src = next((n for n in cited if any(matches(fig, v) for v in numbers(n))), None)
            if src is None and any_file and not b.cites:
                src = next((n for n in files if any(matches(fig, v) for v in numbers(n))), None)
                findings.append(Finding(fig, b, src, False))
            else:
                findings.append(Finding(fig, b, src, src is not None))
    return findings, problems


def unsourced(text: str, results: Path = RESULTS) -> list[str]:
    """One line per figure without a source, and per bad quoted marker: empty when all is well."""
    findings, problems = check(text, results)
    return problems + [f"README.md:{f.figure.line}: {f.figure.text!r}"
                       + (f" (cites {', '.join(sorted(f.block.cites))})" if f.block.cites
                          else " (its block cites no results file)")
                       + f": {f.figure.line_text.strip()[:160]}"
                       for f in findings if f.source is None]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every figure with its source")
    ap.add_argument("--any-file", action="store_true",
                    help="with --all: for blocks that cite nothing, the results file that would match")
    ap.add_argument("--readme", type=Path, default=None, help="one file (default: the README and docs/)")
    args = ap.parse_args(argv)
    text = args.readme.read_text() if args.readme else all_text()
    if args.all:
        findings, problems = check(text, any_file=args.any_file)
        for f in findings:
            how = f.source or "UNSOURCED"
            if f.source and not f.cited:
                how = "UNSOURCED: cites no file; would match " + how
            print(f"README.md:{f.figure.line}: {f.figure.text:>12}  {how}")
        for p in problems:
            print(p)
    bad = unsourced(text)
    if not args.all:
        for line in bad:
            print(line)
    print(f"{len(bad)} unsourced figure(s) or bad marker(s)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
