"""The tokenize task: training a tokenizer, sentence splitter and multiword-token splitter from
a UD treebank, and the model file that holds them.

Training reads the treebank's raw text and gold segmentation (``structkit.tokenizer.gold``),
encodes its characters with the dictionary of known tokens jackknifed over 5 folds (each
fold's features see only the other folds' words, as new text sees a dictionary that lacks some
of its words), and trains a structkit sequence learner (``perceptron`` or ``pa``) over the
labels ``N T S W`` with the one epoch loop. ``--features`` names the optional feature groups
(``structkit.tokenizer.features.GROUPS``; default ``short,url``, as dev chose them). With ``--dev`` (or ``--dev-split``) each epoch's
model tokenizes the dev file's raw text and is scored by the CoNLL 2018 words F1 (then
sentences, then tokens, on ties); the best epoch is kept. The multiword-token splitter's
learnt rules (for tokens unseen in training) are kept only where dev says they help, and so is
its left-to-right segmenter (``structkit.tokenizer.mwt.Segmenter``, learnt where at least 10
multiword token types are spelled by their words): kept only when dev scores strictly better
with it (``info["mwt_segmenter"]``); without dev it is not kept. Last, dev tries a bias on
sentence ends (``SENTENCE_BIASES``, added to the score of a sentence end wherever one is
allowed: ``structkit.tokenizer.model.favour_sentence_ends``), for treebanks whose sentence ends
the characters around them do not settle (Coptic Scriptorium, where a sentence often ends
without punctuation and its raised dots and full stops also stand inside sentences): the bias
with the best dev sentences F1 is kept if that is at least ``MIN_SENTENCE_GAIN`` points above
the F1 with none, and words and tokens F1 are not lower (``info["sentence_bias"]``); otherwise,
and without dev, the bias is 0 and the model's scores are used as they are.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from structkit.errors import UserError
from structkit.eval.tokenize import evaluate_tokenization
from structkit.io.document import new_sentence, read_conllu
from structkit.io.document import write_conllu as write_lines
from structkit.io.files import temporary_file, temporary_writes
from structkit.learn import registry, selection
from structkit.learn.loop import refit, run_epochs, train_counts, wants_refit
from structkit.model import dense_array, load_model, save_model, sparse_arrays
from structkit.text.conllu import write_conllu
from structkit.text.tokenize import iter_sentences
from structkit.tokenizer import features as F
from structkit.tokenizer.features import group_mask, group_names
from structkit.tokenizer.gold import gold_text, opens_paragraph, read_treebank
from structkit.tokenizer.model import LearntTokenizer, encode, jackknifed_tables
from structkit.tokenizer.mwt import MultiwordSplitter, train_splitter

LABELS = ("N", "T", "S", "W")
DEFAULT_BITS = 20
MAX_EPOCHS = 20
DEFAULT_FEATURES = "short,url"   # as dev chose them (results/tokenize-dev.md)
# the biases on sentence ends dev tries, and the gain in dev sentences F1 (points) one must bring
# to be kept: a smaller gain is a handful of dev sentences, as likely noise as a real difference
SENTENCE_BIASES = (-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0)
MIN_SENTENCE_GAIN = 1.0


@dataclass
class TokenizeConfig:
    task: str = "tokenize"
    algo: str = "pa"
    epochs: int | None = None
    seed: int = 0
    hash_bits: int | None = None
    C: float | None = None
    dev_split: float | None = None
    patience: int | None = None
    refit: bool = True
    # the optional feature groups (``features.GROUPS``: short, url), comma-separated, "all" or
    # "none"; a tuple of names once validated. Unset: DEFAULT_FEATURES (a model saved before they
    # existed has none)
    features: str | list[str] | tuple[str, ...] | None = None

    def validate(self) -> None:
        spec = registry.get(self.algo, "tokenize")
        self.epochs = registry.EPOCHS.check(spec.epochs if self.epochs is None else self.epochs)
        self.seed = registry.SEED.check(self.seed)
        self.hash_bits = registry.PARAMS["hash_bits"].check(DEFAULT_BITS if self.hash_bits is None
                                                            else self.hash_bits)
        if self.C is not None and not spec.takes("C"):
            raise UserError(f"--C applies to --algo pa, not {self.algo}")
        self.C = registry.PARAMS["C"].check(1.0 if self.C is None else self.C)
        self.dev_split = selection.check_dev_split(self.dev_split)
        self.patience = selection.check_patience(self.patience)
        self.refit = selection.check_refit(self.refit)

        try:
            self.features = group_names(DEFAULT_FEATURES if self.features is None else self.features)
        except ValueError as e:
            raise UserError(f"--features: {e}") from None


def raw_text(path: str) -> str:
    """The raw text of a treebank as the CoNLL 2018 evaluation reads it: each sentence's
    ``# text``, the sentences of a paragraph joined by a space, a blank line between
    paragraphs (``# newpar``/``# newdoc``)."""

    paragraphs: list[list[str]] = []
    for sent in read_conllu(path, check_text=False):
        if opens_paragraph(sent) or not paragraphs:
            paragraphs.append([])
        paragraphs[-1].append(gold_text(sent, path))
    return "\n\n".join(" ".join(p) for p in paragraphs) + "\n"


class TokenizerModel:
    """A trained tokenizer: the chain model's weights, the known-token table, the multiword
    splitter, and the header facts (``info``, ``config``)."""

    task = "tokenize"

    def __init__(self, config: TokenizeConfig, W: np.ndarray, T: np.ndarray, known: np.ndarray,
                 mwt, info: dict, sentence_bias: float = 0.0):
        self.config, self.info = config, info
        self.tokenizer = LearntTokenizer(W, T, known, config.hash_bits, mwt, group_mask(config.features),
                                         sentence_bias)
        self.labels = list(LABELS)

    def sentences(self, text: str):
        """The text's sentences (``structkit.text.base.Sentence``), as ``structkit.tokenizer`` gives."""

        return iter_sentences(text, self.tokenizer)

    def save(self, path: str) -> None:
        t = self.tokenizer
        header = {"task": "tokenize", "config": vars(self.config), "info": self.info,
                  "labels": list(LABELS), "bits": int(t.bits),
                  "mwt": t.mwt.to_json() if t.mwt is not None else None}
        if t.sentence_bias:   # written only where dev kept one: other models' files stay as they were
            header["sentence_bias"] = float(t.sentence_bias)
        save_model(path, header, {**sparse_arrays("W", t.W), "T": t.T.astype(np.float64), "known": t.known})

    @classmethod
    def load(cls, path: str, command: str | None = None) -> "TokenizerModel":
        header, arrays = load_model(path, ("tokenize",), command, limits=_limits)
        try:
            config = TokenizeConfig(**header["config"])
            mwt = MultiwordSplitter.from_json(header["mwt"]) if header.get("mwt") else None
            bias = header.get("sentence_bias", 0.0)
            if type(bias) not in (int, float) or not np.isfinite(bias):
                raise ValueError(f"sentence_bias {str(bias)[:40]!r} is not a finite number")
            T, known = arrays["T"], arrays["known"]
            # format versions 1 and 2: the table whole
            W = arrays["W"] if "W" in arrays else dense_array("W", arrays, (1 << header["bits"], len(LABELS)))

            if config.features is not None:
                config.features = group_names(config.features)
            if W.shape != (1 << config.hash_bits, len(LABELS)) or T.shape != (5, 5) or known.ndim != 1 \
                    or known.size & (known.size - 1):
                raise ValueError("array shapes do not fit the header")
            known = known.astype(np.uint64)
            used = known[known != 0]
            if 2 * used.size > known.size or np.any((used & np.uint64(1)) == 0):
                raise ValueError("the known-token table is not one training writes (over half full, or "
                                 "keys without their low bit)")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise UserError(f"damaged model file: {str(e)[:200]}", path) from None
        return cls(config, W.astype(np.float32, copy=False), T, known, mwt, header.get("info", {}), float(bias))


def _limits(header: dict, shapes: dict) -> None:
    """Bounds on a tokenizer's arrays from its header, checked before they are read."""
    bits = header.get("bits")
    if type(bits) is not int or not 16 <= bits <= 28:
        raise ValueError(f"bad hash size {bits!r}")
    n = (1 << bits) * len(LABELS)
    bounds = {"W": n, "W_index": n, "W_gaps": n, "W_vals": n, "T": (len(LABELS) + 1) ** 2, "known": 1 << 26}
    for name, (dtype, shape) in shapes.items():
        n = 1
        for d in shape:
            n *= d
        if n > bounds.get(name, 0):
            raise ValueError(f"array {name} of {n} elements does not fit the header")


def evaluate_text(tok, gold_path: str, text: str) -> dict:
    """The CoNLL 2018 scores (``structkit.eval.tokenize``) of the tokenizer ``tok`` on the raw
    ``text`` of the treebank ``gold_path``, through a temporary CoNLL-U file."""

    with temporary_writes():
        fd, tmp = temporary_file(".structkit-eval-", ".conllu")
    try:
        with temporary_writes(), os.fdopen(fd, "w", encoding="utf-8") as f:
            write_conllu(iter_sentences(text, tok), f)
        return evaluate_tokenization(gold_path, tmp)
    finally:
        os.unlink(tmp)


def _score(tok, gold_path: str, text: str) -> dict:
    """Words, sentences and tokens F1 on dev, and the key that selects epochs by them in order."""
    r = evaluate_text(tok, gold_path, text)
    return {"words": r["words"]["f1"], "sentences": r["sentences"]["f1"], "tokens": r["tokens"]["f1"],
            "select": r["words"]["f1"] + 1e-3 * r["sentences"]["f1"] + 1e-6 * r["tokens"]["f1"]}


def train_tokenizer(config: TokenizeConfig, train_path: str, dev_path: str | None = None,
                    on_epoch=None, *, segment: bool = False, sentence_bias: float = 0.0,
                    **_) -> TokenizerModel:
    """Train a tokenizer on the UD treebank ``train_path`` (see the module docstring).
    ``segment``: without dev, whether the multiword splitter keeps the segmenter it may learn
    for unseen tokens (``structkit.tokenizer.mwt.Segmenter``; a refit after ``--dev-split`` is
    told what dev chose); with dev, dev chooses. ``sentence_bias``: likewise, the bias on
    sentence ends without dev (a refit is told what dev chose)."""

    t0 = time.perf_counter()
    selection.check_with_dev(config, dev_path)
    tb = read_treebank(train_path)
    paragraphs, dev_text, dev_gold, tmp_gold, held = tb.paragraphs, None, dev_path, None, []
    if config.dev_split is not None:  # every round(1/F)-th stretch of sentences held out
        keep, held = selection.split_every(len(paragraphs), config.dev_split)
        paragraphs = [tb.paragraphs[i] for i in keep]
        dev_gold = tmp_gold = _held_out_gold([tb.paragraphs[i] for i in held])
    if dev_gold is not None:
        dev_text = raw_text(dev_gold)
    train_tokens: dict[str, int] = {}
    for p in paragraphs:
        for form in p.tokens:
            train_tokens[form] = train_tokens.get(form, 0) + 1
    known = F.known_table(sorted(train_tokens))
    feats = F.group_mask(config.features)
    data = encode(paragraphs, jackknifed_tables(paragraphs), config.hash_bits, feats)
    learner = _learner(config)
    rng = np.random.default_rng(config.seed)
    # a segmenter only where it can be kept: dev chooses, or the caller said (a refit)
    mwt = train_splitter(train_tokens, tb.mwt, segment=dev_text is not None or segment)

    def step(epoch: int) -> dict:
        st = learner.epoch(data, rng)
        # characters wrong: the perceptron's decoded errors, PA's top-sequence Hamming loss
        wrong = st.get("train_token_errors", st.get("train_top_loss"))
        return train_counts(st["train_updates"], wrong, data.n_tokens)

    def tokenizer(w, bias: float = 0.0) -> LearntTokenizer:
        return LearntTokenizer(w.W, w.T, known, config.hash_bits, mwt, feats, bias)

    def score_dev(w, bias: float = 0.0) -> dict:
        return _score(tokenizer(w, bias), dev_gold, dev_text)

    try:
        run = run_epochs(config.epochs, step, learner.averaged, selection.Selector("select", config.patience,
                                                                                  selection.copy_weights),
                         score_dev if dev_text is not None else None, on_epoch)
        w = run.weights
        info = {"train_file": os.path.basename(train_path), "train_sentences": tb.n_sentences,
                "train_tokens": tb.n_tokens, "train_words": tb.n_words, "train_chars": tb.n_chars,
                "multiword_types": len(tb.mwt)}
        if dev_text is not None and mwt is not None:  # the learnt rules only where dev says they help
            with_rules = score_dev(w)
            mwt.set_rules(False)
            without = score_dev(w)
            mwt.set_rules(with_rules["select"] > without["select"])
            info["mwt_rules"] = {"dev_words_with": with_rules["words"], "dev_words_without": without["words"],
                                 "used": mwt.use_rules}
            if mwt.has_segmenter():   # and the segmenter only where dev is strictly better with it
                info["mwt_segmenter"] = _choose_segmenter(mwt, score_dev, w,
                                                          with_rules if mwt.use_rules else without)
                info["mwt_rules"]["used"] = mwt.use_rules
        elif mwt is not None:
            mwt.keep_segmenter(segment)
        if dev_text is not None:   # the words are settled: a bias on sentence ends, if dev says
            info["sentence_bias"] = _choose_sentence_bias(score_dev, w)
            sentence_bias = info["sentence_bias"]["bias"]
    finally:
        if tmp_gold is not None:
            os.unlink(tmp_gold)
    if wants_refit(config, run.selector):   # --dev-split chose the epochs: all the sentences again
        chose = bool(mwt is not None and mwt.segmenter is not None)

        def again(cfg: TokenizeConfig, told) -> TokenizerModel:
            return train_tokenizer(cfg, train_path, None, told, segment=chose, sentence_bias=sentence_bias)

        return refit(config, run.selector, config.epochs, again, on_epoch,
                     sum(len(tb.paragraphs[i].sents) for i in held), t0)
    info |= run.info()
    info["train_seconds"] = round(time.perf_counter() - t0, 3)
    # float32, as the model file stores it: the model analyses as it will once saved and
    # loaded, and holds half the memory while a pipeline trains its other parts
    return TokenizerModel(config, w.W.astype(np.float32), w.T, known, mwt, info, sentence_bias)


def _choose_sentence_bias(score_dev, w) -> dict:
    """The bias on sentence ends dev keeps (module docstring): of ``SENTENCE_BIASES``, the one
    with the best dev sentences F1 (then words, then tokens) among those that lower neither words
    nor tokens F1, if it gains at least ``MIN_SENTENCE_GAIN`` points of sentences F1 over no
    bias; else 0 (none is tried where dev sentences F1 is within that gain of 100). What dev
    said, and the seconds it took, for the model's ``info``."""
    t0 = time.perf_counter()
    base = score_dev(w)
    if base["sentences"] > 100.0 - MIN_SENTENCE_GAIN:   # no bias could gain enough: none tried
        return {"bias": 0.0, "dev_sentences_without": base["sentences"], "used": False,
                "seconds": round(time.perf_counter() - t0, 3)}
    tried = {b: score_dev(w, b) for b in SENTENCE_BIASES}
    fair = [b for b, r in tried.items() if r["words"] >= base["words"] and r["tokens"] >= base["tokens"]]
    key = lambda b: (tried[b]["sentences"], tried[b]["words"], tried[b]["tokens"])  # noqa: E731
    best = max(fair, key=key, default=None)
    keep = best is not None and tried[best]["sentences"] >= base["sentences"] + MIN_SENTENCE_GAIN
    return {"bias": best if keep else 0.0, "dev_sentences_without": base["sentences"],
            "dev_sentences_with": {str(b): r["sentences"] for b, r in tried.items()},
            "dev_words_with": {str(b): r["words"] for b, r in tried.items()}, "used": keep,
            "seconds": round(time.perf_counter() - t0, 3)}


def _choose_segmenter(mwt: MultiwordSplitter, score_dev, w, best: dict) -> dict:
    """Keep the splitter's segmenter only if dev scores strictly better with it (with the rules
    or without, whichever is better with it; the rules on a tie) than ``best``, its score without
    it; what dev said, for the model's ``info``."""
    rules = mwt.use_rules
    with_seg = {}
    for use in (True, False):
        mwt.set_rules(use)
        mwt.set_segmenter(True)
        with_seg[use] = score_dev(w)
    pick = max((True, False), key=lambda use: with_seg[use]["select"])
    keep = with_seg[pick]["select"] > best["select"]
    mwt.set_rules(pick if keep else rules)
    mwt.keep_segmenter(keep)
    return {"dev_words_with": with_seg[pick]["words"], "dev_words_without": best["words"],
            "dev_words_with_rules": with_seg[True]["words"], "dev_words_with_no_rules": with_seg[False]["words"],
            "used": keep}


def _learner(config: TokenizeConfig):
    if config.algo == "pa":
        from structkit.sequence.learn.kbest import KBestLearner   # training only: imported then

        return KBestLearner(1 << config.hash_bits, len(LABELS), algo="pa", k=1, C=config.C)

    from structkit.sequence.learn.perceptron import AveragedPerceptron

    return AveragedPerceptron(1 << config.hash_bits, len(LABELS))


def _held_out_gold(paragraphs) -> str:
    """A temporary CoNLL-U file of the held-out sentences: text, tokens and their words."""
    with temporary_writes():
        fd, tmp = temporary_file(".structkit-held-", ".conllu")
    with temporary_writes(), os.fdopen(fd, "w", encoding="utf-8") as out:
        for p in paragraphs:
            write_lines((new_sentence(((form, words, True) for form, words in tokens),
                                      (["# newpar"] if i == 0 else []) + [f"# text = {text}"])
                         for i, (text, tokens) in enumerate(p.sents)), out)
    return tmp
