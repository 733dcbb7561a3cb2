"""`structkit data list | fetch | path`: the public corpora."""
from __future__ import annotations

import json

import click

from structkit.commands._util import progress_enabled, say
from structkit.errors import UserError


@click.group(short_help="List, fetch and locate the public corpora (CoNLL-2000, UD treebanks, ...).")
def data() -> None:
    """The public corpora structkit knows: where each comes from, its licence and size, and
    whether it is here. Files go to $STRUCTKIT_DATA if set, else the user's cache folder
    (~/.cache/structkit on Linux); commands find them there by relative path, e.g.
    conll2000/train.txt.

    \b
    structkit data list
    structkit data fetch conll2000 ptb
    structkit data fetch ud:English-EWT@r2.14
    structkit data path conll2000
    """


def _size(n: int, known: bool = True) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            text = f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
            return text if known else f">{text}" if n else "?"
        n /= 1000
    return "?"


@data.command("list", short_help="Each corpus: size, licence, and whether it is here and verified.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per corpus, one per line.")
def data_list(as_json) -> None:
    """Each registered corpus with its size, licence, splits and status: present and verified
    (sha256), partial, changed or missing, and where it was found. Any Universal Dependencies
    treebank can also be fetched by name: ud:Language-Name@release."""
    from structkit.datasets import corpora, data_home, status, summary
    from structkit.datasets.paths import describe_dirs

    for c in corpora():
        st = status(c)
        where = sorted({str(s.path.parent) for s in st if s.path is not None})
        if as_json:
            click.echo(json.dumps({
                "name": c.name, "description": c.description, "licence": c.licence,
                "size": c.size if c.size_known else None, "splits": list(c.splits),
                "status": summary(st), "where": where, "homepage": c.homepage,
                "urls": [u for d in c.downloads for u in d.urls],
                "files": [{"path": s.file.path, "split": s.file.split, "sha256": s.file.sha256,
                           "size": s.file.size, "state": s.state} for s in st]}))
            continue
        click.echo(f"{c.name:<18} {_size(c.size, c.size_known):>8}  {summary(st)}"
                   + (f"  ({', '.join(where)})" if where else ""))
        click.echo(f"{'':<18} {c.description}")
        click.echo(f"{'':<18} splits: {', '.join(c.splits)}; licence: {c.licence}")
    if not as_json:
        click.echo(f"\nLooked in {describe_dirs()}; `structkit data fetch NAME` writes to "
                   f"{data_home()}. Also: ud:Language-Name@release, any Universal Dependencies "
                   f"treebank from github.com/UniversalDependencies.")


@data.command("fetch", short_help="Download, check (sha256) and install corpora by name.")
@click.argument("names", nargs=-1, required=True)
@click.option("--from", "from_files", multiple=True, metavar="FILE",
              help="Use this downloaded file instead of the network (repeat for several).")
@click.option("--mirror", metavar="URL", help="Fetch https://host/path from URL/host/path "
              "instead (also $STRUCTKIT_MIRROR).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary line.")
def data_fetch(names, from_files, mirror, quiet) -> None:
    """Fetch each NAME (see `structkit data list`; ud:Language-Name@release for a Universal
    Dependencies treebank) into $STRUCTKIT_DATA or the cache: download with a progress bar,
    check every file's sha256, convert where needed, then move the files into place. A corpus
    already present and verified is left alone; nothing partial is left by a failure."""
    from structkit.datasets import fetch, get

    if from_files and len(names) != 1:
        raise UserError("--from goes with one corpus name")
    if "-" in from_files:  # a download is matched by its file name and read more than once
        raise UserError("--from takes downloaded files by path; standard input ('-') cannot be one")
    for name in names:
        get(name)  # every name checked before the first download
    show = progress_enabled(quiet)
    for name in names:
        res = fetch(name, mirror=mirror, from_files=list(from_files) or None, progress=show,
                    say=lambda m: say(m, show))
        if quiet:
            continue
        where = ", ".join(str(p) for p in res.where)
        if res.written:
            click.echo(f"{res.corpus.name}: {len(res.written)} files fetched and verified in {where}", err=True)
        else:
            click.echo(f"{res.corpus.name}: already present and verified in {where}", err=True)


@data.command("path", short_help="Where a corpus (or a corpus file) is, for scripts.")
@click.argument("name")
def data_path(name) -> None:
    """Print the folder of corpus NAME (one line per folder), or the full path of a file such
    as conll2000/train.txt; exit 1 with the fetch command where it is not here."""
    from structkit.datasets import get, status
    from structkit.datasets.paths import describe_dirs, resolve

    if "/" in name.replace("\\", "/") and not name.startswith("ud:"):
        click.echo(resolve(name))
        return
    corpus = get(name)
    st = status(corpus)
    found = [s for s in st if s.path is not None]
    if not found or len(found) < len(st):
        lacking = "is not here" if not found else "is only partly here"
        raise UserError(f"{corpus.name} {lacking} (looked in {describe_dirs()}); "
                        f"`structkit data fetch {name}` gets it")
    for folder in dict.fromkeys(str(s.path.parent) for s in found):
        click.echo(folder)
