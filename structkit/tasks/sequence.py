"""Sequence labelling (pos, chunk, ner): reading, encoding, training, tagging, model files.

The adapter between strings and the array-only learners and decoders.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from structkit.errors import UserError
from structkit.features.extract import Encoded, FeatureSpace
from structkit.io.conll import Columns, Sentence, read_conll
from structkit.io.files import display_name
from structkit.learn.perceptron import AveragedPerceptron, Weights
from structkit.model import load_model, save_model
from structkit.search.lookahead import lookahead_decode
from structkit.search.viterbi import decode_corpus

TASKS = ("pos", "chunk", "ner")
KBEST_ALGOS = {"kbest-perceptron": "perceptron", "kbest-pa": "pa", "kbest-rpa": "rpa",
               "kbest-mira": "mira", "kbest-sdm": "sdm", "kbest-larank": "larank"}
OLARANK_ALGOS = ("olarank-exact", "olarank-greedy", "pa-exact", "pa-greedy", "perceptron-exact",
                 "perceptron-greedy", "larank-greedy-batch")
# token-level greedy models (structkit.learn.olarank): history weights H, greedy decoding
GREEDY_TOKEN_ALGOS = ("olarank-greedy", "pa-greedy", "perceptron-greedy", "larank-greedy-batch")
ONE_PASS_ALGOS = ("olarank-exact", "olarank-greedy", "pa-exact", "pa-greedy", "perceptron-exact",
                  "perceptron-greedy")
ALGOS = ("perceptron", "greedy", "lookahead", *KBEST_ALGOS, *OLARANK_ALGOS)
SEARCHES = ("dp", "brute")
COMMAND_OF_TASK = {"pos": "tag", "chunk": "chunk", "ner": "ner"}


@dataclass
class TaggerConfig:
    """Everything that defines a training run; stored in the model header."""

    task: str
    algo: str = "perceptron"
    epochs: int | None = None    # default 10; 1 for the one-pass online learners (OLaRank...)
    templates: str | list[str] | None = None   # a template set name or a list; default: the task's
    cutoff: int = 1
    seed: int = 0
    label_order: int = 1         # 2: label trigram features (history-based learners only)
    direction: str = "ltr"       # history-based decoding direction: ltr or rtl
    columns: str | None = None   # --columns spec, e.g. "word,pos,label"
    depth: int | None = None     # lookahead search depth (greedy: 0; lookahead: default 1)
    margin: float = 0.0          # margin C of the lookahead perceptron (Figure 3)
    search: str = "dp"           # lookahead search: dp (exact, fast) or brute (Figure 2)
    k: int = 1                   # k-best learners: how many loss-augmented best sequences
    C: float | None = None       # the C of the max-margin objective (k-best: 1; OLaRank: 0.1)
    tau: float = 1e-3            # k-best MIRA/SDM/LaRank: KKT tolerance of the SMO solver
    nr: int | None = None        # LaRank/OLaRank reprocess steps per new example (k-best: 5;
                                 # OLaRank: 5 exact, 1 greedy, the paper's Table 1)
    order: int = 1               # OLaRank greedy models: Markov order K of the label history

    @property
    def history_based(self) -> bool:
        return self.algo in ("greedy", "lookahead")

    def validate(self) -> None:
        if self.task not in TASKS:
            raise UserError(f"--task must be one of {', '.join(TASKS)} or parse, got {self.task!r}")
        if self.algo not in ALGOS:
            raise UserError(f"--algo must be one of {', '.join(ALGOS)} for task {self.task}, got {self.algo!r}")
        if self.epochs is None:
            self.epochs = (1 if self.algo in ONE_PASS_ALGOS else
                           50 if self.algo == "larank-greedy-batch" else 10)
        if self.C is None:
            self.C = 0.1 if self.algo in OLARANK_ALGOS else 1.0
        if self.nr is None:
            self.nr = 5 if self.algo in ("kbest-larank", "olarank-exact") else 1
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise UserError(f"--epochs must be a positive integer, got {self.epochs!r}")
        if not isinstance(self.cutoff, int) or self.cutoff < 1:
            raise UserError(f"--cutoff must be a positive integer, got {self.cutoff!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            # numpy's generator refuses negative seeds; say so before any data is read
            raise UserError(f"--seed must be a non-negative integer, got {self.seed!r}")
        if self.label_order not in (1, 2):
            raise UserError(f"--label-order must be 1 or 2, got {self.label_order!r}")
        if self.label_order == 2 and self.algo == "perceptron":
            raise UserError("--label-order 2 needs a history-based learner (--algo greedy or "
                            "lookahead); exact Viterbi here is first order")
        if self.algo == "greedy":
            if self.depth not in (None, 0):
                raise UserError(f"--algo greedy searches to depth 0; use --algo lookahead for "
                                f"--depth {self.depth}")
            self.depth = 0
        elif self.algo == "lookahead" and self.depth is None:
            self.depth = 1
        if self.depth is not None and (not isinstance(self.depth, int) or isinstance(self.depth, bool)
                                       or self.depth < 0):
            raise UserError(f"--depth must be a non-negative integer, got {self.depth!r}")
        if not isinstance(self.order, int) or isinstance(self.order, bool) or not 1 <= self.order <= 10:
            raise UserError(f"--order must be an integer from 1 to 10, got {self.order!r}")
        if self.order != 1 and self.algo not in GREEDY_TOKEN_ALGOS:
            raise UserError(f"--order applies to the greedy OLaRank learners "
                            f"({', '.join(GREEDY_TOKEN_ALGOS)}); --algo {self.algo} is first order")
        if self.algo in GREEDY_TOKEN_ALGOS and self.direction != "ltr":
            raise UserError(f"--algo {self.algo} tags left to right only (--direction ltr)")
        if self.algo in OLARANK_ALGOS and self.label_order != 1:
            raise UserError("--label-order is for the lookahead learners; the OLaRank greedy "
                            "learners take --order K")
        if self.algo in KBEST_ALGOS or self.algo in OLARANK_ALGOS:
            if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
                raise UserError(f"--k must be a positive integer, got {self.k!r}")
            if (isinstance(self.C, bool) or not isinstance(self.C, (int, float)) or not self.C > 0
                    or self.C == float("inf")):
                raise UserError(f"--C must be a positive number, got {self.C!r}")
            self.C = float(self.C)
            if (isinstance(self.tau, bool) or not isinstance(self.tau, (int, float))
                    or not self.tau >= 0 or self.tau == float("inf")):
                raise UserError(f"--tau must be a non-negative number, got {self.tau!r}")
            self.tau = float(self.tau)
            if not isinstance(self.nr, int) or isinstance(self.nr, bool) or self.nr < 0:
                raise UserError(f"--nr must be a non-negative integer, got {self.nr!r}")
            if self.label_order != 1 and self.algo in KBEST_ALGOS:
                raise UserError("--label-order 2 needs a history-based learner; the k-best "
                                "learners decode with first-order Viterbi")
        if not self.history_based and self.depth not in (None, 0):
            raise UserError("--depth applies to history-based learners (--algo lookahead); "
                            "exact Viterbi already searches the whole sentence")
        if (isinstance(self.margin, bool) or not isinstance(self.margin, (int, float))
                or not self.margin >= 0 or self.margin == float("inf")):
            raise UserError(f"--margin must be a non-negative number, got {self.margin!r}")
        self.margin = float(self.margin)
        if self.margin > 0 and not self.history_based:
            raise UserError("--margin applies to history-based learners (--algo greedy or lookahead)")
        if self.search not in SEARCHES:
            raise UserError(f"--search must be dp or brute, got {self.search!r}")
        if self.direction not in ("ltr", "rtl"):
            raise UserError(f"--direction must be ltr or rtl, got {self.direction!r}")
        if self.templates is None:
            self.templates = self.task


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

    def label_sentences(self) -> list[list[str]]:
        assert self.labels is not None
        o = self.offsets
        return [self.labels[o[i]:o[i + 1]] for i in range(len(o) - 1)]


def columns_from(sentences: list[Sentence], columns: Columns) -> tuple[list[str], list[str] | None,
                                                                       list[str] | None, np.ndarray]:
    rows = [r for s in sentences for r in s.rows]
    words = [r[columns.word] for r in rows]
    pos = [r[columns.pos] for r in rows] if columns.pos is not None else None
    labels = [r[columns.label] for r in rows] if columns.label is not None else None
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sentences], out=offsets[1:])
    return words, pos, labels, offsets


def read_labelled(path: str, columns_spec: str | None, digest=None, task: str | None = None) -> Corpus:
    """Read a labelled CoNLL file whole (training or development data); with ``task`` chunk
    or ner, every label must be a phrase tag (O, B-/I-/E-TYPE)."""
    sentences = list(read_conll(path, digest=digest))
    n = len(sentences[0].rows[0])
    columns = Columns.parse(columns_spec) if columns_spec else Columns.default(n, labelled=True)
    if columns.label is None:
        raise UserError("training data needs a label column (the last one, or name it with --columns)",
                        display_name(path))
    if columns.max_index() >= n:
        raise UserError(f"--columns names {columns.max_index() + 1} columns but the file has {n}",
                        display_name(path), sentences[0].first_line)
    words, pos, labels, offsets = columns_from(sentences, columns)
    if task in ("chunk", "ner"):
        from structkit.eval.files import check_labels
        for s, a in zip(sentences, offsets):
            check_labels(task, labels[a:a + len(s)], path, s.first_line)
    return Corpus(sentences, words, pos, labels, offsets, n, columns)


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

    # ---- decoding ---------------------------------------------------------------------
    def predict_ids(self, enc: Encoded, weights: Weights | None = None,
                    depth: int | None = None) -> np.ndarray:
        """Label ids for an encoded corpus: Viterbi, or lookahead search to the model's depth
        (or ``depth``)."""
        w = weights or self.weights
        out = np.zeros(enc.n_tokens, dtype=np.int32)
        c = self.config
        if c.algo in GREEDY_TOKEN_ALGOS:
            from structkit.learn.olarank import greedy_decode
            greedy_decode(enc.indptr, enc.indices, enc.offsets, w.W, w.H, out)
        elif not c.history_based:
            decode_corpus(enc.indptr, enc.indices, enc.offsets, w.W, w.T, out)
        else:
            lookahead_decode(enc.indptr, enc.indices, enc.offsets, w.W, w.T, w.T2,
                             c.label_order == 2, c.direction == "rtl",
                             c.depth if depth is None else depth, c.search == "dp", out)
        return out

    def encode(self, words: list[str], pos: list[str] | None, offsets: np.ndarray) -> Encoded:
        indptr, indices = self.features.transform(words, pos, offsets)
        return Encoded(indptr, indices, offsets, None)

    def input_columns(self, n_columns: int, override: str | None) -> tuple[Columns, bool]:
        """The column layout of an input file, and whether it carries gold labels."""
        if override:
            c = Columns.parse(override)
            return c, c.label is not None
        if n_columns == self.n_columns:
            return self.columns, True
        if n_columns == self.n_columns - 1 and self.columns.label is not None:
            shift = lambda i: None if i is None else (i - 1 if i > self.columns.label else i)  # noqa: E731
            return Columns(shift(self.columns.word), shift(self.columns.pos), None), False
        raise ValueError(
            f"expected {self.n_columns} columns ({self.columns.to_spec(self.n_columns)}, as in "
            f"training) or {self.n_columns - 1} (without the label), found {n_columns}; "
            "use --columns to name them")

    def tag_batches(self, sentences: Iterable[Sentence], path: str, columns_spec: str | None = None,
                    text: bool = False, batch: int = 4096,
                    depth: int | None = None) -> Iterator[tuple[list[Sentence], list[list[str]]]]:
        """Tag sentences in batches (streamed); yields (sentences, predicted label lists)."""
        columns: Columns | None = Columns(0, None, None) if text else None
        buf: list[Sentence] = []

        def flush():
            words, pos, _, offsets = columns_from(buf, columns)
            if self.features.uses_pos and pos is None:
                raise UserError("this model's features need a POS column and the input has none"
                                + (" (--text input is words only)" if text else ""),
                                display_name(path))
            ids = self.predict_ids(self.encode(words, pos, offsets), depth=depth)
            lab = np.array(self.labels, dtype=object)[ids]
            return [list(lab[offsets[i]:offsets[i + 1]]) for i in range(len(buf))]

        for s in sentences:
            if columns is None:
                try:
                    columns, _ = self.input_columns(len(s.rows[0]), columns_spec)
                except ValueError as e:
                    raise UserError(str(e), display_name(path), s.first_line) from None
                if columns.max_index() >= len(s.rows[0]):
                    raise UserError(f"--columns names {columns.max_index() + 1} columns but the "
                                    f"input has {len(s.rows[0])}", display_name(path), s.first_line)
            buf.append(s)
            if len(buf) >= batch:
                yield buf, flush()
                buf = []
        if buf:
            yield buf, flush()

    # ---- storage ----------------------------------------------------------------------
    def save(self, path: str) -> None:
        fh, arrays = self.features.to_arrays()
        W = self.weights.W
        rows, cols = np.nonzero(W)
        arrays.update({
            "W_rows": rows.astype(np.int32), "W_cols": cols.astype(np.int32),
            "W_vals": W[rows, cols], "T": self.weights.T, "T2": self.weights.T2, "H": self.weights.H,
            "labels": np.array(self.labels, dtype=str),
        })
        header = {
            "task": self.config.task, "kind": "sequence",
            "config": asdict(self.config), "features": fh, "n_features": int(W.shape[0]),
            "columns": {"word": self.columns.word, "pos": self.columns.pos,
                        "label": self.columns.label, "n_columns": self.n_columns},
            "info": self.info,
        }
        save_model(path, header, arrays)

    @classmethod
    def load(cls, path: str, command: str | None = None, tasks: tuple[str, ...] = TASKS) -> "SequenceTagger":
        header, arrays = load_model(path, tasks, command)
        try:
            config = TaggerConfig(**header["config"])
            features = FeatureSpace.from_arrays(header["features"], arrays)
            labels = [str(s) for s in arrays["labels"]]
            L = len(labels)
            nf = int(header["n_features"])
            if nf != features.n_features:
                raise ValueError("feature count mismatch")
            W = np.zeros((nf, L))
            W[arrays["W_rows"], arrays["W_cols"]] = arrays["W_vals"]
            T = np.asarray(arrays["T"], dtype=np.float64)
            T2 = np.asarray(arrays["T2"], dtype=np.float64)
            H = np.asarray(arrays["H"], dtype=np.float64) if "H" in arrays else np.zeros((0, 1, 1))
            if T.shape != (L + 1, L + 1) or T2.ndim != 3 or H.ndim != 3:
                raise ValueError("transition shapes")
            if config.algo in GREEDY_TOKEN_ALGOS and H.shape != (config.order, L + 1, L):
                raise ValueError("history weight shapes")
            c = header["columns"]
            columns = Columns(c["word"], c["pos"], c["label"])
            return cls(config, features, labels, Weights(W, T, T2, H), columns, int(c["n_columns"]),
                       header.get("info", {}))
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise UserError(f"damaged model file: {e}", path) from None
        except UserError as e:  # e.g. a template string in the header that does not parse
            raise UserError(f"damaged model file: {e.message}", path) from None


def score_labels(task: str, gold: list[list[str]], pred: list[list[str]]) -> dict:
    """accuracy for pos; conlleval precision/recall/F1 (and accuracy) for chunk and ner."""
    if task == "pos":
        from structkit.eval.accuracy import token_accuracy
        return {"accuracy": token_accuracy(gold, pred)["accuracy"]}
    from structkit.eval.chunks import conlleval
    s = conlleval(gold, pred)
    return {"accuracy": s.accuracy, "precision": s.precision, "recall": s.recall, "f1": s.f1}


def main_score(task: str) -> str:
    return "accuracy" if task == "pos" else "f1"


def train_tagger(config: TaggerConfig, train_path: str, dev_path: str | None = None,
                 on_epoch: Callable[[int, dict], None] | None = None) -> SequenceTagger:
    """Read, featurise, train for ``config.epochs`` epochs; report each epoch to ``on_epoch``."""
    import time

    config.validate()
    t0 = time.perf_counter()
    digest = hashlib.sha256()
    corpus = read_labelled(train_path, config.columns, digest, config.task)
    features = FeatureSpace(config.templates)
    indptr, indices = features.fit_transform(corpus.words, corpus.pos, corpus.offsets, config.cutoff)
    labels = sorted(set(corpus.labels))
    index = {l: i for i, l in enumerate(labels)}
    y = np.fromiter((index[l] for l in corpus.labels), dtype=np.int32, count=len(corpus.labels))
    train = Encoded(indptr, indices, corpus.offsets, y)
    tagger = SequenceTagger(config, features, labels, Weights.zeros(0, len(labels)),
                            corpus.columns, corpus.n_columns)
    dev = dev_enc = None
    if dev_path is not None:
        dev = read_labelled(dev_path, config.columns, task=config.task)
        if dev.n_columns != corpus.n_columns:
            raise UserError(f"development data has {dev.n_columns} columns, training data "
                            f"{corpus.n_columns}", display_name(dev_path))
        dev_enc = tagger.encode(dev.words, dev.pos, dev.offsets)
        dev_gold = dev.label_sentences()
    featurise_s = time.perf_counter() - t0
    if config.algo in OLARANK_ALGOS and config.algo != "perceptron-exact":
        from structkit.learn.olarank import OLaRankLearner
        learner = OLaRankLearner(features.n_features, len(labels), config.algo, config.C,
                                 config.nr, config.order, config.tau,
                                 max_passes=config.epochs if config.algo == "larank-greedy-batch" else 1)
    elif config.algo in KBEST_ALGOS:
        from structkit.learn.kbest import KBestLearner
        learner = KBestLearner(features.n_features, len(labels), KBEST_ALGOS[config.algo],
                               config.k, config.C, config.tau, nr=config.nr)
    else:
        learner = AveragedPerceptron(features.n_features, len(labels),
                                     "lookahead" if config.history_based else "viterbi",
                                     config.label_order == 2, config.direction == "rtl",
                                     config.depth or 0, config.margin, config.search == "dp")
    rng = np.random.default_rng(config.seed)
    # larank-greedy-batch runs its passes (at most --epochs) inside one call
    n_calls = 1 if config.algo == "larank-greedy-batch" else config.epochs
    for epoch in range(1, n_calls + 1):
        te = time.perf_counter()
        stats = learner.epoch(train, rng)
        stats["epoch"] = epoch
        stats["epoch_seconds"] = time.perf_counter() - te
        if dev_enc is not None:
            ids = tagger.predict_ids(dev_enc, learner.averaged())
            o = dev.offsets
            pred = [[labels[i] for i in ids[o[k]:o[k + 1]]] for k in range(len(o) - 1)]
            stats["dev"] = score_labels(config.task, dev_gold, pred)
        if on_epoch is not None:
            on_epoch(epoch, stats)
    tagger.weights = learner.averaged()
    tagger.info = {"train_file": display_name(train_path), "train_sha256": digest.hexdigest(),
                   "train_sentences": corpus.offsets.size - 1, "train_tokens": int(corpus.offsets[-1]),
                   "n_features": features.n_features, "featurise_seconds": round(featurise_s, 3),
                   "train_seconds": round(time.perf_counter() - t0, 3)}
    return tagger
