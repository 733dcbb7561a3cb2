"""n-best reranking: edit distance and WER against plain-Python references, the perceptron
updates against a literal implementation of Figure 1 (Singh-Miller & Collins), the feature
families on hand-made cases, the command line (train -> rerank -> eval, every bad input as
one line), and the ATIS figures of the dataset README."""
from __future__ import annotations

import functools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from clitools import assert_one_line_error, leftovers
from structkit.io.nbest import read_nbest
from structkit.rerank.features import FeatureSpace, Rows, parse_families
from structkit.rerank.learner import Perceptron, csr_scores, decode
from structkit.rerank.loss import edit_distances, losses, word_edits
from structkit.rerank.topics import TfIdf, backoff_bins, fit_topics
from structkit.rerank.task import RerankConfig, Reranker, evaluate_nbest, train_on

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nbest"
TRAIN = str(FIX / "train_hyporadise.json")
TEST = str(FIX / "test_hyporadise.json")


# ---- edit distance and WER ----------------------------------------------------------------------
def ref_levenshtein(a: tuple, b: tuple) -> int:
    @functools.lru_cache(maxsize=None)
    def d(i: int, j: int) -> int:
        if i == 0:
            return j
        if j == 0:
            return i
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
    return d(len(a), len(b))


@pytest.mark.parametrize("hyp,ref,expected", [
    ("", "", 0), ("a", "", 1), ("", "a b c", 3), ("a b c", "a b c", 0),
    ("a x c", "a b c", 1), ("a c", "a b c", 1), ("a b b c", "a b c", 1),
    ("us air flights", "u s air flights", 2), ("c b a", "a b c", 2), ("x y z", "a b", 3),
])
def test_word_edits_hand_cases(hyp, ref, expected):
    assert word_edits(hyp, ref) == expected
    assert ref_levenshtein(tuple(hyp.split()), tuple(ref.split())) == expected


def test_edit_distances_random_against_reference():
    rng = random.Random(7)
    hyps, refs = [], []
    for _ in range(300):
        hyps.append([rng.choice("abcde") for _ in range(rng.randint(0, 9))])
        refs.append([rng.choice("abcde") for _ in range(rng.randint(0, 9))])
    got = edit_distances(hyps, refs)
    assert got.tolist() == [ref_levenshtein(tuple(h), tuple(r)) for h, r in zip(hyps, refs)]
    # pairing many hypotheses with one reference
    got = edit_distances(hyps[:5], refs[:1], pair_ref=[0] * 5)
    assert got.tolist() == [ref_levenshtein(tuple(h), tuple(refs[0])) for h in hyps[:5]]


def test_losses_and_zero_loss_set():
    d = losses(np.array([3, 1, 1, 4]))
    assert d.tolist() == [2, 0, 0, 3]


def test_wer_evaluation_against_independent_computation():
    ns = read_nbest(str(FIX / "train_hyporadise.json"))
    rng = random.Random(3)
    chosen = [rng.choice(u.hypotheses) for u in ns.utterances]
    res = evaluate_nbest(ns, chosen)
    words = sum(len(u.reference.split()) for u in ns.utterances)

    def lev(h, r):
        return ref_levenshtein(tuple(h.split()), tuple(r.split()))
    first = sum(lev(u.hypotheses[0], u.reference) for u in ns.utterances)
    oracle = sum(min(lev(h, u.reference) for h in u.hypotheses) for u in ns.utterances)
    ch = sum(lev(c, u.reference) for c, u in zip(chosen, ns.utterances))
    assert res["reference_words"] == words
    assert res["one_best"]["errors"] == first and math.isclose(res["one_best"]["wer"], 100 * first / words)
    assert res["oracle"]["errors"] == oracle and math.isclose(res["oracle"]["wer"], 100 * oracle / words)
    assert res["chosen"]["errors"] == ch and math.isclose(res["chosen"]["wer"], 100 * ch / words)
    # group-level sign test: count groups by total errors
    st = res["chosen"]["sign_test_vs_one_best"]
    per = {}
    for g, c, u in zip(ns.groups, chosen, ns.utterances):
        a, b = per.get(g, (0, 0))
        per[g] = (a + lev(c, u.reference), b + lev(u.hypotheses[0], u.reference))
    assert st["wins"] == sum(a < b for a, b in per.values())
    assert st["losses"] == sum(a > b for a, b in per.values())
    assert st["groups"] == 4


# ---- the perceptrons against literal references ----------------------------------------------
def dense_to_rows(utts: list[np.ndarray]) -> Rows:
    indptr, indices, data, starts = [0], [], [], [0]
    for X in utts:
        for row in X:
            nz = np.flatnonzero(row)
            indices.extend(nz.tolist())
            data.extend(row[nz].tolist())
            indptr.append(len(indices))
        starts.append(len(indptr) - 1)
    return Rows(np.array(indptr), np.array(indices, dtype=np.int64), np.array(data, dtype=float),
                np.array(starts), utts[0].shape[1])


def violates(sy, sz, lam, dz, y, z):
    return sy - sz < lam * dz or (sy == sz and z < y)


def seq_score(x, alpha):
    """<alpha, x> summed over the non-zero entries left to right, as the CSR kernel sums it
    (margin tests like s(c) - s(e) < 1 are exact comparisons, so rounding must agree)."""
    t = 0.0
    for j in np.flatnonzero(x):
        t += x[j] * alpha[j]
    return t


def apply(alpha, X, tau):
    """alpha + sum_r tau(r) Phi(r), row by row in list order."""
    alpha = alpha.copy()
    for r in sorted(tau):
        alpha = alpha + tau[r] * X[r]
    return alpha


def figure1_reference(utts, deltas, epochs, lam=1.0):
    """Figure 1 with the tau of Section 3, written out set by set; returns (alpha, average
    of alpha over all steps including the initial zero vector)."""
    alpha = np.zeros(utts[0].shape[1])
    snapshots = [alpha.copy()]
    for _ in range(epochs):
        for X, D in zip(utts, deltas):
            s = [seq_score(x, alpha) for x in X]
            G = [w for w in range(len(D)) if D[w] == 0]
            B = [w for w in range(len(D)) if D[w] > 0]
            v = {(c, e): violates(s[c], s[e], lam, D[e], c, e) for c in G for e in B}
            C = [c for c in G if any(v[c, z] for z in B)]
            E = [e for e in B if any(v[y, e] for y in G)]
            if C:
                vtot = {c: sum(v[c, e] for e in E) for c in C}
                tau_c = {c: 1 / len(C) for c in C}
                tau_e = {e: sum(v[c, e] / (len(C) * vtot[c]) for c in C) for e in E}
                # the constraints on tau, and the averaged sample still violates the margin
                assert math.isclose(sum(tau_c.values()), 1.0)
                assert math.isclose(sum(tau_e.values()), 1.0)
                assert all(t >= 0 for t in tau_e.values())
                lhs = alpha @ (sum(tau_c[c] * X[c] for c in C) - sum(tau_e[e] * X[e] for e in E))
                assert lhs < lam * sum(tau_e[e] * D[e] for e in E) + 1e-9
                alpha = apply(alpha, X, {**tau_c, **{e: -t for e, t in tau_e.items()}})
            snapshots.append(alpha.copy())
    return alpha, np.mean(snapshots, axis=0)


def baseline_reference(utts, deltas, epochs):
    alpha = np.zeros(utts[0].shape[1])
    snapshots = [alpha.copy()]
    for _ in range(epochs):
        for X, D in zip(utts, deltas):
            s = [seq_score(x, alpha) for x in X]
            G = [w for w in range(len(D)) if D[w] == 0]
            B = [w for w in range(len(D)) if D[w] > 0]
            if G and B:
                cp = G[0]                                   # the recogniser's best in G
                if any(violates(s[cp], s[z], 0.0, D[z], cp, z) for z in B):
                    e = max(B, key=lambda z: (s[z], -z))   # highest-scoring bad hypothesis
                    alpha = apply(alpha, X, {cp: 1.0, e: -1.0})
            snapshots.append(alpha.copy())
    return alpha, np.mean(snapshots, axis=0)


def tiny_problem(seed):
    rng = np.random.default_rng(seed)
    utts, deltas = [], []
    for _ in range(8):
        n = int(rng.integers(1, 6))
        X = rng.integers(0, 3, size=(n, 6)).astype(float)
        D = rng.integers(0, 4, size=n)
        D[rng.integers(0, n)] = 0
        utts.append(X)
        deltas.append(D - D.min())
    return utts, deltas


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("lam", [1.0, 0.5, 2.0])
def test_loss_sensitive_perceptron_matches_figure1(seed, lam):
    utts, deltas = tiny_problem(seed)
    rows = dense_to_rows(utts)
    p = Perceptron(rows.n_features, "loss-perceptron", lam)
    for _ in range(3):
        p.epoch(rows, np.concatenate(deltas))
    alpha, avg = figure1_reference(utts, deltas, 3, lam)
    assert np.allclose(p.w, alpha)
    assert np.allclose(p.averaged(), avg)
    assert np.abs(alpha).sum() > 0


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_baseline_perceptron_matches_reference(seed):
    utts, deltas = tiny_problem(seed)
    rows = dense_to_rows(utts)
    p = Perceptron(rows.n_features, "perceptron")
    for _ in range(3):
        p.epoch(rows, np.concatenate(deltas))
    alpha, avg = baseline_reference(utts, deltas, 3)
    assert np.allclose(p.w, alpha)
    assert np.allclose(p.averaged(), avg)
    assert np.abs(alpha).sum() > 0


def test_single_loss_sensitive_update_by_hand():
    # G = {0, 1}, B = {2 (Delta 1), 3 (Delta 2)}; alpha = 0 so every pair violates:
    # tau(c) = 1/2, tau(e) = 1/2 each; alpha = (Phi0 + Phi1)/2 - (Phi2 + Phi3)/2.
    X = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    rows = dense_to_rows([X])
    p = Perceptron(4, "loss-perceptron")
    p.epoch(rows, np.array([0, 0, 1, 2]))
    assert np.allclose(p.w, [0.5, 0.5, -0.5, -0.5])


def test_csr_scores_and_decode_against_dense():
    utts, _ = tiny_problem(5)
    rows = dense_to_rows(utts)
    w = np.random.default_rng(1).normal(size=rows.n_features)
    dense = np.concatenate(utts)
    assert np.allclose(csr_scores(rows, w), dense @ w)
    idx, best = decode(rows, w)
    for X, k, b in zip(utts, idx, best):
        assert k == int(np.argmax(X @ w)) and math.isclose(b, float(np.max(X @ w)))
    # ties go to the recogniser's earlier hypothesis
    idx, _ = decode(rows, np.zeros(rows.n_features))
    assert idx.tolist() == [0] * len(utts)


# ---- features ----------------------------------------------------------------------------------
def test_parse_families():
    assert parse_families("topic,ngram") == ("ngram", "topic")
    assert parse_families("all") == ("ngram", "trigger", "backoff", "topic")
    assert parse_families("none") == ()
    with pytest.raises(ValueError, match="unknown feature family"):
        parse_families("ngrams")


def features_of(fs, rows, r):
    inv = {j: k for k, j in fs.names.items()}
    a, b = rows.indptr[r], rows.indptr[r + 1]
    return {inv[int(j)]: float(v) for j, v in zip(rows.indices[a:b], rows.data[a:b])}


def test_ngram_and_trigger_features_by_hand(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"group": "g", "reference": "x", "hypotheses": [{"text": "a b", "score": 0}]}\n'
                 '{"group": "g", "reference": "x", "hypotheses": [{"text": "a c a", "score": 0},'
                 ' {"text": "a b a b", "score": -2}]}\n')
    ns = read_nbest(str(p))
    fs = FeatureSpace(("ngram", "trigger"))
    fs.fit(ns)
    rows = fs.extract(ns, ["a b", "unused"], None, grow=True)
    f = features_of(fs, rows, 1)                 # "a c a" with history "a b"
    assert f["1|a"] == 2 and f["1|c"] == 1
    assert f["2|<s> a"] == 1 and f["2|a </s>"] == 1 and f["3|a c a"] == 1
    assert f["T1|a"] == 1 and "T1|c" not in f      # a twice; c once, not in history
    assert f["rank=1"] == 1 and "score" not in f    # best score: relative score 0
    g = features_of(fs, rows, 2)                 # "a b a b": bigram "a b" twice and in history
    assert g["T1|a"] == 1 and g["T1|b"] == 1 and g["T2|a b"] == 1 and g["rank=2"] == 1
    assert g["score"] < 0
    h = features_of(fs, rows, 0)                 # first utterance: empty history
    assert not any(k.startswith("T") for k in h)


def test_tfidf_and_backoff_bins_by_hand():
    docs = [["a", "a", "b"], ["a", "c"], ["d"]]
    t = TfIdf.fit(docs)
    s = t.doc_scores(docs[0])
    assert math.isclose(s[t.vocab["a"]], (1 + math.log(2)) * math.log(3 / 2))
    assert math.isclose(s[t.vocab["b"]], math.log(3))
    ws = t.word_scores(docs)
    assert math.isclose(ws[t.vocab["a"]], ((1 + math.log(2)) * math.log(1.5) + math.log(1.5)) / 2)
    words = [f"w{i}" for i in range(25)]
    scores = np.array([0.5] * 5 + list(np.linspace(1.0, 5.0, 20)))
    bins = backoff_bins(words, scores)
    assert all(bins[w] == 0 for w in words[:5])
    counts = np.bincount([bins[w] for w in words[5:]], minlength=11)
    assert counts[0] == 0 and counts[1:].tolist() == [2] * 10
    assert [bins[w] for w in words[5:]] == sorted(bins[w] for w in words[5:])


def test_bisecting_kmeans_finds_separated_topics():
    rng = np.random.default_rng(0)
    docs, names = [], []
    for t, vocab in enumerate([["gun", "rifle", "law", "shot"], ["fish", "boat", "lake", "trout"]]):
        for k in range(12):
            docs.append(list(rng.choice(vocab, size=20)) + ["the", "a"])
            names.append(f"{t}-{k}")
    tf = TfIdf.fit(docs)
    for seed in range(5):
        tm = fit_topics(names, docs, tf, [1, 2], min_cluster=5, seed=seed)
        lev1 = [tm.train_topics[n][0] for n in names]
        lev2 = [tm.train_topics[n][1] for n in names]
        # level 1 separates the two topics; level 2 refines it (every cluster stays pure)
        assert len(set(lev1[:12])) == 1 and len(set(lev1[12:])) == 1 and lev1[0] != lev1[12]
        assert set(lev2[:12]).isdisjoint(lev2[12:]) and len(set(lev2)) == 4
        assert len(tm.means[0]) == 2 and len(tm.means[1]) == 4
    c_fish = tm.train_topics["1-0"][0]
    assert "trout" in tm.topic_words[0][c_fish] and "gun" not in tm.topic_words[0][c_fish]
    assert all("the" not in s for s in tm.topic_words[0])
    # a new document goes to the cluster of its topic
    got = tm.assign(tf, [["boat", "lake", "fish", "the"]])[0]
    assert got[0] == c_fish


def test_min_cluster_stops_splitting():
    docs = [["a", "b"], ["c", "d"], ["a"], ["d"]]
    tf = TfIdf.fit(docs)
    tm = fit_topics(list("wxyz"), docs, tf, [1, 3], min_cluster=25)
    assert all(v == (0, 0) for v in tm.train_topics.values())


def test_all_families_train_and_round_trip(tmp_path):
    train = read_nbest(TRAIN)
    cfg = RerankConfig(features="all", epochs=3, min_cluster=2, topic_levels=(1, 2))
    cfg.validate()
    m = train_on(cfg, train)
    names = set(m.features.names)
    assert any(k.startswith("T1|") for k in names) and any(k.startswith("B|") for k in names)
    assert any(k.startswith("P|") for k in names) and any(k.startswith("W|") for k in names)
    path = str(tmp_path / "m.npz")
    m.save(path)
    m2 = Reranker.load(path)
    test = read_nbest(TEST)
    a, sa = m.rerank(test)
    b, sb = m2.rerank(test)
    assert a.tolist() == b.tolist() and np.allclose(sa, sb)


def test_reranker_learns_the_fixture():
    train, test = read_nbest(TRAIN), read_nbest(TEST)
    for algo in ("loss-perceptron", "perceptron"):
        cfg = RerankConfig(algo=algo, epochs=5)
        cfg.validate()
        m = train_on(cfg, train)
        idx, _ = m.rerank(test)
        res = evaluate_nbest(test, [u.hypotheses[k] for u, k in zip(test.utterances, idx)])
        assert res["chosen"]["errors"] < res["one_best"]["errors"], algo


def test_reranker_shuffles_with_seed():
    """Each epoch visits the utterances in the order of --seed's generator (as the other
    learners do): the same seed gives the same weights, and the weights are those of the
    perceptron run by hand in that order."""
    from structkit.rerank.task import _train_histories, nbest_edits

    train = read_nbest(TRAIN)
    models = {}
    for seed in (0, 0, 1, 2, 3):
        cfg = RerankConfig(epochs=3, seed=seed)
        cfg.validate()
        w = train_on(cfg, train).weights
        if seed in models:
            assert np.array_equal(models[seed], w)
        models[seed] = w
    assert len({m.tobytes() for m in models.values()}) > 1
    # by hand: the same features, the perceptron fed rng.permutation each epoch
    cfg = RerankConfig(epochs=3, seed=2)
    cfg.validate()
    edits = nbest_edits(train)
    loss = np.concatenate([e - e.min() for e in edits]).astype(np.int64)
    fs = FeatureSpace(tuple(cfg.features), tuple(cfg.topic_levels), cfg.min_cluster, cfg.seed)
    fs.fit(train)
    rows = fs.extract(train, _train_histories(train, edits), fs.utterance_topics(train, None), grow=True)
    p = Perceptron(fs.n_features, cfg.algo, cfg.lam)
    rng = np.random.default_rng(2)
    for _ in range(3):
        p.epoch(rows, loss, rng.permutation(len(rows.starts) - 1))
    assert np.array_equal(p.averaged(), models[2])


def test_reranker_dev_wer_is_a_percentage():
    train, test = read_nbest(TRAIN), read_nbest(TEST)
    seen = []
    cfg = RerankConfig(epochs=2)
    cfg.validate()
    m = train_on(cfg, train, test, lambda e, s: seen.append(s["dev"]["wer"]))
    idx, _ = m.rerank(test)
    res = evaluate_nbest(test, [u.hypotheses[k] for u, k in zip(test.utterances, idx)])
    assert 1 < res["one_best"]["wer"] < 100 and res["one_best"]["wer"] == pytest.approx(
        100 * res["one_best"]["errors"] / res["reference_words"])
    # the kept epoch's dev WER is the model's WER on that set, both in percent
    assert min(seen) == pytest.approx(res["chosen"]["wer"])
    assert res["chosen"]["wer"] == pytest.approx(100 * res["chosen"]["errors"] / res["reference_words"])


# ---- command line ------------------------------------------------------------------------------
def test_cli_train_rerank_eval_round_trip(sk, tmp_path):
    model = tmp_path / "r.npz"
    r = sk("train", "--task", "rerank", "--train", TRAIN, "--dev", TEST, "--model", model,
           "--epochs", 4, "--features", "ngram,trigger", "-q")
    assert r.code == 0, r.err
    assert model.exists()
    out = tmp_path / "chosen.txt"
    r = sk("rerank", "--model", model, TEST, "-o", out)
    assert r.code == 0 and r.out == ""
    lines = out.read_text().splitlines()
    ns = read_nbest(TEST)
    assert len(lines) == 3 and all(l in u.hypotheses for l, u in zip(lines, ns.utterances))
    r = sk("rerank", "--model", model, TEST, "--json")
    objs = [json.loads(l) for l in r.out.splitlines()]
    assert [o["text"] for o in objs] == lines
    assert [o["id"] for o in objs] == ["e05011ss", "e05012ss", "f06011ss"]
    assert all(ns.utterances[i].hypotheses[o["index"]] == o["text"] for i, o in enumerate(objs))
    assert all(isinstance(o["score"], float) for o in objs)
    r = sk("eval", "--task", "rerank", TEST, out, "--json")
    res = json.loads(r.out)
    assert res["chosen"]["wer"] < res["one_best"]["wer"]
    assert res["oracle"]["wer"] == 0.0 and res["oracle"]["wer"] <= res["chosen"]["wer"]
    jl = tmp_path / "chosen.jsonl"
    jl.write_text(r.out and "\n".join(json.dumps(o) for o in objs) + "\n")
    r2 = sk("eval", "--task", "rerank", TEST, jl, "--compare", out)
    assert r2.code == 0
    assert "1-best" in r2.out and "oracle" in r2.out and "sign test" in r2.out
    assert "chosen vs other" in r2.out
    r3 = sk("eval", "--task", "rerank", TEST)
    assert r3.code == 0 and "chosen" not in r3.out and "WER" in r3.out
    assert leftovers(tmp_path) == []


def test_cli_kaldi_and_jsonl_inputs(sk, tmp_path):
    model = tmp_path / "k.npz"
    r = sk("train", "--task", "rerank", "--train", FIX / "kaldi", "--model", model, "-q")
    assert r.code == 0, r.err
    r = sk("rerank", "--model", model, FIX / "kaldi")
    assert r.code == 0 and len(r.out.splitlines()) == 2
    r = sk("eval", "--task", "rerank", FIX / "nogroups.jsonl", "--json")
    res = json.loads(r.out)
    assert res["grouping"] == "window" and res["oracle"]["errors"] == 0 and res["one_best"]["errors"] == 2


def bad(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("name,text,needle", [
    ("empty.json", '[{"id": "a01", "input": [], "output": "x"}]', "has no hypotheses"),
    ("scores.json", '[{"input": ["a", "b"], "output": "a", "am_score": [1.0]}]', "1 scores"),
    ("invalid.json", '[{"input": ["a"], "output": "a"}, {', "not valid JSON"),
    ("empty.jsonl", '{"reference": "a", "hypotheses": []}\n', "has no hypotheses"),
    ("invalid.jsonl", '{"reference": "a", "hypotheses": ["a"]}\n{oops}\n', "not valid JSON"),
    ("noref.json", '[{"input": ["a", "b"]}]', "has no reference"),
])
def test_cli_bad_training_input(sk, tmp_path, name, text, needle):
    p = bad(tmp_path, name, text)
    model = tmp_path / "m.npz"
    r = sk("train", "--task", "rerank", "--train", p, "--model", model)
    line = assert_one_line_error(r, needle, str(p), code=1)
    assert "Traceback" not in line
    assert not model.exists() and leftovers(tmp_path) == []


@pytest.fixture(scope="module")
def fixture_model(tmp_path_factory):
    from structkit.rerank.task import train_reranker
    cfg = RerankConfig(epochs=2)
    path = str(tmp_path_factory.mktemp("m") / "m.npz")
    train_reranker(cfg, TRAIN).save(path)
    return path


@pytest.mark.parametrize("name,text,needle", [
    ("empty.json", '[{"id": "a01", "input": [], "output": "x"}]', "has no hypotheses"),
    ("scores.jsonl", '{"hypotheses": [{"text": "a", "score": 1}, {"text": "b"}]}\n', "1 scores"),
    ("invalid.json", '[{"input": ["a"], ', "not valid JSON"),
    ("noscores.json", '[{"input": ["a"]}]', "uses recogniser scores"),
])
def test_cli_bad_rerank_input(sk, tmp_path, fixture_model, name, text, needle):
    p = bad(tmp_path, name, text)
    out = tmp_path / "out.txt"
    r = sk("rerank", "--model", fixture_model, p, "-o", out)
    assert_one_line_error(r, needle, str(p), code=1)
    assert not out.exists() and leftovers(tmp_path) == []


def test_cli_bad_eval_input(sk, tmp_path):
    p = bad(tmp_path, "noref.jsonl", '{"hypotheses": ["a b"]}\n')
    assert_one_line_error(sk("eval", "--task", "rerank", p), "has no reference", "eval", code=1)
    c = bad(tmp_path, "chosen.txt", "one line\n")
    assert_one_line_error(sk("eval", "--task", "rerank", TEST, c), "has 1 lines but", code=1)
    assert_one_line_error(sk("eval", "--task", "rerank", bad(tmp_path, "x.json", "[{]")),
                          "not valid JSON", code=1)
    assert_one_line_error(sk("eval", "--task", "rerank", TEST, c, c), "NBEST [CHOSEN]", code=1)
    assert_one_line_error(sk("eval", "--task", "rerank", tmp_path / "missing.json"), "no such file")


def test_cli_bad_options(sk, tmp_path, fixture_model):
    model = tmp_path / "m.npz"
    base = ("train", "--task", "rerank", "--train", TRAIN, "--model", model)
    assert_one_line_error(sk(*base, "--features", "ngrams"), "unknown feature family", code=1)
    assert_one_line_error(sk(*base, "--algo", "kbest-mira"), "loss-perceptron", code=1)
    assert_one_line_error(sk(*base, "--cutoff", 2), "--cutoff", code=1)
    assert_one_line_error(sk("train", "--task", "pos", "--train", TRAIN, "--model", model,
                             "--features", "ngram"), "--features applies to --task rerank", code=1)
    assert_one_line_error(sk(*base[:-1], tmp_path / "nofolder" / "m.npz"), "folder does not exist")
    assert not model.exists()
    # a model of another task, or a file that is no model
    notmodel = bad(tmp_path, "n.npz", "hello")
    assert_one_line_error(sk("rerank", "--model", notmodel, TEST), "not a structkit model", code=1)
    assert_one_line_error(sk("rerank", "--model", fixture_model, tmp_path / "none.json"), "no such file")
    assert leftovers(tmp_path) == []


def test_config_keys(sk, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'task = "rerank"\nfeatures = ["ngram", "backoff"]\nlambda = 0.5\nwindow = 3\n'
                   f'epochs = 2\n[data]\ntrain = "{TRAIN}"\n')
    model = tmp_path / "m.npz"
    r = sk("train", "--config", cfg, "--model", model, "-q")
    assert r.code == 0, r.err
    m = Reranker.load(str(model))
    assert m.config.features == ("ngram", "backoff") and m.config.lam == 0.5 and m.config.window == 3
    cfg.write_text('task = "rerank"\nlambda = "big"\n')
    assert_one_line_error(sk("train", "--config", cfg, "--model", model), "lambda must be a number, got")


# ---- the real corpus ---------------------------------------------------------------------------
@pytest.mark.corpus
def test_atis_oracle_and_one_best_match_readme(corpus):
    for name, one_best, oracle, words in (("test_atis.json", 8.4, 5.3, 9111),
                                          ("train_atis.json", 7.7, 5.1, 48944)):
        res = evaluate_nbest(read_nbest(str(corpus(f"hyporadise/{name}"))))
        assert res["reference_words"] == words
        assert round(res["one_best"]["wer"], 1) == one_best   # a percentage
        assert round(res["oracle"]["wer"], 1) == oracle


@pytest.mark.corpus
def test_atis_loss_sensitive_ngram_beats_one_best(corpus):
    train = read_nbest(str(corpus("hyporadise/train_atis.json")))
    test = read_nbest(str(corpus("hyporadise/test_atis.json")))
    cfg = RerankConfig(algo="loss-perceptron", features="ngram", epochs=5)
    cfg.validate()
    m = train_on(cfg, train)
    idx, _ = m.rerank(test)
    res = evaluate_nbest(test, [u.hypotheses[k] for u, k in zip(test.utterances, idx)])
    assert res["oracle"]["wer"] <= res["chosen"]["wer"] < res["one_best"]["wer"]
    assert res["chosen"]["sign_test_vs_one_best"]["p"] < 0.01
