"""`structkit eval --task morph` (structkit.morph.evaluate): UPOS, XPOS, UFeats, AllTags and
Lemmas as the CoNLL 2018 shared task defines them (conll18_ud_eval.py v1.2: UFeats and AllTags
keep only the 21 universal features of FEATS), and AllTags (all FEATS), our own figure over
every FEATS key, which morph training's dev selection uses.

The files are written here and every expected figure is worked out by hand in the comments."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from structkit.eval.ud import evaluate_ud
from structkit.morph.evaluate import evaluate_files, report

# ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL (DEPS and MISC '_')
GOLD = [
    "1 Evimiz ev NOUN Noun Case=Nom|Number=Sing|Number[psor]=Plur|Person=3|Person[psor]=1 2 nsubj",
    "2 geldi gel VERB Verb Aspect=Perf|Echo=Rdp|Mood=Ind|Number=Sing|Person=3|Tense=Past 0 root",
    "3 okulu okul NOUN Noun Case=Acc|Number=Sing|Person=3 2 obj",
    "4 kitap kitap NOUN Noun Case=Nom|Number=Sing|Person=3 2 obl",
    "5 hızlı hızlı ADJ Adj _ 2 advmod",
    "6 . _ PUNCT Punc _ 2 punct",
]
PRED = [
    # a layered feature differs (Number[psor]): right for UFeats and AllTags, wrong for all FEATS
    "1 Evimiz ev NOUN Noun Case=Nom|Number=Sing|Number[psor]=Sing|Person=3|Person[psor]=1 2 nsubj",
    # a language-specific feature is missing (Echo): the same
    "2 geldi gel VERB Verb Aspect=Perf|Mood=Ind|Number=Sing|Person=3|Tense=Past 0 root",
    # the same features in another order: right everywhere; the lemma wrong
    "3 okulu oku NOUN Noun Person=3|Case=Acc|Number=Sing 2 obj",
    # a universal feature differs (Case): wrong for UFeats, AllTags and all FEATS
    "4 kitap kitap NOUN Noun Case=Acc|Number=Sing|Person=3 2 obl",
    # UPOS wrong, XPOS and (empty) FEATS right: wrong for both AllTags
    "5 hızlı hızlı ADV Adj _ 2 advmod",
    # the gold lemma '_' matches anything
    "6 . . PUNCT Punc _ 2 punct",
]
# over the 6 words:
#   UPOS 5/6 (word 5 wrong), XPOS 6/6, UFeats 5/6 (word 4), Lemmas 5/6 (word 3),
#   AllTags (UPOS, XPOS, universal features) 4/6: words 1, 2, 3, 6,
#   AllTags (all FEATS) 2/6: words 3 and 6.
WANT = {"upos": 500 / 6, "xpos": 100.0, "ufeats": 500 / 6, "alltags": 400 / 6, "alltags_full": 200 / 6,
        "lemmas": 500 / 6, "words": 6}


def conllu(rows: list[str]) -> str:
    text = " ".join(r.split()[1] for r in rows)
    return "# sent_id = 1\n" + f"# text = {text}\n" + "".join(
        "\t".join(r.split() + ["_", "_"]) + "\n" for r in rows) + "\n"


@pytest.fixture
def files(tmp_path):
    g, p = tmp_path / "gold.conllu", tmp_path / "pred.conllu"
    g.write_text(conllu(GOLD), encoding="utf-8")
    p.write_text(conllu(PRED), encoding="utf-8")
    return g, p


def test_alltags_keeps_only_the_universal_features(files):
    got = evaluate_files(*map(str, files))
    assert set(got) == set(WANT)
    for k, v in WANT.items():
        assert got[k] == pytest.approx(v), k


def test_the_command_shows_both_alltags(sk, files):
    r = sk("eval", "--task", "morph", *files, "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert got["alltags"] == pytest.approx(400 / 6) and got["alltags_full"] == pytest.approx(200 / 6)
    r = sk("eval", "--task", "morph", *files)
    assert r.code == 0, r.err
    lines = dict(line.rsplit(None, 1) for line in r.out.strip().split("\n"))
    assert {k.strip(): v for k, v in lines.items()} == {
        "UPOS": "83.33", "XPOS": "100.00", "UFeats": "83.33", "AllTags": "66.67",
        "AllTags (all FEATS)": "33.33", "Lemmas": "83.33", "words": "6"}
    assert report(evaluate_files(*map(str, files))).split("\n")[3].startswith("AllTags ")


def test_the_same_as_eval_ud_on_gold_tokens(files):
    """On gold tokens every word is aligned: eval --task ud's AligndAcc are the same figures."""
    ud = evaluate_ud(*map(str, files))
    for k in ("upos", "xpos", "ufeats", "alltags", "lemmas"):
        assert ud[k]["aligned_accuracy"] == pytest.approx(WANT[k]), k


def test_dev_selection_uses_all_feats(files):
    """Training keeps the epoch with the best AllTags (all FEATS) + Lemmas, as before AllTags
    became CoNLL 2018's: the predictions above, every lemma the form itself (identity rule):
    Lemmas 3/6 (4 kitap, 5 hızlı, and 6 whose gold lemma is '_'), so select = 200/6 + 300/6."""
    from structkit.io.conllu import read_conllu
    from structkit.lattice.lexicon import base_rules
    from structkit.lattice.rules import apply_rule
    from structkit.morph.task import _score

    sents = list(read_conllu(str(files[0]), check_text=False))
    tags = ["\t".join(r.split()[3:6]) for r in PRED]
    tables = SimpleNamespace(tags=tags, lemma=lambda r, form: apply_rule(base_rules()[0], form))
    forms = [row[1] for s in sents for row in s.rows]
    r = _score(tables, sents, np.arange(6), np.zeros(6, dtype=np.int64), forms)
    assert r["lemmas"] == pytest.approx(50.0)
    assert r["select"] == pytest.approx(200 / 6 + 50.0)
