"""Words per CPU second of a whole UD pipeline, stage by stage, on two source trees in one run
(issue 42): the current tree against a baseline (default: the last commit before issue 42's
work, checked out by ``git worktree`` into a temporary folder).

For each treebank (default: Italian ParTUT and Turkish IMST), a pipeline model trained with the
defaults on its train and dev files (kept in build/bench-pipeline/, trained once by this tree)
analyses the raw text of its test file five times over (the test text repeated, as issue 42
measures it), loaded once, in a process per tree and run, numba cache warm (a first call on a
few sentences before the timing). Each figure is the best of ``--repeat`` runs, the trees
alternating:

- **load**: ``structkit.load(model)``, CPU seconds (numpy's and structkit's imports included);
  the baseline reads the model file as trained, this tree the same model saved again by this
  tree (its file format; the outputs, checked to be the same bytes, say the weights are too);
- per stage, CPU seconds over the same batches of sentences ``annotate`` makes (1,024 sentences):
  **tokenize** (the tokenizer's sentences, held as CoNLL-U lines), **morph**, **parse**,
  **write** (CoNLL-U text);
- **whole**: ``nlp.to_conllu(text)``, what ``annotate`` runs without start-up and loading, and
  its words per CPU second: timed first, then the model is loaded again for the stages (a
  loaded model keeps what it computed per word type). The outputs of both trees, whole and
  staged, are checked to be the same bytes.

And, for both trees, the ``annotate`` process on a file of at least 50,000 words (the test text
repeated; start-up, loading and writing included), its wall and CPU seconds, with ``--jobs 1``
and ``--jobs 2`` (the default, every core, is 2 here), the outputs checked to be the same bytes;
and the training of each pipeline in each tree (``_train_memory``: peak resident memory and CPU
seconds; ``--no-train`` skips it, about 5 min). Writes results/bench-pipeline-speed.json and .md,
with the load average beside each figure.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from common import annotate_process, dump_json, machine  # noqa: E402

BASE = "3f42e39"   # main before issue 42's work
TREEBANKS = {"it_partut": "ud-italian-partut/it_partut-ud", "tr_imst": "ud-turkish-imst/tr_imst-ud"}
COPIES = 5
ANNOTATE_WORDS = 50_000
OUT = ROOT / "results" / "bench-pipeline-speed.json"

WORKER = r'''
import hashlib, io, json, sys, time
import structkit
from structkit.components import batches
from structkit.io.document import text_bytes, write_conllu
from structkit.pipeline.annotate import BATCH

model, path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
cpu = time.process_time
t = cpu(); nlp = structkit.load(model); load = cpu() - t
nlp.to_conllu(text[:2000])                       # numba loaded, kernels compiled or read
t = cpu(); whole = nlp.to_conllu(text); whole_cpu = cpu() - t
nlp = structkit.load(model)                      # again: what a model keeps between calls, forgotten
nlp.to_conllu(text[:2000])
chain = nlp.chain
stages = {"tokenize": 0.0, "morph": 0.0, "parse": 0.0, "write": 0.0}
names = {0: "morph", 1: "parse"}
t = cpu(); sents = list(chain.tokenizer.sentences(io.BytesIO(text_bytes(text)), "<text>")); stages["tokenize"] = cpu() - t
out = io.StringIO()
for chunk in batches(iter(sents), BATCH):
    for k, c in enumerate(chain.analysers):
        t = cpu(); c.process(chunk, "<text>"); stages[names.get(k, "parse")] += cpu() - t
    t = cpu(); write_conllu(chunk, out); stages["write"] += cpu() - t
words = sum(1 for line in whole.split("\n") if line[:1].isdigit() and line.split("\t", 1)[0].isdigit())
print(json.dumps({"load": load, **stages, "whole": whole_cpu, "words": words,
                  "sha": hashlib.sha256(whole.encode()).hexdigest()[:16],
                  "staged_sha": hashlib.sha256(out.getvalue().encode()).hexdigest()[:16]}))
'''


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _worker(tree: str, model: str, text: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    p = subprocess.run([sys.executable, "-c", WORKER, model, text], env=env, capture_output=True,
                       text=True, cwd=tempfile.gettempdir())
    if p.returncode != 0:
        sys.exit(f"{tree}: the worker failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])



def _train_memory(tree: str, data: Path, name: str) -> dict:
    """Peak resident memory (MiB, the process's ru_maxrss) and CPU seconds of training the
    pipeline with the defaults on the treebank's train and dev files, in ``tree``; the tiny
    test treebank is trained first through the same stages, so that numba's cache of that tree
    holds the kernels (the peak is training's, not the compiler's)."""
    env = {**os.environ, "PYTHONPATH": tree}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tiny = Path(tree) / "tests" / "fixtures" / "tiny_ud" / "train.conllu"
    stem = data / TREEBANKS[name]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "structkit", "train", "--task", "pipeline", "--train", str(tiny),
                        "--dev", str(tiny), "--model", f"{d}/tiny.model", "-q"], env=env, cwd=d, check=True)
        p = subprocess.Popen([sys.executable, "-m", "structkit", "train", "--task", "pipeline", "--train",
                              f"{stem}-train.conllu", "--dev", f"{stem}-dev.conllu", "--model", f"{d}/m.model",
                              "-q"], env=env, cwd=d)
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{tree}: training {name} failed")
    return {"peak_mib": round(ru.ru_maxrss / 1024, 1), "cpu": round(ru.ru_utime + ru.ru_stime, 2)}


def _model(name: str, data: Path) -> str:
    folder = ROOT / "build" / "bench-pipeline"
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / f"{name}.model"
    if not model.exists():
        stem = data / TREEBANKS[name]
        print(f"training {model} ...", flush=True)
        subprocess.run([sys.executable, "-m", "structkit", "train", "--task", "pipeline", "--train",
                        f"{stem}-train.conllu", "--dev", f"{stem}-dev.conllu", "--model", str(model), "-q"],
                       check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tempfile.gettempdir())
    return str(model)


def _resaved(model: str) -> str:
    """The same model written by this tree (its file format: the baseline may not read it), for
    this tree's runs; the baseline's runs read the file as trained."""
    out = Path(model).with_suffix(".this-tree.model")
    subprocess.run([sys.executable, "-c", "import sys; from structkit.pipeline.model import load_pipeline; "
                    "load_pipeline(sys.argv[1]).save(sys.argv[2])", model, str(out)],
                   check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tempfile.gettempdir())
    return str(out)


def run(data: Path, base: str, repeat: int, names: list[str], train_memory: bool = True) -> dict:
    sys.path.insert(0, str(ROOT))
    from structkit.tokenizer.task import raw_text

    res: dict = {"machine": machine(), "base": base, "copies": COPIES, "treebanks": {}}
    with tempfile.TemporaryDirectory(prefix="structkit-bench-pipeline-") as tmp:
        base_tree = str(Path(tmp) / "base")
        subprocess.run(["git", "worktree", "add", "--detach", base_tree, base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            for name in names:
                model = _model(name, data)
                models = {"base": model, "new": _resaved(model)}
                sizes = {side: os.path.getsize(m) for side, m in models.items()}
                text = Path(tmp) / f"{name}.txt"
                text.write_text(raw_text(str(data / f"{TREEBANKS[name]}-test.conllu")) * COPIES, encoding="utf-8")
                row: dict = {"load_before": _load()}
                runs: dict[str, list[dict]] = {"base": [], "new": []}
                for _ in range(repeat):
                    for side, tree in (("base", base_tree), ("new", str(ROOT))):
                        runs[side].append(_worker(tree, models[side], str(text)))
                for side, rs in runs.items():
                    shas = {r["sha"] for r in rs} | {r["staged_sha"] for r in rs}
                    best = {k: round(min(r[k] for r in rs), 3) for k in ("load", "tokenize", "morph", "parse", "write", "whole")}
                    best["words"] = rs[0]["words"]
                    best["sha"] = rs[0]["sha"]
                    best["same_output_every_run"] = len(shas) == 1
                    best["model_bytes"] = sizes[side]
                    row[side] = best
                row["same_output_both_trees"] = row["base"]["sha"] == row["new"]["sha"]
                # the annotate process on a file of at least ANNOTATE_WORDS words: the test text repeated
                per_copy = row["new"]["words"] / COPIES
                copies = -(-ANNOTATE_WORDS // int(per_copy))
                big = Path(tmp) / f"{name}-big.txt"
                big.write_text(raw_text(str(data / f"{TREEBANKS[name]}-test.conllu")) * copies, encoding="utf-8")
                row["annotate_words"] = round(per_copy * copies)
                ann: dict = {}
                for _ in range(repeat):
                    for side, tree in (("base", base_tree), ("new", str(ROOT))):
                        for jobs in (1, 2):
                            ann.setdefault(f"{side}_jobs{jobs}", []).append(annotate_process(tree, models[side], str(big), jobs))
                for key, rs in ann.items():
                    row["annotate_" + key] = min(rs, key=lambda r: r["wall"])
                row["annotate_same_output"] = len({r["sha"] for rs in ann.values() for r in rs}) == 1
                if train_memory:
                    row["train"] = {side: _train_memory(tree, data, name)
                                    for side, tree in (("base", base_tree), ("new", str(ROOT)))}
                row["load_after"] = _load()
                res["treebanks"][name] = row
                print(name, json.dumps(row), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", base_tree], cwd=ROOT, capture_output=True)
    return res


def report(res: dict) -> str:
    m = res["machine"]
    lines = [
        "# Whole UD pipeline: words per CPU second, stage by stage",
        "",
        f"`python scripts/bench_pipeline_speed.py` at {m['commit']} against {res['base']} (main before "
        f"issue 42's work), {m['cpu']} ({m['cores']} cores), {m['date']}. Test raw text x{res['copies']}, "
        "model loaded, one process, numba cache warm; CPU seconds, best of the runs, the trees "
        "alternating. Words per CPU second are the whole run's (`nlp.to_conllu`). *load*: "
        "`structkit.load`, what it imports included (numpy and structkit's modules). The baseline "
        "reads the model file as trained; this tree reads the same model saved again by it (its own "
        "file format, which the baseline may not read): the same weights, checked by the same output.",
        "",
        "| treebank | tree | words | model MB | load | tokenize | morph | parse | write | whole | words / CPU s | same output | load average before / after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["treebanks"].items():
        for side in ("base", "new"):
            b = r[side]
            mb = f"{b['model_bytes'] / 1e6:.1f}" if "model_bytes" in b else "-"
            lines.append(f"| {name} | {side} | {b['words']:,} | {mb} | {b['load']} | {b['tokenize']} | {b['morph']} | "
                         f"{b['parse']} | {b['write']} | {b['whole']} | {b['words'] / b['whole']:,.0f} | "
                         f"{'yes' if r['same_output_both_trees'] else 'NO'} | "
                         f"{', '.join(map(str, r['load_before']))} / {', '.join(map(str, r['load_after']))} |")
    lines += ["", "`annotate` of a file of at least 50,000 words as a process (the test text repeated; "
              "start-up, loading and writing included), best wall time, both trees alternating:", "",
              "| treebank | tree | words | --jobs 1: wall s (CPU s) | words / wall s | --jobs 2: wall s (CPU s) | words / wall s | same output |",
              "|---|---|---|---|---|---|---|---|"]
    for name, r in res["treebanks"].items():
        w = r["annotate_words"]
        for side in ("base", "new"):
            a, b = r.get(f"annotate_{side}_jobs1"), r.get(f"annotate_{side}_jobs2")
            if a is None:
                continue
            same = "yes" if r.get("annotate_same_output") else "NO"
            lines.append(f"| {name} | {side} | {w:,} | {a['wall']} ({a['cpu']}) | {w / a['wall']:,.0f} | "
                         f"{b['wall']} ({b['cpu']}) | {w / b['wall']:,.0f} | {same} |")
    trained = [(name, r["train"]) for name, r in res["treebanks"].items() if "train" in r]
    if trained:
        lines += ["", "Training the pipeline (`structkit train --task pipeline` with the defaults, train and dev "
                  "files; numba's cache warm), each tree once: the process's peak resident memory "
                  "(ru_maxrss, MiB) and CPU seconds:", "",
                  "| treebank | tree | peak memory MiB | CPU s |", "|---|---|---|---|"]
        for name, t in trained:
            for side in ("base", "new"):
                lines.append(f"| {name} | {side} | {t[side]['peak_mib']} | {t[side]['cpu']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("STRUCTKIT_DATA", "")))
    ap.add_argument("--base", default=BASE, help="the baseline commit")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=sorted(TREEBANKS), default=sorted(TREEBANKS))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--no-train", action="store_true", help="skip the training memory runs")
    args = ap.parse_args()
    if args.report_only:
        res = json.loads(OUT.read_text())
    else:
        if not (args.data / TREEBANKS["it_partut"]).parent.is_dir():
            sys.exit("bench_pipeline_speed.py: set STRUCTKIT_DATA (or --data) to the folder with the UD treebanks")
        res = run(args.data, args.base, args.repeat, args.only, not args.no_train)
        dump_json(res, OUT)
    OUT.with_suffix(".md").write_text(report(res))
    print(report(res))


if __name__ == "__main__":
    main()
