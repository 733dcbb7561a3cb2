"""Phrase evaluation must count exactly as the CoNLL conlleval script does.

The hand-worked cases always run. The cross-check against the real Perl script runs only when
CONLLEVAL_PL names a copy of it (the script is not shipped with structkit).
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess

import pytest

from structkit.eval.accuracy import token_accuracy
from structkit.eval.chunks import ChunkCounter, conlleval
from structkit.spans import chunks, split_tag


def counts(score):
    """Compact view of a ChunkScore for assertions."""
    return (score.tokens, score.correct_tags, score.found_correct, score.found_guessed,
            score.correct_chunks)


def type_counts(score):
    return {k: (t.found_correct, t.found_guessed, t.correct) for k, t in score.per_type.items()}


# ---------------------------------------------------------------- hand-worked cases


def test_split_tag():
    assert split_tag("O") == ("O", "")
    assert split_tag("B-NP") == ("B", "NP")
    # Only the first '-' separates prefix from type.
    assert split_tag("I-PER-X") == ("I", "PER-X")
    # conlleval tests the type for Perl truth: "0" counts as no type.
    assert split_tag("B-0") == ("B", "")


def test_iob1_i_after_o_starts_a_phrase():
    gold = [["O", "I-NP", "I-NP", "O"]]
    pred = [["O", "B-NP", "I-NP", "O"]]
    # O -> I starts a phrase (IOB1), so gold has NP[1,3); the IOB2 guess has the same span.
    # tokens 4; tags equal except I-NP/B-NP at 1 -> 3 correct; 1 gold, 1 found, 1 correct.
    s = conlleval(gold, pred)
    assert counts(s) == (4, 3, 1, 1, 1)
    assert type_counts(s) == {"NP": (1, 1, 1)}
    assert s.accuracy == 75.0 and s.precision == 100.0 and s.recall == 100.0 and s.f1 == 100.0
    assert chunks(gold[0]) == [("NP", 1, 3)]


def test_type_change_inside_a_run():
    gold = [["I-NP", "I-VP"]]
    pred = [["I-NP", "I-NP"]]
    # Gold: a type change under I starts a new phrase and ends the old -> NP[0,1), VP[1,2).
    # Guess: one NP[0,2). Both start NP at 0, but at 1 gold ends and the guess does not, so
    # the NP is not correct. tokens 2, tags correct 1; gold 2, found 1, correct 0.
    s = conlleval(gold, pred)
    assert counts(s) == (2, 1, 2, 1, 0)
    assert type_counts(s) == {"NP": (1, 1, 0), "VP": (1, 0, 0)}
    assert chunks(gold[0]) == [("NP", 0, 1), ("VP", 1, 2)]
    assert chunks(pred[0]) == [("NP", 0, 2)]


def test_b_after_i_of_another_type():
    gold = [["B-NP", "I-NP", "B-VP"]]
    pred = [["B-NP", "I-NP", "I-VP"]]
    # Gold: B after I ends NP and starts VP. Guess: I-VP after I-NP starts VP by the type
    # change. Both are NP[0,2), VP[2,3): 2 gold, 2 found, 2 correct; tags correct 2 (B/I at 2).
    s = conlleval(gold, pred)
    assert counts(s) == (3, 2, 2, 2, 2)
    assert type_counts(s) == {"NP": (1, 1, 1), "VP": (1, 1, 1)}
    assert chunks(gold[0]) == chunks(pred[0]) == [("NP", 0, 2), ("VP", 2, 3)]


def test_sentence_boundary_splits_phrases():
    gold = [["B-NP", "I-NP"], ["I-NP", "O"]]
    # The boundary acts as O, so the I-NP opening sentence 2 starts a new phrase: 2 phrases,
    # both correct when predicted identically; 4 tokens (the boundary is not one).
    s = conlleval(gold, gold)
    assert counts(s) == (4, 4, 2, 2, 2)
    # Without the boundary the same tags are a single phrase.
    joined = conlleval([["B-NP", "I-NP", "I-NP", "O"]], [["B-NP", "I-NP", "I-NP", "O"]])
    assert counts(joined) == (4, 4, 1, 1, 1)


def test_phrase_at_boundary_is_closed_before_next_sentence():
    # Gold NP[0,2) ends at the boundary in both; the guess continues no phrase across it,
    # so sentence 2's I-NP vs B-NP both start a new NP[0,1): 2 gold, 2 found, 2 correct.
    gold = [["B-NP", "I-NP"], ["I-NP"]]
    pred = [["B-NP", "I-NP"], ["B-NP"]]
    s = conlleval(gold, pred)
    assert counts(s) == (3, 2, 2, 2, 2)


def test_iob1_and_iob2_score_the_same():
    # Gold phrases NP[0,2), NP[2,3), VP[4,5); predicted NP[0,3), VP[4,5).
    gold2 = ["B-NP", "I-NP", "B-NP", "O", "B-VP"]
    gold1 = ["I-NP", "I-NP", "B-NP", "O", "I-VP"]
    pred2 = ["B-NP", "I-NP", "I-NP", "O", "B-VP"]
    pred1 = ["I-NP", "I-NP", "I-NP", "O", "I-VP"]
    # Both NPs start at 0, but gold ends at 2 (B after I) and the guess does not -> wrong;
    # VP matches. 3 gold, 2 found, 1 correct, in every combination of encodings.
    for g in (gold1, gold2):
        for p in (pred1, pred2):
            s = conlleval([g], [p])
            assert counts(s)[2:] == (3, 2, 1), (g, p)
            assert type_counts(s) == {"NP": (2, 1, 0), "VP": (1, 1, 1)}
        assert chunks(g) == [("NP", 0, 2), ("NP", 2, 3), ("VP", 4, 5)]


def test_b_i_gold_vs_b_b_guess():
    gold = [["B-X", "I-X"]]
    pred = [["B-X", "B-X"]]
    # Both start X at 0; at 1 the guess ends (B then B) and gold does not -> not correct.
    # The guess then starts a second X. 1 gold, 2 found, 0 correct; tags correct 1.
    s = conlleval(gold, pred)
    assert counts(s) == (2, 1, 1, 2, 0)
    assert type_counts(s) == {"X": (1, 2, 0)}
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)


def test_ioe_and_bracket_tags():
    # IOE: E then E starts a new phrase; I after O starts one.
    assert chunks(["I-NP", "E-NP", "E-NP", "O", "I-VP", "E-VP"]) == [
        ("NP", 0, 2), ("NP", 2, 3), ("VP", 4, 6)]
    # Bracket tags are one-token phrases.
    assert chunks(["[-NP", "]-NP", "O"]) == [("NP", 0, 1), ("NP", 1, 2)]


def test_empty_input():
    for gold in ([], [[]], [[], []]):
        s = conlleval(gold, gold)
        assert counts(s) == (0, 0, 0, 0, 0) and s.per_type == {}
        assert (s.accuracy, s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0, 0.0)
        # conlleval prints no accuracy line when there are no tokens.
        assert s.format_report() == (
            "processed 0 tokens with 0 phrases; found: 0 phrases; correct: 0.\n")
    assert chunks([]) == []


def test_length_mismatch_is_value_error():
    with pytest.raises(ValueError, match="sentence 1"):
        conlleval([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="predicted"):
        conlleval([["O"], ["O"]], [["O"]])


def test_report_and_dict():
    gold = [["B-NP", "I-NP", "O", "B-VP"]]
    pred = [["B-NP", "I-NP", "O", "B-NP"]]
    # NP[0,2) correct; gold VP[3,4) missed; guessed NP[3,4) wrong. tokens 4, tags correct 3.
    # Overall P = R = 1/2. NP: P 1/2, R 1/1, F 66.67, 2 guessed. VP: all 0, 0 guessed.
    s = conlleval(gold, pred)
    assert s.format_report() == (
        "processed 4 tokens with 2 phrases; found: 2 phrases; correct: 1.\n"
        "accuracy:  75.00%; precision:  50.00%; recall:  50.00%; FB1:  50.00\n"
        "               NP: precision:  50.00%; recall: 100.00%; FB1:  66.67  2\n"
        "               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n")
    d = s.to_dict()
    assert d["tokens"] == 4 and d["phrases_gold"] == 2 and d["phrases_predicted"] == 2
    assert d["correct_phrases"] == 1 and d["accuracy"] == 75.0 and d["f1"] == 50.0
    assert d["per_type"]["NP"] == {"precision": 50.0, "recall": 100.0,
                                   "f1": pytest.approx(200 / 3), "gold": 1,
                                   "predicted": 2, "correct": 1}
    assert d["per_type"]["VP"]["gold"] == 1 and d["per_type"]["VP"]["predicted"] == 0


def test_streaming_counter_matches_batch():
    gold = [["B-NP", "I-NP"], ["O", "B-VP"], ["I-NP"]]
    pred = [["B-NP", "O"], ["O", "B-VP"], ["I-NP"]]
    c = ChunkCounter()
    for g, p in zip(gold, pred):
        c.add_sentence(g, p)
    assert c.score() == conlleval(gold, pred)
    # Scoring must not consume or alter state. Sentence 1: gold NP[0,2), guess NP[0,1) (B then
    # O ends it early) -> wrong; sentence 2: VP right; sentence 3: NP right. tokens 5, tags
    # correct 4 (only I-NP/O differs); 3 gold, 3 found, 2 correct.
    first = c.score()
    assert counts(first) == (5, 4, 3, 3, 2)
    assert type_counts(first) == {"NP": (2, 2, 1), "VP": (1, 1, 1)}
    assert c.score() == first
    # A sentence that leaves a phrase "correct so far" after its boundary: the '.' prefix is
    # exempt from the type-change end rule, so neither the boundary O nor anything else ends
    # X[0,2). score() must credit it (conlleval's end-of-input rule, under the type of the
    # last token read: the boundary's "") without doing so for good: scored twice, still 1.
    gold.append(["B-X", ".-X"])
    pred.append(["B-X", ".-X"])
    c.add_sentence(gold[-1], pred[-1])
    second = c.score()
    assert counts(second) == (7, 6, 4, 4, 3)
    assert type_counts(second) == {"NP": (2, 2, 1), "VP": (1, 1, 1), "X": (1, 1, 0),
                                   "": (0, 0, 1)}
    assert c.score() == second == conlleval(gold, pred)
    # The next sentence's B-X (after the boundary O, no end rule fires) then starts a new
    # match, so the still-open X is never credited; the new X is, at its boundary (B->O).
    # tokens 8, tags 7, 5 gold, 5 found, 3 correct: X has 2 gold, 2 found, 1 correct.
    gold.append(["B-X"])
    pred.append(["B-X"])
    c.add_sentence(gold[-1], pred[-1])
    third = c.score()
    assert counts(third) == (8, 7, 5, 5, 3)
    assert type_counts(third) == {"NP": (2, 2, 1), "VP": (1, 1, 1), "X": (2, 2, 1)}
    assert third == conlleval(gold, pred)
    # Scores handed out earlier are snapshots, untouched by later sentences.
    assert counts(first) == (5, 4, 3, 3, 2) and counts(second) == (7, 6, 4, 4, 3)
    assert first == conlleval(gold[:3], pred[:3]) and second == conlleval(gold[:4], pred[:4])


# ---------------------------------------------------------------- conlleval's rules, one by one
#
# conlleval.pl (2004-01-26), with P/T the previous/current prefix and PT/T' their types:
#   endOfChunk(P, T):   B->B, B->O, I->B, I->O, E->E, E->I, E->O; P not O and not '.' and PT
#                       differs from the type; P is '[' or ']'.
#   startOfChunk(P, T): B->B, I->B, O->B, O->I, E->E, E->I, O->E; T not O and not '.' and the
#                       type differs from PT; T is '[' or ']'.
# Nothing else starts or ends a phrase: B->I, I->I, I->E, B->E and (quirk) E->B continue one.
# A phrase is correct when gold and guess start it at the same token with the same type and
# the *next end* found while matching comes at the same token in both, with equal types; when
# a new matching start comes first (no end fired), the old phrase is silently dropped.
# Every row below was worked by hand from these rules (and agrees with conlleval.pl itself).
# counts = (tokens, correct tags, gold phrases, guessed phrases, correct phrases);
# per_type = {type: (gold, guessed, correct)}; spans = chunks() of gold, then of the guess.
# Rows with guess None score the gold against itself. Unless the row says otherwise, the
# first token follows the start-of-input O and the last is followed by the boundary O.

RULE_CASES = [
    # ---- end rules, one per row. Gold = guess and all tokens one type, so only the named
    # rule can end the first phrase; without it the next start would drop that phrase and
    # correct would fall by one.
    pytest.param(
        # 0: B-X after O starts X. 1: B->B ends it and starts X. Boundary: B->O ends.
        ["B-X", "B-X"], None, (2, 2, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 1, 2)], None, id="end-B-B/start-B-after-B"),
    pytest.param(
        # 0: starts X. 1: B->O ends it. 2: O->I starts X. Boundary: I->O ends.
        ["B-X", "O", "I-X"], None, (3, 3, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 2, 3)], None, id="end-B-O"),
    pytest.param(
        # 0: O->I starts X. 1: I->B ends it and starts X (B after I). Boundary: B->O.
        ["I-X", "B-X"], None, (2, 2, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 1, 2)], None, id="end-I-B/start-B-after-I"),
    pytest.param(
        # 0: O->I starts X. 1: I->O ends it. 2: O->I starts X. Boundary: I->O.
        ["I-X", "O", "I-X"], None, (3, 3, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 2, 3)], None, id="end-I-O/start-I-after-O"),
    pytest.param(
        # 0: O->E starts X. 1: E->E ends it and starts X. Boundary: E->O.
        ["E-X", "E-X"], None, (2, 2, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 1, 2)], None, id="end-E-E/start-E-after-E"),
    pytest.param(
        # 0: O->E starts X. 1: E->I ends it and I after E starts X (same type, so the
        # type-change rule cannot do it). 2: E after I neither ends nor starts. Boundary: E->O.
        # X[0,1), X[1,3): 2 phrases, both correct.
        ["E-X", "I-X", "E-X"], None, (3, 3, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 1, 3)], None, id="end-E-I/start-I-after-E-same-type"),
    pytest.param(
        # 0: O->E starts X. 1: E->O ends it. 2: O->E starts X. Boundary: E->O.
        ["E-X", "O", "E-X"], None, (3, 3, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 2, 3)], None, id="end-E-O/start-E-after-O"),
    pytest.param(
        # 0: O->I starts X. 1: I->I has no rule, but the type changes (X -> Y): ends X,
        # starts Y. Boundary: I->O.
        ["I-X", "I-Y"], None, (2, 2, 2, 2, 2), {"X": (1, 1, 1), "Y": (1, 1, 1)},
        [("X", 0, 1), ("Y", 1, 2)], None, id="end-start-type-change-in-I-run"),
    pytest.param(
        # Untyped '[' (type "" like O, so no type change anywhere). 0: '[' starts. 1: prev
        # '[' ends, '[' starts. Boundary: prev '[' ends. Two one-token phrases, both correct.
        ["[", "["], None, (2, 2, 2, 2, 2), {"": (2, 2, 2)},
        [("", 0, 1), ("", 1, 2)], None, id="end-after-[/start-["),
    pytest.param(
        # As above with ']'.
        ["]", "]"], None, (2, 2, 2, 2, 2), {"": (2, 2, 2)},
        [("", 0, 1), ("", 1, 2)], None, id="end-after-]/start-]"),
    # ---- start rules not isolated above: untyped tags after O, where the type-change rule
    # (type "" = O's type) cannot start anything. Each is one phrase, ended at the boundary
    # by B->O, I->O and E->O respectively.
    pytest.param(["O", "B"], None, (2, 2, 1, 1, 1), {"": (1, 1, 1)},
                 [("", 1, 2)], None, id="start-B-after-O-untyped"),
    pytest.param(["O", "I"], None, (2, 2, 1, 1, 1), {"": (1, 1, 1)},
                 [("", 1, 2)], None, id="start-I-after-O-untyped"),
    pytest.param(["O", "E"], None, (2, 2, 1, 1, 1), {"": (1, 1, 1)},
                 [("", 1, 2)], None, id="start-E-after-O-untyped"),
    # ---- transitions that are no rule at all
    pytest.param(
        # O after O: nothing. Tokens and tags still count.
        ["O", "O"], None, (2, 2, 0, 0, 0), {}, [], None, id="O-only"),
    pytest.param(
        # 0: starts X. B->I, I->E: no end, no start (same type). Boundary: E->O. One phrase.
        ["B-X", "I-X", "E-X"], None, (3, 3, 1, 1, 1), {"X": (1, 1, 1)},
        [("X", 0, 3)], None, id="B-I-E-one-phrase"),
    pytest.param(
        # Quirk: E->B is neither an end nor a start rule, so with the same type E-X B-X is
        # ONE phrase X[0,2) (0: O->E starts; boundary: B->O ends).
        ["E-X", "B-X"], None, (2, 2, 1, 1, 1), {"X": (1, 1, 1)},
        [("X", 0, 2)], None, id="B-after-E-same-type-continues"),
    # ---- whole runs in each encoding, with guesses that differ
    pytest.param(
        # IOB1 gold: 0 O->I starts NP; 2 I->B ends, starts NP; 4 I->O ends; 5 O->I starts
        # VP; 6 I-VP -> I-NP type change ends VP, starts NP; boundary I->O.
        # Gold NP[0,2) NP[2,4) VP[5,6) NP[6,7); the IOB2 guess has the same phrases (its 6 is
        # B->B). All 4 match; tags differ at 0, 5, 6 (I vs B) -> 4 of 7 correct.
        ["I-NP", "I-NP", "B-NP", "I-NP", "O", "I-VP", "I-NP"],
        ["B-NP", "I-NP", "B-NP", "I-NP", "O", "B-VP", "B-NP"],
        (7, 4, 4, 4, 4), {"NP": (3, 3, 3), "VP": (1, 1, 1)},
        [("NP", 0, 2), ("NP", 2, 4), ("VP", 5, 6), ("NP", 6, 7)],
        [("NP", 0, 2), ("NP", 2, 4), ("VP", 5, 6), ("NP", 6, 7)], id="IOB1-run-vs-IOB2"),
    pytest.param(
        # IOB2 gold PER[0,2) LOC[3,4) LOC[4,6); guess PER[0,3) LOC[3,6).
        # PER: gold ends at 2 (I->O), guess does not (I->I) -> wrong. LOC: both start at 3,
        # gold ends at 4 (B->B), guess does not (B->I) -> wrong. 3 gold, 2 found, 0 correct;
        # tags differ at 2 (O/I) and 4 (B/I) -> 4 of 6.
        ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"],
        ["B-PER", "I-PER", "I-PER", "B-LOC", "I-LOC", "I-LOC"],
        (6, 4, 3, 2, 0), {"PER": (1, 1, 0), "LOC": (2, 1, 0)},
        [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6)], [("PER", 0, 3), ("LOC", 3, 6)],
        id="IOB2-run"),
    pytest.param(
        # IOE gold: 0 O->I starts NP; 1 I->E continues; 2 E->I ends, starts NP; 3 continues;
        # 4 E->O ends; 5 O->E starts VP; boundary E->O. NP[0,2) NP[2,4) VP[5,6).
        # Guess: one NP[0,4) (I I I E), VP[5,6). NP at 0: at 2 gold ends, guess does not ->
        # wrong; VP right. Tags differ at 1 (E/I) -> 5 of 6. 3 gold, 2 found, 1 correct.
        ["I-NP", "E-NP", "I-NP", "E-NP", "O", "E-VP"],
        ["I-NP", "I-NP", "I-NP", "E-NP", "O", "E-VP"],
        (6, 5, 3, 2, 1), {"NP": (2, 1, 0), "VP": (1, 1, 1)},
        [("NP", 0, 2), ("NP", 2, 4), ("VP", 5, 6)], [("NP", 0, 4), ("VP", 5, 6)],
        id="IOE-run"),
    pytest.param(
        # I after E of another type: gold 0 O->E starts NP; 1 E->I ends, starts VP; 2 I->E
        # continues; boundary. NP[0,1) VP[1,3). Guess E-NP E-VP E-VP: NP[0,1) VP[1,2)
        # VP[2,3) (E->E at 2). NP right; VP at 1: guess ends at 2, gold does not -> wrong.
        # Tags differ at 1 (I/E) -> 2 of 3. 2 gold, 3 found, 1 correct.
        ["E-NP", "I-VP", "E-VP"], ["E-NP", "E-VP", "E-VP"],
        (3, 2, 2, 3, 1), {"NP": (1, 1, 1), "VP": (1, 2, 0)},
        [("NP", 0, 1), ("VP", 1, 3)], [("NP", 0, 1), ("VP", 1, 2), ("VP", 2, 3)],
        id="I-after-E-other-type"),
    # ---- the '.' prefix: exempt from both type-change rules
    pytest.param(
        # '.-X' after O: no explicit rule, and '.' may not start by type change -> no phrase
        # in gold; the guess B-X is X[0,1). Tag differs -> 0 of 1. 0 gold, 1 found, 0 correct.
        [".-X"], ["B-X"], (1, 0, 0, 1, 0), {"X": (0, 1, 0)},
        [], [("X", 0, 1)], id="dot-prefix-does-not-start"),
    pytest.param(
        # Plain '.' (type ""). 0: starts X. 1: B->. has no rule but the type changes (X ->
        # "") and B is not exempt: ends X; '.' does not start. 2: prev '.' is exempt from the
        # end rule; I after '.' is no rule, but type "" -> X starts X. X[0,1), X[2,3).
        ["B-X", ".", "I-X"], None, (3, 3, 2, 2, 2), {"X": (2, 2, 2)},
        [("X", 0, 1), ("X", 2, 3)], None, id="plain-dot-between-phrases"),
    pytest.param(
        # 0: starts X. 1: '.-X' same type: no end, no start, X continues. 2: prev '.' is
        # exempt, so X -> Y does NOT end X, but I-Y starts Y by type change. With gold =
        # guess the match of X is still open when Y starts, so X is dropped: only Y (ended
        # at the boundary, I->O) is credited. 2 gold, 2 found, 1 correct.
        ["B-X", ".-X", "I-Y"], None, (3, 3, 2, 2, 1), {"X": (1, 1, 0), "Y": (1, 1, 1)},
        [("X", 0, 2), ("Y", 2, 3)], None, id="dot-exempt-from-end-type-change"),
    pytest.param(
        # 0: starts X; 1: X continues over '.-X'. The boundary O does not end it (prev '.'
        # exempt, no explicit rule), so the match is still open at end of input and
        # conlleval's final rule credits it under the type of the last token read, the
        # boundary's "": X has 1 gold, 1 found, 0 correct; "" has 1 correct.
        ["B-X", ".-X"], None, (2, 2, 1, 1, 1), {"X": (1, 1, 0), "": (0, 0, 1)},
        [("X", 0, 2)], None, id="dot-keeps-phrase-open-at-sentence-end"),
    # ---- bracket tags
    pytest.param(
        # Gold: '[' starts NP, 1: prev '[' ends, ']' starts NP, 2: prev ']' ends. NP[0,1)
        # NP[1,2). Guess NP[0,2). Both start NP at 0; at 1 gold ends, guess (B->I) does not
        # -> wrong. Tags differ at 0 and 1 -> 1 of 3. 2 gold, 1 found, 0 correct.
        ["[-NP", "]-NP", "O"], ["B-NP", "I-NP", "O"], (3, 1, 2, 1, 0), {"NP": (2, 1, 0)},
        [("NP", 0, 1), ("NP", 1, 2)], [("NP", 0, 2)], id="brackets-vs-IOB2"),
    pytest.param(
        # 0: O->I starts X. 1: I->[ ends nothing (same type) but '[' starts X, so the first
        # match is dropped. 2: prev '[' ends X (credited); I after '[' starts nothing, so
        # token 2 is in no phrase. 2 gold, 2 found, 1 correct.
        ["I-X", "[-X", "I-X"], None, (3, 3, 2, 2, 1), {"X": (2, 2, 1)},
        [("X", 0, 1), ("X", 1, 2)], None, id="bracket-inside-I-run"),
]


@pytest.mark.parametrize("gold, pred, want_counts, want_types, gold_spans, pred_spans",
                         RULE_CASES)
def test_conlleval_rules_hand_worked(gold, pred, want_counts, want_types, gold_spans,
                                     pred_spans):
    if pred is None:
        pred = gold
    if pred_spans is None:
        pred_spans = gold_spans
    s = conlleval([gold], [pred])
    assert counts(s) == want_counts
    assert type_counts(s) == want_types
    assert chunks(gold) == gold_spans
    assert chunks(pred) == pred_spans
    # The streaming counter, fed the same sentence, agrees.
    c = ChunkCounter()
    c.add_sentence(gold, pred)
    assert c.score() == s


def test_ioe_phrase_open_at_sentence_end():
    # Sentence 1, gold I-X E-X I-X: 0 O->I starts X; 1 continues; 2 E->I ends and starts X,
    # which is still open at the sentence end and closed by the boundary (I->O): X[0,2),
    # X[2,3). Guess I-X I-X I-X: X[0,3), also closed by the boundary. X at 0: gold ends at 2,
    # guess does not -> wrong.
    # Sentence 2, gold E-X after the boundary: O->E starts X; guess I-X: O->I starts X; the
    # boundary ends both (E->O, I->O) -> correct. Had the first guess phrase run on into
    # sentence 2, it would not have started there and the match would be lost.
    # tokens 4; tags differ at s1[1] (E/I) and s2[0] (E/I) -> 2; 3 gold, 2 found, 1 correct.
    gold = [["I-X", "E-X", "I-X"], ["E-X"]]
    pred = [["I-X", "I-X", "I-X"], ["I-X"]]
    s = conlleval(gold, pred)
    assert counts(s) == (4, 2, 3, 2, 1)
    assert type_counts(s) == {"X": (3, 2, 1)}


def test_spans_agree_with_counts_for_well_formed_tags():
    # With B/I/E/O tags only, conlleval's counts are exactly span matching on chunks().
    rng = random.Random(7)
    tags = [f"{p}-{t}" for p in "BIE" for t in ("A", "B")] + ["O"]
    for _ in range(300):
        n = rng.randint(1, 8)
        g = [rng.choice(tags) for _ in range(n)]
        p = [rng.choice(tags) for _ in range(n)]
        s = conlleval([g], [p])
        gs, ps = chunks(g), chunks(p)
        assert (s.found_correct, s.found_guessed) == (len(gs), len(ps))
        assert s.correct_chunks == len(set(gs) & set(ps)), (g, p)


def test_token_accuracy():
    gold = [["D", "N"], ["V"]]
    pred = [["D", "V"], ["V"]]
    words = [["the", "zyx"], ["runs"]]
    r = token_accuracy(gold, pred)
    assert r == {"accuracy": pytest.approx(200 / 3), "tokens": 3, "correct": 2}
    r = token_accuracy(gold, pred, known_words={"the", "runs"}, words=words)
    # Only "zyx" is unseen, and it is mistagged.
    assert (r["unknown_tokens"], r["unknown_correct"], r["unknown_accuracy"]) == (1, 0, 0.0)
    assert token_accuracy([], [])["accuracy"] == 0.0
    with pytest.raises(ValueError):
        token_accuracy([["D"]], [["D", "N"]])


# ---------------------------------------------------------------- cross-check with Perl

N_RANDOM_CASES = 200
TYPES = ("NP", "VP", "PER-X")  # a hyphenated type checks the first-'-' split


def _phrase_tags(rng, n, scheme):
    """Random phrases over n tokens, written in IOB1 or IOB2."""
    tags, prev_type = [], None
    i = 0
    while i < n:
        if rng.random() < 0.3:
            tags.append("O")
            prev_type = None
            i += 1
            continue
        kind = rng.choice(TYPES)
        length = min(n - i, rng.randint(1, 3))
        # IOB1 uses B- only when the phrase follows one of the same type.
        first = "B" if scheme == "iob2" or prev_type == kind else "I"
        tags += [f"{first}-{kind}"] + [f"I-{kind}"] * (length - 1)
        prev_type = kind
        i += length
    return tags


def _random_tags(rng, n, scheme):
    if scheme in ("iob1", "iob2"):
        return _phrase_tags(rng, n, scheme)
    if scheme == "mixed":  # any B/I/O sequence, ill-formed ones included
        return [rng.choice(["O", *(f"{p}-{t}" for p in "BI" for t in TYPES)])
                for _ in range(n)]
    # "wild": IOE, brackets, '.', untyped and "0"-typed tags exercise the rarer rules
    pool = ["O", "B", "I", "E", "[", "]", ".", "B-0", "I-NP", "E-NP"] + [
        f"{p}-{t}" for p in ("B", "I", "E", "[", "]", ".") for t in TYPES]
    return [rng.choice(pool) for _ in range(n)]


def _perturb(rng, tags, scheme):
    out = list(tags)
    for j in range(len(out)):
        if rng.random() < 0.25:
            out[j] = _random_tags(rng, 1, "mixed" if scheme != "wild" else "wild")[0]
    return out


def _random_case(rng):
    scheme = rng.choice(["iob1", "iob2", "mixed", "wild"])
    gold, pred = [], []
    for _ in range(rng.randint(1, 4)):
        n = rng.choice([0, 1, 1, 2]) if rng.random() < 0.3 else rng.randint(1, 10)
        g = _random_tags(rng, n, scheme)
        gold.append(g)
        if rng.random() < 0.6:
            pred.append(_perturb(rng, g, scheme))
        else:
            pred.append(_random_tags(rng, n, rng.choice(["iob1", "iob2", "mixed", scheme])))
    return gold, pred


def _run_perl(script, gold, pred):
    # One token per line, blank line after every sentence, as in CoNLL files.
    lines = []
    for g, p in zip(gold, pred):
        lines += [f"w{j} {a} {b}" for j, (a, b) in enumerate(zip(g, p))]
        lines.append("")
    out = subprocess.run(["perl", script], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True)
    return out.stdout


_HEAD = re.compile(r"processed (\d+) tokens with (\d+) phrases; "
                   r"found: (\d+) phrases; correct: (\d+)\.")
_ACC = re.compile(r"accuracy: +([\d.]+)%")
_TYPE = re.compile(r"^ *(.*?): precision: +([\d.]+)%; recall: +([\d.]+)%; "
                   r"FB1: +[\d.]+  (\d+)$")


def _parse_perl(text):
    """Exact integers from conlleval's report: totals, tag accuracy count, per-type guessed."""
    lines = text.splitlines()
    tokens, found_c, found_g, correct = map(int, _HEAD.match(lines[0]).groups())
    acc = _ACC.match(lines[1]) if len(lines) > 1 else None
    # Percentages have two decimals; with so few tokens the integer behind them is unique.
    correct_tags = round(float(acc.group(1)) * tokens / 100) if acc else 0
    per_type = {}
    for line in lines[1 + (acc is not None):]:
        name, prec, rec, guessed = _TYPE.match(line).groups()
        per_type[name] = (float(prec), float(rec), int(guessed))
    return (tokens, correct_tags, found_c, found_g, correct), per_type


@pytest.mark.skipif(not os.environ.get("CONLLEVAL_PL"),
                    reason="set CONLLEVAL_PL to a copy of conlleval.pl to cross-check with it")
def test_matches_conlleval_perl():
    script = os.environ["CONLLEVAL_PL"]
    if not os.path.isfile(script) or shutil.which("perl") is None:
        pytest.skip(f"CONLLEVAL_PL={script!r} is not a file, or perl is not installed")
    rng = random.Random(20240101)
    matched, failures = 0, []
    for case in range(N_RANDOM_CASES):
        gold, pred = _random_case(rng)
        ours = conlleval(gold, pred)
        report = _run_perl(script, gold, pred)
        totals, perl_types = _parse_perl(report)
        # Gold-side per-type phrase counts are printed by conlleval only for the guessed
        # column, so score gold against itself to read them off exactly.
        _, gold_types = _parse_perl(_run_perl(script, gold, gold))
        perl_per_type = {}
        for name, (prec, rec, guessed) in perl_types.items():
            gold_n = gold_types.get(name, (0, 0, 0))[2]
            # correct = precision * guessed / 100 (or via recall when nothing was guessed).
            if guessed:
                corr = round(prec * guessed / 100)
            else:
                corr = round(rec * gold_n / 100) if gold_n else 0
            perl_per_type[name] = (gold_n, guessed, corr)
        our_per_type = {k: v for k, v in type_counts(ours).items() if v[0] or v[1]}
        problems = []
        if counts(ours) != totals:
            problems.append(f"totals ours={counts(ours)} perl={totals}")
        if our_per_type != perl_per_type:
            problems.append(f"per-type ours={our_per_type} perl={perl_per_type}")
        if ours.format_report() != report:
            problems.append(f"report ours=\n{ours.format_report()}perl=\n{report}")
        if problems:
            failures.append(f"case {case}: gold={gold} pred={pred}\n" + "\n".join(problems))
        else:
            matched += 1
    assert not failures, (f"{matched}/{N_RANDOM_CASES} matched; first mismatches:\n"
                          + "\n\n".join(failures[:3]))
