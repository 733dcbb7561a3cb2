"""Compiling the numba kernels before they are needed (``structkit compile``; ``make install``
runs it).

numba compiles a kernel the first time it is called and keeps the machine code in its cache on
disk (``__pycache__`` beside each module, or ``$NUMBA_CACHE_DIR``), so only the first run of a
command pays for it -- but that first run is a new user's first impression: on a fresh install
the Tamil pipeline trained in 81 CPU s instead of 12 (69 s of compiling), and 1 GB instead of
460 MB. This runs the commands' work once on the samples shipped with the package
(``sample/...``), each command in a process of its own as a user would run it, so the kernels
compiled are the ones the commands call, with the argument types they call them with; the
cache then holds them and the user's first command starts warm.

``DEFAULTS`` are what the documented commands run with their defaults (training and using a
pipeline, a chunker, a POS tagger, a NER tagger, a parser, a morph model and a reranker);
``every_learner`` adds one short training run of every other learning algorithm.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Callable, Iterator
from structkit.config import resolve_data_path
from structkit.io.document import read_conllu
from structkit.learn import registry

# Each task's model trained on its sample with the defaults, then used by its command on an
# input (``_inputs``): (task, training file, command, input); {d} is a scratch folder.
USES = (("chunk", "sample/chunk/train.txt", "chunk", "{d}/chunk.txt"),
        ("pos", "sample/pos/train.txt", "tag", "{d}/pos.txt"),
        ("ner", "sample/ner/train.txt", "ner", "{d}/ner.txt"),
        ("parse", "sample/ud/train.conllu", "parse", "{d}/ud.conllu"),
        ("morph", "sample/ud/train.conllu", "morph", "{d}/ud.conllu"),
        ("rerank", "sample/nbest/train.jsonl", "rerank", "sample/nbest/test.jsonl"))

# (what it compiles, the commands: argv after ``structkit``)
DEFAULTS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("pipeline: train, annotate", (
        ("train", "--task", "pipeline", "--train", "sample/ud/train.conllu", "--dev", "sample/ud/dev.conllu",
         "--model", "{d}/ud.model", "-q"),
        ("annotate", "-m", "{d}/ud.model", "{d}/text.txt", "-o", "{d}/out.conllu"),
        ("annotate", "-m", "{d}/ud.model", "{d}/text.txt", "--format", "json", "-o", "{d}/out.json"),
    )),
) + tuple((f"{task}: train, {command}", (
    ("train", "--task", task, "--train", train, "--model", f"{{d}}/{task}.model", "-q"),
    (command, "-m", f"{{d}}/{task}.model", given, "-o", f"{{d}}/{task}.out"))) for task, train, command, given in USES)

# the sample each task's other learners train on
_SAMPLES = {"chunk": "sample/chunk/train.txt", "parse": "sample/ud/train.conllu",
            "tokenize": "sample/ud/train.conllu", "rerank": "sample/nbest/train.jsonl"}


def every_learner() -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    """One short training run (one epoch) of every learner the defaults do not train: the
    sequence learners on the chunk sample (pos and ner run the same kernels), the parser's, the
    tokenizer's and the reranker's."""

    out = []
    for task, sample in _SAMPLES.items():
        for spec in registry.specs(task):
            out.append((f"{task} --algo {spec.name}", (
                ("train", "--task", task, "--algo", spec.name, "--train", sample, "--epochs", "1",
                 "--model", f"{{d}}/{task}-{spec.name}.model", "-q"),)))
    return out


# Commands given a few sentences take numpy paths and leave numba unloaded (its import costs more
# than they do); the inputs the commands read here are the samples repeated past that size.
INPUT_BYTES = 128 * 1024


def _inputs(folder: str) -> None:
    """What the commands read: the raw text of the UD sample's test sentences (their ``# text``)
    for ``annotate``, and the samples' test files, each repeated to ``INPUT_BYTES``."""

    for name, sample in (("chunk.txt", "sample/chunk/test.txt"), ("pos.txt", "sample/pos/test.txt"),
                         ("ner.txt", "sample/ner/test.txt"), ("ud.conllu", "sample/ud/test.conllu")):
        with open(resolve_data_path(sample), encoding="utf-8") as f:
            body = f.read().rstrip("\n") + "\n\n"
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(body * (INPUT_BYTES // len(body) + 1))
    text = "\n".join(s.comment("text") or "" for s in read_conllu(resolve_data_path("sample/ud/test.conllu")))
    with open(os.path.join(folder, "text.txt"), "w", encoding="utf-8") as f:
        f.write((text + "\n\n") * (INPUT_BYTES // (len(text) + 2) + 1))


def run(jobs, report: Callable[[str, float], None] | None = None) -> Iterator[tuple[str, str | None]]:
    """Run each job's commands in order, each in a new process, in a scratch folder removed
    afterwards; yield (job, None) when it ran, or (job, the error) when a command failed."""
    with tempfile.TemporaryDirectory(prefix="structkit-compile-") as d:
        _inputs(d)
        for what, commands in jobs:
            err = None
            for argv in commands:
                cmd = [sys.executable, "-m", "structkit", *(a.replace("{d}", d) for a in argv)]
                done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True, errors="replace")
                if done.returncode != 0:
                    lines = done.stderr.strip().splitlines()
                    err = f"`structkit {' '.join(argv[:3])} ...` failed: {lines[-1] if lines else done.returncode}"
                    break
            yield what, err
