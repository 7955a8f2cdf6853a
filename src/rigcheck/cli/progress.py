"""Progress of long commands (bench, burn, verify, fleet) on stderr: the library's ``on_progress`` lines, shown at
most every MIN_GAP_S, as one line rewritten in place on a terminal and as plain lines in a pipe or a log.

The library says what it is doing through one callback (bench/launcher.py ``progress``); the workers send often
enough (bench/progress.py: every PROGRESS_TICK_S while steps advance) that a line at most every MIN_GAP_S is also
a line at least every 2 s. Only a repeat is held back: a line of the same shape as the one shown last (the same
words, other numbers: "step 40/200" after "step 20/200"); a line that says something new (a step of `verify`
starting) is shown at once. A line that reports a fault (wrong results, a lost GPU, an error) is never dropped or
overwritten: it is printed as its own line and the status line is drawn again below it.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rigcheck.cli import streams
from rigcheck.cli.terminal_safe import terminal_text

# Shown lines are at least this far apart; workers tick every bench.progress.PROGRESS_TICK_S (0.5 s), so the next
# line comes within MIN_GAP_S + tick = 2 s while work advances.
MIN_GAP_S = 1.5
PREFIX = "rigcheck: "
# Lines that report a fault or an outcome to keep: printed whole, whatever the throttle says.
_KEEP = re.compile(r"WRONG|FAILED|LOST|error|interrupted|not started|skipped|budget spent|timed out", re.IGNORECASE)
_CLEAR = "\r\x1b[K"  # carriage return, then erase to the end of the line (ECMA-48 EL)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def shape(text: str) -> str:
    """A line with its numbers taken out: two lines of one shape say the same thing about another moment."""
    return _NUMBER.sub("#", text)


class ProgressLine:
    """The ``on_progress`` callback of a long command: throttled, and drawn in place where ``stream`` is a
    terminal. ``clock`` is injectable so the throttle can be tested without sleeping."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        min_gap_s: float = MIN_GAP_S,
        tty: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.min_gap_s = min_gap_s
        self.tty = self.stream.isatty() if tty is None else tty
        self._shown_at: float | None = None
        self._shown_shape = ""
        self._pending: str | None = None  # the newest line not shown yet (a pipe gets it at close)
        self._drawn = ""  # the status line on the terminal now ("" when none)

    def __call__(self, message: str) -> None:
        text = " ".join(terminal_text(str(message)).split())  # it may quote a rank's hostname, a GPU's name
        now = self.clock()
        if _KEEP.search(text):
            self._keep(text)
        elif self._shown_at is None or now - self._shown_at >= self.min_gap_s or shape(text) != self._shown_shape:
            self._show(text)
        else:  # a repeat within the gap: held back, replaced by the next one
            self._pending = text
            return
        self._shown_at = now
        self._shown_shape = shape(text)
        self._pending = None

    def _show(self, text: str) -> None:
        if not self.tty:
            self._write(f"{PREFIX}{text}\n")
            return
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
        line = f"{PREFIX}{text}"
        self._drawn = line if len(line) <= width else line[: width - 1] + "…"  # a wrapped line cannot be rewritten
        self._write(_CLEAR + self._drawn)

    def _keep(self, text: str) -> None:
        if not self.tty:
            self._write(f"{PREFIX}{text}\n")
            return
        self._write(f"{_CLEAR}{PREFIX}{text}\n" + self._drawn)

    def clear(self) -> None:
        """Erase the status line (before any other output), so what follows starts on a clean line."""
        if self.tty and self._drawn:
            self._write(_CLEAR)
            self._drawn = ""

    def close(self) -> None:
        """The run is over: a terminal's status line is erased; a pipe gets the last line it had not shown."""
        if self.tty:
            self.clear()
        elif self._pending is not None:
            self._write(f"{PREFIX}{self._pending}\n")
        self._pending = None

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


@contextmanager
def progress_line(stream: TextIO | None = None, *, tty: bool | None = None) -> Iterator[ProgressLine]:
    """A :class:`ProgressLine` for the duration of a run; ``cli.streams.note`` erases its line before writing.
    ``tty=False``: plain lines even on a terminal (fleet: several ranks may share one)."""
    line = ProgressLine(stream, tty=tty)
    streams.before_note.append(line.clear)
    try:
        yield line
    finally:
        streams.before_note.remove(line.clear)
        line.close()
