"""CoNLL column files: one token per line, blank line between sentences.

Document markers (``-DOCSTART-`` lines, JNLPBA's ``###MEDLINE:`` lines) are sentence
boundaries and are not tokens. Files are streamed: sentences are yielded as they are read.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import IO, Iterable, Iterator, Sequence

from structkit.errors import UserError
from structkit.io.document import Sentence, cr_only_error, key_value  # noqa: F401 (read from here too)
from structkit.io.files import display_name, iter_lines, open_input

DOC_MARKERS = ("-DOCSTART-", "###MEDLINE:")
COLUMN_NAMES = ("word", "pos", "label", "-")

# The names of the built-in token attributes of the sequence models' feature templates
# (``structkit.sequence.templates`` documents them and reads them from here): a column named
# with ``--columns`` may not take one (``p`` is the POS column's own), so the column reader
# holds the list.
WORD_ATTRS = ("w", "lw", "pre1", "pre2", "pre3", "pre4", "suf1", "suf2", "suf3", "suf4",
              "cap", "allcap", "digit", "hyph", "shape",
              "lsuf1", "lsuf2", "lsuf3", "lsuf4", "lsuf5", "lsuf6", "case")
# Attributes read from a dictionary learnt on the training data (word -> labels).
LEXICON_ATTRS = ("amb",)
# Attributes read from the word-cluster table of pretrained vectors (``train --vectors``): the
# word's cluster at the table's level 1 (coarsest) to 4 (finest).
VECTOR_ATTRS = ("vc1", "vc2", "vc3", "vc4")
ATTRS = WORD_ATTRS + LEXICON_ATTRS + VECTOR_ATTRS + ("p", "bias")


@dataclass(frozen=True)
class Columns:
    """Which column holds the word, the POS tag and the label (None: not present); a name for
    every column (what feature templates call them); and, for a label kept as one key of a
    ``Key=Value|...`` column (CoNLL-U MISC), that key."""

    word: int = 0
    pos: int | None = None
    label: int | None = None
    names: tuple[str, ...] = field(default=(), compare=False)  # layouts compare by their roles
    label_key: str | None = None
    conllu: bool = False

    def header(self, n_columns: int) -> dict:
        """The layout as a model header stores it (with the input's column count)."""
        return {"word": self.word, "pos": self.pos, "label": self.label, "n_columns": n_columns,
                "names": list(self.names), "label_key": self.label_key, "conllu": self.conllu}

    @staticmethod
    def from_header(c: dict) -> tuple["Columns", int]:
        """The layout and column count :meth:`header` stored, checked (ValueError: out of range;
        a model loader turns it into its one-line error)."""
        columns = Columns(c["word"], c["pos"], c["label"], tuple(c.get("names", ())),
                          c.get("label_key"), bool(c.get("conllu", False)))
        n_cols = c["n_columns"]
        if type(n_cols) is not int or not 1 <= n_cols <= 10_000 or any(
                v is not None and (type(v) is not int or not 0 <= v < n_cols)
                for v in (columns.word, columns.pos, columns.label)):
            raise ValueError("column indices out of range")
        return columns, n_cols

    @staticmethod
    def default(n_columns: int, labelled: bool = True) -> "Columns":
        """First column the word; last the label (when ``labelled``); a middle one the POS."""
        if labelled:
            if n_columns < 2:
                return Columns(0, None, None)
            return Columns(0, 1 if n_columns >= 3 else None, n_columns - 1)
        return Columns(0, 1 if n_columns >= 2 else None, None)

    @staticmethod
    def parse(spec: str) -> "Columns":
        """Parse ``--columns``: a name per column, e.g. ``word,pos,-,label`` or
        ``word,pos,lemma,cluster,label``; word, pos and label have their roles, ``-`` is
        ignored, any other name is a column feature templates can read (``cluster[0]``)."""
        names = [s.strip() for s in spec.split(",")]
        names = [n.lower() if n.lower() in ("word", "pos", "label") else n for n in names]
        bad = [n for n in names if n != "-" and not _NAME.fullmatch(n)]
        if bad or "word" not in names:
            raise UserError(
                f"--columns: expected comma-separated column names (word, pos, label, - or a "
                f"name of your own such as lemma or cluster; with a word column), got {spec!r}")
        for n in names:
            if n != "-" and names.count(n) > 1:
                raise UserError(f"--columns: {n!r} named twice in {spec!r}")
            if n in ATTRS and n != "p":
                raise UserError(f"--columns: {n!r} is the name of a built-in feature attribute; "
                                f"call the column something else")
        get = lambda n: names.index(n) if n in names else None  # noqa: E731
        return Columns(names.index("word"), get("pos"), get("label"), tuple(names))

    def max_index(self) -> int:
        return max(i for i in (self.word, self.pos, self.label) if i is not None)

    def to_spec(self, n_columns: int) -> str:
        names = list(self.names[:n_columns]) + ["-"] * (n_columns - len(self.names))
        for n in ("word", "pos", "label"):
            i = getattr(self, n)
            if i is not None and i < n_columns:
                names[i] = n
        return ",".join(names)

    def index(self, name: str) -> int | None:
        """The column called ``name`` (``pos`` and ``word`` by their role too), or None."""
        if name in self.names:
            return self.names.index(name)
        return {"word": self.word, "pos": self.pos, "label": self.label}.get(name)

    def values(self, sentences: Sequence["Sentence"], attr: str) -> list[str | None] | None:
        """The values of column attribute ``attr`` over all tokens (``_`` is None), or None
        where the input has no such column: ``lemma`` reads the lemma column,
        ``feats.Number`` the key Number of the FEATS column."""
        base, _, key = attr.partition(".")
        i = self.index(base)
        if i is None:
            return None
        rows = (r for s in sentences for r in s.rows)
        if key:
            return [key_value(r[i], key) for r in rows]
        return [None if r[i] == "_" else r[i] for r in rows]

    def labels_of(self, rows: list[list[str]]) -> list[str | None]:
        """The label of each row (None where a keyed label is missing)."""
        assert self.label is not None
        if self.label_key is None:
            return [r[self.label] for r in rows]
        return [key_value(r[self.label], self.label_key) for r in rows]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_conll(path: str, stream: IO[str] | None = None, digest: "hashlib._Hash | None" = None,
               n_columns: int | None = None) -> Iterator[Sentence]:
    """Stream sentences from a CoNLL column file ('-' is stdin).

    Columns are split on tabs when a line has one, otherwise on whitespace. Every token row
    of a file must have the same number of columns (``n_columns`` when given). ``digest``,
    if given, is updated with each line (the model records a checksum of its training data).
    Raises UserError for malformed input, naming the file and line.
    """
    name = display_name(path)
    if stream is None:
        with open_input(path) as f:
            yield from read_conll(path, f, digest, n_columns)
        return
    rows: list[list[str]] = []
    first = 0
    seen_any = False
    expected = n_columns
    for lineno, line in iter_lines(path, stream):
        if digest is not None:
            digest.update(line.encode("utf-8"))
            digest.update(b"\n")
        stripped = line.strip()
        if not stripped or stripped.startswith(DOC_MARKERS):
            if rows:
                seen_any = True
                yield Sentence.from_rows(rows, first)
                rows = []
            continue
        if "\r" in line:
            raise cr_only_error(name, lineno)
        cols = line.split("\t") if "\t" in line else line.split()
        cols = [c.strip() for c in cols]
        if any(c == "" for c in cols):
            raise UserError("empty column (two tabs in a row, or a tab at the end of the line)",
                            name, lineno)
        if expected is None:
            expected = len(cols)
        elif len(cols) != expected:
            raise UserError(f"expected {expected} columns, found {len(cols)}", name, lineno)
        if not rows:
            first = lineno
        rows.append(cols)
    if rows:
        seen_any = True
        yield Sentence.from_rows(rows, first)
    if not seen_any:
        raise UserError("empty file: no sentences found", name)


def read_text(path: str, stream: IO[str] | None = None) -> Iterator[Sentence]:
    """Raw text: one sentence per line, tokens separated by whitespace; blank lines skipped."""
    name = display_name(path)
    if stream is None:
        with open_input(path) as f:
            yield from read_text(path, f)
        return
    seen_any = False
    for lineno, line in iter_lines(path, stream):
        toks = line.split()
        if toks:
            seen_any = True
            yield Sentence.from_rows([[t] for t in toks], lineno)
    if not seen_any:
        raise UserError("empty file: no sentences found", name)


def write_conll(sentences: Iterable[Sentence], predictions: Iterable[Sequence[str]],
                out: IO[str], sep: str = " ") -> None:
    """Write each input row with its predicted label appended as a new last column."""
    for sent, pred in zip(sentences, predictions):
        for cols, label in zip(sent.rows, pred):
            # A tab-separated input may have a column containing spaces ("New York");
            # joined with spaces it would re-read as more columns (and fail eval). Such a row
            # is written with tabs, which read_conll splits on when a line has one.
            s = "\t" if any(c.split() != [c] for c in cols) else sep
            out.write(s.join(cols))
            out.write(s)
            out.write(label)
            out.write("\n")
        out.write("\n")


