"""The default (beam) parser's speed and memory on two source trees in one run, interleaved:
the README's training command on UD English ParTUT with --dev, and parsing with its model.

    python scripts/bench_parser_speed.py OLD_TREE NEW_TREE [--repeat 2]
    python scripts/bench_parser_speed.py --report-only

Per tree and repeat (the trees alternate, so the machine's drift hits both alike):

* training: `structkit train --task parse --train .../en_partut-ud-train.conllu --dev
  .../en_partut-ud-dev.conllu --model M -q` under /usr/bin/time: CPU seconds (user + system)
  and peak RSS (the process's maximum resident set size);
* parsing, in a process of its own with that model: ``parse_sentences`` on dev + test (2,722 +
  3,408 words) after one warm-up pass, best of 3 in CPU seconds (process_time), as words per
  CPU second; dev/test LAS (CoNLL 2018: all words, universal label);
* `structkit parse` of the test file as a user runs it (start-up, reading, writing included):
  CPU seconds.

Figures are the best of the repeats (CPU time, so other jobs on the machine count less than in
wall time, but they still share its caches). The models of the two trees are compared by their
header checksum, the parses by digest. Writes results/bench-beam.json/.md (``--report-only``:
the .md from the .json). Every timing has a warm numba cache (``NUMBA_CACHE``, recorded in the
JSON and said in the report): each tree first trains (one epoch on dev, with --dev) and parses
untimed, compiling its kernels into its own cache.
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
from common import RESULTS, dump_json, machine, numba_cache  # noqa: E402

UD = "ud-english-partut/en_partut-ud-{}.conllu"
NUMBA_CACHE = numba_cache("warm", "each tree's kernels compiled into its own cache by an untimed 1-epoch training on "
                                  "dev (with --dev) and parse first")

# Run inside the tree's process: load the model, time parse_sentences on dev + test.
PARSE_SNIPPET = r"""
import hashlib, json, sys, time
from structkit.config import resolve_data_path
try:
    from structkit.parse.labelled import label_scores
    from structkit.parse.parser import DependencyParser, read_treebank
except ImportError:   # a tree from before the wings (structkit/tasks/), e.g. the issue's fdeef3d
    from structkit.tasks.labelled import label_scores
    from structkit.tasks.parser import DependencyParser, read_treebank
p = DependencyParser.load(sys.argv[1])
sets = {k: read_treebank(resolve_data_path(sys.argv[2].format(k))) for k in ("dev", "test")}
out = {}
for k, s in sets.items():
    H, D = p.parse_sentences(s)           # warm-up (and the parse scored)
    out[k + "_las"] = round(label_scores(s, H, D)["las"], 2)
    out[k + "_digest"] = hashlib.sha256(json.dumps([H, D]).encode()).hexdigest()[:16]
best = float("inf")
for _ in range(3):
    t0 = time.process_time()
    for s in sets.values():
        p.parse_sentences(s)
    best = min(best, time.process_time() - t0)
words = sum(len(x) for s in sets.values() for x in s)
out.update(parse_words=words, parse_cpu_seconds=round(best, 4), words_per_cpu_second=round(words / best))
print(json.dumps(out))
"""


def _env(tree: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = tree
    return env


def _timed(tree: str, args: list[str], cwd: str) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS MB, stdout) of `python -m structkit ARGS` on a tree. The process
    runs in cwd (not the tree: `python -m` would put the working directory first on sys.path)."""
    cmd = ["/usr/bin/time", "-f", "%M %U %S", sys.executable, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env(tree), cwd=cwd)
    if r.returncode != 0:
        sys.exit(f"{tree}: {' '.join(args)} failed:\n{r.stderr}")
    rss_kb, user, sys_ = r.stderr.strip().splitlines()[-1].split()
    return round(float(user) + float(sys_), 2), round(int(rss_kb) / 1024, 1), r.stdout


def header_checksum(model: Path) -> str:
    import numpy as np

    with np.load(model, allow_pickle=False) as z:
        return json.loads(z["__header__"].tobytes().decode("utf-8"))["checksum"]


def one_round(tree: str, tmp: Path, tag: str) -> dict:
    from structkit.config import resolve_data_path

    model = tmp / f"{tag}.model"
    train = ["-m", "structkit", "train", "--task", "parse", "--train", resolve_data_path(UD.format("train")),
             "--dev", resolve_data_path(UD.format("dev")), "--model", str(model), "-q"]
    load = round(os.getloadavg()[0], 2)
    cpu, rss, _ = _timed(tree, train, str(tmp))
    row = {"load_before": load, "train_cpu_seconds": cpu, "train_peak_rss_mb": rss,
           "model_checksum": header_checksum(model)}
    _, _, out = _timed(tree, ["-c", PARSE_SNIPPET, str(model), UD], str(tmp))
    row |= json.loads(out.strip().splitlines()[-1])
    test = resolve_data_path(UD.format("test"))
    cpu, _, _ = _timed(tree, ["-m", "structkit", "parse", "--model", str(model), test, "-o", str(tmp / "out.conllu")],
                       str(tmp))
    row["cli_parse_test_cpu_seconds"] = cpu
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", nargs="?")
    ap.add_argument("new", nargs="?")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "bench-beam"))
    ap.add_argument("--report-only", action="store_true", help="rewrite OUT.md from OUT.json (no OLD NEW)")
    args = ap.parse_args()
    if args.report_only:
        return report(json.loads(Path(args.out).with_suffix(".json").read_text()), Path(args.out))
    if not (args.old and args.new):
        ap.error("OLD and NEW trees are needed (unless --report-only)")
    trees = {"old": str(Path(args.old).resolve()), "new": str(Path(args.new).resolve())}
    rows: dict[str, list[dict]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        from structkit.config import resolve_data_path

        for name, tree in trees.items():  # warm each tree's numba cache (compiling is not timed)
            _timed(tree, ["-m", "structkit", "train", "--task", "parse", "--train",
                          resolve_data_path(UD.format("dev")), "--dev", resolve_data_path(UD.format("dev")),
                          "--epochs", "1", "--model", str(t / "warm.model"), "-q"], tmp)
            _timed(tree, ["-c", PARSE_SNIPPET, str(t / "warm.model"), UD], tmp)
        for r in range(args.repeat):
            for name, tree in trees.items():
                row = one_round(tree, t, name)
                rows[name].append(row)
                print(f"round {r + 1} {name}: {json.dumps(row)}", flush=True)
    best = {}
    for name, rs in rows.items():
        b = dict(rs[0])
        for k in ("train_cpu_seconds", "parse_cpu_seconds", "cli_parse_test_cpu_seconds", "train_peak_rss_mb"):
            b[k] = min(r[k] for r in rs)
        b["words_per_cpu_second"] = round(b["parse_words"] / b["parse_cpu_seconds"])
        best[name] = b
    o, n = best["old"], best["new"]
    same_model = all(r["model_checksum"] == o["model_checksum"] for r in rows["old"] + rows["new"])
    same_parses = o["dev_digest"] == n["dev_digest"] and o["test_digest"] == n["test_digest"]
    m = machine()
    cmd = "python scripts/bench_parser_speed.py OLD NEW" + (f" --repeat {args.repeat}" if args.repeat != 2 else "")
    obj = {"command": cmd, "machine": m, "numba_cache": NUMBA_CACHE, "trees": trees, "rounds": rows, "best": best,
           "same_model": same_model, "same_parses": same_parses,
           "speedup": {"train_cpu": round(o["train_cpu_seconds"] / n["train_cpu_seconds"], 2),
                       "parse_words_per_cpu_second": round(n["words_per_cpu_second"] / o["words_per_cpu_second"], 2),
                       "cli_parse_test_cpu": round(o["cli_parse_test_cpu_seconds"] / n["cli_parse_test_cpu_seconds"], 2)}}
    out = Path(args.out)
    dump_json(obj, out.with_suffix(".json"))
    return report(obj, out)


def report(obj: dict, out: Path) -> int:
    """OUT.md from the JSON ``main`` wrote."""
    cmd, m, rows, best, sp = obj["command"], obj["machine"], obj["rounds"], obj["best"], obj["speedup"]
    o, same_model, same_parses = best["old"], obj["same_model"], obj["same_parses"]
    repeat = len(rows["old"])
    # an older JSON: the same warm-up (in the script since it was written), not recorded
    cache = obj.get("numba_cache", numba_cache("warm", NUMBA_CACHE["how"] + "; not recorded by this older run, "
                                                "but the script had this warm-up"))
    md = ["# The beam parser, old tree against new (issue 31)", "",
          f"`{cmd}` ({m['date']}, new tree at commit {m['commit']}, {m['cores']} cores; best of "
          f"{repeat} interleaved rounds; 1-minute load average before each round's training: "
          + ", ".join(f"{r.get('load_before', '?')}" for rr in zip(rows["old"], rows["new"]) for r in rr)
          + ", old and new alternating).", "",
          "Training: `structkit train --task parse --train ud-english-partut/en_partut-ud-train.conllu "
          "--dev ud-english-partut/en_partut-ud-dev.conllu --model M -q` (the README's default parser: beam 8, "
          "8 epochs, dev selection), CPU = user + system seconds, peak RSS = /usr/bin/time's maximum resident "
          "set size. Parsing: `parse_sentences` with that model on dev + test "
          f"({o['parse_words']:,} words) in a warm process, words per CPU second; `structkit parse` of the test "
          "file: the whole command's CPU seconds (start-up, reading, writing included). LAS: CoNLL 2018 "
          f"(every word, universal label), gold UPOS. Every timing: {cache['words']}.", "",
          "| tree | train CPU s | peak RSS MB (--dev) | parse words / CPU s | `structkit parse` test CPU s | dev LAS | test LAS |",
          "|---|---|---|---|---|---|---|"]
    for name in ("old", "new"):
        b = best[name]
        md.append(f"| {name} | {b['train_cpu_seconds']} | {b['train_peak_rss_mb']} | {b['words_per_cpu_second']:,} | "
                  f"{b['cli_parse_test_cpu_seconds']} | {b['dev_las']} | {b['test_las']} |")
    md += ["", f"Speed-up: training {sp['train_cpu']}x (CPU), parsing {sp['parse_words_per_cpu_second']}x "
               f"(words per CPU second), `structkit parse` of test {sp['cli_parse_test_cpu']}x (a command "
               "dominated by start-up).", "",
           f"Same model from both trees (header checksum): {'yes' if same_model else 'NO'}; the same parses of "
           f"dev and test: {'yes' if same_parses else 'NO'}."]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
