"""The document: sentences of surface tokens and syntactic words, and the one CoNLL-U reader.

``read_conllu`` checks a CoNLL-U (or CoNLL-X) file as UD defines it and yields each sentence as a
:class:`Sentence`. A sentence read so holds its lines as read (comments, multiword-token range
lines, empty nodes) with the ten columns of each word row (``rows``, ``lines``, ``word_at``):
the commands that fill a column (taggers, the parser, the morphological analyser, the pipeline)
work on those, through :meth:`Sentence.set_columns`, and write the lines back, so that their
output differs from the input only in what they predict. The same sentence seen as objects
(``tokens``, ``words``, ``comments``, ``empty_nodes``, built when first asked for) is the Python
API's ``structkit.Doc``; from then on those objects are the sentence, edits to them included,
and its lines are written from them (:meth:`Sentence.to_conllu`). Either way every line of a
UD file comes back exactly.

A missing value (``_`` in the file) is None on the objects (``head`` is an int, or None), and
None is written back as ``_``. ``Doc.text`` is the sentences' ``# text`` joined as the file's
``SpaceAfter=No`` and ``# newpar``/``# newdoc`` say (or the raw text a pipeline read, when
given), and each token's ``start``/``end`` are offsets into it: ``doc.text[tok.start:tok.end] ==
tok.form``. Margins are the ``...Margin=`` keys of MISC that ``--scores`` writes (``Margin`` of a
tagger, ``TokMargin``/``SentMargin`` of the tokenizer), as floats.
"""
from __future__ import annotations

import gc
import hashlib
import io
import re
from contextlib import contextmanager
from typing import IO, Iterable, Iterator, Sequence

from structkit.errors import UserError
from structkit.io.files import display_name, iter_lines, open_input
from structkit.rendering import render_html, sentence_html, view_of_sentence

__all__ = ["Doc", "Sentence", "Token", "Word", "EmptyNode", "read_conllu", "surface_text", "new_sentence",
           "write_conllu"]

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")

_WORD = re.compile(r"[1-9][0-9]*")
_RANGE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_EMPTY = re.compile(r"([0-9]+)\.([1-9][0-9]*)")
_HEAD = re.compile(r"-?[0-9]+")


def text_bytes(text: object, what: str = "text") -> bytes:
    """``text`` as UTF-8: a UserError in one line when it is not a str, or holds a lone surrogate
    (``"\\ud800"``: no character, and no file can hold it)."""
    if not isinstance(text, str):
        raise UserError(f"expected {what} as a str, got {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UserError(f"{what} is not Unicode text: a lone surrogate (U+{ord(text[e.start]):04X}) at "
                        f"character {e.start + 1}") from None


def key_value(field: str, key: str) -> str | None:
    """The value of ``key`` in a ``K=V|K=V`` column (CoNLL-U FEATS, MISC), or None."""
    if field == "_":
        return None
    for item in field.split("|"):
        k, sep, v = item.partition("=")
        if sep and k == key:
            return v
    return None


def cr_only_error(name: str, lineno: int) -> UserError:
    """A carriage return inside a line: the file ends its lines with CR alone (classic Mac),
    which made a whole file one line ("found 6837 columns")."""
    return UserError("line endings are CR only (a carriage return inside a line); convert with "
                     "`tr '\\r' '\\n' < FILE > NEW` or `dos2unix -c mac FILE`", name, lineno)


def _opt(value: str) -> str | None:
    return None if value == "_" else value


def _col(value: object, what: str) -> str:
    """A value as a CoNLL-U column: None is '_'; a tab or line break would break the row."""
    if value is None:
        return "_"
    text = str(value)
    if not text or "\t" in text or "\n" in text or "\r" in text:
        raise UserError(f"to_conllu: {what} {text!r} cannot be written as a CoNLL-U column "
                        "(empty, or a tab or line break in it)")
    return text


def _pairs(field: str | None) -> dict[str, str]:
    """A FEATS or MISC column as a dict (``Key=Value|Key=Value``; a bare key maps to '')."""
    out: dict[str, str] = {}
    if field:
        for item in field.split("|"):
            key, _, value = item.partition("=")
            out[key] = value
    return out


def _margins(misc: str | None) -> dict[str, float]:
    """The ``...Margin=number`` keys of a MISC column as floats (NaN kept as NaN)."""
    out = {}
    for key, value in _pairs(misc).items():
        if key.endswith("Margin"):
            try:
                out[key] = float(value)
            except ValueError:
                continue
    return out


class Word:
    """A syntactic word: the ten CoNLL-U columns (``id`` 1-based in its sentence; ``head`` an
    int, 0 for the root, None when not parsed; other missing values None)."""

    __slots__ = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps",
                 "misc", "token")

    def __init__(self, id: int, form: str, lemma: str | None = None, upos: str | None = None,
                 xpos: str | None = None, feats: str | None = None, head: int | None = None,
                 deprel: str | None = None, deps: str | None = None, misc: str | None = None):
        self.id, self.form, self.lemma, self.upos, self.xpos = id, form, lemma, upos, xpos
        self.feats, self.head, self.deprel, self.deps, self.misc = feats, head, deprel, deps, misc
        self.token: Token | None = None   # the surface token holding this word

    @classmethod
    def from_columns(cls, cols: list[str]) -> "Word":
        """The word of a checked CoNLL-U word row (a HEAD that is not an integer is None)."""
        head = cols[6]
        return cls(int(cols[0]), cols[1], _opt(cols[2]), _opt(cols[3]), _opt(cols[4]), _opt(cols[5]),
                   int(head) if _HEAD.fullmatch(head) else None, _opt(cols[7]), _opt(cols[8]),
                   _opt(cols[9]))

    def set_column(self, c: int, value: str) -> None:
        """Column ``c`` (0-based, 1-9) set from its CoNLL-U text."""
        if c == 6:
            self.head = int(value) if _HEAD.fullmatch(value) else None
        elif c == 1:
            self.form = value
        else:
            setattr(self, COLUMNS[c], _opt(value))

    @property
    def feats_dict(self) -> dict[str, str]:
        """FEATS as a dict (``{"Number": "Sing"}``)."""
        return _pairs(self.feats)

    @property
    def misc_dict(self) -> dict[str, str]:
        return _pairs(self.misc)

    @property
    def margins(self) -> dict[str, float]:
        """The margins ``--scores`` wrote in MISC (``{"Margin": 2.5}``); empty when none."""
        return _margins(self.misc)

    @property
    def margin(self) -> float | None:
        """The tagger's ``Margin=`` of this word, or None."""
        return self.margins.get("Margin")

    def columns(self) -> list[str]:
        return [str(self.id), _col(self.form, "FORM"), _col(self.lemma, "LEMMA"),
                _col(self.upos, "UPOS"), _col(self.xpos, "XPOS"), _col(self.feats, "FEATS"),
                _col(self.head, "HEAD"), _col(self.deprel, "DEPREL"), _col(self.deps, "DEPS"),
                _col(self.misc, "MISC")]

    def __repr__(self) -> str:
        return (f"Word({self.id}, {self.form!r}, upos={self.upos!r}, head={self.head!r}, "
                f"deprel={self.deprel!r})")


class EmptyNode:
    """An empty node of the enhanced graph (``5.1``): kept so that a file writes back whole;
    not a word of the basic tree. ``columns`` are its ten columns as read."""

    __slots__ = ("id", "columns")

    def __init__(self, id: str, columns: list[str]):
        self.id, self.columns = id, columns

    @property
    def form(self) -> str:
        return self.columns[1]

    def __repr__(self) -> str:
        return f"EmptyNode({self.id!r}, {self.form!r})"


class Token:
    """A surface token: ``form`` as in the text, ``start``/``end`` its characters in
    ``doc.text`` (None when it could not be found there), and its syntactic ``words`` (several
    for a multiword token such as ``don't`` -> ``do`` ``n't``)."""

    __slots__ = ("form", "start", "end", "words", "range_columns")

    def __init__(self, form: str, words: list[Word], start: int | None = None,
                 end: int | None = None, range_columns: list[str] | None = None):
        self.form, self.words, self.start, self.end = form, words, start, end
        # a multiword token's range line (ID FORM ... MISC) as read; None for a one-word token
        self.range_columns = range_columns
        for w in words:
            w.token = self

    @property
    def is_multiword(self) -> bool:
        return len(self.words) > 1 or self.range_columns is not None

    @property
    def id(self) -> tuple[int, int]:
        """The IDs of its first and last word (equal for a one-word token)."""
        return (self.words[0].id, self.words[-1].id)

    @property
    def misc(self) -> str | None:
        """MISC of the range line for a multiword token, of its word otherwise."""
        if self.range_columns is not None:
            return _opt(self.range_columns[9])
        return self.words[0].misc

    @property
    def space_after(self) -> bool:
        return _pairs(self.misc).get("SpaceAfter") != "No"

    @property
    def margins(self) -> dict[str, float]:
        """The tokenizer's margins (``TokMargin``, ``SentMargin``) from MISC; empty when none."""
        return _margins(self.misc)

    def range_line(self) -> str:
        cols = list(self.range_columns) if self.range_columns is not None else ["_"] * 10
        cols[0] = f"{self.words[0].id}-{self.words[-1].id}"
        cols[1] = _col(self.form, "FORM")
        return "\t".join(cols)

    def __repr__(self) -> str:
        return f"Token({self.form!r}, {self.start}, {self.end}, words={[w.form for w in self.words]})"


def _built(name: str, doc: str) -> property:
    """A sentence's list ``name`` (tokens, comments, empty nodes), its objects built from its
    lines first (``Sentence._materialize``); setting it builds them too, then replaces it."""
    def get(self):
        self._materialize()
        return getattr(self, name)

    def put(self, value) -> None:
        self._materialize()
        setattr(self, name, value)

    return property(get, put, doc=doc)


def _column(k: int, doc: str) -> property:
    """A read-only property: column ``k`` of each of a sentence's rows ('_' as written)."""
    return property(lambda self: [r[k] for r in self.rows], doc=doc)


class Sentence:
    """A sentence: its comment lines (``# ...``, verbatim), surface ``tokens``, syntactic
    ``words``, ``empty_nodes``, and ``start``/``end`` in ``doc.text``.

    A sentence read from a file (``read_conllu``) is held as its lines until its objects are
    asked for: ``rows`` (the ten columns of each word), ``lines`` (every line, in order),
    ``word_at`` (the index in ``lines`` of each word row) and ``first_line`` (the file line of
    its first line) are what the commands read, and :meth:`set_columns` what they change.

    A sentence of a CoNLL column file (``structkit.io.conll.read_conll``, :meth:`from_rows`)
    is held as its token rows alone, with any number of columns: its ``lines`` and ``word_at``
    are None (what tells it from CoNLL-U), ``first_line`` is the line of its first row, and it
    has no CoNLL-U objects (tokens, words).

    The parser reads a sentence through its columns, lists over ``rows`` with one entry a word:
    ``forms``, ``lemmas``, ``upos``, ``xpos``, ``feats``, ``deprels`` (the text, '_' as
    written), ``heads`` (ints, or None) and ``multiword``; a CoNLL-X or `word POS` file's
    sentence (``structkit.io.conllx.read_conllx``) is held as the ten-column lines it writes,
    its rows tuples (which the garbage collector need not follow: a treebank is many rows),
    each made a list when :meth:`set_columns` changes it."""

    __slots__ = ("_tokens", "_comments", "_empty_nodes", "_layout", "_rows", "_lines", "_word_at",
                 "first_line", "start", "end")

    def __init__(self, tokens: list[Token] | None = None, comments: list[str] | None = None,
                 empty_nodes: list[tuple[int, EmptyNode]] | None = None,
                 start: int | None = None, end: int | None = None):
        self._tokens: list[Token] | None = list(tokens or [])
        self._comments: list[str] | None = list(comments or [])
        # (k, node): the node comes after word k (0: before the first word)
        self._empty_nodes: list[tuple[int, EmptyNode]] | None = list(empty_nodes or [])
        self._layout: list[tuple[str, object]] | None = None  # the lines' order as read
        self._rows: list[list[str]] | None = None
        self._lines: list[str] | None = None
        self._word_at: list[int] | None = None
        self.first_line: int | None = None
        self.start, self.end = start, end

    @classmethod
    def from_lines(cls, rows: list[list[str]], lines: list[str], word_at: list[int],
                   first_line: int = 1) -> "Sentence":
        """A sentence held as its lines (checked as ``read_conllu`` checks them): ``rows[k]`` is
        the ten columns of ``lines[word_at[k]]``."""
        s = cls.__new__(cls)
        s._tokens = s._comments = s._empty_nodes = s._layout = None
        s._rows, s._lines, s._word_at, s.first_line = rows, lines, word_at, first_line
        s.start = s.end = None
        return s

    @classmethod
    def from_rows(cls, rows: list[list[str]], first_line: int = 1) -> "Sentence":
        """A sentence of a CoNLL column file: ``rows`` its token rows, ``first_line`` the line
        of the first."""
        s = cls.__new__(cls)
        s._tokens = s._comments = s._empty_nodes = s._layout = s._lines = s._word_at = None
        s._rows, s.first_line = rows, first_line
        s.start = s.end = None
        return s

    # -- as lines: what the commands read and change
    @property
    def held_as_lines(self) -> bool:
        return self._lines is not None

    @property
    def rows(self) -> list[list[str]]:
        """The ten CoNLL-U columns of each word (a copy, for a sentence held as objects): a list,
        or a tuple until changed (``read_conllx``'s); change them with :meth:`set_columns`."""
        if self._rows is not None:
            return self._rows
        return [w.columns() for w in self.words]

    @property
    def lines(self) -> list[str] | None:
        """Every line of the sentence, in order (without the blank line after it); None for a
        sentence of a column file."""
        if self._lines is not None or self._rows is not None:
            return self._lines
        return self._object_lines()

    @property
    def word_at(self) -> list[int] | None:
        if self._word_at is not None or self._rows is not None:
            return self._word_at
        return [i for i, line in enumerate(self._object_lines())
                if _WORD.fullmatch(line.split("\t", 1)[0])]

    def line_of(self, k: int) -> int:
        """The line number of word ``k`` (0-based) in the file read (its first line's for a
        sentence that was not read from a file)."""
        word_at = self.word_at
        return (self.first_line or 0) + (word_at[k] if word_at is not None else k)

    def set_columns(self, k: int, values: dict[int, str]) -> None:
        """Set columns of word ``k`` (0-based) from their CoNLL-U text: ``{3: "NOUN"}``."""
        if self._rows is not None:
            row = self._rows[k]
            if row.__class__ is tuple:   # (read_conllx's rows: a list once changed)
                row = self._rows[k] = list(row)
            for c, v in values.items():
                row[c] = v
            if self._lines is not None:
                self._lines[self._word_at[k]] = "\t".join(row)  # type: ignore[index]
            return
        w = self.words[k]
        for c, v in values.items():
            w.set_column(c, v)

    def fill_columns(self, values: dict[int, Sequence[str]]) -> None:
        """Set columns of every word, one list a column with a value a word, as CoNLL-U text:
        ``{6: heads, 7: deprels}`` (:meth:`set_columns` sets one word's; a tuple row stays a
        tuple)."""
        n = len(self)
        for c, col in values.items():
            if len(col) != n:
                raise ValueError(f"fill_columns: {len(col)} values of column {c + 1} for {n} words")
            if "" in col:   # what no CoNLL-U column holds (a sentence held as objects refuses it too)
                raise ValueError(f"fill_columns: an empty value of column {c + 1} (word {list(col).index('') + 1})")
        rows = self._rows
        if rows is None:
            for k, w in enumerate(self.words):
                for c, col in values.items():
                    w.set_column(c, col[k])
            return
        items = values.items()
        for k, row in enumerate(rows):
            if row.__class__ is tuple:
                r = list(row)
                for c, col in items:
                    r[c] = col[k]
                rows[k] = tuple(r)  # type: ignore[call-overload]
            else:
                for c, col in items:
                    row[c] = col[k]
        if self._lines is not None:
            lines = self._lines
            for at, row in zip(self._word_at, rows):  # type: ignore[arg-type]
                lines[at] = "\t".join(row)

    def copy(self) -> "Sentence":
        """A sentence of the same lines (or rows) whose columns change apart from this one's
        (held as lines; a sentence held as objects is copied as the lines they write)."""
        rows = [list(r) for r in self.rows]
        lines = self.lines
        if lines is None:
            return Sentence.from_rows(rows, self.first_line)  # type: ignore[arg-type]
        return Sentence.from_lines(rows, list(lines), list(self.word_at), self.first_line)  # type: ignore[arg-type]

    # -- columns: what the parser and the evaluations read, from the rows ('_' as written)
    forms = _column(1, "FORM of each word: ``[w.form for w in sent.words]``, read from the rows.")
    lemmas = _column(2, "LEMMA of each word, read from the rows.")
    upos = _column(3, "UPOS of each word, read from the rows.")
    xpos = _column(4, "XPOS of each word, read from the rows.")
    feats = _column(5, "FEATS of each word, read from the rows.")
    deprels = _column(7, "DEPREL of each word, read from the rows.")

    @property
    def heads(self) -> list[int] | None:
        """HEAD of each word as an int (0: the root), or None when every HEAD is '_' (not
        parsed). The readers of trees (``structkit.io.conllu.read_trees``, ``checked_tree``,
        ``structkit.io.conllx.read_conllx``) check that the column is one or the other; any
        other '_' or text is a ValueError here."""
        col = [r[6] for r in self.rows]
        if col.count("_") == len(col):
            return None
        return [int(h) for h in col]

    @property
    def multiword(self) -> list[tuple[int, int, str]]:
        """(first word, last word, FORM) of each multiword token, from its range line."""
        if self._lines is not None:
            out = []
            for line in self._lines:
                if not line.startswith("#") and (m := _RANGE.match(line)) is not None and \
                        line[m.end()] == "\t":
                    out.append((int(m.group(1)), int(m.group(2)), line.split("\t", 2)[1]))
            return out
        if self._rows is not None:
            return []
        return [(t.words[0].id, t.words[-1].id, t.form) for t in self.tokens if t.is_multiword]

    # -- as objects: the Python API's view
    def _materialize(self) -> None:
        """Build the objects from the lines (once); from then on the objects are the sentence."""
        if self._lines is None:
            if self._rows is not None:
                raise ValueError("a sentence of a column file has rows, not CoNLL-U tokens and words")
            return
        comments: list[str] = []
        tokens: list[Token] = []
        empties: list[tuple[int, EmptyNode]] = []
        layout: list[tuple[str, object]] = []
        pending: tuple[int, list[str]] | None = None   # an open range: its last word, its columns
        group: list[Word] = []
        n = 0
        for line in self._lines:
            if line.startswith("#"):
                comments.append(line)
                layout.append(("comment", line))
                continue
            cols = line.split("\t")
            tid = cols[0]
            if _WORD.fullmatch(tid):
                w = Word.from_columns(cols)
                n = w.id
                layout.append(("word", w))
                if pending is not None:
                    group.append(w)
                    if n == pending[0]:
                        tokens.append(Token(pending[1][1], group, range_columns=pending[1]))
                        layout[layout.index(("range", pending))] = ("range", tokens[-1])
                        pending, group = None, []
                else:
                    tokens.append(Token(w.form, [w]))
            elif (m := _RANGE.fullmatch(tid)) is not None:
                pending = (int(m.group(2)), cols)
                layout.append(("range", pending))
            else:
                node = EmptyNode(tid, cols)
                empties.append((n, node))
                layout.append(("empty", node))
        self._tokens, self._comments, self._empty_nodes, self._layout = tokens, comments, empties, layout
        self._rows = self._lines = self._word_at = None

    # the objects of a sentence read from a file are built when first asked for
    tokens = _built("_tokens", "Its surface tokens.")
    comments = _built("_comments", "Its comment lines (``# ...``), verbatim.")
    empty_nodes = _built("_empty_nodes", "Its empty nodes: (k, node), the node after word k (0: first).")

    @property
    def words(self) -> list[Word]:
        return [w for t in self.tokens for w in t.words]

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        return sum(len(t.words) for t in self.tokens)

    def _comment_lines(self) -> list[str]:
        if self._lines is not None:   # read without building the objects
            return [line for line in self._lines if line.startswith("#")]
        return self._comments  # type: ignore[return-value]

    def comment(self, key: str) -> str | None:
        """The value of a ``# key = value`` comment (``sent.comment("sent_id")``), or None."""
        for line in self._comment_lines():
            k, sep, value = line[1:].partition("=")
            if k.strip() == key and sep:
                return value.strip()
        return None

    @property
    def sent_id(self) -> str | None:
        return self.comment("sent_id")

    @property
    def text(self) -> str:
        """``# text`` if the sentence has one, else what its tokens spell."""
        t = self.comment("text")
        return t if t is not None else self.surface_text()

    def surface_text(self) -> str:
        if self._lines is not None:
            return surface_text(self._lines)
        parts: list[str] = []
        for tok in self.tokens:
            parts.append(tok.form)
            if tok.space_after:
                parts.append(" ")
        return "".join(parts).rstrip(" ")

    def _object_lines(self) -> list[str]:
        words = self.words
        layout = self._layout
        if layout is not None and not _layout_fits(layout, self):
            layout = None
        if layout is None:
            layout = [("comment", c) for c in self._comments or ()]
            empties = sorted(self._empty_nodes or (), key=lambda kn: kn[0])
            e = 0
            while e < len(empties) and empties[e][0] == 0:
                layout.append(("empty", empties[e][1]))
                e += 1
            for tok in self._tokens or ():
                if tok.is_multiword:
                    layout.append(("range", tok))
                for w in tok.words:
                    layout.append(("word", w))
                    while e < len(empties) and empties[e][0] == w.id:
                        layout.append(("empty", empties[e][1]))
                        e += 1
        for k, w in enumerate(words, 1):
            if w.id != k:
                raise UserError(f"to_conllu: word {k} of a sentence has id {w.id} (ids run 1..n)")
        out = []
        for kind, item in layout:
            if kind == "comment":
                out.append(item)  # type: ignore[arg-type]
            elif kind == "range":
                out.append(item.range_line())  # type: ignore[union-attr]
            elif kind == "word":
                out.append("\t".join(item.columns()))  # type: ignore[union-attr]
            else:
                out.append("\t".join(item.columns))  # type: ignore[union-attr]
        return out

    def to_conllu(self) -> str:
        """The sentence as CoNLL-U lines, a blank line after (:func:`write_conllu`)."""
        buf = io.StringIO()
        write_conllu([self], buf)
        return buf.getvalue()

    def __repr__(self) -> str:
        return f"Sentence({self.text!r})"

    def _repr_html_(self) -> str:
        return sentence_html(view_of_sentence(self))


def _layout_fits(layout: list[tuple[str, object]], sent: Sentence) -> bool:
    """Whether the order of lines recorded when reading still holds exactly the sentence's
    comments, range lines, words and empty nodes (nothing added, removed or reordered)."""
    if [x for k, x in layout if k == "comment"] != sent._comments:
        return False
    if [id(x) for k, x in layout if k == "word"] != [id(w) for w in sent.words]:
        return False
    ranges = [id(x) for k, x in layout if k == "range"]
    if ranges != [id(t) for t in sent.tokens if t.is_multiword]:
        return False
    return [id(x) for k, x in layout if k == "empty"] == [id(n) for _, n in sent._empty_nodes or ()]


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused within the block (unless it was already off). For
    code that builds many objects and keeps them all (a Doc's tokens and words, which point at
    each other): each collection the allocations set off walks every object alive, and made
    three quarters of the time of making the Docs of 2,000 short texts (0.64 s against 0.17 s).
    Nothing built there is garbage, so pausing frees no less."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Doc:
    """A document: ``sents``, and ``text``, into which tokens' offsets point."""

    def __init__(self, sents: list[Sentence], text: str | None = None):
        self.sents = list(sents)
        if text is not None and not isinstance(text, str):
            raise UserError(f"Doc: expected text as a str, got {type(text).__name__}")
        with gc_paused():   # the sentences' objects are built here (offsets): all of them kept
            if text is None:
                text = _join_text(self.sents)
            else:
                _align(self.sents, text)
        self.text = text

    # -- reading and writing
    @classmethod
    def from_conllu(cls, conllu: str, text: str | None = None, check_text: bool = False,
                    name: str = "<conllu>") -> "Doc":
        """The document a CoNLL-U string holds. ``text``: the raw text it was made from (token
        offsets then point into it; its tokens must appear in it in order). A malformed line is
        a UserError naming ``name`` and the line."""
        text_bytes(conllu, "CoNLL-U")
        return cls(list(read_conllu(name, conllu.split("\n"), None, check_text)), text)

    def to_conllu(self) -> str:
        """The document as CoNLL-U: each sentence's lines and a blank line after it
        (:func:`write_conllu`)."""
        buf = io.StringIO()
        write_conllu(self.sents, buf)
        return buf.getvalue()

    # -- convenience
    @property
    def words(self) -> list[Word]:
        return [w for s in self.sents for w in s.words]

    @property
    def tokens(self) -> list[Token]:
        return [t for s in self.sents for t in s.tokens]

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sents)

    def __len__(self) -> int:
        return len(self.sents)

    def __repr__(self) -> str:
        n = sum(len(s) for s in self.sents)
        return f"<Doc: {len(self.sents)} sentences, {n} words>"

    def _repr_html_(self) -> str:
        """What a notebook shows: the page's picture of each sentence (``structkit.render``), of
        the first ``REPR_SENTENCES`` of a long document (a treebank would be megabytes)."""

        return render_html(self, limit=REPR_SENTENCES)


REPR_SENTENCES = 100   # the most sentences a notebook draws (Doc._repr_html_)


def _token_offsets(sent: Sentence, text: str, pos: int) -> int:
    """Set each token's offsets by finding its form in ``text`` from ``pos`` on (whitespace
    between tokens skipped); returns the position after the last token found."""
    for tok in sent.tokens:
        i = pos
        while i < len(text) and text[i].isspace() and not tok.form.startswith(text[i]):
            i += 1
        if text.startswith(tok.form, i):
            tok.start, tok.end = i, i + len(tok.form)
            pos = tok.end
        else:
            j = text.find(tok.form, pos)
            if j < 0:
                tok.start = tok.end = None
                continue
            tok.start, tok.end = j, j + len(tok.form)
            pos = tok.end
    return pos


def _join_text(sents: list[Sentence]) -> str:
    """The document text of sentences read from CoNLL-U: each one's ``# text``, then a blank
    line before a new paragraph or document, a space after a sentence whose last token has
    space after it, nothing otherwise."""
    parts: list[str] = []
    pos = 0
    for k, s in enumerate(sents):
        if k:
            if s.comment("newpar") is not None or s.comment("newdoc") is not None or any(
                    c.startswith(("# newpar", "# newdoc")) for c in s.comments):
                sep = "\n\n"
            elif sents[k - 1].tokens and not sents[k - 1].tokens[-1].space_after:
                sep = ""
            else:
                sep = " "
            parts.append(sep)
            pos += len(sep)
        t = s.text
        s.start = pos
        _token_offsets(s, t, 0)
        for tok in s.tokens:
            if tok.start is not None:
                tok.start += pos
                tok.end += pos  # type: ignore[operator]
        parts.append(t)
        pos += len(t)
        s.end = pos
    return "".join(parts)


def _align(sents: list[Sentence], text: str) -> None:
    """Offsets of the sentences' tokens in the raw ``text`` they were made from."""
    pos = 0
    for s in sents:
        end = _token_offsets(s, text, pos)
        found = [t for t in s.tokens if t.start is not None]
        s.start = found[0].start if found else None
        s.end = found[-1].end if found else None
        pos = end


# ---- the CoNLL-U reader -------------------------------------------------------------------------
def surface_text(lines: Iterable[str]) -> str:
    """The text a sentence's lines spell: surface tokens (a range's form in place of its words)
    joined by a space unless MISC says ``SpaceAfter=No``."""
    out: list[str] = []
    skip_to = 0
    for line in lines:
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        m = _RANGE.fullmatch(cols[0])
        if m:
            skip_to = int(m.group(2))
        elif _WORD.fullmatch(cols[0]):
            if int(cols[0]) <= skip_to:
                continue
        else:
            continue  # an empty node is not in the text
        out.append(cols[1])
        if key_value(cols[9], "SpaceAfter") != "No":
            out.append(" ")
    return "".join(out).rstrip(" ")


def _checked(name: str, lines: list[str], numbers: list[int], check_text: bool) -> Sentence:
    """The sentence of one block of lines, checked as the UD format says (what a command that
    fills a column depends on): ten tab-separated columns; comments before the first row; word
    IDs 1..n in order with a FORM; ranges that start at the next word, cover two words or more
    and end inside the sentence; empty nodes in their place (``5.1`` after word 5); with
    ``check_text``, a ``# text`` that the tokens spell. A UserError names the file and line."""
    rows: list[list[str]] = []
    word_at: list[int] = []
    range_end = range_line = 0    # the last word a range seen so far covers, and its line
    next_empty = 1                # the next empty-node index after the current word
    for i, (line, lineno) in enumerate(zip(lines, numbers)):
        if line.startswith("#"):
            if rows:
                raise UserError("a comment line inside a sentence (comments go before its first "
                                "token row)", name, lineno)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            if "\r" in line:
                raise cr_only_error(name, lineno)
            raise UserError(f"expected 10 tab-separated columns (CoNLL-U), found {len(cols)}",
                            name, lineno)
        tid, n = cols[0], len(rows)
        if _WORD.fullmatch(tid):
            if int(tid) != n + 1:
                raise UserError(f"word ID {tid} out of sequence: expected {n + 1}", name, lineno)
            if not cols[1]:
                raise UserError(f"word {tid} has an empty FORM", name, lineno)
            word_at.append(i)
            rows.append(cols)
            next_empty = 1
        elif (m := _RANGE.fullmatch(tid)) is not None:
            first, last = int(m.group(1)), int(m.group(2))
            if first != n + 1 or last <= first:
                raise UserError(f"multiword token {tid} must start at the next word ID {n + 1} "
                                f"and cover at least two words", name, lineno)
            range_end, range_line = last, lineno
        elif (m := _EMPTY.fullmatch(tid)) is not None:
            after, k = int(m.group(1)), int(m.group(2))
            if after != n or k != next_empty:
                where = f"after word {n}" if n else "before the first word"
                raise UserError(f"empty node {tid} out of place: it comes {where}, where the next "
                                f"empty node is {n}.{next_empty}", name, lineno)
            next_empty += 1
        else:
            raise UserError(f"ID {tid!r} is not a word ID, a range (3-4) or an empty node (5.1)",
                            name, lineno)
    n = len(rows)
    if not n:
        raise UserError("a sentence with comments but no words", name, numbers[0])
    if range_end > n:
        raise UserError(f"multiword token ends at word {range_end}, past the sentence's "
                        f"last word {n}", name, range_line)
    if check_text:
        for line, lineno in zip(lines, numbers):
            if line.startswith("# text = ") or line.rstrip() == "# text =":
                want = line[len("# text = "):].strip()
                got = surface_text(lines)
                if got != want:
                    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b),
                             min(len(got), len(want)))
                    raise UserError(f"# text does not match the tokens: it has "
                                    f"{want[i:i + 20]!r} where the tokens spell "
                                    f"{got[i:i + 20]!r} (character {i + 1})", name, lineno)
    # first_line is where the sentence's lines begin (its first comment, if any), so that
    # Sentence.line_of(k) = first_line + word_at[k] is word k's line
    return Sentence.from_lines(rows, lines, word_at, numbers[0])


def read_conllu(path: str, stream: IO | Iterable | None = None,
                digest: "hashlib._Hash | None" = None, check_text: bool = True) -> Iterator[Sentence]:
    """Stream the sentences of a CoNLL-U (or CoNLL-X) file, each checked (``_checked``) and held
    as its lines.

    Malformed input is a UserError naming the file and line. ``digest``, if given, is updated
    with each line (a model records a checksum of its training data)."""
    name = display_name(path)
    if stream is None:
        with open_input(path) as f:
            yield from read_conllu(path, f, digest, check_text)
        return
    lines: list[str] = []
    numbers: list[int] = []
    count = 0
    for lineno, line in iter_lines(name, stream):
        if digest is not None:
            digest.update(line.encode("utf-8"))
            digest.update(b"\n")
        if not line.strip():
            if lines:
                yield _checked(name, lines, numbers, check_text)
                count += 1
                lines, numbers = [], []
            continue
        lines.append(line)
        numbers.append(lineno)
    if lines:
        yield _checked(name, lines, numbers, check_text)
        count += 1
    if count == 0:
        raise UserError("empty file: no sentences found", name, 1)


# ---- writing: the one CoNLL-U writer ---------------------------------------------------------------
def new_sentence(tokens: Iterable[tuple[str, Sequence[str], bool]], comments: Iterable[str] = (),
                 middle: Sequence[Sequence[str]] | None = None) -> Sentence:
    """A sentence held as CoNLL-U lines, made from surface tokens ``(form, words, space_after)``
    under ``comments`` (``# ...`` lines), as UD writes raw text: a range line before the words
    of a multiword token, ``SpaceAfter=No`` in MISC of the range line of a multiword token and of
    the word otherwise; LEMMA, UPOS, XPOS, FEATS, HEAD and DEPREL from ``middle`` (six strings
    per word), ``_`` without it; DEPS ``_``."""
    lines = list(comments)
    rows: list[list[str]] = []
    word_at: list[int] = []
    blank = ("_", "_", "_", "_", "_", "_")
    for form, words, space in tokens:
        misc = "_" if space else "SpaceAfter=No"
        i = len(rows)
        if len(words) > 1:
            lines.append(f"{i + 1}-{i + len(words)}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
            misc = "_"
        for w in words:
            i += 1
            row = [str(i), w, *(middle[i - 1] if middle is not None else blank), "_", misc]
            word_at.append(len(lines))
            rows.append(row)
            lines.append("\t".join(row))
    return Sentence.from_lines(rows, lines, word_at)


def write_conllu(sents: Iterable[Sentence], out: IO[str]) -> int:
    """Write sentences as CoNLL-U: each one's lines, a blank line after (``Sentence.lines``: as
    read and changed through ``set_columns``, or written from its objects). The one writer of
    every command, the API and the server; how many sentences were written."""
    n = 0
    for s in sents:
        out.write("\n".join(s.lines))
        out.write("\n\n")
        n += 1
    return n
