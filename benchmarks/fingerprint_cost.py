"""What the cross-GPU fingerprint adds to `rigcheck verify` (issue #28): its step's wall time beside the matmul
step's, both measured in the same run of verify.

Targets: <= 5 s for the fingerprint on four CPU ranks (`--cpu --gpus 0,1,2,3`), <= 30 s on an 8-GPU node at
level quick. The step's time as verify records it (``elapsed_s``) leaves out the workers' set-up (spawn, torch's
import, the process group), which verify counts apart; this prints both, and the whole run's wall time.

Run:  python benchmarks/fingerprint_cost.py [--gpu] [--runs N]
(--gpu: a live run at level quick on this machine's GPUs; default: four CPU ranks). Exits 1 when the median of
the fingerprint step plus its share of the set-up misses the target.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _one(gpu: bool) -> tuple[float, float, float, float]:
    """(fingerprint step s, matmul step s, set-up s of both, the run's wall s) of one verify run."""
    argv = [sys.executable, "-m", "rigcheck", "verify", "--only", "matmul,fingerprint", "--json"]
    argv += ["--level", "quick"] if gpu else ["--cpu", "--gpus", "0,1,2,3"]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"verify exited {done.returncode}: {done.stderr[-2000:]}")
    doc = json.loads(done.stdout)
    steps = {s["name"]: s["elapsed_s"] for s in doc["steps"]}
    setup = next((float(n.split(" took ")[1].split(" s")[0]) for n in doc["notes"] if n.startswith("set-up")), 0.0)
    return steps["fingerprint"], steps["matmul"], setup, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="a live run on this machine's GPUs (level quick)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [_one(args.gpu) for _ in range(args.runs)]
    fp, mm, setup, wall = (statistics.median(r[i] for r in runs) for i in range(4))
    target = 30.0 if args.gpu else 5.0
    added = fp + setup / 2  # two launched steps share the set-up note: half of it is the fingerprint's
    print(f"fingerprint step: {fp:.2f} s (median of {args.runs}); matmul step beside it: {mm:.2f} s")
    print(f"set-up of both launches: {setup:.2f} s; whole verify run: {wall:.2f} s")
    print(f"fingerprint with its half of the set-up: {added:.2f} s (target <= {target:.0f} s)")
    return 0 if added <= target else 1


if __name__ == "__main__":
    sys.exit(main())
