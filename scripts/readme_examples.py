"""The README's examples of command output, produced by running the commands.

    python scripts/readme_examples.py                 # run every example, write results/examples/NAME.txt
                                                      # and the README blocks between the markers
    python scripts/readme_examples.py explain scores  # only these
    python scripts/readme_examples.py --check         # exit 1 when a README block differs from its file

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

``tests/test_readme_examples.py`` checks that every README block equals its file and runs the
examples again: the sample-data ones always, the corpus ones when the corpus is found, except
those in ``SLOW`` (``serve`` trains a parser on ParTUT first), which are compared as stored. Output is compared byte for byte except wall-clock times, which ``normalise`` replaces
by a placeholder in both before comparing (``11.0 s``, ``(0.21 s)``, ``in 0.9 s``: a number
directly followed by `` s``).
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLES_DIR = ROOT / "results" / "examples"


@dataclass(frozen=True)
class Example:
    commands: tuple[str, ...]                 # shown, in order
    setup: tuple[str, ...] = ()               # run first, not shown
    corpora: tuple[str, ...] = ()             # corpus files the commands read ($STRUCTKIT_DATA or the cache)
    keep: dict = field(default_factory=dict)  # command index -> ("head" | "tail", n lines)
    server: str | None = None                 # shown first, run in the background (`structkit serve`)


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
    "quickstart": Example(("structkit train --task chunk --train conll2000/train.txt --model chunk.model -v",
                           "structkit chunk --model chunk.model conll2000/test.txt -o chunked.txt",
                           "structkit eval --task chunk chunked.txt"),
                          corpora=("conll2000/train.txt", "conll2000/test.txt"), keep={0: ("tail", 1)}),
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
    args = ap.parse_args(argv)
    text = README.read_text()
    if args.check:
        blocks, bad = readme_blocks(text), 0
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
            if _marker(name) in text:
                text = replace_block(text, name, out)
            else:
                print(f"README.md has no block {_marker(name)}: wrote results/examples/{name}.txt only")
            print(f"results/examples/{name}.txt:\n{out}")
    README.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
