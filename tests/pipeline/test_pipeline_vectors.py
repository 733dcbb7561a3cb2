"""``structkit train --vectors FILE [--vectors-limit N]`` (issue 44) on the shipped sample
treebank and a .vec file written here: a pipeline's morph model and parser both hold the word
clusters, the card names the file, its sha256 and the limit, and the model annotates with the
.vec gone; bad vectors files and options end in one line naming the file (and line), with no
model written."""
from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from clitools import assert_one_line_error
from structkit.datasets import sample_dir

UD = sample_dir() / "ud"
TRAIN, DEV = UD / "train.conllu", UD / "dev.conllu"
AXES = {"NOUN": 0, "PROPN": 0, "VERB": 1, "AUX": 1, "ADJ": 2, "ADV": 2, "DET": 3, "PRON": 3, "ADP": 4}


def _vec(path, limit=None):
    """A 6-dimensional vector per word form of the sample training file, on the axis of its
    first UPOS (5 for the others), words in file order."""
    seen: dict[str, list[float]] = {}
    for line in TRAIN.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit() and cols[1] not in seen and " " not in cols[1]:
            v = [0.1 * (len(seen) % 3)] * 6
            v[AXES.get(cols[3], 5)] = 1.0
            seen[cols[1]] = v
    rows = [w + " " + " ".join(f"{x:g}" for x in v) for w, v in seen.items()]
    path.write_text(f"{len(rows)} 6\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path, len(rows)


def _header(path) -> dict:
    import numpy as np

    with zipfile.ZipFile(path) as z, z.open("__header__.npy") as f:
        return json.loads(np.lib.format.read_array(f).tobytes())


def test_a_pipeline_with_vectors(tmp_path, sk):
    vec, n = _vec(tmp_path / "v.vec")
    model = tmp_path / "p.skm"
    r = sk("train", "--task", "pipeline", "--train", TRAIN, "--dev", DEV, "--model", model, "--epochs", "1",
           "--vectors", vec, "--vectors-limit", "40", "-q")
    assert r.code == 0, r.err
    sha = hashlib.sha256(vec.read_bytes()).hexdigest()
    info = sk("info", model)
    line = next(x for x in info.out.splitlines() if x.startswith("vectors:"))
    assert line == (f"vectors:    {vec}; sha256 {sha}; limit 40, 40 words of 6 dimensions; "
                    "k-means clusters 16, 64, 256, 4096 (seed 0, fitted on the first 40 words; "
                    "the last each of the level before split in 16)")
    header = _header(model)
    assert header["config"]["vectors"] == str(vec) and header["config"]["vectors_limit"] == 40
    assert header["info"]["vectors"]["sha256"] == sha and header["info"]["vectors"]["words"] == 40
    with zipfile.ZipFile(model) as z:   # both parts hold the table
        names = z.namelist()
    assert "part_morph.npy" in names and "part_parse.npy" in names
    vec.unlink()                        # the model file alone is enough
    raw = tmp_path / "raw.txt"
    raw.write_text("The harbour master said the ferry would leave on Monday.\n", encoding="utf-8")
    r = sk("annotate", "-m", model, raw)
    assert r.code == 0, r.err
    rows = [x.split("\t") for x in r.out.splitlines() if x[:1].isdigit()]
    assert [x[1] for x in rows][:3] == ["The", "harbour", "master"] and all(x[3] != "_" for x in rows)
    # loaded, the two parts' tables (the same words and clusters) are one object: one trigram
    # index for the words the table lacks, one cache of their look-ups
    from structkit.pipeline.model import load_pipeline
    p = load_pipeline(str(model))
    assert p.parser.clusters is p.morph.tables.clusters and len(p.parser.clusters) == 40


def test_without_vectors_the_pipeline_header_has_none(tmp_path, sk):
    model = tmp_path / "p.skm"
    cfg = tmp_path / "c.toml"   # (parts is a config-file option)
    cfg.write_text('task = "pipeline"\nparts = ["morph"]\nepochs = 1\n')
    r = sk("train", "--config", cfg, "--train", TRAIN, "--model", model, "-q")
    assert r.code == 0, r.err
    header = _header(model)
    assert "vectors" not in header["config"] and "vectors_limit" not in header["config"]
    assert "vectors" not in header["info"] and "vectors" not in header["info"]["cpu_seconds"]
    assert not any(x.startswith("vectors:") for x in sk("info", model).out.splitlines())


BAD = [
    ("3 4\na 1 2 3 4\nb 1 2 3\n", "v.vec:3: 3 values where 4 are expected (the header's dimension)"),
    (b"a 1 2\n\xff 1 2\n", "v.vec:2: not valid UTF-8 text"),
    ("", "v.vec: no vectors in the file"),
    ("a 1 inf\n", "v.vec:1: value 'inf' is not a finite number"),
]


@pytest.mark.parametrize("task", ["pipeline", "morph", "parse"])
@pytest.mark.parametrize("text, message", BAD)
def test_a_bad_vectors_file_is_one_line_and_no_model(tmp_path, sk, task, text, message):
    vec = tmp_path / "v.vec"
    vec.write_bytes(text.encode() if isinstance(text, str) else text)
    model = tmp_path / "m.model"
    r = sk("train", "--task", task, "--train", TRAIN, "--model", model, "--vectors", vec, "--epochs", "1")
    line = assert_one_line_error(r, message)
    assert line.startswith("structkit: error: ") or line.startswith("structkit train: error: "), line
    assert not model.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["v.vec"]


@pytest.mark.parametrize("args, message", [
    (["--vectors-limit", "5"], "--vectors-limit applies with --vectors FILE"),
    (["--vectors", "V", "--vectors-limit", "0"], "--vectors-limit must be a positive integer, got 0"),
    (["--vectors", "V", "--vectors-limit", "99999999999"], "--vectors-limit must be at most 5,000,000"),
    (["--vectors", "NOFILE.vec"], "NOFILE.vec"),
])
def test_bad_options_are_one_line(tmp_path, sk, args, message):
    vec, _ = _vec(tmp_path / "v.vec")
    args = [str(vec) if a == "V" else str(tmp_path / a) if a == "NOFILE.vec" else a for a in args]
    model = tmp_path / "m.skm"
    r = sk("train", "--task", "pipeline", "--train", TRAIN, "--model", model, *args)
    assert_one_line_error(r, message)
    assert not model.exists()


def test_tasks_without_vectors_refuse_the_option(tmp_path, sk):
    vec, _ = _vec(tmp_path / "v.vec")
    r = sk("train", "--task", "tokenize", "--train", TRAIN, "--model", tmp_path / "m", "--vectors", vec)
    assert_one_line_error(r, "--vectors do not apply to --task tokenize",
                          "--vectors applies to --task pos, chunk, ner, parse, morph, pipeline")
