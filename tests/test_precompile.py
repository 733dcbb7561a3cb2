"""`structkit compile` (``structkit.precompile``): running a job leaves its kernels in numba's
cache, the inputs it reads are past the sizes below which commands skip numba, and a failing
command is one line and a non-zero exit."""
from __future__ import annotations

import pytest
from clitools import sk_env

from structkit import precompile


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "numba-cache"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(d))
    monkeypatch.setenv("PYTHONPATH", sk_env()["PYTHONPATH"])   # the jobs' processes run this tree
    return d


def test_a_job_leaves_its_kernels_in_the_cache(cache):
    job = [j for j in precompile.DEFAULTS if j[0].startswith("rerank")]
    assert list(precompile.run(job)) == [(job[0][0], None)]
    kept = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
    # the reranker's training and scoring kernels (structkit/rerank/learner.py and loss.py)
    assert {"learner._epoch_kernel", "learner._csr_scores_kernel", "loss._edits_kernel"} <= kept


def test_the_inputs_are_past_the_numpy_paths_sizes(tmp_path):
    from structkit.parse.smallbeam import SMALL_WORDS
    from structkit.sequence.fastpath import SMALL_BYTES
    from structkit.sequence.task import SMALL_TOKENS

    precompile._inputs(str(tmp_path))
    for name in ("chunk.txt", "pos.txt", "ner.txt"):
        data = (tmp_path / name).read_bytes()
        assert len(data) > SMALL_BYTES
        assert sum(1 for line in data.splitlines() if line.strip()) > SMALL_TOKENS
    words = sum(1 for line in (tmp_path / "ud.conllu").read_text().splitlines()
                if line[:1].isdigit() and "-" not in line.split("\t")[0])
    assert words > SMALL_WORDS
    assert len((tmp_path / "text.txt").read_bytes()) > SMALL_BYTES


def test_a_failing_command_is_one_line_and_exit_1(cache, sk, monkeypatch):
    bad = (("chunk on a missing file", (("train", "--task", "chunk", "--train", "no/such/file.txt",
                                         "--model", "{d}/x.model"),)),)
    monkeypatch.setattr(precompile, "DEFAULTS", bad)
    r = sk("compile")
    assert r.code == 1
    last = r.err.strip().splitlines()[-1]
    assert last.startswith("structkit: error: 1 of 1 failed; the first: chunk on a missing file: "
                           "`structkit train --task chunk ...` failed:")
    assert "no/such/file.txt" in last
