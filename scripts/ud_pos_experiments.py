"""UPOS tagging on UD English ParTUT with the README's commands and today's defaults: the default
(kbest-pa with the `ud` template set), `--algo perceptron`, `--algo lookahead --depth 1` and
`--depth 2`, and the old word-only set (`--templates pos`, the perceptron). Each model is trained
on train alone, as the README's command does (no --dev, so no dev selection), then tags dev and
test; `structkit eval --json` scores UPOS accuracy. With --cv K the default is also scored by
K-fold cross-validation over train (sentence i goes to fold i mod K). Writes results/ud-pos.json/.md.

    python scripts/ud_pos_experiments.py [--cv 5] [--out results/ud-pos]
    python scripts/ud_pos_experiments.py --report-only    # the .md from the .json

Train time is the wall time of `structkit train` (start-up included) and the CPU time of that
process (resource usage of the child): on a shared machine the wall time is an upper bound. The
numba cache is warm (``NUMBA_CACHE``): each configuration's kernels are compiled by an untimed
1-epoch run on dev first; the JSON records it and the report says it.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, machine, numba_cache, structkit  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402

UD = "ud-english-partut/en_partut-ud-{}.conllu"
CONFIGS = [
    ("default (kbest-pa, ud templates)", []),
    ("--algo perceptron", ["--algo", "perceptron"]),
    ("--algo lookahead --depth 1", ["--algo", "lookahead", "--depth", "1"]),
    ("--algo lookahead --depth 2", ["--algo", "lookahead", "--depth", "2"]),
    ("--algo perceptron --templates pos (old word-only set)", ["--algo", "perceptron", "--templates", "pos"]),
]
NUMBA_CACHE = numba_cache("warm", "each configuration's kernels compiled by an untimed 1-epoch run on dev first")
# a .json from before the script recorded it: the same warm-up (in the script since its first version)
LEGACY_CACHE = numba_cache("warm", NUMBA_CACHE["how"] + "; not recorded by this older run, but the script had "
                                   "this warm-up")


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def train(train_file: str, model: Path, flags: list[str]) -> dict:
    c0 = child_cpu()
    wall, _ = structkit("train", "--task", "pos", "--train", train_file, "--model", model, "-q", *flags)
    return {"train_wall_seconds": round(wall, 2), "train_cpu_seconds": round(child_cpu() - c0, 2)}


def accuracy(model: Path, gold: str, out: Path) -> float:
    structkit("tag", "--model", model, gold, "-o", out)
    _, ev = structkit("eval", "--task", "pos", gold, out, "--json")
    return round(json.loads(ev.stdout)["accuracy"], 2)


def folds(path: str, k: int, tmp: Path) -> list[tuple[Path, Path]]:
    blocks = [b for b in Path(path).read_text(encoding="utf-8").split("\n\n") if b.strip()]
    out = []
    for f in range(k):
        tr, te = tmp / f"fold{f}.train.conllu", tmp / f"fold{f}.test.conllu"
        tr.write_text("".join(b.strip("\n") + "\n\n" for i, b in enumerate(blocks) if i % k != f), encoding="utf-8")
        te.write_text("".join(b.strip("\n") + "\n\n" for i, b in enumerate(blocks) if i % k == f), encoding="utf-8")
        out.append((tr, te))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cv", type=int, default=5, help="folds for the default's cross-validation (0: none)")
    ap.add_argument("--out", default=str(RESULTS / "ud-pos"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    if args.report_only:
        return report(json.loads(Path(args.out + ".json").read_text()), args.out)
    train_file, dev, test = (resolve_data_path(UD.format(s), must_exist=True) for s in ("train", "dev", "test"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, flags in CONFIGS:
            # warm the numba cache for this learner (a 1-epoch run on dev), so times are warm
            structkit("train", "--task", "pos", "--train", dev, "--epochs", "1", "--model", tmp / "warm.model",
                      "-q", *flags)
            model = tmp / "m.model"
            row = {"config": name, "command": " ".join(["structkit train --task pos --train", UD.format("train"),
                                                         "--model ud.model", *flags]),
                   **train(train_file, model, flags)}
            row["model_mb"] = round(model.stat().st_size / 2**20, 2)
            row["dev"] = accuracy(model, dev, tmp / "dev.out")
            row["test"] = accuracy(model, test, tmp / "test.out")
            print(json.dumps(row), flush=True)
            rows.append(row)
        cv = None
        if args.cv:
            accs = []
            for tr, te in folds(train_file, args.cv, tmp):
                model = tmp / "cv.model"
                train(str(tr), model, [])
                accs.append(accuracy(model, str(te), tmp / "cv.out"))
            cv = {"folds": args.cv, "fold_accuracy": accs, "mean": round(sum(accs) / len(accs), 2)}
            print(json.dumps(cv), flush=True)
    obj = {"corpus": UD.format("{train,dev,test}"), "command": "python scripts/ud_pos_experiments.py"
           + (f" --cv {args.cv}" if args.cv != 5 else ""), "machine": machine(), "numba_cache": NUMBA_CACHE,
           "rows": rows, "cv_default": cv}
    dump_json(obj, Path(args.out + ".json"))
    report(obj, args.out)


def report(obj: dict, out: str) -> None:
    m, rows, cv = obj["machine"], obj["rows"], obj["cv_default"]
    lines = ["# UPOS tagging on UD English ParTUT (train -> dev, test; gold tokens)", "",
             f"`{obj['command']}` ({m['date']}, commit {m['commit']}, {m['cores']} cores shared with other "
             "jobs: wall times are upper bounds). Each model trains on train alone with the README's "
             "command plus the flags shown (today's defaults otherwise), then tags dev and test; "
             "UPOS accuracy by `structkit eval --task pos --json`. Train s: "
             f"{obj.get('numba_cache', LEGACY_CACHE)['words']}.", "",
             "| configuration | dev UPOS | test UPOS | train s (wall, start-up included) | train s (CPU) | model MB |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['dev']} | {r['test']} | {r['train_wall_seconds']} | "
                     f"{r['train_cpu_seconds']} | {r['model_mb']} |")
    if cv:
        lines += ["", f"Default, {cv['folds']}-fold cross-validation over train (sentence i in fold i mod "
                  f"{cv['folds']}): mean {cv['mean']} (folds {', '.join(map(str, cv['fold_accuracy']))})."]
    Path(out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
