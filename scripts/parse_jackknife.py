"""Parsing on predicted morphology (issue 28): the parser trained on gold morphology against the
one trained on jackknifed predictions, gold tokens: results/parse-jackknife.md and .json.

    python scripts/parse_jackknife.py [--only ud-italian-partut] [--folds 5] [--seeds 0,1,2]
                                      [--out results/parse-jackknife]

For Turkish-IMST and Italian-ParTUT:

    structkit train --task morph --train TRAIN --dev DEV --model morph.model
    structkit morph -m morph.model DEV  -o dev.pred.conllu     (and TEST -> test.pred.conllu)
    TRAIN's jackknifed analysis: k folds (every k-th sentence), fold i analysed by a morph
        model trained on the others with the epochs morph.model chose on dev
        (structkit.pipeline.train.jackknife, what `train --task pipeline` does) -> train.jk.conllu
    structkit train --task parse --train TRAIN         --dev dev.pred.conllu --model gold.model
    structkit train --task parse --train train.jk.conllu --dev dev.pred.conllu --model jk.model
    structkit parse -m M test.pred.conllu | structkit eval --task ud TEST -   (and on TEST itself)

Both parsers choose their epoch on dev with predicted morphology (what they will meet). The
test file is scored with its morphology predicted by morph.model (the realistic case) and, for
reference, with its gold morphology. Each parser is trained with each of --seeds (the order of
the training sentences): the table gives the mean and each seed's test LAS, since the two
differ by about as much as seeds do. The times are with a warm numba cache (``NUMBA_CACHE``,
recorded in the JSON and said in the report): for each treebank, a morph model and a parser are
first trained untimed for one epoch on the same files.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, numba_cache, structkit  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402

TREEBANKS = {
    "ud-turkish-imst": "tr_imst-ud-{}.conllu",
    "ud-italian-partut": "it_partut-ud-{}.conllu",
}
METRICS = ("upos", "ufeats", "lemmas", "uas", "las", "mlas", "blex")
NUMBA_CACHE = numba_cache("warm", "a morph model and a parser first trained untimed for one epoch on the same "
                                  "files, compiling their kernels")
# what the report says for a JSON from before the script recorded it (no warm-up then)
LEGACY_CACHE = numba_cache("not recorded", "this older run did no warm-up: the first morph training and the first "
                                           "parser training (Turkish IMST) found the cache as earlier commands had "
                                           "left it; the later trainings of each kind, and the jackknife (morph "
                                           "models trained in this script's process), found those kernels compiled")


def _f1(ev: dict, metric: str) -> float:
    m = ev[metric] if metric in ev else ev["metrics"][metric]
    return round(m["f1"], 2)


def jackknifed_file(train: str, morph_model: str, folds: int, out: Path) -> float:
    """Write TRAIN with LEMMA, UPOS, XPOS and FEATS jackknifed; the wall seconds."""
    from structkit.io.conllu import read_conllu
    from structkit.morph.task import MorphModel, write_analysed
    from structkit.pipeline.train import jackknife

    t0 = time.perf_counter()
    sents = list(read_conllu(train, check_text=False))
    m = MorphModel.load(morph_model)
    epochs = m.info.get("selected_epoch") or m.config.epochs
    analyses = jackknife(train, sents, folds, epochs)
    with open(out, "w", encoding="utf-8") as f:
        write_analysed(sents, analyses, f)
    return time.perf_counter() - t0


def blank_morph(src: Path, dst: Path) -> None:
    """``src`` with LEMMA and FEATS '_' (what a POS tagger leaves on raw text)."""
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) == 10 and cols[0].isdigit():
                cols[2] = cols[5] = "_"
                line = "\t".join(cols) + "\n"
            out.write(line)


def score(test: str, parser: Path, inp: Path, out: Path) -> dict:
    structkit("parse", "-m", parser, inp, "-o", out)
    _, ev = structkit("eval", "--task", "ud", test, out, "--json")
    e = json.loads(ev.stdout)
    return {m: _f1(e, m) for m in METRICS}


def _mean(runs: list[dict]) -> dict:
    return {k: {m: round(sum(r[k][m] for r in runs) / len(runs), 2) for m in runs[0][k]} for k in runs[0]}


def run_one(name: str, tmp: Path, folds: int, seeds: list[int]) -> dict:
    stem = TREEBANKS[name]
    train, dev, test = (resolve_data_path(f"{name}/{stem.format(s)}", must_exist=True)
                        for s in ("train", "dev", "test"))
    row: dict = {"treebank": name, "folds": folds, "seconds": {}}
    for task in ("morph", "parse"):   # untimed: the numba cache warm (NUMBA_CACHE)
        structkit("train", "--task", task, "--train", train, "--dev", dev, "--epochs", "1",
                  "--model", tmp / f"{name}-warm.model", "-q")
    morph = tmp / f"{name}-morph.model"
    secs, _ = structkit("train", "--task", "morph", "--train", train, "--dev", dev,
                                           "--model", morph, "-q")
    row["seconds"]["morph"] = round(secs, 1)
    pred = {}
    for split, path in (("dev", dev), ("test", test)):
        pred[split] = tmp / f"{name}-{split}.pred.conllu"
        structkit("morph", "-m", morph, path, "-o", pred[split])
    pred["test_pos_only"] = tmp / f"{name}-test.pos-only.conllu"
    blank_morph(pred["test"], pred["test_pos_only"])
    jk = tmp / f"{name}-train.jk.conllu"
    row["seconds"]["jackknife"] = round(jackknifed_file(train, str(morph), folds, jk), 1)
    _, ev = structkit("eval", "--task", "ud", train, jk, "--json")
    row["jackknifed_train"] = {m: _f1(json.loads(ev.stdout), m) for m in ("upos", "ufeats", "lemmas")}
    _, ev = structkit("eval", "--task", "ud", test, pred["test"], "--json")
    row["predicted_test"] = {m: _f1(json.loads(ev.stdout), m) for m in ("upos", "ufeats", "lemmas")}
    for kind, data in (("gold", train), ("jackknifed", jk)):
        runs = {}
        for seed in seeds:
            model = tmp / f"{name}-parse-{kind}-{seed}.model"
            secs, _ = structkit("train", "--task", "parse", "--train", data, "--dev", pred["dev"],
                                "--seed", str(seed), "--model", model, "-q")
            row["seconds"][f"parse_{kind}_seed{seed}"] = round(secs, 1)
            runs[str(seed)] = {
                "dev_predicted": score(dev, model, pred["dev"], tmp / f"{name}-{kind}-dev.conllu"),
                "test_predicted": score(test, model, pred["test"], tmp / f"{name}-{kind}-test.conllu"),
                "test_gold": score(test, model, Path(test), tmp / f"{name}-{kind}-test-gold.conllu"),
                "test_pos_only": score(test, model, pred["test_pos_only"], tmp / f"{name}-{kind}-test-pos.conllu"),
            }
            print(name, kind, seed, runs[str(seed)], flush=True)
        row[kind] = {"seeds": runs, "mean": _mean(list(runs.values()))}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", default="0,1", help="the parsers' training seeds")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    ap.add_argument("--out", default=str(ROOT / "results" / "parse-jackknife"))
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    if a.report_only:
        return write_report(json.loads(Path(a.out + ".json").read_text()), a.out)
    rows = []
    started = machine()
    with tempfile.TemporaryDirectory(prefix="parse-jk-") as tmp:
        for name in [a.only] if a.only else TREEBANKS:
            rows.append(run_one(name, Path(tmp), a.folds, seeds))
    dump_json({"machine": started, "numba_cache": NUMBA_CACHE, "folds": a.folds, "seeds": seeds, "rows": rows},
              Path(a.out + ".json"))
    write_report(json.loads(Path(a.out + ".json").read_text()), a.out)


def write_report(data: dict, out: str) -> None:
    """results/parse-jackknife.md from the .json that ``main`` wrote."""
    rows, started, seeds, folds = data["rows"], data["machine"], data["seeds"], data["folds"]
    md = ["# Parsing on predicted morphology: gold-trained against jackknife-trained parser", "",
          f"`python scripts/parse_jackknife.py` ({started['date']}, commit {started['commit']}). Gold "
          "tokens throughout; CoNLL 2018 F1 from `structkit eval --task ud`. The morph model "
          "(`train --task morph --dev DEV`, defaults) predicts UPOS, XPOS, FEATS and LEMMA of dev and "
          f"test. 'gold': the parser (`train --task parse`, defaults) trained on the training file's "
          f"gold morphology; 'jackknifed': on its {folds}-fold jackknifed predictions (each fold "
          "analysed by a morph model trained on the others). Both choose their epoch on dev with "
          "predicted morphology. 'test': the test file with the morph model's "
          "morphology, as a pipeline meets it; 'gold morph.': the test file with its gold "
          f"morphology, for reference. Means over the parsers' seeds {', '.join(map(str, seeds))}; the last "
          "column gives each seed's test LAS (predicted morphology). 'UPOS only': the test file with "
          "the morph model's UPOS and XPOS but LEMMA and FEATS '_', what a parser meets after a POS "
          "tagger on raw text (`structkit parse --tagger` refuses that chain for a parser that reads "
          "FEATS; this column is why).", "",
          "| treebank | parser trained on | dev LAS | test LAS | test MLAS | test BLEX | test LAS (gold morph.) "
          "| test MLAS (gold morph.) | test LAS (UPOS only) | test LAS by seed |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for kind in ("gold", "jackknifed"):
            k = r[kind]["mean"]
            by_seed = " / ".join(f"{v['test_predicted']['las']:.2f}" for v in r[kind]["seeds"].values())
            md.append(f"| {r['treebank']} | {kind} morphology | {k['dev_predicted']['las']:.2f} | "
                      f"{k['test_predicted']['las']:.2f} | {k['test_predicted']['mlas']:.2f} | "
                      f"{k['test_predicted']['blex']:.2f} | {k['test_gold']['las']:.2f} | "
                      f"{k['test_gold']['mlas']:.2f} | {k['test_pos_only']['las']:.2f} | {by_seed} |")
    md += ["", "Morphology the parsers read (F1): "
           + "; ".join(f"{r['treebank']}: jackknifed training file UPOS {r['jackknifed_train']['upos']:.2f}, "
                       f"UFeats {r['jackknifed_train']['ufeats']:.2f}, Lemmas {r['jackknifed_train']['lemmas']:.2f}; "
                       f"predicted test UPOS {r['predicted_test']['upos']:.2f}, UFeats "
                       f"{r['predicted_test']['ufeats']:.2f}, Lemmas {r['predicted_test']['lemmas']:.2f}"
                       for r in rows), "",
           "Wall seconds, " + data.get("numba_cache", LEGACY_CACHE)["words"] + ": " + "; ".join(f"{r['treebank']}: " + ", ".join(f"{k} {v}" for k, v in r["seconds"].items())
                                        for r in rows), ""]
    Path(out + ".md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
