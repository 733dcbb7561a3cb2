"""scripts/mutation.py's list stays plantable: every mutation's snippet occurs exactly once in
its file (a snippet that no longer matches fails here, not only in ``make mutation``), the test
files it names exist, names are unique, and the README's count is the list's length."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # the script's dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


MUTATIONS = _load().MUTATIONS


@pytest.mark.parametrize("m", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_snippet_occurs_exactly_once_and_changes_the_file(m):
    text = (ROOT / m.file).read_text()
    assert text.count(m.old) == 1, f"{m.name}: the snippet occurs {text.count(m.old)} times in {m.file}"
    assert m.old != m.new
    assert m.tests, f"{m.name} names no tests"
    for t in m.tests:
        assert (ROOT / t).is_file(), f"{m.name}: {t} does not exist"


def test_names_are_unique():
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))


def test_readme_gives_the_lists_count():
    readme = (ROOT / "docs" / "guide" / "results-and-benchmarks.md").read_text()
    said = re.findall(r"`make mutation` plants (\d+) curated bugs", readme)
    assert said == [str(len(MUTATIONS))]
