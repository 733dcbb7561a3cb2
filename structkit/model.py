"""Model files: one ``.npz`` archive, never pickle.

The archive holds numpy arrays only (read by :func:`load_model`'s own checked reader, which
refuses object arrays, so a model file from a stranger cannot run code) and a JSON header stored
as bytes in the array ``__header__``: format name and version, task, whatever the task adapter
records (labels, templates, config, a checksum of the training data) and the model card
(``card``, see ``structkit.card``). A sha256 over all arrays is kept in the header and checked on
load, so a damaged file is refused instead of silently predicting nonsense. Files are written
to a temporary name and renamed, so an interrupted save never leaves half a model behind.
"""
from __future__ import annotations

import hashlib
import json
import math
import zipfile
import zlib
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import numpy as np

from structkit import __version__
from structkit.errors import UserError
from structkit.io.files import atomic_output, os_reason, read_error

FORMAT = "structkit-model"
# 2: vocabularies and labels as offsets + UTF-8 bytes (NAME__off, NAME__utf8) instead of
# fixed-width string arrays; a structkit that reads only version 1 says so instead of calling
# the file damaged. Version 1 files are still read (the loaders take either layout).
# 3: the hashed weight tables of the morph tagger, lemmatizer and tokenizer stored sparse
# (NAME_index, NAME_vals: :func:`sparse_arrays`) instead of whole (mostly zeros, inflated on
# every load); versions 1 and 2 (whole tables) are still read.
# 4: the positions of those weights stored as the gaps between them (NAME_gaps, the narrowest
# unsigned integers that hold them: one byte each for every table a default model trains)
# instead of int32 positions (NAME_index): a quarter of the bytes to inflate on loading (the
# Turkish parser's positions took 37 of its table's 80 ms); and the morph lexicon's counts in
# arrays (morph.task.COUNTS) instead of the JSON header. Version 3's layout is still read.
FORMAT_VERSION = 4
READS_VERSIONS = (1, 2, 3, 4)
_HEADER = "__header__"


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def sparse_arrays(name: str, W: np.ndarray) -> dict[str, np.ndarray]:
    """A hashed weight table as the two arrays a model file stores: ``NAME_gaps``, how many zero
    weights come before each non-zero one since the last (in the table's flat C order), in the
    narrowest unsigned integer type that holds the largest gap, and ``NAME_vals``, the non-zero
    weights in float32. :func:`dense_array` reads them back."""
    flat = W.reshape(-1)
    nz = np.flatnonzero(flat)
    gaps = np.diff(nz, prepend=-1) - 1
    top = int(gaps.max()) if len(gaps) else 0
    kind = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if top <= np.iinfo(t).max)
    return {name + "_gaps": gaps.astype(kind), name + "_vals": flat[nz].astype(np.float32)}


def dense_array(name: str, arrays: dict[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """The float32 table of ``shape`` that :func:`sparse_arrays` stored as ``NAME_gaps`` and
    ``NAME_vals`` (format 4), or as ``NAME_index``, the flat positions themselves (format 3).
    ValueError, for the loader's one line, where they are not what it writes: positions out of
    the table, not integers, values not finite, lengths that differ."""
    vals = arrays[name + "_vals"]
    size = math.prod(shape)
    if name + "_gaps" in arrays:
        gaps = arrays[name + "_gaps"]
        if gaps.ndim != 1 or vals.ndim != 1 or len(gaps) != len(vals):
            raise ValueError(f"weights {name}: positions and values differ in length")
        if gaps.dtype.kind != "u" or len(gaps) > size:
            raise ValueError(f"weights {name} out of range or not finite")
        # the position of weight i is i + the gaps up to it: the last, the largest, is their
        # sum + len - 1. Each gap below the table's size and at most size of them, the sum is
        # below size ** 2 (no overflow in uint64); checked before the positions are made
        if len(gaps) and int(gaps.max()) >= size:
            raise ValueError(f"weights {name} out of range or not finite")
        last = int(gaps.sum(dtype=np.uint64)) + len(gaps) - 1
        if last >= size:
            raise ValueError(f"weights {name} out of range or not finite")
        index = np.cumsum(gaps, dtype=np.int64)
        index += np.arange(len(gaps), dtype=np.int64)
    else:
        index = arrays[name + "_index"]
        if index.ndim != 1 or vals.ndim != 1 or len(index) != len(vals):
            raise ValueError(f"weights {name}: positions and values differ in length")
        if len(index) and (index.dtype.kind not in "iu" or index.min() < 0):
            raise ValueError(f"weights {name} out of range or not finite")
        last = int(index.max()) if len(index) else -1
    if last >= size or vals.dtype.kind != "f" or not np.isfinite(vals).all():
        raise ValueError(f"weights {name} out of range or not finite")
    W = np.zeros(size, dtype=np.float32)
    W[index] = vals
    return W.reshape(shape)


# The model card (structkit.card) the front-end that trained a model gives for its saves: each
# task's ``save`` builds its own header, and save_model adds the card to it, so cards are made in
# one place for every task.
_CARD: ContextVar[dict | None] = ContextVar("structkit_model_card", default=None)


@contextmanager
def card_for_saves(card: dict | None) -> Iterator[None]:
    """Within the block, models written by :func:`save_model` carry ``card`` in their header."""
    token = _CARD.set(card)
    try:
        yield
    finally:
        _CARD.reset(token)


# Deflate levels of saved models: weights in float barely compress at any level, and numpy's level
# 6 spends three times level 1's time on them (0.6 s against 0.19 s for the default parser's
# 13 MB, files within 1% of each other); an array that compresses well (a table mostly of zeros,
# the tokenizer's: 0.5 MB at 6 against 0.64 MB at 1) is cheap at either and gets 6. Which, is
# told by level 1 on its first MB. _SCRATCH_SAVES: models written only to be read back in the
# same process (a model card's scoring) are stored uncompressed.
COMPRESS_LEVEL = 1
COMPRESSIBLE_LEVEL = 6
STORE_ABOVE = 0.7    # data level 1 shrinks by less than 30% is stored
_PROBE_BYTES = 1 << 20
_SCRATCH_SAVES: ContextVar[bool] = ContextVar("structkit_scratch_saves", default=False)


@contextmanager
def scratch_saves() -> Iterator[None]:
    """Within the block, :func:`save_model` stores arrays uncompressed (the same archive and
    header: any structkit reads it; only the file is larger). For temporary copies."""
    token = _SCRATCH_SAVES.set(True)
    try:
        yield
    finally:
        _SCRATCH_SAVES.reset(token)


def _level(data: bytes) -> int | None:
    """COMPRESSIBLE_LEVEL for data that level 1 shrinks to under a quarter (on its first MB),
    None (stored, not deflated) for data it does not shrink by STORE_ABOVE (already compressed:
    a pipeline's parts, each a model file), else COMPRESS_LEVEL."""
    probe = data[:_PROBE_BYTES]
    if not len(probe):
        return COMPRESS_LEVEL
    packed = len(zlib.compress(probe, 1))
    if packed < len(probe) // 4:
        return COMPRESSIBLE_LEVEL
    return None if packed >= STORE_ABOVE * len(probe) else COMPRESS_LEVEL


def write_npz(f, arrays: dict[str, np.ndarray], compress: bool = True) -> None:
    """The archive np.savez_compressed writes (one ``NAME.npy`` member per array, streamed into
    it as numpy does, never pickled), each member deflated at the level :func:`_level` chooses
    from the array's first MB or stored (incompressible data, whose inflating would cost as
    much as real data's on every load), or all stored uncompressed (``compress=False``)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, mode="w", compression=method, allowZip64=True) as zf:
        for name, a in arrays.items():
            a = np.asanyarray(a)   # written as it is: C or Fortran order, or strided (as numpy does)
            if compress:   # the level of the member zf.open makes next, from the first MB's items
                k = max(1, _PROBE_BYTES // max(a.itemsize, 1))
                contiguous = a.flags.c_contiguous or a.flags.f_contiguous
                head = a.reshape(-1, order="A")[:k] if contiguous else np.asarray(a.flat[:k])
                level = _level(head.tobytes())
                zf.compression = zipfile.ZIP_STORED if level is None else zipfile.ZIP_DEFLATED
                zf.compresslevel = level
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)


def save_model(path: str, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write a model file atomically (with the model card of :func:`card_for_saves`, if any)."""
    if _HEADER in arrays:
        raise ValueError(f"array name {_HEADER} is reserved")
    card = _CARD.get()
    if card is not None and "card" not in header:
        header = {**header, "card": card}
    full = {"format": FORMAT, "format_version": FORMAT_VERSION,
            "structkit_version": __version__, **header, "checksum": _checksum(arrays)}
    # allow_nan=False: a header is standard JSON (no Infinity or NaN), or it is not written
    blob = np.frombuffer(json.dumps(full, sort_keys=True, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    # A failed write (a full disk, /dev/full) is one line; atomic_output has removed the
    # temporary file, so no half-written model is left and an existing one is unchanged.
    try:
        with atomic_output(path, "wb") as f:
            write_npz(f, {_HEADER: blob, **arrays}, compress=not _SCRATCH_SAVES.get())
    except OSError as e:
        raise UserError(f"cannot write the model: {os_reason(e)}", path) from None


# Limits of what a model file may declare, checked before anything is allocated.
MAX_MEMBERS = 4096                 # arrays in one archive
MAX_HEADER_BYTES = 64 << 20        # the JSON header
MAX_HEADER_DEPTH = 64              # nesting of the JSON header
MAX_INT_DIGITS = 20                # integers in the JSON header (2**64 has 20 digits)
MAX_NPY_HEADER = 1 << 16           # an .npy member's own header
# The arrays of a model may not declare more than this in total (STRUCTKIT_MAX_MODEL_BYTES
# overrides); a task's loader also bounds each array by what its header says (``limits``).
MAX_MODEL_BYTES = 8 << 30
_DTYPE_KINDS = "biufU"             # bool, integers, floats, unicode: never object, void or raw
_CHUNK = 1 << 22
# Above this many declared bytes, the arrays are decompressed and hashed once in a fixed buffer
# before anything is allocated for them, so a file that fails its checksum (a compression
# bomb, a damaged file) is refused in constant memory; smaller models are read in one pass.
HASH_FIRST_BYTES = 64 << 20
# Above HASH_FIRST_BYTES, arrays may not declare more than this many times the bytes the file
# holds: real models compress 3-10 times, a deflate bomb about 1000 times.
MAX_EXPANSION = 200


class _Damaged(Exception):
    """A model file that fails a check; the loader turns it into one UserError line."""


def _max_model_bytes() -> int:
    import os

    try:
        return int(os.environ.get("STRUCTKIT_MAX_MODEL_BYTES", MAX_MODEL_BYTES))
    except ValueError:
        return MAX_MODEL_BYTES


def _parse_header(raw: bytes) -> Any:
    """The JSON header: no non-standard constants, integers of bounded size, bounded nesting."""

    def bad_constant(name: str):
        raise _Damaged(f"header holds {name}")

    def parse_int(s: str) -> int:
        if len(s.lstrip("-")) > MAX_INT_DIGITS:
            raise _Damaged(f"header holds an integer of {len(s)} digits")
        return int(s)

    # Nesting is measured before parsing: json's C scanner recurses once per level. The depth
    # is the largest running sum of +1 for [ or { and -1 for ] or } outside strings, summed by
    # numpy (a tokenizer's header holds thousands of brackets).
    text = raw.decode("utf-8")
    if text.count("[") + text.count("{") > MAX_HEADER_DEPTH and _max_depth(raw) > MAX_HEADER_DEPTH:
        raise _Damaged(f"header nested more than {MAX_HEADER_DEPTH} levels deep")
    # the check of each integer costs a Python call per integer (a morph model's header holds
    # tens of thousands): made only where a run of digits is long enough to need it
    long_digits = _longest_digit_run(raw) > MAX_INT_DIGITS
    return json.loads(text, parse_constant=bad_constant, parse_int=parse_int if long_digits else None)


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The starts and the (exclusive) ends of the runs of True in the boolean array ``mask``."""
    edges = np.flatnonzero(np.diff(mask.view(np.int8), prepend=0, append=0))
    return edges[0::2], edges[1::2]


def _max_depth(raw: bytes) -> int:
    """The largest nesting of brackets outside strings in the UTF-8 JSON ``raw``: the running
    sum of +1 for each [ or {, -1 for each ] or }, at its highest. A string runs from a quote to
    the next quote not escaped (one that an odd run of backslashes precedes). Text that is not
    JSON is read the same way up to its first error, which is as far as the parser goes."""
    a = np.frombuffer(raw, dtype=np.uint8)
    quote = a == 0x22
    starts, ends = _runs(a == 0x5C)
    after = ends[((ends - starts) % 2 == 1) & (ends < len(a))]
    quote[after[a[after] == 0x22]] = False
    outside = np.cumsum(quote, dtype=np.int32) % 2 == 0      # an opening quote and its string: odd
    step = (((a == 0x5B) | (a == 0x7B)) & outside).astype(np.int32) - (((a == 0x5D) | (a == 0x7D)) & outside)
    return int(np.cumsum(step).max()) if len(step) else 0


def _longest_digit_run(raw: bytes) -> int:
    """The longest run of ASCII digits in UTF-8 ``raw`` (as in its text: no byte of a multi-byte
    character is an ASCII digit)."""
    a = np.frombuffer(raw, dtype=np.uint8)
    starts, ends = _runs((a >= 0x30) & (a <= 0x39))
    return int((ends - starts).max()) if len(starts) else 0


def _npy_header(f, name: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran order, header length) of an .npy member, read from its first
    bytes only. Object, structured and raw dtypes are refused (no pickle, no surprises)."""
    from numpy.lib import format as npf

    head = f.read(10)
    if len(head) < 10 or head[:6] != npf.MAGIC_PREFIX:
        raise _Damaged(f"{name} is not an .npy array")
    major = head[6]
    if major == 1:
        hlen = int.from_bytes(head[8:10], "little")
        extra = b""
    elif major in (2, 3):
        extra = f.read(2)
        hlen = int.from_bytes(head[8:10] + extra, "little")
    else:
        raise _Damaged(f"{name}: unknown .npy version {major}")
    if hlen > MAX_NPY_HEADER:
        raise _Damaged(f"{name}: .npy header of {hlen} bytes")
    text = f.read(hlen)
    if len(text) != hlen:
        raise _Damaged(f"{name}: truncated .npy header")
    import ast

    try:
        d = ast.literal_eval(text.decode("latin1" if major < 3 else "utf-8"))
    except (ValueError, SyntaxError, MemoryError, RecursionError, UnicodeDecodeError):
        raise _Damaged(f"{name}: unreadable .npy header") from None
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise _Damaged(f"{name}: unreadable .npy header")
    descr, fortran, shape = d["descr"], d["fortran_order"], d["shape"]
    if not isinstance(descr, str) or not isinstance(fortran, bool) or not isinstance(shape, tuple) \
            or len(shape) > 8 or not all(type(n) is int and 0 <= n < 1 << 62 for n in shape):
        raise _Damaged(f"{name}: bad .npy shape or dtype")
    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError):
        raise _Damaged(f"{name}: unknown dtype {descr[:40]!r}") from None
    if dtype.kind not in _DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None \
            or dtype.itemsize > 1 << 24:
        raise _Damaged(f"{name}: dtype {descr[:40]!r} is not allowed in a model file")
    return dtype, shape, fortran, 10 + len(extra) + hlen


class _NotModel(Exception):
    """A file that is not a structkit model at all."""


# Model files held in memory, by the name a loader is given for them (a pipeline's parts: the
# bytes of each part, which the pipeline file's own checksum has verified). See
# :func:`verified_parts`.
_IN_MEMORY: ContextVar[dict[str, bytes] | None] = ContextVar("structkit_models_in_memory", default=None)


@contextmanager
def verified_parts(parts: dict[str, bytes]) -> Iterator[None]:
    """Within the block, :func:`load_model` of a name in ``parts`` reads that model file from
    the given bytes instead of the file system, and does not compute its checksum again: the
    bytes are the members of an archive whose own checksum has been checked (a pipeline model's
    parts, each a model file byte for byte). Every other check is made as for a file."""
    token = _IN_MEMORY.set(parts)
    try:
        yield
    finally:
        _IN_MEMORY.reset(token)


def _read_model(path: str, tasks, command, limits) -> tuple[dict, dict[str, np.ndarray]]:
    """Header and arrays of a model file, every size checked before it is allocated and the
    checksum computed while the members stream in."""
    import io
    import os
    import stat

    held = _IN_MEMORY.get()
    if held is not None and path in held:
        data = held[path]
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return _read_archive(z, len(data), path, tasks, command, limits, verified=True)

    # Only a regular file is a model: a FIFO or a device (/dev/zero) never ends, and the zip
    # reader would seek and read it without bound. Checked before opening (opening a FIFO
    # waits for a writer) and again on the open file.
    st = os.stat(path)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise _NotModel(f"a {_file_kind(st.st_mode)}, not a regular file")
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(st.st_mode):
            raise _NotModel(f"a {_file_kind(st.st_mode)}, not a regular file")
        with zipfile.ZipFile(fh) as z:
            return _read_archive(z, st.st_size, path, tasks, command, limits)


def _file_kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _read_archive(z: zipfile.ZipFile, file_size: int, path, tasks, command, limits, verified=False):
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Damaged(f"{len(infos)} archive members")
    packed = sum(i.compress_size for i in infos)
    if packed > file_size:
        raise _Damaged(f"its members declare {packed} compressed bytes in a file of {file_size}")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        if not info.filename.endswith(".npy"):
            raise _NotModel("an archive member is not an array")
        name = info.filename[:-4]
        if name in members:
            raise _Damaged(f"two members named {name}")
        members[name] = info
    if _HEADER not in members:
        raise _NotModel("no header")
    hinfo = members.pop(_HEADER)
    if hinfo.file_size > MAX_HEADER_BYTES:
        raise _Damaged(f"header of {hinfo.file_size} bytes")
    total = sum(i.file_size for i in members.values())
    cap = _max_model_bytes()
    if total > cap:
        raise _Damaged(f"its arrays declare {total} bytes (the limit is {cap}; "
                       "STRUCTKIT_MAX_MODEL_BYTES raises it)")
    if total > HASH_FIRST_BYTES and total > MAX_EXPANSION * max(file_size, 1):
        raise _Damaged(f"its arrays declare {total} bytes in a file of {file_size} "
                       f"(more than {MAX_EXPANSION} times: a compression bomb, or damage)")
    with z.open(hinfo) as f:
        dtype, shape, _, hl = _npy_header(f, _HEADER)
        if dtype != np.uint8 or len(shape) != 1 or hl + shape[0] != hinfo.file_size:
            raise _Damaged("unreadable header")
        raw = f.read(shape[0])
    try:
        header = _parse_header(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Damaged("unreadable header") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _NotModel("unknown format")
    version = header.get("format_version")
    if type(version) is not int or version not in READS_VERSIONS:
        raise UserError(f"model file format version {str(version)[:20]} is not supported by this "
                        f"structkit (it reads versions {READS_VERSIONS[0]} to {READS_VERSIONS[-1]}); "
                        "retrain the model, or use the structkit that wrote it", path)
    task = header.get("task")
    if tasks is not None and task not in tasks:
        how = f" (`structkit {command}` needs a {' or '.join(tasks)} model)" if command else ""
        raise UserError(f"this model was trained for task {str(task)[:40]!r}{how}", path)
    layout = {}
    for name in sorted(members):
        info = members[name]
        with z.open(info) as f:
            dtype, shape, fortran, hl = _npy_header(f, name)
        nbytes = math.prod(shape) * dtype.itemsize
        if hl + nbytes != info.file_size:
            raise _Damaged(f"array {name} declares {math.prod(shape)} elements of {dtype} "
                           f"in a member of {info.file_size} bytes")
        layout[name] = (dtype, shape, fortran, hl)
    if limits is not None:
        limits(header, {n: (d, s) for n, (d, s, _, _) in layout.items()})
    if total > HASH_FIRST_BYTES and not verified:
        _check_before_reading(z, members, layout, header)
    h = None if verified else hashlib.sha256()
    arrays: dict[str, np.ndarray] = {}
    for name in sorted(members):
        dtype, shape, fortran, hl = layout[name]
        a = np.empty(shape[::-1] if fortran else shape, dtype=dtype)
        buf = a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)
        with z.open(members[name]) as f:
            f.read(hl)
            pos = 0
            while pos < len(buf):
                n = f.readinto(memoryview(buf)[pos:pos + _CHUNK])
                if not n:
                    raise _Damaged(f"array {name} is truncated")
                pos += n
            if f.read(1):
                raise _Damaged(f"array {name} is longer than declared")
        if fortran:
            a = a.T
        if h is not None:
            c = np.ascontiguousarray(a)
            h.update(f"{name}:{c.dtype.str}:{c.shape}".encode())
            if fortran:
                h.update(c.tobytes())
            else:
                for i in range(0, len(buf), _CHUNK):
                    h.update(buf[i:i + _CHUNK])
        arrays[name] = a
    if h is not None and header.get("checksum") != h.hexdigest():
        raise _Damaged("checksum mismatch")
    return header, arrays


def _check_before_reading(z, members, layout, header) -> None:
    """The checksum of the arrays, computed through one fixed buffer: nothing is allocated for
    an array before the whole file is known to be what its header says."""
    h = hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    for name in sorted(members):
        dtype, shape, fortran, hl = layout[name]
        left = math.prod(shape) * dtype.itemsize
        h.update(f"{name}:{dtype.str}:{shape}".encode())
        if fortran:
            # The checksum is over the C-order bytes, which a Fortran-order array only gives
            # whole. structkit never writes one; a small one is read whole, a large one refused.
            if left > _CHUNK:
                raise _Damaged(f"array {name} of {left} bytes is in Fortran order")
            with z.open(members[name]) as f:
                f.read(hl)
                raw = f.read(left + 1)
            if len(raw) != left:
                raise _Damaged(f"array {name} is truncated or longer than declared")
            a = np.frombuffer(raw, dtype=dtype).reshape(shape[::-1]).T
            h.update(np.ascontiguousarray(a).tobytes())
            continue
        with z.open(members[name]) as f:
            f.read(hl)
            while left:
                n = f.readinto(view[:min(left, _CHUNK)])
                if not n:
                    raise _Damaged(f"array {name} is truncated")
                h.update(view[:n])
                left -= n
            if f.read(1):
                raise _Damaged(f"array {name} is longer than declared")
    if header.get("checksum") != h.hexdigest():
        raise _Damaged("checksum mismatch")


def load_model(path: str, tasks: tuple[str, ...] | None = None, command: str | None = None,
               limits=None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and verify a model file; ``tasks`` lists the tasks the caller can use.

    Nothing is allocated before it is checked: the archive's member sizes against a total
    limit, each array's .npy header (dtype, shape) against its member's declared size, then
    ``limits(header, {name: (dtype, shape)})`` (the task's bounds derived from the header; it
    raises ValueError) -- and only then are the arrays read, the checksum computed as they
    stream. numpy's own loader is not used (no pickle either way).

    Every failure (missing, unreadable, not a model, damaged, other format version, wrong
    task) is a UserError naming the file.
    """
    try:
        return _read_model(path, tasks, command, limits)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise read_error(e, path, "model file") from None
    except _NotModel as e:
        raise UserError(f"not a structkit model file ({e})", path) from None
    except _Damaged as e:
        raise UserError(f"damaged model file: {e}", path) from None
    except ValueError as e:  # from ``limits``: the arrays do not fit the header
        raise UserError(f"damaged model file: {str(e)[:200]}", path) from None
    except MemoryError:
        raise UserError("damaged model file, or too large for this machine's memory", path) from None
    # Zlib.error (damaged compressed data inside the archive) is not an OSError or
    # ValueError; RuntimeError is an encrypted member, NotImplementedError an unknown
    # compression method.
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, zipfile.LargeZipFile, zlib.error,
            RuntimeError, NotImplementedError) as e:
        kind = "zlib.error" if isinstance(e, zlib.error) else type(e).__name__
        raise UserError(f"not a structkit model file, or a damaged one ({kind})", path) from None


def model_header(path: str) -> dict | None:
    """A model file's JSON header, read without loading its arrays (None when the file cannot
    be read that way: the model's own loader then says what is wrong). Not verified: for what
    a caller reads before (or after) the checked load."""
    try:
        with open(path, "rb") as fh, zipfile.ZipFile(fh) as z:
            with z.open(_HEADER + ".npy") as f:
                dtype, shape, _, _ = _npy_header(f, _HEADER)
                if dtype != np.uint8 or len(shape) != 1 or shape[0] > 64 << 20:
                    return None
                header = _parse_header(f.read(shape[0]))
        return header if isinstance(header, dict) else None
    except Exception:  # noqa: BLE001 -- any failure: leave the diagnosis to the loader
        return None


def model_task(path: str) -> str | None:
    """The task a model file's header names, read without loading its arrays (None when the
    file cannot be read that way: the model's own loader then says what is wrong)."""
    task = (model_header(path) or {}).get("task")
    return task if isinstance(task, str) else None
