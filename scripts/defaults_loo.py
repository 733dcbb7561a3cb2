"""Defaults checked leave-one-treebank-out (issue 43, item 4): results/defaults-loo.json and .md.

    STRUCTKIT_DATA=DIR python scripts/defaults_loo.py [--variant V ...] [--only T ...] [--report-only]

The morph task (UPOS, XPOS, FEATS, lemmas): each variant below (settings of ``scripts/morph_dev.py``'s
VARIANTS, trained by its ``run``) trains on every UD treebank of the data folder that has a
training file (``ud-*/*-ud-train.conllu``), dev choosing the epoch as the defaults do; where the
treebank has no dev file, every 10th training sentence is held out as dev instead (no refit), as
morph_dev does with ``--dev-split 0.1``. Test files are never read. A variant is judged by the
figure the morph trainer's dev selection uses, halved to a percentage: (AllTags over UPOS, XPOS and
every FEATS key + Lemmas) / 2 on dev.

Leave-one-treebank-out: for each treebank T, the variant with the best mean score over the other
treebanks (chosen without T; ties go to the variant listed first, the current default), and T's
score with it, beside T's score with the current default and with T's own best variant (the
oracle). The seed rows (the current default with shuffling seeds 1 and 2) show how much a seed
alone moves the scores; they are never chosen. ``choose`` and ``leave_one_out`` are the selection,
pure functions of a score grid (tests/test_defaults_loo.py). Each cell is written to the .json as
it is done; ``--resume`` keeps the cells of the same commit and runs the others.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine  # noqa: E402

DEFAULT = "ksuf6s6+pre"   # morph_dev.DEFAULT, checked in main
# the variants chosen among (the default first: it wins ties), then the seed rows (never chosen)
CANDIDATES = ("ksuf6s6+pre", "base", "ksuf6s6", "ksuf3", "ksuf7s7", "suf6", "cands40")
SEEDS = ("ksuf6s6+pre/seed1", "ksuf6s6+pre/seed2")
OUT = ROOT / "results" / "defaults-loo"


# --- the selection (pure) -------------------------------------------------------------------

def score(dev: Mapping[str, float]) -> float:
    """The figure a variant is judged by: the morph trainer's dev selection figure, halved."""
    return (dev["alltags_full"] + dev["lemmas"]) / 2


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


def grid_of(obj: dict, variants: Sequence[str]) -> dict:
    return {v: {t: score(c["dev"]) for t, c in obj["runs"].get(v, {}).items()} for v in variants}


def _f(x: float) -> str:
    return f"{x:.2f}"


def _d(x: float) -> str:
    return f"{x:+.2f}"


def write_report(obj: dict, out: Path) -> None:
    m = obj["machine"]
    banks = obj["treebanks"]
    names = list(banks)
    full = [v for v in obj["order"] if all(t in obj["runs"].get(v, {}) for t in names)]
    cands = [v for v in CANDIDATES if v in full]
    grid = grid_of(obj, full)
    cpu = sum(c["cpu_seconds"] for v in obj["runs"].values() for c in v.values())
    lines = ["# Defaults checked leave-one-treebank-out (issue 43)", "",
             f"`{obj['command']}` on commit {m['commit']}, {m['date']} UTC, {m['cpu']} ({m['cores']} cores, shared: "
             f"CPU seconds are noisy), Python {m['python']}. All cells from this one run. Training CPU: "
             f"{cpu / 60:.1f} min in all ({obj['numba_cache']['words']}).", "",
             "## Morph task (UPOS, XPOS, FEATS, lemmas)", "",
             "Each variant (settings of `scripts/morph_dev.py`'s VARIANTS; `base` = the defaults before that "
             f"search, the current default is `{DEFAULT}`) trains on each treebank's training file, dev choosing "
             "the epoch. **Score** = (AllTags over UPOS, XPOS and every FEATS key + Lemmas) / 2 on dev, the figure "
             "the morph trainer's dev selection uses (halved). Test files are never read.", "",
             "Treebanks: every `ud-*` folder of `$STRUCTKIT_DATA` with a training file"
             + (f"; not {', '.join(obj['skipped'])}, which have no training file." if obj.get("skipped") else "."), "",
             "| treebank | train words | dev |", "|---|---|---|"]
    for t in names:
        b = banks[t]
        dev = (f"dev file ({b['dev_words']} words)" if b["dev"] else
               "**no dev file: every 10th training sentence held out as dev** (trained on the other 9/10, no refit)")
        lines.append(f"| {t} | {b['train_words']} | {dev} |")
    lines += ["", "### Dev scores", "",
              "| variant | what | " + " | ".join(t.removeprefix("ud-") for t in names) + " | mean |",
              "|---|---|" + "---|" * (len(names) + 1)]
    for v in full:
        row = [grid[v][t] for t in names]
        lines.append(f"| {v} | {obj['variants'][v]} | " + " | ".join(map(_f, row))
                     + f" | {_f(sum(row) / len(row))} |")
    if len(cands) >= 2:
        loo = leave_one_out(grid, cands, DEFAULT) if DEFAULT in cands else None
    else:
        loo = None
    if loo:
        rows = loo["treebanks"]
        lines += ["", "### Leave-one-treebank-out", "",
                  f"Chosen among: {', '.join(f'`{v}`' for v in cands)} (ties to the one listed first). "
                  "*chosen without T*: the variant with the best mean score over the other "
                  f"{len(names) - 1} treebanks; *oracle*: T's own best variant.", "",
                  "| treebank T | chosen without T | T's score with it | with the default | oracle | oracle's score "
                  "| chosen − default | oracle − chosen |", "|---|---|---|---|---|---|---|---|"]
        for t in names:
            r = rows[t]
            lines.append(f"| {t}{'' if banks[t]['dev'] else ' (dev held out of train)'} | {r['chosen']} | "
                         f"{_f(r['score'])} | {_f(r['default'])} | {r['oracle']} | {_f(r['oracle_score'])} | "
                         f"{_d(r['chosen_minus_default'])} | {_d(r['oracle_minus_chosen'])} |")
        mean = {k: sum(rows[t][k] for t in names) / len(names) for k in ("score", "default", "oracle_score")}
        lines.append(f"| **mean** | | {_f(mean['score'])} | {_f(mean['default'])} | | {_f(mean['oracle_score'])} | "
                     f"{_d(mean['score'] - mean['default'])} | {_d(mean['oracle_score'] - mean['score'])} |")
        allv = loo["all"]
        all_mean = {v: sum(grid[v].values()) / len(names) for v in cands}
        lines += ["", f"Chosen over all {len(names)} treebanks: `{allv}` (mean {_f(all_mean[allv])}); "
                  + ("the current default." if allv == DEFAULT else
                     f"not the current default `{DEFAULT}` (mean {_f(all_mean[DEFAULT])}, "
                     f"{_d(all_mean[DEFAULT] - all_mean[allv])}).")]
        seeds = [v for v in (DEFAULT,) + SEEDS if v in full]
        if len(seeds) > 1:
            seed_means = [sum(grid[v].values()) / len(names) for v in seeds]
            spread = {t: max(grid[v][t] for v in seeds) - min(grid[v][t] for v in seeds) for t in names}
            lines += ["", f"Seed noise (the default with seeds {', '.join(s.rsplit('/', 1)[-1] for s in seeds[1:])} "
                      f"besides seed 0): the mean over the treebanks spans {_f(min(seed_means))}-{_f(max(seed_means))} "
                      f"({_f(max(seed_means) - min(seed_means))}); per treebank, max − min over the "
                      f"{len(seeds)} seeds: "
                      + ", ".join(f"{t.removeprefix('ud-')} {_f(spread[t])}" for t in names) + "."]
    lines += ["", "### Training CPU seconds (this run)", "",
              "| variant | " + " | ".join(t.removeprefix("ud-") for t in names) + " | total |",
              "|---|" + "---|" * (len(names) + 1)]
    for v in full:
        row = [obj["runs"][v][t]["cpu_seconds"] for t in names]
        lines.append(f"| {v} | " + " | ".join(f"{x:.1f}" for x in row) + f" | {sum(row):.1f} |")
    lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines))


def main() -> int:
    import morph_dev

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("STRUCTKIT_DATA"), help="default: $STRUCTKIT_DATA")
    ap.add_argument("--variant", choices=CANDIDATES + SEEDS, action="append")
    ap.add_argument("--only", action="append", help="a treebank (folder name); repeatable")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--resume", action="store_true", help="keep the .json's cells of the same commit")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    out = Path(args.out)
    if args.report_only:
        write_report(json.loads(out.with_suffix(".json").read_text()), out)
        return 0
    if morph_dev.DEFAULT != DEFAULT:
        raise SystemExit(f"morph_dev.DEFAULT is {morph_dev.DEFAULT!r}, this script's {DEFAULT!r}")
    if not args.data:
        raise SystemExit("no data folder: set STRUCTKIT_DATA or pass --data")
    found = ud_treebanks(args.data)
    skipped = sorted(d.name for d in Path(args.data).glob("ud-*") if d.is_dir() and d.name not in found)
    names = args.only or list(found)
    variants = args.variant or list(CANDIDATES + SEEDS)
    m = machine()
    prev = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else None
    argv = " ".join(sys.argv[1:])
    obj = {"command": "STRUCTKIT_DATA=DIR python scripts/defaults_loo.py" + (f" {argv}" if argv else ""),
           "machine": m, "numba_cache": morph_dev.NUMBA_CACHE, "order": variants,
           "variants": {v: morph_dev.VARIANTS[v][0] + "".join(f"; {k}={c!r}" for k, c in morph_dev.VARIANTS[v][1].items())
                        for v in variants},
           "score": "(alltags_full + lemmas) / 2 on dev", "skipped": skipped, "treebanks": {}, "runs": {}}
    if args.resume and prev and prev["machine"]["commit"] == m["commit"]:
        obj["runs"] = prev["runs"]
        obj["command"] = prev["command"] + " (resumed)"
    for t in names:
        train, dev = found[t]
        obj["treebanks"][t] = {"train": os.path.relpath(train, args.data), "train_words": words(train),
                               "dev": os.path.relpath(dev, args.data) if dev else None,
                               "dev_words": words(dev) if dev else None}
    t0 = time.time()
    morph_dev.warm_up(names[0], found[names[0]])
    for v in variants:
        for t in names:
            if t in obj["runs"].get(v, {}):
                continue
            r = morph_dev.run(t, v, found[t])
            obj["runs"].setdefault(v, {})[t] = r
            print(f"{time.time() - t0:7.0f}s", v, t, f"score {score(r['dev']):.2f}", f"cpu {r['cpu_seconds']}",
                  flush=True)
            dump_json(obj, out.with_suffix(".json"))
            write_report(obj, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
