"""Features of the morphological tagger and the lemmatizer: strings in, uint64 values out.

Every feature is a value of a template, hashed to 64 bits (``value``): the word's form,
lower-cased form, prefixes 1-4 and suffixes 1-5, shape, case/digit/hyphen flags, length,
the tag dictionary's ambiguity class, and the lower-cased forms (window +-2), suffixes 2-3,
shapes and ambiguity classes of the neighbours (+-1), with two form bigrams. Only raw text
is read: a word unseen in training still has its affixes, shape and neighbours. A token's
features are one row of a fixed-width uint64 matrix, the kernels' ``feats``.
"""
from __future__ import annotations

import hashlib

import numpy as np

PAD = "<s>"

OWN = ("w", "l", "p1", "p2", "p3", "p4", "s1", "s2", "s3", "s4", "s5", "sh", "fl", "len")
CONTEXT = ("l", "s2", "s3", "sh")   # per-type values the neighbours read


def value(template: str, s: str) -> int:
    """The 64-bit value of ``s`` under ``template`` (stable across runs and machines)."""
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


def type_values(form: str) -> tuple[list[int], list[int]]:
    """The word's own feature values (``OWN``) and the values its neighbours read (``CONTEXT``)."""
    low = form.lower()
    sh = shape(form)
    flags = (("C" if form[:1].isupper() else "") + ("A" if form.isupper() else "")
             + ("D" if any(c.isdigit() for c in form) else "") + ("H" if "-" in form else ""))
    vals = [form, low] + [low[:k] if len(low) >= k else "" for k in range(1, 5)] \
        + [low[-k:] if len(low) >= k else "" for k in range(1, 6)] + [sh, flags, str(min(len(form), 12))]
    own = [value(t, v) for t, v in zip(OWN, vals)]
    ctx = [value("c" + t, v) for t, v in zip(CONTEXT, (low, low[-2:], low[-3:], sh))]
    return own, ctx


_MUL = np.uint64(0x9E3779B97F4A7C15)


def _mix(template: int, vals: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (vals ^ np.uint64(template)) * _MUL
        x ^= x >> np.uint64(29)
        return x * np.uint64(0xBF58476D1CE4E5B9)


class TypeTable:
    """Feature values per word type, computed once per type."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.own: list[list[int]] = []
        self.ctx: list[list[int]] = []

    def ids(self, forms: list[str]) -> np.ndarray:
        out = np.empty(len(forms), dtype=np.int64)
        for i, f in enumerate(forms):
            k = self.index.get(f)
            if k is None:
                k = self.index[f] = len(self.own)
                own, ctx = type_values(f)
                self.own.append(own)
                self.ctx.append(ctx)
            out[i] = k
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        own = np.array(self.own, dtype=np.uint64).reshape(-1, len(OWN))
        ctx = np.array(self.ctx, dtype=np.uint64).reshape(-1, len(CONTEXT))
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
    cols = [own[tids, k] for k in range(len(OWN))]
    pad = value("pad", PAD)
    low = ctx[tids, 0]
    cols.append(_mix(1, amb))
    cols.append(np.full(n, np.uint64(value("bias", ""))))
    for j, d in enumerate((-2, -1, 1, 2)):
        cols.append(_mix(10 + j, _shifted(low, sent_ptr, d, pad)))
    for t in (1, 2):   # neighbours' suffixes 2, 3
        for j, d in enumerate((-1, 1)):
            cols.append(_mix(20 + 2 * t + j, _shifted(ctx[tids, t], sent_ptr, d, pad)))
    for j, d in enumerate((-2, 2)):
        cols.append(_mix(30 + j, _shifted(ctx[tids, 2], sent_ptr, d, pad)))
    for j, d in enumerate((-1, 1)):
        cols.append(_mix(40 + j, _shifted(ctx[tids, 3], sent_ptr, d, pad)))
        cols.append(_mix(50 + j, _shifted(amb, sent_ptr, d, pad)))
    cols.append(_mix(60, _shifted(low, sent_ptr, -1, pad) ^ _mix(61, low)))
    cols.append(_mix(62, _shifted(low, sent_ptr, 1, pad) ^ _mix(63, low)))
    out = np.stack(cols, axis=1)
    return np.ascontiguousarray(out)


def lemma_features(feats: np.ndarray, tag_vals: np.ndarray, upos_vals: np.ndarray) -> np.ndarray:
    """The lemmatizer's feature matrix: the word's own features (the first ``len(OWN)`` columns
    of the tagger's ``feats``), its tag (``tag_vals``: one value per token, ``upos_vals``
    likewise) and the tag with the form and with the suffixes."""
    own = feats[:, :len(OWN)]
    cols = [own[:, k] for k in range(len(OWN))]
    cols.append(_mix(70, tag_vals))
    cols.append(_mix(71, upos_vals))
    cols.append(_mix(72, tag_vals ^ _mix(73, own[:, 1])))          # lower form x tag
    for j, k in enumerate(range(6, 11)):                             # suffixes x UPOS, x tag
        cols.append(_mix(80 + j, upos_vals ^ _mix(90 + j, own[:, k])))
        cols.append(_mix(100 + j, tag_vals ^ _mix(110 + j, own[:, k])))
    return np.ascontiguousarray(np.stack(cols, axis=1))


UNKNOWN_FORM = (value("w", "\x00unknown"), value("l", "\x00unknown"))


def hide_unknown(feats: np.ndarray, known: np.ndarray) -> None:
    """Give the words the dictionary lacks one shared form and lower-cased form value: in
    training (jackknifed), a word new to its fold then teaches the affix and context features,
    not its own form's weights, which a word new to the model would not have."""
    feats[~known, 0] = UNKNOWN_FORM[0]
    feats[~known, 1] = UNKNOWN_FORM[1]
