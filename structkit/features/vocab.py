"""Strings to consecutive integer ids: the one vocabulary helper (parser words and tags,
reranker words, feature names and TF-IDF terms)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Iterable, Iterator


class Vocab(Mapping):
    """A read-mostly mapping word -> id, ids in first-seen order; ``words`` lists the words by
    id. The first ``reserved`` words are placeholders (e.g. 'none' and 'unknown') that are never
    looked up."""

    def __init__(self, words: Iterable[str] = (), reserved: int = 0):
        self.words: list[str] = list(words)
        self.index: dict[str, int] = {w: i for i, w in enumerate(self.words) if i >= reserved}

    def add(self, w: str) -> int:
        """The id of ``w``, adding it if new."""
        i = self.index.get(w)
        if i is None:
            i = self.index[w] = len(self.words)
            self.words.append(w)
        return i

    def encode(self, ws: Iterable[str]) -> list[int]:
        """Ids of ``ws``, adding the new ones."""
        add = self.add
        return [add(w) for w in ws]

    def ids(self, ws: Iterable[str], default: int) -> list[int]:
        """Ids of ``ws``, ``default`` for the unknown ones (nothing is added)."""
        get = self.index.get
        return [get(w, default) for w in ws]

    def __getitem__(self, w: str) -> int:
        return self.index[w]

    def get(self, w: str, default: int | None = None) -> int | None:  # faster than Mapping's
        return self.index.get(w, default)

    def __contains__(self, w: object) -> bool:
        return w in self.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.words)
