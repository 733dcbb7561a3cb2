"""Dependency parsing (arc-standard with lookahead): reading, encoding, training, parsing,
model files. The adapter between CoNLL-X/CoNLL-U files and the array-only numba kernels.

Also the parse task's entry points for both parsers: ``ParserConfig`` (checked through the
table ``PARSERS`` of the task's two parsers, by the learner spec's decoder),
``train_parser``/``train_parser_on``, ``DependencyParser.load`` (which returns a
:class:`structkit.parse.labelled.LabelledParser` for a beam model) and
``check_search_options`` (``structkit parse``'s --depth and --beam)."""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

from structkit.errors import UserError
from structkit.eval.attachment import AttachmentCounter
from structkit.io.conllu import is_conllu_file, read_trees
from structkit.io.conllx import check_tree
from structkit.io.document import Sentence
from structkit.io.files import display_name
from structkit.learn import registry, selection
from structkit.learn.loop import hold_out, refit, run_epochs, train_counts, wants_refit
from structkit.learn.pieces import sum_in_pieces
from structkit.learn.registry import PARAMS, Param
from structkit.learn.selection import Selector
from structkit.model import load_model, save_model
from structkit.parse.arcstandard import parse_corpus
from structkit.parse.beam import CLUSTERS
from structkit.parse.beam import GROUPS as BEAM_GROUPS
from structkit.parse.labelled import LabelledParser, check_lengths, train_labelled
from structkit.parse.learn import parser_epoch
from structkit.parse.vocab import SPECIAL, Vocab, pos_column
from structkit.vectors import check_options as check_vector_options
from structkit.vectors import clusters_of_config, vector_bounds
from structkit.vocab import pack_strings, unpack_strings

# Brute-force lookahead visits 3^(D+1) action paths per decision: depth 6 is the useful limit.
DEPTH = Param("depth", int, 0, "Lookahead search depth D over arc-standard actions "
              "(brute force: 3^(D+1) paths per decision).", low=0, high=6)
HASH_BITS = Param("hash_bits", int, 22, "Feature table size: 2^hash_bits rows.", low=16, high=26)
POS = Param("pos", str, "xpos", "Which POS column the features read.", choices=("xpos", "upos"))
# lookahead inside a beam (--algo beam --depth D) scores every action sequence of length D from
# each of the 2B best candidates: (2L + 1)^(D - 1) feature extractions per candidate
BEAM_MAX_DEPTH = 3


@dataclass
class ParserConfig:
    """Everything that defines a parser training run; stored in the model header."""

    task: str = "parse"
    algo: str = "beam"
    epochs: int | None = None  # None: the learner's default
    depth: int = 0
    margin: float | None = None  # None: the learner's default
    seed: int = 0
    hash_bits: int | None = None  # None: the learner's default (22 lookahead/greedy, 23 beam)
    pos: str | None = None     # which POS column: xpos (CoNLL-X POSTAG) or upos; None: upos for
    #                            beam, xpos for lookahead/greedy (the same on ptb-dep)
    beam: int | None = None    # beam width of --algo beam (1 = greedy)
    templates: str | list[str] | None = None  # template groups of --algo beam (structkit.parse.beam.GROUPS)
    dev_split: float | None = None  # hold out every round(1/F)-th training sentence as dev data
    patience: int | None = None     # with dev data: stop after this many epochs without a better score
    refit: bool = True              # with dev_split: train again on every sentence for the chosen epochs
    vectors: str | None = None      # a .vec file: its words' clusters become features (--algo beam)
    vectors_limit: int | None = None  # how many of its words (None: vectors.DEFAULT_LIMIT)

    def validate(self) -> None:
        self.vectors, self.vectors_limit = check_vector_options(self.vectors, self.vectors_limit)
        spec, family = parser_family(self.algo)
        if spec.check is not None:
            spec.check(self)
        self.depth = spec.fixed.get("depth", self.depth)
        if self.epochs is None:
            self.epochs = spec.epochs
        family.configure(self, spec)

        self.epochs = registry.EPOCHS.check(self.epochs)
        self.depth = DEPTH.check(self.depth)
        if self.margin is None:   # the beam parser takes no margin: 0, as stored before
            margin = spec.param("margin")
            self.margin = margin.default if margin is not None else 0.0
        self.margin = registry.PARAMS["margin"].check(self.margin)
        self.seed = registry.SEED.check(self.seed)
        self.hash_bits = HASH_BITS.check(self.hash_bits)
        self.pos = POS.check(self.pos)
        self.dev_split = selection.check_dev_split(self.dev_split)
        self.patience = selection.check_patience(self.patience)
        self.refit = selection.check_refit(self.refit)


# ---- the parse task's parsers ----------------------------------------------------------------
# The parse task has two parsers, each with its own transition system, features, trainer and
# model file: the arc-standard parser with lookahead search (this module; the learners
# ``lookahead`` and ``greedy``, the latter at depth 0) and the labelled beam parser
# (:mod:`structkit.parse.labelled`; the learner ``beam``). A parse learner's spec says which
# parser it trains by its ``decoder`` ("arc-standard" or "beam"), and this table maps that to
# the parser: the code below looks parsers up by it and never compares a learner's name (only
# the message for an --algo that trains no parser lists the built-in ones). Unlike a sequence
# learner, a new parse learner therefore reuses one of these two parsers, or adds a row here.
@dataclass(frozen=True)
class ParserFamily:
    """One parser: ``configure(config, spec)`` fills in its defaults and checks its options;
    ``train(config, sentences, dev, on_epoch, train_name, train_sha256, t0)`` returns (model,
    dev selector); ``check_dev(sentences, name)`` checks development sentences as training
    would."""

    configure: Callable
    train: Callable
    check_dev: Callable


def _configure_arcstandard(config: ParserConfig, spec) -> None:
    if config.beam is not None:
        raise UserError(f"--beam applies to --algo beam, not {config.algo}")
    if config.templates is not None:
        raise UserError(f"--templates applies to --algo beam among the parsers, not {config.algo}")
    if config.vectors is not None:
        raise UserError(f"--vectors applies to --algo beam among the parsers, not {config.algo}")
    config.hash_bits = 22 if config.hash_bits is None else config.hash_bits
    config.pos = "xpos" if config.pos is None else config.pos


def _configure_beam(config: ParserConfig, spec) -> None:
    config.hash_bits = spec.param("hash_bits").default if config.hash_bits is None else config.hash_bits
    config.beam = spec.param("beam").default if config.beam is None else config.beam
    config.beam = registry.PARAMS["beam"].check(config.beam)
    config.pos = "upos" if config.pos is None else config.pos
    if config.templates is None:   # the clusters of --vectors where there are vectors
        config.templates = list(BEAM_GROUPS) + ([CLUSTERS] if config.vectors is not None else [])
    if isinstance(config.templates, str):
        config.templates = [t.strip() for t in config.templates.split(",") if t.strip()]
    bad = [t for t in config.templates if t not in BEAM_GROUPS and t != CLUSTERS]
    if bad or not config.templates:
        raise UserError(f"--templates for --algo beam is a comma-separated list of "
                        f"{', '.join(BEAM_GROUPS)}; got {config.templates!r}")
    config.templates = list(config.templates)
    if CLUSTERS in config.templates and config.vectors is None:
        raise UserError("the template group clusters reads the word clusters of --vectors FILE: give one")
    if not 0 <= (config.depth or 0) <= BEAM_MAX_DEPTH:
        raise UserError(f"--depth (lookahead inside the beam) of --algo beam is 0..{BEAM_MAX_DEPTH}, "
                        f"got {config.depth}")


def _train_beam(*args, **kw):
    return train_labelled(*args, **kw)


def _check_beam_dev(sentences: list[Sentence], name: str | None) -> None:
    check_lengths(sentences, name)


def parser_family(algo: str):
    """(the learner spec of --algo ``algo`` for the parse task, the parser it trains)."""

    try:
        spec = registry.get(algo, "parse")
    except UserError:
        spec = None
    if spec is None or spec.decoder not in PARSERS:
        raise UserError(f"--algo for parsing is beam, lookahead (or greedy = depth 0), got {algo!r}")
    return spec, PARSERS[spec.decoder]


def check_search_options(parser, depth: int | None, beam: int | None,
                         where: str | None = None) -> tuple[int | None, int | None]:
    """``structkit parse``'s --depth and --beam for a loaded ``parser`` (None: not given):
    the lookahead depth of an arc-standard parser (0..6) or of the lookahead inside a beam
    parser's beam (0..BEAM_MAX_DEPTH), and the beam width, which only a beam parser has.
    Returns them checked; a UserError (located at ``where``, the model file, where the
    parser's kind decides) for a wrong one."""

    labelled = isinstance(parser, LabelledParser)
    if depth is not None:
        if labelled:  # lookahead inside the beam: re-rank the 2B best candidates by depth-D lookahead
            if not 0 <= depth <= BEAM_MAX_DEPTH:
                raise UserError(f"--depth of a beam parser (lookahead inside the beam) is "
                                f"0..{BEAM_MAX_DEPTH}, got {depth}", where)
        else:
            DEPTH.check(depth)
    if beam is not None:
        if not labelled:
            raise UserError("--beam applies to beam parsers (--algo beam, the default)", where)
        beam = PARAMS["beam"].check(beam)
    return depth, beam


@dataclass
class Treebank:
    sentences: list[Sentence]
    offsets: np.ndarray
    words: np.ndarray
    tags: np.ndarray
    heads: np.ndarray | None


def encode(sentences: list[Sentence], wv: Vocab, tv: Vocab, pos: str, grow: bool,
           with_heads: bool = True) -> Treebank:
    """The sentences as the kernels' arrays: word and POS ids (``grow``: new items added to the
    vocabularies) and, ``with_heads``, the heads (None when a sentence has none; parsing reads
    none)."""
    words: list[int] = []
    tags: list[int] = []
    heads: list[int] = []
    has_heads = with_heads
    for s in sentences:
        rows = s.rows
        forms = [r[1] for r in rows]
        if grow:
            words.extend(wv.add(w) for w in forms)
            tags.extend(tv.add(t) for t in pos_column(s, pos, rows))
        else:
            words.extend(wv.ids(forms))
            tags.extend(tv.ids(pos_column(s, pos, rows)))
        if has_heads:
            h = s.heads
            if h is None:
                has_heads = False
            else:
                heads.extend(h)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sentences], out=offsets[1:])
    return Treebank(sentences, offsets, np.array(words, dtype=np.int64), np.array(tags, dtype=np.int64),
                    np.array(heads, dtype=np.int64) if has_heads else None)


class DependencyParser:
    """A trained parser: vocabularies, hashed weights W[2^bits, 3] and its config."""

    def __init__(self, config: ParserConfig, words: Vocab, tags: Vocab, W: np.ndarray, info: dict | None = None):
        self.config = config
        self.words = words
        self.tags = tags
        self.W = W
        self.info = info or {}

    @property
    def mask(self) -> int:
        return (1 << self.config.hash_bits) - 1

    def parse_encoded(self, tb: Treebank, depth: int | None = None, W: np.ndarray | None = None) -> np.ndarray:
        out = np.zeros(int(tb.offsets[-1]), dtype=np.int64)
        parse_corpus(tb.offsets, tb.words, tb.tags, self.W if W is None else W, self.mask,
                     self.config.depth if depth is None else depth, out)
        return out

    def parse_batches(self, sentences: Iterable[Sentence], path: str, depth: int | None = None,
                      batch: int = 2048) -> Iterator[tuple[list[Sentence], list[list[int]], None]]:
        """Parse sentences in batches (streamed); yields (sentences, predicted heads, None): the
        unlabelled parser predicts no DEPREL (the labelled one yields label lists there)."""
        buf: list[Sentence] = []

        def flush():
            tb = encode(buf, self.words, self.tags, self.config.pos, grow=False, with_heads=False)
            heads = self.parse_encoded(tb, depth)
            o = tb.offsets
            return [heads[o[i]:o[i + 1]].tolist() for i in range(len(buf))]

        for s in sentences:
            buf.append(s)
            if len(buf) >= batch:
                yield buf, flush(), None
                buf = []
        if buf:
            yield buf, flush(), None

    def save(self, path: str) -> None:
        rows, cols = np.nonzero(self.W)
        arrays = {"W_rows": rows.astype(np.int64), "W_cols": cols.astype(np.int8),
                  "W_vals": self.W[rows, cols],
                  **pack_strings("words", self.words.items), **pack_strings("tags", self.tags.items)}
        header = {"task": "parse", "kind": "arc-standard",
                  "config": selection.header_config(asdict(self.config)), "info": self.info}
        save_model(path, header, arrays)

    @classmethod
    def load(cls, path: str, command: str | None = None):
        header, arrays = load_model(path, ("parse",), command, limits=_parser_limits)
        # imported before the checks below: an error of structkit's own code while importing is a
        # traceback, not a "damaged model file" (as it was once said of a good file)

        try:
            config = ParserConfig(**header["config"])
            try:
                config.validate()  # e.g. hash_bits in range before a table of 2^hash_bits is allocated
            except UserError as e:
                raise ValueError(e.message) from None
            if header.get("kind") != "arc-standard":
                return LabelledParser.from_arrays(config, header, arrays)
            words = Vocab(unpack_strings("words", arrays))
            tags = Vocab(unpack_strings("tags", arrays))
            if words.items[:2] != SPECIAL or tags.items[:2] != SPECIAL:
                raise ValueError("vocabulary")
            rows, cols, vals = arrays["W_rows"], arrays["W_cols"], arrays["W_vals"]
            if not (len(rows) == len(cols) == len(vals)) or (len(rows) and (
                    rows.min() < 0 or rows.max() >= 1 << config.hash_bits or cols.min() < 0
                    or cols.max() > 2)) or not np.isfinite(vals).all():
                raise ValueError("weights out of range or not finite")
            W = np.zeros((1 << config.hash_bits, 3))
            W[rows, cols.astype(np.int64)] = vals
            return cls(config, words, tags, W, header.get("info", {}))
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise UserError(f"damaged model file: {e}", path) from None


def _parser_limits(header: dict, shapes: dict) -> None:
    """Bounds on a parser's arrays from its header (its hash table size), checked before
    they are read."""
    config = header.get("config")
    bits = config.get("hash_bits") if isinstance(config, dict) else None

    if type(bits) is not int or not HASH_BITS.low <= bits <= max(HASH_BITS.high, PARAMS["hash_bits"].high):
        raise ValueError(f"hash_bits out of range ({str(bits)[:20]})")
    for name, (dtype, shape) in shapes.items():
        if name.startswith("W_") and math.prod(shape) > 3 << bits:
            raise ValueError(f"array {name} of {math.prod(shape)} elements for a table of 2^{bits}")
        bound = vector_bounds(header).get(name)
        if bound is not None and math.prod(shape) > bound:
            raise ValueError(f"array {name} of {math.prod(shape)} elements, over the vectors' limit")


def read_treebank(path: str, digest=None) -> list[Sentence]:
    """All sentences of a CoNLL-X/CoNLL-U file with heads (training or development data). A
    CoNLL-U tree must have exactly one root, as the UD guidelines require (CoNLL-X allows
    several; the arc-standard oracle skips and counts those)."""

    sents = list(read_trees(path))
    single_root = path != "-" and is_conllu_file(path, by_rows=False)
    for s in sents:
        if s.heads is None:
            raise UserError("no HEAD column: training and development data need gold trees",
                            display_name(path), s.line_of(0))
        if single_root and sum(1 for h in s.heads if h == 0) != 1:
            raise UserError(f"not a UD tree: {check_tree(s.heads, single_root=True)}",
                            display_name(path), s.line_of(0))
    if digest is not None:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return sents


def attachment(gold: Treebank, pred_heads: np.ndarray) -> dict:
    counter = AttachmentCounter()
    o = gold.offsets
    for i, s in enumerate(gold.sentences):
        counter.add(s.heads, pred_heads[o[i]:o[i + 1]].tolist(), pos_column(s, "xpos"))
    return counter.score()


def train_parser(config: ParserConfig, train_path: str, dev_path: str | None = None,
                 on_epoch: Callable[[int, dict], None] | None = None) -> DependencyParser:
    """Read, encode, check which trees the oracle can build, train; report each epoch."""
    config.validate()
    selection.check_with_dev(config, dev_path)
    t0 = time.perf_counter()
    digest = hashlib.sha256() if train_path != "-" else None
    sentences = read_treebank(train_path, digest)
    read_dev = (lambda: _read_dev(dev_path, config)) if dev_path else None
    return train_parser_on(config, sentences, read_dev, on_epoch, display_name(train_path),
                           digest.hexdigest() if digest else None, t0)


def _read_dev(dev_path: str, config: ParserConfig) -> list[Sentence]:
    sents = read_treebank(dev_path)
    parser_family(config.algo)[1].check_dev(sents, display_name(dev_path))  # said with the dev file's name
    return sents


def train_parser_on(config: ParserConfig, sentences: list[Sentence],
                    dev: list[Sentence] | Callable[[], list[Sentence]] | None = None,
                    on_epoch: Callable[[int, dict], None] | None = None,
                    train_name: str | None = None, train_sha256: str | None = None,
                    t0: float | None = None, clusters=None) -> DependencyParser:
    """Train on in-memory sentences with heads (``config`` validated); ``dev`` may be a
    function that reads it, called once the training trees are checked. With
    ``config.dev_split`` (and ``refit``) the chosen epochs are trained again on every sentence.
    ``clusters``: the word clusters of ``config.vectors`` when already made (a pipeline's);
    otherwise made here from the file."""

    if t0 is None:
        t0 = time.perf_counter()
    selection.check_with_dev(config, dev)
    full = sentences   # with --dev-split, every round(1/F)-th sentence held out
    sentences, dev = hold_out(config, sentences, dev, len(sentences), lambda ix: [sentences[i] for i in ix])
    train = parser_family(config.algo)[1].train
    clusters = clusters_of_config(config, clusters)
    model, selector = train(config, sentences, dev, on_epoch, train_name, train_sha256, t0,
                            **({"clusters": clusters} if clusters is not None else {}))
    if wants_refit(config, selector):
        def again(cfg: ParserConfig, told) -> DependencyParser:
            return train_parser_on(cfg, full, None, told, train_name, train_sha256, clusters=clusters)

        return refit(config, selector, config.epochs, again, on_epoch, len(dev), t0)
    return model


def _train_arcstandard(config: ParserConfig, sentences: list[Sentence], dev, on_epoch, train_name,
                       train_sha256, t0):
    """The lookahead/greedy parser and its selector."""
    from structkit.parse.arcstandard import HashedWeights, Treebank, oracle_actions
    wv, tv = Vocab(), Vocab()
    train = encode(sentences, wv, tv, config.pos, grow=True)
    n_sent = len(train.offsets) - 1
    actions = np.zeros(max(2 * int(train.offsets[-1]), 1), dtype=np.int64)
    trainable = np.zeros(n_sent, dtype=np.bool_)
    oracle_actions(train.offsets, train.heads, actions, trainable)
    skipped = int(n_sent - trainable.sum())
    if trainable.sum() == 0:
        raise UserError("no training tree can be built by the arc-standard oracle "
                        "(all non-projective or with several roots)", train_name)
    dev_tb = None
    if dev is not None:
        dev_tb = encode(dev() if callable(dev) else dev, wv, tv, config.pos, grow=False)
    parser = DependencyParser(config, wv, tv, np.zeros((1, 3)))
    W = np.zeros((1 << config.hash_bits, 3))
    U = np.zeros_like(W)
    c = 1.0
    rng = np.random.default_rng(config.seed)
    lengths = np.diff(train.offsets)[trainable]  # skipped sentences make no decisions
    decisions = int(2 * lengths.sum() - len(lengths))

    def step(epoch: int) -> dict:
        order = rng.permutation(n_sent)
        tb = Treebank(train.offsets, train.words, train.tags, train.heads)
        hw = HashedWeights(W, U, parser.mask)

        def piece(part: np.ndarray) -> tuple:  # the kernel on a slice of the order (learn.pieces)
            nonlocal c
            c, m, u = parser_epoch(tb, part, trainable, hw, c, config.depth, config.margin)
            return m, u

        mistakes, updates = sum_in_pieces(order, piece, 2)
        return train_counts(updates, mistakes, decisions)

    def score_dev(averaged: np.ndarray) -> dict:
        return attachment(dev_tb, parser.parse_encoded(dev_tb, W=averaged))

    run = run_epochs(config.epochs, step, lambda: W - U / c, Selector("uas", config.patience),
                     score_dev if dev_tb is not None else None, on_epoch)
    parser.W = run.weights
    parser.info = {"train_file": train_name, "train_sha256": train_sha256,
                   "train_sentences": n_sent, "skipped_unbuildable": skipped,
                   "train_tokens": int(train.offsets[-1]),
                   "train_seconds": round(time.perf_counter() - t0, 3)}
    parser.info |= run.info()
    return parser, run.selector


# the parse task's parsers by the ``decoder`` of the learner specs that train them (see
# ``ParserFamily`` above)
PARSERS = {
    "arc-standard": ParserFamily(_configure_arcstandard, _train_arcstandard, lambda sentences, name: None),
    "beam": ParserFamily(_configure_beam, _train_beam, _check_beam_dev),
}
