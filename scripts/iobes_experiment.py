"""Does the label scheme matter to the default perceptron? Train and test files converted with
scripts/convert_scheme.py to IOB2 and to IOBES (and the original files as they are), the README's
command (`structkit train --task ner --train FILE --model M`, today's defaults: perceptron, no dev
set), `structkit ner`, then `structkit eval --json` on the predictions (phrase F1, each in its
own scheme, exactly as conlleval for IOB1/IOB2). CoNLL-2002 Spanish esp.train -> esp.testb for
seeds 0, 1, 2; CoNLL-2000 chunking train -> test for seed 0. Writes results/iobes.json/.md.

    python scripts/iobes_experiment.py [--seeds 0,1,2] [--no-chunk] [--out results/iobes]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, machine, structkit  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {"ner": ("conll2002/esp.train", "conll2002/esp.testb", "ner"),
           "chunk": ("conll2000/train.txt", "conll2000/test.txt", "chunk")}
SCHEMES = ("original", "iob2", "iobes")


def convert(src: str, scheme: str, out: Path) -> str:
    if scheme == "original":
        return src
    subprocess.run([sys.executable, str(ROOT / "scripts" / "convert_scheme.py"), "--to", scheme, src, "-o", str(out)],
                   check=True)
    return str(out)


def run(task: str, scheme: str, seed: int, tmp: Path) -> dict:
    train_src, test_src, command = CORPORA[task]
    train = convert(resolve_data_path(train_src, must_exist=True), scheme, tmp / f"{task}.train.{scheme}")
    test = convert(resolve_data_path(test_src, must_exist=True), scheme, tmp / f"{task}.test.{scheme}")
    model, pred = tmp / "m.model", tmp / "pred.txt"
    wall, _ = structkit("train", "--task", task, "--train", train, "--model", model, "--seed", seed, "-q")
    structkit(command, "--model", model, test, "-o", pred)
    _, ev = structkit("eval", "--task", task, pred, "--json")
    e = json.loads(ev.stdout)
    row = {"task": task, "train": train_src, "test": test_src, "scheme": scheme, "seed": seed,
           "f1": round(e["f1"], 2), "precision": round(e["precision"], 2), "recall": round(e["recall"], 2),
           "detected_scheme": e.get("scheme"), "train_wall_seconds": round(wall, 2)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--no-chunk", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "iobes"))
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for seed in seeds:
            for scheme in SCHEMES:
                rows.append(run("ner", scheme, seed, tmp))
        if not args.no_chunk:
            for scheme in SCHEMES:
                rows.append(run("chunk", scheme, 0, tmp))
    cmd = "python scripts/iobes_experiment.py" + (f" --seeds {args.seeds}" if args.seeds != "0,1,2" else "") \
        + (" --no-chunk" if args.no_chunk else "")
    summary = {}
    for task in ("ner", "chunk"):
        for scheme in SCHEMES:
            f = [r["f1"] for r in rows if r["task"] == task and r["scheme"] == scheme]
            if f:
                summary[f"{task}/{scheme}"] = {"mean": round(statistics.mean(f), 2),
                                               "sd": round(statistics.stdev(f), 2) if len(f) > 1 else None}
    obj = {"command": cmd, "machine": machine(), "rows": rows, "summary": summary}
    dump_json(obj, Path(args.out + ".json"))
    m = obj["machine"]
    lines = ["# Label schemes: the default perceptron on original, IOB2 and IOBES labels", "",
             f"`{cmd}` ({m['date']}, commit {m['commit']}). Train and test converted the same way by "
             "`scripts/convert_scheme.py --to SCHEME`; `structkit train --task T --train FILE --model M "
             "--seed S` (defaults otherwise: perceptron, 20 epochs, no dev set), phrase F1 by "
             "`structkit eval --json` in the files' own scheme (the original files are detected as IOB1).", ""]
    for task, title in (("ner", "CoNLL-2002 Spanish NER, esp.train -> esp.testb"),
                        ("chunk", "CoNLL-2000 chunking, train -> test")):
        trs = [r for r in rows if r["task"] == task]
        if not trs:
            continue
        tseeds = sorted({r["seed"] for r in trs})
        lines += [f"## {title}", "", "| scheme | " + " | ".join(f"seed {s} F1" for s in tseeds) + " | mean | sd |",
                  "|---|" + "---|" * (len(tseeds) + 2)]
        for scheme in SCHEMES:
            f = {r["seed"]: r["f1"] for r in trs if r["scheme"] == scheme}
            s = summary[f"{task}/{scheme}"]
            lines.append(f"| {scheme} | " + " | ".join(str(f[x]) for x in tseeds)
                         + f" | {s['mean']} | {s['sd'] if s['sd'] is not None else '-'} |")
        lines.append("")
    Path(args.out + ".md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
