"""Processes a test started: which of a session are still alive (a command started with start_new_session must
leave none behind; a zombie runs nothing and is not counted)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path


def alive_in_session(sid: int) -> list[str]:
    """The command lines of the live (not zombie) processes whose session id is ``sid``."""
    out: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(cmdline)
    return out


def assert_none_left(sids: Iterable[int], within_s: float) -> None:
    """No live process of these sessions, waiting up to ``within_s`` for them to end."""
    sessions = list(sids)
    deadline = time.monotonic() + within_s
    while any(alive_in_session(s) for s in sessions) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [alive_in_session(s) for s in sessions] == [[] for _ in sessions]
