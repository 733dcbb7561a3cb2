"""Issue 29's acceptance: the CoNLL 2018 evaluation from raw text, structkit's pipeline beside
UDPipe 1's full pipeline (tokenizer, tagger and parser) trained on the same files.
Writes results/pipeline.json and results/pipeline.md.

    python scripts/pipeline_experiments.py [--only NAME ...] [--side both|structkit|udpipe]
        [--out results/pipeline] [--report-only]

For each treebank of ``scripts/tokenize_peer.py`` (train, dev where there is one, test):

* structkit: ``structkit train --task pipeline --train T [--dev D] --model M`` with the defaults
  (tokenizer, morphology tagger and lemmatizer, parser on gold or jackknifed predicted
  morphology as dev prefers; gold without dev), then
  ``structkit annotate -m M RAW`` on the test file's raw text, then ``structkit eval --task ud
  TEST SYSTEM --json``. Each is a new process; its wall and CPU seconds (``os.wait4``: user +
  system of the process and its children) are recorded. Words per second = the gold test words
  over the annotate process's seconds (wall and CPU), start-up and model loading included.
* UDPipe 1 (``ufal.udpipe``, the ``peers`` extra): ``Trainer.train("morphodita_parsito", train,
  dev as heldout (none where there is no dev), "", "", "")``, i.e. tokenizer, tagger and parser
  all with UDPipe 1's default options, in a process of its own (its training CPU seconds are
  ``time.process_time`` of that process). The trained model reads the same raw text through
  ``Pipeline(model, "tokenize", DEFAULT, DEFAULT, "conllu")`` (its own tokenizer and sentence
  splitter) and its CoNLL-U is scored by the same ``structkit eval --task ud``. Words per second
  = the gold test words over the seconds of ``Pipeline.process`` (model loaded beforehand).
  Trained UDPipe models and their training times are kept in build/pipeline-peer/ and reused
  by a later run unless ``--retrain`` is given (UDPipe's training is tens of CPU minutes).

The raw text is ``structkit.tokenizer.task.raw_text`` of the test file (each sentence's
``# text``; a paragraph's sentences joined by a space; a blank line between paragraphs).
Each run updates its own treebanks' rows in the .json and rewrites the .md from the whole, with
the machine facts, load average and commit of every run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, read_udpipe  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

METRICS = ("Tokens", "Words", "Sentences", "UPOS", "UFeats", "Lemmas", "UAS", "LAS", "MLAS", "BLEX")
TARGETS = ("LAS", "MLAS", "BLEX")
PEER_DIR = ROOT / "build" / "pipeline-peer"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _measured(cmd: list[str], log: Path | None = None) -> dict:
    """Run ``cmd`` as a new process: wall and CPU seconds (``os.wait4``), peak RSS, stdout."""
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=_env(), stdout=so, stderr=se, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        so.seek(0)
        se.seek(0)
        out, err = so.read().decode(errors="replace"), se.read().decode(errors="replace")
        if log is not None:
            log.write_text(out + err)
        if code != 0:
            raise RuntimeError(f"{' '.join(map(str, cmd[2:]))} exited with {code}: "
                               + " | ".join(err.strip().splitlines()[-3:]))
        return {"wall_seconds": round(wall, 2), "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2),
                "peak_mb": round(ru.ru_maxrss / 1024, 1), "stdout": out}


def _sk(*args) -> list[str]:
    return [sys.executable, "-m", "structkit", *map(str, args)]


# --slice: treebank -> its sliced (train, dev, test), and the slice's size
_SLICED: dict[str, tuple[str, str | None, str]] = {}
_SLICE: list[int] = []


def _files(name: str) -> tuple[str, str | None, str]:
    if name in _SLICED:
        return _SLICED[name]
    train_stem, dev_stem, test_stem = TREEBANKS[name]
    return (_path(name, train_stem), _path(name, dev_stem) if dev_stem else None, _path(name, test_stem))


def _score(test: str, system: Path) -> dict:
    ev = _measured(_sk("eval", "--task", "ud", test, system, "--json"))
    return json.loads(ev["stdout"])


def _summary(scores: dict) -> dict:
    """The F1 of each CoNLL 2018 metric, from ``eval --task ud --json``."""
    out = {}
    for m in METRICS:
        v = scores.get(m, scores.get(m.lower()))
        if isinstance(v, dict):
            v = v.get("f1", v.get("F1"))
        out[m] = round(float(v), 2) if v is not None else None
    return out


def _gold_words(scores: dict) -> int:
    return int(scores["words"]["gold"])


# ---------------------------------------------------------------- structkit

def ours_one(name: str, tmp: Path, log_dir: Path) -> dict:
    from structkit.tokenizer.task import raw_text

    train, dev, test = _files(name)
    model = tmp / f"{name}.skm"
    raw = tmp / f"{name}.txt"
    raw.write_text(raw_text(test), encoding="utf-8")
    system = tmp / f"{name}.structkit.conllu"
    tr = _measured(_sk("train", "--task", "pipeline", "--train", train, *(["--dev", dev] if dev else []),
                       "--model", model), log_dir / f"{name}.structkit-train.log")
    an = _measured(_sk("annotate", "-m", model, raw, "-o", system, "-j", "1"))
    scores = _score(test, system)
    words = _gold_words(scores)
    try:
        sp = _measured([sys.executable, __file__, "--speed", str(model), str(raw)])
        cpu, wall = json.loads(sp["stdout"])
        speed = {"inprocess_cpu_seconds": cpu, "inprocess_wall_seconds": wall,
                 "inprocess_words_per_cpu_second": round(words / cpu),
                 "inprocess_words_per_wall_second": round(words / wall)}
    except RuntimeError as exc:   # the scores stand; the table shows "-" for this speed
        speed = {"inprocess_error": str(exc)}
    return speed | {"scores": _summary(scores), "eval": scores, "gold_words": words,
            "train_cpu_seconds": tr["cpu_seconds"], "train_wall_seconds": tr["wall_seconds"],
            "train_peak_mb": tr["peak_mb"], "annotate_cpu_seconds": an["cpu_seconds"],
            "annotate_wall_seconds": an["wall_seconds"], "annotate_peak_mb": an["peak_mb"],
            "words_per_cpu_second": round(words / an["cpu_seconds"]),
            "words_per_wall_second": round(words / an["wall_seconds"]),
            "model_mb": round(model.stat().st_size / 2**20, 2)}


def ours_speed(model: str, raw: str) -> None:
    """In this process: ``structkit.load(model).to_conllu(text)`` on the whole raw text, timed
    after loading the model and a warm-up call on its first paragraph (numba's compiled code
    loaded), as UDPipe's ``Pipeline.process`` is timed; prints [CPU seconds, wall seconds]."""
    import structkit

    text = Path(raw).read_text(encoding="utf-8")
    nlp = structkit.load(model)
    nlp.to_conllu(text.split("\n\n")[0] + "\n")
    t0, c0 = time.perf_counter(), time.process_time()
    nlp.to_conllu(text)
    print(json.dumps([round(time.process_time() - c0, 3), round(time.perf_counter() - t0, 3)]))


# ---------------------------------------------------------------- UDPipe 1

def peer_train(name: str, out_dir: Path) -> None:
    """In this process: UDPipe 1's full pipeline with default options; writes NAME.udpipe and
    NAME.train.json (training seconds) into out_dir."""
    import ufal.udpipe as u

    train, dev, _ = _files(name)
    tr, held = read_udpipe(train), (read_udpipe(dev) if dev else u.Sentences())
    err = u.ProcessingError()
    t0, c0 = time.perf_counter(), time.process_time()
    data = u.Trainer.train("morphodita_parsito", tr, held, "", "", "", err)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if err.occurred():
        raise SystemExit(f"UDPipe training failed: {err.message}")
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f"{name}.udpipe.tmp"
    tmp.write_bytes(data if isinstance(data, bytes) else data.encode("latin-1"))
    tmp.rename(out_dir / f"{name}.udpipe")
    dump_json({"train_cpu_seconds": round(cpu, 1), "train_wall_seconds": round(wall, 1),
               "train_sentences": len(tr), "heldout_sentences": len(held),
               "options": ["morphodita_parsito", "", "", ""],
               "version": "{0.major}.{0.minor}.{0.patch}".format(u.Version.current()),
               "loadavg_after": [round(x, 2) for x in os.getloadavg()],
               "finished": time.strftime("%Y-%m-%d %H:%M:%S")}, out_dir / f"{name}.train.json")


def peer_one(name: str, tmp: Path, log_dir: Path, retrain: bool, peer_dir: Path) -> dict:
    import ufal.udpipe as u

    from structkit.tokenizer.task import raw_text

    model_path, facts = peer_dir / f"{name}.udpipe", peer_dir / f"{name}.train.json"
    cached = not retrain and model_path.exists() and facts.exists()
    if not cached:
        _measured([sys.executable, __file__, "--peer-train", name, "--peer-dir", str(peer_dir),
                   *(["--slice", str(_SLICE[0])] if _SLICE else [])],
                  log_dir / f"{name}.udpipe-train.log")
    res = json.loads(facts.read_text())
    _, _, test = _files(name)
    model = u.Model.load(str(model_path))
    if model is None:
        raise RuntimeError(f"UDPipe cannot load {model_path}")
    pipe = u.Pipeline(model, "tokenize", u.Pipeline.DEFAULT, u.Pipeline.DEFAULT, "conllu")
    err = u.ProcessingError()
    text = raw_text(test)
    t0, c0 = time.perf_counter(), time.process_time()
    out = pipe.process(text, err)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if err.occurred():
        raise RuntimeError(f"UDPipe processing: {err.message}")
    system = tmp / f"{name}.udpipe.conllu"
    system.write_text(out, encoding="utf-8")
    scores = _score(test, system)
    words = _gold_words(scores)
    return res | {"scores": _summary(scores), "eval": scores, "gold_words": words, "trained_earlier": cached,
                  "annotate_cpu_seconds": round(cpu, 2), "annotate_wall_seconds": round(wall, 2),
                  "words_per_cpu_second": round(words / cpu), "words_per_wall_second": round(words / wall),
                  "model_mb": round(model_path.stat().st_size / 2**20, 2)}


def _slice(src: str, dst: Path, n: int) -> str:
    """The first n sentences of a CoNLL-U file, comments kept (for a quick check of the script)."""
    blocks = Path(src).read_text(encoding="utf-8").split("\n\n")
    dst.write_text("\n\n".join(b for b in blocks[:n] if b.strip()) + "\n\n", encoding="utf-8")
    return str(dst)


def _slice_treebank(name: str, n: int, tmp: Path) -> None:
    """--slice: make _files(name) give the first n sentences of train and test, n // 4 of dev."""
    tmp.mkdir(parents=True, exist_ok=True)
    train, dev, test = _files(name)
    _SLICED[name] = (_slice(train, tmp / f"{name}.train.conllu", n),
                     _slice(dev, tmp / f"{name}.dev.conllu", max(1, n // 4)) if dev else None,
                     _slice(test, tmp / f"{name}.test.conllu", n))
    _SLICE[:] = [n]


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _speeds(x: dict) -> str:
    """words/s (CPU) | words/s (wall) | words/s of the whole annotate process (structkit only)."""
    if "annotate_peak_mb" not in x:   # UDPipe: Pipeline.process, the model loaded
        return f"{x['words_per_cpu_second']} | {x['words_per_wall_second']} | -"
    if "inprocess_words_per_cpu_second" not in x:
        return f"- | - | {x['words_per_wall_second']}"
    return (f"{x['inprocess_words_per_cpu_second']} | {x['inprocess_words_per_wall_second']}"
            f" | {x['words_per_wall_second']}")


def write_report(obj: dict, out: str) -> None:
    rows, below, ratios, notrun = [], [], [], []
    head = ("| treebank | system | " + " | ".join(METRICS)
            + " | train s (CPU) | train s (wall) | words/s (CPU) | words/s (wall) | words/s, process (wall) | model MB |")
    for name in TREEBANKS:
        r = obj["treebanks"].get(name, {})
        ours, peer = r.get("structkit"), r.get("udpipe")
        if not ours and not peer:
            notrun.append(name)
            continue
        for label, x in (("structkit", ours), ("UDPipe 1", peer)):
            if x is None:
                rows.append(f"| {name} | {label} | not run |" + " |" * (len(METRICS) + 5))
            elif "error" in x:
                rows.append(f"| {name} | {label} | failed: {x['error'][:100]} |" + " |" * (len(METRICS) + 5))
            else:
                rows.append(f"| {name} | {label} | " + " | ".join(_fmt(x["scores"][m]) for m in METRICS)
                            + f" | {x['train_cpu_seconds']:.0f} | {x['train_wall_seconds']:.0f} | "
                            + _speeds(x) + f" | {x['model_mb']} |")
        bad = [lab for lab, x in (("structkit", ours), ("UDPipe 1", peer)) if not x or "error" in x]
        if bad:
            below.append(f"{name}: no comparison ({', '.join(bad)} not run or failed)")
        else:
            for m in TARGETS:
                if ours["scores"][m] < peer["scores"][m]:
                    below.append(f"{name} {m} {ours['scores'][m]:.2f} < {peer['scores'][m]:.2f}")
            ratios.append(f"{name} {ours['train_cpu_seconds'] / peer['train_cpu_seconds']:.3f}"
                          f" ({ours['train_cpu_seconds']:.0f} / {peer['train_cpu_seconds']:.0f} CPU s)")
    runs = []
    for name in TREEBANKS:
        for side in ("structkit", "udpipe"):
            x = obj["treebanks"].get(name, {}).get(side)
            if x and "run" in x:
                m = x["run"]["machine"]
                runs.append(f"- {name}, {side}: `{x['run']['command']}` ({m['date']}, commit {m['commit']}, "
                            f"{m['cpu']}, {m['cores']} cores shared with other jobs; load average before "
                            f"{x['run']['loadavg_before']}"
                            + (f", UDPipe {x['version']}; its training"
                               + (" (an earlier `--peer-train` process, model kept in build/pipeline-peer)"
                                  if x.get("trained_earlier", True) else "")
                               + f" finished {x['finished']} with load average "
                               f"{x['loadavg_after']} after it" if side == "udpipe" and "finished" in x else "")
                            + ")")
    lines = [
        "# Raw text to CoNLL-U: structkit's pipeline and UDPipe 1's full pipeline (CoNLL 2018 evaluation)", "",
        "Written by `scripts/pipeline_experiments.py` (issue 29). Both systems train on the same "
        "files (train, with dev for model selection / as UDPipe's heldout data), read the test file's "
        "raw text (`structkit.tokenizer.task.raw_text`: each sentence's `# text`, paragraphs apart) "
        "and are scored by the same `structkit eval --task ud` (CoNLL 2018 F1 over aligned words).", "",
        "structkit: `structkit train --task pipeline` with its defaults (tokenizer, morphology tagger "
        "and lemmatizer, parser on gold or jackknifed predicted morphology as dev prefers, gold without dev), "
        "`structkit annotate -j 1`. "
        "UDPipe 1: `Trainer.train(\"morphodita_parsito\", train, dev, \"\", \"\", \"\")`, i.e. "
        "tokenizer, tagger and parser with UDPipe 1's default options, then "
        "`Pipeline(model, \"tokenize\", DEFAULT, DEFAULT, \"conllu\")` on the raw text.", "",
        "Training seconds: CPU is the fair figure on this shared machine (structkit: user + system "
        "time of the training process and its children, `os.wait4`; UDPipe: `time.process_time` of "
        "its training process); wall seconds are upper bounds. Words per second: gold test words "
        "over the time to annotate the whole raw text with the model already loaded, one thread "
        "(UDPipe: `Pipeline.process`; structkit: `structkit.load(model).to_conllu(text)` after a "
        "warm-up call on the first paragraph). \"words/s, process\" is structkit's whole "
        "`structkit annotate -j 1` process: start-up and model loading included.", "",
        "Trained on the dev file (the data directory has no training file for them), with no "
        "dev selection and no heldout data for either system: "
        + ", ".join(n for n, (_, d, _) in TREEBANKS.items() if d is None) + ".", "",
        head, "|---|---|" + "---|" * (len(METRICS) + 6), *rows, "",
        "**Below UDPipe 1 on LAS/MLAS/BLEX:** " + ("; ".join(below) if below else "none")
        + ("" if rows else " (nothing run)") + ".", "",
        "**Training CPU time, structkit / UDPipe 1 (target at most 0.2):** "
        + ("; ".join(ratios) if ratios else "no treebank with both") + ".", "",
    ]
    if notrun:
        lines += ["**Not run:** " + ", ".join(notrun) + " (`--only NAME` adds a treebank's rows; "
                  "UDPipe 1's training takes 10-25 CPU minutes per treebank here).", ""]
    lines += ["Runs:", "", *runs, ""]
    dump_json(obj, Path(out + ".json"))
    Path(out + ".md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=list(TREEBANKS), help="a treebank (repeatable)")
    ap.add_argument("--side", choices=("both", "structkit", "udpipe"), default="both")
    ap.add_argument("--out", default="results/pipeline")
    ap.add_argument("--retrain", action="store_true", help="retrain UDPipe even when build/pipeline-peer has its model")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    ap.add_argument("--slice", type=int, help="a quick check: the first N sentences of each file (write --out elsewhere)")
    ap.add_argument("--peer-train", help=argparse.SUPPRESS)
    ap.add_argument("--speed", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--peer-dir", default=str(PEER_DIR), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.speed:
        ours_speed(*args.speed)
        return 0
    if args.peer_train:
        if args.slice:
            _slice_treebank(args.peer_train, args.slice, Path(args.peer_dir))
        peer_train(args.peer_train, Path(args.peer_dir))
        return 0
    out = Path(args.out)
    if args.report_only:
        _save({}, args.out)
        return 0
    mine: dict = {}
    if args.side != "structkit":
        try:
            import ufal.udpipe  # noqa: F401
        except ImportError:
            raise SystemExit("UDPipe's side needs ufal.udpipe: pip install -e '.[peers]'")
    command = "python scripts/pipeline_experiments.py " + " ".join(sys.argv[1:])
    run = {"command": command.strip(), "machine": machine(),
           "loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    log_dir = ROOT / "build" / "pipeline-logs" / out.name
    log_dir.mkdir(parents=True, exist_ok=True)
    peer_dir = Path(args.peer_dir) if not args.slice else log_dir / "peer"
    sides = ("structkit", "udpipe") if args.side == "both" else (args.side,)
    with tempfile.TemporaryDirectory(prefix="pipeline-") as tmp:
        for name in args.only or list(TREEBANKS):
            if args.slice:
                _slice_treebank(name, args.slice, Path(tmp))
            for side in sides:
                print(f"{time.strftime('%H:%M:%S')} {name} {side}", flush=True)
                try:
                    if side == "structkit":
                        res = ours_one(name, Path(tmp), log_dir)
                    else:
                        res = peer_one(name, Path(tmp), log_dir, args.retrain, peer_dir)
                except Exception as exc:  # recorded in the results, not fatal to the whole run
                    res = {"error": f"{type(exc).__name__}: {exc}"}
                mine[(name, side)] = res | {"run": run}
                print(f"{time.strftime('%H:%M:%S')} {name} {side}: "
                      + (res.get("error") or " ".join(f"{m} {res['scores'][m]}" for m in METRICS)), flush=True)
                _save(mine, args.out)
    return 0


def _save(mine: dict, out: str) -> None:
    """Merge this run's rows into the .json as it is now on disk (another run may have written
    its own rows meanwhile) and rewrite the .md."""
    path = Path(out + ".json")
    obj = json.loads(path.read_text()) if path.exists() else {"treebanks": {}}
    for (name, side), res in mine.items():
        obj["treebanks"].setdefault(name, {})[side] = res
    write_report(obj, out)


if __name__ == "__main__":
    sys.exit(main())
