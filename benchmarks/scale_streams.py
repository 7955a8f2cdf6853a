"""How `burn --analyze` grows with the trace's length, beside csv.reader on the same file (issue #13).

Target: `burn --analyze` of a 1 h 8-GPU 10 Hz trace takes at most 3x the CPU time of a plain `csv.reader`
pass over the same file, in the same run, and peaks under 200 MiB; a 4 h trace (over the 64 MiB cap of the
one-record readers) is read. Traces are built from the real H100 trace
(tests/fixtures/corpus/telemetry/smi-lms-torch-bf16-burn.csv, one GPU, ~58 s): its rows repeated back to back
for the length asked and copied to 8 GPUs, timestamps advanced, so every row is a real reading.

Run:  python benchmarks/scale_streams.py [--family trace nccl] [--hours 1 4 24] [--log-mb 1 10 100] [--dir DIR]
      [--repeat N]

The NCCL-log family (--log-mb): logs of 1 to 100 MB built from the real NCCL logs
(tests/fixtures/corpus/nccl-log/ and tests/fixtures/nccl-extra/0*, the synthetic s* ones left out): each real log's
lines repeated back to back, nothing renumbered, with a plain training-output line (step, loss, lr, throughput)
after every few NCCL lines as real logs have. `nccl-log FILE --json` is timed beside two references reading the
same file in the same run: a line count over the bytes, and `l.split()` of every line.

Each command runs as a child; its CPU time (user + system) and peak memory (ru_maxrss) come from os.wait4 of
that child alone. Each runs --repeat times (default 3), the commands taking turns so that a change in the load of
a shared machine falls on all of them; the median CPU and wall time and the highest peak are printed.
`pandas.read_csv` is timed too where pandas is installed. The last lines fit time and memory against the rows (the
exponent of a power law: 1 is linear, 0 flat). Exits 1 when the 1 h target is missed. (Kept apart from
benchmarks/scale.py, the doctor/topo sizes, so the two can be edited side by side.)
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
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
NCCL_LOGS = sorted((ROOT / "tests/fixtures/corpus/nccl-log").glob("*.txt")) + sorted(
    (ROOT / "tests/fixtures/nccl-extra").glob("0*.txt")
)
LINE_COUNT = "import sys\nsum(1 for _ in open(sys.argv[1], 'rb'))\n"
LINE_SPLIT = "import sys\nfor line in open(sys.argv[1], errors='replace'): line.split()\n"
TRAIN_EVERY = 4  # NCCL lines between two training-output lines


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


def build_nccl_log(mb: float, out: Path) -> int:
    """Write a log of about ``mb`` MiB from the real NCCL logs; returns its lines."""
    real = [line for log in NCCL_LOGS for line in log.read_bytes().decode(errors="replace").splitlines()]
    target = int(mb * 2**20)
    written = count = step = 0
    with out.open("w") as fh:
        while written < target:
            for k, line in enumerate(real):
                chunk = line + "\n"
                if k % TRAIN_EVERY == TRAIN_EVERY - 1:
                    step += 1
                    chunk += (
                        f"[rank0] step {step:>7} | loss {2.0 + 1.0 / step:.4f} | lr 3.00e-04 | "
                        f"grad_norm {0.5 + (step % 97) / 100:.3f} | tokens/s {41000 + step % 1000}\n"
                    )
                    count += 1
                fh.write(chunk)
                written += len(chunk.encode())
                count += 1
                if written >= target:
                    break
    return count


def print_row(
    label: str, count: int, size: float, name: str, measured: tuple[float, float, float], *, ref: float
) -> None:
    """One line of the table: the file, the command, its wall, CPU and peak, and its CPU over the reference's."""
    wall, cpu, peak = measured
    ratio = cpu / ref if ref else float("nan")
    print(f"{label:>8} {count:>10,} {size:>7.0f} | {name:<16} {wall:>8.2f} {cpu:>8.2f} {peak:>9.0f} {ratio:>9.2f}")


def print_growth(results: dict[str, list[tuple[int, float, float]]], unit: str) -> None:
    """The fitted exponents of CPU and peak memory against ``unit``."""
    print(f"\ngrowth with the {unit} (exponent of a power law; 1 linear, 0 flat):")
    for name, points in results.items():
        xs = [float(r) for r, _, _ in points]
        print(
            f"  {name:<16} CPU ~ {unit}^{fit(xs, [c for _, c, _ in points]):.2f}   "
            f"peak memory ~ {unit}^{fit(xs, [p for _, _, p in points]):.2f}"
        )


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


def run_median(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, float, float]]:
    """Each command ``repeat`` times, in turns: its median wall and CPU time and its highest peak."""
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(max(1, repeat)):
        for name, argv in commands.items():
            runs[name].append(run(argv))
    return {
        name: (
            statistics.median(w for w, _, _ in triples),
            statistics.median(c for _, c, _ in triples),
            max(p for _, _, p in triples),
        )
        for name, triples in runs.items()
    }


def fit(xs: list[float], ys: list[float]) -> float:
    """The exponent b of y = a * x**b, least squares in log-log."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / den if den else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", nargs="+", choices=["trace", "nccl"], default=["trace", "nccl"])
    parser.add_argument("--hours", type=float, nargs="*", default=[1.0, 4.0])
    parser.add_argument("--log-mb", type=float, nargs="*", default=[1.0, 10.0], help="NCCL-log sizes in MiB")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the traces (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (the median is printed)")
    args = parser.parse_args()
    import importlib.util

    has_pandas = importlib.util.find_spec("pandas") is not None
    tmp = tempfile.TemporaryDirectory() if args.dir is None else None
    folder = Path(tmp.name) if tmp is not None else args.dir
    folder.mkdir(parents=True, exist_ok=True)
    hours_list = args.hours if "trace" in args.family else []
    log_mbs = args.log_mb if "nccl" in args.family else []
    if hours_list:
        print(
            f"{'trace':>8} {'rows':>10} {'MiB':>7} | {'command':<16} {'wall s':>8} {'CPU s':>8} "
            f"{'peak MiB':>9} {'CPU / csv':>9}"
        )
    results: dict[str, list[tuple[int, float, float]]] = {}
    log_results: dict[str, list[tuple[int, float, float]]] = {}
    ok = True
    try:
        for hours in hours_list:
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
            measured = run_median(commands, args.repeat)
            ref_cpu = measured["csv.reader"][1]
            for name, triple in measured.items():
                print_row(f"{hours:g}h", rows, size, name, triple, ref=ref_cpu)
                results.setdefault(name, []).append((rows, triple[1], triple[2]))
            if hours == 1.0:
                _, cpu, peak = measured["burn --analyze"]
                ok = cpu <= CPU_RATIO_TARGET * ref_cpu and peak < PEAK_MIB_TARGET
            path.unlink()
        if hours_list and log_mbs:
            print()
        if log_mbs:
            print(
                f"{'log':>8} {'lines':>10} {'MiB':>7} | {'command':<16} {'wall s':>8} {'CPU s':>8} "
                f"{'peak MiB':>9} {'CPU/count':>9}"
            )
        for mb in log_mbs:
            path = folder / f"nccl-{mb:g}mb.log"
            lines = build_nccl_log(mb, path)
            size = path.stat().st_size / 2**20
            commands = {
                "line count": [sys.executable, "-c", LINE_COUNT, str(path)],
                "split lines": [sys.executable, "-c", LINE_SPLIT, str(path)],
                "nccl-log --json": [sys.executable, "-m", "rigcheck", "nccl-log", str(path), "--json"],
            }
            measured = run_median(commands, args.repeat)
            ref_cpu = measured["line count"][1]
            for name, triple in measured.items():
                print_row(f"{mb:g}MB", lines, size, name, triple, ref=ref_cpu)
                log_results.setdefault(name, []).append((lines, triple[1], triple[2]))
            path.unlink()
    finally:
        if tmp is not None:
            tmp.cleanup()
    if len(hours_list) > 1:
        print_growth(results, "rows")
    if len(log_mbs) > 1:
        print_growth(log_results, "lines")
    if 1.0 in hours_list:
        print(
            f"\n1 h target (CPU <= {CPU_RATIO_TARGET:g}x csv.reader, peak < {PEAK_MIB_TARGET:g} MiB): "
            + ("met" if ok else "MISSED")
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
