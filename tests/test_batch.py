"""Batch work over collections (structkit.batch): blocks, ordered parallel output identical to
a serial run, folders and --output-dir, markers, --skip-existing, --keep-going, output safety."""
from __future__ import annotations

import io
import os
import random
import stat

import pytest

from structkit import batch
from structkit.batch import Input, collect_inputs, iter_blocks, run
from structkit.parse.jobs import ParseJob
from structkit.sequence.jobs import TagJob
from structkit.errors import UserError
from tests.clitools import assert_one_line_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "structkit", "data", "sample")


# ---- blocks -----------------------------------------------------------------------------------
def _random_conll(rng: random.Random) -> bytes:
    parts = []
    for _ in range(rng.randrange(0, 40)):
        for _ in range(rng.randrange(1, 6)):
            parts.append(rng.choice(["a b", "c d", " ", "x\ty"]) + rng.choice(["\n", "\r\n"]))
        parts.append(rng.choice(["\n", "\r\n", "\n\n", " \n", "\n\n\n"]))
    return b"".join(p.encode() for p in parts)


@pytest.mark.parametrize("seed", range(40))
def test_blocks_cover_the_input_and_start_on_content(seed):
    rng = random.Random(seed)
    data = _random_conll(rng)
    target = rng.choice([1, 3, 8, 20, 64, 1 << 20])
    blocks = list(iter_blocks(io.BytesIO(data), target))
    assert b"".join(b for _, b in blocks) == data
    line = 1
    for i, (first, b) in enumerate(blocks):
        assert first == line  # each block's first line is counted in the whole file
        line += b.count(b"\n")
        if i > 0:
            assert b[:1] not in (b"\n", b"\r")  # a later block never starts with a blank line
        if i < len(blocks) - 1:
            assert b.endswith(b"\n") and (b.endswith(b"\n\n") or b.endswith(b"\n\r\n"))
    assert blocks  # even an empty input is one (empty) block: the job reports "empty file"


def test_one_block_cutter():
    """The batch layer cuts with the ground floor's cutter, and the sequence wing has none of its own."""
    from structkit import batch
    from structkit.io import blocks
    from structkit.sequence import fastpath

    assert batch.iter_blocks is blocks.iter_blocks and batch._cut_point is blocks.cut_point
    assert not hasattr(fastpath, "iter_blocks") and not hasattr(fastpath, "tag_column_file")


# ---- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chunker(tmp_path_factory):
    from structkit.sequence.task import TaggerConfig, train_tagger

    cfg = TaggerConfig.for_learner("chunk", "perceptron", epochs=2)
    return train_tagger(cfg, os.path.join(SAMPLE, "chunk", "train.txt"))


@pytest.fixture(scope="module")
def ud_tagger():
    from structkit.sequence.task import TaggerConfig, train_tagger

    cfg = TaggerConfig.for_learner("pos", "perceptron", epochs=1)
    return train_tagger(cfg, os.path.join(SAMPLE, "ud", "train.conllu"))


@pytest.fixture(scope="module")
def ud_parser():
    from structkit.parse.parser import ParserConfig, train_parser

    return train_parser(ParserConfig(algo="beam", epochs=1), os.path.join(SAMPLE, "ud", "train.conllu"))


def _serial_tag(tagger, path: str, text: bool = False, fmt: str | None = None) -> bytes:
    """The whole-file path the tag command took before batches: the reference output."""
    from structkit.io.conll import Sentence, write_conll
    from structkit.io.conllu import read_raw_text, read_sequence, write_tagged

    out = io.StringIO()
    sents = read_raw_text(path) if text else read_sequence(path)
    column, key = tagger.output_column()
    for b, labels in tagger.tag_batches(sents, path, None, text):
        if b[0].lines is not None and (not text or fmt == "conllu"):
            write_tagged(b, labels, out, column, key)
        elif text:
            write_conll([Sentence.from_rows([[r[1]] for r in s.rows], s.first_line) for s in b], labels, out)
        else:
            write_conll(b, labels, out)
    return out.getvalue().encode()


def _run_bytes(job, paths, tmp_path, **kw) -> bytes:
    out = tmp_path / f"out-{random.random()}.txt"
    run(job, [Input(p, os.path.basename(p)) for p in paths], output=str(out), **kw)
    return out.read_bytes()


# ---- identical output whatever the blocks and workers --------------------------------------
@pytest.mark.parametrize("block", [64, 700, 1 << 20])
@pytest.mark.parametrize("jobs", [1, 2])
def test_columns_identical_to_serial(chunker, tmp_path, block, jobs):
    path = os.path.join(SAMPLE, "chunk", "test.txt")
    want = _serial_tag(chunker, path)
    assert _run_bytes(TagJob(chunker), [path], tmp_path, jobs=jobs, block_bytes=block) == want


def test_threads_identical_to_serial(chunker, tmp_path):
    path = os.path.join(SAMPLE, "chunk", "test.txt")
    want = _serial_tag(chunker, path)
    job = TagJob(chunker)
    got = _run_bytes(job, [path], tmp_path, block_bytes=300,
                     executor=batch.PoolExecutor(job, 2, kind="thread"))
    assert got == want


@pytest.mark.parametrize("block", [50, 400, 1 << 20])
def test_conllu_identical_to_serial(ud_tagger, tmp_path, block):
    path = os.path.join(SAMPLE, "ud", "test.conllu")
    want = _serial_tag(ud_tagger, path)
    assert _run_bytes(TagJob(ud_tagger), [path], tmp_path, jobs=2, block_bytes=block) == want


@pytest.mark.parametrize("fmt", ["conll", "conllu"])
@pytest.mark.parametrize("block", [30, 200, 1 << 20])
def test_raw_text_identical_to_serial(ud_tagger, tmp_path, fmt, block):
    """Sentence ids continue across blocks, '# newdoc' only opens the file, '# newpar' as read."""
    text = tmp_path / "in.txt"
    paras = ["The cat sat. It was happy!", "Dr. Smith went home.\nShe slept.", "Yes.",
             "A second-to-last paragraph here.", "End of story."]
    text.write_text("\n\n".join(paras * 3) + "\n")
    want = _serial_tag(ud_tagger, str(text), text=True, fmt=fmt)
    job = TagJob(ud_tagger, text=True, fmt=fmt)
    got = _run_bytes(job, [str(text)], tmp_path, jobs=2, block_bytes=block)
    assert got == want
    if fmt == "conllu":
        assert got.count(b"# newdoc") == 1 and b"# sent_id = 15" in got


@pytest.mark.parametrize("block", [100, 1 << 20])
def test_parse_identical_to_serial(ud_parser, tmp_path, block):
    from structkit.parse.conllio import parse_stream

    path = os.path.join(SAMPLE, "ud", "test.conllu")
    want = io.StringIO()
    with open(path, "rb") as f:
        parse_stream(ud_parser, None, path, f, True, want)
    got = _run_bytes(ParseJob(ud_parser), [path], tmp_path, jobs=2, block_bytes=block)
    assert got == want.getvalue().encode()


# ---- errors: the file's line, --keep-going ----------------------------------------------------
def _bad_copy(tmp_path, name="bad.txt") -> str:
    src = open(os.path.join(SAMPLE, "chunk", "test.txt")).read().splitlines()
    # a row with one column too many, far from the first block
    k = len(src) - 5
    assert src[k].strip()
    src[k] += " extra"
    p = tmp_path / name
    p.write_text("\n".join(src) + "\n")
    return str(p), k + 1


@pytest.mark.parametrize("jobs", [1, 2])
def test_error_names_the_line_in_the_whole_file(chunker, tmp_path, jobs):
    bad, line = _bad_copy(tmp_path)
    with pytest.raises(UserError) as ei:
        _run_bytes(TagJob(chunker), [bad], tmp_path, jobs=jobs, block_bytes=200)
    assert ei.value.path == bad and ei.value.line == line
    assert not [f for f in os.listdir(tmp_path) if f.startswith(("out-", ".tmp-"))]  # nothing left


def test_keep_going_writes_the_good_files(chunker, tmp_path):
    good = os.path.join(SAMPLE, "chunk", "test.txt")
    bad, line = _bad_copy(tmp_path)
    out = tmp_path / "out"
    errors = []
    s = run(TagJob(chunker), [Input(good, "a.txt"), Input(bad, "b.txt"), Input(good, "c.txt")],
            output_dir=str(out), keep_going=True, jobs=2, block_bytes=300, on_error=errors.append)
    assert sorted(os.listdir(out)) == ["a.conll", "c.conll"]
    assert [(e.path, e.line) for e in s.failed] == [(bad, line)] and errors == s.failed
    assert (out / "a.conll").read_bytes() == _serial_tag(chunker, good)


def test_keep_going_in_one_stream_drops_the_bad_file(chunker, tmp_path):
    good = os.path.join(SAMPLE, "chunk", "test.txt")
    bad, _ = _bad_copy(tmp_path)
    out = tmp_path / "all.txt"
    s = run(TagJob(chunker), [Input(good, "a"), Input(bad, "b"), Input(good, "c")], output=str(out),
            keep_going=True, block_bytes=300)
    text = out.read_bytes()
    assert len(s.failed) == 1
    assert text.count(b"-DOCSTART-") == 2 and bad.encode() not in text
    one = _serial_tag(chunker, good)
    assert text.count(one) == 2


def test_without_keep_going_the_run_stops(chunker, tmp_path):
    good = os.path.join(SAMPLE, "chunk", "test.txt")
    bad, _ = _bad_copy(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(UserError):
        run(TagJob(chunker), [Input(good, "a.txt"), Input(bad, "b.txt"), Input(good, "c.txt")],
            output_dir=str(out), block_bytes=300)
    assert sorted(os.listdir(out)) == ["a.conll"]  # finished before the bad one; nothing partial


# ---- collections, output names, markers, resuming -----------------------------------------
def test_folders_are_walked_in_order_with_glob(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for rel in ["d/b.txt", "d/a.txt", "d/sub/c.txt", "d/sub/x.md", "d/.hidden.txt"]:
        (tmp_path / rel).write_text("w\n")
    got = collect_inputs([str(tmp_path / "d")], "*.txt")
    assert [i.rel for i in got] == ["a.txt", "b.txt", os.path.join("sub", "c.txt")]
    assert [i.rel for i in collect_inputs([str(tmp_path / "d")])][-1] == os.path.join("sub", "x.md")
    with pytest.raises(UserError, match="no file matching"):
        collect_inputs([str(tmp_path / "d")], "*.xml")
    assert collect_inputs([]) == [Input("-", "stdin")]


def test_output_dir_mirrors_and_refuses_collisions(chunker, tmp_path):
    src = os.path.join(SAMPLE, "chunk", "test.txt")
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    for rel in ["x.txt", "sub/y.txt"]:
        (d / rel).write_bytes(open(src, "rb").read())
    s = run(TagJob(chunker), collect_inputs([str(d)]), output_dir=str(tmp_path / "out"))
    assert sorted(s.written) == sorted([str(tmp_path / "out" / "sub" / "y.conll"), str(tmp_path / "out" / "x.conll")])
    (d / "x.conll").write_bytes(open(src, "rb").read())  # x.txt and x.conll would both be x.conll
    with pytest.raises(UserError, match="same output"):
        run(TagJob(chunker), collect_inputs([str(d)]), output_dir=str(tmp_path / "out2"))


def test_skip_existing_resumes(chunker, tmp_path):
    src = os.path.join(SAMPLE, "chunk", "test.txt")
    inputs = [Input(src, "a.txt"), Input(src, "b.txt")]
    out = tmp_path / "out"
    run(TagJob(chunker), inputs[:1], output_dir=str(out))
    before = os.stat(out / "a.conll").st_mtime_ns
    s = run(TagJob(chunker), inputs, output_dir=str(out), skip_existing=True)
    assert s.skipped == 1 and s.written == [str(out / "b.conll")]
    assert os.stat(out / "a.conll").st_mtime_ns == before


def test_skip_existing_removes_what_a_killed_run_left(chunker, tmp_path, monkeypatch):
    """Issue 41, item 13: a --skip-existing rerun with nothing to write left a killed run's
    `.tmp-*` files; the folders of the outputs are swept first (a dead process's files only)."""
    import subprocess
    import sys

    from structkit.io import files

    src = os.path.join(SAMPLE, "chunk", "test.txt")
    out = tmp_path / "out"
    run(TagJob(chunker), [Input(src, "a.txt")], output_dir=str(out))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = out / f".tmp-{dead}.{files._HOST}-b.conll"
    stale.write_text("half")
    monkeypatch.setattr(files, "_SWEPT", set())   # a folder is swept once a process: a new run
    s = run(TagJob(chunker), [Input(src, "a.txt")], output_dir=str(out), skip_existing=True)
    assert s.skipped == 1 and s.written == []
    assert sorted(p.name for p in out.iterdir()) == ["a.conll"]


def test_one_file_has_no_marker_several_do(chunker, tmp_path):
    src = os.path.join(SAMPLE, "chunk", "test.txt")
    one = _run_bytes(TagJob(chunker), [src], tmp_path)
    assert b"-DOCSTART-" not in one
    two = _run_bytes(TagJob(chunker), [src, src], tmp_path)
    assert two.count(b"-DOCSTART-\t" + src.encode()) == 2 and two.count(one) == 2


def test_conllu_stream_marks_files_with_a_comment(ud_tagger, tmp_path):
    src = os.path.join(SAMPLE, "ud", "test.conllu")
    two = _run_bytes(TagJob(ud_tagger), [src, src], tmp_path)
    assert two.count(f"# file = {src}\n".encode()) == 2


# ---- the command line ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chunk_model(chunker, tmp_path_factory):
    p = tmp_path_factory.mktemp("m") / "chunk.model"
    chunker.save(str(p))
    return str(p)


def test_cli_folder_jobs_identical(sk, chunk_model, tmp_path):
    src = os.path.join(SAMPLE, "chunk", "test.txt")
    (tmp_path / "in" / "s").mkdir(parents=True)
    for rel in ["a.txt", "s/b.txt"]:
        (tmp_path / "in" / rel).write_bytes(open(src, "rb").read())
    r1 = sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "-j", "1")
    r2 = sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "-j", "2")
    assert r1.code == 0 and r1.out == r2.out and r1.out.count("-DOCSTART-") == 2
    r = sk("chunk", "--model", chunk_model, str(tmp_path / "in"), "--output-dir", str(tmp_path / "o"))
    assert r.code == 0 and (tmp_path / "o" / "s" / "b.conll").exists()


@pytest.mark.parametrize("args,needle", [
    (["-j", "0"], "--jobs must be"), (["-j", "two"], "--jobs must be"),
    (["--skip-existing"], "--skip-existing goes with --output-dir"),
    (["-o", "x", "--output-dir", "y"], "not both"),
    (["--shared-fs"], "--shared-fs goes with"),
])
def test_cli_bad_batch_options(sk, chunk_model, args, needle):
    r = sk("chunk", "--model", chunk_model, os.path.join(SAMPLE, "chunk", "test.txt"), *args)
    assert_one_line_error(r, needle)


def test_cli_keep_going_exit_status(sk, chunk_model, tmp_path):
    bad, line = _bad_copy(tmp_path)
    good = os.path.join(SAMPLE, "chunk", "test.txt")
    r = sk("chunk", "--model", chunk_model, good, bad, "--keep-going", "--output-dir", str(tmp_path / "o"))
    assert r.code == 1 and f"{bad}:{line}:" in r.err and "1 of 2 files failed" in r.err
    assert os.listdir(tmp_path / "o") == ["test.conll"]


# ---- outputs never destroy inputs (issue 16) ---------------------------------------------------
def test_output_over_an_input_or_the_model_is_refused(sk, chunk_model, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(open(os.path.join(SAMPLE, "chunk", "test.txt"), "rb").read())
    before = src.read_bytes()
    for target in (str(src), chunk_model):
        r = sk("chunk", "--model", chunk_model, str(src), "-o", target)
        assert_one_line_error(r, "refusing to write over")
    assert src.read_bytes() == before
    link = tmp_path / "link.txt"
    link.symlink_to(src)
    assert_one_line_error(sk("chunk", "--model", chunk_model, str(src), "-o", str(link)), "refusing")


def test_output_keeps_mode_and_symlink(sk, chunk_model, tmp_path):
    src = os.path.join(SAMPLE, "chunk", "test.txt")
    out = tmp_path / "out.txt"
    out.write_text("old")
    os.chmod(out, 0o600)
    link = tmp_path / "link.txt"
    link.symlink_to(out)
    assert sk("chunk", "--model", chunk_model, src, "-o", str(link)).code == 0
    assert link.is_symlink() and stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert out.read_text().startswith("Rockwell") or len(out.read_text()) > 100


def test_output_to_a_fifo_and_dev_null(sk, chunk_model, tmp_path):
    import threading

    src = os.path.join(SAMPLE, "chunk", "test.txt")
    assert sk("chunk", "--model", chunk_model, src, "-o", "/dev/null").code == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    t = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    t.start()
    assert sk("chunk", "--model", chunk_model, src, "-o", str(fifo)).code == 0
    t.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and len(got[0]) > 100


def test_progress_bar_counts_bytes_files_and_tokens(chunker, tmp_path, capsys):
    src = os.path.join(SAMPLE, "chunk", "test.txt")
    s = run(TagJob(chunker), [Input(src, "a"), Input(src, "b")], output=str(tmp_path / "o"),
            progress=True, block_bytes=500)
    err = capsys.readouterr().err
    size = os.path.getsize(src) * 2
    assert "files 2/2" in err and "tokens/s" in err
    assert f"/{size / 1024:.1f}k" in err or f"/{size / 1024:.2f}k" in err or "100%" in err
    assert s.tokens == 2 * sum(1 for ln in open(src) if ln.strip())


def test_train_and_rerank_never_overwrite_their_inputs(sk, tmp_path):
    train = tmp_path / "train.txt"
    train.write_bytes(open(os.path.join(SAMPLE, "chunk", "train.txt"), "rb").read())
    before = train.read_bytes()
    r = sk("train", "--task", "chunk", "--train", train, "--model", train, "--epochs", "1")
    assert_one_line_error(r, "refusing to write over")
    r = sk("train", "--task", "chunk", "--train", train, "--model", tmp_path / "m", "--metrics-json",
           tmp_path / "m", "--epochs", "1")
    assert_one_line_error(r, "two outputs are the same file")
    assert train.read_bytes() == before and not (tmp_path / "m").exists()
    nbest = tmp_path / "n.jsonl"
    nbest.write_bytes(open(os.path.join(SAMPLE, "nbest", "train.jsonl"), "rb").read())
    assert sk("train", "--task", "rerank", "--train", nbest, "--model", tmp_path / "r.npz",
              "--epochs", "1").code == 0
    for target in (nbest, tmp_path / "r.npz"):
        assert_one_line_error(sk("rerank", "--model", tmp_path / "r.npz", nbest, "-o", target), "refusing")
    assert nbest.read_bytes() == open(os.path.join(SAMPLE, "nbest", "train.jsonl"), "rb").read()


def test_parse_never_overwrites_the_gold_file(sk, tmp_path):
    from structkit.parse.parser import ParserConfig, train_parser

    model = tmp_path / "p.model"
    train_parser(ParserConfig(algo="beam", epochs=1), os.path.join(SAMPLE, "ud", "train.conllu")).save(str(model))
    gold = tmp_path / "gold.conllu"
    gold.write_bytes(open(os.path.join(SAMPLE, "ud", "test.conllu"), "rb").read())
    before = gold.read_bytes()
    r = sk("parse", "-m", model, gold, "-o", gold)  # -m is --model
    assert_one_line_error(r, "refusing to write over")
    assert gold.read_bytes() == before


def test_a_killed_worker_process_is_one_line(chunker, tmp_path, monkeypatch):
    """A worker that dies (the OOM killer, a signal) ends the run with a user error and no
    partial output, not a BrokenProcessPool traceback."""
    path = os.path.join(SAMPLE, "chunk", "test.txt")
    real = batch.run_block

    def dying(job, b):
        if b.index == 2 and os.getpid() != parent:
            os._exit(9)
        return real(job, b)

    parent = os.getpid()
    monkeypatch.setattr(batch, "run_block", dying)
    out = tmp_path / "out.txt"
    with pytest.raises(UserError, match="worker process died"):
        run(TagJob(chunker), [Input(path, "t")], output=str(out), jobs=2, block_bytes=300)
    assert not out.exists() and not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]


def test_a_file_is_cut_finer_when_workers_share_it(tmp_path):
    """With several workers, a regular file under two blocks a worker is cut into about two
    blocks a worker (none under 64 KB) and standard input is read 64 KB at a time; one worker
    and a named pipe keep the block size asked for (a pipe's size is not known). A block over a
    worker's share of the file (and over two blocks) is divided by the job; never with one
    worker or in a stream."""
    from structkit.batch import Input, _block_size, _divide_above

    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 400_000)
    small = tmp_path / "small.txt"
    small.write_bytes(b"x" * 10_000)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    one_mb = 1 << 20
    assert _block_size(Input(str(big), "big.txt"), one_mb, 2) == 100_000      # 400,000 / (2 x 2)
    assert _block_size(Input(str(big), "big.txt"), one_mb, 4) == 65_536       # 25,000, raised to 64 KB
    assert _block_size(Input(str(small), "small.txt"), one_mb, 2) == 65_536
    assert _block_size(Input(str(big), "big.txt"), 50_000, 2) == 50_000       # never above what was asked
    assert _block_size(Input(str(big), "big.txt"), one_mb, 1) == one_mb
    assert _block_size(Input("-", "-"), one_mb, 2) == 65_536                  # read as it comes
    assert _block_size(Input(str(fifo), "in.fifo"), one_mb, 2) == one_mb
    assert _divide_above(Input(str(big), "big.txt"), 100_000, 2) == 200_000  # a worker's share
    assert _divide_above(Input(str(small), "small.txt"), 65_536, 2) == 131_072  # two blocks
    assert _divide_above(Input(str(big), "big.txt"), one_mb, 1) is None
    assert _divide_above(Input("-", "-"), 65_536, 2) is None
    assert _divide_above(Input(str(fifo), "in.fifo"), one_mb, 2) is None


def test_workers_get_several_blocks_in_flight(chunker, tmp_path):
    """With a pool, blocks are submitted ahead of the results taken (2 x jobs + 2 of them), so
    the workers run side by side; in one process each block's result is taken as soon as it is
    submitted (its output streams). A check that took every executor for the one-process kind
    left --jobs N running one block at a time."""
    from structkit.batch import Executor, run_block

    def counting(ex):
        """``ex`` with the most blocks it had submitted and not yet taken counted."""
        ex.in_flight, ex.most = 0, 0

        def submit(block):
            ex.in_flight += 1
            ex.most = max(ex.most, ex.in_flight)
            done = run_block(ex.job, block)

            class Later:
                def result(self):
                    ex.in_flight -= 1
                    return done
            return Later()
        ex.submit = submit
        return ex

    class Pool(Executor):   # a pool's way of being driven, without processes
        def __init__(self, job, jobs):
            super().__init__(job)
            self.jobs = jobs

    path = os.path.join(SAMPLE, "chunk", "test.txt")   # 4 KB: 64-byte blocks make dozens
    job = TagJob(chunker)
    pool, one = counting(Pool(job, 2)), counting(Executor(job))
    _run_bytes(job, [path], tmp_path, executor=pool, block_bytes=64)
    _run_bytes(job, [path], tmp_path, executor=one, block_bytes=64)
    assert pool.most == 6   # 2 x 2 + 2
    assert one.most == 1


def test_a_file_shared_among_workers_is_cut_only_where_one_process_cuts_it():
    """Issue 42: smaller blocks for sharing a regular file among workers (``_block_size``) cut
    it at blank lines only; raw text without one is cut (at a line end, which may split a
    paragraph: its first sentence then opened one, ``# newpar``, with --jobs 2 and not with
    --jobs 1) only where a single process cuts it, from ``text_cut_at`` bytes read."""
    import io

    from structkit.io.blocks import BLOCK_BYTES, iter_blocks

    line = b"Il gatto dorme sul divano.\n"             # 27 bytes
    text = line * 15_000                                # 405,000 bytes, no blank line
    target = 100_000
    shared = list(iter_blocks(io.BytesIO(text), target, True, "t", BLOCK_BYTES))
    assert shared == [(1, text)]                        # one block, as one process reads it
    old = list(iter_blocks(io.BytesIO(text), target, True, "t"))
    assert len(old) > 1 and b"".join(b for _, b in old) == text   # cut at line ends (streaming)
    paras = (line * 3000 + b"\n") * 5                   # blank lines every 81,000 bytes
    blocks = list(iter_blocks(io.BytesIO(paras), target, True, "t", BLOCK_BYTES))
    assert len(blocks) > 1 and b"".join(b for _, b in blocks) == paras
    assert all(b.endswith(b"\n\n") for _, b in blocks[:-1])        # each cut after a blank line
    assert [n for n, _ in blocks] == [1 + paras[:sum(len(b) for _, b in blocks[:k])].count(b"\n")
                                      for k in range(len(blocks))]


def test_kept_warnings_of_blocks_run_in_threads_end_with_their_blocks():
    """Blocks run at once in threads each keep their warnings (keep_warnings); ended out of the
    order they began (A in, B in, A out, B out), a module global was left holding A's list, and
    every later long-sentence warning of the process was kept for no one (a test of the API
    then saw nothing on stderr)."""
    import threading

    import structkit.io.conllu as conllu

    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with conllu.keep_warnings():
            a_in.set()
            b_in.wait(5)
            seen["a"] = conllu._KEPT.get()
        a_out.set()

    def b():
        a_in.wait(5)
        with conllu.keep_warnings():
            b_in.set()
            a_out.wait(5)
            seen["b"] = conllu._KEPT.get()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen["a"] == [] and seen["b"] == [] and seen["a"] is not seen["b"]
    assert conllu._KEPT.get() is None and conllu.take_warnings() == ()


class _LinesJob:
    """A toy raw-text job for the runner: each line of a block is a sentence, written as
    ``# sent_id = N`` (counted from 1 in each block, as the real jobs do) and the line; its
    ``divide`` makes pieces of ``per`` lines here, their ids counted from the block's start
    (``Tokenized.before`` says from where), a warning on the last piece."""

    cut_lines = True

    def __init__(self, per: int):
        from structkit.io.batchjob import Job

        self.base = Job()
        self.per = per
        self.divided = 0          # blocks divided (in the runner's process)
        self.kinds = []           # what each process call got: "piece" or "bytes"

    def __getattr__(self, name):  # the rest of the protocol: the base job's
        return getattr(self.base, name)

    def one_document(self):
        return True

    def block_output(self, text, first):
        return text.encode()

    def fix_block(self, data, ctx, before):
        from structkit.io.batchjob import count_on

        return count_on(data, before)

    def output_format(self, inp, ctx):
        return "conllu"

    def divide(self, ctx, name, data, first):
        from structkit.io.batchjob import Tokenized

        self.divided += 1
        lines = data.decode().splitlines()

        def pieces():
            for k in range(0, len(lines), self.per):
                last = k + self.per >= len(lines)
                yield Tokenized(lines[k:k + self.per], 1, k, ("w: a warning\n",) if last else ())
        return pieces()

    def process(self, ctx, name, data, first):
        from structkit.io.batchjob import Tokenized, count_on
        from structkit.io.conllu import warn

        if isinstance(data, Tokenized):
            self.kinds.append("piece")
            for w in data.warnings:
                warn(w)
            text = "".join(f"# sent_id = {data.before + i}\n{s}\n\n" for i, s in enumerate(data.sents, 1))
            return count_on(text.encode(), -data.before), len(data.sents), len(data.sents)
        self.kinds.append("bytes")
        lines = data.decode().splitlines()
        return "".join(f"# sent_id = {i}\n{s}\n\n" for i, s in enumerate(lines, 1)).encode(), len(lines), len(lines)


def test_a_block_without_blank_lines_is_divided_for_the_workers(tmp_path, capsys):
    """Issue 42: raw text with no blank line is one block (it is cut only where one process
    cuts it), which one worker would take alone. A block over twice the size wanted is given
    to the job's ``divide`` in the runner's process; its pieces go to the workers in order,
    numbered through the file, and the warning of the last piece is said once. Expected output
    by hand: line i is sentence i."""
    from structkit.batch import PoolExecutor

    n = 20_000
    path = tmp_path / "long.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, n + 1)))   # about 230 KB, no blank line
    want = "".join(f"# sent_id = {i}\nline {i}\n\n" for i in range(1, n + 1))
    job = _LinesJob(per=700)
    ex = PoolExecutor(job, 2, kind="thread")
    out = tmp_path / "out.conllu"
    try:
        run(job, [Input(str(path), "long.txt")], output=str(out), executor=ex)
    finally:
        ex.close()
    assert out.read_text() == want
    assert job.divided == 1 and job.kinds == ["piece"] * -(-n // 700)   # threads: no warm-up run
    assert capsys.readouterr().err.count("w: a warning") == 1
    # one process: the block is sent whole (no division), the same text
    job1 = _LinesJob(per=700)
    run(job1, [Input(str(path), "long.txt")], output=str(out), jobs=1)
    assert out.read_text() == want and job1.divided == 0 and job1.kinds == ["bytes"]
