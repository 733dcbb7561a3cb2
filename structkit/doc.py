"""A document as Python objects: sentences of surface tokens and syntactic words.

``Doc.from_conllu(text)`` reads CoNLL-U (as a treebank or ``structkit annotate`` writes it) and
``doc.to_conllu()`` writes it back: every line of a UD file comes back exactly, comments,
multiword-token range lines and empty nodes included, in the order they were read. The
objects are plain and editable (``word.head = 3`` changes what ``to_conllu`` writes)::

    doc = structkit.read_conllu("en_ewt-ud-dev.conllu")
    for sent in doc.sents:
        for tok in sent.tokens:             # surface tokens, with character offsets into doc.text
            print(tok.form, tok.start, tok.end, [w.form for w in tok.words])
        for w in sent.words:                # syntactic words, the ten CoNLL-U columns
            print(w.id, w.form, w.lemma, w.upos, w.xpos, w.feats, w.head, w.deprel, w.margins)

A missing value (``_`` in the file) is None on the objects (``head`` is an int, or None), and
None is written back as ``_``. ``doc.text`` is the sentences' ``# text`` joined as the file's
``SpaceAfter=No`` and ``# newpar``/``# newdoc`` say (or the raw text a pipeline read, when
given), and each token's ``start``/``end`` are offsets into it: ``doc.text[tok.start:tok.end] ==
tok.form``. Margins are the ``...Margin=`` keys of MISC that ``--scores`` writes (``Margin``
of a tagger, ``TokMargin``/``SentMargin`` of the tokenizer), as floats.

``_repr_html_`` (what Jupyter shows) and ``structkit.render(doc)`` draw the analysis with the
renderer of the ``structkit serve`` page (``structkit.rendering``).
"""
from __future__ import annotations

import re
from typing import Iterator

from structkit.errors import UserError

__all__ = ["Doc", "Sentence", "Token", "Word", "EmptyNode", "read_conllu", "render"]

REPR_SENTENCES = 100   # the most sentences a notebook draws (Doc._repr_html_)

_WORD = re.compile(r"[1-9][0-9]*")
_RANGE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_HEAD = re.compile(r"-?[0-9]+")


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


class Sentence:
    """A sentence: its comment lines (``# ...``, verbatim), surface ``tokens``, syntactic
    ``words``, ``empty_nodes``, and ``start``/``end`` in ``doc.text``."""

    def __init__(self, tokens: list[Token], comments: list[str] | None = None,
                 empty_nodes: list[tuple[int, EmptyNode]] | None = None,
                 start: int | None = None, end: int | None = None):
        self.tokens = tokens
        self.comments = list(comments or [])
        # (k, node): the node comes after word k (0: before the first word)
        self.empty_nodes = list(empty_nodes or [])
        self.start, self.end = start, end
        self._layout: list[tuple[str, object]] | None = None  # the lines' order as read

    @property
    def words(self) -> list[Word]:
        return [w for t in self.tokens for w in t.words]

    def __len__(self) -> int:
        return sum(len(t.words) for t in self.tokens)

    def comment(self, key: str) -> str | None:
        """The value of a ``# key = value`` comment (``sent.comment("sent_id")``), or None."""
        for line in self.comments:
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
        parts: list[str] = []
        for tok in self.tokens:
            parts.append(tok.form)
            if tok.space_after:
                parts.append(" ")
        return "".join(parts).rstrip(" ")

    def _lines(self) -> list[str]:
        words = self.words
        layout = self._layout
        if layout is not None and not _layout_fits(layout, self):
            layout = None
        if layout is None:
            layout = [("comment", c) for c in self.comments]
            empties = sorted(self.empty_nodes, key=lambda kn: kn[0])
            e = 0
            while e < len(empties) and empties[e][0] == 0:
                layout.append(("empty", empties[e][1]))
                e += 1
            for tok in self.tokens:
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
        """The sentence as CoNLL-U lines, a blank line after."""
        return "\n".join(self._lines()) + "\n\n"

    def __repr__(self) -> str:
        return f"Sentence({self.text!r})"

    def _repr_html_(self) -> str:
        from structkit.rendering import sentence_html, view_of_sentence

        return sentence_html(view_of_sentence(self))


def _layout_fits(layout: list[tuple[str, object]], sent: Sentence) -> bool:
    """Whether the order of lines recorded when reading still holds exactly the sentence's
    comments, range lines, words and empty nodes (nothing added, removed or reordered)."""
    if [x for k, x in layout if k == "comment"] != sent.comments:
        return False
    if [id(x) for k, x in layout if k == "word"] != [id(w) for w in sent.words]:
        return False
    ranges = [id(x) for k, x in layout if k == "range"]
    if ranges != [id(t) for t in sent.tokens if t.is_multiword]:
        return False
    return [id(x) for k, x in layout if k == "empty"] == [id(n) for _, n in sent.empty_nodes]


class Doc:
    """A document: ``sents``, and ``text``, into which tokens' offsets point."""

    def __init__(self, sents: list[Sentence], text: str | None = None):
        self.sents = list(sents)
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
        from structkit.io.conllu import read_conllu as _read

        if not isinstance(conllu, str):
            raise UserError(f"Doc.from_conllu: expected CoNLL-U as a str, got {type(conllu).__name__}")
        sents = [_sentence(s.lines) for s in _read(name, conllu.split("\n"), None, check_text)]
        return cls(sents, text)

    def to_conllu(self) -> str:
        """The document as CoNLL-U: each sentence's lines and a blank line after it."""
        return "".join(s.to_conllu() for s in self.sents)

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
        from structkit.rendering import render_html

        return render_html(self, limit=REPR_SENTENCES)

def _sentence(lines: list[str]) -> Sentence:
    """A Sentence of the lines ``structkit.io.conllu.read_conllu`` checked."""
    comments: list[str] = []
    tokens: list[Token] = []
    empties: list[tuple[int, EmptyNode]] = []
    layout: list[tuple[str, object]] = []
    pending: tuple[int, list[str]] | None = None   # an open range: its last word, its columns
    group: list[Word] = []
    n = 0
    for line in lines:
        if line.startswith("#"):
            comments.append(line)
            layout.append(("comment", line))
            continue
        cols = line.split("\t")
        tid = cols[0]
        if _WORD.fullmatch(tid):
            head = cols[6]
            w = Word(int(tid), cols[1], _opt(cols[2]), _opt(cols[3]), _opt(cols[4]),
                     _opt(cols[5]), int(head) if _HEAD.fullmatch(head) else None,
                     _opt(cols[7]), _opt(cols[8]), _opt(cols[9]))
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
    sent = Sentence(tokens, comments, empties)
    sent._layout = layout
    return sent


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


def read_conllu(source: str, stream=None, digest=None, check_text: bool = False) -> Doc:
    """A CoNLL-U document: ``source`` is a file path ('-' for standard input) or the CoNLL-U
    text itself (a str with a line break or a tab in it); with ``stream``, the lines are read
    from it and ``source`` names it in messages. ``structkit.read_conllu`` is this function
    behind argument checks (``structkit.api_io``)."""
    from structkit.io.conllu import read_conllu as _read

    if stream is None and is_conllu_text(source):
        return Doc([_sentence(s.lines) for s in _read("<text>", source.split("\n"), digest, check_text)])
    return Doc([_sentence(s.lines) for s in _read(source, stream, digest, check_text)])


def is_conllu_text(source: object) -> bool:
    """Whether a str given where a path or CoNLL-U may go is CoNLL-U (a path holds no line
    break or tab)."""
    return isinstance(source, str) and ("\n" in source or "\t" in source)


def render(doc: "Doc | str", page: bool = False, spans: "tuple[str, ...] | list[str]" = ("NER",)) -> str:
    """``structkit.render(doc)``: the HTML of a Doc (or of CoNLL-U text), self-contained (no
    script, no style sheet, inline SVG), to put in a static page; the picture
    ``doc._repr_html_()`` shows and ``structkit serve``'s page draws (``structkit.rendering``).
    ``page=True``: a whole HTML document (``structkit.render(doc, page=True)`` to a .html file).
    ``spans``: the MISC keys whose B-/I- labels are drawn as phrases with a legend (``NER=B-PER``,
    as ``structkit tag --task ner --label-column misc.NER`` writes them)."""
    from html import escape

    from structkit.rendering import render_html

    if isinstance(doc, str):
        doc = Doc.from_conllu(doc)
    if not isinstance(doc, Doc):
        raise UserError(f"render: expected a structkit.Doc (or CoNLL-U text), got {type(doc).__name__}")
    if not isinstance(page, bool):
        raise UserError(f"render: page must be True or False, got {type(page).__name__}")
    if isinstance(spans, str) or not isinstance(spans, (tuple, list)) or not all(
            isinstance(k, str) and k for k in spans):
        raise UserError("render: spans must be a list of MISC keys (e.g. [\"NER\"])")
    body = render_html(doc, spans)
    if not page:
        return body
    title = escape(doc.sents[0].text[:80] if doc.sents else "structkit", quote=False)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title></head>\n<body style=\"margin:12px;background:#fbfcfd\">"
            f"{body}</body></html>\n")
