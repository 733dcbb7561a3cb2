"""CoNLL-U for the commands that fill columns: which file is CoNLL-U, which column a task's
labels are in, a prediction written into a column of the lines as read (``write_tagged``,
``write_parsed``), raw text as sentences to fill (``read_raw_text``) and the trees a parser reads
(``read_trees``, ``checked_tree``).

The sentences are ``structkit.io.document.Sentence`` as its one reader, ``read_conllu``, gives
them: ``rows`` are the syntactic words (10 columns each) and ``lines`` all lines as read,
comments, multiword ranges and empty nodes included, so that tagging changes nothing but the
predicted column.
"""
from __future__ import annotations

import hashlib
import re
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, TYPE_CHECKING, Iterable, Iterator, Sequence

from structkit.errors import UserError
from structkit.io.conll import Columns, read_conll
from structkit.io.conllx import check_tree, read_conllx
from structkit.io.document import Sentence, key_value, read_conllu, surface_text, write_conllu  # noqa: F401 (the one reader; read from here too)
from structkit.io.files import bounded_lines, display_name, iter_lines, open_input, printable
from structkit.text.base import MAX_SENTENCE_TOKENS as most
from structkit.text.conllu import conllu_sentence
from structkit.text.tokenize import get_tokenizer, iter_sentences

if TYPE_CHECKING:
    from structkit.io.conll import Columns

NAMES = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
KEYED = ("feats", "misc")    # columns of Key=Value pairs joined by '|'
_ID = re.compile(r"[0-9]+(?:[-.][0-9]+)?")


def looks_like_conllu(line: str) -> bool:
    """A token row of CoNLL-U (or CoNLL-X): ten tab-separated columns, an ID first."""
    cols = line.rstrip("\r\n").split("\t")
    return len(cols) == 10 and _ID.fullmatch(cols[0]) is not None


def set_key(field: str, key: str, value: str) -> str:
    """``field`` with ``key=value`` set (replacing an existing value, else appended)."""
    items = [] if field == "_" else field.split("|")
    for i, item in enumerate(items):
        if item.partition("=")[0] == key:
            items[i] = f"{key}={value}"
            return "|".join(items)
    return "|".join(items + [f"{key}={value}"])


def put_label(field: str, key: str, label: str) -> str:
    """``field`` with a predicted keyed label set (``set_key``), or, for the none label '_' (a
    word without that feature: ``--label-column feats.Number`` learns '_' for it), the key
    removed ('_' when nothing is left)."""
    if label != "_":
        return set_key(field, key, label)
    items = [] if field == "_" else [x for x in field.split("|") if x.partition("=")[0] != key]
    return "|".join(items) or "_"


def write_tagged(sentences: Iterable[Sentence], predictions: Iterable[Sequence[str]], out: IO[str],
                 column: int, key: str | None = None) -> None:
    """Write each sentence's lines back, the prediction put in ``column`` of every word row
    (or, with ``key``, set as ``key=label`` in that Key=Value column); every other line and
    column exactly as read (``structkit.io.document.write_conllu``, the one writer)."""
    done = []
    for sent, pred in zip(sentences, predictions):
        rows = sent.rows
        for k, label in enumerate(pred):
            sent.set_columns(k, {column: put_label(rows[k][column], key, label) if key else label})
        done.append(sent)
    write_conllu(done, out)


def read_sequence(path: str, stream: IO | Iterable | None = None,
                  digest: "hashlib._Hash | None" = None) -> Iterator[Sentence]:
    """Sentences of a file for the sequence tasks, CoNLL-U or CoNLL columns, told apart by the
    first token row (ten tab-separated columns with an ID first is CoNLL-U or CoNLL-X). A
    CoNLL-U sentence has ``lines``; a column-file sentence has None there."""
    from itertools import chain

    if stream is None:
        with open_input(path) as f:
            yield from read_sequence(path, f, digest)
        return
    it = bounded_lines(path, stream)
    head: list = []
    line = ""
    for raw in it:
        head.append(raw)
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if (line.strip() and not line.startswith("#")) or len(head) >= 10000:
            break
    source = chain(head, it)
    if _conllu_signs(path, head, line):
        yield from read_conllu(path, source, digest)
    else:
        yield from read_conll(path, source, digest)


_UD_COMMENT = re.compile(r"# *(sent_id|text|newdoc|newpar|global\.columns)\b")


def _conllu_signs(path: str, head: list, line: str, by_rows: bool = True) -> bool:
    """CoNLL-U if the file is named .conllu, or has a UD comment (# sent_id, # text, ...)
    before its first token row, or (``by_rows``) that row looks like CoNLL-U or CoNLL-X."""
    if str(path).lower().endswith(".conllu"):
        return True
    for raw in head[:-1]:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if _UD_COMMENT.match(text):
            return True
    return by_rows and bool(line.strip()) and not line.startswith("#") and looks_like_conllu(line)


def conllu_columns(task: str, label_column: str | None, path: str) -> "Columns":
    """The layout of CoNLL-U input: FORM the word; the label in UPOS for pos, or in the column
    (or ``column.Key`` of FEATS/MISC) that ``label_column`` names; chunk and ner read UPOS as
    their POS feature column."""

    spec = label_column or ("upos" if task == "pos" else None)
    if spec is None:
        raise UserError(f"--task {task} on CoNLL-U needs --label-column to say where the labels are, "
                        f"e.g. misc.NER (a key of MISC) or a column name", display_name(path))
    base, _, key = spec.partition(".")
    usable = [n for n in NAMES if n not in ("id", "form", "head")]
    if base not in usable or (key and base not in KEYED):
        raise UserError(f"--label-column must be one of {', '.join(usable)} or a key of feats or "
                        f"misc (e.g. misc.NER), got {spec!r}", display_name(path))
    pos = None if task == "pos" else NAMES.index("upos")
    return Columns(1, pos, NAMES.index(base), NAMES, key or None, conllu=True)


def is_conllu_file(path: str, by_rows: bool = True) -> bool:
    """Whether the file at ``path`` is CoNLL-U: named .conllu, with UD comments, or (``by_rows``)
    with a first token row of ten tab-separated columns and an ID, which CoNLL-X has too.
    Standard input is not looked at (it cannot be read twice)."""
    if path == "-":
        return False
    head: list = []
    line = ""
    with open_input(path) as f:
        for raw in bounded_lines(path, f):
            head.append(raw)
            line = raw.decode("utf-8", "replace")
            if (line.strip() and not line.startswith("#")) or len(head) >= 10000:
                break
    return _conllu_signs(path, head, line, by_rows)


# Within a batch run (``keep_warnings``), the warnings of reading a block are kept here instead of
# written (``take_warnings`` gives them with the block's result), and the run says each once an
# input, whichever process read the block: a stream read block by block (`yes | annotate -`)
# warned about its long sentences once a block, 16 lines a second.
# A context variable, so each thread has its own: a global swapped by blocks running at once in
# threads (`--jobs` with threads) could be left set when they ended out of order, and the
# warnings of later runs in the process were then kept for no one.
_KEPT: ContextVar[list[str] | None] = ContextVar("structkit_kept_warnings", default=None)


@contextmanager
def keep_warnings() -> Iterator[None]:
    """Within the block, the long-sentence warning of ``read_raw_text`` is kept for the batch
    run (``take_warnings``), which says it once an input, not once a block."""
    token = _KEPT.set([])
    try:
        yield
    finally:
        _KEPT.reset(token)


def warn(line: str) -> None:
    """Say a reading warning: kept for the batch run within ``keep_warnings``, else written to
    standard error."""
    kept = _KEPT.get()
    if kept is not None:
        kept.append(line)
    else:
        sys.stderr.write(line)


def take_warnings() -> tuple[str, ...]:
    """The warnings kept since the last call (in a batch run; none outside one)."""
    kept = _KEPT.get()
    if not kept:
        return ()
    out = tuple(kept)
    kept.clear()
    return out


def read_raw_text(path: str, lang: str = "en", split: str = "auto",
                  stream: IO | None = None, allow_empty: bool = False) -> Iterator[Sentence]:
    """Raw text tokenised and split into sentences (``structkit.text``), each as the CoNLL-U
    sentence ``structkit.text.conllu.write_conllu`` writes for it (``# sent_id``, ``# text``,
    multiword tokens, ``SpaceAfter=No``): tagging then fills a column, as for a treebank.
    ``split="lines"`` takes each line as one sentence. Streamed: one paragraph at a time. A
    text with no words is an error, unless ``allow_empty`` (an empty document, no sentences)."""

    get_tokenizer(lang)  # an unknown language is an error before any input is read
    name = display_name(path)
    if stream is None:
        with open_input(path) as f:
            yield from read_raw_text(path, lang, split, f, allow_empty)
        return
    lines = (line + "\n" for _, line in iter_lines(name, stream))
    n = cut = 0
    prev_cut = False
    for sent in iter_sentences(lines, lang, split):
        n += 1
        cut += sent.cut and not prev_cut   # a run of cut pieces is one sentence of the text
        prev_cut = sent.cut
        yield conllu_sentence(sent, str(n))
    if cut:   # as the server warns for the same text

        line = (f"structkit: warning: {printable(name)}: {cut} sentence(s) of the text had over {most} tokens: "
                f"each was cut into pieces of at most {most} tokens\n")
        warn(line)
    if n == 0 and not allow_empty:
        raise UserError("empty input: no text to tag", name)


# ---- dependency parsing ---------------------------------------------------------------------

_HEAD = re.compile(r"-?[0-9]+")


def read_trees(path: str) -> Iterator[Sentence]:
    """The dependency trees of a file, as a parser reads them: CoNLL-U (named .conllu, or with UD
    comments) through the one CoNLL-U reader (``read_conllu``), its HEAD column checked
    (``checked_tree``); CoNLL-X and `word POS` files through ``structkit.io.conllx.read_conllx``.
    Each is a ``Sentence`` whose columns (``forms``, ``upos``, ``xpos``, ``heads``, ...) the
    parser reads."""

    if path != "-" and is_conllu_file(path, by_rows=False):
        name = display_name(path)
        return (checked_tree(s, name) for s in read_conllu(path, check_text=False))

    return read_conllx(path)


def checked_tree(sentence: Sentence, path: str = "-") -> Sentence:
    """``sentence`` (read by ``read_conllu``) once its HEAD column is checked as a parser reads
    it: '_' on every word (input from a tagger: ``heads`` None), or an integer HEAD in 0..n on
    every word, the heads forming a tree. A problem is a UserError naming ``path`` and the
    word's line."""

    rows = sentence.rows
    n = len(rows)
    raw = [r[6] for r in rows]
    if raw.count("_") == n:
        return sentence
    name = display_name(path)
    heads = []
    for k, h in enumerate(raw):
        if not (h.isascii() and h.isdigit()):   # a plain number (most heads) needs no regex
            if h == "_":
                raise UserError(f"HEAD is '_' for word {k + 1} but not for every word of its "
                                "sentence", name, sentence.line_of(k))
            if not _HEAD.fullmatch(h):
                raise UserError(f"HEAD {h!r} of word {k + 1} is not an integer or '_'",
                                name, sentence.line_of(k))
        v = int(h)
        if not 0 <= v <= n:
            raise UserError(f"HEAD {h} of word {k + 1} is out of range: the sentence has "
                            f"{n} words (0 = root)", name, sentence.line_of(k))
        heads.append(v)
    problem = check_tree(heads)
    if problem is not None:
        m = re.match(r"token ([0-9]+)", problem)
        k = int(m.group(1)) - 1 if m else 0
        raise UserError(f"not a tree: {problem}", name, sentence.line_of(k))
    return sentence


def write_parsed(sentences: Iterable[Sentence], heads: Iterable[Sequence[int]],
                 deprels: Iterable[Sequence[str]] | None, out: IO[str]) -> int:
    """Write CoNLL-U sentences read by ``read_conllu`` back with a parser's output: every line
    exactly as read (comments, multiword ranges, empty nodes, DEPS, MISC such as
    SpaceAfter=No), except HEAD and DEPREL (columns 7 and 8) of the word rows, which get
    ``heads`` (one list of 1-based heads per sentence, 0 = root) and ``deprels`` (one list of
    labels per sentence; None, or None for a sentence: an unlabelled parser, DEPREL '_').
    A blank line ends each sentence. Returns the number of sentences written; a count or
    length mismatch, or a label that is empty or holds a tab, newline or space, is a
    ValueError."""
    head_it = iter(heads)
    rel_it = iter(deprels) if deprels is not None else None
    count = 0
    good = {"_"}   # the labels already checked
    for sent in sentences:
        if sent.lines is None or sent.word_at is None:
            raise ValueError("write_parsed needs sentences read by read_conllu (with their lines)")
        n = len(sent.word_at)
        try:
            hs = next(head_it)
            rs = next(rel_it) if rel_it is not None else None
        except StopIteration:
            raise ValueError(f"fewer head (or DEPREL) lists than sentences: {count}") from None
        if len(hs) != n or (rs is not None and len(rs) != n):
            raise ValueError(f"sentence {count + 1}: {len(hs)} heads and "
                             f"{'no' if rs is None else len(rs)} DEPRELs for {n} words")
        new_heads, new_rels = [], []
        for k in range(n):
            h = int(hs[k])
            if not 0 <= h <= n:
                raise ValueError(f"sentence {count + 1}: head {h} of word {k + 1} is outside 0..{n}")
            rel = "_" if rs is None else str(rs[k])
            if rel not in good:
                if not rel or any(c in rel for c in "\t\n\r "):
                    raise ValueError(f"sentence {count + 1}: DEPREL {rel!r} of word {k + 1} cannot be "
                                     "written (empty, or a tab, newline or space in it)")
                good.add(rel)
            new_heads.append(str(h))
            new_rels.append(rel)
        sent.fill_columns({6: new_heads, 7: new_rels})
        write_conllu([sent], out)
        count += 1
    if next(head_it, None) is not None or (rel_it is not None and next(rel_it, None) is not None):
        raise ValueError(f"more head (or DEPREL) lists than the {count} sentences")
    return count
