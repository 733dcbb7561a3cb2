"""Where the sequence learners' defaults come from (issue 17): one grid on development data,
the same settings for every data set, then the documented commands run with those defaults.

    python scripts/defaults_experiments.py            # grid + documented commands (~10 min)
    python scripts/defaults_experiments.py --no-grid  # only the documented commands

1. The grid: the history-based perceptron at lookahead depth 1 (the documented command) with
   margin C in GRID_C, up to MAX_EPOCHS epochs, on each data set of results/lookahead.md, with
   that table's development data (a dev file, or every 10th training sentence held out). Only
   dev scores are read; the test sets are not touched. Per C: each data set's best dev score
   and the epoch it came at, the dev score after 10 and after 20 epochs with no selection, and
   the mean over the data sets. The default C is the one with the best mean of best dev scores.
2. The documented commands (README), with defaults and `--dev-split 0.1`, trained and scored
   on test through the command line: the figures the README and the issue's targets quote
   (each command first run untimed with `--epochs 1`, then tagging, so that its training time
   is with a warm numba cache).
3. Selection against the last epoch, for each learner family with its defaults: on the same
   training sentences (CoNLL-2000 without every 10th, dev those; Spanish esp.train, dev
   esp.testa), the test score of the dev-selected epoch's model and of the last epoch's.

Writes results/defaults.json and results/defaults.md.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, machine, numba_cache  # noqa: E402

GRID_C = [0.0, 1.0, 4.0, 16.0, 64.0, 256.0]
MAX_EPOCHS = 20
# name, task, train, dev (a file, or None: every 10th training sentence), direction, templates
DATA = [
    ("chunk-conll2000", "chunk", "conll2000/train.txt", None, "ltr", None),
    ("ner-conll2002-esp", "ner", "conll2002/esp.train", "conll2002/esp.testa", "ltr", None),
    ("ner-jnlpba", "ner", "jnlpba/Genia4ERtask2.iob2", None, "rtl", None),
    ("pos-ptb", "pos", "ptb-pos/train.txt", "ptb-pos/dev.txt", "ltr", None),
]
# The documented commands: what a user types (README), with every learner default.
COMMANDS = [
    ("chunk-conll2000", "chunk", "conll2000/train.txt", "conll2000/test.txt",
     ["--algo", "lookahead", "--dev-split", "0.1"]),
    ("ner-jnlpba", "ner", "jnlpba/Genia4ERtask2.iob2", "jnlpba/Genia4EReval2.iob2",
     ["--algo", "lookahead", "--direction", "rtl", "--dev-split", "0.1"]),
    ("ner-conll2002-esp", "ner", "conll2002/esp.train", "conll2002/esp.testb",
     ["--algo", "lookahead", "--dev", "conll2002/esp.testa"]),
    ("pos-ptb", "pos", "ptb-pos/train.txt", "ptb-pos/test.txt",
     ["--algo", "lookahead", "--dev", "ptb-pos/dev.txt"]),
]


def grid_job(args) -> dict:
    name, task, train, dev, direction, templates, margin = args
    from structkit.config import resolve_data_path
    from structkit.sequence.task import TaggerConfig, main_score, train_tagger

    key = main_score(task)
    cfg = TaggerConfig.for_learner(task, "lookahead", epochs=MAX_EPOCHS, depth=1, margin=margin,
                                   direction=direction, templates=templates, seed=0,
                                   **({} if dev else {"dev_split": 0.1, "refit": False}))
    scores: list[float] = []
    t0 = time.perf_counter()
    train_tagger(cfg, resolve_data_path(train), resolve_data_path(dev) if dev else None,
                 lambda e, s: scores.append(s["dev"][key]))
    return {"data": name, "C": margin, "dev_by_epoch": scores, "seconds": time.perf_counter() - t0}


def run_grid(jobs: int) -> list[dict]:
    grid = [(*d, c) for d in DATA for c in GRID_C]
    with mp.get_context("fork").Pool(jobs) as pool:
        out = []
        for r in pool.imap_unordered(grid_job, grid):
            best = max(r["dev_by_epoch"])
            print(f"  {r['data']} C={r['C']:g}: best dev {best:.2f} at epoch "
                  f"{r['dev_by_epoch'].index(best) + 1} ({r['seconds']:.0f} s)", flush=True)
            out.append(r)
    return out


FAMILIES = [("perceptron", {}), ("lookahead", {"depth": 1}), ("kbest-pa", {}), ("kbest-mira", {}),
            ("olarank-exact", {"epochs": 5})]
SELECTION_DATA = [("chunk-conll2000", "chunk", "conll2000/train.txt", None, "conll2000/test.txt"),
                  ("ner-conll2002-esp", "ner", "conll2002/esp.train", "conll2002/esp.testa", "conll2002/esp.testb")]


def selection_job(args) -> dict:
    name, task, train, dev, test, algo, opts = args
    from structkit.config import resolve_data_path
    from structkit.learn.selection import split_every
    from structkit.sequence.task import TaggerConfig, main_score, read_labelled, score_labels, train_tagger_on

    key = main_score(task)
    corpus = read_labelled(resolve_data_path(train), None)
    if dev is None:
        keep, held = split_every(len(corpus.sentences), 0.1)
        corpus, dev_corpus = corpus.subset(keep), corpus.subset(held)
    else:
        dev_corpus = read_labelled(resolve_data_path(dev), None)
    gold = read_labelled(resolve_data_path(test), None)

    def score(tagger) -> float:
        ids = tagger.predict_ids(tagger.encode(gold.words, gold.pos, gold.offsets))
        o = gold.offsets
        pred = [[tagger.labels[i] for i in ids[o[k]:o[k + 1]]] for k in range(len(o) - 1)]
        return score_labels(task, gold.label_sentences(), pred)[key]

    cfg = lambda: TaggerConfig.for_learner(task, algo, **opts)  # noqa: E731
    c = cfg()
    c.validate()
    kept = train_tagger_on(c, corpus, dev_corpus)
    c = cfg()
    c.validate()
    last = train_tagger_on(c, corpus)
    return {"data": name, "algo": algo, "options": opts, "epochs": last.config.epochs,
            "selected_epoch": kept.info["selected_epoch"],
            "selected_dev": kept.info["selected_dev"][key], "test_kept": round(score(kept), 2),
            "test_last": round(score(last), 2), "metric": key}


def run_selection(jobs: int) -> list[dict]:
    grid = [(*d, algo, opts) for d in SELECTION_DATA for algo, opts in FAMILIES]
    with mp.get_context("fork").Pool(jobs) as pool:
        out = []
        for r in pool.imap(selection_job, grid):
            print(f"  {r['data']} {r['algo']}: epoch {r['selected_epoch']} of {r['epochs']} kept, test "
                  f"{r['test_kept']:.2f}, last epoch {r['test_last']:.2f}", flush=True)
            out.append(r)
    return out


def structkit(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("structkit")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, check=True)


NUMBA_CACHE = numba_cache("warm", "each command first run untimed with `--epochs 1`, and its model tagging the "
                                  "test file, so its kernels were compiled before the timed run")


def run_commands() -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, task, train, test, opts in COMMANDS:
            model, pred = os.path.join(tmp, name + ".model"), os.path.join(tmp, name + ".out")
            train_cmd = ["train", "--task", task, "--train", train, *opts, "--model", "M"]
            warm = os.path.join(tmp, "warm.model")   # untimed: the numba cache warm (NUMBA_CACHE)
            structkit(*[warm if a == "M" else a for a in train_cmd], "-q", "--epochs", "1")
            structkit("tag" if task == "pos" else task, "--model", warm, test)
            t0 = time.perf_counter()
            structkit(*[model if a == "M" else a for a in train_cmd], "-q",
                      "--metrics-json", model + ".json")
            train_s = time.perf_counter() - t0
            info = json.load(open(model + ".json"))["config"]
            with open(pred, "w") as f:
                f.write(structkit("tag" if task == "pos" else task, "--model", model, test).stdout)
            score = json.loads(structkit("eval", "--task", task, "--json", pred).stdout)
            key = "accuracy" if task == "pos" else "f1"
            row = {"data": name, "command": "structkit " + shlex.join(train_cmd).replace(" M", " MODEL"),
                   "test": round(score[key], 2), "metric": key, "train_seconds": round(train_s, 1),
                   "selected_epoch": info.get("selected_epoch"), "epochs_run": info.get("epochs_run"),
                   "selected_dev": info.get("selected_dev"), "refit": info.get("refit", False)}
            print(f"  {name}: test {key} {row['test']:.2f} (epoch {row['selected_epoch']} of "
                  f"{row['epochs_run']}, {train_s:.0f} s)", flush=True)
            out.append(row)
    return out


def write_md(res: dict) -> None:
    lines = ["# Where the defaults come from", "",
             "Produced by `python scripts/defaults_experiments.py` (issue 17). "
             + " ".join(__doc__.split("\n\n")[2].split()), ""]
    grid = res.get("grid")
    if grid:
        names = [d[0] for d in DATA]
        by = {(r["data"], r["C"]): r["dev_by_epoch"] for r in grid}
        lines += ["## Lookahead depth 1: best dev score (its epoch) per margin C", "",
                  "| C | " + " | ".join(names) + " | mean best | mean at 10 ep. | mean at 20 ep. |",
                  "|---" * (len(names) + 4) + "|"]
        for c in GRID_C:
            cells, best, at10, at20 = [], [], [], []
            for n in names:
                s = by[(n, c)]
                b = max(s)
                cells.append(f"{b:.2f} ({s.index(b) + 1})")
                best.append(b)
                at10.append(s[min(9, len(s) - 1)])
                at20.append(s[-1])
            m = lambda xs: sum(xs) / len(xs)  # noqa: E731
            lines.append(f"| {c:g} | " + " | ".join(cells) + f" | {m(best):.2f} | {m(at10):.2f} | {m(at20):.2f} |")
        lines += ["", f"Chosen: **C = {res['chosen_C']:g}** (the best mean of best dev scores).", ""]
    if res.get("selection"):
        lines += ["## The dev-selected epoch against the last, each learner family with its defaults", "",
                  "Same training sentences for both; no refit (the held-out sentences stay out).", "",
                  "| data | learner | kept epoch (dev) | test, kept | test, last epoch |", "|---|---|---|---|---|"]
        for r in res["selection"]:
            lines.append(f"| {r['data']} | {r['algo']} | {r['selected_epoch']} of {r['epochs']} "
                         f"({r['selected_dev']:.2f}) | {r['test_kept']:.2f} | {r['test_last']:.2f} |")
        lines.append("")
    if not res.get("commands"):
        (RESULTS / "defaults.md").write_text("\n".join(lines))
        return
    cache = res.get("commands_numba_cache")
    lines += ["## The documented commands, with defaults", "",
              "Train s: wall seconds of the `structkit train` process, with the "
              + (cache["words"] if cache else "numba cache not recorded (these commands ran before the script had "
                                              "the warm-up described above)")
              + (f"; load average before these runs {res['commands_loadavg_before']} (other jobs share the cores: "
                 "wall times are upper bounds)" if "commands_loadavg_before" in res else "") + ".", "",
              "| data | command | test | dev-selected epoch | train s |", "|---|---|---|---|---|"]
    for r in res["commands"]:
        (k, v), = (r["selected_dev"] or {"-": 0}).items()
        sel = f"{r['selected_epoch']} of {r['epochs_run']} (dev {k} {v:.2f})" + (", then refit on all" if r["refit"] else "")
        lines.append(f"| {r['data']} | `{r['command']}` | {r['test']:.2f} {r['metric']} | {sel} | {r['train_seconds']} |")
    cm = res.get("commands_machine")
    lines += ["", f"Machine: {res['machine'].get('cpu', '')}, commit {res['machine'].get('commit', '')}"
              + (f"; the documented commands: {cm.get('cpu', '')}, commit {cm.get('commit', '')}, {cm.get('date', '')}"
                 if cm and cm.get('commit') != res['machine'].get('commit') else "") + ".", ""]
    (RESULTS / "defaults.md").write_text("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-grid", action="store_true", help="Only the documented commands (keeps the grid on file).")
    ap.add_argument("--no-commands", action="store_true", help="Not the documented commands.")
    ap.add_argument("--no-selection", action="store_true", help="Not the selection table.")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    path = RESULTS / "defaults.json"
    res = json.loads(path.read_text()) if path.exists() else {}
    if not a.no_grid:
        print("grid (dev scores only):", flush=True)
        res["grid"] = run_grid(a.jobs)
        means = {c: sum(max(r["dev_by_epoch"]) for r in res["grid"] if r["C"] == c) / len(DATA) for c in GRID_C}
        res["chosen_C"] = max(GRID_C, key=lambda c: (means[c], -c))
        dump_json(res, path)
    if not a.no_selection:
        print("selection against the last epoch (defaults):", flush=True)
        res["selection"] = run_selection(a.jobs)
        dump_json(res, path)
    if not a.no_commands:
        print("documented commands (defaults):", flush=True)
        res["commands_loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
        res["commands"] = run_commands()
        res["commands_numba_cache"] = NUMBA_CACHE
        res["commands_machine"] = machine()
    if not (a.no_grid and a.no_selection):
        res["machine"] = machine()
    dump_json(res, path)
    write_md(res)
    print(f"wrote {path} and {RESULTS / 'defaults.md'}")


if __name__ == "__main__":
    main()
