"""structkit's learnt tokenizer against UDPipe 1's on the UD treebanks we hold (issue 27):
results/tokenize.json and results/tokenize.md.

    python scripts/tokenize_experiments.py [--only NAME] [--out results/tokenize]
    python scripts/tokenize_experiments.py --report-only     # the .md from the .json

For each treebank of ``scripts/tokenize_peer.py`` (same files, same split: train with dev for
epoch selection, or dev alone where only dev and test are here), ``structkit train --task
tokenize`` with its defaults is trained in this process and tokenizes the test file's raw text
(``structkit.tokenizer.task.raw_text``, as the peer's); both are scored by
``structkit.eval.tokenize`` (the CoNLL 2018 alignment). Training time is CPU seconds
(``time.process_time``); speed is bytes of UTF-8 text per CPU second through the whole
tokenizer (sentences, tokens, multiword words), best of three timings. UDPipe 1's figures are
read from results/tokenize-udpipe.json (``make tokenize-peer``, about an hour). The training
times are with a warm numba cache (``NUMBA_CACHE``, recorded in the JSON and said in the
report): ``warm_up`` trains and scores one epoch on Italian ParTUT dev (the defaults) and on
English ParTUT dev (the rules' features) first, untimed. A few minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, numba_cache  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402
from tokenize_peer import earlier_rows as peer_rows  # noqa: E402

MIN_TIMING = 0.5
ENGLISH = ("ud-english-partut", "ud-english-ewt")   # also trained with the rules' features
RULES_FEATURES = "short,url,rules"
NUMBA_CACHE = numba_cache("warm", "the kernels compiled by untimed 1-epoch trainings, with the defaults and with "
                                  "the rules' features, scored on their dev text, first")


def legacy_cache(obj: dict) -> dict:
    """For a .json from before the script recorded it: no warm-up, every treebank trained in one
    process in TREEBANKS order, so the first one's time also holds numba's import and the kernels'
    loading (or compiling), and the later ones found them loaded."""
    first = next(n for n in TREEBANKS if n in obj["treebanks"])
    return numba_cache("not recorded", f"this older run did no warm-up and trained every treebank in one process: "
                                       f"{first}, trained first, also imported numba and loaded or compiled the "
                                       "kernels within its time; the others, and the rules' rows, found them "
                                       "loaded, warm in effect")


def warm_up() -> None:
    """Untimed: compile (or load) every kernel the timed trainings call, in this process."""
    from structkit.tasks import make_config
    from structkit.tokenizer.task import evaluate_text, raw_text, train_tokenizer

    for name, extra in (("ud-italian-partut", {}), ("ud-english-partut", {"features": RULES_FEATURES})):
        dev = _path(name, TREEBANKS[name][1])
        m = train_tokenizer(make_config({"task": "tokenize", "epochs": 1, **extra}), dev, dev)
        evaluate_text(m.tokenizer, dev, raw_text(dev))


def tokenize_text(model, text: str) -> list:
    return list(model.sentences(text))


def speed(model, text: str) -> dict:
    n = len(text.encode("utf-8"))
    best = 0.0
    for _ in range(3):
        reps, t0, c0 = 0, time.perf_counter(), time.process_time()
        while True:
            if model.tokenizer.mwt is not None:   # no split remembered from the last round
                model.tokenizer.mwt.forget()
            tokenize_text(model, text)
            reps += 1
            if time.perf_counter() - t0 >= MIN_TIMING:
                break
        best = max(best, reps * n / max(time.process_time() - c0, 1e-9))
    return {"bytes_per_cpu_second": round(best), "text_bytes": n}


def run_one(name: str) -> dict:
    from structkit.tasks import make_config
    from structkit.tokenizer.task import evaluate_text, raw_text, train_tokenizer

    train_stem, dev_stem, test_stem = TREEBANKS[name]
    train, test = _path(name, train_stem), _path(name, test_stem)
    dev = _path(name, dev_stem) if dev_stem else None
    c0 = time.process_time()
    model = train_tokenizer(make_config({"task": "tokenize"}), train, dev)
    train_cpu = time.process_time() - c0
    text = raw_text(test)
    scores = evaluate_text(model.tokenizer, test, text)
    learners = None
    if dev is not None:   # the default learner against the other one, as dev sees them
        dev_text = raw_text(dev)
        learners = {}
        for algo in ("pa", "perceptron"):
            m = model if algo == "pa" else train_tokenizer(make_config({"task": "tokenize", "algo": algo}),
                                                           train, dev)
            d = evaluate_text(m.tokenizer, dev, dev_text)
            learners[algo] = {k: round(d[k]["f1"], 2) for k in ("tokens", "words", "sentences")}
    with_rules = None
    if name in ENGLISH:   # the English rules' decisions as features too (opt-in: --features short,url,rules)
        c0 = time.process_time()
        m = train_tokenizer(make_config({"task": "tokenize", "features": RULES_FEATURES}), train, dev)
        cpu = time.process_time() - c0
        s = evaluate_text(m.tokenizer, test, text)
        with_rules = {"features": RULES_FEATURES, "train_cpu_seconds": round(cpu, 2),
                      "scores": {k: s[k] for k in ("tokens", "words", "sentences")}, "speed": speed(m, text)}
    return {"treebank": name, "with_rules": with_rules, "train": f"{name}/{train_stem}.conllu",
            "dev": f"{name}/{dev_stem}.conllu" if dev_stem else None,
            "test": f"{name}/{test_stem}.conllu", "train_cpu_seconds": round(train_cpu, 2),
            "scores": {k: scores[k] for k in ("tokens", "words", "sentences")},
            "speed": speed(model, text), "learners_on_dev": learners,
            "model": {k: model.info.get(k) for k in ("selected_epoch", "epochs_run", "mwt_rules",
                                                      "train_sentences", "train_chars")}}


def earlier_rows(json_path: Path, names: list) -> dict:
    """``tokenize_peer.earlier_rows``, a kept row's run also saying its load average and numba cache."""
    return peer_rows(json_path, names, lambda old: {"loadavg_before": old.get("loadavg_before"),
                                                    "numba_cache": old.get("numba_cache") or legacy_cache(old)})


def mark(r: dict) -> str:
    """* = trained on dev (no training file here), + = trained on train with no dev (no dev file)."""
    if r.get("dev"):
        return ""
    return "*" if "-ud-dev." in r.get("train", "") else "+"


def earlier_note(tb: dict, m: dict) -> list:
    """Lines naming the rows kept from earlier runs (``--only`` reruns some and keeps the rest)."""
    runs: dict = {}
    for name, r in tb.items():
        run = r.get("run")
        if run and run.get("date") != m["date"]:
            runs.setdefault((run["command"], run["date"], run["commit"]), []).append(name)
    return [f"\nKept from an earlier run (`{c}`, {d}, commit {h}): {', '.join(n)}." for (c, d, h), n in runs.items()]


def write_report(obj: dict, udpipe: dict, out: str) -> None:
    rows = []
    below = []
    tb = {n: obj["treebanks"][n] for n in [*TREEBANKS, *obj["treebanks"]] if n in obj["treebanks"]}  # run order
    for name, r in tb.items():
        u = udpipe.get(name)
        f = {k: r["scores"][k]["f1"] for k in ("tokens", "words", "sentences")}
        if u:
            uf = {k: u["scores"][k]["f1"] for k in ("tokens", "words", "sentences")}
            ratio = r["train_cpu_seconds"] / u["train_cpu_seconds"]
            for k in ("tokens", "words"):
                if f[k] < uf[k]:
                    below.append(f"{name} {k} ({f[k]:.2f} < {uf[k]:.2f})")
            if f["sentences"] < uf["sentences"] - 1:
                below.append(f"{name} sentences ({f['sentences']:.2f}, more than 1 below {uf['sentences']:.2f})")
            rows.append(f"| {name}{mark(r)} | {f['tokens']:.2f} / {uf['tokens']:.2f} | "
                        f"{f['words']:.2f} / {uf['words']:.2f} | {f['sentences']:.2f} / {uf['sentences']:.2f} | "
                        f"{r['train_cpu_seconds']:.1f} / {u['train_cpu_seconds']:.0f} ({ratio:.3f}) | "
                        f"{r['speed']['bytes_per_cpu_second'] / 1e6:.2f} / "
                        f"{u['speed']['bytes_per_cpu_second'] / 1e6:.2f} |")
        else:
            rows.append(f"| {name}{mark(r)} | {f['tokens']:.2f} | {f['words']:.2f} | {f['sentences']:.2f} | "
                        f"{r['train_cpu_seconds']:.1f} | {r['speed']['bytes_per_cpu_second'] / 1e6:.2f} |")
    m = obj["machine"]
    lines = [
        "# Learnt tokenizers: structkit against UDPipe 1 (issue 27)", "",
        f"`{obj.get('command', 'python scripts/tokenize_experiments.py')}` ({m['date']}, commit {m['commit']}, {m['cpu']}, "
        f"{m['cores']} cores; load average before the run {obj['loadavg_before']}).", "",
        "Each cell is structkit / UDPipe 1, both trained on the same file with their defaults "
        "(structkit: `structkit train --task tokenize --train T [--dev D]`; UDPipe 1: tokenizer "
        "only, results/tokenize-udpipe.md) and scored on the test file's raw text by "
        "`structkit eval --task tokenize` (CoNLL 2018 alignment). F1 in %. * = trained on dev, "
        "no dev selection (only dev and test are here); + = trained on train, no dev selection (only train "
        "and test are here). Train s = CPU seconds (ratio ours/UDPipe; "
        f"ours with the {(obj.get('numba_cache') or legacy_cache(obj))['words']}; UDPipe has no numba); "
        "speed = MB of UTF-8 text per CPU second, the whole tokenizer, best of 3.", "",
        "| treebank | tokens F1 | words F1 | sentences F1 | train s (ratio) | MB/s |",
        "|---|---|---|---|---|---|", *rows, *earlier_note(tb, m), "",
        "Below UDPipe 1 (tokens or words lower, or sentences more than 1 point lower): "
        + ("; ".join(below) if below else "none") + ".", "",
        "The learner, as dev sees it (dev F1 tokens / words / sentences; `pa` is the default, "
        "`--algo perceptron` the other; each with its epoch chosen on dev):", "",
        "| treebank | pa | perceptron |", "|---|---|---|"]
    for name, r in tb.items():
        ld = r.get("learners_on_dev")
        if ld:
            lines.append(f"| {name} | " + " | ".join(
                " / ".join(f"{ld[a][k]:.2f}" for k in ("tokens", "words", "sentences")) for a in ("pa", "perceptron"))
                + " |")
    ruled = [(name, r) for name, r in tb.items() if r.get("with_rules")]
    if ruled:
        lines += ["", f"English, with the English rules' decisions as features too (`--features {RULES_FEATURES}`; "
                  "not the default: it runs the rules as well; a token the rules also found keeps their words). "
                  "Test F1 tokens / words / sentences, ours with the rules' features against the defaults' row "
                  "above and UDPipe 1:", "",
                  "| treebank | with rules' features | defaults | UDPipe 1 | train s | MB/s |", "|---|---|---|---|---|---|"]
        for name, r in ruled:
            w, u = r["with_rules"], udpipe.get(name)
            cell = lambda sc: " / ".join(f"{sc[k]['f1']:.2f}" for k in ("tokens", "words", "sentences"))  # noqa: E731
            lines.append(f"| {name}{mark(r)} | {cell(w['scores'])} | {cell(r['scores'])} | "
                         f"{cell(u['scores']) if u else '-'} | {w['train_cpu_seconds']:.1f} | "
                         f"{w['speed']['bytes_per_cpu_second'] / 1e6:.2f} |")
    lines.append("")
    Path(out + ".md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS), action="append",
                    help="run this treebank (repeatable); the other treebanks' rows of an existing .json are kept")
    ap.add_argument("--out", default=str(ROOT / "results" / "tokenize"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    peer = ROOT / "results" / "tokenize-udpipe.json"
    if args.report_only:
        udpipe = json.loads(peer.read_text())["treebanks"] if peer.exists() else {}
        write_report(json.loads(Path(args.out + ".json").read_text()), udpipe, args.out)
        return 0
    load = list(os.getloadavg())
    names = list(dict.fromkeys(args.only)) if args.only else list(TREEBANKS)
    argv = " ".join(sys.argv[1:])
    obj = {"command": f"python scripts/tokenize_experiments.py{' ' + argv if argv else ''}", "machine": machine(),
           "loadavg_before": [round(x, 2) for x in load], "numba_cache": NUMBA_CACHE, "treebanks": {}}
    this_run = {"command": obj["command"], "date": obj["machine"]["date"], "commit": obj["machine"]["commit"],
                "loadavg_before": obj["loadavg_before"], "numba_cache": NUMBA_CACHE}
    kept = earlier_rows(Path(args.out + ".json"), names)
    warm_up()
    done = {}
    for name in names:
        done[name] = r = {**run_one(name), "run": this_run}
        print(name, {k: round(v["f1"], 2) for k, v in r["scores"].items()}, r["train_cpu_seconds"], "s",
              r["speed"]["bytes_per_cpu_second"], "B/s", flush=True)
    rows = {**kept, **done}
    obj["treebanks"] = {n: rows[n] for n in [*TREEBANKS, *rows] if n in rows}
    dump_json(obj, Path(args.out + ".json"))
    peer = ROOT / "results" / "tokenize-udpipe.json"
    udpipe = json.loads(peer.read_text())["treebanks"] if peer.exists() else {}
    write_report(obj, udpipe, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
