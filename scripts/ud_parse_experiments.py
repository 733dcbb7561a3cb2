"""The labelled beam parser on UD English ParTUT (gold UPOS, CoNLL 2018 convention: every word,
punctuation included): dev/test UAS and LAS (universal label, the CoNLL 2018 LAS, and the full
label), training wall time and peak RSS of `structkit train` (/usr/bin/time -f %M), parse speed
and model size, for several beam widths. Writes results/ud-parse.json and .md.

    python scripts/ud_parse_experiments.py [--beams 1,8,32] [--depths 0,1] [--epochs N] [--no-test]
    python scripts/ud_parse_experiments.py --report-only [--out results/ud-parse-depth]

--depths trains one model per beam and lookahead depth (lookahead inside the beam, --depth D)
and also reports each model's dev scores parsed at the other depths (dev_at_depth).

Settings are chosen on dev; --no-test leaves test out (run test once, at the end).

Each row's training is timed with a warm numba cache: an untimed 1-epoch run with the same flags
on dev comes first (``NUMBA_CACHE``, recorded in each row and said in the .md; rows of older runs,
which had no warm-up, say what is known). --report-only rewrites the .md from the .json.
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

from common import numba_cache  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402
from structkit.io.conllx import read_conllx  # noqa: E402
from structkit.parse.labelled import label_scores  # noqa: E402
from structkit.parse.parser import DependencyParser  # noqa: E402

UD = "ud-english-partut/en_partut-ud-{}.conllu"
UDPIPE1 = {"uas": 86.5, "las": 84.7}  # the brief's targets (UDPipe 1, ParTUT test)
NUMBA_CACHE = numba_cache("warm", "each row's kernels compiled by an untimed 1-epoch run with the same flags on dev "
                                  "first")


def train(beam: int | None, epochs: int | None, model: Path, extra: list[str], warm: bool = False) -> dict:
    """`structkit train` under /usr/bin/time; ``warm``: the untimed 1-epoch run on dev with the same
    flags that compiles the kernels first (NUMBA_CACHE)."""
    dev = resolve_data_path(UD.format("dev"))
    cmd = ["/usr/bin/time", "-f", "%M %e", sys.executable, "-m", "structkit", "train", "--task", "parse",
           "--train", dev if warm else resolve_data_path(UD.format("train")), "--dev", dev,
           "--model", str(model), "-q", *extra]
    if beam is not None:
        cmd += ["--beam", str(beam)]
    if warm or epochs is not None:
        cmd += ["--epochs", "1" if warm else str(epochs)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    rss_kb, wall = r.stderr.strip().splitlines()[-1].split()
    return {"command": " ".join(cmd[3:]), "train_wall_seconds": float(wall),
            "train_peak_rss_mb": round(int(rss_kb) / 1024, 1), "model_mb": round(model.stat().st_size / 2**20, 2),
            "numba_cache": NUMBA_CACHE}


def _flags(command: str) -> str:
    """A row's train flags without its model path and beam width (which is no kernel's type)."""
    out, it = [], iter(command.split())
    for a in it:
        if a in ("--model", "--beam"):
            next(it, None)
        else:
            out.append(a)
    return " ".join(out)


def cache_words(rows: list[dict]) -> str:
    """What the .md says of the numba cache of the rows' training: their record, or, for rows of
    older runs (no warm-up), what is known: the first row found the cache as earlier commands had
    left it; a later row whose flags differ from an earlier row's only in --beam found the kernels
    that row had compiled or loaded."""
    if all(r.get("numba_cache") == NUMBA_CACHE for r in rows):
        return NUMBA_CACHE["words"]
    parts = []
    for i, r in enumerate(rows):
        if r.get("numba_cache"):
            parts.append(f"{r['beam']}: {r['numba_cache']['words']}")
        elif any(_flags(q["command"]) == _flags(r["command"]) for q in rows[:i]):
            parts.append(f"{r['beam']}: warm in effect (an earlier row of the same run differs only in --beam, "
                         "so its kernels were compiled or loaded before)")
        else:
            parts.append(f"{r['beam']}: not recorded (an older run with no warm-up: the cache as earlier "
                         "commands had left it)")
    return "numba cache by row: " + "; ".join(parts)


def report(rows: list[dict], out: str, command: str | None = None) -> None:
    lines = ["| beam | train s (wall) | peak RSS MB | model MB | dev UAS | dev LAS | dev LAS full | "
             "test UAS | test LAS | test LAS full | test sent/s |", "|" + "---|" * 11]
    for r in rows:
        t = r.get("test", {})
        lines.append(f"| {r['beam']} | {r['train_wall_seconds']} | {r['train_peak_rss_mb']} | {r['model_mb']} | "
                     f"{r['dev']['uas']} | {r['dev']['las']} | {r['dev']['las_full']} | {t.get('uas', '-')} | "
                     f"{t.get('las', '-')} | {t.get('las_full', '-')} | {t.get('sentences_per_second', '-')} |")
    lines.append(f"\nTargets (UDPipe 1, test): UAS {UDPIPE1['uas']}, LAS {UDPIPE1['las']}; LAS = universal "
                 "label (before ':'), all words, gold UPOS.")
    lines.append(f"\nTrain s: {cache_words(rows)}. Sentences/s: parsing with a loaded model after two "
                 "sentences parsed untimed (kernels compiled before the timing).")
    deep = [r for r in rows if "dev_at_depth" in r]
    if deep:
        depth = lambda r: int(r["beam"].rsplit(" ", 1)[1])  # noqa: E731  ("8 depth 1" -> 1)
        pds = sorted({depth(r) for r in deep} | {int(d) for r in deep for d in r["dev_at_depth"]})
        if command is None:   # --report-only: the run's options, as its rows show them
            beams = ",".join(dict.fromkeys(r["beam"].split()[0] for r in rows))
            depths = ",".join(dict.fromkeys(str(depth(r)) for r in deep))
            command = (f"python scripts/ud_parse_experiments.py --beams {beams} --depths {depths} --parse-depths "
                       f"{','.join(map(str, pds))}" + ("" if all("test" in r for r in rows) else " --no-test")
                       + ("" if Path(out) == ROOT / "results" / "ud-parse" else
                          f" --out {Path(out).resolve().relative_to(ROOT)}"))
        lines += ["", "Lookahead inside the beam (`--depth D`: the 2B best candidates re-ranked by path score + "
                  "the best depth-D action sequence score), UD English ParTUT, gold UPOS"
                  + (f"; `{command}`" if command else "") + ". Dev at each parse depth (the model trained at "
                  "one depth, parsed at another; UAS / LAS, sentences/s):", "",
                  "| trained | " + " | ".join(f"parse depth {d}" for d in pds) + " |", "|---" * (len(pds) + 1) + "|"]
        for r in deep:
            cells = []
            for d in pds:
                c = r["dev"] if d == depth(r) else r["dev_at_depth"].get(str(d))
                cells.append("-" if c is None else f"{c['uas']:.2f} / {c['las']:.2f}, {c['sentences_per_second']}")
            lines.append(f"| {r['beam']} | " + " | ".join(cells) + " |")
        base = {r["beam"].rsplit(" depth ", 1)[0]: r for r in deep if depth(r) == 0}
        for r in deep:
            b = base.get(r["beam"].rsplit(" depth ", 1)[0])
            if b is None or b is r:
                continue
            dv = {k: round(r["dev"][k] - b["dev"][k], 2) for k in ("uas", "las")}
            n = r["dev"]["words"]
            line = (f"Depth {depth(r)} (trained and parsed) against depth 0, beam {r['beam'].split()[0]}: dev "
                    f"{dv['uas']:+.2f} UAS / {dv['las']:+.2f} LAS (about {round(abs(dv['uas']) * n / 100)} / "
                    f"{round(abs(dv['las']) * n / 100)} of {n} words)")
            if "test" in r and "test" in b:
                line += (f", test {r['test']['uas'] - b['test']['uas']:+.2f} UAS / "
                         f"{r['test']['las'] - b['test']['las']:+.2f} LAS")
            line += (f"; {r['train_wall_seconds'] / b['train_wall_seconds']:.1f}x the training wall time "
                     f"({r['train_wall_seconds']:.0f} s against {b['train_wall_seconds']:.0f} s).")
            lines += ["", line]
    Path(out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def evaluate(model: Path, split: str, depth: int | None = None) -> dict:
    parser = DependencyParser.load(str(model))
    sents = list(read_conllx(resolve_data_path(UD.format(split))))
    parser.parse_sentences(sents[:2], depth=depth)  # compiled before timing
    t0 = time.perf_counter()
    H, D = parser.parse_sentences(sents, depth=depth)
    secs = time.perf_counter() - t0
    res = label_scores(sents, H, D)
    res["sentences_per_second"] = round(len(sents) / secs)
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in res.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--beams", default="default,1,8,32", help="beam widths; 'default' = no --beam flag")
    ap.add_argument("--depths", default="", help="lookahead depths inside the beam (train --depth D); "
                    "empty = no --depth flag")
    ap.add_argument("--parse-depths", default=None, help="dev parse depths for dev_at_depth (default: --depths)")
    ap.add_argument("--epochs", type=int)
    ap.add_argument("--no-test", action="store_true")
    ap.add_argument("--extra", default="", help="more train flags, e.g. '--templates base,labels'")
    ap.add_argument("--out", default=str(ROOT / "results" / "ud-parse"))
    ap.add_argument("--report-only", action="store_true", help="rewrite OUT.md from OUT.json")
    args = ap.parse_args()
    if args.report_only:
        return report(json.loads(Path(args.out + ".json").read_text()), args.out)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        depths = [int(d) for d in args.depths.split(",") if d] or [None]
        parse_depths = depths if args.parse_depths is None else [int(d) for d in args.parse_depths.split(",")]
        for b, depth in [(b, d) for b in args.beams.split(",") for d in depths]:
            beam = None if b == "default" else int(b)
            model = Path(tmp) / f"beam{b}-depth{depth}.model"
            extra = args.extra.split() + ([] if depth is None else ["--depth", str(depth)])
            train(beam, args.epochs, model, extra, warm=True)   # untimed: the numba cache warm (NUMBA_CACHE)
            row = {"beam": b if depth is None else f"{b} depth {depth}", **train(beam, args.epochs, model, extra)}
            row["dev"] = evaluate(model, "dev")
            if depth is not None:
                row["dev_at_depth"] = {d: {k: evaluate(model, "dev", d)[k] for k in ("uas", "las", "sentences_per_second")}
                                       for d in parse_depths if d != depth}
            if not args.no_test:
                row["test"] = evaluate(model, "test")
            print(json.dumps(row), flush=True)
            rows.append(row)
    Path(args.out + ".json").write_text(json.dumps(rows, indent=2) + "\n")
    report(rows, args.out, "python " + " ".join(["scripts/ud_parse_experiments.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
