"""The learnt tokenizer's choices, as dev sees them (issue 27): results/tokenize-dev.json and .md.

    python scripts/tokenize_dev.py [--only NAME] [--out results/tokenize-dev]

For each treebank of ``scripts/tokenize_peer.py`` and each variant below, ``structkit train
--task tokenize`` is trained in this process with the variant's options (everything else the
defaults) and scored on dev by ``structkit.eval.tokenize`` (CoNLL 2018 alignment; tokens, words,
sentences F1), with the epoch chosen on that same dev text as training does. The test files are
never read. Where a treebank has a training file, dev is its dev file; where only dev and test
are here (trained on dev for results/tokenize.md), dev is split by documents (``# newdoc``, else
``# newpar``, else stretches of 20 sentences): four in five train, every fifth is the dev text
(temporary files, deleted after the run). The variants:

- ``features``: the optional character feature groups (``structkit.tokenizer.features.GROUPS``):
  none (the 47 base features), short (the letters of the word before and the word ending at a
  boundary, with what precedes it: initials, abbreviations), url (inside a web or e-mail
  address), both;
  and with the English rules' decisions as features too (rules: for English; it runs the rules
  as well, and their words are kept for the tokens they also found);
- ``algo``: the perceptron against pa (the default), with the default features.

The last table sums, over the treebanks, the dev errors of each variant (tokens, words and
sentences missed or added, as the F1 counts them) so that small treebanks count as much as
their errors.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

from structkit.tokenizer.task import SENTENCE_BIASES as BIASES  # noqa: E402

VARIANTS = {
    "features=none": {"features": "none"},
    "features=short": {"features": "short"},
    "features=url": {"features": "url"},
    "features=short,url": {"features": "short,url"},
    "features=short,url,rules": {"features": "short,url,rules"},
    "algo=perceptron": {"algo": "perceptron"},
}
KEYS = ("tokens", "words", "sentences")


def split_documents(path: str, tmp: str) -> tuple[str, str]:
    """Four in five documents of ``path`` to train on, every fifth as dev (CoNLL-U in ``tmp``)."""
    blocks = [b for b in Path(path).read_text(encoding="utf-8").split("\n\n") if b.strip()]
    mark = next((m for m in ("# newdoc", "# newpar") if any(m in b for b in blocks)), None)
    units: list[list[str]] = []
    for b in blocks:
        if not units or (mark is not None and mark in b):
            units.append([])
        units[-1].append(b)
    if mark is None:
        units = [blocks[i:i + 20] for i in range(0, len(blocks), 20)]
    stem = Path(path).stem
    out = []
    for name, keep in (("train", lambda k: (k + 1) % 5 != 0), ("dev", lambda k: (k + 1) % 5 == 0)):
        p = os.path.join(tmp, f"{stem}-{name}.conllu")
        Path(p).write_text("\n\n".join(b for k, u in enumerate(units) if keep(k) for b in u) + "\n\n",
                           encoding="utf-8")
        out.append(p)
    return out[0], out[1]


def run_one(name: str, tmp: str) -> dict:
    from structkit.tokenizer.task import raw_text

    train_stem, dev_stem, _ = TREEBANKS[name]
    if dev_stem:
        train, dev, how = _path(name, train_stem), _path(name, dev_stem), "train / dev"
    else:
        train, dev = split_documents(_path(name, train_stem), tmp)
        how = "dev 4/5 / dev 1/5"
    dev_text = raw_text(dev)
    out = {"treebank": name, "split": how, "variants": {}}
    for variant, options in VARIANTS.items():
        out["variants"][variant] = run_variant(train, dev, options, dev_text)
        print(name, variant, {k: out["variants"][variant][k] for k in KEYS}, flush=True)
    return out


def run_variant(train: str, dev: str, options: dict, dev_text: str | None = None) -> dict:
    """Train the tokenizer with ``options`` (``train --task tokenize``'s, the rest the defaults)
    on ``train``, dev (``dev``, whose raw text is ``dev_text``) choosing the epoch; its dev F1 of
    tokens, words and sentences, the errors each F1 counts, the epoch, the training CPU s and
    what dev said of the bias on sentence ends (``_bias``)."""
    from structkit.tasks import make_config
    from structkit.tokenizer.task import evaluate_text, raw_text, train_tokenizer

    c0 = time.process_time()
    model = train_tokenizer(make_config({"task": "tokenize", **options}), train, dev)
    cpu = time.process_time() - c0
    r = evaluate_text(model.tokenizer, dev, raw_text(dev) if dev_text is None else dev_text)
    return {**{k: round(r[k]["f1"], 2) for k in KEYS},
            "errors": {k: int(r[k]["gold"] - r[k]["correct"] + r[k]["system"] - r[k]["correct"]) for k in KEYS},
            "selected_epoch": model.info.get("selected_epoch"), "train_cpu_seconds": round(cpu, 2),
            "sentence_bias": _bias(model.info.get("sentence_bias"))}


def _bias(said: dict | None) -> dict | None:
    """What dev said of the bias on sentence ends (``structkit.tokenizer.task``): the bias kept
    (0: none), dev sentences F1 without one, and with each one tried."""
    if said is None:
        return None
    return {"bias": said["bias"], "dev_sentences_without": round(said["dev_sentences_without"], 2),
            "dev_sentences_with": {b: round(v, 2) for b, v in said.get("dev_sentences_with", {}).items()}}


def _unwrap(para: str) -> str:
    """A docstring paragraph as markdown: its lines joined, a bullet list kept one item a line."""
    items = para.replace("\n  ", " ").split("\n- ")
    first = items[0].replace("\n", " ")
    return "\n".join([first.replace(":", ":\n", 1) if len(items) > 1 and first.endswith(":") else first]
                     + ["- " + it.replace("\n", " ") for it in items[1:]])


def write_report(obj: dict, out: str) -> None:
    m = obj["machine"]
    names = list(VARIANTS)
    lines = ["# The learnt tokenizer's options as dev sees them (issue 27)", "",
             f"`python scripts/tokenize_dev.py` ({m['date']}, commit {m['commit']}).", "",
             *[line for para in __doc__.split("\n\n")[2:5] for line in (_unwrap(para), "")],
             "Dev F1, tokens / words / sentences (the epoch chosen on dev):", "",
             "| treebank | split | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    totals = {v: dict.fromkeys(KEYS, 0) for v in names}
    for name, r in obj["treebanks"].items():
        cells = []
        for v in names:
            d = r["variants"][v]
            cells.append(" / ".join(f"{d[k]:.2f}" for k in KEYS))
            for k in KEYS:
                totals[v][k] += d["errors"][k]
        lines.append(f"| {name} | {r['split']} | " + " | ".join(cells) + " |")
    lines += ["", "Dev errors summed over the treebanks (tokens / words / sentences missed or added):", "",
              "| variant | tokens | words | sentences |", "|---|---|---|---|"]
    for v in names:
        lines.append(f"| {v} | " + " | ".join(str(totals[v][k]) for k in KEYS) + " |")
    default = "features=short,url"
    biased = [(name, r["variants"][default].get("sentence_bias")) for name, r in obj["treebanks"].items()]
    biased = [(name, b) for name, b in biased if b]
    if biased:
        lines += ["", f"The bias on sentence ends dev tried with the defaults (`{default}`; kept where the best "
                  "gains at least 1 point of dev sentences F1 and lowers neither words nor tokens; none tried "
                  "where dev sentences F1 is above 99). Dev sentences F1 with no bias, the bias kept (0: none), "
                  "and with each bias tried:", "",
                  "| treebank | no bias | kept | " + " | ".join(f"{float(b):+g}" for b in BIASES) + " |",
                  "|---|---|---|" + "---|" * len(BIASES)]
        for name, b in biased:
            tried = b["dev_sentences_with"]
            lines.append(f"| {name} | {b['dev_sentences_without']:.2f} | {b['bias']:+g} | "
                         + " | ".join(f"{tried[str(x)]:.2f}" if str(x) in tried else "-" for x in BIASES) + " |")
    plain = [v for v in names if v.startswith("features=") and "rules" not in v]
    best = min(plain, key=lambda v: (totals[v]["words"], totals[v]["tokens"]))
    lines += ["", f"Fewest words errors (then tokens) among the feature sets without the rules: `{best}` "
              "(the default is `features=short,url`; the rules group stays opt-in for English, since it runs "
              "the English rules as well)."]
    lines.append("")
    Path(out + ".md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS))
    ap.add_argument("--out", default=str(ROOT / "results" / "tokenize-dev"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    if args.report_only:
        import json

        write_report(json.loads(Path(args.out + ".json").read_text()), args.out)
        return 0
    names = [args.only] if args.only else list(TREEBANKS)
    obj = {"command": "python scripts/tokenize_dev.py", "machine": machine(),
           "variants": VARIANTS, "treebanks": {}}
    with tempfile.TemporaryDirectory(prefix="structkit-tokdev-") as tmp:
        for name in names:
            obj["treebanks"][name] = run_one(name, tmp)
    dump_json(obj, Path(args.out + ".json"))
    write_report(obj, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
