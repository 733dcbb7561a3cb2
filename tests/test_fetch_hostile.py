"""`structkit data fetch` against a hostile mirror: names from a listing that would write outside
the data folder, symbolic links, encrypted or non-UTF-8 archive members, archives that inflate
without end, endless bodies and drips. Each must end in one line, write nothing outside the
fetch's folder and leave nothing behind.

Everything is served by a local HTTP server on 127.0.0.1 started here; no test reaches the
internet, and none writes outside its own temporary folder (each checks that too).
"""
from __future__ import annotations

import hashlib
import http.server
import io
import json
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

import importlib
from clitools import assert_one_line_error
from structkit.datasets import registry
from structkit.datasets.convert import Archive, CorruptDownload, convert_utf8, inside, plain_name
from structkit.datasets.registry import Corpus, Download, File
from structkit.errors import UserError

UD = "https://raw.githubusercontent.com/UniversalDependencies/UD_Evil-Lang/r1.0"
API = "https://api.github.com/repos/UniversalDependencies/UD_Evil-Lang/contents?ref=r1.0"
CONLLU = b"# text = a\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n\n"


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Mirror:
    """Serves ``routes[path]``: bytes (with Content-Length); ("endless", piece) streams the piece
    without Content-Length until the client goes away; ("drip", byte, pause) sends one byte per
    pause, without end."""

    def __init__(self):
        self.routes: dict[str, object] = {}
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_GET(self):
                route = mirror.routes.get(self.path)
                if route is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                if isinstance(route, bytes):
                    self.send_header("Content-Length", str(len(route)))
                    self.end_headers()
                    self.wfile.write(route)
                    return
                self.end_headers()
                mode, piece, *rest = route
                try:
                    for _ in range(1_000_000):  # bounded: a test never waits on this for long
                        self.wfile.write(piece)
                        self.wfile.flush()
                        if mode == "drip":
                            time.sleep(rest[0])
                except OSError:
                    pass  # the client stopped reading: what the test wants

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def put(self, url: str, data) -> None:
        self.routes["/" + url.split("://", 1)[1]] = data


@pytest.fixture
def mirror():
    m = Mirror()
    yield m
    m.httpd.shutdown()
    m.httpd.server_close()


@pytest.fixture
def home(tmp_path, monkeypatch, mirror):
    data = tmp_path / "sandbox" / "data"
    monkeypatch.setenv("STRUCTKIT_DATA", str(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "sandbox" / "cache"))
    monkeypatch.setenv("STRUCTKIT_MIRROR", mirror.url)
    return data


def files_outside(tmp_path: Path, home: Path) -> list[Path]:
    """Every file under ``tmp_path`` that is not the test's own sandbox (data folder, cache)."""
    return [p for p in tmp_path.rglob("*") if p.is_file() and "sandbox" not in p.relative_to(tmp_path).parts]


def assert_clean(tmp_path: Path, home: Path) -> None:
    assert files_outside(tmp_path, home) == []
    assert not list(home.glob(".fetch-*")) if home.exists() else True
    assert not [p for p in home.rglob("*.conllu")] if home.exists() else True


def serve_listing(mirror: Mirror, names: list, data: bytes = CONLLU) -> None:
    listing = []
    for n in names:
        listing.append({"name": n, "type": "file", "sha": git_sha1(data)})
        if isinstance(n, str):
            mirror.put(f"{UD}/{n}", data)
    mirror.put(API, json.dumps(listing).encode())


# ---- 1. names from a listing ----------------------------------------------------------------------
@pytest.mark.parametrize("name", [
    "../../../../outside/x.conllu",       # the reported attack
    "../x.conllu",
    "/tmp/structkit-evil/x.conllu",       # absolute
    "sub/x.conllu",                       # a folder part
    "..\\..\\x.conllu",                   # Windows separators
    "C:x.conllu",                         # a drive
    "x\x00y.conllu",                      # NUL
    "x\ny.conllu",                        # a control character
    "a" * 300 + ".conllu",                # longer than a file name may be
])
def test_listing_names_that_are_not_plain_file_names_are_refused(sk, home, mirror, tmp_path, name):
    serve_listing(mirror, ["en-ud-train.conllu", name])
    line = assert_one_line_error(sk("data", "fetch", "ud:Evil-Lang@r1.0"), "not a plain file name")
    assert "Nothing was written" in line
    assert_clean(tmp_path, home)
    assert not Path("/tmp/structkit-evil").exists()


def test_listing_name_of_the_wrong_type_is_one_line(sk, home, mirror, tmp_path):
    listing = [{"name": "ok-ud-train.conllu", "type": "file", "sha": git_sha1(CONLLU)},
               {"name": "x.conllu", "type": "file", "sha": ["not", "a", "sha"]}]
    mirror.put(f"{UD}/ok-ud-train.conllu", CONLLU)
    mirror.put(API, json.dumps(listing).encode())
    assert_one_line_error(sk("data", "fetch", "ud:Evil-Lang@r1.0"), "not 40 hex digits")
    assert_clean(tmp_path, home)


def test_a_symlinked_corpus_folder_is_not_written_through(sk, home, mirror, tmp_path):
    """The corpus folder in the data folder is a link to elsewhere: checked after resolving, the
    install is refused and nothing lands where the link points."""
    serve_listing(mirror, ["en-ud-train.conllu"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home.mkdir(parents=True)
    (home / "ud-evil-lang@r1.0").symlink_to(elsewhere)
    assert_one_line_error(sk("data", "fetch", "ud:Evil-Lang@r1.0"), "outside")
    assert list(elsewhere.iterdir()) == []


def test_plain_name_and_inside_units(tmp_path):
    assert plain_name("en_ewt-ud-train.conllu", "x") == "en_ewt-ud-train.conllu"
    for bad in ("", ".", "..", "a/b", "a\\b", "c:", "\x7f", 5, None):
        with pytest.raises(CorruptDownload):
            plain_name(bad, "x")
    (tmp_path / "root").mkdir()
    assert inside(tmp_path / "root", tmp_path / "root" / "a" / "b") == tmp_path / "root" / "a" / "b"
    with pytest.raises(UserError):
        inside(tmp_path / "root", tmp_path / "root" / ".." / "x")
    (tmp_path / "root" / "link").symlink_to(tmp_path)
    with pytest.raises(UserError):
        inside(tmp_path / "root", tmp_path / "root" / "link" / "x")


# ---- 2. archive members ---------------------------------------------------------------------------
@pytest.fixture
def register():
    """``register(name, convert, files, url)``: a corpus registered for the test only."""
    names = []

    def add(name: str, convert: str, files: tuple[File, ...], url: str) -> Corpus:
        c = Corpus(name, "t", "CC0", files, (Download((url,)),), convert=convert)
        registry.register(c)
        names.append(name)
        return c

    yield add
    for name in names:
        registry.unregister(name)


@pytest.fixture
def toy(register):
    """``toy(url)``: the one-file corpus 'endless', downloaded from ``url``."""
    return lambda url: register("endless", "copy", (File("endless/train.txt", "train", member="train.txt"),), url)


def test_encrypted_zip_member_is_one_line(sk, home, mirror, tmp_path, register):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("enc/train.txt", b"x\n")
    data = bytearray(buf.getvalue())
    # zipfile cannot write encrypted members: set the 'encrypted' flag bit in the local header
    # (offset 6) and the central directory entry (offset 8), as an encrypting zip tool would.
    data[6] |= 0x1
    cd = data.index(b"PK\x01\x02")
    data[cd + 8] |= 0x1
    url = "https://example.org/enc.zip"
    mirror.put(url, bytes(data))
    register("enc", "copy", (File("enc/train.txt", "train", member="enc/train.txt"),), url)
    assert_one_line_error(sk("data", "fetch", "enc"), "is encrypted")
    assert_clean(tmp_path, home)


def test_non_utf8_member_in_the_ptb_conversion_is_one_line(sk, home, mirror, tmp_path, register):
    members = {f"dependency_treebank/wsj_{n:04d}.dp": b"The DT 2\ndog NN 0\n\n" for n in range(1, 200)}
    members["dependency_treebank/wsj_0007.dp"] = b"Ni\xf1o NN 0\n\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in members.items():
            z.writestr(k, v)
    url = "https://example.org/dt.zip"
    mirror.put(url, buf.getvalue())
    register("ptbx", "ptb", (File("ptb-dep/train.conll", "train"),), url)
    assert_one_line_error(sk("data", "fetch", "ptbx"), "wsj_0007.dp is not UTF-8")
    assert_clean(tmp_path, home)
    assert not (home / "ptb-dep").exists()


def bomb(size: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("b/esp.train", "w") as w:
            for _ in range(size >> 20):
                w.write(b"\0" * (1 << 20))
    return buf.getvalue()


def test_an_inflating_member_is_refused_at_its_cap(sk, home, mirror, tmp_path, register):
    url = "https://example.org/bomb.zip"
    mirror.put(url, bomb(64 << 20))  # 64 MiB inflated from about 64 KB
    register("bomb", "utf8", (File("bomb/esp.train", "train", size=1000, member="b/esp.train"),), url)
    assert_one_line_error(sk("data", "fetch", "bomb"), "larger than the 1,048,576 bytes expected")
    assert_clean(tmp_path, home)


def test_utf8_conversion_streams_in_flat_memory(tmp_path):
    """A 48 MiB member of unknown size (Latin-1, so it is transcoded) is converted with Python
    allocations that stay a few MiB: memory does not grow with the member (the zip bomb of the
    report took 2 GB before its refusal)."""
    big = ("Ni\u00f1o NC B-PER\n".encode("latin-1")) * (3 << 20)  # 48 MiB
    zpath = tmp_path / "big.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("big/esp.train", big)
    corpus = Corpus("big", "t", "CC0", (File("big/esp.train", "train", member="big/esp.train"),), convert="utf8")
    a = Archive(zpath, "big.zip")
    out = tmp_path / "out"
    out.mkdir()
    tracemalloc.start()
    try:
        convert_utf8(corpus, [a], out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        a.close()
    assert (out / "big" / "esp.train").read_bytes() == big.decode("latin-1").encode("utf-8")
    assert peak < 16 << 20, f"peak Python allocations {peak:,} bytes for a {len(big):,}-byte member"


# ---- 3. downloads without an end ------------------------------------------------------------------
def test_an_endless_body_stops_at_the_download_cap(sk, home, mirror, tmp_path, monkeypatch, toy):
    url = "https://example.org/train.txt"
    mirror.put(url, ("endless", b"x" * 65536))
    monkeypatch.setenv("STRUCTKIT_MAX_DOWNLOAD_BYTES", str(1 << 20))
    toy(url)
    assert_one_line_error(sk("data", "fetch", "endless"), "larger than 1,048,576 bytes",
                          "STRUCTKIT_MAX_DOWNLOAD_BYTES")
    assert_clean(tmp_path, home)
    assert not list(home.rglob("*.txt"))


def test_a_declared_size_over_the_cap_is_refused_before_reading(sk, home, mirror, tmp_path, monkeypatch, toy):
    url = "https://example.org/train.txt"
    mirror.put(url, b"y" * 5000)
    monkeypatch.setenv("STRUCTKIT_MAX_DOWNLOAD_BYTES", "4096")
    toy(url)
    assert_one_line_error(sk("data", "fetch", "endless"), "larger than 4,096 bytes")
    assert_clean(tmp_path, home)


def test_a_bad_cap_setting_is_one_line(sk, home, mirror, monkeypatch, toy):
    monkeypatch.setenv("STRUCTKIT_MAX_DOWNLOAD_BYTES", "lots")
    toy("https://example.org/train.txt")
    assert_one_line_error(sk("data", "fetch", "endless"), "STRUCTKIT_MAX_DOWNLOAD_BYTES must be")


def test_a_drip_is_stopped_by_the_rate_floor(sk, home, mirror, tmp_path, monkeypatch, toy):
    """One byte per 0.05 s never ends on its own; with the grace period shortened to 0.5 s (the
    default is 60 s) the rate floor of 1,024 bytes/s stops it."""
    url = "https://example.org/train.txt"
    mirror.put(url, ("drip", b"z", 0.05))
    monkeypatch.setattr(importlib.import_module("structkit.datasets.fetch"), "GRACE", 0.5)
    toy(url)
    assert_one_line_error(sk("data", "fetch", "endless"), "under 1,024 bytes/s; stopped")
    assert_clean(tmp_path, home)
