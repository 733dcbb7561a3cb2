"""TF-IDF over groups (conversations) as documents, the backoff-trigger bins, and topics from
a bisecting k-means hierarchy (Singh-Miller & Collins, Sections 2.1-2.2).

score(w, d) = (1 + log tf_wd) * log(n / df_w); score(w) is its mean over the documents that
contain w. Bins: bin 0 for score(w) < 1.0, the other words sorted by increasing score and cut
into ten equal-sized bins 1..10.

Topics: documents are L2-normalised TF-IDF vectors; bisecting k-means splits every cluster of
at least ``min_cluster`` documents in two at each level (2-means from two random documents,
run to convergence). The topic of a document at level k is its cluster in the hierarchy cut at
depth k (a cluster too small to split keeps its identity below). New documents go to the
nearest cluster mean at each level. Topic words of cluster t: the words with f_t(w) > f(w),
ranked by f_t(w) log(f_t(w) / f(w)).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from structkit.vocab import Vocab

__all__ = ["TfIdf", "backoff_bins", "TopicModel", "fit_topics"]

N_BINS = 10


@dataclass
class TfIdf:
    vocab: Vocab
    idf: np.ndarray          # log(n / df_w) per vocabulary word
    n_docs: int

    @classmethod
    def fit(cls, docs: list[list[str]]) -> "TfIdf":
        vocab = Vocab()
        df: list[int] = []
        for d in docs:
            for w in dict.fromkeys(d):
                j = vocab.add(w)
                if j == len(df):
                    df.append(0)
                df[j] += 1
        n = max(len(docs), 1)
        idf = np.log(n / np.maximum(np.asarray(df, dtype=np.float64), 1.0)) if df else np.zeros(0)
        return cls(vocab, idf, len(docs))

    def doc_scores(self, doc: list[str]) -> dict[int, float]:
        """score(w, d) for the vocabulary words of ``doc``."""
        out = {}
        for w, tf in Counter(doc).items():
            j = self.vocab.get(w)
            if j is not None:
                out[j] = (1.0 + math.log(tf)) * self.idf[j]
        return out

    def vectors(self, docs: list[list[str]]) -> np.ndarray:
        """Dense L2-normalised TF-IDF vectors, one row per document."""
        X = np.zeros((len(docs), len(self.vocab)))
        for i, d in enumerate(docs):
            for j, s in self.doc_scores(d).items():
                X[i, j] = s
        norm = np.linalg.norm(X, axis=1, keepdims=True)
        return X / np.where(norm > 0, norm, 1.0)

    def word_scores(self, docs: list[list[str]]) -> np.ndarray:
        """score(w): mean of score(w, d) over the documents containing w."""
        total = np.zeros(len(self.vocab))
        count = np.zeros(len(self.vocab))
        for d in docs:
            for j, s in self.doc_scores(d).items():
                total[j] += s
                count[j] += 1
        return total / np.maximum(count, 1)


def backoff_bins(words: list[str], scores: np.ndarray) -> dict[str, int]:
    """Word -> bin (0 for score < 1.0; then ten equal-sized bins by increasing score)."""
    bins = {}
    rest = []
    for w, s in zip(words, scores):
        if s < 1.0:
            bins[w] = 0
        else:
            rest.append((s, w))
    rest.sort()
    m = len(rest)
    for k, (_, w) in enumerate(rest):
        bins[w] = 1 + (k * N_BINS) // m
    return bins


def _two_means(X: np.ndarray, rng: np.random.Generator, tries: int = 5, max_iter: int = 100):
    """Split the rows of X in two (boolean mask of the second cluster), or None."""
    n = X.shape[0]
    for _ in range(tries):
        a, b = rng.choice(n, size=2, replace=False)
        means = np.stack([X[a], X[b]])
        if np.allclose(means[0], means[1]):
            continue
        assign = None
        for _ in range(max_iter):
            d = ((X[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
            new = d[:, 1] < d[:, 0]
            if assign is not None and np.array_equal(new, assign):
                break
            assign = new
            if assign.all() or not assign.any():
                break
            means = np.stack([X[~assign].mean(axis=0), X[assign].mean(axis=0)])
        if assign is not None and assign.any() and not assign.all():
            return assign
    return None


@dataclass
class TopicModel:
    levels: list[int]                 # hierarchy depths used for features
    means: list[np.ndarray]           # per used level: (clusters, V) mean vectors
    topic_words: list[list[set[str]]]  # per used level, per cluster
    train_topics: dict[str, tuple[int, ...]]  # training group -> cluster per used level

    def assign(self, tfidf: TfIdf, docs: list[list[str]]) -> list[tuple[int, ...]]:
        """Nearest cluster mean at each used level for new documents."""
        if not docs:
            return []
        X = tfidf.vectors(docs)
        per_level = []
        for M in self.means:
            d = (X ** 2).sum(1)[:, None] - 2 * X @ M.T + (M ** 2).sum(1)[None, :]
            per_level.append(np.argmin(d, axis=1))
        return [tuple(int(p[i]) for p in per_level) for i in range(len(docs))]


def fit_topics(names: list[str], docs: list[list[str]], tfidf: TfIdf, levels: list[int],
               min_cluster: int = 25, seed: int = 0) -> TopicModel:
    """Bisecting k-means over the documents (named by ``names``) down to max(levels)."""
    X = tfidf.vectors(docs)
    n = len(docs)
    rng = np.random.default_rng(seed)
    labels = np.zeros(n, dtype=np.int64)        # clusters at the current depth
    frozen = {0: n < max(min_cluster, 2)}       # cluster id -> cannot be split further
    by_level: dict[int, np.ndarray] = {0: labels.copy()}
    for depth in range(1, max(levels) + 1):
        new = np.empty_like(labels)
        new_frozen = {}
        nxt = 0
        for c in range(int(labels.max()) + 1 if n else 0):
            idx = np.flatnonzero(labels == c)
            split = None
            if not frozen[c] and len(idx) >= max(min_cluster, 2):
                split = _two_means(X[idx], rng)
            if split is None:
                new[idx] = nxt
                new_frozen[nxt] = True
                nxt += 1
            else:
                for part in (idx[~split], idx[split]):
                    new[part] = nxt
                    new_frozen[nxt] = len(part) < max(min_cluster, 2)
                    nxt += 1
        labels, frozen = new, new_frozen
        by_level[depth] = labels.copy()
    # corpus word frequencies for topic words
    V = len(tfidf.vocab)
    counts = np.zeros((n, V))
    inv = dict(enumerate(tfidf.vocab))
    for i, d in enumerate(docs):
        for w, c in Counter(d).items():
            j = tfidf.vocab.get(w)
            if j is not None:
                counts[i, j] = c
    total = counts.sum(0)
    f = total / max(total.sum(), 1.0)
    means, words = [], []
    for lev in levels:
        lab = by_level[lev]
        k = int(lab.max()) + 1 if n else 0
        M = np.zeros((k, V))
        tw = []
        n_words = max(10, min(10000, V // 2) // max(k, 1))
        for c in range(k):
            idx = lab == c
            M[c] = X[idx].mean(axis=0)
            ct = counts[idx].sum(0)
            ft = ct / max(ct.sum(), 1.0)
            ok = np.flatnonzero((ft > f) & (f > 0))
            sc = ft[ok] * np.log(ft[ok] / f[ok])
            top = ok[np.argsort(-sc, kind="stable")[:n_words]]
            tw.append({inv[int(j)] for j in top})
        means.append(M)
        words.append(tw)
    train_topics = {name: tuple(int(by_level[lev][i]) for lev in levels) for i, name in enumerate(names)}
    return TopicModel(list(levels), means, words, train_topics)
