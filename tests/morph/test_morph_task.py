"""The morph task end to end on a small treebank written here, whose nouns and verbs inflect by
suffix rules (so that words unseen in training can be analysed from their endings): trained and
run through the command line, scored with `eval --task morph`, untouched columns and lines
passed through byte for byte; the model file; errors, one line each. (--scores, explain, the
API, batch and serve: test_morph_front.py; the pos task's large label sets: test_large_labels.py.)"""
from __future__ import annotations

import json
import random

import pytest

from clitools import assert_one_line_error, leftovers

# (suffix, UPOS, XPOS, FEATS) of each inflection; the lemma is the stem
NOUN = [("", "NOUN", "NN", "Number=Sing"), ("s", "NOUN", "NNS", "Number=Plur")]
VERB = [("ed", "VERB", "VBD", "Tense=Past|VerbForm=Fin"), ("ing", "VERB", "VBG", "VerbForm=Ger"),
        ("", "VERB", "VB", "VerbForm=Inf")]
DET = [("the", "DET", "DT", "Definite=Def|PronType=Art"), ("a", "DET", "DT", "Definite=Ind|PronType=Art")]


def stems(rng: random.Random, n: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice("bcfklmprtv") + rng.choice("aeiou") for _ in range(rng.randint(1, 3)))
                + rng.choice("bcfklmprtv"))
    return sorted(out)


def sentences(rng: random.Random, nouns: list[str], verbs: list[str], n: int):
    """Rows (form, lemma, upos, xpos, feats) of ``n`` sentences DET NOUN VERB DET NOUN ."""
    out = []
    for _ in range(n):
        rows = []
        for slot in ("D", "N", "V", "D", "N"):
            if slot == "D":
                form, upos, xpos, feats = rng.choice(DET)
                rows.append((form if rows else form.capitalize(), form, upos, xpos, feats))
            else:
                stem = rng.choice(nouns if slot == "N" else verbs)
                suffix, upos, xpos, feats = rng.choice(NOUN if slot == "N" else VERB)
                rows.append((stem + suffix, stem, upos, xpos, feats))
        rows.append((".", ".", "PUNCT", ".", "_"))
        out.append(rows)
    return out


def write(path, sents, blank: bool = False) -> None:
    """CoNLL-U with comments, distinctive HEAD/DEPREL/DEPS/MISC, and a range line in every
    third sentence; ``blank``: LEMMA/UPOS/XPOS/FEATS as '_' (input to analyse)."""
    lines = []
    for k, rows in enumerate(sents):
        tokens = [r[0] for r in rows]
        if k % 3 == 0:
            tokens[1:3] = [tokens[1] + tokens[2]]
        lines += [f"# sent_id = s{k}", "# text = " + " ".join(tokens)]
        for i, (form, lemma, upos, xpos, feats) in enumerate(rows, 1):
            if k % 3 == 0 and i == 2:
                lines.append(f"2-3\t{form}{rows[2][0]}\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=Yes")
            cols = [str(i), form] + (["_"] * 4 if blank else [lemma, upos, xpos, feats]) \
                + [str(i - 1), "dep" if i > 1 else "root", f"{i - 1}:x", f"Mark={k}.{i}"]
            lines.append("\t".join(cols))
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = random.Random(5)
    # many stems, each seen once or twice: words new to a fold of the training data are common,
    # as in real text (the tagger learns unknown words from them)
    nouns, verbs = stems(rng, 560), stems(random.Random(6), 560)
    nouns = [n for n in nouns if n not in verbs]
    rng.shuffle(nouns)     # unseen stems drawn like the seen ones (not the last in sorted order)
    rng.shuffle(verbs)
    seen_n, seen_v = nouns[:400], verbs[:400]
    d = tmp_path_factory.mktemp("morph")
    write(d / "train.conllu", sentences(rng, seen_n, seen_v, 400))
    write(d / "dev.conllu", sentences(rng, seen_n, seen_v, 60))
    test = sentences(rng, nouns, verbs, 120)   # a third of the stems never seen in training
    write(d / "test.conllu", test)
    write(d / "input.conllu", test, blank=True)
    return d, nouns[400:], verbs[400:]


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    from clitools import run_main  # noqa: F401 (the fixture below runs the CLI in-process)
    from structkit.cli import main

    d = data[0]
    model = d / "morph.model"
    with pytest.raises(SystemExit) as e:
        main(["train", "--task", "morph", "--train", str(d / "train.conllu"), "--dev", str(d / "dev.conllu"),
              "--model", str(model), "-q"])
    assert e.value.code in (0, None)
    return model


def test_a_trained_model_analyses_unseen_words(sk, data, trained, tmp_path):
    d, new_nouns, new_verbs = data
    out = tmp_path / "out.conllu"
    r = sk("morph", "-m", trained, d / "input.conllu", "-o", out)
    assert r.code == 0, r.err
    r = sk("eval", "--task", "morph", d / "test.conllu", out, "--json")
    assert r.code == 0, r.err
    scores = json.loads(r.out)
    # every analysis follows from the word's ending and position: all of them can be right,
    # unseen stems included (about a quarter of the test's nouns and verbs)
    for key in ("upos", "xpos", "ufeats", "alltags", "lemmas"):
        assert scores[key] >= 97.0, (key, scores)
    got = out.read_text(encoding="utf-8").split("\n")
    want = (d / "test.conllu").read_text(encoding="utf-8").split("\n")
    inp = (d / "input.conllu").read_text(encoding="utf-8").split("\n")
    assert len(got) == len(inp)
    for g, i in zip(got, inp):
        gc, ic = g.split("\t"), i.split("\t")
        if len(ic) == 10 and ic[0].isdigit():
            assert gc[:2] + gc[6:] == ic[:2] + ic[6:]      # ID, FORM, HEAD..MISC byte-identical
        else:
            assert g == i                                  # comments, ranges, blank lines
    # the unseen stems' words specifically
    rows = [(g.split("\t"), w.split("\t")) for g, w in zip(got, want) if g[:1].isdigit() and "\t" in g]
    unseen = [(g, w) for g, w in rows if w[2] in set(new_nouns) | set(new_verbs)]
    assert len(unseen) > 30
    right = sum(g[2:6] == w[2:6] for g, w in unseen)
    assert right >= 0.95 * len(unseen)
    assert not leftovers(tmp_path)


def test_standard_input_and_output(sk, data, trained):
    d = data[0]
    r = sk("morph", "-m", trained, stdin=(d / "input.conllu").read_bytes())
    assert r.code == 0, r.err
    assert r.out.startswith("# sent_id = s0\n") and "\tDET\tDT\tDefinite=" in r.out


def test_the_model_file_round_trips(data, trained, tmp_path):
    from structkit.morph.task import MorphModel

    d = data[0]
    m = MorphModel.load(str(trained))
    sents = [["The", "kabas", "lomeked", "a", "vip", "."], ["A", "tiles", "kor", "the", "pum", "."]]  # all new
    first = m.analyse(sents)
    again = tmp_path / "again.model"
    m.save(str(again))
    m2 = MorphModel.load(str(again))
    assert m2.analyse(sents) == first
    assert m2.tables.tags == m.tables.tags and m2.tables.rules == m.tables.rules
    assert (m2.W_tag == m.W_tag).all() and (m2.W_lem == m.W_lem).all()
    assert m.info["train_sentences"] == 400 and m.info["selected_epoch"] >= 1
    assert first[0][2][:2] == ("lomek", "VERB") and first[0][1][0] == "kaba"


def test_a_model_of_another_task_is_refused(sk, data, tmp_path):
    d = data[0]
    pos = tmp_path / "pos.model"
    assert sk("train", "--task", "pos", "--train", d / "train.conllu", "--model", pos, "-q").code == 0
    assert_one_line_error(sk("morph", "-m", pos, d / "input.conllu"), str(pos))


def test_bad_input_is_one_line_naming_file_and_line(sk, data, trained, tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tcat\t_\t_\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert_one_line_error(sk("morph", "-m", trained, bad, "-o", out), f"{bad}:2")
    assert not out.exists() and not leftovers(tmp_path)


def test_eval_refuses_other_words(sk, data, tmp_path):
    d = data[0]
    other = tmp_path / "other.conllu"
    text = (d / "test.conllu").read_text(encoding="utf-8").replace("\tThe\t", "\tThey\t", 1)
    other.write_text(text, encoding="utf-8")
    assert_one_line_error(sk("eval", "--task", "morph", d / "test.conllu", other), "words differ")


def test_dump_shows_the_tags_and_rules(sk, trained):
    r = sk("dump", "-m", trained, "--top", "3")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith("# morph model: ") and "hashed" in lines[0]
    tags = [l for l in lines if l.startswith("tag\t")]
    rules = [l for l in lines if l.startswith("rule\t")]
    assert len(tags) == 3 and len(rules) == 3
    # the most frequent analyses of the data: DET and the noun tags; rules: identity, cut 1 ("-s")
    assert any("\tDET DT " in l for l in tags) and rules[0].endswith("\tidentity")
    only = sk("dump", "-m", trained, "--top", "5", "--feature", "cut 2 at the end").out.splitlines()
    assert [l.split("\t")[2] for l in only if not l.startswith("#")] == ["cut 2 at the end"]   # "-ed"


def test_text_in_capitals_gets_the_lemmas_of_its_words(data, trained):
    """Issue 40, item 9: an upper-cased copy of the test text gets the gold lemmas (all lower-case
    here) of its words, unseen stems included: a word training saw in another casing is analysed
    as that word, one it never saw is edited lower-cased (``KATOBED`` -> ``katob``, not ``KATOB``)."""
    from structkit.morph.task import MorphModel

    d, new_nouns, new_verbs = data
    model = MorphModel.load(str(trained))
    sents = [[r[0].upper() for r in rows] for rows in sentences(random.Random(11), new_nouns + ["bab"], new_verbs, 60)]
    gold = [r[1] for rows in sentences(random.Random(11), new_nouns + ["bab"], new_verbs, 60) for r in rows]
    got = [a[0] for s in model.analyse(sents) for a in s]
    assert len(got) == len(gold)
    right = sum(g == p for g, p in zip(gold, got))
    assert right >= 0.95 * len(gold), [(g, p) for g, p in zip(gold, got) if g != p][:10]


def test_control_characters_in_a_model_do_not_reach_the_terminal(sk, trained, tmp_path):
    """Issue 41, item 7: a model whose tag names and card hold ESC, BEL or a line break (an OSC
    title, a screen clear, a forged ``fake: line``) is shown with them escaped by `info`, `dump`
    and `explain`: nothing of it can drive the terminal or add a line."""
    from structkit import card as cards
    from structkit.morph.task import MorphModel

    m = MorphModel.load(str(trained))
    evil = "\x1b[2J\x1b]0;pwned\x07"
    k = next(i for i, t in enumerate(m.tables.tags) if t.startswith("NOUN\t"))
    m.tables.tags[k] = "NOUN" + evil + m.tables.tags[k][4:]
    path = tmp_path / "evil.skm"
    card = {"card_version": 1, "task": "morph", "data": {"train": {"path": "t.conllu" + evil + "\nfake: line"}}}
    cards.save(m, str(path), card)
    for args in (("info", path), ("dump", "-m", path), ("explain", "-m", path, "--text", "The dogs slept .")):
        r = sk(*args)
        assert r.code == 0, (args, r.err)
        assert "\x1b" not in r.out and "\x07" not in r.out, args
        assert "\\x1b" in r.out, args          # shown, escaped
        assert not any(line.startswith("fake: line") for line in r.out.splitlines()), args
