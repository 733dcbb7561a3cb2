"""``nlp.pipe`` and ``annotate`` over many short texts, one core against two (issues 40 and 42),
on this tree and a baseline tree in the same run.

A pipeline model (default: ``structkit models build ud:English-ParTUT/pipeline``, built by the
baseline tree, below) analyses the ``# text`` of each sentence of a treebank's training file (2,000 short
texts, one sentence each). In a process per tree (the trees alternating, ``--repeat`` times;
loaded once, warm numba cache):

- **one text, CoNLL-U**: all texts joined by blank lines, ``nlp.to_conllu(text)`` (what
  ``structkit annotate`` does with the file, without start-up and writing);
- **one text, Doc**: the same as one ``nlp(text)``;
- **a call per text**: ``[nlp(t) for t in texts]``;
- **nlp.pipe**: ``list(nlp.pipe(texts))``, then with ``jobs=2``; each Doc written as CoNLL-U.

Then the ``annotate`` process on the same texts as one file (blank lines between them; start-up,
loading and writing included), ``--jobs 1`` and ``--jobs 2``, for each tree.

Each figure is the best of the runs (CPU seconds of the process and its children, and wall
seconds). The outputs of the per-text ways and of annotate are checked to be the same bytes.
The baseline (``--base``, default the last commit before this round of issue 42's work) is checked
out by ``git worktree`` into a temporary folder. Without ``--model``, the baseline tree builds the
model (``models build ud:English-ParTUT/pipeline``, kept as build/bench-pipe/english-partut.BASE.model)
so that it can read it whatever file format this tree writes; the baseline reads the model as
built, this tree the same model saved again by this tree (its own file format; the same bytes out
say the weights are the same). Writes results/bench-pipe.json and .md.
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

MODELS = ROOT / "build" / "bench-pipe"
TEXTS = "ud-english-partut/en_partut-ud-train.conllu"
OUT = ROOT / "results" / "bench-pipe.json"
BASE = "d0307d1"   # main before this round of issue 42's work
WAYS = ["one text, CoNLL-U", "one text, Doc", "a call per text", "nlp.pipe", "nlp.pipe, jobs=2"]

WORKER = r'''
import hashlib, json, resource, sys, time
import structkit

model, path = sys.argv[1], sys.argv[2]
texts = json.load(open(path, encoding="utf-8"))

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

nlp = structkit.load(model)
nlp.to_conllu(texts[0])
list(nlp.pipe(texts[:2], jobs=2))     # kernels loaded: a warm process
joined = "\n\n".join(texts)
ways = {"one text, CoNLL-U": lambda: nlp.to_conllu(joined),
        "one text, Doc": lambda: nlp(joined).to_conllu(),
        "a call per text": lambda: "".join(nlp(t).to_conllu() for t in texts),
        "nlp.pipe": lambda: "".join(d.to_conllu() for d in nlp.pipe(texts)),
        "nlp.pipe, jobs=2": lambda: "".join(d.to_conllu() for d in nlp.pipe(texts, jobs=2))}
out = {}
for name, fn in ways.items():
    c0, w0 = cpu(), time.perf_counter()
    got = fn()
    out[name] = {"cpu": round(cpu() - c0, 3), "wall": round(time.perf_counter() - w0, 3),
                 "sha": hashlib.sha256(got.encode()).hexdigest()[:16]}
print(json.dumps(out))
'''


def _run(tree: str, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": tree}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          cwd=tempfile.gettempdir())


def _ways(tree: str, model: str, texts: str) -> dict:
    p = _run(tree, ["-c", WORKER, model, texts])
    if p.returncode != 0:
        sys.exit(f"{tree}: the worker failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])



def _base_model(base_tree: str, base: str) -> Path:
    """The English ParTUT pipeline built by the baseline tree (kept under build/bench-pipe): a file
    the baseline can read; this tree reads every older format."""
    sha = subprocess.run(["git", "rev-parse", "--short", base], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    model = MODELS / f"english-partut.{sha}.model"
    if not model.exists():
        MODELS.mkdir(parents=True, exist_ok=True)
        tmp = model.with_suffix(".part.model")
        p = _run(base_tree, ["-m", "structkit", "models", "build", "ud:English-ParTUT/pipeline",
                             "-o", str(tmp), "-q"])
        if p.returncode != 0:
            sys.exit(f"{base_tree}: models build failed:\n{p.stderr}")
        os.replace(tmp, model)
    return model


def run(model: Path | None, base: str, n_texts: int, repeat: int) -> dict:
    from structkit.config import resolve_data_path

    path = resolve_data_path(TEXTS)
    texts = [line[9:].rstrip("\n") for line in open(path, encoding="utf-8")
             if line.startswith("# text = ")][:n_texts]
    res: dict = {"machine": machine(), "base": base, "texts": len(texts),
                 "words": sum(len(t.split()) for t in texts), "repeat": repeat,
                 "loadavg_before": [round(x, 2) for x in os.getloadavg()], "trees": {}}
    with tempfile.TemporaryDirectory(prefix="structkit-bench-pipe-") as tmp:
        base_tree = str(Path(tmp) / "base")
        subprocess.run(["git", "worktree", "add", "--detach", base_tree, base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            if model is None:
                model = _base_model(base_tree, base)
            res["model"] = os.path.relpath(model, ROOT)
            resaved = str(Path(tmp) / "this-tree.model")
            p = _run(str(ROOT), ["-c", "import sys; from structkit.pipeline.model import load_pipeline; "
                                 "load_pipeline(sys.argv[1]).save(sys.argv[2])", str(model), resaved])
            if p.returncode != 0:
                sys.exit(p.stderr)
            trees = {"base": (base_tree, str(model)), "new": (str(ROOT), resaved)}
            listed = Path(tmp) / "texts.json"
            listed.write_text(json.dumps(texts), encoding="utf-8")
            joined = Path(tmp) / "texts.txt"
            joined.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
            runs: dict = {side: {} for side in trees}
            for _ in range(repeat):
                for side, (tree, m) in trees.items():
                    for name, r in _ways(tree, m, str(listed)).items():
                        runs[side].setdefault(name, []).append(r)
                    for jobs in (1, 2):
                        runs[side].setdefault(f"annotate --jobs {jobs}", []).append(annotate_process(tree, m, str(joined), jobs))
                    print(side, {k: v[-1] for k, v in runs[side].items()}, file=sys.stderr, flush=True)
            for side, ways in runs.items():
                res["trees"][side] = {name: {"cpu_seconds": min(r["cpu"] for r in rs),
                                             "wall_seconds": min(r["wall"] for r in rs)}
                                      for name, rs in ways.items()}
            per_text = {r["sha"] for ways in runs.values() for name, rs in ways.items() for r in rs
                        if name in ("a call per text", "nlp.pipe", "nlp.pipe, jobs=2")}
            annotated = {r["sha"] for ways in runs.values() for name, rs in ways.items() for r in rs
                         if name.startswith("annotate")}
            res["same_output_per_text_ways"] = len(per_text) == 1
            res["same_output_annotate"] = len(annotated) == 1
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", base_tree], cwd=ROOT, capture_output=True)
    res["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    return res


def report(obj: dict) -> str:
    m = obj["machine"]
    lines = ["# nlp.pipe and annotate over many short texts (issues 40 and 42)", "",
             f"`python scripts/bench_pipe.py` at {m['commit']} against {obj['base']}, {m['date']}, {m['cpu']}, "
             f"{m['cores']} cores; load average before {obj['loadavg_before']}, after {obj['loadavg_after']}. "
             f"Model `{obj['model']}`; {obj['texts']} texts (the `# text` of each sentence of UD "
             f"English-ParTUT's training file, {obj['words']} whitespace words), warm numba cache, best of "
             f"{obj['repeat']} runs, the trees alternating. CPU: the process's and its children's. "
             "*x jobs=1*: the wall seconds of the same way with one process over these. The per-text "
             "ways give the same CoNLL-U on both trees: "
             f"{'yes' if obj['same_output_per_text_ways'] else 'NO'}; every annotate run the same file: "
             f"{'yes' if obj['same_output_annotate'] else 'NO'}.", "",
             "| way | tree | CPU s | wall s | x jobs=1 (wall) |", "|---|---|---|---|---|"]
    for name in WAYS + ["annotate --jobs 1", "annotate --jobs 2"]:
        for side in ("base", "new"):
            r = obj["trees"][side][name]
            one = {"nlp.pipe, jobs=2": "nlp.pipe", "annotate --jobs 2": "annotate --jobs 1"}.get(name)
            speed = f"{obj['trees'][side][one]['wall_seconds'] / r['wall_seconds']:.2f}" if one else ""
            lines.append(f"| {name} | {side} | {r['cpu_seconds']:.2f} | {r['wall_seconds']:.2f} | {speed} |")
    lines += ["", "`annotate` includes the process's start-up (Python, imports, loading the model, numba's "
              "cached kernels): the part two processes cannot share."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=None,
                    help="a model both trees read (default: built by the baseline tree)")
    ap.add_argument("--base", default=BASE, help="the baseline commit")
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not args.report_only:
        sys.path.insert(0, str(ROOT))
        dump_json(run(args.model, args.base, args.texts, args.repeat), OUT)
    obj = json.loads(OUT.read_text())
    OUT.with_suffix(".md").write_text(report(obj), encoding="utf-8")
    print(report(obj))


if __name__ == "__main__":
    main()
