"""Lemma edit rules: the rule of (form, lemma) applied to the form gives the lemma back, on
hand-made pairs and on every (form, lemma) pair of real training files; rules generalise."""
from __future__ import annotations

import pytest

from structkit.lattice.rules import IDENTITY, applies, apply_rule, make_rule, parse_rule, rule_text


@pytest.mark.parametrize("form, lemma", [
    ("walked", "walk"), ("Walked", "walk"), ("went", "go"), ("Roma", "Roma"), ("gatti", "gatto"),
    ("gemacht", "machen"), ("", "x"), ("ABC", "abc"), ("İstanbul", "istanbul"), ("x", ""),
    ("evlerinden", "ev"), ("unhappiest", "happy")])
def test_rule_round_trips(form, lemma):
    rule = make_rule(form, lemma)
    assert applies(rule, form)
    assert apply_rule(rule, form) == lemma
    assert parse_rule(rule_text(rule)) == rule


def test_rules_generalise_over_endings():
    rule = make_rule("walked", "walk")
    assert apply_rule(rule, "talked") == "talk"
    assert make_rule("gatti", "gatto") == make_rule("libri", "libro")
    assert make_rule("casa", "casa") == IDENTITY
    assert not applies(make_rule("houses", "house"), "")


def test_lower_casing_only_where_it_shares_more():
    """A rule lower-cases the form only where the lower-cased form shares more with the lemma:
    on a tie the rule keeps the case, which also applies to forms whose lower-casing changes
    their length (``applies``)."""
    assert make_rule("Xyz", "yz") == (False, 1, "", 0, "")     # 'yz' either way: keep the case
    assert make_rule("Walked", "walk") == (True, 0, "", 2, "")  # 'walk' only lower-cased
    assert make_rule("went", "go") == (False, 0, "", 4, "go")   # nothing shared: replace it all


def test_bad_rule_text_is_refused():
    for bad in ("", "K\t1\t\t2", "Q\t0\t\t0\t", "K\t-1\t\t0\t"):
        with pytest.raises(ValueError):
            parse_rule(bad)


@pytest.mark.parametrize("rel", ["ud-turkish-imst/tr_imst-ud-train.conllu",
                                 "ud-english-partut/en_partut-ud-train.conllu",
                                 "ud-finnish-tdt/fi_tdt-ud-dev.conllu"])
def test_rule_round_trips_on_every_pair_of_a_treebank(rel, corpus):
    from structkit.io.conllu import read_conllu

    path = corpus(rel)
    n = 0
    for sent in read_conllu(str(path), check_text=False):
        for row in sent.rows:
            rule = make_rule(row[1], row[2])
            assert apply_rule(parse_rule(rule_text(rule)), row[1]) == row[2], (row[1], row[2], rule)
            n += 1
    assert n > 1000
