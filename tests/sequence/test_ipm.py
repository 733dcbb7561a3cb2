"""Multi-core training by iterative parameter mixing (``structkit.sequence.learn.ipm``, ``train --jobs``):
the mixed perceptron against a plain-Python reference, determinism, mappers, and the option's
one definition on the command line, in configs and in the API."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import FIXTURES
from seqref import F, flat, make_data, sentence, tie_key

from structkit.errors import UserError
from structkit.sequence.learn import ipm
from structkit.sequence.learn.kbest import KBestLearner
from structkit.sequence.learn.perceptron import AveragedPerceptron

CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
NER_TRAIN = str(FIXTURES / "ner_train.txt")


# ---- the plain-Python reference ----------------------------------------------------------------
def _best(data, s, v, NF, L):
    """Viterbi's answer for sentence s under the flat weights v, by enumeration (its tie order)."""
    a, b = data.offsets[s], data.offsets[s + 1]
    W = v[:NF * L].reshape(NF, L)
    T = v[NF * L:].reshape(L + 1, L + 1)
    E = [[sum(W[f, y] for f in data.indices[data.indptr[t]:data.indptr[t + 1]]) for y in range(L)]
         for t in range(a, b)]
    return min(itertools.product(range(L), repeat=b - a), key=lambda q: tie_key(q, E, T))


def reference_ipm(data, NF, L, jobs, seed, epochs):
    """Iterative parameter mixing of the averaged structured perceptron, plainly: every epoch
    each shard (in turn) trains a copy of the mixed weights w from the counter c over its
    sentences in its order, adding c * update to its own accumulator u_i; then w is the shards'
    mean and c the largest shard counter. Returns the averaged weights w - mean(u_i) / c (flat
    layout of seqref.F): the average of the mixed weight vector over training."""
    dim = NF * L + (L + 1) ** 2
    w, c = np.zeros(dim), 1.0
    us = [np.zeros(dim) for _ in range(jobs)]
    parts = ipm.shards(len(data.offsets) - 1, jobs, seed)
    for epoch in range(1, epochs + 1):
        states = []
        for i, part in enumerate(parts):
            wi, ci = w.copy(), c
            for s in ipm.shard_order(part, epoch, seed, i):
                gold = sentence(data, s)
                pred = _best(data, s, wi, NF, L)
                if pred != gold:
                    d = F(data, s, gold, NF, L) - F(data, s, pred, NF, L)
                    wi += d
                    us[i] += ci * d
                ci += 1.0
            states.append((wi, ci))
        w = states[0][0].copy()
        for wi, _ in states[1:]:
            w += wi
        w /= jobs
        c = max(ci for _, ci in states)
    u = us[0].copy()
    for ui in us[1:]:
        u += ui
    u /= jobs
    return w - u / c


def mixed(learner, data, jobs, seed, epochs, **kw):
    pm = ipm.ParameterMixing(learner, data, jobs, seed, **kw)
    stats = [pm.epoch(e) for e in range(1, epochs + 1)]
    before = pm.averaged()
    pm.finish()
    after = learner.averaged()
    for a, b in zip(before, after):
        assert np.array_equal(a, b)
    for a, b in zip(pm.averaged(), after):
        assert np.array_equal(a, b)
    return learner, stats


@pytest.mark.parametrize("jobs,seed", [(1, 0), (2, 0), (2, 5), (4, 1)])
def test_mixed_perceptron_equals_the_reference(jobs, seed):
    NF, L = 7, 3
    data = make_data(np.random.default_rng(10 + seed), 30, L, NF)
    learner, stats = mixed(AveragedPerceptron(NF, L), data, jobs, seed, 3)
    avg = learner.averaged()
    ref = reference_ipm(data, NF, L, jobs, seed, 3)
    np.testing.assert_allclose(flat(avg.W, avg.T), ref, rtol=0, atol=1e-12)
    assert all(s["train_updates"] == s["train_token_errors"] for s in stats)
    assert stats[0]["train_token_errors"] > 0


def test_shards_are_a_seeded_balanced_partition():
    parts = ipm.shards(101, 4, 3)
    assert sorted(np.concatenate(parts).tolist()) == list(range(101))
    assert sorted(len(p) for p in parts) == [25, 25, 25, 26]
    assert all(np.array_equal(a, b) for a, b in zip(parts, ipm.shards(101, 4, 3)))
    assert not all(np.array_equal(a, b) for a, b in zip(parts, ipm.shards(101, 4, 4)))
    o1 = ipm.shard_order(parts[0], 2, 3, 0)
    assert np.array_equal(o1, ipm.shard_order(parts[0], 2, 3, 0))
    assert sorted(o1.tolist()) == sorted(parts[0].tolist())
    assert not np.array_equal(o1, ipm.shard_order(parts[0], 3, 3, 0))


def test_more_jobs_than_sentences_makes_no_empty_shard():
    data = make_data(np.random.default_rng(1), 3, 3, 5)
    pm = ipm.ParameterMixing(AveragedPerceptron(5, 3), data, 8, 0)
    assert pm.jobs == 3 and all(len(p) == 1 for p in pm.parts)
    pm.epoch()
    pm.finish()


def test_sub_corpus_keeps_the_sentences():
    data = make_data(np.random.default_rng(0), 12, 3, 9)
    from structkit.sequence.chain import corpus

    X = corpus(data)
    pick = np.array([7, 2, 11])
    S = ipm.sub_corpus(X, pick)
    for k, s in enumerate(pick):
        a, b = X.offsets[s], X.offsets[s + 1]
        sa, sb = S.offsets[k], S.offsets[k + 1]
        assert np.array_equal(X.y[a:b], S.y[sa:sb])
        for t, st in zip(range(a, b), range(sa, sb)):
            assert np.array_equal(X.indices[X.indptr[t]:X.indptr[t + 1]],
                                  S.indices[S.indptr[st]:S.indptr[st + 1]])


# ---- every mixable learner: mappers and determinism ----------------------------------------------
LEARNERS = {
    "perceptron": lambda NF, L: AveragedPerceptron(NF, L),
    "greedy": lambda NF, L: AveragedPerceptron(NF, L, "lookahead"),
    "lookahead-d2-trigram": lambda NF, L: AveragedPerceptron(NF, L, "lookahead", True, False, 2, 1.0),
    "lookahead-rtl": lambda NF, L: AveragedPerceptron(NF, L, "lookahead", False, True, 1, 0.5, False),
    "kbest-perceptron": lambda NF, L: KBestLearner(NF, L, "perceptron", k=3),
    "kbest-pa": lambda NF, L: KBestLearner(NF, L, "pa", k=2, C=0.5),
    "kbest-rpa": lambda NF, L: KBestLearner(NF, L, "rpa", k=2),
    "kbest-mira": lambda NF, L: KBestLearner(NF, L, "mira", k=2, C=0.5),
}


def _arrays(learner):
    return [a.copy() for a in (*learner.w, *learner.u)] + [learner.c]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_mappers_and_runs_agree(name):
    """Threads, the serial ``map``, copies with sub-corpora (a remote worker's view) and a
    second run all give the same state; another seed gives another one."""
    NF, L = 11, 4
    data = make_data(np.random.default_rng(3), 40, L, NF, max_n=5)
    runs = [
        {},                                          # the default: threads, shared buffers
        {"mapper": map, "shared_memory": True},      # serially, in place
        {"mapper": map},                             # serially, copies and sub-corpora
        {},                                          # threads again
    ]
    states = []
    for kw in runs:
        learner, stats = mixed(LEARNERS[name](NF, L), data, 3, 7, 3, **kw)
        states.append(_arrays(learner))
        assert stats[0]["train_updates"] > 0
    for s in states[1:]:
        _same(states[0], s)
    other, _ = mixed(LEARNERS[name](NF, L), data, 3, 8, 3)
    assert not all(np.array_equal(x, y) for x, y in zip(states[0][:-1], _arrays(other)[:-1]))


@pytest.mark.parametrize("name", ["perceptron", "lookahead-d2-trigram", "kbest-pa"])
def test_one_shard_is_the_learner_on_the_shard_order(name):
    """jobs = 1 mixing is the learner's own epoch kernel over the shard's order, bit for bit."""
    NF, L = 9, 3
    data = make_data(np.random.default_rng(4), 25, L, NF, max_n=4)
    learner, _ = mixed(LEARNERS[name](NF, L), data, 1, 2, 2)
    ref = LEARNERS[name](NF, L)
    from structkit.sequence.chain import corpus

    X = corpus(data)
    part = ipm.shards(25, 1, 2)[0]
    for epoch in (1, 2):
        ref.c, _ = ipm.run_epoch(ref.epoch_kernel(), X, ipm.shard_order(part, epoch, 2, 0),
                                 ref.w, ref.u, ref.c)
    _same(_arrays(learner), _arrays(ref))


def test_unmixable_learners_have_no_kernel():
    for algo in ("sdm", "larank"):
        with pytest.raises(ValueError, match="parameter mixing"):
            KBestLearner(5, 3, algo).epoch_kernel()


def test_mix_is_the_mean_in_shard_order():
    rng = np.random.default_rng(0)
    from structkit.sequence.chain import FirstOrder

    states = [FirstOrder(rng.normal(size=(70, 3)), rng.normal(size=(4, 4))) for _ in range(3)]
    want = [(s0 + s1 + s2) / 3 for s0, s1, s2 in zip(*states)]
    out = FirstOrder(np.empty((70, 3)), np.empty((4, 4)))
    ipm.mix(states, out, block=16)
    _same(list(out), want)
    out2 = FirstOrder(np.empty((70, 3)), np.empty((4, 4)))
    ipm.mix(states, out2, block=8, parts=3)
    _same(list(out2), want)
    ipm.mix(states, states[0], write_back=True, block=50)
    for s in states:
        _same(list(s), want)
    with pytest.raises(ValueError):
        ipm.mix(states, states[1])
    us = [FirstOrder(rng.normal(size=(70, 3)), rng.normal(size=(4, 4))) for _ in range(3)]
    avg = FirstOrder(np.empty((70, 3)), np.empty((4, 4)))
    for t in ipm._ranges(avg, 3, 8):
        ipm._average_range(states[0], us, 7.0, avg, *t, 8)
    _same(list(avg), [w - ((a + b + c) / 3) / 7.0 for w, a, b, c in zip(states[0], *us)])


# ---- the option: API, command line, config -------------------------------------------------------
def _weights(tagger):
    m = tagger.model_
    return [m.weights.W, m.weights.T]


def test_api_jobs_one_is_the_serial_model_and_jobs_two_is_deterministic():
    from structkit.api import Tagger

    serial = Tagger(task="chunk", epochs=3).fit(CHUNK_TRAIN)
    one = Tagger(task="chunk", epochs=3, jobs=1).fit(CHUNK_TRAIN)
    _same(_weights(serial), _weights(one))
    two = Tagger(task="chunk", epochs=3, jobs=2).fit(CHUNK_TRAIN)
    again = Tagger(task="chunk", epochs=3, jobs=2).fit(CHUNK_TRAIN)
    _same(_weights(two), _weights(again))
    assert not np.array_equal(_weights(two)[0], _weights(serial)[0])
    assert two.config.jobs == 2 and serial.config.jobs == 1
    # the mixed model is as good as serial training on the held-out file (within 2 points: both
    # are 100.0 on this fixture), and an epoch's train accuracy is its token errors' complement
    assert two.score(CHUNK_TEST)["f1"] >= serial.score(CHUNK_TEST)["f1"] - 2.0
    tokens = sum(1 for ln in open(CHUNK_TRAIN) if ln.strip())
    for model in (serial, two):
        h = model.history_[0]
        assert 0 < h["train_token_errors"] < tokens
        assert h["train_accuracy"] == pytest.approx(100.0 * (1 - h["train_token_errors"] / tokens))


def test_dev_scoring_does_not_change_the_mixed_model():
    from structkit.api import Tagger

    scored = Tagger(task="chunk", epochs=3, jobs=2).fit(CHUNK_TRAIN, dev=CHUNK_TEST)
    # with dev data the best dev epoch is kept: the model a run of that many epochs ends with
    kept = scored.info["selected_epoch"]
    plain = Tagger(task="chunk", epochs=kept, jobs=2).fit(CHUNK_TRAIN)
    _same(_weights(plain), _weights(scored))
    assert "dev" in scored.history_[-1]


def test_api_mapper_reaches_the_trainer():
    """train_tagger_on's mapper runs the shards (what --dask will plug in)."""
    from structkit.sequence.task import TaggerConfig, read_labelled, train_tagger_on

    calls = []

    def mapper(fn, jobs):
        jobs = list(jobs)
        calls.append(len(jobs))
        return map(fn, jobs)

    corpus = read_labelled(CHUNK_TRAIN, None, task="chunk")
    models = []
    for m in (mapper, None):
        config = TaggerConfig(task="chunk", epochs=2, jobs=3)
        config.validate()
        models.append(train_tagger_on(config, corpus, mapper=m))
    assert calls == [3, 3]
    _same([models[0].weights.W, models[0].weights.T], [models[1].weights.W, models[1].weights.T])


@pytest.mark.parametrize("value,needle", [(0, "jobs must be an integer from 1 to 256, got 0"),
                                          (-2, "jobs must be an integer from 1 to 256, got -2"),
                                          (257, "jobs must be an integer from 1 to 256, got 257"),
                                          ("2", "jobs must be an integer, got '2'"),
                                          (1.5, "jobs must be an integer, got 1.5"),
                                          (True, "jobs must be an integer, got True")])
def test_api_bad_jobs(value, needle):
    from structkit.api import Tagger

    with pytest.raises(UserError, match=needle):
        Tagger(task="chunk", jobs=value)


def test_api_unmixable_learner_refuses_jobs():
    from structkit.api import Tagger

    with pytest.raises(UserError, match="jobs 2 applies to the learners trained by parameter mixing"):
        Tagger(task="chunk", algo="kbest-sdm", jobs=2)
    Tagger(task="chunk", algo="kbest-sdm", jobs=1)  # serial: fine


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", "1000"])
def test_cli_bad_jobs_is_one_line(sk, tmp_path, value):
    from clitools import assert_one_line_error

    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "m", "--jobs", value)
    assert_one_line_error(r, "--jobs")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("args,needle", [
    (["--algo", "kbest-sdm"], "--jobs 2 applies to the learners trained by parameter mixing"),
    (["--algo", "olarank-exact"], "--algo olarank-exact trains on one core"),
])
def test_cli_unmixable_learner_refuses_jobs(sk, tmp_path, args, needle):
    from clitools import assert_one_line_error

    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "m", "--jobs", "2", *args)
    assert_one_line_error(r, needle)


def test_cli_parse_task_refuses_jobs(sk, tmp_path):
    from clitools import assert_one_line_error

    r = sk("train", "--task", "parse", "--train", str(FIXTURES / "parse_train.conll"),
           "--model", tmp_path / "m", "--jobs", "2")
    assert_one_line_error(r, "--jobs")


def _model_weights(path):
    from structkit.sequence.task import SequenceTagger

    m = SequenceTagger.load(str(path))
    return m, [m.weights.W, m.weights.T, m.weights.T2]


def test_cli_and_config_agree(sk, tmp_path):
    """--jobs 1 writes the serial model; --jobs 2 and jobs = 2 in a config write the same
    model, stored with its jobs; the help and `algorithms` list the option."""
    base = ["train", "--task", "ner", "--train", NER_TRAIN, "--algo", "lookahead", "--epochs", "2"]
    assert sk(*base, "--model", tmp_path / "serial").code == 0
    assert sk(*base, "--model", tmp_path / "one", "--jobs", "1").code == 0
    assert sk(*base, "--model", tmp_path / "two", "--jobs", "2").code == 0
    cfg = tmp_path / "c.toml"
    cfg.write_text('task = "ner"\nalgo = "lookahead"\nepochs = 2\njobs = 2\n')
    assert sk("train", "--config", cfg, "--train", NER_TRAIN, "--model", tmp_path / "cfg").code == 0
    serial, ws = _model_weights(tmp_path / "serial")
    one, w1 = _model_weights(tmp_path / "one")
    two, w2 = _model_weights(tmp_path / "two")
    _, wc = _model_weights(tmp_path / "cfg")
    _same(ws, w1)
    _same(w2, wc)
    assert not np.array_equal(ws[0], w2[0])
    assert (serial.config.jobs, one.config.jobs, two.config.jobs) == (1, 1, 2)
    r = sk("train", "--help")
    assert "--jobs" in r.out and "parameter mixing" in r.out
    assert "--jobs" in sk("algorithms", "perceptron").out
    assert "--jobs" not in sk("algorithms", "kbest-sdm").out


@pytest.mark.parametrize("value", ["0", "-3", "300", '"2"', "2.0", "true"])
def test_config_bad_jobs(sk, tmp_path, value):
    from clitools import assert_one_line_error

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'task = "chunk"\njobs = {value}\n')
    r = sk("train", "--config", cfg, "--train", CHUNK_TRAIN, "--model", tmp_path / "m")
    assert_one_line_error(r, "jobs")
