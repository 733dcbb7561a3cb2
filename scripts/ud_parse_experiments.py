"""The labelled beam parser on UD English ParTUT (gold UPOS, CoNLL 2018 convention: every word,
punctuation included): dev/test UAS and LAS (universal label, the CoNLL 2018 LAS, and the full
label), training wall time and peak RSS of `structkit train` (/usr/bin/time -f %M), parse speed
and model size, for several beam widths. Writes results/ud-parse.json and .md.

    python scripts/ud_parse_experiments.py [--beams 1,8,32] [--depths 0,1] [--epochs N] [--no-test]

--depths trains one model per beam and lookahead depth (lookahead inside the beam, --depth D)
and also reports each model's dev scores parsed at the other depths (dev_at_depth).

Settings are chosen on dev; --no-test leaves test out (run test once, at the end).
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

from structkit.config import resolve_data_path  # noqa: E402
from structkit.io.conllx import read_conllx  # noqa: E402
from structkit.parse.labelled import label_scores  # noqa: E402
from structkit.parse.parser import DependencyParser  # noqa: E402

UD = "ud-english-partut/en_partut-ud-{}.conllu"
UDPIPE1 = {"uas": 86.5, "las": 84.7}  # the brief's targets (UDPipe 1, ParTUT test)


def train(beam: int | None, epochs: int | None, model: Path, extra: list[str]) -> dict:
    cmd = ["/usr/bin/time", "-f", "%M %e", sys.executable, "-m", "structkit", "train", "--task", "parse",
           "--train", resolve_data_path(UD.format("train")), "--dev", resolve_data_path(UD.format("dev")),
           "--model", str(model), "-q", *extra]
    if beam is not None:
        cmd += ["--beam", str(beam)]
    if epochs is not None:
        cmd += ["--epochs", str(epochs)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    rss_kb, wall = r.stderr.strip().splitlines()[-1].split()
    return {"command": " ".join(cmd[3:]), "train_wall_seconds": float(wall),
            "train_peak_rss_mb": round(int(rss_kb) / 1024, 1), "model_mb": round(model.stat().st_size / 2**20, 2)}


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
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        depths = [int(d) for d in args.depths.split(",") if d] or [None]
        parse_depths = depths if args.parse_depths is None else [int(d) for d in args.parse_depths.split(",")]
        for b, depth in [(b, d) for b in args.beams.split(",") for d in depths]:
            beam = None if b == "default" else int(b)
            model = Path(tmp) / f"beam{b}-depth{depth}.model"
            extra = args.extra.split() + ([] if depth is None else ["--depth", str(depth)])
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
    lines = ["| beam | train s (wall) | peak RSS MB | model MB | dev UAS | dev LAS | dev LAS full | "
             "test UAS | test LAS | test LAS full | test sent/s |", "|" + "---|" * 11]
    for r in rows:
        t = r.get("test", {})
        lines.append(f"| {r['beam']} | {r['train_wall_seconds']} | {r['train_peak_rss_mb']} | {r['model_mb']} | "
                     f"{r['dev']['uas']} | {r['dev']['las']} | {r['dev']['las_full']} | {t.get('uas', '-')} | "
                     f"{t.get('las', '-')} | {t.get('las_full', '-')} | {t.get('sentences_per_second', '-')} |")
    lines.append(f"\nTargets (UDPipe 1, test): UAS {UDPIPE1['uas']}, LAS {UDPIPE1['las']}; LAS = universal "
                 "label (before ':'), all words, gold UPOS.")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
