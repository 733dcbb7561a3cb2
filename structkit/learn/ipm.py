"""Multi-core training by iterative parameter mixing (McDonald, Hall & Mann 2010, "Distributed
training strategies for the structured perceptron", NAACL, Figure 3).

The training sentences are split once into ``jobs`` shards (a seeded permutation dealt out in
turn, so shards differ by at most one sentence). Each epoch, every shard is trained for one
epoch by the learner's own kernel, all from the same weights (the mixed weights of the previous
epoch), in a seeded order of its own; then the shards' weights are mixed by the uniform average
(mu_i = 1/N; the paper's other rule, weighting by each shard's mistakes, was not used). The
result depends only on the data, the learner's options, the seed and N: never on the mapper or
on thread timing.

Averaging. An averaged learner (``structkit.models.chain.Averaged``) holds its weights w, the
accumulator u (u += c * update, c counting examples from 1) and c; its average is w - u / c.
Every shard starts from the same (w, u, c) and trains on its own copy, so after the epoch shard
i holds (w_i, u_i, c_i). The mixed state is (sum_i w_i / N, sum_i u_i / N, max_i c_i): it is
exactly the state of one averaged learner whose weight vector at (parallel) time t is the
mixture of the shards' weight vectors at time t -- each shard's update d made at counter c
enters the mixed w as d / N and the mixed u as c * d / N. Its average w - u / c is therefore
the average of the mixed weight vector over all of training, and mixing never breaks the
accumulator identity. With one shard the mixed state is the shard's state, bit for bit.

Execution. The per-shard work is the picklable top-level function :func:`train_shard` of a
:class:`ShardJob`; the trainer maps it over the shards with a ``mapper`` callable that has the
semantics of ``concurrent.futures.Executor.map(fn, iterable)`` (results in input order). The
default runs the shards on threads: the numba kernels release the GIL (``nogil``), the corpus
is shared, and each shard trains in a private copy of the weights allocated once. Any other
mapper (a process pool, a Dask client's ``map`` + ``gather``) is sent, per shard and epoch:

* ``kernel``: the learner's :class:`EpochKernel` (its algorithm and hyper-parameters, a few
  numbers);
* ``w`` and ``u``: the mixed weights and accumulators (the ``FirstOrder``/``SecondOrder``
  namedtuples of numpy arrays: 2 x n_features x n_labels float64 -- the big part), and ``c``;
* ``data``/``sentences``: the shard's own sentences as a kernel ``Corpus`` (the same every
  epoch: a cluster should ship it once and reuse it), and
* ``epoch``, ``seed`` and ``shard``, from which the shard's sentence order is drawn;

and returns a :class:`ShardResult`: its (w_i, u_i, c_i) and the epoch's counters.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

import numpy as np

from structkit.models.chain import Corpus, corpus, with_T2

__all__ = ["EpochKernel", "ShardJob", "ShardResult", "train_shard", "shards", "shard_order",
           "sub_corpus", "mix", "ParameterMixing"]

Mapper = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]

# stats a shard reports that add up over shards
_COUNTS = ("train_token_errors", "train_updates", "train_top_loss")


@dataclass(frozen=True)
class EpochKernel:
    """What a worker needs to know of a learner to run one epoch of it: ``kind`` names the
    kernel (``viterbi``: the exact perceptron; ``lookahead``: the history-based perceptrons,
    greedy at depth 0; ``kbest``: the k-best perceptron, PA, restricted PA and MIRA) and
    ``args`` its hyper-parameters, in the kernel's order."""

    kind: str
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


def run_epoch(kernel: EpochKernel, X: Corpus, order: np.ndarray, w: tuple, u: tuple,
              c: float) -> tuple[float, dict]:
    """One epoch of the learner ``kernel`` over ``order``, training (w, u) in place from the
    counter c. Returns (c, counters)."""
    if kernel.kind == "viterbi":
        from structkit.learn.perceptron import structured_epoch

        c, wrong = structured_epoch(X, order, w, u, c)
        return c, {"train_token_errors": int(wrong), "train_updates": int(wrong)}
    if kernel.kind == "lookahead":
        from structkit.learn.lookahead import lookahead_epoch

        c, wrong, updates = lookahead_epoch(X, order, with_T2(w), with_T2(u), c, *kernel.args)
        return c, {"train_token_errors": int(wrong), "train_updates": int(updates)}
    if kernel.kind == "kbest":
        from structkit.learn import kbest

        algo, k, C, tau, max_steps = kernel.args
        if algo == "mira":
            from structkit.learn.smo import SMOLimits, kbest_mira_epoch

            c, steps, top_loss = kbest_mira_epoch(X, order, w, u, c, k, C, SMOLimits(tau, max_steps))
        else:
            c, steps, top_loss = kbest._KERNELS[algo](X, order, w, u, c, k, C)
        return c, {"train_updates": int(steps), "train_top_loss": int(top_loss)}
    raise ValueError(f"unknown epoch kernel {kernel.kind!r}")


def train_shard(job: ShardJob) -> ShardResult:
    """One shard's epoch: from (job.w, job.u, job.c), its sentences in the order drawn from
    (seed, epoch, shard). A top-level function of picklable data, for any mapper."""
    w, u = (job.w, job.u) if job.inplace else (_copy(job.w), _copy(job.u))
    order = shard_order(job.sentences, job.epoch, job.seed, job.shard)
    c, stats = run_epoch(job.kernel, job.data, order, w, u, job.c)
    return ShardResult(w, u, c, stats)


def mix(states: list[tuple], out: tuple, write_back: bool = False, block: int = 1 << 15) -> None:
    """out = the uniform average of ``states`` (weight namedtuples of the same shapes), summed
    in shard order then divided by N; with ``write_back`` every state is set to it as well.
    Done by blocks that stay in cache. ``out`` may be one of ``states``."""
    n = len(states)
    if any(s is out for s in states[1:]):
        raise ValueError("out may only be the first state")
    for f in range(len(out)):
        dst = out[f].reshape(-1)
        first = states[0][f] is out[f]
        srcs = [s[f].reshape(-1) for s in states]
        others = [x for s, x in zip(states, srcs) if s[f] is not out[f]]
        for a in range(0, dst.size, block):
            b = min(a + block, dst.size)
            d = dst[a:b]
            if not first:
                np.copyto(d, srcs[0][a:b])
            for s in srcs[1:]:
                np.add(d, s[a:b], out=d)
            if n > 1:
                np.divide(d, n, out=d)
            if write_back:
                for s in others:
                    np.copyto(s[a:b], d)


class ParameterMixing:
    """Train an averaged online learner (its ``w``, ``u``, ``c`` and :meth:`epoch_kernel`) by
    iterative parameter mixing over ``jobs`` shards of ``data``; call :meth:`epoch` once per
    epoch, then read the learner (``averaged()``) as after serial training.

    ``mapper(fn, jobs)`` runs the shards (``Executor.map`` semantics); by default a thread pool
    of ``jobs`` threads. ``shared_memory`` (default: True for the default mapper, False for any
    other) says that jobs run in this process: shards then train in private buffers allocated
    once and share the whole corpus; otherwise each job carries copies of the weights and its
    shard's sub-corpus. Either way the model is the same."""

    def __init__(self, learner, data, jobs: int, seed: int, mapper: Mapper | None = None,
                 shared_memory: bool | None = None):
        if jobs < 1:
            raise ValueError("jobs must be >= 1")
        self.learner = learner
        self.kernel: EpochKernel = learner.epoch_kernel()
        self.jobs = int(jobs)
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
        self._buffers: list[tuple[tuple, tuple]] | None = None
        self.n_epochs = 0

    def _states(self) -> list[tuple[tuple, tuple]]:
        """The shards' (w, u): shard 0 trains in the learner's own arrays, the others in copies
        made once (mixing writes the mixed state back into every one)."""
        if self._buffers is None:
            lw, lu = self.learner.w, self.learner.u
            self._buffers = [(lw, lu)] + [(_copy(lw), _copy(lu)) for _ in range(self.jobs - 1)]
        return self._buffers

    def _map(self, jobs: list[ShardJob]) -> list[ShardResult]:
        if self.mapper is not None:
            return list(self.mapper(train_shard, jobs))
        if len(jobs) == 1:
            return [train_shard(jobs[0])]
        with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="structkit-ipm") as pool:
            return list(pool.map(train_shard, jobs))

    def epoch(self, epoch: int | None = None) -> dict:
        """One epoch: every shard from the current mixed state, then mixing. ``epoch`` (from 1)
        seeds the shards' orders; by default one more than the last. Returns the stats of
        ``learner.epoch`` (summed over shards), with ``shard_seconds``-free counters only."""
        self.n_epochs = self.n_epochs + 1 if epoch is None else int(epoch)
        lr = self.learner
        base = ShardJob(self.kernel, lr.w, lr.u, float(lr.c), self.data[0], self.parts[0],
                        self.n_epochs, self.seed, 0)
        if self.shared_memory:
            states = self._states()
            jobs = [replace(base, w=w, u=u, data=self.data[i], sentences=self.sentences[i], shard=i,
                            inplace=True) for i, (w, u) in enumerate(states)]
        else:
            jobs = [replace(base, data=self.data[i], sentences=self.sentences[i], shard=i)
                    for i in range(self.jobs)]
        results = self._map(jobs)
        mix([r.w for r in results], lr.w, write_back=self.shared_memory)
        mix([r.u for r in results], lr.u, write_back=self.shared_memory)
        lr.c = max(r.c for r in results)
        stats: dict = {}
        for k in _COUNTS:
            if any(k in r.stats for r in results):
                stats[k] = sum(int(r.stats.get(k, 0)) for r in results)
        if "train_token_errors" in stats:
            stats["train_accuracy"] = 100.0 * (1 - stats["train_token_errors"] / max(self.n_tokens, 1))
        return stats
