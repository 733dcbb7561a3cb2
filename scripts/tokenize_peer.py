"""UDPipe 1's tokenizer as the peer of issue 27: trained and scored on every UD treebank we hold.

    pip install -e '.[peers]'          # ufal.udpipe
    python scripts/tokenize_peer.py [--only NAME] [--out results/tokenize-udpipe] [--jobs 2]

For each treebank UDPipe 1 trains its tokenizer only (method morphodita_parsito, tokenizer
options "" = UDPipe 1's defaults, i.e. 100 epochs; tagger=none, parser=none) on the training
file, with the dev file as UDPipe's heldout data where the treebank has train and dev. Chinese
GSDSimp, Finnish TDT and English EWT have only dev and test here: they train on dev and have
no heldout data; Galician TreeGal and North Sami Giella have only train and test: they train on
train with no heldout data. The trained model then tokenizes the raw text of the test file, rebuilt by
scripts/tokenize_eval.py's ``raw_text`` (each sentence's ``# text``, a paragraph's sentences
joined by a space, a blank line at ``# newpar``/``# newdoc``), the very text structkit's own
tokenizer is scored on. UDPipe gets the whole text at once and splits sentences itself; its
CoNLL-U output is scored by ``structkit.eval.tokenize.evaluate_tokenization`` (the CoNLL 2018
alignment: tokens, words with multiword tokens expanded, sentences).

Recorded per treebank: precision/recall/F1 of tokens, words and sentences; training wall and
CPU seconds (``time.process_time`` of the training process; the machine is shared, so CPU
time is the fair figure); tokenizing speed in bytes of UTF-8 text per CPU second and per wall
second (UDPipe's tokenizer alone: ``setText`` and ``nextSentence`` until the text is used up,
no output formatting; one timing repeats the test text until at least 0.5 s of wall time has
passed, the best of three timings is kept); the number of training sentences and characters
(of the training file's rebuilt raw text). A treebank on which UDPipe fails gets its error in
the results instead of scores.

Each treebank runs in a process of its own, at most ``--jobs`` (2) at a time; its UDPipe
training log goes to build/tokenize-peer-logs/tokenize-udpipe/NAME.log (named after --out), from
which the epochs run and kept are read. UDPipe's tokenizer trains 100 epochs at about 3 CPU
seconds each here, whatever the treebank's size (fewer where the heldout data stops it early):
2-6 CPU minutes per treebank, 34 CPU minutes in all; on the shared 2-core machine the whole run
took 52 minutes of wall time.
``--report-only`` rewrites the .md from the .json. Writes results/tokenize-udpipe.json and .md.
``--only NAME`` (repeatable) runs the named treebanks and keeps the other treebanks' rows of an
existing .json, each with the run that measured it (``"run"``: command, date, commit).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, read_udpipe  # noqa: E402
from structkit.config import resolve_data_path  # noqa: E402
from structkit.eval.tokenize import METRICS, evaluate_tokenization  # noqa: E402
from tokenize_eval import raw_text  # noqa: E402

# name -> (train, heldout or None, test), relative to the data directory, in the order the runs
# start: the longest training first, except Tamil (small), second, as an early end-to-end check.
TREEBANKS = {
    "ud-italian-partut": ("it_partut-ud-train", "it_partut-ud-dev", "it_partut-ud-test"),
    "ud-tamil-ttb": ("ta_ttb-ud-train", "ta_ttb-ud-dev", "ta_ttb-ud-test"),
    "ud-english-partut": ("en_partut-ud-train", "en_partut-ud-dev", "en_partut-ud-test"),
    "ud-turkish-imst": ("tr_imst-ud-train", "tr_imst-ud-dev", "tr_imst-ud-test"),
    "ud-finnish-tdt": ("fi_tdt-ud-dev", None, "fi_tdt-ud-test"),
    "ud-english-ewt": ("en_ewt-ud-dev", None, "en_ewt-ud-test"),
    "ud-vietnamese-vtb": ("vi_vtb-ud-train", "vi_vtb-ud-dev", "vi_vtb-ud-test"),
    "ud-chinese-gsdsimp": ("zh_gsdsimp-ud-dev", None, "zh_gsdsimp-ud-test"),
    # issue 43's treebanks (SOURCES.md): Galician TreeGal and North Sami Giella have train and
    # test only, as in the CoNLL 2018 shared task, so they train without heldout data
    "ud-coptic-scriptorium": ("cop_scriptorium-ud-train", "cop_scriptorium-ud-dev", "cop_scriptorium-ud-test"),
    "ud-afrikaans-afribooms": ("af_afribooms-ud-train", "af_afribooms-ud-dev", "af_afribooms-ud-test"),
    "ud-french-partut": ("fr_partut-ud-train", "fr_partut-ud-dev", "fr_partut-ud-test"),
    "ud-telugu-mtg": ("te_mtg-ud-train", "te_mtg-ud-dev", "te_mtg-ud-test"),
    "ud-galician-treegal": ("gl_treegal-ud-train", None, "gl_treegal-ud-test"),
    "ud-north-sami-giella": ("sme_giella-ud-train", None, "sme_giella-ud-test"),
}
OPTIONS = ("morphodita_parsito", "", "none", "none")  # method, tokenizer, tagger, parser
MIN_TIMING = 0.5  # seconds of wall time one speed timing lasts at least


def _path(name: str, stem: str) -> str:
    return str(resolve_data_path(f"{name}/{stem}.conllu"))


def tokenize_all(model, text: str, keep: bool):
    """Tokenize ``text`` with a fresh tokenizer; the sentences when ``keep``, else their count."""
    import ufal.udpipe as u

    tok = model.newTokenizer(model.DEFAULT)
    tok.setText(text)
    err = u.ProcessingError()
    out, n = [], 0
    s = u.Sentence()
    while tok.nextSentence(s, err):
        n += 1
        if keep:
            out.append(s)
            s = u.Sentence()
    if err.occurred():
        raise RuntimeError(f"tokenizing: {err.message}")
    return out if keep else n


def speed(model, text: str) -> dict:
    """Bytes of UTF-8 text per CPU second and per wall second, the best of three timings."""
    n_bytes = len(text.encode("utf-8"))
    best = {"bytes_per_cpu_second": 0.0, "bytes_per_wall_second": 0.0}
    timings = []
    for _ in range(3):
        reps, t0, c0 = 0, time.perf_counter(), time.process_time()
        while True:
            tokenize_all(model, text, keep=False)
            reps += 1
            wall = time.perf_counter() - t0
            if wall >= MIN_TIMING:
                break
        cpu = time.process_time() - c0
        timings.append({"repeats": reps, "wall": round(wall, 4), "cpu": round(cpu, 4)})
        best["bytes_per_cpu_second"] = max(best["bytes_per_cpu_second"], reps * n_bytes / cpu)
        best["bytes_per_wall_second"] = max(best["bytes_per_wall_second"], reps * n_bytes / wall)
    return {**{k: round(v) for k, v in best.items()}, "text_bytes": n_bytes, "timings": timings}


def run_one(name: str, workdir: str, tok_opts: str = "") -> dict:
    """Train, tokenize and score one treebank (in this process)."""
    import ufal.udpipe as u

    train_stem, held_stem, test_stem = TREEBANKS[name]
    train_path, test_path = _path(name, train_stem), _path(name, test_stem)
    held_path = _path(name, held_stem) if held_stem else None
    train = read_udpipe(train_path)
    held = read_udpipe(held_path) if held_path else u.Sentences()
    res = {"treebank": name, "train": f"{name}/{train_stem}.conllu",
           "heldout": f"{name}/{held_stem}.conllu" if held_stem else None,
           "test": f"{name}/{test_stem}.conllu",
           "train_sentences": len(train), "train_characters": len(raw_text(train_path)),
           "heldout_sentences": len(held)}
    method, _, tag_opts, par_opts = OPTIONS
    err = u.ProcessingError()
    t0, c0 = time.perf_counter(), time.process_time()
    blob = u.Trainer.train(method, train, held, tok_opts, tag_opts, par_opts, err)
    res["train_wall_seconds"] = round(time.perf_counter() - t0, 2)
    res["train_cpu_seconds"] = round(time.process_time() - c0, 2)
    if err.occurred():
        raise RuntimeError(f"training: {err.message}")
    model_path = Path(workdir) / f"{name}.udpipe"
    model_path.write_bytes(blob)
    res["model_bytes"] = len(blob)
    model = u.Model.load(str(model_path))
    if model is None:
        raise RuntimeError(f"cannot load the trained model {model_path}")

    text = raw_text(test_path)
    sentences = tokenize_all(model, text, keep=True)
    out = u.OutputFormat.newOutputFormat("conllu")
    system = "".join(out.writeSentence(s) for s in sentences) + out.finishDocument()
    sys_path = Path(workdir) / f"{name}.system.conllu"
    sys_path.write_text(system, encoding="utf-8")
    res["scores"] = evaluate_tokenization(test_path, str(sys_path))
    res["test_characters"] = len(text)
    res["speed"] = speed(model, text)
    return res


def worker(name: str, json_out: str, workdir: str, tok_opts: str) -> None:
    try:
        res = run_one(name, workdir, tok_opts)
    except Exception as exc:  # recorded in the results, not fatal to the whole run
        res = {"treebank": name, "error": f"{type(exc).__name__}: {exc}"}
    Path(json_out).write_text(json.dumps(res, indent=2))


def spawn(name: str, workdir: str, log_dir: Path, tok_opts: str) -> dict:
    """Run one treebank in a new process; its UDPipe training log goes to log_dir/NAME.log."""
    json_out = Path(workdir) / f"{name}.json"
    log = log_dir / f"{name}.log"
    t0 = time.perf_counter()
    print(f"{time.strftime('%H:%M:%S')} start {name} (log {log})", flush=True)
    with open(log, "w") as fh:
        p = subprocess.run([sys.executable, __file__, "--worker", name, "--workdir", workdir,
                            "--json", str(json_out),
                            "--tokenizer-options", tok_opts], stdout=fh, stderr=subprocess.STDOUT)
    if json_out.exists():
        res = json.loads(json_out.read_text())
    else:
        tail = log.read_text(errors="replace").splitlines()[-5:]
        res = {"treebank": name, "error": f"worker exited with {p.returncode}: " + " | ".join(tail)}
    res["process_wall_seconds"] = round(time.perf_counter() - t0, 1)
    res.update(training_log(log))
    state = res.get("error") or " ".join(f"{m} {res['scores'][m]['f1']:.2f}" for m in METRICS)
    print(f"{time.strftime('%H:%M:%S')} done {name}: {state}", flush=True)
    return res


def logs(out: str) -> Path:
    """Where the training logs of the run writing ``out`` go: build/tokenize-peer-logs/<name of out>."""
    return ROOT / "build" / "tokenize-peer-logs" / Path(out).name


def training_log(log: Path) -> dict:
    """What UDPipe's training log says: the options it used, the epochs it ran (it stops early
    after 30 epochs without improvement on the heldout data) and the epoch it kept."""
    out: dict = {}
    if not log.exists():
        return out
    text = log.read_text(errors="replace")
    out["epochs_run"] = len(re.findall(r"^Epoch \d+,", text, re.M))
    if m := re.search(r"^Choosing parameters from epoch (\d+)", text, re.M):
        out["epoch_kept"] = int(m.group(1))  # no such line without heldout: the last epoch is kept
    out["stopped_early"] = "Stopping after" in text
    opts = re.search(r"^Training tokenizer with the following options: (.*?)\n(.*?)\n(.*?)\n", text, re.M)
    if opts:
        out["udpipe_options"] = ", ".join(x.strip() for x in opts.groups())
    return out


def earlier_rows(json_path: Path, names: list, more=lambda old: {}) -> dict:
    """The rows of an existing results file for the treebanks not in ``names``, each stamped with
    the run that measured it (a row from before rows carried their run gets the file's own:
    its command, date and commit, and what ``more(file)`` adds)."""
    if not json_path.exists():
        return {}
    old = json.loads(json_path.read_text())
    run = {"command": old.get("command"), "date": old.get("machine", {}).get("date"),
           "commit": old.get("machine", {}).get("commit"), **more(old)}
    return {n: {**r, "run": r.get("run", run)} for n, r in old.get("treebanks", {}).items() if n not in names}


def mark(r: dict) -> str:
    """* = trained on dev (no train file here), + = trained on train with no heldout (no dev file)."""
    if "error" in r or r.get("heldout"):
        return ""
    return "*" if "-ud-dev." in r.get("train", "") else "+"


def _mb(x: float) -> str:
    return f"{x / 1e6:.2f}"


def write_report(obj: dict, out: str) -> None:
    m = obj["machine"]
    lines = [
        f"# UDPipe {obj['udpipe_version']} tokenizer on UD treebanks (issue 27's peer)", "",
        f"`{obj['command']}` ({m['date']}, commit {m['commit']}, {m['cpu']}, {m['cores']} cores "
        f"shared with other jobs; load average before the run {obj['loadavg_before']}; "
        f"{obj['jobs']} treebanks at a time; {'whole run' if obj['finished'] else 'so far'} "
        f"{obj['total_wall_seconds'] / 60:.1f} min wall).", "",
        "UDPipe 1's tokenizer only, trained with its defaults (method morphodita_parsito, tokenizer "
        "options \"\", tagger=none, parser=none) on the training file with dev as heldout, or on dev "
        "with no heldout where only dev and test are here (marked *), or on the training file with no heldout where only train and test are here (marked +). It tokenizes the test file's raw "
        "text as scripts/tokenize_eval.py rebuilds it (paragraphs from `# newpar`/`# newdoc`, sentences "
        "joined by a space) and splits sentences itself; scored by structkit.eval.tokenize (CoNLL 2018 "
        "alignment). F1 in %. Train CPU s = time.process_time of the training process (wall time is "
        "inflated by other jobs on the machine). Speed = MB (10^6 bytes) of UTF-8 text per CPU second "
        "and per wall second, UDPipe's tokenizer alone, best of 3 timings on the test text. Epochs: UDPipe's "
        "default is 100; with heldout data it stops after 30 epochs without improvement and keeps the "
        "best epoch's parameters (without heldout it runs all 100 and keeps the last).", "",
        "| treebank | train sents | train chars | tokens F1 | words F1 | sentences F1 "
        "| train s (CPU) | train s (wall) | epochs run (kept) | MB/s (CPU) | MB/s (wall) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in obj["treebanks"].items():
        star = mark(r)
        if "error" in r:
            lines.append(f"| {name} | error: {r['error'][:200]} ||||||||||")
            continue
        s = r["scores"]
        lines.append(
            f"| {name}{star} | {r['train_sentences']:,} | {r['train_characters']:,} | "
            f"{s['tokens']['f1']:.2f} | {s['words']['f1']:.2f} | {s['sentences']['f1']:.2f} | "
            f"{r['train_cpu_seconds']:.0f} | {r['train_wall_seconds']:.0f} | "
            f"{r.get('epochs_run', '?')} ({r.get('epoch_kept', 'last')}) | "
            f"{_mb(r['speed']['bytes_per_cpu_second'])} | {_mb(r['speed']['bytes_per_wall_second'])} |")
    lines += ["", "Precision / recall (tokens, words, sentences):", "",
              "| treebank | tokens P | tokens R | words P | words R | sentences P | sentences R |",
              "|---|---|---|---|---|---|---|"]
    for name, r in obj["treebanks"].items():
        if "error" in r:
            continue
        s = r["scores"]
        lines.append(f"| {name} | " + " | ".join(
            f"{s[k]['precision']:.2f} | {s[k]['recall']:.2f}" for k in ("tokens", "words", "sentences")) + " |")
    earlier: dict = {}
    for name, r in obj["treebanks"].items():
        run = r.get("run")
        if run and run.get("date") != m["date"]:
            earlier.setdefault((run["command"], run["date"], run["commit"]), []).append(name)
    for (command, date, commit), names in earlier.items():
        lines += ["", f"Kept from an earlier run (`{command}`, {date}, commit {commit}): {', '.join(names)}."]
    missing = [n for n in obj["requested"] if n not in obj["treebanks"]]
    if missing:
        lines += ["", f"Not finished when this was written: {', '.join(missing)}."]
    Path(out + ".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS), action="append",
                    help="run this treebank (repeatable); the other treebanks' rows of an existing "
                         ".json are kept")
    ap.add_argument("--out", default=str(ROOT / "results" / "tokenize-udpipe"),
                    help="output prefix (.json and .md are added)")
    ap.add_argument("--jobs", type=int, default=2, help="treebanks at a time (default 2)")
    ap.add_argument("--tokenizer-options", default="",
                    help="UDPipe tokenizer options (default \"\" = UDPipe's defaults; e.g. "
                         "epochs=1 for a quick check of the pipeline)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the .md from the stored .json (adding what the training logs in "
                         "build/tokenize-peer-logs/<name of --out> say, where the .json lacks it)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.json, args.workdir, args.tokenizer_options)
        return
    if args.report_only:
        obj = json.loads(Path(args.out + ".json").read_text())
        for name, r in obj["treebanks"].items():
            for k, v in training_log(logs(args.out) / f"{name}.log").items():
                r.setdefault(k, v)
        dump_json(obj, Path(args.out + ".json"))
        write_report(obj, args.out)
        print(Path(args.out + ".md").read_text())
        return
    import ufal.udpipe as u

    names = list(dict.fromkeys(args.only)) if args.only else list(TREEBANKS)
    loadavg = [round(x, 2) for x in os.getloadavg()]
    info = machine()
    log_dir = logs(args.out)
    log_dir.mkdir(parents=True, exist_ok=True)
    argv = " ".join(sys.argv[1:])
    obj = {"command": f"python scripts/tokenize_peer.py{' ' + argv if argv else ''}",
           "machine": info, "loadavg_before": loadavg,
           "udpipe_version": getattr(u, "__version__", "?"), "options": dict(zip(
               ("method", "tokenizer", "tagger", "parser"),
               (OPTIONS[0], args.tokenizer_options, *OPTIONS[2:]))),
           "jobs": args.jobs, "requested": names, "finished": False, "treebanks": {}}
    this_run = {"command": obj["command"], "date": info["date"], "commit": info["commit"]}
    kept = earlier_rows(Path(args.out + ".json"), names)
    t0 = time.perf_counter()

    def save() -> None:  # after every treebank, so that a cut-short run keeps what is done
        obj["total_wall_seconds"] = round(time.perf_counter() - t0, 1)
        rows = {**kept, **{n: {**done[n], "run": this_run} for n in names if n in done}}
        obj["treebanks"] = {n: rows[n] for n in [*TREEBANKS, *rows] if n in rows}
        dump_json(obj, Path(args.out + ".json"))
        write_report(obj, args.out)

    done: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="tokpeer-") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(spawn, n, tmp, log_dir, args.tokenizer_options) for n in names]
            for fut in as_completed(futures):
                res = fut.result()
                done[res["treebank"]] = res
                save()
    obj["finished"] = True
    save()
    print(Path(args.out + ".md").read_text())


if __name__ == "__main__":
    main()
