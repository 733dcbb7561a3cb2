"""`scripts/defaults_loo.py` (issue 43: defaults checked leave-one-treebank-out): the selection on
a hand-made score grid, every expected choice worked out by hand below, and which treebanks of a
data folder it runs on."""
from __future__ import annotations

import pytest
from scriptload import load_script

loo = load_script("defaults_loo")

# Sums by hand (d is the default):
#            A    B    C  | all | without A | without B | without C
#   d       90   80   70  | 240 |    150    |    160    |    170
#   x       95   81   60  | 236 |    141    |    155    |    176
#   y       80   79   78  | 237 |    157    |    158    |    159
# without A: y (157); without B: d (160); without C: x (176); all: d (240).
# Oracles: A x (95), B x (81), C y (78).
GRID = {"d": {"A": 90.0, "B": 80.0, "C": 70.0},
        "x": {"A": 95.0, "B": 81.0, "C": 60.0},
        "y": {"A": 80.0, "B": 79.0, "C": 78.0}}


def test_choose_takes_the_best_mean_over_the_other_treebanks():
    assert loo.choose(GRID, ["d", "x", "y"], without="A") == "y"
    assert loo.choose(GRID, ["d", "x", "y"], without="B") == "d"
    assert loo.choose(GRID, ["d", "x", "y"], without="C") == "x"
    assert loo.choose(GRID, ["d", "x", "y"]) == "d"
    # only the candidates named compete: without d, over all three x (236) loses to y (237)
    assert loo.choose(GRID, ["x", "y"]) == "y"


def test_leave_one_out_rows():
    r = loo.leave_one_out(GRID, ["d", "x", "y"], "d")
    assert r["all"] == "d"
    assert r["treebanks"]["A"] == {"chosen": "y", "score": 80.0, "default": 90.0, "oracle": "x",
                                   "oracle_score": 95.0, "chosen_minus_default": -10.0,
                                   "oracle_minus_chosen": 15.0}
    assert r["treebanks"]["B"] == {"chosen": "d", "score": 80.0, "default": 80.0, "oracle": "x",
                                   "oracle_score": 81.0, "chosen_minus_default": 0.0,
                                   "oracle_minus_chosen": 1.0}
    assert r["treebanks"]["C"] == {"chosen": "x", "score": 60.0, "default": 70.0, "oracle": "y",
                                   "oracle_score": 78.0, "chosen_minus_default": -10.0,
                                   "oracle_minus_chosen": 18.0}


def test_ties_go_to_the_candidate_listed_first():
    # means 2 and 2; then 0.1 + 0.2 against 0.3 + 0.0, equal but for floating point
    grid = {"d": {"A": 1.0, "B": 3.0}, "x": {"A": 2.0, "B": 2.0}}
    assert loo.choose(grid, ["d", "x"]) == "d"
    assert loo.choose(grid, ["x", "d"]) == "x"
    fp = {"d": {"A": 0.1, "B": 0.2}, "x": {"A": 0.3, "B": 0.0}}
    assert loo.choose(fp, ["d", "x"]) == "d"
    assert loo.choose(fp, ["x", "d"]) == "x"
    # the oracle ties the same way: on B, x and d both score 2, and x is listed first
    assert loo.leave_one_out({"d": {"A": 5.0, "B": 2.0}, "x": {"A": 1.0, "B": 2.0}}, ["x", "d"], "d")[
        "treebanks"]["B"]["oracle"] == "x"


def test_choose_refuses_an_incomplete_grid_and_an_empty_choice():
    with pytest.raises(ValueError, match="other treebanks"):
        loo.choose({"d": {"A": 1.0, "B": 2.0}, "x": {"A": 1.0}}, ["d", "x"])
    with pytest.raises(ValueError, match="no treebank left"):
        loo.choose({"d": {"A": 1.0}}, ["d"], without="A")
    with pytest.raises(ValueError, match="no candidates"):
        loo.choose(GRID, [])


def test_scores():
    # morph: the dev selection figure (all-FEATS AllTags + Lemmas), halved
    assert loo.score("morph", {"dev": {"alltags_full": 80.0, "lemmas": 90.0, "upos": 99.0, "alltags": 10.0}}) == 85.0
    # tokenize: the mean of words and sentences F1
    assert loo.score("tokenize", {"tokens": 99.0, "words": 75.0, "sentences": 26.0}) == 50.5
    # parse: the dev LAS of the epoch kept (universal labels), not UAS or the full-label LAS
    assert loo.score("parse", {"uas": 90.0, "las": 85.5, "las_full": 84.0}) == 85.5
    with pytest.raises(ValueError):
        loo.score("ner", {})


def test_parse_variants_change_one_setting_of_the_default():
    assert loo.parse_settings("default") == {"beam": 8, "lift": 2, "hash_bits": 23, "seed": 0}
    assert loo.parse_settings("beam=4") == {"beam": 4, "lift": 2, "hash_bits": 23, "seed": 0}
    assert loo.parse_settings("lift=3") == {"beam": 8, "lift": 3, "hash_bits": 23, "seed": 0}
    assert loo.parse_settings("hash_bits=22") == {"beam": 8, "lift": 2, "hash_bits": 22, "seed": 0}
    assert loo.parse_settings("default/seed2") == {"beam": 8, "lift": 2, "hash_bits": 23, "seed": 2}
    # every named variant but the default changes exactly one setting, and a seed row only the seed
    spec = loo.TASKS["parse"]
    for v in spec["candidates"][1:] + spec["seeds"]:
        changed = {k for k, x in loo.parse_settings(v).items() if x != loo.PARSE_DEFAULT[k]}
        assert len(changed) == 1 and (changed == {"seed"}) == (v in spec["seeds"]), v
    with pytest.raises(ValueError, match="beam=5"):
        loo.parse_settings("beam=5")


def test_the_defaults_are_the_candidates_listed_first():
    for spec in loo.TASKS.values():
        assert spec["candidates"][0] == spec["default"]
        assert not set(spec["seeds"]) & set(spec["candidates"])


def test_treebanks_with_a_training_file_and_their_dev(tmp_path):
    for folder, files in {"ud-a": ["a-ud-train", "a-ud-dev", "a-ud-test"], "ud-b": ["b-ud-train", "b-ud-test"],
                          "ud-c": ["c-ud-dev", "c-ud-test"], "conll2000": ["x-ud-train"]}.items():
        (tmp_path / folder).mkdir()
        for f in files:
            (tmp_path / folder / f"{f}.conllu").write_text("")
    assert loo.ud_treebanks(str(tmp_path)) == {
        "ud-a": (str(tmp_path / "ud-a" / "a-ud-train.conllu"), str(tmp_path / "ud-a" / "a-ud-dev.conllu")),
        "ud-b": (str(tmp_path / "ud-b" / "b-ud-train.conllu"), None)}


def test_words_counts_syntactic_words_only(tmp_path):
    p = tmp_path / "x.conllu"
    p.write_text("# text = del mar\n1-2\tdel\t_\n1\tde\t_\n2\tel\t_\n3\tmar\t_\n3.1\tx\t_\n\n"
                 "1\tyes\t_\n\n", encoding="utf-8")
    assert loo.words(str(p)) == 4
