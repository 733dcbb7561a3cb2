"""Large label sets in bounded memory (issue 28): `structkit train --task pos --label-column
lemma` (thousands of labels, whose dense features x labels table would take tens of GB) and
`--label-column feats.Number` on UD treebanks: results/large-labels.json and .md.

    python scripts/large_labels.py [--only NAME] [--out results/large-labels]

For each treebank (train with dev for epoch selection, as ``scripts/morph_experiments.py`` runs
them) and each label column, ``structkit train --task pos --label-column COL`` with its defaults
runs as a process of its own (its wall and CPU seconds and peak RSS from ``os.wait4``), then
``structkit tag`` fills that column of the test file (peak RSS likewise) and ``structkit eval
--task pos --label-column COL`` scores it. Recorded: accuracy, the label count, how the model
holds its weights (dense, or the hashed candidate lattice of ``structkit.sequence.lattice``, with
the size the dense table would have taken), the memory and times; and, for comparison, the
Lemmas of ``--task morph`` on the same files where results/morph.json has them. The times are
with a warm numba cache (``NUMBA_CACHE``, recorded in the JSON and said in the report): each run
is preceded by an untimed 1-epoch training on the same files with the same column (so the same
weights, dense or lattice, and the same kernels), and its tagging.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, measured, numba_cache  # noqa: E402
from tokenize_peer import _path  # noqa: E402

TREEBANKS = {
    "ud-english-partut": ("en_partut-ud-train", "en_partut-ud-dev", "en_partut-ud-test"),
    "ud-italian-partut": ("it_partut-ud-train", "it_partut-ud-dev", "it_partut-ud-test"),
    "ud-turkish-imst": ("tr_imst-ud-train", "tr_imst-ud-dev", "tr_imst-ud-test"),
}
COLUMNS = ("lemma", "feats.Number")
LIMIT_MB = 1024
NUMBA_CACHE = numba_cache("warm", "the kernels compiled by an untimed 1-epoch training on the same files with "
                                  "the same column, and its tagging, first")



def run_one(name: str, column: str, tmp: str) -> dict:
    import structkit

    train, dev, test = (_path(name, s) for s in TREEBANKS[name])
    model = os.path.join(tmp, f"{name}-{column}.model")
    pred = os.path.join(tmp, f"{name}-{column}.conllu")
    warm = os.path.join(tmp, "warm.model")   # untimed: the numba cache warm (NUMBA_CACHE)
    measured(["train", "--task", "pos", "--label-column", column, "--train", train, "--dev", dev, "--epochs", "1",
              "--model", warm, "-q"])
    measured(["tag", "-m", warm, test, "-o", pred])
    t = measured(["train", "--task", "pos", "--label-column", column, "--train", train, "--dev", dev,
                  "--model", model, "-q"])
    g = measured(["tag", "-m", model, test, "-o", pred])
    e = measured(["eval", "--task", "pos", "--label-column", column, test, pred, "--json"])
    info = structkit.Tagger.load(model).info
    lattice = info.get("weights") == "hashed candidate lattice"
    return {"treebank": name, "column": column, "accuracy": round(json.loads(e["stdout"])["accuracy"], 2),
            "labels": info["n_labels"] if lattice else len(structkit.Tagger.load(model).labels),
            "weights": "hashed lattice" if lattice else "dense",
            "classes": info.get("classes"), "n_classes": info.get("n_classes"),
            "dense_mb_avoided": info.get("dense_mb"),
            "train_wall_seconds": t["wall_seconds"], "train_cpu_seconds": t["cpu_seconds"],
            "train_peak_mb": t["peak_mb"], "tag_peak_mb": g["peak_mb"], "tag_cpu_seconds": g["cpu_seconds"],
            "selected_epoch": info.get("selected_epoch")}


def report(rows: list[dict], meta: dict) -> str:
    lines = ["# Large label sets in bounded memory", "",
             "`structkit train --task pos --label-column COL` with its defaults (dev for epoch selection), "
             "`structkit tag` on the test file (gold tokens), scored by `structkit eval --task pos "
             "--label-column COL`. Peak RSS of each process (`os.wait4`); the limit is "
             f"{LIMIT_MB} MB. Weights: dense, or (when the dense features x labels table would be over the "
             "1 GB weight budget, whose size is shown) the hashed candidate lattice of "
             "`structkit.sequence.lattice`. Written by `python scripts/large_labels.py` "
             f"(commit {meta.get('commit', '?')}, {meta.get('started', '')}). Train CPU s: "
             f"{meta['numba_cache']['words']}; load average before the run {meta['loadavg_before']}.", "",
             "| treebank | column | labels | weights | dense table avoided (MB) | accuracy | train peak MB | "
             "tag peak MB | train CPU s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        how = r["weights"] + (f" ({r['n_classes']} {r['classes']})" if r["classes"] else "")
        lines.append(f"| {r['treebank']} | {r['column']} | {r['labels']} | {how} | "
                     f"{r['dense_mb_avoided'] if r['dense_mb_avoided'] is not None else '-'} | {r['accuracy']:.2f} | "
                     f"{r['train_peak_mb']:.0f} | {r['tag_peak_mb']:.0f} | {r['train_cpu_seconds']:.1f} |")
    over = [r for r in rows if max(r["train_peak_mb"], r["tag_peak_mb"]) > LIMIT_MB]
    lines += ["", "Every run within the limit." if not over else
              "Over the limit: " + ", ".join(f"{r['treebank']} {r['column']}" for r in over)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", choices=list(TREEBANKS))
    ap.add_argument("--out", default=str(ROOT / "results" / "large-labels"))
    args = ap.parse_args()
    meta = machine() | {"started": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "numba_cache": NUMBA_CACHE,
                        "loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or TREEBANKS:
            for column in COLUMNS:
                r = run_one(name, column, tmp)
                print(json.dumps(r), flush=True)
                rows.append(r)
    dump_json({"machine": meta, "runs": rows}, Path(args.out + ".json"))
    Path(args.out + ".md").write_text(report(rows, meta))


if __name__ == "__main__":
    main()
