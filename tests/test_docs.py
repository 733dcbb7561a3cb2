"""The documentation site (``mkdocs.yml``, ``docs/``): it builds with warnings as errors (MkDocs'
strict mode, which also refuses a link to a page or anchor that is not there), every internal
link of the built pages leads to a page of the site, the README stays a first visit's page
(under 300 lines, linking every page of the guide), and the getting-started page's commands and
Python run, on the shipped sample treebank in place of Italian ParTUT."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import FIXTURES  # noqa: F401  (the tests' conftest: paths, the `sk` runner)
from structkit.datasets import sample_dir

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "getting-started.md"


def _need_mkdocs():
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
        import mkdocs_click  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the docs extra is not installed ({e.name}): pip install 'structkit-nlp[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    _need_mkdocs()
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
                       cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def test_the_site_builds_strict_with_every_guide_page_and_result(site):
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    assert "getting-started/index.html" in pages and "cli/index.html" in pages and "api/index.html" in pages
    guide = sorted(p.stem for p in (ROOT / "docs" / "guide").glob("*.md"))
    assert [p.split("/")[1] for p in pages if p.startswith("guide/")] == guide
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in guide:   # the README lists every page of the guide
        assert f"(docs/guide/{name}.md)" in readme, name
    results = sorted((ROOT / "results").glob("*.md"))
    assert {f"results/{p.stem}/index.html" for p in results} <= set(pages)
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("annotate", "tag", "parse", "train", "eval", "serve", "models"):   # from the Click commands
        assert f"structkit {command}" in cli, command
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "structkit.api.Tagger" in api and "structkit.pipeline.api.load" in api


def test_the_readme_is_short_and_its_links_lead_to_files():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        assert (ROOT / target).exists(), target


def test_every_internal_link_of_the_site_leads_to_a_page(site):
    broken = []
    for page in site.rglob("*.html"):
        if page.name == "404.html":   # served at any path: its links are absolute
            continue
        for href in re.findall(r'(?:href|src)="([^"]+)"', page.read_text(encoding="utf-8")):
            url = urlparse(href)
            if url.scheme or url.netloc or href.startswith(("#", "mailto:", "data:")):
                continue
            target = (page.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert broken == []


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_getting_started_commands_run(tmp_path, monkeypatch):
    """The page's two commands, on the shipped sample treebank (English, under the file names of
    UD English ParTUT, given with --from since the page's corpus is not fetched here), then its
    Python. The output's text is the input, and every word has its ten columns filled."""
    build, annotate = [line for line in _blocks("sh")[1].splitlines() if line.strip()]
    assert build == "structkit models build ud:Italian-ParTUT/pipeline -o it.skm"
    text = re.match(r'echo "(.*)" \| structkit annotate -m it.skm$', annotate).group(1)
    folder = tmp_path / "UD_English-ParTUT"
    folder.mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(sample_dir() / "ud" / f"{split}.conllu", folder / f"en_partut-ud-{split}.conllu")
    monkeypatch.chdir(tmp_path)
    exe = [sys.executable, "-m", "structkit"]
    args = build.split()[1:]
    args[args.index("ud:Italian-ParTUT/pipeline")] = "ud:English-ParTUT/pipeline"
    r = subprocess.run(exe + args + ["--from", str(folder), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(exe + ["annotate", "-m", "it.skm"], input=text + "\n", capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert f"# text = {text}" in lines
    rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
    words = [x for x in rows if "-" not in x[0]]
    assert words and all(len(x) == 10 and all(c != "_" for c in (x[2], x[3], x[6], x[7])) for x in words)
    python = _blocks("python")[0]
    out = subprocess.run([sys.executable, "-c", python], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    printed = [line.split() for line in out.stdout.splitlines()]
    assert [p[0] for p in printed] == ["Il", "consiglio", "si", "è", "riunito", "lunedì", "."] or \
        "".join(p[0] for p in printed) == "Ilconsigliosièriunitolunedì."
