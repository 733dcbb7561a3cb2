"""--dask: a LocalCluster on 127.0.0.1 gives the same output as --jobs 1, also when a worker
process is killed in the middle of the job (its tasks run again elsewhere, nothing twice)."""
from __future__ import annotations

import os

import pytest
from conftest import require_extra

distributed = require_extra("distributed", "dask", module_level=True)

from structkit.batch import Input, run  # noqa: E402
from structkit.sequence.jobs import TagJob  # noqa: E402
from structkit.distributed import KILL_ENV, run_dask  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "structkit", "data", "sample")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    kill = tmp_path_factory.mktemp("kill") / "armed"
    old = os.environ.get(KILL_ENV)
    os.environ[KILL_ENV] = str(kill)  # the workers inherit it; a test arms it by creating the file
    lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0")
    client = distributed.Client(lc)
    yield client, kill
    client.close()
    lc.close()
    if old is None:
        del os.environ[KILL_ENV]
    else:
        os.environ[KILL_ENV] = old


@pytest.fixture(autouse=True)
def both_workers(cluster):
    """Each test starts with both workers up: a worker killed by the test before is restarted by
    its nanny, and a job scattered while it is away lives on the other worker only, so killing
    that one too lost it (failed once in CI: 'lose scattered data, which can't be recovered')."""
    cluster[0].wait_for_workers(2, timeout=120)


@pytest.fixture(scope="module")
def chunker():
    from structkit.sequence.task import TaggerConfig, train_tagger

    return train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=2),
                        os.path.join(SAMPLE, "chunk", "train.txt"))


def _inputs(tmp_path):
    src = open(os.path.join(SAMPLE, "chunk", "test.txt"), "rb").read()
    (tmp_path / "in" / "sub").mkdir(parents=True)
    paths = []
    for rel in ["a.txt", "b.txt", "sub/c.txt"]:
        (tmp_path / "in" / rel).write_bytes(src)
        paths.append(Input(str(tmp_path / "in" / rel), rel))
    return paths


@pytest.mark.parametrize("kill", [False, True])
def test_dask_stream_equals_local(cluster, chunker, tmp_path, kill):
    client, armed = cluster
    inputs = _inputs(tmp_path)
    local = tmp_path / "local.txt"
    run(TagJob(chunker), inputs, output=str(local), jobs=1)
    if kill:
        armed.write_text("")
    out = tmp_path / "dask.txt"
    s = run_dask(TagJob(chunker), inputs, "", output=str(out), client=client, block_bytes=2000)
    assert out.read_bytes() == local.read_bytes()
    assert not s.failed
    if kill:
        assert not armed.exists()  # a worker did die during this job
        client.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize("kill", [False, True])
def test_dask_shared_fs_equals_local(cluster, chunker, tmp_path, kill):
    client, armed = cluster
    inputs = _inputs(tmp_path)
    run(TagJob(chunker), inputs, output_dir=str(tmp_path / "local"), jobs=1)
    if kill:
        armed.write_text("")
    s = run_dask(TagJob(chunker), inputs, "", output_dir=str(tmp_path / "dask"), shared_fs=True, client=client)
    assert not s.failed and len(s.written) == 3
    for rel in ["a.conll", "b.conll", "sub/c.conll"]:
        assert (tmp_path / "dask" / rel).read_bytes() == (tmp_path / "local" / rel).read_bytes()
    leftovers = [f for _, _, fs in os.walk(tmp_path / "dask") for f in fs if f.startswith(".tmp-")]
    assert not leftovers
    if kill:
        assert not armed.exists()
        client.wait_for_workers(2, timeout=60)


def test_dask_cli_local_cluster(sk, chunker, tmp_path):
    model = tmp_path / "m.model"
    chunker.save(str(model))
    inputs = _inputs(tmp_path)
    r1 = sk("chunk", "--model", model, tmp_path / "in", "-j", "1")
    r2 = sk("chunk", "--model", model, tmp_path / "in", "--dask", "local:2")
    assert r1.code == 0 and r2.code == 0 and r1.out == r2.out and len(inputs) == r1.out.count("-DOCSTART-")
    r = sk("chunk", "--model", model, tmp_path / "in", "--dask", "local:x")
    assert r.code == 1 and "local:N" in r.err


@pytest.mark.parametrize("kill", [False, True])
def test_parameter_mixing_on_dask_equals_threads(cluster, kill):
    """train --jobs 2 --dask: the shards as Dask tasks give the model the local threads give,
    also when a worker dies during an epoch."""
    import numpy as np

    from structkit.distributed import dask_mapper
    from structkit.sequence.task import TaggerConfig, train_tagger

    client, armed = cluster
    train = os.path.join(SAMPLE, "chunk", "train.txt")
    local = train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=3, jobs=2), train)
    if kill:
        armed.write_text("")
    remote = train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=3, jobs=2), train,
                          mapper=_dying(dask_mapper(client)) if kill else dask_mapper(client))
    assert local.labels == remote.labels
    for a, b in zip(local.weights, remote.weights):
        assert np.array_equal(a, b)
    if kill:
        assert not armed.exists()
        client.wait_for_workers(2, timeout=120)


def _dying(mapper):
    """A mapper whose first shard, on its worker, kills that worker (the fault hook)."""
    from structkit.distributed import die_then

    def m(fn, items):
        return mapper(die_then(fn), items)
    return m


def test_train_cli_dask(sk, tmp_path):
    train = os.path.join(SAMPLE, "chunk", "train.txt")
    r = sk("train", "--task", "chunk", "--train", train, "--jobs", "2", "--epochs", "2",
           "--dask", "local:2", "--model", tmp_path / "d.model")
    assert r.code == 0, r.err
    r2 = sk("train", "--task", "chunk", "--train", train, "--jobs", "2", "--epochs", "2",
            "--model", tmp_path / "t.model")
    assert r2.code == 0
    test = os.path.join(SAMPLE, "chunk", "test.txt")
    a = sk("chunk", "--model", tmp_path / "d.model", test)
    b = sk("chunk", "--model", tmp_path / "t.model", test)
    assert a.out == b.out and a.out
    r = sk("train", "--task", "chunk", "--train", train, "--dask", "local:2", "--model", tmp_path / "x")
    assert r.code == 1 and "--jobs N" in r.err


def test_models_build_all_on_dask_equals_local(sk, cluster, tmp_path, monkeypatch):
    """Issue 43, item 2: `models build --all --dask ADDRESS` makes each treebank a task on the
    cluster and builds the same models as --jobs 1, also when a worker dies as it starts a
    build (the scheduler runs it again elsewhere)."""
    from structkit.builds import fingerprint
    from structkit.model import load_model

    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ud = os.path.join(SAMPLE, "ud")
    for name in ("UD_Aa-One", "UD_Bb-Two"):
        folder = tmp_path / "root" / name
        folder.mkdir(parents=True)
        for split in ("train", "dev", "test"):
            (folder / f"xx_{name[3:5].lower()}-ud-{split}.conllu").write_bytes(
                open(os.path.join(ud, f"{split}.conllu"), "rb").read())

    def models(folder):
        return {p.name: fingerprint(str(p)) for p in sorted(folder.glob("*.model"))}

    r = sk("models", "build", "--all", "--from", tmp_path / "root", "--task", "pos",
           "--output-dir", tmp_path / "local", "-j", "1", "-q")
    assert r.code == 0, r.err
    client, kill = cluster
    kill.write_text("")   # the first task to start kills its worker
    r = sk("models", "build", "--all", "--from", tmp_path / "root", "--task", "pos",
           "--output-dir", tmp_path / "dask", "--dask", client.scheduler.address, "-q")
    assert r.code == 0, r.err
    assert not kill.exists()   # a worker did die
    client.wait_for_workers(2, timeout=60)
    assert models(tmp_path / "dask") == models(tmp_path / "local") and len(models(tmp_path / "local")) == 2
