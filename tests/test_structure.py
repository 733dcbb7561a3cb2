"""The shape of the code (``scripts/structure.py`` measures it): no import circles, no import
running up a layer, no numba kernel with more than 12 arguments, no task name or output kind
tested in the front-ends, and a ``cli.py`` that holds only the entry point. Each rule is checked on the tree
and, so that the check itself can fail, on a small tree that breaks it."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import structure  # noqa: E402


@pytest.fixture(scope="module")
def shape():
    return structure.measure()


def test_no_import_circles(shape):
    assert shape["circles"] == []


def test_no_import_runs_up_a_layer(shape):
    assert shape["upward_imports"] == []


def test_no_kernel_takes_more_than_12_arguments(shape):
    assert shape["kernels"] > 50  # the kernels are found at all
    assert shape["kernels_over_limit"] == []


def test_front_ends_ask_the_task_instead_of_testing_its_name(shape):
    assert shape["task_name_tests"] == []


def test_cli_py_is_the_entry_point_only(shape):
    assert shape["cli_lines"] < 400


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "structkit"
    for name, text in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text))
    return root


def test_the_rules_catch_a_tree_that_breaks_them(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "cli.py": "x = 1\n" * 401,
        "io/__init__.py": "",
        "io/a.py": "def f():\n    from structkit.io import b\n",
        "io/b.py": "from structkit.io.a import f\nfrom structkit.parse import p\n",
        "parse/__init__.py": "",
        "parse/p.py": """\
            from structkit.jit import njit

            @njit(cache=True)
            def k(a, b, c, d, e, f, g, h, i, j, k, l, m):
                return a
            """,
        "jit.py": "def njit(**kw):\n    return lambda f: f\n",
        "serve.py": "def route(sv):\n    if sv.task == 'parse':\n        return 1\n"
                    "    if sv.kind.output == 'tree':\n        return 2\n",
    })
    r = structure.measure(root)
    assert r["circles"] == [["structkit.io.a", "structkit.io.b"]]
    assert r["upward_imports"] == [("structkit.io.b", "structkit.parse.p")]
    assert r["kernels_over_limit"] == [("structkit.parse.p", "k", 13)]
    assert [(m, line) for m, line, _ in r["task_name_tests"]] == [("structkit.serve", 2), ("structkit.serve", 4)]
    assert r["cli_lines"] == 401


def test_no_test_writes_past_pytest_capture():
    """`make test` prints pytest's progress and summary only: a test's own lines (figures it
    measured) are captured, shown with -s or when it fails, never written around the capture."""
    own = Path(__file__).name
    tests = Path(__file__).resolve().parent
    escapes = ("capsys.disabled(", "capfd.disabled(", "sys.__stdout__", "sys.__stderr__")
    found = [f"{f.relative_to(tests)}:{k}" for f in sorted(tests.rglob("*.py")) if f.name != own
             for k, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if any(e in line for e in escapes)]
    assert found == []
