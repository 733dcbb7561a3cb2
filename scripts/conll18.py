"""The CoNLL 2018 shared task, reproduced on the UD treebanks here (issue 43, item 3): for every
treebank folder under ROOT, `structkit models build --all` trains a pipeline on its training file
(its dev file for epoch selection where there is one), annotates its test file's raw text and
scores the output with the shared task's 13 metrics (the model's card keeps them); this script
then writes results/conll18.md: each treebank's row, the macro average over the treebanks run,
and for each treebank that was one of the shared task's 82 test sets the official UDPipe 1.2
baseline, the best system, and the rank our LAS, MLAS and BLEX would have had among its 26
systems (quoted from the official rankings: scripts/conll18_published.py says from where).

    python scripts/conll18.py [--root DIR] [--out build/conll18] [--jobs 2 | --dask ADDRESS]
    python scripts/conll18.py --report-only      # the .md from the .json
    make conll18                                 # the same, ROOT = $STRUCTKIT_DATA

Models already built in --out with the same data are kept (`--skip-existing`), so a second run
only scores. The UD release differs from the shared task's (UD 2.2): the figures beside ours
anchor the scale; they are not the same test sets. Writes results/conll18.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, dump_json, machine, measured  # noqa: E402
from conll18_published import BASELINE, METRICS, SOURCE, TEST_SETS, rank, rankings  # noqa: E402

JSON = RESULTS / "conll18.json"
MD = RESULTS / "conll18.md"
# the shared task's metrics, in the order of its evaluation script's output
COLUMNS = ("tokens", "sentences", "words", "upos", "xpos", "ufeats", "alltags", "lemmas", "uas", "las",
           "clas", "mlas", "blex")


def build(root: str, out: Path, jobs: int, dask: str | None) -> dict:
    """`structkit models build --all` over ROOT into OUT (models already there kept); its wall
    and CPU time (the command's and its workers'). Exit 1 (some treebank failed, the rest were
    built: the summary says which) goes on; another ends the script with the command's error."""
    args = ["models", "build", "--all", "--from", root, "--output-dir", str(out), "--skip-existing", "-q"]
    args += ["--dask", dask] if dask else ["--jobs", str(jobs)]
    r = measured(args, ok=(0, 1))
    return {"command": " ".join(["structkit", *args]), "code": r["code"], "wall_seconds": round(r["wall_seconds"], 1),
            "cpu_seconds": round(r["cpu_seconds"], 1), "stderr": r["stderr"][-4000:]}


def not_built(out: Path) -> list[list[str]]:
    """[treebank, why] for each treebank the build's summary (OUT/summary.md) says it skipped or
    failed: those have no row of their own."""
    summary = out / "summary.md"
    rows = []
    for line in summary.read_text(encoding="utf-8").splitlines() if summary.exists() else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and cells[1].startswith(("skipped", "failed")):
            rows.append([cells[0].split("/")[0], cells[1]])
    return rows


def treebank_rows(out: Path) -> list[dict]:
    """A row per model card in OUT: the treebank, its shared-task code (the test file's name
    before "-ud-"), the 13 test scores (F1), training CPU seconds and where it was trained."""
    rows = []
    for card_path in sorted(out.glob("*.card.json")):
        card = json.loads(card_path.read_text(encoding="utf-8"))
        test = (card.get("data") or {}).get("test") or {}
        scores = (card.get("test") or {}).get("scores") or {}
        if not test or not scores:
            continue
        tb = (card.get("recipe") or {}).get("treebank") or {}
        rows.append({"treebank": tb.get("name") or card_path.name.split(".")[0],
                     "code": Path(test["path"]).name.split("-ud-")[0],
                     "trained_on": tb.get("trained_on", "train"),
                     "scores": {c: round(scores[c]["f1"], 2) for c in COLUMNS if c in scores},
                     "train_cpu_seconds": round((card.get("training") or {}).get("cpu_seconds", 0.0), 1),
                     "test_sha256": test.get("sha256")})
    return rows


def published(rows: list[dict]) -> dict:
    """For each row's treebank that was a test set with a quoted ranking: per metric the baseline's
    F1, the best system and its F1, and the rank ours would have had."""
    tables = rankings()
    out = {}
    for r in rows:
        code = r["code"]
        per = {}
        for m in METRICS:
            ranking = tables.get((m, code))
            if ranking is None:
                continue
            ours = r["scores"].get(m.lower())
            per[m] = {"baseline": dict(ranking)[BASELINE], "best": list(ranking[0]),
                      "systems": len(ranking), "rank": None if ours is None else rank(ranking, ours)}
        out[code] = {"in_task": code in TEST_SETS, "metrics": per}
    return out


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else ""


def write_report(data: dict) -> None:
    rows, pub = data["rows"], data["published"]
    b = data["build"]
    lines = [
        "# The CoNLL 2018 shared task, reproduced on the UD treebanks here",
        "",
        f"`python scripts/conll18.py` ({data['date']}; {data['machine'].get('cpu', '?')}, "
        f"{data['machine'].get('cores', '?')} cores), through `{b['command']}`: each treebank a pipeline with "
        "the defaults, trained on its training file (dev for epoch selection where there is one), then its "
        "test file's raw text annotated and scored with the shared task's 13 metrics (F1). This run took "
        f"{b['wall_seconds']:.1f} s wall and {b['cpu_seconds']:.1f} s CPU (models already built with the same "
        "data were kept, so this is the time of what it built and scored); each treebank's own training CPU "
        "time is its card's.",
        "",
        "**The UD versions differ:** the shared task ran on UD 2.2 (its training and test files); ours are the "
        "later releases in the data folder (`SOURCES.md`). The official figures anchor the scale; they are not "
        "scores on the same test sets.",
        "",
        "| treebank | " + " | ".join(COLUMNS) + " | train CPU s |",
        "|---|" + "---:|" * (len(COLUMNS) + 1),
    ]
    for r in rows:
        s = r["scores"]
        trained = "" if r["trained_on"] == "train" else f" (trained on {r['trained_on']})"
        lines.append(f"| {r['code']}{trained} | " + " | ".join(f"{s[c]:.2f}" if c in s else "" for c in COLUMNS)
                     + f" | {r['train_cpu_seconds']:.1f} |")
    lines.append(f"| **macro average ({len(rows)})** | "
                 + " | ".join(_mean([r["scores"][c] for r in rows if c in r["scores"]]) for c in COLUMNS)
                 + f" | {sum(r['train_cpu_seconds'] for r in rows):.1f} (total) |")
    if data.get("not_built"):
        lines += ["", "Not run: " + "; ".join(f"{name} ({why})" for name, why in data["not_built"]) + "."]
    in_task = [r for r in rows if pub.get(r["code"], {}).get("metrics")]
    lines += [
        "",
        "## Beside the shared task's official results",
        "",
        f"{len(in_task)} of these {len(rows)} treebanks were among the shared task's 82 test sets "
        f"(not: {', '.join(r['code'] for r in rows if r not in in_task) or 'none'}). For each, our F1 beside the "
        "official UDPipe 1.2 baseline's and the best system's, and the rank ours would have had among the "
        "shared task's 26 systems (the baseline is one of them; 1 + how many scored higher).",
        "",
        "| treebank | metric | ours | UDPipe 1.2 baseline | ours - baseline | best system | our rank of 26 |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    below = []
    for r in in_task:
        for m in METRICS:   # (the JSON keeps its keys sorted)
            p = pub[r["code"]]["metrics"].get(m)
            if p is None:
                continue
            ours = r["scores"][m.lower()]
            diff = ours - p["baseline"]
            if diff < 0:
                below.append(f"{r['code']} {m} ({diff:+.2f})")
            lines.append(f"| {r['code']} | {m} | {ours:.2f} | {p['baseline']:.2f} | {diff:+.2f} | "
                         f"{p['best'][1]:.2f} ({p['best'][0]}) | {p['rank']} |")
    for m in METRICS:
        ours = [r["scores"][m.lower()] for r in in_task if m in pub[r["code"]]["metrics"]]
        base = [pub[r["code"]]["metrics"][m]["baseline"] for r in in_task if m in pub[r["code"]]["metrics"]]
        best = [pub[r["code"]]["metrics"][m]["best"][1] for r in in_task if m in pub[r["code"]]["metrics"]]
        if ours:
            lines.append(f"| **macro average ({len(ours)})** | {m} | {_mean(ours)} | {_mean(base)} | "
                         f"{sum(ours) / len(ours) - sum(base) / len(base):+.2f} | {_mean(best)} (best per treebank) | |")
    lines += [
        "",
        ("Below the baseline: " + ", ".join(below) + "." if below else
         "Every row is at or above the baseline."),
        "",
        f"Source of the official figures: {SOURCE}.",
        "",
    ]
    MD.write_text("\n".join(lines), encoding="utf-8")
    print(MD.read_text(encoding="utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.environ.get("STRUCTKIT_DATA"))
    ap.add_argument("--out", default=str(ROOT / "build" / "conll18"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dask", default=None, help="a Dask scheduler's address (or local:N)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        write_report(json.loads(JSON.read_text(encoding="utf-8")))
        return 0
    if not args.root:
        sys.exit("conll18: set STRUCTKIT_DATA or pass --root: the folder of the UD treebanks")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    b = build(args.root, out, args.jobs, args.dask)
    rows = treebank_rows(out)
    data = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "root": args.root, "build": b,
            "rows": rows, "not_built": not_built(out), "published": published(rows)}
    dump_json(data, JSON)
    write_report(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
