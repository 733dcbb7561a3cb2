"""Tsuruoka et al. (2011) Tables 1-3 on our data: history-based tagging with lookahead.

    python scripts/lookahead_experiments.py configs/grids/lookahead-chunk-conll2000.toml ...

For each experiment config: every (direction, label order, depth, margin C) is trained on the
training data with the development data scored after each epoch (a config's ``heldout = 10``
holds out every 10th training sentence instead); C and the number of epochs are chosen on the
development score, never on test. The chosen setting is then retrained on the whole training
set (one run at a time, so the times are not disturbed), timed, and scored on test. Where the
config lists the depth in ``brute_depths``, the same model is also trained with the paper's
brute-force search, timed, and checked to give identical weights. The exact perceptron is the
baseline. Writes results/lookahead-<name>.json, results/lookahead.md and results/lookahead.png.

The final runs are timed with a warm numba cache (``NUMBA_CACHE``, recorded in the JSON and said
in the report): the tuning runs, in worker processes, compile and cache the kernels the final
runs load; the brute-force search, which is not tuned, is trained untimed on 50 sentences first.
"""
from __future__ import annotations

import itertools
import json
import multiprocessing as mp
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, experiment_main, machine, numba_cache, pyplot, write_slice  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402
from structkit.io.conll import read_conll  # noqa: E402
from structkit.sequence.task import (TaggerConfig, main_score, read_labelled, score_labels,  # noqa: E402
                                      train_tagger)


NUMBA_CACHE = numba_cache("warm", "the tuning runs, in worker processes, compiled and cached the kernels before "
                                  "the final runs were timed in the script's process; the brute-force search, "
                                  "which is not tuned, by an untimed training on 50 sentences first")
# what the report says for a JSON from before the script recorded it (the same tuning, no brute warm-up)
LEGACY_CACHE = ("train s and test s: numba cache warm (the tuning runs, in worker processes, compiled and cached "
                "the kernels before the final runs were timed; not recorded by this older run but read from the "
                "script's code, which tuned before the final runs then as now); brute s: numba cache not recorded "
                "(the brute-force "
                "search is not tuned and this older run did not warm it, so its first brute row also loaded or "
                "compiled its kernels)")


def split_heldout(train: str, every: int, folder: Path) -> tuple[str, str]:
    """Every ``every``-th sentence (1-based: the 10th, 20th, ...) to dev, the rest to train."""
    tr, dv = folder / "train.txt", folder / "dev.txt"
    with open(tr, "w") as ft, open(dv, "w") as fd:
        for i, s in enumerate(read_conll(train), 1):
            (fd if i % every == 0 else ft).write("\n".join(" ".join(r) for r in s.rows) + "\n\n")
    return str(tr), str(dv)


def _config(exp: dict, algo: str, depth: int, order: int, direction: str, margin: float,
            epochs: int, search: str = "dp") -> TaggerConfig:
    return TaggerConfig.for_learner(exp["task"], algo, epochs=epochs, templates=exp["templates"],
                        depth=depth if algo == "lookahead" else None, label_order=order,
                        direction=direction, margin=margin, search=search, seed=0)


def grid_job(args) -> dict:
    exp, train, dev, algo, direction, order, depth, margin = args
    history = []
    cfg = _config(exp, algo, depth, order, direction, margin, exp["max_epochs"])
    t0 = time.perf_counter()
    train_tagger(cfg, train, dev, lambda e, s: history.append(s["dev"][main_score(exp["task"])]))
    return {"algo": algo, "direction": direction, "label_order": order, "depth": depth,
            "margin": margin, "dev_by_epoch": history, "seconds": time.perf_counter() - t0}


def evaluate(tagger, test: str) -> tuple[dict, float]:
    c = read_labelled(test, None)
    t0 = time.perf_counter()
    enc = tagger.encode(c.words, c.pos, c.offsets)
    ids = tagger.predict_ids(enc)
    secs = time.perf_counter() - t0
    o = c.offsets
    pred = [[tagger.labels[i] for i in ids[o[k]:o[k + 1]]] for k in range(len(o) - 1)]
    return score_labels(tagger.config.task, c.label_sentences(), pred), secs


def final_run(exp: dict, train: str, test: str, pick: dict, search: str = "dp"):
    cfg = _config(exp, pick["algo"], pick["depth"], pick["label_order"], pick["direction"],
                  pick["margin"], pick["epochs"], search)
    t0 = time.perf_counter()
    tagger = train_tagger(cfg, train)
    train_s = time.perf_counter() - t0
    score, test_s = evaluate(tagger, test)
    return tagger, score, train_s, test_s


def run(path: str, jobs: int) -> dict:
    exp = tomllib.loads(Path(path).read_text())
    train = resolve_data_path(exp["train"])
    test = resolve_data_path(exp["test"])
    key = main_score(exp["task"])
    with tempfile.TemporaryDirectory() as tmp:
        if "heldout" in exp:
            tune_train, tune_dev = split_heldout(train, int(exp["heldout"]), Path(tmp))
            dev_desc = f"every {exp['heldout']}th training sentence held out"
        else:
            tune_train, tune_dev = train, resolve_data_path(exp["dev"])
            dev_desc = exp["dev"]
        grid = []
        for direction, order in itertools.product(exp["directions"], exp["label_orders"]):
            for depth in exp["depths"]:
                if order == 2 and depth > exp.get("max_depth_order2", 99):
                    continue
                for margin in exp["margins"]:
                    grid.append((exp, tune_train, tune_dev, "lookahead", direction, order, depth, margin))
        if exp.get("perceptron_baseline"):
            grid.append((exp, tune_train, tune_dev, "perceptron", "ltr", 1, 0, 0.0))
        t0 = time.perf_counter()
        with mp.get_context("fork").Pool(jobs) as pool:
            tuned = pool.map(grid_job, grid, chunksize=1)
        print(f"[{exp['name']}] tuning: {len(grid)} runs in {time.perf_counter() - t0:.0f} s", flush=True)
    # choose C and epochs per (algo, direction, order, depth) on the development score
    picks: dict[tuple, dict] = {}
    for r in tuned:
        k = (r["algo"], r["direction"], r["label_order"], r["depth"])
        best_epoch = int(np.argmax(r["dev_by_epoch"])) + 1  # first best epoch
        cand = {**{n: r[n] for n in ("algo", "direction", "label_order", "depth", "margin")},
                "epochs": best_epoch, "dev": r["dev_by_epoch"][best_epoch - 1]}
        if k not in picks or cand["dev"] > picks[k]["dev"]:
            picks[k] = cand
    brute = [p for p in picks.values() if p["algo"] == "lookahead" and p["depth"] in exp.get("brute_depths", [])]
    if brute:   # untimed: the brute-force search's kernels compiled, training and tagging (NUMBA_CACHE)
        with tempfile.TemporaryDirectory() as tmp:
            warm = str(write_slice(train, Path(tmp) / "warm.txt", 50))
            for pick in brute:
                final_run(exp, warm, warm, {**pick, "epochs": 1}, "brute")
    rows = []
    for k, pick in sorted(picks.items(), key=lambda kv: (kv[0][0] != "perceptron", kv[0][1:])):
        tagger, score, train_s, test_s = final_run(exp, train, test, pick)
        row = {**pick, "test": score, "train_seconds": round(train_s, 2), "test_seconds": round(test_s, 2),
               "n_features": tagger.features.n_features}
        if pick["algo"] == "lookahead" and pick["depth"] in exp.get("brute_depths", []):
            brute, bscore, btrain_s, btest_s = final_run(exp, train, test, pick, "brute")
            same = all(np.array_equal(getattr(tagger.weights, a), getattr(brute.weights, a))
                       for a in ("W", "T", "T2"))
            row.update({"brute_train_seconds": round(btrain_s, 2), "brute_test_seconds": round(btest_s, 2),
                        "brute_identical_weights": bool(same), "brute_test": bscore})
        rows.append(row)
        print(f"[{exp['name']}] {pick['algo']} {pick['direction']} order {pick['label_order']} "
              f"depth {pick['depth']} C={pick['margin']} epochs={pick['epochs']}: dev {pick['dev']:.2f} "
              f"test {score[key]:.2f} train {train_s:.1f}s test {test_s:.1f}s"
              + (f" | brute train {row['brute_train_seconds']}s identical={row['brute_identical_weights']}"
                 if "brute_train_seconds" in row else ""), flush=True)
    result = {"name": exp["name"], "config": path, "task": exp["task"], "metric": key,
              "train": exp["train"], "test": exp["test"], "dev": dev_desc, "paper": exp.get("paper", {}),
              "tuning": tuned, "rows": rows, "machine": machine(), "numba_cache": NUMBA_CACHE}
    dump_json(result, RESULTS / f"lookahead-{exp['name']}.json")
    return result


def _fmt_row(r: dict, key: str) -> str:
    name = "exact perceptron (Viterbi)" if r["algo"] == "perceptron" else (
        f"lookahead depth {r['depth']}" + (" + label trigrams" if r["label_order"] == 2 else "")
        + f", {r['direction']}")
    brute = f"{r['brute_train_seconds']:.1f}" if "brute_train_seconds" in r else "-"
    same = {True: "yes", False: "NO"}.get(r.get("brute_identical_weights"), "-")
    return (f"| {name} | {r['margin']:g} | {r['epochs']} | {r['dev']:.2f} | {r['test'][key]:.2f} | "
            f"{r['train_seconds']:.1f} | {brute} | {same} | {r['test_seconds']:.1f} |")


def write_report() -> None:
    results = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("lookahead-*.json"))]
    out = ["# Learning with lookahead (Tsuruoka et al. 2011) on our data", "",
           "Produced by `make lookahead` (scripts/lookahead_experiments.py). Margin C and epochs are",
           "chosen per row on development data (never on test); the row's model is then retrained on",
           "the whole training set. Train s = wall time of training with the exact window DP",
           "search (reading and featurising included); brute s = the same training with the paper's",
           "depth-first search (Figure 2), whose weights must be identical (checked). Test s = tagging",
           "the test set with a trained model (features included). One core of a 2-core machine.", ""]
    for res in results:
        key = res["metric"]
        out += [f"## {res['name']}: {res['task']}, {key} ({res['train']} -> {res['test']}; dev: {res['dev']})", "",
                ("Times: " + res["numba_cache"]["words"] if "numba_cache" in res else
                 "Times: " + LEGACY_CACHE) + ".", "",
                f"| model | C | epochs | dev {key} | test {key} | train s | brute s | identical | test s |",
                "|---|---|---|---|---|---|---|---|---|"]
        out += [_fmt_row(r, key) for r in res["rows"]]
        if res["paper"]:
            p = res["paper"]
            out += ["", "The paper's figures (its data: " + ("PTB WSJ sections 0-18/22-24" if res["task"] == "pos"
                    else "CoNLL-2000" if res["task"] == "chunk" else "JNLPBA 2004") + "): "
                    + ", ".join(f"{k} {v}" for k, v in p.items() if not isinstance(v, dict))
                    + ("; train s: " + ", ".join(f"{k} {v}" for k, v in p["train_s"].items()) if "train_s" in p else "")]
        out.append("")
    out += [f"Machine: {results[0]['machine']['cpu']}, commit {results[0]['machine']['commit']}." if results else ""]
    (RESULTS / "lookahead.md").write_text("\n".join(out) + "\n")
    plot(results)


def plot(results: list[dict]) -> None:
    plt = pyplot()
    if plt is None:
        return
    if not results:
        return
    fig, axes = plt.subplots(2, len(results), figsize=(4.2 * len(results), 7), squeeze=False)
    for j, res in enumerate(results):
        key = res["metric"]
        ax, axt = axes[0][j], axes[1][j]
        series: dict[tuple, list] = {}
        for r in res["rows"]:
            if r["algo"] == "lookahead":
                series.setdefault((r["direction"], r["label_order"]), []).append(r)
        for (direction, order), rs in sorted(series.items()):
            rs.sort(key=lambda r: r["depth"])
            lab = f"{direction}, order {order}"
            ax.plot([r["depth"] for r in rs], [r["test"][key] for r in rs], "o-", label=lab)
            axt.plot([r["depth"] for r in rs], [r["train_seconds"] for r in rs], "o-", label=f"dp, {lab}")
            b = [r for r in rs if "brute_train_seconds" in r]
            if b:
                axt.plot([r["depth"] for r in b], [r["brute_train_seconds"] for r in b], "x--",
                         label=f"brute, {lab}")
        for r in res["rows"]:
            if r["algo"] == "perceptron":
                ax.axhline(r["test"][key], color="grey", ls=":", label="exact perceptron")
        ax.set_title(res["name"])
        ax.set_xlabel("lookahead depth")
        ax.set_ylabel(f"test {key}")
        ax.legend(fontsize=7)
        axt.set_yscale("log")
        axt.set_xlabel("lookahead depth")
        axt.set_ylabel("training time (s)")
        axt.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "lookahead.png", dpi=110)


def main() -> None:
    experiment_main(__doc__, run, write_report)


if __name__ == "__main__":
    main()
