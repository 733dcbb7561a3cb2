"""structkit's morphological tagger and lemmatizer (issue 28) on the UD treebanks we hold:
results/morph.json and results/morph.md.

    python scripts/morph_experiments.py [--only NAME] [--peer] [--out results/morph]

For each treebank of ``scripts/tokenize_peer.py`` (train with dev for epoch selection, or dev
alone where only dev and test are here: Finnish TDT, Chinese GSDSimp, English EWT),
``structkit train --task morph`` with its defaults runs as a process of its own, then
``structkit morph`` analyses the test file (gold tokens: the file itself, its LEMMA, UPOS, XPOS
and FEATS overwritten), scored by ``structkit eval --task morph`` (UPOS, XPOS, UFeats, AllTags,
Lemmas accuracy). Recorded: the scores, the model's dev scores, training wall seconds (inside
``train``) and the training process's CPU seconds and peak RSS (``os.wait4``), the tagging
process's CPU seconds and peak RSS, tags and rules in the model.

``--peer``: instead, UDPipe 1 (``ufal.udpipe``, the ``peers`` extra) trains its tagger and
lemmatizer on the same files (method morphodita_parsito, tokenizer=none, parser=none, tagger
options "" = its defaults; dev as heldout data where there is dev), tags the same test file,
scored the same way; its training CPU seconds are recorded. Several minutes per treebank. Each
run updates its own part of results/morph.json (structkit's rows, or UDPipe's, for the
treebanks run; ``--only`` may be repeated) and rewrites results/morph.md from the whole
(``--report-only``: only that).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, measured  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

METRICS = ("upos", "xpos", "ufeats", "alltags", "lemmas")
NAMES = {"upos": "UPOS", "xpos": "XPOS", "ufeats": "UFeats", "alltags": "AllTags", "lemmas": "Lemmas"}



def run_one(name: str, tmp: str) -> dict:
    from structkit.morph.task import MorphModel

    train_stem, dev_stem, test_stem = TREEBANKS[name]
    train, test = _path(name, train_stem), _path(name, test_stem)
    dev = _path(name, dev_stem) if dev_stem else None
    model = Path(tmp) / f"{name}.model"
    pred = Path(tmp) / f"{name}.test.conllu"
    tr = measured(["train", "--task", "morph", "--train", train, *(["--dev", dev] if dev else []),
                    "--model", model, "-q"])
    tg = measured(["morph", "-m", model, test, "-o", pred])
    ev = measured(["eval", "--task", "morph", test, pred, "--json"])
    info = MorphModel.load(str(model)).info
    scores = json.loads(ev["stdout"])
    return {"train": train_stem, "dev": dev_stem, "test": test_stem,
            "scores": {k: round(scores[k], 2) for k in METRICS}, "words": scores["words"],
            "dev_scores": info.get("dev_scores"), "selected_epoch": info.get("selected_epoch"),
            "train_seconds": info["train_seconds"], "train_cpu_seconds": tr["cpu_seconds"],
            "train_wall_seconds": tr["wall_seconds"], "train_peak_mb": tr["peak_mb"],
            "tag_cpu_seconds": tg["cpu_seconds"], "tag_peak_mb": tg["peak_mb"],
            "tags": info["tags"], "rules": info["rules"], "train_tokens": info["train_tokens"],
            "model_mb": round(model.stat().st_size / 2**20, 2)}


def peer_one(name: str, tmp: str) -> dict:
    """UDPipe 1's tagger and lemmatizer on the same files (see the module docstring)."""
    import ufal.udpipe as u

    from common import read_udpipe
    from structkit.morph.evaluate import evaluate_files

    train_stem, dev_stem, test_stem = TREEBANKS[name]
    train, test = _path(name, train_stem), _path(name, test_stem)
    heldout = read_udpipe(_path(name, dev_stem)) if dev_stem else ""
    err = u.ProcessingError()
    c0, t0 = time.process_time(), time.perf_counter()
    data = u.Trainer.train("morphodita_parsito", read_udpipe(train), heldout, "none", "", "none", err)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    if err.occurred():
        return {"error": err.message}
    path = Path(tmp) / f"{name}.udpipe"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("latin-1"))
    model = u.Model.load(str(path))
    pipe = u.Pipeline(model, "conllu", u.Pipeline.DEFAULT, u.Pipeline.NONE, "conllu")
    out = pipe.process(Path(test).read_text(encoding="utf-8"), err)
    pred = Path(tmp) / f"{name}.udpipe.conllu"
    pred.write_text(out, encoding="utf-8")
    scores = evaluate_files(test, str(pred))
    return {"scores": {k: round(scores[k], 2) for k in METRICS}, "train_cpu_seconds": round(cpu, 1),
            "train_wall_seconds": round(wall, 1), "version": "{0.major}.{0.minor}.{0.patch}".format(u.Version.current())}


def write_report(obj: dict, out: str) -> None:
    m = obj["machine"]
    rows, peer_rows = [], []
    for name, r in obj["treebanks"].items():
        s = r["scores"]
        rows.append(f"| {name}{'' if r['dev'] else '*'} | " + " | ".join(f"{s[k]:.2f}" for k in METRICS)
                    + f" | {r['train_seconds']:.1f} | {r['train_cpu_seconds']:.1f} | {r['train_peak_mb']:.0f} | "
                      f"{r['tag_peak_mb']:.0f} | {r['tags']} | {r['rules']} |")
        p = obj.get("peer", {}).get(name)
        if p and "scores" in p:
            ps = p["scores"]
            ratio = r["train_cpu_seconds"] / max(p["train_cpu_seconds"], 1e-9)
            peer_rows.append(f"| {name}{'' if r['dev'] else '*'} | "
                             + " | ".join(f"{s[k]:.2f} / {ps[k]:.2f}" for k in METRICS)
                             + f" | {r['train_cpu_seconds']:.1f} / {p['train_cpu_seconds']:.1f} ({ratio:.2f}) |")
        elif p:
            peer_rows.append(f"| {name} | UDPipe failed: {p['error'][:80]} |")
    mean = {k: sum(r["scores"][k] for r in obj["treebanks"].values()) / max(len(obj["treebanks"]), 1)
            for k in METRICS}
    lines = [
        "# Morphology and lemmas: structkit's morph task on the UD treebanks (issue 28)", "",
        f"`{obj['command']}` ({m['date']}, commit {m['commit']}, {m['cpu']}, {m['cores']} cores shared "
        f"with other jobs; load average before the run {obj['loadavg_before']}).", "",
        "`structkit train --task morph --train T [--dev D]` with its defaults, then `structkit morph` on the "
        "test file (gold tokens) and `structkit eval --task morph` (accuracy in %, over words; UFeats: "
        "universal features only; AllTags: UPOS, XPOS and all FEATS; CoNLL 2018 definitions). "
        "* = trained on dev, no dev selection (only dev and test are here). Train s: wall seconds "
        "inside `train` (reading, features, epochs); CPU s: the whole training process (start-up and "
        "numba included); peak MB: peak RSS of the training and of the tagging process.", "",
        "| treebank | UPOS | XPOS | UFeats | AllTags | Lemmas | train s | CPU s | train peak MB | tag peak MB | tags | rules |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|", *rows,
        "| mean | " + " | ".join(f"{mean[k]:.2f}" for k in METRICS) + " | | | | | | |", ""]
    if peer_rows:
        runs = sorted({(p["version"], p["run"]["machine"]["date"][:16], p["run"]["command"])
                       for p in obj["peer"].values() if "run" in p})
        lines += ["## Against UDPipe 1", "",
                  "Each cell is structkit / UDPipe 1 (tagger and lemmatizer, default options, "
                  "tokenizer=none, parser=none; dev as heldout data where there is dev), both "
                  "scored as above on the same test file. Train: CPU seconds of training (ratio "
                  "ours / UDPipe's; ours is the whole `train` process, UDPipe's the training call "
                  "alone). UDPipe runs: " + "; ".join(f"UDPipe {v}, `{c}` (started {d})" for v, d, c in runs)
                  + ".", "",
                  "| treebank | UPOS | XPOS | UFeats | AllTags | Lemmas | train CPU s (ratio) |",
                  "|---|---|---|---|---|---|---|", *peer_rows, ""]
        missing = [n for n in obj["treebanks"] if n not in obj["peer"]]
        if missing:
            lines += ["No UDPipe figures (its run had not finished): " + ", ".join(missing) + ".", ""]
    else:
        lines += ["UDPipe 1 was not run here (`--peer`, needs `ufal.udpipe`).", ""]
    Path(out + ".md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS), action="append")
    ap.add_argument("--peer", action="store_true", help="run UDPipe 1 (ufal.udpipe) instead of structkit")
    ap.add_argument("--out", default=str(ROOT / "results" / "morph"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    if args.report_only:
        write_report(json.loads(Path(args.out + ".json").read_text()), args.out)
        return 0
    if args.peer:
        try:
            import ufal.udpipe  # noqa: F401
        except ImportError:
            raise SystemExit("--peer needs ufal.udpipe: pip install -e '.[peers]'")
    names = args.only or list(TREEBANKS)
    old = Path(args.out + ".json")
    obj = json.loads(old.read_text()) if old.exists() else {"treebanks": {}, "peer": {}}
    command = ("python scripts/morph_experiments.py" + "".join(f" --only {n}" for n in args.only or [])
               + (" --peer" if args.peer else ""))
    run = {"command": command, "machine": machine(), "loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    if not args.peer:
        obj |= run
        obj["treebanks"] = {n: r for n, r in obj.get("treebanks", {}).items() if n not in names}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if args.peer:   # UDPipe's figures are kept apart, each with its own run's facts
                obj.setdefault("peer", {})[name] = p = peer_one(name, tmp) | {"run": run}
                print(name, "UDPipe 1:", p, flush=True)
                dump_json(obj, old)
            else:
                obj["treebanks"][name] = r = run_one(name, tmp)
                print(name, r["scores"], f"{r['train_seconds']} s", f"{r['train_peak_mb']} MB", flush=True)
    obj["treebanks"] = {n: obj["treebanks"][n] for n in TREEBANKS if n in obj["treebanks"]}
    dump_json(obj, old)
    if "machine" in obj:   # structkit's rows exist (a --peer run alone has only UDPipe's)
        write_report(obj, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
