"""How fast rigcheck starts: `--help` and `doctor --from <8-GPU snapshot>` against importing its own libraries.

Target (issue #9): `rigcheck --help` and `rigcheck doctor --from SNAPSHOT` each take at most 1.5x the time of
`python -c "import typer, rich, pydantic"` on the same machine in the same run: rigcheck's start-up is the
libraries it stands on and little of its own. Two floors show what the libraries alone cost (typer's help
machinery; the pydantic snapshot model); `nvitop --help` is shown where nvitop is installed, `nvidia-smi -q`
and a live `rigcheck doctor` where there is a driver. None of these has a target.

Run:  python benchmarks/startup_speed.py [--runs N] [--no-compile] [SNAPSHOT]

Every command runs once to warm the page cache, then N times (default 10), the commands taking turns; the
table shows each one's median wall time and its ratio to the reference (the target), and the same for CPU
time (user + system), which a busy machine sways far less. rigcheck's modules are byte-compiled first
(compileall): with PYTHONDONTWRITEBYTECODE set, or a fresh editable install, every start would otherwise
compile them again, which is not what a user's installed copy does. Exits 1 when a command misses its target.
"""

from __future__ import annotations

import argparse
import compileall
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SNAPSHOT = ROOT / "tests" / "fixtures" / "snapshots" / "healthy-8x-h100.json"
TARGET_RATIO = 1.5
ONE_MODEL = (
    "import typer, rich.console, rich.table, pydantic\n"
    "class One(pydantic.BaseModel):\n    x: int\n"
    "One.model_validate({'x': 1})"
)


@dataclass(frozen=True)
class Case:
    label: str
    argv: list[str]
    targeted: bool  # held to TARGET_RATIO x the reference


def rigcheck_argv() -> list[str]:
    """The installed console script, as a user runs it; else the module through this interpreter."""
    script = Path(sys.executable).with_name("rigcheck")
    if script.is_file():
        return [str(script)]
    found = shutil.which("rigcheck")
    return [found] if found else [sys.executable, "-m", "rigcheck"]


@dataclass(frozen=True)
class Timing:
    wall_s: float
    cpu_s: float  # the child's user + system time: far less swayed than wall time by other work on the machine


def run_once(argv: list[str]) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timing(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def medians(commands: list[list[str]], runs: int) -> list[Timing]:
    """Median wall and CPU time of each command. The runs are interleaved (one of each per round), so a load
    that comes and goes on a shared machine weighs on every command alike, not on whichever ran then."""
    for argv in commands:
        run_once(argv)  # warm-up: page cache
    samples: list[list[Timing]] = [[] for _ in commands]
    for _ in range(runs):
        for argv, timings in zip(commands, samples, strict=True):
            timings.append(run_once(argv))
    return [
        Timing(statistics.median(t.wall_s for t in timings), statistics.median(t.cpu_s for t in timings))
        for timings in samples
    ]


def cases(snapshot: Path) -> list[Case]:
    rig = rigcheck_argv()
    out = [
        Case("rigcheck --help", [*rig, "--help"], targeted=True),
        Case(f"rigcheck doctor --from {snapshot.name}", [*rig, "doctor", "--from", str(snapshot)], targeted=True),
        Case(
            f"rigcheck doctor --from {snapshot.name} --json",
            [*rig, "doctor", "--from", str(snapshot), "--json"],
            targeted=True,
        ),
    ]
    # Floors, for reading the table: what the libraries alone cost for each kind of run. typer prints any
    # help through typer.rich_utils (which loads rich.markdown and rich.traceback); a snapshot is pydantic
    # models, built when rigcheck.model is imported.
    python = sys.executable
    out.append(Case("floor: python -c 'import typer.rich_utils'", [python, "-c", "import typer.rich_utils"], False))
    out.append(Case("floor: python -c 'import rigcheck.model'", [python, "-c", "import rigcheck.model"], False))
    # The least any command that validates its input with pydantic and draws a rich table can load: the
    # reference's libraries, rich's table, and one pydantic model built and used. pydantic loads its model
    # machinery (fields, schema generation, the plugin loader) at the first class, whatever the model.
    out.append(Case("floor: typer + rich.table + one pydantic model", [python, "-c", ONE_MODEL], False))
    nvitop = shutil.which("nvitop")
    if nvitop:
        out.append(Case("nvitop --help", [nvitop, "--help"], targeted=False))
    smi = shutil.which("nvidia-smi")
    if smi:
        out.append(Case("nvidia-smi -q", [smi, "-q"], targeted=False))
        out.append(Case("rigcheck doctor (live NVML)", [*rig, "doctor"], targeted=False))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, default=DEFAULT_SNAPSHOT)
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command (after one warm-up)")
    parser.add_argument("--no-compile", action="store_true", help="do not byte-compile rigcheck's modules first")
    args = parser.parse_args()

    if not args.no_compile:
        import rigcheck

        compileall.compile_dir(Path(rigcheck.__file__).parent, quiet=1)
    reference = Case(
        'python -c "import typer, rich, pydantic"', [sys.executable, "-c", "import typer, rich, pydantic"], False
    )
    timed = cases(args.snapshot)
    base, *results = medians([reference.argv, *(case.argv for case in timed)], args.runs)
    width = 56
    print(
        f"median of {args.runs} interleaved runs after one warm-up; target: wall time <= {TARGET_RATIO}x the reference"
    )
    print(f"{'command':<{width}} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6}  target")
    print(f"{reference.label + ' (reference)':<{width}} {base.wall_s:>7.3f} {1.0:>6.2f} {base.cpu_s:>7.3f} {1.0:>6.2f}")
    missed = []
    for case, timing in zip(timed, results, strict=True):
        ratio = timing.wall_s / base.wall_s
        mark = "-"
        if case.targeted:
            mark = "pass" if ratio <= TARGET_RATIO else "FAIL"
            if mark == "FAIL":
                missed.append(case.label)
        cpu_ratio = timing.cpu_s / base.cpu_s if base.cpu_s else float("nan")
        print(
            f"{case.label:<{width}} {timing.wall_s:>7.3f} {ratio:>6.2f} {timing.cpu_s:>7.3f} {cpu_ratio:>6.2f}  {mark}"
        )
    if not shutil.which("nvitop"):
        print("nvitop: not installed here; no row")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
