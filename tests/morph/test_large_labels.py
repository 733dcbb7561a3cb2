"""Large label sets for the sequence tasks in bounded memory (``structkit.sequence.lattice``):
`train --task pos --label-column lemma`, whose dense features x labels table is over the weight
budget, trains over hashed candidate lattices instead of being refused (labels as edit rules of
the word, so unseen words get lemmas); a label set that does not fit even then is the one-line
error; `--label-column feats.Number` learns '_' for words without the key."""
from __future__ import annotations

import json

import pytest

import structkit
from clitools import assert_one_line_error, leftovers
from test_morph_task import data  # noqa: F401 (the small inflecting treebank)

MB = 1 << 20


def rows(path) -> list[list[str]]:
    return [ln.split("\t") for ln in path.read_text(encoding="utf-8").split("\n") if ln[:1].isdigit()]


def test_lemmas_over_the_dense_budget_train_a_lattice(sk, data, tmp_path, monkeypatch):  # noqa: F811
    d, new_nouns, new_verbs = data
    monkeypatch.setenv("STRUCTKIT_WEIGHT_BUDGET", str(200 * MB))   # dense: ~385 MB; the lattice: 96 MB
    m = tmp_path / "lemma.model"
    r = sk("train", "--task", "pos", "--label-column", "lemma", "--train", d / "train.conllu",
           "--dev", d / "dev.conllu", "--model", m, "-v")
    assert r.code == 0, r.err
    assert "hashed candidate lattice over" in r.err and "edit rules" in r.err, r.err
    out = tmp_path / "out.conllu"
    r = sk("tag", "-m", m, d / "input.conllu", "-o", out)
    assert r.code == 0, r.err
    # only LEMMA is filled: every other column and line as read
    got = out.read_text(encoding="utf-8").split("\n")
    inp = (d / "input.conllu").read_text(encoding="utf-8").split("\n")
    assert len(got) == len(inp)
    for g, i in zip(got, inp):
        gc, ic = g.split("\t"), i.split("\t")
        assert (gc[:2] + gc[3:] == ic[:2] + ic[3:]) if ic[0].isdigit() else g == i
    r = sk("eval", "--task", "pos", "--label-column", "lemma", d / "test.conllu", out, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["accuracy"] >= 95.0
    # the words of stems never seen in training get their lemma from the suffix rules
    unseen = set(new_nouns) | set(new_verbs)
    pairs = [(g[2], w[2]) for g, w in zip(rows(out), rows(d / "test.conllu")) if w[2] in unseen]
    assert len(pairs) > 30 and sum(g == w for g, w in pairs) >= 0.9 * len(pairs)
    # scores, dump, the API
    r = sk("tag", "-m", m, d / "input.conllu", "--scores")
    assert r.code == 0 and all("Margin=" in x[9] for x in (ln.split("\t") for ln in r.out.split("\n"))
                               if x[0].isdigit()), r.err
    r = sk("dump", "-m", m, "--top", "3")
    assert r.code == 0 and "hashed candidate lattice" in r.out and r.out.count("\n  ") == 3, r.out
    # explain: the label is the one tagged, the pushes name the morph tagger's feature columns
    r = sk("explain", "-m", m, d / "input.conllu", "--sentence", "1", "--json")
    assert r.code == 0, r.err
    got = [json.loads(x) for x in r.out.splitlines()]
    assert [e["label"] for e in got] == [x[2] for x in rows(out) if "-" not in x[0]][:len(got)]
    r = sk("explain", "-m", m, "--text", "The kabas lomeked a vip.", "--json")
    assert r.code == 0, r.err
    got += [json.loads(x) for x in r.out.splitlines()]
    assert [e["label"] for e in got[-6:]] == ["the", "kaba", "lomek", "a", "vip", "."]
    # (this treebank's lemmas follow from the most frequent rule of each ending: training may make
    # no update at all, and then no feature pushes either way)
    names = [name for e in got for name, _ in e["features"]]
    assert all(n.split("=")[0].split("[")[0] in ("w", "l", "p1", "p2", "p3", "p4", "s1", "s2", "s3", "s4",
                                                            "s5", "sh", "fl", "len", "amb", "bias", "l[-1]l",
                                                            "l[0]l[+1]", "transitions and the other words' labels")
                         for n in names), names
    assert all(e["margin"] is None or e["margin"] >= -1e-6 for e in got)
    tagger = structkit.Tagger.load(m)
    words = ["The", "kabas", "lomeked", "a", "vip", "."]
    assert tagger.predict([words])[0][0] == "the"
    assert tagger.score(str(d / "test.conllu"))["accuracy"] >= 95.0
    # its card scores it on the lemma column it learnt (not on the UPOS passed through)
    from structkit import card as cards

    _, card = cards.read(str(m))
    assert card["dev"]["scores"]["accuracy"] == pytest.approx(card["dev"]["during_training"]["scores"]["accuracy"])
    assert "--label-column lemma" in card["scored_with"]
    # served, its lemmas are not POS tags a parser after it would read
    from structkit import serve

    assert serve.load_models([f"l={m}"])["l"].meta["gives_pos"] is False
    assert not leftovers(tmp_path)


def test_a_label_set_over_the_budget_even_hashed_is_one_line(sk, data, tmp_path, monkeypatch):  # noqa: F811
    d = data[0]
    monkeypatch.setenv("STRUCTKIT_WEIGHT_BUDGET", str(MB))
    m = tmp_path / "lemma.model"
    line = assert_one_line_error(sk("train", "--task", "pos", "--label-column", "lemma", "--train",
                                    d / "train.conllu", "--model", m, "-q"), "1 MB", "--task morph",
                                 "STRUCTKIT_WEIGHT_BUDGET")
    assert "dense weights" in line and "hashed candidate lattice" in line
    assert not m.exists() and not leftovers(tmp_path)


def test_plain_labels_on_a_lattice(sk, data, tmp_path, monkeypatch):  # noqa: F811
    """XPOS labels are not edit rules of the word: the lattice's classes are the labels."""
    import structkit.sequence.lattice as lattice

    d = data[0]
    monkeypatch.setattr(lattice, "LATTICE_BITS", 16)
    monkeypatch.setenv("STRUCTKIT_WEIGHT_BUDGET", str(2 * MB))   # under the dense table (3.7 MB), over 2^16 x 24 bytes
    m = tmp_path / "xpos.model"
    r = sk("train", "--task", "pos", "--label-column", "xpos", "--train", d / "train.conllu", "--model", m,
           "-v", "--epochs", "3")
    assert r.code == 0, r.err
    assert "hashed candidate lattice over" in r.err and "labels, averaged" in r.err, r.err
    out = tmp_path / "out.conllu"
    assert sk("tag", "-m", m, d / "input.conllu", "-o", out).code == 0
    r = sk("eval", "--task", "pos", "--label-column", "xpos", d / "test.conllu", out, "--json")
    assert json.loads(r.out)["accuracy"] >= 95.0


def test_a_feats_key_gives_words_without_it_the_none_label(sk, data, tmp_path):  # noqa: F811
    d = data[0]
    m = tmp_path / "number.model"
    r = sk("train", "--task", "pos", "--label-column", "feats.Number", "--train", d / "train.conllu",
           "--model", m, "-q")
    assert r.code == 0, r.err
    # input: the gold FEATS without Number; tagging puts it back where the model predicts one
    stripped = tmp_path / "in.conllu"
    lines = []
    for ln in (d / "test.conllu").read_text(encoding="utf-8").split("\n"):
        c = ln.split("\t")
        if c[0].isdigit():
            c[5] = "|".join(x for x in c[5].split("|") if not x.startswith("Number=")) or "_"
        lines.append("\t".join(c))
    stripped.write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert sk("tag", "-m", m, stripped, "-o", out).code == 0
    got, gold = rows(out), rows(d / "test.conllu")
    assert len(got) == len(gold)
    right = sum(g[5] == w[5] for g, w in zip(got, gold))
    assert right >= 0.95 * len(gold)
    assert all(g[:5] + g[6:] == w[:5] + w[6:] for g, w in zip(got, gold))
    # verbs, determiners and punctuation have no Number: none is written for them
    assert all("Number=" not in g[5] for g in got if g[3] in ("VERB", "DET", "PUNCT"))
    r = sk("eval", "--task", "pos", "--label-column", "feats.Number", d / "test.conllu", out, "--json")
    assert r.code == 0 and "_" in json.loads(r.out)["per_tag"], r.out
