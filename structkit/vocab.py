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


# ---- strings in model files ---------------------------------------------------------------
# A list of strings is stored as two arrays: NAME__off (int64, n + 1 byte offsets) and
# NAME__utf8 (uint8, the UTF-8 bytes one after another), so its size is linear in the total
# number of characters. A fixed-width numpy string array (what model files held before) costs
# n x the longest string x 4 bytes: one 100k-character token made a 1 MB model need 1.8 GB.
def pack_strings(name: str, words: Iterable[str]) -> dict:
    """``{NAME__off, NAME__utf8}`` holding ``words``."""
    import numpy as np

    encoded = [w.encode("utf-8", "surrogatepass") for w in words]
    off = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        np.cumsum([len(b) for b in encoded], out=off[1:])
    return {name + "__off": off, name + "__utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()}


def packed_size(name: str, shapes: dict) -> int | None:
    """How many strings ``name`` holds, from the arrays' shapes alone (None if absent)."""
    if name + "__off" in shapes:
        return max(shapes[name + "__off"][1][0] - 1, 0) if shapes[name + "__off"][1] else 0
    if name in shapes:
        return shapes[name][1][0] if shapes[name][1] else 0
    return None


def unpack_strings(name: str, arrays: dict) -> list[str]:
    """The strings stored by :func:`pack_strings`, or by an older model file as a fixed-width
    string array ``NAME``. ValueError when the arrays are inconsistent."""
    import numpy as np

    if name + "__off" not in arrays:
        old = arrays[name]
        if old.ndim != 1 or old.dtype.kind != "U":
            raise ValueError(f"{name} is not a list of strings")
        out = [str(s) for s in old]
        for s in out:
            try:
                s.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"{name} is not UTF-8 text (a lone surrogate)") from None
        return out
    off, data = arrays[name + "__off"], arrays[name + "__utf8"]
    if off.ndim != 1 or data.ndim != 1 or off.dtype.kind not in "iu" or data.dtype != np.uint8 \
            or len(off) < 1 or off[0] != 0 or off[-1] != len(data) or np.any(np.diff(off) < 0):
        raise ValueError(f"{name}: string offsets are inconsistent")
    raw = data.tobytes()
    o = off.tolist()
    try:
        # strict: a lone surrogate cannot come from a file (the API refuses them in tokens
        # and labels), so one here is a crafted or damaged model, refused on load
        return [raw[o[i]:o[i + 1]].decode("utf-8") for i in range(len(o) - 1)]
    except UnicodeDecodeError:
        raise ValueError(f"{name} is not UTF-8") from None
