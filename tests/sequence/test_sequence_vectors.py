"""The sequence taggers with pretrained word vectors (``train --task pos|chunk|ner --vectors``,
issue 44) on data written here where only the vectors tell two classes apart: every word is
consonant, vowel, consonant and ``ko``, seen once, in the same context, and the vectors put one
class on one axis and the other on another. Unseen words in the vectors file are then tagged
by their clusters (``vc1-4``), in column files (the kernels' path) and CoNLL-U alike; the model
file alone carries the table; without vectors no trace of it; the one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from clitools import assert_one_line_error
from structkit.errors import UserError
from structkit.model import load_model
from structkit.sequence.features import FeatureSpace
from structkit.sequence.task import SequenceTagger, TaggerConfig, read_labelled, train_tagger_on
from structkit.vectors import WordClusters

WORDS = [c + v + d + "ko" for c in "bdfglmnprt" for v in "aeiou" for d in "bdfglmnprt"]   # 500, all -ko
_ORDER = np.random.default_rng(7).permutation(len(WORDS))   # the class owes nothing to the spelling
CLASS = {WORDS[j]: i % 2 for i, j in enumerate(_ORDER)}      # 0: NN, 1: VB
AS = [w for w in WORDS if CLASS[w] == 0]
BS = [w for w in WORDS if CLASS[w] == 1]
NEW_A, NEW_B = AS[200:220], BS[200:220]   # 20 each unseen in training
AS, BS = AS[:200], BS[:200]               # 200 each in training, once each


def _columns(path, n=400):
    lines = []
    for k in range(n):
        w = (AS if k % 2 == 0 else BS)[k // 2]
        lines += ["mi PR", f"{w} {'NN' if k % 2 == 0 else 'VB'}", ". PU", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


def _vectors(path):
    """One vector per class (the words of a class share it: one cluster at every level)."""
    rows = []
    for w in ["mi", "."] + WORDS:
        axis = 2 if w in ("mi", ".") else CLASS[w]
        v = np.full(4, 0.1)
        v[axis] = 1.0
        rows.append(w + " " + " ".join(f"{x:.3f}" for x in v))
    path.write_text(f"{len(rows)} 4\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def _train(train, vec=None, templates=None, epochs=3):
    cfg = TaggerConfig(task="pos", epochs=epochs, vectors=vec, templates=templates)
    cfg.validate()
    return train_tagger_on(cfg, read_labelled(train, None, task="pos"))


def _tags(tagger, words):
    offsets = np.arange(0, 3 * len(words) + 1, 3, dtype=np.int64)
    flat = [x for w in words for x in ("mi", w, ".")]
    ids = tagger.predict_ids(tagger.encode(flat, None, offsets))
    return [tagger.labels[i] for i in ids[1::3]]


WANT = ["NN"] * 20 + ["VB"] * 20


def test_unseen_words_are_tagged_by_their_clusters(tmp_path):
    train, vec = _columns(tmp_path / "t.txt"), _vectors(tmp_path / "v.vec")
    tagger = _train(train, vec)
    # the task's set, then the vectors set appended (written out here by hand)
    assert [t.text for t in tagger.features.templates][-8:] == [
        "vc1[0]", "vc2[0]", "vc3[0]", "vc4[0]", "vc2[-1]", "vc2[1]", "vc3[-1]", "vc3[1]"]
    assert _tags(tagger, NEW_A + NEW_B) == WANT
    # an upper-cased unseen word reads its lower-cased form's clusters
    assert _tags(tagger, [NEW_A[0].upper(), NEW_B[0].upper()]) == ["NN", "VB"]
    # the feature names carry the cluster ids the table gives (one cluster per class here)
    a, b = tagger.features.clusters.lookup(AS[0]), tagger.features.clusters.lookup(BS[0])
    assert a != b and tagger.features.clusters.lookup(NEW_A[3]) == a
    names = {tagger.features.feature_name(f) for f in range(tagger.features.n_features)}
    assert {f"vc4[0]={a[3]}", f"vc4[0]={b[3]}", f"vc2[1]={a[1]}", f"vc3[-1]={b[2]}"} <= names
    # without vectors the new words are a coin toss: one label for most of them
    plain = _train(train)
    got = _tags(plain, NEW_A + NEW_B)
    assert sum(g == w for g, w in zip(got, WANT)) <= 30, got
    assert plain.features.clusters is None and not plain.features.vector_attrs


def test_the_model_file_alone_and_the_kernels_path(tmp_path, sk, monkeypatch):
    train, vec = _columns(tmp_path / "t.txt"), _vectors(tmp_path / "v.vec")
    model = str(tmp_path / "m.skm")
    r = sk("train", "--task", "pos", "--train", train, "--model", model, "--vectors", vec, "--epochs", "3", "-q")
    assert r.code == 0, r.err
    (tmp_path / "v.vec").unlink()                      # the table is inside the model
    header, arrays = load_model(model, ("pos",))
    assert header["features"]["vectors"]["levels"] == [16, 64, 256, 4096]
    assert header["config"]["vectors"] == vec and "vectors_clusters" in arrays
    # a column file, large enough for the kernels (structkit.sequence.fastpath), and CoNLL-U
    words = (NEW_A + NEW_B) * 200      # 128 kB, 24,000 tokens: the kernels, with the known-word table
    (tmp_path / "new.txt").write_text("".join(f"mi\n{w}\n.\n\n" for w in words), encoding="utf-8")
    import structkit.sequence.fastpath as fastpath

    def no_slow_path(*a, **k):
        raise AssertionError("the column file went the reader's way, not the kernels'")

    monkeypatch.setattr(fastpath, "slow_bytes", no_slow_path)
    r = sk("tag", "-m", model, str(tmp_path / "new.txt"))
    assert r.code == 0, r.err
    got = [line.split()[1] for line in r.out.splitlines() if line.split() and line.split()[0] in words]
    assert got == WANT * 200
    monkeypatch.undo()
    conllu = "".join(f"1\tmi\t_\t_\t_\t_\t_\t_\t_\t_\n2\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n3\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
                     for w in NEW_A + NEW_B)
    (tmp_path / "new.conllu").write_text(conllu, encoding="utf-8")
    r = sk("tag", "-m", model, str(tmp_path / "new.conllu"))
    assert r.code == 0, r.err
    rows = [line.split("\t") for line in r.out.splitlines() if line.count("\t") == 9]
    assert [row[4] for row in rows if row[1] in NEW_A + NEW_B] == WANT   # a column model: XPOS
    assert _tags(SequenceTagger.load(model), NEW_A + NEW_B) == WANT


def test_templates_that_name_vc_are_kept_as_given(tmp_path):
    train, vec = _columns(tmp_path / "t.txt"), _vectors(tmp_path / "v.vec")
    tagger = _train(train, vec, templates=["bias", "vc1[0]"])
    assert [t.text for t in tagger.features.templates] == ["bias", "vc1[0]"]
    assert _tags(tagger, NEW_A + NEW_B) == WANT


def test_one_line_errors(tmp_path, sk):
    train, vec = _columns(tmp_path / "t.txt", 40), _vectors(tmp_path / "v.vec")
    model = str(tmp_path / "m.skm")
    r = sk("train", "--task", "pos", "--train", train, "--model", model, "--templates", "bias,vc2[0]")
    assert_one_line_error(r, "vc2", "--vectors FILE")
    r = sk("train", "--task", "ner", "--train", train, "--model", model, "--vectors-limit", "5")
    assert_one_line_error(r, "--vectors-limit applies with --vectors FILE")
    r = sk("train", "--task", "pos", "--train", train, "--model", model, "--vectors", str(tmp_path / "none.vec"))
    assert_one_line_error(r, "none.vec")
    assert not (tmp_path / "m.skm").exists()
    # a table of two levels cannot give vc3
    small = WordClusters(["mi"], np.zeros((1, 2), dtype=np.uint16), (16, 64))
    with pytest.raises(UserError, match="has 2 levels; the feature templates read vc3"):
        FeatureSpace(["vc3[0]"], small)


def test_a_damaged_table_in_a_model_file_is_refused(tmp_path, sk):
    from structkit.model import save_model

    train, vec = _columns(tmp_path / "t.txt", 40), _vectors(tmp_path / "v.vec")
    model = str(tmp_path / "m.skm")
    assert sk("train", "--task", "pos", "--train", train, "--model", model, "--vectors", vec, "-q").code == 0
    header, arrays = load_model(model, ("pos",))
    arrays = dict(arrays)
    arrays["vectors_clusters"] = np.full_like(arrays["vectors_clusters"], 70)   # past 16 and 64
    save_model(str(tmp_path / "bad.skm"), header, arrays)
    r = sk("tag", "-m", str(tmp_path / "bad.skm"), train)
    assert_one_line_error(r, "bad.skm", "damaged model file")


def test_the_lattice_tagger_says_it_does_not_read_vectors(tmp_path, monkeypatch):
    monkeypatch.setenv("STRUCTKIT_WEIGHT_BUDGET", "1000")    # every label set is too large then
    train, vec = _columns(tmp_path / "t.txt", 40), _vectors(tmp_path / "v.vec")
    with pytest.raises(UserError, match="--vectors is not read by the tagger of 4 labels"):
        _train(train, vec)
