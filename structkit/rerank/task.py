"""n-best reranking of speech recognition output: training, reranking and WER evaluation.

``train_reranker(config, train_path, dev_path)`` reads n-best lists with references, computes
the loss (word edits minus the fewest in the list), fits the feature space (score scale,
TF-IDF bins, topic hierarchy) and runs the chosen averaged perceptron. With a dev set the
averaged weights of the epoch with the lowest dev WER are kept.

Histories (for trigger features): in training, v_j is the least errorful hypothesis of
utterance j (the recogniser's earliest among ties); when reranking, the recogniser's 1-best.
Topics of test groups are assigned from the recogniser's 1-best transcripts.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from structkit.errors import UserError
from structkit.eval.significance import sign_test
from structkit.io.files import display_name
from structkit.io.nbest import DEFAULT_WINDOW, NbestSet, read_nbest
from structkit.learn import registry, selection
from structkit.learn.loop import hold_out, refit, run_epochs, train_counts, wants_refit
from structkit.model import load_model, save_model
from structkit.rerank.features import FAMILIES, FeatureSpace, parse_families
from structkit.rerank.learner import Perceptron, decode
from structkit.rerank.loss import edit_distances

__all__ = ["RerankConfig", "Reranker", "train_reranker", "train_on", "evaluate_nbest",
           "nbest_edits", "wer_report"]


@dataclass
class RerankConfig:
    task: str = "rerank"
    algo: str = "loss-perceptron"
    epochs: int = 5
    features: str | list[str] = ("ngram",)  # a tuple once validated
    lam: float = 1.0
    window: int = DEFAULT_WINDOW
    min_cluster: int = 25
    topic_levels: list[int] = (1, 2, 3)  # a tuple once validated
    seed: int = 0
    dev_split: float | None = None  # hold out every round(1/F)-th training utterance as dev data
    patience: int | None = None     # with dev data: stop after this many epochs without a lower WER
    refit: bool = True              # with dev_split: train again on every utterance for the chosen epochs

    def validate(self) -> None:
        registry.get(self.algo, "rerank")
        self.epochs = registry.EPOCHS.check(self.epochs)
        self.seed = registry.SEED.check(self.seed)  # numpy refuses negative seeds (a traceback)
        self.dev_split = selection.check_dev_split(self.dev_split)
        self.patience = selection.check_patience(self.patience)
        self.refit = selection.check_refit(self.refit)
        try:
            self.features = parse_families(self.features)
        except ValueError as e:
            raise UserError(f"--features: {e}") from None
        if isinstance(self.lam, bool) or not isinstance(self.lam, (int, float)) or not 0 <= self.lam < float("inf"):
            raise UserError(f"lambda must be >= 0, got {self.lam}")
        if not isinstance(self.window, int) or not 1 <= self.window <= 1 << 20:
            raise UserError(f"window must be a positive integer (at most {1 << 20}), got {self.window}")
        if not isinstance(self.min_cluster, int) or not 2 <= self.min_cluster <= 1 << 31:
            raise UserError(f"min_cluster must be an integer >= 2, got {self.min_cluster}")
        levels = tuple(self.topic_levels)
        if not levels or not all(isinstance(k, int) and 1 <= k <= 12 for k in levels):
            raise UserError(f"topic_levels must be integers from 1 to 12, got {list(levels)}")
        self.topic_levels = tuple(sorted(set(levels)))


# ---- loss and WER ------------------------------------------------------------------------------
def nbest_edits(ns: NbestSet) -> list[np.ndarray]:
    """Word edits of every hypothesis against its utterance's reference."""
    hyps, pair = [], []
    for i, u in enumerate(ns.utterances):
        for h in u.hypotheses:
            hyps.append(h.split())
            pair.append(i)
    flat = edit_distances(hyps, [(u.reference or "").split() for u in ns.utterances], pair)
    out, k = [], 0
    for u in ns.utterances:
        out.append(flat[k:k + len(u.hypotheses)])
        k += len(u.hypotheses)
    return out


def _train_histories(ns: NbestSet, edits: list[np.ndarray]) -> list[str]:
    return [u.hypotheses[int(np.argmin(e))] for u, e in zip(ns.utterances, edits)]


def _test_histories(ns: NbestSet) -> list[str]:
    return [u.hypotheses[0] for u in ns.utterances]


# ---- the model ---------------------------------------------------------------------------------
class Reranker:
    def __init__(self, config: RerankConfig, features: FeatureSpace, weights: np.ndarray,
                 info: dict | None = None):
        self.config = config
        self.features = features
        self.weights = weights
        self.info = info or {}

    def featurize(self, ns: NbestSet):
        if self.features.score_scale is not None and not ns.has_scores:
            raise UserError("this model uses recogniser scores, but the n-best input has none",
                            display_name(ns.path))
        topics = self.features.utterance_topics(ns, _test_histories(ns))
        return self.features.extract(ns, _test_histories(ns), topics, grow=False)

    def rerank(self, ns: NbestSet) -> tuple[np.ndarray, np.ndarray]:
        """Chosen hypothesis index (0-based) and its model score, per utterance."""
        return decode(self.featurize(ns), self.weights)

    def read(self, path: str) -> NbestSet:
        return read_nbest(path, window=self.config.window)

    def save(self, path: str) -> None:
        fh, arrays = self.features.to_arrays()
        nz = np.flatnonzero(self.weights)
        arrays.update({"w_index": nz.astype(np.int64), "w_value": self.weights[nz]})
        cfg = selection.header_config(asdict(self.config))
        cfg["features"] = list(cfg["features"])
        cfg["topic_levels"] = list(cfg["topic_levels"])
        save_model(path, {"task": "rerank", "kind": "rerank", "config": cfg, "features": fh,
                          "info": self.info}, arrays)

    @classmethod
    def load(cls, path: str, command: str | None = None) -> "Reranker":
        header, arrays = load_model(path, ("rerank",), command)
        try:
            c = dict(header["config"])
            c["features"] = tuple(c["features"])
            c["topic_levels"] = tuple(c["topic_levels"])
            config = RerankConfig(**c)
            config.validate()  # the checks train makes: a known algo, ranges
            fs = FeatureSpace.from_arrays(header["features"], arrays)
            w = np.zeros(fs.n_features)
            index, value = arrays["w_index"], arrays["w_value"]
            if len(index) != len(value) or len(index) and (
                    index.dtype.kind not in "iu" or index.min() < 0 or index.max() >= len(w)):
                raise ValueError("weight indices out of range")
            if not np.isfinite(value).all():
                raise ValueError("weights that are not finite (NaN or infinity)")
            w[index.astype(np.int64)] = value
        except (KeyError, ValueError, TypeError, IndexError, UnicodeDecodeError, AttributeError) as e:
            raise UserError(f"damaged model file: {str(e)[:200]}", path) from None
        except UserError as e:
            raise UserError(f"damaged model file: {e.message}", path) from None
        return cls(config, fs, w, header.get("info", {}))


# ---- training ----------------------------------------------------------------------------------
def train_on(config: RerankConfig, train: NbestSet, dev: NbestSet | None = None,
             on_epoch: Callable[[int, dict], None] | None = None) -> Reranker:
    """Train on in-memory n-best sets (``train`` and ``dev`` need references)."""

    t0 = time.perf_counter()
    selection.check_with_dev(config, dev)
    full = train   # with --dev-split, every round(1/F)-th utterance held out
    train, dev = hold_out(config, train, dev, len(train), train.subset)
    train.require_references("training")
    if dev is not None:
        dev.require_references("the dev set")
    edits = nbest_edits(train)
    loss = np.concatenate([e - e.min() for e in edits]).astype(np.int64)
    fs = FeatureSpace(tuple(config.features), tuple(config.topic_levels), config.min_cluster, config.seed)
    fs.fit(train)
    topics = fs.utterance_topics(train, None)
    rows = fs.extract(train, _train_histories(train, edits), topics, grow=True)
    t_feat = time.perf_counter() - t0
    model = Reranker(config, fs, np.zeros(fs.n_features))
    dev_rows = dev_edits = None
    if dev is not None:
        if fs.score_scale is not None and not dev.has_scores:
            raise UserError("the training data has recogniser scores but the dev set has none",
                            display_name(dev.path))
        dev_rows = model.featurize(dev)
        dev_edits = nbest_edits(dev)
        dev_words = sum(len(u.reference.split()) for u in dev.utterances)
    p = Perceptron(fs.n_features, config.algo, config.lam)
    rng = np.random.default_rng(config.seed)   # shuffled each epoch, as the other learners are
    n_utt = len(rows.starts) - 1

    def step(epoch: int) -> dict:
        st = p.epoch(rows, loss, rng.permutation(n_utt).astype(np.int64))
        return train_counts(st["updates"], st["mistakes"])

    def score_dev(w: np.ndarray) -> dict:
        idx, _ = decode(dev_rows, w)
        errs = sum(int(e[k]) for e, k in zip(dev_edits, idx))
        return {"wer": 100.0 * errs / max(dev_words, 1)}   # a percentage, as every score

    selector = selection.Selector("wer", config.patience, lower_is_better=True)
    run = run_epochs(config.epochs, step, p.averaged, selector, score_dev if dev_rows is not None else None,
                     on_epoch)
    if wants_refit(config, run.selector):   # every utterance, the chosen epochs
        final = refit(config, run.selector, config.epochs, lambda cfg, told: train_on(cfg, full, None, told),
                      on_epoch, len(dev), t0, dev_key="dev_utterances")
        final.info |= {"epochs": run.history, "refit_history": final.info["epochs"],
                       "train_seconds": time.perf_counter() - t0}
        return final
    model.weights = run.weights
    model.info = {
        "train_utterances": len(train), "train_hypotheses": int(rows.n_rows),
        "train_groups": len(set(train.groups)), "n_features": fs.n_features,
        "nonzero_weights": int(np.count_nonzero(model.weights)),
        "chosen_epoch": run.selector.best_epoch or config.epochs,
        "feature_seconds": t_feat, "train_seconds": time.perf_counter() - t0,
        "epochs": run.history,
    } | run.info()
    return model


def train_reranker(config: RerankConfig, train_path: str, dev_path: str | None = None,
                   on_epoch: Callable[[int, dict], None] | None = None) -> Reranker:
    config.validate()
    selection.check_with_dev(config, dev_path)
    train = read_nbest(train_path, window=config.window)
    dev = read_nbest(dev_path, window=config.window) if dev_path else None
    return train_on(config, train, dev, on_epoch)


# ---- evaluation --------------------------------------------------------------------------------
def _group_sign_test(groups: list[str], a: np.ndarray, b: np.ndarray) -> dict:
    """Sign test over groups: total word errors of system a against system b per group."""

    ga: dict[str, int] = {}
    gb: dict[str, int] = {}
    for g, x, y in zip(groups, a, b):
        ga[g] = ga.get(g, 0) + int(x)
        gb[g] = gb.get(g, 0) + int(y)
    wins_a = sum(ga[g] < gb[g] for g in ga)
    wins_b = sum(ga[g] > gb[g] for g in ga)
    return {"groups": len(ga), "wins": wins_a, "losses": wins_b, "ties": len(ga) - wins_a - wins_b,
            "p": sign_test(wins_a, wins_b)}


def evaluate_nbest(ns: NbestSet, chosen: list[str] | None = None,
                   other: list[str] | None = None) -> dict:
    """WER of the recogniser's 1-best, the oracle and (given) the chosen hypotheses, with a
    group-level sign test of chosen against 1-best (and against ``other``)."""
    ns.require_references("evaluation")
    edits = nbest_edits(ns)
    words = np.array([len(u.reference.split()) for u in ns.utterances])
    n_words = int(words.sum())

    def wer(e) -> float:   # a percentage, as every score in structkit's JSON
        return 100.0 * float(np.sum(e)) / n_words if n_words else 0.0

    first = np.array([int(e[0]) for e in edits])
    oracle = np.array([int(e.min()) for e in edits])
    res = {"utterances": len(ns), "groups": len(set(ns.groups)), "reference_words": n_words,
           "grouping": "window" if ns.windowed else "given",
           "one_best": {"errors": int(first.sum()), "wer": wer(first)},
           "oracle": {"errors": int(oracle.sum()), "wer": wer(oracle)}}
    refs = [u.reference.split() for u in ns.utterances]
    if chosen is not None:
        ce = edit_distances([c.split() for c in chosen], refs)
        res["chosen"] = {"errors": int(ce.sum()), "wer": wer(ce),
                         "sign_test_vs_one_best": _group_sign_test(ns.groups, ce, first)}
        if other is not None:
            oe = edit_distances([c.split() for c in other], refs)
            res["other"] = {"errors": int(oe.sum()), "wer": wer(oe)}
            res["chosen"]["sign_test_vs_other"] = _group_sign_test(ns.groups, ce, oe)
    return res


def wer_report(res: dict) -> str:
    lines = [f"{res['utterances']} utterances, {res['groups']} groups"
             f"{' (windows of preceding utterances)' if res['grouping'] == 'window' else ''}, "
             f"{res['reference_words']} reference words"]

    def row(name, r):
        return f"{name:<10} WER {r['wer']:6.2f}%  ({r['errors']} word errors)"
    lines.append(row("1-best", res["one_best"]))
    if "chosen" in res:
        lines.append(row("chosen", res["chosen"]))
    if "other" in res:
        lines.append(row("other", res["other"]))
    lines.append(row("oracle", res["oracle"]))
    for key, name in (("sign_test_vs_one_best", "1-best"), ("sign_test_vs_other", "other")):
        if "chosen" in res and key in res["chosen"]:
            s = res["chosen"][key]
            lines.append(f"sign test, chosen vs {name} by group: {s['wins']} better, {s['losses']} "
                         f"worse, {s['ties']} tied of {s['groups']}; two-sided p = {s['p']:.3g}")
    return "\n".join(lines)


FAMILY_NAMES = FAMILIES
