"""Tests for `structkit eval --task ud` (structkit.eval.ud): the CoNLL 2018 shared task's metrics.

Each small case is CoNLL-U written here, its expected counts worked out by hand in the comments
from the shared task's definitions (conll18_ud_eval.py). The real-file tests score UD English
ParTUT test against itself and against a copy with known errors, whose counts the test works out
from the errors it made."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import assert_one_line_error
from structkit.errors import UserError
from structkit.eval.ud import (CONTENT_DEPRELS, FUNCTIONAL_DEPRELS, METRICS, evaluate_ud, report,
                               universal_feats)
from structkit.io.conllx import read_conllx, write_conllx
from structkit.io.document import Sentence

SPAN_METRICS = ("tokens", "sentences", "words")


def conllu(*sentences: list[str]) -> str:
    """CoNLL-U from rows written with spaces: 'ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL'
    (DEPS and MISC are added as '_'); a range row is 'ID FORM'."""
    lines = []
    for rows in sentences:
        for row in rows:
            cols = row.split()
            cols += ["_"] * (10 - len(cols))
            lines.append("\t".join(cols))
        lines.append("")
    return "\n".join(lines) + "\n"


def score(tmp_path: Path, gold: str, system: str) -> dict:
    g, s = tmp_path / "gold.conllu", tmp_path / "system.conllu"
    g.write_text(gold, encoding="utf-8")
    s.write_text(system, encoding="utf-8")
    return evaluate_ud(str(g), str(s))


def counts(result: dict, metric: str) -> tuple:
    """(gold, system, correct, aligned) of one metric."""
    r = result[metric]
    return r["gold"], r["system"], r["correct"], r["aligned"]


# ---- hand-worked cases ---------------------------------------------------------------------------

GOLD_DONT = conllu([
    "1 I I PRON PRP _ 4 nsubj",
    "2-3 don't",
    "2 do do AUX VBP _ 4 aux",
    "3 n't not PART RB _ 4 advmod",
    "4 know know VERB VB _ 0 root",
    "5 . . PUNCT . _ 3 punct",          # attached to n't, so that a head can be unaligned
])


def test_multiword_token_split_into_plain_tokens_aligns_every_word(tmp_path):
    # The system has "don't" as two plain tokens do + n't: the same words, other tokens.
    system = conllu([
        "1 I I PRON PRP _ 4 nsubj",
        "2 do do AUX VBP _ 4 aux",
        "3 n't not PART RB _ 4 advmod",
        "4 know know VERB VB _ 0 root",
        "5 . . PUNCT . _ 3 punct",
    ])
    r = score(tmp_path, GOLD_DONT, system)
    # Tokens: gold I|don't|know|. (4), system I|do|n't|know|. (5); same spans: I, know, . = 3.
    assert counts(r, "tokens") == (4, 5, 3, None)
    assert r["tokens"]["precision"] == pytest.approx(60.0)
    assert r["tokens"]["recall"] == pytest.approx(75.0)
    assert r["tokens"]["f1"] == pytest.approx(100 * 6 / 9)
    # Words: the multiword region don't holds gold do n't and system do n't: LCS 2, so all 5
    # words align, and every head and tag agrees.
    assert counts(r, "words") == (5, 5, 5, None)
    for metric in ("upos", "uas", "las", "mlas", "blex"):
        assert r[metric]["f1"] == 100.0, metric


def test_multiword_token_with_other_words_aligns_by_common_forms(tmp_path):
    # The system keeps the multiword token but splits it into do + not: the LCS of (do, n't)
    # and (do, not) is do alone, so n't / not are not aligned.
    system = conllu([
        "1 I I PRON PRP _ 4 nsubj",
        "2-3 don't",
        "2 do do AUX VBP _ 4 aux",
        "3 not not PART RB _ 4 advmod",
        "4 know know VERB VB _ 0 root",
        "5 . . PUNCT . _ 3 punct",
    ])
    r = score(tmp_path, GOLD_DONT, system)
    assert counts(r, "tokens") == (4, 4, 4, None)          # the same four tokens
    # Words: 5 gold, 5 system, aligned I, do, know, . = 4: P = R = F1 = 80.
    assert counts(r, "words") == (5, 5, 4, None)
    assert r["words"]["f1"] == pytest.approx(80.0)
    # UPOS: the 4 aligned words agree: 4 correct, P = R = 80, AligndAcc 100.
    assert counts(r, "upos") == (5, 5, 4, 4)
    assert (r["upos"]["precision"], r["upos"]["recall"]) == (pytest.approx(80.0), pytest.approx(80.0))
    assert r["upos"]["aligned_accuracy"] == 100.0
    # UAS: "." has head n't (word 3) in both files, but the system's word 3 (not) is aligned to
    # no gold word, so its head cannot agree: I, do, know = 3 of 4 aligned; P = R = 60.
    assert counts(r, "uas") == (5, 5, 3, 4)
    assert r["uas"]["f1"] == pytest.approx(60.0)
    assert r["uas"]["aligned_accuracy"] == pytest.approx(75.0)


def test_heads_follow_the_alignment_where_word_indices_differ(tmp_path):
    # The system leaves "don't" one word: its words after it sit one place earlier than gold's,
    # so a system head must be mapped to the gold word it is aligned to, not read as a gold index.
    system = conllu([
        "1 I I PRON PRP _ 3 nsubj",
        "2 don't do AUX VBP _ 3 aux",
        "3 know know VERB VB _ 0 root",
        "4 . . PUNCT . _ 3 punct",
    ])
    r = score(tmp_path, GOLD_DONT, system)
    # Words: gold I do n't know . (5), system I don't know . (4); aligned I, know, . (3).
    assert counts(r, "words") == (5, 4, 3, None)
    # UAS: I -> know and know = root agree; "." hangs from know in the system and from n't in
    # gold: 2 of the 3 aligned. (Read as gold indices, system head 3 would be gold "n't".)
    assert counts(r, "uas") == (5, 4, 2, 3)
    assert counts(r, "las") == (5, 4, 2, 3)
    assert counts(r, "upos") == (5, 4, 3, 3)


def test_sentence_boundary_error(tmp_path):
    gold = conllu(["1 Hi hi INTJ UH _ 0 root", "2 . . PUNCT . _ 1 punct"],
                  ["1 Go go VERB VB _ 0 root", "2 ! ! PUNCT . _ 1 punct"])
    # The system runs both into one sentence: Go hangs from Hi as parataxis.
    system = conllu(["1 Hi hi INTJ UH _ 0 root", "2 . . PUNCT . _ 1 punct",
                     "3 Go go VERB VB _ 1 parataxis", "4 ! ! PUNCT . _ 3 punct"])
    r = score(tmp_path, gold, system)
    # Sentences: gold Hi. and Go!, system Hi.Go!: no span agrees.
    assert counts(r, "sentences") == (2, 1, 0, None)
    assert r["sentences"]["f1"] == 0.0
    assert counts(r, "tokens") == (4, 4, 4, None)
    # UAS: Go's head is the root in gold, Hi in the system: 3 of 4. The system's "!" hangs from
    # its word 3, aligned to gold Go, its gold head: correct.
    assert counts(r, "uas") == (4, 4, 3, 4)
    assert counts(r, "las") == (4, 4, 3, 4)
    # CLAS: content words are the roots Hi, Go in gold; Hi (root) and Go (parataxis) in the
    # system: 2 and 2, Hi correct: 1.
    assert counts(r, "clas") == (2, 2, 1, 2)
    assert r["clas"]["f1"] == pytest.approx(50.0)


def test_tag_errors_and_non_universal_features(tmp_path):
    gold = conllu([
        "1 She she PRON PRP Case=Nom|Number=Sing|Person=3 2 nsubj",
        "2 reads read VERB VBZ Mood=Ind|Tense=Pres|VerbForm=Fin 0 root",
        "3 books book NOUN NNS Number=Plur 2 obj",
        "4 . . PUNCT . _ 2 punct",
    ])
    system = conllu([
        # Same universal features in another order, plus Typo (UD v2, but not on the shared
        # task's list) and a layered Number[psor]: all ignored, so UFeats agrees.
        "1 She she PRON PRP Number=Sing|Person=3|Case=Nom|Typo=Yes|Number[psor]=Sing 2 nsubj",
        "2 reads read VERB VBZ Mood=Ind|Tense=Past|VerbForm=Fin 0 root",   # Tense wrong
        "3 books book PROPN NNS Number=Plur|Foo=Bar 2 obj",                # UPOS wrong; Foo ignored
        "4 . . PUNCT , _ 2 punct",                                          # XPOS wrong
    ])
    r = score(tmp_path, gold, system)
    assert counts(r, "words") == (4, 4, 4, None)
    assert counts(r, "upos") == (4, 4, 3, 4)      # books
    assert counts(r, "xpos") == (4, 4, 3, 4)      # .
    assert counts(r, "ufeats") == (4, 4, 3, 4)    # reads
    # AllTags: only She has all three right.
    assert counts(r, "alltags") == (4, 4, 1, 4)
    assert r["alltags"]["f1"] == pytest.approx(25.0)
    assert r["lemmas"]["f1"] == 100.0
    # MLAS: content words She, reads, books (punct is neither content nor functional);
    # reads has the wrong Tense, books the wrong UPOS: 1 of 3.
    assert counts(r, "mlas") == (3, 3, 1, 3)


def test_universal_feats():
    assert universal_feats("Number=Sing|Foo=Bar|Case=Nom") == "Case=Nom|Number=Sing"
    assert universal_feats("_") == ""
    assert universal_feats("Typo=Yes|NounClass=Bantu1|Clusivity=In|ExtPos=ADP") == ""


def test_deprel_subtypes_are_ignored(tmp_path):
    gold = conllu([
        "1 Its its PRON PRP$ _ 2 nmod:poss",
        "2 price price NOUN NN _ 4 nsubj:pass",
        "3 was be AUX VBD _ 4 aux:pass",
        "4 cut cut VERB VBN _ 0 root",
        "5 today today NOUN NN _ 4 obl:tmod",
        "6 him he PRON PRP _ 4 obj",
    ])
    system = conllu([
        "1 Its its PRON PRP$ _ 2 nmod",          # subtype dropped: nmod = nmod
        "2 price price NOUN NN _ 4 nsubj",       # nsubj = nsubj
        "3 was be AUX VBD _ 4 aux",              # aux = aux
        "4 cut cut VERB VBN _ 0 root",
        "5 today today NOUN NN _ 4 obl:npmod",   # another subtype: obl = obl
        "6 him he PRON PRP _ 4 iobj",            # a different relation: wrong
    ])
    r = score(tmp_path, gold, system)
    # LAS: 5 of 6 (him). UAS: all 6.
    assert counts(r, "uas") == (6, 6, 6, 6)
    assert counts(r, "las") == (6, 6, 5, 6)
    # CLAS: content words Its (nmod), price, cut, today, him: 5 (was is aux); 4 correct.
    assert counts(r, "clas") == (5, 5, 4, 5)


def test_clas_counts_content_words_only(tmp_path):
    gold = conllu([
        "1 the the DET DT _ 2 det",
        "2 cat cat NOUN NN _ 3 nsubj",
        "3 sat sit VERB VBD _ 0 root",
        "4 on on ADP IN _ 6 case",
        "5 the the DET DT _ 6 det",
        "6 mat mat NOUN NN _ 3 obl",
        "7 . . PUNCT . _ 3 punct",
    ])
    system = conllu([
        "1 the the DET DT _ 3 det",        # head wrong (a function word)
        "2 cat cat NOUN NN _ 3 nsubj",
        "3 sat sit VERB VBD _ 0 root",
        "4 on on ADP IN _ 6 obl",          # label wrong, and content in the system
        "5 the the DET DT _ 6 det",
        "6 mat mat NOUN NN _ 2 obl",       # head wrong (a content word)
        "7 . . PUNCT . _ 2 punct",         # head wrong (punctuation)
    ])
    r = score(tmp_path, gold, system)
    # UAS: the(1), mat and . wrong: 4 of 7. LAS: on's label too: 3 of 7.
    assert counts(r, "uas") == (7, 7, 4, 7)
    assert counts(r, "las") == (7, 7, 3, 7)
    # CLAS: gold content words cat, sat, mat (3); the system's cat, sat, on, mat (4); the
    # aligned gold content words are 3, of which cat and sat are right: 2.
    # P = 2/4, R = 2/3, F1 = 2*2/(3+4), AligndAcc = 2/3.
    assert counts(r, "clas") == (3, 4, 2, 3)
    assert r["clas"]["precision"] == pytest.approx(50.0)
    assert r["clas"]["recall"] == pytest.approx(200 / 3)
    assert r["clas"]["f1"] == pytest.approx(400 / 7)
    assert r["clas"]["aligned_accuracy"] == pytest.approx(200 / 3)
    # MLAS: the system moved "the" (det) from cat to sat, so cat has lost a functional child
    # and sat gained one; mat's head is wrong: none of the 3 is right.
    assert counts(r, "mlas") == (3, 4, 0, 3)


def test_mlas_compares_the_functional_children(tmp_path):
    gold = conllu([
        "1 the the DET DT Definite=Def|PronType=Art 2 det",
        "2 cats cat NOUN NNS Number=Plur 4 nsubj",
        "3 will will AUX MD VerbForm=Fin 4 aux",
        "4 sleep sleep VERB VB VerbForm=Inf 0 root",
        "5 . . PUNCT . _ 4 punct",
    ])
    system = conllu([
        "1 the the DET DT Definite=Ind|PronType=Art 2 det",   # a functional child's FEATS differ
        "2 cats cat NOUN NNS Number=Plur 4 nsubj",
        "3 will will AUX MD VerbForm=Fin|Foo=Yes 4 aux",      # differ only outside the list
        "4 sleep sleep VERB VB VerbForm=Inf 0 root",
        "5 . . PUNCT . _ 4 punct",
    ])
    r = score(tmp_path, gold, system)
    assert counts(r, "ufeats") == (5, 5, 4, 5)     # the
    assert counts(r, "las") == (5, 5, 5, 5)
    assert counts(r, "clas") == (2, 2, 2, 2)       # cats, sleep
    # MLAS: cats' functional child "the" has other FEATS: wrong. sleep's functional child
    # "will" agrees once Foo is dropped; "." is punct, not functional: right. 1 of 2.
    assert counts(r, "mlas") == (2, 2, 1, 2)
    assert r["mlas"]["f1"] == pytest.approx(50.0)


def test_lemmas_and_blex_with_gold_lemma_underscore(tmp_path):
    gold = conllu([
        "1 Dogs dog NOUN NNS _ 2 nsubj",
        "2 bark _ VERB VBP _ 0 root",            # no gold lemma: any system lemma is right
        "3 loudly loudly ADV RB _ 2 advmod",
        "4 . . PUNCT . _ 2 punct",
    ])
    system = conllu([
        "1 Dogs dogs NOUN NNS _ 2 nsubj",        # wrong lemma
        "2 bark bark VERB VBP _ 0 root",         # right: gold has _
        "3 loudly _ ADV RB _ 2 advmod",          # wrong: a system _ is no gold lemma
        "4 . . PUNCT . _ 2 punct",
    ])
    r = score(tmp_path, gold, system)
    # Lemmas: bark and . : 2 of 4.
    assert counts(r, "lemmas") == (4, 4, 2, 4)
    # BLEX: content words Dogs, bark, loudly; all attached right, only bark's lemma right.
    assert counts(r, "blex") == (3, 3, 1, 3)
    assert r["blex"]["f1"] == pytest.approx(100 / 3)
    assert counts(r, "clas") == (3, 3, 3, 3)


def test_the_relation_lists():
    assert not CONTENT_DEPRELS & FUNCTIONAL_DEPRELS
    assert "punct" not in CONTENT_DEPRELS | FUNCTIONAL_DEPRELS
    assert {"root", "dep", "nmod", "obl"} <= CONTENT_DEPRELS
    assert FUNCTIONAL_DEPRELS == {"aux", "cop", "mark", "det", "clf", "case", "cc"}


def test_report_is_the_official_table(tmp_path):
    r = score(tmp_path, GOLD_DONT, GOLD_DONT)
    lines = report(r).split("\n")
    assert lines[0] == "Metric     | Precision |    Recall |  F1 Score | AligndAcc"
    assert lines[1] == "-----------+-----------+-----------+-----------+-----------"
    assert lines[2] == "Tokens     |    100.00 |    100.00 |    100.00 |"
    assert lines[5] == "UPOS       |    100.00 |    100.00 |    100.00 |    100.00"
    assert [line.split()[0] for line in lines[2:]] == [
        "Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS",
        "LAS", "CLAS", "MLAS", "BLEX"]


# ---- bad input -----------------------------------------------------------------------------------

def test_bad_input_is_one_line_naming_file_and_line(tmp_path, sk):
    gold = tmp_path / "gold.conllu"
    gold.write_text(GOLD_DONT, encoding="utf-8")

    def run(text: str):
        system = tmp_path / "system.conllu"
        system.write_text(text, encoding="utf-8")
        return sk("eval", "--task", "ud", gold, system)

    assert_one_line_error(sk("eval", "--task", "ud", gold, tmp_path / "missing.conllu"), "no such file")
    assert_one_line_error(run(""), "system.conllu:1: empty file")
    # A line of 3 columns among 10-column rows.
    bad = GOLD_DONT.replace("4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_", "4 know VERB")
    assert_one_line_error(run(bad), "system.conllu:5: ")
    # Other characters: the system has "knew".
    assert_one_line_error(run(GOLD_DONT.replace("4\tknow", "4\tknew")),
                          "system.conllu:1: the text differs from the gold file's")
    # Two roots; `word POS` rows in a .conllu file (read as CoNLL-U by the one reader: it was
    # read as a 2-column file, then refused for having no HEAD).
    assert_one_line_error(run(GOLD_DONT.replace("\t3\tpunct", "\t0\troot")),
                          "system.conllu:1: not a tree: 2 tokens have head 0")
    assert_one_line_error(run("I PRON\ndon't AUX\nknow VERB\n. PUNCT\n"),
                          "system.conllu:1: expected 10 tab-separated columns (CoNLL-U), found 1")
    assert_one_line_error(sk("eval", "--task", "ud", gold), "takes two CoNLL-U files")
    assert_one_line_error(sk("eval", "--task", "ud", "--label-column", "xpos", gold, gold),
                          "--label-column does not apply")


def test_train_task_ud_is_one_line(sk, tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text(GOLD_DONT, encoding="utf-8")
    for extra in ([], ["--epochs", "3"]):
        r = sk("train", "--task", "ud", "--train", gold, "--model", tmp_path / "m", *extra)
        assert_one_line_error(r, "--task ud only scores parsed CoNLL-U", "it has no model to train")
    assert not (tmp_path / "m").exists()


def test_ud_is_a_task_of_eval_without_a_command(sk):
    from structkit.cli import cli
    from structkit.tasks import get_task

    assert get_task("ud").command is None and get_task("ud").serving is None
    assert "ud" not in cli.list_commands(None)
    assert sk("ud", "--help").code != 0


# ---- a real file ---------------------------------------------------------------------------------

PARTUT = "ud-english-partut/en_partut-ud-test.conllu"


@pytest.mark.corpus
def test_gold_against_itself_scores_100(corpus, sk):
    path = corpus(PARTUT)
    r = json.loads(sk("eval", "--task", "ud", "--json", path, path).out)
    assert sorted(r) == sorted(METRICS)
    words = sum(len(s) for s in read_conllx(str(path)))
    for metric in METRICS:
        assert (r[metric]["precision"], r[metric]["recall"], r[metric]["f1"]) == (100.0, 100.0, 100.0), metric
        assert r[metric]["gold"] == r[metric]["system"] == r[metric]["correct"] > 0, metric
        if metric in SPAN_METRICS:
            assert r[metric]["aligned_accuracy"] is None
        else:
            assert r[metric]["aligned_accuracy"] == 100.0
    assert r["words"]["gold"] == r["upos"]["gold"] == words
    assert r["clas"]["gold"] < words


def _sentence(like: Sentence, rows: list[list[str]]) -> Sentence:
    """A sentence of ``rows`` (IDs renumbered) under the comments of ``like`` (one without
    multiword tokens), as read_conllx holds it."""
    for i, r in enumerate(rows, 1):
        r[0] = str(i)
    lines = [line for line in like.lines if line.startswith("#")]
    word_at = list(range(len(lines), len(lines) + len(rows)))
    return Sentence.from_lines(rows, lines + ["\t".join(r) for r in rows], word_at)


def _perturbed(gold_path: Path, out: Path) -> dict:
    """Write a copy of the gold file with known errors and return what they change:

    * merge: in the first sentence without multiword tokens that has two adjacent words k, k+1
      where k+1 hangs from k and k is a content word, the two become one token (as if k had
      lost SpaceAfter=No's opposite: no space between them), with k's columns;
    * heads: three content words of later sentences, each with a non-root head, are attached to
      their grandparent instead (still a tree);
    * join: two later sentences become one, the second's root a parataxis of the first's.
    """
    sents = list(read_conllx(str(gold_path)))
    content = lambda rel: rel.split(":")[0] in CONTENT_DEPRELS  # noqa: E731
    merge = next((j, k) for j, s in enumerate(sents) if not s.multiword
                 for k in range(1, len(s)) if s.heads[k] == k and content(s.deprels[k - 1]))
    j, k = merge                      # words k, k+1 (1-based) of sentence j
    s = sents[j]
    dependents = [i for i in range(1, len(s) + 1)
                  if s.heads[i - 1] in (k, k + 1) and i not in (k, k + 1)]
    dependent_deprels = [s.deprels[i - 1] for i in dependents]
    lost = [s.deprels[k - 1], s.deprels[k]]
    rows = [list(r) for r in s.rows]
    rows[k - 1][1] += rows[k][1]
    del rows[k]
    for r in rows:
        h = int(r[6])
        r[6] = str(k if h == k + 1 else h - 1 if h > k + 1 else h)
    sents[j] = _sentence(s, rows)
    moved = []                        # (sentence, word) whose head was changed
    for jj in range(j + 1, len(sents)):
        t = sents[jj]
        heads = t.heads
        for i, h in enumerate(heads, 1):
            if len(moved) < 3 and h and heads[h - 1] and content(t.deprels[i - 1]) \
                    and all(m[0] != jj for m in moved):
                t.set_columns(i - 1, {6: str(heads[h - 1])})
                moved.append((jj, i))
    joined = next(i for i in range(max(m[0] for m in moved) + 1, len(sents) - 1)
                  if not sents[i].multiword and not sents[i + 1].multiword)
    a, b = sents[joined], sents[joined + 1]   # become one sentence
    root_a, root_b = a.heads.index(0) + 1, b.heads.index(0) + 1
    offset = len(a)
    rows = [list(r) for r in a.rows]
    for r in b.rows:
        h = int(r[6])
        rows.append([r[0], *r[1:6], str(h + offset if h else root_a), *r[7:]])
    rows[offset + root_b - 1][7] = "parataxis"
    sents[joined] = _sentence(a, rows)
    del sents[joined + 1]
    with open(out, "w", encoding="utf-8") as f:
        write_conllx(sents, f)
    return {"merged_sentence": j, "lost_deprels": lost, "dependents": dependents,
            "dependent_deprels": dependent_deprels,
            "moved": moved, "second_root_deprel": b.deprels[root_b - 1]}


@pytest.mark.corpus
def test_perturbed_copy_gives_the_counts_of_its_errors(corpus, sk, tmp_path):
    gold_path = corpus(PARTUT)
    system_path = tmp_path / "system.conllu"
    gold = list(read_conllx(str(gold_path)))
    made = _perturbed(gold_path, system_path)
    system = list(read_conllx(str(system_path)))
    S = len(gold)
    T = sum(len(s) - sum(last - first for first, last, _ in s.multiword) for s in gold)
    W = sum(len(s) for s in gold)
    is_content = lambda rel: rel.split(":")[0] in CONTENT_DEPRELS  # noqa: E731
    gold_content = sum(is_content(r) for s in gold for r in s.deprels)
    system_content = sum(is_content(r) for s in system for r in s.deprels)
    assert len(made["moved"]) == 3 and made["dependents"]

    r = json.loads(sk("eval", "--task", "ud", "--json", gold_path, system_path).out)
    # Merging two plain tokens: one token fewer in the system, both gold tokens (and words)
    # lost. Joining two sentences: one fewer, both gold sentences lost.
    assert counts(r, "tokens") == (T, T - 1, T - 2, None)
    assert counts(r, "sentences") == (S, S - 1, S - 2, None)
    aligned = W - 2
    assert counts(r, "words") == (W, W - 1, aligned, None)
    # No column but HEAD and one DEPREL changed: every tag and lemma of the aligned words agree.
    for metric in ("upos", "xpos", "ufeats", "alltags", "lemmas"):
        assert counts(r, metric) == (W, W - 1, aligned, aligned), metric
    # Wrong heads: the 3 moved words, the joined sentence's second root, and the words that hung
    # from the merged pair (their system head is the merged word, aligned to nothing).
    wrong = len(made["moved"]) + 1 + len(made["dependents"])
    assert counts(r, "uas") == (W, W - 1, aligned - wrong, aligned)
    assert counts(r, "las") == (W, W - 1, aligned - wrong, aligned)
    # Content words only: the merged pair's content words are not aligned; the moved words are
    # content, the second root is (root), the dependents by their gold DEPREL.
    lost_content = sum(map(is_content, made["lost_deprels"]))
    wrong_content = (3 + is_content(made["second_root_deprel"])
                     + sum(map(is_content, made["dependent_deprels"])))
    content_aligned = gold_content - lost_content
    for metric in ("clas", "mlas", "blex"):   # the moved words are not functional: no child moved
        assert counts(r, metric) == (gold_content, system_content, content_aligned - wrong_content,
                                     content_aligned), metric


@pytest.mark.corpus
def test_eval_task_tokenize_gives_the_same_segmentation_figures(corpus, sk, tmp_path):
    gold_path = corpus(PARTUT)
    system_path = tmp_path / "system.conllu"
    _perturbed(gold_path, system_path)
    gold = list(read_conllx(str(gold_path)))
    S = len(gold)
    T = sum(len(s) - sum(last - first for first, last, _ in s.multiword) for s in gold)
    W = sum(len(s) for s in gold)
    tok = json.loads(sk("eval", "--task", "tokenize", "--json", gold_path, system_path).out)
    ud = json.loads(sk("eval", "--task", "ud", "--json", gold_path, system_path).out)
    expected = {"tokens": (T, T - 1, T - 2), "sentences": (S, S - 1, S - 2), "words": (W, W - 1, W - 2)}
    for metric, (g, s, c) in expected.items():
        assert (tok[metric]["gold"], tok[metric]["system"], tok[metric]["correct"]) == (g, s, c)
        assert tok[metric]["f1"] == pytest.approx(200 * c / (g + s))
        assert {key: ud[metric][key] for key in tok[metric]} == tok[metric]
    assert "Tokens" in sk("eval", "--task", "tokenize", gold_path, system_path).out


def test_missing_heads_error_names_the_line(tmp_path):
    with pytest.raises(UserError, match=r"gold\.conllu:1: no HEAD"):
        score(tmp_path, conllu(["1 a", "2 b"]), conllu(["1 a", "2 b"]))
