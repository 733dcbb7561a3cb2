import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def data_dir() -> Path:
    return Path(os.environ.get("STRUCTKIT_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture
def corpus():
    """Path to a file of the shared corpora; skips the test where it is absent."""
    def get(rel: str) -> Path:
        p = data_dir() / rel
        if not p.exists():
            pytest.skip(f"corpus file {p} not found (set STRUCTKIT_DATA to the shared data folder)")
        return p
    return get


@pytest.fixture
def sk(capsys, monkeypatch):
    """Run ``structkit.cli.main`` in-process: ``sk(*args, stdin=None) -> Run``."""
    from clitools import run_main

    return lambda *args, stdin=None: run_main(capsys, monkeypatch, *args, stdin=stdin)
