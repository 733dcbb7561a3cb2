"""The documentation site's generated pages (an MkDocs hook, ``mkdocs.yml``): the guide is the
README cut at its ``##`` sections, one page each (so the site and the README never disagree,
and every check the README passes -- its figures, examples and code blocks -- covers the guide);
the results pages are the files of ``results/`` that the scripts write, with their pictures.
The navigation lists the hand-written pages (``docs/*.md``), the guide, the references and the
results."""
from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
SKIP = ("Set-up",)   # README sections the getting-started page covers


def slug(title: str) -> str:
    title = re.sub(r"`[^`]*`", lambda m: m.group(0).strip("`"), title)
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]


def guide_sections(readme: str) -> list[tuple[str, str]]:
    """(title, page text) of each ``##`` section of the README, headings raised one level and
    links to results/ pointed at the results pages."""
    out: list[tuple[str, str]] = []
    title, lines = None, []
    fence = False
    for line in readme.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("## "):
            if title is not None:
                out.append((title, "\n".join(lines)))
            title, lines = line[3:].strip(), [f"# {line[3:].strip()}"]
            continue
        if title is None:
            continue
        if not fence and line.startswith("###"):
            line = line[1:]
        lines.append(line)
    if title is not None:
        out.append((title, "\n".join(lines)))
    return [(t, re.sub(r"\]\(results/", "](../results/", text)) for t, text in out if t not in SKIP]


def _results() -> list[Path]:
    return sorted((ROOT / "results").glob("*.md"))


def on_files(files, config):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for title, text in guide_sections(readme):
        files.append(File.generated(config, f"guide/{slug(title)}.md", content=text + "\n"))
    for path in _results():
        files.append(File.generated(config, f"results/{path.name}", content=path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "results").glob("*.png")):
        files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    return files


def _task_commands() -> None:
    """The command line lists each task's command (`tag`, `annotate`, ...) from the task
    registry when asked (``structkit.cli``); the CLI reference reads the group's own table, so
    they are put there for this build."""
    import click

    from structkit.cli import cli

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        cli.commands.setdefault(name, cli.get_command(ctx, name))


def on_config(config):
    _task_commands()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    guide = [{title: f"guide/{slug(title)}.md"} for title, _ in guide_sections(readme)]
    results = [{p.stem: f"results/{p.name}"} for p in _results()]
    config["nav"] = [{"Home": "index.md"}, {"Getting started": "getting-started.md"}, {"Guide": guide},
                     {"Reference": [{"Command line": "cli.md"}, {"Python API": "api.md"}]},
                     {"Results": results}]
    return config
