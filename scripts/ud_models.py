"""A pipeline for every UD treebank here, three ways (issue 43, items 1 and 2): `structkit models
build --all --from ROOT` with `--jobs 2`, the same on a Dask LocalCluster (`--dask local:2`), and
a run interrupted with Ctrl-C (SIGINT to its process group) once its first model is written and
then resumed with `--skip-existing`. Checks that the three give the same models (the summary's
fingerprints), that the interrupted run left no temporary file, and records each run's wall and
CPU time (this process's children: the command and its workers) and the summary table.

    python scripts/ud_models.py [--root DIR] [--out build/ud-models]
    python scripts/ud_models.py --report-only      # the .md from the .json

ROOT defaults to $STRUCTKIT_DATA (here ../shared/data, whose UD treebanks without a training
file are skipped with the reason). Writes results/ud-models.json and results/ud-models.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, children_cpu, dump_json, machine  # noqa: E402

JSON = RESULTS / "ud-models.json"
MD = RESULTS / "ud-models.md"


def run(args: list, interrupt_in: Path | None = None) -> dict:
    """Run the CLI in its own process group; with ``interrupt_in``, send the group SIGINT as
    soon as a model appears in that folder (Ctrl-C at a terminal does the same)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cpu0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "structkit", *map(str, args)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # SIGINT as at a terminal, even where this script was started with it
                         # ignored (a shell's background job without job control), which the
                         # command would inherit: its interrupted run then ran to the end
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    interrupted = False
    if interrupt_in is not None:
        while p.poll() is None and not any(interrupt_in.glob("[!.]*.model")):
            time.sleep(0.2)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)
            interrupted = True
    out, err = p.communicate()
    return {"args": [str(a) for a in args], "code": p.returncode, "interrupted": interrupted,
            "wall_seconds": round(time.perf_counter() - t0, 1), "cpu_seconds": round(children_cpu() - cpu0, 1),
            "stdout": out, "stderr": err}


def fingerprints(folder: Path) -> dict[str, str]:
    """model file -> its fingerprint (``structkit.builds.fingerprint``: the arrays and settings of
    the model and of each pipeline part, not the cards' times), for every model in ``folder``."""
    from structkit.builds import fingerprint

    return {p.name: fingerprint(str(p)) for p in sorted(folder.glob("*.model"))}


def measure(root: str, out: Path) -> dict:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    base = ["models", "build", "--all", "--from", root]
    runs = {}
    runs["jobs2"] = run(base + ["--output-dir", out / "jobs2", "--jobs", "2"])
    runs["dask"] = run(base + ["--output-dir", out / "dask", "--dask", "local:2"])
    runs["interrupted"] = run(base + ["--output-dir", out / "resumed", "--jobs", "2"], interrupt_in=out / "resumed")
    runs["interrupted"]["left"] = sorted(p.name for p in (out / "resumed").iterdir())
    runs["resumed"] = run(base + ["--output-dir", out / "resumed", "--jobs", "2", "--skip-existing"])
    for name, sub in (("jobs2", "jobs2"), ("dask", "dask"), ("resumed", "resumed")):
        runs[name]["summary"] = (out / sub / "summary.md").read_text(encoding="utf-8")
        runs[name]["fingerprints"] = fingerprints(out / sub)
    return {"root": root, "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"), "runs": runs}


def write_report(data: dict) -> None:
    runs = data["runs"]
    fp = runs["jobs2"]["fingerprints"]   # model file -> fingerprint
    same = {k: runs[k]["fingerprints"] == fp for k in ("dask", "resumed")}
    tmp_left = [n for n in runs["interrupted"].get("left", []) if n.startswith(".tmp-")]
    lines = [
        "# A pipeline for every UD treebank here",
        "",
        f"`python scripts/ud_models.py` ({data['date']}; {data['machine'].get('cpu', '?')}, "
        f"{data['machine'].get('cores', '?')} cores): `structkit models build --all --from {data['root']}`, "
        "every treebank a pipeline with the defaults, three ways. Scores are the card's test scores: the "
        "model annotates the test file's raw text and the CoNLL 2018 evaluation scores it (F1).",
        "",
        "| run | wall s | CPU s | models | same models as --jobs 2 |",
        "|---|---:|---:|---:|---|",
    ]
    for key, label in (("jobs2", "`--jobs 2`"), ("dask", "`--dask local:2` (a LocalCluster of 2 workers)"),
                       ("interrupted", "`--jobs 2`, Ctrl-C after the first model"),
                       ("resumed", "the same, resumed with `--skip-existing`")):
        r = runs[key]
        n = len(r.get("fingerprints", {})) if "fingerprints" in r else \
            sum(1 for n in r.get("left", []) if n.endswith(".model"))
        same_text = "" if key in ("jobs2", "interrupted") else ("yes" if same[key] else "**no**")
        lines.append(f"| {label} | {r['wall_seconds']:.1f} | {r['cpu_seconds']:.1f} | {n} | {same_text} |")
    lines += [
        "",
        f"The interrupted run exited with {runs['interrupted']['code']} and left "
        f"{len(tmp_left)} temporary files ({'none' if not tmp_left else ', '.join(tmp_left)}). "
        "CPU seconds are this script's children's (the command and its worker processes; for Dask the "
        "cluster's workers are the command's children too).",
        "",
        "The summary of the `--jobs 2` run (`summary.md`; its model column is the fingerprint as "
        "`models build` computed it then, see below):",
        "",
        runs["jobs2"]["summary"].rstrip(),
        "",
        "Each model's fingerprint in the three runs (`structkit.builds.fingerprint`, from the model files"
        + (f", recomputed at {data['refingerprinted']} with `--refingerprint`: the first definition hashed "
           "a pipeline's parts whole, their cards' training times with them, so that no two runs agreed"
           if data.get("refingerprinted") else "") + "):",
        "",
        "| model | --jobs 2 | --dask local:2 | interrupted, resumed |",
        "|---|---|---|---|",
    ]
    for name, f in fp.items():
        lines.append(f"| {name} | {f} | {runs['dask']['fingerprints'].get(name, '-')} | "
                     f"{runs['resumed']['fingerprints'].get(name, '-')} |")
    lines.append("")
    MD.write_text("\n".join(lines), encoding="utf-8")
    print(MD.read_text(encoding="utf-8"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.environ.get("STRUCTKIT_DATA"))
    ap.add_argument("--out", default=str(ROOT / "build" / "ud-models"))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--refingerprint", action="store_true",
                    help="recompute the fingerprints of the models the last run left in --out (its "
                         "summaries' model column had the first definition, which hashed a pipeline's "
                         "parts with their cards' times), then write the report")
    a = ap.parse_args()
    if a.refingerprint:
        data = json.loads(JSON.read_text(encoding="utf-8"))
        for name in ("jobs2", "dask", "resumed"):
            data["runs"][name]["fingerprints"] = fingerprints(Path(a.out) / name)
        data["refingerprinted"] = machine()["commit"]
        dump_json(data, JSON)
        write_report(data)
        return
    if a.report_only:
        write_report(json.loads(JSON.read_text(encoding="utf-8")))
        return
    if not a.root:
        sys.exit("give --root DIR or set $STRUCTKIT_DATA")
    data = measure(a.root, Path(a.out))
    dump_json(data, JSON)
    write_report(data)


if __name__ == "__main__":
    main()
