"""The input primitives, two kinds apart by name:

- ``read_sys_*``: the machine's own /proc, /sys and /etc files (the live probes): the value, or None with the
  :class:`Missing` reason it could not be read. Nothing raises: an unreadable sysfs file is a reading.
- ``*_input*``, ``read_capped``, ``line_blocks``, ``input_limits``: a file the user named (``--from FILE``,
  ``nccl-log FILE``, ``burn --analyze FILE``; "-" is standard input), read whole under a cap or streamed a block
  at a time. Whatever cannot be an output of these tools is one line of :class:`InputError` naming the file.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from rigcheck.errors import InputError
from rigcheck.model.snapshot import Missing

# --- the machine's own files -------------------------------------------------------------------------------


def read_sys_bytes(path: Path) -> tuple[bytes | None, Missing | None]:
    """The file's bytes, or None with why: no permission, absent (not supported here), or an I/O error."""
    try:
        return path.read_bytes(), None
    except PermissionError:
        return None, Missing.NO_PERMISSION
    except FileNotFoundError:
        return None, Missing.NOT_SUPPORTED
    except OSError as exc:  # EIO and friends: a device that does not answer
        import logging  # here: only the live probes reach this, and logging is 1 ms of every command's start

        logging.getLogger(__name__).debug("cannot read %s: %s", path, exc)
        return None, Missing.ERROR


def read_sys_text(path: Path) -> tuple[str | None, Missing | None]:
    """As :func:`read_sys_bytes`, decoded (undecodable bytes replaced: these files are ASCII by contract)."""
    data, reason = read_sys_bytes(path)
    return (data.decode(errors="replace") if data is not None else None), reason


# --- a file the user named ---------------------------------------------------------------------------------

# Bounded reading: the cap counts bytes actually read, never st_size: a device (/dev/zero), a pipe, stdin or a
# file still being written reports a size that says nothing about how much will come, and an unbounded read()
# of /dev/zero ends in MemoryError.

# A whole-file read (one record: a snapshot, an nvidia-smi output, a tool's log). Real outputs are kilobytes;
# a 64 MiB ceiling keeps a wrong file from eating the machine's memory.
MAX_INPUT_BYTES = 64 * 1024 * 1024
# Streaming readers hold one line at a time, so they may read far more than a whole-file reader; still, a
# stream that never ends must end (`yes | rigcheck burn --analyze -`), and one line may not fill the memory.
STREAM_MAX_BYTES = 16 * 1024**3
STREAM_MAX_LINE = 1024 * 1024
# Bytes a streaming reader reads at a time: large enough that decoding and splitting run in C over many lines.
CHUNK_BYTES = 1 << 20


def read_input_text(path: str, expected: str, *, allow_empty: bool = False) -> str:
    """The whole file's text ("-" is standard input), refusing what cannot be an output of these tools.

    ``expected`` names what the caller reads, for the message about an empty file; with ``allow_empty`` an
    empty (or blank) file is "" instead.
    """
    try:
        if path != "-" and Path(path).is_dir():
            raise InputError("is a directory, not a file", path=path)
        raw = read_capped(path, MAX_INPUT_BYTES)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=path) from None
    except OSError as exc:  # EIO, ENXIO (a socket), a device that refuses reads: still the user's file
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if len(raw) > MAX_INPUT_BYTES:
        raise InputError(f"input is too large (over {MAX_INPUT_BYTES // 2**20} MiB)", path=path)
    if not raw.strip():
        if allow_empty:
            return ""
        raise InputError(f"empty file: expected {expected}", path=path)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # PowerShell redirects write UTF-16
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise InputError("binary data, not text", path=path) from None
    if b"\x00" in raw:
        raise InputError("binary data, not text (it holds NUL bytes)", path=path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("binary data, not UTF-8 text", path=path, line=line) from None


@contextmanager
def open_input(path: str) -> Iterator[BinaryIO]:
    """The file open for binary reading, closed after (standard input left open), for a streaming reader; a
    file that cannot be opened is one line of InputError."""
    try:
        if path != "-" and Path(path).is_dir():
            raise InputError("is a directory, not a file", path=path)
        fh: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    try:
        yield fh
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def read_input_chunk(fh: BinaryIO, path: str) -> bytes:
    """The next block of up to CHUNK_BYTES of ``fh`` (b"" at the end); a read error is one line of InputError."""
    try:
        return fh.read(CHUNK_BYTES)
    except OSError as exc:  # EIO, a socket, a device that refuses reads: still the user's file
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None


def read_capped(path: str, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of ``path`` ("-" is standard input): more than ``cap`` means "too large".

    Raises the OSError subclasses of opening the file (FileNotFoundError, PermissionError, IsADirectoryError)
    for the caller to word.
    """
    if path == "-":
        return _read_upto(sys.stdin.buffer, cap + 1)
    with open(path, "rb") as fh:
        return _read_upto(fh, cap + 1)


def _read_upto(fh: BinaryIO, limit: int) -> bytes:
    # read(n) on a pipe or terminal may return less than n before the end: loop until the end or the limit.
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def line_blocks(
    first: bytes,
    read: Callable[[], bytes],
    path: str,
    *,
    line_of_rest: Callable[[bytes, int], int],
    max_total: int | None = None,
    max_line: int | None = None,
) -> Iterator[tuple[bytes, bool]]:
    """The stream that starts with ``first`` and goes on with ``read()`` (b"" at its end), as blocks of whole
    lines: (bytes up to and including a block's last newline, whether this is the last block, whose tail may
    lack one). The streaming readers (traces, NCCL logs) share it, so /dev/zero, an endless pipe or a binary
    file ends in one line of InputError: a NUL byte, a line over ``max_line`` bytes (``line_of_rest(data,
    cut)`` numbers it, in the caller's own count of the lines it has read), more than ``max_total`` in all.
    The limits default to STREAM_MAX_BYTES and STREAM_MAX_LINE, read when the stream starts.
    """
    max_total = STREAM_MAX_BYTES if max_total is None else max_total
    max_line = STREAM_MAX_LINE if max_line is None else max_line

    total = 0
    rest = b""
    chunk = first
    del first  # hold each block once: the first stays alive otherwise, for the whole stream
    while True:
        total += len(chunk)
        if total > max_total:
            raise InputError(f"input is too large (over {max_total // 2**30} GiB)", path=path)
        if b"\x00" in chunk:
            raise InputError("binary data, not text (it holds NUL bytes)", path=path)
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n") + 1 if chunk else len(data)
        rest = data[cut:]
        if len(rest) > max_line:
            raise InputError(
                f"line is longer than {max_line // 1024} KiB: not a text output of these tools",
                path=path,
                line=line_of_rest(data, cut),
            )
        if cut:
            yield data[:cut], not chunk
        if not chunk:
            return
        chunk = read()


@contextmanager
def input_limits(path: str | None) -> Iterator[None]:
    """Turn the standard library's limits on hostile input into InputError (exit 2, one line).

    Real outputs never reach them, so each is a wrong or damaged file, not a bug: an integer of over 4,300
    digits (int() raises ValueError, CPython's guard against quadratic conversion), a CSV field over 128 KiB
    (csv.Error), JSON nested deeper than the interpreter's stack (RecursionError). Wrap a whole parse in it: a
    ValueError of another kind is a bug and passes through.
    """
    try:
        yield
    except RecursionError:
        raise InputError("nested too deeply to read (not an output of these tools)", path=path) from None
    except csv.Error as exc:
        raise InputError(f"not a readable CSV: {exc}", path=path) from None
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
        raise InputError("a number with thousands of digits (not an output of these tools)", path=path) from None
