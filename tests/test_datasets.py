"""`structkit data`: the corpus registry, fetching with checksums, and how data paths resolve.

Every download goes to a local HTTP server on 127.0.0.1 that the test starts; it serves archives
the tests build (toy corpora, or archives rebuilt from $STRUCTKIT_DATA's copies of the public
files for the registry's real entries). The registry's URLs are redirected to it with the mirror
setting (``https://host/path`` -> ``http://127.0.0.1:PORT/host/path``). No test reaches the
internet, and none writes outside its own temporary folder.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from clitools import assert_one_line_error
from conftest import ROOT
from structkit.datasets import registry
from structkit.datasets.convert import git_blob_sha1
from structkit.datasets.paths import search_dirs
from structkit.datasets.registry import Corpus, Download, File

# The corpora as this test session found them, before a test points $STRUCTKIT_DATA elsewhere.
_LOCAL_DIRS = search_dirs()


def local_copy(rel: str) -> Path:
    """A file of the real corpora where commands found it when the tests started; skips where
    absent, naming the fetch command."""
    for d in _LOCAL_DIRS:
        if (d / rel).is_file():
            return d / rel
    c = registry.corpus_for_path(rel)
    pytest.skip(f"corpus file {rel} not found; `structkit data fetch {c.name if c else '...'}` gets it")


TRAIN = b"The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\n"
TEST = b"A DT B-NP\ndog NN I-NP\n\n"


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def make_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def make_targz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ---- the local server ---------------------------------------------------------------------------
class Server:
    """Serves ``routes[path]``: bytes; ("drop", bytes) sends a full Content-Length, half the
    bytes, then closes; ("slow", bytes, seconds) waits first. Anything else is a 404."""

    def __init__(self):
        self.routes: dict[str, object] = {}
        self.hits: list[str] = []
        self.started = threading.Event()
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                srv.hits.append(self.path)
                route = srv.routes.get(self.path)
                if route is None:
                    self.send_error(404, "Not Found")
                    return
                mode, data, delay = ("ok", route, 0) if isinstance(route, bytes) else (
                    route[0], route[1], route[2] if len(route) > 2 else 0)
                if mode == "slow":
                    srv.started.set()
                    time.sleep(delay)
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if mode == "drop":
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def put(self, url: str, data) -> None:
        """Serve ``data`` where the mirror maps ``url`` (https://host/path -> /host/path)."""
        self.routes["/" + url.split("://", 1)[1]] = data

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def home(tmp_path, monkeypatch, server):
    """A private data folder ($STRUCTKIT_DATA) and cache, with downloads sent to the server."""
    data = tmp_path / "data"
    monkeypatch.setenv("STRUCTKIT_DATA", str(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("STRUCTKIT_MIRROR", server.url)
    return data


TOY_URL = "https://example.org/corpora/toy.zip"


@pytest.fixture
def toy():
    """A registered toy corpus: one zip with two members, checked by sha256."""
    c = Corpus("toy", "a toy corpus", "CC0",
               (File("toy/train.txt", "train", sha(TRAIN), len(TRAIN), member="toy/train.txt"),
                File("toy/test.txt", "test", sha(TEST), len(TEST), member="toy/test.txt")),
               (Download((TOY_URL,)),))
    registry.register(c)
    yield c
    registry.unregister("toy")


def assert_nothing_left(home: Path, folder: str = "toy") -> None:
    """No corpus folder and no temporary fetch folder where later commands would look."""
    assert not (home / folder).exists()
    assert not [p for p in home.glob(".fetch-*")] if home.exists() else True


# ---- fetching -----------------------------------------------------------------------------------
def test_fetch_checks_and_installs_then_does_nothing(sk, home, server, toy):
    server.put(TOY_URL, make_zip({"toy/train.txt": TRAIN, "toy/test.txt": TEST}))
    r = sk("data", "fetch", "toy")
    assert r.code == 0, r
    assert (home / "toy" / "train.txt").read_bytes() == TRAIN
    assert (home / "toy" / "test.txt").read_bytes() == TEST
    sums = (home / "toy" / "SHA256SUMS").read_text()
    assert f"{sha(TRAIN)}  train.txt" in sums and f"{sha(TEST)}  test.txt" in sums
    assert "2 files fetched and verified" in r.err
    hits = len(server.hits)
    r = sk("data", "fetch", "toy")
    assert r.code == 0 and "already present and verified" in r.err
    assert len(server.hits) == hits  # a second fetch downloads nothing
    r = sk("data", "list", "--json")
    row = [json.loads(ln) for ln in r.out.splitlines() if json.loads(ln)["name"] == "toy"][0]
    assert row["status"] == "present, verified" and row["where"] == [str(home / "toy")]
    # Commands find the fetched files by their relative name.
    r = sk("data", "path", "toy/train.txt")
    assert r.out.strip() == str(home / "toy" / "train.txt")
    assert not list(home.glob(".fetch-*"))


def test_changed_file_is_reported_and_refetched(sk, home, server, toy):
    server.put(TOY_URL, make_zip({"toy/train.txt": TRAIN, "toy/test.txt": TEST}))
    assert sk("data", "fetch", "toy").code == 0
    (home / "toy" / "test.txt").write_bytes(TEST + b"x X O\n\n")
    r = sk("data", "list")
    assert "CHANGED: sha256 of test.txt differs" in r.out
    r = sk("data", "fetch", "toy")
    assert r.code == 0 and "fetched and verified" in r.err
    assert (home / "toy" / "test.txt").read_bytes() == TEST


def test_checksum_mismatch(sk, home, server, toy):
    server.put(TOY_URL, make_zip({"toy/train.txt": TRAIN + b"extra X O\n\n", "toy/test.txt": TEST}))
    line = assert_one_line_error(sk("data", "fetch", "toy"), "toy:", "toy/train.txt has sha256",
                                 f"expected {sha(TRAIN)[:16]}", "Nothing was written")
    assert_nothing_left(home)
    print(line)


def test_404(sk, home, server, toy):
    line = assert_one_line_error(sk("data", "fetch", "toy"), "cannot download", "HTTP 404",
                                 f"{server.url}/example.org/corpora/toy.zip",
                                 "structkit data fetch toy --from FILE", str(home / "toy"))
    assert_nothing_left(home)
    print(line)


def test_connection_dropped_mid_file(sk, home, server, toy):
    data = make_zip({"toy/train.txt": TRAIN * 200, "toy/test.txt": TEST})
    server.put(TOY_URL, ("drop", data))
    line = assert_one_line_error(sk("data", "fetch", "toy"), "cannot download",
                                 f"connection dropped after {len(data) // 2:,} of {len(data):,} bytes")
    assert_nothing_left(home)
    print(line)


def test_truncated_archive(sk, home, server, toy):
    data = make_zip({"toy/train.txt": TRAIN * 200, "toy/test.txt": TEST})
    server.put(TOY_URL, data[: len(data) - 40])  # served whole: the archive itself is cut
    line = assert_one_line_error(sk("data", "fetch", "toy"), "toy.zip is not a readable zip archive",
                                 "truncated or corrupt download", "Nothing was written")
    assert_nothing_left(home)
    print(line)


def test_corrupt_archive_and_error_page(sk, home, server, toy):
    data = bytearray(make_zip({"toy/train.txt": TRAIN * 200, "toy/test.txt": TEST}))
    data[60:90] = b"\0" * 30  # inside the compressed member: its CRC or inflate fails
    server.put(TOY_URL, bytes(data))
    assert_one_line_error(sk("data", "fetch", "toy"), "toy.zip is not a readable zip archive")
    assert_nothing_left(home)
    server.put(TOY_URL, b"<html>Rate limit exceeded</html>")
    line = assert_one_line_error(sk("data", "fetch", "toy"), "toy.zip is not a zip archive",
                                 "an error page instead of the file")
    assert_nothing_left(home)
    print(line)


def test_offline(sk, home, monkeypatch, toy):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("STRUCTKIT_MIRROR", f"http://127.0.0.1:{port}")
    line = assert_one_line_error(sk("data", "fetch", "toy"), "cannot download", "refused",
                                 "--from FILE")
    assert_nothing_left(home)
    print(line)


def test_unknown_name(sk, home, toy):
    line = assert_one_line_error(sk("data", "fetch", "conll2000", "conll2099"),
                                 "unknown corpus 'conll2099'", "conll2000", "ud:Language-Name@release")
    assert not home.exists()  # names are checked before any download
    assert_one_line_error(sk("data", "path", "nope"), "unknown corpus 'nope'")
    assert_one_line_error(sk("data", "fetch", "ud:English"), "not a UD treebank name")
    print(line)


@contextlib.contextmanager
def read_only(folder: Path):
    """Make ``folder`` unwritable for this process: chmod for a normal user; for root, who may
    write anywhere, the immutable attribute (skips where chattr is not permitted)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)],
                                                        capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr +i: no way to make a folder unwritable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_not_writable(sk, home, server, toy, tmp_path, monkeypatch):
    server.put(TOY_URL, make_zip({"toy/train.txt": TRAIN, "toy/test.txt": TEST}))
    # A data folder that cannot be created (its parent is a file).
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "file" / "data"))
    line1 = assert_one_line_error(sk("data", "fetch", "toy"), "cannot create the data folder",
                                  "Not a directory", "set $STRUCTKIT_DATA to a writable folder")
    monkeypatch.setenv("STRUCTKIT_DATA", str(home))
    # A data folder that exists but cannot be written.
    home.mkdir()
    with read_only(home):
        line2 = assert_one_line_error(sk("data", "fetch", "toy"), f"cannot write to {home}: permission denied",
                                      "set $STRUCTKIT_DATA to a writable folder")
    assert_nothing_left(home)
    print(line1, line2, sep="\n")


def test_failed_install_puts_everything_back(sk, home, server, toy, monkeypatch):
    """A move that fails half-way (a full disk, say) leaves neither new nor half-replaced files."""
    server.put(TOY_URL, make_zip({"toy/train.txt": TRAIN, "toy/test.txt": TEST}))
    real = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if str(dst).endswith("test.txt"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    assert_one_line_error(sk("data", "fetch", "toy"), "No space left on device", "Nothing was written")
    assert any(str(c).endswith("train.txt") for c in calls)  # the first file had been moved
    assert not (home / "toy" / "train.txt").exists() and not list(home.glob(".fetch-*"))


def test_two_fetches_at_once(home, server, toy, tmp_path, sk):
    """A second fetch of a corpus while the first is downloading: one line, exit 1, and the
    first still completes and installs verified files."""
    server.put(TOY_URL, ("slow", make_zip({"toy/train.txt": TRAIN, "toy/test.txt": TEST}), 3))
    env = dict(os.environ, PYTHONPATH=str(ROOT), STRUCTKIT_NO_CACHE="1")
    code = ("import sys; from structkit.datasets import registry; "
            "from structkit.datasets.registry import Corpus, File, Download; "
            f"registry.register(Corpus('toy', 't', 'CC0', {toy.files!r}, {toy.downloads!r})); "
            "from structkit.cli import main; main(sys.argv[1:])")
    first = subprocess.Popen([sys.executable, "-c", code, "data", "fetch", "toy"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.started.wait(60), "the first fetch never reached the server"
        line = assert_one_line_error(sk("data", "fetch", "toy"), "another `structkit data fetch` of it is running",
                                     str(home / ".locks" / "toy.lock"))
        assert not (home / "toy").exists()
    finally:
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert (home / "toy" / "train.txt").read_bytes() == TRAIN
    print(line)


def test_from_local_file(sk, home, toy, tmp_path):
    archive = tmp_path / "toy.zip"
    archive.write_bytes(make_zip({"toy-1.0/train.txt": TRAIN, "toy-1.0/test.txt": TEST}))
    r = sk("data", "fetch", "toy", "--from", archive)
    assert r.code == 0, r  # members found by their trailing path, whatever the top folder
    assert (home / "toy" / "train.txt").read_bytes() == TRAIN
    assert_one_line_error(sk("data", "fetch", "toy", "--from", tmp_path / "none.zip"), "no such file")


def test_tar_gz_members_and_plain_downloads(sk, home, server):
    """Two tar.gz downloads whose members are found by name (JNLPBA's layout), and a plain
    file checked by its own sha256 (HyPoradise's)."""
    doc = b'[{"input": ["a b"], "output": "a b"}]'
    c = Corpus("toy2", "t", "CC0",
               (File("toy2/a.iob2", "train", sha(TRAIN), member="a.iob2", source=0),
                File("toy2/b.iob2", "test", sha(TEST), member="b.iob2", source=1),
                File("toy2/c.json", "test", sha(doc), source=2)),
               (Download(("https://example.org/A.tar.gz",)), Download(("https://example.org/B.tar.gz",)),
                Download(("https://example.org/c.json",), sha256=sha(doc))))
    registry.register(c)
    try:
        server.put("https://example.org/A.tar.gz", make_targz({"GENIA/a.iob2": TRAIN, "GENIA/README": b"r"}))
        server.put("https://example.org/B.tar.gz", make_targz({"b.iob2": TEST}))
        server.put("https://example.org/c.json", doc + b" ")
        line = assert_one_line_error(sk("data", "fetch", "toy2"), "c.json has sha256",
                                     "not the registered file")
        assert_nothing_left(home, "toy2")
        server.put("https://example.org/c.json", doc)
        assert sk("data", "fetch", "toy2").code == 0
        assert (home / "toy2" / "a.iob2").read_bytes() == TRAIN
        assert (home / "toy2" / "c.json").read_bytes() == doc
        print(line)
    finally:
        registry.unregister("toy2")


def test_download_checksum_falls_back_to_the_next_url(sk, home, server):
    """A download's own sha256 is checked before its files are: a URL serving other bytes is
    skipped and the next URL of the same download is tried (without that check the first
    bytes would be taken and the file check would refuse the whole fetch)."""
    doc = b'[{"input": ["a b"], "output": "a b"}]'
    c = Corpus("toy3", "t", "CC0", (File("toy3/c.json", "test", sha(doc)),),
               (Download(("https://example.org/old/c.json", "https://example.org/new/c.json"),
                         sha256=sha(doc)),))
    registry.register(c)
    try:
        server.put("https://example.org/old/c.json", doc + b" ")
        server.put("https://example.org/new/c.json", doc)
        r = sk("data", "fetch", "toy3")
        assert r.code == 0, r
        assert (home / "toy3" / "c.json").read_bytes() == doc
        assert [h for h in server.hits if "c.json" in h] == ["/example.org/old/c.json", "/example.org/new/c.json"]
    finally:
        registry.unregister("toy3")


def test_latin1_member_is_written_as_utf8(sk, home, server):
    latin = "Ni\u00f1o NC B-PER\n\n".encode("latin-1")
    c = Corpus("toy3", "t", "CC0", (File("toy3/esp.train", "train", None, member="esp.train",
                                         source_sha256=sha(latin)),),
               (Download(("https://example.org/toy3.zip",)),), convert="utf8")
    registry.register(c)
    try:
        server.put("https://example.org/toy3.zip", make_zip({"toy3/esp.train": latin}))
        assert sk("data", "fetch", "toy3").code == 0
        out = (home / "toy3" / "esp.train").read_bytes()
        assert out == "Ni\u00f1o NC B-PER\n\n".encode("utf-8")
        # The produced file has no registry sha256: its fetch recorded one, and list checks it.
        r = sk("data", "list", "--json")
        row = [json.loads(ln) for ln in r.out.splitlines() if json.loads(ln)["name"] == "toy3"][0]
        assert row["status"] == "present, verified"
        (home / "toy3" / "esp.train").write_bytes(out + b"x")
        r = sk("data", "list", "--json")
        row = [json.loads(ln) for ln in r.out.splitlines() if json.loads(ln)["name"] == "toy3"][0]
        assert row["status"].startswith("CHANGED")
    finally:
        registry.unregister("toy3")


def test_ud_treebank_by_name_and_release(sk, home, server):
    files = {"xx_toy-ud-train.conllu": b"# text = a\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n\n",
             "xx_toy-ud-test.conllu": b"# text = b\n1\tb\tb\tX\t_\t_\t0\troot\t_\t_\n\n",
             "LICENSE.txt": b"CC0\n", "stats.xml": b"<x/>"}
    blob = {}
    for name, data in files.items():
        (home.parent / name).write_bytes(data)
        blob[name] = git_blob_sha1(home.parent / name)
        server.put(f"https://raw.githubusercontent.com/UniversalDependencies/UD_Toy-Lang/r9.9/{name}", data)
    listing = [{"name": n, "type": "file", "sha": blob[n]} for n in files] + [{"name": "not-to-release", "type": "dir"}]
    server.put("https://api.github.com/repos/UniversalDependencies/UD_Toy-Lang/contents?ref=r9.9",
               json.dumps(listing).encode())
    r = sk("data", "fetch", "ud:Toy-Lang@r9.9")
    assert r.code == 0, r
    folder = home / "ud-toy-lang@r9.9"
    assert sorted(p.name for p in folder.iterdir()) == ["LICENSE.txt", "SHA256SUMS", "xx_toy-ud-test.conllu",
                                                       "xx_toy-ud-train.conllu"]
    r = sk("data", "path", "ud:Toy-Lang@r9.9")
    assert r.out.strip() == str(folder)
    # A file that does not match the listing's git blob id is refused.
    server.put("https://raw.githubusercontent.com/UniversalDependencies/UD_Toy-Lang/r9.10/LICENSE.txt", b"changed\n")
    for name in ("xx_toy-ud-train.conllu", "xx_toy-ud-test.conllu"):
        server.put(f"https://raw.githubusercontent.com/UniversalDependencies/UD_Toy-Lang/r9.10/{name}", files[name])
    server.put("https://api.github.com/repos/UniversalDependencies/UD_Toy-Lang/contents?ref=r9.10",
               json.dumps(listing).encode())
    line = assert_one_line_error(sk("data", "fetch", "ud:Toy-Lang@r9.10"), "does not match its git blob id")
    assert_nothing_left(home, "ud-toy-lang@r9.10")
    line404 = assert_one_line_error(sk("data", "fetch", "ud:Toy-Lang@r0"), "HTTP 404",
                                    "is UD_Toy-Lang at r0 a treebank and release")
    print(line, line404, sep="\n")


def test_models_build_fetches_any_ud_treebank_by_name_and_release(sk, home, server, tmp_path):
    """Issue 43, item 1: `models build ud:Language-Name@release/TASK` fetches a treebank the
    registry does not know (its GitHub listing, each file checked by its git blob id), then
    trains on its files as the release names them; the card records the release."""
    from structkit import card as cards
    from structkit.datasets.paths import sample_dir

    ud = sample_dir() / "ud"
    blob = {}
    for split in ("train", "dev", "test"):
        name = f"xx_toy-ud-{split}.conllu"
        data = (ud / f"{split}.conllu").read_bytes()
        (home.parent / name).write_bytes(data)
        blob[name] = git_blob_sha1(home.parent / name)
        server.put(f"https://raw.githubusercontent.com/UniversalDependencies/UD_Toy-Build/r9.9/{name}", data)
    listing = [{"name": n, "type": "file", "sha": b} for n, b in blob.items()]
    server.put("https://api.github.com/repos/UniversalDependencies/UD_Toy-Build/contents?ref=r9.9",
               json.dumps(listing).encode())
    out = tmp_path / "toy.model"
    r = sk("models", "build", "ud:Toy-Build@r9.9/pos", "-o", out, "-q")
    assert r.code == 0, r.err
    assert sorted(p.name for p in (home / "ud-toy-build@r9.9").glob("*.conllu")) == sorted(blob)
    _, card = cards.read(str(out))
    assert card["recipe"]["name"] == "ud:Toy-Build@r9.9/pos"
    assert card["recipe"]["treebank"]["release"] == "r9.9" and "folder" not in card["recipe"]["treebank"]
    assert card["data"]["train"]["sha256"] == sha((ud / "train.conllu").read_bytes())
    assert card["test"]["scores"]["accuracy"] > 0


# ---- how paths resolve --------------------------------------------------------------------------
def test_missing_file_names_the_folders_and_the_fetch_command(sk, home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(sk("train", "--task", "chunk", "--train", "conll2000/train.txt",
                                    "--model", "m.model"),
                                 "conll2000/train.txt: no such file",
                                 f"$STRUCTKIT_DATA={home}", str(tmp_path / "cache" / "structkit"),
                                 "`structkit data fetch conll2000` gets it")
    assert not (tmp_path / "m.model").exists()
    assert_one_line_error(sk("data", "path", "conll2000"), "conll2000 is not here",
                          "`structkit data fetch conll2000` gets it")
    print(line)


def test_cache_is_searched_when_the_env_is_unset(sk, tmp_path, monkeypatch):
    monkeypatch.delenv("STRUCTKIT_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "cache" / "structkit" / "mine" / "train.txt"
    f.parent.mkdir(parents=True)
    f.write_text((ROOT / "tests" / "fixtures" / "chunk_train.txt").read_text())
    r = sk("train", "--task", "chunk", "--train", "mine/train.txt", "--model", "m.model", "--epochs", "1")
    assert r.code == 0, r
    from structkit.datasets.paths import data_home

    assert data_home() == tmp_path / "cache" / "structkit"


def test_package_does_not_name_the_workspace_folder():
    """The package finds data only through $STRUCTKIT_DATA and its cache."""
    hits = [str(p) for p in (ROOT / "structkit").rglob("*.py") if "shared/data" in p.read_text()
            or "../shared" in p.read_text()]
    assert hits == []


# ---- the registry's real entries, rebuilt from local copies -------------------------------------
@pytest.mark.corpus
def test_conll2000_fetch_matches_registry_and_shared_copy(sk, home, server):
    """Acceptance: the zip NLTK serves is rebuilt from the local copies (members
    conll2000/train.txt and test.txt), fetched through the server, and the files produced have
    the registry's sha256, which is the sha256 of the local copies."""
    train, test = local_copy("conll2000/train.txt"), local_copy("conll2000/test.txt")
    c = registry.get("conll2000")
    server.put(c.downloads[0].url, make_zip({"conll2000/train.txt": train.read_bytes(),
                                             "conll2000/test.txt": test.read_bytes()}))
    r = sk("data", "fetch", "conll2000")
    assert r.code == 0, r
    for f, local in zip(c.files, (train, test)):
        got = sha((home / f.path).read_bytes())
        assert got == f.sha256 == sha(local.read_bytes())


@pytest.mark.corpus
def test_ptb_conversion_reproduces_our_split(sk, home, server):
    """The PTB sample's conversion: NLTK dependency_treebank files (word POS head rows) split
    by WSJ file number give files with the registry's sha256. The archive is rebuilt from our
    CoNLL-X files: each split's sentences in its first WSJ file, the others empty."""
    def dp(conll: Path, with_labels: bool) -> bytes:
        out = []
        for line in conll.read_text(encoding="utf-8").splitlines():
            if not line:
                out.append("")
                continue
            c = line.split("\t")
            out.append("\t".join([c[1], c[4], c[6]] + (["NMOD"] if with_labels else [])))
        return ("\n".join(out) + "\n").encode()

    first = {"train": 1, "dev": 140, "test": 170}
    members = {f"dependency_treebank/wsj_{n:04d}.dp": b"" for n in range(1, 200)}
    for split, n in first.items():
        members[f"dependency_treebank/wsj_{n:04d}.dp"] = dp(local_copy(f"ptb-dep/{split}.conll"), split == "dev")
    c = registry.get("ptb")
    server.put(c.downloads[0].url, make_zip(members))
    r = sk("data", "fetch", "ptb")
    assert r.code == 0, r
    for f in c.files:
        assert sha((home / f.path).read_bytes()) == f.sha256 == sha(local_copy(f.path).read_bytes()), f.path
    # A missing WSJ file is an error naming it, and nothing is installed.
    del members["dependency_treebank/wsj_0150.dp"]
    server.put(c.downloads[0].url, make_zip(members))
    for f in c.files:
        (home / f.path).unlink()
    assert_one_line_error(sk("data", "fetch", "ptb"), "lacks wsj_0150.dp")
    assert not any((home / f.path).exists() for f in c.files)


@pytest.mark.corpus
def test_registry_checksums_match_local_copies():
    """Every sha256 in the registry that has a local copy in $STRUCTKIT_DATA matches it."""
    checked = 0
    for c in registry.corpora():
        for f in c.files:
            p = next((d / f.path for d in _LOCAL_DIRS if (d / f.path).is_file()), None)
            if p is not None and f.sha256 is not None:
                assert sha(p.read_bytes()) == f.sha256, f.path
                assert f.size is None or p.stat().st_size == f.size, f.path
                checked += 1
    if not checked:
        pytest.skip("no corpus here; `structkit data fetch conll2000` gets one")
    assert checked >= 20


@pytest.mark.parametrize("treebank", ["Italian-ParTUT", "Turkish-IMST", "Vietnamese-VTB", "Tamil-TTB",
                                      "Chinese-GSDSimp", "Finnish-TDT"])
def test_the_multilingual_treebanks_are_registered_and_verify(treebank):
    """`ud:Language-Name` names the pinned entry (its files, splits and checksums); where
    $STRUCTKIT_DATA holds the treebank, every file the registry has a checksum for verifies."""
    from structkit.datasets.fetch import status
    from structkit.datasets.registry import get

    corpus = get(f"ud:{treebank}")
    assert corpus.name == f"ud-{treebank.lower()}" and corpus.ud[0] == treebank
    splits = {f.split for f in corpus.files if f.path.endswith(".conllu")}
    assert splits == {"train", "dev", "test"}
    st = status(corpus)
    if all(s.state == "missing" for s in st):
        pytest.skip(f"{corpus.name} is not in the data folders")
    for s in st:
        if s.file.sha256 is not None:
            assert s.state == "verified", (s.file.path, s.state)
        else:
            assert s.file.split == "train" and s.state == "missing"   # Chinese, Finnish: dev/test only
