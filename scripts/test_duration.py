"""How long ``make test`` takes here (issue 40, item 13): runs the README's test command
(``python -m pytest -q`` in the project folder, with ``$STRUCTKIT_DATA`` as set) and records its
wall and CPU time, the counts pytest reports, whether numba's cache was warm (the kernels'
cache files present before the run) and the load average before and after.

Writes results/test-duration.json and .md (``--report-only``: only the .md). Exits with pytest's
code, so a failing suite is not recorded as a duration.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine  # noqa: E402

OUT = ROOT / "results" / "test-duration.json"


def _cache_files() -> int:
    """numba's cache files under the package (``__pycache__/*.nbi``): 0 on a fresh clone."""
    return sum(1 for _ in (ROOT / "structkit").rglob("*.nbi"))


def report(obj: dict) -> None:
    minutes = obj["wall_seconds"] / 60
    lines = ["# How long `make test` takes", "",
             f"`python scripts/test_duration.py` ({obj['machine']['date']}, commit {obj['machine']['commit']}, "
             f"{obj['machine']['cpu']}, {obj['machine']['cores']} cores shared with other jobs; load average "
             f"before {obj['loadavg_before']}, after {obj['loadavg_after']}).", "",
             f"`python -m pytest -q` (what `make test` runs): {obj['summary']} in {obj['wall_seconds']:.0f} s "
             f"of wall time ({minutes:.1f} min), {obj['cpu_seconds']:.0f} CPU s; numba's cache "
             f"{'warm' if obj['numba_cache_files_before'] else 'cold'} "
             f"({obj['numba_cache_files_before']} cache index files before the run). With `$STRUCTKIT_DATA` "
             f"{'set' if obj['data'] else 'unset'}: the tests that read the real corpora "
             f"{'ran' if obj['data'] else 'were skipped'}."]
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        report(json.loads(OUT.read_text()))
        return
    before, load0 = _cache_files(), [round(x, 2) for x in os.getloadavg()]
    t0, c0 = time.perf_counter(), os.times()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    c1 = os.times()
    sys.stdout.write(r.stdout[-3000:])
    sys.stderr.write(r.stderr[-3000:])
    if r.returncode != 0:
        sys.exit(r.returncode)
    last = [ln for ln in r.stdout.splitlines() if re.search(r"\d+ passed", ln)][-1]
    summary = re.sub(r"\s+in [0-9.]+s.*$", "", last.strip("= "))
    obj = {"wall_seconds": round(wall, 1), "cpu_seconds": round(c1.children_user + c1.children_system
                                                                 - c0.children_user - c0.children_system, 1),
           "summary": summary, "numba_cache_files_before": before, "data": bool(os.environ.get("STRUCTKIT_DATA")),
           "loadavg_before": load0, "loadavg_after": [round(x, 2) for x in os.getloadavg()], "machine": machine()}
    dump_json(obj, OUT)
    report(obj)


if __name__ == "__main__":
    main()
