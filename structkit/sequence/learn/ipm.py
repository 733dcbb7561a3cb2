"""Multi-core training by iterative parameter mixing (McDonald, Hall & Mann 2010, "Distributed
training strategies for the structured perceptron", NAACL, Figure 3).

The training sentences are split once into ``jobs`` shards (a seeded permutation dealt out in
turn, so shards differ by at most one sentence). Each epoch, every shard is trained for one
epoch by the learner's own kernel, all from the same weights (the mixed weights of the previous
epoch), in a seeded order of its own; then the shards' weights are mixed by the uniform average
(mu_i = 1/N; the paper's other rule, weighting by each shard's mistakes, is neither
implemented nor measured here). The result depends only on the data, the learner's options,
the seed and N: never on the mapper or on thread timing.

Averaging. An averaged learner (``structkit.sequence.chain.Averaged``) holds its weights w, the
accumulator u (u += c * update, c counting examples from 1) and c; its average is w - u / c.
Every shard starts from the same (w, u, c) and trains on its own copy, so after the epoch shard
i holds (w_i, u_i, c_i). The mixed state is (sum_i w_i / N, sum_i u_i / N, max_i c_i): it is
exactly the state of one averaged learner whose weight vector at (parallel) time t is the
mixture of the shards' weight vectors at time t -- each shard's update d made at counter c
enters the mixed w as d / N and the mixed u as c * d / N. Its average w - u / c is therefore
the average of the mixed weight vector over all of training, and mixing never breaks the
accumulator identity. With one shard the mixed state is the shard's state, bit for bit.
Kernels only add to u and never read it, so u is mixed lazily: each shard keeps adding to its
own u_i across epochs (the mean is the same), and the mean is formed only when the average is
read (:meth:`ParameterMixing.averaged`, :meth:`ParameterMixing.finish`).

Execution. The per-shard work is the picklable top-level function :func:`train_shard` of a
:class:`ShardJob`; the trainer maps it over the shards with a ``mapper`` callable that has the
semantics of ``concurrent.futures.Executor.map(fn, iterable)`` (results in input order). The
default runs the shards on threads: the numba kernels release the GIL (``nogil``), the corpus
is shared, and each shard trains in a private copy of the weights allocated once. Any other
mapper (a process pool, a Dask client's ``map`` + ``gather``) is sent, per shard and epoch:

* ``kernel``: the learner's :class:`EpochKernel` (its algorithm and hyper-parameters, a few
  numbers);
* ``w``, ``u`` and ``c``: the mixed weights and the shard's own accumulators (each a
  ``FirstOrder``/``SecondOrder`` namedtuple of numpy arrays, n_features x n_labels float64
  plus the small transition tables -- the big part), and the counter;
* ``data``/``sentences``: the shard's own sentences as a kernel ``Corpus`` (the same every
  epoch: a cluster should ship it once and reuse it), and
* ``epoch``, ``seed`` and ``shard``, from which the shard's sentence order is drawn;

and returns a :class:`ShardResult`: its (w_i, u_i, c_i) and the epoch's counters. Only w_i
is needed after every epoch (for the mixing); u_i is only ever added to, so a cluster may keep
it on its worker between epochs and bring it back when the average is read.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from structkit.learn.pieces import run_in_pieces
from structkit.sequence.chain import Corpus, corpus

if TYPE_CHECKING:
    from structkit.sequence.chain import Corpus

__all__ = ["EpochKernel", "ShardJob", "ShardResult", "train_shard", "shards", "shard_order",
           "sub_corpus", "mix", "ParameterMixing"]

Mapper = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]

# stats a shard reports that add up over shards
_COUNTS = ("train_token_errors", "train_updates", "train_top_loss")


@dataclass(frozen=True)
class EpochKernel:
    """What a worker needs to know of a learner to run one epoch of it: ``kind`` names the
    kernel (``viterbi``: the exact perceptron; ``lookahead``: the history-based perceptrons,
    greedy at depth 0; ``kbest``: the k-best perceptron, PA, restricted PA and MIRA), ``run``
    is the learner module's top-level function that runs it (picklable by name; the learner
    modules hold the dispatch, so this module imports none of them) and ``args`` its
    hyper-parameters, in the kernel's order: ``run(X, order, w, u, c, *args) -> (c, counters)``."""

    kind: str
    run: Callable[..., tuple[float, dict]]
    args: tuple = ()


@dataclass
class ShardJob:
    """One shard's epoch (see the module docstring for what must reach a worker). ``inplace``
    says that ``w`` and ``u`` are the shard's private buffers, to be trained in place (the
    local default); otherwise :func:`train_shard` trains a copy."""

    kernel: EpochKernel
    w: tuple
    u: tuple
    c: float
    data: Corpus
    sentences: np.ndarray
    epoch: int
    seed: int
    shard: int
    inplace: bool = False


@dataclass
class ShardResult:
    """A shard's state after its epoch, and its counters (``train_token_errors`` etc.)."""

    w: tuple
    u: tuple
    c: float
    stats: dict


def shards(n_sentences: int, jobs: int, seed: int) -> list[np.ndarray]:
    """The sentence indices of each of ``jobs`` shards: a permutation drawn from ``seed`` and
    dealt out in turn (sizes differ by at most one)."""
    perm = np.random.default_rng([seed, jobs]).permutation(n_sentences)
    return [np.sort(perm[i::jobs]) for i in range(jobs)]


def shard_order(sentences: np.ndarray, epoch: int, seed: int, shard: int) -> np.ndarray:
    """The order a shard visits its sentences in an epoch: a permutation drawn from (seed,
    epoch, shard) alone."""
    rng = np.random.default_rng([seed, epoch, shard])
    return sentences[rng.permutation(len(sentences))]


def sub_corpus(X: Corpus, sentences: np.ndarray) -> Corpus:
    """The sentences ``sentences`` (in that order) of the kernel corpus X, as a corpus of their
    own (what a remote worker is sent instead of the whole training set)."""
    offs = X.offsets
    lens = offs[sentences + 1] - offs[sentences]
    offsets = np.zeros(len(sentences) + 1, dtype=offs.dtype)
    np.cumsum(lens, out=offsets[1:])
    tokens = np.concatenate([np.arange(offs[s], offs[s + 1]) for s in sentences]) \
        if len(sentences) else np.zeros(0, dtype=np.int64)
    starts, ends = X.indptr[tokens], X.indptr[tokens + 1]
    indptr = np.zeros(len(tokens) + 1, dtype=X.indptr.dtype)
    np.cumsum(ends - starts, out=indptr[1:])
    indices = np.concatenate([X.indices[a:b] for a, b in zip(starts, ends)]) \
        if len(tokens) else np.zeros(0, dtype=X.indices.dtype)
    return Corpus(indptr, indices.astype(X.indices.dtype), offsets, X.y[tokens])


def _copy(w: tuple) -> tuple:
    return type(w)(*(a.copy() for a in w))


# Set when the command is interrupted (a signal in the main thread) during an epoch: the shard
# threads stop at their next piece instead of finishing the epoch, which the pool's shutdown
# would wait for. Cleared at the start of each epoch.
STOP = threading.Event()


class Stopped(Exception):
    """A shard that stopped at STOP (the main thread is already raising its own exception)."""


def run_epoch(kernel: EpochKernel, X: Corpus, order: np.ndarray, w: tuple, u: tuple,
              c: float) -> tuple[float, dict]:
    """One epoch of the learner ``kernel`` over ``order``, training (w, u) in place from the
    counter c, in pieces (``structkit.learn.pieces``: the same result as one call) so that a
    stop request (``STOP``) is seen within one piece. Returns (c, counters)."""

    state: list = [c, {}]

    def piece(part: np.ndarray) -> None:
        if STOP.is_set():
            raise Stopped()
        state[0], got = _run_kernel(kernel, X, part, w, u, state[0])
        for key, v in got.items():
            state[1][key] = state[1].get(key, 0) + v

    run_in_pieces(order, piece)
    counts = state[1] or _run_kernel(kernel, X, order[:0], w, u, state[0])[1]
    return state[0], counts


def _run_kernel(kernel: EpochKernel, X: Corpus, order: np.ndarray, w: tuple, u: tuple,
                c: float) -> tuple[float, dict]:
    return kernel.run(X, order, w, u, c, *kernel.args)


def train_shard(job: ShardJob) -> ShardResult:
    """One shard's epoch: from (job.w, job.u, job.c), its sentences in the order drawn from
    (seed, epoch, shard). A top-level function of picklable data, for any mapper."""
    w, u = (job.w, job.u) if job.inplace else (_copy(job.w), _copy(job.u))
    order = shard_order(job.sentences, job.epoch, job.seed, job.shard)
    c, stats = run_epoch(job.kernel, job.data, order, w, u, job.c)
    return ShardResult(w, u, c, stats)


def _mix_range(states: list[tuple], out: tuple, f: int, lo: int, hi: int, write_back: bool,
               block: int) -> None:
    """:func:`mix` of the elements [lo, hi) of field f (flattened)."""
    n = len(states)
    dst = out[f].reshape(-1)
    first = states[0][f] is out[f]
    srcs = [s[f].reshape(-1) for s in states]
    others = [x for s, x in zip(states, srcs) if s[f] is not out[f]]
    for a in range(lo, hi, block):
        b = min(a + block, hi)
        d = dst[a:b]
        if not first:
            np.copyto(d, srcs[0][a:b])
        for x in srcs[1:]:
            np.add(d, x[a:b], out=d)
        if n > 1:
            np.divide(d, n, out=d)
        if write_back:
            for x in others:
                np.copyto(x[a:b], d)


def mix(states: list[tuple], out: tuple, write_back: bool = False, block: int = 1 << 15,
        mapper: Mapper = map, parts: int = 1) -> None:
    """out = the uniform average of ``states`` (weight namedtuples of the same shapes), summed
    in shard order then divided by N; with ``write_back`` every state is set to it as well.
    Done by blocks that stay in cache, in ``parts`` ranges run by ``mapper`` (the result does not
    depend on them). ``out`` may be the first of ``states``, no other."""
    if any(s is out for s in states[1:]):
        raise ValueError("out may only be the first state")
    for _ in mapper(lambda t: _mix_range(states, out, *t, write_back, block), _ranges(out, parts, block)):
        pass


def _ranges(arrays: tuple, parts: int, block: int) -> list[tuple[int, int, int]]:
    """(field, lo, hi): each array's flat elements in about ``parts`` ranges of whole blocks."""
    tasks = []
    for f in range(len(arrays)):
        size = arrays[f].size
        step = -(-size // (parts * block)) * block if size > block else size
        tasks += [(f, a, min(a + step, size)) for a in range(0, size, max(step, 1))]
    return tasks


def _average_range(w: tuple, us: list[tuple], c: float, out: tuple, f: int, lo: int, hi: int,
                   block: int) -> None:
    """out = w - mean(us) / c over the elements [lo, hi) of field f, the mean summed as
    :func:`mix` sums it and the rest as ``Averaged.averaged`` computes it."""
    n = len(us)
    o, a_ = out[f].reshape(-1), w[f].reshape(-1)
    xs = [u[f].reshape(-1) for u in us]
    for a in range(lo, hi, block):
        b = min(a + block, hi)
        d = o[a:b]
        np.copyto(d, xs[0][a:b])
        for x in xs[1:]:
            np.add(d, x[a:b], out=d)
        if n > 1:
            np.divide(d, n, out=d)
        np.divide(d, c, out=d)
        np.subtract(a_[a:b], d, out=d)


def _like(w: tuple) -> tuple:
    """A private copy of w for a shard; an all-zero array is allocated lazily (calloc), so
    pages a shard never writes cost nothing."""
    return type(w)(*(a.copy() if a.any() else np.zeros(a.shape, a.dtype) for a in w))


class ParameterMixing:
    """Train an averaged online learner (its ``w``, ``u``, ``c`` and :meth:`epoch_kernel`) by
    iterative parameter mixing over ``jobs`` shards of ``data``: call :meth:`epoch` once per
    epoch (:meth:`averaged` gives the averaged weights at any time), then :meth:`finish`, after
    which the learner holds the mixed state (``learner.averaged()`` as after serial training).

    The accumulators are mixed lazily: kernels only add to u and never read it, so each shard
    keeps its own u_i across epochs and the mixed u is their mean, formed when it is needed
    (``averaged``, ``finish``); the weights are mixed after every epoch.

    ``mapper(fn, jobs)`` runs the shards (``Executor.map`` semantics); by default a thread pool
    of ``jobs`` threads. ``shared_memory`` (default: True for the default mapper, False for any
    other) says that jobs run in this process: shards then train in private buffers allocated
    once and share the whole corpus; otherwise each job carries copies of the weights and of
    its shard's accumulators, and its shard's sub-corpus. Either way the model is the same."""

    def __init__(self, learner, data, jobs: int, seed: int, mapper: Mapper | None = None,
                 shared_memory: bool | None = None):
        if jobs < 1:
            raise ValueError("jobs must be >= 1")
        self.learner = learner
        self.kernel: EpochKernel = learner.epoch_kernel()
        # no empty shards: an untrained copy of the weights would only dilute the mixture
        self.jobs = max(1, min(int(jobs), len(data.offsets) - 1))
        self.seed = int(seed)
        self.mapper = mapper
        self.shared_memory = mapper is None if shared_memory is None else bool(shared_memory)
        self.n_tokens = int(data.offsets[-1])
        X = corpus(data)
        self.parts = shards(len(data.offsets) - 1, self.jobs, self.seed)
        if self.shared_memory:
            self.data = [X] * self.jobs
            self.sentences = self.parts
        else:
            self.data = [sub_corpus(X, p) for p in self.parts]
            self.sentences = [np.arange(len(p)) for p in self.parts]
        # the shards' weights (shared memory only: shard 0 trains in the learner's own arrays)
        # and accumulators (shard 0's is the learner's u until finish() mixes them)
        self._w: list[tuple] | None = None
        self._u: list[tuple] = [learner.u] + [_like(learner.u) for _ in range(self.jobs - 1)]
        self._finished = True  # the learner's u is the mixed one (until an epoch)
        self.n_epochs = 0

    def _weights(self) -> list[tuple]:
        if self._w is None:
            lw = self.learner.w
            self._w = [lw] + [_like(lw) for _ in range(self.jobs - 1)]
        return self._w

    def epoch(self, epoch: int | None = None) -> dict:
        """One epoch: every shard from the current mixed weights, then mixing. ``epoch`` (from
        1) seeds the shards' orders; by default one more than the last. Returns the counters of
        ``learner.epoch`` summed over the shards (and the training accuracy where known)."""
        self.n_epochs = self.n_epochs + 1 if epoch is None else int(epoch)
        self._finished = False
        lr = self.learner
        base = ShardJob(self.kernel, lr.w, lr.u, float(lr.c), self.data[0], self.parts[0],
                        self.n_epochs, self.seed, 0, inplace=self.shared_memory)
        ws = self._weights() if self.shared_memory else [lr.w] * self.jobs
        jobs = [replace(base, w=ws[i], u=self._u[i], data=self.data[i], sentences=self.sentences[i],
                        shard=i) for i in range(self.jobs)]
        if self.mapper is None and self.jobs > 1:
            STOP.clear()
            with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="structkit-ipm") as pool:
                try:
                    results = list(pool.map(train_shard, jobs))
                except BaseException:  # a signal (or an error): the other shards stop at a piece
                    STOP.set()
                    raise
                mix([r.w for r in results], lr.w, write_back=True, mapper=pool.map, parts=self.jobs)
        else:
            results = list((self.mapper or map)(train_shard, jobs))
            mix([r.w for r in results], lr.w, write_back=self.shared_memory)
        self._u = [r.u for r in results]
        lr.c = max(r.c for r in results)
        stats: dict = {}
        for k in _COUNTS:
            if any(k in r.stats for r in results):
                stats[k] = sum(int(r.stats.get(k, 0)) for r in results)
        if "train_token_errors" in stats:
            stats["train_accuracy"] = 100.0 * (1 - stats["train_token_errors"] / max(self.n_tokens, 1))
        return stats

    def averaged(self):
        """The averaged weights of the mixed learner now: w - mean(u_i) / c, the same numbers
        as ``learner.averaged()`` after :meth:`finish` (no state changes; by ranges on the
        shard threads with the default mapper)."""
        lr = self.learner
        out = type(lr.w)(*(np.empty_like(a) for a in lr.w))
        us = [lr.u] if self._finished else self._u
        block = 1 << 15
        tasks = _ranges(out, self.jobs, block)
        run = lambda t: _average_range(lr.w, us, float(lr.c), out, *t, block)  # noqa: E731
        if self.mapper is None and self.jobs > 1:
            with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="structkit-ipm") as pool:
                list(pool.map(run, tasks))
        else:
            list(map(run, tasks))
        return out

    def finish(self) -> None:
        """Mix the accumulators into the learner's u (every shard's is set to it as well, so
        training may go on)."""
        self._finished = True
        lr = self.learner
        if self._u[0] is lr.u:  # shared memory: shard 0 accumulates in the learner's u
            mix(self._u, lr.u, write_back=True)
        else:  # the workers' copies: they never change an accumulator they are sent
            mix(self._u, lr.u)
            self._u = [lr.u] * self.jobs
