"""The labelled arc-standard parser with beam search (``--algo beam``): encoding, the labelled
static oracle, training with the max-violation perceptron, parsing, model files. Kernels in
:mod:`structkit.parse.beam`.

Non-projective training trees are made projective by the pseudo-projective transform of Nivre
& Nilsson (2005, ``structkit.parse.projective``, the Head scheme): ``PROJECTIVIZE`` lifts every
training tree's non-projective arcs and encodes each lift in its label, and ``DEPROJECTIVIZE``
undoes the lifts on every parse, so no training tree is skipped for being non-projective and a
parse can hold non-projective arcs. The label set is whatever labels the transformed training
trees carry. (A tree with several roots, possible in CoNLL-X, is still skipped and counted.)
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Callable, Iterable, Iterator

import numpy as np

from structkit.errors import UserError
from structkit.io.document import Sentence
from structkit.jit import numba_loaded
from structkit.learn.loop import run_epochs, train_counts
from structkit.learn.pieces import run_in_pieces, sum_in_pieces
from structkit.learn.selection import Selector, header_config
from structkit.model import dense_array, save_model, sparse_arrays
from structkit.parse import smallbeam
from structkit.parse.beam import (
    Corpus,
    NO_CLUSTERS,
    Model,
    Search,
    average_in_place,
    beam_epoch,
    beam_parse_corpus,
    group_mask,
    nonzero_cells,
    cluster_row,
    scatter_cells,
)
from structkit.parse.projective import LIFT, deprojectivize, projectivize, split_label
from structkit.parse.smallbeam import SMALL_WORDS
from structkit.parse.vocab import SPECIAL, Vocab, pos_column
from structkit.vectors import WordClusters
from structkit.vocab import pack_strings, unpack_strings

SELECT_KEY = "las"  # the labelled parser keeps the epoch of the best dev LAS (CoNLL 2018)

PSEUDO_PROJECTIVE_SCHEME = "head"


def _projectivize(heads: list[int], deprels: list[str]) -> tuple[list[int], list[str]]:
    try:
        h, d, _lifts = projectivize(heads, deprels, PSEUDO_PROJECTIVE_SCHEME)
    except ValueError:  # not a single tree (e.g. several roots): the oracle skips and counts it
        return heads, deprels
    return h, d


def _deprojectivize(heads: list[int], deprels: list[str]) -> tuple[list[int], list[str]]:
    return deprojectivize(heads, deprels, PSEUDO_PROJECTIVE_SCHEME)


# The pseudo-projective transforms: (heads, deprels) -> (heads, deprels).
PROJECTIVIZE: Callable | None = _projectivize
DEPROJECTIVIZE: Callable | None = _deprojectivize


def label_oracle(heads: list[int], labels: list[int], L: int) -> list[int] | None:
    """The static arc-standard oracle's 2n - 1 labelled actions for a tree (heads 1-based,
    0 = root; labels as ids 1..L), or None when it cannot build the tree (non-projective or
    not single-rooted). SHIFT = 0, LEFT(l) = l, RIGHT(l) = L + l."""
    n = len(heads)
    if sum(1 for h in heads if h == 0) != 1:
        return None
    pending = [0] * (n + 1)
    for h in heads:
        if h > 0:
            pending[h] += 1
    stack: list[int] = []
    b = 1
    acts: list[int] = []
    while not (b > n and len(stack) == 1):
        if len(stack) >= 2:
            s0, s1 = stack[-1], stack[-2]
            if heads[s1 - 1] == s0 and pending[s1] == 0:
                acts.append(labels[s1 - 1])
                pending[s0] -= 1
                del stack[-2]
                continue
            if heads[s0 - 1] == s1 and pending[s0] == 0:
                acts.append(L + labels[s0 - 1])
                pending[s1] -= 1
                stack.pop()
                continue
        if b > n:
            return None
        stack.append(b)
        b += 1
        acts.append(0)
    return acts


class LabelledParser:
    """A trained labelled parser: vocabularies (words, tags, lemmas, feats), labels, hashed
    weights W[2^bits + 2L + 1] (float32) and its config."""

    kind = "labelled-arc-standard-beam"

    def __init__(self, config, vocabs: dict, labels: list[str], W: np.ndarray, info: dict | None = None,
                 clusters: WordClusters | None = None):
        self.config = config
        self.vocabs = vocabs
        self.labels = labels            # label id i + 1 is labels[i]
        self.W = W
        self.info = info or {}
        self.clusters = clusters        # word clusters of pretrained vectors (--vectors), or None
        self._rows: dict[str, tuple] = {}   # form -> its row of the clusters array (``cluster_row``)

    @property
    def mask(self) -> int:
        return (1 << self.config.hash_bits) - 1

    @property
    def groups(self) -> int:
        return group_mask(self.config.templates)

    @property
    def root_label(self) -> int:
        return self.labels.index("root") + 1 if "root" in self.labels else 0

    def encode(self, sentences: list[Sentence], grow: bool = False, path: str | None = None):
        check_lengths(sentences, path)

        wv, tv, mv, fv = (self.vocabs[k] for k in ("words", "tags", "lemmas", "feats"))
        cols: dict[str, list[int]] = {"w": [], "t": [], "m": [], "f": []}
        for s in sentences:
            rows = s.rows
            for key, v, items in (("w", wv, [r[1] for r in rows]), ("t", tv, pos_column(s, self.config.pos, rows)),
                                  ("m", mv, [r[2].lower() for r in rows]), ("f", fv, [r[5] for r in rows])):
                cols[key].extend(v.add(x) for x in items) if grow else cols[key].extend(v.ids(items))
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in sentences], out=offsets[1:])
        return offsets, *(np.array(cols[k], dtype=np.int64) for k in "wtmf"), self._cluster_column(sentences)

    def _cluster_column(self, sentences: list[Sentence]) -> np.ndarray:
        """Each token's word clusters (tokens x 3, ``cluster_row``; no rows without vectors)."""
        if self.clusters is None:
            return NO_CLUSTERS
        rows = self._rows
        if len(rows) > 1 << 17:
            rows.clear()
        out = []
        for s in sentences:
            for r in s.rows:
                v = rows.get(r[1])
                if v is None:
                    v = rows[r[1]] = cluster_row(self.clusters.lookup(r[1]))
                out.append(v)
        return np.array(out, dtype=np.int64).reshape(-1, 3)

    def model(self, W: np.ndarray | None = None, U: np.ndarray | None = None):
        """The kernels' ``Model`` of this parser (its weights, or W; U: the accumulator when
        training)."""

        W = self.W if W is None else W
        return Model(W, W[:0] if U is None else U, self.mask, len(self.labels), self.groups)

    def search(self, beam: int | None = None, depth: int | None = None):
        """The kernels' ``Search``: beam width, lookahead depth (the trained ones by default)
        and the 2B candidates the lookahead re-ranks."""

        B = beam or self.config.beam
        return Search(B, (self.config.depth or 0) if depth is None else depth, 2 * B)

    def parse_encoded(self, enc, beam: int | None = None, W: np.ndarray | None = None,
                      depth: int | None = None):
        offsets = enc[0]
        heads = np.zeros(int(offsets[-1]), dtype=np.int64)
        labels = np.zeros(int(offsets[-1]), dtype=np.int64)
        model, search = self.model(W), self.search(beam, depth)
        if search.D == 0 and int(offsets[-1]) <= SMALL_WORDS and not numba_loaded() and self.clusters is None:
            # a few sentences: numpy, the same parses, without numba's start (0.4-0.5 s)
            smallbeam.beam_parse_small(offsets, *enc[1:5], model.W, model.mask, model.L, model.groups, search.B,
                             self.root_label, heads, labels)
            return heads, labels

        def piece(part: np.ndarray) -> None:  # sentences part[0]..part[-1] (learn.pieces: a
            a, b = int(part[0]), int(part[-1]) + 1  # signal is answered between pieces)
            beam_parse_corpus(Corpus(offsets[a:b + 1], *enc[1:]), model, search, self.root_label,
                              heads, labels)

        run_in_pieces(np.arange(len(offsets) - 1), piece)
        return heads, labels

    def _decode(self, sentences, enc, heads, labels):
        o = enc[0]
        names = np.array(["_", *self.labels], dtype=object)   # label id -> name (0: "_")
        # A sentence without a lifted label is what the pseudo-projective decoding gives back
        # unchanged (no arc to move, no mark to drop): it is skipped for those (most sentences).
        lifted = np.array([False] + [LIFT in x for x in self.labels])
        skip_plain = DEPROJECTIVIZE is _deprojectivize and PSEUDO_PROJECTIVE_SCHEME == "head"
        H, D = [], []
        for i in range(len(sentences)):
            ids = labels[o[i]:o[i + 1]]
            h = heads[o[i]:o[i + 1]].tolist()
            d = names[ids].tolist()
            if DEPROJECTIVIZE is not None and not (skip_plain and not lifted[ids].any()):
                h, d = DEPROJECTIVIZE(h, d)
            H.append(h)
            D.append(d)
        return H, D

    def parse_sentences(self, sentences: list[Sentence], beam: int | None = None, W=None,
                        depth: int | None = None, path: str | None = None, enc=None):
        """Heads and labels of the sentences (enc: their ``encode``, when already made)."""
        if enc is None:
            enc = self.encode(sentences, path=path)
        heads, labels = self.parse_encoded(enc, beam, W, depth)
        return self._decode(sentences, enc, heads, labels)

    def parse_batches(self, sentences: Iterable[Sentence], path: str, depth: int | None = None,
                      batch: int = 2048, beam: int | None = None
                      ) -> Iterator[tuple[list[Sentence], list[list[int]], list[list[str]]]]:
        """Parse in batches (streamed); yields (sentences, predicted heads, predicted deprels)."""
        buf: list[Sentence] = []
        for s in sentences:
            buf.append(s)
            if len(buf) >= batch:
                yield (buf, *self.parse_sentences(buf, beam, depth=depth, path=path))
                buf = []
        if buf:
            yield (buf, *self.parse_sentences(buf, beam, depth=depth, path=path))

    def save(self, path: str) -> None:
        arrays = {**sparse_arrays("W", self.W), **pack_strings("labels", self.labels)}
        for k, v in self.vocabs.items():
            arrays.update(pack_strings("vocab_" + k, v.items))
        header = {"task": "parse", "kind": self.kind, "config": header_config(asdict(self.config)), "info": self.info}
        if self.clusters is not None:
            header["vectors"] = self.clusters.header()
            arrays |= self.clusters.arrays()
        save_model(path, header, arrays)

    @classmethod
    def from_arrays(cls, config, header, arrays) -> "LabelledParser":
        vocabs = {k: Vocab(unpack_strings("vocab_" + k, arrays)) for k in ("words", "tags", "lemmas", "feats")}
        labels = unpack_strings("labels", arrays)
        if any(v.items[:len(SPECIAL)] != SPECIAL for v in vocabs.values()):
            raise ValueError("vocabulary")
        if not labels:
            raise ValueError("labels")
        if len(labels) > MAX_LABELS:
            raise ValueError(f"{len(labels):,} labels, over the {MAX_LABELS:,} that training writes")
        # the table's size comes from the header: checked against its range before allocating
        W = dense_array("W", arrays, ((1 << config.hash_bits) + 2 * len(labels) + 1,))
        clusters = WordClusters.from_model(header.get("vectors"), arrays)
        if (clusters is None) != (config.vectors is None):
            raise ValueError("word clusters and the config's vectors disagree")
        return cls(config, vocabs, labels, W, header.get("info", {}), clusters)


def label_scores(sentences: list[Sentence], heads: list[list[int]], deprels: list[list[str]]) -> dict:
    """UAS and LAS over all words (CoNLL 2018): LAS on the full label and on its universal
    part (before ':'), the CoNLL 2018 LAS."""
    n = ua = la = lu = 0
    for s, h, d in zip(sentences, heads, deprels):
        for gh, gd, ph, pd in zip(s.heads, s.deprels, h, d):
            n += 1
            if gh == ph:
                ua += 1
                la += gd == pd
                lu += gd.split(":")[0] == pd.split(":")[0]
    n = max(n, 1)
    return {"uas": 100.0 * ua / n, "las": 100.0 * lu / n, "las_full": 100.0 * la / n, "words": n}


MIN_LIFT_COUNT = 2

# At each of a sentence's 2n - 1 steps the beam parser copies every new item's state (one int64
# array of 11 rows x (n + 2) columns, ``beam.N_ROWS``) from its parent, so its time grows with
# the square of a sentence's length: a second or so at this length with a ParTUT model (the
# time over a 10-word run in results/parse-length.md, scripts/bench_parse_length.py), a hundred
# times that at 50,000. Longer sentences are refused in one line (no treebank here has one over
# 300 words): split them.
MAX_SENTENCE_WORDS = 5000
# Each state scores 2 x labels + 1 actions: a label set this large (lifted labels included) is
# already slow; one of 200,000 made parsing hang. Training refuses more, and a model file that
# holds more was not written by train.
MAX_LABELS = 2048


def check_lengths(sentences: list[Sentence], path: str | None) -> None:
    for s in sentences:
        if len(s) > MAX_SENTENCE_WORDS:
            raise UserError(f"a sentence of {len(s):,} words: the beam parser takes at most "
                            f"{MAX_SENTENCE_WORDS:,} words per sentence (its time grows with the square of "
                            f"the length); split it", path, s.line_of(0) or None)


def _rare_lifts_plain(trees: list[tuple[list[int], list[str]]]) -> list[tuple[list[int], list[str]]]:
    """Keep a lift's encoded label (``obj|nmod``) only if it occurs at least ``MIN_LIFT_COUNT``
    times in the training trees: a label seen once cannot be learnt, and each one adds two
    actions to every decision (on ParTUT, 25 of the 32 encoded labels occur once; dropping them
    takes the actions from 151 to 101). A rarer lift keeps its plain label: the tree stays
    projective, and that lift is not undone after parsing."""
    from collections import Counter

    counts = Counter(x for _, d in trees for x in d if split_label(x, PSEUDO_PROJECTIVE_SCHEME)[1] is not None)
    rare = {x for x, c in counts.items() if c < MIN_LIFT_COUNT}
    if not rare:
        return trees
    plain = {x: split_label(x, PSEUDO_PROJECTIVE_SCHEME)[0] for x in rare}
    return [(h, [plain.get(x, x) for x in d]) for h, d in trees]


class _Cells:
    """A weight table as its nonzero cells (positions int32 or int64, float32 values): the dev
    selection's snapshot of the best epoch's averaged weights, a third of the dense table's
    memory on ParTUT."""

    def __init__(self, idx: np.ndarray, vals: np.ndarray):
        self.idx, self.vals = idx, vals

    @classmethod
    def of(cls, w: np.ndarray) -> "_Cells":
        k = int(np.count_nonzero(w.view(np.int32)))   # every nonzero bit pattern, -0.0 too
        idx = np.empty(k, dtype=np.int32 if len(w) < 2**31 else np.int64)
        vals = np.empty(k, dtype=np.float32)
        nonzero_cells(w, idx, vals)
        return cls(idx, vals)

    def put(self, w: np.ndarray) -> None:
        """Make w (of the table's size) the table again."""

        w.fill(0)
        scatter_cells(w, self.idx, self.vals)

    def dense(self, size: int) -> np.ndarray:
        w = np.empty(size, dtype=np.float32)
        self.put(w)
        return w


def train_labelled(config, sentences: list[Sentence], dev, on_epoch, train_name, train_sha256,
                   t0, clusters: WordClusters | None = None) -> LabelledParser:
    trees = [(list(s.heads), list(s.deprels)) for s in sentences]
    if PROJECTIVIZE is not None:
        trees = _rare_lifts_plain([PROJECTIVIZE(h, d) for h, d in trees])
    labels = sorted({x for _, d in trees for x in d})
    if len(labels) > MAX_LABELS:
        raise UserError(f"{len(labels):,} dependency labels (lifted ones included): the beam parser "
                        f"takes at most {MAX_LABELS:,}", train_name)
    lid = {x: i + 1 for i, x in enumerate(labels)}
    L = len(labels)
    parser = LabelledParser(config, {k: Vocab() for k in ("words", "tags", "lemmas", "feats")}, labels,
                            np.zeros(1, dtype=np.float32), clusters=clusters)
    enc = parser.encode(sentences, grow=True, path=train_name)
    offsets = enc[0]
    n_sent = len(sentences)
    gold = np.zeros(max(2 * int(offsets[-1]), 1), dtype=np.int64)
    trainable = np.zeros(n_sent, dtype=np.bool_)
    for i, (h, d) in enumerate(trees):
        acts = label_oracle(h, [lid[x] for x in d], L)
        if acts is not None:
            g0 = 2 * int(offsets[i]) - i
            gold[g0:g0 + len(acts)] = acts
            trainable[i] = True
    skipped = int(n_sent - trainable.sum())
    if trainable.sum() == 0:
        raise UserError("no training tree can be built by the arc-standard oracle "
                        "(all non-projective or with several roots)", train_name)
    dev_sents = (dev() if callable(dev) else dev) if dev is not None else None
    W = np.zeros((1 << config.hash_bits) + 2 * L + 1, dtype=np.float32)
    U = np.zeros_like(W)
    c = 1.0
    rng = np.random.default_rng(config.seed)
    model, search = parser.model(W, U), parser.search()
    # With dev data each epoch's averaged weights are made in W itself (W's training values
    # kept aside as their nonzero cells meanwhile, and put back before the next epoch), and
    # the best epoch's are kept as their nonzero cells: the tables then are W, U and two
    # sparse copies (0.4 of a table each on ParTUT), not W, U, an average and a best copy.
    held = None   # W's training values while W holds the averaged weights

    def restore() -> None:
        nonlocal held
        if held is not None:
            held.put(W)
            held = None

    def step(epoch: int) -> dict:
        restore()
        order = rng.permutation(n_sent)

        def piece(part: np.ndarray) -> tuple:  # the kernel on a slice of the order (learn.pieces)
            nonlocal c
            c, u = beam_epoch(Corpus(*enc), gold, part, trainable, model, search, c)
            return (u,)

        updates, = sum_in_pieces(order, piece, 1)
        # one decision per sentence: the max-violation update is its mistake
        return train_counts(updates, updates, int(trainable.sum()))

    def averaged() -> np.ndarray:   # W - U / c, in W (the same float32 numbers as numpy's)
        nonlocal held

        restore()
        held = _Cells.of(W)
        average_in_place(W, U, np.float32(c))
        return W

    def final() -> np.ndarray:   # the last epoch's average, in place once training is over
        np.divide(U, np.float32(c), out=U)
        return np.subtract(W, U, out=W)

    dev_enc = None   # dev encoded once (the vocabularies no longer grow)

    def score_dev(w: np.ndarray) -> dict:
        nonlocal dev_enc
        if dev_enc is None:
            dev_enc = parser.encode(dev_sents)
        H, D = parser.parse_sentences(dev_sents, W=w, enc=dev_enc)
        return label_scores(dev_sents, H, D)

    def snapshot(w: np.ndarray) -> "_Cells":  # the best epoch's weights, kept as their nonzero cells
        selector.weights = None   # the previous best goes first: one snapshot in memory at a time
        return _Cells.of(w)

    selector = Selector(SELECT_KEY, config.patience, copy=snapshot)
    run = run_epochs(config.epochs, step, averaged, selector,
                     score_dev if dev_sents is not None else None, on_epoch, final)
    if isinstance(run.weights, _Cells):   # the tables of training go before the dense copy comes
        size = len(W)
        model = W = U = held = None
        run.weights = run.weights.dense(size)
    parser.W = run.weights
    parser.info = {"train_file": train_name, "train_sha256": train_sha256,
                   "train_sentences": n_sent, "skipped_unbuildable": skipped,
                   "train_tokens": int(offsets[-1]), "labels": L,
                   "train_seconds": round(time.perf_counter() - t0, 3)}
    parser.info |= run.info()
    if clusters is not None:
        parser.info["vectors"] = clusters.header()
    return parser, run.selector
