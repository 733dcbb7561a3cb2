"""What ``structkit dump`` shows of a tagger: labels, the strongest transitions, history weights H
(OLaRank greedy models) and the strongest features by name with the labels they favour most."""
from __future__ import annotations

import numpy as np

from structkit.io.files import printable as _printable


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
