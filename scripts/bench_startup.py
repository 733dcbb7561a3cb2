"""Start-up of one-sentence commands (issue 31 part 2, `make bench`): results/bench-startup.json
and .md.

    python scripts/bench_startup.py [--runs 5] [--out results/bench-startup.json]

`structkit tag`, `chunk` and `parse` on a file of one sentence, each run ``--runs`` times in a new
process (bytecode and numba caches warm: one untimed run first), as a user runs them. For each
run: wall seconds, CPU seconds (user + system, from getrusage of the child) and the 1-minute
load average before it. On a machine shared with other work the wall time counts waiting for a
core, which CPU seconds do not; the load says how much other work there was. The models are
trained first on the test fixtures (1 epoch: a model's size, not its accuracy, is what matters).
Also the modules that take longest to import for `chunk` (``python -X importtime``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from common import RESULTS, dump_json, machine  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
TARGET = 0.5


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(args: list) -> dict:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "structkit", *map(str, args)], env=_env(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"structkit {' '.join(map(str, args))} failed:\n{p.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), "load_before": round(load, 2)}


def _importtime(args: list) -> str:
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "structkit", *map(str, args)], env=_env(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return p.stderr


def imports_numba(args: list) -> bool:
    """Whether the command imports numba (``python -X importtime``)."""
    return any(line.split("|")[-1].strip() == "numba" for line in _importtime(args).splitlines()
               if line.startswith("import time:"))


def slowest_imports(args: list, n: int = 8) -> list[tuple[str, float]]:
    rows = []
    for line in _importtime(args).splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cum, name = line.split("|")
            try:
                rows.append((name.strip(), int(cum) / 1e6))
            except ValueError:
                pass
    top = [r for r in rows if not r[0].startswith(" ") and "." not in r[0].strip()] or rows
    return sorted(top, key=lambda r: -r[1])[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(RESULTS / "bench-startup.json"))
    a = ap.parse_args()
    res: dict = {"machine": machine(), "target_seconds": TARGET, "commands": {}}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmpd:
        tmp = Path(tmpd)
        models = {}
        for task, train in (("pos", "pos_train.txt"), ("chunk", "chunk_train.txt"), ("parse", "parse_train.conll")):
            models[task] = tmp / f"{task}.model"
            subprocess.run([sys.executable, "-m", "structkit", "train", "--task", task, "--epochs", "1",
                            "--train", FIXTURES / train, "-m", models[task], "-q"], check=True, env=_env())
        one_tag = tmp / "one.txt"
        one_tag.write_text("He\nreckons\nthe\ncurrent\naccount\ndeficit\n.\n")
        one_chunk = tmp / "one-chunk.txt"
        one_chunk.write_text("He PRP\nreckons VBZ\nthe DT\ncurrent JJ\naccount NN\ndeficit NN\n. .\n")
        one_parse = tmp / "one.conll"
        words = [("He", "PRP"), ("reckons", "VBZ"), ("the", "DT"), ("current", "JJ"), ("account", "NN"),
                 ("deficit", "NN"), (".", ".")]
        one_parse.write_text("".join(f"{i}\t{w}\t_\t{t}\t{t}\t_\t0\t_\t_\t_\n" for i, (w, t) in
                                     enumerate(words, 1)) + "\n")
        commands = {"tag": ["tag", "-m", models["pos"], one_tag],
                    "chunk": ["chunk", "-m", models["chunk"], one_chunk],
                    "parse": ["parse", "-m", models["parse"], one_parse]}
        for args in commands.values():
            run(args)       # caches warm
        runs = {name: [] for name in commands}
        for _ in range(a.runs):    # interleaved, so each command sees the same machine
            for name, args in commands.items():
                runs[name].append(run(args))
        for name, rs in runs.items():
            walls = [r["wall"] for r in rs]
            res["commands"][name] = {"runs": rs, "median_wall": round(statistics.median(walls), 3),
                                     "max_wall": max(walls),
                                     "median_cpu": round(statistics.median(r["cpu"] for r in rs), 3)}
            print(name, res["commands"][name], flush=True)
        res["slowest_imports_chunk"] = slowest_imports(commands["chunk"])
        res["imports_numba"] = {name: imports_numba(args) for name, args in commands.items()}
    dump_json(res, Path(a.out))
    md = ["# Start-up of one-sentence commands", "",
          f"`python scripts/bench_startup.py` ({res['machine']['date']}, commit {res['machine']['commit']}, "
          f"{res['machine']['cores']} cores): each command {a.runs} times in a new process, interleaved, caches "
          f"warm. Target: {TARGET} s wall on every run. Wall time includes waiting for a core when other work "
          "runs (see the load); CPU = user + system seconds of the process.", "",
          "| command | median wall (s) | max wall (s) | median CPU (s) | loads before the runs |",
          "|---|---|---|---|---|"]
    for name, c in res["commands"].items():
        md.append(f"| `structkit {name}` one sentence | {c['median_wall']} | {c['max_wall']} | {c['median_cpu']} | "
                  + ", ".join(str(r["load_before"]) for r in c["runs"]) + " |")
    md += ["", "Slowest top-level imports of `structkit chunk` (cumulative seconds, `python -X importtime`): "
           + ", ".join(f"{n} {s:.3f}" for n, s in res["slowest_imports_chunk"]) + ".", "",
           "Imports numba: " + ", ".join(f"`{name}` {'yes' if v else 'no'}" for name, v in res["imports_numba"].items())
           + " (one sentence takes numpy paths with the kernels' results: Viterbi for tag and chunk, the "
           "beam search of structkit/parse/smallbeam.py for parse)."]
    Path(a.out).with_suffix(".md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
