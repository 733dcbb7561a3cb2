"""Features of the morphological tagger and the lemmatizer: strings in, uint64 values out.

Every feature is a value of a template, hashed to 64 bits (``value``): the word's form,
lower-cased form, prefixes 1-4 and suffixes 1-6, shape, case/digit/hyphen flags, length,
the tag dictionary's ambiguity class, and the lower-cased forms (window +-2), suffixes 2-3,
shapes and ambiguity classes of the neighbours (+-1), with two form bigrams; and suffixes 1-6
and prefixes 1-4 again, each joined with whether the tag dictionary knows the word
(``hide_unknown``), so that an unknown word's affixes have weights of their own, learnt from
the words new to their fold (on dev, mean AllTags with all FEATS over the 8 treebanks 80.44 -> 80.91;
results/morph-dev.md). Only raw text is read: a word unseen in training still has its
affixes, shape and neighbours. A token's features are one row of a fixed-width uint64 matrix,
the kernels' ``feats``.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

from structkit.errors import UserError

PAD = "<s>"

# What the features are (the dev experiments of scripts/morph_dev.py vary these; the defaults
# are what dev preferred).
PREFIXES = 4              # prefixes 1..PREFIXES of the word
SUFFIXES = 6              # suffixes 1..SUFFIXES of the word
NEIGH_SUFFIXES = (2, 3)   # the suffix lengths the neighbours (+-1) show
AMB_WINDOW = (-1, 1)      # the neighbours whose ambiguity class is a feature
SUFFIX_SHAPE = False      # suffixes 1-3 joined with the word's shape flags
KNOWN_SUFFIXES = 6        # suffixes 1..KNOWN_SUFFIXES also joined with whether the dictionary knows the word
KNOWN_OTHER: tuple[str, ...] = ("p1", "p2", "p3", "p4")   # other own templates (names) joined likewise
UNKNOWN_ONLY = False      # ... and shown for the words it lacks only (a constant for the others)


def own_templates() -> tuple[str, ...]:
    """The names of the word's own feature values, in column order."""
    return (("w", "l") + tuple(f"p{k}" for k in range(1, PREFIXES + 1))
            + tuple(f"s{k}" for k in range(1, SUFFIXES + 1)) + ("sh", "fl", "len")
            + (("s1f", "s2f", "s3f") if SUFFIX_SHAPE else ()))


def known_joined() -> tuple[str, ...]:
    """The own templates also joined with whether the dictionary knows the word."""
    return tuple(f"s{k}" for k in range(1, KNOWN_SUFFIXES + 1)) + KNOWN_OTHER


OWN = own_templates()   # the defaults' own templates (what explain names)


def context_templates() -> tuple[str, ...]:
    """The names of the per-type values the neighbours read."""
    return ("l",) + tuple(f"s{k}" for k in NEIGH_SUFFIXES) + ("sh",)


@lru_cache(maxsize=1 << 16)
def value(template: str, s: str) -> int:
    """The 64-bit value of ``s`` under ``template`` (stable across runs and machines); the
    last 2^16 asked are kept (affixes, shapes and flags recur across word types)."""
    return int.from_bytes(hashlib.blake2b(f"{template}\x1f{s}".encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "little")


def shape(form: str) -> str:
    """Xx, x, X, d, x-x ... : character classes with runs collapsed (at most 6 symbols)."""
    out = []
    for ch in form:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch if not ch.isalnum() else "a"
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out[:6])


def word_class(form: str) -> str | None:
    """"num" for a number, "punct" for punctuation/symbols, else None (a word)."""
    if any(ch.isdigit() for ch in form) and not any(ch.isalpha() for ch in form):
        return "num"
    if not any(ch.isalnum() for ch in form):
        return "punct"
    return None


def own_strings(form: str) -> list[tuple[str, str]]:
    """(template, string) of the word's own feature values, in column order (what
    ``type_values`` hashes; ``explain`` shows these)."""
    low = form.lower()
    flags = (("C" if form[:1].isupper() else "") + ("A" if form.isupper() else "")
             + ("D" if any(c.isdigit() for c in form) else "") + ("H" if "-" in form else ""))
    vals = [form, low] + [low[:k] if len(low) >= k else "" for k in range(1, PREFIXES + 1)] \
        + [low[-k:] if len(low) >= k else "" for k in range(1, SUFFIXES + 1)] + [shape(form), flags, str(min(len(form), 12))]
    if SUFFIX_SHAPE:
        vals += [f"{low[-k:] if len(low) >= k else ''}\x1f{flags}" for k in range(1, 4)]
    return list(zip(own_templates(), vals))


def type_values(form: str) -> tuple[list[int], list[int]]:
    """The word's own feature values (``own_templates()``) and the values its neighbours read (``context_templates()``)."""
    low = form.lower()
    sh = shape(form)
    own = [value(t, v) for t, v in own_strings(form)]
    ctx = [value("c" + t, v) for t, v in zip(context_templates(), [low] + [low[-k:] for k in NEIGH_SUFFIXES] + [sh])]
    return own, ctx


_MUL = np.uint64(0x9E3779B97F4A7C15)


def _mix(template: int, vals: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (vals ^ np.uint64(template)) * _MUL
        x ^= x >> np.uint64(29)
        return x * np.uint64(0xBF58476D1CE4E5B9)


class TypeTable:
    """Feature values per word type, computed once per type; ``known``, if given, is a cache of
    ``type_values`` shared with other tables (a model's, kept between calls: see
    ``bounded_cache``)."""

    def __init__(self, known: dict | None = None) -> None:
        self.index: dict[str, int] = {}
        self.own: list[list[int]] = []
        self.ctx: list[list[int]] = []
        self.known = known

    def ids(self, forms: list[str]) -> np.ndarray:
        out = np.empty(len(forms), dtype=np.int64)
        known = self.known
        for i, f in enumerate(forms):
            k = self.index.get(f)
            if k is None:
                k = self.index[f] = len(self.own)
                got = known.get(f) if known is not None else None
                if got is None:
                    got = type_values(f)
                    if known is not None:
                        known[f] = got
                self.own.append(got[0])
                self.ctx.append(got[1])
            out[i] = k
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        own = np.array(self.own, dtype=np.uint64).reshape(-1, len(own_templates()))
        ctx = np.array(self.ctx, dtype=np.uint64).reshape(-1, len(context_templates()))
        return own, ctx


def _shifted(vals: np.ndarray, sent_ptr: np.ndarray, d: int, pad: int) -> np.ndarray:
    """``vals`` of the token ``d`` places away in the same sentence (``pad`` outside it)."""
    n = vals.shape[0]
    out = np.full(n, np.uint64(pad), dtype=np.uint64)
    idx = np.arange(n) + d
    sent = np.repeat(np.arange(len(sent_ptr) - 1), np.diff(sent_ptr))
    ok = (idx >= 0) & (idx < n)
    ok[ok] &= sent[idx[ok]] == sent[ok]
    out[ok] = vals[idx[ok]]
    return out


def tag_features(types: TypeTable, tids: np.ndarray, sent_ptr: np.ndarray, amb: np.ndarray) -> np.ndarray:
    """The tagger's feature matrix (tokens x 32) of tokens with type ids
    ``tids`` and ambiguity-class values ``amb``, sentences ``sent_ptr``."""
    own, ctx = types.arrays()
    n = tids.shape[0]
    cols = [own[tids, k] for k in range(own.shape[1])]
    pad = value("pad", PAD)
    low = ctx[tids, 0]
    cols.append(_mix(1, amb))
    cols.append(np.full(n, np.uint64(value("bias", ""))))
    for j, d in enumerate((-2, -1, 1, 2)):
        cols.append(_mix(10 + j, _shifted(low, sent_ptr, d, pad)))
    for t in range(1, 1 + len(NEIGH_SUFFIXES)):   # neighbours' suffixes
        for j, d in enumerate((-1, 1)):
            cols.append(_mix(20 + 2 * t + j, _shifted(ctx[tids, t], sent_ptr, d, pad)))
    s3 = 1 + NEIGH_SUFFIXES.index(3) if 3 in NEIGH_SUFFIXES else len(NEIGH_SUFFIXES)
    for j, d in enumerate((-2, 2)):
        cols.append(_mix(30 + j, _shifted(ctx[tids, s3], sent_ptr, d, pad)))
    shp = ctx.shape[1] - 1
    for j, d in enumerate((-1, 1)):
        cols.append(_mix(40 + j, _shifted(ctx[tids, shp], sent_ptr, d, pad)))
        if d in AMB_WINDOW:
            cols.append(_mix(50 + j, _shifted(amb, sent_ptr, d, pad)))
    for d in AMB_WINDOW:
        if d not in (-1, 1):
            cols.append(_mix(54 + d, _shifted(amb, sent_ptr, d, pad)))
    cols.append(_mix(60, _shifted(low, sent_ptr, -1, pad) ^ _mix(61, low)))
    cols.append(_mix(62, _shifted(low, sent_ptr, 1, pad) ^ _mix(63, low)))
    names = own_templates()
    for name in known_joined():   # joined with known/unknown by hide_unknown
        cols.append(own[tids, names.index(name)])
    out = np.stack(cols, axis=1)
    return np.ascontiguousarray(out)


def lemma_features(feats: np.ndarray, tag_vals: np.ndarray, upos_vals: np.ndarray) -> np.ndarray:
    """The lemmatizer's feature matrix: the word's own features (the first ``len(own_templates())`` columns
    of the tagger's ``feats``), its tag (``tag_vals``: one value per token, ``upos_vals``
    likewise) and the tag with the form and with the suffixes."""
    names = own_templates()
    own = feats[:, :len(names)]
    cols = [own[:, k] for k in range(len(names))]
    cols.append(_mix(70, tag_vals))
    cols.append(_mix(71, upos_vals))
    cols.append(_mix(72, tag_vals ^ _mix(73, own[:, 1])))          # lower form x tag
    for j, k in enumerate(names.index(f"s{m}") for m in range(1, min(SUFFIXES, 5) + 1)):  # suffixes x UPOS, x tag
        cols.append(_mix(80 + j, upos_vals ^ _mix(90 + j, own[:, k])))
        cols.append(_mix(100 + j, tag_vals ^ _mix(110 + j, own[:, k])))
    return np.ascontiguousarray(np.stack(cols, axis=1))


UNKNOWN_FORM = (value("w", "\x00unknown"), value("l", "\x00unknown"))


def hide_unknown(feats: np.ndarray, known: np.ndarray) -> None:
    """Give the words the dictionary lacks one shared form and lower-cased form value: in
    training (jackknifed), a word new to its fold then teaches the affix and context features,
    not its own form's weights, which a word new to the model would not have. The last
    ``len(known_joined())`` columns (copies of the suffixes) are joined with known / unknown."""
    feats[~known, 0] = UNKNOWN_FORM[0]
    feats[~known, 1] = UNKNOWN_FORM[1]
    n = feats.shape[1]
    for j in range(n - len(known_joined()), n):
        feats[known, j] = np.uint64(value("known", str(j))) if UNKNOWN_ONLY else _mix(200 + j, feats[known, j])
        feats[~known, j] = _mix(300 + j, feats[~known, j])


def layout(levels=None) -> dict:
    """The feature settings a model was trained with (for its header: a model is only valid
    with the same layout, as its weights are hashed per column); ``levels``: those of its word
    clusters, when it was trained with vectors."""
    out = {"own": list(own_templates()), "context": list(context_templates()),
           "amb_window": list(AMB_WINDOW), "known_joined": list(known_joined())}
    if levels:
        out["clusters"] = list(cluster_templates(levels))
        # a lemma candidate that is a word of the vectors file has its own feature value
        # (``morph.task.VECTORS_LEMMA``): models trained with vectors before it are refused
        out["lemma_in_vectors"] = True
    return out


def check_layout(header: dict, path: str) -> None:
    """Refuse, in one line, a model whose hashed weights were trained with other feature columns
    (a model from a structkit with other morph features would load and tag silently wrong)."""
    got = header.get("layout")
    vectors = header.get("vectors")
    if got != layout(vectors.get("levels") if isinstance(vectors, dict) else None):
        raise UserError("this model's morphological features are not this structkit's ("
                        + ("none recorded: it was trained before they were" if got is None else "another layout")
                        + "); retrain it with this version", path)


# ---- word clusters of pretrained vectors (``--vectors``, issue 44) -------------------------------
# Only a model trained with vectors has these columns, after all the others (a model without
# vectors is what it was): the word's cluster at each level, and the neighbours' (+-1) at the
# levels ``CLUSTER_NEIGHBOURS`` names (indices into the table's levels).
CLUSTER_NEIGHBOURS = (1, 2)
NO_CLUSTER = "\x00none"


def cluster_templates(levels) -> tuple[str, ...]:
    """The names of the cluster columns of a table with ``levels`` (``WordClusters.levels``)."""
    own = tuple(f"c{k}" for k in levels)
    return own + tuple(f"c{levels[j]}{d:+d}" for j in CLUSTER_NEIGHBOURS if j < len(levels) for d in (-1, 1))


def cluster_features(clusters, views: list[str], sent_ptr: np.ndarray) -> np.ndarray:
    """The cluster columns (tokens x ``len(cluster_templates(clusters.levels))``) of the tokens
    ``views`` (``clusters.lookup`` of each: its own clusters, its lower-cased form's or the
    nearest known word's; none at all gives the value of ``NO_CLUSTER``)."""
    levels = clusters.levels
    per_type: dict[str, list[int]] = {}
    rows = []
    for f in views:
        got = per_type.get(f)
        if got is None:
            ids = clusters.lookup(f)
            got = per_type[f] = [value(f"c{k}", NO_CLUSTER if ids is None else str(ids[j]))
                                 for j, k in enumerate(levels)]
        rows.append(got)
    own = np.array(rows, dtype=np.uint64).reshape(len(views), len(levels))
    cols = [own[:, j] for j in range(len(levels))]
    pad = value("pad", PAD)
    for j in CLUSTER_NEIGHBOURS:
        if j < len(levels):
            for m, d in enumerate((-1, 1)):
                cols.append(_mix(400 + 2 * j + m, _shifted(own[:, j], sent_ptr, d, pad)))
    return np.ascontiguousarray(np.stack(cols, axis=1)) if cols else np.zeros((len(views), 0), np.uint64)


def cluster_lemma_features(cluster_cols: np.ndarray, levels, upos_vals: np.ndarray) -> np.ndarray:
    """The lemmatizer's cluster columns: the word's own clusters, and the finest joined with
    the predicted UPOS."""
    n = len(levels)
    own = cluster_cols[:, :n]
    cols = [own[:, j] for j in range(n)] + [_mix(500, upos_vals ^ _mix(501, own[:, n - 1]))]
    return np.ascontiguousarray(np.stack(cols, axis=1))
