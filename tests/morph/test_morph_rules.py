"""Lemma edit rules: the rule of (form, lemma) applied to the form gives the lemma back, on
hand-made pairs and on every (form, lemma) pair of real training files; rules generalise."""
from __future__ import annotations

import pytest

from structkit.lattice.rules import IDENTITY, applies, apply_rule, make_rule, parse_rule, rule_text


@pytest.mark.parametrize("form, lemma", [
    ("walked", "walk"), ("Walked", "walk"), ("went", "go"), ("Roma", "Roma"), ("gatti", "gatto"),
    ("gemacht", "machen"), ("", "x"), ("ABC", "abc"), ("İstanbul", "istanbul"),
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


def test_a_rule_that_would_leave_an_empty_lemma_does_not_apply():
    """Turkish IMST: the suffix rule of ``renklerden`` -> ``renk`` cuts six letters; on the
    six-letter ``lerden`` (a word the tokenizer cut off) it would leave nothing, and an empty
    LEMMA column is not CoNLL-U. Rules that cut all and add something still apply."""
    cut_six = make_rule("renklerden", "renk")
    assert cut_six == (False, 0, "", 6, "")
    assert applies(cut_six, "evlerden") and apply_rule(cut_six, "evlerden") == "ev"
    assert not applies(cut_six, "lerden")
    assert not applies(cut_six, "erden")
    assert not applies(make_rule("x", ""), "x")
    assert applies(make_rule("went", "go"), "went") and apply_rule(make_rule("went", "go"), "went") == "go"
    assert applies(make_rule("", "x"), "")


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


def _tables():
    """A lexicon written by hand: ``il`` seen 3 times, ``Il`` once, ``misure`` with the rule that cuts
    ``e`` and adds ``a``, ``Giovanni`` (a name) as it is."""
    from structkit.lattice.lexicon import Lexicon, base_rules
    from structkit.morph.task import Tables

    rules = [rule_text(r) for r in base_rules()] + [rule_text((False, 0, "", 1, "a")),
                                                    rule_text((False, 0, "", 4, "re"))]
    tokens = [("il", 0, 0, "il")] * 3 + [("Il", 0, 1, "il"), ("misure", 0, 2, "misura"),
                                         ("Giovanni", 0, 0, "Giovanni"), ("gridavano", 0, 3, "gridare")]
    lex = Lexicon().add(tokens)
    return Tables(["NOUN\t_\t_"], rules, lex), lex


def test_the_surface_a_rule_edits_is_the_casing_training_saw():
    _, lex = _tables()
    assert lex.surface("il") == "il" and lex.surface("Il") == "Il"        # known as written
    assert lex.surface("IL") == "il"                # the casing seen most often
    assert lex.surface("MISURE") == "misure" and lex.surface("Misure") == "misure"   # (only capitals ask)
    assert lex.surface("GIOVANNI") == "Giovanni"
    assert lex.surface("IVA") == "IVA" and lex.surface("parole") == "parole"   # never seen: as written


def test_lemmas_of_words_in_capitals():
    from structkit.morph.task import _views

    t, lex = _tables()

    def lemma(rule, form, sentence=None):
        sentence = sentence or ["Le", form, "."]
        return t.lemma(rule, _views(lex, sentence)[sentence.index(form)])

    assert lemma(2, "MISURE") == "misura"           # was MISURa: the rule edited the capitals
    assert lemma(0, "IL") == "il"
    assert lemma(0, "GIOVANNI") == "Giovanni"
    assert lemma(3, "GRIDAVANO") == "gridare"       # unseen in any casing: edited lower-cased
    assert lemma(0, "IVA") == "IVA"                 # ... but kept when the rule adds nothing,
    assert lemma(0, "IVA", ["IVA", "INCLUSA"]) == "iva"   # except in a sentence in capitals
    assert lemma(0, "GIOVANNI", ["GIOVANNI", "DICE"]) == "Giovanni"   # known casings stay
    assert lemma(2, "Parole") == "Parola"           # title case: the rule as it is on the form,
    assert lemma(2, "Misure") == "Misura"           # seen lower-cased or not


def test_a_long_token_costs_linear_time(monkeypatch):
    """Issue 41, item 4: the longest common substring is quadratic (51.8 s for a 20,000-character
    token and lemma); past MAX_LCS_CELLS character pairs the rule keeps the common prefix, and
    still gives the lemma back."""
    import structkit.lattice.rules as R

    sizes = []
    real = R._longest_common
    monkeypatch.setattr(R, "_longest_common", lambda a, b: (sizes.append(len(a) * len(b)), real(a, b))[1])
    form, lemma = "ab" * 10_000, "ab" * 9_999 + "x"
    rule = make_rule(form, lemma)
    assert apply_rule(rule, form) == lemma and rule == (False, 0, "", 2, "x")
    assert make_rule(form.upper(), lemma) == (True, 0, "", 2, "x")   # lower-cased shares more
    assert all(n <= R.MAX_LCS_CELLS for n in sizes)
    assert make_rule("walked", "walk") == (False, 0, "", 2, "") and sizes   # short words as before
