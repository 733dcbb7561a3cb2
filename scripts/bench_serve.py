"""A bounded load generator for `structkit serve` on 127.0.0.1.

Starts the server (a UD POS tagger and the labelled beam parser; trained on UD English ParTUT
into build/bench-serve/ unless --pos/--parser name models), then:

1. latency with one client (keep-alive): --requests requests of one 20-token sentence each to
   POST /tag (raw text: tokeniser + tagger + margins), /parse (the words with POS, parser only)
   and /pipeline (raw text: tokeniser, tagger, parser); p50, p90, p99 and mean;
2. load: --clients clients (threads, one keep-alive connection each) sending /tag, then /parse,
   for --duration seconds each; requests/s and errors (any status but 200, or a wrong answer);
3. the server's resident memory (VmRSS of /proc/PID/status) after start-up, after the latency
   runs and after each load run, to show it does not grow with requests;
4. one client's /tag latency while one 100,000-word /pipeline request runs (5,000 copies of the
   sentence as raw text: tokeniser, tagger, parser), against the same client's latency idle just
   before (--big-requests requests each, or as many as fit while the big one runs); the
   server's memory before, at its peak (VmHWM) and after;
5. SIGTERM while another such request runs: seconds until the server has exited.

The server runs with --timeout 300, so that the big request is answered rather than stopped.

Writes results/bench-serve.json and results/bench-serve.md.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# 20 tokens as the tokenizer cuts it (checked against the server's answer)
SENTENCE = ("The committee said on Tuesday that the new rules, which take effect next year, "
            "would cut costs.")


def train_models(out: Path) -> tuple[Path, Path]:
    import structkit
    from structkit.datasets import resolve

    out.mkdir(parents=True, exist_ok=True)
    pos, parser = out / "pos.npz", out / "parser.npz"
    train = resolve("ud-english-partut/en_partut-ud-train.conllu")
    if not pos.exists():
        print("training the POS tagger on", train, file=sys.stderr)
        structkit.Tagger(task="pos").fit(train).save(pos)
    if not parser.exists():
        print("training the parser on", train, "(about a minute)", file=sys.stderr)
        structkit.Parser().fit(train).save(parser)
    return pos, parser


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


class Client:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        return r.status, r.read()

    def close(self) -> None:
        self.conn.close()


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def latency(port: int, path: str, body: bytes, n: int, expect: bytes) -> dict:
    c = Client(port)
    for _ in range(50):  # warm: connection, caches
        c.post(path, body)
    times, errors = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        status, out = c.post(path, body)
        times.append((time.perf_counter() - t0) * 1000)
        errors += status != 200 or out != expect
    c.close()
    return {"endpoint": path, "requests": n, "errors": errors,
            "p50_ms": round(percentile(times, 50), 2), "p90_ms": round(percentile(times, 90), 2),
            "p99_ms": round(percentile(times, 99), 2), "mean_ms": round(statistics.fmean(times), 2)}


def load(port: int, path: str, body: bytes, clients: int, duration: float, expect: bytes) -> dict:
    counts = [0] * clients
    errors = [0] * clients
    lat: list[list[float]] = [[] for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def worker(i: int) -> None:
        c = Client(port)
        start.wait()
        while time.perf_counter() < stop_at[0]:
            t0 = time.perf_counter()
            try:
                status, out = c.post(path, body)
                ok = status == 200 and out == expect
            except (OSError, http.client.HTTPException):
                ok = False
                c.close()
                c = Client(port)
            lat[i].append((time.perf_counter() - t0) * 1000)
            counts[i] += 1
            errors[i] += not ok
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + duration
    t0 = time.perf_counter()
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    every = [x for xs in lat for x in xs]
    return {"endpoint": path, "clients": clients, "seconds": round(elapsed, 1), "requests": sum(counts),
            "errors": sum(errors), "requests_per_s": round(sum(counts) / elapsed, 1),
            "p50_ms": round(percentile(every, 50), 2), "p99_ms": round(percentile(every, 99), 2)}


def hwm_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


def health(port: int) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/health")
    out = json.loads(c.getresponse().read())
    c.close()
    return out


def big_request(port: int, body: bytes, out: dict) -> None:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        c.request("POST", "/pipeline", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out["status"], out["bytes"] = r.status, len(r.read())
    except (OSError, http.client.HTTPException) as e:
        out["status"], out["bytes"] = type(e).__name__, 0
    finally:
        c.close()


def wait_working(port: int, thread: threading.Thread) -> None:
    """Until the big request's work has started (a hang guard of about a minute)."""
    for _ in range(600):
        if health(port)["working"] >= 1 or not thread.is_alive():
            return
        time.sleep(0.1)


def under_big(port: int, pid: int, body: bytes, expect: bytes, n: int) -> dict:
    """/tag latency idle, then while one 100k-word /pipeline runs; memory around it."""
    c = Client(port)
    for _ in range(50):
        c.post("/tag", body)
    idle = []
    for _ in range(n):
        t0 = time.perf_counter()
        status, out = c.post("/tag", body)
        idle.append((time.perf_counter() - t0) * 1000)
        assert status == 200 and out == expect
    before = rss_kb(pid)
    big_body = json.dumps({"text": " ".join([SENTENCE] * 5000)}).encode()
    result: dict = {}
    t = threading.Thread(target=big_request, args=(port, big_body, result))
    t0 = time.perf_counter()
    t.start()
    wait_working(port, t)
    busy, errors = [], 0
    while t.is_alive() and len(busy) < n:
        t1 = time.perf_counter()
        status, out = c.post("/tag", body)
        if t.is_alive():   # only requests answered while the big one still ran
            busy.append((time.perf_counter() - t1) * 1000)
            errors += status != 200 or out != expect
    t.join()
    big_s = time.perf_counter() - t0
    c.close()
    time.sleep(1.0)
    return {"big_request": {"endpoint": "/pipeline", "words": 100_000, "body_bytes": len(big_body),
                            "status": result.get("status"), "response_bytes": result.get("bytes"),
                            "seconds": round(big_s, 1)},
            "tag_idle": {"requests": len(idle), "p50_ms": round(percentile(idle, 50), 2),
                         "p99_ms": round(percentile(idle, 99), 2)},
            "tag_with_big": {"requests": len(busy), "errors": errors,
                             "p50_ms": round(percentile(busy, 50), 2) if busy else None,
                             "p99_ms": round(percentile(busy, 99), 2) if busy else None},
            "p99_ratio": round(percentile(busy, 99) / percentile(idle, 99), 2) if busy else None,
            "rss_before_kb": before, "rss_peak_kb": hwm_kb(pid), "rss_after_kb": rss_kb(pid)}


def sigterm_with_big(proc: subprocess.Popen, port: int) -> dict:
    """SIGTERM while a 100k-word /pipeline runs: seconds until the process has exited."""
    big_body = json.dumps({"text": " ".join([SENTENCE] * 5000)}).encode()
    result: dict = {}
    t = threading.Thread(target=big_request, args=(port, big_body, result))
    t.start()
    wait_working(port, t)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)
    took = time.perf_counter() - t0
    t.join(60)
    return {"exit_code": code, "seconds_to_exit": round(took, 2), "big_request_status": result.get("status")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pos", type=Path, help="A POS model (default: trained on ParTUT).")
    ap.add_argument("--parser", type=Path, help="A parser model (default: trained on ParTUT).")
    ap.add_argument("--requests", type=int, default=1000, help="Requests per latency run.")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=30.0, help="Seconds per load run.")
    ap.add_argument("--big-requests", type=int, default=1000,
                    help="/tag requests idle and (at most) while the big request runs.")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-serve.json")
    args = ap.parse_args()
    pos, parser = (args.pos, args.parser) if args.pos and args.parser else \
        train_models(ROOT / "build" / "bench-serve")

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "structkit", "serve", "-m", f"pos={pos}",
                             "-m", f"parser={parser}", "--port", "0", "--timeout", "300"],
                            stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stderr.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
    if m is None:
        proc.kill()
        sys.exit(f"the server did not start: {line}{proc.stderr.read()}")
    port = int(m.group(1))
    try:
        memory = {"after_start_kb": rss_kb(proc.pid)}
        c = Client(port)
        tag_body = json.dumps({"text": SENTENCE}).encode()
        status, tag_out = c.post("/tag", tag_body)
        toks = json.loads(tag_out)["sentences"][0]["tokens"]
        assert status == 200 and len(toks) == 20, (status, len(toks))
        pairs = [[t["form"], t["labels"]["pos"]] for t in toks]
        parse_body = json.dumps({"tokens": [pairs], "scores": False}).encode()
        pipe_body = json.dumps({"text": SENTENCE}).encode()
        expect = {"/tag": tag_out, "/parse": c.post("/parse", parse_body)[1],
                  "/pipeline": c.post("/pipeline", pipe_body)[1]}
        c.close()
        bodies = {"/tag": tag_body, "/parse": parse_body, "/pipeline": pipe_body}
        lat = [latency(port, p, bodies[p], args.requests, expect[p]) for p in bodies]
        memory["after_latency_kb"] = rss_kb(proc.pid)
        runs = []
        for p in ("/tag", "/parse"):
            runs.append(load(port, p, bodies[p], args.clients, args.duration, expect[p]))
            memory[f"after_load_{p[1:]}_kb"] = rss_kb(proc.pid)
        runs.append(load(port, "/tag", bodies["/tag"], args.clients, args.duration, expect["/tag"]))
        memory["after_second_load_tag_kb"] = rss_kb(proc.pid)
        big = under_big(port, proc.pid, bodies["/tag"], expect["/tag"], args.big_requests)
        stop = sigterm_with_big(proc, port)
        code = stop["exit_code"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
    result = {"sentence": SENTENCE, "tokens": 20, "pos_model": str(pos), "parser_model": str(parser),
              "latency_one_client": lat, "load": runs, "server_rss": memory, "sigterm_exit": code,
              "with_big_request": big, "sigterm_with_big_request": stop,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "note": "client and server on the same machine, sharing its cores"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    md = ["# `structkit serve` on 127.0.0.1", "",
          f"One sentence of 20 tokens (`{SENTENCE}`); a UD POS tagger and the labelled beam parser "
          f"(beam 8) trained on UD English ParTUT; {os.cpu_count()} cores shared by the server and "
          "the load generator (`python scripts/bench_serve.py`). Every timing comes after the server's "
          "start-up, which runs each model on a sentence (compiling numba's kernels, or reading them from "
          "its cache), and after 50 untimed requests per endpoint: warm in-process, whatever the numba "
          "cache held before (the start-up's own time is not measured here).", "",
          "## Latency, one client (keep-alive)", "",
          "| endpoint | requests | errors | p50 ms | p90 ms | p99 ms | mean ms |", "|---|---|---|---|---|---|---|"]
    what = {"/tag": "/tag (text: tokenise, tag, margins)", "/parse": "/parse (words + POS)",
            "/pipeline": "/pipeline (text: tokenise, tag, parse)"}
    for r in lat:
        md.append(f"| {what[r['endpoint']]} | {r['requests']} | {r['errors']} | {r['p50_ms']} | "
                  f"{r['p90_ms']} | {r['p99_ms']} | {r['mean_ms']} |")
    md += ["", f"## Load: {args.clients} concurrent clients, {args.duration:g} s per run", "",
           "| endpoint | requests | errors | requests/s | p50 ms | p99 ms |", "|---|---|---|---|---|---|"]
    for r in runs:
        md.append(f"| {r['endpoint']} | {r['requests']} | {r['errors']} | {r['requests_per_s']} | "
                  f"{r['p50_ms']} | {r['p99_ms']} |")
    md += ["", "## Server memory (VmRSS)", "", "| when | MB |", "|---|---|"]
    for k, v in memory.items():
        md.append(f"| {k[:-3].replace('_', ' ')} | {v / 1024:.1f} |")
    b = big
    md += ["", "## One client's /tag while one 100,000-word /pipeline runs", "",
           f"The big request: 5,000 copies of the sentence as raw text ({b['big_request']['body_bytes']:,} "
           f"bytes; tokenise, tag, parse), answered {b['big_request']['status']} "
           f"({b['big_request']['response_bytes']:,} bytes) in {b['big_request']['seconds']} s.", "",
           "| /tag | requests | p50 ms | p99 ms |", "|---|---|---|---|",
           f"| idle, just before | {b['tag_idle']['requests']} | {b['tag_idle']['p50_ms']} | {b['tag_idle']['p99_ms']} |",
           f"| while the big request runs | {b['tag_with_big']['requests']} | {b['tag_with_big']['p50_ms']} | "
           f"{b['tag_with_big']['p99_ms']} |", "",
           f"p99 with the big request / idle p99: {b['p99_ratio']} ({b['tag_with_big']['errors']} errors). "
           f"Server memory: {b['rss_before_kb'] / 1024:.1f} MB before the big request, "
           f"{b['rss_peak_kb'] / 1024:.1f} MB at its peak (VmHWM, the whole run), "
           f"{b['rss_after_kb'] / 1024:.1f} MB after it.", "",
           f"SIGTERM while another such request runs: the server exited {stop['exit_code']} after "
           f"{stop['seconds_to_exit']} s (the request: {stop['big_request_status']}).", ""]
    args.out.with_suffix(".md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
