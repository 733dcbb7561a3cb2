"""Run one config end to end through the CLI, as a user would, and record the figures.

    python scripts/run_experiment.py configs/chunk-conll2000-perceptron.toml
    python scripts/run_experiment.py --report-only      # results/sequence.md from the result files

Warms the numba cache on a small slice first (so times are of a warm cache, as the targets
are stated; ``NUMBA_CACHE``, recorded in the JSON and said in results/sequence.md), then
times `structkit train` and tagging of the test file, evaluates with
`structkit eval --json`, and writes results/<name>.json; results/sequence.md is rebuilt from
all result files.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, children_cpu, dump_json, machine, numba_cache, structkit, write_slice  # noqa: E402

from structkit.config import load_config  # noqa: E402

COMMAND = {"pos": "tag", "chunk": "chunk", "ner": "ner"}
NUMBA_CACHE = numba_cache("warm", "the kernels compiled by an untimed 1-epoch run of the same config on its "
                                  "first 100 training sentences, and by tagging them, first")
# a result file from before the script recorded it: the same warm-up (in the script from its first version)
LEGACY_CACHE = numba_cache("warm", NUMBA_CACHE["how"] + "; not recorded by the older runs, but the script had "
                                   "this warm-up")


def run(config_path: str) -> dict:
    cfg = load_config(config_path)
    name = cfg.get("name", Path(config_path).stem)
    task, data = cfg["task"], cfg["data"]
    models = RESULTS / "models"
    models.mkdir(parents=True, exist_ok=True)
    model = models / f"{name}.model"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm = write_slice(data["train"], tmp / "warm.txt", 100)
        structkit("train", "--config", config_path, "--train", warm, "--epochs", "1",
                  "--model", tmp / "warm.model")
        structkit(COMMAND[task], "--model", tmp / "warm.model", warm, "-o", tmp / "warm.out")
        metrics = tmp / "metrics.json"
        cpu0 = children_cpu()
        train_wall, _ = structkit("train", "--config", config_path, "--model", model,
                                  "--metrics-json", metrics)
        train_cpu = children_cpu() - cpu0
        tag_wall, _ = structkit(COMMAND[task], "--model", model, data["test"], "-o", tmp / "pred.txt")
        _, ev = structkit("eval", "--task", task, tmp / "pred.txt", "--json", "--model", model)
        history = json.loads(metrics.read_text())
    result = {
        "name": name, "description": cfg.get("description", ""), "config": config_path,
        "task": task, "algo": cfg.get("algo", "perceptron"), "epochs": cfg.get("epochs", 10),
        "train_file": data["train"], "test_file": data["test"],
        "train_wall_seconds": round(train_wall, 2), "train_cpu_seconds": round(train_cpu, 2),
        "tag_wall_seconds": round(tag_wall, 2),
        "train_info": history["config"], "epochs_log": history["epochs"],
        "test": json.loads(ev.stdout), "machine": machine(), "numba_cache": NUMBA_CACHE,
    }
    dump_json(result, RESULTS / f"{name}.json")
    return result


def table() -> str:
    rows, caches = [], {}
    for p in sorted(RESULTS.glob("*.json")):
        r = json.loads(p.read_text())
        # only this script's files: the grid experiments' files have a task and a test too
        if not isinstance(r, dict) or r.get("task") not in COMMAND or "test" not in r or "epochs_log" not in r:
            continue
        t = r["test"]
        f1 = f"{t['f1']:.2f}" if "f1" in t else "-"
        unk = f"{t['unknown_accuracy']:.2f}" if "unknown_accuracy" in t else "-"
        dev = r["train_info"].get("selected_dev") or r["epochs_log"][-1].get("dev", {})
        devs = f"{dev.get('f1', dev.get('accuracy')):.2f}" if dev else "-"
        epochs = str(r["epochs"])
        if r["train_info"].get("selected_epoch") is not None:
            epochs += f" (kept {r['train_info']['selected_epoch']})"
        caches.setdefault(r.get("numba_cache", LEGACY_CACHE)["words"], []).append(r["name"])
        rows.append(f"| {r['name']} | {r['task']} | {r['algo']} | {epochs} | "
                    f"{r['train_info']['n_features']:,} | {r['train_wall_seconds']:.1f} | "
                    f"{r['tag_wall_seconds']:.1f} | {devs} | {t['accuracy']:.2f} | {unk} | {f1} |")
    head = ("# Sequence labelling: exact and greedy averaged perceptrons\n\n"
            "Produced by `make experiments` (scripts/run_experiment.py): every figure is a run of the\n"
            "CLI on the full corpus. Train = wall time of `structkit train`\n"
            "(reading, features, all epochs, saving); tag = wall time of tagging the test file;\n"
            + ("both with the " + next(iter(caches)) if len(caches) == 1 else "both with the numba cache as "
               "follows: " + "; ".join(f"{', '.join(names)}: {w}" for w, names in caches.items())) + ".\n"
            "When the config names a dev set, training keeps the epoch with the best development score\n"
            "(epochs: run (kept)); dev = that epoch's score (F1, or accuracy for POS). Accuracy and F1\n"
            "on the test set, F1 as conlleval computes it.\n\n"
            "| run | task | algo | epochs | features | train s | tag s | dev | test acc | unseen-word acc | test F1 |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")
    return head + "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*")
    ap.add_argument("--report-only", action="store_true", help="only rewrite results/sequence.md")
    args = ap.parse_args()
    if args.report_only or not args.configs:
        (RESULTS / "sequence.md").write_text(table())
        return
    for c in args.configs:
        r = run(c)
        t = r["test"]
        score = f"F1 {t['f1']:.2f}" if "f1" in t else f"accuracy {t['accuracy']:.2f}"
        print(f"{r['name']}: {score}, train {r['train_wall_seconds']:.1f} s, "
              f"tag {r['tag_wall_seconds']:.1f} s")
    (RESULTS / "sequence.md").write_text(table())


if __name__ == "__main__":
    main()
