"""Batch benchmarks (`make bench`): results/bench-batch.json and .md.

- A folder of 20 raw-text files (about 1 M tokens, sentences of the Penn Treebank POS sample
  or CoNLL-2000 as plain text) tagged with a POS model (`tag --text DIR`): wall time with
  --jobs 1 and --jobs 2, the same folder as a shell loop of one command per file, and whether
  the outputs are identical.
- Peak RSS (the largest process) tagging CoNLL-2000 test x1 and x10 with a chunk model.
- The same folder on a Dask LocalCluster of 2 workers (`--dask local:2`), when Dask is installed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, machine, numba_cache, structkit  # noqa: E402

NUMBA_CACHE = numba_cache("warm", "the models trained first, then an untimed `structkit tag --text` of one file, "
                                  "compiled the kernels; the --jobs 2 workers and Dask's load them from that cache")

from structkit.config import resolve_data_path  # noqa: E402

RSS = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
       "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss(*args) -> float:
    """Peak RSS in MB of the largest process of `structkit ARGS` (children included)."""
    p = subprocess.run([sys.executable, "-c", RSS, sys.executable, "-m", "structkit", *map(str, args)],
                       capture_output=True, text=True, check=True)
    code, kb = p.stdout.split()
    if code != "0":
        sys.exit(f"structkit {' '.join(map(str, args))} failed")
    return int(kb) / 1024


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process from /proc (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def measured(*args) -> dict:
    """`structkit ARGS` with what says whether a pool was starved: the 1-minute load average
    before it, its wall time, and the CPU seconds of the parent and of each worker (sampled
    from /proc every 20 ms while it runs; the total from getrusage after it, which counts
    what the last sample missed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "structkit", *map(str, args)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: dict[int, float] = {}
    while p.poll() is None:
        for pid in [p.pid, *_children(p.pid)]:
            cpu = _cpu_seconds(pid)
            if cpu is not None:
                seen[pid] = cpu
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"structkit {' '.join(map(str, args))} failed:\n{p.stderr.read().decode()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    parent = seen.pop(p.pid, 0.0)
    workers = sorted(seen.values(), reverse=True)
    return {"wall_seconds": round(wall, 2), "load_before": round(load, 2),
            "parent_cpu_seconds": round(parent, 2), "worker_cpu_seconds": [round(w, 2) for w in workers],
            "total_cpu_seconds": round(total, 2),
            "parent_share": round(parent / total, 3) if total else None}


def make_texts(src: str, folder: Path, n_files: int, tokens: int) -> int:
    """n_files text files of about tokens/n_files tokens: the corpus's sentences as plain text,
    one per line, a blank line every 8 sentences. Returns the token count."""
    from structkit.io.conll import read_conll

    sents = [" ".join(r[0] for r in s.rows) for s in read_conll(src)]
    per = tokens // n_files
    k = total = 0
    for f in range(n_files):
        lines, n = [], 0
        while n < per:
            s = sents[k % len(sents)]
            k += 1
            lines.append(s)
            n += s.count(" ") + 1
            if len(lines) % 8 == 0:
                lines.append("")
        total += n
        (folder / f"doc{f:02d}.txt").write_text("\n".join(lines) + "\n")
    return total


def count_blocks(folder: Path) -> int:
    """The blocks the parent cuts the folder's files into (the batch module's own cutter, at its
    default size): what each worker is handed, and what the parent reads and writes one at a time."""
    from structkit.io.blocks import BLOCK_BYTES, iter_blocks

    n = 0
    for f in sorted(folder.iterdir()):
        with open(f, "rb") as fh:
            n += sum(1 for _ in iter_blocks(fh, BLOCK_BYTES, True, str(f)))
    return n


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(RESULTS / "bench-batch.json"))
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the --out JSON")
    args = ap.parse_args()
    if args.report_only:
        return report(json.loads(Path(args.out).read_text()), Path(args.out))
    train = resolve_data_path("conll2000/train.txt", must_exist=True)
    test = resolve_data_path("conll2000/test.txt", must_exist=True)
    res: dict = {"machine": machine(), "numba_cache": NUMBA_CACHE}
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        pos_model, chunk_model = tmp / "pos.model", tmp / "chunk.model"
        structkit("train", "--task", "pos", "--train", train, "--columns", "word,label,-",
                  "--model", pos_model, "-q")
        structkit("train", "--task", "chunk", "--train", train, "--model", chunk_model, "-q")
        texts = tmp / "texts"
        texts.mkdir()
        n_tokens = make_texts(train, texts, 20, args.tokens)
        res["folder"] = {"files": 20, "tokens": n_tokens, "blocks": count_blocks(texts)}
        print(f"folder of 20 text files, {n_tokens} tokens", flush=True)
        structkit("tag", "--model", pos_model, "--text", texts / "doc00.txt", "-j", "1")  # warm the cache
        outs = {}
        runs: dict[str, list[dict]] = {"1": [], "2": []}
        for r in range(args.repeat):        # alternating, so both see the same machine
            for jobs in ("1", "2"):
                out = tmp / f"out-j{jobs}.txt"
                m = measured("tag", "--model", pos_model, "--text", texts, "-j", jobs, "-o", out)
                runs[jobs].append(m)
                print(f"  tag --text DIR --jobs {jobs}: {m}", flush=True)
        for jobs in ("1", "2"):
            outs[jobs] = md5(tmp / f"out-j{jobs}.txt")
            best = min(runs[jobs], key=lambda m: m["wall_seconds"])
            res["folder"][f"jobs{jobs}_seconds"] = best["wall_seconds"]
            res["folder"][f"jobs{jobs}_runs"] = runs[jobs]
        t0 = time.perf_counter()
        for f in sorted(texts.iterdir()):
            structkit("tag", "--model", pos_model, "--text", f, "-j", "1")
        loop = time.perf_counter() - t0
        res["folder"]["shell_loop_seconds"] = round(loop, 2)
        res["folder"]["speedup_1_to_2"] = round(res["folder"]["jobs1_seconds"] / res["folder"]["jobs2_seconds"], 2)
        res["folder"]["identical"] = outs["1"] == outs["2"]
        print(f"  one command per file (shell loop): {loop:.2f} s; speed-up 1->2 jobs "
              f"{res['folder']['speedup_1_to_2']}x; identical outputs: {res['folder']['identical']}", flush=True)
        try:
            import distributed  # noqa: F401
            wall = structkit("tag", "--model", pos_model, "--text", texts, "--dask", "local:2",
                             "-o", tmp / "out-dask.txt")[0]
            res["folder"]["dask_local2_seconds"] = round(wall, 2)
            res["folder"]["dask_identical"] = md5(tmp / "out-dask.txt") == outs["1"]
            print(f"  --dask local:2: {wall:.2f} s (cluster start-up included); identical: "
                  f"{res['folder']['dask_identical']}", flush=True)
        except ImportError:
            pass

        big = tmp / "test10.txt"
        data = Path(test).read_bytes()
        big.write_bytes((data.rstrip(b"\n") + b"\n\n") * 10)
        res["memory"] = {}
        for name, path in (("x1", test), ("x10", big)):
            for jobs in ("1", "2"):
                mb = peak_rss("chunk", "--model", chunk_model, path, "-j", jobs)
                res["memory"][f"{name}_jobs{jobs}_mb"] = round(mb, 1)
                print(f"peak RSS chunk CoNLL-2000 test {name} --jobs {jobs}: {mb:.0f} MB", flush=True)
    dump_json(res, Path(args.out))
    report(res, Path(args.out))


def report(res: dict, out: Path) -> None:
    """The .md beside the JSON ``main`` wrote."""
    f = res["folder"]
    m = res["memory"]
    # an older JSON: the same warm-up (in the script when it ran), not recorded
    cache = res.get("numba_cache", numba_cache("warm", NUMBA_CACHE["how"] + "; not recorded by this older run, "
                                                "but the script had this warm-up"))
    md = [f"# Batch benchmarks ({res['machine']['date']}, {res['machine']['cores']} cores, commit "
          f"{res['machine']['commit']})", "",
          f"Folder of {f['files']} raw-text files, {f['tokens']} tokens, `structkit tag --text DIR` "
          f"with a POS model (best of runs; times with the {cache['words']}):", "",
          "| run | wall (s) | load before | CPU s: parent | CPU s: workers | CPU s: total | parent's share | "
          "CPU ms per block: parent | CPU ms per block: workers |",
          "|---|---|---|---|---|---|---|---|---|"]
    for jobs in ("1", "2"):
        for run in f[f"jobs{jobs}_runs"]:
            per_block = (f"{1000 * run['parent_cpu_seconds'] / f['blocks']:.1f} | "
                         f"{1000 * sum(run['worker_cpu_seconds']) / f['blocks']:.1f}"
                         if jobs != "1" and f.get("blocks") else "- | -")
            md.append(f"| --jobs {jobs} | {run['wall_seconds']} | {run['load_before']} | "
                      f"{run['parent_cpu_seconds']} | {', '.join(map(str, run['worker_cpu_seconds'])) or '-'} | "
                      f"{run['total_cpu_seconds']} | {run['parent_share']} | {per_block} |")
    md.append(f"| one command per file (shell loop) | {f['shell_loop_seconds']} | | | | | | | |")
    if "dask_local2_seconds" in f:
        md.append(f"| --dask local:2 (cluster start included) | {f['dask_local2_seconds']} | | | | | | | |")
    md += ["", "Each --jobs run as it came (runs alternate between 1 and 2 jobs). Load: the 1-minute "
           "load average just before the run; a load above 0 means other work shared the cores, and a "
           "starved pool shows as workers' CPU seconds well below their wall time. CPU seconds of each "
           "process from /proc (sampled every 20 ms), the total from getrusage. With --jobs 1 the "
           "parent does all the work itself; with --jobs 2 its share is reading, cutting blocks and "
           f"writing: per block ({f.get('blocks', '?')} blocks of about 1 MB, the batch module's "
           "cutter), its CPU milliseconds against the workers' (their CPU seconds summed, over the "
           "blocks) say whether it could hold them up: it keeps up while its time per block is well "
           "under a worker's.", "",
           f"Speed-up from 1 to 2 jobs (best wall of each): {f['speedup_1_to_2']}x; outputs identical: {f['identical']}"
           + (f"; Dask output identical: {f['dask_identical']}" if "dask_identical" in f else "") + ".", "",
           "Peak RSS of the largest process, `structkit chunk` on CoNLL-2000 test:", "",
           "| input | --jobs 1 (MB) | --jobs 2 (MB) |", "|---|---|---|",
           f"| x1 | {m['x1_jobs1_mb']} | {m['x1_jobs2_mb']} |",
           f"| x10 | {m['x10_jobs1_mb']} | {m['x10_jobs2_mb']} |", ""]
    out.with_suffix(".md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
