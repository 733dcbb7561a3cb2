"""Numba kernels of the morphological tagger and the lemmatizer over hashed weights.

A weight is ``W[slot(f, c)]``, the slot a 64-bit hash of a feature value ``f`` (uint64, made
by ``structkit.lattice.features``) and a class id ``c``, masked to the table's size. Each token
has a fixed number of feature values (a row of ``feats``) and a list of candidate classes
(CSR: ``cand_ptr``, ``cands``); nothing is scored outside a token's candidates.

Tagger: a tag ``t`` scores each feature value with each of its parts (the full tag, its UPOS,
its XPOS, each of its FEATS; CSR ``parts_ptr``/``parts``, the full tag first, UPOS second), and
a pair of consecutive tags scores the pair of full tags and the previous UPOS with each part
of the tag but the full one (its UPOS, XPOS and each feature: agreement; the transitions, hashed
in the same table). First-order Viterbi over the candidate lattice finds the best tag
sequence of a sentence. Lemmatizer: each token independently chooses among its candidate rules.
Both learn by the averaged perceptron: ``W`` the weights, ``U`` the sum of ``c * update``,
``c[0]`` the update counter, the average ``W - U / c``.
"""
from __future__ import annotations

import numpy as np

from structkit.jit import njit

TRANS_FULL = 0x7F4A7C159E3779B9    # the feature value of "previous full tag" (mixed with its id)
TRANS_UPOS = 0x2545F4914F6CDD1D    # of "previous UPOS"
START = -1                         # the class before the first token


@njit
def slot(f, c, mask):
    """The weight slot of feature value ``f`` with class ``c`` (splitmix64 of their mix)."""
    x = (np.uint64(f) ^ (np.uint64(c + 2) * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(29)
    return np.int64(x & np.uint64(mask))


@njit
def _trans(W, mask, prev, t, parts_ptr, parts):
    """The score of tag ``t`` after tag ``prev`` (START before the first token)."""
    if prev < 0:
        pf, pu = np.int64(-1), np.int64(-1)
    else:
        pf, pu = parts[parts_ptr[prev]], parts[parts_ptr[prev] + 1]
    s = W[slot(np.uint64(TRANS_FULL) ^ np.uint64(pf + 7), parts[parts_ptr[t]], mask)]
    fu = np.uint64(TRANS_UPOS) ^ np.uint64(pu + 7)
    for p in range(parts_ptr[t] + 1, parts_ptr[t + 1]):   # the previous UPOS with each part but the full tag
        s += W[slot(fu, parts[p], mask)]
    return s


@njit
def emissions(W, mask, feats, a, b, cand_ptr, cands, parts_ptr, parts):
    """The emission score of every candidate of tokens a..b-1 (indexed like ``cands``, from
    ``cand_ptr[a]``). Tag t's at token i is the sum, over its feature values k and then its
    parts p, of ``W[slot(feats[i, k], parts[p])]``; the sums run in that order, but each weight
    of a (feature value, part) pair is read once per token, as its candidates share parts (a
    UPOS, a feature like Case=Nom: a Turkish token's 20 candidates have about 180 parts, far
    fewer of them distinct)."""
    base = cand_ptr[a]
    out = np.empty(cand_ptr[b] - base)
    nf = feats.shape[1]
    width = 0   # the most parts the candidates of one token have
    for i in range(a, b):
        n = 0
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            n += parts_ptr[cands[j] + 1] - parts_ptr[cands[j]]
        width = max(width, n)
    col = np.full(np.max(parts) + 1 if parts.shape[0] else 1, -1, dtype=np.int64)  # part -> its column
    distinct = np.empty(width, dtype=np.int64)
    table = np.empty((nf, width))   # table[k, u]: the weight of feature value k with part distinct[u]
    for i in range(a, b):
        nu = 0
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            for p in range(parts_ptr[cands[j]], parts_ptr[cands[j] + 1]):
                q = parts[p]
                if col[q] < 0:
                    col[q] = nu
                    distinct[nu] = q
                    nu += 1
        for k in range(nf):
            f = feats[i, k]
            for u in range(nu):
                table[k, u] = W[slot(f, distinct[u], mask)]
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            t = cands[j]
            s = 0.0
            for k in range(nf):
                for p in range(parts_ptr[t], parts_ptr[t + 1]):
                    s += table[k, col[parts[p]]]
            out[j - base] = s
        for u in range(nu):
            col[distinct[u]] = -1
    return out


@njit
def viterbi(W, mask, emit, a, b, cand_ptr, cands, parts_ptr, parts):
    """The best tag sequence of tokens a..b-1 (tag ids) given their candidates' emission scores
    ``emit`` (from :func:`emissions`), and its score."""
    base = cand_ptr[a]
    n = cand_ptr[b] - base
    delta = np.empty(n)
    back = np.zeros(n, dtype=np.int64)
    for j in range(cand_ptr[a], cand_ptr[a + 1]):
        delta[j - base] = emit[j - base] + _trans(W, mask, START, cands[j], parts_ptr, parts)
    width = 0   # the most parts the candidates of one token have
    most = 0    # the most candidates a token has
    for i in range(a, b):
        n = 0
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            n += parts_ptr[cands[j] + 1] - parts_ptr[cands[j]]
        width = max(width, n)
        most = max(most, cand_ptr[i + 1] - cand_ptr[i])
    upos = np.empty(most, dtype=np.int64)      # the distinct UPOS of the previous token's candidates
    which = np.empty(most, dtype=np.int64)     # each previous candidate's index in ``upos``
    table = np.empty((most, width))            # table[u, c]: previous UPOS u with part c of the token's candidates
    for i in range(a + 1, b):
        # :func:`_trans` of every (previous, current) pair, summed in the same order, with the
        # weights of the previous UPOS and each part read once per distinct previous UPOS
        nu = 0
        for q in range(cand_ptr[i - 1], cand_ptr[i]):
            pu = parts[parts_ptr[cands[q]] + 1]
            u = 0
            while u < nu and upos[u] != pu:
                u += 1
            if u == nu:
                upos[nu] = pu
                nu += 1
            which[q - cand_ptr[i - 1]] = u
        for u in range(nu):
            fu = np.uint64(TRANS_UPOS) ^ np.uint64(upos[u] + 7)
            c = 0
            for j in range(cand_ptr[i], cand_ptr[i + 1]):
                for p in range(parts_ptr[cands[j]] + 1, parts_ptr[cands[j] + 1]):
                    table[u, c] = W[slot(fu, parts[p], mask)]
                    c += 1
        c0 = 0   # where the current candidate's parts start in the table's rows
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            t = cands[j]
            np_ = parts_ptr[t + 1] - parts_ptr[t] - 1
            best, arg = -np.inf, cand_ptr[i - 1]
            for q in range(cand_ptr[i - 1], cand_ptr[i]):
                pf = parts[parts_ptr[cands[q]]]
                s = W[slot(np.uint64(TRANS_FULL) ^ np.uint64(pf + 7), parts[parts_ptr[t]], mask)]
                u = which[q - cand_ptr[i - 1]]
                for c in range(c0, c0 + np_):
                    s += table[u, c]
                s = delta[q - base] + s
                if s > best:
                    best, arg = s, q
            delta[j - base] = best + emit[j - base]
            back[j - base] = arg
            c0 += np_
    best, arg = -np.inf, cand_ptr[b - 1]
    for j in range(cand_ptr[b - 1], cand_ptr[b]):
        if delta[j - base] > best:
            best, arg = delta[j - base], j
    out = np.empty(b - a, dtype=np.int64)
    for i in range(b - 1, a - 1, -1):
        out[i - a] = cands[arg]
        arg = back[arg - base]
    return out, best


@njit
def _bump(W, U, cnt, k, v):
    W[k] += v
    U[k] += cnt * v


@njit
def _update_tag(W, U, cnt, mask, feats, i, t, v, parts_ptr, parts):
    for k in range(feats.shape[1]):
        f = feats[i, k]
        for p in range(parts_ptr[t], parts_ptr[t + 1]):
            _bump(W, U, cnt, slot(f, parts[p], mask), v)


@njit
def _update_trans(W, U, cnt, mask, prev, t, v, parts_ptr, parts):
    if prev < 0:
        pf, pu = np.int64(-1), np.int64(-1)
    else:
        pf, pu = parts[parts_ptr[prev]], parts[parts_ptr[prev] + 1]
    _bump(W, U, cnt, slot(np.uint64(TRANS_FULL) ^ np.uint64(pf + 7), parts[parts_ptr[t]], mask), v)
    fu = np.uint64(TRANS_UPOS) ^ np.uint64(pu + 7)
    for p in range(parts_ptr[t] + 1, parts_ptr[t + 1]):
        _bump(W, U, cnt, slot(fu, parts[p], mask), v)


@njit
def tag_epoch(W, U, cnt, feats, sent_ptr, order, cand_ptr, cands, parts_ptr, parts, gold, out):
    """One perceptron epoch over the sentences in ``order`` (tag ids ``gold``, which must be
    among each token's candidates): decode, and where the best sequence is wrong add the gold
    sequence's features and subtract the predicted one's. ``out`` gets the predictions; the
    number of updates is returned. ``cnt[0]`` counts the sentences seen (the averaging clock)."""
    mask = W.shape[0] - 1
    updates = 0
    for s in order:
        a, b = sent_ptr[s], sent_ptr[s + 1]
        if b <= a:
            continue
        emit = emissions(W, mask, feats, a, b, cand_ptr, cands, parts_ptr, parts)
        pred, _ = viterbi(W, mask, emit, a, b, cand_ptr, cands, parts_ptr, parts)
        c = cnt[0]
        wrong = False
        for i in range(a, b):
            out[i] = pred[i - a]
            g, p = gold[i], pred[i - a]
            gp = gold[i - 1] if i > a else START
            pp = pred[i - a - 1] if i > a else START
            if g != p:
                wrong = True
                _update_tag(W, U, c, mask, feats, i, g, 1.0, parts_ptr, parts)
                _update_tag(W, U, c, mask, feats, i, p, -1.0, parts_ptr, parts)
            if g != p or gp != pp:
                _update_trans(W, U, c, mask, gp, g, 1.0, parts_ptr, parts)
                _update_trans(W, U, c, mask, pp, p, -1.0, parts_ptr, parts)
        if wrong:
            updates += 1
        cnt[0] += 1
    return updates


@njit
def tag_corpus(W, feats, sent_ptr, cand_ptr, cands, parts_ptr, parts, out):
    """The best tag sequence of every sentence, into ``out``."""
    mask = W.shape[0] - 1
    for s in range(sent_ptr.shape[0] - 1):
        a, b = sent_ptr[s], sent_ptr[s + 1]
        if b <= a:
            continue
        emit = emissions(W, mask, feats, a, b, cand_ptr, cands, parts_ptr, parts)
        pred, _ = viterbi(W, mask, emit, a, b, cand_ptr, cands, parts_ptr, parts)
        for i in range(a, b):
            out[i] = pred[i - a]


@njit
def _class_score(W, mask, feats, i, c):
    s = 0.0
    for k in range(feats.shape[1]):
        s += W[slot(feats[i, k], c, mask)]
    return s


@njit
def best_candidate(W, feats, i, cand_ptr, cands, cand_feats):
    """The index (into ``cands``) of token ``i``'s best candidate class (the first on ties). A
    candidate scores the token's features with its class, plus its own feature value
    ``cand_feats[j]`` (0: none), shared by all classes (what the candidate would produce)."""
    mask = W.shape[0] - 1
    best, arg = -np.inf, cand_ptr[i]
    for j in range(cand_ptr[i], cand_ptr[i + 1]):
        s = _class_score(W, mask, feats, i, cands[j])
        if cand_feats[j] != 0:
            s += W[slot(cand_feats[j], -1, mask)]
        if s > best:
            best, arg = s, j
    return arg


@njit
def class_epoch(W, U, cnt, feats, order, cand_ptr, cands, cand_feats, gold, out):
    """One perceptron epoch of the multiclass classifier over the tokens in ``order`` (the
    lemmatizer: classes are rules; ``gold`` among each token's candidates); the number of
    updates is returned."""
    mask = W.shape[0] - 1
    updates = 0
    for i in order:
        j = best_candidate(W, feats, i, cand_ptr, cands, cand_feats)
        p = cands[j]
        out[i] = p
        g = gold[i]
        if p != g:
            updates += 1
            c = cnt[0]
            for k in range(feats.shape[1]):
                _bump(W, U, c, slot(feats[i, k], g, mask), 1.0)
                _bump(W, U, c, slot(feats[i, k], p, mask), -1.0)
            for q in range(cand_ptr[i], cand_ptr[i + 1]):
                if cands[q] == g and cand_feats[q] != 0:
                    _bump(W, U, c, slot(cand_feats[q], -1, mask), 1.0)
            if cand_feats[j] != 0:
                _bump(W, U, c, slot(cand_feats[j], -1, mask), -1.0)
        cnt[0] += 1
    return updates


@njit
def classify(W, feats, cand_ptr, cands, cand_feats, out):
    """The best candidate class of every token, into ``out``."""
    for i in range(feats.shape[0]):
        out[i] = cands[best_candidate(W, feats, i, cand_ptr, cands, cand_feats)]


@njit
def average(W, U, cnt, out):
    """The averaged weights ``W - U / cnt`` into ``out`` (float32)."""
    c = max(cnt[0], 1)
    for k in range(W.shape[0]):
        out[k] = W[k] - U[k] / c
