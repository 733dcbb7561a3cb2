"""Time the same structkit commands on two source trees in one run (for a refactoring: same
speed?). The runs alternate between the trees so that the machine's drift hits both alike;
each figure is the best of ``--repeat`` wall times of a whole command (numba cache warm).

    python scripts/bench_trees.py OLD_TREE NEW_TREE [--repeat 3]

A tree is a source checkout whose ``structkit`` package is put first on PYTHONPATH.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_slice  # noqa: E402

CHUNK = "conll2000/train.txt"
TEST = "conll2000/test.txt"
UD_TRAIN = "ud-english-partut/en_partut-ud-train.conllu"
UD_DEV = "ud-english-partut/en_partut-ud-dev.conllu"
TA = ("ud-tamil-ttb/ta_ttb-ud-train.conllu", "ud-tamil-ttb/ta_ttb-ud-dev.conllu", "ud-tamil-ttb/ta_ttb-ud-test.conllu")


def commands(tmp: Path) -> list[tuple[str, list[str]]]:
    small = str(tmp / "chunk3000.txt")
    m = str(tmp / "m.npz")
    return [
        ("train perceptron, 10 epochs", ["train", "--task", "chunk", "--train", CHUNK, "--model", m]),
        ("train lookahead depth 2", ["train", "--task", "chunk", "--train", CHUNK, "--model", m,
                                     "--algo", "lookahead", "--depth", "2"]),
        ("train kbest-pa k=5, 5 epochs", ["train", "--task", "chunk", "--train", CHUNK, "--model", m,
                                          "--algo", "kbest-pa", "--k", "5", "--epochs", "5"]),
        ("train kbest-sdm k=2, 3 ep., 3000 sent.", ["train", "--task", "chunk", "--train", small,
                                                    "--model", m, "--algo", "kbest-sdm", "--k", "2",
                                                    "--epochs", "3"]),
        ("train olarank-exact", ["train", "--task", "chunk", "--train", CHUNK, "--model", m,
                                 "--algo", "olarank-exact"]),
        ("train olarank-greedy order 2", ["train", "--task", "chunk", "--train", CHUNK, "--model", m,
                                          "--algo", "olarank-greedy", "--order", "2"]),
        ("train parse depth 1, 5 epochs", ["train", "--task", "parse", "--train", "ptb-dep/train.conll",
                                           "--model", m, "--depth", "1", "--epochs", "5"]),
        ("tag CoNLL-2000 test (perceptron model)", ["chunk", "--model", str(tmp / "tagger.npz"), TEST,
                                                    "-o", str(tmp / "out.txt")]),
        ("train beam parser, ParTUT, 3 epochs", ["train", "--task", "parse", "--train", UD_TRAIN,
                                                 "--model", str(tmp / "beam.npz"), "--epochs", "3"]),
        ("beam parse ParTUT dev (beam model)", ["parse", "--model", str(tmp / "beam.npz"), UD_DEV,
                                                "-o", str(tmp / "out.conllu")]),
        ("train pipeline, Tamil TTB (defaults)", ["train", "--task", "pipeline", "--train", TA[0], "--dev", TA[1],
                                                  "--model", str(tmp / "ta.skm")]),
        ("annotate Tamil test raw text x5 (pipeline)", ["annotate", "-m", str(tmp / "ta.skm"), str(tmp / "ta.txt"),
                                                        "-o", str(tmp / "ta.conllu")]),
    ]


def run(tree: str, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": tree}
    t0 = time.perf_counter()
    # run outside any checkout: `python -m` puts the working folder first on sys.path, so from a
    # project folder both "trees" would be that folder's structkit
    p = subprocess.run([sys.executable, "-m", "structkit", *args, "-q"] if args[0] == "train" else
                       [sys.executable, "-m", "structkit", *args], env=env, capture_output=True, text=True,
                       cwd=tempfile.gettempdir())
    if p.returncode != 0:
        sys.exit(f"{tree}: structkit {' '.join(args)} failed: {p.stderr}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="time only the rows whose name holds TEXT (again for several)")
    args = ap.parse_args()
    from structkit.config import resolve_data_path

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        write_slice(resolve_data_path(CHUNK), t / "chunk3000.txt", 3000)
        for tree in (args.old, args.new):   # each tree's bytecode written now: with
            # PYTHONDONTWRITEBYTECODE set, a tree without it would compile every module each run
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "structkit")], check=True)
        for tree in (args.old, args.new):  # warm each tree's numba cache, and the tagger model
            run(tree, ["train", "--task", "chunk", "--train", str(t / "chunk3000.txt"), "--model",
                       str(t / "tagger.npz"), "--epochs", "1"])
        run(args.new, ["train", "--task", "chunk", "--train", CHUNK, "--model", str(t / "tagger.npz")])
        # the pipeline model that both trees annotate with (its file format is the same in both)
        run(args.new, ["train", "--task", "pipeline", "--train", TA[0], "--dev", TA[1], "--model", str(t / "ta.skm")])
        from structkit.tokenizer.task import raw_text

        (t / "ta.txt").write_text("\n\n".join([raw_text(resolve_data_path(TA[2]))] * 5), encoding="utf-8")
        rows = []
        for name, cmd in commands(t):
            if args.only and not any(x in name for x in args.only):
                continue
            trees = (args.old, args.new)
            for tree in trees:  # compile outside the timing
                run(tree, cmd)
            times: list[list[float]] = [[], []]  # by position: the same tree twice measures noise
            for _ in range(args.repeat):
                for i, tree in enumerate(trees):
                    times[i].append(run(tree, cmd))
            a, b = min(times[0]), min(times[1])
            rows.append((name, a, b))
            print(f"{name:42} old {a:6.2f} s   new {b:6.2f} s   new/old {b / a:5.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
