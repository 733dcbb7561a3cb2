"""The morph model with pretrained word vectors (``--vectors``, issue 44) on a treebank written
here where only the vectors tell nouns from verbs: every word is consonant, vowel, consonant and
``ko``, each seen once, both classes share all suffixes and contexts, and the vectors put the nouns on one axis,
the verbs on another. Words unseen in training but in the vectors file are then tagged by their
clusters; the model file alone carries them (no .vec at run time); a model without vectors has
no trace of them."""
from __future__ import annotations

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.model import load_model
from structkit.morph.task import MorphConfig, MorphModel, train_morph

WORDS = [c + v + d + "ko" for c in "bdfglmnprt" for v in "aeiou" for d in "bdfglmnprt"]   # 500, all -ko
_ORDER = np.random.default_rng(5).permutation(len(WORDS))   # the class owes nothing to the spelling
CLASS = {WORDS[j]: i % 2 for i, j in enumerate(_ORDER)}      # 0: noun, 1: verb
NOUNS = [w for w in WORDS if CLASS[w] == 0]
VERBS = [w for w in WORDS if CLASS[w] == 1]
NEW_NOUNS, NEW_VERBS = NOUNS[200:220], VERBS[200:220]   # 20 each unseen in training
NOUNS, VERBS = NOUNS[:200], VERBS[:200]                 # 200 each in training, once each


def _treebank(path, n=400, caps=False):
    """``caps``: every third word capitalised, its lemma not."""
    lines = []
    for k in range(n):
        noun = k % 2 == 0
        w = (NOUNS if noun else VERBS)[k // 2]
        lemma = w
        if caps and k % 3 == 0:
            w = w.capitalize()
        upos, feats = ("NOUN", "Number=Sing") if noun else ("VERB", "VerbForm=Fin")
        lines += [f"# sent_id = {k}", f"# text = mi {w} .",
                  "1\tmi\tmi\tPRON\tPP\t_\t2\tnsubj\t_\t_",
                  f"2\t{w}\t{lemma}\t{upos}\t{upos[0]}\t{feats}\t0\troot\t_\tSpaceAfter=No",
                  "3\t.\t.\tPUNCT\tFS\t_\t2\tpunct\t_\t_", ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
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


def _upos(model, words):
    return [a[1][1] for a in model.analyse([["mi", w, "."] for w in words])]


def test_unseen_words_are_tagged_by_their_clusters(tmp_path):
    train, vec = _treebank(tmp_path / "t.conllu"), _vectors(tmp_path / "v.vec")
    config = MorphConfig(epochs=3, vectors=vec)
    config.validate()
    model = train_morph(config, train)
    assert model.tables.clusters is not None and model.info["vectors"]["words"] == 502
    assert _upos(model, NEW_NOUNS + NEW_VERBS) == ["NOUN"] * 20 + ["VERB"] * 20
    # the model file alone: the .vec is gone, the table is inside
    path = str(tmp_path / "m.model")
    model.save(path)
    (tmp_path / "v.vec").unlink()
    back = MorphModel.load(path)
    assert _upos(back, NEW_NOUNS + NEW_VERBS) == ["NOUN"] * 20 + ["VERB"] * 20
    header, arrays = load_model(path, ("morph",))
    assert header["vectors"]["file"] == vec and header["vectors"]["levels"] == [16, 64, 256, 4096]
    assert header["layout"]["clusters"] == ["c16", "c64", "c256", "c4096", "c64-1", "c64+1", "c256-1", "c256+1"]
    assert header["config"]["vectors"] == vec and "vectors_clusters" in arrays
    # an upper-cased unseen word: its lower-cased form's clusters
    assert _upos(back, [NEW_NOUNS[0].capitalize(), NEW_VERBS[0].capitalize()]) == ["NOUN", "VERB"]


def test_without_vectors_nothing_changes(tmp_path):
    train = _treebank(tmp_path / "t.conllu")
    config = MorphConfig(epochs=2)
    config.validate()
    model = train_morph(config, train)
    path = str(tmp_path / "m.model")
    model.save(path)
    header, arrays = load_model(path, ("morph",))
    assert "vectors" not in header and "clusters" not in header["layout"]
    assert "vectors" not in header["config"] and "vectors_limit" not in header["config"]
    # format 4: the tables sparse (gaps between positions), the lexicon's counts in arrays
    assert set(arrays) == {"W_tag_gaps", "W_tag_vals", "W_lem_gaps", "W_lem_vals"} | {
        f"lex_{name}_{end}" for name in ("form_tags", "form_rules", "suffix_tags", "suffix_rules", "class_tags")
        for end in ("ptr", "pairs")}
    assert model.tables.clusters is None and "vectors" not in model.info


def test_a_layout_without_its_clusters_is_refused(tmp_path):
    from structkit.lattice.features import check_layout, layout

    check_layout({"layout": layout((16, 64)), "vectors": {"levels": [16, 64]}}, "m")
    with pytest.raises(UserError, match="another layout"):
        check_layout({"layout": layout(), "vectors": {"levels": [16, 64]}}, "m")
    with pytest.raises(UserError, match="another layout"):
        check_layout({"layout": layout((16, 64))}, "m")


def test_the_python_api_takes_the_options(tmp_path):
    import structkit

    train, vec = _treebank(tmp_path / "t.conllu", 40), _vectors(tmp_path / "v.vec")
    m = structkit.Morph(epochs=1, vectors=vec, vectors_limit=10).fit(train)
    assert len(m.model_.tables.clusters) == 10 and m.model_.info["vectors"]["limit"] == 10
    with pytest.raises(UserError, match=r"^vectors_limit must be a positive integer, got 0$"):
        structkit.Morph(vectors=vec, vectors_limit=0).fit(train)
    with pytest.raises(UserError, match=r"^vectors_limit applies with vectors FILE$"):
        structkit.Morph(vectors_limit=5).fit(train)
    with pytest.raises(UserError, match=r"^Morph: vectors must be a string, got 3$"):
        structkit.Morph(vectors=3).fit(train)


def test_explain_names_the_cluster_columns_and_its_lemma_margins_add_up(tmp_path):
    from structkit.morph.explain import explanations

    train, vec = _treebank(tmp_path / "t.conllu", caps=True), _vectors(tmp_path / "v.vec")
    config = MorphConfig(epochs=3, vectors=vec)
    config.validate()
    model = train_morph(config, train)
    words = ["mi", NEW_NOUNS[0].capitalize(), "."]   # capitalised: identity or lower-casing, two lemma rules
    got = list(explanations(model, words))
    upos = [e for e in got if e.word.endswith("[UPOS]") and e.runner_up is not None]
    assert any(p.name.startswith("c16=") for e in upos for p in e.pushes)
    c = model.tables.clusters.lookup(NEW_NOUNS[0])
    assert any(p.name == f"c256={c[2]}" for e in upos for p in e.pushes)
    lemmas = [e for e in got if e.word.endswith("[LEMMA]") and e.runner_up is not None]
    assert lemmas
    assert any(p.name == f"c4096 x upos={c[3]} NOUN" for e in lemmas for p in e.pushes)   # the finest level
    for e in lemmas:   # every lemma feature is a push: they add up to the margin
        assert sum(p.weight for p in e.pushes) == pytest.approx(e.margin, abs=1e-4)


# ---- a lemma that is a word of the vectors file ---------------------------------------------------
# Plurals in -s whose lemma drops it, and singulars in -s whose lemma is the form, spelt alike: on
# a word training never saw, only whether the form without -s is a word (of the vectors file)
# tells them apart. Each word is seen once in training (its fold's lexicon lacks it, as an unseen
# word's would), and the vectors file holds every form and the plurals' stems, as a real one does.
_STEMS = [c + v + d + w for c in "bdfgk" for v in "aeiou" for d in "lmnpr" for w in "aiu"]   # 375
_RNG = np.random.default_rng(11)
_KIND = {s: int(k) for s, k in zip(_STEMS, _RNG.permutation(len(_STEMS)) % 2)}   # 1: a plural
PLURALS = [s + "s" for s in _STEMS if _KIND[s]]        # lemma: the stem, a word
SINGULARS = [s + "s" for s in _STEMS if not _KIND[s]]  # lemma: the form; the stem is no word
SEEN_P, NEW_P = PLURALS[:150], PLURALS[150:180]
SEEN_S, NEW_S = SINGULARS[:150], SINGULARS[150:180]


def _lemma_treebank(path):
    lines = []
    for k, w in enumerate(x for pair in zip(SEEN_P, SEEN_S) for x in pair):
        lemma = w[:-1] if w in PLURALS else w
        lines += [f"# text = mi {w} .", "1\tmi\tmi\tPRON\tPP\t_\t2\tnsubj\t_\t_",
                  f"2\t{w}\t{lemma}\tNOUN\tS\t_\t0\troot\t_\tSpaceAfter=No",
                  "3\t.\t.\tPUNCT\tFS\t_\t2\tpunct\t_\t_", ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _lemma_vectors(path):
    words = ["mi", "."] + PLURALS + SINGULARS + [p[:-1] for p in PLURALS]
    rows = [w + " " + " ".join(f"{x:.3f}" for x in np.random.default_rng(i).normal(size=4))
            for i, w in enumerate(words)]
    path.write_text(f"{len(rows)} 4\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def test_the_lemma_candidate_that_is_a_word_of_the_vectors_file(tmp_path):
    from structkit.morph.task import KNOWN_LEMMA, NOT_IN_VECTORS, VECTORS_LEMMA, _lemma_feat

    train, vec = _lemma_treebank(tmp_path / "t.conllu"), _lemma_vectors(tmp_path / "v.vec")
    config = MorphConfig(epochs=5, vectors=vec)
    config.validate()
    model = train_morph(config, train)
    t, lex = model.tables, model.tables.lexicon
    strip = next(i for i, r in enumerate(t.rules) if model.tables.lemma(i, SEEN_P[0]) == SEEN_P[0][:-1])
    same = next(i for i, r in enumerate(t.rules) if model.tables.lemma(i, SEEN_S[0]) == SEEN_S[0])
    # by hand: a seen plural's stem is a training lemma; a new plural's stem only a vectors word;
    # a new singular's stem is no word; the form itself is neither evidence
    assert _lemma_feat(lex, t, strip, SEEN_P[0]) == KNOWN_LEMMA
    assert _lemma_feat(lex, t, strip, NEW_P[0]) == VECTORS_LEMMA
    assert _lemma_feat(lex, t, strip, NEW_S[0]) == NOT_IN_VECTORS
    assert _lemma_feat(lex, t, same, NEW_S[0]) == 0 and _lemma_feat(lex, t, same, NEW_P[0]) == 0
    got = [a[1][0] for a in model.analyse([["mi", w, "."] for w in NEW_P + NEW_S])]
    want = [w[:-1] for w in NEW_P] + NEW_S
    assert sum(g == w for g, w in zip(got, want)) >= 57, list(zip(got, want))    # of 60

    # without vectors the two kinds of new word look alike: one rule for most of them
    plain_config = MorphConfig(epochs=5)
    plain_config.validate()
    plain = train_morph(plain_config, train)
    assert _lemma_feat(plain.tables.lexicon, plain.tables, strip, NEW_P[0]) == 0
    got = [a[1][0] for a in plain.analyse([["mi", w, "."] for w in NEW_P + NEW_S])]
    assert sum(g == w for g, w in zip(got, want)) <= 45, list(zip(got, want))
