from pathlib import Path

import importlib
import os

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

# No word-cluster table kept between runs (structkit.vectors.cluster_cache): every test makes
# its tables, so that a planted bug in the clustering is not hidden by a table an earlier run
# kept. tests/test_vector_cache.py turns the cache on in a folder of its own.
os.environ["STRUCTKIT_CLUSTER_CACHE"] = "off"


def corpus_path(rel: str) -> Path:
    """A corpus file found where commands find it ($STRUCTKIT_DATA, then the fetch cache);
    skips the test where it is absent, naming the command that fetches it."""
    from structkit.datasets.paths import find
    from structkit.datasets.registry import corpus_for_path

    p = find(rel)
    if p is None:
        c = corpus_for_path(rel)
        how = f"`structkit data fetch {c.name}`" if c is not None else "set STRUCTKIT_DATA"
        pytest.skip(f"corpus file {rel} not found; {how} gets it")
    return p


@pytest.fixture
def corpus():
    """Path to a file of the public corpora; skips the test where it is absent."""
    return corpus_path


@pytest.fixture
def sk(capsys, monkeypatch):
    """Run ``structkit.cli.main`` in-process: ``sk(*args, stdin=None) -> Run``."""
    from clitools import run_main

    return lambda *args, stdin=None: run_main(capsys, monkeypatch, *args, stdin=stdin)


def require_extra(module: str, extra: str, *, module_level: bool = False):
    """Import an optional dependency a test needs. Outside CI a missing one skips the test,
    naming the extra that installs it; in CI (``$CI`` set) it fails, since `make install`
    installs the test extra and a missing package there is a broken install, not a choice."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        msg = f"{module} is missing: pip install 'structkit-nlp[{extra}]' ({e})"
        if os.environ.get("CI"):
            pytest.fail(f"{msg}; the test extra installs it, so in CI this is a failure",
                        pytrace=False)
        pytest.skip(msg, allow_module_level=module_level)
