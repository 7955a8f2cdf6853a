"""Running rigcheck for the fault tests as a process of its own, where the fault is in a real file descriptor (a full
stdout, a closed pipe); in this process they take the `rigcheck` fixture (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "fixtures" / "snapshots"
# Everything a terminal may act on: C0 but newline and tab, DEL, C1.
CONTROL = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]))


def run_process(argv: list[str], *, stdout: int, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``rigcheck ARGV`` as a process of its own, stdout on the given descriptor (a real /dev/full, a pipe)."""
    return subprocess.run(
        [sys.executable, "-m", "rigcheck", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def fill(directory: Path) -> None:
    """Fill the file system ``directory`` is on, to the last byte."""
    for name, size in (("filler", 4096), ("filler-tail", 1)):  # whole pages, then what is left of the last
        with (directory / name).open("wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError:
                pass
