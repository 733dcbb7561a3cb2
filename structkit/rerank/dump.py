"""What ``structkit dump`` shows of a reranker: the strongest features by name."""
from __future__ import annotations

import numpy as np

from structkit.io.files import printable as _printable


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
