"""Tests for the command line: train -> tag -> eval round trips on the hand-written fixtures,
and the rule that every user mistake ends as ONE line on stderr naming the file (and line),
a non-zero exit, no traceback and no model/output file left behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from clitools import assert_one_line_error, leftovers
from structkit.cli import cli

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
POS_TRAIN = str(FIXTURES / "pos_train.txt")
NER_TRAIN = str(FIXTURES / "ner_train.txt")


def invoke(*args, input: str | None = None):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def sentences_of(text: str) -> list[list[list[str]]]:
    return [[line.split() for line in block.splitlines()] for block in text.strip("\n").split("\n\n")]


def drop_last_column(src: str, dst: Path) -> str:
    rows = [" ".join(line.split()[:-1]) if line.strip() else "" for line in Path(src).read_text().splitlines()]
    dst.write_text("\n".join(rows) + "\n")
    return str(dst)


# ---- models shared by the tests of this module ----------------------------------------------
@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("models")
    paths = {k: str(d / f"{k}.npz") for k in ("chunk", "pos", "ner")}
    invoke("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", paths["chunk"], "--epochs", 3, "-q")
    invoke("train", "--task", "pos", "--train", POS_TRAIN, "--model", paths["pos"], "--epochs", 3, "-q")
    invoke("train", "--task", "ner", "--train", NER_TRAIN, "--model", paths["ner"], "--epochs", 3,
           "--algo", "greedy", "-q")
    return paths


# ---- train -> tag -> eval ---------------------------------------------------------------------
def test_train_chunk_eval_round_trip(sk, models, tmp_path):
    r = sk("chunk", "--model", models["chunk"], CHUNK_TEST)
    assert r.code == 0 and r.err == ""
    out_sents = sentences_of(r.out)
    gold_sents = sentences_of(Path(CHUNK_TEST).read_text())
    assert len(out_sents) == len(gold_sents) == 4
    for o, g in zip(out_sents, gold_sents):
        assert [row[:3] for row in o] == g           # input rows kept, one column appended
        assert all(len(row) == 4 for row in o)
    tagged = tmp_path / "tagged.txt"
    tagged.write_text(r.out)

    # conlleval's one-file form: gold second-to-last, prediction last.
    r1 = sk("eval", "--task", "chunk", tagged)
    assert r1.code == 0
    assert "precision" in r1.out and "FB1" in r1.out and "NP:" in r1.out
    j1 = json.loads(sk("eval", "--task", "chunk", "--json", tagged).out)
    for key in ("accuracy", "precision", "recall", "f1", "per_type"):
        assert key in j1
    assert "NP" in j1["per_type"] and set(j1["per_type"]) <= {"NP", "VP", "PP"}
    assert set(j1["per_type"]["NP"]) >= {"precision", "recall", "f1"}
    assert j1["tokens"] == 25 and j1["sentences"] == 4
    assert j1["f1"] > 70

    # GOLD PRED form: the same scores.
    j2 = json.loads(sk("eval", "--task", "chunk", "--json", CHUNK_TEST, tagged).out)
    assert j2 == j1


def test_eval_gold_pred_with_prediction_from_input_without_gold(sk, models, tmp_path):
    words_pos = drop_last_column(CHUNK_TEST, tmp_path / "wp.txt")
    pred = tmp_path / "pred.txt"
    assert sk("chunk", "--model", models["chunk"], words_pos, "-o", pred).code == 0
    j = json.loads(sk("eval", "--task", "chunk", "--json", CHUNK_TEST, pred).out)
    assert j["tokens"] == 25 and 0 <= j["f1"] <= 100


def test_input_without_gold_column_appends_one_column(sk, models, tmp_path):
    words_pos = drop_last_column(CHUNK_TEST, tmp_path / "wp.txt")
    r = sk("chunk", "--model", models["chunk"], words_pos)
    assert r.code == 0
    rows = [row for s in sentences_of(r.out) for row in s]
    assert len(rows) == 25 and all(len(row) == 3 for row in rows)
    assert {row[2] for row in rows} <= {"B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "O"}


def test_output_option_writes_a_file(sk, models, tmp_path):
    out = tmp_path / "out.txt"
    r = sk("chunk", "--model", models["chunk"], CHUNK_TEST, "-o", out)
    assert r.code == 0 and r.out == "" and r.err == ""
    assert out.read_text() == sk("chunk", "--model", models["chunk"], CHUNK_TEST).out
    assert leftovers(tmp_path) == []


def test_chunk_reads_stdin_dash(sk, models, tmp_path):
    data = Path(drop_last_column(CHUNK_TEST, tmp_path / "wp.txt")).read_bytes()
    r = sk("chunk", "--model", models["chunk"], "-", stdin=data)
    assert r.code == 0
    assert r.out == sk("chunk", "--model", models["chunk"], tmp_path / "wp.txt").out


def test_chunk_stdin_through_clirunner(models, tmp_path):
    data = Path(drop_last_column(CHUNK_TEST, tmp_path / "wp.txt")).read_text()
    result = invoke("chunk", "--model", models["chunk"], input=data)   # no FILE: stdin
    assert len(sentences_of(result.stdout)) == 4


def test_tag_text_with_pos_model(sk, models):
    r = sk("tag", "--model", models["pos"], "--text", "-", stdin=b"The cat sat on the mat .\n\nA dog barked .\n")
    assert r.code == 0
    sents = sentences_of(r.out)
    assert [[row[0] for row in s] for s in sents] == [["The", "cat", "sat", "on", "the", "mat", "."],
                                                     ["A", "dog", "barked", "."]]
    assert all(len(row) == 2 for s in sents for row in s)
    assert sents[0][0][1] == "DT" and sents[0][-1][1] == "."


def test_pos_tag_and_eval_json_has_accuracy(sk, models, tmp_path):
    tagged = tmp_path / "pos.out"
    assert sk("tag", "--model", models["pos"], POS_TRAIN, "-o", tagged).code == 0
    j = json.loads(sk("eval", "--task", "pos", "--json", tagged).out)
    assert j["task"] == "pos" and "accuracy" in j and "f1" not in j
    assert j["accuracy"] > 90
    report = sk("eval", "--task", "pos", tagged).out
    assert "accuracy" in report
    jm = json.loads(sk("eval", "--task", "pos", "--json", "--model", models["pos"], tagged).out)
    assert jm["unknown_tokens"] == 0


def test_ner_round_trip(sk, models, tmp_path):
    tagged = tmp_path / "ner.out"
    assert sk("ner", "--model", models["ner"], NER_TRAIN, "-o", tagged).code == 0
    j = json.loads(sk("eval", "--task", "ner", "--json", tagged).out)
    assert set(j["per_type"]) <= {"PER", "LOC", "ORG"} and j["f1"] > 50


def test_columns_option_at_tag_time(sk, models, tmp_path):
    # pos, word swapped: name the columns.
    src = tmp_path / "swapped.txt"
    src.write_text("DT The\nNN cat\n\n. .\n")
    r = sk("chunk", "--model", models["chunk"], "--columns", "pos,word", src)
    assert r.code == 0
    assert sentences_of(r.out)[0][0][:2] == ["DT", "The"]


# ---- seeds, metrics, configs ----------------------------------------------------------------
def model_weights(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files if k != "__header__"}


def test_seed_reproducibility(sk, tmp_path):
    outs = []
    for name in ("a.npz", "b.npz"):
        m = tmp_path / name
        args = ("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m, "--epochs", 3,
                "--seed", 7, "--algo", "greedy")
        assert sk(*args).code == 0
        outs.append(sk("chunk", "--model", m, CHUNK_TEST).out)
    assert outs[0] == outs[1]
    wa, wb = model_weights(tmp_path / "a.npz"), model_weights(tmp_path / "b.npz")
    assert wa.keys() == wb.keys()
    for k in wa:
        np.testing.assert_array_equal(wa[k], wb[k], err_msg=k)


def test_metrics_json_per_epoch_with_dev(sk, tmp_path):
    m, mj = tmp_path / "m.npz", tmp_path / "metrics.json"
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--dev", CHUNK_TEST, "--model", m,
           "--epochs", 3, "--metrics-json", mj)
    assert r.code == 0 and m.exists()
    data = json.loads(mj.read_text())
    assert data["config"]["config"]["task"] == "chunk"
    assert data["config"]["config"]["epochs"] == 3
    assert data["config"]["train_tokens"] == 121
    assert [e["epoch"] for e in data["epochs"]] == [1, 2, 3]
    for e in data["epochs"]:
        assert 0 <= e["train_accuracy"] <= 100
        assert set(e["dev"]) >= {"accuracy", "precision", "recall", "f1"}
        assert 0 <= e["dev"]["f1"] <= 100


def test_metrics_json_without_dev_and_for_pos(sk, tmp_path):
    m, mj = tmp_path / "m.npz", tmp_path / "metrics.json"
    assert sk("train", "--task", "pos", "--train", POS_TRAIN, "--model", m, "--epochs", 2,
              "--metrics-json", mj).code == 0
    epochs = json.loads(mj.read_text())["epochs"]
    assert len(epochs) == 2 and all("dev" not in e for e in epochs)
    assert sk("train", "--task", "pos", "--train", POS_TRAIN, "--dev", POS_TRAIN, "--model", m,
              "--epochs", 2, "--metrics-json", mj).code == 0
    epochs = json.loads(mj.read_text())["epochs"]
    assert all(set(e["dev"]) == {"accuracy"} for e in epochs)


def test_verbose_prints_one_line_per_epoch(sk, tmp_path):
    r = sk("train", "--task", "pos", "--train", POS_TRAIN, "--model", tmp_path / "m.npz", "--epochs", 2, "-v")
    assert r.code == 0
    assert [line.split(":")[0] for line in r.err.splitlines()[:2]] == ["epoch 1/2", "epoch 2/2"]
    assert r.err.splitlines()[-1].startswith("wrote ")


def test_config_toml_and_flags_override(sk, tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'name = "t"\ntask = "chunk"\nepochs = 5\nalgo = "greedy"\n[data]\ntrain = "{CHUNK_TRAIN}"\n')
    m, mj = tmp_path / "m.npz", tmp_path / "metrics.json"
    r = sk("train", "--config", cfg, "--model", m, "--epochs", 2, "--metrics-json", mj)
    assert r.code == 0, r.err
    conf = json.loads(mj.read_text())["config"]["config"]
    assert conf["epochs"] == 2 and conf["algo"] == "greedy" and conf["task"] == "chunk"
    # The model records the merged config too.
    from structkit.sequence.task import SequenceTagger
    assert SequenceTagger.load(str(m)).config.epochs == 2


@pytest.mark.parametrize("text, needle", [
    ('task = "chunk"\nfoo = 1\n', "unknown config key(s): foo"),
    ('task = "chunk"\n[data]\ntest2 = "x"\n', "data.test2"),
    ('task = "chunk"\nepochs = [\n', "not valid TOML"),
    ('task = "chunk"\nepochs = "ten"\n', "epochs must be an integer, got 'ten'"),
    ('task = "chunk"\nseed = -3\n', "--seed"),
    ('task = "chunk"\nepochs = 0\n', "--epochs"),
    ('task = "nope"\n', "--task"),
])
def test_bad_config(sk, tmp_path, text, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    m = tmp_path / "m.npz"
    r = sk("train", "--config", cfg, "--train", CHUNK_TRAIN, "--model", m)
    line = assert_one_line_error(r, needle, code=1)
    if "--" not in needle:
        assert f"{cfg}: " in line
    assert not m.exists() and leftovers(tmp_path) == []


def test_config_missing_directory_or_not_utf8(sk, tmp_path):
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--config", tmp_path / "no.toml", "--model", m),
                          f"{tmp_path / 'no.toml'}: no such config file")
    assert_one_line_error(sk("train", "--config", tmp_path, "--model", m), f"{tmp_path}: ")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'task = "chunk"\n# caf\xe9\n')
    assert_one_line_error(sk("train", "--config", bad, "--train", CHUNK_TRAIN, "--model", m),
                          f"{bad}: ", "UTF-8")
    assert not m.exists()


# ---- dump, parse, rerank, misc ---------------------------------------------------------------
def test_dump_shows_labels_and_feature_names(sk, models):
    r = sk("dump", "--model", models["chunk"], "--top", 5)
    assert r.code == 0
    assert "task chunk, algo perceptron, 6 labels" in r.out
    assert "labels: B-NP B-PP B-VP I-NP I-VP O" in r.out
    feats = r.out.split("strongest features")[1].splitlines()[1:]
    assert 1 <= len(feats) <= 5
    assert all("=" in f and ":" in f for f in feats)


def test_pos_on_conllu_defaults_to_the_ud_set_and_kbest_pa(sk, tmp_path):
    """POS tagging on CoNLL-U: the ud template set (words and the tag dictionary only) and the
    k-best PA learner unless --algo says otherwise; the model tags raw text."""
    train = REPO / "structkit" / "data" / "sample" / "ud" / "train.conllu"
    m, p = tmp_path / "m.npz", tmp_path / "p.npz"
    assert sk("train", "--task", "pos", "--train", train, "--model", m, "-q").code == 0
    r = sk("dump", "--model", m, "--feature", "amb[0]=", "--top", 3)
    assert "task pos, algo kbest-pa, " in r.out and "amb[0]=" in r.out
    assert sk("train", "--task", "pos", "--train", train, "--model", p, "--algo", "perceptron", "-q").code == 0
    assert "task pos, algo perceptron, " in sk("dump", "--model", p).out
    r = sk("tag", "--model", m, "--text", "-", stdin=b"The town council met on Monday .\n")
    assert r.code == 0 and r.out.split()[:2] == ["The", "DET"]
    # --C is kbest-pa's: taken without --algo on CoNLL-U, refused for the perceptron on columns
    assert sk("train", "--task", "pos", "--train", train, "--model", p, "--C", "0.5", "-q").code == 0
    assert "algo kbest-pa" in sk("dump", "--model", p).out
    assert_one_line_error(sk("train", "--task", "pos", "--train", REPO / "structkit" / "data" / "sample" / "pos" / "train.txt",
                             "--model", p, "--C", "0.5"), "--C does not apply to --algo perceptron")


def test_dump_feature_filter(sk, models):
    r = sk("dump", "--model", models["chunk"], "--feature", "p[0]=", "--top", 50)
    assert r.code == 0
    feats = r.out.split("strongest features")[1].splitlines()[1:]
    # "contains": cap[0]=1 matches p[0]= too.
    assert feats and all("p[0]=" in f for f in feats)
    assert any(f.strip().startswith("p[0]=DT:") for f in feats)
    assert not any(f.strip().startswith(("w[", "suf", "pre")) for f in feats)
    r = sk("dump", "--model", models["chunk"], "--feature", "no-such-feature")
    assert r.out.rstrip().endswith("(none)")


@pytest.mark.parametrize("args, needle, code", [
    (["rerank"], "Missing option '-m' / '--model'", 2),
    (["eval", "--task", "rerank", "x"], "x: no such file", 1),
    (["train", "--task", "rerank", "--train", CHUNK_TRAIN, "--model", "m"], "chunk_train.txt:1: expected", 1)])
def test_rerank_misuse_is_one_line(sk, args, needle, code):
    """Every command is implemented; misusing the reranker's gives one line (CoNLL is not n-best)."""
    r = sk(*args)
    assert_one_line_error(r, needle, code=code)


def test_version_and_bare_command(sk):
    r = sk("--version")
    assert r.code == 0 and "structkit" in r.out
    r = sk()
    assert r.code == 2 and "Usage:" in r.err and "error" not in r.err.splitlines()[0]


# ---- bad options -----------------------------------------------------------------------------
@pytest.mark.parametrize("extra, needle", [
    (["--epochs", "0"], "--epochs must be a positive integer, got 0"),
    (["--epochs", "-1"], "--epochs must be a positive integer, got -1"),
    (["--algo", "nope"], "--algo must be one of perceptron, greedy"),
    (["--task", "nope"], "--task must be one of pos, chunk, ner, parse, rerank, tokenize, morph or pipeline, got 'nope'"),
    (["--label-order", "3"], "--label-order must be 1 or 2, got 3"),
    (["--label-order", "2"], "--label-order 2 needs"),
    (["--direction", "up"], "--direction must be ltr or rtl, got 'up'"),
    (["--cutoff", "0"], "--cutoff"),
    (["--seed", "-1"], "--seed"),
    (["--columns", "word,foo"], "--columns"),
    (["--templates", "x(0)"], "bad feature template 'x(0)'"),
    (["--templates", "x[0]"], "a feature template reads the column 'x', which this input does not have"),
])
def test_train_bad_option_values(sk, tmp_path, extra, needle):
    m, mj = tmp_path / "m.npz", tmp_path / "mj.json"
    args = ["train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m, "--epochs", "2",
            "--metrics-json", mj]
    if extra[0] == "--task":
        args[1:3] = []
    r = sk(*args, *extra)
    assert_one_line_error(r, needle, code=1)
    assert not m.exists() and not mj.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("args, needle", [
    (["train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", "m.npz", "--epochs", "abc"],
     "--epochs must be an integer, got 'abc'"),
    (["train", "--task", "chunk", "--train", CHUNK_TRAIN], "Missing option '-m' / '--model'"),
    (["train", "--bogus"], "No such option"),
    (["dump", "--model", "m.npz", "--top", "0"], "--top"),
    (["nosuchcommand"], "No such command"),
])
def test_click_usage_errors_are_one_line_exit_2(sk, tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(sk(*args), needle, code=2)
    assert os.listdir(tmp_path) == []


def test_train_missing_train_and_task(sk, tmp_path):
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", "chunk", "--model", m), "--train is required")
    assert_one_line_error(sk("train", "--train", CHUNK_TRAIN, "--model", m), "--task is required")
    assert not m.exists()


def test_train_output_destinations_checked_before_training(sk, tmp_path):
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "no" / "m.npz"),
                          f"{tmp_path / 'no' / 'm.npz'}: cannot write")
    assert_one_line_error(sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path),
                          f"{tmp_path}: cannot write")
    # A bad --metrics-json must not leave a model behind.
    assert_one_line_error(sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m,
                             "--metrics-json", tmp_path / "no" / "m.json"), "no/m.json: cannot write")
    assert os.listdir(tmp_path) == []


# ---- bad training data ---------------------------------------------------------------------
def test_train_nonexistent_file(sk, tmp_path):
    m = tmp_path / "m.npz"
    missing = tmp_path / "nope.txt"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", missing, "--model", m),
                          f"{missing}: no such file")
    assert not m.exists()


def test_train_malformed_rows_name_the_line(sk, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("The DT B-NP\ncat NN I-NP\n\nsat VBD B-VP\non IN\n. . O\n")
    m = tmp_path / "m.npz"
    line = assert_one_line_error(sk("train", "--task", "chunk", "--train", bad, "--model", m),
                                 f"{bad}:5: expected 3 columns, found 2", code=1)
    assert line == f"structkit: error: {bad}:5: expected 3 columns, found 2"
    assert not m.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("task", ["chunk", "ner"])
def test_train_unknown_phrase_label_names_the_line(sk, tmp_path, task):
    """A label column that is not phrase tags (e.g. the POS column by mistake) is refused."""
    bad = tmp_path / "bad.txt"
    bad.write_text("The DT B-NP\ncat NN I-NP\n\nsat VBD VP\n. . O\n")
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", task, "--train", bad, "--model", m),
                          f"{bad}:4: unknown label 'VP'", code=1)
    assert not m.exists() and leftovers(tmp_path) == []


def test_train_malformed_dev_names_the_dev_file(sk, tmp_path):
    dev = tmp_path / "dev.txt"
    dev.write_text("The DT B-NP\n\n\ncat\tNN\t\tI-NP\n")
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--dev", dev, "--model", m),
                          f"{dev}:4: empty column")
    assert not m.exists()


def test_train_invalid_utf8_names_the_line(sk, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"The DT B-NP\ncaf\xe9 NN I-NP\n")
    assert_one_line_error(sk("train", "--task", "chunk", "--train", bad, "--model", tmp_path / "m.npz"),
                          f"{bad}:2: not valid UTF-8")


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"-DOCSTART- -X- O\n\n"])
def test_train_empty_file(sk, tmp_path, content):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(content)
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", empty, "--model", m),
                          f"{empty}: empty file")
    assert not m.exists()


# ---- bad eval inputs -----------------------------------------------------------------------
@pytest.fixture
def tagged(sk, models, tmp_path) -> Path:
    p = tmp_path / "tagged.txt"
    assert sk("chunk", "--model", models["chunk"], CHUNK_TEST, "-o", p).code == 0
    return p


def test_eval_token_mismatch(sk, tagged, tmp_path):
    lines = tagged.read_text().splitlines()
    assert lines[1].startswith("dog ")
    lines[1] = "cat" + lines[1][3:]
    pred = tmp_path / "pred.txt"
    pred.write_text("\n".join(lines) + "\n")
    assert_one_line_error(sk("eval", "--task", "chunk", CHUNK_TEST, pred),
                          f"{pred}:2: token 'cat' does not line up with gold token 'dog'", f"line 2 of {CHUNK_TEST}")


def test_eval_prediction_with_fewer_sentences(sk, tagged, tmp_path):
    pred = tmp_path / "pred.txt"
    pred.write_text("\n\n".join(tagged.read_text().split("\n\n")[:2]) + "\n")
    assert_one_line_error(sk("eval", "--task", "chunk", CHUNK_TEST, pred),
                          f"{pred}: the prediction file ends before the gold file")


def test_eval_prediction_with_more_sentences(sk, tagged, tmp_path):
    gold = tmp_path / "gold.txt"
    gold.write_text("\n\n".join(Path(CHUNK_TEST).read_text().split("\n\n")[:3]) + "\n")
    assert_one_line_error(sk("eval", "--task", "chunk", gold, tagged),
                          f"{tagged}:23: the prediction file has more sentences than the gold file")


def test_eval_sentence_length_mismatch(sk, tagged, tmp_path):
    lines = tagged.read_text().splitlines()
    del lines[3]                        # drop 'on' from the first sentence
    pred = tmp_path / "pred.txt"
    pred.write_text("\n".join(lines) + "\n")
    assert_one_line_error(sk("eval", "--task", "chunk", CHUNK_TEST, pred),
                          f"{pred}:1: sentence has 6 tokens, but the gold sentence at line 1")


def test_eval_unknown_chunk_label(sk, tagged, tmp_path):
    lines = tagged.read_text().splitlines()
    assert lines[10] == "the DT B-NP B-NP"
    lines[10] = "the DT B-NP NP"
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    assert_one_line_error(sk("eval", "--task", "chunk", bad), f"{bad}:11: unknown label 'NP'")
    assert_one_line_error(sk("eval", "--task", "ner", "--json", bad), f"{bad}:11: unknown label 'NP'")


def test_eval_unknown_label_in_gold_file(sk, tagged, tmp_path):
    gold = tmp_path / "gold.txt"
    gold.write_text(Path(CHUNK_TEST).read_text().replace("sat VBD B-VP", "sat VBD VP"))
    assert_one_line_error(sk("eval", "--task", "chunk", gold, tagged), f"{gold}:3: unknown label 'VP'")


def test_eval_files_without_label_columns(sk, tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("a\nb\n")
    assert_one_line_error(sk("eval", "--task", "chunk", words), f"{words}:1: need at least 2 columns")
    assert_one_line_error(sk("eval", "--task", "chunk", CHUNK_TEST, words), f"{words}:1:")
    assert_one_line_error(sk("eval", "--task", "pos", POS_TRAIN, words), f"{words}:1:")
    # A gold-only POS file (word TAG) is not conlleval's one-file layout.
    assert_one_line_error(sk("eval", "--task", "pos", POS_TRAIN), f"{POS_TRAIN}:1: need at least 3 columns")


def test_eval_bad_arguments(sk, tmp_path):
    assert_one_line_error(sk("eval", "--task", "chunk"), "got 0")
    assert_one_line_error(sk("eval", "--task", "chunk", CHUNK_TEST, CHUNK_TEST, CHUNK_TEST), "got 3")
    assert_one_line_error(sk("eval", "--task", "nope", CHUNK_TEST), "--task must be one of")
    missing = tmp_path / "nope.txt"
    assert_one_line_error(sk("eval", "--task", "chunk", missing), f"{missing}: no such file")


# ---- bad tagging inputs and models ---------------------------------------------------------
def test_chunk_model_with_tag_command(sk, models, tmp_path):
    out = tmp_path / "out.txt"
    line = assert_one_line_error(sk("tag", "--model", models["chunk"], POS_TRAIN, "-o", out),
                                 f"{models['chunk']}: ", "'chunk'", "structkit tag")
    assert "pos model" in line
    assert not out.exists()
    assert_one_line_error(sk("ner", "--model", models["pos"], NER_TRAIN), "'pos'", "structkit ner")


def test_wrong_column_count_at_tag_time(sk, models, tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("\nThe\ncat\n")
    out = tmp_path / "out.txt"
    assert_one_line_error(sk("chunk", "--model", models["chunk"], one, "-o", out),
                          f"{one}:2: expected 3 columns (word,pos,label, as in training) or 2")
    four = tmp_path / "four.txt"
    four.write_text("The DT B-NP B-NP\n")
    assert_one_line_error(sk("chunk", "--model", models["chunk"], four, "-o", out), f"{four}:1: ", "found 4")
    assert not out.exists() and leftovers(tmp_path) == []


def test_malformed_input_after_good_sentences_leaves_no_output(sk, models, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text(Path(CHUNK_TEST).read_text() + "\nThe DT\n")
    out = tmp_path / "out.txt"
    assert_one_line_error(sk("chunk", "--model", models["chunk"], bad, "-o", out),
                          f"{bad}:30: expected 3 columns, found 2")
    assert not out.exists() and leftovers(tmp_path) == []


def test_second_input_missing_leaves_no_output(sk, models, tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("previous\n")
    missing = tmp_path / "missing.txt"
    assert_one_line_error(sk("chunk", "--model", models["chunk"], CHUNK_TEST, missing, "-o", out),
                          f"{missing}: no such file")
    assert out.read_text() == "previous\n" and leftovers(tmp_path) == []


def test_text_input_for_a_model_that_needs_pos(sk, models):
    assert_one_line_error(sk("chunk", "--model", models["chunk"], "--text", "-", stdin=b"The cat sat\n"),
                          "<stdin>: ", "POS column")


def test_output_to_a_directory_or_missing_folder(sk, models, tmp_path):
    assert_one_line_error(sk("chunk", "--model", models["chunk"], CHUNK_TEST, "-o", tmp_path),
                          f"{tmp_path}: cannot write")
    target = tmp_path / "no" / "out.txt"
    assert_one_line_error(sk("chunk", "--model", models["chunk"], CHUNK_TEST, "-o", target),
                          f"{target}: cannot write")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("damage", ["missing", "truncated", "random", "text", "empty"])
def test_model_file_missing_or_corrupt(sk, models, tmp_path, damage):
    m = tmp_path / "m.npz"
    data = Path(models["chunk"]).read_bytes()
    if damage == "truncated":
        m.write_bytes(data[: len(data) // 2])
    elif damage == "random":
        m.write_bytes(np.random.default_rng(0).integers(0, 256, 2000, dtype=np.uint8).tobytes())
    elif damage == "text":
        m.write_text("The DT B-NP\n")
    elif damage == "empty":
        m.write_bytes(b"")
    out = tmp_path / "out.txt"
    for cmd in (["chunk", "--model", m, CHUNK_TEST, "-o", out], ["dump", "--model", m],
                ["eval", "--task", "chunk", "--model", m, CHUNK_TEST]):
        assert_one_line_error(sk(*cmd), f"{m}: ", code=1)
    assert not out.exists()


# ---- the installed entry point, as a separate process ---------------------------------------
def test_python_m_structkit_errors(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    m = tmp_path / "m.npz"
    p = subprocess.run([sys.executable, "-m", "structkit", "train", "--task", "chunk", "--train", CHUNK_TRAIN,
                        "--model", str(m), "--epochs", "0"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == "structkit: error: --epochs must be a positive integer, got 0\n"
    p = subprocess.run([sys.executable, "-m", "structkit", "chunk", "--model", str(m), CHUNK_TEST],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 1 and p.stderr == f"structkit: error: {m}: no such model file\n"
    p = subprocess.run([sys.executable, "-m", "structkit", "rerank", "--model", str(m), "x.json"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 1 and p.stderr == f"structkit: error: {m}: no such model file\n"
    assert os.listdir(tmp_path) == []


# ---- k-best learners --------------------------------------------------------------------------
@pytest.mark.parametrize("algo", ["kbest-perceptron", "kbest-pa", "kbest-rpa", "kbest-mira", "kbest-sdm",
                                  "kbest-larank"])
def test_kbest_learners_train_and_tag(sk, tmp_path, algo):
    m = tmp_path / "m.npz"
    c = [] if algo == "kbest-perceptron" else ["--C", "0.5"]  # the perceptron takes no C
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m, "--algo", algo,
           "--k", "3", *c, "--epochs", "3")
    assert r.code == 0, r.err
    r = sk("chunk", "--model", m, CHUNK_TEST)
    assert r.code == 0, r.err
    rows = [l.split() for l in r.out.splitlines() if l.strip()]
    assert rows and all(len(row) == 4 for row in rows)  # word POS gold + prediction


@pytest.mark.parametrize("extra, needle", [
    (["--algo", "kbest-pa", "--k", "0"], "--k must be a positive integer, got 0"),
    (["--algo", "kbest-pa", "--C", "0"], "--C must be a positive number, got 0.0"),
    (["--algo", "kbest-rpa", "--C", "nan"], "--C must be a positive number"),
    (["--algo", "kbest-sdm", "--tau", "-1"], "--tau must be a non-negative number, got -1.0"),
    (["--algo", "kbest-larank", "--nr", "-1"], "--nr must be a non-negative integer, got -1"),
    (["--algo", "kbest-pa", "--label-order", "2"], "--label-order 2 needs a history-based learner"),
    (["--algo", "kbest-pa", "--depth", "2"], "--depth applies to history-based learners"),
])
def test_kbest_bad_options(sk, tmp_path, extra, needle):
    m = tmp_path / "m.npz"
    assert_one_line_error(sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", m, *extra),
                          needle, code=1)
    assert not m.exists()


# ---- McNemar between two systems -------------------------------------------------------------
def _flip_some_predictions(src: str, dst: Path, every: int) -> tuple[int, int]:
    """Copy a conlleval-layout file, setting every ``every``-th prediction to the gold label
    (when wrong) or to 'O'/'B-NP' (when right); returns (fixed, broken)."""
    fixed = broken = 0
    out = []
    k = 0
    for line in Path(src).read_text().splitlines():
        cols = line.split()
        if cols:
            k += 1
            if k % every == 0:
                if cols[-1] != cols[-2]:
                    cols[-1] = cols[-2]
                    fixed += 1
                else:
                    cols[-1] = "O" if cols[-2] != "O" else "B-NP"
                    broken += 1
        out.append(" ".join(cols))
    dst.write_text("\n".join(out) + "\n")
    return fixed, broken


def test_eval_compare_mcnemar(sk, models, tmp_path):
    a = tmp_path / "a.txt"
    assert sk("chunk", "--model", models["chunk"], CHUNK_TEST, "-o", a).code == 0
    b = tmp_path / "b.txt"
    fixed, broken = _flip_some_predictions(str(a), b, 3)
    assert fixed + broken > 0
    r = sk("eval", "--task", "chunk", a, "--compare", b, "--json")
    assert r.code == 0, r.err
    res = json.loads(r.out)
    # b is right on the tokens it fixed and wrong on those it broke; a the other way round
    assert res["a_only"] == broken and res["b_only"] == fixed
    assert 0 < res["exact_p"] <= 1
    r = sk("eval", "--task", "chunk", a, "--compare", a)
    assert r.code == 0 and "exact p = 1" in r.out


def test_eval_compare_misaligned(sk, models, tmp_path):
    a = tmp_path / "a.txt"
    assert sk("chunk", "--model", models["chunk"], CHUNK_TEST, "-o", a).code == 0
    short = tmp_path / "short.txt"
    short.write_text(a.read_text().split("\n\n")[0] + "\n")
    assert_one_line_error(sk("eval", "--task", "chunk", a, "--compare", short), str(short),
                          "does not line up", code=1)


def test_algorithms_for_every_task_offered():
    """`algorithms --task T` for each T its --help offers: no traceback. ud trains nothing; a
    pipeline lists the learners of its parts (tokenizer, morphology, parser)."""
    from structkit.tasks import names

    for t in names():
        r = CliRunner().invoke(cli, ["algorithms", "--task", t])
        assert r.exit_code == 0 and r.exception is None, (t, r.output)
        assert r.output.strip(), t
    ud = invoke("algorithms", "--task", "ud").output
    assert ud == "--task ud has no learners: it trains no model\n"
    pipe = invoke("algorithms", "--task", "pipeline").output.splitlines()
    assert pipe[0] == "--task pipeline trains its parts (tokenize, morph, parse) with their learners:"
    assert {line.split()[0] for line in pipe[1:]} >= {"pa", "perceptron", "beam", "lookahead", "greedy"}
    assert "beam:" in invoke("algorithms", "beam", "--task", "pipeline").output


def test_help_texts_offer_what_works():
    """train offers the tasks it trains (not ud, which only scores: still its own one-line
    error) and shows the raw-text tasks; eval names ud, morph and pipeline; serve's -m says a
    morph model and a pipeline are served."""
    train = invoke("train", "--help").output
    offered = train.split("--task [", 1)[1].split("]", 1)[0].split("|")
    assert "ud" not in offered and {"pipeline", "tokenize", "morph", "pos", "parse"} <= set(offered)
    for task in ("pipeline", "tokenize", "morph"):
        assert f"structkit train --task {task} " in train
    r = CliRunner().invoke(cli, ["train", "--task", "ud", "--train", "x", "-m", "m"])
    assert r.exit_code != 0 and "it has no model to train" in str(r.exception)
    ev = " ".join(invoke("eval", "--help").output.split())
    for task in ("--task ud", "--task morph", "--task pipeline"):
        assert task in ev
    serve = " ".join(invoke("serve", "--help").output.split())
    assert "morph model, or a pipeline" in serve and "/morph" in serve


def test_the_command_line_starts_without_numpy():
    """`structkit --help` and the parsing of every command's options load neither numpy nor
    numba (nor any model code): the wings and commands import their work inside the functions
    that do it, which is why those imports are not at the top of their files."""
    import subprocess
    import sys

    code = ("import sys, structkit.cli\n"
            "heavy = sorted(m for m in ('numpy', 'numba', 'scipy') if m in sys.modules)\n"
            "print(heavy)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
