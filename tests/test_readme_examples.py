"""The README's examples of command output are produced by scripts/readme_examples.py: each block
equals its results/examples file, and running the commands again gives the same output (wall-clock
times aside, see ``normalise``)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("readme_examples", ROOT / "scripts" / "readme_examples.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["readme_examples"] = mod      # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


rx = _module()
README = rx.all_text()   # the README and the documentation's pages (docs/, docs/guide/)
SAMPLE = [n for n, ex in rx.EXAMPLES.items() if not ex.corpora]
CORPUS = [n for n, ex in rx.EXAMPLES.items() if ex.corpora and n not in rx.SLOW]   # SLOW: stored only


@pytest.mark.parametrize("name", list(rx.EXAMPLES))
def test_readme_block_is_its_results_file(name):
    blocks = rx.readme_blocks(README)
    assert name in blocks, f"README.md has no <!-- example: {name} --> block"
    assert blocks[name] == rx.stored(name), (
        f"README.md's example {name} differs from results/examples/{name}.txt: "
        f"run `python scripts/readme_examples.py {name}`")


def test_every_readme_block_is_a_known_example():
    assert set(rx.readme_blocks(README)) == set(rx.EXAMPLES)


def test_sample_examples_give_the_stored_output(tmp_path):
    """The cheap ones, on the shipped sample, run in one folder in order (``scores`` reuses ``explain``'s
    model)."""
    done: set = set()
    for name in SAMPLE:
        out = rx.run(name, tmp_path, done)
        assert rx.normalise(out) == rx.normalise(rx.stored(name)), name


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPUS)
def test_corpus_examples_give_the_stored_output(name, tmp_path):
    if not rx.corpus_available(name):
        pytest.skip(f"example {name} reads {', '.join(rx.EXAMPLES[name].corpora)}, not found")
    assert rx.normalise(rx.run(name, tmp_path)) == rx.normalise(rx.stored(name))


def test_normalise_replaces_wall_times_only():
    line = "epoch 12/12: train acc 99.83 (0.21 s)\nwrote m: 22 labels, epoch 12 of 20 (dev f1 94.75), 11.0 s\n"
    assert rx.normalise(line) == ("epoch 12/12: train acc 99.83 (<time> s)\n"
                                  "wrote m: 22 labels, epoch 12 of 20 (dev f1 94.75), <time> s\n")
    assert rx.normalise("margin 80.502, 3 s0 12 sentences") == "margin 80.502, 3 s0 12 sentences"


def test_shortened_output_says_so():
    out = "".join(f"line {i}\n" for i in range(5))
    assert rx._shorten(out, ("tail", 2)) == "...\nline 3\nline 4\n"
    assert rx._shorten(out, ("head", 1)) == "line 0\n...\n"
    assert rx._shorten(out, None) == out


def test_replace_block_rewrites_only_between_the_markers():
    text = "a\n<!-- example: x -->\n```text\nold\n```\n<!-- example: end -->\nb\n"
    new = rx.replace_block(text, "x", "$ cmd\nnew\n")
    assert new == "a\n<!-- example: x -->\n```text\n$ cmd\nnew\n```\n<!-- example: end -->\nb\n"
    assert rx.readme_blocks(new) == {"x": "$ cmd\nnew\n"}
