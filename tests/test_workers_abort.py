"""A pool stopped with ``abort`` (an error, a signal, a caller that stops early) ends even when a
worker was ended half-way through writing its result: the pool's manager thread waited for the
rest of that message for ever, and ``stop`` never returned (a hang seen in a CI run of
tests/pipeline/test_components.py). The half-written message is made here by hand."""
from __future__ import annotations

import os
import struct
import threading
import time

import structkit.components as C
from structkit import workers


def test_an_aborted_pool_ends_though_a_worker_died_half_way_through_its_result(monkeypatch):
    ex = workers.pool(2)

    def half_a_result(_):
        # in the worker: the first bytes of a 1,000-byte message into the pool's result pipe
        # (its write end, inherited with the fork), then nothing more until the worker is ended
        os.write(ex._result_queue._writer.fileno(), struct.pack("!i", 1000) + b"x" * 10)
        time.sleep(120)

    monkeypatch.setattr(C, "_CALL", half_a_result)
    ex.submit(C._call, 0)          # the workers fork here
    time.sleep(1.5)                 # the manager thread has read the length, and waits for the rest
    t = threading.Thread(target=workers.stop, args=(ex, True), daemon=True)
    t.start()
    t.join(30)
    ended = not t.is_alive()
    if not ended:                   # release the manager thread, so that the test fails, not hangs
        ex._result_queue._writer.close()
        t.join(30)
    assert ended, "stop(abort=True) did not return"
