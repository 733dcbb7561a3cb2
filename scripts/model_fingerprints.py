"""Fingerprints of models trained through the CLI, one learner of each family, for checking that
a refactoring changes nothing: the sha256 of every model's arrays (the header's ``checksum``)
and of its predictions on held-out data.

    python scripts/model_fingerprints.py --out before.json      # on the old tree
    python scripts/model_fingerprints.py --out after.json --compare before.json

Training runs on slices of the real corpora (``$STRUCTKIT_DATA``), and the raw-text families
(tokenizer, morph model, pipeline) on UD Tamil TTB, so it takes a few minutes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import structkit, write_slice  # noqa: E402

# name, task, train file, test file, extra train flags
RUNS = [
    ("perceptron", "chunk", "conll2000/train.txt", "conll2000/test.txt", []),
    ("greedy", "chunk", "conll2000/train.txt", "conll2000/test.txt", ["--algo", "greedy"]),
    ("lookahead-d2-trigram", "ner", "conll2002/esp.train", "conll2002/esp.testb",
     ["--algo", "lookahead", "--depth", "2", "--label-order", "2", "--margin", "1"]),
    ("kbest-pa", "chunk", "conll2000/train.txt", "conll2000/test.txt",
     ["--algo", "kbest-pa", "--k", "3", "--C", "0.1", "--epochs", "3"]),
    ("kbest-sdm", "chunk", "conll2000/train.txt", "conll2000/test.txt",
     ["--algo", "kbest-sdm", "--k", "2", "--epochs", "2"]),
    ("kbest-larank", "pos", "ptb-pos/train.txt", "ptb-pos/test.txt", ["--algo", "kbest-larank", "--k", "2"]),
    ("olarank-exact", "chunk", "conll2000/train.txt", "conll2000/test.txt", ["--algo", "olarank-exact"]),
    ("olarank-greedy", "chunk", "conll2000/train.txt", "conll2000/test.txt",
     ["--algo", "olarank-greedy", "--order", "2"]),
    ("larank-greedy-batch", "pos", "ptb-pos/train.txt", "ptb-pos/test.txt",
     ["--algo", "larank-greedy-batch", "--epochs", "3"]),
    ("parser-d1", "parse", "ptb-dep/train.conll", "ptb-dep/test.conll", ["--depth", "1", "--epochs", "3"]),
    # the default labelled beam parser (UD, CoNLL-U, pseudo-projective), 3 epochs on all of ParTUT
    ("parser-beam-ud", "parse", "ud-english-partut/en_partut-ud-train.conllu",
     "ud-english-partut/en_partut-ud-dev.conllu", ["--epochs", "3"]),
]
RERANK = ("reranker", "hyporadise/train_atis.json", "hyporadise/test_atis.json", ["--features", "all"])
# The raw-text families on UD Tamil TTB (train, dev; its test file): name, task, the command and
# its input ("raw": the test file's raw text, "gold": the test file), extra command flags. The
# pipeline's file holds its parts' files, whose headers carry the card's time: its fingerprint is
# its outputs (CoNLL-U and JSON), not its bytes.
UD = ("ud-tamil-ttb/ta_ttb-ud-train.conllu", "ud-tamil-ttb/ta_ttb-ud-dev.conllu",
      "ud-tamil-ttb/ta_ttb-ud-test.conllu")
RAW_TEXT = [
    ("tokenizer", "tokenize", "tokenize", "raw", []),
    ("morph", "morph", "morph", "gold", []),
    ("pipeline", "pipeline", "annotate", "raw", []),
    ("pipeline-json", "pipeline", "annotate", "raw", ["--format", "json"]),
]
TAG_COMMAND = {"pos": "tag", "chunk": "chunk", "ner": "ner", "parse": "parse"}


def header_checksum(model: Path) -> str:
    import numpy as np

    with np.load(model, allow_pickle=False) as z:
        return json.loads(z["__header__"].tobytes().decode("utf-8"))["checksum"]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", help="a fingerprint file to compare with")
    ap.add_argument("--sentences", type=int, default=1500, help="training sentences per run")
    ap.add_argument("--only", default="", help="only the runs whose name contains this text")
    args = ap.parse_args()
    from structkit.config import resolve_data_path

    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for name, task, train, test, flags in RUNS:
            if args.only not in name:
                continue
            tr = write_slice(resolve_data_path(train), t / f"{name}.train", args.sentences) \
                if task != "parse" else Path(resolve_data_path(train))
            te = Path(resolve_data_path(test))
            model = t / f"{name}.model"
            wall, _ = structkit("train", "--task", task, "--train", tr, "--model", model, "--seed", "1",
                                "-q", *flags)
            pred = t / f"{name}.pred"
            structkit(TAG_COMMAND[task], "--model", model, te, "-o", pred)
            out[name] = {"weights": header_checksum(model), "predictions": sha(pred),
                         "train_wall_seconds": round(wall, 2)}
            print(f"{name:22} {out[name]['weights'][:16]} {out[name]['predictions'][:16]} {wall:.1f} s",
                  flush=True)
        _raw_text_runs(t, args.only, out)
        name, train, test, flags = RERANK
        if args.only not in name:
            Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
            return _compare(out, args.compare)
        model, pred = t / "rerank.model", t / "rerank.out"
        wall, _ = structkit("train", "--task", "rerank", "--train", train, "--model", model, "-q", *flags)
        structkit("rerank", "--model", model, test, "-o", pred, "--json")
        out[name] = {"weights": header_checksum(model), "predictions": sha(pred),
                     "train_wall_seconds": round(wall, 2)}
        print(f"{name:22} {out[name]['weights'][:16]} {out[name]['predictions'][:16]} {wall:.1f} s")
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return _compare(out, args.compare)


def _raw_text_runs(t: Path, only: str, out: dict) -> None:
    """Tokenizer, morph model and pipeline of UD Tamil TTB, trained with their defaults."""
    from structkit.config import resolve_data_path
    from structkit.tokenizer.task import raw_text

    train, dev, test = (resolve_data_path(p) for p in UD)
    raw = t / "ta.txt"
    raw.write_text(raw_text(test), encoding="utf-8")
    models: dict[str, Path] = {}
    for name, task, command, given, flags in RAW_TEXT:
        if only not in name:
            continue
        model = models.get(task)
        wall = 0.0
        if model is None:
            model = models[task] = t / f"{task}.skm"
            wall, _ = structkit("train", "--task", task, "--train", train, "--dev", dev, "--model", model,
                                "--seed", "1", "-q")
        pred = t / f"{name}.pred"
        structkit(command, "-m", model, raw if given == "raw" else test, "-o", pred, *flags)
        weights = header_checksum(model) if task != "pipeline" else "-"
        out[name] = {"weights": weights, "predictions": sha(pred), "train_wall_seconds": round(wall, 2)}
        print(f"{name:22} {weights[:16]} {out[name]['predictions'][:16]} {wall:.1f} s", flush=True)


def _compare(out: dict, path: str | None) -> int:
    if path:
        old = json.loads(Path(path).read_text())
        same = 0
        for k, v in out.items():
            o = old.get(k)
            ok = o is not None and o["weights"] == v["weights"] and o["predictions"] == v["predictions"]
            same += ok
            print(f"{'identical' if ok else 'DIFFERENT':9} {k}")
        print(f"{same}/{len(out)} identical")
        return 0 if same == len(out) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
