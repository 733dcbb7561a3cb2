"""Inputs that cannot be read twice and outputs that are links or devices (issue 30, item 2):
a FIFO or /dev/stdin as an input of --output-dir is read once (its first bytes, read to plan
the output's name, are not lost); `-o /dev/stdin` never empties the file behind standard
input; a model given as /dev/stdout redirected to a file, or as a symlink, replaces the file
the path names and leaves the link (and the device node) alone; a model to a pipe is refused."""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from clitools import assert_one_line_error, sk_cmd, sk_env

ROOT = Path(__file__).resolve().parents[1]
CHUNK = ROOT / "structkit" / "data" / "sample" / "chunk"


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory):
    from structkit.sequence.task import TaggerConfig, train_tagger

    p = tmp_path_factory.mktemp("m") / "chunk.model"
    train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=1), str(CHUNK / "train.txt")).save(str(p))
    return str(p)


def _big_input(tmp_path) -> bytes:
    """More than the 64 KB read to plan the output name, so losing them would show."""
    one = (CHUNK / "test.txt").read_bytes()
    data = one * (200_000 // len(one) + 1)
    (tmp_path / "big.txt").write_bytes(data)
    return data


class _Feeder:
    """Writes ``data`` into a FIFO once. A reader that opens the FIFO a second time (the bug:
    planning read the first bytes, then the run reopened it) would wait for a writer for ever;
    so, until ``join``, the feeder keeps releasing such a reader with an empty write side: it
    then reads end-of-file and the test fails on the missing data instead of hanging."""

    def __init__(self, path: Path, data: bytes):
        self.done = threading.Event()

        def write():
            with open(path, "wb") as f:
                f.write(data)
            while not self.done.wait(0.5):
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass  # no reader waiting (ENXIO)

        self.thread = threading.Thread(target=write, daemon=True)
        self.thread.start()

    def join(self, timeout: float) -> None:
        self.done.set()
        self.thread.join(timeout)


def _feed_fifo(path: Path, data: bytes) -> _Feeder:
    return _Feeder(path, data)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fifo_input_with_output_dir_is_read_whole(sk, chunk_model, tmp_path, jobs):
    data = _big_input(tmp_path)
    want = sk("chunk", "--model", chunk_model, str(tmp_path / "big.txt")).out
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = _feed_fifo(fifo, data)
    r = sk("chunk", "--model", chunk_model, str(fifo), "--output-dir", str(tmp_path / "o"), "-j", jobs)
    writer.join(timeout=60)
    assert r.code == 0, r.err
    assert (tmp_path / "o" / "in.conll").read_text() == want


def test_fifo_among_files_in_one_stream(sk, chunk_model, tmp_path):
    data = _big_input(tmp_path)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = _feed_fifo(fifo, data)
    r = sk("chunk", "--model", chunk_model, str(CHUNK / "test.txt"), str(fifo))
    writer.join(timeout=60)
    one = sk("chunk", "--model", chunk_model, str(tmp_path / "big.txt")).out
    assert r.code == 0 and r.out.endswith(one)


def test_dev_stdin_as_input_of_output_dir(chunk_model, tmp_path):
    """/dev/stdin on a pipe: a stream, read once."""
    data = _big_input(tmp_path)
    p = subprocess.run(sk_cmd("chunk", "--model", chunk_model, "/dev/stdin", "--output-dir", tmp_path / "o"),
                       input=data, capture_output=True, env=sk_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    want = subprocess.run(sk_cmd("chunk", "--model", chunk_model, tmp_path / "big.txt"), capture_output=True,
                          env=sk_env(), timeout=300).stdout
    assert (tmp_path / "o" / "stdin.conll").read_bytes() == want


def test_output_to_dev_stdin_never_empties_the_input(chunk_model, tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_bytes((CHUNK / "test.txt").read_bytes())
    before = inp.read_bytes()
    with open(inp, "rb") as stdin:
        p = subprocess.run(sk_cmd("chunk", "--model", chunk_model, "-", "-o", "/dev/stdin"), stdin=stdin,
                           capture_output=True, env=sk_env(), timeout=300)
    assert p.returncode == 1 and b"refusing to write over standard input" in p.stderr
    assert len(p.stderr.decode().splitlines()) == 1
    assert inp.read_bytes() == before


def test_model_to_a_stdout_link_redirected_to_a_file(tmp_path):
    """`-m /dev/stdout > m.npz`: the model lands in m.npz and the link stays a link. The test
    uses a link of its own to /proc/self/fd/1 (what /dev/stdout is), so that a regression
    replaces that link, not the machine's /dev/stdout (as root, the bug did exactly that)."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    out = tmp_path / "m.npz"
    with open(out, "wb") as f:
        p = subprocess.run(sk_cmd("train", "--task", "chunk", "--train", CHUNK / "train.txt", "--epochs", "1",
                                "-m", link), stdout=f, stderr=subprocess.PIPE, env=sk_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    assert os.path.islink(link) and os.readlink(link) == "/proc/self/fd/1"
    from structkit.api import Tagger
    assert Tagger.load(str(out)).labels  # the file behind it holds the model
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.npz", "stdout"]


def test_model_to_a_pipe_is_refused(tmp_path):
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    p = subprocess.run(sk_cmd("train", "--task", "chunk", "--train", CHUNK / "train.txt", "--epochs", "1",
                            "-m", link), capture_output=True, env=sk_env(), timeout=300)
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.decode().strip().endswith("cannot write: not a regular file (a model is written to a file)")


def test_model_through_a_symlink_keeps_the_link(sk, tmp_path):
    (tmp_path / "real.npz").write_bytes(b"old")
    (tmp_path / "link.npz").symlink_to("real.npz")
    r = sk("train", "--task", "chunk", "--train", str(CHUNK / "train.txt"), "--epochs", "1",
           "-m", str(tmp_path / "link.npz"))
    assert r.code == 0, r.err
    assert os.path.islink(tmp_path / "link.npz") and os.readlink(tmp_path / "link.npz") == "real.npz"
    assert (tmp_path / "real.npz").read_bytes()[:2] == b"PK"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.npz", "real.npz"]  # no temporary left


def test_model_to_a_fifo_is_refused(sk, tmp_path):
    os.mkfifo(tmp_path / "m.fifo")
    assert_one_line_error(sk("train", "--task", "chunk", "--train", str(CHUNK / "train.txt"), "--epochs", "1",
                             "-m", str(tmp_path / "m.fifo")), "not a regular file")
