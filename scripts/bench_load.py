"""CPU seconds of ``structkit.load(model)`` (issue 42): prints a table, writes nothing.

    python scripts/bench_load.py MODEL [MODEL ...] [--runs 5] [--tree PATH ...]

For each model and each source tree (default: this one; ``--tree`` names others, e.g. a
worktree of an older commit, to compare), ``--runs`` fresh processes each time
``import structkit``, then ``structkit.load(model)`` (what it imports included: numpy and
structkit's modules; ``import structkit`` itself imports neither), by ``time.process_time()``
inside the process, then separately the import of numpy and numba in the same process.
Bytecode caches are warm (one untimed run first, PYTHONDONTWRITEBYTECODE dropped) and so is
numba's cache (loading compiles no kernel). The runs of the trees alternate, so that other work
on a shared machine weighs on each alike; the best run of each is reported, with the median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, time
t0 = time.process_time()
import structkit
t1 = time.process_time()
structkit.load(sys.argv[1])
t2 = time.process_time()
imported = "numba" in sys.modules
import numpy, numba
t3 = time.process_time()
print(t1 - t0, t2 - t1, t3 - t2, imported)
"""


def run(tree: Path, model: str) -> tuple[float, float, float, bool]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    p = subprocess.run([sys.executable, "-c", CHILD, model], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"loading {model} with {tree} failed:\n{p.stderr}")
    a, b, c, numba = p.stdout.split()
    return float(a), float(b), float(c), numba == "True"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tree", action="append", default=None, help="a source tree (default: this one)")
    a = ap.parse_args()
    trees = [Path(t).resolve() for t in (a.tree or [ROOT])]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| model | tree | load CPU s best | median | import structkit | then numpy+numba | numba imported by load |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model in a.models:
        for tree in trees:
            run(tree, model)   # warm the bytecode caches
        rows: dict = {t: [] for t in trees}
        for _ in range(a.runs):
            for tree in trees:
                rows[tree].append(run(tree, model))
        for tree in trees:
            r = rows[tree]
            loads = [x[1] for x in r]
            print(f"| {Path(model).name} | {tree} | {min(loads):.3f} | {statistics.median(loads):.3f} "
                  f"| {min(x[0] for x in r):.3f} | {min(x[2] for x in r):.3f} | {any(x[3] for x in r)} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
