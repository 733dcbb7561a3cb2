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
MAX_BLOCK_BYTES = 64 << 20  # no blank line in this much: not sentences (rows)
MAX_TEXT_BLOCK_BYTES = 64 << 10  # raw text with no blank line in this much is cut at a line end ...
MAX_LINE_BYTES = 1 << 20         # ... and a line longer than this at a space, else between characters
                                 # (as the tokenizers cut a paragraph: text.tokenize.MAX_BLOCK_CHARS):
                                 # a text without end is analysed as it streams in, in bounded memory
_SPACES = (b" ", b"\t", b"\r")
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


def _check_text(block, name: str, line: int) -> None:
    """Raw text holds no NUL byte (``/dev/zero``, a binary file): one line naming where."""
    k = block.find(b"\0")
    if k >= 0:
        raise UserError("a NUL byte: not text", name, line + block.count(b"\n", 0, k))


def _text_cut(buf, long_line: bool) -> int:
    """Where raw text with no blank line is cut: after its last line end in the first
    ``MAX_TEXT_BLOCK_BYTES``, else after the first line end in the first ``MAX_LINE_BYTES`` (a
    long line stays whole); with none there and over ``MAX_LINE_BYTES`` read (``long_line``),
    after its last space in the first ``MAX_LINE_BYTES``, else before the last character that
    starts there (never inside a UTF-8 sequence); 0: not yet."""
    q = buf.rfind(b"\n", 0, MAX_TEXT_BLOCK_BYTES) + 1
    if q <= 0:
        q = buf.find(b"\n", MAX_TEXT_BLOCK_BYTES, MAX_LINE_BYTES) + 1
    if q > 0 or not long_line:
        return q
    buf = bytes(buf[:MAX_LINE_BYTES])
    q = max(buf.rfind(c) for c in _SPACES) + 1
    if q > 0:
        return q
    q = len(buf) - 1
    while q > 0 and buf[q] & 0xC0 == 0x80:   # a continuation byte: back to the character's start
        q -= 1
    return q


def iter_blocks(stream: IO[bytes], target: int = BLOCK_BYTES, lines: bool = False,
                name: str = "<input>", text_cut_at: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(first line number, bytes) blocks of whole sentences, about ``target`` bytes each, cut
    after a blank line. Memory is bounded: raw text (``lines``) without a blank line is cut
    (``_text_cut``: a line end, a space, a character) once over ``MAX_TEXT_BLOCK_BYTES``, and at
    least ``text_cut_at``, bytes of it are read
    (a block cut there may split a paragraph: a caller that wants smaller blocks than
    ``BLOCK_BYTES`` only to share a file among workers passes ``BLOCK_BYTES``, so that they
    are cut where one worker's would be), and CoNLL rows past ``MAX_BLOCK_BYTES`` are a
    one-line error (no sentence is that long: ``/dev/zero`` was read until memory ran out)."""
    buf = bytearray()
    line = 1
    searched = 0
    cut_from = MAX_TEXT_BLOCK_BYTES + 1 if text_cut_at is None else max(text_cut_at, MAX_TEXT_BLOCK_BYTES + 1)
    while True:
        data = stream.read(target)
        if not data:
            break
        buf += data
        while len(buf) >= target:   # cut what was read: the buffer stays under about 2 * target
            q = cut_point(buf, max(0, searched - 3))  # a blank line may straddle the old end
            searched = len(buf)
            if q <= 0 and lines and len(buf) >= cut_from:
                q = _text_cut(buf, len(buf) > MAX_LINE_BYTES)
            if q <= 0:
                if len(buf) <= (MAX_LINE_BYTES if lines else MAX_BLOCK_BYTES):
                    break       # read on (in lines, _text_cut cuts a longer line)
                raise UserError(f"no blank line in {len(buf) >> 20} MB: not sentences of CoNLL rows",
                                name, line)
            block = bytes(buf[:q])
            del buf[:q]
            searched = 0
            if lines:
                _check_text(block, name, line)
            yield line, block
            line += block.count(b"\n")
    if buf or line == 1:
        if lines:
            _check_text(buf, name, line)
        yield line, bytes(buf)
