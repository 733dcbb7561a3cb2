"""structkit.vectors' word clusters (issue 44): the numba kernels of the bounded k-means
(``_nearest``, ``_means``) against plain-Python references on random inputs, the cluster table
of a hand-written .vec file, unknown words (lower case, nearest by character trigrams), the
table inside a model file, and the options' checks."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.vectors import (
    WordClusters,
    _means,
    _nearest,
    check_options,
    fit_centroids,
    normalise,
    trigrams,
    word_clusters,
)


def _ref_nearest(X, C):
    """Plain Python: each row's centroid of least squared Euclidean distance, in float64, and
    the distances."""
    out, dists = [], []
    for x in X.tolist():
        d = [sum((a - b) ** 2 for a, b in zip(x, c)) for c in C.tolist()]
        out.append(min(range(len(d)), key=lambda c: (d[c], c)))
        dists.append(d)
    return out, dists



@pytest.mark.parametrize("seed", range(4))
def test_normalise_by_blocks_and_in_place_matches_the_whole_array(seed, monkeypatch):
    """``normalise`` a block of rows at a time, and in place, gives the bits of the plain
    formula over the whole array (numpy.linalg.norm's float32 norms; a zero row stays zero)."""
    import structkit.vectors as V

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(rng.integers(1, 40)), int(rng.integers(1, 20)))).astype(np.float32)
    X[rng.random(len(X)) < 0.2] = 0.0
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    want = (X / np.where(norms > 0, norms, 1)).astype(np.float32)
    monkeypatch.setattr(V, "NORMALISE_ROWS", int(rng.integers(1, 9)))
    got = normalise(X)
    assert got is not X and got.tobytes() == want.tobytes()
    Y = X.copy()
    back = normalise(Y, in_place=True)
    assert back is Y and Y.tobytes() == want.tobytes()
    assert normalise(X.astype(np.float64)).tobytes() == want.tobytes()   # any float input: float32 out

@pytest.mark.parametrize("seed", range(8))
def test_nearest_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(1, 80)), int(rng.integers(1, 30)), int(rng.integers(1, 12))
    X = normalise(rng.normal(size=(n, d)))
    C = rng.normal(size=(k, d)).astype(np.float32)
    if seed % 2:   # a centroid twice: the lower index wins the tie
        C[-1] = C[0]
    out = np.full(n, -7, dtype=np.int32)
    _nearest(X, C, (C.astype(np.float64) ** 2).sum(1).astype(np.float32), out)
    ref, dists = _ref_nearest(X, C)
    for i in range(n):
        # float32 sums may break a near-tie the other way: then the two distances are equal
        # to float32 precision; the chosen centroid is never a farther one
        assert out[i] == ref[i] or abs(dists[i][out[i]] - dists[i][ref[i]]) < 1e-5
    assert sum(int(a) == b for a, b in zip(out, ref)) >= n - 1
    if seed % 2:
        assert k - 1 not in out.tolist() or k == 1


def test_nearest_by_hand():
    X = np.array([[1, 0], [0, 1], [-1, 0], [0.6, 0.8]], dtype=np.float32)
    C = np.array([[0, 1], [1, 0], [0, 1]], dtype=np.float32)   # centroids 0 and 2 the same
    out = np.zeros(4, dtype=np.int32)
    _nearest(X, C, np.array([1, 1, 1], dtype=np.float32), out)
    # (-1, 0) is as far from both: the lowest index, 0
    assert out.tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_means_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(1, 50)), int(rng.integers(1, 9)), int(rng.integers(1, 8))
    X = rng.normal(size=(n, d)).astype(np.float32)
    assign = rng.integers(0, k, size=n).astype(np.int32)
    C0 = rng.normal(size=(k, d)).astype(np.float32)
    C = C0.copy()
    counts = _means(X, assign, C)
    for c in range(k):
        rows = [X[i].tolist() for i in range(n) if assign[i] == c]
        assert counts[c] == len(rows)
        if rows:
            want = [float(np.float32(sum(r[j] for r in rows) / len(rows))) for j in range(d)]
            assert C[c].tolist() == pytest.approx(want, rel=1e-6, abs=1e-7)
        else:   # no rows: left as it was
            assert C[c].tolist() == C0[c].tolist()


def test_fit_centroids_finds_obvious_groups():
    X = normalise(np.array([[9, 0.1, 0], [1, 0, 0.05], [5, -0.2, 0],
                            [0, 3, 0.1], [0.1, 1, 0], [0, 7, -0.3],
                            [0, 0.1, 2], [0.2, 0, 9]], dtype=np.float32))
    for seed in range(10):
        C = fit_centroids(X, 3, seed)
        out = np.zeros(len(X), dtype=np.int32)
        _nearest(X, C, (C.astype(np.float64) ** 2).sum(1).astype(np.float32), out)
        first: dict = {}
        assert [first.setdefault(a, len(first)) for a in out.tolist()] == [0, 0, 0, 1, 1, 1, 2, 2]


def test_trigrams_by_hand():
    assert trigrams("Chat") == ["<ch", "cha", "hat", "at>"]
    assert trigrams("aaaa") == ["<aa", "aaa", "aa>"]
    assert trigrams("a") == ["<a>"]


# three groups of words, each along one axis: nouns, verbs, numbers
VEC = """9 3
maison 1 0.1 0
chat 0.9 0 0.1
chien 1 -0.1 0.05
mange 0 1 0.1
dort 0.1 0.9 0
court 0 1 -0.1
un 0 0.1 1
deux 0.1 0 0.9
trois 0 -0.1 1
"""
GROUPS = {"maison": 0, "chat": 0, "chien": 0, "mange": 1, "dort": 1, "court": 1, "un": 2, "deux": 2, "trois": 2}


def _vec(tmp_path, text=VEC, name="v.vec"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_word_clusters_of_a_file(tmp_path):
    path = _vec(tmp_path)
    wc = word_clusters(path, limit=100, levels=(3, 9), seed=0, split=1)
    assert wc.words == list(GROUPS) and wc.ids.shape == (9, 2) and wc.levels == (3, 9)
    # level 3: the three groups, whatever their numbers
    by_group: dict = {}
    for w, g in GROUPS.items():
        by_group.setdefault(g, set()).add(int(wc.ids[wc.index[w], 0]))
    assert all(len(v) == 1 for v in by_group.values()) and len({min(v) for v in by_group.values()}) == 3
    assert wc.source == {"file": path, "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
                         "limit": 100, "words": 9, "dim": 3, "seed": 0, "fit_sample": 9, "fit_iters": 10}
    small = word_clusters(path, limit=4, levels=(2,), split=1)
    assert small.words == ["maison", "chat", "chien", "mange"] and small.source["limit"] == 4
    again = word_clusters(path, limit=100, levels=(3, 9), seed=0, split=1)
    assert np.array_equal(again.ids, wc.ids)



def test_the_nested_level_splits_each_cluster_of_the_level_before(tmp_path):
    """The default table has one level more than it fits: each cluster of the last fitted level
    split in ``split`` among its own words. By hand: three groups along three axes, each of two
    pairs of words pointing two ways inside their group; at level 3 the groups, nested in 2 the
    pairs, numbered group x 2 + part."""
    p = tmp_path / "pairs.vec"
    rows = {"a1": (1, 0.15, 0), "a2": (1, 0.16, 0), "a3": (1, -0.15, 0), "a4": (1, -0.16, 0),
            "b1": (0, 1, 0.15), "b2": (0, 1, 0.16), "b3": (0.15, 1, 0), "b4": (0.16, 1, 0),
            "c1": (0.15, 0, 1), "c2": (0.16, 0, 1), "c3": (0, 0.15, 1), "c4": (0, 0.16, 1)}
    p.write_text("".join(f"{w} {x} {y} {z}\n" for w, (x, y, z) in rows.items()), encoding="utf-8")
    wc = word_clusters(str(p), limit=100, levels=(3,), seed=0, split=2)
    assert wc.levels == (3, 6) and wc.ids.shape == (12, 2)
    assert wc.source["split"] == 2
    got = {w: (int(wc.ids[wc.index[w], 0]), int(wc.ids[wc.index[w], 1])) for w in rows}
    for g in "abc":
        coarse = {got[f"{g}{i}"][0] for i in range(1, 5)}
        assert len(coarse) == 1                                  # a group is one cluster
        c = coarse.pop()
        first, second = got[f"{g}1"][1], got[f"{g}3"][1]
        assert got[f"{g}2"][1] == first and got[f"{g}4"][1] == second and first != second
        assert {first, second} == {2 * c, 2 * c + 1}             # nested: group x 2 + part
    assert len({got[w][0] for w in rows}) == 3
    # split=1: no nested level, the fitted levels only
    assert word_clusters(str(p), limit=100, levels=(3,), seed=0, split=1).levels == (3,)

def test_unknown_words(tmp_path):
    ids = np.array([[0], [1], [2], [3]], dtype=np.uint16)
    wc = WordClusters(["maison", "chat", "Paris", "mangeait"], ids, (4,))
    assert wc.lookup("chat") == (1,)
    assert wc.lookup("Chat") == (1,)            # its lower-cased form
    assert wc.lookup("Paris") == (2,)
    assert wc.lookup("paris") is None or wc.lookup("paris") == (2,)
    # nearest by trigrams: 'maisons' shares 5 of its 7 trigrams with 'maison' (6): Dice 10/13
    assert wc.lookup("maisons") == (0,)
    assert wc.lookup("mangeaient") == (3,)      # 7 of 10 and 9: Dice 14/19
    assert wc.lookup("xyz") is None              # no trigram in common
    assert wc.lookup("chats") == (1,)            # <ch cha hat: 3 of 5 and 4, Dice 6/9
    assert wc.lookup("hatte") is None            # 'hat' alone: 1 of 5 and 4, Dice 2/9 < 0.5
    assert wc._cache["maisons"] == (0,)          # kept per word type


def test_nearest_prefers_the_earlier_word_on_a_tie():
    wc = WordClusters(["abcd", "abce"], np.array([[5], [6]], dtype=np.uint16), (8,))
    assert wc.nearest("abcf") == 0              # both share <ab abc: the first (more frequent)



def _ref_index(words, postings):
    """Plain Python: each trigram's first ``postings`` words (in word order), and each word's
    number of distinct trigrams (``trigrams``)."""
    index: dict = {}
    counts = []
    for i, w in enumerate(words):
        g = trigrams(w)
        counts.append(len(g))
        for t in g:
            post = index.setdefault(t, [])
            if len(post) < postings:
                post.append(i)
    return index, counts


def _ref_nearest_word(words, postings, word, min_dice):
    index, counts = _ref_index(words, postings)
    g = trigrams(word)
    shared: dict = {}
    for t in g:
        for i in index.get(t, []):
            shared[i] = shared.get(i, 0) + 1
    best = None
    for i in sorted(shared):       # the earlier word on a tie
        d = 2.0 * shared[i] / (len(g) + counts[i])
        if best is None or d > best[0]:
            best = (d, i)
    return best[1] if best is not None and best[0] >= min_dice else None


@pytest.mark.parametrize("seed", range(6))
def test_the_trigram_index_matches_the_reference(seed, monkeypatch):
    """``WordClusters``' array index (``_build_grams``) and ``nearest`` against a plain-Python
    dict index on random words: capitals, letters whose lower case is longer ('İ'), words alike
    but for case, one- and two-letter words, the empty word; a small cap on postings."""
    import structkit.vectors as V

    rng = np.random.default_rng(seed)
    postings = int(rng.integers(1, 4))
    monkeypatch.setattr(V, "POSTINGS", postings)
    alphabet = ["a", "b", "A", "é", "İ", "\U0001F600"]   # few letters: trigrams shared past the cap
    words = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 6)))) for _ in range(int(rng.integers(1, 80)))]
    wc = WordClusters(words, np.zeros((len(words), 1), dtype=np.uint16), (1,))
    wc._build_grams()
    index, counts = _ref_index(words, postings)
    keys, ptr, rows = wc._grams
    got = {k: rows[ptr[j]:ptr[j + 1]].tolist() for j, k in enumerate(keys.tolist())}
    assert got == {V._gram_code(t): v for t, v in index.items()}
    assert wc._gram_counts.tolist() == counts
    for _ in range(40):
        q = "".join(rng.choice(alphabet, size=int(rng.integers(0, 8))))
        assert wc.nearest(q) == _ref_nearest_word(words, postings, q, V.MIN_DICE), q


def test_the_table_in_a_model_file(tmp_path):
    from structkit.model import load_model, save_model

    wc = WordClusters(["a", "b", "ç"], np.array([[0, 3], [1, 0], [1, 2]], dtype=np.uint16), (2, 4),
                      {"file": "x.vec", "limit": 3})
    path = str(tmp_path / "m.model")
    save_model(path, {"task": "morph", "vectors": wc.header()}, wc.arrays())
    header, arrays = load_model(path, ("morph",))
    back = WordClusters.from_model(header["vectors"], arrays)
    assert back.words == ["a", "b", "ç"] and back.ids.tolist() == [[0, 3], [1, 0], [1, 2]]
    assert back.levels == (2, 4) and back.source == {"file": "x.vec", "limit": 3}
    assert WordClusters.from_model(None, arrays) is None
    bad = dict(arrays, vectors_clusters=np.array([[0, 4], [1, 0], [1, 2]], dtype=np.uint16))  # 4 >= 4
    with pytest.raises(ValueError):
        WordClusters.from_model(header["vectors"], bad)


def test_options():
    assert check_options(None, None) == (None, None)
    assert check_options("v.vec", None) == ("v.vec", None)
    assert check_options("v.vec", 10) == ("v.vec", 10)
    with pytest.raises(UserError, match=r"^--vectors-limit applies with --vectors FILE$"):
        check_options(None, 5)
    with pytest.raises(UserError, match=r"^--vectors-limit must be a positive integer, got 0$"):
        check_options("v.vec", 0)
    with pytest.raises(UserError, match=r"^--vectors-limit must be at most 5,000,000"):
        check_options("v.vec", 10 ** 12)


def _ref_seed_rows(X, k, seed):
    """k-means++ in plain Python with the same draws: rng.integers for the first row, then
    rng.random() * total against the running sum of the squared distances (0 for rows drawn)."""
    rng = np.random.default_rng(seed)
    rows = X.astype(np.float64).tolist()
    n = len(rows)
    chosen = [int(rng.integers(n))]
    while len(chosen) < k:
        w = [0.0 if i in chosen else min(sum((a - b) ** 2 for a, b in zip(rows[i], rows[c])) for c in chosen)
             for i in range(n)]
        if sum(w) <= 0:
            w = [0.0 if i in chosen else 1.0 for i in range(n)]
        r = rng.random() * sum(w)
        acc = 0.0
        for i in range(n):
            acc += w[i]
            if acc > r:
                break
        chosen.append(i)
    return chosen


@pytest.mark.parametrize("seed", range(6))
def test_seed_rows_matches_the_reference(seed):
    from structkit.vectors import seed_rows

    rng = np.random.default_rng(100 + seed)
    n, d = int(rng.integers(3, 40)), int(rng.integers(1, 6))
    X = normalise(rng.normal(size=(n, d)))
    if seed % 2:   # duplicates: distance 0 rows are never drawn while others are left
        X[n // 2:] = X[: n - n // 2]
    k = int(rng.integers(1, n + 1))
    got = seed_rows(X, k, seed)
    assert got == _ref_seed_rows(X, k, seed)
    assert len(set(got)) == k


def test_words_sharing_a_vector_share_its_clusters(tmp_path):
    """A pruned table (spaCy's) maps many words to one row: those words are assigned once, by
    their row, and get its clusters; two rows far apart land in two clusters of two."""
    p = tmp_path / "dup.vec"
    p.write_text("a 1 0 0\nb 1 0 0\nc 0 0 1\nd 0 0 1\ne 1 0 0\nf 0.9 0.1 0\n", encoding="utf-8")
    wc = word_clusters(str(p), limit=100, levels=(2, 6), seed=0, split=1)
    ids = {w: tuple(int(x) for x in wc.ids[wc.index[w]]) for w in "abcdef"}
    assert ids["a"] == ids["b"] == ids["e"] and ids["c"] == ids["d"]
    assert ids["a"][0] != ids["c"][0] and ids["f"][0] == ids["a"][0]
    assert ids["f"][1] != ids["a"][1]     # six clusters for three distinct rows: f its own
