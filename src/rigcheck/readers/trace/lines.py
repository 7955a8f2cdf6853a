"""A trace file's lines a block of up to about 1 MiB at a time (text_blocks), and those blocks as numbered lines
(numbered): what both ways of reading a trace (stream.py, batches.py) read through. Binary input ends in one line
of InputError or ParseError naming the line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

from rigcheck.errors import InputError, ParseError
from rigcheck.inputs import line_blocks, read_input_chunk, read_input_text
from rigcheck.readers.smi.values import BAD_CONTROL, check_text

# The bytes of BAD_CONTROL's ASCII controls (its surrogates cannot survive a strict UTF-8 decode).
_BAD_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
assert all(BAD_CONTROL.match(chr(b)) for b in _BAD_BYTES)
assert not any(BAD_CONTROL.match(chr(b)) for b in range(128) if b not in _BAD_BYTES)


def text_blocks(fh: BinaryIO, path: str, expected: str) -> Iterator[tuple[int, list[str]]]:
    """The file's lines a block of up to about 1 MiB at a time, blank ones too: (lines before the block, its
    lines). Binary input ends in one line of InputError (numbered_lines)."""
    first = read_input_chunk(fh, path)
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        # PowerShell's UTF-16: rare and small (a redirect of a short run); read whole, under the one-record cap.
        text = read_input_text(path, expected)
        check_text(text, path)
        yield 0, text.splitlines()
        return
    number = 0  # lines seen so far
    blocks = line_blocks(
        first.removeprefix(b"\xef\xbb\xbf"),
        lambda: read_input_chunk(fh, path),
        path,
        line_of_rest=lambda _d, _c: number + 1,
    )
    del first  # line_blocks has it: a second reference would keep the first 1 MiB alive to the end
    for block, _ in blocks:
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = number + block[: exc.start].count(b"\n") + 1
            raise InputError("binary data, not UTF-8 text", path=path, line=line) from None
        # The regex only where a byte or U+FFFD says it will match: it takes several times as long as this test.
        suspect = len(block.translate(None, _BAD_BYTES)) < len(block) or "\ufffd" in text
        bad = BAD_CONTROL.search(text) if suspect else None
        if bad is not None:
            line = number + text.count("\n", 0, bad.start()) + 1
            raise ParseError(f"binary data (character {bad.group()!r}), not nvidia-smi output", path=path, line=line)
        lines = text.splitlines()
        yield number, lines
        number += len(lines)


def numbered(blocks: Iterable[tuple[int, list[str]]]) -> Iterator[tuple[int, str]]:
    """The lines of text_blocks' blocks that are not blank, numbered from 1."""
    return ((n, line) for base, lines in blocks for n, line in enumerate(lines, base + 1) if line.strip())
