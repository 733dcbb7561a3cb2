"""Helpers for the command-line tests: run ``structkit.cli.main`` in-process, or as a new
process of this tree (``sk_cmd``, ``sk_env``), and check the one-line-error rule (the ``sk``
fixture in conftest.py uses ``run_main``)."""
from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from structkit.cli import main


_ROOT = Path(__file__).resolve().parents[1]


def sk_cmd(*args) -> list[str]:
    """``python -m structkit ARGS`` for subprocess (arguments as strings)."""
    return [sys.executable, "-m", "structkit", *map(str, args)]


def sk_env() -> dict:
    """The environment in which a new process imports this tree's structkit."""
    return {**os.environ, "PYTHONPATH": str(_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@dataclass
class Run:
    code: int
    out: str
    err: str


def run_main(capsys, monkeypatch, *args, stdin: bytes | None = None) -> Run:
    """Run ``structkit.cli.main``; returns its exit code, stdout and stderr."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    code = ei.value.code
    return Run(0 if code is None else code, out, err)


def assert_one_line_error(r: Run, *needles: str, code: int | None = None) -> str:
    """Non-zero exit, exactly one line on stderr containing ``needles``, no traceback."""
    assert r.code != 0, r
    if code is not None:
        assert r.code == code, r
    assert "Traceback" not in r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and r.err.endswith("\n"), r.err
    assert lines[0].startswith("structkit"), r.err
    for n in needles:
        assert n in lines[0], (n, r.err)
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    """Temporary files an atomic write left behind (there must be none)."""
    return [p for p in os.listdir(folder) if p.startswith(".tmp-")]
