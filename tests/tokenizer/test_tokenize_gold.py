"""What the tokenizer learns from, checked against values worked out by hand: the gold labels of
a treebank's characters and its paragraphs, the known-token tables jackknifed over folds (a
paragraph must never see its own tokens), the dictionary lookups at the end of a text, and the
multiword splitter's memory of the forms it saw (ties stay whole) and its edit rules."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from structkit.tokenizer import features as F
from structkit.tokenizer.gold import read_treebank
from structkit.tokenizer.model import jackknifed_tables
from structkit.tokenizer.mwt import _rule, apply, train_splitter


def _known(table: np.ndarray, form: str) -> bool:
    """Whether ``form`` is in a known-token table, by the kernel's own lookup
    (``known_masks``: bit len-1 at the form's first character)."""
    cps = F.code_points(form)
    out = np.zeros(len(cps), dtype=np.int64)
    F.known_masks(cps, F.tables()[1], table, out)
    return bool(out[0] >> (len(form) - 1) & 1)


def test_known_masks_by_hand():
    """'the cat sat' with {cat, sat, at}: 'at' at 5 and 9, 'cat' at 4, 'sat' at 8, the last
    one ending the text (bit l-1 set at j when characters j..j+l-1 are a known token)."""
    table = F.known_table(["cat", "sat", "at"])
    text = "the cat sat"
    out = np.zeros(len(text), dtype=np.int64)
    F.known_masks(F.code_points(text), F.tables()[1], table, out)
    want = [0] * len(text)
    want[4], want[5], want[8], want[9] = 1 << 2, 1 << 1, 1 << 2, 1 << 1
    assert out.tolist() == want


def test_each_paragraph_gets_the_table_of_the_other_folds():
    # paragraph k is in fold k % 5: P0 and P5 share fold 0
    tokens = [["alpha", "common"], ["beta", "common"], ["gamma"], ["delta"], ["eps"], ["zeta"]]
    tables = jackknifed_tables([SimpleNamespace(tokens=t) for t in tokens], folds=5)
    everything = {t for ts in tokens for t in ts}
    own = {0: {"alpha", "zeta"}, 1: {"beta"}, 2: {"gamma"}, 3: {"delta"}, 4: {"eps"}, 5: {"alpha", "zeta"}}
    for k, table in enumerate(tables):
        # its own fold's tokens are unknown unless another fold has them too ("common")
        known = {t for t in everything if _known(table, t)}
        assert known == everything - own[k], k


def test_gold_labels_and_paragraphs(tmp_path):
    """Labels N (inside), T (token end), S (sentence end), W (space); a sentence's text joined to
    the paragraph's with one space; ``# newpar`` starts a new paragraph."""
    rows = {
        "Hi, you.": [("Hi", "No"), (",", None), ("you", "No"), (".", None)],
        "Go home!": [("Go", None), ("home", "No"), ("!", None)],
        "New start.": [("New", None), ("start", "No"), (".", None)],
    }
    lines = []
    for k, (text, toks) in enumerate(rows.items(), 1):
        if k == 3:
            lines.append("# newpar")
        lines += [f"# sent_id = {k}", f"# text = {text}"]
        for i, (form, space) in enumerate(toks, 1):
            lines.append("\t".join([str(i), form, form, "X", "_", "_", "0" if i == 1 else "1",
                                    "root" if i == 1 else "dep", "_", "SpaceAfter=No" if space else "_"]))
        lines.append("")
    path = tmp_path / "t.conllu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tb = read_treebank(str(path))
    assert [p.text for p in tb.paragraphs] == ["Hi, you. Go home!", "New start."]
    label = lambda p: "".join("NTSW"[x] for x in p.labels)
    #                      H i , _ y o u . _ G o _ h o m e !
    assert label(tb.paragraphs[0]) == "NTTWNNTSWNTWNNNTS"
    assert label(tb.paragraphs[1]) == "NNTWNNNNTS"
    assert [p.tokens for p in tb.paragraphs] == [["Hi", ",", "you", ".", "Go", "home", "!"],
                                                 ["New", "start", "."]]


def test_a_form_seen_as_often_whole_as_split_stays_whole():
    tokens = {"della": 4, "nel": 5, "col": 3}
    mwt = {"della": {("di", "la"): 2},                       # 2 split, 2 whole: a tie stays whole
           "nel": {("in", "il"): 3},                         # 3 split, 2 whole: split
           "col": {("con", "il"): 1, ("co", "l"): 1}}        # 2 split (1 + 1), 1 whole: the best split, 1, ties whole
    sp = train_splitter(tokens, mwt)
    assert sp.words("nel") == ("in", "il")
    assert sp.words("della") == ("della",)
    assert sp.words("col") == ("col",)


def test_a_whole_form_whose_lower_case_splits_stays_whole():
    """'Del' was seen only whole, its lower case 'del' only as 'de el': 'Del' stays whole, since
    the lower-cased dictionary would otherwise split it when the model reads it."""
    tokens = {"Del": 3, "del": 5, "casa": 4}
    mwt = {"del": {("de", "el"): 5}}
    sp = train_splitter(tokens, mwt)
    assert sp.words("Del") == ("Del",)
    assert sp.words("del") == ("de", "el")
    assert sp.words("DEL") == ("DE", "el")     # unseen: the lower-cased dictionary's rule
    assert sp.words("casa") == ("casa",)


def test_edit_rules_share_a_prefix_regardless_of_case():
    """The rule keeps the longest prefix the token shares with its first word, compared
    case-insensitively: 'Del' -> 'de el' keeps 'De' and replaces 'l' by ('', 'el'), so that the
    token's own case is kept in its first word."""
    assert _rule("Del", ("de", "el")) == ("l", ("", "el"))
    assert apply("Del", _rule("Del", ("de", "el"))) == ("De", "el")
    assert _rule("considerarsi", ("considerar", "si")) == ("si", ("", "si"))
    assert apply("vederla", ("la", ("e", "la"))) == ("vedere", "la")
    assert _rule("au", ("à", "le")) is None      # nothing shared: only the dictionary knows it
