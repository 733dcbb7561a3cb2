"""The all-array tagging path for CoNLL column files: ``SequenceTagger.tag_conll_bytes``.

A block of a column file goes through the kernels of ``structkit.sequence.search.fast`` (scan, word and
POS lookups, features, decoding, output bytes) with the GIL released; Python only computes the
attributes of the words the model has never seen (once per distinct word of the block). The
output is byte for byte what ``read_sequence`` -> ``tag_batches`` -> ``write_conll`` write.

What the kernels leave alone goes through that reader and writer instead (``slow_bytes``):
CoNLL-U, templates that read named columns, input the scanner flags (an error to report, bytes
that are not UTF-8, non-ASCII whitespace), a column layout the model refuses.

The model-side arrays (template tables, the non-zero rows of W, hash tables of the model's words
and POS tags) are built once per tagger, under a lock, and only read afterwards: the path is
thread-safe. The table of the model's words (its attributes computed once per word, about 50 ms
for a chunker) is built only for a large block; a small one computes the attributes of its own
words.
"""
from __future__ import annotations

import io
import threading
from itertools import chain, repeat

import numpy as np

from structkit.errors import UserError
from structkit.io.conll import read_conll, write_conll
from structkit.io.conllu import _conllu_signs, read_sequence, write_tagged
from structkit.jit import numba_loaded
from structkit.sequence.features import ABSENT, UNK, Encoded
from structkit.sequence.search import fast
from structkit.sequence.search.fast import StringIds, Templates, build_key_tables, build_table
from structkit.sequence.templates import (
    AMB_UNKNOWN,
    LEXICON_ATTRS,
    VECTOR_ATTRS,
    WORD_ATTRS,
    word_attribute,
    word_case,
    word_shape,
)

# "SequenceTagger" in the annotations below is structkit.sequence.task's, which imports this
# module lazily (this module does not import it back).

DOCSTART = np.frombuffer(b"-DOCSTART-", dtype=np.uint8)
MEDLINE = np.frombuffer(b"###MEDLINE:", dtype=np.uint8)
BOM = b"\xef\xbb\xbf"
# A block of fewer bytes is tagged by the reader and a numpy decoder when numba is not loaded
# yet (its import costs more than tagging a few thousand tokens the slow way).
SMALL_BYTES = 64 * 1024
# A block with more tokens than this builds (once per tagger) the table of the model's words.
KNOWN_TABLE_TOKENS = 20000

# A template with at most this many possible keys (a single atom, POS n-grams) gets a direct
# table of feature ids; the others (word n-grams) a hash table of their known keys.
DENSE_KEYS = 1 << 20

_locks_lock = threading.Lock()


def _lock_of(tagger) -> threading.Lock:
    """The tagger's own lock for building its Prepared arrays."""
    lock = tagger.__dict__.get("_fast_lock")
    if lock is None:
        with _locks_lock:
            lock = tagger.__dict__.setdefault("_fast_lock", threading.Lock())
    return lock


# ---- word attributes, per distinct word --------------------------------------------------------
def _values(attr: str, words: list[str], features) -> list[str | None]:
    """``word_attribute(attr, w)`` for each word (``amb``: the lexicon's class; ``vc1-4``: the
    word clusters'), fast forms for the common attributes."""
    lexicon = features.lexicon
    if attr in VECTOR_ATTRS:
        return features.vector_values(attr, words)
    if attr == "w":
        return words
    if attr == "lw":
        return [w.lower() for w in words]
    if attr == "amb":
        return [lexicon.get(w.lower(), AMB_UNKNOWN) for w in words]
    if attr.startswith("pre") and attr[3:].isdigit():
        n = int(attr[3:])
        return [w[:n] if len(w) >= n else None for w in words]
    if attr.startswith("suf") and attr[3:].isdigit():
        n = int(attr[3:])
        return [w[-n:] if len(w) >= n else None for w in words]
    if attr.startswith("lsuf") and attr[4:].isdigit():
        n = int(attr[4:])
        return [w[-n:].lower() if len(w) >= n else None for w in words]
    if attr == "cap":
        return ["1" if w[:1].isupper() else None for w in words]
    if attr == "hyph":
        return ["1" if "-" in w else None for w in words]
    if attr == "digit":
        return ["1" if any(c.isdigit() for c in w) else None for w in words]
    if attr == "shape":
        return [word_shape(w) for w in words]
    if attr == "case":
        return [word_case(w) for w in words]
    return [word_attribute(attr, w) for w in words]


def word_attribute_ids(features, attrs: list[str], words: list[str]) -> np.ndarray:
    """[len(words), len(attrs)] attribute ids of each word, as the feature space looks them
    up on new text (``FeatureSpace._attribute_ids`` with grow=False)."""
    out = np.empty((len(words), len(attrs)), dtype=np.int64)
    index = getattr(features, "_index", None)
    for k, a in enumerate(attrs):
        values = _values(a, words, features)
        if index is not None and hasattr(index.get(a), "get"):
            get = index[a].get     # the vocabulary's dict: _lookup without a call per value
            out[:, k] = [ABSENT if v is None else get(v, UNK) for v in values] if words else []
        else:
            out[:, k] = [features._lookup(a, v, False) for v in values] if words else []
    return out


# ---- what a tagger needs for the fast path, built once -------------------------------------------
class Prepared:
    """A tagger's arrays for the kernels (read-only once built)."""

    def __init__(self, tagger: "SequenceTagger", compact: bool):
        fs = tagger.features
        self.source = (tagger.weights, fs)   # rebuilt if the tagger gets other weights
        self.attrs = list(fs.attrs)
        self.word_attrs = [a for a in self.attrs if a in WORD_ATTRS or a in LEXICON_ATTRS or a in VECTOR_ATTRS]
        self.word_cols = np.array([self.attrs.index(a) for a in self.word_attrs], dtype=np.int64)
        self.pos_col = self.attrs.index("p") if "p" in self.attrs else -1
        self.bias_col = self.attrs.index("bias") if "bias" in self.attrs else -1
        self.bias_id = fs._lookup("bias", "1", False) if self.bias_col >= 0 else 0
        tpls = fs.templates
        n_tpl = len(tpls)
        width = max(len(t.atoms) for t in tpls)
        self.n_atoms = np.array([len(t.atoms) for t in tpls], dtype=np.int64)
        self.atom_attr = np.zeros((n_tpl, width), dtype=np.int64)
        self.atom_off = np.zeros((n_tpl, width), dtype=np.int64)
        self.atom_radix = np.ones((n_tpl, width), dtype=np.int64)
        for j, t in enumerate(tpls):
            for q, (a, off) in enumerate(t.atoms):
                self.atom_attr[j, q] = self.attrs.index(a)
                self.atom_off[j, q] = off
                self.atom_radix[j, q] = fs._radix(a)
        nf = fs.n_features
        W = tagger.weights.W
        if compact:
            # the non-zero rows of W, and each feature id's row among them (-1: a zero row)
            nz = np.flatnonzero(np.any(W != 0, axis=1))
            self.W = np.ascontiguousarray(W[nz])
            self.fid_map = np.full(nf, -1, dtype=np.int32)
            self.fid_map[nz] = np.arange(len(nz), dtype=np.int32)
        else:
            self.W = W
            self.fid_map = np.arange(nf, dtype=np.int32)
        self.T = np.ascontiguousarray(tagger.weights.T, dtype=np.float64)
        self.starts = np.asarray(fs.starts, dtype=np.int64)
        self.keys = (np.concatenate([np.asarray(k, dtype=np.int64) for k in fs.keys])
                     if fs.keys else np.zeros(0, dtype=np.int64))
        dense, dense_off, at = [], np.full(n_tpl, -1, dtype=np.int64), 0
        for j, t in enumerate(tpls):
            space = int(np.prod([fs._radix(a) for a, _ in t.atoms], dtype=object))
            if space <= DENSE_KEYS:
                table = np.full(space, -1, dtype=np.int32)
                k = fs.keys[j]
                table[k] = self.fid_map[self.starts[j]:self.starts[j] + len(k)]
                dense.append(table)
                dense_off[j] = at
                at += len(table)
        self.dense = np.concatenate(dense) if dense else np.zeros(0, dtype=np.int32)
        self.dense_off = dense_off
        # the POS tags the model knows, as bytes
        if self.pos_col >= 0:
            tags = [str(t) for t in list(fs.vocab["p"])[4:]]
            self.pos_buf, self.pos_off = _pack(tags)
            self.pos_ids = np.array([fs._lookup("p", t, False) for t in tags], dtype=np.int64)
        else:
            self.pos_buf, self.pos_off = np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
            self.pos_ids = np.zeros(0, dtype=np.int64)
        self.multi = self.dense_off < 0
        self.pos_slots = None
        self.lab_buf, self.lab_off = _pack(tagger.labels)
        self.known = None    # (slots, buf, off, rows) of the model's words, built on demand
        self.no_known = (np.zeros(16, dtype=np.int64), np.zeros(0, dtype=np.uint8),
                         np.zeros(1, dtype=np.int64), np.zeros((0, len(self.word_attrs)), dtype=np.int64))

    def kernels_ready(self) -> None:
        """The hash tables (built by a kernel, so after numba is loaded)."""

        if self.pos_slots is None:
            self.hkeys, self.hvals, self.hoff, self.hmask = build_key_tables(
                self.keys, self.starts, self.fid_map, self.multi)
            self.templates = Templates(self.n_atoms, self.atom_attr, self.atom_off, self.atom_radix,
                                       self.dense, self.dense_off, self.hkeys, self.hvals, self.hoff,
                                       self.hmask)
            self.pos_table = StringIds(build_table(self.pos_buf, self.pos_off), self.pos_buf,
                                       self.pos_off, self.pos_ids)
            self.pos_slots = self.pos_table.slots

    def known_words(self, tagger: "SequenceTagger"):
        if self.known is None:
            words = [str(w) for w in list(tagger.features.vocab["w"])[4:]] if "w" in tagger.features.attrs else []
            buf, off = _pack(words)
            rows = word_attribute_ids(tagger.features, self.word_attrs, words)
            self.known = (build_table(buf, off), buf, off, rows)
        return self.known


def _pack(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    enc = [s.encode("utf-8") for s in strings]
    off = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in enc], out=off[1:])
    return np.frombuffer(b"".join(enc), dtype=np.uint8).copy(), off


def prepared(tagger: "SequenceTagger", compact: bool, known: bool) -> Prepared:
    """The tagger's Prepared arrays (built once, under a lock)."""
    cache = tagger.__dict__.get("_fast_prepared")
    p = cache.get(compact) if cache else None
    if (p is not None and p.pos_slots is not None and (not known or p.known is not None)
            and p.source[0] is tagger.weights and p.source[1] is tagger.features):
        return p
    with _lock_of(tagger):
        cache = tagger.__dict__.setdefault("_fast_prepared", {})
        p = cache.get(compact)
        if p is None or p.source[0] is not tagger.weights or p.source[1] is not tagger.features:
            p = Prepared(tagger, compact)
        p.kernels_ready()
        if known:
            p.known_words(tagger)
        cache[compact] = p
    return p


# ---- the block path ----------------------------------------------------------------------------
def fast_supported(tagger: "SequenceTagger") -> bool:
    """Whether the kernels can featurise for this model (no named-column attributes, a model
    trained on column files)."""
    return not tagger.features.column_attrs and not tagger.columns.conllu


def tag_block(tagger: "SequenceTagger", data: bytes, path: str, first_line: int = 1,
              columns_spec: str | None = None, depth: int | None = None,
              n_columns: int | None = None, force: bool = False) -> tuple[bytes, int | None]:
    """(output bytes, the column count of the block's rows) for a block of a column file;
    ``force``: the kernels even for a small block before numba is loaded."""

    if not fast_supported(tagger) or (len(data) < SMALL_BYTES and not numba_loaded() and not force):
        return slow_bytes(tagger, data, path, first_line, columns_spec, depth, n_columns)
    if first_line == 1 and _looks_conllu(data, path):
        return slow_bytes(tagger, data, path, first_line, columns_spec, depth, n_columns)

    arr = np.frombuffer(data, dtype=np.uint8)
    start = 3 if first_line == 1 and data.startswith(BOM) else 0
    status, ncols, cs, ce, tab, offsets = fast.scan_conll(
        arr, start, -1 if n_columns is None else int(n_columns), DOCSTART, MEDLINE)
    if status != fast.OK:
        return slow_bytes(tagger, data, path, first_line, columns_spec, depth, n_columns)
    if len(offsets) == 1:   # no sentences
        if first_line == 1:
            return slow_bytes(tagger, data, path, first_line, columns_spec, depth, n_columns)
        return b"", n_columns
    try:
        columns, _ = tagger.input_columns(ncols, columns_spec, False)
    except ValueError:
        return slow_bytes(tagger, data, path, first_line, columns_spec, depth, n_columns)
    if columns.max_index() >= ncols or (tagger.features.uses_pos and columns.pos is None):
        return slow_bytes(tagger, data, path, first_line, columns_spec, depth, n_columns)
    viterbi = tagger.config.spec.decoder == "viterbi"
    n_tok = cs.shape[0]
    p = prepared(tagger, viterbi, n_tok > KNOWN_TABLE_TOKENS)
    slots, buf, off, known_rows = p.known if p.known is not None else p.no_known
    ws = np.ascontiguousarray(cs[:, columns.word])
    we = np.ascontiguousarray(ce[:, columns.word])
    ids, first = fast.word_types(arr, ws, we, slots, buf, off)
    words = [data[ws[t]:we[t]].decode("utf-8") for t in first.tolist()]
    unk_rows = word_attribute_ids(tagger.features, p.word_attrs, words)
    if p.pos_col >= 0:
        ps = np.ascontiguousarray(cs[:, columns.pos])
        pe = np.ascontiguousarray(ce[:, columns.pos])
    else:
        ps = pe = ws
    A = fast.attribute_matrix(arr, ids, known_rows, unk_rows, p.word_cols, p.pos_col, ps, pe,
                              p.pos_table, p.bias_col, p.bias_id, len(p.attrs))
    out = np.zeros(n_tok, dtype=np.int32)
    if viterbi:
        fast.tag_viterbi(A, offsets, p.templates, p.W, p.T, out)
    else:
        indptr, indices = fast.featurise(A, offsets, p.templates)
        out = tagger.predict_ids(Encoded(indptr, indices, offsets, None), depth=depth)
    return fast.write_rows(arr, cs, ce, tab, offsets, out, p.lab_buf, p.lab_off).tobytes(), ncols


def _looks_conllu(data: bytes, path: str) -> bool:
    """``read_sequence``'s test on the head of a file: CoNLL-U or CoNLL columns."""

    head: list[bytes] = []
    line = ""
    for raw in io.BytesIO(data):
        head.append(raw)
        line = raw.decode("utf-8", "replace")
        if (line.strip() and not line.startswith("#")) or len(head) >= 10000:
            break
    return _conllu_signs(path, head, line)


def slow_bytes(tagger: "SequenceTagger", data: bytes, path: str, first_line: int = 1,
               columns_spec: str | None = None, depth: int | None = None,
               n_columns: int | None = None) -> tuple[bytes, int | None]:
    """The reader, ``tag_batches`` and the writers of ``structkit chunk/tag/ner``, on a block
    (line numbers counted from ``first_line``)."""

    stream = io.BytesIO(data)
    if first_line == 1 and n_columns is None:
        sents = read_sequence(path, stream)
    else:
        # blank lines in front keep the reader's line numbers (and change nothing else)
        sents = read_conll(path, chain(repeat(b"\n", first_line - 1), stream), n_columns=n_columns)
    out = io.StringIO()
    ncols = n_columns
    column, key = tagger.output_column()
    try:
        for batch, labels in tagger.tag_batches(sents, path, columns_spec, False, depth=depth):
            if ncols is None:
                ncols = len(batch[0].rows[0])
            if batch[0].lines is not None:
                write_tagged(batch, labels, out, column, key)
            else:
                write_conll(batch, labels, out)
    except UserError as e:
        if first_line > 1 and e.line is None and e.message == "empty file: no sentences found":
            return b"", n_columns   # a block of blank lines within a file
        raise
    return out.getvalue().encode("utf-8"), ncols
