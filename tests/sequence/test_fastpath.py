"""The all-array tagging path (``structkit.sequence.fastpath``, kernels in ``structkit.sequence.search.fast``).

Each kernel against a plain-Python reference on random inputs (the reader, dicts, brute force,
the existing decoders and writer); then ``SequenceTagger.tag_conll_bytes`` against the path it
replaces (``read_sequence`` -> ``tag_batches`` -> ``write_conll``), byte for byte, on the shipped
samples and on odd inputs, with the same errors (message, file, line).
"""
from __future__ import annotations

import io
import itertools
import threading
from pathlib import Path

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.sequence.features import Encoded
from structkit.io.conll import read_conll, write_conll
from structkit.io.conllu import read_sequence, write_tagged
from structkit.sequence.chain import Weights
from structkit.sequence.search import fast
from structkit.sequence.search.decoders import viterbi_numpy
from structkit.sequence.search.viterbi import decode_corpus
from structkit.sequence import fastpath
from structkit.io import blocks as cutter
from structkit.io.blocks import iter_blocks
from structkit.sequence.task import SequenceTagger, TaggerConfig, train_tagger

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "structkit" / "data" / "sample"
DOC = fastpath.DOCSTART
MED = fastpath.MEDLINE


# ---- references --------------------------------------------------------------------------------
def old_path(tagger, data: bytes, path: str = "in.txt", columns=None, depth=None) -> bytes:
    """What ``structkit chunk/tag/ner`` wrote for a file of these bytes before the fast path."""
    out = io.StringIO()
    column, key = tagger.output_column()
    for batch, labels in tagger.tag_batches(read_sequence(path, io.BytesIO(data)), path, columns, False,
                                            depth=depth):
        if batch[0].lines is not None:
            write_tagged(batch, labels, out, column, key)
        else:
            write_conll(batch, labels, out)
    return out.getvalue().encode("utf-8")


def error_of(fn):
    try:
        fn()
    except UserError as e:
        return (e.message, e.path, e.line)
    return None


@pytest.fixture(scope="module")
def taggers():
    out = {}
    for task, d in (("chunk", "chunk"), ("ner", "ner"), ("pos", "pos")):
        out[task] = train_tagger(TaggerConfig(task=task, epochs=2), str(SAMPLE / d / "train.txt"))
    out["greedy"] = train_tagger(TaggerConfig(task="chunk", algo="greedy", epochs=2),
                                 str(SAMPLE / "chunk" / "train.txt"))
    return out


# ---- random column files -----------------------------------------------------------------------
WORDS = ["the", "The", "dog", "New", "York", "U.S.", "1,234", "co-op", "naïve", "Straße", "ΣΑΣ",
         "日本", "x", "A", "ALL-CAPS", "3rd", "é", "'s", ",", ".", "Mr.", "☃", "zzqqx", "e\u0301",
         "IBM", "a\u00adb", "२०", "ǅemal"]
POS = ["NN", "NNP", "DT", "VB", "JJ", ",", ".", "CD", "XX"]


def random_file(rng, n_sent=6, ncols=3, labels=("B-NP", "I-NP", "O"), odd=True) -> bytes:
    """A column file with random words and POS tags, and (odd) random separators, CRLF,
    blank-line runs, document markers, a BOM, a missing final newline."""
    lines = []
    for s in range(n_sent):
        if odd and rng.random() < 0.2:
            lines.append(rng.choice(["-DOCSTART- -X- O", "  -DOCSTART-", "###MEDLINE:123"]))
        for _ in range(int(rng.integers(1, 7))):
            cols = [str(rng.choice(WORDS)), str(rng.choice(POS)), str(rng.choice(labels))][:ncols]
            if odd and rng.random() < 0.4:
                sep = str(rng.choice(["\t", " \t", "\t "]))
                if rng.random() < 0.3:
                    cols[0] = cols[0] + " " + str(rng.choice(WORDS))   # a space inside a tab column
            else:
                sep = str(rng.choice([" ", "  ", " \x0b", "\x1c "])) if odd else " "
            line = sep.join(cols)
            if odd and rng.random() < 0.2:
                line = "  " + line + " \r"
            lines.append(line)
        for _ in range(int(rng.integers(1, 4)) if odd else 1):
            lines.append(str(rng.choice(["", " ", "\r", "\t"])) if odd else "")
    eol = "\r\n" if odd and rng.random() < 0.3 else "\n"
    text = eol.join(lines)
    if not odd or rng.random() < 0.5:
        text += eol
    data = text.encode("utf-8")
    if odd and rng.random() < 0.2:
        data = b"\xef\xbb\xbf" + data
    return data


# ---- 1. the scanner -----------------------------------------------------------------------------
def test_unicode_whitespace_list_is_pythons():
    spaces = [c for c in range(0x80, 0x110000) if chr(c).isspace()]
    assert [c for c in range(0x80, 0x110000) if fast._unicode_space(c)] == spaces
    assert [b for b in range(128) if fast.is_ws(b)] == [b for b in range(128) if chr(b).isspace()]


def _utf8_reference(b: bytes) -> bool:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(c.isspace() and ord(c) > 127 for c in s)


def test_utf8_plain_vs_python_decoder():
    rng = np.random.default_rng(0)
    pieces = [b"a", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xc2\xa0", b"\xe3\x80\x80",
              b"\xe2\x80\xa8", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
              b"\xf0\x80\x80\x80", b"\xff", b"\x80", b"\xe2\x82", b"\xf4\x8f\xbf\xbf", b"\xef\xbf\xbf",
              b"\xc2\x85", b"\xe1\x9a\x80", b"\xe2\x81\x9f", b"\xed\x9f\xbf"]
    cases = [b"".join(rng.choice(pieces, size=int(rng.integers(0, 5)))) for _ in range(400)]
    cases += [bytes(rng.integers(0, 256, size=int(rng.integers(0, 6)), dtype=np.uint8)) for _ in range(2000)]
    for b in cases:
        arr = np.frombuffer(b, dtype=np.uint8)
        assert fast.utf8_plain(arr, 0) == _utf8_reference(b), b


def _scan(data: bytes, start=0, expected=-1):
    return fast.scan_conll(np.frombuffer(data, dtype=np.uint8), start, expected, DOC, MED)


def check_scan(data: bytes, expected=None):
    start = 3 if data.startswith(fastpath.BOM) else 0
    status, ncols, cs, ce, tab, offsets = _scan(data, start, -1 if expected is None else expected)
    try:
        sents = list(read_conll("f", io.BytesIO(data), n_columns=expected))
        err = None
    except UserError as e:
        sents, err = [], e
    if err is not None and err.message.startswith("empty file"):
        assert status == fast.SLOW or len(offsets) == 1   # no sentences: the caller's to report
        return status
    if err is not None:
        assert status == fast.SLOW
        return status
    if status == fast.SLOW:
        # the reader's input that the scanner leaves to it: a non-ASCII space somewhere
        assert any(c.isspace() and ord(c) > 127 for c in data.decode("utf-8"))
        return status
    rows = [[[data[cs[t, c]:ce[t, c]].decode("utf-8") for c in range(ncols)]
             for t in range(offsets[s], offsets[s + 1])] for s in range(len(offsets) - 1)]
    assert rows == [s.rows for s in sents]
    flat = [r for s in sents for r in s.rows]
    assert tab.tolist() == [any(c.split() != [c] for c in r) for r in flat]
    return status


def test_scan_vs_reader_on_random_files():
    rng = np.random.default_rng(1)
    n_ok = 0
    for _ in range(300):
        n_ok += check_scan(random_file(rng, n_sent=int(rng.integers(1, 5)))) == fast.OK
    assert n_ok > 200


@pytest.mark.parametrize("data", [
    b"", b"\n\n", b"a b\n", b"a b", b"a b\n\nc d\n", b"a b\nc\n", b"a\tb\t\n", b"a\t\tb\n", b"a\t b \n",
    b"a \tb\n", b"a\xa0b c\n", "a\u00a0b c\n".encode(), "a\u3000b\n".encode(), b"a b\r\n\r\nc d\r\n",
    b"-DOCSTART- -X- O\na b\n", b"  ###MEDLINE:1\na b\n", b"-DOCSTART-x y\n", b"#a b\nc d\n",
    b"a b\n \x0c\nc d\n", b"a\x1cb c\n", b"a\x1cb\tc\n", b"\xef\xbb\xbfa b\n", b"a b\nc d e\n",
    b"a\rb c\n", b"a\tb\r\n", "é\tb\n".encode(), b"a\x85b\n", "a\x85 b\n".encode(),
])
def test_scan_edge_cases(data):
    check_scan(data)
    check_scan(data, expected=2)


# ---- 2. hash tables --------------------------------------------------------------------------
def _pack(strings):
    return fastpath._pack(strings)


def test_tables_vs_dict():
    rng = np.random.default_rng(2)
    for _ in range(30):
        vocab = ["".join(rng.choice(list("abé日 -"), size=int(rng.integers(0, 5)))) for _ in range(int(rng.integers(0, 40)))]
        buf, off = _pack(vocab)
        slots = fast.build_table(buf, off)
        first = {}
        for i, w in enumerate(vocab):
            first.setdefault(w, i)
        probes = vocab + ["".join(rng.choice(list("abé日 -"), size=int(rng.integers(0, 5)))) for _ in range(40)]
        for w in probes:
            b = w.encode()
            got = fast.lookup(slots, buf, off, np.frombuffer(b, dtype=np.uint8), 0, len(b))
            assert got == first.get(w, -1)
        # word_types: known index or the rank of first appearance among unknowns
        data = " ".join(probes).encode()
        spans = [(m.start(), m.end()) for m in __import__("re").finditer(rb"[^ ]+", data)]
        ws = np.array([a for a, _ in spans], dtype=np.int64)
        we = np.array([b for _, b in spans], dtype=np.int64)
        ids, firsts = fast.word_types(np.frombuffer(data, dtype=np.uint8), ws, we, slots, buf, off)
        unk: dict[bytes, int] = {}
        ref_ids, ref_first = [], []
        for t, (a, b) in enumerate(spans):
            w = data[a:b].decode()
            if w in first:
                ref_ids.append(first[w])
            else:
                if data[a:b] not in unk:
                    unk[data[a:b]] = len(unk)
                    ref_first.append(t)
                ref_ids.append(-(unk[data[a:b]] + 1))
        assert ids.tolist() == ref_ids
        assert firsts.tolist() == ref_first


# ---- 3. attributes, features --------------------------------------------------------------------
def test_word_attribute_ids_vs_feature_space(taggers):
    rng = np.random.default_rng(3)
    words = list(WORDS) + ["".join(rng.choice(WORDS, size=2)) for _ in range(50)] + ["", "-", "1"]
    for name in ("chunk", "ner", "pos"):
        fs = taggers[name].features
        attrs = [a for a in fs.attrs if a not in ("p", "bias")]
        got = fastpath.word_attribute_ids(fs, attrs, words)
        ref = fs._attribute_ids(words, ["NN"] * len(words), grow=False)
        for k, a in enumerate(attrs):
            assert got[:, k].tolist() == ref[a].tolist(), a


def _prepared_arrays(tagger, data: bytes, compact: bool, known: bool):
    arr = np.frombuffer(data, dtype=np.uint8)
    status, ncols, cs, ce, tab, offsets = _scan(data)
    assert status == fast.OK
    columns, _ = tagger.input_columns(ncols, None, False)
    p = fastpath.prepared(tagger, compact, known)
    slots, buf, off, rows = p.known if known else p.no_known
    ws, we = np.ascontiguousarray(cs[:, columns.word]), np.ascontiguousarray(ce[:, columns.word])
    ids, first = fast.word_types(arr, ws, we, slots, buf, off)
    words = [data[ws[t]:we[t]].decode() for t in first.tolist()]
    unk = fastpath.word_attribute_ids(tagger.features, p.word_attrs, words)
    ps = np.ascontiguousarray(cs[:, columns.pos]) if p.pos_col >= 0 else ws
    pe = np.ascontiguousarray(ce[:, columns.pos]) if p.pos_col >= 0 else we
    A = fast.attribute_matrix(arr, ids, rows, unk, p.word_cols, p.pos_col, ps, pe, p.pos_table,
                              p.bias_col, p.bias_id, len(p.attrs))
    return p, A, offsets, cs, ce, tab, columns


@pytest.mark.parametrize("name", ["chunk", "ner", "pos"])
@pytest.mark.parametrize("known", [False, True])
def test_features_vs_feature_space(taggers, name, known):
    tagger = taggers[name]
    rng = np.random.default_rng(4)
    for k in range(6):
        data = (SAMPLE / name / "test.txt").read_bytes() if k == 0 else random_file(
            rng, ncols=tagger.n_columns, odd=False)
        p, A, offsets, cs, ce, tab, columns = _prepared_arrays(tagger, data, False, known)
        sents = list(read_conll("f", io.BytesIO(data)))
        words = [r[columns.word] for s in sents for r in s.rows]
        pos = [r[columns.pos] for s in sents for r in s.rows] if columns.pos is not None else None
        ref = tagger.features._attribute_ids(words, pos, grow=False)
        for i, a in enumerate(p.attrs):
            assert A[i].tolist() == ref[a].tolist(), a
        indptr, indices = fast.featurise(A, offsets, p.templates)
        r_indptr, r_indices = tagger.features.transform(words, pos, offsets)
        assert indptr.tolist() == r_indptr.tolist()
        assert indices.tolist() == r_indices.tolist()


def test_compact_tables_drop_exactly_the_zero_rows(taggers):
    tagger = taggers["chunk"]
    p = fastpath.prepared(tagger, True, False)
    W = tagger.weights.W
    nz = np.flatnonzero(np.any(W != 0, axis=1))
    assert np.array_equal(p.W, W[nz])
    assert (p.fid_map[nz] == np.arange(len(nz))).all() and (np.delete(p.fid_map, nz) == -1).all()


# ---- 4. decoding ---------------------------------------------------------------------------------
def _brute(E, n, T):
    L = E.shape[1]
    best = None
    for seq in itertools.product(range(L), repeat=n):
        s = T[L, seq[0]] + E[0, seq[0]] + sum(T[seq[t - 1], seq[t]] + E[t, seq[t]] for t in range(1, n))
        s += T[seq[-1], L]
        if best is None or s > best:
            best = s
    return best


@pytest.mark.parametrize("ties", [False, True])
def test_viterbi_rows_vs_enumeration_and_its_tie_rule(ties):
    """fast.viterbi_rows (viterbi.viterbi_ws, in one work space reused for every sentence, as the
    block path does) against enumeration: the best score, and on ties the sequence the documented
    rule picks (lowest best predecessor, traceback from the lowest best final label: seqref's
    tie_key, exact on integer scores)."""
    from seqref import tie_key

    rng = np.random.default_rng(5)
    delta, back, top = np.full((6, 6), np.nan), np.full((6, 6), -7, dtype=np.int32), np.full(6, np.nan)
    n_ties = 0
    for _ in range(200):
        n, L = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        draw = (lambda *s: rng.integers(-2, 3, size=s).astype(float)) if ties else (lambda *s: rng.normal(size=s))
        E, T = draw(n, L), draw(L + 1, L + 1)
        out = np.full(n, -1, dtype=np.int32)
        got = fast.viterbi_rows(E, n, T, out, delta, back, top[:L])
        seqs = list(itertools.product(range(L), repeat=n))
        want = min(seqs, key=lambda q: tie_key(q, E, T))
        assert tuple(out.tolist()) == want
        assert got == pytest.approx(_brute(E, n, T), abs=1e-9)
        best = _brute(E, n, T)
        n_ties += sum(1 for q in seqs if abs(-tie_key(q, E, T)[0] - best) < 1e-9) > 1
    assert (n_ties > 0) == ties  # the integer draws do exercise the tie rule


def _random_corpus(rng, NF, ties):
    lens = rng.integers(0, 6, size=int(rng.integers(1, 8)))
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    n = int(offsets[-1])
    rows = [rng.integers(0, NF, size=int(rng.integers(0, 5))) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = (np.concatenate(rows) if rows else np.zeros(0)).astype(np.int32)
    return Encoded(indptr, indices, offsets, None)


@pytest.mark.parametrize("ties", [False, True])
def test_numpy_viterbi_and_compact_emissions_vs_decode_corpus(ties):
    rng = np.random.default_rng(6)
    for _ in range(100):
        L, NF = int(rng.integers(1, 5)), 12
        W = rng.integers(-2, 3, size=(NF, L)).astype(float) if ties else rng.normal(size=(NF, L))
        W[rng.random(NF) < 0.4] = 0.0                     # zero rows, as trained models have many
        T = rng.integers(-2, 3, size=(L + 1, L + 1)).astype(float) if ties else rng.normal(size=(L + 1, L + 1))
        enc = _random_corpus(rng, NF, ties)
        ref = np.zeros(enc.n_tokens, dtype=np.int32)
        decode_corpus(enc.indptr, enc.indices, enc.offsets, W, T, ref)
        assert viterbi_numpy(enc, Weights(W, T)).tolist() == ref.tolist()
        # the compact rows: features of zero rows map to -1 and are skipped
        nz = np.flatnonzero(np.any(W != 0, axis=1))
        fid_map = np.full(NF, -1, dtype=np.int32)
        fid_map[nz] = np.arange(len(nz))
        E = np.zeros((max(enc.n_tokens, 1), L))
        fast.emissions_rows(enc.indptr, fid_map[enc.indices], np.ascontiguousarray(W[nz]), 0, enc.n_tokens, E)
        E2 = np.zeros_like(E)
        fast.emissions_rows(enc.indptr, enc.indices, W, 0, enc.n_tokens, E2)
        assert np.array_equal(E, E2)
        got = np.zeros(enc.n_tokens, dtype=np.int32)
        fast.decode_rows(enc.indptr, fid_map[enc.indices], enc.offsets, np.ascontiguousarray(W[nz]), T, got)
        assert got.tolist() == ref.tolist()


def test_predict_ids_on_compact_rows_as_on_full_weights(taggers):
    """A tagger decodes with its compact W; the labels are those of the full W."""
    rng = np.random.default_rng(15)
    for name in ("chunk", "ner", "pos"):
        tagger = taggers[name]
        data = random_file(rng, n_sent=30, ncols=tagger.n_columns, odd=False)
        sents = list(read_conll("f", io.BytesIO(data)))
        words = [r[0] for s in sents for r in s.rows]
        pos = [r[1] for s in sents for r in s.rows] if tagger.features.uses_pos else None
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in sents])]).astype(np.int64)
        enc = tagger.encode(words, pos, offsets)
        ref = np.zeros(len(words), dtype=np.int32)
        decode_corpus(enc.indptr, enc.indices, offsets, tagger.weights.W, tagger.weights.T, ref)
        assert tagger.predict_ids(enc).tolist() == ref.tolist()
        assert tagger.predict_ids(enc, tagger.weights).tolist() == ref.tolist()
    # new weights on a tagger: its compact rows follow
    tagger = train_tagger(TaggerConfig(task="chunk", epochs=1), str(SAMPLE / "chunk" / "train.txt"))
    data = (SAMPLE / "chunk" / "test.txt").read_bytes()
    before = old_path(tagger, data)
    assert tagger.tag_conll_bytes(data, "t") == before
    W = tagger.weights
    tagger.weights = Weights(-W.W, -W.T)
    assert tagger.tag_conll_bytes(data, "t") == old_path(tagger, data) != before


def test_tag_viterbi_vs_decode_corpus(taggers):
    rng = np.random.default_rng(7)
    for name in ("chunk", "ner", "pos"):
        tagger = taggers[name]
        for _ in range(4):
            data = random_file(rng, n_sent=10, ncols=tagger.n_columns, odd=False)
            p, A, offsets, *_ = _prepared_arrays(tagger, data, True, False)
            out = np.zeros(A.shape[1], dtype=np.int32)
            fast.tag_viterbi(A, offsets, p.templates, p.W, p.T, out)
            sents = list(read_conll("f", io.BytesIO(data)))
            words = [r[0] for s in sents for r in s.rows]
            pos = [r[1] for s in sents for r in s.rows] if tagger.features.uses_pos else None
            indptr, indices = tagger.features.transform(words, pos, offsets)
            ref = np.zeros(len(words), dtype=np.int32)
            decode_corpus(indptr, indices, offsets, tagger.weights.W, tagger.weights.T, ref)
            assert out.tolist() == ref.tolist()


# ---- 5. writing -----------------------------------------------------------------------------------
def test_write_rows_vs_write_conll():
    rng = np.random.default_rng(8)
    labels = ["O", "B-NP", "Ü-X"]
    buf, off = _pack(labels)
    for _ in range(100):
        data = random_file(rng, ncols=int(rng.integers(1, 4)))
        status, ncols, cs, ce, tab, offsets = _scan(data, 3 if data.startswith(fastpath.BOM) else 0)
        if status != fast.OK:
            continue
        ids = rng.integers(0, 3, size=cs.shape[0]).astype(np.int32)
        got = fast.write_rows(np.frombuffer(data, dtype=np.uint8), cs, ce, tab, offsets, ids, buf, off)
        sents = list(read_conll("f", io.BytesIO(data)))
        out = io.StringIO()
        o = offsets
        write_conll(sents, [[labels[i] for i in ids[o[s]:o[s + 1]]] for s in range(len(sents))], out)
        assert got.tobytes() == out.getvalue().encode("utf-8")


# ---- 6. tag_conll_bytes against the old path --------------------------------------------------------
def same_as_old(tagger, data: bytes, path="in.txt", columns=None, depth=None, blocks=None,
                blockwise=True):
    """tag_block (forced onto the kernels, and with the table of the model's words) and
    tag_conll_bytes give the old path's bytes, or its error."""
    ref_err = error_of(lambda: old_path(tagger, data, path, columns, depth))
    ref = None if ref_err else old_path(tagger, data, path, columns, depth)
    for known in (False, True):
        saved = fastpath.KNOWN_TABLE_TOKENS
        fastpath.KNOWN_TABLE_TOKENS = -1 if known else 10 ** 9
        try:
            run = lambda: fastpath.tag_block(tagger, data, path, 1, columns, depth, force=True)[0]  # noqa: E731
            assert error_of(run) == ref_err
            if ref is not None:
                assert run() == ref
        finally:
            fastpath.KNOWN_TABLE_TOKENS = saved
    assert error_of(lambda: tagger.tag_conll_bytes(data, path, columns_spec=columns, depth=depth)) == ref_err
    if ref is not None:
        assert tagger.tag_conll_bytes(data, path, columns_spec=columns, depth=depth) == ref
    if not blockwise:
        return ref
    # block by block, as a batch layer calls it: the same bytes, the same first error
    got, err, ncols = [], None, None
    for block, first in [(b, first) for first, b in iter_blocks(io.BytesIO(data), blocks or 64)] or [(b"", 1)]:
        try:
            out, n = fastpath.tag_block(tagger, block, path, first, columns, depth, ncols, force=True)
        except UserError as e:
            err = (e.message, e.path, e.line)
            break
        ncols = n if ncols is None else ncols
        got.append(out)
    assert err == ref_err
    if ref is not None:
        assert b"".join(got) == ref
    return ref


@pytest.mark.parametrize("name", ["chunk", "ner", "pos"])
def test_samples_byte_identical(taggers, name):
    for f in ("test.txt", "train.txt"):
        data = (SAMPLE / name / f).read_bytes()
        assert same_as_old(taggers[name], data, str(SAMPLE / name / f))


def test_history_based_model_byte_identical(taggers):
    data = (SAMPLE / "chunk" / "test.txt").read_bytes()
    assert same_as_old(taggers["greedy"], data)
    rng = np.random.default_rng(9)
    for _ in range(5):
        same_as_old(taggers["greedy"], random_file(rng))


@pytest.mark.parametrize("name", ["chunk", "ner", "pos"])
def test_random_odd_inputs_byte_identical(taggers, name):
    rng = np.random.default_rng({"chunk": 10, "ner": 11, "pos": 12}[name])
    tagger = taggers[name]
    for _ in range(25):
        data = random_file(rng, n_sent=int(rng.integers(1, 8)), ncols=int(rng.choice([tagger.n_columns, tagger.n_columns - 1])))
        same_as_old(tagger, data, blocks=int(rng.integers(1, 200)))


@pytest.mark.parametrize("data", [
    b"Confidence NN B-NP\nin IN\n",                 # wrong column count (line 2)
    b"a NN B-NP\n\n\nb NN\n",                        # wrong column count after a blank run
    b"a\tNN\t\nb NN B-NP\n",                         # an empty tab column
    b"a NN B-NP\nb \xff NN\n",                       # not UTF-8
    b"a\n",                                           # one column: neither 3 nor 2
    b"a b c d e\n",                                   # too many
    b"", b"\n\n \n", b"-DOCSTART- -X- O\n\n",          # no sentences
    b"a NN B-NP\n\xef\xbb\xbfb NN O\n",              # a BOM on line 2 is part of the word
    "a\u00a0b NN O\nc NN O\n".encode(),               # a no-break space: the reader's path
    b"a NN O\r\nb NN O",                              # CRLF, no final newline
])
def test_errors_and_edge_inputs_as_old_path(taggers, data):
    same_as_old(taggers["chunk"], data, "some/file.txt", blocks=4)


def test_columns_option_as_old_path(taggers):
    tagger = taggers["chunk"]
    data = b"x The DT\nx dog NN\n\n"
    same_as_old(tagger, data, columns="-,word,pos")
    same_as_old(tagger, data, columns="word,pos,label,extra")   # names more columns than there are
    same_as_old(tagger, b"The DT\ndog NN\n\n", columns="word")  # chunk features need a POS column


def test_conllu_input_goes_through_the_reader(taggers):
    data = (SAMPLE / "ud" / "test.conllu").read_bytes()
    assert same_as_old(taggers["pos"], data, "t.conllu", blockwise=False)   # column files only


def test_threads_give_the_same_bytes(taggers):
    tagger = taggers["chunk"]
    rng = np.random.default_rng(13)
    blocks = [random_file(rng, n_sent=40, odd=False) for _ in range(4)]
    ref = [old_path(tagger, b) for b in blocks]
    got: dict[int, bytes] = {}

    def work(i):
        for _ in range(3):
            got[i] = tagger.tag_conll_bytes(blocks[i], "x")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[i] for i in range(4)] == ref


def test_cli_chunk_column_file_as_old_path(taggers, tmp_path, sk):
    tagger = taggers["chunk"]
    model = tmp_path / "m.model"
    tagger.save(str(model))
    rng = np.random.default_rng(14)
    data = b"".join(random_file(rng, n_sent=30) for _ in range(3)).replace(b"\xef\xbb\xbf", b"")
    f = tmp_path / "in.txt"
    f.write_bytes(data)
    loaded = SequenceTagger.load(str(model))
    for src, raw in ((f, data), (SAMPLE / "chunk" / "test.txt", None)):
        out = tmp_path / "out.txt"
        r = sk("chunk", "--model", str(model), str(src), "-o", str(out))
        assert r.code == 0, r
        assert out.read_bytes() == old_path(loaded, raw if raw is not None else src.read_bytes(),
                                            str(src) if raw is not None else "-")


def test_tagger_pickles_after_fast_tagging(taggers):
    """A batch layer may send a tagger to worker processes: its fast-path state stays behind."""
    import pickle

    tagger = taggers["chunk"]
    data = (SAMPLE / "chunk" / "test.txt").read_bytes()
    out = tagger.tag_conll_bytes(data, "t")
    copy = pickle.loads(pickle.dumps(tagger))
    assert not any(k.startswith("_fast_") for k in vars(copy))
    assert copy.tag_conll_bytes(data, "t") == out


def test_iter_blocks_cut_after_blank_lines():
    rng = np.random.default_rng(16)
    for _ in range(200):
        data = random_file(rng, n_sent=int(rng.integers(1, 6)))
        if rng.random() < 0.3:
            data = b"\n \n\r\n" + data
        size = int(rng.integers(1, 40))
        blocks = [(b, first) for first, b in iter_blocks(io.BytesIO(data), size)]
        assert b"".join(b for b, _ in blocks) == data
        line = 1
        for k, (b, first) in enumerate(blocks):
            assert first == line
            line += b.count(b"\n")
            if k < len(blocks) - 1:   # every block but the last ends with a blank line
                last = b[:-1].rsplit(b"\n", 1)[-1] if b.endswith(b"\n") else None
                assert last is not None and last.strip() == b"" and b"\n" in b[:-1]


def test_cli_file_starting_with_blank_lines(taggers, tmp_path, sk, monkeypatch):
    """Small blocks: the first ones hold no sentence and are joined to the next."""
    model = tmp_path / "m.model"
    taggers["chunk"].save(str(model))
    data = b"\n\n \n" * 50 + (SAMPLE / "chunk" / "test.txt").read_bytes()
    f = tmp_path / "in.txt"
    f.write_bytes(data)
    real = cutter.iter_blocks
    monkeypatch.setattr(cutter, "iter_blocks", lambda stream, size=0: real(stream, 16))
    out = tmp_path / "out.txt"
    assert sk("chunk", "--model", str(model), str(f), "-o", str(out)).code == 0
    assert out.read_bytes() == old_path(SequenceTagger.load(str(model)), data, str(f))
    f.write_bytes(b"\n\n \n" * 50)
    r = sk("chunk", "--model", str(model), str(f))
    assert r.code == 1 and "empty file" in r.err
