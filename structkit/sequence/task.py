"""Sequence labelling (pos, chunk, ner): reading, encoding, training, tagging, model files.

The adapter between strings and the array-only learners and decoders.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, replace
from typing import Callable, Iterable, Iterator

import numpy as np

from structkit.errors import UserError
from structkit.eval.accuracy import token_accuracy
from structkit.eval.files import check_labels
from structkit.eval.schemes import make_counter
from structkit.io.conll import Columns, Sentence
from structkit.io.conllu import NAMES, conllu_columns, is_conllu_file, read_sequence
from structkit.io.files import display_name, env_limit
from structkit.jit import numba_loaded
from structkit.learn import registry, selection
from structkit.learn.loop import hold_out, refit, run_epochs, wants_refit
from structkit.learn.registry import LearnerSpec, Param
from structkit.model import load_model, save_model
from structkit.sequence.chain import Weights
from structkit.sequence.fastpath import prepared, tag_block
from structkit.sequence.features import Encoded, FeatureSpace
from structkit.sequence.lattice import Lattice, lattice_limits, train_lattice
from structkit.sequence.learn.ipm import ParameterMixing
from structkit.sequence.search.decoders import decode, history_values, margins_from_values, viterbi_numpy
from structkit.sequence.search.fast import decode_rows
from structkit.sequence.search.viterbi import margins_corpus
from structkit.sequence.templates import TEMPLATE_SETS, VECTOR_ATTRS, resolve_templates
from structkit.spans import SCHEMES, SchemeDetector
from structkit.tasks import SEQUENCE
from structkit.vectors import WordClusters, clusters_of_config, vector_bounds
from structkit.vectors import check_options as check_vector_options
from structkit.vocab import pack_strings, packed_size, unpack_strings

TASKS = SEQUENCE  # the tasks of this wing (structkit.tasks.SEQUENCE: the one constant)
# The learner parameters of the sequence tasks, and the value stored for a learner that does
# not take one (its spec's ``fixed`` values first).
LEARNER_PARAMS = {"depth": None, "margin": 0.0, "label_order": 1, "direction": "ltr", "search": "dp",
                  "jobs": 1,
                  "k": 1, "C": 1.0, "tau": 1e-3, "nr": 1, "order": 1}
# Up to this many tokens, the model's own Viterbi decoding runs in numpy when numba has not
# been imported yet (a one-sentence command need not pay for numba's import).
SMALL_TOKENS = 5000
# tag_batches tags at most this many tokens at once, whatever the sentences (memory is per batch)
BATCH_TOKENS = 100_000
CUTOFF = Param("cutoff", int, 1, "Keep features seen at least this often.", low=1, cap=2 ** 31 - 1)


@dataclass
class TaggerConfig:
    """Everything that defines a training run; stored in the model header. The learner's
    parameters are None until :meth:`validate` fills them from its spec
    (``structkit.learn.registry``). ``algo`` defaults to the perceptron; the command line and
    the API choose :func:`default_algo` for the training file before building the config."""

    task: str
    algo: str = "perceptron"
    epochs: int | None = None    # default: the learner's (10; 1 for the one-pass learners)
    templates: str | list[str] | None = None   # a template set name or a list; default: the task's
    cutoff: int = 1
    seed: int = 0
    label_order: int | None = None   # 2: label trigram features (history-based learners only)
    direction: str | None = None     # history-based decoding direction: ltr or rtl
    columns: str | None = None       # --columns spec, e.g. "word,pos,label"
    label_column: str | None = None  # CoNLL-U: the column (or misc.KEY) the labels are in
    depth: int | None = None         # lookahead search depth (greedy: 0; lookahead: default 1)
    margin: float | None = None      # margin C of the lookahead perceptron (Figure 3)
    search: str | None = None        # lookahead search: dp (exact, fast) or brute (Figure 2)
    k: int | None = None             # k-best learners: how many loss-augmented best sequences
    C: float | None = None           # the C of the max-margin objective (k-best: 1; OLaRank: 0.1)
    tau: float | None = None         # KKT tolerance of the SMO solvers
    nr: int | None = None            # LaRank/OLaRank reprocess steps per new example
    order: int | None = None         # OLaRank greedy models: Markov order K of the label history
    jobs: int | None = None          # threads: > 1 trains by iterative parameter mixing (default 1)
    scheme: str | None = None        # chunk/ner label scheme: iob1, iob2, iobes, bilou (None: detected)
    dev_split: float | None = None   # hold out every round(1/F)-th training sentence as dev data
    patience: int | None = None      # with dev data: stop after this many epochs without a better score
    refit: bool = True               # with dev_split: train again on every sentence for the chosen epochs
    vectors: str | None = None       # a .vec file: its words' clusters become features (vc1-4)
    vectors_limit: int | None = None  # how many of its words (None: vectors.DEFAULT_LIMIT)

    @classmethod
    def for_learner(cls, task: str, algo: str, **values) -> "TaggerConfig":
        """A config with only those of ``values`` that the learner takes among its parameters
        (a grid over several learners passes one set of values)."""
        spec = registry.get(algo, task)
        keep = {k: v for k, v in values.items() if k not in LEARNER_PARAMS or spec.takes(k)}
        return cls(task=task, algo=algo, **keep)

    @property
    def spec(self) -> LearnerSpec:
        return registry.get(self.algo, self.task)

    @property
    def history_based(self) -> bool:
        return self.spec.decoder == "lookahead"

    def validate(self) -> None:
        """Check every option against the task and the learner's parameter table, and fill
        in the defaults (UserError on the first bad one)."""

        if self.task not in TASKS:
            raise UserError(f"--task must be {registry.alternatives(TASKS)} for a tagger, got {self.task!r}")
        spec = self.spec
        if spec.check is not None:
            spec.check(self)
        self.epochs = registry.EPOCHS.check(spec.epochs if self.epochs is None else self.epochs)
        self.cutoff = CUTOFF.check(self.cutoff)
        # numpy's generator refuses negative seeds; say so before any data is read
        self.seed = registry.SEED.check(self.seed)
        for name, unset in LEARNER_PARAMS.items():
            value = getattr(self, name)
            p = spec.param(name)
            if p is not None:
                setattr(self, name, p.default if value is None else p.check(value))
                continue
            stored = spec.fixed.get(name, unset)
            shared = registry.PARAMS[name]
            if value is not None and shared.check(value) != stored:
                takers = ", ".join(s.name for s in registry.specs(self.task) if s.takes(name))
                raise UserError(shared.elsewhere.format(flag=shared.flag, value=value, algo=self.algo,
                                                        takers=takers))
            setattr(self, name, stored)
        if self.scheme is not None:
            scheme = str(self.scheme).lower()
            if scheme not in ("auto",) + SCHEMES:
                raise UserError(f"--scheme must be auto, {', '.join(SCHEMES)}; got {self.scheme!r}")
            if self.task not in ("chunk", "ner"):
                raise UserError(f"--scheme applies to --task chunk or ner, not {self.task}")
            self.scheme = None if scheme == "auto" else scheme
        self.dev_split = selection.check_dev_split(self.dev_split)
        self.patience = selection.check_patience(self.patience)
        self.refit = selection.check_refit(self.refit)
        self.vectors, self.vectors_limit = check_vector_options(self.vectors, self.vectors_limit)
        if self.label_column is not None and not isinstance(self.label_column, str):
            raise UserError(f"--label-column must be a column name, got {self.label_column!r}")
        # templates stay None until the training data says which default fits (CoNLL-U or columns)

    def default_templates(self, columns: Columns) -> str:
        """The task's template set for the columns the training data has: POS tagging on
        CoNLL-U gets the UD set (words only); input without a POS column (JNLPBA: word and
        label) gets the task's no-POS variant (ner-nopos, chunk-nopos)."""

        if columns.conllu and self.task == "pos":
            return "ud"
        if columns.pos is None and f"{self.task}-nopos" in TEMPLATE_SETS:
            return f"{self.task}-nopos"
        return self.task


def default_algo(task: str, train_path: str | None) -> str:
    """The learner a sequence task trains with when none is named: the averaged perceptron;
    POS tagging on a CoNLL-U file gets the k-best passive-aggressive learner (k = 1), whose steps
    are scaled by the loss: with the UD set it is 0.2 points more accurate on UD English ParTUT
    (5-fold cross-validation on train). Standard input is not looked at (read once)."""
    import os

    if task == "pos" and train_path is not None and os.path.isfile(train_path) \
            and is_conllu_file(train_path):
        return "kbest-pa"
    return "perceptron"


@dataclass
class Corpus:
    """Sentences read from a file, with the word/POS/label columns pulled out."""

    sentences: list[Sentence]
    words: list[str]
    pos: list[str] | None
    labels: list[str] | None
    offsets: np.ndarray
    n_columns: int
    columns: Columns

    def subset(self, idx: list[int]) -> "Corpus":
        """The sentences at ``idx`` (in that order), as a corpus."""
        sentences = [self.sentences[i] for i in idx]
        words, pos, labels, offsets = columns_from(sentences, self.columns)
        return Corpus(sentences, words, pos, labels, offsets, self.n_columns, self.columns)

    def label_sentences(self) -> list[list[str]]:
        assert self.labels is not None
        o = self.offsets
        return [self.labels[o[i]:o[i + 1]] for i in range(len(o) - 1)]

    def column_values(self, attrs: list[str], path: str) -> dict[str, list[str | None]]:
        return column_values(self.sentences, self.columns, attrs, path)


def column_values(sentences: list[Sentence], columns: Columns, attrs: list[str],
                  path: str) -> dict[str, list[str | None]]:
    """The values of the named-column attributes feature templates read; a column the input
    lacks is a UserError naming the file."""
    out = {}
    for a in attrs:
        v = columns.values(sentences, a)
        if v is None:
            have = ", ".join(n for n in columns.names if n != "-") or columns.to_spec(len(sentences[0].rows[0]))
            raise UserError(f"a feature template reads the column {a.partition('.')[0]!r}, which "
                            f"this input does not have (its columns: {have})",
                            display_name(path), sentences[0].first_line)
        out[a] = v
    return out


def columns_from(sentences: list[Sentence], columns: Columns) -> tuple[list[str], list[str] | None,
                                                                       list[str | None] | None, np.ndarray]:
    rows = [r for s in sentences for r in s.rows]
    words = [r[columns.word] for r in rows]
    pos = [r[columns.pos] for r in rows] if columns.pos is not None else None
    labels = columns.labels_of(rows) if columns.label is not None else None
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sentences], out=offsets[1:])
    return words, pos, labels, offsets


def read_labelled(path: str, columns_spec: str | None, digest=None, task: str | None = None,
                  label_column: str | None = None) -> Corpus:
    """Read a labelled file whole (training or development data): CoNLL columns or CoNLL-U
    (labels from ``label_column``, UPOS for pos by default); with ``task`` chunk or ner, every
    label must be a phrase tag (O, B-/I-/E-/S-/L-/U-TYPE: IOB1, IOB2, IOBES or BILOU)."""

    return corpus_from_sentences(list(read_sequence(path, digest=digest)), columns_spec, path, task,
                                 label_column)


def corpus_from_sentences(sentences: list[Sentence], columns_spec: str | None, path: str,
                          task: str | None = None, label_column: str | None = None) -> Corpus:
    """A labelled corpus from sentences in memory (``path`` names them in messages); the
    checks of :func:`read_labelled`."""

    n = len(sentences[0].rows[0])
    if sentences[0].lines is not None:
        if columns_spec:
            raise UserError("--columns is for CoNLL column files; CoNLL-U columns have fixed names "
                            "(use --label-column to say where the labels are)", display_name(path))
        columns = conllu_columns(task or "pos", label_column, path)
    else:
        columns = Columns.parse(columns_spec) if columns_spec else Columns.default(n, labelled=True)
        if label_column is not None:
            raise UserError("--label-column is for CoNLL-U input; in a column file the label is the "
                            "last column or the one --columns calls 'label'", display_name(path))
    if columns.label is None:
        raise UserError("training data needs a label column (the last one, or name it with --columns)",
                        display_name(path))
    if columns.max_index() >= n:
        raise UserError(f"--columns names {columns.max_index() + 1} columns but the file has {n}",
                        display_name(path), sentences[0].first_line)
    words, pos, labels, offsets = columns_from(sentences, columns)
    check_label_column(sentences, columns, labels, offsets, path)
    if task in ("chunk", "ner"):
        for s, a in zip(sentences, offsets):
            check_labels(task, labels[a:a + len(s)], path, s.first_line, None)
    return Corpus(sentences, words, pos, labels, offsets, n, columns)


def check_label_column(sentences: list[Sentence], columns: Columns, labels: list[str | None],
                       offsets: np.ndarray, path: str) -> None:
    """Every token needs a label: a keyed label (misc.NER) missing on a word, or a label
    column that is '_' throughout (nothing to learn), is a UserError at its line."""
    name = columns.names[columns.label] if columns.names else "label"
    where = f"{name}.{columns.label_key}" if columns.label_key else name
    if columns.conllu and name == "feats" and columns.label_key:
        # a word without the feature (no Number= on a verb) has the none label '_', which tagging
        # writes back as the key left out
        labels[:] = ["_" if lab is None else lab for lab in labels]
    for s, a in zip(sentences, offsets):
        for k in range(len(s)):
            if labels[a + k] is None:
                raise UserError(f"word {k + 1} has no {columns.label_key}= in its {name} column: every "
                                f"word needs a label", display_name(path), s.line_of(k))
    if labels and all(lab == "_" for lab in labels):
        raise UserError(f"the label column ({where}) is '_' throughout: there is nothing to learn "
                        f"(name another with --label-column)", display_name(path), sentences[0].first_line)


class SequenceTagger:
    """A trained tagger: feature space, labels, averaged weights and its config."""

    def __init__(self, config: TaggerConfig, features: FeatureSpace, labels: list[str],
                 weights: Weights, columns: Columns, n_columns: int, info: dict | None = None):
        self.config = config
        self.features = features
        self.labels = labels
        self.label_index = {l: i for i, l in enumerate(labels)}
        self.weights = weights
        self.columns = columns
        self.n_columns = n_columns
        self.info = info or {}
        self.default_templates: str | None = None  # set by training when the default set was chosen

    def __getstate__(self) -> dict:
        # the fast path's arrays and lock (structkit.sequence.fastpath) are rebuilt where needed
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_fast_")}

    # ---- decoding ---------------------------------------------------------------------
    def predict_ids(self, enc: Encoded, weights: Weights | None = None,
                    depth: int | None = None) -> np.ndarray:
        """Label ids for an encoded corpus: Viterbi, or lookahead search to the model's depth
        (or ``depth``)."""

        if (weights is None and self.config.spec.decoder == "viterbi" and enc.n_tokens <= SMALL_TOKENS
                and not numba_loaded()):
            # a few sentences: numpy, not numba's import (0.4 s), and the same labels
            return viterbi_numpy(enc, self.weights)
        if weights is None and self.config.spec.decoder == "viterbi":
            # the model's own weights: only their non-zero rows (a third of a chunker's W)

            p = prepared(self, True, False)
            out = np.zeros(enc.n_tokens, dtype=np.int32)
            decode_rows(enc.indptr, p.fid_map[enc.indices], enc.offsets, p.W, p.T, out)
            return out
        return decode(self.config.spec.decoder, enc, weights or self.weights, self.config, depth)

    def predict_margins(self, enc: Encoded, ids: np.ndarray, depth: int | None = None) -> np.ndarray:
        """Per token, the margin of its label ``ids[t]``. Viterbi models: the best sequence's
        score with that label at t minus the best with another label there (max-marginals).
        History-based models: the decision margin, with ``ids`` as the labels already decided:
        the score the search gives that label at t's decision (with its best continuation to
        the model's depth, or ``depth``) minus the best of another label's."""

        decoder = self.config.spec.decoder
        if decoder != "viterbi":
            V, _ = history_values(decoder, enc, self.weights, self.config, ids, depth)
            return margins_from_values(V, ids)[0]

        out = np.zeros(enc.n_tokens)
        margins_corpus(enc.indptr, enc.indices, enc.offsets, self.weights.W, self.weights.T,
                       np.ascontiguousarray(ids, dtype=np.int32), out)
        return out

    def check_depth(self, depth: int, where: str | None = None) -> None:
        """The rule for searching to another depth at tagging time: a non-negative integer, and
        only for a history-based model (UserError naming ``where`` otherwise)."""
        registry.PARAMS["depth"].check(depth)
        registry.check_brute(self.config.search, depth, len(self.labels), where)
        if not self.config.history_based:
            takers = " or ".join(s.name for s in registry.specs(self.config.task) if s.decoder == "lookahead")
            raise UserError(f"--depth applies to history-based models (trained with --algo {takers}); "
                            f"this one decodes with {self.config.spec.decoder}", where)

    def encode(self, words: list[str], pos: list[str] | None, offsets: np.ndarray,
               extra: dict[str, list[str | None]] | None = None) -> Encoded:
        indptr, indices = self.features.transform(words, pos, offsets, extra)
        return Encoded(indptr, indices, offsets, None)

    def text_columns(self, first: Sentence, path: str) -> Columns:
        """The layout of words-only input: rows of one word, or CoNLL-U from the tokenizer
        (FORM, and MISC's SpaceAfter=No, the only columns raw text fills)."""
        if first.lines is None:
            return Columns(0, None, None, ("word",))

        lacking = [a for a in self.features.column_attrs if a not in ("misc.SpaceAfter", "form")]
        if lacking:
            raise UserError(f"this model's templates read the column {lacking[0].partition('.')[0]!r}, "
                            "which raw text does not give; tag a CoNLL-U file that has it",
                            display_name(path))
        return Columns(1, None, None, NAMES, conllu=True)

    def output_column(self) -> tuple[int, str | None]:
        """Where a prediction goes in CoNLL-U output: the column (and MISC/FEATS key) the model
        learnt from; for a model trained on column files, XPOS for pos (Penn-style tags) and
        MISC Chunk= or NER= for chunk and ner."""

        if self.columns.conllu:
            return self.columns.label, self.columns.label_key
        if self.config.task == "pos":
            return NAMES.index("xpos"), None
        return NAMES.index("misc"), {"chunk": "Chunk", "ner": "NER"}[self.config.task]

    def input_columns(self, n_columns: int, override: str | None,
                      conllu: bool = False) -> tuple[Columns, bool]:
        """The column layout of an input file, and whether it carries gold labels. CoNLL-U
        input to a model trained on columns reads FORM as the word and XPOS as the POS."""
        if conllu:
            if override:
                raise ValueError("--columns is for CoNLL column files; CoNLL-U columns have fixed names")
            if self.columns.conllu:
                return self.columns, True
            return Columns(1, NAMES.index("xpos"), None, NAMES, conllu=True), False
        if self.columns.conllu:
            if n_columns == 1 and not override:
                return Columns(0, None, None, ("word",)), False
            raise ValueError("this model was trained on CoNLL-U: tag CoNLL-U files, one word per "
                             "line, or raw text (--text)")
        if override:
            c = Columns.parse(override)
            return c, c.label is not None
        if n_columns == self.n_columns:
            return self.columns, True
        if n_columns == self.n_columns - 1 and self.columns.label is not None:
            shift = lambda i: None if i is None else (i - 1 if i > self.columns.label else i)  # noqa: E731
            names = tuple(n for i, n in enumerate(self.columns.names) if i != self.columns.label)
            return Columns(shift(self.columns.word), shift(self.columns.pos), None, names), False
        raise ValueError(
            f"expected {self.n_columns} columns ({self.columns.to_spec(self.n_columns)}, as in "
            f"training) or {self.n_columns - 1} (without the label), found {n_columns}; "
            "use --columns to name them")

    def tag_batches(self, sentences: Iterable[Sentence], path: str, columns_spec: str | None = None,
                    text: bool = False, batch: int = 4096, depth: int | None = None,
                    margins: bool = False) -> Iterator[tuple[list[Sentence], list[list[str]]]]:
        """Tag sentences in batches (streamed); yields (sentences, predicted label lists), and
        with ``margins`` a third item: each token's margin (``predict_margins``)."""
        columns: Columns | None = None
        buf: list[Sentence] = []
        tokens = 0   # in buf: a batch is at most ``batch`` sentences or BATCH_TOKENS tokens

        def flush():
            rows_cols = Columns(columns.word, columns.pos, None, columns.names, conllu=columns.conllu)
            words, pos, _, offsets = columns_from(buf, rows_cols)
            if self.features.uses_pos and pos is None:
                raise UserError("this model's features need a POS column and the input has none"
                                + (" (--text input is words only)" if text else ""),
                                display_name(path))
            extra = column_values(buf, columns, self.features.column_attrs, path)
            return self.label_words(words, pos, offsets, extra, path, text, depth, margins)

        for s in sentences:
            if columns is None and text:
                columns = self.text_columns(s, path)
            if columns is None:
                try:
                    columns, _ = self.input_columns(len(s.rows[0]), columns_spec, s.lines is not None)
                except ValueError as e:
                    raise UserError(str(e), display_name(path), s.first_line) from None
                if columns.max_index() >= len(s.rows[0]):
                    raise UserError(f"--columns names {columns.max_index() + 1} columns but the "
                                    f"input has {len(s.rows[0])}", display_name(path), s.first_line)
            buf.append(s)
            tokens += len(s.rows)
            if len(buf) >= batch or tokens >= BATCH_TOKENS:
                yield (buf, *flush()) if margins else (buf, flush())
                buf = []
                tokens = 0
        if buf:
            yield (buf, *flush()) if margins else (buf, flush())

    def label_words(self, words: list[str], pos: list[str] | None, offsets: np.ndarray, extra, path: str,
                    text: bool, depth: int | None, margins: bool):
        """The label lists of a batch's sentences (words, POS and named-column values flat,
        sentences ``offsets``); with ``margins`` also each token's margin lists."""
        enc = self.encode(words, pos, offsets, extra)
        ids = self.predict_ids(enc, depth=depth)
        lab = np.array(self.labels, dtype=object)[ids]
        n = len(offsets) - 1
        labels = [list(lab[offsets[i]:offsets[i + 1]]) for i in range(n)]
        if not margins:
            return labels
        m = self.predict_margins(enc, ids, depth)
        return labels, [m[offsets[i]:offsets[i + 1]].tolist() for i in range(n)]

    def tag_conll_bytes(self, data: bytes, path: str, first_line: int = 1,
                        columns_spec: str | None = None, depth: int | None = None,
                        n_columns: int | None = None) -> bytes:
        """Tag a block of complete sentences of a CoNLL column file (UTF-8 bytes; ``first_line``
        is the line number of its first line in the file ``path``, for messages; ``n_columns``
        the column count of the file's first row, which every row must have) and return the
        bytes ``structkit chunk/tag/ner`` write for them: each row, a space (a tab if a column
        holds whitespace), the predicted label; a blank line after each sentence. Errors are
        the reader's UserErrors, naming ``path`` and the line. A block without sentences gives
        b"" (the "empty file" error if it starts the file, ``first_line`` 1).

        Thread-safe; the work runs in numba kernels that release the GIL
        (``structkit.sequence.fastpath``), with the reader and ``tag_batches`` as the fallback for
        what they do not handle (CoNLL-U, templates reading named columns, lookahead search is
        decoded by its own kernels)."""

        return tag_block(self, data, path, first_line, columns_spec, depth, n_columns)[0]

    # ---- storage ----------------------------------------------------------------------
    def save(self, path: str) -> None:
        fh, arrays = self.features.to_arrays()
        W = self.weights.W
        rows, cols = np.nonzero(W)
        arrays.update({
            "W_rows": rows.astype(np.int32), "W_cols": cols.astype(np.int32),
            "W_vals": W[rows, cols], "T": self.weights.T, "T2": self.weights.T2, "H": self.weights.H,
        })
        arrays.update(pack_strings("labels", self.labels))
        header = {
            "task": self.config.task, "kind": "sequence",
            "config": selection.header_config(asdict(self.config)), "features": fh, "n_features": int(W.shape[0]),
            "columns": self.columns.header(self.n_columns),
            "info": self.info,
        }
        save_model(path, header, arrays)

    @classmethod
    def load(cls, path: str, command: str | None = None, tasks: tuple[str, ...] = TASKS) -> "SequenceTagger":
        header, arrays = load_model(path, tasks, command, limits=_tagger_limits)
        if header.get("kind") == "lattice":   # a large label set (structkit.sequence.lattice)
            return LatticeTagger.from_file(header, arrays, path)
        try:
            config = TaggerConfig(**header["config"])
            # every field against the parameter table train uses: a known algo, ranges
            config.validate()
            features = FeatureSpace.from_arrays(header["features"], arrays)
            labels = unpack_strings("labels", arrays)
            L = len(labels)
            nf = header["n_features"]
            if type(nf) is not int or nf != features.n_features:
                raise ValueError("feature count mismatch")
            rows, cols, vals = arrays["W_rows"], arrays["W_cols"], arrays["W_vals"]
            if not (len(rows) == len(cols) == len(vals)) or rows.dtype.kind not in "iu" \
                    or cols.dtype.kind not in "iu" or (len(rows) and (
                        rows.min() < 0 or rows.max() >= nf or cols.min() < 0 or cols.max() >= L)):
                raise ValueError("weight indices out of range")
            W = np.zeros((nf, L))
            W[rows, cols] = vals
            T = np.asarray(arrays["T"], dtype=np.float64)
            T2 = np.asarray(arrays["T2"], dtype=np.float64)
            H = np.asarray(arrays["H"], dtype=np.float64) if "H" in arrays else np.zeros((0, 1, 1))
            if T.shape != (L + 1, L + 1) or T2.ndim != 3 or H.ndim != 3:
                raise ValueError("transition shapes")
            if config.spec.decoder == "greedy-history" and H.shape != (config.order, L + 1, L):
                raise ValueError("history weight shapes")
            registry.check_brute(config.search, config.depth, L)
            if not all(np.isfinite(a).all() for a in (W, T, T2, H)):
                raise ValueError("weights that are not finite (NaN or infinity)")
            columns, n_cols = Columns.from_header(header["columns"])
            return cls(config, features, labels, Weights(W, T, T2, H), columns, n_cols,
                       header.get("info", {}))
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise UserError(f"damaged model file: {e}", path) from None
        except UserError as e:  # e.g. a template string in the header that does not parse
            raise UserError(f"damaged model file: {e.message}", path) from None


class LatticeTagger(Lattice, SequenceTagger):
    """A tagger whose label set was too large for dense weights: hashed weights over candidate
    lattices (``structkit.sequence.lattice``), the dense tagger's front-end methods."""

    config_type = TaggerConfig


def _tagger_limits(header: dict, shapes: dict) -> None:
    """Bounds on a tagger's arrays from its header, checked before they are read: weights
    ``n_features x labels``, transitions ``(labels + 1)^2`` (x the label order)."""

    if header.get("kind") == "lattice":
        return lattice_limits(header, shapes)
    nf = header.get("n_features")
    L = packed_size("labels", shapes)
    if type(nf) is not int or not 0 <= nf < 1 << 31 or L is None or not 1 <= L <= 1 << 16:
        raise ValueError("feature or label count out of range")
    cells = nf * L
    if cells * 8 > 1 << 34:
        raise ValueError(f"{nf} features x {L} labels is too large")
    features = header.get("features")
    vectors = vector_bounds(features) if isinstance(features, dict) else {}
    for name, (dtype, shape) in shapes.items():
        n = math.prod(shape)
        bound = (cells if name.startswith("W_") else
                 (L + 1) ** 3 * 16 if name in ("T", "T2", "H") else vectors.get(name))
        if bound is not None and n > bound:
            raise ValueError(f"array {name} of {n} elements for {nf} features x {L} labels")


def score_labels(task: str, gold: list[list[str]], pred: list[list[str]],
                 scheme: str = "iob2") -> dict:
    """accuracy for pos; conlleval precision/recall/F1 (and accuracy) for chunk and ner, with
    phrases read in ``scheme`` (IOBES and BILOU by the same phrase rules)."""

    if task == "pos":
        return {"accuracy": token_accuracy(gold, pred)["accuracy"]}
    counter = make_counter(scheme)
    for i, (g, p) in enumerate(zip(gold, pred)):
        counter.add_sentence(g, p)
    s = counter.score()
    return {"accuracy": s.accuracy, "precision": s.precision, "recall": s.recall, "f1": s.f1}


def main_score(task: str) -> str:
    return "accuracy" if task == "pos" else "f1"


def train_tagger(config: TaggerConfig, train_path: str, dev_path: str | None = None,
                 on_epoch: Callable[[int, dict], None] | None = None, *,
                 mapper: Callable | None = None) -> SequenceTagger:
    """Read, featurise, train for ``config.epochs`` epochs; report each epoch to ``on_epoch``.
    ``mapper``: how the shards of ``config.jobs`` > 1 run (see :func:`train_tagger_on`)."""
    import time

    config.validate()
    selection.check_with_dev(config, dev_path)
    t0 = time.perf_counter()
    digest = hashlib.sha256()
    corpus = read_labelled(train_path, config.columns, digest, config.task, config.label_column)

    def read_dev() -> Corpus:
        dev = read_labelled(dev_path, config.columns, task=config.task, label_column=config.label_column)
        if dev.columns.conllu != corpus.columns.conllu:
            raise UserError("development data is " + ("CoNLL-U" if dev.columns.conllu else "CoNLL columns")
                            + ", training data " + ("CoNLL-U" if corpus.columns.conllu else "CoNLL columns"),
                            display_name(dev_path))
        if dev.n_columns != corpus.n_columns:
            raise UserError(f"development data has {dev.n_columns} columns, training data "
                            f"{corpus.n_columns}", display_name(dev_path))
        return dev

    return train_tagger_on(config, corpus, read_dev if dev_path is not None else None, on_epoch,
                           display_name(train_path), digest.hexdigest(), t0, mapper=mapper)


def train_tagger_on(config: TaggerConfig, corpus: Corpus,
                    dev: Corpus | Callable[[], Corpus] | None = None,
                    on_epoch: Callable[[int, dict], None] | None = None,
                    train_name: str | None = None, train_sha256: str | None = None,
                    t0: float | None = None, *, mapper: Callable | None = None,
                    clusters: WordClusters | None = None) -> SequenceTagger:
    """Featurise and train on an in-memory corpus (``config`` validated); ``dev`` may be a
    function that reads it, called once the training data is featurised; with
    ``config.dev_split`` it is held out of ``corpus`` instead. With dev data the best dev
    epoch's averaged weights are kept (``structkit.learn.selection``). With ``config.jobs``
    N > 1 the learner is trained by iterative parameter mixing over N shards
    (``structkit.sequence.learn.ipm``), the shards run by ``mapper`` (``Executor.map`` semantics;
    default: N threads); with N = 1 serially, and ``mapper`` is not used. With
    ``config.vectors`` the templates get the ``vectors`` set (``vc1-4``: the words' clusters of
    pretrained vectors), unless they name a vc attribute themselves; ``clusters``: that table
    when already made (the refit reuses it)."""
    import time

    if t0 is None:
        t0 = time.perf_counter()
    selection.check_with_dev(config, dev)
    full = corpus   # with --dev-split, every round(1/F)-th sentence held out, before featurising
    corpus, dev = hold_out(config, corpus, dev, len(corpus.sentences), corpus.subset)
    chosen = None
    if config.templates is None:
        config.templates = chosen = config.default_templates(corpus.columns)
    clusters = clusters_of_config(config, clusters)
    features = FeatureSpace(with_vectors(config.templates, clusters), clusters)
    extra = corpus.column_values(features.column_attrs, train_name or "<training data>")
    indptr, indices = features.fit_transform(corpus.words, corpus.pos, corpus.offsets, config.cutoff,
                                             extra, corpus.labels)
    labels = sorted(set(corpus.labels))
    scheme = label_scheme(config.task, corpus, train_name, config.scheme)
    index = {l: i for i, l in enumerate(labels)}
    y = np.fromiter((index[l] for l in corpus.labels), dtype=np.int32, count=len(corpus.labels))
    train = Encoded(indptr, indices, corpus.offsets, y)
    tagger = SequenceTagger(config, features, labels, Weights.zeros(0, len(labels)),
                            corpus.columns, corpus.n_columns)
    dev_enc = None
    if dev is not None:
        if callable(dev):
            dev = dev()
        dev_enc = tagger.encode(dev.words, dev.pos, dev.offsets,
                                dev.column_values(features.column_attrs, "<development data>"))
        dev_gold = dev.label_sentences()
    featurise_s = time.perf_counter() - t0
    spec = config.spec
    if dense_bytes(features.n_features, len(labels)) > weight_budget():
        # thousands of labels (lemmas): hashed weights over each word's candidates, or the one-line error
        if clusters is not None:
            raise UserError(f"--vectors is not read by the tagger of {len(labels)} labels (a hashed "
                            "candidate lattice); the lemmatizer with vectors is --task morph",
                            train_name)

        return train_lattice(LatticeTagger, config, corpus, dev, full, on_epoch, train_name, train_sha256, t0,
                             dense_bytes(features.n_features, len(labels)) / (1 << 20), weight_budget(),
                             main_score(config.task), lambda gold, pred: score_labels(config.task, gold, pred))
    learner = spec.build(config, features.n_features, len(labels))
    rng = np.random.default_rng(config.seed)
    mixing = None
    if (config.jobs or 1) > 1:
        mixing = ParameterMixing(learner, train, config.jobs, config.seed, mapper)
    n_calls = spec.epoch_calls(config)

    def score_dev(averaged) -> dict:
        ids = tagger.predict_ids(dev_enc, averaged)
        o = dev.offsets
        pred = [[labels[i] for i in ids[o[k]:o[k + 1]]] for k in range(len(o) - 1)]
        return score_labels(config.task, dev_gold, pred, scheme or "iob2")

    def step(epoch: int) -> dict:   # serially, or the shards of parameter mixing
        return learner.epoch(train, rng) if mixing is None else mixing.epoch(epoch)

    selector = selection.Selector(main_score(config.task), config.patience, selection.copy_weights)
    run = run_epochs(n_calls, step, (mixing or learner).averaged, selector,
                     score_dev if dev_enc is not None else None, on_epoch)
    if wants_refit(config, run.selector):   # all the training sentences, the chosen epochs
        def again(cfg: TaggerConfig, told) -> SequenceTagger:
            return train_tagger_on(cfg, full, None, told, train_name, train_sha256, mapper=mapper,
                                   clusters=clusters)

        tagger = refit(config, run.selector, n_calls, again, on_epoch, len(dev.offsets) - 1, t0)
        tagger.default_templates = chosen
        return tagger
    tagger.weights = run.weights
    tagger.info = {"train_file": train_name, "train_sha256": train_sha256,
                   "train_sentences": corpus.offsets.size - 1, "train_tokens": int(corpus.offsets[-1]),
                   "n_features": features.n_features, "featurise_seconds": round(featurise_s, 3),
                   "train_seconds": round(time.perf_counter() - t0, 3)}
    if clusters is not None:   # the card's vectors line: the file, its sha256, the levels
        tagger.info["vectors"] = clusters.header()
    if scheme is not None:
        tagger.info["scheme"] = scheme
        tagger.info["scheme_detected"] = config.scheme is None
    # the default set, adapted to the columns: the train summary says which (not in the header,
    # which already names the set in its config: a model is what it was before)
    tagger.default_templates = chosen
    if run.info():
        tagger.info |= run.info() | {"dev_sentences": len(dev.offsets) - 1}
    return tagger


WEIGHT_BUDGET = 1 << 30     # bytes the dense weight tables may take in training (STRUCTKIT_WEIGHT_BUDGET)
WEIGHT_COPIES = 4           # the weights, the averaging sums, the averaged and the kept dev-best copies


def with_vectors(templates: str | list[str], clusters: WordClusters | None) -> str | list[str]:
    """The templates a tagger trains with: ``templates``, and with word clusters of pretrained
    vectors the ``vectors`` set after them, unless they read a vc attribute already."""
    if clusters is None:
        return templates
    if any(a in VECTOR_ATTRS for t in resolve_templates(templates) for a, _ in t.atoms):
        return templates
    return ([templates] if isinstance(templates, str) else list(templates)) + ["vectors"]


def dense_bytes(n_features: int, n_labels: int) -> int:
    """What the dense ``features x labels`` tables take in training."""
    return n_features * n_labels * 8 * WEIGHT_COPIES


def weight_budget() -> int:
    return env_limit("STRUCTKIT_WEIGHT_BUDGET", WEIGHT_BUDGET)


def label_scheme(task: str, corpus: Corpus, name: str | None, given: str | None = None) -> str | None:
    """The phrase label scheme of chunk/ner training labels (None for pos): ``given`` (every
    label must use its prefixes: a UserError at the first that does not) or detected from the
    labels (a UserError when they mix IOBES and BILOU prefixes)."""

    if task not in ("chunk", "ner"):
        return None

    if given is not None:
        for s, a in zip(corpus.sentences, corpus.offsets):
            check_labels(task, corpus.labels[a:a + len(s)], name or "<training data>", s.first_line, given)
        return given

    detector = SchemeDetector()
    for sent in corpus.label_sentences():
        detector.add(sent)
    if detector.mixed():
        raise UserError("the training labels mix IOBES (S-/E-) and BILOU (U-/L-) prefixes",
                        name or "<training data>")
    return detector.scheme
