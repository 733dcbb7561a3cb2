"""The fast path of reading .vec lines (``vectors._parse_lines``, a numba kernel) against a
plain-Python reference on random lines, and ``read_vectors`` against a plain reader of the
format on random files: the same words and the same float32 bits, whatever the batch size; the
one-line errors of tests/test_vectors.py again with batches of one and two lines, so that the
first problem in the file is still the one reported and nothing past the limit is."""
from __future__ import annotations

import re

import numpy as np
import pytest

import structkit.vectors as V
from structkit.errors import UserError
from test_vectors import BAD, _write

PLAIN = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")   # the fast path's decimals


def ref_line(line: str, dim: int):
    """(bytes of the word, values) where the kernel must read the line, else None."""
    parts = line.rsplit(" ", dim)
    if len(parts) != dim + 1 or not parts[0]:
        return None
    if any(not PLAIN.fullmatch(v) or sum(c.isdigit() for c in v) > 15 for v in parts[1:]):
        return None
    return len(parts[0].encode("utf-8")), [float(v) for v in parts[1:]]


def random_value(rng) -> str:
    kind = rng.integers(12)
    x = rng.normal() * 10.0 ** rng.integers(-3, 4)
    return [f"{x:.4f}", f"{x:.7f}", str(int(x)), f"{x:.12f}", "+.5", "5.", "-0", "-0.0000",
            f"{x:e}", rng.choice(["nan", "", "1.2.3", "-", ".", "1_0", "١"]),
            "1234567890.123456", "123456789012345"][kind]


def random_line(rng, dim: int) -> str:
    word = "".join(rng.choice(list("abé, .Z0-")) for _ in range(rng.integers(0, 5)))
    n = dim + int(rng.choice([0, 0, 0, 0, -1, 1]))
    sep = "  " if rng.random() < 0.05 else " "
    return word + " " + sep.join(random_value(rng) for _ in range(max(n, 0)))


@pytest.mark.parametrize("seed", range(20))
def test_the_kernel_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(1, 5))
    lines = [random_line(rng, dim) for _ in range(60)]
    data = [ln.encode("utf-8") for ln in lines]
    ends = np.cumsum([len(x) for x in data], dtype=np.int64)
    starts = ends - np.array([len(x) for x in data], dtype=np.int64)
    out = np.zeros((len(lines), dim))
    word_end = np.empty(len(lines), dtype=np.int64)
    V._parse_lines(np.frombuffer(b"".join(data), dtype=np.uint8), starts, ends, dim, V._POW10, out, word_end)
    fast = 0
    for r, line in enumerate(lines):
        ref = ref_line(line, dim)
        if ref is None:
            assert word_end[r] == -1, line
            continue
        fast += 1
        assert word_end[r] - starts[r] == ref[0], line
        # the same float64 bits as Python's float (the sign of zero too)
        assert out[r].tobytes() == np.array(ref[1], dtype=np.float64).tobytes(), line
    assert fast > 0


def plain_reader(text: str, limit=None):
    """The format read the plain way: the header, the first vector's dimension, each line split
    on its last DIM spaces, values by float, a word seen again keeps its first vector."""
    words, rows, dim = [], [], None
    for k, line in enumerate(text.split("\n")):
        line = line.rstrip(" ")
        if not line.strip():
            continue
        if k == 0 and len(line.split()) == 2:
            dim = int(line.split()[1])
            continue
        dim = dim or len(line.split()) - 1
        parts = line.rsplit(" ", dim)
        if parts[0] not in words:
            words.append(parts[0])
            rows.append([float(v) for v in parts[1:]])
            if limit and len(words) == limit:
                break
    return words, np.array(rows, dtype=np.float64).astype(np.float32)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("batch", [1, 2, 7, 1024])
def test_read_vectors_matches_a_plain_reader(tmp_path, monkeypatch, seed, batch):
    monkeypatch.setattr(V, "BATCH_LINES", batch)
    rng = np.random.default_rng(100 + seed)
    dim = int(rng.integers(1, 6))
    header = dim == 1 or seed % 2 == 1   # without one, the first word cannot hold a space
    words = [f"w{int(rng.integers(40))}" + rng.choice(["", " x", "é"] if header else ["", "é"]) for _ in range(30)]
    vals = [[rng.choice([f"{rng.normal():.4f}", f"{rng.normal():e}", "1_0", "7", "-0"]) for _ in range(dim)]
            for _ in words]
    text = (f"{len(words)} {dim}\n" if header else "") + "".join(
        w + " " + " ".join(v) + (" " if seed % 3 else "") + "\n" for w, v in zip(words, vals))
    limit = None if seed % 4 else 7
    got = V.read_vectors(_write(tmp_path, text), limit=limit)
    want_words, want = plain_reader(text, limit)
    assert got.words == want_words
    assert got.matrix.tobytes() == want.tobytes()


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("text, message", BAD)
def test_errors_are_the_same_in_small_batches(tmp_path, monkeypatch, batch, text, message):
    monkeypatch.setattr(V, "BATCH_LINES", batch)
    path = _write(tmp_path, text)
    with pytest.raises(UserError) as e:
        V.read_vectors(path)
    assert str(e.value).startswith(path + ":" + message)


@pytest.mark.parametrize("batch", [1, 2, 3, 1024])
def test_the_limit_comes_before_a_problem_read_after_it(tmp_path, monkeypatch, batch):
    """Lines past the limit-th word are read with its batch (and a bad UTF-8 line further on
    raises while the batch fills) but never reported."""
    monkeypatch.setattr(V, "BATCH_LINES", batch)
    path = _write(tmp_path, b"a 1 2\nb 3 4\nc x y\n\xff\xfe\n")
    assert V.read_vectors(path, limit=2).words == ["a", "b"]
    with pytest.raises(UserError, match=r":3: value 'x' is not a finite number"):
        V.read_vectors(path, limit=3)
    with pytest.raises(UserError, match=r":4: not valid UTF-8 text"):
        V.read_vectors(_write(tmp_path, b"a 1 2\nb 3 4\nc 5 6\n\xff\xfe\n", name="w.vec"), limit=4)


def test_a_header_claiming_a_huge_dimension_is_one_line_not_a_huge_array(tmp_path):
    """Lines of three fields under a header claiming two billion dimensions, more lines than a
    batch: the rows of values are only for lines long enough to hold them (none here), so the
    batch costs no more than its bytes (it once asked numpy for 14.9 TiB: a MemoryError)."""
    text = "3000 2000000000\n" + "".join(f"w{k} 1 2\n" for k in range(2000))
    with pytest.raises(UserError, match=r":2: 2 values where 2000000000 are expected \(the header's dimension\)$"):
        V.read_vectors(_write(tmp_path, text))
