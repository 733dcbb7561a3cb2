"""Issue 44 for the sequence taggers: ``structkit train --task pos|chunk|ner --vectors FILE``
appends the ``vectors`` template set (``structkit.sequence.templates``: the word's clusters of
pretrained vectors at the four levels of ``train --vectors``' table, and its neighbours' at the
middle two) to the task's templates. This script measures it where we have vectors and a
tagging task in the same language: UPOS tagging of French ParTUT (``--task pos`` on CoNLL-U,
the defaults: the UD template set and the k-best passive-aggressive learner, train + dev, dev
choosing the epoch), with gold tokens, scored on dev and test over all words and over the
**unseen** words (forms absent from the training file), for several training seeds.

Variants of the cluster templates (chosen on dev; the default is what ``--vectors`` appends):

* **none**: no vectors;
* **own**: ``vc1[0]`` .. ``vc4[0]`` only;
* **default**: own, and ``vc2``/``vc3`` of the words either side;
* **+fine neighbours**: default, and ``vc4`` of the words either side;
* **+word pairs**: default, and ``vc3[0]`` joined with the words either side.

One process: the cluster table is made once (``vectors.word_clusters``, the defaults) and
passed to each training; numba's cache warm (a first training before the timed ones). CPU
seconds (``time.process_time``) are the tagger's training alone; the table's making is timed
apart (the cluster cache off).
And, before all that, the command a user types, timed (``commands``). Writes results/vectors-sequence.json
and .md.

    python scripts/extract_vectors.py        # once: build/vectors/fr_core_news_md.vec.gz
    python scripts/vectors_sequence.py [--vectors FILE] [--seeds 0 1 2] [--report-only]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, measured  # noqa: E402

OUT = ROOT / "results" / "vectors-sequence"
VEC = ROOT / "build" / "vectors" / "fr_core_news_md.vec.gz"
TREEBANK = "ud-french-partut/fr_partut-ud"
OWN = ["vc1[0]", "vc2[0]", "vc3[0]", "vc4[0]"]
VARIANTS = {
    "none": None,
    "own": OWN,
    "default": "vectors",
    "+fine neighbours": ["vectors", "vc4[-1]", "vc4[1]"],
    "+word pairs": ["vectors", "w[-1]|vc3[0]", "vc3[0]|w[1]"],
}


def _paths() -> dict:
    data = os.environ.get("STRUCTKIT_DATA")
    if not data:
        sys.exit("vectors_sequence.py: set STRUCTKIT_DATA to the folder holding ud-french-partut")
    return {s: os.path.join(data, f"{TREEBANK}-{s}.conllu") for s in ("train", "dev", "test")}


def _accuracy(gold: list[str], pred: list[str], mask: np.ndarray) -> float:
    g, p = np.array(gold, dtype=object), np.array(pred, dtype=object)
    n = int(mask.sum())
    return round(100.0 * float((g[mask] == p[mask]).sum()) / n, 2) if n else 0.0


def run(variant: str, clusters, seed: int, corpora: dict, vec_path: str) -> dict:
    from structkit.sequence.task import TaggerConfig, default_algo, train_tagger_on

    extra = VARIANTS[variant]
    cfg = TaggerConfig(task="pos", algo=default_algo("pos", corpora["train_path"]), seed=seed,
                       templates=None if extra is None else ["ud"] + ([extra] if isinstance(extra, str) else extra),
                       vectors=None if extra is None else vec_path)
    cfg.validate()
    t0 = time.process_time()
    tagger = train_tagger_on(cfg, corpora["train"], corpora["dev"], clusters=None if extra is None else clusters)
    cpu = time.process_time() - t0
    seen = set(corpora["train"].words)
    row = {"variant": variant, "seed": seed, "train_cpu_s": round(cpu, 2),
           "features": tagger.features.n_features,
           "dev_epoch": tagger.info.get("selected_epoch")}
    for split in ("dev", "test"):
        c = corpora[split]
        if c is None:
            continue
        ids = tagger.predict_ids(tagger.encode(c.words, None, c.offsets))
        pred = [tagger.labels[i] for i in ids]
        unseen = np.array([w not in seen for w in c.words], dtype=bool)
        row[f"{split}_upos"] = _accuracy(c.labels, pred, np.ones(len(pred), dtype=bool))
        row[f"{split}_unseen_upos"] = _accuracy(c.labels, pred, unseen)
        row[f"{split}_unseen_words"] = int(unseen.sum())
    return row


def commands(paths: dict, vec_path: str) -> dict:
    """What the command a user types costs: ``structkit train --task pos`` (new processes,
    numba's cache warm) without vectors, with them and an empty cluster cache (the table made
    from the file), and with them again (the table the first kept); CPU seconds (user +
    system), peak MB and the model's size."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory(prefix="structkit-vseq-") as tmp:
        os.environ["STRUCTKIT_CLUSTER_CACHE"] = os.path.join(tmp, "clusters")
        for name, extra in (("without", []), ("with, table made", ["--vectors", vec_path]),
                            ("with, table kept", ["--vectors", vec_path])):
            model = os.path.join(tmp, "m.skm")
            t = measured(["train", "--task", "pos", "--train", paths["train"], "--dev", paths["dev"],
                          "--model", model, "-q"] + extra)
            out[name] = {"cpu_s": t["cpu_seconds"], "wall_s": t["wall_seconds"], "peak_mb": t["peak_mb"],
                         "model_mb": round(os.path.getsize(model) / 1e6, 2)}
            print(name, out[name], flush=True)
    return out


def measure(vec_path: str, seeds: list[int]) -> dict:
    from structkit import vectors as V
    from structkit.sequence.task import read_labelled

    paths = _paths()
    timed = commands(paths, vec_path)   # first: a child's peak RSS counts what its parent held at the fork
    corpora = {s: read_labelled(p, None, task="pos") for s, p in paths.items()}
    corpora["train_path"] = paths["train"]
    os.environ["STRUCTKIT_CLUSTER_CACHE"] = "off"   # the table made from the file, timed
    t0 = time.process_time()
    clusters = V.word_clusters(vec_path)
    table_cpu = time.process_time() - t0
    run("default", clusters, 0, {**corpora, "train": corpora["dev"], "dev": None, "test": None}, vec_path)  # numba warm
    rows = []
    for seed in seeds:
        for variant in VARIANTS:
            rows.append(run(variant, clusters, seed, corpora, vec_path))
            print(rows[-1], flush=True)
    return {"machine": machine(), "vectors": clusters.header(), "table_cpu_s": round(table_cpu, 2),
            "seeds": seeds, "rows": rows, "commands": timed,
            "when": time.strftime("%Y-%m-%d %H:%M:%S"), "treebank": TREEBANK}


def mean_of(rows: list[dict], variant: str, key: str) -> float:
    vals = [r[key] for r in rows if r["variant"] == variant]
    return round(float(np.mean(vals)), 2)


def report(res: dict) -> str:
    rows, seeds = res["rows"], res["seeds"]
    v = res["vectors"]
    lines = ["# Word vectors in the sequence taggers (issue 44)", "",
             f"`python scripts/vectors_sequence.py` ({res['when']}, commit {res['machine']['commit']}, "
             f"{res['machine']['cpu']}): `--task pos` on "
             f"{res['treebank']} (UPOS from CoNLL-U, the defaults: UD templates, k-best PA, train + dev, dev "
             "choosing the epoch), gold tokens; **unseen**: the words whose form is not in the training "
             f"file. Vectors: {v.get('file')} ({v.get('words')} words, levels "
             f"{', '.join(str(k) for k in v.get('levels', []))}; sha256 {v.get('sha256')}). Seeds "
             f"{', '.join(str(s) for s in seeds)}; each cell the mean over them (min-max).", ""]
    keys = [("dev_upos", "dev UPOS"), ("dev_unseen_upos", "dev unseen UPOS"), ("test_upos", "test UPOS"),
            ("test_unseen_upos", "test unseen UPOS"), ("train_cpu_s", "train CPU s"), ("features", "features")]
    lines.append("| templates | " + " | ".join(k[1] for k in keys) + " |")
    lines.append("|---|" + "---|" * len(keys))
    for variant in VARIANTS:
        cells = []
        for key, _ in keys:
            vals = [r[key] for r in rows if r["variant"] == variant]
            if key == "features":
                cells.append(f"{int(np.mean(vals)):,}")
            elif len(vals) > 1:
                cells.append(f"{np.mean(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})")
            else:
                cells.append(f"{vals[0]:.2f}")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    n_dev = rows[0]["dev_unseen_words"]
    n_test = rows[0]["test_unseen_words"]
    d = {k: round(mean_of(rows, "default", k) - mean_of(rows, "none", k), 2)
         for k in ("dev_upos", "dev_unseen_upos", "test_upos", "test_unseen_upos")}
    ratio = mean_of(rows, "default", "train_cpu_s") / max(mean_of(rows, "none", "train_cpu_s"), 1e-9)
    lines += ["", f"Unseen words: {n_dev} on dev, {n_test} on test. The default against none, mean over the "
              f"seeds: dev UPOS {d['dev_upos']:+.2f}, dev unseen UPOS {d['dev_unseen_upos']:+.2f}; test UPOS "
              f"{d['test_upos']:+.2f}, test unseen UPOS {d['test_unseen_upos']:+.2f} (the issue's target for "
              f"unseen words: +3). Training CPU ×{ratio:.2f} for the tagger itself; the table (reading and "
              f"clustering the vectors) took {res['table_cpu_s']} CPU s more, made once here."]
    cmd = res.get("commands")
    if cmd:
        lines += ["", "The command a user types (`structkit train --task pos --train TRAIN --dev DEV --model M "
                  "[--vectors FILE]`, new processes, numba's cache warm; the cluster cache empty for the "
                  "first run with vectors, which keeps the table, read back by the second):", "",
                  "| run | train CPU s | wall s | peak MB | model MB |", "|---|---|---|---|---|"]
        for name, r in cmd.items():
            lines.append(f"| {name} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['peak_mb']:.0f} | {r['model_mb']:.2f} |")
        base = cmd["without"]["cpu_s"]
        lines += ["", f"Training CPU with vectors: ×{cmd['with, table made']['cpu_s'] / base:.1f} the run "
                  f"without when the table is made, ×{cmd['with, table kept']['cpu_s'] / base:.1f} when it "
                  "is kept (the issue's target: at most ×2)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vectors", default=str(VEC))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    if a.report_only:
        import json
        res = json.loads(OUT.with_suffix(".json").read_text())
    else:
        if not os.path.exists(a.vectors):
            sys.exit(f"vectors_sequence.py: {a.vectors} not found: run scripts/extract_vectors.py first")
        res = measure(a.vectors, a.seeds)
        dump_json(res, OUT.with_suffix(".json"))
    OUT.with_suffix(".md").write_text(report(res), encoding="utf-8")
    print(report(res))


if __name__ == "__main__":
    main()
