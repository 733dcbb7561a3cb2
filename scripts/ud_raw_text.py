"""From raw text to labelled trees, as a user runs it (issue 27's end-to-end acceptance):
results/ud-raw-text.json and results/ud-raw-text.md.

    python scripts/ud_raw_text.py [--only ud-italian-partut] [--out results/ud-raw-text]

For each treebank (Italian ParTUT, Turkish IMST), with today's defaults and the commands of the
README, each trained on the training file with the dev file for selection:

    structkit train --task tokenize --train TRAIN --dev DEV --model tok.model
    structkit train --task pos      --train TRAIN --dev DEV --model pos.model
    structkit train --task parse    --train TRAIN --dev DEV --model parse.model
    structkit tag -m pos.model --text TEST.txt --tokenizer tok.model --format conllu \\
        | structkit parse -m parse.model -
    structkit eval --task ud TEST.conllu SYSTEM.conllu --json

TEST.txt is the test file's raw text (``structkit.tokenizer.task.raw_text``: each sentence's
``# text``, a paragraph's sentences joined by a space, a blank line between paragraphs), as
the CoNLL 2018 shared task gives it. The same tagger and parser are also run on the gold
tokens (TEST.conllu), and on the raw text through the English rules (``--lang en``: what a
user got before the learnt tokenizer), so the table shows what the tokenizer costs and saves.
The training times are with a warm numba cache (``NUMBA_CACHE``, recorded in the JSON and said
in the report): each task is first trained, untimed, for one epoch on the same files.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, numba_cache, structkit  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402

TREEBANKS = {
    "ud-italian-partut": "it_partut-ud-{}.conllu",
    "ud-turkish-imst": "tr_imst-ud-{}.conllu",
}
METRICS = ("tokens", "words", "sentences", "upos", "uas", "las")
NUMBA_CACHE = numba_cache("warm", "each task's kernels compiled by an untimed 1-epoch run on the same files "
                                  "first")


def _f1(ev: dict, metric: str) -> float:
    m = ev[metric] if metric in ev else ev["metrics"][metric]
    return round(m["f1"], 2)


def pipe(commands: list[list[str]], out: Path) -> float:
    """Run structkit commands joined by pipes into ``out``; wall seconds."""
    t0 = time.perf_counter()
    procs, stdin = [], None
    with open(out, "w") as sink:
        for i, args in enumerate(commands):
            last = i == len(commands) - 1
            p = subprocess.Popen([sys.executable, "-m", "structkit", *map(str, args)], stdin=stdin,
                                 stdout=sink if last else subprocess.PIPE, stderr=subprocess.PIPE)
            if stdin is not None:
                stdin.close()
            stdin = p.stdout
            procs.append(p)
        for p, args in zip(procs, commands):
            err = p.stderr.read().decode()
            if p.wait() != 0:
                sys.exit(f"structkit {' '.join(map(str, args))} failed:\n{err}")
    return time.perf_counter() - t0


def run_one(name: str, tmp: Path) -> dict:
    from structkit.tokenizer.task import raw_text

    stem = TREEBANKS[name]
    train, dev, test = (resolve_data_path(f"{name}/{stem.format(s)}", must_exist=True)
                        for s in ("train", "dev", "test"))
    models, seconds = {}, {}
    for task in ("tokenize", "pos", "parse"):   # untimed: the numba cache warm (NUMBA_CACHE)
        structkit("train", "--task", task, "--train", train, "--dev", dev, "--epochs", "1",
                  "--model", tmp / f"{name}-{task}.warm.model", "-q")
    for task in ("tokenize", "pos", "parse"):
        models[task] = tmp / f"{name}-{task}.model"
        seconds[task], _ = structkit("train", "--task", task, "--train", train, "--dev", dev,
                                     "--model", models[task], "-q")
    text = tmp / f"{name}-test.txt"
    text.write_text(raw_text(test), encoding="utf-8")
    runs = {
        "learnt tokenizer": [["tag", "-m", models["pos"], "--text", text, "--tokenizer", models["tokenize"],
                              "--format", "conllu"], ["parse", "-m", models["parse"], "-"]],
        "English rules": [["tag", "-m", models["pos"], "--text", text, "--lang", "en", "--format", "conllu"],
                          ["parse", "-m", models["parse"], "-"]],
        "gold tokens": [["tag", "-m", models["pos"], test], ["parse", "-m", models["parse"], "-"]],
    }
    row = {"treebank": name, "train_seconds": {k: round(v, 1) for k, v in seconds.items()}}
    for label, commands in runs.items():
        out = tmp / f"{name}-{label.replace(' ', '-')}.conllu"
        wall = pipe(commands, out)
        _, ev = structkit("eval", "--task", "ud", test, out, "--json")
        e = json.loads(ev.stdout)
        row[label] = {m: _f1(e, m) for m in METRICS} | {"wall_seconds": round(wall, 1)}
        print(name, label, row[label], flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS))
    ap.add_argument("--out", default=str(ROOT / "results" / "ud-raw-text"))
    a = ap.parse_args()
    rows, load = [], [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="ud-raw-") as tmp:
        for name in [a.only] if a.only else TREEBANKS:
            rows.append(run_one(name, Path(tmp)))
    dump_json({"machine": machine(), "numba_cache": NUMBA_CACHE, "loadavg_before": load, "rows": rows},
              Path(a.out + ".json"))
    md = ["# From raw text to labelled trees (CoNLL 2018 F1, test file)", "",
          "`python scripts/ud_raw_text.py`: tokenizer, POS tagger and parser trained with today's "
          "defaults (`structkit train --task tokenize|pos|parse --train TRAIN --dev DEV`), then "
          "`structkit tag --text TEST.txt --tokenizer tok.model --format conllu | structkit parse "
          "-m parse.model -`, scored by `structkit eval --task ud`. 'English rules' runs the same "
          "tagger and parser behind `--lang en`; 'gold tokens' tags the test file's own words.", "",
          "| treebank | input | tokens | words | sentences | UPOS | UAS | LAS |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for label in ("learnt tokenizer", "English rules", "gold tokens"):
            c = r[label]
            md.append(f"| {r['treebank']} | {label} | " + " | ".join(f"{c[m]:.2f}" for m in METRICS) + " |")
    md += ["", f"Training seconds (wall, each `structkit train`; {NUMBA_CACHE['words']}; load average before "
           f"the run {load}, other jobs sharing the cores): " + "; ".join(
        f"{r['treebank']}: " + ", ".join(f"{k} {v}" for k, v in r["train_seconds"].items()) for r in rows)]
    Path(a.out + ".md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
