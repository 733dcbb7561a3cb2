"""Pretrained word vectors (issue 44): reading the word2vec/fastText text format and clustering
the vectors into discrete word classes at several granularities, the features a linear model can
use. Ground floor: nothing here imports a wing.

``train --vectors FILE [--vectors-limit N]`` (morph, the beam parser, pipelines) makes a
``WordClusters`` table with ``word_clusters``: the file's first N words (``DEFAULT_LIMIT``), their
clusters at ``LEVELS`` by a k-means whose time is bounded (centroids fitted by ``fit_centroids``
on the first ``FIT_SAMPLE`` words, every word then assigned by the kernel ``_nearest``) and at
one finer level nested in the last (``split_level``: each cluster split in ``SPLIT``); the
table goes into the model file (``WordClusters.arrays``/``from_model``), and a word it lacks
takes its lower-cased form's clusters, else the nearest known word's by character trigrams
(``WordClusters.lookup``). ``kmeans``/``cluster_ids`` (Lloyd's algorithm from k-means++ over
all rows, ``_lloyd``) are the unbounded original, kept for small tables.

The format (``.vec``, gzipped or not: gzip is told by its magic bytes, not by the name):

* an optional first line ``COUNT DIM``. A first line of exactly two fields that both read as
  numbers is taken as the header and must be two positive integers (a file of 1-dimensional
  vectors therefore needs its header);
* then one vector a line: ``WORD v1 ... vDIM``, fields separated by single spaces as fastText
  and word2vec write them; trailing spaces (fastText writes one) and the line end are dropped,
  and the line is split on its *last* DIM spaces, so a word may hold any character but the
  newline, spaces included (GloVe's ``. . .``), unless the word's last space-separated piece
  is a number: that line has too many values, an error. DIM is the header's, or without a header the
  first vector's (whose word, there, cannot hold a space). Blank lines are skipped.

Memory is bounded by ``limit``: lines are read one at a time (and parsed ``BATCH_LINES`` at a
time by a kernel, by Python where a line is not plain decimals), and reading stops as soon as
``limit`` distinct words are kept (the file lists the most frequent words first), so the rest
of a 2 GB file is never read. A word seen again keeps its first vector.
"""
from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from structkit.errors import UserError, quote
from structkit.io.files import display_name, iter_lines, open_binary
from structkit.jit import njit
from structkit.learn.spec import Param


@dataclass
class Vectors:
    """``matrix[index[w]]`` is the vector of word ``w``; ``words[i]`` the word of row i, in the
    file's order."""
    words: list[str]
    matrix: np.ndarray                 # (n_words, dim) float32
    path: str = ""
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        if not self.index:
            self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _header(fields: list[str], name: str) -> tuple[int, int] | None:
    """(COUNT, DIM) when the first line is a header, None when it is a vector."""
    if len(fields) != 2 or not all(_looks_numeric(f) for f in fields):
        return None
    if not all(f.isdigit() and int(f) > 0 for f in fields):
        raise UserError(f"the header must be two positive integers 'COUNT DIM', found "
                        f"{quote(' '.join(fields))}", name, 1)
    return int(fields[0]), int(fields[1])


_FMAX = float(np.finfo(np.float32).max)


def _values(parts: list[str], name: str, lineno: int) -> np.ndarray:
    """The values of a line as float32; one that is not a number, or not finite as float32
    (nan, inf, 1e50), is a UserError."""
    try:
        v = np.array(parts, dtype=np.float64)
    except ValueError:
        v = None
    if v is None or not (np.abs(v) <= _FMAX).all():   # nan compares False
        bad = next(p for p in parts if not _looks_numeric(p) or not abs(float(p)) <= _FMAX)
        raise UserError(f"value {quote(bad)} is not a finite number", name, lineno)
    return v.astype(np.float32)


BATCH_LINES = 1024   # vector lines parsed together by ``_parse_lines``
_POW10 = np.array([10.0 ** k for k in range(23)])   # exact in float64


@njit
def _parse_lines(buf, starts, ends, dim, pow10, out, word_end):
    """The fast path of reading vector lines (UTF-8 bytes ``buf[starts[r]:ends[r]]``, each
    without its line end and trailing spaces): where line r ends in ``dim`` fields separated by
    single spaces, each a plain decimal (an optional sign, digits with at most one point, at most
    15 digits, no exponent), and a non-empty word before them, ``word_end[r]`` is where the word
    ends and ``out[r]`` the values: the integer of the digits over a power of ten, one division
    of two exact float64 numbers, so the correctly rounded float64 of the decimal, as Python's
    ``float`` reads it. Any other line gets ``word_end[r] = -1``: read by the slow path, which
    also says what is wrong with it."""
    for r in range(starts.shape[0]):
        a, b = starts[r], ends[r]
        word_end[r] = -1
        q, k = b, 0              # the dim-th space from the right: where the values start
        while q > a and k < dim:
            q -= 1
            if buf[q] == 32:
                k += 1
        if k < dim or q == a:
            continue
        pos, ok = q + 1, True
        for j in range(dim):
            neg = False
            if pos < b and (buf[pos] == 45 or buf[pos] == 43):    # '-' or '+'
                neg = buf[pos] == 45
                pos += 1
            m, digits, frac, dot = 0, 0, 0, False
            while pos < b and buf[pos] != 32:
                c = buf[pos]
                if 48 <= c <= 57:
                    m = m * 10 + (c - 48)
                    digits += 1
                    if dot:
                        frac += 1
                elif c == 46 and not dot:
                    dot = True
                else:
                    ok = False
                    break
                pos += 1
            if not ok or digits == 0 or digits > 15:
                ok = False
                break
            v = m / pow10[frac]
            out[r, j] = -v if neg else v
            pos += 1
        if ok:
            word_end[r] = q


def _vector_line(line: str, dim: int, source: str, name: str, lineno: int) -> tuple[str, np.ndarray]:
    """The word and values (float32) of a vector line, or a UserError saying what is wrong."""
    parts = line.rsplit(" ", dim)
    if (len(parts) != dim + 1 or not parts[0]
            or " " in parts[0] and _looks_numeric(parts[0].rsplit(" ", 1)[1])):
        n = len(line.split()) - 1
        raise UserError(f"{n} values where {dim} are expected ({source} dimension)", name, lineno)
    return parts[0], _values(parts[1:], name, lineno)


def read_vectors(path: str, limit: int | None = None, dim: int | None = None) -> Vectors:
    """The vectors of a ``.vec`` file (see the module's docstring), at most ``limit`` words;
    ``dim``, when given, is the dimension the file must have. Every problem is a UserError
    naming the file and line. Vector lines are parsed ``BATCH_LINES`` at a time
    (``_parse_lines``) and then taken in order, so the first problem in the file is the one
    reported, and nothing past the ``limit``-th word is, even if read."""
    path = os.fspath(path)
    name = display_name(path)
    if limit is not None and limit < 1:
        raise UserError(f"limit must be a positive number of words, got {limit}")
    rows: list[np.ndarray] = []
    words: list[str] = []
    index: dict[str, int] = {}
    header = None
    source = "the expected"              # where dim comes from, for messages
    seen = 0                              # vector lines read (duplicates included)
    lineno = 0
    pending: list[tuple[int, str]] = []   # vector lines read, not yet taken

    def take() -> bool:
        """Take the pending lines in order; True once ``limit`` words are kept."""
        nonlocal seen
        batch = [line.encode("utf-8") for _, line in pending]
        lengths = np.array([len(x) for x in batch], dtype=np.int64)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        # Only a line of more than 2 * dim bytes can hold a word and dim values: the rows of
        # values are for those lines alone, so they take at most 4 times the batch's bytes
        # whatever dimension a header claims. A shorter line goes to the slow path, which says
        # what is wrong with it.
        fit = lengths > 2 * dim
        row = np.cumsum(fit) - 1            # line r's row of values, where fit[r]
        out = np.zeros((int(fit.sum()), dim))   # (a slow-path line's row: its own values, below)
        word_end = np.empty(len(out), dtype=np.int64)
        _parse_lines(np.frombuffer(b"".join(batch), dtype=np.uint8), starts[fit], ends[fit], dim, _POW10, out,
                     word_end)
        lines = pending[:]
        pending.clear()
        values = out.astype(np.float32)
        kept: list[int] = []      # the rows of the lines whose words are kept, in order
        full = False
        for r, (at, line) in enumerate(lines):
            word = None
            if fit[r] and word_end[row[r]] >= 0:
                word = batch[r][:word_end[row[r]] - starts[r]].decode("utf-8")
                if " " in word and _looks_numeric(word.rsplit(" ", 1)[1]):
                    word = None   # too many values: the slow path says so
            if word is None:
                word, v = _vector_line(line, dim, source, name, at)
                if not fit[r]:    # cannot be: a word and dim values take more than 2 * dim bytes
                    raise AssertionError(f"{name}:{at}: a line of {lengths[r]} bytes read as {dim} values")
                values[row[r]] = v
            seen += 1
            if header and seen > header[0]:
                raise UserError(f"more vectors than the header's {header[0]}", name, at)
            if word not in index:
                index[word] = len(words)
                words.append(word)
                kept.append(row[r])
                if limit is not None and len(words) >= limit:
                    full = True
                    break
        rows.append(values[kept])
        return full

    full = False
    f = open_binary(path)
    try:
        stream = gzip.GzipFile(fileobj=f) if f.peek(2)[:2] == b"\x1f\x8b" else f
        try:
            try:
                for lineno, line in iter_lines(name, stream):
                    line = line.rstrip(" ")
                    if not line.strip():
                        continue
                    if lineno == 1 and (header := _header(line.split(), name)) is not None:
                        if dim is not None and header[1] != dim:
                            raise UserError(f"the header says {header[1]} dimensions, {dim} expected",
                                            name, 1)
                        dim, source = header[1], "the header's"
                        continue
                    if dim is None:
                        source = "the first vector's"
                        dim = len(line.split()) - 1
                        if dim < 1:
                            raise UserError(f"a word without values: {quote(line)}", name, lineno)
                    pending.append((lineno, line))
                    if len(pending) >= BATCH_LINES and take():
                        full = True
                        break
            except (UserError, gzip.BadGzipFile, EOFError, zlib.error):
                # a problem further on than the lines read before it: those come first (their
                # own problem, or the limit reached before it)
                if pending and take():
                    full = True
                else:
                    raise
            if pending and not full:
                full = take()
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise UserError(f"corrupt gzip data ({e})", name, lineno + 1) from None
    finally:
        f.close()
    if not words:
        raise UserError("no vectors in the file" + (" (only its header)" if header else ""), name)
    if header and seen < header[0] and (limit is None or len(words) < limit):
        raise UserError(f"the header says {header[0]} vectors, the file has {seen} (cut short?)",
                        name, lineno)
    return Vectors(words, np.concatenate(rows), path, index)


@njit
def _lloyd(X, C, iters, assign):
    """Lloyd's k-means from centroids C (updated in place): each row goes to its nearest
    centroid by squared Euclidean distance (the lowest index on a tie), then each centroid is
    its rows' mean; an empty cluster keeps its centroid. Stops early when no row moves. Sums
    in float64, in a fixed order, so the result is exactly reproducible."""
    n, d = X.shape
    k = C.shape[0]
    for it in range(iters):
        moved = 0
        for i in range(n):
            best = -1
            bestd = 0.0
            for c in range(k):
                s = 0.0
                for j in range(d):
                    t = np.float64(X[i, j]) - np.float64(C[c, j])
                    s += t * t
                if best < 0 or s < bestd:
                    best = c
                    bestd = s
            if assign[i] != best:
                moved += 1
                assign[i] = best
        if it > 0 and moved == 0:
            break
        _means(X, assign, C)
    return assign


NORMALISE_ROWS = 4096


def normalise(X: np.ndarray, in_place: bool = False) -> np.ndarray:
    """The rows of X scaled to unit L2 norm, as float32 (a zero row stays zero): each row's
    norm as ``numpy.linalg.norm`` gives it (the float32 squares summed along the row), a block
    of ``NORMALISE_ROWS`` rows at a time, so that no temporary is the size of X. ``in_place``
    (X float32 and C-contiguous): X itself is scaled and returned, no copy of it made (200,000
    vectors of 300 dimensions: 240 MB)."""
    X = np.asarray(X, dtype=np.float32)
    out = X if in_place and X.flags.c_contiguous and X.flags.writeable else np.empty_like(X, order="C")
    for a in range(0, X.shape[0], NORMALISE_ROWS):
        block = X[a:a + NORMALISE_ROWS]
        norms = np.sqrt(np.add.reduce(block * block, axis=1, keepdims=True))
        np.divide(block, np.where(norms > 0, norms, np.float32(1)), out=out[a:a + NORMALISE_ROWS])
    return out


def _draw(dist: np.ndarray, chosen: list[int], rng: np.random.Generator) -> int:
    """k-means++'s next row: row i with probability proportional to ``dist[i]``, none of
    ``chosen`` (uniformly among the others when their distances are all 0)."""
    n = dist.shape[0]
    w = dist.copy()
    w[chosen] = 0.0
    if w.sum() <= 0:
        w = np.ones(n)
        w[chosen] = 0.0
    cum = np.cumsum(w)   # row i drawn with probability w[i] / sum(w)
    return min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), n - 1)


def initial_centroids(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means++: k distinct rows of X, the first drawn uniformly, each next one with
    probability proportional to its squared distance to the nearest row drawn so far (uniformly
    among the rows not drawn when all those distances are 0), all with
    ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    X64 = X.astype(np.float64)
    chosen = [int(rng.integers(n))]
    dist = ((X64 - X64[chosen[0]]) ** 2).sum(axis=1)
    while len(chosen) < k:
        chosen.append(_draw(dist, chosen, rng))
        dist = np.minimum(dist, ((X64 - X64[chosen[-1]]) ** 2).sum(axis=1))
    return X[chosen].copy()


def kmeans(X: np.ndarray, k: int, seed: int = 0, iters: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """(centroids (k, dim) float32, assign (n,) int32): k-means of the L2-normalised rows of
    X with Euclidean distance (on unit rows, the nearest centroid is the one of highest cosine
    up to the centroid's own norm; centroids are plain means, not renormalised). Initial
    centroids by k-means++ (``initial_centroids``) with the seed; deterministic for a fixed
    seed."""
    X = normalise(X)
    n = X.shape[0]
    if not 1 <= k <= n:
        raise UserError(f"k-means: k must be between 1 and the number of rows ({n}), got {k}")
    C = initial_centroids(X, k, seed)
    assign = np.full(n, -1, dtype=np.int32)
    _lloyd(X, C, iters, assign)
    return C, assign


def cluster_ids(vectors: Vectors, ks=(16, 64, 256), seed: int = 0) -> np.ndarray:
    """(n_words, len(ks)) int32: each word's k-means cluster for each k (clipped to the number
    of words), the discrete word classes a linear model uses as features."""
    X = vectors.matrix if isinstance(vectors, Vectors) else np.asarray(vectors)
    n = X.shape[0]
    out = np.zeros((n, len(ks)), dtype=np.int32)
    for j, k in enumerate(ks):
        if k < 1:
            raise UserError(f"cluster sizes must be positive, got {k}")
        if n:
            out[:, j] = kmeans(X, min(k, n), seed)[1]
    return out


# ---- word clusters for the models' features (issue 44) --------------------------------------
# The granularities (numbers of clusters) fitted by k-means, coarse to fine.
LEVELS = (16, 64, 256)
# And one finer level, nested: each cluster of the finest fitted level split in SPLIT by a
# k-means over its own words (fitted on its first SPLIT_SAMPLE distinct vectors), as the bits of
# a Brown cluster path refine its prefix. The morph model reads every level (the parser the first
# two and this one, ``parse.beam.cluster_row``): French ParTUT's dev preferred it
# (results/vectors-levels.md).
SPLIT = 16
SPLIT_SAMPLE = 1_000
# ``--vectors-limit``'s default: the most frequent words kept from the file.
DEFAULT_LIMIT = 200_000
# Centroids are fitted on the first (most frequent) FIT_SAMPLE words, in FIT_ITERS rounds of
# Lloyd's algorithm at most; every kept word is then assigned to its nearest centroid. The time
# is then bounded by FIT_SAMPLE x k x dim x FIT_ITERS + words x k x dim whatever the file.
FIT_SAMPLE = 10_000
FIT_ITERS = 10
# Unknown words: the nearest known word by character trigrams, among the words that share a
# trigram with it (each trigram's first POSTINGS words, the most frequent), at a Dice
# coefficient of at least MIN_DICE; and a loaded model keeps the answers of at most KEPT words.
POSTINGS = 4000
MIN_DICE = 0.5
KEPT = 1 << 17


@njit
def _nearest(X, C, C2, out):
    """out[i] = the centroid c (row of C) nearest to row i of X by squared Euclidean distance
    less |X[i]|^2 (which is the same for every c): C2[c] - 2 X[i].C[c], C2[c] = |C[c]|^2; the
    lowest index on a tie. The dot product is summed in float32 in eight partial sums over
    dims j = 8m + r (r = 0..7), added as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)),
    then the remaining dims in order: a fixed order, so the result is reproducible."""
    n, d = X.shape
    k = C.shape[0]
    for i in range(n):
        best = -1
        bestv = np.float32(0.0)
        for c in range(k):
            s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = np.float32(0.0)
            j = 0
            while j + 8 <= d:
                s0 += X[i, j] * C[c, j]
                s1 += X[i, j + 1] * C[c, j + 1]
                s2 += X[i, j + 2] * C[c, j + 2]
                s3 += X[i, j + 3] * C[c, j + 3]
                s4 += X[i, j + 4] * C[c, j + 4]
                s5 += X[i, j + 5] * C[c, j + 5]
                s6 += X[i, j + 6] * C[c, j + 6]
                s7 += X[i, j + 7] * C[c, j + 7]
                j += 8
            s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
            while j < d:
                s += X[i, j] * C[c, j]
                j += 1
            v = C2[c] - np.float32(2.0) * s
            if best < 0 or v < bestv:
                best = c
                bestv = v
        out[i] = best
    return out


@njit
def _means(X, assign, C):
    """Each centroid (row of C, updated in place) the mean of its rows of X (``assign``),
    summed in float64 in row order; a centroid without rows is left as it was. Returns the
    number of rows of each centroid."""
    k, d = C.shape
    sums = np.zeros((k, d))
    counts = np.zeros(k, np.int64)
    for i in range(X.shape[0]):
        c = assign[i]
        counts[c] += 1
        for j in range(d):
            sums[c, j] += X[i, j]
    for c in range(k):
        if counts[c] > 0:
            for j in range(d):
                C[c, j] = sums[c, j] / counts[c]
    return counts


def _norms2(C: np.ndarray) -> np.ndarray:
    return (C.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)


SAME = 1e-6


def seed_rows(X: np.ndarray, k: int, seed: int) -> list[int]:
    """k-means++'s k distinct rows of X (as ``initial_centroids``: the first uniformly, each
    next with probability proportional to its squared distance to the nearest row drawn so
    far, uniformly among the rest when those are all 0), the distances by |x|^2 + |c|^2 - 2 x.c
    (one matrix-vector product per row drawn: k x rows x dim in all); a squared
    distance under ``SAME`` counts as 0 (the same row)."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    sq = (X.astype(np.float64) ** 2).sum(axis=1)
    chosen = [int(rng.integers(n))]
    dist = np.full(n, np.inf)
    while True:
        c = chosen[-1]
        d = sq + sq[c] - 2.0 * (X @ X[c]).astype(np.float64)
        d[d < SAME] = 0.0   # float32 products: a row equal to c is at 0, not 1e-8
        dist = np.minimum(dist, d)
        if len(chosen) == k:
            return chosen
        chosen.append(_draw(dist, chosen, rng))


def fit_centroids(X: np.ndarray, k: int, seed: int = 0, iters: int = FIT_ITERS) -> np.ndarray:
    """k centroids of the rows of X (float32, normalised by the caller) by Lloyd's algorithm
    (``_nearest``, ``_means``) from k-means++'s rows (``seed_rows``, with
    ``numpy.random.default_rng(seed)``); at most ``iters`` rounds, fewer when no row moves."""
    n = X.shape[0]
    k = max(1, min(k, n))
    C = X[seed_rows(X, k, seed)].astype(np.float32)
    assign = np.full(n, -1, dtype=np.int32)
    new = np.empty(n, dtype=np.int32)
    for _ in range(iters):
        _nearest(X, C, _norms2(C), new)
        if (new == assign).all():
            break
        assign[:] = new
        _means(X, assign, C)
    return C


@dataclass
class WordClusters:
    """Each kept word's cluster at each granularity of ``levels`` (``ids[i, l]``: word i's
    cluster among levels[l]), what the models' features read, stored in the model file.
    ``source``: the facts the model card shows (file, sha256, limit, ...)."""
    words: list[str]
    ids: np.ndarray                      # (n_words, len(levels)) uint16
    levels: tuple = LEVELS
    source: dict = field(default_factory=dict)

    def __post_init__(self):
        self.index = {w: i for i, w in enumerate(self.words)}
        self._cache: dict[str, tuple | None] = {}
        self._grams: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # (keys, ptr, rows)
        self._gram_counts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.words)

    def lookup(self, word: str) -> tuple | None:
        """The word's cluster ids (one per level), or None: the word's own, else its
        lower-cased form's, else the nearest known word's by character trigrams (``nearest``);
        kept per word type (at most ``KEPT``)."""
        got = self._cache.get(word, False)
        if got is not False:
            return got
        i = self.index.get(word)
        if i is None:
            i = self.index.get(word.lower())
        if i is None:
            i = self.nearest(word)
        got = None if i is None else tuple(int(x) for x in self.ids[i])
        if len(self._cache) >= KEPT:
            self._cache.clear()
        self._cache[word] = got
        return got

    def _build_grams(self) -> None:
        """The trigram index ``nearest`` reads, in arrays: each distinct trigram of the words
        (``trigrams``, as ``_gram_code`` numbers; ``keys``, ascending) with the first
        ``POSTINGS`` words that have it (``rows[ptr[k]:ptr[k + 1]]``, ascending), and each word's
        number of distinct trigrams (``_gram_counts``). Made with numpy in one pass over the
        words' code points (200,000 words: a Python loop over their trigrams took 1.2 s)."""
        n = len(self.words)
        marked = [f"<{w.lower()}>" for w in self.words]
        cp = np.frombuffer("".join(marked).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
        lens = np.fromiter((len(m) for m in marked), dtype=np.int64, count=n)
        grams = np.maximum(lens - 2, 0)
        starts = np.cumsum(lens) - lens
        first = np.cumsum(grams) - grams
        word = np.repeat(np.arange(n, dtype=np.int64), grams)
        pos = np.repeat(starts - first, grams) + np.arange(int(grams.sum()), dtype=np.int64)
        codes = (cp[pos] << np.uint64(42)) | (cp[pos + 1] << np.uint64(21)) | cp[pos + 2]
        order = np.lexsort((word, codes))          # by trigram, then word
        codes, word = codes[order], word[order]
        if len(codes):
            new = np.ones(len(codes), dtype=bool)
            new[1:] = (codes[1:] != codes[:-1]) | (word[1:] != word[:-1])
            codes, word = codes[new], word[new]    # each (trigram, word) once
        self._gram_counts = np.bincount(word, minlength=n).astype(np.int32)
        keys, at, size = np.unique(codes, return_index=True, return_counts=True)
        rank = np.arange(len(codes)) - np.repeat(at, size)
        keep = rank < POSTINGS                     # each trigram's first POSTINGS words
        kept = np.minimum(size, POSTINGS)
        ptr = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(kept, out=ptr[1:])
        self._grams = (keys, ptr, word[keep].astype(np.int32))

    def nearest(self, word: str) -> int | None:
        """The row of the known word most like ``word`` by character trigrams of the lower-cased
        words with boundary marks (``trigrams``): the highest Dice coefficient 2 |shared| / (|a|
        + |b|) among the words a trigram of it lists (``POSTINGS``), at least ``MIN_DICE``; on
        a tie the earlier (more frequent) word. None when there is no such word."""
        if self._grams is None:
            self._build_grams()
        keys, ptr, rows_of = self._grams
        g = trigrams(word)
        if not g or not len(keys):
            return None
        q = np.array([_gram_code(t) for t in g], dtype=np.uint64)
        at = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
        lists = [rows_of[ptr[k]:ptr[k + 1]] for k in at[keys[at] == q].tolist()]
        if not lists:
            return None
        rows, shared = np.unique(np.concatenate(lists), return_counts=True)
        dice = 2.0 * shared / (len(g) + self._gram_counts[rows])
        best = int(np.argmax(dice))   # rows ascending: the first maximum is the earliest word
        return int(rows[best]) if dice[best] >= MIN_DICE else None

    # ---- inside a model file ----
    def arrays(self) -> dict:
        from structkit.vocab import pack_strings
        return {**pack_strings("vectors_words", self.words), "vectors_clusters": self.ids.astype(np.uint16)}

    def header(self) -> dict:
        return {"levels": list(self.levels), **self.source}

    @classmethod
    def from_model(cls, header: dict | None, arrays) -> "WordClusters | None":
        """The table a model file holds (None when it was trained without vectors); a
        ValueError when it is damaged."""
        if not header:
            return None
        from structkit.vocab import unpack_strings
        words = unpack_strings("vectors_words", arrays)
        ids = np.asarray(arrays["vectors_clusters"])
        levels = tuple(int(k) for k in header["levels"])
        if ids.shape != (len(words), len(levels)) or not levels or any(not 1 <= k <= 65535 for k in levels) \
                or (len(words) and (ids.max(axis=0) >= np.array(levels)).any()):
            raise ValueError("word clusters that do not fit their levels")
        source = {k: v for k, v in header.items() if k != "levels"}
        return cls(words, ids, levels, source)


def _gram_code(t: str) -> int:
    """A trigram as one number: its three code points (21 bits each)."""
    return (ord(t[0]) << 42) | (ord(t[1]) << 21) | ord(t[2])


def trigrams(word: str) -> list[str]:
    """The distinct character trigrams of ``<word>`` lower-cased (``<`` and ``>`` mark its
    ends), in order."""
    w = f"<{word.lower()}>"
    return list(dict.fromkeys(w[i:i + 3] for i in range(len(w) - 2)))


def split_level(X: np.ndarray, coarse: np.ndarray, k: int, parts: int, seed: int = 0,
                sample: int = SPLIT_SAMPLE, iters: int = FIT_ITERS) -> np.ndarray:
    """Each row's cluster among ``k * parts``, nested in its cluster ``coarse[i]`` among k:
    that cluster's rows (in the order they come) split by ``parts`` centroids fitted
    (``fit_centroids``) on its first ``sample`` rows, each row then assigned to the nearest
    (``_nearest``); row i's id is ``coarse[i] * parts`` + its part."""
    if not 1 <= k * parts <= 65535:
        raise UserError(f"cluster sizes must be in 1..65535, got {k} x {parts}")
    order = np.argsort(coarse, kind="stable")
    bounds = np.searchsorted(coarse[order], np.arange(k + 1))
    out = np.empty(len(X), dtype=np.int32)
    for c in range(k):
        members = order[bounds[c]:bounds[c + 1]]
        if not len(members):
            continue
        rows = np.ascontiguousarray(X[members])
        C = fit_centroids(rows[:sample], parts, seed, iters)
        got = np.empty(len(members), dtype=np.int32)
        _nearest(rows, C, _norms2(C), got)
        out[members] = c * parts + got
    return out


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of X in the order they first come, and each row's index among them:
    words with the same vector (a pruned table, such as spaCy's, maps many words to one row) are
    clustered once. Rows are told apart by their bytes."""
    seen: dict[bytes, int] = {}
    inverse = np.fromiter((seen.setdefault(r.tobytes(), len(seen)) for r in X), dtype=np.int64, count=len(X))
    first = np.empty(len(seen), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(X) - 1, -1, -1)   # each distinct row's first word
    return X[first], inverse


# The tables ``word_clusters`` made are kept in the user's cache (``cluster_cache``), one file
# per (the .vec file's sha256, the limit, the clustering's parameters): a second training with
# the same vectors reads its table back instead of reading and clustering the file again (French
# ParTUT's 200,000 words: about 12 CPU s). Bump CACHE_VERSION whenever the clustering changes.
CACHE_VERSION = 1
CACHE_ENV = "STRUCTKIT_CLUSTER_CACHE"   # a folder; "off" (or empty) keeps no tables


def cluster_cache() -> Path | None:
    """The folder of kept cluster tables: ``$STRUCTKIT_CLUSTER_CACHE``, else ``clusters`` in
    structkit's cache folder; None when the variable says ``off`` (or is set empty)."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "no") else Path(env).expanduser()
    from structkit.datasets.paths import cache_dir
    return cache_dir() / "clusters"


def _cache_key(sha256: str, limit, levels, seed, sample, iters, split) -> dict:
    return {"version": CACHE_VERSION, "sha256": sha256, "limit": limit, "levels": list(levels), "seed": seed,
            "sample": sample, "iters": iters, "split": split, "split_sample": SPLIT_SAMPLE}


def _cache_file(key: dict) -> Path | None:
    import hashlib
    import json

    folder = cluster_cache()
    if folder is None:
        return None
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return folder / f"{digest}.npz"


def _read_cached(file: Path, key: dict, limit) -> "WordClusters | None":
    """The table kept in ``file`` when it is one for ``key`` and whole; None otherwise (a
    missing, foreign, truncated or damaged file is not trusted: the table is made again)."""
    import json
    import zipfile

    words = LIMIT_MAX if limit is None else min(limit, LIMIT_MAX)
    most = {"meta": 1 << 16, "vectors_words__off": 8 * (words + 1), "vectors_words__utf8": words * 1024,
            "vectors_clusters": 2 * words * (len(key["levels"]) + 1)}   # bytes of each array's data
    try:
        with np.load(file, allow_pickle=False) as z:
            if set(z.files) != set(most) or any(z.zip.getinfo(k + ".npy").file_size > most[k] + 1024
                                                for k in most):
                return None   # other arrays, or larger than such a table can be: not read
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(bytes(arrays.pop("meta")).decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("key") != key or not isinstance(meta.get("source"), dict):
            return None
        table = WordClusters.from_model(meta["source"], arrays)
        if table is None or (limit is not None and len(table) > limit) or len(table) != meta["source"].get("words"):
            return None
        return table
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, zipfile.BadZipFile, EOFError):
        return None


def _write_cached(file: Path, key: dict, table: "WordClusters") -> None:
    """Keep ``table`` in ``file`` (a temporary file renamed into place); a cache that cannot be
    written is no error."""
    import json
    import tempfile

    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        meta = json.dumps({"key": key, "source": table.header()}).encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=file.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, meta=np.frombuffer(meta, dtype=np.uint8), **table.arrays())
            os.replace(tmp, file)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def word_clusters(path: str, limit: int | None = DEFAULT_LIMIT, levels=LEVELS, seed: int = 0,
                  sample: int = FIT_SAMPLE, iters: int = FIT_ITERS, split: int = SPLIT) -> WordClusters:
    """The cluster table of a ``.vec`` file (``read_vectors``, at most ``limit`` words): for
    each level k, k centroids fitted (``fit_centroids``) on the normalised vectors of the first
    ``sample`` words, then every word assigned to its nearest one (``_nearest``); and, with
    ``split`` above 1, one more level, the last one's clusters each split in ``split``
    (``split_level``): the table's levels are ``levels + (levels[-1] * split,)``. The table is
    kept in ``cluster_cache()`` and read back from there for the same file (by its sha256) and
    parameters."""
    from structkit.datasets.convert import sha256_file   # training only: not imported on load

    path = os.fspath(path)
    # a regular file only (read_vectors says in one line what is wrong with any other path;
    # a pipe is read once, by it, and hashed after as before)
    sha256 = sha256_file(Path(path)) if os.path.isfile(path) else None
    key = _cache_key(sha256, limit, levels, seed, sample, iters, split)
    file = None if sha256 is None else _cache_file(key)
    if file is not None and file.is_file():
        table = _read_cached(file, key, limit)
        if table is not None:
            table.source["file"] = display_name(path)   # as this run names it
            return table
    table = _make_clusters(path, limit, levels, seed, sample, iters, split, sha256)
    if file is not None:
        _write_cached(file, key, table)
    return table


def _make_clusters(path: str, limit, levels, seed, sample, iters, split, sha256) -> WordClusters:
    from structkit.datasets.convert import sha256_file

    vec = read_vectors(path, limit)
    if sha256 is None:
        sha256 = sha256_file(Path(path))
    X = normalise(vec.matrix, in_place=True)   # the file's vectors are not read again
    distinct, inverse = distinct_rows(X)
    levels = tuple(levels)
    nested = split > 1 and len(levels) > 0
    ids = np.zeros((len(vec), len(levels) + nested), dtype=np.uint16)
    for j, k in enumerate(levels):
        if not 1 <= k <= 65535:
            raise UserError(f"cluster sizes must be in 1..65535, got {k}")
        C = fit_centroids(X[:sample], k, seed, iters)
        out = np.empty(len(distinct), dtype=np.int32)
        _nearest(distinct, C, _norms2(C), out)
        ids[:, j] = out[inverse]
    source = {"file": display_name(path), "sha256": sha256, "limit": limit, "words": len(vec),
              "dim": vec.dim, "seed": seed, "fit_sample": min(sample, len(vec)), "fit_iters": iters}
    if nested:
        ids[:, -1] = split_level(distinct, out, levels[-1], split, seed, SPLIT_SAMPLE, iters)[inverse]
        levels += (levels[-1] * split,)
        source |= {"split": split, "split_sample": SPLIT_SAMPLE}
    return WordClusters(vec.words, ids, levels, source)


# ---- the training options ``--vectors FILE`` and ``--vectors-limit N`` ----------------------------
LIMIT_MAX = 5_000_000
VECTORS_LIMIT = Param("vectors_limit", int, DEFAULT_LIMIT,
                      "How many words of --vectors to keep (the file's first: most frequent first).",
                      low=1, cap=LIMIT_MAX, cap_why="the words and their vectors are held in memory")


def check_options(vectors, limit) -> tuple[str | None, int | None]:
    """``--vectors`` and ``--vectors-limit`` as a config holds them, checked: a limit needs a
    file, and is a positive integer of at most ``LIMIT_MAX``."""
    if vectors is None:
        if limit is not None:
            raise UserError("--vectors-limit applies with --vectors FILE")
        return None, None
    if not isinstance(vectors, str) or not vectors:
        raise UserError(f"--vectors must be the path of a .vec file, got {vectors!r}")
    if vectors == "-":
        raise UserError("--vectors is read by name, not from standard input ('-'): the model card "
                        "records the file and its sha256")
    return vectors, (None if limit is None else VECTORS_LIMIT.check(limit))


def clusters_of_config(config, given: "WordClusters | None" = None) -> "WordClusters | None":
    """The word clusters a training run reads: ``given`` (made once for the parts of a
    pipeline), else those of ``config.vectors`` (None without vectors)."""
    if given is not None:
        return given
    path = getattr(config, "vectors", None)
    if path is None:
        return None
    limit = getattr(config, "vectors_limit", None)
    return word_clusters(path, DEFAULT_LIMIT if limit is None else limit)


def vector_bounds(header: dict) -> dict:
    """The largest sizes of the word-cluster arrays a model file with this header may hold
    (none when its header has no vectors), for its loader's check before allocating."""
    v = header.get("vectors")
    if not isinstance(v, dict):
        return {}
    levels = v.get("levels")
    n = len(levels) if isinstance(levels, list) else 0
    return {"vectors_words__off": LIMIT_MAX + 1, "vectors_words__utf8": LIMIT_MAX * 256,
            "vectors_clusters": LIMIT_MAX * n}
