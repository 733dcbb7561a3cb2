"""Tests for structkit.eval.attachment (UAS, root accuracy, complete match) and
structkit.eval.files.evaluate_parse_files. Every expected value is worked out by hand in the
comment next to it."""
from __future__ import annotations

import pytest

from structkit.errors import UserError
from structkit.eval.attachment import PUNCT_TAGS, AttachmentCounter, is_punct, scoring_tags
from structkit.eval.files import evaluate_parse_files



# ----------------------------------------------------------------------------- the counter

# "John saw Mary ."  gold: John<-saw, saw<-ROOT, Mary<-saw, .<-saw
GOLD_A = [2, 0, 2, 2]
POS_A = ["NNP", "VBD", "NNP", "."]


def score(*sentences):
    c = AttachmentCounter()
    for gold, pred, pos in sentences:
        c.add(gold, pred, pos)
    return c.score()


def test_punct_tags_are_the_ptb_convention():
    assert PUNCT_TAGS == {"``", "''", ",", ".", ":"}
    for tag in ["``", "''", ",", ".", ":"]:
        assert is_punct(tag)
    # '#', '$' and brackets are scored like words under Yamada & Matsumoto / Huang & Sagae.
    for tag in ["#", "$", "-LRB-", "-RRB-", "PUNCT", "NN"]:
        assert not is_punct(tag)


def test_perfect_sentence():
    s = score((GOLD_A, GOLD_A, POS_A))
    # 3 scored tokens (all but '.'), all right; 4 tokens, all right; the 1 root right; 1 sentence.
    assert s == {"uas": 100.0, "uas_with_punct": 100.0, "root_accuracy": 100.0,
                 "complete_match": 100.0, "complete_match_with_punct": 100.0,
                 "tokens": 4, "scored_tokens": 3, "root_tokens": 1, "sentences": 1}


def test_only_punctuation_wrong():
    # '.' attached to Mary (3) instead of saw (2): the only error is on punctuation.
    s = score((GOLD_A, [2, 0, 2, 3], POS_A))
    assert s["uas"] == 100.0                       # 3/3 non-punct right
    assert s["uas_with_punct"] == 75.0             # 3/4 tokens right
    assert s["complete_match"] == 100.0            # every non-punct token right: 1/1 sentence
    assert s["complete_match_with_punct"] == 0.0   # '.' is wrong: 0/1
    assert s["root_accuracy"] == 100.0             # saw still predicted root: 1/1
    assert s["scored_tokens"] == 3 and s["tokens"] == 4


def test_word_wrong_punct_excluded_vs_included():
    # John attached to Mary (3) instead of saw (2): a non-punct error.
    s = score((GOLD_A, [3, 0, 2, 2], POS_A))
    assert s["uas"] == pytest.approx(200 / 3)      # 2/3 non-punct right = 66.67
    assert s["uas_with_punct"] == 75.0             # 3/4 tokens right
    assert s["complete_match"] == 0.0
    assert s["complete_match_with_punct"] == 0.0


def test_punct_by_gold_pos_only():
    # Same heads, but now '.' is tagged NN in the gold POS: it is scored like a word, so the
    # error on it counts: 3/4 scored tokens right, no complete match.
    s = score((GOLD_A, [2, 0, 2, 3], ["NNP", "VBD", "NNP", "NN"]))
    assert s["scored_tokens"] == 4
    assert s["uas"] == 75.0
    assert s["complete_match"] == 0.0


def test_root_accuracy():
    # gold: 1<-2, 2<-ROOT, 3<-2. pred: 1<-ROOT, 2<-3, 3<-2 (not a tree; the counter does not care).
    # Gold root tokens: {2}; its predicted head is 3, not 0 -> root accuracy 0/1 = 0.
    # Token 1 wrongly predicted as root does not enter root accuracy (it is recall of roots).
    # UAS: token 1 wrong (0 vs 2), token 2 wrong (3 vs 0), token 3 right -> 1/3.
    s = score(([2, 0, 2], [0, 3, 2], ["NN", "VBZ", "NN"]))
    assert s["root_accuracy"] == 0.0
    assert s["root_tokens"] == 1
    assert s["uas"] == pytest.approx(100 / 3)
    # Two gold roots (several sentences, or a multi-rooted tree), one found: 1/2 = 50.
    s = score(([0, 1, 0], [0, 1, 1], ["VB", "NN", "VB"]))
    assert s["root_tokens"] == 2
    assert s["root_accuracy"] == 50.0


def test_multiple_sentences():
    a = (GOLD_A, [2, 0, 2, 3], POS_A)          # only '.' wrong
    b = (GOLD_A, [3, 0, 2, 2], POS_A)          # John wrong
    c = ([0, 1, 1], [0, 1, 1], ["VB", ",", "NN"])  # "Go , John": all right, ',' is punct
    s = score(a, b, c)
    # tokens 4 + 4 + 3 = 11; scored (non-punct) 3 + 3 + 2 = 8
    assert s["tokens"] == 11 and s["scored_tokens"] == 8 and s["sentences"] == 3
    # scored right 3 + 2 + 2 = 7 of 8 = 87.5
    assert s["uas"] == 87.5
    # all right 3 + 3 + 3 = 9 of 11 = 81.818...
    assert s["uas_with_punct"] == pytest.approx(900 / 11)
    # roots: saw, saw, Go -> all predicted 0: 3/3
    assert s["root_tokens"] == 3 and s["root_accuracy"] == 100.0
    # complete excluding punct: a yes, b no, c yes -> 2/3; including punct: only c -> 1/3
    assert s["complete_match"] == pytest.approx(200 / 3)
    assert s["complete_match_with_punct"] == pytest.approx(100 / 3)


def test_streaming_scores_so_far():
    c = AttachmentCounter()
    c.add(GOLD_A, GOLD_A, POS_A)
    assert c.score()["uas"] == 100.0
    c.add(GOLD_A, [3, 0, 2, 2], POS_A)
    assert c.score()["uas"] == pytest.approx(500 / 6)   # 3 + 2 of 3 + 3 = 83.33


def test_empty_counter_is_zero():
    s = AttachmentCounter().score()
    assert s == {"uas": 0.0, "uas_with_punct": 0.0, "root_accuracy": 0.0,
                 "complete_match": 0.0, "complete_match_with_punct": 0.0,
                 "tokens": 0, "scored_tokens": 0, "root_tokens": 0, "sentences": 0}


def test_all_punct_sentence():
    # A sentence of only punctuation has nothing to score: it is a vacuous complete match,
    # and UAS over 0 scored tokens is 0.0 (not a division by zero).
    s = score(([0, 1], [0, 0], [".", ":"]))
    assert s["scored_tokens"] == 0 and s["uas"] == 0.0
    assert s["uas_with_punct"] == 50.0            # 1/2
    assert s["complete_match"] == 100.0
    assert s["complete_match_with_punct"] == 0.0


@pytest.mark.parametrize("gold,pred,pos", [
    ([2, 0], [2, 0, 1], ["NN", "VB"]),
    ([2, 0, 2], [2, 0], ["NN", "VB", "NN"]),
    ([2, 0], [2, 0], ["NN"]),
])
def test_length_mismatch_is_value_error(gold, pred, pos):
    c = AttachmentCounter()
    with pytest.raises(ValueError):
        c.add(gold, pred, pos)
    assert c.score()["sentences"] == 0   # nothing half-counted


def test_scoring_tags_falls_back_to_coarse():
    assert scoring_tags([".", "_", "NN"], ["PUNCT", ",", "NOUN"]) == [".", ",", "NN"]
    with pytest.raises(ValueError):
        scoring_tags(["NN"], [])


# ----------------------------------------------------------------------------- files

def conllx(*sentences, gap: str = "\n") -> str:
    """CoNLL-X text from sentences of (word, pos, head) rows; head None writes '_'."""
    out = []
    for sent in sentences:
        rows = [f"{i}\t{w}\t_\t{p}\t{p}\t_\t{'_' if h is None else h}\t_\t_\t_\n"
                for i, (w, p, h) in enumerate(sent, 1)]
        out.append("".join(rows))
    return gap.join(out)


# Lines 1-4, blank 5, lines 6-8: "The dog barks ." and "Yes , sir".
S1 = [("The", "DT", 2), ("dog", "NN", 3), ("barks", "VBZ", 0), (".", ".", 3)]
S2 = [("Yes", "UH", 0), (",", ",", 1), ("sir", "NN", 1)]
S3 = [("Go", "VB", 0)]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.fixture
def gold(tmp_path):
    return write(tmp_path, "gold.conll", conllx(S1, S2))


def test_file_perfect_prediction(tmp_path, gold):
    pred = write(tmp_path, "pred.conll", conllx(S1, S2))
    result, report = evaluate_parse_files(gold, pred)
    # 7 tokens, 5 non-punct ('.' and ',' excluded), 2 roots (barks, Yes), 2 sentences
    old_keys = {"task": "parse", "uas": 100.0, "uas_with_punct": 100.0,
                "root_accuracy": 100.0, "complete_match": 100.0,
                "complete_match_with_punct": 100.0, "tokens": 7, "scored_tokens": 5,
                "root_tokens": 2, "sentences": 2}
    assert {k: result[k] for k in old_keys} == old_keys
    # the gold has DEPREL '_' everywhere: no LAS, and the report says why
    assert result["labelled"] is False and result["labels_missing"] == "no labels in the gold"
    assert result["conll18"] == {"uas": 100.0, "las": None, "las_full": None, "words": 7}
    assert result["ptb"] == {"uas": 100.0, "las": None, "words": 5}
    assert result["punctuation"] == "ptb-tags" and result["per_label"] is None
    first = report.splitlines()[0]
    assert first.startswith("UAS 100.00% (punctuation excluded, 5 tokens); "
                            "with punctuation 100.00%")
    assert "root 100.00%" in first and "complete match 100.00%" in first
    assert report.splitlines()[-1] == "LAS not available: no labels in the gold"


def test_file_one_wrong_head(tmp_path, gold):
    # 'sir' attached to ',' (2) instead of 'Yes' (1): still a tree.
    pred = write(tmp_path, "pred.conll", conllx(S1, [S2[0], S2[1], ("sir", "NN", 2)]))
    result, report = evaluate_parse_files(gold, pred)
    assert result["uas"] == 80.0                                 # 4/5 non-punct right
    assert result["uas_with_punct"] == pytest.approx(600 / 7)    # 6/7 = 85.71
    assert result["root_accuracy"] == 100.0                      # barks and Yes: 2/2
    assert result["complete_match"] == 50.0                      # S1 yes, S2 no: 1/2
    assert result["complete_match_with_punct"] == 50.0
    assert report.splitlines()[0] == ("UAS 80.00% (punctuation excluded, 5 tokens); with punctuation 85.71% "
                      "(7 tokens); root 100.00%; complete match 50.00% (with punctuation "
                      "50.00%; 2 sentences)")


def test_file_punct_from_coarse_tag_when_fine_is_missing(tmp_path):
    # POSTAG '_', CPOSTAG '.': the fallback makes '.' punctuation, so its wrong head is excluded.
    g = write(tmp_path, "g.conll", "1\tHi\t_\tUH\t_\t_\t0\t_\t_\t_\n2\t.\t_\t.\t_\t_\t1\t_\t_\t_\n")
    p = write(tmp_path, "p.conll", "1\tHi\t_\tUH\t_\t_\t0\t_\t_\t_\n2\t.\t_\t.\t_\t_\t0\t_\t_\t_\n")
    result, _ = evaluate_parse_files(g, p)
    assert result["scored_tokens"] == 1 and result["uas"] == 100.0       # 1/1
    assert result["uas_with_punct"] == 50.0                               # 1/2


def test_file_predicted_pos_is_ignored(tmp_path, gold):
    # The prediction tags '.' as NN: punctuation is still decided by the gold POS.
    pred = write(tmp_path, "pred.conll", conllx([*S1[:3], (".", "NN", 3)], S2))
    assert evaluate_parse_files(gold, pred)[0]["scored_tokens"] == 5


def error(gold_path, pred_path) -> str:
    with pytest.raises(UserError) as e:
        evaluate_parse_files(gold_path, pred_path)
    return str(e.value)


def test_error_prediction_has_more_sentences(tmp_path, gold):
    pred = write(tmp_path, "pred.conll", conllx(S1, S2, S3))   # S3 starts on line 10
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:10: ")
    assert "more sentences" in msg and gold in msg


def test_error_prediction_has_fewer_sentences(tmp_path, gold):
    pred = write(tmp_path, "pred.conll", conllx(S1))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}: ")            # no line: the file just ends
    assert "ends before" in msg and f"line 6 of {gold}" in msg   # gold S2 starts on line 6


def test_error_token_count(tmp_path, gold):
    pred = write(tmp_path, "pred.conll", conllx(S1, S2[:2]))   # S2 with 2 tokens, line 6
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:6: ")
    assert "2 tokens" in msg and f"line 6 of {gold} has 3" in msg


def test_error_word_mismatch(tmp_path, gold):
    # Two blank lines between the sentences: the prediction's S2 starts on line 7, so its
    # third token is on line 9 while the gold one is on line 8.
    pred = write(tmp_path, "pred.conll",
                 conllx(S1, [S2[0], S2[1], ("madam", "NN", 1)], gap="\n\n"))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:9: ")
    assert "'madam'" in msg and "'sir'" in msg and f"line 8 of {gold}" in msg


def test_error_word_mismatch_conllu_multiword_lines(tmp_path):
    # CoNLL-U with a multiword range in the middle: line 1 I, 2 don't (2-3), 3 do, 4 n't, 5 go.
    def conllu(last):
        return ("1\tI\t_\tPRON\tPRP\t_\t2\t_\t_\t_\n"
                "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
                "2\tdo\t_\tAUX\tVBP\t_\t4\t_\t_\t_\n"
                "3\tn't\t_\tPART\tRB\t_\t4\t_\t_\t_\n"
                f"4\t{last}\t_\tVERB\tVB\t_\t0\t_\t_\t_\n\n")
    g = write(tmp_path, "g.conllu", conllu("go"))
    p = write(tmp_path, "p.conllu", conllu("went"))
    msg = error(g, p)
    assert msg.startswith(f"{p}:5: ") and f"line 5 of {g}" in msg
    # When the words agree the range row does not disturb the scores: no token is punctuation
    # ('n't' is RB), so 4 scored tokens, all right.
    result, _ = evaluate_parse_files(g, g)
    assert result["scored_tokens"] == 4 and result["uas"] == 100.0


def test_error_gold_without_heads(tmp_path):
    g = write(tmp_path, "gold.conll", conllx([(w, p, None) for w, p, _ in S1]))
    pred = write(tmp_path, "pred.conll", conllx(S1))
    msg = error(g, pred)
    assert msg.startswith(f"{g}:1: ") and "gold file has no heads" in msg


def test_error_gold_two_column_file_has_no_heads(tmp_path):
    g = write(tmp_path, "gold.txt", "".join(f"{w}\t{p}\n" for w, p, _ in S1))
    pred = write(tmp_path, "pred.conll", conllx(S1))
    msg = error(g, pred)
    assert msg.startswith(f"{g}:1: ") and "gold file has no heads" in msg


def test_error_prediction_without_heads(tmp_path, gold):
    pred = write(tmp_path, "pred.conll", conllx(S1, [(w, p, None) for w, p, _ in S2]))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:6: ") and "no heads" in msg and f"line 6 of {gold}" in msg


def test_error_bad_head_in_prediction_is_the_readers(tmp_path, gold):
    # HEAD 'x' on line 2 (token 2 of S1): the reader's own error, at the prediction's line.
    pred = write(tmp_path, "pred.conll", conllx([S1[0], ("dog", "NN", "x"), *S1[2:]], S2))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:2: HEAD 'x'")
    # HEAD 9 on line 8 (token 3 of S2, which has 3 tokens): out of range.
    pred = write(tmp_path, "pred.conll", conllx(S1, [S2[0], S2[1], ("sir", "NN", 9)]))
    msg = error(gold, pred)
    assert msg.startswith(f"{pred}:8: HEAD 9") and "out of range" in msg


def test_error_missing_file(tmp_path, gold):
    missing = str(tmp_path / "nope.conll")
    assert error(gold, missing).startswith(f"{missing}: no such file")


# ----------------------------------------------------------------------------- corpus

@pytest.mark.corpus
def test_corpus_ptb_dep_test_against_itself(corpus):
    path = corpus("ptb-dep/test.conll")
    # Count independently of the reader: token rows, sentences, and rows whose POSTAG
    # (5th column; CPOSTAG when it is '_') is not a PTB punctuation tag.
    tokens = sentences = non_punct = 0
    in_sentence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) < 10:
            in_sentence = False
            continue
        tokens += 1
        sentences += not in_sentence
        in_sentence = True
        tag = cols[4] if cols[4] != "_" else cols[3]
        non_punct += tag not in ("``", "''", ",", ".", ":")
    result, report = evaluate_parse_files(str(path), str(path))
    for key in ("uas", "uas_with_punct", "root_accuracy", "complete_match",
                "complete_match_with_punct"):
        assert result[key] == 100.0, key
    assert result["tokens"] == tokens == 9615          # SOURCES.md: 413 sentences / 9,615
    assert result["sentences"] == sentences == 413
    assert result["scored_tokens"] == non_punct < tokens
    assert report.startswith(f"UAS 100.00% (punctuation excluded, {non_punct} tokens)")
