"""Feature templates -> integer feature ids, vectorised over a whole corpus.

Strings stop here. Each token attribute (word, POS, suffix, ...) is mapped to a small integer
through a per-attribute vocabulary; a template's value on a token is the mixed-radix integer
of its atoms' attribute ids, so a whole corpus is featurised with numpy array operations and
one ``np.unique`` per template, never one Python dict lookup per feature. Feature ids are the
positions of known template keys in per-template sorted key arrays; they are kept (not hashed),
so every feature id maps back to a readable name.

A corpus past this point is flat arrays: sentence ``offsets`` (n_sentences + 1), a CSR of
observation feature ids per token (``indptr``, ``indices``) and label ids ``y``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from structkit.errors import UserError
from structkit.sequence.templates import (
    AMB_FOLDS,
    AMB_UNKNOWN,
    LEXICON_ATTRS,
    VECTOR_ATTRS,
    WORD_ATTRS,
    is_column_attr,
    resolve_templates,
    word_attribute,
)
from structkit.vocab import pack_strings, unpack_strings

if TYPE_CHECKING:
    from structkit.sequence.templates import Template
    from structkit.vectors import WordClusters

ABSENT, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["", "<S>", "</S>", "<UNK>"]
_MAX_KEY = 2 ** 62


@dataclass
class Encoded:
    """A featurised corpus: CSR feature ids per token plus sentence offsets (and labels)."""

    indptr: np.ndarray    # int64 [n_tokens + 1]
    indices: np.ndarray   # int32 [nnz]
    offsets: np.ndarray   # int64 [n_sentences + 1]
    y: np.ndarray | None  # int32 [n_tokens] label ids, when known

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1


class FeatureSpace:
    """The mapping from templates' values to feature ids, learnt from training data."""

    def __init__(self, templates: Sequence[str] | str, clusters: "WordClusters | None" = None):
        self.templates: list[Template] = resolve_templates(templates)
        self.attrs: list[str] = sorted({a for t in self.templates for a, _ in t.atoms})
        # the word clusters of pretrained vectors the vc1-4 attributes read (stored in the model)
        self.clusters = clusters
        vc = self.vector_attrs
        if vc and clusters is None:
            raise UserError(f"the feature template attribute {vc[0]!r} reads the word clusters of "
                            "pretrained vectors: train with --vectors FILE")
        if clusters is not None and vc and max(int(a[2:]) for a in vc) > len(clusters.levels):
            raise UserError(f"the word-cluster table has {len(clusters.levels)} levels; the feature "
                            f"templates read vc{max(int(a[2:]) for a in vc)}")
        self.vocab: dict[str, list[str]] = {a: list(SPECIALS) for a in self.attrs}
        self._index: dict[str, dict[str, int]] = {a: {} for a in self.attrs}
        self.keys: list[np.ndarray] = []
        self.starts: np.ndarray = np.zeros(1, dtype=np.int64)
        # the tag dictionary of the ``amb`` attribute: lower-cased word -> its labels, '+'-joined
        self.lexicon: dict[str, str] = {}
        self.fitted = False

    @property
    def uses_pos(self) -> bool:
        return "p" in self.attrs

    @property
    def uses_lexicon(self) -> bool:
        return any(a in LEXICON_ATTRS for a in self.attrs)

    @property
    def vector_attrs(self) -> list[str]:
        """The attributes read from the word clusters of pretrained vectors (``vc1`` ...)."""
        return [a for a in self.attrs if a in VECTOR_ATTRS]

    def vector_values(self, attr: str, words: list[str]) -> list[str | None]:
        """The ``vc`` attribute ``attr`` of each word: its cluster id at that level of the table
        (``WordClusters.lookup``: the word's own, its lower-cased form's or the nearest known
        word's), None when the table has none."""
        j = int(attr[2:]) - 1
        out = []
        for w in words:
            ids = self.clusters.lookup(w)
            out.append(None if ids is None else str(ids[j]))
        return out

    @property
    def column_attrs(self) -> list[str]:
        """The attributes read from named input columns (``lemma``, ``feats.Number``)."""
        return [a for a in self.attrs if is_column_attr(a)]

    @property
    def n_features(self) -> int:
        return int(self.starts[-1])

    # ---- attributes -------------------------------------------------------------------
    def _lookup(self, attr: str, value: str | None, grow: bool) -> int:
        if value is None:
            return ABSENT
        idx = self._index[attr]
        i = idx.get(value)
        if i is None:
            if not grow:
                return UNK
            i = len(self.vocab[attr])
            idx[value] = i
            self.vocab[attr].append(value)
        return i

    def _attribute_ids(self, words: list[str], pos: list[str] | None, grow: bool,
                       extra: dict[str, list[str | None]] | None = None,
                       amb: list[str] | None = None) -> dict[str, np.ndarray]:
        types: dict[str, int] = {}
        type_of = np.fromiter((types.setdefault(w, len(types)) for w in words), dtype=np.int64,
                              count=len(words))
        type_list = list(types)
        out: dict[str, np.ndarray] = {}
        for attr in self.attrs:
            if attr in WORD_ATTRS:
                per_type = np.fromiter(
                    (self._lookup(attr, word_attribute(attr, w), grow) for w in type_list),
                    dtype=np.int64, count=len(type_list))
                out[attr] = per_type[type_of]
            elif attr in VECTOR_ATTRS:
                per_type = np.fromiter(
                    (self._lookup(attr, v, grow) for v in self.vector_values(attr, type_list)),
                    dtype=np.int64, count=len(type_list))
                out[attr] = per_type[type_of]
            elif attr == "p":
                if pos is None:
                    raise UserError("these feature templates need a POS column, and the input has none")
                pos_types: dict[str, int] = {}
                pt = np.fromiter((pos_types.setdefault(p, len(pos_types)) for p in pos),
                                 dtype=np.int64, count=len(pos))
                per = np.array([self._lookup("p", p, grow) for p in pos_types], dtype=np.int64)
                out[attr] = per[pt] if len(pos) else pt
            elif attr == "bias":
                out[attr] = np.full(len(words), self._lookup("bias", "1", grow), dtype=np.int64)
            elif attr == "amb":
                if amb is None:  # new text: the dictionary of the whole training data
                    per_type = np.fromiter(
                        (self._lookup(attr, self.lexicon.get(w.lower(), AMB_UNKNOWN), grow) for w in type_list),
                        dtype=np.int64, count=len(type_list))
                    out[attr] = per_type[type_of]
                else:            # the training data: each token's jackknifed class
                    kinds: dict[str, int] = {}
                    kt = np.fromiter((kinds.setdefault(v, len(kinds)) for v in amb), dtype=np.int64,
                                     count=len(amb))
                    per = np.array([self._lookup(attr, v, grow) for v in kinds], dtype=np.int64)
                    out[attr] = per[kt] if len(amb) else kt
            else:
                values = (extra or {}).get(attr)
                if values is None:
                    raise UserError(f"a feature template reads the column {attr!r}, and the input "
                                    "has no such column")
                kinds: dict[str | None, int] = {}
                kt = np.fromiter((kinds.setdefault(v, len(kinds)) for v in values), dtype=np.int64,
                                 count=len(values))
                per = np.array([self._lookup(attr, v, grow) for v in kinds], dtype=np.int64)
                out[attr] = per[kt] if len(values) else kt
        return out

    def _radix(self, attr: str) -> int:
        return len(self.vocab[attr])

    def _template_keys(self, t: Template, attr_ids: dict[str, np.ndarray],
                       offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = int(offsets[-1])
        lengths = np.diff(offsets)
        sid = np.repeat(np.arange(len(lengths)), lengths)
        pos_in = np.arange(n) - offsets[:-1][sid]
        length = lengths[sid]
        key = np.zeros(n, dtype=np.int64)
        fired = np.ones(n, dtype=bool)
        for attr, off in t.atoms:
            a = attr_ids[attr]
            if off == 0:
                v = a
            else:
                p = pos_in + off
                inside = (p >= 0) & (p < length)
                v = np.where(inside, a[np.clip(np.arange(n) + off, 0, max(n - 1, 0))],
                             BOS if off < 0 else EOS)
            fired &= v != ABSENT
            key = key * self._radix(attr) + v
        return key, fired

    # ---- fit / transform --------------------------------------------------------------
    def fit_transform(self, words: list[str], pos: list[str] | None, offsets: np.ndarray,
                      cutoff: int = 1, extra: dict[str, list[str | None]] | None = None,
                      labels: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Learn attribute vocabularies and the feature ids seen at least ``cutoff`` times;
        ``extra`` holds the values of the named columns the templates read (None: absent);
        ``labels`` (one per token) are what the ``amb`` dictionary is learnt from."""
        if self.fitted:
            raise RuntimeError("feature space already fitted")
        if cutoff < 1:
            raise UserError(f"--cutoff must be at least 1, got {cutoff}")
        amb = None
        if self.uses_lexicon:
            if labels is None:
                raise UserError("the amb feature attribute (a tag dictionary) needs labelled training data")
            amb, self.lexicon = ambiguity_classes(words, labels, offsets)
        attr_ids = self._attribute_ids(words, pos, grow=True, extra=extra, amb=amb)
        for t in self.templates:
            size = 1
            for attr, _ in t.atoms:
                size *= self._radix(attr)
            if size >= _MAX_KEY:
                raise UserError(f"feature template {t.text!r} has too many possible values "
                                "for exact ids; use fewer word atoms")
        keys = []
        most = 0
        for t in self.templates:
            key, fired = self._template_keys(t, attr_ids, offsets)
            uniq, counts = np.unique(key[fired], return_counts=True)
            keys.append(uniq[counts >= cutoff])
            most = max(most, int(counts.max()) if counts.size else 0)
        if most and not any(len(k) for k in keys):  # an empty model, silently, otherwise
            raise UserError(f"--cutoff {cutoff} keeps no features: the most frequent one is seen "
                            f"{most} times in the training data")
        self.keys = keys
        self.starts = np.concatenate([[0], np.cumsum([len(k) for k in keys])]).astype(np.int64)
        self.fitted = True
        return self._encode(attr_ids, offsets)

    def transform(self, words: list[str], pos: list[str] | None, offsets: np.ndarray,
                  extra: dict[str, list[str | None]] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Feature ids of new data; values never seen in training fire nothing."""
        return self._encode(self._attribute_ids(words, pos, grow=False, extra=extra), offsets)

    def _encode(self, attr_ids: dict[str, np.ndarray], offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = int(offsets[-1])
        ids = np.full((n, len(self.templates)), -1, dtype=np.int32)
        for j, t in enumerate(self.templates):
            key, fired = self._template_keys(t, attr_ids, offsets)
            known = self.keys[j]
            if len(known) == 0:
                continue
            at = np.searchsorted(known, key)
            atc = np.minimum(at, len(known) - 1)
            ok = fired & (known[atc] == key)
            ids[:, j] = np.where(ok, self.starts[j] + atc, -1)
        mask = ids >= 0
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(mask.sum(axis=1), out=indptr[1:])
        return indptr, ids[mask].astype(np.int32)

    # ---- names ------------------------------------------------------------------------
    def feature_name(self, fid: int) -> str:
        """``template=value`` for a feature id, e.g. ``w[-1]|w[0]=the|dog``."""
        j = int(np.searchsorted(self.starts, fid, side="right") - 1)
        t = self.templates[j]
        key = int(self.keys[j][fid - self.starts[j]])
        values = []
        for attr, _ in reversed(t.atoms):
            key, v = divmod(key, self._radix(attr))
            values.append(self.vocab[attr][v])
        return f"{t.text}={'|'.join(reversed(values))}"

    def known_words(self) -> set[str]:
        return set(self.vocab["w"][len(SPECIALS):]) if "w" in self.vocab else set()

    # ---- storage ----------------------------------------------------------------------
    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-able header, arrays) for the model file."""

        arrays: dict[str, np.ndarray] = {}
        for a in self.attrs:  # offsets + UTF-8 bytes: linear in the characters, not n x longest
            arrays.update(pack_strings(f"vocab_{a}", self.vocab[a]))
        for j, k in enumerate(self.keys):
            arrays[f"keys_{j}"] = k
        if self.uses_lexicon:
            arrays.update(pack_strings("lexicon_words", self.lexicon))
            arrays.update(pack_strings("lexicon_classes", self.lexicon.values()))
        header = {"templates": [t.text for t in self.templates], "attrs": self.attrs}
        if self.clusters is not None:
            header["vectors"] = self.clusters.header()
            arrays |= self.clusters.arrays()
        return header, arrays

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "FeatureSpace":
        from structkit.vectors import WordClusters
        fs = cls(header["templates"], WordClusters.from_model(header.get("vectors"), arrays))
        if fs.attrs != header["attrs"]:
            raise ValueError("attribute list does not match the templates")
        for a in fs.attrs:
            fs.vocab[a] = unpack_strings(f"vocab_{a}", arrays)
            if fs.vocab[a][:len(SPECIALS)] != SPECIALS:
                raise ValueError(f"vocabulary of {a} is damaged")
            fs._index[a] = {s: i for i, s in enumerate(fs.vocab[a]) if i >= len(SPECIALS)}
        fs.keys = [np.asarray(arrays[f"keys_{j}"], dtype=np.int64) for j in range(len(fs.templates))]
        fs.starts = np.concatenate([[0], np.cumsum([len(k) for k in fs.keys])]).astype(np.int64)
        if fs.uses_lexicon:
            fs.lexicon = dict(zip(unpack_strings("lexicon_words", arrays),
                                  unpack_strings("lexicon_classes", arrays)))
        fs.fitted = True
        return fs


def ambiguity_classes(words: Sequence[str], labels: Sequence[str], offsets: np.ndarray,
                      folds: int = AMB_FOLDS) -> tuple[list[str], dict[str, str]]:
    """The ``amb`` attribute on training data: (each token's class, jackknifed, and the
    dictionary of the whole data). The class of a lower-cased word is its labels, sorted and
    joined by '+'. Sentence i is in fold i % ``folds``; a token's class is read from the other
    folds (``AMB_UNKNOWN`` if the word is not in them), as a word of new text is read from all
    the training data."""
    n_sent = len(offsets) - 1
    fold_of = np.repeat(np.arange(n_sent) % folds, np.diff(offsets)).tolist()
    keys = [w.lower() for w in words]
    per: dict[str, dict[str, list[int]]] = {}   # word -> label -> its count in each fold
    for key, label, f in zip(keys, labels, fold_of):
        c = per.setdefault(key, {}).setdefault(label, [0] * folds)
        c[f] += 1
    lexicon = {key: "+".join(sorted(by_label)) for key, by_label in per.items()}
    cache: dict[tuple[str, int], str] = {}
    out = []
    for key, f in zip(keys, fold_of):
        v = cache.get((key, f))
        if v is None:
            v = "+".join(sorted(l for l, c in per[key].items() if sum(c) > c[f])) or AMB_UNKNOWN
            cache[(key, f)] = v
        out.append(v)
    return out, lexicon
