"""Margins over a candidate-tag lattice (``structkit.lattice.kernels``' model: hashed emissions of
each candidate, first-order transitions, no end score): for every token, the max-marginal of each
of its candidates (the best sequence's score with that candidate there), from which ``--scores``
takes the margin (the predicted tag's max-marginal minus the best other's) and ``explain`` the
runner-up. The kernels score with ``kernels.emissions`` and ``kernels._trans``, the functions
Viterbi uses, so the best max-marginal is the Viterbi score."""
from __future__ import annotations

import numpy as np

from structkit.jit import njit
from structkit.lattice import kernels as K


@njit
def max_marginals(W, feats, a, b, cand_ptr, cands, parts_ptr, parts):
    """The max-marginal of every candidate of tokens a..b-1 (indexed like ``cands`` from
    ``cand_ptr[a]``)."""
    mask = W.shape[0] - 1
    emit = K.emissions(W, mask, feats, a, b, cand_ptr, cands, parts_ptr, parts)
    base = cand_ptr[a]
    n = cand_ptr[b] - base
    alpha = np.empty(n)
    beta = np.zeros(n)
    for j in range(cand_ptr[a], cand_ptr[a + 1]):
        alpha[j - base] = emit[j - base] + K._trans(W, mask, K.START, cands[j], parts_ptr, parts)
    for i in range(a + 1, b):
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            best = -np.inf
            for q in range(cand_ptr[i - 1], cand_ptr[i]):
                s = alpha[q - base] + K._trans(W, mask, cands[q], cands[j], parts_ptr, parts)
                if s > best:
                    best = s
            alpha[j - base] = best + emit[j - base]
    for i in range(b - 2, a - 1, -1):
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            best = -np.inf
            for q in range(cand_ptr[i + 1], cand_ptr[i + 2]):
                s = K._trans(W, mask, cands[j], cands[q], parts_ptr, parts) + emit[q - base] + beta[q - base]
                if s > best:
                    best = s
            beta[j - base] = best
    return alpha + beta


@njit
def candidate_margin(scores, cand_ptr, cands, i, p):
    """Token i's margin from its candidates' scores (``scores`` indexed like ``cands``): the
    score of its predicted tag p minus the best of its other candidates' (inf when it has no
    other), and that best other tag (-1: none)."""
    mine, other, arg = -np.inf, -np.inf, -1
    for j in range(cand_ptr[i], cand_ptr[i + 1]):
        v = scores[j]
        if cands[j] == p:
            mine = v
        elif v > other:
            other, arg = v, cands[j]
    return (mine - other if arg >= 0 else np.inf), arg


@njit
def lattice_margins(W, feats, sent_ptr, cand_ptr, cands, parts_ptr, parts, pred, margin, runner):
    """Per token: ``margin`` the max-marginal of its predicted tag ``pred[i]`` minus the best of
    its other candidates' (inf when it has no other), ``runner`` that best other tag (-1: none)."""
    mm = np.empty(cands.shape[0])
    corpus_max_marginals(W, feats, sent_ptr, cand_ptr, cands, parts_ptr, parts, mm)
    for s in range(sent_ptr.shape[0] - 1):
        for i in range(sent_ptr[s], sent_ptr[s + 1]):
            margin[i], runner[i] = candidate_margin(mm, cand_ptr, cands, i, pred[i])


@njit
def class_margins(W, feats, cand_ptr, cands, cand_feats, pred, margin, runner):
    """The lemmatizer's (a classifier over each token's candidate rules, scored as
    ``kernels.best_candidate`` scores them): per token the predicted rule's score minus the best
    other candidate's (inf: none), and that runner-up (-1: none)."""
    mask = W.shape[0] - 1
    scores = np.empty(cands.shape[0])
    for i in range(feats.shape[0]):
        for j in range(cand_ptr[i], cand_ptr[i + 1]):
            s = K._class_score(W, mask, feats, i, cands[j])
            if cand_feats[j] != 0:
                s += W[K.slot(cand_feats[j], -1, mask)]
            scores[j] = s
        margin[i], runner[i] = candidate_margin(scores, cand_ptr, cands, i, pred[i])


@njit
def corpus_max_marginals(W, feats, sent_ptr, cand_ptr, cands, parts_ptr, parts, out):
    """:func:`max_marginals` of every sentence, into ``out`` (indexed like ``cands``)."""
    for s in range(sent_ptr.shape[0] - 1):
        a, b = sent_ptr[s], sent_ptr[s + 1]
        if b <= a:
            continue
        mm = max_marginals(W, feats, a, b, cand_ptr, cands, parts_ptr, parts)
        base = cand_ptr[a]
        for j in range(mm.shape[0]):
            out[base + j] = mm[j]
