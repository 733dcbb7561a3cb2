"""The learnt tokenizer: a first-order chain over the characters of a paragraph, labels
``N T S W`` (``structkit.tokenizer.gold``), hashed character features
(``structkit.tokenizer.features``), trained by structkit's sequence learners on those arrays and
decoded by the same Viterbi kernel, under the constraint that whitespace is ``N`` or ``W``
and any other character ``N``, ``T`` or ``S``.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from structkit.jit import njit
from structkit.sequence.features import Encoded
from structkit.sequence.search.viterbi import max_marginals, viterbi_ws
from structkit.text.base import MAX_SENTENCE_TOKENS, Token, Tokenizer
from structkit.text.english import addresses
from structkit.tokenizer import features as F

NEG = -1e30
WINDOW = 1 << 16      # characters labelled at a time (``LearntTokenizer._spans``)
OVERLAP = 1 << 10     # the end of a window that is labelled again with the next one


@njit
def _line_break(c):
    """Whether code point ``c`` ends a line (as ``str.splitlines`` reads it)."""
    return (10 <= c <= 13) or (0x1C <= c <= 0x1E) or c == 0x85 or c == 0x2028 or c == 0x2029


@njit
def char_emissions(cps, tab, known, bits, feats, rl, Wt):
    """The emission scores E [n, L] of a text's characters under the weights Wt, with the
    constraints as NEG: whitespace may only be N or W (a line break only W), other characters
    only N, T or S; the last non-space character ends a sentence (S only)."""
    n = cps.shape[0]
    L = Wt.shape[1]
    E = np.empty((n, L))
    if n == 0:
        return E
    prep = F.prepare(cps, tab, known, rl)
    cl = prep[1]
    mask = np.uint64((1 << bits) - 1)
    row = np.empty(F.N_FEATURES, dtype=np.int32)
    nf = F.n_features(feats)
    last = -1
    for i in range(n):
        if cl[i + 4] != 1:
            last = i
    for i in range(n):
        F.char_row(i, cps, prep, mask, feats, row)
        e = E[i]
        if L == 4:   # the tokenizer's labels: four sums in registers (the same additions, in order)
            e0 = e1 = e2 = e3 = 0.0
            for j in range(nf):
                w = Wt[row[j]]
                e0 += w[0]
                e1 += w[1]
                e2 += w[2]
                e3 += w[3]
            e[0], e[1], e[2], e[3] = e0, e1, e2, e3
        else:
            for y in range(L):
                e[y] = 0.0
            for j in range(nf):
                w = Wt[row[j]]
                for y in range(L):
                    e[y] += w[y]
        if cl[i + 4] == 1:
            e[1] = NEG
            e[2] = NEG
            if _line_break(cps[i]):   # a token never spans lines (a CoNLL-U form cannot)
                e[0] = NEG
        else:
            e[3] = NEG
            if i == last:
                e[0] = NEG
                e[1] = NEG
    return E


@njit
def tag_emissions(E, Tt):
    """The best label of every character (int32 [n]) for the emissions E and transitions Tt."""
    n, L = E.shape
    out = np.zeros(n, dtype=np.int32)
    if n > 0:
        viterbi_ws(E, n, Tt, out, np.empty((n, L)), np.empty((n, L), dtype=np.int32), np.empty(L))
    return out


@njit
def tag_chars(cps, tab, known, bits, feats, rl, Wt, Tt):
    """The best label of every character of a text (int32 [n]) under the model (Wt, Tt);
    whitespace may only be N or W, other characters only N, T or S; the last non-space
    character ends a sentence."""
    return tag_emissions(char_emissions(cps, tab, known, bits, feats, rl, Wt), Tt)


def favour_sentence_ends(E: np.ndarray, bias: float) -> np.ndarray:
    """``E`` with ``bias`` added, in place, to the score of a sentence end (label S) at every
    character where one is allowed (its emission not NEG): a positive bias ends more sentences,
    a negative one fewer (``LearntTokenizer.sentence_bias``, chosen on dev by training)."""
    if bias:
        allowed = E[:, 2] > NEG / 2
        E[allowed, 2] += bias
    return E


@njit
def char_margins(E, Tt, labels, M, out):
    """The margin of each character's label: ``out[i]`` = the best score of a sequence with
    ``labels[i]`` at i minus the best with another allowed label there (+inf where no other
    label is allowed); ``M`` [n, L] receives the max-marginals (forward and backward
    max-product passes over E and Tt; a label whose emission is NEG is not allowed)."""
    n, L = E.shape
    if n == 0:
        return
    max_marginals(E, n, Tt, M)
    for i in range(n):
        y = labels[i]
        other = -np.inf
        for z in range(L):
            if z != y and E[i, z] > NEG / 2 and M[i, z] > other:
                other = M[i, z]
        out[i] = M[i, y] - other


@njit
def token_spans(labels, space):
    """Token spans of a text from its character labels: ``(starts, ends, sentence_end)``
    arrays, one entry per token (``sentence_end``: the token ends a sentence; the last one
    always does). ``space`` marks the whitespace characters; a token never starts or ends with
    one (whitespace labelled inside a token before a separator ends the token before it)."""
    n = labels.shape[0]
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    sent = np.zeros(n, dtype=np.bool_)
    k = 0
    start = -1
    for i in range(n):
        y = labels[i]
        if start < 0:
            if y == 3 or space[i]:
                continue
            start = i
        if y == 3:
            end = i
            while end > start and space[end - 1]:
                end -= 1
            starts[k], ends[k] = start, end
            k += 1
            start = -1
        elif y == 1 or y == 2:
            starts[k], ends[k] = start, i + 1
            sent[k] = y == 2
            k += 1
            start = -1
    if start >= 0:
        end = n
        while end > start and space[end - 1]:
            end -= 1
        starts[k], ends[k] = start, end
        k += 1
    if k > 0:
        sent[k - 1] = True
    return starts[:k], ends[:k], sent[:k]


@njit
def _cut(labels, limit):
    """Where to end a window's kept part: just after its last sentence end before ``limit``
    (``True``), else its last token end or separating space (``False``), else at ``limit``."""
    for i in range(limit - 1, -1, -1):
        if labels[i] == 2:
            return i + 1, True
    for i in range(limit - 1, -1, -1):
        if labels[i] == 1 or labels[i] == 3:
            return i + 1, False
    return limit, False


def keep_whole(labels: np.ndarray, keep, pos: int) -> None:
    """Make each span of ``keep`` (block positions; ``labels`` starts at ``pos``) one token, in
    place: no boundary inside it, a token end at its last character (a sentence end there
    stays one), and a token end just before it."""
    n = len(labels)
    for a, b in keep:
        a, b = a - pos, b - pos
        if b <= 0 or a >= n:
            continue
        last = labels[b - 1] if b <= n else 0
        labels[max(a, 0):min(b, n)] = 0          # N: inside a token
        if b <= n:
            labels[b - 1] = 2 if last == 2 else 1   # S stays, else T
        if a > 0 and labels[a - 1] == 0:
            labels[a - 1] = 1


class LearntTokenizer(Tokenizer):
    """A tokenizer and sentence splitter learnt from a treebank (``train_tokenizer``), with
    the multiword-token splitter ``mwt`` (``structkit.tokenizer.mwt``). ``sentence_bias`` is
    added to the score of a sentence end wherever one is allowed (``favour_sentence_ends``; 0,
    the default, leaves the model's scores as they are)."""

    def __init__(self, W: np.ndarray, T: np.ndarray, known: np.ndarray, bits: int, mwt=None,
                 feats: int = 0, sentence_bias: float = 0.0):
        self.W, self.T, self.known, self.bits, self.mwt = W, T, known, bits, mwt
        self.feats = feats   # the optional feature groups (``features.SHORT``, ...)
        self.sentence_bias = sentence_bias

    def labels(self, text: str) -> np.ndarray:
        return self._labels(F.code_points(text), 0, F.rule_labels(text, self.feats))

    def _labels(self, cps: np.ndarray, pos: int, rl: np.ndarray) -> np.ndarray:
        """The labels of the window ``cps`` (at ``pos`` in its block; ``rl`` its rules'
        labels, ``features.rule_labels``), for ``_spans``."""
        if not self.sentence_bias:
            return tag_chars(cps, F.tables(), self.known, self.bits, self.feats, rl, self.W, self.T)
        E = char_emissions(cps, F.tables(), self.known, self.bits, self.feats, rl, self.W)
        return tag_emissions(favour_sentence_ends(E, self.sentence_bias), self.T)

    def _split(self, text: str, offset: int) -> Iterator[tuple[list[Token], bool]]:
        cps = F.code_points(text)
        cls, _ = F.tables()
        space = np.zeros(len(cps), dtype=np.bool_)
        bmp = cps < 0x10000
        space[bmp] = cls[cps[bmp]] == 1
        n = len(text)
        expand = self.mwt.words if self.mwt is not None else None
        sent: list[Token] = []
        # with the group RULES, a token the English rules also found has their words
        ruled: dict = {}
        rl = F.rule_labels(text, self.feats, ruled)
        keep = addresses(text)   # web and e-mail addresses: one token each, whatever the model says
        whole = set(keep)
        for a0, starts, ends, sent_end in self._spans(cps, space, rl, keep):
            starts = starts + a0
            ends = ends + a0
            after = np.ones(len(ends), dtype=np.bool_)   # whitespace (or the end) after each token
            inside = ends < n
            after[inside] = space[ends[inside]]
            for a, b, last, sp in zip(starts.tolist(), ends.tolist(), sent_end.tolist(), after.tolist()):
                form = text[a:b]
                if ruled and (a, b) in ruled:
                    words = ruled[a, b]
                elif whole and (a, b) in whole:
                    words = (form,)
                else:
                    words = expand(form) if expand is not None else (form,)
                sent.append(Token(form, a + offset, b + offset, words, sp))
                if last:
                    yield sent, False
                    sent = []
                elif len(sent) == MAX_SENTENCE_TOKENS:
                    yield sent, True
                    sent = []
        if sent:
            yield sent, False

    def _spans(self, cps: np.ndarray, space: np.ndarray, rl: np.ndarray = F.NO_RULES,
               keep: list[tuple[int, int]] | tuple = ()):
        """``(start, token starts, token ends, sentence ends)`` for each window of the text.

        Time and memory stay linear in the text and bounded per step: a text longer than
        ``WINDOW`` characters is labelled a window at a time. Of each window, only what comes
        before its last boundary outside the final ``OVERLAP`` characters is kept (the last
        sentence end there, else the last token end or separating space); the rest is labelled
        again at the start of the next window, with what follows it in view. A window with no
        boundary at all (``WINDOW`` characters of one token) is cut where the overlap starts."""
        n = len(cps)
        pos = 0
        while pos < n:
            end = min(n, pos + WINDOW)
            labels = self._labels(cps[pos:end], pos, rl[pos:end])
            if keep:
                keep_whole(labels, keep, pos)
            if end == n:
                yield (pos, *token_spans(labels, space[pos:end]))
                return
            cut, sentence = _cut(labels, end - pos - OVERLAP)
            starts, ends, sent_end = token_spans(labels[:cut], space[pos:pos + cut])
            if len(sent_end):
                sent_end[-1] = sentence   # token_spans ends its text with a sentence
            yield pos, starts, ends, sent_end
            pos += cut

    def tokens(self, text: str, offset: int = 0) -> Iterator[Token]:
        for sent, _ in self._split(text, offset):
            yield from sent

    def sentences(self, text: str, offset: int = 0) -> Iterator[tuple[list[Token], bool]]:
        return self._split(text, offset)


def jackknifed_tables(paragraphs, folds: int = 5) -> list[np.ndarray]:
    """For each paragraph, the known-token table of the tokens of the other folds (paragraph
    k is in fold k % folds): training then sees the dictionary features as they are on new
    text, where some words are unknown, instead of a dictionary that knows every word."""
    from collections import Counter

    counts = [Counter() for _ in range(folds)]
    for k, p in enumerate(paragraphs):
        counts[k % folds].update(p.tokens)
    tables = []
    for f in range(folds):
        others = set()
        for g in range(folds):
            if g != f:
                others.update(counts[g])
        tables.append(F.known_table(sorted(others)))
    return [tables[k % folds] for k in range(len(paragraphs))]


def encode(paragraphs, known, bits: int, feats: int = 0):
    """An Encoded corpus (``structkit.sequence.features``) of the paragraphs' characters;
    ``known`` one table for all, or a list with one per paragraph."""

    lengths = [len(p.text) for p in paragraphs]
    total = sum(lengths)
    nf = F.n_features(feats)
    out = np.empty((total, nf), dtype=np.int32)
    pos = 0
    tab = F.tables()
    for k, p in enumerate(paragraphs):
        n = len(p.text)
        table = known[k] if isinstance(known, list) else known
        F.char_features(F.code_points(p.text), tab, table, bits, feats, F.rule_labels(p.text, feats),
                        out[pos:pos + n])
        pos += n
    offsets = np.zeros(len(paragraphs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    indptr = np.arange(total + 1, dtype=np.int64) * nf
    y = np.fromiter((l for p in paragraphs for l in p.labels), dtype=np.int32, count=total)
    return Encoded(indptr, out.reshape(-1), offsets, y)
