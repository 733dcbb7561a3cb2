"""`--jobs N` worker processes end when their command is killed with SIGKILL (no cleanup runs
then): they must not stay behind waiting on their task queue (issue 30, item 7)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from clitools import sk_cmd, sk_env

ROOT = Path(__file__).resolve().parents[1]
CHUNK = ROOT / "structkit" / "data" / "sample" / "chunk"

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_exit_when_the_command_is_killed(tmp_path):
    from structkit.sequence.task import TaggerConfig, train_tagger

    model = tmp_path / "m.model"
    train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=1), str(CHUNK / "train.txt")).save(str(model))
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    p = subprocess.Popen(sk_cmd("chunk", "--model", model, fifo, "-j", "2", "-o", tmp_path / "out.txt", "-q"),
                         env=sk_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: list[int] = []
    with open(fifo, "wb") as feed:
        block = (CHUNK / "test.txt").read_bytes() * 400  # several 1 MB blocks: the pool starts
        for _ in range(600):  # a bounded wait for the pool's two workers (a hang guard)
            if p.poll() is not None:
                break
            feed.write(block)
            feed.flush()
            workers = _children(p.pid)
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2 and p.poll() is None, p.stderr.read().decode() if p.poll() is not None else workers
        # The command now waits for more input (the FIFO stays open), its workers for tasks.
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        for _ in range(300):  # a hang guard, not a time limit under test
            if not any(_alive(w) for w in workers):
                break
            time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert left == [], f"workers {left} outlived their command"


_STOPS = r'''
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from structkit import batch, components
from structkit.batch import Input, run

which, model, text, out = sys.argv[2:6]

def slow(job, b):                    # every block but the first never ends in a worker
    if os.getpid() != PARENT:
        print(os.getpid(), flush=True)   # the worker's pid, for the check below
        time.sleep(10_000)
    r = REAL(job, b)                 # (numba's kernels compiled, if its cache is cold)
    signal.alarm(3)                  # Ctrl-C once the workers' blocks are in flight
    return r

def interrupt(signum, frame):
    raise KeyboardInterrupt

PARENT, REAL = os.getpid(), batch.run_block
signal.signal(signal.SIGALRM, interrupt)
try:
    if which == "batch":
        from structkit.sequence.jobs import TagJob
        from structkit.sequence.task import TaggerConfig, train_tagger
        tagger = train_tagger(TaggerConfig.for_learner("chunk", "perceptron", epochs=1), model)
        batch.run_block = slow
        run(TagJob(tagger), [Input(text, "t.txt")], output=out, jobs=2, block_bytes=4096)
    else:
        signal.alarm(3)
        for _ in components.fork_map(lambda x: time.sleep(10_000) if x else x, range(4), 2, warm=False):
            pass
except KeyboardInterrupt:
    print("stopped", flush=True)
'''


@pytest.mark.parametrize("which", ["batch", "fork_map"])
def test_a_signal_stops_the_workers_without_waiting_for_their_blocks(tmp_path, which):
    """Issue 41, item 6: `annotate -j 2` acted on SIGTERM or Ctrl-C only after the blocks in
    flight were done (25-54 s), where `-j 1` stops at once: the pool's shutdown waited for them.
    Here the workers' blocks never end: the run must stop anyway, and its workers with it (the
    subprocess's time-out is a hang guard, not a limit under test)."""
    import sys

    model = CHUNK / "train.txt"     # the child trains its chunker on it
    text = tmp_path / "t.txt"
    text.write_bytes((CHUNK / "test.txt").read_bytes() * 20)
    try:
        r = subprocess.run([sys.executable, "-c", _STOPS, str(ROOT), which, str(model), str(text),
                            str(tmp_path / "out.txt")], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the run waited for its workers' blocks")
    lines = r.stdout.split()
    assert lines[-1:] == ["stopped"], r.stderr[-2000:]
    workers = [int(x) for x in lines[:-1]]
    assert (len(workers) >= 1) == (which == "batch")
    for _ in range(100):   # a hang guard
        if not any(_alive(w) for w in workers):
            break
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers)
    assert not (tmp_path / "out.txt").exists()
