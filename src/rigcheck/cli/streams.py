"""The standard streams, below every other cli module: a note on stderr, and whether a stream's encoding holds
every character. common.py, nogpu.py and ascii_out.py all write through these, so none imports another for them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

# What to do before a note: a live progress line (cli/progress.py) erases itself, so the note starts its own line.
before_note: list[Callable[[], None]] = []


def note(message: str) -> None:
    """A human message on stderr, one unwrapped line (never mixed into JSON on stdout)."""
    from rigcheck.cli.terminal_safe import terminal_text  # a message may quote an input: no control characters

    for clear in before_note:
        clear()
    sys.stderr.write(f"rigcheck: {' '.join(terminal_text(message).split())}\n")
    sys.stderr.flush()


def is_utf(encoding: str | None) -> bool:
    """Whether a stream's encoding holds every character (UTF-8/16/32); None counts as UTF-8."""
    return (encoding or "utf-8").lower().replace("-", "").replace("_", "").startswith("utf")
