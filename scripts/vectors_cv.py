"""Issue 44: how much do the French vectors move a pipeline, measured over every sentence of
French ParTUT rather than its test file alone? The test file has about 2,600 words and 300
unseen ones: a training seed moves its LAS by several tenths and its unseen-word scores by
several points (results/vectors.md), which is as large as the issue's targets. Here the
treebank's train, dev and test sentences, in file order, are cut into ``FOLDS`` contiguous
folds; for fold k the pipeline is trained with the defaults on the other folds but one
(``--train``), that one being fold k + 1 (``--dev``, which chooses the epochs and the parser),
without and with ``--vectors``, then ``structkit annotate`` reads fold k's raw text and the
CoNLL 2018 metrics score it (F1), with UPOS and Lemmas on the words unseen in that training
file (as scripts/vectors_experiment.py counts them). Each fold's change (with - without) is one
sample: the mean change over the folds, its standard deviation and a 95% interval (Student's
t, FOLDS - 1 degrees of freedom) are reported against the issue's targets.

    python scripts/extract_vectors.py        # once: build/vectors/fr_core_news_md.vec.gz
    python scripts/vectors_cv.py [--vectors FILE] [--folds 10] [--report-only]

Writes results/vectors-cv.json (after every fold) and results/vectors-cv.md. Accuracy only:
the runs are not timed (results/vectors.md times them).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, measured  # noqa: E402
from vectors_experiment import TARGETS, VEC, _data, _unseen_scores  # noqa: E402

OUT = ROOT / "results" / "vectors-cv"
FOLDS = 10
METRICS = ("las", "mlas", "blex", "upos", "lemmas", "unseen_upos", "unseen_lemmas")
# Student's t at 97.5% for 1 .. 19 degrees of freedom (two-sided 95% intervals)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093]


def sentences(path: str) -> list[str]:
    """The file's sentence blocks (comment lines and rows), in order."""
    text = Path(path).read_text(encoding="utf-8")
    return [b.strip("\n") for b in text.split("\n\n") if b.strip()]


def write(blocks: list[str], path: Path) -> str:
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return str(path)


def run_fold(k: int, folds: list[list[str]], vec: str, tmp: Path) -> dict:
    from structkit.eval.ud import evaluate_ud
    from structkit.tokenizer.task import raw_text

    n = len(folds)
    dev_k = (k + 1) % n
    train = write([b for j, f in enumerate(folds) if j not in (k, dev_k) for b in f], tmp / "train.conllu")
    dev = write(folds[dev_k], tmp / "dev.conllu")
    test = write(folds[k], tmp / "test.conllu")
    raw = tmp / "test.txt"
    raw.write_text(raw_text(test), encoding="utf-8")
    out = {"fold": k, "test_sentences": len(folds[k]), "dev_fold": dev_k}
    for kind in ("without", "with"):
        model = tmp / f"{kind}.skm"
        args = ["train", "--task", "pipeline", "--train", train, "--dev", dev, "--model", model, "-q"]
        if kind == "with":
            args += ["--vectors", vec]
        measured(args)
        a = measured(["annotate", "-m", model, raw])
        system = tmp / f"{kind}.conllu"
        system.write_text(a["stdout"], encoding="utf-8")
        scores = evaluate_ud(test, str(system))
        row = {m: round(scores[m]["f1"], 2) for m in ("las", "mlas", "blex", "upos", "lemmas", "words")}
        row |= _unseen_scores(train, test, str(system))
        out[kind] = row
    return out


def summary(rows: list[dict]) -> dict:
    out = {}
    for m in METRICS:
        d = [r["with"][m] - r["without"][m] for r in rows]
        n = len(d)
        mean = sum(d) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else 0.0
        half = T975[n - 2] * sd / math.sqrt(n) if 1 < n <= len(T975) + 1 else float("nan")
        out[m] = {"without": round(sum(r["without"][m] for r in rows) / n, 2),
                  "with": round(sum(r["with"][m] for r in rows) / n, 2),
                  "mean": round(mean, 2), "sd": round(sd, 2), "low": round(mean - half, 2),
                  "high": round(mean + half, 2), "better_folds": sum(x > 0 for x in d), "folds": n}
    return out


def report(res: dict) -> str:
    rows, s = res["rows"], res["summary"]
    unseen = sum(r["without"]["unseen_words"] for r in rows)
    lines = ["# Word vectors over every sentence of French ParTUT (issue 44)", "",
             f"`python scripts/vectors_cv.py` ({res['machine']['date']}, commit {res['machine']['commit']}): "
             f"{res['treebank']}'s train, dev and test sentences ({res['sentences']:,}) in {len(rows)} contiguous "
             "folds; for each fold, a pipeline trained with the defaults on the others but the next "
             "(`--dev`), without and with `--vectors` "
             f"({res['vectors_file']}), scored on the fold's raw text with the CoNLL 2018 metrics (F1); "
             f"**unseen**: the gold words whose form is not in that training file ({unseen:,} over the folds). "
             "Each fold's change (with - without) is one sample; the 95% interval is Student's t over the folds.",
             "", "| measure | without (mean) | with (mean) | change | sd | 95% interval | folds better | target |",
             "|---|---|---|---|---|---|---|---|"]
    for m in METRICS:
        x = s[m]
        target = f"+{TARGETS[m]}" if m in TARGETS else ""
        lines.append(f"| {m} | {x['without']:.2f} | {x['with']:.2f} | {x['mean']:+.2f} | {x['sd']:.2f} | "
                     f"{x['low']:+.2f} to {x['high']:+.2f} | {x['better_folds']} of {x['folds']} | {target} |")
    lines += ["", "Each fold (without / with):", "",
              "| fold | sentences | LAS | MLAS | unseen words | unseen UPOS | unseen Lemmas |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        w, v = r["without"], r["with"]
        lines.append(f"| {r['fold']} | {r['test_sentences']} | {w['las']:.2f} / {v['las']:.2f} | "
                     f"{w['mlas']:.2f} / {v['mlas']:.2f} | {w['unseen_words']} | {w['unseen_upos']:.2f} / "
                     f"{v['unseen_upos']:.2f} | {w['unseen_lemmas']:.2f} / {v['unseen_lemmas']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vectors", default=str(VEC))
    ap.add_argument("--treebank", default="ud-french-partut")
    ap.add_argument("--folds", type=int, default=FOLDS)
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    path = OUT.with_suffix(".json")
    if a.report_only:
        res = json.loads(path.read_text())
    else:
        if not os.path.exists(a.vectors):
            sys.exit(f"{a.vectors}: no such file; make it with scripts/extract_vectors.py")
        data = _data(a.treebank)
        blocks = [b for split in ("train", "dev", "test") for b in sentences(data[split])]
        n = len(blocks)
        folds = [blocks[i * n // a.folds:(i + 1) * n // a.folds] for i in range(a.folds)]
        res = {"treebank": a.treebank, "sentences": n, "vectors_file": os.path.relpath(a.vectors, ROOT),
               "machine": machine(), "rows": []}
        with tempfile.TemporaryDirectory(prefix="structkit-vcv-") as tmp:
            for k in range(a.folds):
                res["rows"].append(run_fold(k, folds, a.vectors, Path(tmp)))
                res["summary"] = summary(res["rows"])
                dump_json(res, path)
                print(json.dumps(res["rows"][-1]), flush=True)
    OUT.with_suffix(".md").write_text(report(res), encoding="utf-8")
    print(report(res))


if __name__ == "__main__":
    main()
