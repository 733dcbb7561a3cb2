"""A file whose very first block cannot be read (so its format could not be sniffed), in the
middle of several files: one line naming the file and line, never a traceback, with and without
--keep-going, in one stream or one output per input (issue 30: an AttributeError on
``ctx.n_columns`` came from writing the bad file's start-of-file mark)."""
from __future__ import annotations

import os

import pytest

from clitools import assert_one_line_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "structkit", "data", "sample")
GOOD = os.path.join(SAMPLE, "chunk", "test.txt")


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory):
    from structkit.sequence.task import TaggerConfig, train_tagger

    p = tmp_path_factory.mktemp("m") / "chunk.model"
    train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=1),
                 os.path.join(SAMPLE, "chunk", "train.txt")).save(str(p))
    return str(p)


def _bad_first_block(tmp_path):
    bad = tmp_path / "b.txt"
    bad.write_text("one two three four five six seven eight nine\nfoo\n\n")
    return str(bad)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_bad_file_in_the_middle_stops_with_one_line(sk, chunk_model, tmp_path, jobs):
    bad = _bad_first_block(tmp_path)
    r = sk("chunk", "--model", chunk_model, GOOD, bad, GOOD, "-j", jobs)
    assert_one_line_error(r, f"{bad}:2:", "expected 9 columns, found 1")
    assert r.out.count("-DOCSTART-") == 1  # the first file, then the stop


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_keep_going_in_one_stream_skips_it(sk, chunk_model, tmp_path, jobs):
    bad = _bad_first_block(tmp_path)
    r = sk("chunk", "--model", chunk_model, GOOD, bad, GOOD, "--keep-going", "-j", jobs)
    assert r.code == 1 and "Traceback" not in r.err
    lines = r.err.splitlines()
    assert lines[0].endswith(f"{bad}:2: expected 9 columns, found 1") and "1 of 3 files failed" in lines[1]
    one = sk("chunk", "--model", chunk_model, GOOD).out
    assert r.out.count("-DOCSTART-") == 2 and r.out.count(one) == 2 and bad not in r.out


def test_keep_going_with_output_dir(sk, chunk_model, tmp_path):
    bad = _bad_first_block(tmp_path)
    (tmp_path / "in").mkdir()
    for name in ("a.txt", "c.txt"):
        (tmp_path / "in" / name).write_bytes(open(GOOD, "rb").read())
    os.replace(bad, tmp_path / "in" / "b.txt")
    r = sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "--keep-going",
           "--output-dir", str(tmp_path / "o"))
    assert r.code == 1 and "Traceback" not in r.err and "b.txt:2:" in r.err
    assert sorted(os.listdir(tmp_path / "o")) == ["a.conll", "c.conll"]


def test_parse_with_a_bad_file_in_the_middle(sk, tmp_path):
    model = tmp_path / "p.model"
    ud = os.path.join(SAMPLE, "ud")
    assert sk("train", "--task", "parse", "--train", os.path.join(ud, "train.conllu"), "--epochs", "1",
              "--model", str(model)).code == 0
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tThe\n\n")
    test = os.path.join(ud, "test.conllu")
    r = sk("parse", "--model", str(model), test, str(bad), test, "--keep-going")
    assert r.code == 1 and "Traceback" not in r.err and f"{bad}:1:" in r.err
    assert r.out.count("# file = ") == 2


def test_output_dir_never_writes_through_a_link(sk, chunk_model, tmp_path):
    """Issue 41, item 5: a symbolic link already in --output-dir (as an output file, or as a
    folder on an output's way) sent the output elsewhere: `od/a.conll -> ../outside/victim.txt`
    was overwritten with exit 0. Refused in one line before any work; the file it points to and
    the folder outside stay as they were. The folder named may itself be a link."""
    (tmp_path / "in" / "sub").mkdir(parents=True)
    for name in ("a.txt", "sub/b.txt"):
        (tmp_path / "in" / name).write_bytes(open(GOOD, "rb").read())
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "victim.txt").write_text("victim\n")
    od = tmp_path / "od"
    od.mkdir()
    (od / "a.conll").symlink_to(outside / "victim.txt")
    assert_one_line_error(sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "--output-dir", str(od)),
                          "a.conll is a symbolic link", "--output-dir")
    assert (outside / "victim.txt").read_text() == "victim\n"
    (od / "a.conll").unlink()
    (od / "sub").symlink_to(outside / "sub", target_is_directory=True)
    assert_one_line_error(sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "--output-dir", str(od)),
                          "sub is a symbolic link")
    assert os.listdir(outside / "sub") == [] and not (od / "a.conll").exists()
    (od / "sub").unlink()
    (tmp_path / "via").symlink_to(od, target_is_directory=True)      # the folder given: a link, allowed
    r = sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "--output-dir", str(tmp_path / "via"))
    assert r.code == 0, r.err
    assert sorted(os.listdir(od)) == ["a.conll", "sub"]
