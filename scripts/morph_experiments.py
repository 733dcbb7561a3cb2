"""structkit's morphological tagger and lemmatizer (issue 28) on the UD treebanks we hold:
results/morph.json and results/morph.md.

    python scripts/morph_experiments.py [--only NAME] [--peer] [--out results/morph]

For each treebank of ``scripts/tokenize_peer.py`` (train with dev for epoch selection, or dev
alone where only dev and test are here: Finnish TDT, Chinese GSDSimp, English EWT),
``structkit train --task morph`` with its defaults runs as a process of its own, then
``structkit morph`` analyses the test file (gold tokens: the file itself, its LEMMA, UPOS, XPOS
and FEATS overwritten), scored by ``structkit eval --task morph`` (UPOS, XPOS, UFeats, AllTags
and Lemmas accuracy as CoNLL 2018 defines them, UFeats and AllTags over the universal features
only; and AllTags (all FEATS), over every FEATS key, which the tagger predicts and dev selection
uses). Before the treebanks, one warm-up training (``WARMUP`` sentences of the first treebank,
trained, then tagged) fills the numba cache, so that the training times are those of a warm
cache; it runs first with an empty cache (a fresh ``NUMBA_CACHE_DIR``), then twice with the
cache the runs use, and the CPU seconds of the cold and of the last (warm) run are recorded,
their difference being what compiling costs a cold process.
Recorded: the scores, the model's dev scores, training wall seconds (inside
``train``) and the training process's CPU seconds and peak RSS (``os.wait4``), the tagging
process's CPU seconds and peak RSS, tags and rules in the model. The models and the predicted
test files are kept in build/morph (``--keep``; UDPipe's predictions too), so that the test
files can be scored again without training.

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

from common import cold_numba_cache, dump_json, machine, measured, numba_cache  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

METRICS = ("upos", "xpos", "ufeats", "alltags", "alltags_full", "lemmas")
NAMES = {"upos": "UPOS", "xpos": "XPOS", "ufeats": "UFeats", "alltags": "AllTags",
         "alltags_full": "AllTags (all FEATS)", "lemmas": "Lemmas"}
WARMUP = 300    # sentences of the warm-up training (train and dev halves)


def _head(src: str, dst: Path, start: int, n: int) -> Path:
    """Sentences start..start+n of a CoNLL-U file, as read (comments included)."""
    blocks = [b for b in Path(src).read_text(encoding="utf-8").split("\n\n") if b.strip()]
    dst.write_text("".join(b.strip("\n") + "\n\n" for b in blocks[start:start + n]), encoding="utf-8")
    return dst


def warm_up(name: str, tmp: str) -> dict:
    """One small training of the first treebank (WARMUP sentences: half for training, half for
    dev), then tagging: first with an empty numba cache (``cold_numba_cache()``, a new one for
    each of the two processes), then twice
    with the cache the treebank runs use, the first of the two filling it (where a kernel
    changed), the second measuring a warm process. The record of ``numba_cache("warm", ...)``
    with the cold and warm runs' CPU seconds."""
    import contextlib

    train_stem = TREEBANKS[name][0]
    train = _head(_path(name, train_stem), Path(tmp) / "warm-train.conllu", 0, WARMUP // 2)
    dev = _head(_path(name, train_stem), Path(tmp) / "warm-dev.conllu", WARMUP // 2, WARMUP // 2)
    runs = {}
    model = Path(tmp) / "warm.model"
    for kind in ("cold", "fill", "warm"):   # cold: training and tagging each with a cache of its own
        with cold_numba_cache() if kind == "cold" else contextlib.nullcontext():
            tr = measured(["train", "--task", "morph", "--train", train, "--dev", dev, "--model", model, "-q"])
        with cold_numba_cache() if kind == "cold" else contextlib.nullcontext():
            tg = measured(["morph", "-m", model, dev, "-o", Path(tmp) / "warm.conllu"])
        runs[kind] = {"train_cpu_seconds": tr["cpu_seconds"], "tag_cpu_seconds": tg["cpu_seconds"]}
    how = (f"the kernels compiled by an untimed warm-up training on {WARMUP} sentences of {name}'s training "
           "file (half as dev), then tagging, run twice with the same cache first")
    return numba_cache("warm", how) | {"warmup_sentences": WARMUP, "warmup_treebank": name,
                                       "cold": runs["cold"], "warm": runs["warm"]}


def run_one(name: str, keep: Path) -> dict:
    from structkit.morph.task import MorphModel

    train_stem, dev_stem, test_stem = TREEBANKS[name]
    train, test = _path(name, train_stem), _path(name, test_stem)
    dev = _path(name, dev_stem) if dev_stem else None
    model = keep / f"{name}.model"
    pred = keep / f"{name}.test.conllu"
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


def peer_one(name: str, keep: Path) -> dict:
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
    path = keep / f"{name}.udpipe"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("latin-1"))
    model = u.Model.load(str(path))
    pipe = u.Pipeline(model, "conllu", u.Pipeline.DEFAULT, u.Pipeline.NONE, "conllu")
    out = pipe.process(Path(test).read_text(encoding="utf-8"), err)
    pred = keep / f"{name}.udpipe.conllu"
    pred.write_text(out, encoding="utf-8")
    scores = evaluate_files(test, str(pred))
    return {"scores": {k: round(scores[k], 2) for k in METRICS}, "train_cpu_seconds": round(cpu, 1),
            "train_wall_seconds": round(wall, 1), "version": "{0.major}.{0.minor}.{0.patch}".format(u.Version.current())}


def current(obj: dict) -> bool:
    """Whether every row of results/morph.json has every metric of METRICS (rows written before
    AllTags (all FEATS) was a metric of its own do not)."""
    rows = list(obj.get("treebanks", {}).values()) + [p for p in obj.get("peer", {}).values() if "scores" in p]
    return all(k in r["scores"] for r in rows for k in METRICS)


def write_report(obj: dict, out: str) -> None:
    m = obj["machine"]
    cache = obj.get("numba_cache")
    rows, peer_rows = [], []
    for name in [n for n in TREEBANKS if n in obj["treebanks"]]:   # the JSON's keys are sorted
        r = obj["treebanks"][name]
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
        "test file (gold tokens) and `structkit eval --task morph` (accuracy in %, over words). UPOS, XPOS, "
        "UFeats, AllTags and Lemmas as the CoNLL 2018 shared task defines them (`conll18_ud_eval.py` v1.2: "
        "UFeats and AllTags compare only the 21 universal features of FEATS, so a layered feature such as "
        "`Number[psor]` or a language-specific one does not count; AllTags is UPOS, XPOS and those "
        "features together; a gold lemma `_` matches anything; checked against the official script in "
        "`results/official-eval.md`). AllTags (all FEATS) is not a CoNLL 2018 metric: UPOS, XPOS and "
        "every FEATS key, all of which the tagger predicts; dev selection keeps the epoch with the best "
        "AllTags (all FEATS) + Lemmas. "
        "* = trained on dev, no dev selection (only dev and test are here). Train s: wall seconds "
        "inside `train` (reading, features, epochs); CPU s: the whole training process (start-up and "
        "numba included); peak MB: peak RSS of the training and of the tagging process.", ""]
    if cache:
        c, w = cache["cold"], cache["warm"]
        lines += [f"Training times with the {cache['words']}. The same warm-up with an empty cache (a fresh "
                  f"NUMBA_CACHE_DIR for each process) took {c['train_cpu_seconds']:.1f} CPU s to train and {c['tag_cpu_seconds']:.1f} "
                  f"to tag, against {w['train_cpu_seconds']:.1f} and {w['tag_cpu_seconds']:.1f} warm: a process "
                  f"with a cold cache spends about {c['train_cpu_seconds'] - w['train_cpu_seconds']:.0f} CPU s more "
                  "training and "
                  f"{c['tag_cpu_seconds'] - w['tag_cpu_seconds']:.0f} more tagging (compiling).", ""]
    else:
        lines += ["Numba cache: not recorded by this run (warm or cold unknown).", ""]
    lines += [
        "| treebank | UPOS | XPOS | UFeats | AllTags | AllTags (all FEATS) | Lemmas | train s | CPU s | "
        "train peak MB | tag peak MB | tags | rules |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|", *rows,
        "| mean | " + " | ".join(f"{mean[k]:.2f}" for k in METRICS) + " | | | | | | |", ""]
    if peer_rows:
        runs = sorted({(p["version"], p["run"]["machine"]["date"][:16], p["run"]["command"],
                        str(p["run"].get("loadavg_before", "not recorded")))
                       for p in obj["peer"].values() if "run" in p})
        lines += ["## Against UDPipe 1", "",
                  "Each cell is structkit / UDPipe 1 (tagger and lemmatizer, default options, "
                  "tokenizer=none, parser=none; dev as heldout data where there is dev), both "
                  "scored as above on the same test file. Train: CPU seconds of training (ratio "
                  "ours / UDPipe's; ours is the whole `train` process, UDPipe's the training call "
                  "alone; CPU seconds grow with the machine's load, which varied during both runs: the load average "
                  "before each is given). UDPipe "
                  "runs: " + "; ".join(f"UDPipe {v}, `{c}` (started {d}, load average before it {la})"
                                       for v, d, c, la in runs) + ".", "",
                  "| treebank | UPOS | XPOS | UFeats | AllTags | AllTags (all FEATS) | Lemmas | train CPU s (ratio) |",
                  "|---|---|---|---|---|---|---|---|", *peer_rows, ""]
        missing = [n for n in obj["treebanks"] if n not in obj["peer"]]
        if missing:
            lines += ["No UDPipe figures (its run had not finished): " + ", ".join(missing) + ".", ""]
    else:
        lines += ["UDPipe 1 was not run here (`--peer`, needs `ufal.udpipe`).", ""]
    Path(out + ".md").write_text("\n".join(lines))


def _update(path: Path, change) -> dict:
    """Read results/morph.json as it is now, apply ``change`` and write it back (a --peer run
    and a structkit run each touch only their own part)."""
    obj = json.loads(path.read_text()) if path.exists() else {"treebanks": {}, "peer": {}}
    change(obj)
    dump_json(obj, path)
    return obj


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS), action="append")
    ap.add_argument("--peer", action="store_true", help="run UDPipe 1 (ufal.udpipe) instead of structkit")
    ap.add_argument("--out", default=str(ROOT / "results" / "morph"))
    ap.add_argument("--keep", default=str(ROOT / "build" / "morph"),
                    help="folder for the models and predicted test files")
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
    path = Path(args.out + ".json")
    keep = Path(args.keep)
    keep.mkdir(parents=True, exist_ok=True)
    command = ("python scripts/morph_experiments.py" + "".join(f" --only {n}" for n in args.only or [])
               + (" --peer" if args.peer else ""))
    run = {"command": command, "machine": machine(), "loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    if args.peer:   # UDPipe's figures are kept apart, each with its own run's facts
        for name in names:
            p = peer_one(name, keep) | {"run": run}
            print(name, "UDPipe 1:", p, flush=True)
            _update(path, lambda o: o.setdefault("peer", {}).__setitem__(name, p))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run["numba_cache"] = warm_up(names[0], tmp)
        print("warm-up:", run["numba_cache"], flush=True)
        rows = {}
        for name in names:
            rows[name] = r = run_one(name, keep)
            print(name, r["scores"], f"{r['train_seconds']} s", f"{r['train_peak_mb']} MB", flush=True)

        def ours(o: dict) -> None:
            o |= run
            old = {n: r for n, r in o.get("treebanks", {}).items() if n not in names}
            o["treebanks"] = {n: (rows | old)[n] for n in TREEBANKS if n in rows or n in old}
        _update(path, ours)
    obj = json.loads(path.read_text())
    if "machine" in obj and current(obj):   # structkit's rows exist (a --peer run alone has only UDPipe's)
        write_report(obj, args.out)
    elif "machine" in obj:
        print(f"{args.out}.md not rewritten: some rows of {path} predate AllTags (all FEATS); rerun them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
