"""Hostile inputs to the smaller commands (issue 30, item 6): each is one line and a non-zero
exit, never a traceback."""
from __future__ import annotations

import json
import os
import sys

import pytest

from clitools import assert_one_line_error
from conftest import require_extra

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK = os.path.join(ROOT, "structkit", "data", "sample", "chunk")


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory):
    from structkit.sequence.task import TaggerConfig, train_tagger

    p = tmp_path_factory.mktemp("m") / "chunk.model"
    train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=1),
                 os.path.join(CHUNK, "train.txt")).save(str(p))
    return str(p)


@pytest.mark.parametrize("n", [str(10 ** 30), str(sys.maxsize + 1), "11"])
def test_explain_sentence_past_the_end(sk, chunk_model, n):
    test = os.path.join(CHUNK, "test.txt")
    n_sents = open(test).read().strip().count("\n\n") + 1
    assert_one_line_error(sk("explain", "--model", chunk_model, test, "--sentence", n),
                          f"there is no sentence {n} (the file has {n_sents})")


def _metrics(tmp_path, epochs, name="m.json"):
    p = tmp_path / name
    p.write_text(json.dumps({"epochs": epochs}))
    return str(p)


@pytest.mark.parametrize("epochs,needle", [
    ([{"epoch": {"a": 1}, "dev": {"f1": 1}}], "epoch 1 is numbered"),
    ([{"epoch": 1.5, "dev": {"f1": 1}}], "epoch 1 is numbered"),
    ([{"epoch": 1, "dev": {"f1": 1e308}}], "epoch 1 has dev f1 1e+308, not a score"),
    ([{"epoch": 1, "dev": {"f1": 3}}, {"epoch": 2, "dev": {"f1": "high"}}], "epoch 2 has dev f1 'high', not a number"),
    ([{"epoch": 1, "train_accuracy": -1e300}], "epoch 1 has train_accuracy -1e+300, not a score"),
])
def test_plot_odd_metrics_files(sk, tmp_path, epochs, needle):
    require_extra("matplotlib", "plot")
    assert_one_line_error(sk("plot", _metrics(tmp_path, epochs), "-o", str(tmp_path / "o.png")), needle)
    assert not (tmp_path / "o.png").exists()


def test_plot_title_and_labels_are_plain_text(sk, tmp_path):
    """A ``$`` in a title (or in a label from the file) would start matplotlib's mathtext, and
    ``$x^{$`` does not parse: shown as written instead."""
    require_extra("matplotlib", "plot")
    good = _metrics(tmp_path, [{"epoch": 1, "dev": {"f1": 50}}, {"epoch": 2, "dev": {"f1": 60}}])
    r = sk("plot", good, "-o", str(tmp_path / "o.png"), "--title", "$x^{$ costs $5")
    assert r.code == 0, r.err
    assert (tmp_path / "o.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_reads_a_bounded_amount(sk, tmp_path):
    require_extra("matplotlib", "plot")
    assert_one_line_error(sk("plot", "/dev/zero", "-o", str(tmp_path / "o.png")),
                          "/dev/zero: not a metrics file: larger than 64 MB")


@pytest.mark.parametrize("text,needle", [(False, "no blank line in 65 MB: not sentences of CoNLL rows"),
                                         (True, "a NUL byte: not text")])
def test_an_input_without_sentence_ends_is_refused_at_the_block_cap(sk, chunk_model, text, needle):
    """/dev/zero as the input of chunk: the block reader accumulated it until memory ran out;
    it stops at MAX_BLOCK_BYTES without a blank line (rows); raw text is read in blocks of at most
    MAX_TEXT_BLOCK_BYTES and holds no NUL byte."""
    args = ["chunk", "--model", chunk_model, "/dev/zero"] + (["--text"] if text else [])
    assert_one_line_error(sk(*args), "/dev/zero:1:", needle)


def test_raw_text_without_blank_lines_is_cut_at_a_line_end(monkeypatch):
    from structkit.io import blocks as batch

    monkeypatch.setattr(batch, "MAX_TEXT_BLOCK_BYTES", 1000)
    import io as _io

    data = b"".join(b"line %d has some words\n" % i for i in range(400))
    blocks = list(batch.iter_blocks(_io.BytesIO(data), 100, lines=True))
    assert b"".join(b for _, b in blocks) == data and len(blocks) > 1
    assert all(b.endswith(b"\n") for _, b in blocks)
    line = 1
    for first, b in blocks:
        assert first == line
        line += b.count(b"\n")


def test_a_paragraph_without_end_streams_in_bounded_blocks(monkeypatch):
    """Issue 41, item 1: raw text with no blank line (`yes | annotate`, a 10 MB line) was held
    whole, up to 64 MB a block, before any analysis (2.1 GB and no output in 200 s). Blocks of
    raw text are now cut at a line end near MAX_TEXT_BLOCK_BYTES; a longer line stays whole up
    to MAX_LINE_BYTES (a treebank's test text may be one 158 KB line), past that it is cut at a
    space, else between characters (never inside a UTF-8 sequence); every byte is kept, in order."""
    import io as _io

    from structkit.io import blocks as B

    monkeypatch.setattr(B, "MAX_TEXT_BLOCK_BYTES", 1000)
    monkeypatch.setattr(B, "MAX_LINE_BYTES", 3000)
    for data in (b"y\n" * 5000, b"casa " * 2000, "\u00e8\u4e2d".encode() * 2000, b"x" * 10000):
        blocks = [b for _, b in B.iter_blocks(_io.BytesIO(data), 100, lines=True)]
        assert b"".join(blocks) == data
        assert len(blocks) > 2 and max(map(len, blocks)) <= (1000 if b"\n" in data else 3000)
        for b in blocks:
            b.decode("utf-8")          # whole characters
        if b" " in data:
            assert all(b.endswith(b" ") for b in blocks[:-1])
        elif b"\n" in data:
            assert all(b.endswith(b"\n") for b in blocks[:-1])
    # lines of 2,500 bytes (longer than a block, shorter than MAX_LINE_BYTES) are never cut
    data = b"".join((b"%d " % i) * 500 + b"\n" for i in range(100, 120))
    blocks = [b for _, b in B.iter_blocks(_io.BytesIO(data), 100, lines=True)]
    assert b"".join(blocks) == data and len(blocks) > 3
    assert all(b.endswith(b"\n") and len(b) == 2001 for b in blocks)

    class Counted(_io.BytesIO):      # how far the reader runs ahead of what it has given
        got = 0

        def read(self, n=-1):
            data = super().read(n)
            self.got += len(data)
            return data

    stream, given = Counted(b"y\n" * 100_000), 0
    for _, b in B.iter_blocks(stream, 100, lines=True):
        given += len(b)
        assert stream.got - given <= 2 * 100 + 1000
    assert given == 200_000


def test_a_one_line_error_quotes_little_of_a_huge_input(sk, tmp_path):
    """Issue 41, item 12: a message quotes a few dozen characters of the input, whatever its size
    (eval --task ud printed a 10 MB token whole, and every token of a 50,000-token cycle)."""
    from structkit.errors import MAX_MESSAGE, UserError

    big = "x" * 1_000_000
    gold, system, cycle = tmp_path / "gold.conllu", tmp_path / "big.conllu", tmp_path / "cycle.conllu"
    gold.write_text("# text = a\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    system.write_text(f"# text = {big}\n1\t{big}\t_\tX\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    n = 50_000
    cycle.write_text(f"# text = {' '.join(['a'] * n)}\n" + "".join(
        f"{i}\ta\ta\tX\t_\t_\t{i % n + 1}\tdep\t_\t_\n" for i in range(1, n + 1)) + "\n", encoding="utf-8")
    line = assert_one_line_error(sk("eval", "--task", "ud", str(gold), str(system)), "text differs",
                                 "1,000,000 characters")
    assert len(line) - 2 * len(str(tmp_path)) < 400, len(line)   # (the line names both files)
    line = assert_one_line_error(sk("eval", "--task", "ud", str(cycle), str(cycle)), "cycle", "50,000 tokens")
    assert len(line) < 300, len(line)
    # and whatever a message holds, it is shown cut
    shown = str(UserError("bad value " + "y" * 100_000, "f.txt", 3))
    assert shown.startswith("f.txt:3: bad value yyy") and len(shown) < MAX_MESSAGE + 100
    assert shown.endswith("(message cut: 100,010 characters)")


def test_what_a_killed_run_left_is_removed_by_the_next(sk, chunk_model, tmp_path, monkeypatch):
    """Issue 41, item 13: after SIGKILL, `.tmp-*` files stayed in the output folder (a
    --skip-existing rerun left them) and `structkit-jackknife-*` folders in TMPDIR. Temporary
    names carry their process's id; the next run making one in that folder removes those of
    dead processes of this host, and never one of a live process."""
    import signal
    import subprocess
    import tempfile

    from structkit.io import files

    out, tmp = tmp_path / "out", tmp_path / "tmpdir"
    out.mkdir()
    tmp.mkdir()
    child = ("import os, signal, sys, tempfile\n"
             "from structkit.io import files\n"
             "tempfile.tempdir = sys.argv[2]\n"
             "files.temporary_file('.tmp-', 'a.txt', sys.argv[1])\n"
             "cm = files.temporary_folder('structkit-jackknife-'); folder = cm.__enter__()\n"
             "open(os.path.join(folder, 'fold0.conllu'), 'w').write('x')\n"
             "os.kill(os.getpid(), signal.SIGKILL)\n")
    r = subprocess.run([sys.executable, "-c", child, str(out), str(tmp)], cwd=ROOT)
    assert r.returncode == -signal.SIGKILL
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive_name = f".tmp-{live.pid}.{files._HOST}-keep.txt"   # a live writer's file stays
        (out / alive_name).write_text("x")
        other_host = ".tmp-1.00000000-other.txt"                   # so does another host's
        (out / other_host).write_text("x")
        left = sorted(p.name for p in out.iterdir())
        assert len(left) == 3 and len(list(tmp.iterdir())) == 1
        test = os.path.join(CHUNK, "test.txt")
        run = sk("chunk", "--model", chunk_model, test, "-o", str(out / "t.txt"))
        assert run.code == 0, run.err
        assert sorted(p.name for p in out.iterdir()) == sorted([alive_name, other_host, "t.txt"])
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        with files.temporary_folder("structkit-jackknife-") as folder:
            assert [p.name for p in tmp.iterdir()] == [os.path.basename(folder)]
    finally:
        live.kill()
        live.wait()


def test_an_error_line_shows_control_characters_escaped(sk, tmp_path):
    """Found by the issue 41 harness: a file name holding ESC and BEL (an OSC title sequence)
    reached the terminal raw in the error line; every error and warning line goes through
    io.files.printable, as dumps do."""
    bad = tmp_path / "esc\x1b]0;pwned\x07.skm"
    bad.write_text("hello\n", encoding="utf-8")
    r = sk("info", bad)
    line = assert_one_line_error(r, "not a structkit model file")
    assert "\x1b" not in r.err and "\x07" not in r.err
    assert "esc\\x1b]0;pwned\\x07.skm" in line
