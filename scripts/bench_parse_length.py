"""How the default (beam) parser's time grows with one sentence's length, and the refusal past
its limit (structkit.parse.labelled.MAX_SENTENCE_WORDS).

    python scripts/bench_parse_length.py [--out results/parse-length.json]

Trains the default parser on UD English ParTUT for one epoch (the per-sentence parse cost does
not depend on the epochs; $STRUCTKIT_DATA or the fetch cache must hold the treebank), then
times ``structkit parse`` (a new process, start-up included, and a one-sentence file's time for
comparison) on single sentences of 1,000 to 5,000 words made of ParTUT's own words and tags, and
checks that one word more is refused in one line. Writes JSON and a Markdown table. The
timed commands have a warm numba cache (``NUMBA_CACHE``, recorded in the JSON and said in the
table's note): a 1,000-word sentence is parsed once, untimed, first.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import numba_cache  # noqa: E402

NUMBA_CACHE = numba_cache("warm", "the parser trained first, then a 1,000-word sentence parsed untimed, compiling "
                                  "the kernels")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "parse-length.json"))
    args = ap.parse_args()
    from structkit.datasets import resolve
    from structkit.io.conllx import read_conllx
    from structkit.parse.labelled import MAX_SENTENCE_WORDS

    train = str(resolve("ud-english-partut/en_partut-ud-train.conllu"))
    sk = [sys.executable, "-m", "structkit"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "p.model")
        subprocess.run(sk + ["train", "--task", "parse", "--train", train, "--epochs", "1", "-m", model, "-q"],
                       check=True)
        pairs = [(w, t) for s in read_conllx(train) for w, t in zip(s.forms, s.upos)]
        rng = random.Random(0)

        def sentence_file(n: int) -> str:
            start = rng.randrange(len(pairs) - n) if len(pairs) > n else 0
            words = [pairs[(start + i) % len(pairs)] for i in range(n)]
            path = os.path.join(tmp, f"s{n}.conllu")
            with open(path, "w", encoding="utf-8") as f:
                for i, (w, t) in enumerate(words, 1):
                    f.write(f"{i}\t{w}\t_\t{t}\t_\t_\t_\t_\t_\t_\n")
                f.write("\n")
            return path

        def timed(path: str) -> tuple[float, int, str]:
            t0 = time.perf_counter()
            p = subprocess.run(sk + ["parse", "--model", model, path, "-o", os.devnull],
                               capture_output=True, text=True)
            return time.perf_counter() - t0, p.returncode, p.stderr.strip()

        timed(sentence_file(1000))   # untimed: the numba cache warm (NUMBA_CACHE)
        base, _, _ = timed(sentence_file(10))
        for n in (1000, 2000, 3000, 4000, MAX_SENTENCE_WORDS):
            secs, code, err = timed(sentence_file(n))
            rows.append({"words": n, "seconds": round(secs, 2), "minus_one_sentence_run": round(secs - base, 2),
                         "exit": code})
        secs, code, err = timed(sentence_file(MAX_SENTENCE_WORDS + 1))
        refused = {"words": MAX_SENTENCE_WORDS + 1, "seconds": round(secs, 2), "exit": code, "stderr": err}
    out = {"limit": MAX_SENTENCE_WORDS, "numba_cache": NUMBA_CACHE, "ten_word_run_seconds": round(base, 2), "rows": rows, "refused": refused,
           "load_average_before": os.getloadavg()[0]}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    md = [f"# The beam parser and one long sentence\n",
          f"`python scripts/bench_parse_length.py` (default parser trained one epoch on ParTUT; a new "
          f"`structkit parse` process per file; a 10-word file takes {base:.2f} s; load average "
          f"{out['load_average_before']:.1f} before the run; {NUMBA_CACHE['words']}).\n",
          "| words | seconds | minus the 10-word run | exit |", "|---|---|---|---|"]
    md += [f"| {r['words']:,} | {r['seconds']} | {r['minus_one_sentence_run']} | {r['exit']} |" for r in rows]
    md += ["", f"{refused['words']:,} words: exit {refused['exit']} in {refused['seconds']} s: `{refused['stderr']}`", ""]
    Path(args.out).with_suffix(".md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
