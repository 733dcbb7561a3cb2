"""Reading downloads (zip, tar, tar.gz, gz or a plain file, told apart by their first bytes,
not their names) and making a corpus's files from them.

A converter writes every file of the corpus under ``out`` (at its data-folder path) and checks
``source_sha256`` on the archive members it reads; the caller then checks what was written.
Members are streamed, never extracted by name, so an archive cannot write outside ``out``, and
each read stops at a size limit, so a hostile archive cannot fill the disk; memory stays flat
whatever a member holds (members are copied in 1 MiB pieces, converted in a stream). Every
path written is checked, after resolving, to lie inside ``out`` (``inside``), and a name that
comes from outside (a repository listing) must be a plain file name (``plain_name``).
"""
from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import os
import re
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import IO, Callable

from structkit.datasets.registry import Corpus, File
from structkit.errors import UserError

UNKNOWN_LIMIT = 2 << 30  # bytes read from one member whose size the registry does not know
_BROKEN = (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile,
           zipfile.LargeZipFile, ValueError, NotImplementedError)  # the last: a compression zipfile lacks
_NAME_MAX = 255


class CorruptDownload(UserError):
    """A download that cannot be read as what it claims to be."""


def plain_name(name: object, what: str) -> str:
    """``name`` if it is a plain file name that may become a path: a non-empty string of at most
    255 characters with no folder part (``/`` or ``\\``), not ``.`` or ``..``, no drive
    (``C:``), no NUL or other control character; otherwise a CorruptDownload naming ``what``."""
    ok = (isinstance(name, str) and 0 < len(name) <= _NAME_MAX and name not in (".", "..")
          and not any(c in name for c in "/\\:") and all(ord(c) >= 32 and ord(c) != 127 for c in name))
    if not ok:
        shown = repr(name)[:80]
        raise CorruptDownload(f"{what} names a file {shown}, which is not a plain file name; "
                              f"refusing to use it as a path")
    return name


def inside(root: Path, path: Path) -> Path:
    """``path`` if, once resolved (symbolic links followed), it lies under ``root`` resolved;
    otherwise a UserError. Checked on the resolved path, not only the string."""
    base = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real != base and base not in real.parents:
        raise UserError(f"refusing to write {path}: it resolves to {real}, outside {base}")
    return path


class Archive:
    """A downloaded file seen as a set of members: a zip or tar archive, a gzip file (one member,
    its name without ``.gz``) or a plain file (one member, its own name)."""

    def __init__(self, path: Path, label: str):
        self.path, self.label = Path(path), label
        self._zip = self._tar = None
        self._gz = False
        head = _head(self.path)
        want = _expected_kind(label)
        try:
            if head[:2] == b"PK":
                kind = "zip archive"
                self._zip = zipfile.ZipFile(self.path)
            elif head[:2] == b"\x1f\x8b":
                try:
                    self._tar = tarfile.open(self.path, "r:gz")
                    kind = "tar.gz archive"
                except tarfile.ReadError:
                    if want == "tar.gz archive":
                        raise
                    self._gz, kind = True, "gzip file"
            elif tarfile.is_tarfile(self.path):
                kind = "tar archive"
                self._tar = tarfile.open(self.path, "r:")
            else:
                kind = None
        except _BROKEN as e:
            raise self.broken(e) from None
        if want is not None and kind != want:
            raise CorruptDownload(f"{label} is not a {want} (it begins {head!r}): a truncated or "
                                  f"corrupt download, or an error page instead of the file")

    def broken(self, e: BaseException) -> CorruptDownload:
        kind = _expected_kind(self.label) or "file"
        return CorruptDownload(f"{self.label} is not a readable {kind} ({e or type(e).__name__}): "
                               f"a truncated or corrupt download")

    def names(self) -> list[str]:
        if self._zip is not None:
            return [i.filename for i in self._zip.infolist() if not i.is_dir()]
        if self._tar is not None:
            try:
                return [m.name for m in self._tar.getmembers() if m.isfile()]
            except _BROKEN as e:
                raise self.broken(e) from None
        name = self.label.rsplit("/", 1)[-1]
        return [name[:-3] if self._gz and name.endswith(".gz") else name]

    def find(self, member: str | None) -> str:
        """The member named ``member``, else the one member whose path ends in ``/member``,
        else the one with its file name (archives differ in their top folders); the only
        member when ``member`` is None."""
        names = self.names()
        if member is None:
            if len(names) == 1:
                return names[0]
            raise UserError(f"{self.label}: expected one file, found {len(names)} members")
        if member in names:
            return member
        tail = [n for n in names if n.endswith("/" + member)]
        if len(tail) == 1:
            return tail[0]
        base = member.rsplit("/", 1)[-1]
        same = [n for n in names if n.rsplit("/", 1)[-1] == base]
        if len(same) == 1:
            return same[0]
        if len(names) == 1 and self._zip is None and self._tar is None:
            return names[0]
        raise UserError(f"{self.label} has no member {member!r} "
                        f"({len(names)} members, e.g. {', '.join(names[:3])})")

    def open(self, name: str) -> IO[bytes]:
        try:
            if self._zip is not None:
                if self._zip.getinfo(name).flag_bits & 0x1:
                    raise CorruptDownload(f"{self.label}: member {name} is encrypted; structkit "
                                          f"reads no password-protected archives")
                return self._zip.open(name)
            if self._tar is not None:
                f = self._tar.extractfile(name)
                if f is None:
                    raise UserError(f"{self.label}: member {name!r} is not a regular file")
                return f
            return gzip.open(self.path) if self._gz else open(self.path, "rb")
        except _BROKEN as e:
            raise self.broken(e) from None

    def read_to(self, name: str, dest: IO[bytes], limit: int) -> str:
        """Copy a member into ``dest``; return its sha256. More than ``limit`` bytes, or a
        member that ends early or fails its CRC, is a CorruptDownload."""
        h = hashlib.sha256()
        n = 0
        try:
            with self.open(name) as src:
                while chunk := src.read(1 << 20):
                    n += len(chunk)
                    if n > limit:
                        raise CorruptDownload(f"{self.label}: member {name} is larger than the "
                                              f"{limit:,} bytes expected of it; refusing to go on")
                    h.update(chunk)
                    dest.write(chunk)
        except _BROKEN as e:
            raise self.broken(e) from None
        return h.hexdigest()

    def read(self, name: str, limit: int) -> bytes:
        buf = io.BytesIO()
        self.read_to(name, buf, limit)
        return buf.getvalue()

    def close(self) -> None:
        for a in (self._zip, self._tar):
            if a is not None:
                a.close()


def _expected_kind(label: str) -> str | None:
    name = label.lower()
    if name.endswith(".zip"):
        return "zip archive"
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz archive"
    if name.endswith(".gz"):
        return "gzip file"
    if name.endswith(".tar"):
        return "tar archive"
    return None


def _head(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(4)


def _limit(f: File) -> int:
    return max(2 * f.size, 1 << 20) if f.size else UNKNOWN_LIMIT


def _check_source(corpus: Corpus, f: File, archive: Archive, member: str, sha: str) -> None:
    if f.source_sha256 is not None and sha != f.source_sha256:
        raise UserError(f"{member} in {archive.label} has sha256 {sha[:16]}..., "
                        f"expected {f.source_sha256[:16]}...: not the registered file")


def _target(out: Path, f: File) -> Path:
    p = inside(out, out / f.path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return inside(out, p)


def convert_copy(corpus: Corpus, sources: list[Archive], out: Path) -> None:
    """Each file is one member of its download, byte for byte."""
    for f in corpus.files:
        a = sources[f.source]
        member = a.find(f.member)
        with open(_target(out, f), "wb") as dest:
            sha = a.read_to(member, dest, _limit(f))
        _check_source(corpus, f, a, member, sha)


def convert_utf8(corpus: Corpus, sources: list[Archive], out: Path) -> None:
    """As ``copy``, but a member that is not valid UTF-8 is read as Latin-1 and written as
    UTF-8 (the CoNLL-2002 files were first distributed in Latin-1). Streamed: the member is
    copied to disk, checked as UTF-8 in pieces, and transcoded in pieces where it is not."""
    for f in corpus.files:
        a = sources[f.source]
        member = a.find(f.member)
        target = _target(out, f)
        raw = target.with_name(target.name + ".raw")
        with open(raw, "wb") as dest:
            sha = a.read_to(member, dest, _limit(f))
        _check_source(corpus, f, a, member, sha)
        if _is_utf8(raw):
            os.replace(raw, target)
            continue
        with open(raw, "rb") as src, open(target, "wb") as dest:
            while chunk := src.read(1 << 20):
                dest.write(chunk.decode("latin-1").encode("utf-8"))
        raw.unlink()


def _is_utf8(path: Path) -> bool:
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                dec.decode(chunk)
        dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


_WSJ = re.compile(r"(?:^|/)wsj_(\d{4})\.dp$")
PTB_SPLITS = (("train", 1, 139), ("dev", 140, 169), ("test", 170, 199))


def ptb_sentences(text: str, label: str) -> list[list[tuple[str, str, str]]]:
    """The sentences of one NLTK dependency_treebank file: rows ``word POS head [label]``,
    a blank line between sentences. The dependency label, where a row has one, is dropped:
    the sample's trees are unlabelled."""
    sents: list[list[tuple[str, str, str]]] = []
    cur: list[tuple[str, str, str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        cols = line.split()
        if not cols:
            if cur:
                sents.append(cur)
                cur = []
            continue
        if len(cols) not in (3, 4) or not cols[2].isdigit():
            raise UserError(f"expected 'word POS head [label]', got {line[:60]!r}", label, lineno)
        cur.append((cols[0], cols[1], cols[2]))
    if cur:
        sents.append(cur)
    return sents


def convert_ptb(corpus: Corpus, sources: list[Archive], out: Path) -> None:
    """NLTK's dependency_treebank (wsj_0001.dp ... wsj_0199.dp) into ptb-dep/*.conll (CoNLL-X,
    10 columns, no labels) and ptb-pos/*.txt (word<TAB>POS), split by WSJ file number."""
    a = sources[0]
    files: dict[int, str] = {}
    for name in a.names():
        m = _WSJ.search(name)
        if m:
            files[int(m.group(1))] = name
    by_split = {split: [] for split, _, _ in PTB_SPLITS}
    for split, lo, hi in PTB_SPLITS:
        missing = [n for n in range(lo, hi + 1) if n not in files]
        if missing:
            raise UserError(f"{a.label} lacks wsj_{missing[0]:04d}.dp "
                            f"({len(missing)} of the WSJ files {lo:04d}-{hi:04d} missing)")
        for n in range(lo, hi + 1):
            try:
                text = a.read(files[n], 1 << 24).decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorruptDownload(f"{a.label}: member {files[n]} is not UTF-8 text "
                                      f"(byte {e.start}: {e.reason})") from None
            by_split[split].extend(ptb_sentences(text, f"{a.label}:{files[n]}"))
    targets = {f.path: f for f in corpus.files}
    for split, sents in by_split.items():
        dep = "".join("".join(f"{i}\t{w}\t_\t{p}\t{p}\t_\t{h}\t_\t_\t_\n" for i, (w, p, h) in enumerate(s, 1))
                      + "\n" for s in sents)
        pos = "".join("".join(f"{w}\t{p}\n" for w, p, _ in s) + "\n" for s in sents)
        for path, text in ((f"ptb-dep/{split}.conll", dep), (f"ptb-pos/{split}.txt", pos)):
            if path in targets:
                _target(out, targets[path]).write_text(text, encoding="utf-8")


CONVERTERS: dict[str, Callable[[Corpus, list[Archive], Path], None]] = {
    "copy": convert_copy,
    "utf8": convert_utf8,
    "ptb": convert_ptb,
    "ud": convert_copy,
}


def git_blob_sha1(path: Path) -> str:
    """The id git gives a file's content (what GitHub's contents listing calls ``sha``)."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        shutil.copyfileobj(f, _Hasher(h))
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        shutil.copyfileobj(f, _Hasher(h))
    return h.hexdigest()


class _Hasher:
    def __init__(self, h):
        self.h = h

    def write(self, b: bytes) -> int:
        self.h.update(b)
        return len(b)
