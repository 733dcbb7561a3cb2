"""Pretrained word vectors (issue 44, first step): reading the word2vec/fastText text format and
clustering the vectors into discrete word classes at several granularities, the features a
linear model can use. Ground floor: nothing here imports a wing. Not wired into training yet.

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

Memory is bounded by ``limit``: lines are read one at a time, and reading stops as soon as
``limit`` distinct words are kept (the file lists the most frequent words first), so the rest
of a 2 GB file is never read. A word seen again keeps its first vector.
"""
from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass, field

import numpy as np

from structkit.errors import UserError, quote
from structkit.io.files import display_name, iter_lines, open_binary
from structkit.jit import njit


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


def read_vectors(path: str, limit: int | None = None, dim: int | None = None) -> Vectors:
    """The vectors of a ``.vec`` file (see the module's docstring), at most ``limit`` words;
    ``dim``, when given, is the dimension the file must have. Every problem is a UserError
    naming the file and line."""
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
    f = open_binary(path)
    try:
        stream = gzip.GzipFile(fileobj=f) if f.peek(2)[:2] == b"\x1f\x8b" else f
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
                parts = line.rsplit(" ", dim)
                if (len(parts) != dim + 1 or not parts[0]
                        or " " in parts[0] and _looks_numeric(parts[0].rsplit(" ", 1)[1])):
                    n = len(line.split()) - 1
                    raise UserError(f"{n} values where {dim} are expected ({source} dimension)",
                                    name, lineno)
                seen += 1
                if header and seen > header[0]:
                    raise UserError(f"more vectors than the header's {header[0]}", name, lineno)
                v = _values(parts[1:], name, lineno)
                if parts[0] not in index:
                    index[parts[0]] = len(words)
                    words.append(parts[0])
                    rows.append(v)
                    if limit is not None and len(words) >= limit:
                        break
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise UserError(f"corrupt gzip data ({e})", name, lineno + 1) from None
    finally:
        f.close()
    if not words:
        raise UserError("no vectors in the file" + (" (only its header)" if header else ""), name)
    if header and seen < header[0] and (limit is None or len(words) < limit):
        raise UserError(f"the header says {header[0]} vectors, the file has {seen} (cut short?)",
                        name, lineno)
    return Vectors(words, np.vstack(rows), path, index)


@njit
def _lloyd(X, C, iters, assign):
    """Lloyd's k-means from centroids C (updated in place): each row goes to its nearest
    centroid by squared Euclidean distance (the lowest index on a tie), then each centroid is
    its rows' mean; an empty cluster keeps its centroid. Stops early when no row moves. Sums
    in float64, in a fixed order, so the result is exactly reproducible."""
    n, d = X.shape
    k = C.shape[0]
    sums = np.zeros((k, d))
    counts = np.zeros(k, np.int64)
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
        sums[:] = 0.0
        counts[:] = 0
        for i in range(n):
            c = assign[i]
            counts[c] += 1
            for j in range(d):
                sums[c, j] += X[i, j]
        for c in range(k):
            if counts[c] > 0:
                for j in range(d):
                    C[c, j] = sums[c, j] / counts[c]
    return assign


def normalise(X: np.ndarray) -> np.ndarray:
    """The rows of X scaled to unit L2 norm, as float32 (a zero row stays zero)."""
    X = np.asarray(X, dtype=np.float32)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.where(norms > 0, norms, 1)).astype(np.float32)


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
        w = dist.copy()
        w[chosen] = 0.0
        if w.sum() <= 0:
            w = np.ones(n)
            w[chosen] = 0.0
        chosen.append(int(rng.choice(n, p=w / w.sum())))
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
