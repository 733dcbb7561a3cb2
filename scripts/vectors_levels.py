"""Issue 44, a question its first measurement left: do finer word clusters help the morph model
on words unseen in training? ``train --vectors`` first made k-means levels of 16, 64 and 256
clusters; it now adds a fourth, nested one (``structkit.vectors.SPLIT``: each of the 256 split
in 16 among its own words, ``split_level``), chosen by this script on dev. It trains the morph
model (tagger and lemmatizer, defaults, train + dev, dev choosing the epoch) on French ParTUT
with each variant of levels below, for several training seeds, and scores it with gold tokens
on dev and test: UPOS and Lemmas over all words and over the **unseen** words (forms absent
from the training file). Writes results/vectors-levels.json and .md.

    python scripts/extract_vectors.py        # once: build/vectors/fr_core_news_md.vec.gz
    python scripts/vectors_levels.py [--vectors FILE] [--seeds 0 1 2] [--report-only]

Variants (each a tuple of levels, coarse to fine; the morph model reads any number of them):

* **none**: no vectors;
* **16, 64, 256**: the three fitted levels only (the first default);
* **default**: what ``train --vectors`` makes now, the three and the nested 4096;
* **split in 4**, **split in 64**: the three and a nested level of 1,024 or 16,384 instead;
* **+rows**: the three and, as a fourth level, the file's distinct vectors themselves (a
  pruned table such as spaCy's maps about ten words to each row: the rows are a clustering
  already, by the nearest kept vector).

And the beam parser (labelled, the pipeline's; gold morphology of the files, train + dev, dev
choosing the epoch), which reads three levels of a token's clusters (``parse.beam.cluster_row``):
its dev LAS, for each training seed, without vectors and reading the default table's levels
(16, 64, 256), (64, 256, 4096), (16, 256, 4096) or (16, 64, 4096), the last what it reads now.

One process; numba's cache warm (a first training on 40 sentences before the timed ones).
CPU seconds are the training's (``time.process_time``), the clusters made beforehand.
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

from common import dump_json, machine  # noqa: E402

OUT = ROOT / "results" / "vectors-levels"
VEC = ROOT / "build" / "vectors" / "fr_core_news_md.vec.gz"
TREEBANK = "ud-french-partut/fr_partut-ud"
VARIANTS = ("none", "16, 64, 256", "default", "split in 4", "split in 64", "+rows")


def _clusters(vec_path: str) -> dict:
    """The cluster table of each variant (None for 'none')."""
    from structkit import vectors as V

    default = V.word_clusters(vec_path)          # what train --vectors makes
    fitted = len(V.LEVELS)
    three = V.WordClusters(default.words, np.ascontiguousarray(default.ids[:, :fitted]), V.LEVELS, default.source)
    out = {"none": None, "16, 64, 256": three, "default": default}
    vec = V.read_vectors(vec_path, V.DEFAULT_LIMIT)
    X = V.normalise(vec.matrix)
    distinct, rows = V.distinct_rows(X)
    finest = np.empty(len(distinct), dtype=np.int64)
    finest[rows] = default.ids[:, fitted - 1]
    for parts in (4, 64):
        if parts == V.SPLIT:
            continue
        ids = V.split_level(distinct, finest, V.LEVELS[-1], parts)[rows]
        out[f"split in {parts}"] = V.WordClusters(default.words, np.hstack([three.ids, ids[:, None].astype(np.uint16)]),
                                                  V.LEVELS + (V.LEVELS[-1] * parts,), default.source)
    if len(distinct) <= 65535:
        out["+rows"] = V.WordClusters(default.words, np.hstack([three.ids, rows[:, None].astype(np.uint16)]),
                                      V.LEVELS + (len(distinct),), default.source)
    return out


def _score(model, sents, train_forms: set) -> dict:
    analysed = model.analyse([[r[1] for r in s.rows] for s in sents])
    n = upos = lem = un = un_upos = un_lem = 0
    for s, words in zip(sents, analysed):
        for r, (lemma, u, _x, _f) in zip(s.rows, words):
            n += 1
            upos += u == r[3]
            lem += lemma == r[2]
            if r[1] not in train_forms:
                un += 1
                un_upos += u == r[3]
                un_lem += lemma == r[2]
    pct = lambda a, b: round(100.0 * a / b, 2) if b else None  # noqa: E731
    return {"upos": pct(upos, n), "lemmas": pct(lem, n), "unseen": un,
            "unseen_upos": pct(un_upos, un), "unseen_lemmas": pct(un_lem, un)}


def run(vec_path: str, seeds: list[int]) -> dict:
    from structkit.io.conllu import read_conllu
    from structkit.morph.task import MorphConfig, train_morph

    stem = Path(os.environ.get("STRUCTKIT_DATA", ROOT.parent / "shared" / "data")) / TREEBANK
    train, dev, test = (f"{stem}-{p}.conllu" for p in ("train", "dev", "test"))
    if not all(os.path.exists(p) for p in (train, dev, test)):
        sys.exit(f"{stem}-*.conllu not found (set STRUCTKIT_DATA)")
    t = time.process_time()
    tables = _clusters(vec_path)
    clusters_cpu = time.process_time() - t
    train_forms = {r[1] for s in read_conllu(train, check_text=False) for r in s.rows}
    parts = {p: list(read_conllu(f, check_text=False)) for p, f in (("dev", dev), ("test", test))}
    # numba's kernels loaded (or compiled) before the timed trainings
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        head = Path(d) / "head.conllu"
        with open(train, encoding="utf-8") as f:
            blocks = f.read().split("\n\n")[:40]
        head.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
        warm = MorphConfig(vectors=vec_path)
        warm.validate()
        train_morph(warm, str(head), str(head), clusters=tables["default"])
    rows = []
    for name in VARIANTS:
        cl = tables.get(name, False)
        if cl is False:
            continue
        for seed in seeds:
            config = MorphConfig(vectors=None if cl is None else vec_path, seed=seed)
            config.validate()
            t = time.process_time()
            model = train_morph(config, train, dev, clusters=cl)
            cpu = time.process_time() - t
            row = {"variant": name, "levels": None if cl is None else list(cl.levels), "seed": seed,
                   "train_cpu": round(cpu, 1),
                   **{p: _score(model, s, train_forms) for p, s in parts.items()}}
            print(row, flush=True)
            rows.append(row)
    return {"machine": machine(), "vectors": os.path.relpath(vec_path, ROOT), "seeds": seeds,
            "treebank": TREEBANK, "clusters_cpu": round(clusters_cpu, 1), "rows": rows,
            "parser_rows": _parser_rows(vec_path, tables["default"], train, dev, seeds),
            "sha256": tables["default"].source.get("sha256")}


PARSER_PICKS = {"none": None, "16, 64, 256": (0, 1, 2), "64, 256, 4096": (1, 2, 3),
                "16, 256, 4096": (0, 2, 3), "16, 64, 4096 (default)": (0, 1, 3)}


def _parser_rows(vec_path: str, table, train: str, dev: str, seeds: list[int]) -> list[dict]:
    """The beam parser's dev LAS (the selected epoch's) for each set of levels it may read."""
    import structkit.parse.labelled as labelled
    from structkit.parse.parser import ParserConfig, read_treebank, train_parser_on

    kept = labelled.cluster_row
    train_s, dev_s = read_treebank(train), read_treebank(dev)
    rows = []
    try:
        for name, pick in PARSER_PICKS.items():
            if pick is not None:
                labelled.cluster_row = lambda ids, pick=pick: ((0, 0, 0) if ids is None
                                                               else tuple(int(ids[j]) + 1 for j in pick))
            for seed in seeds:
                config = ParserConfig(seed=seed, vectors=None if pick is None else vec_path)
                config.validate()
                t = time.process_time()
                model = train_parser_on(config, train_s, dev_s, None, train, None,
                                        clusters=None if pick is None else table)
                row = {"variant": name, "seed": seed, "train_cpu": round(time.process_time() - t, 1),
                       "dev_las": round(model.info["selected_dev"]["las"], 2)}
                print(row, flush=True)
                rows.append(row)
    finally:
        labelled.cluster_row = kept
    return rows


def _mean(xs):
    return round(sum(xs) / len(xs), 2)


def report(obj: dict) -> str:
    m = obj["machine"]
    seeds = obj["seeds"]
    lines = ["# Finer word clusters for the morph model? (issue 44)", "",
             f"`python scripts/vectors_levels.py` at {m['commit']}, {m['cpu']}, {m['date']}. French ParTUT "
             f"(`{obj['treebank']}`), the morph model (tagger and lemmatizer) trained with its defaults on train, "
             f"dev choosing the epoch, for each variant of word-cluster levels and training seeds "
             f"{', '.join(map(str, seeds))}; scored with **gold tokens** (not raw text), so that only the "
             "tagging and lemmatization differ. Unseen: the words whose form the training file lacks. "
             f"Vectors: `{obj['vectors']}` (sha256 {obj['sha256']}), the default --vectors-limit; the "
             f"variants' cluster tables took {obj['clusters_cpu']} CPU s together. Variants: see the "
             "script's docstring (*default* is `train --vectors`' table: the three fitted levels and each of "
             "the 256 clusters split in 16; *split in 4* and *split in 64* split them in 4 or 64 instead; "
             "*+rows* is the file's distinct vectors as a fourth level).", "",
             "Means over the seeds (each seed's row in results/vectors-levels.json):", "",
             "| variant | levels | dev UPOS | dev Lemmas | dev unseen UPOS | dev unseen Lemmas | test UPOS | "
             "test Lemmas | test unseen UPOS | test unseen Lemmas | unseen words dev / test | train CPU s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict[str, list] = {}
    for r in obj["rows"]:
        by.setdefault(r["variant"], []).append(r)
    for name, rs in by.items():
        cells = [_mean([r[p][k] for r in rs]) for p in ("dev", "test")
                 for k in ("upos", "lemmas", "unseen_upos", "unseen_lemmas")]
        levels = "-" if rs[0]["levels"] is None else ", ".join(map(str, rs[0]["levels"]))
        lines.append(f"| {name} | {levels} | " + " | ".join(f"{c:.2f}" for c in cells)
                     + f" | {rs[0]['dev']['unseen']} / {rs[0]['test']['unseen']} | {_mean([r['train_cpu'] for r in rs]):.1f} |")
    lines += ["", "The spread over seeds (min-max) of dev and test unseen UPOS, to read the means against:", "",
              "| variant | dev unseen UPOS | test unseen UPOS | dev unseen Lemmas | test unseen Lemmas |",
              "|---|---|---|---|---|"]
    for name, rs in by.items():
        cells = []
        for p, k in (("dev", "unseen_upos"), ("test", "unseen_upos"), ("dev", "unseen_lemmas"), ("test", "unseen_lemmas")):
            xs = [r[p][k] for r in rs]
            cells.append(f"{min(xs):.2f}-{max(xs):.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if obj.get("parser_rows"):
        lines += ["", "The beam parser with gold morphology (the files' UPOS, FEATS and lemmas), trained on train, dev "
                  "choosing the epoch: that epoch's dev LAS for each seed, and their mean, by the three levels of "
                  "the default table it reads:", "",
                  "| levels the parser reads | " + " | ".join(f"seed {k}" for k in seeds) + " | mean | train CPU s |",
                  "|---|" + "---|" * (len(seeds) + 2)]
        pby: dict[str, list] = {}
        for r in obj["parser_rows"]:
            pby.setdefault(r["variant"], []).append(r)
        for name, rs in pby.items():
            lines.append(f"| {name} | " + " | ".join(f"{r['dev_las']:.2f}" for r in rs)
                         + f" | {_mean([r['dev_las'] for r in rs]):.2f} | {_mean([r['train_cpu'] for r in rs]):.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vectors", default=str(VEC))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        import json
        obj = json.loads(OUT.with_suffix(".json").read_text())
    else:
        if not os.path.exists(args.vectors):
            sys.exit(f"{args.vectors}: not found (python scripts/extract_vectors.py makes it)")
        obj = run(args.vectors, args.seeds)
        dump_json(obj, OUT.with_suffix(".json"))
    OUT.with_suffix(".md").write_text(report(obj))
    print(OUT.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
