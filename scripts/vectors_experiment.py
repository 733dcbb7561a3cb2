"""Issue 44's measurement: a pipeline trained with the defaults, without and with pretrained
word vectors (``--vectors``), on French ParTUT, scored from the test file's raw text with the
CoNLL 2018 metrics. Writes results/vectors.json and results/vectors.md.

    python scripts/extract_vectors.py        # once: build/vectors/fr_core_news_md.vec.gz
    python scripts/vectors_experiment.py [--vectors build/vectors/fr_core_news_md.vec.gz]
        [--treebank ud-french-partut] [--only without|with] [--seed N] [--report-only]

For each run (a new process each, as a user runs them):

* ``structkit train --task pipeline --train TRAIN --dev DEV --model M [--vectors VEC]``: the
  training's CPU seconds (user + system, ``os.wait4``; the process's and its children's) and
  wall seconds, and the model file's size;
  with ``--vectors`` the cluster cache (``$STRUCTKIT_CLUSTER_CACHE``) is an empty folder, so
  the table is made from the file as on a first training; the same command is then run again
  and timed, reading the table the first kept (``train_cpu_seconds_table_kept``);
* ``structkit annotate -m M RAW`` on the raw text of the test file (``raw_text``: each sentence's
  ``# text``, a paragraph's sentences joined by a space);
* the CoNLL 2018 metrics (``structkit.eval.ud.evaluate_ud``, F1) of the output against the test
  file, and UPOS and Lemmas on the **unseen** words: the gold test words whose form does not
  occur in the training file, each counted correct when a system word is aligned to it
  (the shared task's word alignment) with the same UPOS (the same lemma; a gold ``_`` matches
  anything), over all unseen gold words (a recall).

numba's cache is warmed first by training both kinds on the first 40 training sentences, so
neither timed run compiles. The .vec file is the CC0 fastText vectors of spaCy's
``fr_core_news_md`` (``scripts/extract_vectors.py``), never committed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, measured  # noqa: E402

OUT = ROOT / "results" / "vectors"
VEC = ROOT / "build" / "vectors" / "fr_core_news_md.vec.gz"
KEEP = ROOT / "build" / "vectors"
METRICS = ("tokens", "words", "sentences", "upos", "ufeats", "lemmas", "uas", "las", "mlas", "blex")
TARGETS = {"las": 1.5, "mlas": 1.5, "unseen_upos": 3.0, "unseen_lemmas": 3.0}


def _data(treebank: str) -> dict:
    folder = Path(os.environ.get("STRUCTKIT_DATA", ROOT.parent / "shared" / "data")) / treebank
    out = {}
    for part in ("train", "dev", "test"):
        hits = sorted(folder.glob(f"*-ud-{part}.conllu"))
        if hits:
            out[part] = str(hits[0])
    if "train" not in out or "test" not in out:
        sys.exit(f"{folder}: no *-ud-train.conllu / *-ud-test.conllu (set STRUCTKIT_DATA)")
    return out


def _head_slice(src: str, dst: Path, n: int) -> Path:
    blocks = Path(src).read_text(encoding="utf-8").split("\n\n")
    dst.write_text("\n\n".join(b for b in blocks[:n] if b.strip()) + "\n\n", encoding="utf-8")
    return dst


def _unseen_scores(train: str, gold: str, system: str) -> dict:
    from structkit.eval.tokenize import align_words, load_segmentation
    from structkit.io.conllu import read_conllu

    seen = {r[1] for s in read_conllu(train, check_text=False) for r in s.rows}
    g = load_segmentation(gold, keep=True)
    s = load_segmentation(system, keep=True)
    grows = [r for sent in g.read for r in sent.rows]
    srows = [r for sent in s.read for r in sent.rows]
    to_sys = dict(align_words(g.words, s.words))
    unseen = [i for i, r in enumerate(grows) if r[1] not in seen]
    upos = sum(1 for i in unseen if i in to_sys and srows[to_sys[i]][3] == grows[i][3])
    lem = sum(1 for i in unseen if i in to_sys and (grows[i][2] == "_" or srows[to_sys[i]][2] == grows[i][2]))
    n = max(len(unseen), 1)
    return {"unseen_words": len(unseen), "unseen_upos": round(100.0 * upos / n, 2),
            "unseen_lemmas": round(100.0 * lem / n, 2)}


def model_facts(model: Path) -> dict:
    """What the pipeline's header says of its training: each step's CPU seconds (the vectors'
    reading and clustering among them), the dev scores of its parsers (gold tokens, predicted
    morphology) and which was kept, and its morph model's dev scores."""
    from structkit.pipeline.model import load_pipeline

    m = load_pipeline(str(model))
    return {"step_cpu_seconds": m.info.get("cpu_seconds"), "parser_dev": m.info.get("parser_dev"),
            "parser_kept": m.info.get("parser_morphology"), "morph_dev": m.morph.info.get("dev_scores"),
            "vectors": m.info.get("vectors")}


def _shown(args: list) -> str:
    data = os.environ.get("STRUCTKIT_DATA", "")
    out = []
    for a in map(str, args):
        if data and a.startswith(data.rstrip("/") + "/"):
            a = "$STRUCTKIT_DATA/" + a[len(data.rstrip("/")) + 1:]
        elif a.startswith(str(ROOT) + "/"):
            a = os.path.relpath(a, ROOT)
        out.append(a)
    return " ".join(out)


def _key(kind: str, seed: int) -> str:
    return kind if seed == 0 else f"{kind}-seed{seed}"


def _seeds(runs: dict) -> list[int]:
    return sorted({int(k.split("-seed")[1]) if "-seed" in k else 0 for k in runs})


def run_one(kind: str, data: dict, vec: Path, folder: Path, seed: int = 0) -> dict:
    from structkit.eval.ud import evaluate_ud
    from structkit.tokenizer.task import raw_text

    model = KEEP / f"pipeline-{_key(kind, seed)}.skm"
    args = ["train", "--task", "pipeline", "--train", data["train"], "--model", model, "-q"]
    if seed:
        args += ["--seed", str(seed)]
    if "dev" in data:
        args += ["--dev", data["dev"]]
    if kind == "with":
        args += ["--vectors", vec]
        # an empty cluster cache: the table made from the file, as on a user's first training
        os.environ["STRUCTKIT_CLUSTER_CACHE"] = str(folder / f"clusters-{seed}")
    t = measured(args)
    kept = None
    if kind == "with":   # again, into a model of its own: the table kept by the first
        again = folder / "kept.skm"
        kept = measured([again if a == model else a for a in args])
        kept["vectors_step"] = (model_facts(again)["step_cpu_seconds"] or {}).get("vectors")
    raw = folder / "test.txt"
    raw.write_text(raw_text(data["test"]), encoding="utf-8")
    a = measured(["annotate", "-m", model, raw])
    system = folder / f"{_key(kind, seed)}.conllu"
    system.write_text(a["stdout"], encoding="utf-8")
    scores = evaluate_ud(data["test"], str(system))
    row = {"command": "structkit " + _shown(args),
           "train_cpu_seconds": t["cpu_seconds"], "train_wall_seconds": t["wall_seconds"],
           "train_peak_mb": t["peak_mb"], "model_bytes": model.stat().st_size,
           "annotate_cpu_seconds": a["cpu_seconds"]}
    if kept is not None:
        row |= {"train_cpu_seconds_table_kept": kept["cpu_seconds"],
                "train_wall_seconds_table_kept": kept["wall_seconds"],
                "vectors_step_cpu_seconds_table_kept": kept["vectors_step"]}
    row |= {m: round(scores[m]["f1"], 2) for m in METRICS}
    row |= _unseen_scores(data["train"], data["test"], str(system))
    row |= model_facts(model)
    return row


def write_report(obj: dict) -> None:
    runs = obj["runs"]
    lines = ["# Pretrained word vectors as features (issue 44)", "",
             f"`python scripts/vectors_experiment.py` on {obj['treebank']} ({obj['machine']['date']}, commit "
             f"{obj['machine']['commit']}, {obj['machine']['cpu']}). Each pipeline trained with the defaults "
             "(train + dev), without and with `--vectors` "
             f"({obj.get('vectors_file', '?')}: the CC0 fastText vectors of spaCy's fr_core_news_md, "
             "extracted by scripts/extract_vectors.py; the default --vectors-limit), then `structkit annotate` "
             "of the test file's raw text, scored with the CoNLL 2018 metrics (F1). **Unseen**: the gold test "
             "words whose form is not in the training file; UPOS / Lemmas right on an aligned system word, "
             "over all of them. Training CPU seconds: user + system of the train process (numba cache warm; "
             "with vectors, the cluster cache empty: the table made from the file, as on a first training; "
             "'the table kept': the same command run again, reading the table the first kept).",
             "", "| run | LAS | MLAS | UAS | UPOS | UFeats | Lemmas | BLEX | unseen words | unseen UPOS | "
                 "unseen Lemmas | train CPU s | train wall s | model MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in [_key(k, sd) for sd in _seeds(runs) for k in ("without", "with")]:
        r = runs.get(key)
        if r is None:
            continue
        lines.append(f"| {key.replace('-seed', ' vectors, seed ') if '-seed' in key else key + ' vectors'} | {r['las']:.2f} | {r['mlas']:.2f} | {r['uas']:.2f} | {r['upos']:.2f} | "
                     f"{r['ufeats']:.2f} | {r['lemmas']:.2f} | {r['blex']:.2f} | {r['unseen_words']} | "
                     f"{r['unseen_upos']:.2f} | {r['unseen_lemmas']:.2f} | {r['train_cpu_seconds']:.1f} | "
                     f"{r['train_wall_seconds']:.1f} | {r['model_bytes'] / 1e6:.1f} |")
    if "with" in runs and "without" in runs:
        w, o = runs["with"], runs["without"]
        lines += ["", "## Against the issue's targets (seed 0)", "", "| measure | without | with | change | target | met |",
                  "|---|---|---|---|---|---|"]
        for m, target in TARGETS.items():
            d = w[m] - o[m]
            lines.append(f"| {m} | {o[m]:.2f} | {w[m]:.2f} | {d:+.2f} | +{target} | {'yes' if d >= target else 'no'} |")
        ratio = w["train_cpu_seconds"] / max(o["train_cpu_seconds"], 1e-9)
        lines.append(f"| training CPU time | {o['train_cpu_seconds']:.1f} s | {w['train_cpu_seconds']:.1f} s | "
                     f"x{ratio:.2f} | at most x2 | {'yes' if ratio <= 2 else 'no'} |")
        lines.append(f"| model size | {o['model_bytes'] / 1e6:.1f} MB | {w['model_bytes'] / 1e6:.1f} MB | "
                     f"x{w['model_bytes'] / o['model_bytes']:.2f} | (stated) | |")
        pairs = [(runs[_key("without", sd)], runs[_key("with", sd)]) for sd in _seeds(runs)
                 if _key("without", sd) in runs and _key("with", sd) in runs]
        if len(pairs) > 1:
            lines += ["", f"The same changes for each training seed ({len(pairs)} seeds: `--seed`; the vectors' "
                          "k-means seed stays 0), and their mean:", "",
                      "| measure | " + " | ".join(f"seed {sd}" for sd in _seeds(runs)) + " | mean |",
                      "|---|" + "---|" * (len(pairs) + 1)]
            for m in TARGETS:
                ds = [b[m] - a[m] for a, b in pairs]
                lines.append(f"| {m} | " + " | ".join(f"{d:+.2f}" for d in ds) + f" | {sum(ds) / len(ds):+.2f} |")
            rs = [b["train_cpu_seconds"] / a["train_cpu_seconds"] for a, b in pairs]
            lines.append("| training CPU time | " + " | ".join(f"x{r:.2f}" for r in rs) + f" | x{sum(rs) / len(rs):.2f} |")
            if all("train_cpu_seconds_table_kept" in b for _, b in pairs):
                rs = [b["train_cpu_seconds_table_kept"] / a["train_cpu_seconds"] for a, b in pairs]
                lines.append("| training CPU time, the table kept | " + " | ".join(f"x{r:.2f}" for r in rs)
                             + f" | x{sum(rs) / len(rs):.2f} |")
    if all("parser_dev" in r for r in runs.values()):
        lines += ["", "## What training saw on dev", "",
                  "Dev LAS of the two parsers each pipeline trains (gold tokens, the morph model's "
                  "analysis; the one with the better dev LAS is kept) and the morph model's dev "
                  "scores (gold tokens), from each model's header; and the CPU seconds of the "
                  "vectors' reading and clustering within the training (the table made from the file; "
                  "in brackets, read back from the cluster cache by the run again).", "",
                  "| run | parser, gold morphology | parser, jackknifed | kept | morph UPOS | morph Lemmas | "
                  "vectors step CPU s |", "|---|---|---|---|---|---|---|"]
        for key in [_key(k, sd) for sd in _seeds(runs) for k in ("without", "with")]:
            r = runs.get(key)
            if r is None:
                continue
            pd = r["parser_dev"] or {}
            lines.append(f"| {key} | {pd.get('gold', {}).get('las', '-')} | "
                         f"{pd.get('jackknifed', {}).get('las', '-')} | {r['parser_kept']} | "
                         f"{(r['morph_dev'] or {}).get('upos', '-')} | {(r['morph_dev'] or {}).get('lemmas', '-')} | "
                         f"{(r['step_cpu_seconds'] or {}).get('vectors', '-')}"
                         + (f" ({r['vectors_step_cpu_seconds_table_kept']})"
                            if r.get("vectors_step_cpu_seconds_table_kept") is not None else "") + " |")
        v = runs.get("with", {}).get("vectors")
        if v:
            lines += ["", f"Vectors: {v['words']:,} words of {v['dim']} dimensions (--vectors-limit {v['limit']:,}), "
                          f"k-means with {', '.join(map(str, v['levels']))} clusters fitted on the first "
                          f"{v['fit_sample']:,} words ({v['fit_iters']} rounds at most, seed {v['seed']}); "
                          f"sha256 {v['sha256']}."]
    lines += ["", "Commands:", ""] + [f"- {key}: `{r['command']}`" for key, r in sorted(runs.items())]
    Path(str(OUT) + ".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vectors", type=Path, default=VEC)
    ap.add_argument("--treebank", default="ud-french-partut")
    ap.add_argument("--only", choices=("without", "with"))
    ap.add_argument("--seed", type=int, default=0, help="the training seed (--seed of train); rows of its own")
    ap.add_argument("--no-warm", action="store_true", help="skip warming numba's cache")
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    path = Path(str(OUT) + ".json")
    obj = json.loads(path.read_text()) if path.exists() else {"runs": {}}
    if not a.report_only:
        if not a.vectors.exists() and a.only != "without":
            sys.exit(f"{a.vectors}: no such file; make it with scripts/extract_vectors.py")
        data = _data(a.treebank)
        KEEP.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="structkit-vectors-") as tmp:
            folder = Path(tmp)
            kinds = [a.only] if a.only else ["without", "with"]
            if not a.no_warm:
                small = _head_slice(data["train"], folder / "small.conllu", 40)
                for kind in kinds:
                    measured(["train", "--task", "pipeline", "--train", small, "--dev", small, "--model",
                              folder / "warm.skm", "-q", "--epochs", "1"]
                             + (["--vectors", a.vectors, "--vectors-limit", "2000"] if kind == "with" else []))
            for kind in kinds:
                obj["runs"][_key(kind, a.seed)] = run_one(kind, data, a.vectors, folder, a.seed)
                print(kind, a.seed, json.dumps(obj["runs"][_key(kind, a.seed)]), flush=True)
        obj["treebank"] = a.treebank
        obj["vectors_file"] = os.path.relpath(a.vectors, ROOT)
        obj["machine"] = machine()
        dump_json(obj, path)
    write_report(obj)


if __name__ == "__main__":
    main()
