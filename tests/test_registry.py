"""The learner registry: parameter tables, one wording per rule, and the extension point (a
learner defined here, registered, trained and used through the CLI with no package edit)."""
from __future__ import annotations

import numpy as np
import pytest

from clitools import assert_one_line_error
from conftest import FIXTURES
from structkit.errors import UserError
from structkit.learn import registry
from structkit.learn.registry import LearnerSpec, Param

CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")


# ---- a toy learner, defined only here ------------------------------------------------------
class CountLearner:
    """W[f, y] = how often feature f fired on a token labelled y (times --C); no transitions."""

    def __init__(self, n_features: int, n_labels: int, scale: float):
        self.W = np.zeros((n_features, n_labels))
        self.T = np.zeros((n_labels + 1, n_labels + 1))
        self.scale = scale

    def epoch(self, data, rng) -> dict:
        for t in range(data.n_tokens):
            self.W[data.indices[data.indptr[t]:data.indptr[t + 1]], data.y[t]] += self.scale
        return {"train_updates": int(data.n_tokens)}

    def averaged(self):
        from structkit.sequence.chain import FirstOrder
        return FirstOrder(self.W.copy(), self.T.copy())


TOY = LearnerSpec("toy-counts", "feature/label counts, Viterbi without transitions", "none (a test)",
                  ("chunk",), (registry.param("C", default=2.0),), "viterbi", 1,
                  lambda config, nf, nl: CountLearner(nf, nl, config.C))


@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry.unregister(TOY.name)


def test_toy_learner_through_the_cli(sk, tmp_path, toy):
    m = tmp_path / "toy.npz"
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m, "--algo", "toy-counts", "-q")
    assert r.code == 0, r.err
    r = sk("chunk", "--model", m, CHUNK_TEST)
    assert r.code == 0, r.err
    got = [row.split()[-1] for row in r.out.splitlines() if row.strip()]
    # The same counts computed here, decoded token by token (no transitions: Viterbi = argmax).
    from structkit.sequence.task import SequenceTagger, read_labelled
    tagger = SequenceTagger.load(str(m))
    assert tagger.config.algo == "toy-counts" and tagger.config.C == 2.0 and tagger.config.epochs == 1
    train = read_labelled(CHUNK_TRAIN, None)
    enc = tagger.encode(train.words, train.pos, train.offsets)
    labels = sorted(set(train.labels))
    W = np.zeros((tagger.features.n_features, len(labels)))
    for t, lab in enumerate(train.labels):
        W[enc.indices[enc.indptr[t]:enc.indptr[t + 1]], labels.index(lab)] += 2.0
    test = read_labelled(CHUNK_TEST, None)
    tenc = tagger.encode(test.words, test.pos, test.offsets)
    want = [labels[int(np.argmax(W[tenc.indices[tenc.indptr[t]:tenc.indptr[t + 1]]].sum(axis=0)))]
            for t in range(tenc.n_tokens)]
    assert got == want
    # listed, with its parameter table
    r = sk("algorithms", "toy-counts")
    assert r.code == 0 and "--C" in r.out and "2.0" in r.out and "viterbi" in r.out
    assert "toy-counts" in sk("algorithms").out


def test_toy_learner_refuses_what_it_does_not_take(sk, tmp_path, toy):
    m = tmp_path / "toy.npz"
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m, "--algo", "toy-counts",
           "--k", "3")
    assert_one_line_error(r, "--k does not apply to --algo toy-counts", "kbest-", code=1)
    r = sk("train", "--task", "pos", "--train", CHUNK_TRAIN, "--model", m, "--algo", "toy-counts")
    assert_one_line_error(r, "--algo must be one of", "for task pos, got 'toy-counts'", code=1)
    assert not m.exists()


def test_unknown_algorithm_is_refused_before_registration(sk, tmp_path):
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "m", "--algo",
           "toy-counts")
    assert_one_line_error(r, "--algo must be one of", "got 'toy-counts'", code=1)


def test_register_refuses_a_second_learner_of_the_same_name_and_task(toy):
    with pytest.raises(ValueError, match="already registered"):
        registry.register(TOY)
    # the same name for another task is a separate learner (as the reranker's perceptron is)
    other = LearnerSpec("toy-counts", "x", "x", ("pos",), (), "viterbi", 1, TOY.build)
    registry.register(other)
    assert registry.get("toy-counts", "pos") is other and registry.get("toy-counts", "chunk") is TOY
    registry.unregister("toy-counts", "pos")


@pytest.mark.parametrize("param, value, message", [
    (Param("n", int, 1, "h", low=1), 0, "--n must be a positive integer, got 0"),
    (Param("n", int, 1, "h", low=1), True, "--n must be a positive integer, got True"),
    (Param("n", int, 0, "h", low=0), -2, "--n must be a non-negative integer, got -2"),
    (Param("n", int, 1, "h", low=1, high=10), 11, "--n must be an integer from 1 to 10, got 11"),
    (Param("x", float, 1.0, "h", positive=True), 0.0, "--x must be a positive number, got 0.0"),
    (Param("x", float, 1.0, "h", positive=True), float("inf"), "--x must be a positive number, got inf"),
    (Param("x", float, 0.0, "h", low=0), -1.0, "--x must be a non-negative number, got -1.0"),
    (Param("x", float, 0.0, "h", low=0), "1", "--x must be a non-negative number, got '1'"),
    (Param("my_opt", str, "a", "h", choices=("a", "b")), "c", "--my-opt must be a or b, got 'c'"),
    (Param("my_opt", str, "a", "h", choices=("a", "b", "z")), "c", "--my-opt must be one of a, b or z, got 'c'"),
])
def test_param_check_wording(param, value, message):
    with pytest.raises(UserError) as e:
        param.check(value)
    assert str(e.value) == message


def test_param_check_converts():
    assert Param("x", float, 0.0, "h", low=0).check(2) == 2.0
    assert isinstance(Param("x", float, 0.0, "h", low=0).check(2), float)
    assert Param("n", int, 1, "h", low=1, high=3).check(3) == 3


def test_every_builtin_spec_is_complete():
    for s in registry.specs():
        assert s.name and s.summary and s.paper and s.tasks and s.epochs >= 1
        assert s.decoder in ("viterbi", "lookahead", "greedy-history", "arc-standard", "beam", "rerank")
        for p in s.params:
            assert p.help and p.check(p.default) == p.default


def test_learners_of_installed_packages_register_through_entry_points(monkeypatch, tmp_path):
    """A package declaring `[project.entry-points."structkit.learners"] x = "pkg.module"` has its
    module imported (and so its learners registered) the first time the registry is read."""
    import importlib.metadata as md
    import sys

    (tmp_path / "toy_plugin.py").write_text(
        "from structkit.learn.registry import LearnerSpec, register\n"
        "register(LearnerSpec('plugin-toy', 's', 'p', ('ner',), (), 'viterbi', 1, None))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = md.EntryPoint(name="toy", value="toy_plugin", group="structkit.learners")
    monkeypatch.setattr(md, "entry_points", lambda group=None: [ep] if group == "structkit.learners" else [])
    monkeypatch.setattr(registry, "_PLUGINS_LOADED", False)
    try:
        assert registry.get("plugin-toy", "ner").summary == "s"
    finally:
        registry.unregister("plugin-toy")
        sys.modules.pop("toy_plugin", None)


def test_each_wing_registers_its_own_specs_and_the_registry_imports_no_wing():
    """The registry names the wings' spec modules (WINGS) and imports them only when a learner
    is looked up; listing every learner loads no wing's kernels, nor numba."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from structkit.learn import registry\n"
            "wings = [m for m in sys.modules if m.startswith('structkit.') and m.split('.')[1:2] in (['sequence'], ['parse'], ['rerank'])]\n"
            "assert not wings, wings\n"
            "by_wing = {w: [(s.name, s.tasks) for s in __import__('importlib').import_module(w).SPECS]\n"
            "           for w in registry.WINGS}\n"
            "listed = [(s.name, s.tasks) for s in registry.specs()]\n"
            "assert listed[:sum(map(len, by_wing.values()))] == [x for w in registry.WINGS for x in by_wing[w]]\n"
            "assert {t for w, xs in by_wing.items() for _, ts in xs for t in ts if w.startswith('structkit.parse')} == {'parse'}\n"
            "assert {t for w, xs in by_wing.items() for _, ts in xs for t in ts if w.startswith('structkit.rerank')} == {'rerank'}\n"
            "assert not any(m == 'numba' or m.startswith('numba.') for m in sys.modules)\n"
            "loaded = {m.rsplit('.', 1)[0] for m in sys.modules if m.startswith('structkit.sequence.search')}\n"
            "assert not loaded, loaded\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
