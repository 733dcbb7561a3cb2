"""The README's summary table is generated from results/*.json, choosing rows on dev."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("readme_table", ROOT / "scripts" / "readme_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_table_matches_results():
    rt = _module()
    block = rt.readme_block((ROOT / "README.md").read_text())
    assert block == rt.build_table(), (
        "README.md's results table drifted from results/*.json: run `python scripts/readme_table.py --write`")


def test_rows_are_chosen_on_dev_not_test(tmp_path):
    rt = _module()
    res = tmp_path / "results"
    shutil.copytree(ROOT / "results", res)
    f = res / "lookahead-chunk-conll2000.json"
    d = json.loads(f.read_text())
    base = d["rows"][0]
    # Row 0: best on dev, poor on test; row 1: poor on dev, best on test.
    d["rows"] = [{**base, "algo": "lookahead", "depth": 5, "label_order": 1, "direction": "ltr",
                  "dev": 99.0, "test": {"f1": 50.0}, "train_seconds": 1.0},
                 {**base, "algo": "lookahead", "depth": 7, "label_order": 2, "direction": "rtl",
                  "dev": 10.0, "test": {"f1": 99.5}, "train_seconds": 2.0}]
    f.write_text(json.dumps(d))
    row = next(line for line in rt.build_table(res).splitlines()
               if line.startswith("| CoNLL-2000 chunking, lookahead table"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1].startswith("lookahead depth 5,")
    assert cells[2] == "99.00" and cells[3] == "50.00 F1"
    assert cells[4] == "99.50 (lookahead depth 7 + label trigrams, right to left)"
    assert cells[5].startswith("1 s ")


def test_dev_ties_keep_the_first_row():
    rt = _module()
    rows = [{"dev": 1.0, "n": "a"}, {"dev": 2.0, "n": "b"}, {"dev": 2.0, "n": "c"}]
    assert rt.pick_on_dev(rows)["n"] == "b"
