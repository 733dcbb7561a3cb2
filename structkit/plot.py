"""Learning curves from ``structkit train --metrics-json`` files (``structkit plot``; matplotlib
from the optional extra ``structkit-nlp[plot]``)."""
from __future__ import annotations

import json
import math
import os

from structkit.errors import UserError
from structkit.io.files import atomic_output, open_input

MAX_BYTES = 64 << 20     # a metrics file is a few kB per epoch: anything larger is not one
MAX_SCORE = 1e6          # a score (a percentage, or WER) beyond this is not a score


def _read_capped(path: str) -> str:
    with open_input(path) if path == "-" else open(path, "rb") as f:  # '-': standard input
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UserError(f"not a metrics file: larger than {MAX_BYTES >> 20} MB", path)
    return data.decode("utf-8")


def _score(v, path: str, k: int, what: str) -> float | None:
    """A per-epoch number as a float; None where absent; a one-line error where it is not a
    finite number of sensible size (NaN, infinity, 1e308: matplotlib cannot place them)."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UserError(f"not a metrics file: epoch {k} has {what} {str(v)[:40]!r}, not a number", path)
    if not math.isfinite(v) or abs(v) > MAX_SCORE:
        raise UserError(f"not a metrics file: epoch {k} has {what} {v!r}, not a score", path)
    return float(v)


def _plain(text: str) -> str:
    """Text matplotlib shows as written: a ``$`` would start mathtext, which can fail to parse."""
    return text.replace("$", r"\$")

# the dev score a curve shows, by preference (percentages; WER is lower-better)
DEV_KEYS = ("f1", "las", "uas", "accuracy", "wer")


def read_curve(path: str, metric: str | None = None) -> dict:
    """One run's curve: epochs, train accuracy (the errors of each online pass, where the
    learner reports them) and the dev score per epoch."""
    try:
        data = json.loads(_read_capped(path))
    except FileNotFoundError:
        raise UserError("no such file", path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read: {getattr(e, 'strerror', None) or e}", path) from None
    except (json.JSONDecodeError, RecursionError) as e:
        raise UserError(f"not a metrics file (JSON: {e})", path) from None
    epochs = data.get("epochs") if isinstance(data, dict) else None
    if not isinstance(epochs, list) or not epochs or not all(isinstance(e, dict) for e in epochs):
        raise UserError("not a metrics file: no per-epoch list (write one with "
                        "`structkit train ... --metrics-json FILE`)", path)
    xs, train, dev = [], [], []
    key = metric
    for k, e in enumerate(epochs, 1):
        x = e.get("epoch", k)
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 10 ** 9:
            raise UserError(f"not a metrics file: epoch {k} is numbered {str(x)[:40]!r}", path)
        xs.append(x)
        train.append(_score(e.get("train_accuracy"), path, k, "train_accuracy"))
        d = e.get("dev")
        if isinstance(d, dict):
            if key is None:
                key = next((c for c in DEV_KEYS if isinstance(d.get(c), (int, float))), None)
            dev.append(_score(d.get(key), path, k, f"dev {key}") if key is not None else None)
        else:
            dev.append(None)
    if metric is not None and all(v is None for v in dev):
        raise UserError(f"no dev score {metric!r} in this file", path)
    config = data.get("config", {}) if isinstance(data.get("config"), dict) else {}
    inner = config.get("config", {}) if isinstance(config.get("config"), dict) else {}
    label = " ".join(str(x) for x in (inner.get("task"), inner.get("algo")) if x) or os.path.basename(path)
    return {"path": path, "label": label, "epochs": xs, "train": train, "dev": dev, "metric": key}


def plot(paths: list[str], out: str, metric: str | None = None, title: str | None = None) -> list[dict]:
    """Draw every run's train (dashed) and dev (solid) curve on one figure, written to ``out``
    (the format from its suffix: .png, .svg, .pdf)."""
    if not paths:
        raise UserError("give one or more metrics files (structkit train --metrics-json FILE)")
    curves = [read_curve(p, metric) for p in paths]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise UserError("structkit plot needs matplotlib: pip install 'structkit-nlp[plot]'") from None
    names = [c["label"] for c in curves]
    if len(set(names)) < len(names):  # the same task and learner: tell the runs apart by file
        for c in curves:
            c["label"] = f"{c['label']} ({os.path.basename(c['path'])})"
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for k, c in enumerate(curves):
        colour = f"C{k % 10}"
        pts = [(x, y) for x, y in zip(c["epochs"], c["dev"]) if y is not None]
        if pts:
            ax.plot(*zip(*pts), "-o", color=colour, markersize=3, label=_plain(f"{c['label']}: dev {c['metric']}"))
        pts = [(x, y) for x, y in zip(c["epochs"], c["train"]) if y is not None]
        if pts:
            ax.plot(*zip(*pts), "--", color=colour, alpha=0.6, label=_plain(f"{c['label']}: train accuracy"))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("score (%)")
    if title:
        ax.set_title(_plain(title))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()

    ext = os.path.splitext(out)[1].lower().lstrip(".") or "png"
    with atomic_output(out, "wb") as f:
        fig.savefig(f, format=ext, dpi=120)
    plt.close(fig)
    return curves
