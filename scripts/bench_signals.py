"""How soon `structkit train` answers SIGTERM in the middle of an epoch (issue 30, item 7).

    python scripts/bench_signals.py [--out results/signals.json]

For each run: start `structkit train -v` in a new process, wait until its second epoch line has
been printed (the kernels are compiled, and the line gives one epoch's length), wait a third of
that into the third epoch, send SIGTERM, and time how long the process takes to exit; its exit code must be 143 and no model or temporary
file may be left. The epoch's own length, from the first epoch line, is printed beside it: before
epochs ran in pieces (structkit.learn.pieces), the wait was up to one epoch. Needs
$STRUCTKIT_DATA (or the fetch cache) with UD English ParTUT and CoNLL-2000.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = [
    ("beam parser, ParTUT", ["--task", "parse", "--train", "ud-english-partut/en_partut-ud-train.conllu"]),
    ("k-best MIRA, CoNLL-2000", ["--task", "chunk", "--train", "conll2000/train.txt", "--algo", "kbest-mira"]),
    ("lookahead depth 2, CoNLL-2000", ["--task", "chunk", "--train", "conll2000/train.txt", "--algo", "lookahead",
                                       "--depth", "2"]),
]


def one(args: list[str], tmp: str) -> dict:
    model = os.path.join(tmp, "m.model")
    p = subprocess.Popen([sys.executable, "-m", "structkit", "train", *args, "-m", model, "-v"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    epoch_s = None
    for line in p.stderr:
        m = re.search(r"epoch 2/\d+.*\(([\d.]+) s\)", line)
        if m:
            epoch_s = float(m.group(1))
            break
    time.sleep((epoch_s or 1.0) / 3)  # into the third epoch
    t0 = time.perf_counter()
    p.send_signal(signal.SIGTERM)
    rest = p.stderr.read()
    code = p.wait()
    waited = time.perf_counter() - t0
    left = sorted(os.listdir(tmp))
    return {"epoch_seconds": epoch_s, "exit_seconds": round(waited, 3), "exit": code,
            "left_behind": left, "last_line": rest.strip().splitlines()[-1] if rest.strip() else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "signals.json"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the JSON")
    args = ap.parse_args()
    if args.report_only:
        return report(json.loads(Path(args.out).read_text())["rows"], Path(args.out))
    from structkit.datasets import resolve

    rows = []
    for name, targs in RUNS:
        targs = [str(resolve(a)) if "/" in a and not a.startswith("-") else a for a in targs]
        with tempfile.TemporaryDirectory() as tmp:
            rows.append({"run": name, **one(targs, tmp)})
        print(rows[-1], flush=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return report(rows, Path(args.out))


def report(rows: list[dict], out: Path) -> int:
    md = ["# SIGTERM in the middle of a training epoch", "",
          "`python scripts/bench_signals.py`: SIGTERM sent a third of the way into the third epoch of `structkit train -v`. "
          "One epoch: the second epoch's length as `-v` prints it; numba's kernels were compiled (or read from "
          "its cache) in the first, so the cache, warm or cold, enters neither figure.", "",
          "| run | one epoch, s | exit after SIGTERM, s | exit code | files left |", "|---|---|---|---|---|"]
    md += [f"| {r['run']} | {r['epoch_seconds']} | {r['exit_seconds']} | {r['exit']} | "
           f"{', '.join(r['left_behind']) or 'none'} |" for r in rows]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
