"""``nlp.pipe`` over many short texts against the same text analysed as one (issue 40, item 14).

A pipeline model (default: ``structkit models build ud:English-ParTUT/pipeline``, kept in
build/models) analyses the ``# text`` of each sentence of a treebank's training file (2,000 short
texts, one sentence each), loaded once, warm numba cache, in one process:

- **one text, CoNLL-U**: all texts joined by blank lines, ``nlp.to_conllu(text)`` (what
  ``structkit annotate`` does with the file, without start-up and writing);
- **one text, Doc**: the same as one ``nlp(text)``;
- **a call per text**: ``[nlp(t) for t in texts]`` (what ``nlp.pipe`` did before it grouped texts);
- **nlp.pipe**: ``list(nlp.pipe(texts))``, then with ``jobs=2``.

Each figure is the best of ``--repeat`` runs (CPU seconds of this process and its children, and
wall seconds). The outputs of every way are checked to be the same CoNLL-U. Writes
results/bench-pipe.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine  # noqa: E402

MODEL = ROOT / "build" / "models" / "ud-english-partut.pipeline.model"
TEXTS = "ud-english-partut/en_partut-ud-train.conllu"
OUT = ROOT / "results" / "bench-pipe.json"


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _best(fn, repeat: int) -> tuple[float, float, object]:
    cpu = wall = float("inf")
    out = None
    for _ in range(repeat):
        c0, w0 = _cpu(), time.perf_counter()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, _cpu() - c0)
    return round(cpu, 3), round(wall, 3), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not args.report_only:
        import structkit
        from structkit.config import resolve_data_path

        if not args.model.exists():
            args.model.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "structkit", "models", "build", "ud:English-ParTUT/pipeline",
                            "-o", str(args.model), "-q"], check=True)
        path = resolve_data_path(TEXTS)
        texts = [line[9:].rstrip("\n") for line in open(path, encoding="utf-8")
                 if line.startswith("# text = ")][:args.texts]
        nlp = structkit.load(str(args.model))
        nlp.to_conllu(texts[0])
        list(nlp.pipe(texts[:2], jobs=2))     # kernels loaded: a warm process
        joined = "\n\n".join(texts)
        rows = {}
        ways = {"one text, CoNLL-U": lambda: nlp.to_conllu(joined),
                "one text, Doc": lambda: nlp(joined).to_conllu(),
                "a call per text": lambda: "".join(nlp(t).to_conllu() for t in texts),
                "nlp.pipe": lambda: "".join(d.to_conllu() for d in nlp.pipe(texts)),
                "nlp.pipe, jobs=2": lambda: "".join(d.to_conllu() for d in nlp.pipe(texts, jobs=2))}
        outputs = {}
        for name, fn in ways.items():
            cpu, wall, out = _best(fn, args.repeat)
            rows[name] = {"cpu_seconds": cpu, "wall_seconds": wall}
            outputs[name] = out
            print(name, cpu, wall, file=sys.stderr, flush=True)
        per_text = {outputs[k] for k in ("a call per text", "nlp.pipe", "nlp.pipe, jobs=2")}
        obj = {"model": os.path.relpath(args.model, ROOT), "texts": len(texts), "words": sum(len(t.split()) for t in texts),
               "repeat": args.repeat, "rows": rows, "same_output_per_text_ways": len(per_text) == 1,
               "machine": machine(), "loadavg_before": [round(x, 2) for x in os.getloadavg()]}
        dump_json(obj, OUT)
    obj = json.loads(OUT.read_text())
    base = obj["rows"]["one text, CoNLL-U"]
    lines = ["# nlp.pipe over many short texts (issue 40, item 14)", "",
             f"`python scripts/bench_pipe.py` ({obj['machine']['date']}, commit {obj['machine']['commit']}, "
             f"{obj['machine']['cpu']}, {obj['machine']['cores']} cores; load average before "
             f"{obj['loadavg_before']}). Model `{obj['model']}`; {obj['texts']} texts (the `# text` of "
             f"each sentence of UD English-ParTUT's training file, {obj['words']} whitespace words), loaded "
             f"once, warm numba cache, best of {obj['repeat']} runs. Ratio: CPU seconds over those of "
             "*one text, CoNLL-U* (the texts joined by blank lines, `nlp.to_conllu`: `annotate`'s work "
             "without start-up). The per-text ways give the same CoNLL-U: "
             f"{'yes' if obj['same_output_per_text_ways'] else 'NO'}.", "",
             "| way | CPU s | wall s | CPU ratio |", "|---|---|---|---|"]
    order = ["one text, CoNLL-U", "one text, Doc", "a call per text", "nlp.pipe", "nlp.pipe, jobs=2"]
    for name, r in sorted(obj["rows"].items(), key=lambda kv: order.index(kv[0])):
        lines.append(f"| {name} | {r['cpu_seconds']:.2f} | {r['wall_seconds']:.2f} | "
                     f"{r['cpu_seconds'] / base['cpu_seconds']:.2f} |")
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
