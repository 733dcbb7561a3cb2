"""Feature vectors Phi(a_i, w, h_i) of n-best hypotheses (Singh-Miller & Collins, Section 2).

Always present: the recogniser's score (relative to the best score of the list, divided by a
scale fitted on training data so that typical differences are about 1) and the recogniser's
rank (indicators ``rank=1`` .. ``rank=9``, ``rank=10+``). Families, each switchable:

* ``ngram``: counts of unigrams, bigrams and trigrams (bigrams and trigrams with sentence
  boundary markers ``<s>``/``</s>``).
* ``trigger``: unigram and bigram self-triggers, 1 when the unigram (bigram) is seen twice in
  the hypothesis, or once in it and at least once in the history h_i.
* ``backoff``: for each TF-IDF bin b (0..10), the number of unigram triggering events of words
  in bin b.
* ``topic``: for each used level of the topic hierarchy, counts of unigrams conditioned on
  the group's topic, and one of three indicators (0, 1, 2+ topic words of that topic in the
  hypothesis); every topic feature is scaled by 1 / (number of levels).

Feature names are mapped to columns of a sparse CSR matrix (one row per hypothesis); only
features seen while extracting the training data get a column.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from structkit.errors import UserError
from structkit.io.nbest import NbestSet
from structkit.rerank.topics import TfIdf, TopicModel, backoff_bins, fit_topics
from structkit.vocab import Vocab

__all__ = ["FAMILIES", "parse_families", "FeatureSpace", "Rows"]

FAMILIES = ("ngram", "trigger", "backoff", "topic")
MAX_RANK = 10


def parse_families(spec) -> tuple[str, ...]:
    """'ngram,trigger' (or a list; 'all' = every family, 'none' or '' = score and rank only)."""
    if isinstance(spec, str):
        items = [s.strip() for s in spec.split(",") if s.strip()]
    else:
        items = [str(s).strip() for s in spec]
    out: list[str] = []
    for s in items:
        if s == "all":
            out.extend(FAMILIES)
        elif s in ("none", "base"):
            continue
        elif s in FAMILIES:
            out.append(s)
        else:
            raise ValueError(f"unknown feature family {s!r} (known: {', '.join(FAMILIES)}, all, none)")
    return tuple(f for f in FAMILIES if f in out)


@dataclass
class Rows:
    """CSR feature matrix of all hypotheses; utterance i owns rows starts[i]:starts[i+1]."""
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    starts: np.ndarray
    n_features: int

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1


def group_docs(ns: NbestSet, texts: list[str]) -> tuple[list[str], list[list[str]]]:
    """Group names (first-appearance order) and each group's words from ``texts`` per utterance."""
    docs: dict[str, list[str]] = {}
    for g, t in zip(ns.groups, texts):
        docs.setdefault(g, []).extend(t.split())
    return list(docs), list(docs.values())


class FeatureSpace:
    def __init__(self, families: tuple[str, ...], topic_levels: tuple[int, ...] = (1, 2, 3),
                 min_cluster: int = 25, seed: int = 0):
        self.families = tuple(families)
        self.topic_levels = tuple(topic_levels)
        self.min_cluster = min_cluster
        self.seed = seed
        self.names = Vocab()                       # feature name -> column
        self.score_scale: float | None = None      # None: the model uses no recogniser score
        self.bins: dict[str, int] = {}
        self.tfidf: TfIdf | None = None
        self.topics: TopicModel | None = None

    @property
    def n_features(self) -> int:
        return len(self.names)

    # ---- fitting on training data ------------------------------------------------------
    def fit(self, ns: NbestSet) -> None:
        """Score scale, TF-IDF bins and topic hierarchy from the training set (references)."""
        if ns.has_scores:
            # Overflow is refused below when not finite, as one line: numpy's warnings (the
            # subtraction's, the mean's) are not printed before it.
            with np.errstate(over="ignore", invalid="ignore"):
                rel = np.concatenate([u.scores.max() - u.scores for u in ns.utterances])
                rel = rel[rel > 0]
                # each gap divided first: the mean of finite gaps is finite even near 1e308
                self.score_scale = float(np.sum(rel / rel.size)) if rel.size else 1.0
            if not math.isfinite(self.score_scale):  # e.g. scores of -1e308 and 1e308
                raise UserError("the recogniser scores span more than a float can hold "
                                f"(mean gap {self.score_scale}); rescale them", ns.path)
        if "backoff" in self.families or "topic" in self.families:
            names, docs = group_docs(ns, [u.reference or "" for u in ns.utterances])
            self.tfidf = TfIdf.fit(docs)
            if "backoff" in self.families:
                words = list(self.tfidf.vocab)
                self.bins = backoff_bins(words, self.tfidf.word_scores(docs))
            if "topic" in self.families:
                self.topics = fit_topics(names, docs, self.tfidf, list(self.topic_levels),
                                         self.min_cluster, self.seed)

    def utterance_topics(self, ns: NbestSet, texts: list[str] | None) -> list[tuple[int, ...]] | None:
        """Topic (cluster per level) of each utterance's group: the training clusters when
        ``texts`` is None (training data), else the nearest cluster of the group's ``texts``."""
        if self.topics is None:
            return None
        if texts is None:
            by_group = self.topics.train_topics
        else:
            names, docs = group_docs(ns, texts)
            by_group = dict(zip(names, self.topics.assign(self.tfidf, docs)))
        return [by_group[g] for g in ns.groups]

    # ---- extraction --------------------------------------------------------------------
    def _text_features(self, words: list[str], hist_w: set, hist_b: set, topic) -> Counter:
        f: Counter = Counter()
        fam = self.families
        if "ngram" in fam:
            for w in words:
                f["1|" + w] += 1
            p = ["<s>"] + words + ["</s>"]
            for a, b in zip(p, p[1:]):
                f["2|" + a + " " + b] += 1
            for a, b, c in zip(p, p[1:], p[2:]):
                f["3|" + a + " " + b + " " + c] += 1
        if "trigger" in fam or "backoff" in fam:
            uc = Counter(words)
            events = [w for w, n in uc.items() if n >= 2 or w in hist_w]
            if "trigger" in fam:
                for w in events:
                    f["T1|" + w] = 1
                bc = Counter(zip(words, words[1:]))
                for bg, n in bc.items():
                    if n >= 2 or bg in hist_b:
                        f["T2|" + bg[0] + " " + bg[1]] = 1
            if "backoff" in fam:
                for w in events:
                    b = self.bins.get(w)
                    if b is not None:
                        f[f"B|{b}"] += 1
        if topic is not None and self.topics is not None:
            L = len(self.topics.levels)
            for lev, c in enumerate(topic):
                tw = self.topics.topic_words[lev][c]
                for w in words:
                    f[f"P|{lev}|{c}|{w}"] += 1.0 / L
                n = min(sum(1 for w in words if w in tw), 2)
                f[f"W|{lev}|{c}|{n}"] += 1.0 / L
        return f

    def extract(self, ns: NbestSet, hist_texts: list[str], topics: list | None,
                grow: bool) -> Rows:
        """Feature rows of every hypothesis; ``hist_texts[j]`` is v_j, the transcription of
        utterance j used in histories. ``grow`` adds unseen features (training only)."""
        names = self.names
        need_hist = "trigger" in self.families or "backoff" in self.families
        use_score = self.score_scale is not None
        if use_score and not ns.has_scores:
            raise ValueError("scores")
        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        starts = [0]
        rank_ids = []
        for r in range(MAX_RANK):
            key = f"rank={r + 1}" if r < MAX_RANK - 1 else f"rank={MAX_RANK}+"
            if grow:
                names.add(key)
            rank_ids.append(names.get(key))
        if use_score:
            if grow:
                names.add("score")
            score_id = names.get("score")
        for i, u in enumerate(ns.utterances):
            hw: set = set()
            hb: set = set()
            if need_hist:
                for j in ns.history[i]:
                    ws = hist_texts[j].split()
                    hw.update(ws)
                    hb.update(zip(ws, ws[1:]))
            topic = topics[i] if topics is not None else None
            cache: dict[str, tuple[list[int], list[float]]] = {}
            if use_score:
                with np.errstate(over="ignore", invalid="ignore"):
                    rel = (u.scores - u.scores.max()) / self.score_scale
                if not np.all(np.isfinite(rel)):  # one line, not numpy's overflow warning
                    raise UserError(f"{u.where()}: its recogniser scores span more than a float "
                                    "can hold; rescale them", ns.path, u.line)
            for r, h in enumerate(u.hypotheses):
                got = cache.get(h)
                if got is None:
                    f = self._text_features(h.split(), hw, hb, topic)
                    ids, vals = [], []
                    for k, v in f.items():
                        j = names.get(k)
                        if j is None and grow:
                            j = names.add(k)
                        if j is not None:
                            ids.append(j)
                            vals.append(float(v))
                    got = cache[h] = (ids, vals)
                ids, vals = list(got[0]), list(got[1])
                rid = rank_ids[min(r, MAX_RANK - 1)]
                if rid is not None:
                    ids.append(rid)
                    vals.append(1.0)
                if use_score and score_id is not None and rel[r] != 0.0:
                    ids.append(score_id)
                    vals.append(float(rel[r]))
                indices.extend(ids)
                data.extend(vals)
                indptr.append(len(indices))
            starts.append(len(indptr) - 1)
        return Rows(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
                    np.asarray(data, dtype=np.float64), np.asarray(starts, dtype=np.int64),
                    len(names))

    # ---- storage -----------------------------------------------------------------------
    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        order = self.names.words
        blob = "\n".join(order).encode("utf-8")
        arrays = {"feature_names": np.frombuffer(blob, dtype=np.uint8).copy()}
        header = {"families": list(self.families), "topic_levels": list(self.topic_levels),
                  "min_cluster": self.min_cluster, "seed": self.seed,
                  "score_scale": self.score_scale, "n_features": len(order),
                  "bins": self.bins}
        if self.tfidf is not None:
            header["tfidf_vocab"] = list(self.tfidf.vocab)
            header["tfidf_n_docs"] = self.tfidf.n_docs
            arrays["tfidf_idf"] = self.tfidf.idf
        if self.topics is not None:
            header["topic_words"] = [[sorted(s) for s in lev] for lev in self.topics.topic_words]
            for k, M in enumerate(self.topics.means):
                arrays[f"topic_means_{k}"] = M
        return header, arrays

    @classmethod
    def from_arrays(cls, h: dict, arrays: dict[str, np.ndarray]) -> "FeatureSpace":
        if not isinstance(h, dict) or not isinstance(h.get("bins"), dict) or not all(
                type(v) is int and 0 <= v < 1 << 20 for v in h["bins"].values()):
            raise ValueError("bins must map feature names to small non-negative integers")
        scale = h.get("score_scale")
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                                  or not math.isfinite(scale) or scale <= 0):
            raise ValueError("score_scale must be a positive finite number")
        if type(h.get("n_features")) is not int or h["n_features"] < 0:
            raise ValueError("n_features must be a non-negative integer")
        fs = cls(tuple(h["families"]), tuple(h["topic_levels"]), int(h["min_cluster"]), int(h["seed"]))
        blob = arrays["feature_names"].tobytes().decode("utf-8")
        names = blob.split("\n") if blob else []
        if len(names) != int(h["n_features"]):
            raise ValueError("feature name count mismatch")
        fs.names = Vocab(names)
        fs.score_scale = h["score_scale"]
        fs.bins = {str(k): int(v) for k, v in h["bins"].items()}
        if "tfidf_vocab" in h:
            vocab = Vocab(h["tfidf_vocab"])
            fs.tfidf = TfIdf(vocab, np.asarray(arrays["tfidf_idf"], dtype=np.float64),
                             int(h["tfidf_n_docs"]))
        if "topic_words" in h:
            means = [np.asarray(arrays[f"topic_means_{k}"], dtype=np.float64)
                     for k in range(len(h["topic_words"]))]
            fs.topics = TopicModel(list(fs.topic_levels), means,
                                   [[set(s) for s in lev] for lev in h["topic_words"]], {})
        return fs
