"""The kernels of the all-array tagging path for CoNLL column files (``structkit.sequence.fastpath``).

Bytes in, bytes out, nothing in between is a Python object per token: a byte scanner that splits
a block of a column file into sentences and column spans exactly as ``structkit.io.conll.read_conll``
does; hash tables of byte strings (a model's words and POS tags) so each token's word is looked
up once, without decoding it; feature ids from the per-token attribute ids (a direct table for a
single-atom template, a binary search in the template's sorted keys otherwise), summed straight
into the emission scores; Viterbi with the label loop innermost; and one buffer of output bytes.

All kernels are ``nogil`` (``structkit.jit``), so threads tagging different blocks run in
parallel. Each is checked against a plain-Python reference in ``tests/sequence/test_fastpath.py``.

Whatever the scanner does not take on exactly as the reader would (an error to report, a line
with a non-ASCII whitespace character, bytes that are not UTF-8) makes it return ``SLOW``: the
caller then runs the reader, which raises the reader's own error or reads the block as it always
has.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from structkit.jit import njit
from structkit.sequence.search.viterbi import max_length
from structkit.sequence.search.viterbi import viterbi_ws as viterbi_rows  # noqa: F401  (the fast path decodes with it)

OK, SLOW = 0, 1
ABSENT, BOS, EOS, UNK = 0, 1, 2, 3   # as in structkit.sequence.features

# A model's template tables (``structkit.sequence.fastpath.Prepared.templates``): template j has
# n_atoms[j] atoms, atom q reading attribute atom_attr[j, q] at offset atom_off[j, q], its key
# mixed with radix atom_radix[j, q]; its feature ids are in the direct table dense[dense_off[j]:]
# (dense_off[j] >= 0) or else in its hash table (``build_key_tables``: hkeys, hvals, hoff, hmask).
Templates = namedtuple("Templates", "n_atoms atom_attr atom_off atom_radix dense dense_off hkeys hvals hoff hmask")
# A hash table of byte strings (``build_table``: slots, buf, off) and the id of each string.
StringIds = namedtuple("StringIds", "slots buf off ids")


@njit
def is_ws(b):
    """An ASCII byte that Python's str.split() and str.strip() treat as whitespace."""
    return b == 32 or (9 <= b <= 13) or (28 <= b <= 31)


@njit
def _unicode_space(cp):
    """A non-ASCII code point Python counts as whitespace (``str.isspace``)."""
    return (cp == 0x85 or cp == 0xA0 or cp == 0x1680 or (0x2000 <= cp <= 0x200A) or cp == 0x2028
            or cp == 0x2029 or cp == 0x202F or cp == 0x205F or cp == 0x3000)


@njit
def utf8_plain(data, start):
    """True if data[start:] is valid UTF-8 (as Python's strict decoder has it) without any
    non-ASCII whitespace character; False otherwise.

    A lead byte gives the sequence's length k (2, 3 or 4) and the range of its second byte
    (narrower after E0, ED, F0 and F4: no overlong forms, surrogates or code points past
    U+10FFFF); the other continuation bytes are 80..BF. One check serves every length."""
    n = len(data)
    i = start
    while i < n:
        b = data[i]
        if b < 0x80:
            i += 1
            continue
        if b < 0xC2 or b >= 0xF5:
            return False
        if b < 0xE0:
            k, lo, hi = 2, 0x80, 0xBF
        elif b < 0xF0:
            k = 3
            lo = 0xA0 if b == 0xE0 else 0x80
            hi = 0x9F if b == 0xED else 0xBF
        else:
            k = 4
            lo = 0x90 if b == 0xF0 else 0x80
            hi = 0x8F if b == 0xF4 else 0xBF
        if i + k > n:
            return False
        c1 = data[i + 1]
        if c1 < lo or c1 > hi:
            return False
        # the code point (the lead byte's 7 - k payload bits, then 6 from each continuation)
        cp = ((np.int64(b) & (0x7F >> k)) << 6) | (np.int64(c1) & 0x3F)
        for q in range(2, k):
            c = data[i + q]
            if c < 0x80 or c > 0xBF:
                return False
            cp = (cp << 6) | (np.int64(c) & 0x3F)
        if _unicode_space(cp):  # (never a 4-byte one: all of them are past U+FFFF)
            return False
        i += k
    return True


@njit
def _starts_with(data, i, e, pat):
    if e - i < len(pat):
        return False
    for k in range(len(pat)):
        if data[i + k] != pat[k]:
            return False
    return True


@njit
def _split_line(data, ls, le, cs, ce, row):
    """Split the line data[ls:le] into columns as read_conll does (on tabs if it has one, each
    column stripped, else on runs of whitespace), storing at most cs.shape[1] spans in row
    ``row`` of cs/ce. Returns (number of columns, -1 on an empty tab column; whether a
    column holds whitespace, so the row is written back with tabs)."""
    cap = cs.shape[1]
    has_tab = False
    for k in range(ls, le):
        if data[k] == 9:
            has_tab = True
            break
    nc = 0
    inner_ws = False
    if has_tab:
        a = ls
        while True:
            b = a
            while b < le and data[b] != 9:
                b += 1
            s = a
            e = b
            while s < e and is_ws(data[s]):
                s += 1
            while e > s and is_ws(data[e - 1]):
                e -= 1
            if s == e:
                return -1, False
            for k in range(s, e):
                if is_ws(data[k]):
                    inner_ws = True
                    break
            if nc < cap:
                cs[row, nc] = s
                ce[row, nc] = e
            nc += 1
            if b >= le:
                break
            a = b + 1
    else:
        k = ls
        while k < le:
            while k < le and is_ws(data[k]):
                k += 1
            if k >= le:
                break
            s = k
            while k < le and not is_ws(data[k]):
                k += 1
            if nc < cap:
                cs[row, nc] = s
                ce[row, nc] = k
            nc += 1
    return nc, inner_ws


@njit
def scan_conll(data, start, expected, docstart, medline):
    """Split a block of a CoNLL column file (bytes from ``start``) into token rows.

    Returns (status, n_columns, col_start[n_tokens, n_columns], col_end, tab_row[n_tokens],
    sentence offsets[n_sentences + 1]). ``expected`` is the column count every row must have
    (-1: that of the first row). Lines end at ``\\n``; a blank line (whitespace only) or a
    document marker (``docstart``/``medline`` after leading whitespace) ends a sentence.
    status is SLOW, with empty arrays, for anything the reader must see: bytes that are not
    UTF-8, a non-ASCII whitespace character, an empty tab column, a row of another width.
    """
    n = len(data)
    empty2 = np.zeros((0, 1), dtype=np.int64)
    empty1 = np.zeros(0, dtype=np.bool_)
    emptyo = np.zeros(1, dtype=np.int64)
    if not utf8_plain(data, start):
        return SLOW, 0, empty2, empty2, empty1, emptyo
    n_lines = 1
    for k in range(start, n):
        if data[k] == 10:
            n_lines += 1
    probe_s = np.empty((1, 1), dtype=np.int64)
    probe_e = np.empty((1, 1), dtype=np.int64)
    ncols = expected
    cs = np.empty((n_lines, max(ncols, 1)), dtype=np.int64)
    ce = np.empty((n_lines, max(ncols, 1)), dtype=np.int64)
    tab = np.zeros(n_lines, dtype=np.bool_)
    offsets = np.zeros(n_lines + 1, dtype=np.int64)
    n_tok = 0
    n_sent = 0
    in_sent = False
    ls = start
    while ls < n:
        le = ls
        while le < n and data[le] != 10:
            le += 1
        nxt = le + 1
        # blank or a document marker?
        k = ls
        while k < le and is_ws(data[k]):
            k += 1
        if k >= le or _starts_with(data, k, le, docstart) or _starts_with(data, k, le, medline):
            if in_sent:
                n_sent += 1
                offsets[n_sent] = n_tok
                in_sent = False
            ls = nxt
            continue
        # a carriage return inside a token line (CR-only line endings): the reader's error
        e2 = le
        while e2 > ls and data[e2 - 1] == 13:
            e2 -= 1
        for k2 in range(ls, e2):
            if data[k2] == 13:
                return SLOW, 0, empty2, empty2, empty1, emptyo
        if ncols < 0:
            nc, inner = _split_line(data, ls, le, probe_s, probe_e, 0)
            if nc < 0:
                return SLOW, 0, empty2, empty2, empty1, emptyo
            ncols = nc
            cs = np.empty((n_lines, ncols), dtype=np.int64)
            ce = np.empty((n_lines, ncols), dtype=np.int64)
        nc, inner = _split_line(data, ls, le, cs, ce, n_tok)
        if nc != ncols:
            return SLOW, 0, empty2, empty2, empty1, emptyo
        tab[n_tok] = inner
        n_tok += 1
        in_sent = True
        ls = nxt
    if in_sent:
        n_sent += 1
        offsets[n_sent] = n_tok
    if ncols < 0:
        ncols = 0
    return OK, ncols, cs[:n_tok], ce[:n_tok], tab[:n_tok], offsets[:n_sent + 1].copy()


# ---- hash tables of byte strings -----------------------------------------------------------
@njit
def _hash(data, s, e):
    h = np.uint64(14695981039346656037)
    for k in range(s, e):
        h = (h ^ np.uint64(data[k])) * np.uint64(1099511628211)
    return h


@njit
def _same(a, as_, ae, b, bs, be):
    if ae - as_ != be - bs:
        return False
    for k in range(ae - as_):
        if a[as_ + k] != b[bs + k]:
            return False
    return True


@njit
def build_table(buf, off):
    """An open-addressing hash table of the strings buf[off[i]:off[i+1]] (slot -> i + 1, 0 empty;
    the first of equal strings wins)."""
    n = len(off) - 1
    cap = 16
    while cap < 2 * n + 2:
        cap *= 2
    slots = np.zeros(cap, dtype=np.int64)
    mask = np.uint64(cap - 1)
    for i in range(n):
        h = _hash(buf, off[i], off[i + 1]) & mask
        while True:
            j = slots[h]
            if j == 0:
                slots[h] = i + 1
                break
            if _same(buf, off[j - 1], off[j], buf, off[i], off[i + 1]):
                break
            h = (h + np.uint64(1)) & mask
    return slots


@njit
def lookup(slots, buf, off, data, s, e):
    """The index of data[s:e] in a table of ``build_table``, or -1."""
    mask = np.uint64(len(slots) - 1)
    h = _hash(data, s, e) & mask
    while True:
        j = slots[h]
        if j == 0:
            return -1
        if _same(buf, off[j - 1], off[j], data, s, e):
            return j - 1
        h = (h + np.uint64(1)) & mask


@njit
def word_types(data, ws, we, slots, buf, off):
    """Each token's word data[ws[t]:we[t]] as a known word (its index in the table, >= 0) or
    as the u-th distinct unknown word of the block (-(u + 1)). Returns (ids, the first token of
    each unknown word)."""
    n = len(ws)
    ids = np.empty(n, dtype=np.int64)
    cap = 16
    while cap < 2 * n + 2:
        cap *= 2
    local = np.zeros(cap, dtype=np.int64)   # slot -> first token + 1
    mask = np.uint64(cap - 1)
    first = np.empty(n, dtype=np.int64)
    n_unk = 0
    for t in range(n):
        i = lookup(slots, buf, off, data, ws[t], we[t])
        if i >= 0:
            ids[t] = i
            continue
        h = _hash(data, ws[t], we[t]) & mask
        while True:
            j = local[h]
            if j == 0:
                local[h] = t + 1
                first[n_unk] = t
                ids[t] = -(n_unk + 1)
                n_unk += 1
                break
            if _same(data, ws[j - 1], we[j - 1], data, ws[t], we[t]):
                ids[t] = ids[j - 1]
                break
            h = (h + np.uint64(1)) & mask
    return ids, first[:n_unk].copy()


@njit
def attribute_matrix(data, ids, known_rows, unk_rows, word_cols, pos_col, ps, pe, tags, bias_col, bias_id,
                     n_attrs):
    """Token attribute ids [n_attrs, n_tokens]: the word attributes (columns ``word_cols`` of
    the rows of known and unknown words), the POS tag's id (``tags.ids`` of its index in the
    ``StringIds`` table ``tags``, UNK if unseen) in ``pos_col`` and the bias in ``bias_col``
    (-1: not used)."""
    n = len(ids)
    A = np.empty((n_attrs, n), dtype=np.int64)
    nw = len(word_cols)
    for t in range(n):
        i = ids[t]
        if i >= 0:
            for k in range(nw):
                A[word_cols[k], t] = known_rows[i, k]
        else:
            for k in range(nw):
                A[word_cols[k], t] = unk_rows[-i - 1, k]
        if pos_col >= 0:
            j = lookup(tags.slots, tags.buf, tags.off, data, ps[t], pe[t])
            A[pos_col, t] = UNK if j < 0 else tags.ids[j]
        if bias_col >= 0:
            A[bias_col, t] = bias_id
    return A


# ---- features and decoding -------------------------------------------------------------------
@njit
def _mix(key):
    return (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)


@njit
def build_key_tables(keys, starts, fid_map, multi):
    """Hash tables (key -> feature id through ``fid_map``) of the templates j with multi[j]:
    slots of table j are hkeys/hvals[hoff[j]:hoff[j] + hmask[j] + 1]; a key whose id maps to -1
    is left out. Returns (hkeys, hvals, hoff, hmask)."""
    n_tpl = len(starts) - 1
    hoff = np.zeros(n_tpl + 1, dtype=np.int64)
    hmask = np.zeros(n_tpl, dtype=np.int64)
    for j in range(n_tpl):
        cap = 0
        if multi[j]:
            cap = 4
            live = 0
            for i in range(starts[j], starts[j + 1]):
                if fid_map[i] >= 0:
                    live += 1
            while cap < 2 * live + 2:
                cap *= 2
        hmask[j] = cap - 1
        hoff[j + 1] = hoff[j] + cap
    hkeys = np.zeros(hoff[n_tpl], dtype=np.int64)
    hvals = np.full(hoff[n_tpl], -1, dtype=np.int32)
    for j in range(n_tpl):
        if not multi[j]:
            continue
        mask = np.uint64(hmask[j])
        for i in range(starts[j], starts[j + 1]):
            f = fid_map[i]
            if f < 0:
                continue
            h = _mix(keys[i]) & mask
            while hvals[hoff[j] + h] >= 0:
                h = (h + np.uint64(1)) & mask
            hkeys[hoff[j] + h] = keys[i]
            hvals[hoff[j] + h] = f
    return hkeys, hvals, hoff, hmask


@njit
def template_ids(A, a, n, j, tpl, fids):
    """fids[i] = the feature id of template j of the ``Templates`` tpl at token a + i of the
    sentence of n tokens from a, or -1 (not fired or not a live key). The key is the template's
    atoms' attribute ids (``A[attr, token]``) read as one mixed-radix number, BOS/EOS past the
    sentence's ends; a template with a small key space (a single atom, POS n-grams) looks it up
    in its ``dense`` table (offset dense_off[j] >= 0), others in their hash table."""
    n_atoms, atom_attr, atom_off, atom_radix = tpl.n_atoms, tpl.atom_attr, tpl.atom_off, tpl.atom_radix
    dense, dense_off, hkeys, hvals, hoff, hmask = tpl.dense, tpl.dense_off, tpl.hkeys, tpl.hvals, tpl.hoff, tpl.hmask
    na = n_atoms[j]
    if na == 1:
        k = atom_attr[j, 0]
        off = atom_off[j, 0]
        d = dense_off[j]
        for i in range(n):
            p = i + off
            if p < 0:
                v = BOS
            elif p >= n:
                v = EOS
            else:
                v = A[k, a + p]
            fids[i] = -1 if v == ABSENT else dense[d + v]
        return
    mask = np.uint64(hmask[j])
    base = hoff[j]
    for i in range(n):
        key = 0
        fired = True
        for q in range(na):
            p = i + atom_off[j, q]
            if p < 0:
                v = BOS
            elif p >= n:
                v = EOS
            else:
                v = A[atom_attr[j, q], a + p]
            if v == ABSENT:
                fired = False
                break
            key = key * atom_radix[j, q] + v
        f = -1
        if fired and dense_off[j] >= 0:
            f = dense[dense_off[j] + key]
        elif fired:
            h = _mix(key) & mask
            while True:
                g = hvals[base + h]
                if g < 0:
                    break
                if hkeys[base + h] == key:
                    f = g
                    break
                h = (h + np.uint64(1)) & mask
        fids[i] = f


@njit
def featurise(A, offsets, tpl):
    """CSR feature ids (indptr, indices) of every token, in the order of the ``Templates`` tpl."""
    n = A.shape[1]
    n_tpl = len(tpl.n_atoms)
    ids = np.empty((n, n_tpl), dtype=np.int32)
    fids = np.empty(max_length(offsets), dtype=np.int32)
    for s in range(len(offsets) - 1):
        a = offsets[s]
        b = offsets[s + 1]
        for j in range(n_tpl):
            template_ids(A, a, b - a, j, tpl, fids)
            for i in range(b - a):
                ids[a + i, j] = fids[i]
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(n * n_tpl, dtype=np.int32)
    m = 0
    for t in range(n):
        for j in range(n_tpl):
            if ids[t, j] >= 0:
                indices[m] = ids[t, j]
                m += 1
        indptr[t + 1] = m
    return indptr, indices[:m].copy()


@njit
def emissions_rows(indptr, indices, W, a, b, out):
    """out[t - a, :] = the sum, in CSR order, of the W rows of token t's features (negative
    ids skipped)."""
    L = W.shape[1]
    for t in range(a, b):
        row = out[t - a]
        for y in range(L):
            row[y] = 0.0
        for j in range(indptr[t], indptr[t + 1]):
            f = indices[j]
            if f >= 0:
                wf = W[f]
                for y in range(L):
                    row[y] += wf[y]


@njit
def _viterbi_buffers(offsets, L):
    """Scratch for ``viterbi_rows`` over the sentences of a corpus (longest m tokens, L
    labels): (m, emissions E[m, L], delta[m, L], back[m, L], best[L])."""
    m = max_length(offsets)
    return m, np.empty((m, L)), np.empty((m, L)), np.empty((m, L), dtype=np.int32), np.empty(L)


@njit
def decode_rows(indptr, indices, offsets, W, T, out):
    """``structkit.sequence.search.viterbi.decode_corpus`` on CSR ids of W's rows (-1: a zero row,
    skipped): the labels of a model's compact W."""
    _, E, delta, back, best = _viterbi_buffers(offsets, W.shape[1])
    for s in range(len(offsets) - 1):
        a = offsets[s]
        b = offsets[s + 1]
        if b == a:
            continue
        emissions_rows(indptr, indices, W, a, b, E)
        viterbi_rows(E, b - a, T, out[a:b], delta, back, best)


@njit
def tag_viterbi(A, offsets, tpl, W, T, out):
    """Features (the ``Templates`` tpl), emissions and Viterbi, sentence by sentence: label ids
    into ``out``. ``W`` holds the rows the tables map features to (a model's non-zero rows); each
    token's emissions add its features' rows in template order, as ``emissions`` does."""
    L = W.shape[1]
    m, E, delta, back, best = _viterbi_buffers(offsets, L)
    fids = np.empty(m, dtype=np.int32)
    n_tpl = len(tpl.n_atoms)
    for s in range(len(offsets) - 1):
        a = offsets[s]
        b = offsets[s + 1]
        n = b - a
        if n == 0:
            continue
        E[:n] = 0.0
        for j in range(n_tpl):
            template_ids(A, a, n, j, tpl, fids)
            for i in range(n):
                f = fids[i]
                if f >= 0:
                    for y in range(L):
                        E[i, y] += W[f, y]
        viterbi_rows(E, n, T, out[a:b], delta, back, best)


@njit
def write_rows(data, cs, ce, tab, offsets, ids, lab_buf, lab_off):
    """The output bytes: each row's columns joined by a space (a tab if a column holds
    whitespace), then the label; a blank line after each sentence (``write_conll``)."""
    n, ncols = cs.shape
    size = len(offsets) - 1
    for t in range(n):
        size += ncols + 1 + lab_off[ids[t] + 1] - lab_off[ids[t]]
        for c in range(ncols):
            size += ce[t, c] - cs[t, c]
    out = np.empty(size, dtype=np.uint8)
    m = 0
    for s in range(len(offsets) - 1):
        for t in range(offsets[s], offsets[s + 1]):
            sep = 9 if tab[t] else 32
            for c in range(ncols):
                for k in range(cs[t, c], ce[t, c]):
                    out[m] = data[k]
                    m += 1
                out[m] = sep
                m += 1
            for k in range(lab_off[ids[t]], lab_off[ids[t] + 1]):
                out[m] = lab_buf[k]
                m += 1
            out[m] = 10
            m += 1
        out[m] = 10
        m += 1
    return out
