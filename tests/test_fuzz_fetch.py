"""Property-based fuzzing (hypothesis) of what `structkit data fetch` takes from a server: the
names of a treebank's listing and the members of an archive (issue 30). Properties: a listed
name either is refused (CorruptDownload) or names a file directly inside the folder it is
joined to, after resolving; a member is either copied whole within its size cap or refused,
never written anywhere but the given destination, never read past the cap. Derandomized, with
``STRUCTKIT_FUZZ_EXAMPLES`` examples per subject (as tests/test_fuzz.py); no wall-clock
deadline: the sizes drawn bound the work."""
from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path

from conftest import require_extra

hypothesis = require_extra("hypothesis", "test", module_level=True)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from structkit.datasets.convert import Archive, CorruptDownload, inside, plain_name  # noqa: E402
from structkit.errors import UserError  # noqa: E402

FUZZ_EXAMPLES = int(os.environ.get("STRUCTKIT_FUZZ_EXAMPLES", "150"))
fuzz = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_ROOT = Path(tempfile.mkdtemp(prefix="structkit-fuzz-fetch-"))
(_ROOT / "folder").mkdir()
(_ROOT / "folder" / "link").symlink_to(_ROOT)  # a link out of the folder, present all along

pieces = st.sampled_from(["..", ".", "/", "\\", "C:", "\x00", "\n", "a", "x.conllu", "link", "~",
                          "%2e%2e", "\u2025", "\uff0e\uff0e", " ", "..."])
names = st.one_of(st.text(max_size=40), st.lists(pieces, max_size=8).map("".join),
                  st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2))


@fuzz
@given(names)
def test_fuzz_listing_names(name):
    folder = _ROOT / "folder"
    try:
        got = plain_name(name, "the listing")
    except CorruptDownload:
        return
    assert got == name and isinstance(got, str)
    p = folder / got
    # a plain name lies directly in the folder: resolved, its parent is the folder itself
    # (unless it names the link, which `inside` then refuses)
    if os.path.realpath(p) != os.path.realpath(folder / "link"):
        assert Path(os.path.realpath(p)).parent == Path(os.path.realpath(folder))
        assert inside(folder, p) == p
    else:
        try:
            inside(folder, p)
        except UserError:
            return
        raise AssertionError("a link out of the folder passed")


members = st.lists(st.tuples(st.one_of(st.text(min_size=1, max_size=30), st.lists(pieces, min_size=1, max_size=6).map("".join)),
                             st.integers(0, 5000), st.booleans()), min_size=1, max_size=4)


@fuzz
@given(members, st.integers(0, 4000))
def test_fuzz_archive_members(specs, limit):
    buf = io.BytesIO()
    written: dict[str, int] = {}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, size, flag in specs:
            name = name.split("\x00")[0]  # zipfile cuts a name at NUL
            if not name.strip("/") or name in written:
                continue
            try:
                z.writestr(name, b"a" * size)
            except (ValueError, UnicodeEncodeError, IndexError):  # names zipfile cannot write
                continue
            written[name] = size
    data = bytearray(buf.getvalue())
    if any(flag for _, _, flag in specs) and b"PK\x01\x02" in data:  # mark the first member encrypted
        data[data.index(b"PK\x01\x02") + 8] |= 0x1
    path = _ROOT / "a.zip"
    path.write_bytes(bytes(data))
    before = sorted(p.name for p in _ROOT.iterdir())
    try:
        a = Archive(path, "a.zip")
    except UserError:
        return
    try:
        for n in a.names():
            dest = io.BytesIO()
            try:
                a.read_to(n, dest, limit)
            except CorruptDownload:
                assert dest.tell() <= limit  # refused at the cap, never past it
                continue
            except UserError:
                continue
            assert dest.tell() == written.get(n, dest.tell()) <= limit
    finally:
        a.close()
    assert sorted(p.name for p in _ROOT.iterdir()) == before  # nothing extracted by name
