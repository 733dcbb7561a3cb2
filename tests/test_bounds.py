"""Issue 30 item 3, inputs without an end: everything read whole is read with a cap, text is
streamed, and a model file must be a regular file whose arrays are checked before they are
allocated. Each case is one error line (or a bounded, working run), never a memory blow-up.

In-process checks use tracemalloc; the command-line cases run in a child process under an
address-space limit (``ulimit -v`` via ``resource.RLIMIT_AS``), so that unbounded growth fails
fast instead of eating the machine. A normal run needs about 1 GB of address space (numba and
LLVM map a lot); the limit leaves room above that.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import structkit.model as model_mod
from structkit.errors import UserError
from structkit.model import load_model, save_model

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
POS_TRAIN = str(FIXTURES / "pos_train.txt")

# Address space for a child structkit: a normal tagging or training run maps about 1 GB
# (numba/LLVM); unbounded reading would pass 2.5 GB within seconds.
CHILD_AS_BYTES = int(os.environ.get("STRUCTKIT_TEST_CHILD_AS", 2500 << 20))


def _limit_child():
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_BYTES, CHILD_AS_BYTES))


def run_cli(*args, stdin=subprocess.DEVNULL, timeout=300) -> subprocess.CompletedProcess:
    """Run ``python -m structkit ARGS`` in a child under the address-space limit."""
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "structkit", *map(str, args)], stdin=stdin,
                          capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=_limit_child)


_MEASURE = """
import resource, subprocess, sys
limit = int(sys.argv[1])
def lim():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
r = subprocess.run([sys.executable, "-m", "structkit", *sys.argv[2:]], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=lim)
sys.stderr.buffer.write(r.stderr)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def run_measured(*args, timeout=600) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in MB) of ``structkit ARGS`` run in a grandchild under the
    address-space limit; stdout is discarded."""
    r = subprocess.run([sys.executable, "-c", _MEASURE, str(CHILD_AS_BYTES), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    code, kb = r.stdout.split()
    return int(code), r.stderr, int(kb) // 1024


def one_line(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode not in (0, None), r
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr[-2000:]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory) -> str:
    from structkit.sequence.task import TaggerConfig, train_tagger

    path = str(tmp_path_factory.mktemp("bounds") / "chunk.model")
    train_tagger(TaggerConfig(task="chunk", epochs=1), CHUNK_TRAIN).save(path)
    return path


@pytest.fixture(scope="module")
def pos_model(tmp_path_factory) -> str:
    from structkit.sequence.task import TaggerConfig, train_tagger

    path = str(tmp_path_factory.mktemp("bounds") / "pos.model")
    train_tagger(TaggerConfig(task="pos", epochs=1), POS_TRAIN).save(path)
    return path


# ---- model files ------------------------------------------------------------------------------
def _npy_header(shape, dtype="|u1") -> bytes:
    from numpy.lib import format as npf

    d = {"descr": dtype, "fortran_order": False, "shape": shape}
    h = repr(d).encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    return npf.MAGIC_PREFIX + b"\x01\x00" + len(h).to_bytes(2, "little") + h


def write_bomb(path: Path, n_bytes: int, checksum: str = "0" * 64) -> None:
    """A model archive with a valid header and one array of ``n_bytes`` zeros (compressed about
    1000 times), whose checksum is wrong."""
    header = {"format": "structkit-model", "format_version": 2, "task": "chunk",
              "checksum": checksum}
    blob = json.dumps(header).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
        with z.open("__header__.npy", "w") as f:
            f.write(_npy_header((len(blob),)) + blob)
        with z.open("W.npy", "w", force_zip64=True) as f:
            f.write(_npy_header((n_bytes,)))
            chunk = bytes(1 << 22)
            left = n_bytes
            while left:
                f.write(chunk[:min(left, len(chunk))])
                left -= min(left, len(chunk))


def _model_error(path) -> str:
    with pytest.raises(UserError) as ei:
        load_model(str(path))
    msg = str(ei.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
    return msg


def test_model_given_as_a_device_or_fifo_is_not_a_model_file(tmp_path):
    assert "character device, not a regular file" in _model_error("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # no writer: opening it would wait forever; it is refused before it is opened
    assert "FIFO, not a regular file" in _model_error(fifo)


def test_chunk_model_dev_zero_is_one_line():
    one_line(run_cli("chunk", "--model", "/dev/zero", CHUNK_TEST),
             "/dev/zero", "not a structkit model file")


def test_chunk_model_fifo_that_never_ends_is_one_line(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat /dev/zero > {fifo}"])
    try:
        one_line(run_cli("chunk", "--model", fifo, CHUNK_TEST), "FIFO, not a regular file")
    finally:
        writer.kill()
        writer.wait()


def test_compression_bomb_is_refused_before_decompressing(tmp_path):
    path = tmp_path / "bomb.model"
    write_bomb(path, 2 << 30)   # 2 GiB of zeros in a file of about 2 MB
    assert path.stat().st_size < 4 << 20
    tracemalloc.start()
    try:
        msg = _model_error(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "compression bomb" in msg
    assert peak < 16 << 20, peak


def test_bad_checksum_is_refused_in_constant_memory(tmp_path, monkeypatch):
    """Below the expansion limit, a large model is hashed through a fixed buffer before its
    arrays are allocated: a checksum failure costs no more than that buffer."""
    monkeypatch.setattr(model_mod, "HASH_FIRST_BYTES", 1 << 20)
    monkeypatch.setattr(model_mod, "MAX_EXPANSION", 10 ** 6)
    path = tmp_path / "bad.model"
    write_bomb(path, 64 << 20)
    tracemalloc.start()
    try:
        msg = _model_error(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "checksum mismatch" in msg
    assert peak < 16 << 20, peak


def test_large_model_read_in_two_passes_round_trips(tmp_path, monkeypatch):
    monkeypatch.setattr(model_mod, "HASH_FIRST_BYTES", 1000)
    path = str(tmp_path / "m.model")
    a = np.arange(100_000, dtype=np.float64)
    b = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    save_model(path, {"task": "chunk"}, {"a": a, "b": b, "s": np.array(["x", "yy"])})
    _, arrays = load_model(path)
    np.testing.assert_array_equal(arrays["a"], a)
    np.testing.assert_array_equal(arrays["b"], b)
    assert list(arrays["s"]) == ["x", "yy"]


def test_members_declaring_more_than_the_file_holds(tmp_path, chunk_model):
    data = bytearray(Path(chunk_model).read_bytes())
    # the central directory's compressed size of the last member, made larger than the file
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 20:cd + 24] = (len(data) * 2).to_bytes(4, "little")
    path = tmp_path / "lying.model"
    path.write_bytes(bytes(data))
    _model_error(path)


# ---- configs, n-best files, lines ----------------------------------------------------------
def test_train_config_dev_zero_is_one_line(tmp_path):
    r = run_cli("train", "--config", "/dev/zero", "-m", tmp_path / "m.model")
    one_line(r, "/dev/zero", "larger than 1 MB")
    assert not list(tmp_path.iterdir())


def test_config_over_the_cap_in_process(tmp_path):
    from structkit.config import load_config

    p = tmp_path / "big.toml"
    p.write_text('task = "chunk"\n' + "# padding\n" * 120_000)
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match="larger than 1 MB") as ei:
            load_config(str(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(ei.value).startswith(str(p))
    assert peak < 8 << 20


def test_explain_dev_zero_is_one_line(chunk_model):
    one_line(run_cli("explain", "-m", chunk_model, "/dev/zero"), "/dev/zero:1:", "line longer than")


def test_eval_dev_zero_is_one_line():
    one_line(run_cli("eval", "--task", "chunk", "/dev/zero", "/dev/zero"), "line longer than")


def test_rerank_train_dev_zero_is_one_line(tmp_path):
    one_line(run_cli("train", "--task", "rerank", "--train", "/dev/zero", "-m", tmp_path / "r.model"),
             "/dev/zero", "the limit for an n-best file")
    assert not list(tmp_path.iterdir())


def test_nbest_cap_and_its_variable(tmp_path, monkeypatch):
    from structkit.io.nbest import read_nbest

    p = tmp_path / "nb.jsonl"
    p.write_text('{"hypotheses": ["a b", "a c"]}\n' * 2000)
    monkeypatch.setenv("STRUCTKIT_MAX_NBEST_BYTES", "10000")
    with pytest.raises(UserError, match="STRUCTKIT_MAX_NBEST_BYTES"):
        read_nbest(str(p))
    monkeypatch.delenv("STRUCTKIT_MAX_NBEST_BYTES")
    assert len(read_nbest(str(p))) == 2000


def test_a_line_over_the_limit_is_refused_after_reading_the_limit(tmp_path, monkeypatch):
    import structkit.io.files as files
    from structkit.io.conll import read_conll

    p = tmp_path / "long.txt"
    p.write_bytes(b"a NN\n" + b"x" * (3 << 20) + b" NN\n\n")
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.setattr(files.bounded_lines, "__defaults__", (1 << 20,))
    monkeypatch.setattr(files.iter_lines, "__defaults__", (1 << 20,))
    with pytest.raises(UserError, match=r"long.txt:2: line longer than 1 MB"):
        list(read_conll(str(p)))


def test_a_line_of_exactly_the_limit_is_read(tmp_path):
    from structkit.io.files import bounded_lines
    import io

    data = b"x" * 99 + b"\n" + b"y" * 100
    assert [len(x) for x in bounded_lines("f", io.BytesIO(data), 100)] == [100, 100]
    with pytest.raises(UserError, match="f:2: line longer"):
        list(bounded_lines("f", io.BytesIO(data + b"z"), 100))


# ---- raw text --------------------------------------------------------------------------------
def test_a_long_line_of_raw_text_tokenizes_in_bounded_memory():
    from structkit.text.base import MAX_SENTENCE_TOKENS
    from structkit.text.tokenize import iter_sentences

    line = "a," * 250_000 + "\n"          # 500 kB, half a million tokens, no sentence end
    tracemalloc.start()
    try:
        n = longest = 0
        for s in iter_sentences(iter([line])):
            n += len(s.tokens)
            longest = max(longest, len(s.tokens))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 500_000 and longest == MAX_SENTENCE_TOKENS
    # the line and its paragraph copy (1 MB) plus one sentence; it was about 200 bytes a token
    assert peak < 8 << 20, peak


def test_sentence_cut_keeps_every_token_and_offset():
    from structkit.text.tokenize import tokenize

    text = "x y, " * 1500 + "end."
    sents = tokenize(text)
    assert [len(s.tokens) for s in sents] == [1000, 1000, 1000, 1000, 502]
    toks = [t for s in sents for t in s.tokens]
    assert all(text[t.start:t.end] == t.form for t in toks)
    assert [len(s.tokens) for s in tokenize(text, split="lines")] == [1000, 1000, 1000, 1000, 502]


def test_tag_text_on_a_long_line_without_spaces(pos_model, tmp_path):
    p = tmp_path / "line.txt"
    p.write_text("a," * 1_000_000 + "\n")       # 2 MB without a space: 2 million tokens
    code, err, peak_mb = run_measured("tag", "-m", pos_model, "--text", p, "-o", tmp_path / "out.txt")
    assert code == 0, err[-2000:]
    lines = open(tmp_path / "out.txt").read().split("\n")
    tokens = [ln.split(" ")[0] for ln in lines if ln]
    # every character kept, in order; sentences of at most 1000 tokens, 2000 of them, and one
    # more where the line is cut into blocks (io.blocks.MAX_LINE_BYTES: 1 MB, between characters)
    assert "".join(tokens) == "a," * 1_000_000
    sentences = "\n".join(lines).strip("\n").split("\n\n")
    assert max(len(s.split("\n")) for s in sentences) == 1000
    assert 2000 <= len(sentences) <= 2000 + 2, len(sentences)
    assert peak_mb < 800, peak_mb


def test_tag_text_streams_a_line_over_the_line_limit(pos_model, tmp_path):
    """A line longer than a file's line limit (16 MB) was refused in --text; raw text is read in
    blocks now (issue 41, item 1: a text without end streams), so it is tagged, every character
    kept, in bounded memory. Files of rows keep the limit (the /dev/zero tests above)."""
    p = tmp_path / "line.txt"
    with open(p, "wb") as f:
        f.write(b"x" * (17 << 20) + b"\n")
    code, err, peak_mb = run_measured("tag", "-m", pos_model, "--text", p, "-o", tmp_path / "out.txt")
    assert code == 0, err[-2000:]
    with open(tmp_path / "out.txt") as f:
        chars = sum(len(ln.split(" ")[0]) for ln in f if ln.strip())
    assert chars == 17 << 20
    assert peak_mb < 800, peak_mb


# ---- explain ---------------------------------------------------------------------------------
def test_explain_one_200k_token_sentence_in_bounded_memory(chunk_model, tmp_path):
    import random

    rng = random.Random(1)
    pairs = [("the", "DT"), ("cat", "NN"), ("sat", "VBD"), ("on", "IN"), ("big", "JJ")]
    p = tmp_path / "long.txt"
    with open(p, "w") as f:
        for _ in range(200_000):
            f.write("%s %s\n" % rng.choice(pairs))
    code, err, peak_mb = run_measured("explain", "-m", chunk_model, p, "--token", "199999")
    assert code == 0, err[-2000:]
    assert peak_mb < 600, peak_mb   # was 1.6 GB: every token's explanation was kept


def test_iter_explanations_only_one_token_matches_the_whole(chunk_model):
    from structkit.explain import explain_sentence, iter_explanations
    from structkit.io.conll import read_conll
    from structkit.sequence.task import SequenceTagger

    tagger = SequenceTagger.load(chunk_model)
    sent = next(iter(read_conll(CHUNK_TEST)))
    whole = explain_sentence(tagger, sent, CHUNK_TEST)
    assert [e.index for e in whole] == list(range(1, len(sent.rows) + 1))
    one = list(iter_explanations(tagger, sent, CHUNK_TEST, only=3))
    assert one == [whole[2]]


def test_a_large_fortran_order_array_cannot_skip_the_check(tmp_path, monkeypatch):
    """The checksum-first pass covers Fortran-order arrays too (a bomb could otherwise declare
    one to be allocated and filled before its checksum is known)."""
    monkeypatch.setattr(model_mod, "HASH_FIRST_BYTES", 1 << 10)
    monkeypatch.setattr(model_mod, "_CHUNK", 1 << 12)
    path = str(tmp_path / "f.model")
    save_model(path, {"task": "chunk"}, {"a": np.asfortranarray(np.ones((100, 100)))})
    with pytest.raises(UserError, match="in Fortran order"):
        load_model(path)
    save_model(path, {"task": "chunk"}, {"a": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
                                         "b": np.zeros(1000)})
    _, arrays = load_model(path)
    np.testing.assert_array_equal(arrays["a"], np.arange(12.0).reshape(3, 4))


def test_a_paragraph_without_end_is_tokenized_in_bounded_blocks():
    from structkit.text.tokenize import MAX_BLOCK_CHARS, iter_sentences

    line = "The cat sat on the mat. It was glad.\n"
    n_lines = 3 * MAX_BLOCK_CHARS // len(line)       # 3 MB of text without a blank line
    tracemalloc.start()
    try:
        n = pars = 0
        for s in iter_sentences(line for _ in range(n_lines)):
            n += 1
            pars += s.new_par
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 2 * n_lines and pars == 1     # the cuts fall at line ends: the same sentences
    assert peak < 3 * MAX_BLOCK_CHARS, peak   # was the whole text (and its copies)
