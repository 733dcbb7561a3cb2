"""eval --task parse: UAS and LAS under the Penn Treebank and CoNLL 2018 conventions, the
per-label table, files without labels, and bad input. Every expected value is counted by hand
in the comment next to it, on the small files written here."""
from __future__ import annotations

import json

import pytest
from clitools import assert_one_line_error

from structkit.errors import UserError
from structkit.eval.attachment import AttachmentCounter, format_report, universal_deprel
from structkit.eval.files import evaluate_parse_files


def ud(*sentences) -> str:
    """CoNLL-U text; a sentence is a list of rows (form, upos, xpos, head, deprel) or
    ('range', 'first-last', form) for a multiword token line."""
    out = []
    for sent in sentences:
        lines, i = [], 0
        for row in sent:
            if row[0] == "range":
                lines.append(f"{row[1]}\t{row[2]}" + "\t_" * 8)
                continue
            i += 1
            form, upos, xpos, head, rel = row
            lines.append(f"{i}\t{form}\t_\t{upos}\t{xpos}\t_\t{head}\t{rel}\t_\t_")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


# "Dogs do n't bark ." (don't a multiword token) and "Yes ( sir )".
GOLD1 = [("Dogs", "NOUN", "NNS", 4, "nsubj"), ("range", "2-3", "don't"),
         ("do", "AUX", "VBP", 4, "aux"), ("n't", "PART", "RB", 4, "advmod"),
         ("bark", "VERB", "VB", 0, "root"), (".", "PUNCT", ".", 4, "punct")]
GOLD2 = [("Yes", "INTJ", "UH", 0, "root"), ("(", "PUNCT", "-LRB-", 3, "punct"),
         ("sir", "NOUN", "NN", 1, "vocative"), (")", "PUNCT", "-RRB-", 3, "punct")]
# Dogs: head right, nsubj:pass (universal right, full wrong); do right; n't head 2 (wrong),
# label right; bark right; '.' head 2 (wrong). Yes right; '(' head right, label 'list' (never
# in the gold); sir head right, label obj (wrong); ')' head 1 (wrong), label right.
PRED1 = [("Dogs", "NOUN", "NNS", 4, "nsubj:pass"), ("range", "2-3", "don't"),
         ("do", "AUX", "VBP", 4, "aux"), ("n't", "PART", "RB", 2, "advmod"),
         ("bark", "VERB", "VB", 0, "root"), (".", "PUNCT", ".", 2, "punct")]
PRED2 = [("Yes", "INTJ", "UH", 0, "root"), ("(", "PUNCT", "-LRB-", 3, "list"),
         ("sir", "NOUN", "NN", 1, "obj"), (")", "PUNCT", "-RRB-", 1, "punct")]


@pytest.fixture
def files(tmp_path):
    return (write(tmp_path, "gold.conllu", ud(GOLD1, GOLD2)),
            write(tmp_path, "pred.conllu", ud(PRED1, PRED2)))


def test_both_conventions_on_ud(files):
    r, _ = evaluate_parse_files(*files)
    # UD tags in the gold UPOS: punctuation is UPOS PUNCT ('.', '(', ')'), not the PTB tags
    assert r["punctuation"] == "upos-punct"
    # CoNLL 2018: 9 words. Heads right: Dogs do bark Yes ( sir = 6/9. Head and universal
    # label: Dogs do bark Yes = 4/9. Head and full label: do bark Yes = 3/9.
    assert r["conll18"] == pytest.approx({"uas": 600 / 9, "las": 400 / 9, "las_full": 300 / 9,
                                          "words": 9})
    # PTB convention: 6 non-PUNCT words (Dogs do n't bark Yes sir); heads right 5 (not n't);
    # head and full label right 3 (do bark Yes).
    assert r["ptb"] == pytest.approx({"uas": 500 / 6, "las": 50.0, "words": 6})
    # the historical keys are the PTB convention's
    assert r["uas"] == r["ptb"]["uas"] and r["scored_tokens"] == 6
    assert r["uas_with_punct"] == r["conll18"]["uas"] and r["tokens"] == 9
    assert r["root_accuracy"] == 100.0            # bark, Yes: 2/2
    assert r["complete_match"] == 50.0            # S1 (n't wrong) no, S2 yes: 1/2
    assert r["complete_match_with_punct"] == 0.0  # both have a wrong punctuation head
    assert r["labelled"] is True and r["labels_missing"] is None


def test_per_label_table(files):
    r, report = evaluate_parse_files(*files)
    t = r["per_label"]
    # punct: 3 gold ('.', '(', ')'); head right only on '(' = 1/3; label right on '.' and ')'
    # = 2/3; both right on none. Predicted twice ('.', ')'), neither with the right head.
    assert t["punct"] == pytest.approx({"count": 3, "head": 100 / 3, "label": 200 / 3, "las": 0.0,
                                        "predicted": 2, "precision": 0.0, "f1": 0.0})
    assert t["root"] == {"count": 2, "head": 100.0, "label": 100.0, "las": 100.0,
                         "predicted": 2, "precision": 100.0, "f1": 100.0}
    # nsubj:pass is nsubj in the universal table
    assert t["nsubj"]["las"] == 100.0 and "nsubj:pass" not in t
    assert t["advmod"] == {"count": 1, "head": 0.0, "label": 100.0, "las": 0.0,
                           "predicted": 1, "precision": 0.0, "f1": 0.0}
    # never predicted: no precision
    assert t["vocative"] == {"count": 1, "head": 100.0, "label": 0.0, "las": 0.0,
                             "predicted": 0, "precision": None, "f1": 0.0}
    # predicted but never in the gold: a wrong label, not an error
    for name in ("list", "obj"):
        assert t[name] == {"count": 0, "head": None, "label": None, "las": None,
                           "predicted": 1, "precision": 0.0, "f1": 0.0}
    assert sum(v["count"] for v in t.values()) == 9 == sum(v["predicted"] for v in t.values())
    # the text table: by gold frequency, then predicted, then name
    lines = report.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("label "))
    order = [ln.split()[0] for ln in lines[start + 1:]]
    assert order == ["punct", "root", "advmod", "aux", "nsubj", "vocative", "list", "obj"]
    assert lines[start + 1].split() == ["punct", "3", "33.33", "66.67", "0.00", "2", "0.00", "0.00"]
    assert lines[start + 6].split() == ["vocative", "1", "100.00", "0.00", "0.00", "0", "-", "0.00"]


def test_report_names_the_conventions(files):
    _, report = evaluate_parse_files(*files)
    lines = report.splitlines()
    assert lines[0].startswith("UAS 83.33% (punctuation excluded, 6 tokens); with punctuation "
                               "66.67% (9 tokens)")
    assert lines[1].startswith("Penn Treebank convention (punctuation excluded by gold UPOS PUNCT")
    assert "UAS 83.33%  LAS 50.00%  (6 words)" in lines[1]
    assert lines[2].startswith("CoNLL 2018 convention (every word")
    assert "UAS 66.67%  LAS 44.44%  (with subtypes 33.33%; 9 words)" in lines[2]


def test_unlabelled_prediction_has_no_las(tmp_path, files):
    gold, _ = files
    strip = lambda s: [r if r[0] == "range" else (*r[:4], "_") for r in s]  # noqa: E731
    pred = write(tmp_path, "nolabels.conllu", ud(strip(PRED1), strip(PRED2)))
    r, report = evaluate_parse_files(gold, pred)
    assert r["labelled"] is False and r["labels_missing"] == "no labels in the prediction"
    assert r["conll18"]["las"] is None and r["conll18"]["las_full"] is None
    assert r["ptb"]["las"] is None and r["per_label"] is None
    # the unlabelled scores are those of the labelled prediction (same heads)
    assert r["conll18"]["uas"] == pytest.approx(600 / 9)
    assert r["ptb"]["uas"] == pytest.approx(500 / 6)
    assert report.splitlines()[-1] == "LAS not available: no labels in the prediction"
    assert "LAS n/a" in report
    # labels in one sentence only: the '_' of the other is a wrong label, not "no labels".
    # Head and universal label right: Dogs do bark (S1) = 3/9.
    pred = write(tmp_path, "half.conllu", ud(PRED1, strip(PRED2)))
    r, _ = evaluate_parse_files(gold, pred)
    assert r["labelled"] is True and r["conll18"]["las"] == pytest.approx(300 / 9)
    assert r["per_label"]["_"]["predicted"] == 4


def test_ptb_style_file_uses_the_ptb_tags(tmp_path):
    # CoNLL-X with PTB tags in both POS columns: '(' (-LRB-) is scored, ',' is not.
    def cx(rows):
        return "".join(f"{i}\t{w}\t_\t{t}\t{t}\t_\t{h}\t{rel}\t_\t_\n"
                       for i, (w, t, h, rel) in enumerate(rows, 1))
    gold = [("Yes", "UH", 0, "ROOT"), (",", ",", 1, "P"), ("(", "-LRB-", 4, "P"),
            ("sir", "NN", 1, "DEP"), (")", "-RRB-", 4, "P")]
    # ',' and '(' attached wrongly
    pred = [("Yes", "UH", 0, "ROOT"), (",", ",", 4, "P"), ("(", "-LRB-", 1, "P"),
            ("sir", "NN", 1, "NMOD"), (")", "-RRB-", 4, "P")]
    r, report = evaluate_parse_files(write(tmp_path, "g.conll", cx(gold)),
                                     write(tmp_path, "p.conll", cx(pred)))
    assert r["punctuation"] == "ptb-tags" and "by gold POS `` '' , . :" in report
    # scored: Yes ( sir ) = 4, heads right 3 ('(' wrong); labels: sir wrong -> 2/4
    assert r["ptb"] == {"uas": 75.0, "las": 50.0, "words": 4}
    # all 5: heads right 3; head+label 2
    assert r["conll18"] == {"uas": 60.0, "las": 40.0, "las_full": 40.0, "words": 5}


def test_counter_forced_rules_and_old_call():
    gold, pred = [0, 1, 1], [0, 1, 2]
    xpos, upos = ["UH", "-LRB-", "NN"], ["INTJ", "PUNCT", "NOUN"]
    # old call (no upos): PTB tags; '-LRB-' is scored: 2/3 right
    c = AttachmentCounter()
    c.add(gold, pred, xpos)
    assert c.score()["uas"] == pytest.approx(200 / 3) and c.score()["scored_tokens"] == 3
    assert c.score(full=True)["labels_missing"] == "no DEPRELs given"
    # auto with UD upos: '(' excluded: Yes right, sir wrong -> 1/2
    c = AttachmentCounter()
    c.add(gold, pred, xpos, upos=upos)
    assert c.score()["uas"] == 50.0
    c = AttachmentCounter(punct="ptb")
    c.add(gold, pred, xpos, upos=upos)
    assert c.score()["uas"] == pytest.approx(200 / 3)
    with pytest.raises(ValueError):
        AttachmentCounter(punct="nope")
    with pytest.raises(ValueError):
        AttachmentCounter().add(gold, pred, xpos, gold_deprels=["a", "b", "c"])
    # the old score() keys are unchanged
    assert set(c.score()) == {"uas", "uas_with_punct", "root_accuracy", "complete_match",
                              "complete_match_with_punct", "tokens", "scored_tokens",
                              "root_tokens", "sentences"}


def test_universal_deprel():
    assert universal_deprel("nmod:poss") == "nmod"
    assert universal_deprel("acl:relcl:x") == "acl"
    assert universal_deprel("NMOD") == "NMOD"


def test_format_report_can_cut_the_table(files):
    r, _ = evaluate_parse_files(*files)
    text = format_report({k: v for k, v in r.items() if k != "task"}, max_labels=2)
    assert text.splitlines()[-1] == "(6 more labels in --json)"


# ---- bad input: one file:line error each --------------------------------------------------------

def error(gold, pred) -> str:
    with pytest.raises(UserError) as e:
        evaluate_parse_files(gold, pred)
    return str(e.value)


def test_head_out_of_range_names_file_and_line(tmp_path, files):
    gold, _ = files
    # S2 of the prediction starts on line 8 (6 lines of S1, a blank); ')' is its line 4 = 11
    bad = [*PRED2[:3], (")", "PUNCT", "-RRB-", 7, "punct")]
    pred = write(tmp_path, "bad.conllu", ud(PRED1, bad))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:11: HEAD 7 of word 4 is out of range")
    # the same in the gold file
    badgold = write(tmp_path, "badgold.conllu", ud(GOLD1, bad))
    assert error(badgold, files[1]).startswith(f"{badgold}:11: HEAD 7")


def test_cycle_names_file_and_line(tmp_path, files):
    gold, _ = files
    # Yes -> sir -> Yes: a cycle; the sentence's first word row is line 8
    cyc = [("Yes", "INTJ", "UH", 3, "root"), *PRED2[1:3], (")", "PUNCT", "-RRB-", 3, "punct")]
    cyc[2] = ("sir", "NOUN", "NN", 1, "obj")
    pred = write(tmp_path, "cycle.conllu", ud(PRED1, cyc))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:8: not a tree: token 1 is in a cycle (1 -> 3 -> 1)")


def test_cli_json_and_errors(sk, tmp_path, files):
    r = sk("eval", "--task", "parse", *files, "--json")
    assert r.code == 0
    j = json.loads(r.out)
    assert j["conll18"]["las"] == pytest.approx(400 / 9) and j["per_label"]["root"]["count"] == 2
    r = sk("eval", "--task", "parse", *files)
    assert r.code == 0 and "CoNLL 2018 convention" in r.out and "per label" in r.out
    bad = [*PRED2[:3], (")", "PUNCT", "-RRB-", -1, "punct")]
    pred = write(tmp_path, "neg.conllu", ud(PRED1, bad))
    assert_one_line_error(sk("eval", "--task", "parse", files[0], pred), f"{pred}:11: ",
                          "out of range", code=1)
    # words not lining up: still the prediction's line
    moved = [("Cats", *PRED1[0][1:]), *PRED1[1:]]
    pred = write(tmp_path, "moved.conllu", ud(moved, PRED2))
    assert_one_line_error(sk("eval", "--task", "parse", files[0], pred), f"{pred}:1: ",
                          "does not line up", code=1)
