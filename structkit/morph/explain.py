"""Margins (``structkit morph --scores``) and explanations (``structkit explain``) of a morph
model's analyses, for each predicted part: UPOS, XPOS and FEATS of the joint tag, and the lemma.

A part's margin is between max-marginals over the sentence's candidate lattice
(``structkit.lattice.margins``): the best tag sequence whose tag at the word has the predicted
value of the part, minus the best whose tag there has another value (inf when every candidate
agrees). The lemma's is the lemmatizer's: the chosen edit rule's score minus the best other
candidate rule's. An explanation names the runner-up (the tag of the best sequence with another
value of the part; the best other rule) and the features that push each way: a feature column's
weights with the chosen tag's parts minus with the runner-up's, named by the template and the
value it read; what is left of the margin is the tags' transitions and the other words' tags.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from structkit.explanation import Push, TokenExplanation
from structkit.lattice import kernels as K
from structkit.lattice.features import cluster_templates
from structkit.lattice.margins import class_margins, corpus_max_marginals
from structkit.morph.names import feature_names, lemma_feature_names
from structkit.morph.task import KNOWN_LEMMA, NOT_IN_VECTORS, VECTORS_LEMMA

# what a lemma candidate's own feature value (``morph.task._lemma_feat``) says, for the pushes
LEMMA_VALUE_NAMES = {KNOWN_LEMMA: "makes a lemma seen in training",
                     VECTORS_LEMMA: "makes a word of the vectors file",
                     NOT_IN_VECTORS: "makes no word of the vectors file"}

PARTS = ("lemma", "upos", "xpos", "feats")          # in CoNLL-U column order (LEMMA is column 3)
MISC_KEYS = {"lemma": "LemmaMargin", "upos": "UPOSMargin", "xpos": "XPOSMargin", "feats": "FeatsMargin"}
LABEL = {"lemma": "LEMMA", "upos": "UPOS", "xpos": "XPOS", "feats": "FEATS"}


def predicted_parts(model) -> tuple[str, ...]:
    """The parts the model predicts: those not '_' throughout its training data (a treebank
    without XPOS or FEATS, or without lemmas, leaves that column of the input as it is)."""
    t = model.tables
    got = []
    if t.lexicon.lemmas - {"_"}:
        got.append("lemma")
    for k, part in enumerate(("upos", "xpos", "feats")):
        if any(tag.split("\t")[k] != "_" for tag in t.tags):
            got.append(part)
    return tuple(got)


@dataclass
class Scored:
    """A block's analyses with the ids and margins behind them."""
    tags: np.ndarray
    rules: np.ndarray
    enc: object
    margins: dict          # part -> per-token margin (float array)
    runner: dict           # part -> per-token runner-up (tag id or rule id; -1: none)
    mm: np.ndarray         # max-marginal of each tag candidate (indexed like enc.cands)


def _part_values(model) -> dict[str, np.ndarray]:
    """Per part, each tag's value id (for comparing tags by one part)."""
    out = {}
    for k, part in enumerate(("upos", "xpos", "feats")):
        ids: dict[str, int] = {}
        out[part] = np.array([ids.setdefault(tag.split("\t")[k], len(ids)) for tag in model.tables.tags],
                             dtype=np.int64)
    return out


def lemma_inputs(model, tags, enc):
    return model.tables.lemma_features(enc.feats, tags)   # (with vectors: the cluster columns too)


def score(model, sentences: list[list[str]]) -> Scored:
    """Analyse ``sentences`` (lists of forms) with every part's margin and runner-up."""

    tags, rules, enc = model.predict_ids(sentences)
    t = model.tables
    n = tags.size
    mm = np.zeros(enc.cands.size)
    if n:
        corpus_max_marginals(model.W_tag, enc.feats, enc.sent_ptr, enc.cand_ptr, enc.cands, t.parts_ptr,
                             t.parts, mm)
    tok = np.repeat(np.arange(n), np.diff(enc.cand_ptr))
    margins, runner = {}, {}
    for part, values in _part_values(model).items():
        cand_v = values[enc.cands]
        same = cand_v == values[tags][tok]
        mine = np.full(n, -np.inf)
        other = np.full(n, -np.inf)
        np.maximum.at(mine, tok[same], mm[same])
        np.maximum.at(other, tok[~same], mm[~same])
        margins[part] = np.where(np.isfinite(other), mine - other, np.inf)
        best = np.full(n, -1, dtype=np.int64)
        # the runner-up: the other-valued candidate whose max-marginal is the token's best other
        hit = ~same & (mm == other[tok])
        best[tok[hit][::-1]] = enc.cands[hit][::-1]      # the first such candidate of each token
        runner[part] = best
    m = np.zeros(n)
    r = np.full(n, -1, dtype=np.int64)
    if n:
        class_margins(model.W_lem, lemma_inputs(model, tags, enc), enc.rule_ptr, enc.rule_cands, enc.rule_feats,
                      rules, m, r)
    margins["lemma"], runner["lemma"] = m, r
    return Scored(tags, rules, enc, margins, runner, mm)


def margin_text(m: float) -> str:
    return "inf" if not np.isfinite(m) else f"{m:.3f}"


# ---- feature names ----------------------------------------------------------------------------------
def tag_feature_names(model, words: list[str], i: int, known: bool, cands: list[int]) -> list[str]:
    """The names of the tagger's feature columns at word ``i`` of a sentence (the layout of
    ``features.tag_features``; checked against the values in tests/morph)."""
    t = model.tables
    tags = "/".join(t.tags[c].split("\t")[0] for c in cands[:3])

    return feature_names(words, i, known, tags + ("/..." if len(cands) > 3 else "")) + cluster_names(t.clusters, words, i)


def cluster_names(clusters, words: list[str], i: int) -> list[str]:
    """The names of the tagger's word-cluster columns (``features.cluster_features``; none
    without vectors): each template with the cluster id it read ('-' for none)."""
    if clusters is None:
        return []

    def ids(d):
        j = i + d
        if not 0 <= j < len(words):
            return None
        return clusters.lookup(words[j])

    levels, out = clusters.levels, []
    for name in cluster_templates(levels):
        level = int(name[1:].split("+")[0].split("-")[0])
        d = int(name[len(f"c{level}"):] or 0)
        got = ids(d)
        out.append(f"{name}={'-' if got is None else got[levels.index(level)]}")
    return out


def _named(names: list[str], n: int) -> list[str]:
    return [names[k] if k < len(names) else f"feature {k}" for k in range(n)]


# ---- explanations ----------------------------------------------------------------------------------
def explanations(model, words: list[str], only: int | None = None):
    """``structkit.explanation.TokenExplanation`` s for each word and each predicted part
    (the word shown as ``form [PART]``), in word order."""

    if not words:
        return
    s = score(model, [words])
    t, enc = model.tables, s.enc
    parts = predicted_parts(model)
    tag_parts = [p for p in ("upos", "xpos", "feats") if p in parts]
    mask_t = model.W_tag.shape[0] - 1
    mask_l = model.W_lem.shape[0] - 1
    lf = lemma_inputs(model, s.tags, enc) if "lemma" in parts else None
    col = {"upos": 0, "xpos": 1, "feats": 2}
    for i, form in enumerate(words):
        if only is not None and i + 1 != only:
            continue
        tag = int(s.tags[i])
        cands = enc.cands[enc.cand_ptr[i]:enc.cand_ptr[i + 1]].tolist()
        for part in tag_parts:
            value = t.tags[tag].split("\t")[col[part]]
            r = int(s.runner[part][i])
            if r < 0:
                yield TokenExplanation(i + 1, f"{form} [{LABEL[part]}]", value, None, float("inf"), [])
                continue
            names = _named(tag_feature_names(model, words, i, bool(enc.known[i]), cands), enc.feats.shape[1])
            pushes = []
            for k in range(enc.feats.shape[1]):
                f = enc.feats[i, k]
                w = sum(float(model.W_tag[K.slot(f, int(p), mask_t)])
                        for p in t.parts[t.parts_ptr[tag]:t.parts_ptr[tag + 1]])
                w -= sum(float(model.W_tag[K.slot(f, int(p), mask_t)])
                         for p in t.parts[t.parts_ptr[r]:t.parts_ptr[r + 1]])
                if w:
                    pushes.append(Push(names[k], w))
            margin = float(s.margins[part][i])
            rest = margin - sum(p.weight for p in pushes)
            if abs(rest) > 1e-9:
                pushes.append(Push("transitions and the other words' tags", rest))
            pushes.sort(key=lambda p: -abs(p.weight))
            runner = t.tags[r].split("\t")[col[part]]
            yield TokenExplanation(i + 1, f"{form} [{LABEL[part]}]", value, runner, margin, pushes)
        if lf is None:
            continue
        rule = int(s.rules[i])
        lemma = t.lemma(rule, enc.surfaces[i])
        r = int(s.runner["lemma"][i])
        if r < 0:
            yield TokenExplanation(i + 1, f"{form} [LEMMA]", lemma, None, float("inf"), [])
            continue

        names = _named(lemma_feature_names(model, form, t.tags[tag]), lf.shape[1])
        pushes = []
        for k in range(lf.shape[1]):
            w = float(model.W_lem[K.slot(lf[i, k], rule, mask_l)]) - float(model.W_lem[K.slot(lf[i, k], r, mask_l)])
            if w:
                pushes.append(Push(names[k], w))
        rp = enc.rule_cands[enc.rule_ptr[i]:enc.rule_ptr[i + 1]].tolist()
        rf = enc.rule_feats[enc.rule_ptr[i]:enc.rule_ptr[i + 1]].tolist()
        own = {c: f for c, f in zip(rp, rf)}
        by_value: dict[int, float] = {}
        for c in (rule, r):
            f = own.get(c, 0)
            if f:
                by_value[f] = by_value.get(f, 0.0) + (1 if c == rule else -1) * float(model.W_lem[K.slot(f, -1, mask_l)])
        for f, w in by_value.items():
            if w:
                pushes.append(Push(LEMMA_VALUE_NAMES[f], w))
        pushes.sort(key=lambda p: -abs(p.weight))
        yield TokenExplanation(i + 1, f"{form} [LEMMA]", lemma, t.lemma(r, enc.surfaces[i]),
                               float(s.margins["lemma"][i]), pushes)
