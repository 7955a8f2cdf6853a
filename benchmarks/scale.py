"""How rigcheck grows with the size of its input: real corpus files grown to larger machines (issue #13).

Each input family builds its inputs from one real file, runs a rigcheck command on each size in a child
process and, beside it in the same run, a reference that reads the same file (so a busy machine sways both
alike), and prints per size: wall and CPU time, the child's peak memory (its own ``ru_maxrss``, from
``os.wait4``), the input's size, then the fitted growth exponent of rigcheck's CPU time against the input's
bytes. An exponent near 1 means rigcheck grows as its input does; 2 would be quadratic in the input.

Families (one function each, sharing :func:`print_table`):
- ``doctor-snapshot``: ``doctor --from`` a snapshot grown from tests/fixtures/snapshots/healthy-8x-h100.json
  (8 → 512 GPUs: the GPUs copied with new indices and bus ids, a pair record for every GPU pair), reference
  ``json.load`` of the same file. Targets (issue #13): under 3 s at 512 GPUs and under 20x the 8-GPU time.
- ``doctor-topo``: ``doctor --from`` a `nvidia-smi topo -m` grown from the real 8x H100 table
  (tests/fixtures/corpus/topo/007-…), 8 → 256 GPUs, reference: reading the file and splitting every line on
  whitespace. Target: under 2 s at 256 GPUs.

Run:  python benchmarks/scale.py [--family NAME ...] [--max-gpus N] [--runs N]

Each size runs ``--runs`` times (default 3) and the median is shown. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT_8 = ROOT / "tests" / "fixtures" / "snapshots" / "healthy-8x-h100.json"
TOPO_8 = ROOT / "tests" / "fixtures" / "corpus" / "topo" / "007-8xh100-nv18-2numa-no-nics-spaces.txt"


def rigcheck_argv() -> list[str]:
    """The installed console script, as a user runs it; else the module through this interpreter."""
    script = Path(sys.executable).with_name("rigcheck")
    if script.is_file():
        return [str(script)]
    found = shutil.which("rigcheck")
    return [found] if found else [sys.executable, "-m", "rigcheck"]


# ---------------------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float  # the child's user + system time: a busy (shared) machine sways it far less than wall time
    peak_mib: float  # the child's own peak resident memory


def run_child(argv: list[str]) -> Run:
    """One run of ``argv`` with its own resource usage (os.wait4: RUSAGE_CHILDREN would mix the children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):  # doctor exits 1 when it finds a problem: still a finished run
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err.strip()[-400:]}")
    # ru_maxrss is KiB on Linux.
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def median_run(argv: list[str], runs: int) -> Run:
    got = [run_child(argv) for _ in range(runs)]
    return Run(
        statistics.median(r.wall_s for r in got),
        statistics.median(r.cpu_s for r in got),
        max(r.peak_mib for r in got),
    )


@dataclass(frozen=True)
class Row:
    gpus: int
    input_mib: float
    rigcheck: Run
    reference: Run


def growth(xs: list[float], ys: list[float]) -> float | None:
    """The exponent k of the least-squares fit y = c * x^k (on logs); None with fewer than two points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def print_table(title: str, command: str, reference: str, rows: list[Row]) -> None:
    """The table every family prints: one line per size, then the fitted growth of rigcheck and the reference."""
    print(f"\n{title}\n  rigcheck: {command}\n  reference: {reference}")
    head = (
        f"{'GPUs':>5} {'input MiB':>9} | {'wall s':>7} {'CPU s':>7} {'peak MiB':>8} | "
        f"{'ref wall':>8} {'ref CPU':>7} {'ref MiB':>7} | {'CPU ratio':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = r.rigcheck.cpu_s / r.reference.cpu_s if r.reference.cpu_s > 0 else float("nan")
        print(
            f"{r.gpus:>5} {r.input_mib:>9.2f} | {r.rigcheck.wall_s:>7.2f} {r.rigcheck.cpu_s:>7.2f} "
            f"{r.rigcheck.peak_mib:>8.0f} | {r.reference.wall_s:>8.2f} {r.reference.cpu_s:>7.2f} "
            f"{r.reference.peak_mib:>7.0f} | {ratio:>9.1f}"
        )
    # Growth against the input's bytes (the input itself holds N² pairs). The fixed start-up cost (~0.3 s)
    # flattens the small sizes, so the fit uses only the sizes whose time is at least twice the smallest one's.
    base = rows[0].rigcheck.cpu_s if rows else 0.0
    big = [r for r in rows if r.rigcheck.cpu_s >= 2 * base] or rows
    k = growth([r.input_mib for r in big], [r.rigcheck.cpu_s for r in big])
    k_gpus = growth([float(r.gpus) for r in big], [r.rigcheck.cpu_s for r in big])
    base_ref = rows[0].reference.cpu_s if rows else 0.0
    big_ref = [r for r in rows if r.reference.cpu_s >= 2 * base_ref] or rows
    k_ref = growth([r.input_mib for r in big_ref], [r.reference.cpu_s for r in big_ref])

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.2f}"

    print(
        f"growth (CPU time ~ size^k over the sizes past start-up): rigcheck k={fmt(k)} against input bytes "
        f"(k={fmt(k_gpus)} against GPUs); reference k={fmt(k_ref)} against input bytes"
    )


# ---------------------------------------------------------------------------------------------- inputs


def _bus_id(i: int) -> str:
    return f"00000000:{(i // 32) % 256:02X}:{i % 32:02X}.0"


def grow_snapshot(src: dict[str, object], n: int) -> dict[str, object]:
    """The snapshot of an n-GPU machine built from a real 8-GPU one: GPU i copies GPU i % 8 with its own index,
    bus id and UUID; pair (a, b) copies the real pair of a % 8 and b % 8 (same position: the real 0-1 pair), as
    an NVSwitch domain of n GPUs would look; the `topo -m` table grows the same way."""
    snap = copy.deepcopy(src)
    gpus = src["gpus"]
    pairs = src["pairs"]
    assert isinstance(gpus, list)
    assert isinstance(pairs, list)
    m = len(gpus)
    real = {(p["a"], p["b"]): p for p in pairs}
    out_gpus = []
    paths: dict[str, object] = {}
    system = snap["system"]
    assert isinstance(system, dict)
    src_paths = system.get("pcie_paths") or {}
    for i in range(n):
        g = copy.deepcopy(gpus[i % m])
        old_bus = g.get("pci_bus_id")
        g["index"], g["pci_bus_id"] = i, _bus_id(i)
        g["uuid"] = f"GPU-{i:08x}-0000-0000-0000-000000000000"
        out_gpus.append(g)
        if old_bus in src_paths:
            path = copy.deepcopy(src_paths[old_bus])
            if path:
                path[0]["bdf"] = _bus_id(i)
            paths[_bus_id(i)] = path
    system["pcie_paths"] = paths
    out_pairs = []
    for a in range(n):
        for b in range(a + 1, n):
            ra, rb = a % m, b % m
            key = (min(ra, rb), max(ra, rb)) if ra != rb else (0, 1)
            p = dict(real[key])
            p["a"], p["b"] = a, b
            out_pairs.append(p)
    snap["gpus"], snap["pairs"] = out_gpus, out_pairs
    topo = src.get("topology")
    if isinstance(topo, dict):
        snap["topology"] = _grow_matrix(topo, n)
    return snap


def _grow_matrix(topo: dict[str, object], n: int) -> dict[str, object]:
    matrix = topo["matrix"]
    tgpus = topo["gpus"]
    assert isinstance(matrix, list)
    assert isinstance(tgpus, list)
    m = len(tgpus)

    def code(a: int, b: int) -> str:
        if a == b:
            return "X"
        ra, rb = a % m, b % m
        return str(matrix[ra][rb] if ra != rb else matrix[0][1])

    rows = []
    for i in range(n):
        row = dict(tgpus[i % m])
        row["index"] = i
        rows.append(row)
    return {
        "labels": [f"GPU{i}" for i in range(n)],
        "matrix": [[code(a, b) for b in range(n)] for a in range(n)],
        "gpus": rows,
        "nics": [],
        "legend": topo.get("legend", "new"),
    }


def grow_topo_text(text: str, n: int) -> str:
    """A tab-separated `nvidia-smi topo -m` of n GPUs from a real 8-GPU table: cell (a, b) is the real cell of
    (a % 8, b % 8) (same position: the real GPU0-GPU1 cell), each row keeps its real row's affinities."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    m = sum(1 for h in header if h.startswith("GPU"))
    rows = [line.split() for line in lines[1 : m + 1]]
    codes = [r[1 : m + 1] for r in rows]
    extra = [r[m + 1 :] for r in rows]
    tail = " ".join(header[m:])  # "CPU Affinity NUMA Affinity"
    out = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\t" + tail.replace("y N", "y\tN")]
    for a in range(n):
        cells = [("X" if a == b else codes[a % m][b % m] if a % m != b % m else codes[0][1]) for b in range(n)]
        out.append(f"GPU{a}\t" + "\t".join(" X " if c == "X" else c for c in cells) + "\t" + "\t".join(extra[a % m]))
    legend = text[text.find("Legend") :] if "Legend" in text else ""
    return "\n".join(out) + "\n\n" + legend


# ---------------------------------------------------------------------------------------------- families


def family(
    title: str,
    sizes: list[int],
    *,
    argv: Callable[[Path], list[str]],
    reference: Callable[[Path], list[str]],
    runs: int,
    workdir: Path,
) -> list[Row]:
    rows = []
    for n in sizes:
        path = workdir / f"{title}-{n}"
        # Written by a child: a child's ru_maxrss starts from its parent's memory at fork, so this process
        # stays small for the children it measures.
        subprocess.run([sys.executable, __file__, "--write", title, str(n), str(path)], check=True)
        run_child(argv(path))  # warm the page cache and the byte-code
        rows.append(
            Row(n, path.stat().st_size / 2**20, median_run(argv(path), runs), median_run(reference(path), runs))
        )
        print(f"  {title}: {n} GPUs done", file=sys.stderr)
    return rows


def write_snapshot(n: int, path: Path) -> None:
    path.write_text(json.dumps(grow_snapshot(json.loads(SNAPSHOT_8.read_text()), n)))


def write_topo(n: int, path: Path) -> None:
    path.write_text(grow_topo_text(TOPO_8.read_text(), n))


def doctor_snapshot(sizes: list[int], runs: int, workdir: Path) -> list[Row]:
    rows = family(
        "doctor-snapshot",
        sizes,
        argv=lambda p: [*rigcheck_argv(), "doctor", "--from", str(p)],
        reference=lambda p: [sys.executable, "-c", f"import json; json.load(open({str(p)!r}))"],
        runs=runs,
        workdir=workdir,
    )
    print_table(
        f"doctor --from a snapshot grown from {SNAPSHOT_8.name}",
        "rigcheck doctor --from SNAPSHOT",
        'python -c "import json; json.load(open(SNAPSHOT))"',
        rows,
    )
    return rows


def doctor_topo(sizes: list[int], runs: int, workdir: Path) -> list[Row]:
    split = "import sys; [line.split() for line in open(sys.argv[1])]"
    rows = family(
        "doctor-topo",
        sizes,
        argv=lambda p: [*rigcheck_argv(), "doctor", "--from", str(p)],
        reference=lambda p: [sys.executable, "-c", split, str(p)],
        runs=runs,
        workdir=workdir,
    )
    print_table(
        f"doctor --from a `topo -m` grown from {TOPO_8.name}",
        "rigcheck doctor --from TOPO",
        'python -c "[line.split() for line in open(TOPO)]"',
        rows,
    )
    return rows


# Targets (issue #13): name -> (family, GPUs, limit in seconds of wall time, limit as a multiple of the 8-GPU run)
TARGETS: dict[str, tuple[int, float, float | None]] = {
    "doctor-snapshot": (512, 3.0, 20.0),
    "doctor-topo": (256, 2.0, None),
}
WRITERS: dict[str, Callable[[int, Path], None]] = {"doctor-snapshot": write_snapshot, "doctor-topo": write_topo}
FAMILIES: dict[str, Callable[[list[int], int, Path], list[Row]]] = {
    "doctor-snapshot": doctor_snapshot,
    "doctor-topo": doctor_topo,
}
SIZES: dict[str, list[int]] = {
    "doctor-snapshot": [8, 16, 32, 64, 128, 256, 512],
    "doctor-topo": [8, 16, 32, 64, 128, 256],
}


def check_targets(name: str, rows: list[Row]) -> list[str]:
    gpus, limit_s, times = TARGETS[name]
    by = {r.gpus: r for r in rows}
    missed = []
    if gpus in by:
        r = by[gpus]
        if r.rigcheck.wall_s > limit_s:
            missed.append(f"{name}: {r.rigcheck.wall_s:.2f} s at {gpus} GPUs (target {limit_s} s)")
        if times is not None and min(by) in by and r.rigcheck.wall_s > times * by[min(by)].rigcheck.wall_s:
            missed.append(f"{name}: {gpus} GPUs took over {times:g}x the {min(by)}-GPU time")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="default: all")
    parser.add_argument("--max-gpus", type=int, default=None, help="stop at this many GPUs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", nargs=3, metavar=("FAMILY", "GPUS", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:  # the child that writes one input (see family())
        name, n, path = args.write
        WRITERS[name](int(n), Path(path))
        return 0
    missed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rigcheck-scale-") as tmp:
        for name in args.family or list(FAMILIES):
            sizes = [n for n in SIZES[name] if args.max_gpus is None or n <= args.max_gpus]
            rows = FAMILIES[name](sizes, args.runs, Path(tmp))
            missed += check_targets(name, rows)
    for line in missed:
        print(f"MISSED {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
