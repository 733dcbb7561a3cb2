"""Every figure in the README's prose comes from a results/ file its paragraph cites
(scripts/readme_figures.py: what a figure is, and the sourcing rule)."""
from __future__ import annotations

import importlib.util
import sys
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "scripts" / "readme_figures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["readme_figures"] = mod      # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


rf = _module()
README = rf.all_text()   # the README and the documentation's pages (docs/, docs/guide/)


def test_readme_has_no_unsourced_figure():
    findings, problems = rf.check(README)
    bad = [f for f in findings if f.source is None]
    say = lambda f: f"  README.md:{f.figure.line}: {f.figure.text}  [{f.figure.line_text.strip()[:100]}]"
    msg = []
    if problems:
        msg += ["bad markers or citations:"] + [f"  {p}" for p in problems]
    if bad:
        msg += ["figures with no source in a results/ file their block cites "
                "(cite it, rerun what wrote it, or mark a paper's figure `<!-- quoted: ... -->`):"]
        msg += [say(f) for f in bad]
    assert not msg, "\n".join(msg)


def _edited(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.mark.parametrize("old,new,fig", [
    ("287.9 MB after start-up", "288.0 MB after start-up", "288.0 MB"),      # serve, results/bench-serve.md
    ("2.79 ms p50 and 10.71 ms p99", "2.79 ms p50 and 10.72 ms p99", "10.72 ms"),
    ("| 96.72 (15) | 86.84 |", "| 96.72 (15) | 86.85 |", "86.85"),         # a table under a citing paragraph
    ("Training on ATIS takes about 2.4 s", "Training on ATIS takes about 2.5 s", "2.5 s"),
    ("Training took 14 s here", "Training took 15 s here", "15 s"),          # results/examples/quickstart.txt
])
def test_an_edited_prose_figure_fails_the_check(old, new, fig):
    before = rf.unsourced(README)
    added = [line for line in rf.unsourced(_edited(README, old, new)) if line not in before]
    assert len(added) == 1 and f"{fig!r}" in added[0], added


def test_a_figure_whose_cited_file_lacks_it_fails(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    (res / "a.md").write_text("| x | 95.57 | 4.82 | 298,123 | 84.6 |\n")
    (res / "b.md").write_text("99.99\n")
    ok = "We get 95.6 and 95.57 in about 5 s at 300,000 tokens/s, LAS 84.60 (`results/a.md`).\n"
    assert rf.unsourced(ok, res) == []
    # Another file holds 99.99; the paragraph cites a.md: not sourced.
    assert len(rf.unsourced("We get 99.99 (results/a.md).\n", res)) == 1
    # Without a citation nothing is sourced, even a number some file holds.
    assert len(rf.unsourced("We get 99.99.\n", res)) == 1
    # Rounding is to the README's precision, not beyond.
    assert len(rf.unsourced("We get 95.58 (results/a.md).\n", res)) == 1
    assert len(rf.unsourced("We get 95.5 (results/a.md).\n", res)) == 1
    # A citation of a file that does not exist is reported.
    assert any("does not exist" in p for p in rf.unsourced("We get 95.6 (results/c.md).\n", res))


def test_a_table_or_code_block_takes_the_citation_of_the_paragraph_before(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    (res / "a.md").write_text("12.5 7.25\n")
    text = ("Introduced here (`results/a.md`):\n\n| a | b |\n|---|---|\n| 12.5 | 7.25 |\n\n"
            "And here (`results/a.md`):\n\n```sh\nx  # 7.25 s\n```\n")
    assert rf.unsourced(text, res) == []
    assert len(rf.unsourced(text.replace(" (`results/a.md`)", ""), res)) == 3


def test_quoted_figures_must_be_in_their_paragraph_and_name_a_source(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    (res / "a.md").write_text("93.90\n")
    good = ("Ours 93.90 (results/a.md), theirs 72.28.\n"
            "<!-- quoted: 72.28 (Tsuruoka et al. 2011, Table 2) -->\n")
    assert rf.unsourced(good, res) == []
    findings, _ = rf.check(good, res)
    assert {f.figure.text: f.source for f in findings}["72.28"] == "quoted: Tsuruoka et al. 2011, Table 2"
    wrong = good.replace("quoted: 72.28", "quoted: 72.29")
    bad = rf.unsourced(wrong, res)
    assert any("'72.29' is not in its paragraph" in b for b in bad)
    assert any("'72.28'" in b and "quoted" not in b for b in bad)       # and 72.28 is left unsourced
    nosource = rf.unsourced(good.replace(" (Tsuruoka et al. 2011, Table 2)", ""), res)
    assert any("names no source" in b for b in nosource)
    # A marker shown as code (`<!-- quoted: ... -->`) is text, not a marker.
    assert rf.unsourced("Mark it `<!-- quoted: FIGURE (SOURCE) -->`.\n", res) == []
    # A marker in another paragraph does not quote this one's figure.
    apart = "Theirs 72.28.\n\n<!-- quoted: 72.28 (Tsuruoka et al. 2011) -->\n"
    assert len(rf.unsourced(apart, res)) == 2


def _figs(line: str) -> list[str]:
    return [f.text for f in rf.extract(line)]


@pytest.mark.parametrize("line", [
    "20 epochs, C = 64, 2 cores, beam 8 and 16 concurrent clients",
    "a table of 2^23 entries, 10^6 candidates, exit code 143 (128 + 15)",
    "syntok 1.4.4, UD r2.14, Python 3.11 or newer, format version 2",
    "Tsuruoka et al. (2011), Table 4, Figure 3, Tables 2-4, depths 0-8, 2026-11-23",
    "the k-best learners C = 0.1, dev_split=0.1, --dev-split 0.1, lambda = 1.0",
    "at most 8 GiB of arrays, a header of at most 64 MB, --epochs at most 10,000, within 5 s",
    "x10 input, conll2000, Genia4ERtask2.iob2, en_partut-ud, 0..3",
])
def test_settings_names_and_versions_are_not_figures(line):
    assert _figs(line) == []


def test_inline_code_and_comments_are_not_prose():
    assert rf.extract(rf._prose("run `--dev-split 0.1` or `echo 3.50` <!-- 1.25 -->", "paragraph")) == []
    assert _figs(rf._prose("structkit train --C 0.1   # about 4.5 s", "code")) == ["4.5 s"]
    assert _figs(rf._prose("echo 3.50 | structkit tag", "code")) == []


@pytest.mark.parametrize("line,figs", [
    ("tags 95.66% of words (dev 94.16)", ["95.66%", "94.16"]),
    ("about 4.2 s; 11,000 sentences/s; 300,000 tokens/s", ["4.2 s", "11,000 sentences/s", "300,000 tokens/s"]),
    ("in 12 s with 279 MB peak memory and a 7.5 MB model", ["12 s", "279 MB", "7.5 MB"]),
    ("for 2.1x the training time, 1x and 10x input, 95% of it", ["2.1x", "1x", "10x", "95%"]),
    ("training in 43-47 s, +0.22 UAS / -0.17 LAS, 642 requests/s", ["43 s", "47 s", "0.22", "0.17", "642 requests/s"]),
    ("1.88 ms p50, about 5 seconds, 3 min, 1,200 in all", ["1.88 ms", "5 seconds", "3 min", "1,200"]),
])
def test_figures_are_found(line, figs):
    assert _figs(line) == figs


@pytest.mark.parametrize("fig,value,ok", [
    ("95.6", "95.57", True), ("95.57", "95.57", True), ("95.66", "95.57", False),
    ("5 s", "4.82", True), ("4 s", "4.82", False), ("84.60", "84.6", True), ("84.61", "84.6", False),
    ("300,000 tokens/s", "298123", True), ("11,000 sentences/s", "15646", False), ("15,646", "15646", True),
    ("0.22", "0.22", True), ("2.1x", "2.08", True), ("94.75", "94.74632527264107", True),
    # a hex digest's "4e40" read as a number: no match, and no decimal overflow
    ("300,000 tokens/s", "4E+40", False), ("11,000 sentences/s", "1.2E+514578390614", False),
    ("1,000 words", "999.6", True), ("9,000 words", "9.4E+3", True),
])
def test_a_figure_matches_a_value_rounded_to_its_precision(fig, value, ok):
    (f,) = rf.extract(fig)
    assert rf.matches(f, Decimal(value)) is ok


def test_generated_table_and_example_outputs_are_left_to_their_own_tests():
    text = ("<!-- results-table: generated -->\n| a | 12.34 |\n<!-- results-table: end -->\n\n"
            "<!-- example: x -->\n```text\n$ cmd\n# 56.78 s\n```\n<!-- example: end -->\n\nProse 9.87.\n")
    figs = [f.figure.text for f in rf.check(text)[0]]
    assert figs == ["9.87"]


def test_each_allowed_setting_is_in_the_readme_and_equals_its_code_constant():
    """Allowed figures are settings, sourced from the code: each names the constant that holds
    it, and the README's figure must be that constant's value (a changed limit fails here)."""
    import importlib

    for fig, context, where in rf.ALLOWED:
        assert context in README and fig in context, (fig, context)
        module, name = where.split(":")
        assert getattr(importlib.import_module(module), name) == rf.setting_value(fig), (fig, where)


def test_an_allowed_setting_that_drifts_from_its_constant_fails(monkeypatch):
    import structkit.parse.labelled as labelled

    monkeypatch.setattr(labelled, "MAX_LABELS", 4096)
    with pytest.raises(AssertionError):
        test_each_allowed_setting_is_in_the_readme_and_equals_its_code_constant()


def test_command_line_lists_unsourced_figures(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("We measured 12.34 here.\n")
    assert rf.main(["--readme", str(readme)]) == 1
    assert "README.md:1: '12.34' (its block cites no results file): We measured 12.34 here." in capsys.readouterr().out
