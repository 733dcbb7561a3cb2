"""Raw text through the command line: `tag --text` tokenises and splits sentences, writes
columns or CoNLL-U that `structkit parse` reads, and `eval --task tokenize` scores a
tokenisation against a treebank."""
from __future__ import annotations

import json

import pytest

from clitools import assert_one_line_error
from conftest import ROOT
from structkit.io.conllu import read_conllu

SAMPLE = ROOT / "structkit" / "data" / "sample" / "ud"
EXAMPLE = "Mr. O'Neil's dog, isn't it? It costs $3.50.\n\nThe ferry left at noon.\n"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A UPOS tagger and a parser trained on the shipped sample (seconds)."""
    from structkit.cli import main

    d = tmp_path_factory.mktemp("models")
    for args in (["train", "--task", "pos", "--train", str(SAMPLE / "train.conllu"), "--model",
                  str(d / "pos.model"), "--epochs", "3"],
                 ["train", "--task", "parse", "--train", str(SAMPLE / "train.conllu"), "--model",
                  str(d / "parse.model"), "--epochs", "2"]):
        with pytest.raises(SystemExit) as e:
            main(args)
        assert not e.value.code
    return d


def test_text_is_tokenised_and_split(sk, tmp_path, models):
    src = tmp_path / "in.txt"
    src.write_text(EXAMPLE, encoding="utf-8")
    r = sk("tag", "--model", models / "pos.model", "--text", src)
    assert r.code == 0, r
    sents = [[ln.split(" ")[0] for ln in block.splitlines()] for block in r.out.strip().split("\n\n")]
    assert sents == [["Mr.", "O'Neil", "'s", "dog", ",", "is", "n't", "it", "?"],
                     ["It", "costs", "$", "3.50", "."],
                     ["The", "ferry", "left", "at", "noon", "."]]
    # --no-split: each line is one sentence (the first line holds two).
    r = sk("tag", "--model", models / "pos.model", "--text", "--no-split", src)
    assert len(r.out.strip().split("\n\n")) == 2


def test_text_to_conllu_to_parse(sk, tmp_path, models):
    src = tmp_path / "in.txt"
    src.write_text(EXAMPLE, encoding="utf-8")
    out = tmp_path / "tagged.conllu"
    r = sk("tag", "--model", models / "pos.model", "--text", "--format", "conllu", src, "-o", out)
    assert r.code == 0, r
    text = out.read_text(encoding="utf-8")
    assert "# text = Mr. O'Neil's dog, isn't it?" in text and "# sent_id = 3" in text
    assert "\n6-7\tisn't\t" in text  # a multiword token, as UD English writes it
    sents = list(read_conllu(str(out)))  # checks that every # text is what the tokens spell
    assert [len(s) for s in sents] == [9, 5, 6]
    assert all(r[3] != "_" for s in sents for r in s.rows)  # UPOS filled in
    parsed = tmp_path / "parsed.conll"
    r = sk("parse", "--model", models / "parse.model", out, "-o", parsed)
    assert r.code == 0, r
    from structkit.io.conllx import read_conllx

    assert [len(s.heads) for s in read_conllx(str(parsed))] == [9, 5, 6]


def test_text_options_are_checked(sk, tmp_path, models):
    src = tmp_path / "in.txt"
    src.write_text(EXAMPLE, encoding="utf-8")
    assert_one_line_error(sk("tag", "--model", models / "pos.model", "--format", "conllu", src),
                          "--format goes with --text")
    assert_one_line_error(sk("tag", "--model", models / "pos.model", "--no-split", src),
                          "--no-split goes with --text")
    assert_one_line_error(sk("tag", "--model", models / "pos.model", "--text", "--lang", "xx", src),
                          "no tokenizer for language 'xx'")
    lemma = tmp_path / "lemma.model"
    assert sk("train", "--task", "pos", "--train", SAMPLE / "train.conllu", "--model", lemma,
              "--templates", "w[0],lemma[0]", "--epochs", "1").code == 0
    assert_one_line_error(sk("tag", "--model", lemma, "--text", src),
                          "templates read the column 'lemma', which raw text does not give")


def raw_text(conllu) -> str:
    """A treebank's text: sentences of a paragraph joined by a space, paragraphs by a blank line."""
    paras, cur = [], []
    for s in read_conllu(str(conllu)):
        if any(ln.startswith(("# newpar", "# newdoc")) for ln in s.lines) and cur:
            paras.append(" ".join(cur))
            cur = []
        cur.append(next(ln[len("# text = "):] for ln in s.lines if ln.startswith("# text = ")))
    return "\n\n".join(paras + [" ".join(cur)]) + "\n"


def test_eval_tokenize(sk, tmp_path, models):
    gold = SAMPLE / "test.conllu"
    r = sk("eval", "--task", "tokenize", gold, gold, "--json")
    res = json.loads(r.out)
    assert res["tokens"]["f1"] == res["sentences"]["f1"] == res["words"]["f1"] == 100.0
    src = tmp_path / "raw.txt"
    src.write_text(raw_text(gold), encoding="utf-8")
    pred = tmp_path / "pred.conllu"
    assert sk("tag", "--model", models / "pos.model", "--text", "--format", "conllu", src,
              "-o", pred).code == 0
    r = sk("eval", "--task", "tokenize", gold, pred, "--json")
    assert r.code == 0, r
    res = json.loads(r.out)
    gold_tokens = sum(len(s) - sum(b - a for a, b, _ in _ranges(s)) for s in read_conllu(str(gold)))
    assert res["tokens"]["gold"] == gold_tokens
    assert res["tokens"]["f1"] > 90
    assert_one_line_error(sk("eval", "--task", "tokenize", gold), "takes two CoNLL-U files")


def _ranges(sent):
    out = []
    for ln in sent.lines:
        tid = ln.split("\t")[0]
        if "-" in tid and not ln.startswith("#"):
            a, b = tid.split("-")
            out.append((int(a), int(b), ln))
    return out
