"""Checking and fetching corpora.

A fetch works in a hidden temporary folder inside the data folder (so the final moves are
renames on one file system): download, check, convert, check every produced file, write
``SHA256SUMS`` beside them, and only then move each file into place. Any failure removes the
temporary folder, so nothing partial or unverified is ever where a later command reads. A lock
file per corpus stops two fetches of the same corpus at once.
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from structkit.datasets import paths
from structkit.datasets.convert import (CONVERTERS, Archive, CorruptDownload, git_blob_sha1, inside,
                                        plain_name, sha256_file)
from structkit.datasets.registry import UD_ORG, Corpus, Download, File, get, ud_folder
from structkit.errors import UserError

MIRROR_ENV = "STRUCTKIT_MIRROR"
TIMEOUT = 30.0          # seconds one read may wait for bytes
MAX_BYTES = 1 << 30     # one download, at most (the largest registered one is under 100 MB)
MAX_BYTES_ENV = "STRUCTKIT_MAX_DOWNLOAD_BYTES"
LISTING_BYTES = 16 << 20  # a repository listing, at most
MIN_RATE = 1024         # bytes/s: a download slower than this on average ...
GRACE = 60.0            # ... once it has run this many seconds is stopped (a drip never ends)
SUMS = "SHA256SUMS"


class FetchError(UserError):
    """A download that failed (network, HTTP status, dropped connection)."""


# ---- status of the files on disk ----------------------------------------------------------------
@dataclass(frozen=True)
class FileStatus:
    file: File
    path: Path | None   # where it was found, or None
    state: str          # "verified", "missing", "changed" or "unchecked"


def _recorded(folder: Path) -> dict[str, str]:
    """The sha256 a verified fetch recorded for each file of ``folder`` (its SHA256SUMS)."""
    try:
        text = (folder / SUMS).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and len(parts[0]) == 64:
            out[parts[1].lstrip("*")] = parts[0]
    return out


def file_status(f: File, dirs: list[Path] | None = None) -> FileStatus:
    """Find ``f`` in the data folders and check it against the registry's sha256 (or, where
    the registry has none, the SHA256SUMS its fetch recorded)."""
    for d in dirs if dirs is not None else paths.search_dirs():
        p = d / f.path
        if not p.is_file():
            continue
        want = f.sha256 or _recorded(p.parent).get(p.name)
        if want is None:
            return FileStatus(f, p, "unchecked")
        return FileStatus(f, p, "verified" if sha256_file(p) == want else "changed")
    return FileStatus(f, None, "missing")


def status(corpus: Corpus, dirs: list[Path] | None = None) -> list[FileStatus]:
    return [file_status(f, dirs) for f in _known_files(corpus, dirs)]


def _known_files(corpus: Corpus, dirs: list[Path] | None = None) -> tuple[File, ...]:
    """A corpus's files; for a UD treebank not in the registry, those a fetch recorded."""
    if corpus.files or corpus.ud is None:
        return corpus.files
    folder = ud_folder(*corpus.ud)
    for d in dirs if dirs is not None else paths.search_dirs():
        rec = _recorded(d / folder)
        if rec:
            return tuple(File(f"{folder}/{n}", _ud_split(n)) for n in sorted(rec))
    return ()


def summary(st: list[FileStatus]) -> str:
    """One phrase for ``data list``: verified, missing, partial, changed, unchecked."""
    if not st:
        return "missing"
    states = [s.state for s in st]
    if all(s == "verified" for s in states):
        return "present, verified"
    if all(s == "missing" for s in states):
        return "missing"
    changed = [s.file.name for s in st if s.state == "changed"]
    if changed:
        return f"CHANGED: sha256 of {', '.join(changed)} differs from the registry's"
    missing = [s for s in st if s.state == "missing"]
    if missing:
        return f"partial: {len(st) - len(missing)} of {len(st)} files ({', '.join(s.file.name for s in missing)} missing)"
    return "present, not checked (no checksum known)"


# ---- downloading ------------------------------------------------------------------------------
def mirrored(url: str, mirror: str | None) -> str:
    """``url`` on a mirror: ``https://host/path`` becomes ``MIRROR/host/path``."""
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + url.split("://", 1)[-1]


def _describe(e: BaseException, got: int, total: int | None) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, http.client.IncompleteRead) or isinstance(e, _Short):
        return (f"connection dropped after {got:,} of {total:,} bytes" if total
                else f"connection dropped after {got:,} bytes")
    if isinstance(e, urllib.error.URLError):
        reason = e.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return f"no answer within {TIMEOUT:g} s"
        return str(getattr(reason, "strerror", None) or reason)
    if isinstance(e, (socket.timeout, TimeoutError)):
        return f"no answer within {TIMEOUT:g} s"
    if isinstance(e, (ConnectionError, http.client.HTTPException)):
        return f"connection lost after {got:,} bytes ({type(e).__name__})"
    return str(e) or type(e).__name__


class _Short(Exception):
    pass


def max_bytes() -> int:
    """The size cap of one download: ``$STRUCTKIT_MAX_DOWNLOAD_BYTES`` or 1 GiB."""
    v = os.environ.get(MAX_BYTES_ENV, "")
    if not v:
        return MAX_BYTES
    if not v.isdigit() or int(v) <= 0:
        raise UserError(f"${MAX_BYTES_ENV} must be a positive number of bytes, not {v!r}")
    return int(v)


class _TooBig(Exception):
    pass


class _TooSlow(Exception):
    pass


def download(url: str, dest: Path, progress: bool, desc: str, limit: int | None = None) -> None:
    """Stream ``url`` into ``dest``; any failure is a FetchError naming the URL and the cause.
    Bounded: at most ``limit`` bytes (default ``max_bytes()``), each read waits at most
    ``TIMEOUT`` s, and a download still under ``MIN_RATE`` bytes/s on average after ``GRACE``
    seconds is stopped, so neither an endless body nor a drip runs on."""
    got, total = 0, None
    limit = max_bytes() if limit is None else limit
    req = urllib.request.Request(url, headers={"User-Agent": "structkit (structkit data fetch)"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r, open(dest, "wb") as out:
            length = r.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            if total is not None and total > limit:
                raise _TooBig()
            start = time.monotonic()
            bar = None
            if progress:
                from tqdm import tqdm
                bar = tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                           file=sys.stderr, leave=False)
            try:
                while chunk := r.read1(1 << 16):
                    got += len(chunk)
                    if got > limit:
                        raise _TooBig()
                    out.write(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
                    spent = time.monotonic() - start
                    if spent > GRACE and got < MIN_RATE * spent:
                        raise _TooSlow()
            finally:
                if bar is not None:
                    bar.close()
            if total is not None and got != total:
                raise _Short()
    except _TooBig:
        raise FetchError(f"cannot download {url}: it is larger than {limit:,} bytes, the cap of "
                         f"one download (${MAX_BYTES_ENV} raises it)") from None
    except _TooSlow:
        raise FetchError(f"cannot download {url}: {got:,} bytes in {time.monotonic() - start:.0f} s, "
                         f"under {MIN_RATE:,} bytes/s; stopped") from None
    except (OSError, http.client.HTTPException, _Short, ValueError) as e:
        if isinstance(e, OSError) and not isinstance(e, (urllib.error.URLError, ConnectionError,
                                                         TimeoutError, socket.timeout)) \
                and e.filename is not None:
            raise  # a local file error, not the network's
        raise FetchError(f"cannot download {url}: {_describe(e, got, total)}") from None


def _get(d: Download, dest: Path, mirror: str | None, progress: bool, desc: str) -> None:
    """Download ``d`` from its first URL that answers, checking its own sha256 if known."""
    first: FetchError | None = None
    for url in d.urls:
        try:
            download(mirrored(url, mirror), dest, progress, desc)
        except FetchError as e:
            first = first or e
            continue
        if d.sha256 is not None:
            got = sha256_file(dest)
            if got != d.sha256:
                first = first or FetchError(f"{mirrored(url, mirror)} has sha256 {got[:16]}..., "
                                            f"expected {d.sha256[:16]}...: not the registered file")
                continue
        if d.git_sha1 is not None and git_blob_sha1(dest) != d.git_sha1:
            first = first or FetchError(f"{mirrored(url, mirror)} does not match its git blob id "
                                        f"{d.git_sha1[:12]} from the repository listing")
            continue
        return
    assert first is not None
    raise first


# ---- Universal Dependencies: the file list at fetch time ---------------------------------------
def _ud_split(name: str) -> str:
    for split in ("train", "dev", "test"):
        if name.endswith(f"-{split}.conllu"):
            return split
    return ""


def _ud_plan(corpus: Corpus, work: Path, mirror: str | None) -> Corpus:
    """The corpus with its files and downloads from the treebank's GitHub listing: every
    ``.conllu`` file, LICENSE and README, each checked against the git blob id listed."""
    assert corpus.ud is not None
    treebank, ref = corpus.ud
    api = f"https://api.github.com/repos/{UD_ORG}/UD_{treebank}/contents?ref={ref}"
    listing = work / "listing.json"
    try:
        download(mirrored(api, mirror), listing, False, "listing", LISTING_BYTES)
    except FetchError as e:
        if "HTTP 404" in str(e):
            raise FetchError(f"{e} (is UD_{treebank} at {ref} a treebank and release of "
                             f"github.com/{UD_ORG}?)") from None
        raise
    try:
        entries = json.loads(listing.read_text(encoding="utf-8"))
        entries = [e for e in entries if e.get("type") == "file"]
    except (ValueError, AttributeError, TypeError):
        raise FetchError(f"{mirrored(api, mirror)} did not return a GitHub file listing") from None
    wanted = [e for e in entries if str(e.get("name", "")).endswith(".conllu")
              or e.get("name") in ("LICENSE.txt", "LICENSE.md", "README.md", "README.txt")]
    for e in wanted:  # a listed name becomes a path: only plain file names pass
        plain_name(e.get("name"), f"the listing of UD_{treebank} at {ref}")
        if e.get("sha") is not None and not (isinstance(e["sha"], str) and len(e["sha"]) == 40
                                             and all(c in "0123456789abcdef" for c in e["sha"])):
            raise CorruptDownload(f"the listing of UD_{treebank} at {ref} gives {e['name']} a "
                                  f"git blob id that is not 40 hex digits")
    if not any(e["name"].endswith(".conllu") for e in wanted):
        raise UserError(f"UD_{treebank} at {ref} has no .conllu files")
    pinned = {f.name: f for f in corpus.files}
    folder = corpus.folders[0] if corpus.files else ud_folder(treebank, ref)
    missing = sorted(set(pinned) - {e["name"] for e in wanted})
    if missing:
        raise UserError(f"UD_{treebank} at {ref} no longer lists {', '.join(missing)}")
    files, downloads = [], []
    for i, e in enumerate(sorted(wanted, key=lambda e: e["name"])):
        name = e["name"]
        base = pinned.get(name) or File(f"{folder}/{name}", _ud_split(name))
        files.append(replace(base, source=i, member=None, git_sha1=e.get("sha")))
        url = f"https://raw.githubusercontent.com/{UD_ORG}/UD_{treebank}/{ref}/{name}"
        downloads.append(Download((url,), git_sha1=e.get("sha")))
    return replace(corpus, files=tuple(files), downloads=tuple(downloads))


# ---- fetching ---------------------------------------------------------------------------------
@dataclass
class Fetched:
    corpus: Corpus
    written: list[Path]     # files moved into place (empty when all were already verified)
    where: list[Path]       # the corpus's folders


def _folders(corpus: Corpus, home: Path) -> list[Path]:
    return [home / f for f in corpus.folders] if corpus.files else [home / ud_folder(*corpus.ud)]


def _writable(home: Path, corpus: Corpus) -> None:
    fix = (f"set ${paths.ENV} to a writable folder (it is {home})" if paths.env_dir()
           else f"make it writable, or set ${paths.ENV} to a writable folder")
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the data folder {home}: {e.strerror or e}; {fix}") from None
    for d in [home] + [f for f in _folders(corpus, home) if f.exists()]:
        if not os.access(d, os.W_OK | os.X_OK):
            raise UserError(f"cannot write to {d}: permission denied; {fix}")


@contextlib.contextmanager
def _lock(home: Path, corpus: Corpus) -> Iterator[None]:
    """Hold the corpus's lock file; a second fetch of the same corpus fails at once."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; fetches there are not guarded
        yield
        return
    locks = home / ".locks"
    locks.mkdir(exist_ok=True)
    path = locks / (_safe(corpus.name) + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{corpus.name}: another `structkit data fetch` of it is running (it "
                            f"holds {path}); let it finish, then run this again") from None
        yield
    finally:
        os.close(fd)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in name)


def _by_hand(corpus: Corpus, home: Path) -> str:
    where = ", ".join(str(p) for p in _folders(corpus, home))
    if corpus.ud is not None:
        return f"to fetch by hand, put the treebank's .conllu files in {where}"
    return (f"to fetch by hand, download it yourself and run `structkit data fetch {corpus.name} "
            f"--from FILE ...` (it checks and converts them into {where})")


def _sources(corpus: Corpus, from_files: list[str] | None, work: Path, mirror: str | None,
             progress: bool) -> list[Path]:
    """The downloads, fetched or (``from_files``) given by the user, in registry order."""
    if from_files:
        if corpus.ud is not None:
            raise UserError(f"--from is not available for UD treebanks: put the .conllu files in "
                            f"{', '.join(str(p) for p in _folders(corpus, paths.data_home()))}")
        given = {Path(p).name: Path(p) for p in from_files}
        if len(corpus.downloads) == 1 and len(from_files) == 1:
            chosen = [Path(from_files[0])]
        else:
            lacking = [d.name for d in corpus.downloads if d.name not in given]
            if lacking:
                raise UserError(f"{corpus.name}: --from needs the files {', '.join(d.name for d in corpus.downloads)}"
                                f" (missing: {', '.join(lacking)})")
            chosen = [given[d.name] for d in corpus.downloads]
        for p in chosen:
            if not p.is_file():
                raise UserError("no such file", str(p))
        return chosen
    out = []
    for i, d in enumerate(corpus.downloads):
        dest = work / f"{i:03d}-{_safe(d.name)}"
        _get(d, dest, mirror, progress, d.name)
        out.append(dest)
    return out


def fetch(name: str, *, mirror: str | None = None, from_files: list[str] | None = None,
          progress: bool = False, say: Callable[[str], None] = lambda s: None) -> Fetched:
    """Fetch corpus ``name`` into the data folder (``$STRUCTKIT_DATA``, else the cache) unless
    all its files are already there and verified. Every failure is a UserError; none leaves a
    partial or unverified file where commands read."""
    corpus = get(name)
    home = paths.data_home()
    mirror = mirror if mirror is not None else os.environ.get(MIRROR_ENV) or None
    st = status(corpus)
    if st and all(s.state == "verified" for s in st) and not from_files:
        return Fetched(corpus, [], sorted({s.path.parent for s in st}))
    _writable(home, corpus)
    with _lock(home, corpus):
        st = status(corpus)  # another fetch may have finished while we waited for the lock
        if st and all(s.state == "verified" for s in st) and not from_files:
            return Fetched(corpus, [], sorted({s.path.parent for s in st}))
        for stale in home.glob(f".fetch-{_safe(corpus.name)}-*"):
            shutil.rmtree(stale, ignore_errors=True)  # left by a fetch that was killed
        work = Path(tempfile.mkdtemp(prefix=f".fetch-{_safe(corpus.name)}-", dir=home))
        try:
            return _fetch_into(corpus, home, work, mirror, from_files, progress, say)
        except UserError as e:
            if isinstance(e, FetchError):
                raise FetchError(f"{corpus.name}: {e}. Nothing was written; {_by_hand(corpus, home)}") from None
            raise UserError(f"{corpus.name}: {e}. Nothing was written") from None
        except OSError as e:
            raise UserError(f"{corpus.name}: cannot write in {home}: {e.strerror or e}. Nothing was written") from None
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _fetch_into(corpus: Corpus, home: Path, work: Path, mirror: str | None,
                from_files: list[str] | None, progress: bool, say: Callable[[str], None]) -> Fetched:
    (work / "dl").mkdir()
    out = work / "out"
    out.mkdir()
    if corpus.ud is not None and not from_files:
        corpus = _ud_plan(corpus, work, mirror)
    sources = _sources(corpus, from_files, work / "dl", mirror, progress)
    archives = [Archive(p, d.name) for p, d in zip(sources, corpus.downloads)]
    try:
        say(f"{corpus.name}: converting" if corpus.convert not in ("copy", "ud") else f"{corpus.name}: checking")
        CONVERTERS[corpus.convert](corpus, archives, out)
    finally:
        for a in archives:
            a.close()
    sums: dict[Path, list[str]] = {}
    for f in corpus.files:
        p = inside(out, out / f.path)
        if not p.is_file():
            raise UserError(f"{f.path} was not produced")
        sha = sha256_file(p)
        if f.sha256 is not None and sha != f.sha256:
            raise UserError(f"{f.path} has sha256 {sha[:16]}..., expected {f.sha256[:16]}...: "
                            f"not the registered file")
        if f.git_sha1 is not None and git_blob_sha1(p) != f.git_sha1:
            raise UserError(f"{f.path} does not match its git blob id {f.git_sha1[:12]}")
        sums.setdefault(p.parent, []).append(f"{sha}  {p.name}\n")
    for folder, lines in sums.items():
        (folder / SUMS).write_text("".join(sorted(lines, key=lambda s: s[66:])), encoding="utf-8")
    _install(corpus, home, out, work / "old", sorted(sums))
    return Fetched(corpus, [home / f.path for f in corpus.files], _folders(corpus, home))


def _install(corpus: Corpus, home: Path, out: Path, old: Path, folders: list[Path]) -> None:
    """Move the verified files into place, all or none: a file they replace is kept aside
    until every move has succeeded, and put back if one fails."""
    moved: list[tuple[Path, Path | None]] = []
    old.mkdir()
    try:
        for i, f in enumerate(corpus.files):
            dest = inside(home, home / f.path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            inside(home, dest)
            kept = None
            if dest.exists():
                kept = old / str(i)
                os.replace(dest, kept)
            moved.append((dest, kept))
            os.replace(out / f.path, dest)
        for folder in folders:
            _merge_sums(folder / SUMS, home / folder.relative_to(out) / SUMS)
    except BaseException:
        for dest, kept in reversed(moved):
            with contextlib.suppress(OSError):
                if kept is not None:
                    os.replace(kept, dest)
                else:
                    dest.unlink(missing_ok=True)
        for folder in folders:  # folders this fetch created and left empty
            with contextlib.suppress(OSError):
                (home / folder.relative_to(out)).rmdir()
        raise


def _merge_sums(new: Path, dest: Path) -> None:
    """Install SHA256SUMS, keeping the lines of files another fetch recorded there."""
    lines = {ln[66:].rstrip("\n"): ln for ln in new.read_text(encoding="utf-8").splitlines(True)}
    if dest.exists():
        for ln in dest.read_text(encoding="utf-8", errors="replace").splitlines(True):
            name = ln[66:].rstrip("\n")
            if len(ln) > 66 and name not in lines:
                lines[name] = ln if ln.endswith("\n") else ln + "\n"
    tmp = new.with_suffix(".new")
    tmp.write_text("".join(lines[k] for k in sorted(lines)), encoding="utf-8")
    os.replace(tmp, dest)
