"""Lemmas of words the training data lacks, and of upper-cased text (issue 40, item 9):
structkit's morph models against UDPipe 1's on the same test words.

For each treebank of ``scripts/morph_experiments.py`` this reads the two models that script
keeps in ``build/morph`` (``NAME.model``, trained by ``structkit train --task morph`` with its
defaults, and ``NAME.udpipe``, UDPipe 1's tagger and lemmatizer; ``--retrain`` trains ours
again first, with the same command), analyses the test file's gold words, and scores the
lemmas (the CoNLL 2018 shared task's Lemmas: the exact string, a gold ``_`` matching anything):

- **all**: every word of the test file;
- **unseen**: the words whose form does not occur in the training file (dev for the treebanks
  trained on dev), as written;
- **UPPER**: every word of a copy of the test file whose forms are upper-cased
  (``str.upper`` where that keeps the length), against the same gold lemmas: text written in
  capitals (headlines, shouting) as a tagger meets it.

Writes results/lemma-unknown.json and results/lemma-unknown.md (``--report-only``: only the md).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

KEEP = ROOT / "build" / "morph"
OUT = ROOT / "results" / "lemma-unknown.json"
KINDS = ("all", "unseen", "upper")


def _blocks(path: str) -> list[list[list[str]]]:
    """The sentences of a CoNLL-U file as lists of their lines' columns (comments as [line])."""
    out, cur = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur = []
        elif line.startswith("#"):
            cur.append([line])
        else:
            cur.append(line.split("\t"))
    if cur:
        out.append(cur)
    return out


def _words(block) -> list[list[str]]:
    return [c for c in block if len(c) == 10 and c[0].isdigit()]


def _upper(form: str) -> str:
    up = form.upper()
    return up if len(up) == len(form) else form


def _upper_text(blocks) -> str:
    """The test file with every FORM (words and multiword tokens) upper-cased, comments dropped."""
    lines = []
    for b in blocks:
        for c in b:
            if len(c) == 10:
                lines.append("\t".join([c[0], _upper(c[1])] + c[2:]))
        lines.append("")
    return "\n".join(lines) + "\n"


def _ours(model_path: Path, sentences: list[list[str]]) -> list[str]:
    from structkit.morph.task import MorphModel

    model = MorphModel.load(str(model_path))
    return [w[0] for s in model.analyse(sentences) for w in s]


def _udpipe(model_path: Path, text: str) -> list[str]:
    import ufal.udpipe as u

    model = u.Model.load(str(model_path))
    pipe = u.Pipeline(model, "conllu", u.Pipeline.DEFAULT, u.Pipeline.NONE, "conllu")
    err = u.ProcessingError()
    out = pipe.process(text, err)
    if err.occurred():
        raise RuntimeError(err.message)
    return [c[2] for b in _blocks_text(out) for c in _words(b)]


def _blocks_text(text: str):
    tmp = KEEP / ".lemma-unknown.tmp.conllu"
    tmp.write_text(text, encoding="utf-8")
    try:
        return _blocks(str(tmp))
    finally:
        tmp.unlink()


def _score(gold: list[str], pred: list[str], mask: list[bool]) -> tuple[float, int]:
    assert len(gold) == len(pred) == len(mask)
    n = sum(mask)
    right = sum(1 for g, p, m in zip(gold, pred, mask) if m and (g == "_" or g == p))
    return round(100.0 * right / max(n, 1), 2), n


def run_one(name: str, retrain: bool) -> dict:
    train_stem, dev_stem, test_stem = TREEBANKS[name]
    train, test = _path(name, train_stem), _path(name, test_stem)
    model = KEEP / f"{name}.model"
    if retrain or not model.exists():
        KEEP.mkdir(parents=True, exist_ok=True)
        dev = _path(name, dev_stem) if dev_stem else None
        subprocess.run([sys.executable, "-m", "structkit", "train", "--task", "morph", "--train", train,
                        *(["--dev", dev] if dev else []), "--model", str(model), "-q"], check=True)
    seen = {c[1] for b in _blocks(train) for c in _words(b)}
    blocks = _blocks(test)
    sents = [[c[1] for c in _words(b)] for b in blocks]
    gold = [c[2] for b in blocks for c in _words(b)]
    forms = [f for s in sents for f in s]
    masks = {"all": [True] * len(forms), "unseen": [f not in seen for f in forms]}
    upper_sents = [[_upper(f) for f in s] for s in sents]
    row: dict = {"test": test_stem, "train": train_stem, "words": len(forms)}
    systems = {"structkit": lambda: (_ours(model, sents), _ours(model, upper_sents))}
    peer = KEEP / f"{name}.udpipe"
    if peer.exists():
        test_text = "\n".join("\n".join("\t".join(c) for c in b) + "\n" for b in blocks)
        systems["udpipe"] = lambda: (_udpipe(peer, test_text), _udpipe(peer, _upper_text(blocks)))
    for system, run in systems.items():
        t0 = time.perf_counter()
        plain, upper = run()
        got = {}
        for kind in KINDS:
            pred = upper if kind == "upper" else plain
            got[kind], got[f"{kind}_words"] = _score(gold, pred, masks["unseen" if kind == "unseen" else "all"])
        got["seconds"] = round(time.perf_counter() - t0, 1)
        row[system] = got
    row["model_sha256"] = hashlib.sha256(model.read_bytes()).hexdigest()
    return row


def write_report(obj: dict) -> None:
    lines = ["# Lemmas of unseen words and of upper-cased text (issue 40, item 9)", "",
             f"`python scripts/lemma_unknown.py{' --retrain' if obj.get('retrained') else ''}` "
             f"({obj['date']}, commit {obj['commit']}, {obj['machine']['cpu']}).", "",
             "Lemma accuracy (%, the CoNLL 2018 Lemmas: exact string, gold `_` matches anything) of "
             "structkit's morph model (`structkit train --task morph` with its defaults) and of UDPipe 1's "
             "tagger and lemmatizer (the models of `scripts/morph_experiments.py --peer`), both given the test "
             "file's gold words. **unseen**: the test words whose form is not in the training file (as written); "
             "**UPPER**: all words of a copy of the test file with every form upper-cased, scored against the "
             "same gold lemmas. Each cell is structkit / UDPipe 1.", "",
             "| treebank | words | all | unseen words | unseen | UPPER |", "|---|---|---|---|---|---|"]
    for name, r in obj["rows"].items():
        o, p = r["structkit"], r.get("udpipe")
        cell = (lambda k: f"{o[k]:.2f} / {p[k]:.2f}") if p else (lambda k: f"{o[k]:.2f} / -")
        lines.append(f"| {name} | {r['words']} | {cell('all')} | {o['unseen_words']} | {cell('unseen')} | "
                     f"{cell('upper')} |")
    (OUT.with_suffix(".md")).write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", choices=sorted(TREEBANKS))
    ap.add_argument("--retrain", action="store_true", help="train structkit's morph models again first")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    obj = json.loads(OUT.read_text()) if OUT.exists() else {"rows": {}}
    if not args.report_only:
        for name in args.only or list(TREEBANKS):
            print(name, file=sys.stderr, flush=True)
            obj["rows"][name] = run_one(name, args.retrain)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        obj.update(date=time.strftime("%Y-%m-%d %H:%M:%S"), commit=commit, machine=machine(),
                   retrained=args.retrain)
        dump_json(obj, OUT)
    write_report(obj)


if __name__ == "__main__":
    main()
