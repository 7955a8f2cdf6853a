"""How long `rigcheck verify --level prolog` takes, wall clock, beside `rigcheck doctor` (its passive part alone) in
the same run (issue #29).

Targets: within 15 s on a 2-core machine with `--cpu` (four launches' worth of CPU ranks on two cores), within 10 s
on an 8-GPU node (`--gpu`). The run's own budget (10 s) counts the steps' time; the workers' set-up is counted
apart, so the wall time is what a Slurm prolog waits.

Run:  python benchmarks/prolog_time.py [--gpu] [--runs N]
Prints the medians; exits 1 when the prolog's misses its target.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _wall(argv: list[str]) -> tuple[float, dict[str, object] | None]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rigcheck", *argv], capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    try:
        return took, json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"rigcheck {' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="on this machine's GPUs (default: --cpu ranks)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    prolog = ["verify", "--level", "prolog", "--json", *([] if args.gpu else ["--cpu"])]
    walls, doctors, inside = [], [], []
    for _ in range(args.runs):  # taking turns, so a load that comes and goes weighs on both alike
        took, doc = _wall(prolog)
        walls.append(took)
        inside.append(float(doc["elapsed_s"]) if doc else float("nan"))  # type: ignore[arg-type]
        doctors.append(_wall(["doctor", "--json"])[0])
    target = 10.0 if args.gpu else 15.0
    wall = statistics.median(walls)
    print(
        f"verify --level prolog{'' if args.gpu else ' --cpu'}: {wall:.2f} s wall (median of {args.runs}), "
        f"{statistics.median(inside):.2f} s inside its budget; target <= {target:.0f} s"
    )
    print(f"doctor (the passive checks alone), same run: {statistics.median(doctors):.2f} s wall")
    return 0 if wall <= target else 1


if __name__ == "__main__":
    sys.exit(main())
