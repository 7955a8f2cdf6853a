"""The one way rigcheck writes a whole output file (--html, --markdown, snapshot -o, a CSV trace's header).

The text goes to a temporary file in the target's own directory, is synced to disk, and is renamed over the
target: a reader sees the old file or the new one, never a torn one, and a full or read-only disk leaves the old
file as it was. The rename only ever replaces a regular file or creates a new one:

- a symlink is written through: its target is replaced, the link stays a link;
- a device (/dev/null, /dev/full), a FIFO, a socket or a directory is refused: renaming a regular file over
  /dev/null would destroy the device node (as root), and a FIFO or a device cannot be written whole anyway;
- an existing file keeps its permission bits (a 0600 report stays private) and, where allowed, its owner; a new
  file gets 0666 less the umask, as any program's output would.

Every failure is an OutputError (exit 2, one line naming the file), never a bug's exit 3. Files that grow over
time (a monitor trace) cannot be written this way; monitor/sampler.py writes them as a stream.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from rigcheck.errors import OutputError

__all__ = ["describe_kind", "write_whole"]


def describe_kind(mode: int) -> str | None:
    """What a file that is not a regular one is ("a directory", "a FIFO", ...); None for a regular file."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    )
    for test, name in kinds:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (/proc/self/status, kernel 4.7+)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: read it the only other way, setting it and putting it back at once
    os.umask(mask)
    return mask


def _target(path: Path) -> tuple[Path, os.stat_result | None]:
    """Where the bytes go (a symlink resolved to its target) and what is there now (None: nothing yet)."""
    target = Path(os.path.realpath(path))  # follows every link; a dangling one names the file it will create
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target, None
    except OSError as exc:  # a loop of links (ELOOP), a path through a file (ENOTDIR), no search permission
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    kind = describe_kind(st.st_mode)
    if kind is not None:
        raise OutputError(
            f"refusing to write {path}: it is {kind}, not a regular file (rigcheck writes a report file whole and "
            "replaces only a regular file; give a file name)"
        )
    return target, st


def write_whole(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` whole or not at all; OutputError when it cannot be."""
    given = Path(path)
    target, existing = _target(given)
    data = text.encode("utf-8") if isinstance(text, str) else text
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as fh:
            if existing is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(existing.st_mode))
                if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(PermissionError):  # only root may give a file away
                        os.fchown(fh.fileno(), existing.st_uid, existing.st_gid)
            else:
                os.fchmod(fh.fileno(), 0o666 & ~_umask())
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as exc:
        kept = "; the file there is left as it was" if existing is not None else ""
        raise OutputError(f"cannot write {given}: {exc.strerror or exc}{kept}") from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
    _sync_directory(target.parent)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable; a file system that cannot sync a directory (some network ones) is no error:
    the file is already whole and in place."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
