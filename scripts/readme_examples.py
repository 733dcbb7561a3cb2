"""The README's examples of command output, produced by running the commands.

    python scripts/readme_examples.py                 # run every example, write results/examples/NAME.txt
                                                      # and the README blocks between the markers
    python scripts/readme_examples.py explain scores  # only these
    python scripts/readme_examples.py --check         # exit 1 when a README block differs from its file
    python scripts/readme_examples.py --no-readme NAME  # results/examples only; then --sync-readme
    python scripts/readme_examples.py --sync-readme     # copy every results/examples/NAME.txt into README.md

Each example is a list of shell commands run with bash in a fresh temporary folder with a
``PATH`` whose ``structkit`` is this Python's; corpora (``conll2000/train.txt``) are found
through ``$STRUCTKIT_DATA`` and the shipped sample (``sample/chunk/train.txt``) in the
package, as for any user. A shown command is written ``$ COMMAND`` and
followed by its standard output and error (``2>&1``; ``keep`` shortens long output to its
first or last lines, with a ``...`` line where lines were left out); ``setup`` commands run
first and are not shown. A ``server`` (``structkit serve``) is shown as ``$ COMMAND &`` with its
start line; it runs on a free port, which the commands are pointed to and which the output
shows as the port written in the command (8080); it is stopped with SIGTERM at the end. In README.md the block between ``<!-- example: NAME -->`` and
``<!-- example: end -->`` is a ```` ```text ```` fence holding exactly results/examples/NAME.txt.

numba's cache: an example's ``warm_up`` commands run first, not shown, so that the times it shows
are with a warm cache (its kernels compiled). For an example marked ``cold``, running this script
(not the tests) also runs its first command once more in a fresh folder with a new, empty
``NUMBA_CACHE_DIR`` (every kernel compiled, as on the first run after installing) and writes
both runs' times to results/examples/NAME.numba.json: the time the shown output prints, and the
process's wall and CPU seconds.

``tests/test_readme_examples.py`` checks that every README block equals its file and runs the
examples again: the sample-data ones always, the corpus ones when the corpus is found, except
those in ``SLOW`` (``serve`` trains a parser on ParTUT first), which are compared as stored. Output is compared byte for byte except wall-clock times, which ``normalise`` replaces
by a placeholder in both before comparing (``11.0 s``, ``(0.21 s)``, ``in 0.9 s``: a number
directly followed by `` s``).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cold_numba_cache, machine, numba_cache  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def documents() -> list[Path]:
    """The texts that may hold example blocks: the README and the documentation's pages."""
    return [README] + sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs" / "guide").glob("*.md"))


def all_text() -> str:
    return "\n\n".join(p.read_text(encoding="utf-8") for p in documents())
EXAMPLES_DIR = ROOT / "results" / "examples"


@dataclass(frozen=True)
class Example:
    commands: tuple[str, ...]                 # shown, in order
    setup: tuple[str, ...] = ()               # run first, not shown
    corpora: tuple[str, ...] = ()             # corpus files the commands read ($STRUCTKIT_DATA or the cache)
    keep: dict = field(default_factory=dict)  # command index -> ("head" | "tail", n lines)
    server: str | None = None                 # shown first, run in the background (`structkit serve`)
    warm_up: tuple[str, ...] = ()             # run first, not shown: the numba cache warm for the shown times
    cold: bool = False                        # main() also times the first command with a cold cache


SAMPLE_LA2 = ("structkit train --task chunk --train sample/chunk/train.txt --algo lookahead "
              "--depth 2 --model la2.model")
DEV_SPLIT = ("structkit train --task chunk --train conll2000/train.txt --algo lookahead --dev-split 0.1 "
             "--model chunk.model -v")

EXAMPLES: dict[str, Example] = {
    # "History-based tagging with lookahead": explain on the sample chunker.
    "explain": Example((SAMPLE_LA2,
                        "structkit explain --model la2.model sample/chunk/test.txt --token 3 --top 3")),
    # The same model's --scores (the margin explain breaks down).
    "scores": Example(("structkit chunk --model la2.model sample/chunk/test.txt --scores | head -3",),
                      setup=(SAMPLE_LA2,)),
    # "Choosing the epoch on dev": the --dev-split run with its per-epoch lines and summary.
    "dev-split": Example((DEV_SPLIT,), corpora=("conll2000/train.txt",), keep={0: ("tail", 3)}),
    # "Quickstart": train, chunk and conlleval's report on CoNLL-2000.
    # The shipped sample's chunker and chunking compile the kernels of the shown commands (warm_up);
    # main() also times the training with a cold cache (results/examples/quickstart.numba.json).
    "quickstart": Example(("structkit train --task chunk --train conll2000/train.txt --model chunk.model -v",
                           "structkit chunk --model chunk.model conll2000/test.txt -o chunked.txt",
                           "structkit eval --task chunk chunked.txt"),
                          corpora=("conll2000/train.txt", "conll2000/test.txt"), keep={0: ("tail", 1)},
                          warm_up=("structkit train --task chunk --train sample/chunk/train.txt --model warm.model",
                                   "structkit chunk --model warm.model sample/chunk/test.txt -o warm.out"),
                          cold=True),
}

PARTUT = "ud-english-partut/en_partut-ud-train.conllu"

EXAMPLES["serve"] = Example(
    # "Serving": the server's start line and answers, with models trained on UD English ParTUT.
    ("curl -s localhost:8080/tag -d '{\"text\": \"It works.\"}'",
     "curl -s localhost:8080/parse -d '{\"tokens\": [[[\"It\",\"PRON\"],[\"works\",\"VERB\"]]], \"scores\": false}'",
     "curl -s localhost:8080/pipeline -d '{\"text\": \"Isn'\"'\"'t it?\", \"models\": [\"pos\", \"parser\"], "
     "\"format\": \"conllu\"}'",
     "curl -s localhost:8080/tag -d '{\"text\": 3}'"),
    setup=(f"structkit train --task pos --train {PARTUT} --model ud-pos.model",
           f"structkit train --task parse --train {PARTUT} --model ud-parse.model"),
    corpora=(PARTUT,),
    server="structkit serve -m pos=ud-pos.model -m parser=ud-parse.model --port 8080")
# Examples too slow to run again in the tests (they compare the stored file only).
SLOW = {"serve"}
PORT = "8080"   # the port shown; the server runs on a free one, written back as 8080 in the output

TIME = re.compile(r"\b\d+(?:\.\d+)? s\b")


def normalise(text: str) -> str:
    """Output with its wall-clock times (a number followed by " s") replaced by "<time> s"."""
    return TIME.sub("<time> s", text)


def _shorten(out: str, keep) -> str:
    if not keep:
        return out
    how, n = keep
    lines = out.splitlines()
    if len(lines) <= n:
        return out
    part = lines[:n] + ["..."] if how == "head" else ["..."] + lines[-n:]
    return "\n".join(part) + "\n"


def run(name: str, workdir: Path | None = None, done: set | None = None) -> str:
    """Run one example; its output as the README shows it. Examples run in the same workdir
    share its files, and a setup command already run there (``done``) is not run again."""
    ex = EXAMPLES[name]
    own = workdir is None
    if own:
        tmp = tempfile.TemporaryDirectory(prefix="structkit-example-")
        workdir = Path(tmp.name)
    done = set() if done is None else done
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")

    def sh(cmd: str) -> str:
        p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd + " 2>&1"], cwd=workdir, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"example {name}: `{cmd}` exited {p.returncode}:\n{p.stdout}{p.stderr}")
        return p.stdout

    server = None
    try:
        for cmd in ex.warm_up:
            sh(cmd)
        for cmd in ex.setup:
            if cmd not in done:
                sh(cmd)
                done.add(cmd)
        parts, port = [], PORT
        if ex.server:
            server, first_line, port = _start_server(ex.server, workdir, env)
            parts.append(f"$ {ex.server} &\n{first_line.replace(':' + port + '/', ':' + PORT + '/')}")
        for i, cmd in enumerate(ex.commands):
            out = sh(cmd.replace(f"localhost:{PORT}", f"localhost:{port}"))
            out = _shorten(out if not out or out.endswith("\n") else out + "\n", ex.keep.get(i))
            done.add(cmd)
            parts.append(f"$ {cmd}\n{out}")
        return "".join(parts)
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if own:
            tmp.cleanup()


SUMMARY_TIME = re.compile(r", (\d+(?:\.\d+)?) s$")


def timed_first_command(name: str, cold: bool) -> dict:
    """The example's first command in a fresh folder (after its setup), as a user runs it: the time
    its output prints last (the train summary's), and the process's wall and CPU seconds; ``cold``:
    with a new, empty NUMBA_CACHE_DIR."""
    import resource

    ex = EXAMPLES[name]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory(prefix="structkit-example-") as tmp:
        for cmd in ex.setup:
            subprocess.run(["bash", "-c", cmd], cwd=tmp, env=env, check=True, capture_output=True)
        with cold_numba_cache() if cold else contextlib.nullcontext():
            env_run = env | ({"NUMBA_CACHE_DIR": os.environ["NUMBA_CACHE_DIR"]} if cold else {})
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            p = subprocess.run(["bash", "-o", "pipefail", "-c", ex.commands[0] + " 2>&1"], cwd=tmp, env=env_run,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"example {name}: `{ex.commands[0]}` exited {p.returncode}:\n{p.stdout}{p.stderr}")
    last = p.stdout.strip().splitlines()[-1]
    m = SUMMARY_TIME.search(last)
    return {"printed_seconds": float(m.group(1)) if m else None, "last_line": last,
            "wall_seconds": round(wall, 2),
            "cpu_seconds": round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 2)}


def numba_record(name: str, shown: str) -> dict:
    """results/examples/NAME.numba.json: the shown run's time (warm cache) and the first command
    run again with a cold one."""
    ex = EXAMPLES[name]
    cold = timed_first_command(name, cold=True)
    warm = timed_first_command(name, cold=False)
    shown_last = next(line for line in shown.splitlines() if SUMMARY_TIME.search(line))
    return {"example": name, "command": ex.commands[0], "machine": machine(),
            "shown": {"printed_seconds": float(SUMMARY_TIME.search(shown_last).group(1)),
                      "numba_cache": numba_cache("warm", "compiled by the example's warm-up commands, run "
                                                         "first: " + "; ".join(ex.warm_up))},
            "warm": warm | {"numba_cache": numba_cache("warm", "the same command again, after the shown run, "
                                                               "in a fresh folder")},
            "cold": cold | {"numba_cache": numba_cache("cold", "a new, empty NUMBA_CACHE_DIR: every kernel "
                                                               "compiled, as on the first run after installing")}}


def _start_server(cmd: str, workdir: Path, env: dict):
    """Start ``structkit serve`` on a free port; (process, its start line, the port)."""
    args = cmd.split()
    args[args.index("--port") + 1] = "0"
    proc = subprocess.Popen(args, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"`{cmd}` did not start: {line}{proc.stderr.read()}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()   # never let its pipe fill
    return proc, line, m.group(1)


def corpus_available(name: str) -> bool:
    """Whether the corpus files an example reads are where commands find them."""
    from structkit.datasets.paths import find

    return all(find(c) is not None for c in EXAMPLES[name].corpora)


# ---- the README blocks ------------------------------------------------------------------------

def _marker(name: str) -> str:
    return f"<!-- example: {name} -->"


END = "<!-- example: end -->"
BLOCK = re.compile(r"^<!-- example: (?P<name>[\w.-]+) -->\n```text\n(?P<body>.*?)```\n<!-- example: end -->$",
                   re.S | re.M)


def readme_blocks(text: str) -> dict[str, str]:
    """NAME -> the text of the README's example block NAME (inside its fence)."""
    return {m.group("name"): m.group("body") for m in BLOCK.finditer(text) if m.group("name") != "end"}


def replace_block(text: str, name: str, body: str) -> str:
    start = text.index(_marker(name) + "\n")
    end = text.index(END, start)
    return text[:start] + f"{_marker(name)}\n```text\n{body}```\n" + text[end:]


def stored(name: str, examples_dir: Path = EXAMPLES_DIR) -> str:
    return (examples_dir / f"{name}.txt").read_text()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"examples to run (default: all: {', '.join(EXAMPLES)})")
    ap.add_argument("--check", action="store_true", help="compare README blocks with results/examples")
    ap.add_argument("--no-readme", action="store_true",
                    help="write results/examples only (README.md may be edited by others meanwhile)")
    ap.add_argument("--sync-readme", action="store_true",
                    help="only copy results/examples/NAME.txt into README.md's blocks (read and written at once)")
    args = ap.parse_args(argv)
    if args.sync_readme:
        for doc in documents():
            text = doc.read_text()
            for name in EXAMPLES:
                if _marker(name) in text:
                    text = replace_block(text, name, stored(name))
            doc.write_text(text)
        return 0
    docs = {doc: doc.read_text() for doc in documents()}
    if args.check:
        blocks, bad = readme_blocks(all_text()), 0
        for name in EXAMPLES:
            if blocks.get(name) != stored(name):
                print(f"README.md's example {name} differs from results/examples/{name}.txt")
                bad += 1
        return 1 if bad else 0
    names = args.names or list(EXAMPLES)
    EXAMPLES_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="structkit-examples-") as tmp:
        done: set = set()
        for name in names:
            if EXAMPLES[name].corpora and not corpus_available(name):
                sys.exit(f"example {name} needs {', '.join(EXAMPLES[name].corpora)} "
                         "($STRUCTKIT_DATA or `structkit data fetch`)")
            out = run(name, Path(tmp), done)
            (EXAMPLES_DIR / f"{name}.txt").write_text(out)
            if EXAMPLES[name].cold:
                rec = numba_record(name, out)
                (EXAMPLES_DIR / f"{name}.numba.json").write_text(json.dumps(rec, indent=2) + "\n")
                print(f"results/examples/{name}.numba.json: shown {rec['shown']['printed_seconds']} s (warm); "
                      f"again warm {rec['warm']['printed_seconds']} s, cold {rec['cold']['printed_seconds']} s")
            where = [doc for doc, text in docs.items() if _marker(name) in text]
            for doc in where:
                docs[doc] = replace_block(docs[doc], name, out)
            if not where:
                print(f"no document has a block {_marker(name)}: wrote results/examples/{name}.txt only")
            print(f"results/examples/{name}.txt:\n{out}")
    if not args.no_readme:
        for doc, text in docs.items():
            doc.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
