"""Processes stuck in uninterruptible sleep (D state) on an NVIDIA device: the mark of a wedged driver.

A process blocked in the kernel inside the driver (an ioctl on /dev/nvidia*, a GPU memory free that waits on the
GPU) shows ``D`` as its state in ``/proc/<pid>/stat`` and cannot be killed until the call returns; every later
CUDA or NVML call of any process may block behind it. Only the few processes in D state have their open files
read (``/proc/<pid>/fd``), so a scan of a busy host costs milliseconds. Processes of other users whose ``fd``
cannot be read (not root) are counted and said, never guessed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

NVIDIA_DEVICE = "/dev/nvidia"


@dataclass(frozen=True)
class StuckScan:
    """What the scan found: one line per process in D state holding an NVIDIA device, and the D-state processes
    whose open files could not be read."""

    stuck: list[str] = field(default_factory=list)
    unreadable: int = 0


def _state_and_name(stat: str) -> tuple[str, str] | None:
    """(state, command) from a /proc/<pid>/stat line; the command is in parentheses and may hold spaces."""
    open_at, close_at = stat.find("("), stat.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = stat[close_at + 1 :].split()
    return (rest[0], stat[open_at + 1 : close_at]) if rest else None


def stuck_on_nvidia(proc: Path = Path("/proc")) -> StuckScan:
    """Every process in D state with an open /dev/nvidia* file, as ``pid 1234 (python3) in D state on
    /dev/nvidia0``."""
    stuck: list[str] = []
    unreadable = 0
    try:
        pids = [entry for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return StuckScan()
    for pid in pids:
        try:
            parsed = _state_and_name((proc / pid / "stat").read_text(errors="replace"))
        except OSError:  # the process ended between the listing and the read
            continue
        if parsed is None or parsed[0] != "D":
            continue
        try:
            fds = os.listdir(proc / pid / "fd")
            targets = sorted({os.readlink(proc / pid / "fd" / fd) for fd in fds})
        except OSError:
            unreadable += 1
            continue
        devices = [t for t in targets if t.startswith(NVIDIA_DEVICE)]
        if devices:
            stuck.append(f"pid {pid} ({parsed[1]}) in D state on {', '.join(devices)}")
    return StuckScan(stuck=stuck, unreadable=unreadable)
