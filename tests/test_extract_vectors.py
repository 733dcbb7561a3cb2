"""scripts/extract_vectors.py (issue 44's test resource): spaCy's string hash (MurmurHash64A,
seed 1) against values of the reference C implementation, the msgpack map reader on hand-written
bytes, and the extraction of a small wheel written here (no spaCy, no network)."""
from __future__ import annotations

import gzip
import importlib.util
import io
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _module():
    spec = importlib.util.spec_from_file_location("extract_vectors", SCRIPTS / "extract_vectors.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["extract_vectors"] = mod
    spec.loader.exec_module(mod)
    return mod


ev = _module()

# MurmurHash64A(utf-8 bytes, seed 1) by the murmurhash package's C code (the symbol
# MurmurHash64A of murmurhash 1.0 called through ctypes); 'coffee' and 'apple' are also the
# hashes spaCy's documentation prints for them.
KNOWN = {"coffee": 3197928453018144401, "apple": 8566208034543834098, "": 14313749767032693980,
         "a": 11901859001352538922, "abcdefgh": 17751780907874141760, "abcdefghi": 13885881106499164936,
         "anticonstitutionnellement": 12676721602705802600, "journée": 2783150373210891620,
         "ﬁ€日本語テキスト": 7904416548036159274}


@pytest.mark.parametrize("s", list(KNOWN))
def test_spacy_hash(s):
    assert ev.spacy_hash(s) == KNOWN[s]


def test_msgpack_map_by_hand():
    big = 2 ** 64 - 5
    data = (b"\x84" + b"\x01\x02"                                   # fixmap of 4: 1 -> 2
            + b"\xcd\x01\x00" + b"\xcc\xff"                          # 256 -> 255
            + b"\xcf" + struct.pack(">Q", big) + b"\xce\x00\x01\x00\x00"   # 2^64 - 5 -> 65536
            + b"\x7f" + b"\xd0\xfe")                                  # 127 -> -2
    assert ev.read_msgpack_map(data) == {1: 2, 256: 255, big: 65536, 127: -2}
    assert ev.read_msgpack_map(b"\xdf\x00\x00\x00\x01\x05\x06") == {5: 6}
    with pytest.raises(ValueError, match="not a msgpack map"):
        ev.read_msgpack_map(b"\x91\x01")
    with pytest.raises(ValueError, match="is not an integer"):
        ev.read_msgpack_map(b"\x81\xa1a\x01")


def _wheel(path, mode="default"):
    def npy(a):
        f = io.BytesIO()
        np.save(f, a)
        return f.getvalue()

    rows = np.array([[0.5, -1], [2, 0.25], [1, 1]], dtype=np.float32)
    key2row = {KNOWN["coffee"]: 0, KNOWN["apple"]: 1, KNOWN["journée"]: 0, KNOWN["anticonstitutionnellement"]: 2}
    packed = b"\x84" + b"".join(b"\xcf" + struct.pack(">Q", k) + bytes([v]) for k, v in key2row.items())
    strings = ["abcdefgh", "anticonstitutionnellement", "apple", "coffee", "journée"]   # one without a row
    base = "pkg/pkg-1.0/vocab/"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(base + "vectors.cfg", json.dumps({"mode": mode}))
        z.writestr(base + "vectors", npy(rows))
        z.writestr(base + "key2row", packed)
        z.writestr(base + "strings.json", json.dumps(strings))
    return str(path)


def test_extract_a_small_wheel(tmp_path):
    out = tmp_path / "v.vec.gz"
    facts = ev.extract(_wheel(tmp_path / "w.whl"), out)
    assert facts["keys"] == 4 and facts["keys_found"] == 4 and facts["words_written"] == 4
    text = gzip.decompress(out.read_bytes()).decode("utf-8")
    # round by round: each row's shortest word (coffee, apple, anti...), then row 0's second
    assert text == ("4 2\ncoffee 0.5000 -1.0000\napple 2.0000 0.2500\n"
                    "anticonstitutionnellement 1.0000 1.0000\njournée 0.5000 -1.0000\n")
    from structkit.vectors import read_vectors

    assert read_vectors(str(out)).words == ["coffee", "apple", "anticonstitutionnellement", "journée"]


def test_a_hashed_floret_table_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="floret"):
        ev.extract(_wheel(tmp_path / "w.whl", mode="floret"), tmp_path / "v.vec.gz")
