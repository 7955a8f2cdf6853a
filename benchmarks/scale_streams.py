"""How `burn --analyze` grows with the trace's length, beside csv.reader on the same file (issue #13).

Target: `burn --analyze` of a 1 h 8-GPU 10 Hz trace takes at most 3x the CPU time of a plain `csv.reader`
pass over the same file, in the same run, and peaks under 200 MiB; a 4 h trace (over the 64 MiB cap of the
one-record readers) is read. Traces are built from the real H100 trace
(tests/fixtures/corpus/telemetry/smi-lms-torch-bf16-burn.csv, one GPU, ~58 s): its rows repeated back to back
for the length asked and copied to 8 GPUs, timestamps advanced, so every row is a real reading.

Run:  python benchmarks/scale_streams.py [--hours 1 4 24] [--dir DIR]

Each command runs as a child; its CPU time (user + system) and peak memory (ru_maxrss) come from os.wait4 of
that child alone. `pandas.read_csv` is timed too where pandas is installed. The last lines fit time and
memory against the rows (the exponent of a power law: 1 is linear, 0 flat). Exits 1 when the 1 h target is
missed. (Kept apart from benchmarks/scale.py, the doctor/topo sizes, so the two can be edited side by side.)
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests/fixtures/corpus/telemetry/smi-lms-torch-bf16-burn.csv"
GPUS = 8
CPU_RATIO_TARGET = 3.0
PEAK_MIB_TARGET = 200.0
CSV_READER = "import csv, sys\nfor _ in csv.reader(open(sys.argv[1], newline='')): pass\n"
PANDAS = "import pandas, sys\npandas.read_csv(sys.argv[1], skipinitialspace=True)\n"


def build_trace(hours: float, out: Path) -> int:
    """Write an 8-GPU trace of ``hours`` from the real one; returns its rows."""
    lines = SOURCE.read_text().splitlines()
    header, rows = lines[0], [r.split(", ") for r in lines[1:] if r.strip()]
    stamps = [datetime.strptime(r[0], "%Y/%m/%d %H:%M:%S.%f") for r in rows]
    step = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    period = stamps[-1] - stamps[0] + step
    copies = math.ceil(hours * 3600 / period.total_seconds())
    count = 0
    with out.open("w") as fh:
        fh.write(header + "\n")
        for k in range(copies):
            shift = period * k
            for stamp, row in zip(stamps, rows, strict=True):
                when = (stamp + shift).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
                rest = ", ".join(row[2:])
                fh.write("".join(f"{when}, {g}, {rest}\n" for g in range(GPUS)))
                count += GPUS
    return count


def run(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({code}): {err[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def fit(xs: list[float], ys: list[float]) -> float:
    """The exponent b of y = a * x**b, least squares in log-log."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / den if den else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--dir", type=Path, default=None, help="where to write the traces (default: a temp dir)")
    args = parser.parse_args()
    import importlib.util

    has_pandas = importlib.util.find_spec("pandas") is not None
    tmp = tempfile.TemporaryDirectory() if args.dir is None else None
    folder = Path(tmp.name) if tmp is not None else args.dir
    folder.mkdir(parents=True, exist_ok=True)
    print(
        f"{'trace':>8} {'rows':>10} {'MiB':>7} | {'command':<16} {'wall s':>8} {'CPU s':>8} "
        f"{'peak MiB':>9} {'CPU / csv':>9}"
    )
    results: dict[str, list[tuple[int, float, float]]] = {}
    ok = True
    try:
        for hours in args.hours:
            path = folder / f"trace-{hours:g}h.csv"
            rows = build_trace(hours, path)
            size = path.stat().st_size / 2**20
            commands = {
                "csv.reader": [sys.executable, "-c", CSV_READER, str(path)],
                "burn --analyze": [sys.executable, "-m", "rigcheck", "burn", "--analyze", str(path), "--json"],
                # The page too: streamed, its plots thinned as the trace is read (memory flat as well).
                "burn ... --html": [
                    *(sys.executable, "-m", "rigcheck", "burn", "--analyze", str(path), "--json"),
                    *("--html", str(folder / "page.html")),
                ],
            }
            if has_pandas:
                commands["pandas.read_csv"] = [sys.executable, "-c", PANDAS, str(path)]
            measured = {name: run(argv) for name, argv in commands.items()}
            ref_cpu = measured["csv.reader"][1]
            for name, (wall, cpu, peak) in measured.items():
                ratio = cpu / ref_cpu if ref_cpu else float("nan")
                print(
                    f"{hours:>7g}h {rows:>10,} {size:>7.0f} | {name:<16} {wall:>8.2f} {cpu:>8.2f} "
                    f"{peak:>9.0f} {ratio:>9.2f}"
                )
                results.setdefault(name, []).append((rows, cpu, peak))
            if hours == 1.0:
                _, cpu, peak = measured["burn --analyze"]
                ok = cpu <= CPU_RATIO_TARGET * ref_cpu and peak < PEAK_MIB_TARGET
            path.unlink()
    finally:
        if tmp is not None:
            tmp.cleanup()
    if len(args.hours) > 1:
        print("\ngrowth with the rows (exponent of a power law; 1 linear, 0 flat):")
        for name, points in results.items():
            xs = [float(r) for r, _, _ in points]
            print(
                f"  {name:<16} CPU ~ rows^{fit(xs, [c for _, c, _ in points]):.2f}   "
                f"peak memory ~ rows^{fit(xs, [p for _, _, p in points]):.2f}"
            )
    if 1.0 in args.hours:
        print(
            f"\n1 h target (CPU <= {CPU_RATIO_TARGET:g}x csv.reader, peak < {PEAK_MIB_TARGET:g} MiB): "
            + ("met" if ok else "MISSED")
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
