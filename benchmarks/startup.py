"""`rigcheck doctor --from <8-GPU snapshot>` against a minimal app on the same stack (issue #26).

The minimal app is what any command that reads a file, validates it with pydantic and draws a rich table must
load: one typer command taking a file, one pydantic model validated per GPU of the same snapshot, one rich
table printed. It is written to a temporary script and run by the same interpreter. Target: rigcheck's median
wall time is at most 1.3x the minimal app's, both measured in the same run.

Run:  python benchmarks/startup.py [--runs N] [--no-compile] [SNAPSHOT]

rigcheck's modules are byte-compiled first (`python -m compileall`): with PYTHONDONTWRITEBYTECODE set, or a
fresh editable install, every start would otherwise compile them again, which an installed copy does not. Each
command runs once to warm the page cache, then N times (default 10), the two taking turns so that a load that
comes and goes on a shared machine weighs on both alike. Prints both medians (wall, and CPU: user + system,
which a busy machine sways far less) and the ratios; exits 1 when the wall-time ratio misses the target.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

# The timing loop is startup_speed.py's (issue #9's benchmark, beside this one): one way of timing a start.
from startup_speed import DEFAULT_SNAPSHOT, medians, rigcheck_argv

TARGET_RATIO = 1.3

MINIMAL_APP = '''\
"""The least a command on rigcheck's stack loads: typer, one pydantic model, one rich table."""
import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table


class Gpu(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int
    name: str | None = None
    power_draw_w: float | None = None
    temp_c: float | None = None


def show(source: Annotated[Path, typer.Option("--from")]) -> None:
    gpus = [Gpu.model_validate(g) for g in json.loads(source.read_text())["gpus"]]
    table = Table("GPU", "name", "power W", "temp C")
    for g in gpus:
        table.add_row(str(g.index), g.name or "?", str(g.power_draw_w), str(g.temp_c))
    Console().print(table)


if __name__ == "__main__":
    typer.run(show)
'''


def finishes(argv: list[str]) -> None:
    """One run that must end as a finished doctor run does (exit 0, or 1 when it finds a problem), so that the
    timings are not those of a command failing fast."""
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-400:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, default=DEFAULT_SNAPSHOT)
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command (after one warm-up)")
    parser.add_argument("--no-compile", action="store_true", help="do not byte-compile rigcheck's modules first")
    args = parser.parse_args()

    if not args.no_compile:
        import rigcheck

        package = Path(rigcheck.__file__).parent
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
        print(f"byte-compiled {package} first (python -m compileall)")
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "minimal_app.py"
        app.write_text(MINIMAL_APP)
        minimal = [sys.executable, str(app), "--from", str(args.snapshot)]
        doctor = [*rigcheck_argv(), "doctor", "--from", str(args.snapshot)]
        finishes(minimal)
        finishes(doctor)
        base, rig = medians([minimal, doctor], args.runs)
    wall_ratio = rig.wall_s / base.wall_s
    cpu_ratio = rig.cpu_s / base.cpu_s if base.cpu_s else float("nan")
    width = 44
    print(f"median of {args.runs} interleaved runs after one warm-up; target: wall time <= {TARGET_RATIO}x the app")
    print(f"{'command':<{width}} {'wall s':>7} {'cpu s':>7}")
    print(f"{'minimal app (typer + pydantic + rich table)':<{width}} {base.wall_s:>7.3f} {base.cpu_s:>7.3f}")
    print(f"{'rigcheck doctor --from ' + args.snapshot.name:<{width}} {rig.wall_s:>7.3f} {rig.cpu_s:>7.3f}")
    verdict = "pass" if wall_ratio <= TARGET_RATIO else "FAIL"
    print(f"ratio: wall {wall_ratio:.2f}x, cpu {cpu_ratio:.2f}x ({verdict})")
    return 0 if verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
