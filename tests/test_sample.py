"""The shipped sample (structkit/data/sample/, found as `sample/...`): every file reads with
structkit's own readers, every task trains and runs on it end to end through the command line,
and data/README.md's counts and corpus list are true."""
from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT
from structkit.datasets import registry

SAMPLE = ROOT / "structkit" / "data" / "sample"
README = ROOT / "data" / "README.md"


def counts(path) -> tuple[int, int]:
    """(sentences or utterances, tokens: syntactic words for CoNLL-U, hypotheses for n-best)."""
    if path.suffix == ".jsonl":
        rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        return len(rows), sum(len(r["hypotheses"]) for r in rows)
    if path.suffix == ".conllu":
        from structkit.io import read_conllx

        sents = list(read_conllx(str(path)))
        return len(sents), sum(len(s.forms) for s in sents)
    from structkit.io import read_conll

    sents = list(read_conll(str(path)))
    return len(sents), sum(len(s.rows) for s in sents)


def test_readme_counts_are_the_files():
    text = README.read_text(encoding="utf-8")
    checked = 0
    for task in ("chunk", "ner", "pos", "ud", "nbest"):
        row = re.search(rf"^\| {task} \| (.*?) \| (.*?) \| (.*?) \|$", text, re.M)
        assert row, task
        files = re.findall(r"`([a-z]+/[a-z]+\.[a-z]+)`", row.group(1))
        n_sent = [int(x) for x in re.findall(r"\d+", row.group(2).split(" in ")[0])]
        n_tok = [int(x) for x in re.findall(r"\d+", row.group(3).split(";")[0].split("(")[0])]
        got = [counts(SAMPLE / f) for f in files]
        assert [g[0] for g in got] == n_sent, (task, got)
        assert [g[1] for g in got] == n_tok, (task, got)
        checked += 1
    assert checked == 5


def test_readme_describes_every_registered_corpus():
    text = README.read_text(encoding="utf-8")
    for c in registry.corpora():
        assert f"`{c.name}`" in text, c.name


def test_conllu_sample_is_valid_ud():
    """One root per sentence, heads in range, no cycles, and `# text` equal to the surface
    forms joined by SpaceAfter (range lines' forms standing for their words)."""
    for path in sorted((SAMPLE / "ud").glob("*.conllu")):
        block: list[str] = []
        for chunk in path.read_text(encoding="utf-8").split("\n\n"):
            block = [ln for ln in chunk.splitlines() if ln]
            if not block:
                continue
            text = next(ln[len("# text = "):] for ln in block if ln.startswith("# text = "))
            rows = [ln.split("\t") for ln in block if not ln.startswith("#")]
            assert all(len(r) == 10 for r in rows), path
            words = [r for r in rows if r[0].isdigit()]
            heads = {int(r[0]): int(r[6]) for r in words}
            assert list(heads) == list(range(1, len(words) + 1)), path
            assert sum(1 for h in heads.values() if h == 0) == 1, (path, text)
            for i in heads:  # following heads from any word reaches the root
                seen, j = set(), i
                while j != 0:
                    assert j not in seen and 1 <= j <= len(words) or j == 0, (path, text)
                    seen.add(j)
                    j = heads[j]
            surface, skip_to = "", 0
            for r in rows:
                if "-" in r[0]:
                    skip_to = int(r[0].split("-")[1])
                elif int(r[0]) <= skip_to:
                    continue
                surface += r[1] + ("" if "SpaceAfter=No" in r[9] else " ")
            assert surface.rstrip() == text, (path, text)


@pytest.mark.parametrize("task,cmd,train,dev,test", [
    ("chunk", "chunk", "chunk/train.txt", None, "chunk/test.txt"),
    ("ner", "ner", "ner/train.txt", "ner/dev.txt", "ner/test.txt"),
    ("pos", "tag", "pos/train.txt", "pos/dev.txt", "pos/test.txt"),
])
def test_sample_tags_end_to_end(sk, tmp_path, task, cmd, train, dev, test):
    """What `make demo` does offline, for each sequence task: train, label, evaluate. The
    models must remove a third of the errors of labelling every token with the most frequent
    training label (a floor computed from the data, not a stored score)."""
    from collections import Counter

    from structkit.io import read_conll

    model, out = tmp_path / "m.model", tmp_path / "out.txt"
    args = ["train", "--task", task, "--train", SAMPLE / train, "--model", model, "--epochs", "5"]
    assert sk(*args + (["--dev", SAMPLE / dev] if dev else [])).code == 0
    assert sk(cmd, "--model", model, SAMPLE / test, "-o", out).code == 0
    r = sk("eval", "--task", task, out, "--json")
    assert r.code == 0, r
    acc = json.loads(r.out)["accuracy"]
    labels = Counter(r[-1] for s in read_conll(str(SAMPLE / train)) for r in s.rows)
    gold = [r[-1] for s in read_conll(str(SAMPLE / test)) for r in s.rows]
    majority = 100 * sum(g == labels.most_common(1)[0][0] for g in gold) / len(gold)
    assert (acc - majority) / (100 - majority) > 0.3, (acc, majority)  # a third of the errors gone


def test_sample_parses_and_reranks(sk, tmp_path):
    m, out = tmp_path / "p.model", tmp_path / "p.conll"
    assert sk("train", "--task", "parse", "--train", SAMPLE / "ud/train.conllu", "--model", m,
              "--epochs", "3").code == 0
    assert sk("parse", "--model", m, SAMPLE / "ud/test.conllu", "-o", out).code == 0
    r = sk("eval", "--task", "parse", SAMPLE / "ud/test.conllu", out, "--json")
    assert r.code == 0, r
    # Floor: the better of "every word's head is its left neighbour" and "... right neighbour",
    # on the words eval scores (punctuation by gold POS excluded).
    from structkit.io import read_conllx

    scored = left = right = 0
    for s in read_conllx(str(SAMPLE / "ud/test.conllu")):
        for i, (h, pos) in enumerate(zip(s.heads, s.xpos), 1):
            if pos in ("``", "''", ",", ".", ":"):
                continue
            scored += 1
            left += h == i - 1
            right += h == i + 1
    assert json.loads(r.out)["uas"] > 100 * max(left, right) / scored
    m, chosen = tmp_path / "r.npz", tmp_path / "chosen.txt"
    assert sk("train", "--task", "rerank", "--train", SAMPLE / "nbest/train.jsonl", "--model", m).code == 0
    assert sk("rerank", "--model", m, SAMPLE / "nbest/test.jsonl", "-o", chosen).code == 0
    r = sk("eval", "--task", "rerank", SAMPLE / "nbest/test.jsonl", chosen, "--json")
    assert r.code == 0, r
    res = json.loads(r.out)
    assert res["oracle"]["wer"] <= res["chosen"]["wer"] <= res["one_best"]["wer"] * 1.5
