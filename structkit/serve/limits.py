"""The server's limits, and what keeps one request's work within them: its deadline and the
server's stop flag (``Job``, checked between chunks of sentences; ``Cancelled`` when one has
passed), a model's first-come first-served lock (``FairLock``), and ``RequestError``, a
request's mistake as an HTTP status and a one-line message.
"""
from __future__ import annotations

import threading
import time
from collections import deque

MAX_BYTES = 1 << 20        # request bodies above this are refused (413)
TIMEOUT = 10.0             # seconds per request of up to TIMEOUT_WORDS words, queueing included
#                            (503 after); a larger request has as many times that as it has
#                            TIMEOUT_WORDS words, so that every request the size limits take
#                            has time to finish (100,000 words: 100 s)
TIMEOUT_WORDS = 10_000
MAX_SENTENCE_WORDS = 1000  # words per sentence: the beam parser's time grows with the square of
#                            a sentence's length (3,200 words: 2.6 s; 100,000: some 40 minutes
#                            by that square, and over 5 minutes when tried),
#                            and a sentence is the smallest unit of work that can be stopped
MAX_WORDS = 100_000        # words per request (413 above)
PIECE_CHARS = 20_000       # characters of text the tokenizer takes at a time
CHUNK_WORDS = 500          # words per unit of work between deadline checks and lock turns
BIG_BYTES = 16 << 10       # bodies above this (some 2,000 words) run in the big-request lane (one thread)
READ_TIMEOUT = 15.0        # seconds for a request's headers and body to arrive (408 after)
MAX_CONNECTIONS = 1000     # open connections (bounded further by the file-descriptor limit)


class RequestError(Exception):
    """A request's mistake: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Cancelled(Exception):
    """A request's work stopped at a check: its deadline passed or the server is stopping."""


class Job:
    """One request's deadline and cancel flag, checked between units of work."""

    def __init__(self, timeout: float | None = None, stopping: threading.Event | None = None):
        self.start = time.monotonic()
        self.timeout = timeout
        self.limit = timeout          # seconds this request may take (grows with its words)
        self.deadline = None if timeout is None else self.start + timeout
        self.cancelled = threading.Event()
        self.stopping = stopping

    def words(self, n: int) -> None:
        """The request has ``n`` words: its limit is ``timeout`` per ``TIMEOUT_WORDS`` of them
        (at least ``timeout``)."""
        if self.timeout is not None:
            self.limit = self.timeout * max(1.0, n / TIMEOUT_WORDS)
            self.deadline = self.start + self.limit

    def cancel(self) -> None:
        self.cancelled.set()

    def check(self) -> None:
        if self.cancelled.is_set() or (self.stopping is not None and self.stopping.is_set()) \
                or (self.deadline is not None and time.monotonic() > self.deadline):
            raise Cancelled()


class FairLock:
    """A lock handed to its waiters in arrival order (threading.Lock lets the thread that
    releases it take it straight back, so a big request releasing between chunks could keep
    it for its whole run)."""

    def __init__(self):
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque = deque()

    def acquire(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        turn.acquire()  # released by release(), which hands the lock over held

    def release(self) -> None:
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._held = False

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _chunks(sents: list, words: int = CHUNK_WORDS):
    """Consecutive runs of sentences of about ``words`` words (a longer sentence alone), each
    with the index of its first sentence."""
    at, n = 0, 0
    for k, s in enumerate(sents):
        n += len(s)
        if n >= words:
            yield at, sents[at:k + 1]
            at, n = k + 1, 0
    if at < len(sents):
        yield at, sents[at:]
