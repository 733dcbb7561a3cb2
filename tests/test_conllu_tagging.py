"""Tagging CoNLL-U: training on UPOS (or XPOS, or a MISC key), tagging CoNLL-U into CoNLL-U
with only the predicted column changed, evaluation with per-tag tables, templates over named
columns, and one file:line error for each kind of malformed input."""
from __future__ import annotations

import json

import pytest

from clitools import assert_one_line_error
from conftest import ROOT

SAMPLE = ROOT / "structkit" / "data" / "sample" / "ud"

# Comments, a multiword range, an empty node, SpaceAfter=No: everything must pass through.
UD = """# newdoc id = t1
# sent_id = 1
# text = The ferry didn't sail.
1\tThe\tthe\tDET\tDT\tDefinite=Def\t2\tdet\t_\t_
2\tferry\tferry\tNOUN\tNN\tNumber=Sing\t5\tnsubj\t_\t_
3-4\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
3\tdid\tdo\tAUX\tVBD\t_\t5\taux\t_\t_
4\tn't\tnot\tPART\tRB\t_\t5\tadvmod\t_\t_
5\tsail\tsail\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No|NER=O
5.1\tsailed\tsail\tVERB\tVBD\t_\t_\t_\t2:nsubj\t_
6\t.\t.\tPUNCT\t.\t_\t5\tpunct\t_\t_

# sent_id = 2
# text = Ada baked bread
1\tAda\tAda\tPROPN\tNNP\t_\t2\tnsubj\t_\tNER=B-PER
2\tbaked\tbake\tVERB\tVBD\t_\t0\troot\t_\tNER=O
3\tbread\tbread\tNOUN\tNN\t_\t2\tobj\t_\tNER=O

"""


def test_tag_conllu_round_trip(sk, tmp_path):
    """CoNLL-U in, tagged, CoNLL-U out: every line equal to the input but the UPOS column."""
    model = tmp_path / "m.model"
    assert sk("train", "--task", "pos", "--train", SAMPLE / "train.conllu", "--model", model,
              "--epochs", "3").code == 0
    src = tmp_path / "in.conllu"
    src.write_text(UD, encoding="utf-8")
    out = tmp_path / "out.conllu"
    r = sk("tag", "--model", model, src, "-o", out)
    assert r.code == 0, r
    a, b = UD.splitlines(), out.read_text(encoding="utf-8").splitlines()
    assert len(a) == len(b)
    changed_columns = set()
    for x, y in zip(a, b):
        if x.startswith("#") or not x or "-" in x.split("\t")[0] or "." in x.split("\t")[0]:
            assert x == y  # comments, ranges and empty nodes byte for byte
            continue
        cx, cy = x.split("\t"), y.split("\t")
        changed_columns |= {i for i in range(10) if cx[i] != cy[i]}
        assert len(cy) == 10 and cy[3] != "_"
    assert changed_columns <= {3}


def test_train_reads_upos_xpos_or_a_misc_key(sk, tmp_path):
    src = tmp_path / "t.conllu"
    src.write_text(UD * 20, encoding="utf-8")
    m = tmp_path / "m.model"
    for extra, task, labels in ((["--label-column", "xpos"], "pos", {"DT", "NN", "VBD", "RB", "VB", ".", "NNP"}),
                                ([], "pos", {"DET", "NOUN", "AUX", "PART", "VERB", "PUNCT", "PROPN"})):
        assert sk("train", "--task", task, "--train", src, "--model", m, "--epochs", "2", *extra).code == 0
        r = sk("dump", "--model", m, "--top", "1")
        assert all(lab in r.out for lab in labels), r.out
    # NER from a MISC key: every word needs one (the first sentence's words lack NER=).
    assert_one_line_error(sk("train", "--task", "ner", "--train", src, "--model", m,
                             "--label-column", "misc.NER"),
                          f"{src}:4:", "word 1 has no NER= in its misc column")
    second = (UD.split("\n\n")[1] + "\n\n") * 20
    src.write_text(second, encoding="utf-8")
    assert sk("train", "--task", "ner", "--train", src, "--model", m, "--label-column", "misc.NER",
              "--epochs", "2").code == 0
    out = tmp_path / "o.conllu"
    assert sk("ner", "--model", m, src, "-o", out).code == 0
    r = sk("eval", "--task", "ner", src, out, "--label-column", "misc.NER", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["f1"] == 100.0  # trained on these very sentences
    assert_one_line_error(sk("train", "--task", "ner", "--train", src, "--model", m),
                          "needs --label-column")


def test_eval_conllu_pos_tables(sk, tmp_path):
    gold = tmp_path / "g.conllu"
    gold.write_text(UD, encoding="utf-8")
    pred = tmp_path / "p.conllu"
    # Two words mistagged by hand: ferry NOUN -> VERB, bread NOUN -> VERB.
    text = UD.replace("2\tferry\tferry\tNOUN", "2\tferry\tferry\tVERB").replace(
        "3\tbread\tbread\tNOUN", "3\tbread\tbread\tVERB")
    pred.write_text(text, encoding="utf-8")
    r = sk("eval", "--task", "pos", gold, pred, "--json")
    res = json.loads(r.out)
    assert res["tokens"] == 9 and res["upos_accuracy"] == pytest.approx(700 / 9)
    assert res["xpos_accuracy"] is None  # passed through unchanged: not scored as 100%
    assert res["per_tag"]["NOUN"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "gold": 2,
                                      "predicted": 0, "correct": 0}
    assert res["per_tag"]["VERB"]["precision"] == 50.0  # sail, baked right; ferry, bread wrong
    assert res["confusions"] == [["NOUN", "VERB", 2]]
    r = sk("eval", "--task", "pos", gold, pred)
    assert "UPOS accuracy:  77.78%" in r.out and "NOUN -> VERB 2" in r.out
    # Words that do not line up are an error at the prediction's line.
    pred.write_text(UD.replace("\tbread\tbread\t", "\tbred\tbread\t"), encoding="utf-8")
    assert_one_line_error(sk("eval", "--task", "pos", gold, pred),
                          f"{pred}:17:", "'bred' does not line up with gold word 'bread'")


def test_templates_over_named_columns(sk, tmp_path):
    """A template over a column structkit has never seen (a gazetteer flag), from --columns
    names; dump shows its features by name; input lacking the column is an error."""
    rows = []
    for i in range(30):
        rows += [f"Ada\tNNP\tGAZ\tB-PER", f"met\tVBD\t-\tO", f"Bo\tNNP\tGAZ\tB-PER", f"today\tNN\t-\tO", ""]
    src = tmp_path / "g.txt"
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    m = tmp_path / "m.model"
    r = sk("train", "--task", "ner", "--train", src, "--model", m, "--columns", "word,pos,gaz,label",
           "--templates", "bias,w[0],gaz[0],gaz[-1]|gaz[0]", "--epochs", "2")
    assert r.code == 0, r
    r = sk("dump", "--model", m, "--feature", "gaz[0]=GAZ")
    assert "gaz[0]=GAZ" in r.out
    test = tmp_path / "t.txt"
    test.write_text("Cy\tNNP\tGAZ\nleft\tVBD\t-\n\n", encoding="utf-8")
    out = tmp_path / "o.txt"
    assert sk("ner", "--model", m, test, "-o", out).code == 0
    assert out.read_text().splitlines()[0].split()[-1] == "B-PER"  # an unknown word, found by its flag
    words_only = tmp_path / "w.txt"
    words_only.write_text("Cy\nleft\n\n", encoding="utf-8")
    assert_one_line_error(sk("ner", "--model", m, words_only), "expected 4 columns")
    assert_one_line_error(sk("train", "--task", "ner", "--train", src, "--model", m,
                             "--templates", "w[0],cluster[0]"),
                          f"{src}:1:", "reads the column 'cluster', which this input does not have")
    assert not m.with_suffix(".model.tmp").exists()


BAD = {
    "wrong column count": ("1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\n", ":1:", "expected 10 tab-separated columns"),
    "range past the sentence": ("1-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdid\tdo\tAUX\tVBD\t_\t0\troot\t_\t_\n"
                                "2\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_\n", ":1:",
                                "multiword token ends at word 3, past the sentence's last word 2"),
    "empty node in the middle": ("1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_\n2\tb\tb\tNOUN\tNN\t_\t0\troot\t_\t_\n"
                                 "1.1\tc\tc\tNOUN\tNN\t_\t_\t_\t_\t_\n", ":3:", "empty node 1.1 out of place"),
    "text disagrees": ("# text = A cat\n1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_\n2\tdog\tdog\tNOUN\tNN\t_\t0\troot\t_\t_\n",
                       ":1:", "# text does not match the tokens"),
    "label column all _": ("1\tA\ta\t_\tDT\t_\t2\tdet\t_\t_\n2\tdog\tdog\t_\tNN\t_\t0\troot\t_\t_\n",
                           ":1:", "is '_' throughout"),
    "comment inside a sentence": ("1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_\n# oops\n2\tdog\tdog\tNOUN\tNN\t_\t0\troot\t_\t_\n",
                                  ":2:", "a comment line inside a sentence"),
    "ID out of sequence": ("1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_\n3\tdog\tdog\tNOUN\tNN\t_\t0\troot\t_\t_\n",
                           ":2:", "word ID 3 out of sequence"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_conllu_is_one_line_at_its_line(sk, tmp_path, case):
    text, where, needle = BAD[case]
    src = tmp_path / "bad.conllu"
    src.write_text(text, encoding="utf-8")
    m = tmp_path / "m.model"
    line = assert_one_line_error(sk("train", "--task", "pos", "--train", src, "--model", m),
                                 f"{src}{where}", needle)
    assert not m.exists() and not list(tmp_path.glob(".tmp-*"))
    print(line)


def test_set_key_keeps_the_key_order():
    """set_key replaces a key's value where it stands (MISC/FEATS keep their order: a tagger
    writing its tag into MISC must not reorder the other keys) and appends a new key; key_value
    reads it back."""
    from structkit.io.conllu import key_value, set_key

    assert set_key("_", "Tag", "NN") == "Tag=NN"
    assert set_key("SpaceAfter=No", "Tag", "NN") == "SpaceAfter=No|Tag=NN"
    assert set_key("A=1|Tag=X|B=2", "Tag", "NN") == "A=1|Tag=NN|B=2"
    assert set_key("Tag=X|A=1|B=2", "Tag", "NN") == "Tag=NN|A=1|B=2"
    assert set_key("A=1|B=2|Tag=X", "Tag", "NN") == "A=1|B=2|Tag=NN"
    assert set_key("Tagx=1|Tag=X", "Tag", "NN") == "Tagx=1|Tag=NN"  # a longer key is another key
    assert key_value(set_key("A=1|Tag=X|B=2", "Tag", "NN"), "Tag") == "NN"
