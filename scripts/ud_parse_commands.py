"""The README's parser commands on UD English ParTUT, run as a user runs them (`structkit train`,
`structkit parse`, `structkit eval --task parse --json`), with today's defaults:

* ``command``: the documented default (beam) parser command, with --dev:
  `structkit train --task parse --train .../en_partut-ud-train.conllu --dev .../en_partut-ud-dev.conllu
  --model ud.model`; its wall time, peak memory (max RSS of the process, /usr/bin/time -f %M),
  model size, and dev/test scores. Writes results/ud-parse-command.json/.md.
* ``lookahead``: the unlabelled lookahead parser, `structkit train --task parse --algo lookahead
  --depth D --train .../en_partut-ud-train.conllu --model M` (no dev set, as the README's command),
  for D = 0, 1, 2; dev/test UAS. Writes results/ud-parse-lookahead.json/.md.

    python scripts/ud_parse_commands.py command|lookahead [--depths 0,1,2]
    python scripts/ud_parse_commands.py command|lookahead --report-only    # the .md from the .json

Scores: UAS/LAS under the CoNLL 2018 convention (every word, LAS on the universal DEPREL; the one
of results/ud-parse.md) and UAS under the Penn Treebank one (UPOS PUNCT excluded). Gold UPOS.
The numba cache is warmed first (a 1-epoch run on dev with the same flags), so times are of a warm
cache (``NUMBA_CACHE``, recorded in the JSON and said in the report).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, machine, numba_cache, structkit  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402

UD = "ud-english-partut/en_partut-ud-{}.conllu"
NUMBA_CACHE = numba_cache("warm", "the kernels compiled by an untimed 1-epoch run on dev with the same flags first")
# a .json from before the script recorded it: the same warm-up, except that `command`'s trained without --dev
LEGACY_CACHE = {
    "command": numba_cache("not recorded", "this older run's untimed 1-epoch warm-up on dev had no --dev, so it "
                                           "compiled the training's kernels but not those only the dev scoring "
                                           "uses: the cache held them only if earlier runs had left them"),
    "lookahead": numba_cache("warm", NUMBA_CACHE["how"] + "; not recorded by this older run, but the script had "
                                     "this warm-up"),
}


def timed_train(flags: list[str]) -> dict:
    """`structkit train` under /usr/bin/time: wall seconds, peak RSS (MB), user+sys CPU seconds."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = ["/usr/bin/time", "-f", "%M %e %U %S", sys.executable, "-m", "structkit", "train", *flags]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    rss_kb, wall, user, sys_ = r.stderr.strip().splitlines()[-1].split()
    return {"train_wall_seconds": float(wall), "train_cpu_seconds": round(float(user) + float(sys_), 2),
            "train_peak_rss_mb": round(int(rss_kb) / 1024, 1)}


def scores(model: Path, split: str, tmp: Path) -> dict:
    gold = resolve_data_path(UD.format(split), must_exist=True)
    out = tmp / f"{split}.conllu"
    wall, _ = structkit("parse", "--model", model, gold, "-o", out)
    _, ev = structkit("eval", "--task", "parse", gold, out, "--json")
    e = json.loads(ev.stdout)
    c = e["conll18"]
    res = {"uas": round(c["uas"], 2), "ptb_uas": round(e["ptb"]["uas"], 2), "parse_wall_seconds": round(wall, 2)}
    if e.get("labelled"):
        res.update(las=round(c["las"], 2), las_full=round(c["las_full"], 2))
    return res


def warm(flags: list[str], tmp: Path) -> None:
    structkit("train", "--task", "parse", "--train", resolve_data_path(UD.format("dev")), "--epochs", "1",
              "--model", tmp / "warm.model", "-q", *flags)


def run_command(tmp: Path) -> tuple[dict, list[str]]:
    warm(["--dev", resolve_data_path(UD.format("dev"))], tmp)   # dev scoring's kernels too
    model = tmp / "ud.model"
    flags = ["--task", "parse", "--train", resolve_data_path(UD.format("train")),
             "--dev", resolve_data_path(UD.format("dev")), "--model", str(model)]
    row = {"command": f"structkit train --task parse --train {UD.format('train')} --dev {UD.format('dev')} "
                      "--model ud.model", **timed_train(flags)}
    row["model_mb"] = round(model.stat().st_size / 2**20, 2)
    row["dev"], row["test"] = scores(model, "dev", tmp), scores(model, "test", tmp)
    print(json.dumps(row), flush=True)
    return {"row": row}


def command_md(obj: dict) -> list[str]:
    r = obj["row"]
    md = ["# The README's default parser command on UD English ParTUT", "",
          f"`{r['command']}` (today's defaults: the beam parser, beam 8, 8 epochs), then "
          "`structkit parse` and `structkit eval --task parse --json` on dev and test.", "",
          "| train s (wall) | train s (CPU) | peak RSS MB | model MB | dev UAS | dev LAS | test UAS | test LAS | test LAS full |",
          "|---|---|---|---|---|---|---|---|---|",
          f"| {r['train_wall_seconds']} | {r['train_cpu_seconds']} | {r['train_peak_rss_mb']} | {r['model_mb']} | "
          f"{r['dev']['uas']} | {r['dev']['las']} | {r['test']['uas']} | {r['test']['las']} | {r['test']['las_full']} |",
          "", "Peak RSS: /usr/bin/time's maximum resident set size of the `structkit train` process "
          "(reading, training with dev scoring after each epoch, saving). CPU = user + system time. "
          f"Train s: {obj.get('numba_cache', LEGACY_CACHE['command'])['words']}."]
    return md


def run_lookahead(tmp: Path, depths: list[int]) -> dict:
    rows = []
    for d in depths:
        flags = ["--algo", "lookahead", "--depth", str(d)]
        warm(flags, tmp)
        model = tmp / f"la{d}.model"
        row = {"depth": d, "command": f"structkit train --task parse --algo lookahead --depth {d} --train "
                                      f"{UD.format('train')} --model parser.model",
               **timed_train(["--task", "parse", "--train", resolve_data_path(UD.format("train")),
                              "--model", str(model), "-q", *flags])}
        row["model_mb"] = round(model.stat().st_size / 2**20, 2)
        row["dev"], row["test"] = scores(model, "dev", tmp), scores(model, "test", tmp)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return {"rows": rows}


def lookahead_md(obj: dict) -> list[str]:
    rows = obj["rows"]
    md = ["# The unlabelled lookahead parser on UD English ParTUT (train -> dev, test)", "",
          "`structkit train --task parse --algo lookahead --depth D --train ud-english-partut/en_partut-ud-train.conllu "
          "--model M` (no dev set; other settings default), then `structkit parse` and `structkit eval --task "
          "parse --json`. UAS: CoNLL 2018 convention (every word); PTB UAS: punctuation (UPOS PUNCT) "
          f"excluded. Gold UPOS. Train s: {obj.get('numba_cache', LEGACY_CACHE['lookahead'])['words']}.", "",
          "| depth | dev UAS | test UAS | dev PTB UAS | test PTB UAS | train s (wall) | train s (CPU) | peak RSS MB | model MB |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['depth']} | {r['dev']['uas']} | {r['test']['uas']} | {r['dev']['ptb_uas']} | "
                  f"{r['test']['ptb_uas']} | {r['train_wall_seconds']} | {r['train_cpu_seconds']} | "
                  f"{r['train_peak_rss_mb']} | {r['model_mb']} |")
    return md


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("command", "lookahead"))
    ap.add_argument("--depths", default="0,1,2")
    ap.add_argument("--out", help="output prefix (default results/ud-parse-command or -lookahead)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    out = Path(args.out or RESULTS / ("ud-parse-command" if args.what == "command" else "ud-parse-lookahead"))
    if args.report_only:
        obj = json.loads(out.with_suffix(".json").read_text())
    else:
        load = [round(x, 2) for x in os.getloadavg()]
        with tempfile.TemporaryDirectory() as tmp:
            if args.what == "command":
                obj = run_command(Path(tmp))
            else:
                obj = run_lookahead(Path(tmp), [int(d) for d in args.depths.split(",")])
        cmd = f"python scripts/ud_parse_commands.py {args.what}" + (
            f" --depths {args.depths}" if args.what == "lookahead" and args.depths != "0,1,2" else "")
        obj = {"command": cmd, "machine": machine(), "numba_cache": NUMBA_CACHE, "loadavg_before": load, **obj}
        dump_json(obj, out.with_suffix(".json"))
    cmd, m = obj["command"], obj["machine"]
    md = command_md(obj) if args.what == "command" else lookahead_md(obj)
    md.insert(2, f"`{cmd}` ({m['date']}, commit {m['commit']}, {m['cores']} cores shared with other jobs: "
                 "wall times are upper bounds" + (f"; load average before the run {obj['loadavg_before']}"
                                                  if "loadavg_before" in obj else "") + ").\n")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
