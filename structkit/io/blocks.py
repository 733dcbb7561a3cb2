"""Cutting a file into blocks of whole sentences (or paragraphs), read as bytes: the one block
cutter of the batch layer (``structkit.batch``) and of anything else that works a file block by
block. Memory is a few blocks, whatever the size of the input.

A block ends just after a blank line (``\n\n`` or ``\n\r\n``) and the next one starts with a
non-blank line; the line number of each block's first line is counted in the whole file.
"""
from __future__ import annotations

from typing import IO, Iterator

from structkit.errors import UserError

BLOCK_BYTES = 1 << 20
MAX_BLOCK_BYTES = 64 << 20  # no blank line in this much: not sentences (rows) / one paragraph (text)
_CUT = (b"\n\n", b"\n\r\n")


def cut_point(buf, lo: int = 0) -> int:
    """The last position just after a blank line where buf continues with a non-blank line
    (so the next block starts with content); -1 if there is none. Only blank lines ending at or
    after ``lo`` are looked for (what was searched before is not searched again)."""
    end = len(buf)
    while True:
        p, n = max((buf.rfind(c, lo, end), len(c)) for c in _CUT)
        if p < 0:
            return -1
        q = p + n
        if q < len(buf) and buf[q:q + 1] not in (b"\n", b"\r"):
            return q
        end = p + n - 1  # look further back (a run of blank lines, or a cut at the very end)


def iter_blocks(stream: IO[bytes], target: int = BLOCK_BYTES, lines: bool = False,
                name: str = "<input>") -> Iterator[tuple[int, bytes]]:
    """(first line number, bytes) blocks of whole sentences, about ``target`` bytes each, cut
    after a blank line. Memory is bounded: past ``MAX_BLOCK_BYTES`` without a blank line, raw
    text (``lines``) is cut at its last line end (a line is at most a few MB: the readers' cap),
    and CoNLL rows are a one-line error (no sentence is that long: ``/dev/zero`` was read until
    memory ran out)."""
    buf = bytearray()
    line = 1
    searched = 0
    while True:
        data = stream.read(target)
        if not data:
            break
        buf += data
        if len(buf) < target:
            continue
        q = cut_point(buf, max(0, searched - 3))  # a blank line may straddle the old end
        searched = len(buf)
        if q <= 0:
            if len(buf) <= MAX_BLOCK_BYTES:
                continue
            q = buf.rfind(b"\n") + 1 if lines else 0
            if q <= 0:
                raise UserError(f"no {'line end' if lines else 'blank line'} in {len(buf) >> 20} MB: "
                                f"{'not text' if lines else 'not sentences of CoNLL rows'}", name, line)
        block = bytes(buf[:q])
        del buf[:q]
        searched = 0
        yield line, block
        line += block.count(b"\n")
    if buf or line == 1:
        yield line, bytes(buf)
