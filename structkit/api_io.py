"""The readers, writers and ``tokenize`` as ``import structkit`` exports them: the functions of
``structkit.io`` and ``structkit.text`` behind argument checks, so that a wrong argument (None,
a number, bytes, a dict, a string holding a lone surrogate, a stream that cannot be written) is
a :class:`structkit.UserError` naming the argument, never a TypeError or AttributeError from
deep inside. Readers check their arguments when called and stay lazy (generators) after that.
Writers render each sentence in memory before writing it, so a bad sentence is refused before
any of its rows reach ``out``, and a failing ``out`` (a full disk, a closed file) is a UserError.
"""
from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from structkit import doc
from structkit.config import resolve_data_path
from structkit.doc import Doc
from structkit.doc import Sentence as DocSentence
from structkit.errors import UserError
from structkit.io import conll, conllx
from structkit.text import conllu
from structkit.text.base import Tokenizer
from structkit.text.tokenize import tokenize as _tokenize
from structkit.tokenizer.wing import TOKENIZE

__all__ = ["check_path", "check_text", "read_conll", "read_text", "write_conll", "read_conllx",
           "write_conllx", "read_conllu", "read_nbest", "read_chosen", "tokenize", "load_tokenizer",
           "write_conllu"]


def _kind(value: Any) -> str:
    return type(value).__name__


def check_path(value: Any, arg: str, fn: str) -> str:
    """A file path argument as a str: a str or os.PathLike naming a str, without NUL."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise UserError(f"{fn}: {arg} must be a file path (a str or os.PathLike), got {_kind(value)}")
    if "\x00" in value:
        raise UserError(f"{fn}: {arg} is not a file path: it holds a NUL character")
    if not value:
        raise UserError(f"{fn}: {arg} is an empty path")
    try:  # a file name that is not UTF-8 comes as surrogate escapes (os.listdir): those are fine
        os.fsencode(value)
    except UnicodeEncodeError as e:
        raise UserError(f"{fn}: {arg} is not a file path: it holds {value[e.start]!r}, which no "
                        "file name can") from None
    return value


def check_text(value: Any, arg: str, fn: str) -> str:
    """A str that is text: a lone surrogate (which no file can hold as UTF-8) is refused."""
    if not isinstance(value, str):
        raise UserError(f"{fn}: {arg} must be a str, got {_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UserError(f"{fn}: {arg} holds a lone surrogate ({value[e.start]!r} at character "
                        f"{e.start + 1}), which is not text") from None
    return value


_valid_text = check_text  # for functions whose own argument is named check_text


def _check_stream_in(stream: Any, fn: str) -> None:
    if stream is None:
        return
    if isinstance(stream, (str, bytes, bytearray)) or not (
            hasattr(stream, "readline") or isinstance(stream, Iterable)):
        raise UserError(f"{fn}: stream must be an open file or an iterable of lines, "
                        f"got {_kind(stream)}")


def _check_out(out: Any, arg: str, fn: str) -> None:
    if not callable(getattr(out, "write", None)):
        raise UserError(f"{fn}: {arg} must be a writable text stream (with a write method), "
                        f"got {_kind(out)}")


def _check_iterable(value: Any, arg: str, fn: str, none_ok: bool = False) -> None:
    if value is None and none_ok:
        return
    if isinstance(value, (str, bytes, bytearray, dict)) or not isinstance(value, Iterable):
        raise UserError(f"{fn}: {arg} must be a list (or another iterable), got {_kind(value)}")


def _check_int(value: Any, arg: str, fn: str, low: int = 0, none_ok: bool = True) -> None:
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"{fn}: {arg} must be an integer of at least {low}, got {value!r}"[:200])


def _write(out: IO[str], text: str, arg: str, fn: str) -> None:
    try:
        out.write(text)
    except UnicodeEncodeError as e:
        raise UserError(f"{fn}: cannot write to {arg}: {e.reason} ({e.object[e.start:e.end]!r})") from None
    except (OSError, ValueError, TypeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise UserError(f"{fn}: cannot write to {arg}: {why}"[:300]) from None


def _flush(out: IO[str], arg: str, fn: str) -> None:
    """Flush ``out`` once at the end, so that a failing buffered write (a full disk) is the
    writer's UserError and not an OSError when the caller closes the file."""
    flush = getattr(out, "flush", None)
    if callable(flush):
        try:
            flush()
        except (OSError, ValueError) as e:
            why = getattr(e, "strerror", None) or str(e)
            raise UserError(f"{fn}: cannot write to {arg}: {why}"[:300]) from None


def _labels(value: Any, n: int, arg: str, k: int, fn: str, what: str = "label") -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise UserError(f"{fn}: {arg}[{k}] must be a list of {what}s, got {_kind(value)}")
    out = []
    for i, lab in enumerate(value):
        if not isinstance(lab, str) or not lab or any(c.isspace() for c in lab):
            raise UserError(f"{fn}: {arg}[{k}][{i}] must be a non-empty {what} without "
                            f"whitespace, got {lab!r}"[:200])
        out.append(check_text(lab, f"{arg}[{k}][{i}]", fn))
    return out


def _rows(sent: Any, k: int, fn: str) -> list[list[str]]:
    if not isinstance(sent, DocSentence):
        raise UserError(f"{fn}: sentences[{k}] must be a Sentence (as read_conll gives), "
                        f"got {_kind(sent)}")
    rows = sent.rows
    if not isinstance(rows, list) or not all(
            isinstance(r, list) and r and all(isinstance(c, str) and c and "\n" not in c
                                              and "\r" not in c for c in r) for r in rows):
        raise UserError(f"{fn}: sentences[{k}].rows must be lists of non-empty strings "
                        "without newlines")
    for r in rows:
        for c in r:
            check_text(c, f"sentences[{k}].rows", fn)
    return rows


# ---- readers -------------------------------------------------------------------------------------
def read_conll(path: Any, stream: Any = None, digest: Any = None,
               n_columns: Any = None) -> Iterator:
    """``structkit.io.conll.read_conll`` with its arguments checked (see the module)."""

    fn = "read_conll"
    path = check_path(path, "path", fn)
    _check_stream_in(stream, fn)
    if digest is not None and not callable(getattr(digest, "update", None)):
        raise UserError(f"{fn}: digest must be a hashlib object, got {_kind(digest)}")
    _check_int(n_columns, "n_columns", fn, low=1)
    return conll.read_conll(path, stream, digest, n_columns)


def read_text(path: Any, stream: Any = None) -> Iterator:
    """``structkit.io.conll.read_text`` with its arguments checked."""

    path = check_path(path, "path", "read_text")
    _check_stream_in(stream, "read_text")
    return conll.read_text(path, stream)


def read_conllx(path: Any, stream: Any = None) -> Iterator:
    """``structkit.io.conllx.read_conllx`` with its arguments checked."""

    path = check_path(path, "path", "read_conllx")
    _check_stream_in(stream, "read_conllx")
    return conllx.read_conllx(path, stream)


def read_conllu(source: Any, stream: Any = None, digest: Any = None, check_text: Any = False):
    """``structkit.doc.read_conllu`` with its arguments checked: the ``structkit.Doc`` of a
    CoNLL-U file (``source`` a path, '-' for standard input) or of CoNLL-U text (a str with a
    line break or tab in it). ``check_text=True`` refuses a ``# text`` that its tokens do not
    spell (``structkit.io.conllu.read_conllu``, which streams a file's sentences, checks it)."""

    fn = "read_conllu"
    if not isinstance(check_text, bool):
        raise UserError(f"{fn}: check_text must be True or False, got {_kind(check_text)}")
    if digest is not None and not callable(getattr(digest, "update", None)):
        raise UserError(f"{fn}: digest must be a hashlib object, got {_kind(digest)}")
    if stream is None and doc.is_conllu_text(source):
        return doc.read_conllu(_valid_text(source, "source", fn), None, digest, check_text)
    path = check_path(source, "path", fn)
    _check_stream_in(stream, fn)
    if stream is None and path != "-":   # a relative data path found as commands find it (sample/..., $STRUCTKIT_DATA)

        path = resolve_data_path(path)
    return doc.read_conllu(path, stream, digest, check_text)


def read_nbest(path: Any, window: Any = 10):
    """``structkit.io.nbest.read_nbest`` with its arguments checked."""

    path = check_path(path, "path", "read_nbest")
    _check_int(window, "window", "read_nbest", low=1, none_ok=False)
    from structkit.io import nbest  # numpy: kept out of `import structkit`'s path

    return nbest.read_nbest(path, window)


def read_chosen(path: Any, n: Any) -> list[str]:
    """``structkit.io.nbest.read_chosen`` with its arguments checked."""

    path = check_path(path, "path", "read_chosen")
    _check_int(n, "n", "read_chosen", low=0, none_ok=False)
    from structkit.io import nbest

    return nbest.read_chosen(path, n)


# ---- writers -------------------------------------------------------------------------------------
def write_conll(sentences: Any, predictions: Any, out: Any, sep: Any = " ") -> None:
    """``structkit.io.conll.write_conll``: each row of each sentence with its predicted label as
    a last column; ``predictions`` holds one label list per sentence, as long as it."""

    fn = "write_conll"
    _check_iterable(sentences, "sentences", fn)
    _check_iterable(predictions, "predictions", fn)
    _check_out(out, "out", fn)
    if sep not in (" ", "\t"):
        raise UserError(f"{fn}: sep must be ' ' or '\\t', got {sep!r}"[:200])
    preds = iter(predictions)
    for k, sent in enumerate(sentences):
        rows = _rows(sent, k, fn)
        pred = next(preds, None)
        if pred is None:
            raise UserError(f"{fn}: predictions has {k} label lists, fewer than the sentences")
        labels = _labels(pred, len(rows), "predictions", k, fn)
        if len(labels) != len(rows):
            raise UserError(f"{fn}: predictions[{k}] has {len(labels)} labels for {len(rows)} tokens")
        buf = io.StringIO()
        conll.write_conll([sent], [labels], buf, sep)
        _write(out, buf.getvalue(), "out", fn)
    if next(preds, None) is not None:
        raise UserError(f"{fn}: predictions has more label lists than the sentences")
    _flush(out, "out", fn)


def write_conllx(sentences: Any, stream: Any, heads: Any = None, deprels: Any = None) -> int:
    """``structkit.io.conllx.write_conllx`` with its arguments checked; returns the number of
    sentences written."""

    fn = "write_conllx"
    _check_iterable(sentences, "sentences", fn)
    _check_out(stream, "stream", fn)
    _check_iterable(heads, "heads", fn, none_ok=True)
    _check_iterable(deprels, "deprels", fn, none_ok=True)
    head_it = None if heads is None else iter(heads)
    rel_it = None if deprels is None else iter(deprels)
    count = 0
    for k, sent in enumerate(sentences):
        if not isinstance(sent, DocSentence):
            raise UserError(f"{fn}: sentences[{k}] must be a Sentence (as read_conllx gives), "
                            f"got {_kind(sent)}")
        h = r = None
        if head_it is not None:
            h = next(head_it, None)
            if h is None:
                raise UserError(f"{fn}: heads has {k} lists, fewer than the sentences")
            if isinstance(h, (str, bytes)) or not isinstance(h, Sequence) or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in h):
                raise UserError(f"{fn}: heads[{k}] must be a list of integers")
        if rel_it is not None:
            r = next(rel_it, None)
            if r is None:
                raise UserError(f"{fn}: deprels has {k} lists, fewer than the sentences")
            r = _labels(r, 0, "deprels", k, fn, "DEPREL")
        try:
            rows, lines = sent.rows, sent.lines
        except (ValueError, TypeError, AttributeError) as e:
            raise UserError(f"{fn}: sentences[{k}]: {e}"[:300]) from None
        for i, row in enumerate(rows):
            if not isinstance(row, (list, tuple)) or len(row) != 10 or not all(isinstance(c, str) for c in row):
                raise UserError(f"{fn}: sentences[{k}], word {i + 1}: expected ten CoNLL columns as strings")
            if lines is None:
                for c in row:
                    check_text(c, f"sentences[{k}], word {i + 1}", fn)
        for line in lines or ():
            check_text(line, f"sentences[{k}], a line", fn)
        buf = io.StringIO()
        try:
            conllx.write_conllx([sent], buf, None if h is None else [h], None if r is None else [r])
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            raise UserError(f"{fn}: sentences[{k}]: {e}"[:300]) from None
        _write(stream, buf.getvalue(), "stream", fn)
        count += 1
    for it, name in ((head_it, "heads"), (rel_it, "deprels")):
        if it is not None and next(it, None) is not None:
            raise UserError(f"{fn}: {name} has more lists than the {count} sentences")
    _flush(stream, "stream", fn)
    return count


def tokenize(text: Any, lang: Any = None, split: Any = "auto", tokenizer: Any = None) -> list:
    """``structkit.text.tokenize.tokenize``: the sentences of ``text`` (a str), by the rules of
    ``lang`` (default en) or by ``tokenizer``: a tokenizer model trained with ``structkit train
    --task tokenize`` (its path, or the model loaded) or a ``structkit.text.Tokenizer``."""

    check_text(text, "text", "tokenize")
    if lang is not None and not isinstance(lang, str):
        raise UserError(f"tokenize: lang must be a language code (a str), got {_kind(lang)}")
    if not isinstance(split, str):
        raise UserError(f"tokenize: split must be 'auto' or 'lines', got {_kind(split)}")
    if tokenizer is not None:
        if lang is not None:
            raise UserError("tokenize: give lang (rules) or tokenizer (a model), not both")
        return _tokenize(text, load_tokenizer(tokenizer, "tokenize"), split)
    return _tokenize(text, "en" if lang is None else lang, split)


# A few tokenizer models by file (path, size, modification time): a loop that tokenizes one text
# at a time with tokenizer="tok.model" reads the file once.
_TOKENIZER_CACHE: dict[tuple, Any] = {}
_TOKENIZER_CACHE_SIZE = 4


def load_tokenizer(tokenizer: Any, fn: str):
    """The ``structkit.text.Tokenizer`` of ``tokenizer``: a tokenizer model's path (read once
    while the file is unchanged), a loaded tokenizer model (``.tokenizer``) or a Tokenizer."""

    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if isinstance(getattr(tokenizer, "tokenizer", None), Tokenizer):
        return tokenizer.tokenizer
    if not isinstance(tokenizer, (str, os.PathLike)):
        raise UserError(f"{fn}: tokenizer must be the path of a tokenizer model (`structkit train "
                        f"--task tokenize`) or a loaded one, got {_kind(tokenizer)}")

    path = resolve_data_path(check_path(tokenizer, "tokenizer", fn), must_exist=True)
    try:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    hit = _TOKENIZER_CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    try:
        model = TOKENIZE.load(path)
    except UserError as e:
        why = e.message
        if "trained for task" in why:
            why += " (a tokenizer model is one of `structkit train --task tokenize`)"
        raise UserError(f"{fn}: tokenizer: {why}", e.path, e.line) from None
    if key is not None:
        while len(_TOKENIZER_CACHE) >= _TOKENIZER_CACHE_SIZE:
            _TOKENIZER_CACHE.pop(next(iter(_TOKENIZER_CACHE)))
        _TOKENIZER_CACHE[key] = model.tokenizer
    return model.tokenizer


def write_conllu(sentences: Any, out: Any, upos: Any = None, xpos: Any = None,
                 sent_id_prefix: Any = "", start: Any = 1, *, lemmas: Any = None, feats: Any = None,
                 heads: Any = None, deprels: Any = None) -> int:
    """Full CoNLL-U, HEAD and DEPREL included; returns the number of sentences written.

    ``sentences`` is a ``structkit.Doc`` (or a list of its sentences, or of Docs), written as
    ``doc.to_conllu()`` writes it; or sentences of tokens as ``tokenize`` gives them, written by
    ``structkit.text.conllu.write_conllu`` with each column from the lists given (``upos``,
    ``xpos``, ``lemmas``, ``feats``, ``deprels``: one string per syntactic word; ``heads``: one
    int per word, 0 for the root, as ``Parser.predict`` gives them)."""
    from structkit.text.base import Sentence

    fn = "write_conllu"
    if isinstance(sentences, Doc):
        sentences = sentences.sents
    _check_iterable(sentences, "sentences", fn)
    _check_out(out, "out", fn)
    columns = {"upos": upos, "xpos": xpos, "lemmas": lemmas, "feats": feats, "heads": heads,
               "deprels": deprels}
    for name, v in columns.items():
        _check_iterable(v, name, fn, none_ok=True)
    check_text(sent_id_prefix, "sent_id_prefix", fn)
    if any(c.isspace() for c in sent_id_prefix):
        raise UserError(f"{fn}: sent_id_prefix must not hold whitespace")
    _check_int(start, "start", fn, low=0, none_ok=False)
    its = {name: None if v is None else iter(v) for name, v in columns.items()}
    count = 0
    for k, sent in enumerate(sentences):
        if isinstance(sent, (Doc, DocSentence)):
            given = [name for name, v in columns.items() if v is not None]
            if given:
                raise UserError(f"{fn}: sentences[{k}] is a Doc, which carries its own columns: "
                                f"set them on its words rather than giving {given[0]}")
            text = sent.to_conllu()
            _write(out, text, "out", fn)
            count += len(sent.sents) if isinstance(sent, Doc) else 1
            continue
        if not isinstance(sent, Sentence) or not isinstance(sent.tokens, list) or not sent.tokens:
            raise UserError(f"{fn}: sentences[{k}] must be a Sentence of tokens (as tokenize "
                            f"gives) or a Doc, got {_kind(sent)}")
        lists = {}
        for name, it in its.items():
            if it is not None:
                t = next(it, None)
                if t is None:
                    raise UserError(f"{fn}: {name} has {k} lists, fewer than the sentences")
                if name == "heads":
                    if isinstance(t, (str, bytes)) or not isinstance(t, Iterable):
                        raise UserError(f"{fn}: heads[{k}] must be a list of integers, got {_kind(t)}")
                    lists[name] = [list(t)]
                else:
                    lists[name] = [_labels(t, 0, name, k, fn, "value")]
        buf = io.StringIO()
        try:
            conllu.write_conllu([sent], buf, lists.get("upos"), lists.get("xpos"),
                                sent_id_prefix, start + k, lemmas=lists.get("lemmas"),
                                feats=lists.get("feats"), heads=lists.get("heads"),
                                deprels=lists.get("deprels"))
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            raise UserError(f"{fn}: sentences[{k}]: {e}"[:300]) from None
        text = buf.getvalue()
        check_text(text, f"sentences[{k}]", fn)
        _write(out, text, "out", fn)
        count += 1
    for name, it in its.items():
        if it is not None and next(it, None) is not None:
            raise UserError(f"{fn}: {name} has more lists than the {count} sentences")
    _flush(out, "out", fn)
    return count


# ---- reading files into Python data ------------------------------------------------------------
def load_conll(path: str | os.PathLike, columns: str | None = None) -> tuple[list[list[tuple[str, ...]]],
                                                                     list[list[str]]]:
    """A labelled CoNLL column file as (X, y): token tuples without the label, label lists
    (``columns`` names the columns as ``--columns`` does, e.g. ``"word,pos,-,label"``)."""
    from structkit.io.conll import Columns, read_conll

    p = resolve_data_path(check_path(path, "path", "load_conll"), must_exist=True)
    if columns is not None and not isinstance(columns, str):
        raise UserError(f"load_conll: columns must be a str such as 'word,pos,label', got "
                        f"{type(columns).__name__}")
    X, y = [], []
    for s in read_conll(p):
        c = Columns.parse(columns) if columns else Columns.default(len(s.rows[0]), labelled=True)
        if c.label is None or c.max_index() >= len(s.rows[0]):
            raise UserError(f"expected a label column ({c.to_spec(len(s.rows[0]))})", p, s.first_line)
        keep = [i for i in (c.word, c.pos) if i is not None]
        X.append([tuple(r[i] for i in keep) for r in s.rows])
        y.append([r[c.label] for r in s.rows])
    return X, y


def load_conllx(path: str | os.PathLike) -> tuple[list[list[tuple[str, str]]], list[list[int] | None]]:
    """A CoNLL-X/CoNLL-U (or `word POS`) file as (X, heads): (word, pos) tuples (the parser's
    POS: XPOS, else UPOS) and head lists (None for a sentence without heads)."""
    from structkit.io.conllx import read_conllx
    from structkit.parse.parser import pos_column

    X, heads = [], []
    for s in read_conllx(resolve_data_path(check_path(path, "path", "load_conllx"), must_exist=True)):
        X.append(list(zip(s.forms, pos_column(s, "xpos"))))
        heads.append(s.heads)
    return X, heads
