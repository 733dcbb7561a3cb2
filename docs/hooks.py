"""The documentation site's generated pages (an MkDocs hook, ``mkdocs.yml``): the results pages
are the files of ``results/`` that the scripts write, with their pictures, listed under
"Results"; the guide's links to those files (``../../results/X``, right where the pages are read
in the repository) are pointed at them. The CLI reference gets the task commands (``tag``,
``annotate``, ...) that the command line lists from the task registry."""
from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent


def _results() -> list[Path]:
    return sorted((ROOT / "results").glob("*.md"))


def on_files(files, config):
    for path in _results():
        files.append(File.generated(config, f"results/{path.name}", content=path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "results").glob("*.png")):
        files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    return markdown.replace("](../../results/", "](../results/")


def _task_commands() -> None:
    """The command line lists each task's command from the task registry when asked
    (``structkit.cli``); the CLI reference reads the group's own table, so they are put there
    for this build."""
    import click

    from structkit.cli import cli

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        cli.commands.setdefault(name, cli.get_command(ctx, name))


def on_config(config):
    _task_commands()
    nav = []
    for item in config["nav"]:
        if item == {"Results": "results/"}:
            item = {"Results": [{p.stem: f"results/{p.name}"} for p in _results()]}
        nav.append(item)
    config["nav"] = nav
    return config
