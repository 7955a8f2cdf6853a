"""How long `rigcheck doctor --from <8-GPU snapshot>` takes, beside a bare interpreter and `nvidia-smi -q`.

Target (issue #3): well under a second. Run:  python benchmarks/doctor_speed.py [--repeats N] [SNAPSHOT]
Prints a table: command, median and min/max wall time over N runs (after one warm-up run).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_SNAPSHOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "snapshots" / "healthy-8x-h100.json"


def time_command(cmd: list[str], repeats: int) -> list[float]:
    subprocess.run(cmd, capture_output=True, check=False)  # warm-up: page cache, .pyc files
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, default=DEFAULT_SNAPSHOT)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    cases: list[tuple[str, list[str]]] = [
        ("python -c pass (interpreter start)", [sys.executable, "-c", "pass"]),
        ("rigcheck --version", [sys.executable, "-m", "rigcheck", "--version"]),
        (
            f"rigcheck doctor --from {args.snapshot.name}",
            [sys.executable, "-m", "rigcheck", "doctor", "--from", str(args.snapshot)],
        ),
        (
            f"rigcheck doctor --from {args.snapshot.name} --json",
            [sys.executable, "-m", "rigcheck", "doctor", "--json", "--from", str(args.snapshot)],
        ),
    ]
    smi = shutil.which("nvidia-smi")
    if smi:
        cases.append(("nvidia-smi -q (reference)", [smi, "-q"]))
        cases.append(("rigcheck doctor (live NVML)", [sys.executable, "-m", "rigcheck", "doctor"]))

    print(f"{'command':<52} {'median s':>9} {'min s':>7} {'max s':>7}   (n={args.repeats})")
    for label, cmd in cases:
        t = time_command(cmd, args.repeats)
        print(f"{label:<52} {statistics.median(t):>9.3f} {min(t):>7.3f} {max(t):>7.3f}")
    if not smi:
        print("nvidia-smi -q: not on this machine (no NVIDIA driver); no reference row")


if __name__ == "__main__":
    main()
