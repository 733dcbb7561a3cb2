"""The first run on a fresh install, with and without `structkit compile` (issue 42).

numba compiles each kernel the first time a command calls it and caches it on disk. A fresh
install has an empty cache; `make install` now runs `structkit compile`, which fills it by
running the commands' work on the shipped samples. For each treebank (default: UD Tamil TTB and
Italian ParTUT, from ``$STRUCTKIT_DATA``) this measures, each command a new process (CPU seconds
of the process, wall seconds, peak memory):

- **cold**: `structkit train --task pipeline` in an empty numba cache (a fresh install without
  `structkit compile`), then the same training again in that cache (**warm**);
- **compiled**: `structkit compile` into another empty cache (timed once), then the same training
  in a copy of that cache (**after compile**), as on a fresh install by `make install`;
- `annotate` of one sentence with the trained pipeline, in an empty cache and in a copy of the
  compiled one.

The training runs use the defaults and the treebank's train and dev files. Writes
results/bench-cold.json and .md with the load average before and after each treebank.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, measured  # noqa: E402

TREEBANKS = {"ta_ttb": "ud-tamil-ttb/ta_ttb-ud", "it_partut": "ud-italian-partut/it_partut-ud"}
SENTENCE = {"ta_ttb": "இது ஒரு சிறிய சோதனை வாக்கியம் .", "it_partut": "Il gatto dorme sul divano."}
OUT = ROOT / "results" / "bench-cold.json"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _in_cache(cache: str, args: list) -> dict:
    old = os.environ.get("NUMBA_CACHE_DIR")
    os.environ["NUMBA_CACHE_DIR"] = cache
    try:
        r = measured(args)
    finally:
        if old is None:
            os.environ.pop("NUMBA_CACHE_DIR", None)
        else:
            os.environ["NUMBA_CACHE_DIR"] = old
    r.pop("stdout")
    r.pop("stderr")
    return r


def run(data: Path, names: list[str]) -> dict:
    out: dict = {"machine": machine(), "treebanks": {}}
    with tempfile.TemporaryDirectory(prefix="structkit-bench-cold-") as tmp:
        t = Path(tmp)
        compiled = str(t / "compiled")
        out["load_before_compile"] = _load()
        out["compile"] = _in_cache(compiled, ["compile"])
        print(f"compile: {out['compile']}", flush=True)
        for name in names:
            stem = data / TREEBANKS[name]
            train = ["train", "--task", "pipeline", "--train", f"{stem}-train.conllu",
                     "--dev", f"{stem}-dev.conllu", "-q"]
            model = str(t / f"{name}.model")
            text = t / f"{name}.txt"
            text.write_text(SENTENCE[name] + "\n", encoding="utf-8")
            row: dict = {"load_before": _load()}
            row["cold"] = _in_cache(str(t / f"{name}-fresh"), train + ["--model", model])
            row["warm"] = _in_cache(str(t / f"{name}-fresh"), train + ["--model", model])
            shutil.copytree(compiled, t / f"{name}-compiled")
            row["after_compile"] = _in_cache(str(t / f"{name}-compiled"), train + ["--model", model])
            shutil.copytree(compiled, t / f"{name}-compiled-annotate")
            row["annotate_cold"] = _in_cache(str(t / f"{name}-fresh-annotate"), ["annotate", "-m", model, str(text)])
            row["annotate_after_compile"] = _in_cache(str(t / f"{name}-compiled-annotate"),
                                                      ["annotate", "-m", model, str(text)])
            row["load_after"] = _load()
            out["treebanks"][name] = row
            print(name, row, flush=True)
    return out


def report(res: dict) -> str:
    m = res["machine"]
    c = res["compile"]
    lines = [
        "# The first run on a fresh install, with and without `structkit compile`",
        "",
        f"`python scripts/bench_cold.py` at {m['commit']} on {m['cpu']} ({m['cores']} cores), {m['date']}. "
        "Each command is a new process; CPU is the process's user + system seconds, peak its "
        "largest resident memory. \"cold\": an empty numba cache (a fresh install without "
        "`structkit compile`); \"warm\": the same command again in that cache; \"after compile\": "
        "a copy of the cache `structkit compile` filled (what `make install` leaves).",
        "",
        f"`structkit compile`: {c['cpu_seconds']} CPU s, {c['wall_seconds']} s wall, peak {c['peak_mb']:.0f} MB "
        f"(load average before: {', '.join(map(str, res['load_before_compile']))}).",
        "",
        "| pipeline training (defaults) | cold CPU s | warm CPU s | after compile CPU s | after compile / warm | cold / warm | peak MB cold / after compile | load average before / after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["treebanks"].items():
        cold, warm, comp = r["cold"], r["warm"], r["after_compile"]
        lines.append(f"| {name} | {cold['cpu_seconds']} | {warm['cpu_seconds']} | {comp['cpu_seconds']} | "
                     f"{comp['cpu_seconds'] / warm['cpu_seconds']:.2f} | {cold['cpu_seconds'] / warm['cpu_seconds']:.2f} | "
                     f"{cold['peak_mb']:.0f} / {comp['peak_mb']:.0f} | "
                     f"{', '.join(map(str, r['load_before']))} / {', '.join(map(str, r['load_after']))} |")
    lines += ["", "| `annotate` of one sentence | cold: wall s (CPU s) | after compile: wall s (CPU s) |", "|---|---|---|"]
    for name, r in res["treebanks"].items():
        a, b = r["annotate_cold"], r["annotate_after_compile"]
        lines.append(f"| {name} | {a['wall_seconds']} ({a['cpu_seconds']}) | {b['wall_seconds']} ({b['cpu_seconds']}) |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("STRUCTKIT_DATA", "")))
    ap.add_argument("--only", nargs="*", choices=sorted(TREEBANKS), default=sorted(TREEBANKS, reverse=True))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        import json

        res = json.loads(OUT.read_text())
    else:
        if not (args.data / TREEBANKS["ta_ttb"]).parent.is_dir():
            sys.exit("bench_cold.py: set STRUCTKIT_DATA (or --data) to the folder with the UD treebanks")
        res = run(args.data, args.only)
        dump_json(res, OUT)
    OUT.with_suffix(".md").write_text(report(res))
    print(report(res))


if __name__ == "__main__":
    main()
