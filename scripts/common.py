"""Helpers shared by the experiment and benchmark scripts: running the CLI, timing, machine info."""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def structkit(*args: str, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
    """Run the CLI as a user would (a new process); returns (wall seconds, process). Python
    caches bytecode as in a normal install, even where PYTHONDONTWRITEBYTECODE is set (our
    sandbox sets it, which adds 0.1-0.3 s of compiling to every start-up)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "structkit", *map(str, args)],
                       capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if check and p.returncode != 0:
        sys.exit(f"structkit {' '.join(map(str, args))} failed:\n{p.stderr}")
    return wall, p


def measured(args: list, ok: tuple[int, ...] = (0,)) -> dict:
    """Run the CLI as a new process: its exit code, wall and CPU seconds (the process's and its
    workers'), peak RSS (``os.wait4``), standard output and error; an exit code not in ``ok``
    ends the script with the command's error."""
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "structkit", *map(str, args)], env=env, stdout=so, stderr=se)
        _, status, ru = os.wait4(p.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        so.seek(0)
        se.seek(0)
        err = se.read().decode()
        if code not in ok:
            sys.exit(f"structkit {' '.join(map(str, args))} failed:\n{err}")
        return {"code": code, "wall_seconds": round(wall, 2), "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2),
                "peak_mb": round(ru.ru_maxrss / 1024, 1), "stdout": so.read().decode(), "stderr": err}


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished child processes (on a shared machine
    the wall time of a run also counts the time other jobs had the cores)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine() -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M:%S")}


def numba_cache(state: str, how: str) -> dict:
    """How numba's on-disk cache stood for a script's timed runs, for its JSON (``"numba_cache"``)
    and, as ``["words"]``, for its report next to the times. structkit compiles its kernels on
    first use and caches them on disk (structkit/jit.py: the package's __pycache__ folders, or
    ``NUMBA_CACHE_DIR``), so a command's first run after installing (or after a kernel's source
    changed) also compiles, which can take several times the warm run's time. ``state``: "warm"
    (the kernels were compiled before the timing; ``how`` says by what), "cold" (compiled within
    the timed run, e.g. under ``cold_numba_cache()``; ``how`` says so) or "not recorded" (an older
    run that did not control it; ``how`` says what is known)."""
    if state not in ("warm", "cold", "not recorded"):
        raise ValueError(f"numba cache state {state!r}: warm, cold or not recorded")
    return {"state": state, "how": how, "words": f"numba cache {state} ({how})"}


@contextlib.contextmanager
def cold_numba_cache():
    """Within it, the commands this script starts (``structkit()``, ``measured()``, any subprocess
    given ``os.environ``) use a new, empty ``NUMBA_CACHE_DIR``: each compiles every kernel it
    calls, as the first run after installing does. The folder is removed on leaving."""
    import tempfile

    old = os.environ.get("NUMBA_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="structkit-cold-numba-") as d:
        os.environ["NUMBA_CACHE_DIR"] = d
        try:
            yield d
        finally:
            if old is None:
                os.environ.pop("NUMBA_CACHE_DIR", None)
            else:
                os.environ["NUMBA_CACHE_DIR"] = old


def annotate_process(tree: str, model: str, text: str, jobs: int) -> dict:
    """``structkit annotate -m MODEL TEXT --jobs N`` as a new process with ``tree`` on
    PYTHONPATH (bytecode caches kept): its wall and CPU seconds (user + system, its workers
    included) and the sha256 (16 digits) of what it wrote; a failure ends the script."""
    import hashlib
    import tempfile

    env = {**os.environ, "PYTHONPATH": tree}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "structkit", "annotate", "-m", model, text,
                              "--jobs", str(jobs), "-o", f"{d}/out.conllu"], env=env, cwd=d)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{tree}: annotate --jobs {jobs} failed")
        sha = hashlib.sha256(Path(f"{d}/out.conllu").read_bytes()).hexdigest()[:16]
    return {"cpu": round(ru.ru_utime + ru.ru_stime, 3), "wall": round(wall, 3), "sha": sha}


def write_slice(src: str, dst: Path, n_sentences: int) -> Path:
    """The first n sentences of a CoNLL file (for warming the numba cache)."""
    from structkit.io.conll import read_conll

    with open(dst, "w") as out:
        for s in itertools.islice(read_conll(src), n_sentences):
            out.write("\n".join(" ".join(r) for r in s.rows) + "\n\n")
    return dst


def dump_json(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def pyplot():
    """matplotlib.pyplot with the file-only Agg backend, or None (and a note) when matplotlib
    is not installed (`pip install -e '.[experiments]'`)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return None
    return plt


def experiment_main(doc: str, run, write_report) -> None:
    """Command line of the config-driven experiment scripts: run each TOML config (tuning runs
    in ``--jobs`` processes, final runs serially), then write the report; ``--report-only``
    rewrites the report from the stored JSON."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("configs", nargs="*")
    ap.add_argument("--jobs", type=int, default=2, help="parallel tuning runs (final runs are serial)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not args.report_only:
        for c in args.configs:
            run(c, args.jobs)
    write_report()


def read_udpipe(path: str):
    """A CoNLL-U file as UDPipe's Sentences."""
    import ufal.udpipe as u

    fmt = u.InputFormat.newConlluInputFormat()
    fmt.setText(Path(path).read_text(encoding="utf-8"))
    sents, err = u.Sentences(), u.ProcessingError()
    s = u.Sentence()
    while fmt.nextSentence(s, err):
        sents.push_back(s)
        s = u.Sentence()
    if err.occurred():
        raise RuntimeError(f"{path}: {err.message}")
    return sents
