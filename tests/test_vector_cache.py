"""The word-cluster tables ``vectors.word_clusters`` keeps (``cluster_cache``): a second call
for the same file and parameters reads the table back without reading the .vec file; another
file (by content), limit or level set makes its own; a damaged, foreign or truncated cache file
is not trusted; ``off`` keeps nothing; a cache that cannot be written is no error."""
from __future__ import annotations

import numpy as np
import pytest

import structkit.vectors as V


def _vec(path, n=300, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    rows = [f"w{i} " + " ".join(f"{x:.4f}" for x in rng.normal(size=dim)) for i in range(n)]
    path.write_text(f"{n} {dim}\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def _same(a: V.WordClusters, b: V.WordClusters) -> None:
    assert a.words == b.words and a.levels == b.levels
    assert a.ids.dtype == b.ids.dtype and np.array_equal(a.ids, b.ids)
    assert a.source == b.source


def _made(monkeypatch):
    """Count the tables actually made from a file."""
    made = []
    real = V._make_clusters
    monkeypatch.setattr(V, "_make_clusters", lambda *a, **k: made.append(a[0]) or real(*a, **k))
    return made


KW = dict(levels=(4, 16), split=2)


def test_a_second_call_reads_the_kept_table(tmp_path, monkeypatch):
    monkeypatch.setenv(V.CACHE_ENV, str(tmp_path / "cache"))
    vec = _vec(tmp_path / "v.vec")
    made = _made(monkeypatch)
    first = V.word_clusters(vec, 200, **KW)
    assert made == [vec] and len(list((tmp_path / "cache").glob("*.npz"))) == 1
    assert first.levels == (4, 16, 32) and len(first) == 200

    def no_reading(*a, **k):
        raise AssertionError("the .vec file was read again")

    monkeypatch.setattr(V, "read_vectors", no_reading)
    again = V.word_clusters(vec, 200, **KW)
    assert made == [vec]
    _same(first, again)
    # the same content under another name: the same table, named as this call names it
    other = tmp_path / "copy.vec"
    other.write_bytes((tmp_path / "v.vec").read_bytes())
    third = V.word_clusters(str(other), 200, **KW)
    assert made == [vec] and third.source["file"].endswith("copy.vec")
    assert np.array_equal(third.ids, first.ids)


@pytest.mark.parametrize("change", ["limit", "levels", "content"])
def test_other_parameters_or_content_make_their_own(tmp_path, monkeypatch, change):
    monkeypatch.setenv(V.CACHE_ENV, str(tmp_path / "cache"))
    vec = _vec(tmp_path / "v.vec")
    made = _made(monkeypatch)
    V.word_clusters(vec, 200, **KW)
    if change == "limit":
        got = V.word_clusters(vec, 150, **KW)
        assert len(got) == 150
    elif change == "levels":
        got = V.word_clusters(vec, 200, levels=(4, 8), split=2)
        assert got.levels == (4, 8, 16)
    else:
        _vec(tmp_path / "v.vec", seed=1)
        got = V.word_clusters(vec, 200, **KW)
    assert len(made) == 2
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 2
    # and what was made equals a table made with the cache off
    monkeypatch.setenv(V.CACHE_ENV, "off")
    _same(got, V.word_clusters(vec, len(got), levels=got.levels[:-1], split=2))


def _damage(file, how):
    import json
    if how == "truncated":
        file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    elif how == "garbage":
        file.write_bytes(b"not a zip archive")
    else:
        with np.load(file) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(bytes(arrays["meta"]).decode())
        if how == "ids past their level":
            arrays["vectors_clusters"] = np.full_like(arrays["vectors_clusters"], 40)
        elif how == "another key":
            meta["key"]["limit"] = 999
        elif how == "fewer words than it says":
            meta["source"]["words"] = 201
        elif how == "an extra array":
            arrays["big"] = np.zeros(10, dtype=np.uint8)
        elif how == "larger than such a table":
            # the words as they were, padded past 1 kB a word: whole, but not read
            pad = np.zeros(200 * 1024 + 2048, dtype=np.uint8)
            arrays["vectors_words__utf8"] = np.concatenate([arrays["vectors_words__utf8"], pad])
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        with open(file, "wb") as f:
            np.savez(f, **arrays)


@pytest.mark.parametrize("how", ["truncated", "garbage", "ids past their level", "another key",
                                 "fewer words than it says", "an extra array", "larger than such a table"])
def test_a_damaged_kept_table_is_not_trusted(tmp_path, monkeypatch, how):
    monkeypatch.setenv(V.CACHE_ENV, str(tmp_path / "cache"))
    vec = _vec(tmp_path / "v.vec")
    first = V.word_clusters(vec, 200, **KW)
    (file,) = (tmp_path / "cache").glob("*.npz")
    _damage(file, how)
    made = _made(monkeypatch)
    reads = []
    if how in ("an extra array", "larger than such a table"):   # refused before any array is read
        from numpy.lib.npyio import NpzFile
        real = NpzFile.__getitem__
        monkeypatch.setattr(NpzFile, "__getitem__", lambda self, k: reads.append(k) or real(self, k))
    again = V.word_clusters(vec, 200, **KW)
    assert reads == []
    assert made == [vec]          # made again from the file
    _same(first, again)
    assert V._read_cached(file, V._cache_key(first.source["sha256"], 200, (4, 16), 0, V.FIT_SAMPLE,
                                             V.FIT_ITERS, 2), 200) is not None   # and kept whole again


def test_off_keeps_nothing_and_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    vec = _vec(tmp_path / "v.vec")
    monkeypatch.setenv(V.CACHE_ENV, "off")
    made = _made(monkeypatch)
    V.word_clusters(vec, 100, **KW)
    V.word_clusters(vec, 100, **KW)
    assert len(made) == 2 and V.cluster_cache() is None
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    monkeypatch.setenv(V.CACHE_ENV, str(blocker / "cache"))    # a folder under a file
    got = V.word_clusters(vec, 100, **KW)
    assert len(got) == 100 and len(made) == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []
