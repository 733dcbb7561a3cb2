"""Rerun the hostile inputs of issue 41 (round 3) against the CLI and the Python API; writes results/hostile-round3.json and .md.

    python scripts/hostile_round3.py --model PIPELINE.skm [--tokenizer TOK.skm] [--morph MORPH.skm]
                                     [--quick] [--out results/hostile-round3.json]

Without --tokenizer / --morph, tiny ones are trained from tests/fixtures/tiny_ud/train.conllu
(`structkit train --task tokenize|morph ... -q`) in the temporary folder. Every input is generated
in a temporary folder ($TMP in the commands shown) that is removed at the end. --quick is a smoke
run: sizes divided by 10 (not in cases 6 and 13a), wall-clock guards and waits divided by 5
(thresholds of the checks are kept, except where a wait bounds them). --only 1,5,13b runs some
cases (for development).

How each case is run and measured: a new process (never in-process), in its own session, stdout
to /dev/null unless the case reads it, stderr to a file, TMPDIR set to a private folder (watched:
a run that puts over 500 MB there is killed and fails). A watcher thread walks the process tree
(parent ids from /proc/*/stat; this kernel has no /proc/PID/task/TID/children) every 0.2 s and
sums each process's Pss (smaps_rollup); "peak MB" is the largest of that sum, any process's
VmHWM and the ru_maxrss that os.wait4 gives for the main process (and the children it waited
for). A tree over 4 GB is killed (marked "memory cap"). A run still going at its guard is killed
(SIGKILL to its process group) and counted as a hang. "traceback" = "Traceback" in stderr (a
failure); "one line" = exactly one non-empty stderr line (progress-bar lines left out) when the
exit code is not 0; "orphans" = descendants seen during the run still alive 5 s after the main
process ended (they are then killed). A failure of the harness itself is recorded as a "harness
error" for that case; the other cases still run. The numba kernels are warmed first (each model
run once on a small input, untimed).

Cases:

 1. Endless standard input: `yes | structkit annotate -m MODEL -` for 60 s, then SIGTERM to
    structkit. Checks: first output byte within 30 s (streaming, not reading all input first),
    peak < 500 MB, exit 143 (SIGTERM) or 0/141 (the pipe closed), no traceback, nothing left in
    TMPDIR. Same with `structkit morph -m MORPH --text -` (the rules tokenizer) and with
    `--tokenizer TOK` (when `morph --help` has --text).
 2. A 10 MB single line of `casa ` with no newline, `annotate -m MODEL FILE -o OUT`: must finish
    (guard 600 s) with exit 0 and peak < 1 GB. Same with 10 MB of `a,` (one token per 2 bytes).
 3. `structkit tokenize -m TOK` on the same two 10 MB lines (the tokenizer alone, a baseline).
 4. A tokenizer model whose known-character table is all 0xff: not crafted here (skipped);
    covered by tests/tokenizer/test_tokenize_bounds.py.
 5. Symlink in --output-dir: od/t1.conllu -> ../outside/victim.txt, `annotate -m MODEL in/
    --output-dir od` with in/t1.txt (run in $TMP/case5). Checks: victim.txt's sha256 unchanged
    (else a data loss), a non-zero exit with a one-line error.
 6. `annotate -m MODEL BIG.txt -j 2 -o out.conllu` on a 5 MB text (fixture sentences, paragraphs
    of 5; 5 MB with --quick too), SIGTERM to the main process after 10 s (--quick: 4 s), and not
    before its workers run (the pool starts with the second 1 MB block) plus 1 s, waiting up to
    60 s for them. Checks: exit within 5 s of the SIGTERM, no process whose command line holds the
    case's unique folder name (pgrep -f) 1 s after, no out.conllu and no .tmp-* left in its folder.
 7. `structkit info` on a copy of MODEL (a baseline: exit 0); on a text file of ESC sequences
    named esc.skm; and on such a file whose name holds ESC bytes. Checks: a one-line error and no
    raw ESC byte in stderr. (Crafted ESC model cards are covered by the tests.)
 8. Skipped (covered by the tests).
 9. Python API: `nlp.pipe(itertools.repeat('Il gatto dorme.'), jobs=2)`, 2,000 docs taken with
    next(): must finish (guard 600 s) with peak < 2 GB (pipe used to read all its input first).
10. Python API bare exceptions, a process each: `structkit.load(5)`, `nlp("Il \\ud800 gatto.")`
    (a lone surrogate) and `nlp.pipe(None)` (then next() on it: the JSON says whether the
    error came at the call or at the first next()). Check: the exception is a
    structkit.errors.UserError (its type name is recorded), not TypeError/UnicodeEncodeError.
11. TMPDIR full: a 16 kB tmpfs mounted on $TMP/full (needs root; else skipped) holding 12 kB
    (the last page is for the probe file of Python's tempfile, which otherwise passes the folder
    over for /tmp), then with TMPDIR there: `annotate -m MODEL FILE` (a 5 MB text as in case 6),
    `eval --task ud GOLD - < GOLD` (eval keeps standard input in a temporary file: 10 kB) and
    `train --task pipeline` on the fixture (a temporary folder). Check: exit 0 (nothing needed
    the temporary folder), or a one-line error that names the folder and not "standard output";
    nothing left in it. Unmounted at the end.
12. `structkit eval --task ud GOLD PRED` with GOLD the fixture and PRED a 10 MB line: of `a`
    (no tabs), and a well-formed word row whose FORM (and # text) is 10 MB. Check: stderr
    under 2,000 bytes.
13. `train --task pipeline` on the fixture plus one 50,000-word sentence (also 50,000 with
    --quick: the length is what is refused): refused (non-zero exit, no model written) in under
    10 s and 500 MB. And stale temporaries: in an output folder, `.tmp-<dead pid>.<host hash>-x`
    (the pid of a `true` that was waited for; host hash = sha1(nodename)[:8], as
    structkit/io/files.py `owned` names them) and `.tmp-<this harness's pid>.<host hash>-y` (a live
    process's); `annotate -m MODEL in/ --output-dir od`. Checks: the dead one removed, the live one
    kept (removing it would be a data loss), the output written.
14. Worker orphans: `python -c` running `nlp.pipe(endless texts, jobs=2)`; the children pids are
    recorded, SIGTERM to the python process after 10 s. Check: it exits and none of its children
    is alive 5 s later.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_ud" / "train.conllu"
OUT = ROOT / "results" / "hostile-round3.json"
VENV = ROOT / ".venv" / "bin"
SK = str(VENV / "structkit") if (VENV / "structkit").exists() else shutil.which("structkit") or "structkit"
PY = str(VENV / "python") if (VENV / "python").exists() else sys.executable
MEM_CAP_KB = 4 << 20          # a process tree over 4 GB is killed
TMPDIR_CAP = 500 << 20        # a run that puts over 500 MB in its TMPDIR is killed
ORPHAN_GRACE = 5.0
PROGRESS = re.compile(r"\d+%\||\d[\d.]*\s*(it|s|B|kB|MB|w|words|sent)/(s|it)\]|\|\s*\d+/\d+\s*\[")
HOST = hashlib.sha1(os.uname().nodename.encode("utf-8", "replace")).hexdigest()[:8]


# --- processes ------------------------------------------------------------------------------

def _stat(pid: int):
    """(ppid, start time, state) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(b")") + 2:].split()
    return int(rest[1]), int(rest[19]), rest[0].decode()


def _tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st:
                kids.setdefault(st[0], []).append(int(name))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def _mem_kb(pid: int) -> tuple[int, int]:
    """(Pss or else VmRSS, VmHWM) of a process in kB; zeros when it is gone."""
    pss = rss = hwm = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                    break
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                    break
    except (OSError, ValueError):
        pass
    return (pss or rss), hwm


def _alive(pid: int, start: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == start and st[2] not in ("Z", "X")


def _du(folder: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


class Proc:
    """A command in its own session, watched: memory of its process tree, its TMPDIR, the
    first byte of its standard output (``watch_stdout``), its descendants."""

    def __init__(self, cmd: list, stderr_path: Path, *, cwd=None, env=None, stdin=subprocess.DEVNULL,
                 watch_stdout: bool = False, tmpdir: str | None = None):
        self.cmd = [str(c) for c in cmd]
        self.err_path = stderr_path
        self.tmpdir = tmpdir
        self.first_byte = None
        self.out_bytes = 0
        self.tree_peak_kb = self.hwm_kb = self.maxrss_kb = 0
        self.tmp_peak = 0
        self.seen: dict[int, int] = {}       # descendant pid -> start time
        self.capped = None
        self.status = None
        self.end = None
        self._stop = threading.Event()
        with open(stderr_path, "wb") as err:
            self.t0 = time.perf_counter()
            self.p = subprocess.Popen(self.cmd, cwd=cwd, env=env, stdin=stdin, stderr=err,
                                      stdout=subprocess.PIPE if watch_stdout else subprocess.DEVNULL,
                                      start_new_session=True)
        self.pid = self.p.pid
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        if watch_stdout:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        f = self.p.stdout
        while True:
            try:
                b = f.read1(1 << 16)
            except (OSError, ValueError):
                break
            if not b:
                break
            if self.first_byte is None:
                self.first_byte = time.perf_counter() - self.t0
            self.out_bytes += len(b)

    def _watch(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in _tree(self.pid):
                st = _stat(pid)
                if st is None or st[2] in ("Z", "X"):
                    continue
                if pid != self.pid:
                    self.seen.setdefault(pid, st[1])
                pss, hwm = _mem_kb(pid)
                total += pss
                self.hwm_kb = max(self.hwm_kb, hwm)
            self.tree_peak_kb = max(self.tree_peak_kb, total)
            if total > MEM_CAP_KB and self.capped is None:
                self.capped = "memory cap (4 GB)"
                self.kill_group()
            if self.tmpdir:
                size = _du(self.tmpdir)
                self.tmp_peak = max(self.tmp_peak, size)
                if size > TMPDIR_CAP and self.capped is None:
                    self.capped = "TMPDIR cap (500 MB)"
                    self.kill_group()
            self._stop.wait(0.2)

    def reap(self, block: bool = False) -> bool:
        if self.status is not None:
            return True
        pid, status, ru = os.wait4(self.pid, 0 if block else os.WNOHANG)
        if pid == 0:
            return False
        self.end = time.perf_counter()
        self.status = os.waitstatus_to_exitcode(status)
        self.maxrss_kb = ru.ru_maxrss
        self.p.returncode = self.status
        return True

    def wait(self, timeout: float) -> bool:
        deadline = time.perf_counter() + timeout
        while not self.reap():
            if time.perf_counter() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def signal(self, sig: int) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill_group(self) -> None:
        if self.status is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def finish(self, timeout: float) -> dict:
        """Wait up to ``timeout`` more seconds (else kill the group: a hang); then the facts."""
        hang = not self.wait(timeout)
        if hang:
            self.kill_group()
            self.reap(block=True)
        self._stop.set()
        self._watcher.join(2)
        if self.p.stdout:
            try:
                self.p.stdout.close()
            except OSError:
                pass
        survivors = self.survivors(ORPHAN_GRACE)
        for pid in survivors:   # leave nothing running on the machine
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return {"exit": self.status, "hang": hang or self.capped is not None,
                "killed_at_guard": hang, "capped": self.capped,
                "seconds": round(self.end - self.t0, 2),
                "peak_mb": round(max(self.tree_peak_kb, self.hwm_kb, self.maxrss_kb) / 1024, 1),
                "tree_pss_peak_mb": round(self.tree_peak_kb / 1024, 1),
                "process_rss_peak_mb": round(max(self.hwm_kb, self.maxrss_kb) / 1024, 1),
                "descendants": len(self.seen), "orphans": survivors,
                "tmpdir_peak_mb": round(self.tmp_peak / 2**20, 1)}

    def survivors(self, grace: float) -> list[int]:
        deadline = time.perf_counter() + grace
        while True:
            left = [p for p, s in self.seen.items() if _alive(p, s)]
            if not left or time.perf_counter() >= deadline:
                return left
            time.sleep(0.1)


def _printable(s: str, limit: int = 300) -> str:
    s = "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in s)
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} chars)"


def stderr_facts(path: Path) -> dict:
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")
    lines = [ln for ln in re.split(r"[\r\n]", text) if ln.strip() and not PROGRESS.search(ln)]
    return {"stderr_bytes": len(data), "traceback": "Traceback" in text, "stderr_lines": len(lines),
            "stderr_has_esc": b"\x1b" in data,
            "stderr_last": _printable(lines[-1]) if lines else "",
            "stderr_first": _printable(lines[0]) if len(lines) > 1 else ""}


# --- the harness ----------------------------------------------------------------------------

class Ctx:
    def __init__(self, args, tmp: Path):
        self.a = args
        self.quick = args.quick
        self.tmp = tmp
        self.model = os.path.abspath(args.model)
        self.tok = self.morph = None
        self.mounts: list[str] = []
        self.has_morph_text = False

    def size(self, n: int) -> int:
        return n // 10 if self.quick else n

    def guard(self, s: float) -> float:
        return s / 5 if self.quick else s

    def case_dir(self, key: str) -> Path:
        d = self.tmp / f"case{key}-{uuid.uuid4().hex[:10]}"
        d.mkdir()
        return d

    def env(self, tmpdir: str) -> dict:
        e = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        e["TMPDIR"] = tmpdir
        return e

    def show(self, cmd: list, cwd: Path | None = None) -> str:
        s = " ".join(shlex.quote(str(c)) for c in cmd)
        s = s.replace(SK, "structkit").replace(PY, "python")
        s = s.replace(str(self.tmp), "$TMP").replace(str(ROOT) + "/", "")
        if cwd is not None:
            s = f"(cd {str(cwd).replace(str(self.tmp), '$TMP')} && {s})"
        return _printable(s, 2000)

    def launch(self, d: Path, cmd: list, **kw) -> Proc:
        tmpdir = kw.pop("tmpdir", None)
        if tmpdir is None:
            tmpdir = str(d / "tmpdir")
            os.makedirs(tmpdir, exist_ok=True)
            watch = tmpdir
        else:
            watch = None
        env = self.env(tmpdir)
        env.update(kw.pop("env_extra", {}))
        return Proc(cmd, d / "stderr.txt", env=env, tmpdir=watch, **kw)

    def record(self, name: str, cmd: list, proc: Proc, facts: dict, ok, check: str, *,
               data_loss=None, cwd: Path | None = None, **extra) -> dict:
        err = stderr_facts(proc.err_path)
        for k in ("stderr_last", "stderr_first"):
            err[k] = err[k].replace(str(self.tmp), "$TMP")
        r = {"name": name, "command": self.show(cmd, cwd), **facts, **err,
             "one_line": (err["stderr_lines"] == 1) if (facts["exit"] != 0 and not facts["hang"]) else None,
             "check_ok": ok, "check": check, "data_loss": data_loss, **extra}
        if proc.tmpdir and os.path.isdir(proc.tmpdir):
            r["tmpdir_left"] = sorted(os.listdir(proc.tmpdir))
        return r


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fixture_texts() -> list[str]:
    return [ln[9:].rstrip("\n") for ln in open(FIXTURE, encoding="utf-8") if ln.startswith("# text = ")]


def write_text(path: Path, n_bytes: int) -> Path:
    """About ``n_bytes`` of the fixture's sentences, five to a paragraph, one a line."""
    rng = random.Random(41)
    texts = fixture_texts()
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < n_bytes:
            para = "\n".join(rng.choice(texts) for _ in range(5)) + "\n\n"
            f.write(para)
            size += len(para.encode())
    return path


def write_line(path: Path, unit: str, n_bytes: int) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        block = unit * ((1 << 20) // len(unit))
        for _ in range(n_bytes // len(block)):
            f.write(block)
    return path


# --- the cases ------------------------------------------------------------------------------

def case_endless(ctx: Ctx, key: str, name: str, args: list) -> dict:
    d = ctx.case_dir(key)
    run_s = ctx.guard(60)
    cmd = [SK, *args]
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc = ctx.launch(d, cmd, stdin=yes.stdout, watch_stdout=True)
        yes.stdout.close()
        early = proc.wait(run_s)
        t_term = time.perf_counter()
        proc.signal(signal.SIGTERM)
        facts = proc.finish(10)
    finally:
        yes.kill()
        yes.wait()
    fb = proc.first_byte
    term_s = None if early else round(proc.end - t_term, 2)
    exit_ok = not early and facts["exit"] in (143, -15, 0, 141, -13)
    first_ok = fb is not None and fb <= min(30, run_s)
    ok = exit_ok and first_ok and facts["peak_mb"] < 500 and not facts["hang"]
    bits = [f"first byte {'never' if fb is None else f'{fb:.1f} s'}", f"{proc.out_bytes / 2**20:.1f} MB out",
            "ended before SIGTERM" if early else f"exit {term_s} s after SIGTERM",
            f"TMPDIR peak {facts['tmpdir_peak_mb']} MB"]
    r = ctx.record(f"{key} {name}", ["yes", "|", *cmd], proc, facts, ok, "; ".join(bits),
                   first_byte_seconds=None if fb is None else round(fb, 2), stdout_bytes=proc.out_bytes,
                   seconds_sigterm_to_exit=term_s)
    r["command"] = "yes | " + ctx.show(cmd)
    if r.get("tmpdir_left"):
        r["check_ok"] = False
        r["check"] += f"; left in TMPDIR: {r['tmpdir_left']}"
    return r


def case_line(ctx: Ctx, key: str, name: str, cmd_head: list, line: Path, limit_mb: float | None) -> dict:
    d = ctx.case_dir(key)
    out = d / "out.conllu"
    cmd = [*cmd_head, line, "-o", out]
    proc = ctx.launch(d, cmd)
    facts = proc.finish(ctx.guard(600))
    out_mb = out.stat().st_size / 2**20 if out.exists() else 0
    ok = facts["exit"] == 0 and not facts["hang"] and out_mb > 0 and (limit_mb is None or facts["peak_mb"] < limit_mb)
    check = f"output {out_mb:.1f} MB" + (f"; peak limit {limit_mb:.0f} MB" if limit_mb else " (baseline)")
    return ctx.record(f"{key} {name}", cmd, proc, facts, ok, check)


def case_symlink(ctx: Ctx) -> dict:
    d = ctx.case_dir("5")
    (d / "in").mkdir()
    (d / "in" / "t1.txt").write_text("Tom sees the cat.\n", encoding="utf-8")
    (d / "outside").mkdir()
    victim = d / "outside" / "victim.txt"
    victim.write_text("precious data that must survive\n" * 100, encoding="utf-8")
    before = sha256(victim)
    (d / "od").mkdir()
    os.symlink("../outside/victim.txt", d / "od" / "t1.conllu")
    cmd = [SK, "annotate", "-m", ctx.model, "in/", "--output-dir", "od"]
    proc = ctx.launch(d, cmd, cwd=d)
    facts = proc.finish(ctx.guard(120))
    after = sha256(victim) if victim.exists() else None
    link = d / "od" / "t1.conllu"
    state = "symlink kept" if link.is_symlink() else ("replaced by a regular file" if link.exists() else "removed")
    unchanged = after == before
    errs = stderr_facts(proc.err_path)
    ok = unchanged and facts["exit"] != 0 and errs["stderr_lines"] == 1 and not errs["traceback"]
    check = (f"victim.txt {'unchanged' if unchanged else 'CHANGED' if after else 'GONE'}; od/t1.conllu {state}; "
             f"exit {facts['exit']}")
    return ctx.record("5 annotate --output-dir holding a symlink", cmd, proc, facts, ok, check,
                      data_loss=not unchanged, cwd=d, link_state=state)


def case_sigterm_jobs(ctx: Ctx) -> dict:
    d = ctx.case_dir("6")
    marker = d.name
    big = write_text(d / "big.txt", 5 << 20)     # also with --quick: the run is cut short anyway
    outdir = d / "out"
    outdir.mkdir()
    out = outdir / "out.conllu"
    cmd = [SK, "annotate", "-m", ctx.model, big, "-j", "2", "-o", out]
    proc = ctx.launch(d, cmd)
    # SIGTERM after 10 s (--quick: 4 s), and not before the workers run (the pool starts with the
    # second 1 MB block: the first sentences run in the main process first) plus 1 s, up to 60 s
    early = proc.wait(10 if not ctx.quick else 4)
    while not early and not proc.seen and time.perf_counter() - proc.t0 < 60:
        early = proc.wait(0.2)
    if not early and proc.seen:
        early = proc.wait(1)
    t_term = time.perf_counter()
    sigterm_at = round(t_term - proc.t0, 1)
    n_desc = len(proc.seen)
    proc.signal(signal.SIGTERM)
    exited = proc.wait(ctx.guard(60))
    term_s = None if early else round((proc.end or time.perf_counter()) - t_term, 2)
    time.sleep(1)
    grep = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    left_workers = [int(p) for p in grep]
    facts = proc.finish(0 if exited else 0.1)
    left = sorted(p.name for p in outdir.iterdir())
    tmp_left = [n for n in left if n.startswith(".tmp-")]
    if early:
        ok = None
        check = f"finished before the SIGTERM (exit {facts['exit']}): nothing to check; use a bigger text"
    else:
        ok = (exited and term_s is not None and term_s < 5 and not left_workers and not out.exists()
              and not tmp_left and not facts["orphans"])
        check = (f"SIGTERM at {sigterm_at} s, exit {term_s} s later; workers seen {n_desc}, left (pgrep) {left_workers}; "
                 f"out.conllu {'LEFT' if out.exists() else 'absent'}; .tmp-* left {tmp_left}")
        if not n_desc:
            check += " (no worker had started: the worker check says little)"
    return ctx.record("6 annotate -j 2 -o, SIGTERM", cmd, proc, facts, ok, check,
                      seconds_sigterm_to_exit=term_s, sigterm_at_seconds=sigterm_at, workers_at_sigterm=n_desc, workers_left=left_workers, output_left=left)


def case_info(ctx: Ctx) -> list[dict]:
    rows = []
    d = ctx.case_dir("7a")
    copy = d / "copy.skm"
    shutil.copyfile(ctx.model, copy)
    cmd = [SK, "info", copy]
    proc = ctx.launch(d, cmd)
    facts = proc.finish(ctx.guard(120))
    rows.append(ctx.record("7a info on a copy of the model", cmd, proc, facts,
                           facts["exit"] == 0 and not facts["hang"], "baseline: exit 0"))
    esc = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\n" * 20
    for key, fname, label in (("7b", "esc.skm", "info on a text file of ESC sequences named esc.skm"),
                              ("7c", "esc\x1b[31mred\x1b]0;x\x07.skm", "info on such a file whose name holds ESC")):
        d = ctx.case_dir(key)
        f = d / fname
        f.write_text(esc, encoding="utf-8")
        cmd = [SK, "info", f]
        proc = ctx.launch(d, cmd)
        facts = proc.finish(ctx.guard(120))
        errs = stderr_facts(proc.err_path)
        ok = (facts["exit"] != 0 and not facts["hang"] and errs["stderr_lines"] == 1
              and not errs["stderr_has_esc"] and not errs["traceback"])
        rows.append(ctx.record(f"{key} {label}", cmd, proc, facts, ok,
                               f"raw ESC in stderr: {'YES' if errs['stderr_has_esc'] else 'no'}"))
    return rows


PIPE_MANY = """
import itertools, sys, structkit
nlp = structkit.load(sys.argv[1])
g = nlp.pipe(itertools.repeat('Il gatto dorme.'), jobs=2)
docs = [next(g) for _ in range(int(sys.argv[2]))]
print(len(docs))
"""


def case_pipe_lazy(ctx: Ctx) -> dict:
    d = ctx.case_dir("9")
    n = ctx.size(2000)
    cmd = [PY, "-c", PIPE_MANY, ctx.model, str(n)]
    proc = ctx.launch(d, cmd)
    facts = proc.finish(ctx.guard(600))
    ok = facts["exit"] == 0 and not facts["hang"] and facts["peak_mb"] < 2048
    return ctx.record(f"9 API nlp.pipe(itertools.repeat(...), jobs=2), {n} docs", cmd, proc, facts, ok,
                      "peak limit 2048 MB; must finish")


API_ERR = """
import json, sys, structkit
where = "call"
try:
    {body}
    r = {{"raised": None, "where": None}}
except BaseException as e:
    r = {{"raised": type(e).__module__ + "." + type(e).__qualname__, "where": where,
         "user_error": isinstance(e, structkit.errors.UserError), "message": str(e)[:300]}}
print(json.dumps(r))
"""

API_CASES = [
    ("10a", "structkit.load(5)", "structkit.load(5)"),
    ("10b", 'nlp("Il \\ud800 gatto.")', 'nlp = structkit.load(sys.argv[1])\n    nlp("Il \\ud800 gatto.")'),
    ("10c", "nlp.pipe(None)", 'nlp = structkit.load(sys.argv[1])\n    g = nlp.pipe(None)\n'
                              '    where = "first next()"\n    next(g)'),
]


def case_api_error(ctx: Ctx, key: str, label: str, body: str) -> dict:
    d = ctx.case_dir(key)
    code = API_ERR.format(body=body)
    out = d / "result.json"
    code += f"\nopen({str(out)!r}, 'w').write(json.dumps(r))\n"
    cmd = [PY, "-c", code, ctx.model]
    proc = ctx.launch(d, cmd)
    facts = proc.finish(ctx.guard(120))
    try:
        res = json.loads(out.read_text())
    except (OSError, ValueError):
        res = {"raised": None, "where": None, "note": "no result written"}
    ok = bool(res.get("user_error")) and facts["exit"] == 0
    check = (f"raised {res.get('raised')} at the {res.get('where')}: {_printable(res.get('message', ''), 160)}"
             if res.get("raised") else f"nothing raised ({res.get('note', 'returned normally')})")
    r = ctx.record(f"{key} API {label}", cmd, proc, facts, ok, check, exception=res.get("raised"),
                   raised_at=res.get("where"))
    r["command"] = f"python -c '<API_ERR with: {label}>' {ctx.show([ctx.model])}"
    return r


def case_tmpdir_full(ctx: Ctx) -> list[dict]:
    d = ctx.case_dir("11")
    full = d / "full"
    full.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(full)], capture_output=True, text=True)
    if m.returncode != 0:
        return [{"name": "11 TMPDIR full", "skipped": f"mount failed: {m.stderr.strip()}"}]
    ctx.mounts.append(str(full))
    rows = []
    try:
        # 12 of the 16 kB: one page is left, for the file Python's tempfile writes to check the
        # folder (a folder where even that fails is passed over for /tmp), none for real writes
        (full / "filler").write_bytes(bytes(12 << 10))
        text = write_text(d / "text.txt", ctx.size(5 << 20))
        runs = [("11a", "annotate FILE", [SK, "annotate", "-m", ctx.model, text], None),
                ("11b", "eval --task ud GOLD - < GOLD (standard input kept in TMPDIR)",
                 [SK, "eval", "--task", "ud", FIXTURE, "-"], FIXTURE),
                ("11c", "train --task pipeline (a temporary folder for its jackknifing)",
                 [SK, "train", "--task", "pipeline", "--train", FIXTURE, "--model", d / "p.skm", "-q"], None)]
        for key, label, cmd, stdin_file in runs:
            sub = d / key
            sub.mkdir()
            with open(stdin_file or os.devnull, "rb") as stdin:
                proc = ctx.launch(sub, cmd, tmpdir=str(full), stdin=stdin)
                facts = proc.finish(ctx.guard(600))
            errs = stderr_facts(proc.err_path)
            left = sorted(n for n in os.listdir(full) if n != "filler")
            text_err = proc.err_path.read_text(errors="replace")
            if facts["exit"] == 0 and not facts["hang"]:
                ok, check = True, "exit 0: nothing needed the temporary folder"
            else:
                names = str(full) in text_err
                stdout_named = "standard output" in text_err
                ok = (not facts["hang"] and errs["stderr_lines"] == 1 and names and not stdout_named
                      and not errs["traceback"])
                check = (f"names TMPDIR: {'yes' if names else 'NO'}; says 'standard output': "
                         f"{'YES' if stdout_named else 'no'}")
            if left:
                ok = False
                check += f"; left in TMPDIR: {left}"
            r = ctx.record(f"{key} {label}, TMPDIR full (16 kB tmpfs)", cmd, proc, facts, ok, check,
                           env="TMPDIR=$TMP/" + os.path.relpath(full, ctx.tmp))
            r["command"] = f"TMPDIR={str(full).replace(str(ctx.tmp), '$TMP')} {r['command']}" + (
                f" < {ctx.show([stdin_file])}" if stdin_file else "")
            rows.append(r)
        return rows
    finally:
        if subprocess.run(["umount", str(full)], capture_output=True).returncode == 0:
            ctx.mounts.remove(str(full))


def case_eval(ctx: Ctx) -> list[dict]:
    rows = []
    n = ctx.size(10 << 20)
    for key, label, make in (
            ("12a", "a line of 'a' (no tabs)", True),
            ("12b", "a well-formed row whose FORM is the long line", False)):
        d = ctx.case_dir(key)
        pred = d / "pred.conllu"
        if make:
            write_line(pred, "a", n)
            with open(pred, "a") as f:
                f.write("\n")
        else:
            form = "a" * n
            pred.write_text(f"# text = {form}\n1\t{form}\t_\t_\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
        cmd = [SK, "eval", "--task", "ud", FIXTURE, pred]
        proc = ctx.launch(d, cmd)
        facts = proc.finish(ctx.guard(600))
        errs = stderr_facts(proc.err_path)
        ok = errs["stderr_bytes"] < 2000 and not facts["hang"] and not errs["traceback"]
        rows.append(ctx.record(f"{key} eval --task ud, PRED with a {n >> 20} MB line: {label}", cmd, proc, facts,
                               ok, f"stderr {errs['stderr_bytes']} bytes (limit 2000)"))
    return rows


def case_long_sentence(ctx: Ctx) -> dict:
    d = ctx.case_dir("13a")
    n = 50_000
    train = d / "long.conllu"
    with open(train, "w", encoding="utf-8") as f:
        f.write(FIXTURE.read_text(encoding="utf-8").rstrip("\n") + "\n\n")
        f.write("# sent_id = long\n")
        for i in range(1, n + 1):
            f.write(f"{i}\tw{i % 97}\tw\tNOUN\tNN\t_\t{i - 1}\t{'root' if i == 1 else 'dep'}\t_\t_\n")
        f.write("\n")
    model = d / "long.skm"
    cmd = [SK, "train", "--task", "pipeline", "--train", train, "--model", model, "-q"]
    proc = ctx.launch(d, cmd)
    facts = proc.finish(ctx.guard(120))
    written = model.exists()
    ok = (facts["exit"] not in (0, None) and not facts["hang"] and facts["seconds"] < 10
          and facts["peak_mb"] < 500 and not written)
    return ctx.record(f"13a train --task pipeline with a {n:,}-word sentence", cmd, proc, facts, ok,
                      f"refused in {facts['seconds']} s (limit 10), model {'WRITTEN' if written else 'not written'}")


def case_stale(ctx: Ctx) -> dict:
    d = ctx.case_dir("13b")
    (d / "in").mkdir()
    (d / "in" / "t1.txt").write_text("Tom sees the cat.\n", encoding="utf-8")
    od = d / "od"
    od.mkdir()
    t = subprocess.Popen(["true"])
    t.wait()
    dead = od / f".tmp-{t.pid}.{HOST}-x"
    live = od / f".tmp-{os.getpid()}.{HOST}-y"
    dead.write_text("left by a killed run\n")
    live.write_text("a live process's temporary\n")
    cmd = [SK, "annotate", "-m", ctx.model, "in/", "--output-dir", "od"]
    proc = ctx.launch(d, cmd, cwd=d)
    facts = proc.finish(ctx.guard(120))
    out = od / "t1.conllu"
    ok = (facts["exit"] == 0 and not dead.exists() and live.exists() and out.exists())
    check = (f"dead pid's .tmp {'removed' if not dead.exists() else 'LEFT'}; live pid's .tmp "
             f"{'kept' if live.exists() else 'REMOVED'}; output {'written' if out.exists() else 'MISSING'}")
    return ctx.record("13b annotate --output-dir sweeps a dead run's .tmp-*", cmd, proc, facts, ok, check,
                      data_loss=not live.exists(), cwd=d, dead_pid=t.pid)


PIPE_ENDLESS = """
import itertools, sys, structkit
nlp = structkit.load(sys.argv[1])
for doc in nlp.pipe(itertools.cycle(['Il gatto dorme.', 'Tom sees the cat.']), jobs=2):
    pass
"""


def case_orphans(ctx: Ctx) -> dict:
    d = ctx.case_dir("14")
    cmd = [PY, "-c", PIPE_ENDLESS, ctx.model]
    proc = ctx.launch(d, cmd)
    delay = 10 if not ctx.quick else 4
    early = proc.wait(delay)
    kids = [] if early else [p for p in _tree(proc.pid) if p != proc.pid]
    kid_start = {p: s for p in kids if (s := (_stat(p) or (0, None))[1]) is not None}
    t_term = time.perf_counter()
    proc.signal(signal.SIGTERM)
    exited = proc.wait(10)
    term_s = None if early else round((proc.end or time.perf_counter()) - t_term, 2)
    time.sleep(ORPHAN_GRACE)
    left = [p for p, s in kid_start.items() if _alive(p, s)]
    facts = proc.finish(0 if exited else 0.1)
    if early:
        ok, check = False, f"ended by itself before the SIGTERM (exit {facts['exit']})"
    else:
        ok = exited and not left and bool(kids)
        check = (f"children before SIGTERM {kids}; alive {ORPHAN_GRACE:.0f} s after: {left}; "
                 f"exit {term_s} s after SIGTERM")
    return ctx.record("14 API nlp.pipe(endless, jobs=2), SIGTERM: worker orphans", cmd, proc, facts, ok, check,
                      children=kids, children_left=left, seconds_sigterm_to_exit=term_s)


# --- setup, report ----------------------------------------------------------------------------

def train_small(ctx: Ctx) -> None:
    mdir = ctx.tmp / "models"
    mdir.mkdir(exist_ok=True)
    for task, attr in (("tokenize", "tok"), ("morph", "morph")):
        given = getattr(ctx.a, "tokenizer" if task == "tokenize" else "morph")
        if given:
            setattr(ctx, attr, os.path.abspath(given))
            continue
        path = mdir / f"tiny.{task}.skm"
        print(f"training a tiny {task} model from the fixture", flush=True)
        subprocess.run([SK, "train", "--task", task, "--train", FIXTURE, "--model", path, "-q"], check=True,
                       env=ctx.env(tempfile.gettempdir()))
        setattr(ctx, attr, str(path))


def warm_up(ctx: Ctx) -> None:
    """Each model run once on a small input (untimed): the numba kernels are compiled/cached."""
    small = ctx.tmp / "warm.txt"
    small.write_text("\n".join(fixture_texts()[:5]) + "\n", encoding="utf-8")
    runs = [[SK, "annotate", "-m", ctx.model, small], [SK, "tokenize", "-m", ctx.tok, small]]
    if ctx.has_morph_text:
        runs.append([SK, "morph", "-m", ctx.morph, "--text", small])
        runs.append([SK, "morph", "-m", ctx.morph, "--text", "--tokenizer", ctx.tok, small])
    for cmd in runs:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=ctx.env(tempfile.gettempdir()))
        if r.returncode != 0:
            print(f"warm-up {' '.join(map(str, cmd[1:3]))} failed: {r.stderr.strip()[-300:]}", flush=True)


def cases(ctx: Ctx) -> list:
    """(label, thunk) in order; a thunk returns a record or a list of them."""
    casa = write_line(ctx.tmp / "casa.txt", "casa ", ctx.size(10 << 20))
    comma = write_line(ctx.tmp / "comma.txt", "a,", ctx.size(10 << 20))
    mb = ctx.size(10 << 20) / 2**20
    out = [
        ("1a", lambda: case_endless(ctx, "1a", "annotate on endless stdin (yes)", ["annotate", "-m", ctx.model, "-"])),
    ]
    if ctx.has_morph_text:
        out += [("1b", lambda: case_endless(ctx, "1b", "morph --text on endless stdin (rules tokenizer)",
                                            ["morph", "-m", ctx.morph, "--text", "-"])),
                ("1c", lambda: case_endless(ctx, "1c", "morph --text --tokenizer on endless stdin",
                                            ["morph", "-m", ctx.morph, "--text", "--tokenizer", ctx.tok, "-"]))]
    else:
        out.append(("1b", lambda: {"name": "1b morph --text on endless stdin",
                                   "skipped": "`structkit morph --help` has no --text"}))
    out += [
        ("2a", lambda: case_line(ctx, "2a", f"annotate a {mb:g} MB line of 'casa '",
                                 [SK, "annotate", "-m", ctx.model], casa, 1024)),
        ("2b", lambda: case_line(ctx, "2b", f"annotate a {mb:g} MB line of 'a,'",
                                 [SK, "annotate", "-m", ctx.model], comma, 1024)),
        ("3a", lambda: case_line(ctx, "3a", f"tokenize a {mb:g} MB line of 'casa ' (baseline)",
                                 [SK, "tokenize", "-m", ctx.tok], casa, None)),
        ("3b", lambda: case_line(ctx, "3b", f"tokenize a {mb:g} MB line of 'a,' (baseline)",
                                 [SK, "tokenize", "-m", ctx.tok], comma, None)),
        ("4", lambda: {"name": "4 tokenizer model with an all-0xff known table",
                       "skipped": "not crafted here: covered by tests/tokenizer/test_tokenize_bounds.py"}),
        ("5", lambda: case_symlink(ctx)),
        ("6", lambda: case_sigterm_jobs(ctx)),
        ("7", lambda: case_info(ctx)),
        ("8", lambda: {"name": "8 (issue 41 item 8)", "skipped": "covered by the tests"}),
        ("9", lambda: case_pipe_lazy(ctx)),
        *[(key, (lambda k=key, lab=label, b=body: case_api_error(ctx, k, lab, b))) for key, label, body in API_CASES],
        ("11", lambda: case_tmpdir_full(ctx)),
        ("12", lambda: case_eval(ctx)),
        ("13a", lambda: case_long_sentence(ctx)),
        ("13b", lambda: case_stale(ctx)),
        ("14", lambda: case_orphans(ctx)),
    ]
    return out


def line_of(r: dict) -> str:
    if "skipped" in r:
        return f"{r['name']}: skipped ({r['skipped']})"
    if "harness_error" in r:
        return f"{r['name']}: HARNESS ERROR {r['harness_error']}"
    ok = {True: "ok", False: "FAILED", None: "n/a"}[r["check_ok"]]
    return (f"{r['name']}: exit {r['exit']}{' (HANG)' if r['hang'] else ''}, {r['seconds']} s, {r['peak_mb']} MB, "
            f"traceback {'YES' if r['traceback'] else 'no'}, stderr lines {r['stderr_lines']}, check {ok}: "
            f"{r['check']}" + (f" | stderr: {r['stderr_last'][:160]}" if r['stderr_last'] else ""))


def totals(rows: list[dict]) -> dict:
    ran = [r for r in rows if "exit" in r]
    return {"cases": len(rows), "ran": len(ran), "skipped": sum("skipped" in r for r in rows),
            "harness_errors": sum("harness_error" in r for r in rows),
            "tracebacks": sum(bool(r["traceback"]) for r in ran),
            "hangs": sum(bool(r["hang"]) for r in ran),
            "data_losses": sum(r.get("data_loss") is True for r in ran),
            "check_failures": sum(r["check_ok"] is False for r in ran),
            "orphan_processes": sum(len(r.get("orphans") or []) for r in ran),
            "max_rss_mb": max((r["peak_mb"] for r in ran), default=0)}


def fmt(v) -> str:
    return {True: "yes", False: "no", None: "-"}.get(v, str(v)) if isinstance(v, (bool, type(None))) else str(v)


def write_md(obj: dict, path: Path) -> None:
    m, t = obj["machine"], obj["totals"]
    ok = {True: "ok", False: "**FAILED**", None: "n/a"}
    lines = ["# Hostile inputs of issue 41, round 3", "",
             f"`python scripts/hostile_round3.py --model {obj['model']}"
             f"{' --quick' if obj['quick'] else ''}` ({m['date']}, commit {m['commit']}, {m['cpu']}, "
             f"{m['cores']} cores, Python {m['python']}; load average before {obj['loadavg_before']}). "
             f"Tokenizer `{obj['tokenizer']}`, morph model `{obj['morph']}`. Each case is a new process; "
             "peak MB is the largest of the process tree's summed Pss (polled every 0.2 s), any process's "
             "VmHWM and the main process's ru_maxrss; a run still going at its guard is killed and counted "
             "as a hang. One line: exactly one non-empty stderr line, for a non-zero exit. $TMP is the "
             "harness's temporary folder (removed at the end). The script's docstring explains each case.",
             "",
             "| case | exit | seconds | peak MB | traceback? | one line? | check ok? | check |",
             "|---|---|---|---|---|---|---|---|"]
    for r in obj["cases"]:
        if "skipped" in r:
            lines.append(f"| {r['name']} | skipped | | | | | | {r['skipped']} |")
        elif "harness_error" in r:
            lines.append(f"| {r['name']} | harness error | | | | | | `{r['harness_error']}` |")
        else:
            ex = f"{r['exit']}" + (" (hang)" if r["hang"] else "")
            lines.append(f"| {r['name']} | {ex} | {r['seconds']} | {r['peak_mb']} | "
                         f"{'**yes**' if r['traceback'] else 'no'} | {fmt(r['one_line'])} | {ok[r['check_ok']]} | "
                         f"{r['check'].replace('|', '/')} |")
    lines += ["", "Totals: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in t.items()) + ".", "",
              "Commands and the last stderr line:", ""]
    for r in obj["cases"]:
        if "command" in r:
            last = f" → `{r['stderr_last'][:200]}`" if r.get("stderr_last") else ""
            lines.append(f"- {r['name']}: `{r['command'][:600]}`{last}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a pipeline model (structkit train --task pipeline)")
    ap.add_argument("--tokenizer", help="a tokenizer model (default: a tiny one trained from the fixture)")
    ap.add_argument("--morph", help="a morph model (default: a tiny one trained from the fixture)")
    ap.add_argument("--quick", action="store_true", help="sizes / 10, guards / 5: a smoke run")
    ap.add_argument("--out", default=str(OUT), help="the JSON (the .md is written beside it)")
    ap.add_argument("--only", help="comma-separated case keys to run (e.g. 1a,5,13b), for development")
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        sys.exit(f"--model {a.model}: no such file")
    loadavg = [round(x, 2) for x in os.getloadavg()]
    tmp = Path(tempfile.mkdtemp(prefix="hostile-round3-"))
    ctx = Ctx(a, tmp)
    rows: list[dict] = []
    try:
        train_small(ctx)
        helptext = subprocess.run([SK, "morph", "--help"], capture_output=True, text=True).stdout
        ctx.has_morph_text = "--text" in helptext
        warm_up(ctx)
        only = set(a.only.split(",")) if a.only else None
        for key, thunk in cases(ctx):
            if only and key not in only and key.rstrip("abc") not in only:
                continue
            try:
                got = thunk()
            except Exception as e:   # the harness failed, not structkit: record it, go on
                got = {"name": f"{key} (harness error)", "harness_error": f"{type(e).__name__}: {e}",
                       "harness_traceback": traceback.format_exc()}
            for r in got if isinstance(got, list) else [got]:
                rows.append(r)
                print(line_of(r), flush=True)
    finally:
        for mnt in list(ctx.mounts):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    obj = {"model": os.path.relpath(ctx.model, ROOT) if ctx.model.startswith(str(ROOT)) else ctx.model,
           "tokenizer": a.tokenizer or "tiny, trained from tests/fixtures/tiny_ud/train.conllu",
           "morph": a.morph or "tiny, trained from tests/fixtures/tiny_ud/train.conllu",
           "quick": a.quick, "machine": machine(), "loadavg_before": loadavg,
           "cases": rows, "totals": totals(rows)}
    out = Path(a.out)
    dump_json(obj, out)
    write_md(obj, out.with_suffix(".md"))
    print("totals: " + ", ".join(f"{k} {v}" for k, v in obj["totals"].items()))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
