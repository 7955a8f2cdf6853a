"""A deadline on a call into the driver: the call that never returns becomes an answer, not a hang.

A wedged driver blocks NVML calls (and nvidia-smi, which makes them) inside the kernel: the thread cannot be
interrupted, and a check run at every job start must not become the job that hangs on the very fault it looks
for. :func:`within` runs the call on a daemon thread and waits for it at most ``seconds``: past that it raises
:class:`NotAnswering` and leaves the thread behind (a daemon thread does not keep the process alive; ctypes
releases the GIL during the foreign call, so the caller goes on).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, TypeVar

from rigcheck.errors import NotAnswering

# The whole live probe of an 8-GPU node takes well under a second when the driver answers (NVML's calls are
# microseconds to milliseconds; the slowest, the kernel log and lspci, run under their own deadlines).
PROBE_DEADLINE_S: Final = 5.0

T = TypeVar("T")


__all__ = ["PROBE_DEADLINE_S", "NotAnswering", "within"]


def within(seconds: float, call: Callable[[], T], what: str) -> T:
    """``call()``'s result, or NotAnswering when it has not returned after ``seconds``; what it raised, raised."""
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - not hidden: handed to the caller's thread, raised there
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"rigcheck-deadline-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise NotAnswering(f"{what} did not return within {seconds:g} s (NVML or the driver is blocked)")
    if failure:
        raise failure[0]
    return result[0]
