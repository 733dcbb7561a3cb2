"""What ``structkit dump`` shows of a model, for every kind of model file.

* Taggers: labels, the strongest transitions, history weights H (OLaRank greedy models) and
  the strongest features by name with the labels they favour most.
* Parsers (arc-standard with lookahead or greedy, and the labelled beam parser): per action,
  the features with the largest weights for it (:mod:`structkit.parse.dump`).
* Rerankers: the strongest features by name.
"""
from __future__ import annotations

import zipfile

import numpy as np

from structkit.parse.dump import parser_lines


def model_task(path: str) -> str | None:
    """The task a model file's header names, read without loading its arrays (None when the
    file cannot be read that way: the model's own loader then says what is wrong)."""
    from structkit.model import _HEADER, _npy_header, _parse_header

    try:
        with open(path, "rb") as fh, zipfile.ZipFile(fh) as z:
            with z.open(_HEADER + ".npy") as f:
                dtype, shape, _, _ = _npy_header(f, _HEADER)
                if dtype != np.uint8 or len(shape) != 1 or shape[0] > 64 << 20:
                    return None
                header = _parse_header(f.read(shape[0]))
        task = header.get("task") if isinstance(header, dict) else None
        return task if isinstance(task, str) else None
    except Exception:  # noqa: BLE001 -- any failure: leave the diagnosis to the loader
        return None


def dump_lines(path: str, top: int, pattern: str | None) -> list[str]:
    """The lines ``structkit dump`` prints for the model file ``path``."""
    task = model_task(path)
    if task == "parse":
        from structkit.parse.parser import DependencyParser

        return parser_lines(DependencyParser.load(path, command="dump"), top, pattern)
    if task == "rerank":
        from structkit.rerank.task import Reranker

        return reranker_lines(Reranker.load(path, command="dump"), top, pattern)
    from structkit.sequence.task import SequenceTagger

    return tagger_lines(SequenceTagger.load(path, command="dump"), top, pattern)


def _printable(s: str) -> str:
    from structkit.cli import _printable as p

    return p(s)


# ---- taggers ----------------------------------------------------------------------------------
def tagger_lines(tg, top: int, pattern: str | None) -> list[str]:
    c = tg.config
    out = []
    shown_labels = [_printable(x) for x in tg.labels]  # training data may hold escape sequences
    search = ""
    if c.spec.decoder == "lookahead":
        search = (f", lookahead depth {c.depth}, {'right to left' if c.direction == 'rtl' else 'left to right'}"
                  f"{', label trigrams' if c.label_order == 2 else ''}")
    elif c.spec.decoder == "greedy-history":
        search = f", greedy, history order {c.order}"
    out.append(f"task {c.task}, algo {c.algo}{search}, {len(tg.labels)} labels, {tg.features.n_features} "
               f"features, templates: {' '.join(_printable(t.text) for t in tg.features.templates)}")
    out.append("labels: " + " ".join(shown_labels))
    names = shown_labels + ["<S/E>"]
    T = tg.weights.T
    if np.any(T):
        out.append("\nstrongest transitions (previous -> next, <S/E> = sentence boundary):")
        for k in np.argsort(-np.abs(T), axis=None)[:top]:
            a, b = divmod(int(k), T.shape[1])
            if T[a, b] != 0:
                out.append(f"  {names[a]:>12} -> {names[b]:<12} {T[a, b]:+.3f}")
    T2 = tg.weights.T2
    if T2.shape[0] > 1 and np.any(T2):
        out.append("\nstrongest label trigrams (two back, previous -> next, in decoding order):")
        for k in np.argsort(-np.abs(T2), axis=None)[:top]:
            a, b, y = np.unravel_index(int(k), T2.shape)
            if T2[a, b, y] != 0:
                out.append(f"  {names[a]:>12} {names[b]:<12} -> {names[y]:<12} {T2[a, b, y]:+.3f}")
    H = tg.weights.H
    if H.size and np.any(H):  # greedy order-K history models (OLaRank greedy): H[s, a, b]
        out.append(f"\nstrongest history weights (the label s tokens back -> this label; order {H.shape[0]}):")
        for k in np.argsort(-np.abs(H), axis=None)[:top]:
            s_, a, b = np.unravel_index(int(k), H.shape)
            if H[s_, a, b] != 0:
                out.append(f"  {s_ + 1} back {names[a]:>12} -> {names[b]:<12} {H[s_, a, b]:+.3f}")
    W = tg.weights.W
    strength = np.abs(W).max(axis=1) if W.size else np.zeros(0)
    ids = np.argsort(-strength, kind="stable")
    shown = 0
    out.append(f"\nstrongest features{' matching ' + repr(pattern) if pattern else ''} "
               "(the labels they favour most):")
    for fid in ids:
        if strength[fid] == 0 or shown >= top:
            break
        name = tg.features.feature_name(int(fid))
        if pattern and pattern not in name:
            continue
        best = np.argsort(-np.abs(W[fid]))[:3]
        parts = ", ".join(f"{shown_labels[j]} {W[fid, j]:+.3f}" for j in best if W[fid, j] != 0)
        out.append(f"  {_printable(name)}: {parts}")
        shown += 1
    if shown == 0:
        out.append("  (none)")
    return out


# ---- rerankers --------------------------------------------------------------------------------
def reranker_lines(rr, top: int, pattern: str | None) -> list[str]:
    c = rr.config
    items = rr.features.names.words
    w = rr.weights
    lines = [f"task rerank, algo {c.algo}, {len(items)} features, families: {' '.join(c.features)}",
             f"\nstrongest features{' matching ' + repr(pattern) if pattern else ''} "
             "(positive: preferred hypotheses have them):"]
    shown = 0
    for i in np.argsort(-np.abs(w), kind="stable"):
        if w[i] == 0 or shown >= top:
            break
        if pattern and pattern not in items[i]:
            continue
        lines.append(f"  {_printable(items[i])} {w[i]:+.3f}")
        shown += 1
    if shown == 0:
        lines.append("  (none)")
    return lines
