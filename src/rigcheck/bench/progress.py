"""Time-based progress of a loop of known length: "step k/N, rate, ETA", at most every PROGRESS_TICK_S.

A worker calls :meth:`StepTicker.step` after each step; it returns a line when one is due. The CLI shows at most
one line per 1.5 s (cli/progress.py), so a tick of 0.5 s gives a line at least every 2 s while steps finish.
A step longer than that cannot be reported inside: the line comes when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable

PROGRESS_TICK_S = 0.5


def eta_text(seconds: float) -> str:
    """12 -> "12 s", 125 -> "2 min 5 s", 3725 -> "1 h 2 min"."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


class StepTicker:
    """When to report a loop of ``total`` steps, and the line that says where it is."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        unit: str = "step",
        tick_s: float = PROGRESS_TICK_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.tick_s = tick_s
        self.clock = clock
        self.started = clock()
        self._last = self.started

    def step(self, done: int) -> str | None:
        """The progress line after ``done`` steps, or None when the last one was less than ``tick_s`` ago (and
        after the last step: the run's own result says it finished)."""
        now = self.clock()
        if done >= self.total or now - self._last < self.tick_s:
            return None
        self._last = now
        return self.line(done, now)

    def line(self, done: int, now: float) -> str:
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.label}: {self.unit} {done}/{self.total}", f"{elapsed:.1f} s"]
        if rate > 0:
            parts.append(f"{rate:.2f} {self.unit}s/s" if rate < 10 else f"{rate:.0f} {self.unit}s/s")
            parts.append(f"ETA {eta_text((self.total - done) / rate)}")
        return ", ".join(parts)
