"""The distribution as a user gets it: ``python -m build`` makes the sdist and the wheel (from the
sdist, so the sdist is complete), the wheel holds the package, its sample data, ``py.typed`` and
the licence and nothing else (no tests, no results); installed into a fresh environment it runs
``structkit --version``, the offline ``make demo`` (scripts/demo.sh on the shipped sample), one
``annotate`` with a pipeline trained on the shipped UD sample, and a
raw-text pipeline, from a folder outside the source tree, importing the installed copy.

The fresh environment reuses the project environment's dependencies (numpy, numba, click, ...)
through a ``.pth`` line instead of downloading them: ``python -m venv --system-site-packages``
from a virtual environment's interpreter would see the base interpreter's packages, not the
project's. The wheel goes in with ``pip --no-index --no-deps``: nothing is fetched. Building
without isolation needs ``build`` and ``setuptools>=77`` here (both in the test extra)."""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from conftest import require_extra

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "structkit" / "data" / "sample"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NAME = PYPROJECT["project"]["name"]
VERSION = PYPROJECT["project"]["version"]
STEM = f"{NAME.replace('-', '_')}-{VERSION}"


def _run(cmd, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    if "input" not in kw:
        kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def _sample_files() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in SAMPLE.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel, built from a copy of what the build reads (so that the source
    tree gets no build/ or egg-info), without build isolation: offline."""
    require_extra("build", "test")
    from importlib.metadata import version

    floor = next(r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    have = version("setuptools")
    if int(have.split(".")[0]) < int(floor.split(">=")[1].split(".")[0]):
        msg = f"setuptools {have} is older than the build's {floor}: pip install -e '.[test]'"
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    tmp = tmp_path_factory.mktemp("dist")
    src = tmp / "src"
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.nbi", "*.nbc")
    shutil.copytree(ROOT / "structkit", src / "structkit", ignore=skip)
    project = PYPROJECT["project"]
    for name in ("pyproject.toml", "MANIFEST.in", project["readme"], *project["license-files"]):
        shutil.copy2(ROOT / name, src / name)
    out = tmp / "out"
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src])
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"{STEM}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"{STEM}.tar.gz"]
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_the_distribution_is_not_the_index_s_other_structkit():
    # `structkit` on the package index is a YAML scaffolding tool: ours is structkit-nlp,
    # with the import package and the command still `structkit`.
    assert NAME == "structkit-nlp"
    assert PYPROJECT["project"]["scripts"] == {"structkit": "structkit.cli:main"}
    assert any(r.startswith("setuptools>=77") for r in PYPROJECT["build-system"]["requires"])
    assert PYPROJECT["project"]["license"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def test_the_wheel_holds_the_package_its_data_and_licence_and_nothing_else(dist):
    with zipfile.ZipFile(dist["wheel"]) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(f"{STEM}.dist-info/METADATA").decode())
        entry_points = z.read(f"{STEM}.dist-info/entry_points.txt").decode()
    assert "structkit/py.typed" in names
    assert "structkit/web/index.html" in names
    assert _sample_files() <= names and "structkit/data/sample/chunk/train.txt" in names
    assert f"{STEM}.dist-info/licenses/LICENSE" in names
    assert meta["Name"] == NAME and meta["Version"] == VERSION
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    assert "structkit = structkit.cli:main" in entry_points
    tops = {n.split("/")[0] for n in names}
    assert tops == {"structkit", f"{STEM}.dist-info"}, tops
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc", ".model"))]
    assert dist["wheel"].stat().st_size < 1 << 20  # the sample is small; keep the wheel so


def test_the_sdist_holds_the_source_data_and_licence_and_no_tests(dist):
    with tarfile.open(dist["sdist"]) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for need in ("pyproject.toml", "README.md", "LICENSE", "structkit/py.typed", "structkit/cli.py"):
        assert need in names, need
    assert _sample_files() <= names
    assert not [n for n in names if n.startswith(("tests/", "results/", "scripts/"))]


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A fresh environment with the wheel installed; its dependencies are the project
    environment's (a .pth line), not downloaded."""
    env = tmp_path_factory.mktemp("venv") / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", env])
    py = env / "bin" / "python"
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(purelib) / "_structkit_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # --ignore-installed: the project environment's editable structkit-nlp is on the path too.
    _run([sys.executable, "-m", "pip", "--python", py, "install", "--quiet", "--no-deps", "--no-index",
          "--ignore-installed", "--disable-pip-version-check", dist["wheel"]])
    return env


def _user_env(home: Path) -> dict:
    """An environment without this tree on PYTHONPATH and with empty data folders: the demo
    cannot fetch CoNLL-2000 (the mirror is an empty folder), so it runs on the shipped sample."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STRUCTKIT_DATA")}
    empty = home / "empty"
    empty.mkdir(exist_ok=True)
    env.update(STRUCTKIT_DATA=str(empty), XDG_CACHE_HOME=str(empty),
               STRUCTKIT_MIRROR=(empty / "mirror").as_uri())
    return env


def test_the_installed_wheel_runs_the_demo_and_raw_text_from_outside_the_tree(installed, tmp_path):
    sk = installed / "bin" / "structkit"
    env = _user_env(tmp_path)
    run = lambda *cmd, env=env, **kw: _run(cmd, cwd=tmp_path, env=env, **kw)  # noqa: E731

    assert run(sk, "--version").stdout.strip() == f"structkit, version {VERSION}"
    where = run(installed / "bin" / "python", "-c",
                "import structkit, importlib.metadata as m; from structkit.datasets import sample_dir; "
                "print(structkit.__file__); print(sample_dir()); print(m.version('structkit-nlp'))").stdout.split()
    assert Path(where[0]).resolve().is_relative_to(installed.resolve()), where
    assert Path(where[1]).resolve().is_relative_to(installed.resolve()), where
    assert where[2] == VERSION

    # `make demo` without a network: scripts/demo.sh with the installed command.
    demo = run("sh", ROOT / "scripts" / "demo.sh", env={**env, "SK": str(sk), "OUT": str(tmp_path / "demo")})
    assert "running the same steps on the shipped sample" in demo.stdout, demo.stdout
    assert "processed 136 tokens" in demo.stdout and "FB1:" in demo.stdout, demo.stdout
    assert (tmp_path / "demo" / "chunk.model").is_file()

    # Raw text in, POS tags and chunks out (annotate-like): tag --text | chunk -.
    run(sk, "train", "--task", "pos", "--train", "sample/pos/train.txt", "--model", "pos.model", "-q")
    tagged = run(sk, "tag", "--model", "pos.model", "--text",
                 input="The ferry left the harbour at noon. The council met on Monday.\n").stdout
    rows = [line.split() for line in tagged.splitlines() if line]
    assert [r[0] for r in rows][:4] == ["The", "ferry", "left", "the"] and len(rows) == 14
    assert all(len(r) == 2 for r in rows) and rows[0][1] == "DT"
    chunked = run(sk, "chunk", "--model", tmp_path / "demo" / "chunk.model", "-", input=tagged).stdout
    chunks = [line.split() for line in chunked.splitlines() if line]
    assert [r[:2] for r in chunks] == [r[:2] for r in rows]
    assert chunks[0][2] == "B-NP" and {r[2][:2] for r in chunks} <= {"B-", "I-", "O"}

    # One annotate: a pipeline (tokenizer, morph, parser) trained on the shipped UD sample, then
    # raw text in, full CoNLL-U out: two sentences, every word with UPOS, LEMMA and a head, one root each.
    run(sk, "train", "--task", "pipeline", "--train", "sample/ud/train.conllu", "--dev", "sample/ud/dev.conllu",
        "--epochs", "2", "--model", "ud.skm", "-q", timeout=900)
    out = run(sk, "annotate", "-m", "ud.skm", "-", input="The ferry left the harbour at noon. The council met on Monday.\n")
    sents = [b for b in out.stdout.split("\n\n") if b.strip()]
    assert len(sents) == 2, out.stdout
    for block in sents:
        words = [r.split("\t") for r in block.splitlines() if r and not r.startswith("#") and "-" not in r.split("\t")[0]]
        assert words and all(len(w) == 10 and w[3] != "_" and w[2] != "_" and w[6].isdigit() for w in words), block
        assert sum(w[6] == "0" for w in words) == 1, block
