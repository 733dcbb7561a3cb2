"""Build ready models from their recipes (`structkit models build`, ``structkit.recipes``) and
record what each model's card says: the corpus and its licence, the training file's sha256, the
dev and test scores (the task's command, then `structkit eval`, on the corpus's files), the
training time (wall and CPU) and the model file's size. `make models` runs it for the English
recipes.

    python scripts/models_build.py [NAME ...] [--out-dir build/models] [--results results/models]
    python scripts/models_build.py --report-only      # the .md from the .json

Writes ``results/models.json`` and ``results/models.md``. Wall times are of this machine at the
moment of the run (shared cores make them noisy); the CPU times are the process's own. Each
recipe is built twice and the second build is the one recorded, so its times are with a warm
numba cache (``NUMBA_CACHE``, recorded in the JSON and said in the report).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, dump_json, machine, numba_cache  # noqa: E402

ENGLISH = ("ud:English-ParTUT/tokenize", "ud:English-ParTUT/pos", "ud:English-ParTUT/parse",
           "ud:English-ParTUT/pipeline")
NUMBA_CACHE = numba_cache("warm", "the kernels compiled by a first, untimed build of the same recipe in this process")
# a .json from before the script recorded it (no warm-up then)
LEGACY_CACHE = numba_cache("not recorded", "this older run built each recipe once with no warm-up, in one process: "
                                           "the first build found the cache as earlier runs had left it, later ones "
                                           "also the kernels the builds before them had loaded")

# A parser's CoNLL 2018 UAS and LAS (every word) where it has them, else its UAS (punctuation
# excluded, the Penn Treebank convention): never the two conventions side by side.
HEADLINE = (("accuracy", None), ("conll18", "uas"), ("conll18", "las"), ("uas", None), ("tokens", "f1"),
            ("words", "f1"), ("sentences", "f1"), ("alltags", None), ("lemmas", None),
            ("upos", "f1"), ("lemmas", "f1"), ("las", "f1"), ("mlas", "f1"), ("blex", "f1"))


def headline(scores: dict) -> dict:
    from structkit.builds import headline as picked

    return {key if sub in (None, "f1") else f"{key}.{sub}": round(v, 2) for key, sub, v in picked(scores, HEADLINE)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=list(ENGLISH))
    ap.add_argument("--out-dir", default=str(ROOT / "build" / "models"))
    ap.add_argument("--results", default=str(RESULTS / "models"), help="Path without extension.")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    res = Path(args.results)
    if args.report_only:
        return report(json.loads(res.with_suffix(".json").read_text()), res)

    from structkit import recipes

    chosen = [recipes.get(n) for n in args.names]
    os.makedirs(args.out_dir, exist_ok=True)
    rows, load = [], [round(x, 2) for x in os.getloadavg()]
    for r in chosen:
        out = os.path.join(args.out_dir, r.default_output())
        recipes.build(r, out, say=lambda *a, **k: None)   # untimed: the numba cache warm (NUMBA_CACHE)
        t0 = time.perf_counter()
        _, card = recipes.build(r, out, say=print)
        total = time.perf_counter() - t0
        train = card["data"]["train"]
        row = {"recipe": r.name, "task": r.task, "corpus": train.get("corpus"), "licence": train.get("licence"),
               "train_file": train.get("data_path", train["path"]), "train_sha256": train.get("sha256"),
               "registry_sha256": train.get("registry_sha256"),
               "dev": headline((card.get("dev") or {}).get("scores") or {}),
               "test": headline((card.get("test") or {}).get("scores") or {}),
               "train_wall_seconds": card["training"]["wall_seconds"],
               "train_cpu_seconds": card["training"]["cpu_seconds"],
               "build_wall_seconds": round(total, 3), "model_bytes": os.path.getsize(out),
               "model": os.path.relpath(out, ROOT), "structkit_version": card["structkit_version"]}
        rows.append(row)
        print(f"{r.name}: test {row['test']}, trained in {row['train_wall_seconds']:.1f} s "
              f"({row['train_cpu_seconds']:.1f} s CPU)")
    obj = {"machine": machine(), "numba_cache": NUMBA_CACHE, "loadavg_before": load, "models": rows}
    dump_json(obj, res.with_suffix(".json"))
    report(obj, res)


def report(obj: dict, res: Path) -> None:
    m, rows = obj["machine"], obj["models"]
    lines = ["# Ready models from `structkit models build`", "",
             f"Written by `scripts/models_build.py` ({m['date']}, commit {m['commit']}, "
             f"{m['cores']} cores shared with other jobs: wall times are noisy, CPU times are "
             "the process's own). Scores are the model cards' (the task's command on the file, then "
             "`structkit eval`); build = training + scoring dev and test + writing. Times: "
             f"{obj.get('numba_cache', LEGACY_CACHE)['words']}"
             + (f"; load average before the run {obj['loadavg_before']}, which inflates CPU times too"
                if "loadavg_before" in obj else "") + ".", "",
             "| recipe | corpus (licence) | dev | test | train wall s | train CPU s | build wall s | model MB |",
             "|---|---|---|---|---:|---:|---:|---:|"]
    for row in rows:
        # the JSON's keys are sorted: back in HEADLINE's order (a name twice there: its later place)
        order = {k if sub in (None, "f1") else f"{k}.{sub}": i for i, (k, sub) in enumerate(HEADLINE)}
        fmt = lambda d: ", ".join(f"{k} {d[k]:.2f}" for k in sorted(d, key=order.get)) or "-"
        lines.append(f"| `{row['recipe']}` | {row['corpus']} ({row['licence']}) | {fmt(row['dev'])} | "
                     f"{fmt(row['test'])} | {row['train_wall_seconds']:.1f} | {row['train_cpu_seconds']:.1f} | "
                     f"{row['build_wall_seconds']:.1f} | {row['model_bytes'] / 1e6:.1f} |")
    res.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {res.with_suffix('.md')}")


if __name__ == "__main__":
    main()
