"""Dependency treebanks: reading CoNLL-X / CoNLL-U (and plain `word POS` text), writing CoNLL-X.

The reader streams (one sentence in memory at a time) and turns every malformed input into a
``UserError`` pointing at ``file:line``, because treebanks are user input and a parser fed a
broken tree fails much later with a far less useful message. Each sentence is a
``structkit.io.document.Sentence`` held as the lines it writes back: ten columns per word
(a `word POS` row padded: ``1 word _ POS POS _ _ _ _ _``), which the parser reads through the
sentence's columns (``forms``, ``upos``, ``heads``, ...) and fills through ``set_columns``.
"""
from __future__ import annotations

import re
from typing import IO, Iterable, Iterator, Sequence

from structkit.errors import UserError
from structkit.io.document import Sentence, cr_only_error, write_conllu
from structkit.io.files import display_name, iter_lines, open_input

# Column counts of the two accepted layouts.
CONLL_COLUMNS = 10   # CoNLL-X and CoNLL-U
SIMPLE_COLUMNS = 2   # `word POS`, for raw tagged text (no heads)

# Plain ASCII digits only: int() alone would also accept '1_0', ' 1' and non-ASCII digits.
_SIGNED_INT = re.compile(r"-?[0-9]+")      # a negative HEAD is an integer, just out of range
_RANGE = re.compile(r"([0-9]+)-([0-9]+)")  # CoNLL-U multiword token, e.g. 2-3
_EMPTY_NODE = re.compile(r"[0-9]+\.[0-9]+")  # CoNLL-U empty node, e.g. 5.1


# ----------------------------------------------------------------------------- tree checks

def check_tree(heads: Sequence[int], single_root: bool = False) -> str | None:
    """Return why ``heads`` (1-based, 0 = root) is not a dependency tree, or None if it is.

    Reports the first of: a head out of range, a token that is its own head, a cycle (naming
    its tokens, starting from the smallest id), and with ``single_root`` a number of root
    children other than one. Runs in O(n).
    """
    n = len(heads)
    for i, h in enumerate(heads, 1):
        if not 0 <= h <= n:
            return f"token {i} has head {h}, outside 0..{n}"
        if h == i:
            return f"token {i} is its own head"
    # Colour each token: 0 = unvisited, 1 = on the current upward walk, 2 = known to reach root.
    state = [0] * (n + 1)
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node - 1]
        if state[node] == 1:  # the walk came back to itself: node starts a cycle
            cycle = path[path.index(node):]
            k = cycle.index(min(cycle))
            cycle = cycle[k:] + cycle[:k]
            loop = cycle + [cycle[0]]
            shown = " -> ".join(map(str, loop if len(loop) <= 12 else loop[:6] + ["..."] + loop[-3:]))
            if len(cycle) > 11:
                shown += f"; {len(cycle):,} tokens"
            return f"token {cycle[0]} is in a cycle ({shown})"
        for p in path:
            state[p] = 2
    if single_root:
        roots = sum(1 for h in heads if h == 0)
        if roots != 1:
            return f"{roots} tokens have head 0 (the root); expected exactly 1"
    return None


def is_projective(heads: Sequence[int]) -> bool:
    """True if no two arcs cross, drawing the root as position 0 (heads 1-based, 0 = root).

    With the root at position 0 this equals "every token between a head and its dependent
    descends from that head". O(n^2) over pairs of arcs.
    """
    arcs = [(min(h, d), max(h, d)) for d, h in enumerate(heads, 1)]
    for a, (l1, r1) in enumerate(arcs):
        for l2, r2 in arcs[a + 1:]:
            # Two arcs cross when exactly one end of one lies strictly inside the other.
            if l1 < l2 < r1 < r2 or l2 < l1 < r2 < r1:
                return False
    return True


# ----------------------------------------------------------------------------- reading

class _Builder:
    """Collects the rows of one sentence and validates it when the sentence ends. The rows are
    kept as they are written back: ID renumbered 1..n, an empty column '_', HEAD as the
    integer's digits, DEPS/MISC (PHEAD/PDEPREL) '_'; each with its line."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []
        self.body: list[str] = []                     # word rows' and ranges' lines, in order
        self.word_body: list[int] = []                # each word's line in body
        self.range_at: dict[int, int] = {}            # a range's first word -> its place in body
        self.word_lines: list[int] = []               # each word's line in the file
        self.comments: list[tuple[int, str]] = []    # (line, text)
        self.multiword: list[tuple[int, int, int]] = []  # (line, first, last)
        self.first_line = 0

    def empty(self) -> bool:
        return not self.rows

    def add(self, line: int, row: Sequence[str], text: str) -> None:
        """A word: its row (held as a tuple: the garbage collector skips tuples of strings,
        and a treebank is many rows) and the line it writes back."""
        if not self.rows:
            self.first_line = line
        self.rows.append(tuple(row))  # type: ignore[arg-type]
        self.word_lines.append(line)
        self.word_body.append(len(self.body))
        self.body.append(text)

    def add_range(self, line: int, first: int, last: int, form: str) -> None:
        self.multiword.append((line, first, last))
        text = f"{first}-{last}\t{form or '_'}" + "\t_" * 8
        if first in self.range_at:   # a second range at the same word: written in the first's place
            self.body[self.range_at[first]] = text
        else:
            self.range_at[first] = len(self.body)
            self.body.append(text)

    def finish(self, name: str) -> Sentence:
        n = len(self.rows)
        heads = self._heads(name, n)
        for line, first, last in self.multiword:
            if last > n:
                raise UserError(f"multiword token {first}-{last} goes past the sentence's last "
                                f"token {n}", name, line)
        if heads is not None:
            problem = check_tree(heads)
            if problem is not None:
                raise UserError(f"not a tree: {problem}", name, self.first_line)
        lines, word_at = self.body, self.word_body
        if self.comments:
            k = len(self.comments)
            lines = [text for _, text in self.comments] + lines
            word_at = [k + i for i in word_at]
        # first_line such that line_of(0) is the first word's row (comments may stand apart)
        return Sentence.from_lines(self.rows, lines, word_at, self.first_line - word_at[0])

    def _heads(self, name: str, n: int) -> list[int] | None:
        """Parse the HEAD column: all '_' means no heads; otherwise every token needs one."""
        raw = [r[6] for r in self.rows]
        missing = raw.count("_")
        if missing == n:
            return None
        if missing:
            # Point at the first token that disagrees with the first token of the sentence.
            first = raw[0] == "_"
            line = next(ln for ln, h in zip(self.word_lines, raw) if (h == "_") != first)
            raise UserError("HEAD is '_' for some tokens of this sentence but not for others",
                            name, line)
        heads = [int(h) for h in raw]   # integers 0 or more, checked when the rows were read
        if max(heads) > n:
            i = next(i for i, h in enumerate(heads) if h > n)
            raise UserError(f"HEAD {heads[i]} of token {i + 1} is out of range: the sentence has "
                            f"{n} tokens (0 = root)", name, self.word_lines[i])
        return heads


def read_conllx(path: str, stream: IO[str] | None = None) -> Iterator[Sentence]:
    """Yield the sentences of a CoNLL-X, CoNLL-U or 2-column `word POS` file, one at a time,
    each a ``structkit.io.document.Sentence`` held as the lines ``write_conllx`` writes.

    ``path`` names the file in messages ('-' = stdin); when ``stream`` is given it is read
    instead of opening ``path``. CoNLL-U comments and multiword ranges are kept on the
    sentence, empty nodes (5.1) are skipped, DEPS/MISC and PHEAD/PDEPREL are dropped ('_').
    A sentence's ``line_of(0)`` is the line of its first token row. Every malformed row
    raises ``UserError`` with the file name and line number.
    """
    if stream is None:
        with open_input(path) as f:
            yield from _read(display_name(path), f)
    else:
        yield from _read(display_name(path), stream)


def _read(name: str, stream: IO[str]) -> Iterator[Sentence]:
    ncols: int | None = None     # fixed by the file's first token row
    ncols_line = 0
    sent = _Builder()
    count = 0

    def token_row(lineno: int, line: str) -> None:
        nonlocal ncols, ncols_line
        # CoNLL columns are tab-separated (FORM may contain spaces in CoNLL-U); a line without a
        # tab is plain whitespace-separated text. Trailing whitespace (a stray tab) is not a column.
        stripped = line.rstrip()
        tabbed = "\t" in stripped
        cols = stripped.split("\t") if tabbed else stripped.split()
        if "\r" in line and len(cols) != ncols:
            raise cr_only_error(name, lineno)
        if ncols is None:
            if len(cols) not in (CONLL_COLUMNS, SIMPLE_COLUMNS):
                raise UserError(f"expected {CONLL_COLUMNS} tab-separated columns (CoNLL-X/"
                                f"CoNLL-U) or {SIMPLE_COLUMNS} (word POS), found {len(cols)}",
                                name, lineno)
            ncols, ncols_line = len(cols), lineno
            if ncols == SIMPLE_COLUMNS and sent.comments:
                # Plain tagged text has no comments: lines read as comments before the layout
                # was known are tokens whose word is '#' (a real PTB token).
                pending, sent.comments = sent.comments, []
                for ln, text in pending:
                    token_row(ln, text)
        elif len(cols) != ncols:
            raise UserError(f"found {len(cols)} columns, but this file's rows have {ncols} "
                            f"(as on line {ncols_line})", name, lineno)
        if ncols == SIMPLE_COLUMNS:
            word, pos = cols
            n = str(len(sent.rows) + 1)
            sent.add(lineno, (n, word, "_", pos, pos, "_", "_", "_", "_", "_"),
                     f"{n}\t{word}\t_\t{pos}\t{pos}\t_\t_\t_\t_\t_")
            return
        tid, form, head = cols[0], cols[1], cols[6]
        if not (tid.isascii() and tid.isdigit()):   # a plain ID (most rows) needs no regex
            if _EMPTY_NODE.fullmatch(tid):
                return  # empty nodes belong to the enhanced graph, not the basic tree
            m = _RANGE.fullmatch(tid)
            if m:
                first, last = int(m.group(1)), int(m.group(2))
                if first != len(sent.rows) + 1 or last < first:
                    raise UserError(f"multiword token range {tid} must start at the next token "
                                    f"ID {len(sent.rows) + 1} and not end before it", name, lineno)
                sent.add_range(lineno, first, last, form)
                return
            raise UserError(f"ID {tid!r} is not an integer", name, lineno)
        expected = len(sent.rows) + 1
        if int(tid) != expected:
            raise UserError(f"ID {tid} out of sequence: expected {expected} (IDs run 1..n in "
                            f"each sentence)", name, lineno)
        if not form:
            raise UserError(f"token {tid} has an empty FORM", name, lineno)
        h = head   # as written back: '_', or the integer's digits
        if head != "_":
            if head.isascii() and head.isdigit():
                v = int(head)
                if head[0] == "0" and len(head) > 1:   # 007: written 7
                    h = str(v)
            elif _SIGNED_INT.fullmatch(head):
                v = int(head)
                h = str(v)
            else:
                raise UserError(f"HEAD {head!r} of token {tid} is not an integer or '_'",
                                name, lineno)
            if v < 0:
                raise UserError(f"HEAD {head} of token {tid} is out of range (negative)",
                                name, lineno)
            if v == expected:
                raise UserError(f"token {tid} is its own head", name, lineno)
        if tabbed and h is head and stripped.endswith("\t_\t_") and "\t\t" not in stripped \
                and tid[0] != "0":   # no empty column, PHEAD and PDEPREL '_', a plain ID
            sent.add(lineno, cols, stripped)   # (most rows) the line is as written back
        else:
            row = [str(expected), form, cols[2] or "_", cols[3] or "_", cols[4] or "_", cols[5] or "_",
                   h, cols[7] or "_", "_", "_"]
            sent.add(lineno, row, "\t".join(row))

    for lineno, line in iter_lines(name, stream):
        if lineno == 1:
            line = line.removeprefix("\ufeff")  # a UTF-8 byte order mark is not part of the ID
        if not line.strip():
            if not sent.empty():
                yield sent.finish(name)
                count += 1
                sent = _Builder()
            # Comments followed by a blank line stay pending for the next sentence.
            continue
        if line.startswith("#") and ncols != SIMPLE_COLUMNS:
            sent.comments.append((lineno, line))
            continue
        token_row(lineno, line)
    if not sent.empty():  # the last sentence need not end with a blank line
        yield sent.finish(name)
        count += 1
    if count == 0:
        raise UserError("empty file: no sentences found", name, 1)


# ----------------------------------------------------------------------------- writing

def _field(value: object) -> str:
    """A column value, '_' when missing; a tab or newline would corrupt the row."""
    text = "_" if value is None or value == "" else str(value)
    if "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(f"cannot write {text!r} to a CoNLL column: it contains a tab or newline")
    return text


def write_conllx(sentences: Iterable[Sentence], stream: IO[str],
                 heads: Sequence[Sequence[int]] | None = None,
                 deprels: Sequence[Sequence[str]] | None = None) -> int:
    """Write sentences (``structkit.io.document.Sentence``, as ``read_conllx`` gives them)
    through the one CoNLL-U writer (``structkit.io.document.write_conllu``): each one's lines
    and a blank line after it; return how many.

    ``heads``, one list per sentence (e.g. a parser's predictions), replaces HEAD in what is
    written (the sentences themselves are not changed); ``deprels`` likewise DEPREL. A sentence
    ``read_conllx`` read is written as CoNLL-X rows (ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD
    DEPREL PHEAD PDEPREL, '_' for missing values), with the comments and multiword ranges of
    CoNLL-U input in place, so that CoNLL-U input round-trips; CoNLL-X input has neither, so
    its output is plain CoNLL-X. A sentence of rows alone (``Sentence.from_rows``, ten columns)
    is written as its rows, '_' for an empty value.
    """
    head_lists = iter(heads) if heads is not None else None
    label_lists = iter(deprels) if deprels is not None else None
    count = 0
    for sent in sentences:
        n = len(sent)
        sent_labels = None
        if label_lists is not None:
            sent_labels = next(label_lists, None)
            if sent_labels is None or len(sent_labels) != n:
                raise ValueError(f"sentence {count + 1}: deprels do not match its {n} words")
        if n == 0:
            raise ValueError("cannot write a sentence with no words (it would read back as none)")
        sent_heads: Sequence[int] | None = None
        if head_lists is not None:
            try:
                sent_heads = next(head_lists)
            except StopIteration:
                raise ValueError(f"heads has {count} lists but there are more sentences") from None
            if len(sent_heads) != n:
                raise ValueError(f"sentence {count + 1}: {len(sent_heads)} heads for {n} words")
        if sent.lines is None:   # rows alone: their lines, as CoNLL-X
            rows = [[_field(c) for c in r] for r in sent.rows]
            if any(len(r) != CONLL_COLUMNS for r in rows):
                raise ValueError(f"sentence {count + 1}: expected {CONLL_COLUMNS} columns per word")
            sent = Sentence.from_lines(rows, ["\t".join(r) for r in rows], list(range(n)))
        elif sent_heads is not None or sent_labels is not None:
            sent = sent.copy()
        for i in range(n) if sent_heads is not None or sent_labels is not None else ():
            new = {}
            if sent_heads is not None:
                new[6] = _field(sent_heads[i])
            if sent_labels is not None:
                new[7] = _field(sent_labels[i])
            sent.set_columns(i, new)
        write_conllu([sent], stream)
        count += 1
    if head_lists is not None and next(head_lists, None) is not None:
        raise ValueError(f"heads has more lists than the {count} sentences")
    return count
