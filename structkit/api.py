"""The Python API: :class:`Tagger`, :class:`Morph`, :class:`Parser` and :class:`Reranker`.

Each wraps a task of ``structkit.tasks`` with ``fit`` / ``predict`` / ``score`` / ``save`` /
``load``, takes Python data (lists of tokens, label lists, head lists, n-best dicts) or file
paths, and raises :class:`structkit.UserError` for every mistake in its input or options.
The command line trains through the same functions, so the same data, options and seed give
the same model. Heavy modules (numpy, numba) are imported when first used.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from structkit import card as cards
from structkit.api_io import (  # re-exported: their home is api_io
    check_path,
    check_text,
    load_conll,
    load_conllx,
    tokenize,
)
from structkit.config import resolve_data_path
from structkit.errors import UserError
from structkit.eval.attachment import AttachmentCounter, scoring_tags
from structkit.eval.files import evaluate_sentences
from structkit.io.conll import Sentence
from structkit.io.conllu import checked_tree, read_conllu, read_sequence, read_trees
from structkit.io.conllx import check_tree
from structkit.io.files import display_name
from structkit.io.nbest import NbestSet, from_utterances, read_nbest
from structkit.model import model_header
from structkit.morph.evaluate import score_rows
from structkit.morph.explain import predicted_parts, score
from structkit.morph.task import MorphModel, train_morph
from structkit.options import check, kinds_of
from structkit.parse.conllio import tag_then_parse
from structkit.parse.parser import (
    DependencyParser,
    read_treebank,
    train_parser,
    train_parser_on,
)
from structkit.rerank.task import Reranker as RerankModel
from structkit.rerank.task import evaluate_nbest, train_on, train_reranker
from structkit.sequence.task import (
    SequenceTagger,
    TaggerConfig,
    corpus_from_sentences,
    default_algo,
    read_labelled,
    train_tagger,
    train_tagger_on,
)
from structkit.sequence.templates import resolve_templates
from structkit.serving import serves
from structkit.spans import bad_label
from structkit.tasks import SEQUENCE, get_task
from structkit.text.base import Sentence as TextSentence

if TYPE_CHECKING:
    from structkit.io.conll import Sentence
    from structkit.io.nbest import NbestSet
    from structkit.parse.parser import ParserConfig
    from structkit.rerank.task import RerankConfig
    from structkit.sequence.task import Corpus, TaggerConfig

__all__ = ["Morph", "Parser", "Reranker", "Tagger", "load_conll", "load_conllx"]

PathLike = str | os.PathLike
Token = str | Sequence[str] | dict
EpochCallback = Callable[[int, dict], None]


# ---- helpers -----------------------------------------------------------------------------------
def _is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def _resolve(path: PathLike, arg: str = "X", fn: str = "the file") -> str:
    return resolve_data_path(check_path(path, arg, fn), must_exist=True)


def _check_callback(on_epoch: Any) -> None:
    if on_epoch is not None and not callable(on_epoch):
        raise UserError(f"fit: on_epoch must be a function (epoch, stats), got {type(on_epoch).__name__}")


def _make_config(cls: type, what: str, options: dict, fixed: dict) -> Any:
    """A validated task config from keyword options: unknown names and bad values are
    UserErrors."""
    names = {f.name for f in dataclasses.fields(cls)} - set(fixed)
    unknown = sorted(set(options) - names)
    if unknown:
        raise UserError(f"unknown option(s) {', '.join(unknown)} for {what} "
                        f"(it takes {', '.join(sorted(names))})")

    types = {f.name: f.type for f in dataclasses.fields(cls)}
    for name, value in options.items():
        if value is not None:
            try:  # the kinds its config class declares: the message the CLI and config files give
                check(name, value, kinds=kinds_of(types[name]))
            except UserError as e:
                raise UserError(f"{what}: {e}") from None
            _check_text_items(what, name, value)
    config = cls(**fixed, **{k: v for k, v in options.items() if v is not None})
    try:
        config.validate()
    except (TypeError, ValueError) as e:
        raise UserError(f"bad option value for {what}: {e}") from None
    except UserError as e:  # the command line's words: --label-order is label_order here
        message = re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), e.message)
        raise UserError(message, e.path, e.line) from None
    return config


def _check_text_items(what: str, name: str, value: Any) -> None:
    """The strings of a list option (``templates=[...]``) are text a file can hold."""
    if isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, str):
                check_text(v, name, what)


def _check_pairs(X: Sequence, y: Sequence | None, what: str, yname: str = "y",
                 unit: str = "sentences") -> None:
    if isinstance(X, (str, bytes)) or not isinstance(X, Sequence):
        raise UserError(f"{what}: expected a file path or a list of sentences, got {type(X).__name__}")
    if y is not None:
        if isinstance(y, (str, bytes)) or not isinstance(y, Sequence):
            raise UserError(f"{what}: {yname} must be a list with one entry per sentence")
        if len(X) != len(y):
            raise UserError(f"{what}: {len(X)} {unit} but {yname} has {len(y)}")


def _token_columns(tok: Token, i: int, k: int, what: str = "X") -> list[str]:
    """The columns of one token: a word, a tuple (word, pos, ...) or a dict with word/pos."""
    if isinstance(tok, str):
        cols = [tok]
    elif isinstance(tok, dict):
        if "word" not in tok:
            raise UserError(f"sentence {i + 1}, token {k + 1}: a token dict needs a 'word' key")
        cols = [tok["word"]] + ([tok["pos"]] if tok.get("pos") is not None else [])
    elif isinstance(tok, (tuple, list)):
        cols = list(tok)
        if not cols:
            raise UserError(f"{what}: sentence {i + 1}, token {k + 1}: an empty token tuple (give "
                            "(word, pos, ...))")
    else:
        raise UserError(f"sentence {i + 1}, token {k + 1}: expected a word, a (word, pos, ...) "
                        f"tuple or a dict, got {type(tok).__name__}")
    for c in cols:
        if not isinstance(c, str) or not c.strip() or c != c.strip() or "\n" in c:
            raise UserError(f"sentence {i + 1}, token {k + 1}: every column must be a non-empty "
                            f"string without surrounding spaces, got {c!r}"[:300])
        _check_surrogates(c, f"{what}: sentence {i + 1}, token {k + 1}")
    return cols


def _check_surrogates(value: str, where: str) -> None:
    """Tokens and labels are text: a lone surrogate (no file can hold it as UTF-8; a model's
    vocabulary refuses it) is a UserError saying where."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UserError(f"{where}: holds a lone surrogate ({value[e.start]!r}), which is not "
                        "text") from None


def _plain(X: Any) -> Any:
    """``X`` with each sentence of ``structkit.tokenize`` (a ``structkit.text.Sentence``) as
    the list of its syntactic words (a multiword token's words, not its surface form), which
    the estimators read like any word list; anything else unchanged."""
    if _is_path(X) or isinstance(X, (bytes, dict)) or not isinstance(X, Sequence):
        return X

    if not any(isinstance(s, TextSentence) for s in X):
        return X
    return [[w for tok in s.tokens for w in tok.words] if isinstance(s, TextSentence) else s for s in X]


def _sentence_rows(X: Sequence, what: str) -> list[list[list[str]]]:
    """Token columns per sentence; every token of the data has the same number of columns."""
    out = []
    width = None
    for i, sent in enumerate(X):
        if isinstance(sent, str):
            raise UserError(f"{what}: sentence {i + 1} is a string; give a list of tokens "
                            "(e.g. text.split())")
        if not isinstance(sent, Sequence) or len(sent) == 0:
            raise UserError(f"{what}: sentence {i + 1} is empty or not a list of tokens")
        rows = [_token_columns(t, i, k, what) for k, t in enumerate(sent)]
        for k, r in enumerate(rows):
            if width is None:
                width = len(r)
            elif len(r) != width:
                raise UserError(f"{what}: sentence {i + 1}, token {k + 1} has {len(r)} columns "
                                f"but the first token has {width}")
        out.append(rows)
    return out


def _spans(task: str) -> bool:
    """Whether ``task``'s labels are phrases in a B-/I- scheme (checked as such)."""

    return "scheme" in get_task(task).eval_options


def _data_digest(rows: Iterable[list[str]]) -> str:
    """sha256 of the data as CoNLL lines (stored in the model header like a file's)."""
    h = hashlib.sha256()
    for r in rows:
        h.update(("\t".join(r) + "\n").encode("utf-8"))
    return h.hexdigest()


class _Estimator:
    """What the three estimators share: options, the trained model, save."""

    _what = "estimator"
    _task = ""           # the task of Parser and Reranker (a Tagger's is an argument)
    _config = ("", "")   # (module, class) of the task's config

    def __init__(self, **options: Any) -> None:
        self.history_: list[dict] = []
        self._model: Any = None
        self._options = dict(options)
        if self._task:
            self.config = self._new_config()

    def _new_config(self) -> Any:
        import importlib

        cls = getattr(importlib.import_module(self._config[0]), self._config[1])
        return _make_config(cls, self._what, self._options, {"task": self._task})

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"{self._what}({opts}){'' if self._model is None else ' [trained]'}"

    @property
    def model_(self) -> Any:
        """The trained model (a UserError before ``fit`` or ``load``): what the server runs."""
        return self._fitted()

    def _fitted(self) -> Any:
        if self._model is None:
            raise UserError(f"this {self._what} is not trained: call fit() first, or "
                            f"{self._what}.load(path)")
        return self._model

    def _recorder(self, on_epoch: EpochCallback | None) -> EpochCallback:
        self.history_ = []
        self.refit_history_ = []   # dev_split: the epochs trained again on every sentence

        def record(epoch: int, stats: dict) -> None:
            (self.refit_history_ if "refit" in stats else self.history_).append(stats)
            if on_epoch is not None:
                on_epoch(epoch, stats)
        return record

    @property
    def info(self) -> dict:
        """Training facts stored in the model (data size, features, seconds)."""
        return dict(self._fitted().info)

    @property
    def card(self) -> dict | None:
        """The model card ``save`` writes (``structkit info`` shows it): training data, options,
        dev scores, time, version; None for a model loaded from a file written before cards."""
        import copy

        self._fitted()
        return copy.deepcopy(getattr(self, "_card", None))

    def _start_fit(self, config: Any, X: Any, y: Any, dev: Any, on_epoch: EpochCallback | None,
                   train_files: Callable) -> tuple[EpochCallback, Any]:
        """The epoch recorder of a fit, and the fitted estimator when ``X`` (with no ``y``) and
        ``dev`` are files (trained as `structkit train` trains; else None: data in memory)."""
        _check_callback(on_epoch)
        record = self._recorder(on_epoch)
        if _is_path(X) and y is None and (dev is None or _is_path(dev)):
            return record, self._fit_files(train_files, config, X, dev, record)
        return record, None

    def _fit_files(self, train: Callable, config: Any, X: PathLike, dev: PathLike | None,
                   record: EpochCallback) -> Any:
        """Train from files exactly as ``structkit train`` does with the same options (the model
        card's dev scores included)."""

        self._model, self._card = cards.train(
            get_task(config.task), config, _resolve(X), None if dev is None else _resolve(dev), None,
            record, trainer=train, given={"train": str(X), "dev": None if dev is None else str(dev)})
        return self

    def _fit_memory(self, config: Any, train: Callable, name: str | None, record: EpochCallback) -> Any:
        """Train on data in memory (``train(config, None, None, on_epoch)``), with a card."""

        self._model, self._card = cards.train(get_task(config.task), config, None, None, None, record,
                                              trainer=train, given={"train": name or "<in memory>"})
        return self

    @classmethod
    def _of(cls, model: Any, path: str | None = None) -> Any:
        """An estimator around a loaded model, its options read back from the model's config
        (and its card from the file ``path``, so that ``save`` keeps it)."""

        self = cls.__new__(cls)
        card = (model_header(path) or {}).get("card") if path is not None else None
        self._card = card if isinstance(card, dict) else None
        self.history_ = []
        self._options = {k: v for k, v in dataclasses.asdict(model.config).items() if k != "task"}
        self.config = model.config
        self._model = model
        return self

    def save(self, path: PathLike) -> None:
        """Write the trained model to ``path`` (an .npz file, as ``structkit train`` writes).
        The file is written whole or not at all (a failed write leaves no partial file, and an
        existing file unchanged)."""

        model = self._fitted()
        cards.save(model, check_path(path, "path", f"{self._what}.save"), getattr(self, "_card", None))


# ---- tagging -----------------------------------------------------------------------------------
@serves(*SEQUENCE)
class Tagger(_Estimator):
    """A sequence labeller (POS tagging, chunking, NER), trained like ``structkit train``.

    ``Tagger(task="chunk", algo="perceptron", epochs=10, ...)`` takes the options of
    ``structkit train`` (see ``structkit.sequence.task.TaggerConfig``) as keywords."""

    _what = "Tagger"

    def __init__(self, task: str = "pos", **options: Any) -> None:
        if not isinstance(task, str) or task not in SEQUENCE:
            raise UserError(f"Tagger: task must be one of {', '.join(SEQUENCE)}, got {task!r}"[:200])
        super().__init__(**options)
        self.task = task
        self.config: TaggerConfig = self._new_config(task)

    def _new_config(self, task: str | None = None, train: Any = None) -> TaggerConfig:
        """The validated config; without an ``algo`` option, the task's learner for the
        training data ``train`` (a file path; kbest-pa for pos on CoNLL-U), as the command line
        chooses it."""

        task = self.task if task is None else task
        options = dict(self._options)
        if options.get("algo") is None:
            options["algo"] = default_algo(task, _resolve(train) if _is_path(train) else None)
        config = _make_config(TaggerConfig, "Tagger", options, {"task": task})
        if config.templates is not None:
            resolve_templates(config.templates)  # a bad template is an error now, not at fit()
        return config

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self._options.items())
        return f"Tagger(task={self.task!r}{opts}){'' if self._model is None else ' [trained]'}"

    @property
    def labels(self) -> list[str]:
        """The label set learnt in training (sorted)."""
        return list(self._fitted().labels)

    # -- data
    def _corpus(self, config: TaggerConfig, X: Any, y: Any, what: str) -> tuple[Corpus, str, str]:
        """(corpus, name, sha256) from a labelled file or from token lists plus label lists."""

        if _is_path(X):
            if y is not None:
                raise UserError(f"{what}: a file carries its own labels; pass y only with lists")
            path = _resolve(X)
            digest = hashlib.sha256()
            return read_labelled(path, config.columns, digest, config.task, config.label_column), \
                display_name(path), digest.hexdigest()
        if y is None:
            raise UserError(f"{what}: y (one label list per sentence) is required with lists")
        _check_pairs(X, y, what)
        if len(X) == 0:
            raise UserError(f"{what}: no sentences")

        sentences = []
        for i, (rows, labels) in enumerate(zip(_sentence_rows(X, what), y)):
            if isinstance(labels, str) or not isinstance(labels, Sequence) or len(labels) != len(rows):
                n = len(labels) if isinstance(labels, Sequence) else type(labels).__name__
                raise UserError(f"{what}: sentence {i + 1} has {len(rows)} tokens but {n} labels")
            for k, lab in enumerate(labels):
                if not isinstance(lab, str) or not lab.strip() or lab != lab.strip():
                    raise UserError(f"{what}: sentence {i + 1}, label {k + 1} must be a non-empty "
                                    f"string, got {lab!r}"[:300])
                _check_surrogates(lab, f"{what}: sentence {i + 1}, label {k + 1}")
            if _spans(config.task):
                k = bad_label(labels, None)
                if k is not None:
                    raise UserError(f"{what}: sentence {i + 1}, token {k + 1}: unknown label "
                                    f"{labels[k]!r}: {config.task} labels are O or "
                                    "B-/I-/E-/S-/L-/U-TYPE")
            sentences.append(Sentence.from_rows([r + [lab] for r, lab in zip(rows, labels)], i + 1))
        try:
            corpus = corpus_from_sentences(sentences, config.columns, what, config.task)
        except UserError as e:  # drop the line number: Python data has none
            raise UserError(e.message, what) from None
        return corpus, "<python data>", _data_digest(r for s in sentences for r in s.rows)

    def _input(self, X: Any) -> tuple[Iterable[Sentence], str, bool]:
        """(sentences, name, words-only) to tag, from a CoNLL file or token lists."""

        model = self._fitted()
        if _is_path(X):
            path = _resolve(X)
            return read_sequence(path), path, False
        X = _plain(X)
        _check_pairs(X, None, "X")
        rows = _sentence_rows(X, "X")
        sents = [Sentence.from_rows(r, i + 1) for i, r in enumerate(rows)]
        if not rows:
            return sents, "X", False
        width = len(rows[0][0])
        expected = model.n_columns - 1
        if width == expected:
            return sents, "X", False
        if width == 1:
            if model.features.uses_pos:
                raise UserError("X: this tagger's features need a POS tag per token; give tokens "
                                "as (word, pos) tuples")
            return sents, "X", True
        layout = model.columns.to_spec(model.n_columns)
        raise UserError(f"X: tokens have {width} columns but this tagger was trained on {expected} "
                        f"before the label ({layout})")

    # -- the estimator
    def fit(self, X: PathLike | Sequence[Sequence[Token]], y: Sequence[Sequence[str]] | None = None,
            *, dev: PathLike | tuple[Sequence, Sequence] | None = None,
            on_epoch: EpochCallback | None = None) -> Tagger:
        """Train on a labelled CoNLL file, or on sentences ``X`` (lists of words, of (word, pos)
        tuples or of dicts) with label lists ``y``; ``dev`` is scored after each epoch.
        ``on_epoch(epoch, stats)`` is called after each epoch; an exception it raises stops
        training and passes through unchanged, and the estimator keeps its previous model."""

        config = self._new_config(train=X if y is None else None)
        record, fitted = self._start_fit(config, X, y, dev, on_epoch, train_tagger)
        if fitted is not None:
            return fitted
        corpus, name, sha = self._corpus(config, _plain(X), y, "X")
        dev_corpus = None
        if dev is not None:
            dx, dy = (dev, None) if _is_path(dev) else self._dev_pair(dev)
            dev_corpus, dev_name, _ = self._corpus(config, _plain(dx), dy, "dev")
            if dev_corpus.n_columns != corpus.n_columns:
                raise UserError(f"development data has {dev_corpus.n_columns} columns, training "
                                f"data {corpus.n_columns}", dev_name)
        return self._fit_memory(config, lambda c, _t, _d, told: train_tagger_on(c, corpus, dev_corpus, told,
                                                                                name, sha), name, record)

    @staticmethod
    def _dev_pair(dev: Any) -> tuple[Any, Any]:
        if not (isinstance(dev, tuple) and len(dev) == 2):
            raise UserError("dev: give a file path or a pair (X, y)")
        return dev

    def predict(self, X: PathLike | Sequence[Sequence[Token]], *,
                depth: int | None = None, scores: bool = False) -> list:
        """One label list per sentence of a CoNLL file or of ``X`` (token lists, or the sentences
        of ``structkit.tokenize``: one label per syntactic word); ``depth`` overrides the
        lookahead depth of a history-based model. With ``scores=True`` one (labels, margins)
        pair per sentence: each token's margin as ``structkit tag --scores`` gives it (Viterbi
        models: max-marginals; history-based models: the decision margin)."""
        model = self._fitted()
        if depth is not None:
            model.check_depth(depth)
        sents, name, words_only = self._input(X)
        out: list = []
        for _, labels, *margins in model.tag_batches(sents, name, None, words_only, depth=depth,
                                                     margins=scores):
            if scores:
                out.extend(([str(l) for l in lab], m) for lab, m in zip(labels, margins[0]))
            else:
                out.extend([str(l) for l in lab] for lab in labels)
        return out

    def __call__(self, text: str | Sequence[str], *, tokenizer: Any = None) -> list[tuple[str, str]]:
        """Tag one sentence: a string (split on whitespace; no other tokenisation) or a list
        of tokens; returns (token, label) pairs. With ``tokenizer`` (a tokenizer model's path,
        or the model loaded: ``structkit train --task tokenize``) the string is raw text that
        it tokenises (any number of sentences, each tagged as one): the pairs of its syntactic
        words in order, a multiword token's words in place of its surface form."""
        if tokenizer is not None:
            if not isinstance(text, str):
                raise UserError(f"text must be a string with tokenizer, got {type(text).__name__}")
            sents = tokenize(text, tokenizer=tokenizer)
            words = _plain(sents)
            return [pair for ws, labels in zip(words, self.predict(sents) if sents else [])
                    for pair in zip(ws, labels)]
        if isinstance(text, str):
            _check_surrogates(text, "text")
        elif isinstance(text, (bytes, dict)) or not isinstance(text, Sequence):
            raise UserError(f"text must be a string or a list of tokens, got {type(text).__name__}")
        tokens = text.split() if isinstance(text, str) else list(text)
        if not tokens:
            return []
        words = [t if isinstance(t, str) else _token_columns(t, 0, k)[0] for k, t in enumerate(tokens)]
        return list(zip(words, self.predict([tokens])[0]))

    def score(self, X: PathLike | Sequence[Sequence[Token]],
              y: Sequence[Sequence[str]] | None = None) -> dict:
        """Tag and score against gold labels (a labelled file, or ``y``): the dict of
        ``structkit eval --json`` (accuracy; precision, recall, F1 as conlleval for chunk/ner)."""

        model = self._fitted()
        task = model.config.task
        if _is_path(X):
            if y is not None:
                raise UserError("score: a file carries its own gold labels; pass y only with lists")
            path = _resolve(X)
            sents = list(read_sequence(path))
            try:
                columns, labelled = model.input_columns(len(sents[0].rows[0]), None,
                                                        sents[0].lines is not None)
            except ValueError as e:
                raise UserError(str(e), path) from None
            if not labelled:
                raise UserError("score: the file has no gold label column", path)
            words = [[r[columns.word] for r in s.rows] for s in sents]
            gold = [columns.labels_of(s.rows) for s in sents]
            pred: list[list[str]] = []
            for _, labels in model.tag_batches(sents, path):
                pred.extend([str(l) for l in lab] for lab in labels)
        else:
            if y is None:
                raise UserError("score: y (gold label lists) is required with lists")
            X = _plain(X)
            _check_pairs(X, y, "score")
            pred = self.predict(X)
            words = [[_token_columns(t, i, k)[0] for k, t in enumerate(s)] for i, s in enumerate(X)]
            gold = [list(g) for g in y]
            for i, (g, p) in enumerate(zip(gold, pred)):
                if len(g) != len(p):
                    raise UserError(f"score: sentence {i + 1} has {len(p)} tokens but {len(g)} "
                                    "gold labels")
        if _spans(task):
            for i, g in enumerate(gold):
                k = bad_label(g, None)
                if k is not None:
                    raise UserError(f"score: sentence {i + 1}, token {k + 1}: unknown gold label "
                                    f"{g[k]!r}: {task} labels are O or B-/I-/E-/S-/L-/U-TYPE")
        result, _ = evaluate_sentences(task, zip(words, gold, pred))
        return result

    @classmethod
    def load(cls, path: PathLike) -> Tagger:
        """A tagger from a model file written by :meth:`save` or ``structkit train``."""

        path = check_path(path, "path", "Tagger.load")
        self = cls._of(SequenceTagger.load(path), path)
        model = self._model
        self.task = model.config.task
        return self


# ---- morphology --------------------------------------------------------------------------------
@serves("morph")
class Morph(_Estimator):
    """A morphological tagger and lemmatizer (UPOS, XPOS, FEATS and LEMMA of each word), trained
    like ``structkit train --task morph`` on a CoNLL-U treebank; options: epochs, seed,
    hash_bits, dev_split, patience, refit, vectors (a .vec file whose word clusters become
    features) and vectors_limit (see ``structkit.morph.task.MorphConfig``)."""

    _what, _task, _config = "Morph", "morph", ("structkit.morph.task", "MorphConfig")

    def fit(self, X: PathLike, *, dev: PathLike | None = None,
            on_epoch: EpochCallback | None = None) -> Morph:
        """Train on a CoNLL-U treebank file (its LEMMA, UPOS, XPOS and FEATS are what is learnt);
        with ``dev`` (a CoNLL-U file) the epoch with the best dev AllTags (all FEATS) + Lemmas is
        kept (UPOS, XPOS and every FEATS key, not CoNLL 2018's universal features only).
        ``on_epoch(epoch, stats)`` is called after each epoch; an exception it raises stops
        training and passes through unchanged, and the estimator keeps its previous model."""

        config = self._new_config()
        _check_callback(on_epoch)
        if not _is_path(X):
            raise UserError("Morph.fit: X must be a CoNLL-U treebank file (its LEMMA, UPOS, XPOS and FEATS "
                            f"columns are what is learnt), got {type(X).__name__}")
        if dev is not None and not _is_path(dev):
            raise UserError(f"Morph.fit: dev must be a CoNLL-U file, got {type(dev).__name__}")
        return self._fit_files(train_morph, config, X, dev, self._recorder(on_epoch))

    @staticmethod
    def _words(X: Any) -> list[list[str]]:
        """The word forms of each sentence of a CoNLL-U file or of ``X`` (token lists, their
        first column the word; or the sentences of ``structkit.tokenize``)."""
        if _is_path(X):
            return [[r[1] for r in s.rows] for s in read_conllu(_resolve(X), check_text=False)]
        X = _plain(X)
        _check_pairs(X, None, "X")
        return [[cols[0] for cols in rows] for rows in _sentence_rows(X, "X")]

    def predict(self, X: PathLike | Sequence[Sequence[Token]], *, scores: bool = False) -> list:
        """One list per sentence of a CoNLL-U file or of ``X`` (token lists, or the sentences of
        ``structkit.tokenize``) with a dict per word of the parts the model predicts (``lemma``,
        ``upos``, ``xpos``, ``feats``). With ``scores=True`` one (analyses, margins) pair per
        sentence, margins a dict per word of each part's margin, as ``structkit morph --scores``
        gives it (inf where every candidate agrees)."""

        model = self._fitted()
        words = self._words(X)
        out: list = []
        parts = predicted_parts(model)
        t = model.tables
        for k in range(0, len(words), 2000):   # bounded memory on a large file
            block = words[k:k + 2000]
            if scores:
                sc = score(model, block)
                tags, rules, enc = sc.tags, sc.rules, sc.enc
            else:
                tags, rules, enc = model.predict_ids(block)
            i = 0
            for ws in block:
                analyses, margins = [], []
                for w in ws:
                    upos, xpos, feats = t.tags[tags[i]].split("\t")
                    vals = {"lemma": t.lemma(rules[i], enc.surfaces[i]) or "_", "upos": upos, "xpos": xpos,
                            "feats": feats}
                    analyses.append({p: vals[p] for p in parts})
                    if scores:
                        margins.append({p: float(sc.margins[p][i]) for p in parts})
                    i += 1
                out.append((analyses, margins) if scores else analyses)
        return out

    def score(self, X: PathLike) -> dict:
        """Analyse a CoNLL-U treebank file and score it against its own columns: the dict of
        ``structkit eval --task morph --json`` (UPOS, XPOS, UFeats, AllTags as CoNLL 2018 defines
        it, ``alltags_full`` over all FEATS, Lemmas)."""

        if not _is_path(X):
            raise UserError(f"score: X must be a CoNLL-U treebank file, got {type(X).__name__}")
        path = _resolve(X)
        gold = [r for s in read_conllu(path, check_text=False) for r in s.rows]
        words = [[r[1] for r in s.rows] for s in read_conllu(path, check_text=False)]
        pred = []
        analyses = [a for sent in self.predict(words) for a in sent]
        for g, a in zip(gold, analyses):
            pred.append([g[0], g[1], a.get("lemma", g[2]), a.get("upos", g[3]), a.get("xpos", g[4]),
                         a.get("feats", g[5])])
        return {"task": self._task, **score_rows(gold, pred)}

    @classmethod
    def load(cls, path: PathLike) -> Morph:
        """A model from a file written by :meth:`save` or ``structkit train --task morph``."""

        return cls._of(MorphModel.load(check_path(path, "path", "Morph.load")))


# ---- parsing -----------------------------------------------------------------------------------
def _dep_sentences(X: Sequence, heads: Sequence | None, what: str) -> list[Sentence]:
    """The sentences a parser reads (``structkit.io.document.Sentence``, ten columns a word)
    from tokens (words, (word, pos) tuples or dicts) or sentences (as ``read_conllx`` gives
    them; copied, so that they are not changed) and optional head lists (1-based, 0 = root)."""

    X = _plain(X)
    _check_pairs(X, heads, what, "heads")
    out = []
    for i, sent in enumerate(X):
        if isinstance(sent, Sentence):
            s = sent.copy()
            if len(s) == 0 or any(len(r) != 10 for r in s.rows):
                raise UserError(f"{what}: sentence {i + 1} is not a sentence of words in ten CoNLL "
                                "columns (as read_conllx reads them)")
            checked_tree(s, what)   # its HEAD column: a tree, or '_' on every word
        else:
            rows = []
            for k, r in enumerate(_sentence_rows([sent], what)[0], 1):
                pos = r[1] if len(r) > 1 else "_"
                rows.append([str(k), r[0], "_", pos, pos, "_", "_", "_", "_", "_"])
            s = Sentence.from_rows(rows, i + 1)
        if heads is not None:
            h = heads[i]
            if isinstance(h, str) or not isinstance(h, Sequence) or len(h) != len(s):
                n = len(h) if isinstance(h, Sequence) else type(h).__name__
                raise UserError(f"{what}: sentence {i + 1} has {len(s)} tokens but {n} heads")
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in h):
                raise UserError(f"{what}: sentence {i + 1}: heads must be integers (1-based, 0 = root)")
            problem = check_tree(h)
            if problem is not None:
                raise UserError(f"{what}: sentence {i + 1} is not a tree: {problem}")
            s.fill_columns({6: [str(int(x)) for x in h]})
        out.append(s)
    return out


@serves("parse")
class Parser(_Estimator):
    """An arc-standard dependency parser with lookahead search, trained like ``structkit train
    --task parse``; options: algo, epochs, depth, margin, seed, hash_bits, pos, and for
    ``algo="beam"`` vectors (a .vec file whose word clusters become features) and vectors_limit
    (see ``structkit.parse.parser.ParserConfig``)."""

    _what, _task, _config = "Parser", "parse", ("structkit.parse.parser", "ParserConfig")
    config: ParserConfig

    def _treebank(self, X: Any, heads: Any, what: str) -> tuple[list[Sentence], str, str | None]:
        if _is_path(X):
            if heads is not None:
                raise UserError(f"{what}: a treebank file carries its own heads; pass heads only with lists")
            path = _resolve(X)
            digest = hashlib.sha256() if path != "-" else None
            sents = read_treebank(path, digest)
            return sents, display_name(path), digest.hexdigest() if digest else None
        if heads is None:
            raise UserError(f"{what}: heads (one list per sentence) are required with lists")
        sents = _dep_sentences(X, heads, what)
        if not sents:
            raise UserError(f"{what}: no sentences")
        rows = ([w, t, str(h)] for s in sents for w, t, h in zip(s.forms, s.xpos, s.heads))
        return sents, "<python data>", _data_digest(rows)

    def fit(self, X: PathLike | Sequence[Sequence[Token]], heads: Sequence[Sequence[int]] | None = None,
            *, dev: PathLike | tuple[Sequence, Sequence] | None = None,
            on_epoch: EpochCallback | None = None) -> Parser:
        """Train on a CoNLL-X/CoNLL-U file, or on sentences ``X`` (words, (word, pos) tuples or
        dicts, or the sentences of ``read_conllx`` or a ``Doc``) with gold ``heads`` (1-based,
        0 = root); ``dev`` is scored after each epoch;
        ``on_epoch`` as in :meth:`Tagger.fit`."""

        config = self._new_config()
        record, fitted = self._start_fit(config, X, heads, dev, on_epoch, train_parser)
        if fitted is not None:
            return fitted
        sents, name, sha = self._treebank(X, heads, "X")
        dev_sents = None
        if dev is not None:
            dx, dh = (dev, None) if _is_path(dev) else Tagger._dev_pair(dev)
            dev_sents = self._treebank(dx, dh, "dev")[0]
        return self._fit_memory(config, lambda c, _t, _d, told: train_parser_on(c, sents, dev_sents, told,
                                                                                name, sha), name, record)

    def _input(self, X: Any) -> tuple[Iterable[Sentence], str]:
        if _is_path(X):
            path = _resolve(X)
            return read_trees(path), path
        return _dep_sentences(X, None, "X"), "X"

    def predict(self, X: PathLike | Sequence[Sequence[Token]], *,
                depth: int | None = None, labels: bool = False,
                pos: Sequence[Sequence[str] | None] | None = None) -> list:
        """One head list per sentence (1-based, 0 = root) of a treebank file or of ``X`` (token
        lists, the sentences of ``structkit.tokenize``: a head per syntactic word, or those of
        ``read_conllx`` or a ``Doc``, which are not changed); with
        ``labels=True`` one (heads, DEPRELs) pair per sentence (DEPREL '_' from an unlabelled
        lookahead parser). ``depth`` overrides the lookahead depth trained with (0 to 6).
        ``pos``: POS tags a tagger predicted, one list per sentence (None keeps the sentence's),
        read as ``parse --tagger`` reads its tagger's: ``parser.predict(sents,
        pos=tagger.predict(sents))`` parses the sentences ``sents = structkit.tokenize(text,
        tokenizer=...)``."""
        model = self._fitted()
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)
                                  or not 0 <= depth <= 6):
            raise UserError(f"depth must be an integer from 0 to 6, got {depth!r}")

        sents, name = self._input(X)
        out: list[list[int]] = []
        for _, heads, rels in tag_then_parse(model, sents, name, tags=pos, depth=depth):
            if labels:
                rels = rels if rels is not None else [["_"] * len(h) for h in heads]
                out.extend(zip(heads, rels))
            else:
                out.extend(heads)
        return out

    def score(self, X: PathLike | Sequence[Sequence[Token]],
              heads: Sequence[Sequence[int]] | None = None) -> dict:
        """Parse and score against gold heads (a treebank file, or ``heads``): the dict of
        ``structkit eval --task parse --json`` (UAS and LAS under both conventions, root,
        complete match, the per-label table)."""

        model = self._fitted()
        if _is_path(X):
            if heads is not None:
                raise UserError("score: a treebank file carries its own heads; pass heads only with lists")
            path = _resolve(X)
            gold = list(read_trees(path))
            for s in gold:
                if s.heads is None:
                    raise UserError("gold file has no heads (the HEAD column is '_')", path, s.line_of(0))
            name = path
        else:
            if heads is None:
                raise UserError("score: heads (gold head lists) are required with lists")
            gold, name = _dep_sentences(X, heads, "score"), "X"
        counter = AttachmentCounter()
        for batch, pred, labels in model.parse_batches(gold, name):
            for i, (s, p) in enumerate(zip(batch, pred)):
                # an unlabelled parser predicts DEPREL '_', as its written output says
                counter.add(s.heads, p, scoring_tags(s.xpos, s.upos), upos=s.upos, gold_deprels=s.deprels,
                            pred_deprels=["_"] * len(p) if labels is None else labels[i])
        return {"task": self._task, **counter.score(full=True)}

    @classmethod
    def load(cls, path: PathLike) -> Parser:
        """A parser from a model file written by :meth:`save` or ``structkit train --task parse``."""

        path = check_path(path, "path", "Parser.load")
        return cls._of(DependencyParser.load(path), path)


# ---- reranking ---------------------------------------------------------------------------------
def _nbest_set(X: Any, y: Sequence[str] | None, window: int, what: str) -> NbestSet:
    """An NbestSet from a file, an NbestSet, or a list of utterances: dicts of the JSON-lines
    layout (hypotheses, reference, id, group) or plain lists of hypothesis strings."""

    if _is_path(X):
        if y is not None:
            raise UserError(f"{what}: references come from the file; pass y only with lists")
        return read_nbest(_resolve(X), window=window)
    if isinstance(X, NbestSet):
        if y is not None:
            raise UserError(f"{what}: pass y only with lists")
        return X
    _check_pairs(X, y, what, unit="utterances")
    if len(X) == 0:
        raise UserError(f"{what}: no utterances")
    return from_utterances(X, y, window, what)


class Reranker(_Estimator):
    """An n-best reranker (loss-sensitive or plain averaged perceptron), trained like
    ``structkit train --task rerank``; options: algo, epochs, features, lam, window,
    min_cluster, topic_levels, seed (see ``structkit.rerank.task.RerankConfig``)."""

    _what, _task, _config = "Reranker", "rerank", ("structkit.rerank.task", "RerankConfig")
    config: RerankConfig

    def fit(self, X: PathLike | Sequence[dict | Sequence[str]], y: Sequence[str] | None = None,
            *, dev: PathLike | tuple[Sequence, Sequence] | Sequence | None = None,
            on_epoch: EpochCallback | None = None) -> Reranker:
        """Train on an n-best file, or on utterances ``X`` (dicts with ``hypotheses`` and
        ``reference``, or hypothesis lists with references ``y``); with ``dev`` the epoch of
        lowest dev WER is kept; ``on_epoch`` as in :meth:`Tagger.fit`."""

        config = self._new_config()
        record, fitted = self._start_fit(config, X, y, dev, on_epoch, train_reranker)
        if fitted is not None:
            return fitted
        train = _nbest_set(X, y, config.window, "X")
        dev_set = None
        if dev is not None:
            if isinstance(dev, tuple) and len(dev) == 2:
                dev_set = _nbest_set(dev[0], dev[1], config.window, "dev")
            else:
                dev_set = _nbest_set(dev, None, config.window, "dev")
        return self._fit_memory(config, lambda c, _t, _d, told: train_on(c, train, dev_set, told), None, record)

    def predict_index(self, X: PathLike | Sequence[dict | Sequence[str]]) -> list[int]:
        """The chosen hypothesis of each utterance, as its 0-based index in the n-best list."""
        model = self._fitted()
        idx, _ = model.rerank(_nbest_set(X, None, model.config.window, "X"))
        return [int(k) for k in idx]

    def predict(self, X: PathLike | Sequence[dict | Sequence[str]]) -> list[str]:
        """The chosen hypothesis text of each utterance (``structkit rerank``'s output)."""
        model = self._fitted()
        ns = _nbest_set(X, None, model.config.window, "X")
        idx, _ = model.rerank(ns)
        return [u.hypotheses[int(k)] for u, k in zip(ns.utterances, idx)]

    def score(self, X: PathLike | Sequence[dict | Sequence[str]],
              y: Sequence[str] | None = None) -> dict:
        """Rerank and score against references: the dict of ``structkit eval --task rerank
        NBEST CHOSEN --json`` (WER of the 1-best, the chosen hypotheses and the oracle)."""

        model = self._fitted()
        ns = _nbest_set(X, y, model.config.window, "score")
        ns.require_references("score")
        idx, _ = model.rerank(ns)
        return evaluate_nbest(ns, [u.hypotheses[int(k)] for u, k in zip(ns.utterances, idx)])

    @classmethod
    def load(cls, path: PathLike) -> Reranker:
        """A reranker from a model file written by :meth:`save` or ``structkit train --task rerank``."""

        path = check_path(path, "path", "Reranker.load")
        return cls._of(RerankModel.load(path), path)
