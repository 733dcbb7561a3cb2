"""structkit.vectors (issue 44, first step): reading .vec files (plain and gzipped) with their
expected words and rows written by hand, one-line errors naming file and line, the limit that
stops reading early, and the k-means kernel against a plain-Python reference."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.vectors import Vectors, _lloyd, cluster_ids, initial_centroids, kmeans, normalise, \
    read_vectors


def _write(tmp_path, text, name="v.vec", gz=False):
    p = tmp_path / name
    data = text.encode("utf-8") if isinstance(text, str) else text
    p.write_bytes(gzip.compress(data) if gz else data)
    return str(p)


FASTTEXT = "3 2\nthe 0.5 -1 \n, 2 3e-1 \nNew York 1.25 0 \n"   # fastText: a space after the last value


@pytest.mark.parametrize("gz", [False, True])
def test_a_file_with_a_header(tmp_path, gz):
    v = read_vectors(_write(tmp_path, FASTTEXT, name="plain.txt", gz=gz))   # gzip told by its bytes
    assert v.words == ["the", ",", "New York"]
    assert v.index == {"the": 0, ",": 1, "New York": 2}
    assert v.matrix.dtype == np.float32 and v.dim == 2 and len(v) == 3
    assert v.matrix.tolist() == [[0.5, -1.0], [2.0, np.float32(0.3)], [1.25, 0.0]]


def test_a_file_without_a_header_crlf_and_a_duplicate_keeps_the_first(tmp_path):
    v = read_vectors(_write(tmp_path, "a 1 2 3\r\n\r\nb 4 5 6\r\na 7 8 9\r\nc 0 0 1\r\n"))
    assert v.words == ["a", "b", "c"]
    assert v.matrix.tolist() == [[1, 2, 3], [4, 5, 6], [0, 0, 1]]


def test_limit_and_dim(tmp_path):
    path = _write(tmp_path, FASTTEXT)
    assert read_vectors(path, limit=2).words == ["the", ","]
    assert read_vectors(path, limit=10, dim=2).words == ["the", ",", "New York"]


@pytest.mark.parametrize("gz", [False, True])
def test_the_limit_stops_reading(tmp_path, gz):
    """Past the limit come lines that would each be an error if they were read."""
    good = "".join(f"w{i} {i} {i + 1}\n" for i in range(5))
    bad = "w9 1 2 3 4\nw10 x y\n".encode() + b"\xff\xfe broken\n" * 1000
    path = _write(tmp_path, b"100 2\n" + good.encode() + bad, gz=gz)
    v = read_vectors(path, limit=5)
    assert v.words == [f"w{i}" for i in range(5)]
    assert v.matrix[4].tolist() == [4.0, 5.0]
    with pytest.raises(UserError, match=r":7: 4 values where 2 are expected"):
        read_vectors(path, limit=6)


BAD = [
    # (file content, expected message after "<path>:")
    ("2 3\na 1 2 3\nb 1 2\n", "3: 2 values where 3 are expected (the header's dimension)"),
    ("a 1 2 3\nb 1 2 3 4\n", "2: 4 values where 3 are expected (the first vector's dimension)"),
    ("a 1 2\nb 1 2 3\n", "2: 3 values where 2 are expected"),
    ("a 1 2\nb 1 two\n", "2: value 'two' is not a finite number"),
    ("a 1 2\nb nan 2\n", "2: value 'nan' is not a finite number"),
    ("a 1 2\nb 1e50 2\n", "2: value '1e50' is not a finite number"),
    (b"a 1 2\nb 1 2\nc\xff 1 2\n", "3: not valid UTF-8 text"),
    ("", " no vectors in the file"),
    ("\n\n", " no vectors in the file"),
    ("10 300\n", " no vectors in the file (only its header)"),
    ("10 -3\na 1 2\n", "1: the header must be two positive integers 'COUNT DIM', found '10 -3'"),
    ("10 2.5\na 1 2\n", "1: the header must be two positive integers"),
    ("0 2\na 1 2\n", "1: the header must be two positive integers"),
    ("3 2\na 1 2\nb 1 2\n", "3: the header says 3 vectors, the file has 2 (cut short?)"),
    ("1 2\na 1 2\nb 1 2\n", "3: more vectors than the header's 1"),
    ("word\n", "1: a word without values"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_bad_input_is_one_line_naming_file_and_line(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(UserError) as e:
        read_vectors(path)
    assert str(e.value).startswith(path + ":" + message)
    assert "\n" not in str(e.value)


def test_corrupt_gzip_and_wrong_dim(tmp_path):
    data = gzip.compress(("".join(f"w{i} {i} 1\n" for i in range(2000))).encode())
    path = _write(tmp_path, data[:len(data) // 2])            # cut in the middle
    with pytest.raises(UserError, match=r"v\.vec:\d+: corrupt gzip data") as e:
        read_vectors(path)
    assert "\n" not in str(e.value)
    path = _write(tmp_path, b"\x1f\x8b" + b"not gzip at all", name="x.vec")
    with pytest.raises(UserError, match=r"x\.vec:1: corrupt gzip data"):
        read_vectors(path)
    with pytest.raises(UserError, match=r":1: the header says 2 dimensions, 3 expected"):
        read_vectors(_write(tmp_path, FASTTEXT, name="d.vec"), dim=3)


def _reference_kmeans(X, C, iters):
    """The same algorithm as the kernel in plain Python: nearest centroid by squared Euclidean
    distance (lowest index on a tie), means in float64 stored as float32, an empty cluster keeps
    its centroid, stop when no row moves."""
    n, d = X.shape
    C = [[float(x) for x in row] for row in C]
    Xf = [[float(x) for x in row] for row in X]
    assign = [-1] * n
    for it in range(iters):
        moved = 0
        for i in range(n):
            best, bestd = -1, 0.0
            for c in range(len(C)):
                s = 0.0
                for j in range(d):
                    t = Xf[i][j] - C[c][j]
                    s += t * t
                if best < 0 or s < bestd:
                    best, bestd = c, s
            moved += assign[i] != best
            assign[i] = best
        if it > 0 and moved == 0:
            break
        for c in range(len(C)):
            members = [i for i in range(n) if assign[i] == c]
            if members:
                sums = [0.0] * d
                for i in members:
                    for j in range(d):
                        sums[j] += Xf[i][j]
                C[c] = [float(np.float32(s / len(members))) for s in sums]
    return np.array(C, dtype=np.float32), np.array(assign, dtype=np.int32)


@pytest.mark.parametrize("seed", range(6))
def test_the_kernel_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(5, 60)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
    k = min(k, n)
    raw = rng.normal(size=(n, d))
    if seed % 2:                                         # duplicate rows: ties, empty clusters
        raw[n // 2:] = raw[: n - n // 2]
    X = normalise(raw)
    C = initial_centroids(X, k, seed)
    ref_c, ref_a = _reference_kmeans(X, C, 20)
    assign = np.full(n, -1, dtype=np.int32)
    _lloyd(X, C, 20, assign)
    assert assign.tolist() == ref_a.tolist()
    assert C.tolist() == ref_c.tolist()
    c2, a2 = kmeans(raw, k, seed=seed)           # the public entry normalises: same result
    assert a2.tolist() == ref_a.tolist() and c2.tolist() == ref_c.tolist()


def test_obvious_clusters():
    # three directions, each a few nearby unit-ish vectors; scale does not matter (rows normalised)
    X = np.array([[10, 0.1, 0], [1, 0, 0.05], [5, -0.2, 0],
                  [0, 3, 0.1], [0.1, 1, 0], [0, 7, -0.3],
                  [0, 0.1, 2], [0.2, 0, 9]], dtype=np.float32)
    expected = [[0, 0, 0, 1, 1, 1, 2, 2]]
    for seed in range(20):
        _, assign = kmeans(X, 3, seed=seed)
        # the cluster numbers depend on the seed; the partition does not
        first = {}
        relabelled = [first.setdefault(a, len(first)) for a in assign.tolist()]
        assert [relabelled] == expected


def test_determinism_and_cluster_ids():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 8)).astype(np.float32)
    a = kmeans(X, 10, seed=3)
    b = kmeans(X, 10, seed=3)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    v = Vectors([f"w{i}" for i in range(200)], X)
    ids = cluster_ids(v, ks=(4, 16, 500), seed=1)
    assert ids.shape == (200, 3) and ids.dtype == np.int32
    assert ids[:, 0].max() < 4 and ids[:, 1].max() < 16
    assert sorted(set(ids[:, 2].tolist())) == list(range(200))   # k clipped to 200: one each
    assert ids[:, 1].tolist() == kmeans(X, 16, seed=1)[1].tolist()
    assert np.array_equal(ids, cluster_ids(v, ks=(4, 16, 500), seed=1))
    with pytest.raises(UserError, match="must be positive"):
        cluster_ids(v, ks=(0,))
