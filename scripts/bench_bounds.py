"""Inputs without an end (issue 30 item 3): each case's command, exit code, stderr (its last
line) and the peak RSS of the structkit process, written to results/bounds.json and .md.

    python scripts/bench_bounds.py [--out results/bounds.json] [--quick]

Each command runs in its own child (a fresh ``python -c`` that starts structkit and reads
``getrusage(RUSAGE_CHILDREN)``), so a peak is that command's alone; an address-space limit of
4 GB (RLIMIT_AS) keeps a regression from eating the machine (it would show as a MemoryError or
a kill, not pass). ``--quick`` uses a 1 MB line instead of 10 MB (the 10 MB line tags 10
million tokens: about two minutes on one core).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
LIMIT = 4 << 30

MEASURE = """
import resource, subprocess, sys, time
limit = int(sys.argv[1])
def lim():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
t = time.perf_counter()
r = subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, preexec_fn=lim)
sys.stderr.buffer.write(r.stderr)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)
"""


def measure(args: list[str]) -> dict:
    cmd = [sys.executable, "-m", "structkit", *map(str, args)]
    r = subprocess.run([sys.executable, "-c", MEASURE, str(LIMIT), *cmd], capture_output=True,
                       text=True, timeout=1800)
    code, kb, secs = r.stdout.split()
    lines = r.stderr.splitlines()
    return {"exit": int(code), "stderr_lines": len(lines), "stderr": lines[-1] if lines else "",
            "peak_rss_mb": round(int(kb) / 1024), "seconds": round(float(secs), 1)}


def npy_header(shape: tuple) -> bytes:
    from numpy.lib import format as npf

    h = repr({"descr": "|u1", "fortran_order": False, "shape": shape}).encode("latin1")
    h = h + b" " * (64 - (10 + len(h) + 1) % 64) + b"\n"
    return npf.MAGIC_PREFIX + b"\x01\x00" + len(h).to_bytes(2, "little") + h


def write_bomb(path: Path, n_bytes: int) -> None:
    """A model archive: a valid header and one array of ``n_bytes`` zeros (a wrong checksum)."""
    blob = json.dumps({"format": "structkit-model", "format_version": 2, "task": "chunk",
                       "checksum": "0" * 64}).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
        with z.open("__header__.npy", "w") as f:
            f.write(npy_header((len(blob),)) + blob)
        with z.open("W.npy", "w", force_zip64=True) as f:
            f.write(npy_header((n_bytes,)))
            chunk = bytes(1 << 22)
            for _ in range(n_bytes // len(chunk)):
                f.write(chunk)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "bounds.json"))
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-bounds-"))
    chunk_model, pos_model = tmp / "chunk.model", tmp / "pos.model"
    for task, train, model in (("chunk", "chunk_train.txt", chunk_model), ("pos", "pos_train.txt", pos_model)):
        subprocess.run([sys.executable, "-m", "structkit", "train", "--task", task, "--epochs", "1",
                        "--train", FIXTURES / train, "-m", model, "-q"], check=True)
    # A tokenizer learnt from Tamil TTB (the smallest treebank), where $STRUCTKIT_DATA has it.
    tamil = Path(os.environ.get("STRUCTKIT_DATA", "data")) / "ud-tamil-ttb" / "ta_ttb-ud-train.conllu"
    tok_model = tmp / "tok.model" if tamil.is_file() else None
    if tok_model:
        subprocess.run([sys.executable, "-m", "structkit", "train", "--task", "tokenize", "--train", tamil,
                        "-m", tok_model, "-q"], check=True)
    fifo = tmp / "model.fifo"
    os.mkfifo(fifo)
    line_mb = 1 if a.quick else 10
    line = tmp / "line.txt"
    with open(line, "w") as f:
        f.write("a," * (line_mb << 19) + "\n")      # no space: line_mb million tokens
    sentence = tmp / "sentence.txt"
    pairs = [("the", "DT"), ("cat", "NN"), ("sat", "VBD"), ("on", "IN"), ("big", "JJ")]
    with open(sentence, "w") as f:
        for i in range(200_000):
            f.write("%s %s\n" % pairs[(i * 7919) % len(pairs)])
    letters = tmp / "letters.txt"
    with open(letters, "w") as f:
        f.write("abcdefghijklmnopqrstuvwxy" * ((line_mb << 20) // 25) + "\n")
    junk = tmp / "junk.bin"
    junk.write_bytes(os.urandom(1 << 20))
    bomb = tmp / "bomb.model"
    write_bomb(bomb, 2 << 30)

    cases = [
        ("chunk --model /dev/zero", ["chunk", "--model", "/dev/zero", FIXTURES / "chunk_test.txt"]),
        ("chunk --model FIFO that never ends", ["chunk", "--model", fifo, FIXTURES / "chunk_test.txt"]),
        ("train --config /dev/zero", ["train", "--config", "/dev/zero", "-m", tmp / "x.model"]),
        ("explain /dev/zero", ["explain", "-m", chunk_model, "/dev/zero"]),
        (f"tag --text on a {line_mb} MB line with no spaces",
         ["tag", "-m", pos_model, "--text", line, "-o", tmp / "tagged.txt"]),
        *([(f"tokenize on a {line_mb} MB line of letters with no spaces",
            ["tokenize", "-m", tok_model, letters, "-o", tmp / "letters.conllu"]),
           (f"tokenize on a {line_mb} MB line of 'a,' (one token per character)",
            ["tokenize", "-m", tok_model, line, "-o", tmp / "line.conllu"]),
           ("tokenize on 1 MB of random bytes", ["tokenize", "-m", tok_model, junk, "-o", tmp / "junk.conllu"])]
          if tok_model else []),
        ("explain on one 200k-token sentence", ["explain", "-m", chunk_model, sentence]),
        ("chunk --model on a 2 GB bomb (2 MB file)", ["chunk", "--model", bomb, FIXTURES / "chunk_test.txt"]),
        ("train --task rerank --train /dev/zero", ["train", "--task", "rerank", "--train", "/dev/zero",
                                                   "-m", tmp / "r.model"]),
        ("baseline: chunk a small file", ["chunk", "--model", chunk_model, FIXTURES / "chunk_test.txt"]),
    ]
    # untimed: each model run once on a small input, so the cases' seconds have a warm numba cache
    warm_ups = [["chunk", "--model", chunk_model, FIXTURES / "chunk_test.txt"],
                ["explain", "-m", chunk_model, FIXTURES / "chunk_test.txt"],
                ["tag", "-m", pos_model, "--text", FIXTURES / "chunk_test.txt"]]
    if tok_model:
        warm_ups.append(["tokenize", "-m", tok_model, tamil])
    for args in warm_ups:
        subprocess.run([sys.executable, "-m", "structkit", *map(str, args)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    results = []
    writer = subprocess.Popen(["sh", "-c", f"exec cat /dev/zero > {fifo}"])
    try:
        for name, args in cases:
            r = measure(args)
            r["stderr"] = r["stderr"].replace(str(tmp), "$TMP")
            r = {"case": name, "command": "structkit " + " ".join(
                str(x).replace(str(tmp), "$TMP").replace(str(ROOT) + "/", "") for x in args), **r}
            print(f"{name}: exit {r['exit']}, {r['peak_rss_mb']} MB, {r['seconds']} s: {r['stderr']}",
                  flush=True)
            results.append(r)
    finally:
        writer.kill()
        writer.wait()
    Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
    md = ["# Inputs without an end (issue 30 item 3)", "",
          f"`python scripts/bench_bounds.py{' --quick' if a.quick else ''}`: each command in its own "
          "child under a 4 GB address-space limit; peak RSS from getrusage(RUSAGE_CHILDREN). Seconds with "
          "the numba cache warm (each model trained in this script, then run once, untimed, on a small "
          "input).", "",
          "| case | exit | peak RSS | seconds | stderr |", "|---|---|---|---|---|"]
    for r in results:
        md.append(f"| {r['case']} | {r['exit']} | {r['peak_rss_mb']} MB | {r['seconds']} | "
                  f"`{r['stderr'][:160]}` |")
    md += ["", "Commands:", ""] + [f"- {r['case']}: `{r['command']}`" for r in results]
    Path(a.out).with_suffix(".md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
