"""structkit plot: learning curves from --metrics-json files."""
from __future__ import annotations

import json
import os

import pytest
from conftest import require_extra

from tests.clitools import assert_one_line_error

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "structkit", "data", "sample")


def _train(sk, d, algo, epochs=3):
    m = d / f"{algo}.json"
    r = sk("train", "--task", "chunk", "--train", os.path.join(SAMPLE, "chunk", "train.txt"), "--dev",
           os.path.join(SAMPLE, "chunk", "test.txt"), "--algo", algo, "--epochs", str(epochs),
           "-m", d / f"{algo}.model", "--metrics-json", m)
    assert r.code == 0, r.err
    return m


def test_plot_two_runs(sk, tmp_path):
    require_extra("matplotlib", "plot")
    from structkit.plot import read_curve

    a, b = _train(sk, tmp_path, "perceptron"), _train(sk, tmp_path, "greedy", 2)
    out = tmp_path / "curves.png"
    r = sk("plot", a, b, "-o", out)
    assert r.code == 0 and "2 run(s)" in r.err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    c = read_curve(str(a))
    epochs = json.loads(a.read_text())["epochs"]
    assert c["epochs"] == [1, 2, 3] and c["metric"] == "f1"
    assert c["dev"] == [e["dev"]["f1"] for e in epochs] and c["train"] == [e["train_accuracy"] for e in epochs]
    svg = tmp_path / "c.svg"
    assert sk("plot", a, "-o", svg, "--metric", "accuracy").code == 0 and b"<svg" in svg.read_bytes()[:500]


def test_plot_errors(sk, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(sk("plot", bad, "-o", tmp_path / "x.png"), "not a metrics file")
    empty = tmp_path / "e.json"
    empty.write_text(json.dumps({"config": {}, "epochs": []}))
    assert_one_line_error(sk("plot", empty, "-o", tmp_path / "x.png"), "no per-epoch list")
    assert_one_line_error(sk("plot", empty, "-o", tmp_path / "x.txt"), "must end in .png")
    assert_one_line_error(sk("plot", empty, "-o", empty), "must end in")
    assert_one_line_error(sk("plot", tmp_path / "none.json", "-o", tmp_path / "x.png"), "no such file")
    assert not (tmp_path / "x.png").exists()
