"""Issue 29's acceptance: the CoNLL 2018 evaluation from raw text, structkit's pipeline beside
UDPipe 1's full pipeline (tokenizer, tagger and parser) trained on the same files; issue 38:
seeds, cold and warm training times and the published CoNLL 2018 figures beside them.
Writes results/pipeline.json and results/pipeline.md.

    python scripts/pipeline_experiments.py [--only NAME ...] [--side both|structkit|udpipe]
        [--seeds N] [--out results/pipeline] [--report-only]

structkit's side of each treebank runs with numba's cache in a fresh empty folder of its own
(``NUMBA_CACHE_DIR``): seed 0 is trained with it empty (*cold*: numba compiles what the training
calls, as on a fresh install) and again with it filled (*warm*), the two models checked to give
the same output; on the HEADLINE treebanks seeds 1 .. N-1 (``--seeds``, 3 by default) are trained
too, and the row is the mean of the seeds with their min-max (``ours_one``). The published
CoNLL 2018 figures (UDPipe 1.2 baseline and best system per treebank, quoted, not measured) come
from ``scripts/conll18_published.py`` and are rendered as rows of their own.

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
import hashlib
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
# the treebanks whose structkit row is the mean of --seeds seeds (the others: seed 0 only)
HEADLINE = ("ud-italian-partut", "ud-turkish-imst", "ud-tamil-ttb", "ud-english-partut")


def _env(numba_cache: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if numba_cache is not None:   # numba reads and writes its cache there, not in __pycache__
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
        env.pop("STRUCTKIT_NO_CACHE", None)
    return env


def _measured(cmd: list[str], log: Path | None = None, numba_cache: Path | None = None) -> dict:
    """Run ``cmd`` as a new process: wall and CPU seconds (``os.wait4``), peak RSS, stdout.
    ``numba_cache``: the process's NUMBA_CACHE_DIR."""
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=_env(numba_cache), stdout=so, stderr=se, cwd=ROOT)
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

def _cache_files(cache: Path) -> int:
    return sum(1 for f in cache.rglob("*") if f.is_file())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _segmentation_sha(path: Path) -> str:
    """The sha256 of a CoNLL-U file's segmentation alone: ID and FORM of each line, sentences apart."""
    h = hashlib.sha256()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            h.update(("\t".join(line.split("\t")[:2]) + "\n").encode())
    return h.hexdigest()


def _card(model: Path) -> dict:
    """What the model's header says of its training: the seed, each step's CPU seconds, the
    parser's dev scores on gold and jackknifed morphology and the one kept."""
    from structkit.model import model_header

    h = model_header(str(model)) or {}
    info = h.get("info", {})
    return {"seed_in_model": h.get("config", {}).get("seed"), "steps_cpu_seconds": info.get("cpu_seconds"),
            "parser_morphology": info.get("parser_morphology"), "parser_dev": info.get("parser_dev"),
            "jackknife_morph_epochs": info.get("jackknife_morph_epochs")}


def ours_one(name: str, tmp: Path, log_dir: Path, seeds: int) -> dict:
    """structkit's pipeline on one treebank, with numba's cache in a fresh empty folder of its own:

    1. train seed 0 with that folder empty (the *cold* training: numba compiles every kernel the
       training calls and writes it to the folder);
    2. train seed 0 again, the folder now filled (the *warm* training: the kernels are loaded);
    3. train seeds 1 .. seeds - 1 with the filled folder;
    then annotate the test's raw text with each model (filled folder) and score it. The cold
    and warm seed-0 models are both annotated: same seed, same output is checked. The row's
    scores are the mean over the seeds, with their min and max."""
    from structkit.tokenizer.task import raw_text

    train, dev, test = _files(name)
    raw = tmp / f"{name}.txt"
    raw.write_text(raw_text(test), encoding="utf-8")
    cache = Path(tempfile.mkdtemp(prefix=f"numba-{name}-", dir=tmp))
    assert not any(cache.iterdir())
    data = ["--train", train, *(["--dev", dev] if dev else [])]

    def train_one(seed: int, tag: str) -> tuple[Path, dict]:
        model = tmp / f"{name}.{tag}.skm"
        load0 = [round(x, 2) for x in os.getloadavg()]
        tr = _measured(_sk("train", "--task", "pipeline", *data, "--model", model, "--seed", seed),
                       log_dir / f"{name}.structkit-train-{tag}.log", numba_cache=cache)
        return model, {"train_cpu_seconds": tr["cpu_seconds"], "train_wall_seconds": tr["wall_seconds"],
                       "train_peak_mb": tr["peak_mb"], "loadavg_before_train": load0,
                       "model_mb": round(model.stat().st_size / 2**20, 2)} | _card(model)

    def annotate(model: Path, tag: str) -> dict:
        system = tmp / f"{name}.structkit.{tag}.conllu"
        an = _measured(_sk("annotate", "-m", model, raw, "-o", system, "-j", "1"), numba_cache=cache)
        scores = _score(test, system)
        words = _gold_words(scores)
        return {"scores": _summary(scores), "eval": scores, "gold_words": words,
                "output_sha256": _sha(system), "segmentation_sha256": _segmentation_sha(system),
                "annotate_cpu_seconds": an["cpu_seconds"],
                "annotate_wall_seconds": an["wall_seconds"], "annotate_peak_mb": an["peak_mb"],
                "words_per_cpu_second": round(words / an["cpu_seconds"]),
                "words_per_wall_second": round(words / an["wall_seconds"])}

    cold_model, cold = train_one(0, "seed0-cold")
    cold["numba_cache_files_after"] = _cache_files(cache)
    runs: dict[int, dict] = {}
    models: dict[int, Path] = {}
    models[0], runs[0] = train_one(0, "seed0")
    for seed in range(1, seeds):
        models[seed], runs[seed] = train_one(seed, f"seed{seed}")
    for seed, model in models.items():
        runs[seed] |= annotate(model, f"seed{seed}")
    cold |= {k: v for k, v in annotate(cold_model, "seed0-cold").items() if k in ("scores", "output_sha256")}
    words = runs[0]["gold_words"]
    try:
        sp = _measured([sys.executable, __file__, "--speed", str(models[0]), str(raw)], numba_cache=cache)
        cpu, wall = json.loads(sp["stdout"])
        speed = {"inprocess_cpu_seconds": cpu, "inprocess_wall_seconds": wall,
                 "inprocess_words_per_cpu_second": round(words / cpu),
                 "inprocess_words_per_wall_second": round(words / wall)}
    except RuntimeError as exc:   # the scores stand; the table shows "-" for this speed
        speed = {"inprocess_error": str(exc)}
    per = [runs[s]["scores"] for s in sorted(runs)]
    mean = {m: (round(sum(p[m] for p in per) / len(per), 2) if all(p[m] is not None for p in per) else None)
            for m in METRICS}
    lo = {m: min((p[m] for p in per if p[m] is not None), default=None) for m in METRICS}
    hi = {m: max((p[m] for p in per if p[m] is not None), default=None) for m in METRICS}
    first = runs[0]
    return speed | {
        "seeds": sorted(runs), "scores": mean, "scores_min": lo, "scores_max": hi,
        "spread": "min-max over the seeds" if len(runs) > 1 else "one seed",
        "per_seed": {str(s): runs[s] for s in sorted(runs)},
        "seeds_give_different_outputs": len({runs[s]["output_sha256"] for s in runs}) == len(runs),
        "seeds_give_different_segmentations": len({runs[s]["segmentation_sha256"] for s in runs}) == len(runs),
        "cold": cold, "cold_warm_same_output": cold["output_sha256"] == first["output_sha256"],
        "numba_cache": "a fresh empty NUMBA_CACHE_DIR for this treebank; the cold training filled it, "
                       "every later process (warm trainings, annotate, speed) read it",
        "train_cpu_seconds_cold": cold["train_cpu_seconds"], "train_wall_seconds_cold": cold["train_wall_seconds"],
        "train_cpu_seconds_warm": first["train_cpu_seconds"], "train_wall_seconds_warm": first["train_wall_seconds"],
        "train_cpu_seconds": first["train_cpu_seconds"], "train_wall_seconds": first["train_wall_seconds"],
        "train_peak_mb": first["train_peak_mb"], "eval": first["eval"], "gold_words": words,
        "annotate_cpu_seconds": first["annotate_cpu_seconds"], "annotate_wall_seconds": first["annotate_wall_seconds"],
        "annotate_peak_mb": first["annotate_peak_mb"], "words_per_cpu_second": first["words_per_cpu_second"],
        "words_per_wall_second": first["words_per_wall_second"], "model_mb": first["model_mb"]}


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


def _cell(x: dict, m: str) -> str:
    return _fmt(x["scores"][m])


def _range(lo, hi) -> str:
    return "-" if lo is None or hi is None else f"{lo:.2f}-{hi:.2f}"


def _ours_label(x: dict) -> str:
    n = len(x.get("seeds", [0]))
    return f"structkit, mean of seeds 0-{n - 1}" if n > 1 else "structkit, seed 0"


def _times(x: dict, peer: bool) -> str:
    """train CPU s cold | warm | train wall s cold | warm."""
    if peer:   # compiled C++: nothing to warm; its one training in both columns
        c, w = x["train_cpu_seconds"], x["train_wall_seconds"]
        return f"{c:.0f} | {c:.0f} | {w:.0f} | {w:.0f}"
    if "train_cpu_seconds_cold" not in x:   # a row from before cold/warm were measured
        return f"- | {x['train_cpu_seconds']:.0f} | - | {x['train_wall_seconds']:.0f}"
    return (f"{x['train_cpu_seconds_cold']:.0f} | {x['train_cpu_seconds_warm']:.0f} | "
            f"{x['train_wall_seconds_cold']:.0f} | {x['train_wall_seconds_warm']:.0f}")


def _anchor_rows(name: str) -> list[str]:
    from conll18_published import PUBLISHED

    pub = PUBLISHED.get(name)
    if pub is None:
        return []
    if pub["in_task"] is False:
        return [f"| {name} | CoNLL 2018 (quoted): {pub['code']} was not one of its 82 test sets |"
                + " |" * (len(METRICS) + 8)]
    if pub["in_task"] is None:
        return [f"| {name} | CoNLL 2018 (quoted): not found whether {pub['code']} was a test set |"
                + " |" * (len(METRICS) + 8)]
    rows = []
    order = ["LAS", "MLAS", "BLEX"]

    def q(v) -> str:
        return "not found" if v is None else f"{v:.2f}"

    def best(v) -> str:
        return "not found" if v is None else f"{v[0]:.2f} ({v[1]})"

    note = " (see the notes)" if pub.get("note") else ""
    for label, cells in ((f"CoNLL 2018 (quoted, UD 2.2, {pub['code']}{note}): UDPipe 1.2 baseline",
                          [q(pub["baseline"][m]) for m in order]),
                         (f"CoNLL 2018 (quoted, UD 2.2, {pub['code']}): best system per metric",
                          [best(pub["best"][m]) for m in order])):
        # METRICS ends with UAS, LAS, MLAS, BLEX: the quoted figures fill the last three
        assert list(METRICS[-3:]) == order
        rows.append(f"| {name} | {label} | " + " | ".join(["-"] * (len(METRICS) - 3)) + " | "
                    + " | ".join(cells) + " |" + " - |" * 8)
    return rows


def write_report(obj: dict, out: str) -> None:
    from conll18_published import SOURCE

    rows, below, ratios, notrun, seed_rows, checks = [], [], [], [], [], []
    head = ("| treebank | system | " + " | ".join(METRICS)
            + " | train CPU s, cold numba cache | train CPU s, warm cache | train wall s, cold | train wall s, warm"
            + " | words/s (CPU) | words/s (wall) | words/s, process (wall) | model MB |")
    blank = " |" * (len(METRICS) + 8)
    peer_label = "UDPipe 1.4, the library's plain defaults"
    for name in TREEBANKS:
        r = obj["treebanks"].get(name, {})
        ours, peer = r.get("structkit"), r.get("udpipe")
        if not ours and not peer:
            notrun.append(name)
            continue
        for label, x, is_peer in (("structkit", ours, False), (peer_label, peer, True)):
            if x is None:
                rows.append(f"| {name} | {label} | not run |" + blank[2:])
            elif "error" in x:
                rows.append(f"| {name} | {label} | failed: {x['error'][:100]} |" + blank[2:])
            else:
                rows.append(f"| {name} | {label if is_peer else _ours_label(x)} | "
                            + " | ".join(_cell(x, m) for m in METRICS)
                            + f" | {_times(x, is_peer)} | " + _speeds(x) + f" | {x['model_mb']} |")
                if not is_peer and len(x.get("seeds", [])) > 1:
                    per = [x["per_seed"][str(s)] for s in x["seeds"]]
                    cpu = [p["train_cpu_seconds"] for p in per]
                    wall = [p["train_wall_seconds"] for p in per]
                    rows.append(f"| {name} | structkit, min-max over the {len(per)} seeds | "
                                + " | ".join(_range(x["scores_min"][m], x["scores_max"][m]) for m in METRICS)
                                + f" | - | {min(cpu):.0f}-{max(cpu):.0f} | - | {min(wall):.0f}-{max(wall):.0f}"
                                + " | - | - | - | "
                                + f"{min(p['model_mb'] for p in per)}-{max(p['model_mb'] for p in per)} |")
        rows += _anchor_rows(name)
        if ours and "error" not in ours and "per_seed" in ours:
            for s in ours["seeds"]:
                p = ours["per_seed"][str(s)]
                dev = p.get("parser_dev") or {}
                seed_rows.append(f"| {name} | {s} | " + " | ".join(_fmt(p["scores"][m]) for m in METRICS)
                                 + f" | {p['train_cpu_seconds']:.0f} | {p.get('parser_morphology')} | "
                                 + " / ".join(f"{k} {v['las']:.2f}" for k, v in sorted(dev.items())) + " |")
            cold = ours["cold"]
            n = len(ours["seeds"])
            outs = len({ours["per_seed"][str(s)]["output_sha256"] for s in ours["seeds"]})
            segs = len({ours["per_seed"][str(s)]["segmentation_sha256"] for s in ours["seeds"]})
            checks.append(f"{name}: cold and warm seed-0 models annotate the test "
                          + ("identically" if ours["cold_warm_same_output"] else "DIFFERENTLY")
                          + f" (the cold training left {cold['numba_cache_files_after']} files in the empty cache)"
                          + ((f"; the {n} seeds give {outs} different outputs"
                              + (f", {segs} different tokenizations and sentence splits" if 1 < segs < n else "")
                              + (" (the same tokenization and sentence splits for every seed: the "
                                 "differences are in the tags, lemmas and trees)" if segs == 1 else ""))
                             if n > 1 else ""))
        bad = [lab for lab, x in (("structkit", ours), ("UDPipe 1", peer)) if not x or "error" in x]
        if bad:
            below.append(f"{name}: no comparison ({', '.join(bad)} not run or failed)")
            continue
        for m in TARGETS:
            if ours["scores"][m] < peer["scores"][m]:
                below.append(f"{name} {m} {ours['scores'][m]:.2f} < {peer['scores'][m]:.2f}"
                             + (" (mean of the seeds)" if len(ours.get("seeds", [])) > 1 else ""))
            for s in (ours["seeds"] if len(ours.get("seeds", [])) > 1 else []):
                v = ours["per_seed"][str(s)]["scores"][m]
                if v < peer["scores"][m]:
                    below.append(f"{name} {m} seed {s} {v:.2f} < {peer['scores'][m]:.2f}")
        pc = peer["train_cpu_seconds"]
        if "train_cpu_seconds_cold" in ours:
            c, w = ours["train_cpu_seconds_cold"], ours["train_cpu_seconds_warm"]
            ratios.append(f"{name} cold {c / pc:.3f} ({c:.0f} / {pc:.0f} CPU s), warm {w / pc:.3f} ({w:.0f} / {pc:.0f})")
        else:
            w = ours["train_cpu_seconds"]
            ratios.append(f"{name} {w / pc:.3f} ({w:.0f} / {pc:.0f} CPU s, cache not recorded)")
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
                            + (f"; load average before each training (cold, then seeds "
                               f"{', '.join(map(str, x['seeds']))} warm): "
                               + ", ".join(str(v) for v in [x["cold"]["loadavg_before_train"]]
                                           + [x["per_seed"][str(s)]["loadavg_before_train"] for s in x["seeds"]])
                               if side == "structkit" and "cold" in x else "")
                            + ")")
    one_seed = [n for n in TREEBANKS if n not in HEADLINE and obj["treebanks"].get(n, {}).get("structkit")]
    n_seeds = max((len(x.get("seeds", [0])) for n in HEADLINE
                   if (x := obj["treebanks"].get(n, {}).get("structkit")) and "error" not in x), default=1)
    lines = [
        "# Raw text to CoNLL-U: structkit's pipeline and UDPipe 1's full pipeline (CoNLL 2018 evaluation)", "",
        "Written by `scripts/pipeline_experiments.py` (issues 29 and 38). Both systems train on the same "
        "files (train, with dev for model selection / as UDPipe's heldout data), read the test file's "
        "raw text (`structkit.tokenizer.task.raw_text`: each sentence's `# text`, paragraphs apart) "
        "and are scored by the same `structkit eval --task ud` (CoNLL 2018 F1 over aligned words).", "",
        "structkit: `structkit train --task pipeline --seed S` with its defaults otherwise (tokenizer, morphology "
        "tagger and lemmatizer, parser on gold or jackknifed predicted morphology as dev prefers, gold "
        "without dev; the seed reaches the tokenizer, the morph model, the jackknife's morph models and "
        "the parser), `structkit annotate -j 1`. "
        f"UDPipe 1: {peer_label} (projective parser, no pretrained embeddings, no search over options): "
        "`Trainer.train(\"morphodita_parsito\", train, dev, \"\", \"\", \"\")`, i.e. "
        "tokenizer, tagger and parser with UDPipe 1's default options, then "
        "`Pipeline(model, \"tokenize\", DEFAULT, DEFAULT, \"conllu\")` on the raw text. Its rows come "
        "from its own earlier runs (`--side udpipe`, listed under Runs), one training each.", "",
        "**Seeds.** structkit's rows on " + ", ".join(HEADLINE) + f" are the mean of seeds 0-{n_seeds - 1}, "
        f"with a row under each giving the min-max over the {n_seeds} seeds (the spread: min-max, not sd); "
        "the table *Each seed* lists them. "
        + (", ".join(one_seed) + ": seed 0 only." if one_seed else ""), "",
        "**Training times.** CPU seconds are the fair figure on this shared machine (structkit: user + "
        "system time of the `structkit train` process and its children, `os.wait4`, start-up, reading "
        "the files and writing the model included; UDPipe: `time.process_time` of its training call in "
        "a process of its own); wall seconds are upper bounds. structkit's kernels are compiled by numba "
        "and cached on disk. For each treebank the run makes a fresh empty folder and sets it as "
        "`NUMBA_CACHE_DIR` for every structkit process of that treebank: *cold* is seed 0's training "
        "with that folder empty (numba compiles every kernel the training calls and writes it there, "
        "what a fresh install pays; Python's own bytecode cache is not cleared), *warm* is seed 0 "
        "trained again right after, the folder filled by the cold run (the kernels loaded, not "
        "compiled). The two seed-0 models are checked to annotate the test identically (under "
        "*Checks*). The min-max row gives the warm trainings of the seeds. UDPipe 1 is compiled "
        "C++ with nothing to warm: its one training is in both columns. The load average before "
        "each training is under *Runs*: on this machine, shared with other jobs, CPU seconds grow "
        "with the load (caches and cores shared), so figures from runs at different loads (ours and "
        "UDPipe's were separate runs) compare only roughly.", "",
        "Words per second: gold test words over the time to annotate the whole raw text with the model "
        "already loaded, one thread (UDPipe: `Pipeline.process`; structkit: seed 0's model, "
        "`structkit.load(model).to_conllu(text)` after a warm-up call on the first paragraph, warm "
        "numba cache). \"words/s, process\" is structkit's whole `structkit annotate -j 1` process with "
        "seed 0's model and the warm cache: start-up and model loading included. model MB: seed 0's.", "",
        "**CoNLL 2018 rows (quoted, not measured by us).** For the treebanks that were test sets of the "
        "CoNLL 2018 shared task, the published LAS, MLAS and BLEX F1 of the organisers' UDPipe 1.2 "
        "baseline (trained by the organisers with tuned options and pretrained embeddings) and of the "
        "best system on that treebank. They are anchors of scale, not rows to compare as equals: the "
        "shared task used UD 2.2, our files are of UD 2.14 (English EWT) and 2.16 or later (the others; "
        "the data directory's SOURCES.md), so training data, test sets and annotation may differ, and "
        "its systems were free to use pretrained embeddings and other resources. Source, in scripts/conll18_published.py: "
        + SOURCE + ".", "",
        "Trained on the dev file (the data directory has no training file for them), with no "
        "dev selection and no heldout data for either system: "
        + ", ".join(n for n, (t, d, _) in TREEBANKS.items() if d is None and t.endswith("-ud-dev")) + "."
        + "".join(f" Trained on the training file without dev (none is released): {', '.join(no_dev)}."
                  for no_dev in [[n for n, (t, d, _) in TREEBANKS.items() if d is None and not t.endswith("-ud-dev")]]
                  if no_dev), "",
        head, "|---|---|" + "---|" * (len(METRICS) + 8), *rows, "",
        "**Below UDPipe 1 on LAS/MLAS/BLEX (means and each seed):** " + ("; ".join(below) if below else "none")
        + ("" if rows else " (nothing run)") + ".", "",
        "**Training CPU time, structkit / UDPipe 1 (target at most 0.2), cold and warm numba cache:** "
        + ("; ".join(ratios) if ratios else "no treebank with both") + ".", "",
    ]
    if seed_rows:
        lines += ["Each seed (structkit; train CPU s: warm cache; the parser's dev LAS on gold and on "
                  "jackknifed morphology, from the model's card, and the one kept):", "",
                  "| treebank | seed | " + " | ".join(METRICS) + " | train CPU s, warm | parser morphology | parser dev LAS |",
                  "|---|---|" + "---|" * (len(METRICS) + 3), *seed_rows, ""]
    from conll18_published import PUBLISHED

    notes = [f"{p['code']}: {p['note']}" for n, p in PUBLISHED.items()
             if p.get("in_task") and p.get("note") and obj["treebanks"].get(n)]
    if notes:
        lines += ["**Notes on the CoNLL 2018 rows:** " + "; ".join(notes) + ".", ""]
    if checks:
        lines += ["**Checks:** " + "; ".join(checks) + ".", ""]
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
    ap.add_argument("--seeds", type=int, default=3,
                    help="structkit: seeds 0 .. N-1 on the headline treebanks (%(default)s), one seed elsewhere")
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
                        res = ours_one(name, Path(tmp), log_dir, args.seeds if name in HEADLINE else 1)
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
