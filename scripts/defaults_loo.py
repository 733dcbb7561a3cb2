"""Defaults checked leave-one-treebank-out (issue 43, item 4): results/defaults-loo.json and .md.

    STRUCTKIT_DATA=DIR python scripts/defaults_loo.py [--task morph|tokenize|parse] [--variant V ...]
                                                      [--only T ...] [--resume] [--note TEXT]
                                                      [--report-only]

Treebanks: every UD treebank of the data folder that has a training file (``ud-*/*-ud-train.conllu``).
Test files are never read. For each task, each variant trains on each treebank's training file,
dev choosing the epoch as the defaults do, and is judged by one score on dev:

- ``morph`` (UPOS, XPOS, FEATS, lemmas): settings of ``scripts/morph_dev.py``'s VARIANTS, trained
  by its ``run``; where a treebank has no dev file, every 10th training sentence is held out as dev
  (no refit), as morph_dev does with ``--dev-split 0.1``. Score: the figure the morph trainer's
  dev selection uses, halved to a percentage: (AllTags over UPOS, XPOS and every FEATS key +
  Lemmas) / 2.
- ``tokenize``: options of ``scripts/tokenize_dev.py``'s VARIANTS, trained by its ``run_variant``;
  where a treebank has no dev file, tokenize_dev's ``split_documents`` makes one from the training
  file (every fifth document, or stretch of 20 sentences where there are no ``# newdoc``/``# newpar``
  marks, is dev; the rest trains): a tokenizer needs running text to split sentences in. Score:
  (words F1 + sentences F1) / 2 (CoNLL 2018 alignment).
- ``parse`` (the labelled beam parser alone, on the files' gold UPOS/XPOS/FEATS): the defaults of
  ``structkit train --task parse`` (beam 8, pseudo-projective lift threshold
  ``labelled.MIN_LIFT_COUNT`` 2, 2^23 hashed rows, at most 8 epochs, dev keeping the epoch of the
  best LAS) and one-axis changes of them (``PARSE_VARIANTS``, the axes of
  ``scripts/ud_parse_defaults.py``, where they were chosen on English ParTUT dev alone); where a
  treebank has no dev file, every 10th training sentence is held out as dev (no refit), as
  ``--dev-split 0.1 --no-refit`` does. Score: dev LAS (universal labels, CoNLL 2018) of the epoch
  kept, the figure the parser's dev selection uses.

Leave-one-treebank-out: for each treebank T, the variant with the best mean score over the other
treebanks (chosen without T; ties go to the variant listed first, the current default), and T's
score with it, beside T's score with the current default and with T's own best variant (the
oracle). The seed rows (the current default with shuffling seeds 1 and 2) show how much a seed
alone moves the scores; they are never chosen. ``choose`` and ``leave_one_out`` are the selection,
pure functions of a score grid (tests/test_defaults_loo.py). Each cell is written to the .json as
it is done (each task with the commit, date and command of its run); ``--resume`` keeps the
task's cells of the same commit and runs the others (the section's command is then the runs'
commands in turn, joined by ``;``). ``--note`` adds a sentence to the task's section (such as
which variants were not run, and why).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, numba_cache  # noqa: E402

OUT = ROOT / "results" / "defaults-loo"
# per task: the current default, the variants chosen among (the default first: it wins ties),
# the seed rows (never chosen), what the score is
TASKS = {
    "morph": {
        "title": "Morph task (UPOS, XPOS, FEATS, lemmas)",
        "default": "ksuf6s6+pre",   # morph_dev.DEFAULT, checked in main
        "candidates": ("ksuf6s6+pre", "base", "ksuf6s6", "ksuf3", "ksuf7s7", "suf6", "cands40"),
        "seeds": ("ksuf6s6+pre/seed1", "ksuf6s6+pre/seed2"),
        "score": "(AllTags over UPOS, XPOS and every FEATS key + Lemmas) / 2 on dev, the figure the morph "
                 "trainer's dev selection uses (halved)",
        "variants_from": "settings of `scripts/morph_dev.py`'s VARIANTS; `base` = the defaults before that search",
        "no_dev": "every 10th training sentence held out as dev (trained on the other 9/10, no refit)",
    },
    "tokenize": {
        "title": "Tokenizer (tokens, multiword tokens, sentences)",
        "default": "features=short,url",   # structkit.tokenizer.task.DEFAULT_FEATURES, checked in main
        "candidates": ("features=short,url", "features=none", "features=short", "features=url", "algo=perceptron"),
        "seeds": ("features=short,url/seed1", "features=short,url/seed2"),
        "score": "(words F1 + sentences F1) / 2 on dev's raw text (CoNLL 2018 alignment; words = multiword "
                 "tokens expanded)",
        "variants_from": "options of `train --task tokenize` from `scripts/tokenize_dev.py`'s VARIANTS (its "
                         "`features=short,url,rules` is left out: it runs the English rules), the rest the defaults",
        "no_dev": "dev made from the training file by tokenize_dev's split: every 5th stretch of 20 sentences "
                  "(no `# newdoc`/`# newpar` marks) is dev, the rest trains",
    },
}
# the parse task's variants: changes to PARSE_DEFAULT (``structkit train --task parse``'s
# defaults: the beam learner's beam and hash_bits, labelled.MIN_LIFT_COUNT, shuffling seed 0)
PARSE_DEFAULT = {"beam": 8, "lift": 2, "hash_bits": 23, "seed": 0}
PARSE_VARIANTS = {
    "default": {},
    "beam=4": {"beam": 4},
    "lift=1": {"lift": 1},
    "lift=3": {"lift": 3},
    "hash_bits=22": {"hash_bits": 22},
    "hash_bits=24": {"hash_bits": 24},
    "beam=16": {"beam": 16},
    "default/seed1": {"seed": 1},
    "default/seed2": {"seed": 2},
}
TASKS["parse"] = {
    "title": "Parser (labelled beam parser, gold morphology)",
    "default": "default",
    "candidates": ("default", "beam=4", "lift=1", "lift=3", "hash_bits=22", "hash_bits=24", "beam=16"),
    "seeds": ("default/seed1", "default/seed2"),
    "score": "dev LAS (universal labels, CoNLL 2018) of the epoch the dev selection keeps (of at most 8), "
             "the parser's own selection figure; input: the dev file's gold UPOS/XPOS/FEATS",
    "variants_from": "`structkit train --task parse` (beam 8, lift threshold `MIN_LIFT_COUNT` 2, 2^23 hashed "
                     "rows, 8 epochs at most, dev keeping the best) and one-axis changes of it, the axes of "
                     "`scripts/ud_parse_defaults.py` (its runs; the defaults were chosen there on English ParTUT dev alone, "
                     "among candidates within a training-time budget: here the choice is on the score alone, "
                     "whatever the CPU seconds, which are in the last table)",
    "no_dev": "every 10th training sentence held out as dev (trained on the other 9/10, no refit)",
}
NUMBA_CACHE_TOK = numba_cache("warm", "the kernels compiled in this process by an untimed 1-epoch training on the "
                                      "first treebank's files before the timed ones")
SEED_OPTIONS = {"features=short,url/seed1": {"features": "short,url", "seed": 1},
                "features=short,url/seed2": {"features": "short,url", "seed": 2}}


# --- the selection (pure) -------------------------------------------------------------------

def score(task: str, cell: Mapping) -> float:
    """The figure a variant's cell is judged by (TASKS[task]["score"])."""
    if task == "morph":
        return (cell["dev"]["alltags_full"] + cell["dev"]["lemmas"]) / 2
    if task == "tokenize":
        return (cell["words"] + cell["sentences"]) / 2
    if task == "parse":
        return cell["las"]
    raise ValueError(f"task {task!r}")


def choose(grid: Mapping[str, Mapping[str, float]], candidates: Sequence[str],
           without: str | None = None) -> str:
    """The candidate with the highest mean score over the treebanks other than ``without``.

    ``grid[variant][treebank]`` is a score; every candidate must have a score on the same
    treebanks. Ties (to 1e-9) go to the candidate listed first."""
    if not candidates:
        raise ValueError("no candidates")
    banks = set(grid[candidates[0]])
    for v in candidates:
        if set(grid[v]) != banks:
            raise ValueError(f"variant {v!r} is scored on other treebanks than {candidates[0]!r}")
    used = sorted(banks - {without})
    if not used:
        raise ValueError("no treebank left to choose on")
    best, best_mean = None, None
    for v in candidates:
        mean = sum(grid[v][t] for t in used) / len(used)
        if best_mean is None or mean > best_mean + 1e-9:
            best, best_mean = v, mean
    return best


def parse_settings(variant: str) -> dict:
    """The parse task's settings of a variant: PARSE_DEFAULT with the variant's changes."""
    if variant not in PARSE_VARIANTS:
        raise ValueError(f"parse variant {variant!r}: not one of {', '.join(PARSE_VARIANTS)}")
    return PARSE_DEFAULT | PARSE_VARIANTS[variant]


def leave_one_out(grid: Mapping[str, Mapping[str, float]], candidates: Sequence[str],
                  default: str) -> dict:
    """Per treebank: the variant chosen without it and its score there, the default's score,
    the treebank's own best variant (the oracle, ties to the earlier candidate) and its score;
    and the variant chosen over all the treebanks."""
    rows = {}
    for t in sorted(grid[candidates[0]]):
        chosen = choose(grid, candidates, without=t)
        oracle = choose({v: {t: grid[v][t]} for v in candidates}, candidates)
        rows[t] = {"chosen": chosen, "score": grid[chosen][t], "default": grid[default][t],
                   "oracle": oracle, "oracle_score": grid[oracle][t],
                   "chosen_minus_default": grid[chosen][t] - grid[default][t],
                   "oracle_minus_chosen": grid[oracle][t] - grid[chosen][t]}
    return {"treebanks": rows, "all": choose(grid, candidates)}


# --- the runs -------------------------------------------------------------------------------

def ud_treebanks(data: str) -> dict[str, tuple[str, str | None]]:
    """name -> (training file, dev file or None) for every ``ud-*`` folder of ``data`` with a
    training file; the test files are not looked at."""
    out = {}
    for d in sorted(Path(data).glob("ud-*")):
        train = sorted(d.glob("*-ud-train.conllu"))
        if len(train) != 1:
            continue
        dev = sorted(d.glob("*-ud-dev.conllu"))
        out[d.name] = (str(train[0]), str(dev[0]) if len(dev) == 1 else None)
    return out


def words(path: str) -> int:
    """Syntactic words (integer ids) of a CoNLL-U file."""
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line[:1].isdigit():
                head = line.split("\t", 1)[0]
                n += head.isdigit()
    return n


def grid_of(part: dict, task: str, variants: Sequence[str]) -> dict:
    return {v: {t: score(task, c) for t, c in part["runs"].get(v, {}).items()} for v in variants}


def _f(x: float) -> str:
    return f"{x:.2f}"


def _d(x: float) -> str:
    return f"{x:+.2f}"


def _cpu(task: str, cell: dict) -> float:
    return cell["cpu_seconds"] if task == "morph" else cell["train_cpu_seconds"]


def _section(obj: dict, task: str) -> list[str]:
    spec, part, banks = TASKS[task], obj[task], obj["treebanks"]
    names = [t for t in banks if any(t in r for r in part["runs"].values())]
    m = part["machine"]
    full = [v for v in part["order"] if all(t in part["runs"].get(v, {}) for t in names)]
    cands = [v for v in spec["candidates"] if v in full]
    grid = grid_of(part, task, full)
    cpu = sum(_cpu(task, c) for v in part["runs"].values() for c in v.values())
    short = [t.removeprefix("ud-") for t in names]
    lines = [f"## {spec['title']}", "",
             f"`{part['command']}` on commit {m['commit']}, {m['date']} UTC, {m['cpu']} ({m['cores']} cores, shared: "
             f"CPU seconds are noisy), Python {m['python']}; all cells of this section from this one run. Training "
             f"CPU: {cpu / 60:.1f} min in all ({part['numba_cache']['words']})." + (f" {part['note']}" if part.get("note") else ""),
             "",
             f"Variants: {spec['variants_from']}; the current default is `{spec['default']}`. **Score** = "
             f"{spec['score']}. Treebanks without a dev file (marked †): {spec['no_dev']}.", "",
             "### Dev scores", "",
             "| variant | what | " + " | ".join(f"{s}{'' if banks[t]['dev'] else ' †'}" for s, t in zip(short, names))
             + " | mean |", "|---|---|" + "---|" * (len(names) + 1)]
    for v in full:
        row = [grid[v][t] for t in names]
        lines.append(f"| {v} | {part['variants'][v]} | " + " | ".join(map(_f, row)) + f" | {_f(sum(row) / len(row))} |")
    if spec["default"] in cands and len(cands) >= 2 and len(names) >= 2:
        loo = leave_one_out(grid, cands, spec["default"])
        rows = loo["treebanks"]
        lines += ["", "### Leave-one-treebank-out", "",
                  f"Chosen among: {', '.join(f'`{v}`' for v in cands)} (ties to the one listed first). "
                  "*Chosen without T*: the variant with the best mean score over the other "
                  f"{len(names) - 1} treebanks; *oracle*: T's own best variant.", "",
                  "| treebank T | chosen without T | T's score with it | with the default | oracle | oracle's score "
                  "| chosen − default | oracle − chosen |", "|---|---|---|---|---|---|---|---|"]
        for t in names:
            r = rows[t]
            lines.append(f"| {t}{'' if banks[t]['dev'] else ' †'} | {r['chosen']} | {_f(r['score'])} | "
                         f"{_f(r['default'])} | {r['oracle']} | {_f(r['oracle_score'])} | "
                         f"{_d(r['chosen_minus_default'])} | {_d(r['oracle_minus_chosen'])} |")
        mean = {k: sum(rows[t][k] for t in names) / len(names) for k in ("score", "default", "oracle_score")}
        lines.append(f"| **mean** | | {_f(mean['score'])} | {_f(mean['default'])} | | {_f(mean['oracle_score'])} | "
                     f"{_d(mean['score'] - mean['default'])} | {_d(mean['oracle_score'] - mean['score'])} |")
        allv, dflt = loo["all"], spec["default"]
        all_mean = {v: sum(grid[v][t] for t in names) / len(names) for v in cands}
        lines += ["", f"Chosen over all {len(names)} treebanks: `{allv}` (mean {_f(all_mean[allv])}); "
                  + ("the current default." if allv == dflt else
                     f"not the current default `{dflt}` (mean {_f(all_mean[dflt])}, "
                     f"{_d(all_mean[dflt] - all_mean[allv])}).")
                  + f" Treebanks where the choice without them is the default: "
                  f"{sum(rows[t]['chosen'] == dflt for t in names)} of {len(names)}."]
        seeds = [v for v in (dflt,) + spec["seeds"] if v in full]
        if len(seeds) > 1:
            seed_means = [sum(grid[v][t] for t in names) / len(names) for v in seeds]
            spread = {t: max(grid[v][t] for v in seeds) - min(grid[v][t] for v in seeds) for t in names}
            lines += ["", f"Seed noise (the default with seeds 0, "
                      f"{', '.join(s.rsplit('/seed', 1)[-1] for s in seeds[1:])}): its mean over the treebanks spans "
                      f"{_f(min(seed_means))}-{_f(max(seed_means))} ({_f(max(seed_means) - min(seed_means))}), beside "
                      f"{_f(min(all_mean.values()))}-{_f(max(all_mean.values()))} "
                      f"({_f(max(all_mean.values()) - min(all_mean.values()))}) for the means of the {len(cands)} "
                      "variants chosen among; per "
                      f"treebank, max − min over the {len(seeds)} seeds: "
                      + ", ".join(f"{s} {_f(spread[t])}" for s, t in zip(short, names)) + "."]
    lines += ["", "### Training CPU seconds", "", "| variant | " + " | ".join(short) + " | total |",
              "|---|" + "---|" * (len(names) + 1)]
    for v in full:
        row = [_cpu(task, part["runs"][v][t]) for t in names]
        lines.append(f"| {v} | " + " | ".join(f"{x:.1f}" for x in row) + f" | {sum(row):.1f} |")
    return lines + [""]


def write_report(obj: dict, out: Path) -> None:
    banks = obj["treebanks"]
    lines = ["# Defaults checked leave-one-treebank-out (issue 43)", "",
             "`scripts/defaults_loo.py`: for each task, variants of its settings trained on every UD treebank of "
             "`$STRUCTKIT_DATA` with a training file"
             + (f" (not {', '.join(obj['skipped'])}: no training file there)" if obj.get("skipped") else "")
             + ", each judged on dev; for each treebank, the variant chosen on the others and its score there. "
             "Test files are never read. The sections' commits, dates and commands are their own.", "",
             "| treebank | train words | dev |", "|---|---|---|"]
    for t, b in banks.items():
        lines.append(f"| {t} | {b['train_words']} | "
                     + (f"dev file, {b['dev_words']} words" if b["dev"] else "none (†: held out of train, per task)")
                     + " |")
    lines.append("")
    for task in TASKS:
        if task in obj:
            lines += _section(obj, task)
    out.with_suffix(".md").write_text("\n".join(lines))


def _parse_train(paths: tuple[str, str | None], settings: dict, epochs: int | None = None) -> dict:
    """The beam parser trained on the training file with ``settings`` (lift threshold set for
    this training only), dev selecting the epoch; its dev scores and training CPU seconds."""
    import structkit.parse.labelled as labelled
    from structkit.parse.parser import train_parser
    from structkit.tasks import make_config

    train, dev = paths
    config = make_config({"task": "parse", "algo": "beam", "beam": settings["beam"],
                          "hash_bits": settings["hash_bits"], "seed": settings["seed"], "epochs": epochs,
                          **({} if dev else {"dev_split": 0.1, "refit": False})})
    curve = []

    def on_epoch(epoch: int, stats: dict) -> None:
        curve.append({k: stats["dev"][k] for k in ("uas", "las", "las_full", "words")})

    was = labelled.MIN_LIFT_COUNT
    labelled.MIN_LIFT_COUNT = settings["lift"]
    try:
        c0 = time.process_time()
        model = train_parser(config, train, dev, on_epoch)
        cpu = time.process_time() - c0
    finally:
        labelled.MIN_LIFT_COUNT = was
    info = model.info
    kept = curve[info["selected_epoch"] - 1]
    if kept["las"] != info["selected_dev"]["las"]:
        raise RuntimeError(f"the epoch kept ({info['selected_epoch']}) is not the curve's: {info['selected_dev']}")
    return {"las": kept["las"], "uas": kept["uas"], "las_full": kept["las_full"], "dev_words": kept["words"],
            "selected_epoch": info["selected_epoch"], "epochs_run": info["epochs_run"],
            "dev_las_per_epoch": [round(c["las"], 2) for c in curve], "labels": info["labels"],
            "train_sentences": info["train_sentences"], "skipped_unbuildable": info["skipped_unbuildable"],
            "settings": settings, "train_cpu_seconds": round(cpu, 1), "numba_cache": NUMBA_CACHE_TOK}


def _run_cell(task: str, name: str, variant: str, paths: tuple[str, str | None], tmp: str) -> dict:
    if task == "parse":
        return _parse_train(paths, parse_settings(variant))
    if task == "morph":
        import morph_dev

        return morph_dev.run(name, variant, paths)
    import tokenize_dev

    train, dev = paths
    if dev is None:
        train, dev = tokenize_dev.split_documents(train, tmp)
    options = SEED_OPTIONS.get(variant) or tokenize_dev.VARIANTS[variant]
    return tokenize_dev.run_variant(train, dev, options)


def _describe(task: str, v: str) -> str:
    if task == "morph":
        import morph_dev

        return morph_dev.VARIANTS[v][0] + "".join(f"; {k}={c!r}" for k, c in morph_dev.VARIANTS[v][1].items())
    if task == "parse":
        s = parse_settings(v)
        return (f"beam {s['beam']}, lift threshold {s['lift']}, 2^{s['hash_bits']} rows, seed {s['seed']}"
                + (" (the defaults)" if v == "default" else
                   " (the default, another shuffling seed)" if v in TASKS["parse"]["seeds"] else ""))
    if v in SEED_OPTIONS:
        return "the default, another shuffling seed: " + " ".join(f"--{k} {c}" for k, c in SEED_OPTIONS[v].items())
    import tokenize_dev

    return " ".join(f"--{k} {c}" for k, c in tokenize_dev.VARIANTS[v].items())


def _warm_up(task: str, name: str, paths: tuple[str, str | None], tmp: str) -> None:
    """Untimed: the task's kernels compiled in this process before the timed cells."""
    if task == "morph":
        import morph_dev

        morph_dev.warm_up(name, paths)
        return
    if task == "parse":   # one epoch on the dev file (the training file where there is none)
        train, dev = paths
        _parse_train((dev, dev) if dev else (train, None), PARSE_DEFAULT, epochs=1)
        return
    from structkit.tasks import make_config
    from structkit.tokenizer.task import train_tokenizer
    import tokenize_dev

    train, dev = paths
    if dev is None:
        train, dev = tokenize_dev.split_documents(train, tmp)
    train_tokenizer(make_config({"task": "tokenize", "epochs": 1}), train, dev)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=sorted(TASKS), default="morph")
    ap.add_argument("--data", default=os.environ.get("STRUCTKIT_DATA"), help="default: $STRUCTKIT_DATA")
    ap.add_argument("--variant", action="append", help="repeatable; default: the task's candidates and seed rows")
    ap.add_argument("--only", action="append", help="a treebank (folder name); repeatable")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--resume", action="store_true", help="keep the task's cells of the same commit")
    ap.add_argument("--note", help="a sentence for the task's section (e.g. variants not run, and why); "
                                   "--resume keeps the previous one when none is given")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    out = Path(args.out)
    js = out.with_suffix(".json")
    obj = json.loads(js.read_text()) if js.exists() else {}
    if args.report_only:
        write_report(obj, out)
        return 0
    import morph_dev
    from structkit.tokenizer.task import DEFAULT_FEATURES

    import structkit.parse.labelled as labelled
    from structkit.parse.parser import parser_family

    beam = parser_family("beam")[0]
    code_parse = {"beam": beam.param("beam").default, "lift": labelled.MIN_LIFT_COUNT,
                  "hash_bits": beam.param("hash_bits").default, "seed": 0}
    if morph_dev.DEFAULT != TASKS["morph"]["default"] or f"features={DEFAULT_FEATURES}" != TASKS["tokenize"]["default"] \
            or code_parse != PARSE_DEFAULT or beam.epochs != 8:
        raise SystemExit("the defaults named here are not the code's: morph_dev.DEFAULT "
                         f"{morph_dev.DEFAULT!r}, tokenizer DEFAULT_FEATURES {DEFAULT_FEATURES!r}, parser "
                         f"{code_parse} with {beam.epochs} epochs")
    if not args.data:
        raise SystemExit("no data folder: set STRUCTKIT_DATA or pass --data")
    spec = TASKS[args.task]
    found = ud_treebanks(args.data)
    names = args.only or list(found)
    variants = args.variant or list(spec["candidates"] + spec["seeds"])
    bad = [v for v in variants if v not in spec["candidates"] + spec["seeds"]]
    if bad:
        raise SystemExit(f"--variant {bad[0]!r}: not one of {', '.join(spec['candidates'] + spec['seeds'])}")
    obj["skipped"] = sorted(d.name for d in Path(args.data).glob("ud-*") if d.is_dir() and d.name not in found)
    banks = obj.setdefault("treebanks", {})
    for t in names:
        train, dev = found[t]
        banks[t] = {"train": os.path.relpath(train, args.data), "train_words": words(train),
                    "dev": os.path.relpath(dev, args.data) if dev else None, "dev_words": words(dev) if dev else None}
    m = machine()
    argv = " ".join(sys.argv[1:])
    prev = obj.get(args.task)
    part = {"command": "STRUCTKIT_DATA=DIR python scripts/defaults_loo.py" + (f" {argv}" if argv else ""),
            "machine": m, "numba_cache": morph_dev.NUMBA_CACHE if args.task == "morph" else NUMBA_CACHE_TOK,
            "order": variants, "variants": {v: _describe(args.task, v) for v in variants},
            "score": spec["score"], "runs": {}}
    if args.resume and prev and prev["machine"]["commit"] == m["commit"]:
        # the runs' commands in turn: the first one's cells kept, this one runs the rest
        part["runs"], part["command"] = prev["runs"], f"{prev['command']}; {part['command']}"
        if prev.get("note"):
            part["note"] = prev["note"]
    if args.note:
        part["note"] = args.note
    obj[args.task] = part
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="structkit-loo-") as tmp:
        _warm_up(args.task, names[0], found[names[0]], tmp)
        for v in variants:
            for t in names:
                if t in part["runs"].get(v, {}):
                    continue
                r = _run_cell(args.task, t, v, found[t], tmp)
                part["runs"].setdefault(v, {})[t] = r
                print(f"{time.time() - t0:7.0f}s", args.task, v, t, f"score {score(args.task, r):.2f}",
                      f"cpu {_cpu(args.task, r)}", flush=True)
                dump_json(obj, js)
                write_report(obj, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
