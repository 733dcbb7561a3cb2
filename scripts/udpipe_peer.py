"""UDPipe 1 as a peer on UD English ParTUT: its tagger (tokenizer=none, parser=none) and its parser
(Parsito; tokenizer=none, tagger=none, so it reads the gold UPOS/XPOS/FEATS of its input) trained
on train with dev as UDPipe's heldout data, with UDPipe 1's default training options otherwise
(method morphodita_parsito; each component's option string empty = its defaults). Both are scored
on test with structkit's own scoring: UPOS accuracy over words, and UAS/LAS under the CoNLL 2018
convention (every word; LAS on the universal part of DEPREL), the same function as
results/ud-parse.md (structkit.parse.labelled.label_scores). Writes results/udpipe-partut.json/.md.

    pip install -e '.[peers]'          # ufal.udpipe
    python scripts/udpipe_peer.py [--only tagger|parser] [--out results/udpipe-partut]

The two components train in two processes at once (one core each); each records its wall and
CPU time. Training is deterministic (UDPipe's default seed).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, read_udpipe  # noqa: E402
from structkit.config import resolve_data_path  # noqa: E402
from structkit.io.conllx import read_conllx  # noqa: E402
from structkit.parse.labelled import label_scores  # noqa: E402

UD = "ud-english-partut/en_partut-ud-{}.conllu"
# (tokenizer, tagger, parser) option strings: "none" leaves a component out, "" = its defaults.
COMPONENTS = {"tagger": ("none", "", "none"), "parser": ("none", "none", "")}


def run(component: str, tmp: str) -> dict:
    import ufal.udpipe as u

    tok, tag, par = COMPONENTS[component]
    train, dev = read_udpipe(resolve_data_path(UD.format("train"))), read_udpipe(resolve_data_path(UD.format("dev")))
    err = u.ProcessingError()
    t0, c0 = time.perf_counter(), time.process_time()
    data = u.Trainer.train("morphodita_parsito", train, dev, tok, tag, par, err)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if err.occurred():
        raise SystemExit(f"UDPipe {component} training failed: {err.message}")
    path = Path(tmp) / f"{component}.udpipe"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("latin-1"))
    model = u.Model.load(str(path))
    if model is None:
        raise SystemExit(f"UDPipe could not load the {component} model it trained")
    gold_path = resolve_data_path(UD.format("test"))
    pipe = u.Pipeline(model, "conllu", u.Pipeline.DEFAULT if component == "tagger" else u.Pipeline.NONE,
                      u.Pipeline.DEFAULT if component == "parser" else u.Pipeline.NONE, "conllu")
    t0 = time.perf_counter()
    out = pipe.process(Path(gold_path).read_text(encoding="utf-8"), err)
    run_secs = time.perf_counter() - t0
    if err.occurred():
        raise SystemExit(f"UDPipe {component} failed on test: {err.message}")
    pred_path = Path(tmp) / f"{component}.test.conllu"
    pred_path.write_text(out, encoding="utf-8")
    gold, pred = list(read_conllx(gold_path)), list(read_conllx(str(pred_path)))
    assert [g.forms for g in gold] == [p.forms for p in pred], "UDPipe changed the words"
    row = {"component": component, "options": {"tokenizer": tok, "tagger": tag or "(defaults)",
                                               "parser": par or "(defaults)"},
           "train_wall_seconds": round(wall, 1), "train_cpu_seconds": round(cpu, 1),
           "model_mb": round(path.stat().st_size / 2**20, 2), "test_seconds": round(run_secs, 2)}
    if component == "tagger":
        n = sum(len(g) for g in gold)
        right = sum(a == b for g, p in zip(gold, pred) for a, b in zip(g.upos, p.upos))
        row["test"] = {"upos": round(100.0 * right / n, 2), "words": n}
    else:
        res = label_scores(gold, [p.heads for p in pred], [p.deprels for p in pred])
        row["test"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in res.items()}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(COMPONENTS))
    ap.add_argument("--out", default=str(ROOT / "results" / "udpipe-partut"))
    args = ap.parse_args()
    try:
        import ufal.udpipe as u
    except ImportError:
        raise SystemExit("ufal.udpipe is not installed: pip install -e '.[peers]'")
    comps = [args.only] if args.only else list(COMPONENTS)
    with tempfile.TemporaryDirectory() as tmp:
        if len(comps) > 1:
            with mp.get_context("spawn").Pool(len(comps)) as pool:
                rows = pool.starmap(run, [(c, tmp) for c in comps])
        else:
            rows = [run(comps[0], tmp)]
    version = u.Version.current()
    obj = {"udpipe": f"{version.major}.{version.minor}.{version.patch}", "corpus": UD.format("{train,dev,test}"),
           "heldout": "dev", "machine": machine(),
           "command": "python scripts/udpipe_peer.py" + (f" --only {args.only}" if args.only else ""),
           "rows": rows}
    dump_json(obj, Path(args.out + ".json"))
    lines = [f"# UDPipe {obj['udpipe']} on UD English ParTUT (train, dev as heldout -> test)", "",
             f"`{obj['command']}` ({obj['machine']['date']}, commit {obj['machine']['commit']}, "
             f"{obj['machine']['cores']} cores shared with other jobs: wall times are upper bounds; CPU "
             "time is the training process's own).", "",
             "UDPipe 1's default training options (method morphodita_parsito, each component's option "
             "string empty); tokenizer=none. The tagger has parser=none; the parser has tagger=none "
             "and reads the test file's gold UPOS/XPOS/FEATS/LEMMA (as structkit's parser reads gold "
             "UPOS). Scored by structkit: UPOS accuracy over words; UAS/LAS over every word (CoNLL "
             "2018), LAS on the universal DEPREL, LAS full with subtypes.", "",
             "| component | train s (wall) | train s (CPU) | model MB | test UPOS | test UAS | test LAS | test LAS full |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r["test"]
        lines.append(f"| {r['component']} | {r['train_wall_seconds']} | {r['train_cpu_seconds']} | {r['model_mb']} | "
                     f"{t.get('upos', '-')} | {t.get('uas', '-')} | {t.get('las', '-')} | {t.get('las_full', '-')} |")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
