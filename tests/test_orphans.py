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
