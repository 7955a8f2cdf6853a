"""Reading /proc, /sys and /etc files: the bytes, or the reason they could not be read."""

from __future__ import annotations

import logging
from pathlib import Path

from rigcheck.model.snapshot import Missing

log = logging.getLogger(__name__)


def read_bytes(path: Path) -> tuple[bytes | None, Missing | None]:
    """The file's bytes, or None with why: no permission, absent (not supported here), or an I/O error."""
    try:
        return path.read_bytes(), None
    except PermissionError:
        return None, Missing.NO_PERMISSION
    except FileNotFoundError:
        return None, Missing.NOT_SUPPORTED
    except OSError as exc:  # EIO and friends: a device that does not answer
        log.debug("cannot read %s: %s", path, exc)
        return None, Missing.ERROR


def read_text(path: Path) -> tuple[str | None, Missing | None]:
    """As :func:`read_bytes`, decoded (undecodable bytes replaced: these files are ASCII by contract)."""
    data, reason = read_bytes(path)
    return (data.decode(errors="replace") if data is not None else None), reason
