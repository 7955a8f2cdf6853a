"""The wait-for analysis of `rigcheck fleet` at scale, and how well it names injected faults (issue #30).

1. Its cost: checks/fleet/waits.analyse_waits over 1,024 ranks x 200 iterations (128 nodes of 8 ranks, ten
   collectives of 20 iterations, tests/support/wait_sim.py's timelines with a slow GPU, a jittery rank and a slow
   host), the best of ``--repeat`` runs; beside it the reference taken in the same run on the same data: one
   pure-Python ``sorted`` of the 204,800 enter times (no numpy), what any reading of them costs at the least.
2. What a rank sends rank 0: the timing message (rigcheck.bench.fleet.timeline) of a rank that timed 200
   iterations, in bytes, and at 1,024 ranks.
3. Recall and false positives over the simulated fleets: the table of docs/fleet.md (``--table`` prints it
   alone), then ``--runs`` more runs of 16 nodes x 8 ranks with the model's noise and with harsher noise (healthy
   ranks hiccuping in 2-5% of iterations by 100-300 us).

Run:  python benchmarks/fleet_waits.py [--repeat 3] [--runs 150] [--table]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.support.wait_sim

from tests.support import wait_sim

from rigcheck.bench.fleet.timeline import Timed, Timeline
from rigcheck.checks.fleet.waits import analyse_waits

LIMIT_S = 2.0  # the bound for 1,024 ranks x 200 iterations


def cost(repeat: int) -> None:
    fleet = wait_sim.Fleet(128, 8)
    fleet.faults = faults = wait_sim.draw_faults(fleet, wait_sim.KINDS, random.Random(1))
    series = wait_sim.timeline(fleet, 2)
    node_of = fleet.node_of()
    values = [t for s in series for enters in s.enters.values() for t in enters]
    analysis_s, sort_s = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        analysis = analyse_waits(series, node_of)
        analysis_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        sorted(values)
        sort_s.append(time.perf_counter() - started)
    ranks = len(node_of)
    print(f"analysis, {ranks} ranks x {analysis.iterations} iterations ({len(values):,} enter times):")
    print(f"  analyse_waits      {min(analysis_s):7.3f} s  (bound {LIMIT_S:g} s)")
    print(f"  reference: sorted  {min(sort_s):7.3f} s  (one pure-Python sort of the same enter times)")
    print(f"  ratio              {min(analysis_s) / min(sort_s):7.1f} x")
    named = sorted(f.message.split(":")[0] for f in analysis.findings)
    injected = [f"{f.kind} " + (f"rank {f.rank}" if f.rank is not None else f"node n{f.node:04d}") for f in faults]
    print(f"  named: {', '.join(named)}; injected: {', '.join(injected)}")


def message_size() -> None:
    rng = random.Random(3)
    timed = []
    start = 1000.0
    for size in range(10):
        step = 50e-6 * 200 ** (size / 9)
        enters = [start + i * 2 * step + rng.gauss(0, 5e-6) for i in range(20)]
        timed.append(Timed(f"allreduce {size}", 1024 << size, True, enters, [step] * 20))
        start = enters[-1] + 1.0
    message = Timeline(timed, offset_s=-0.0123).message()
    size = len(json.dumps(message))
    print(f"a rank's timing message, 200 iterations: {size:,} bytes (JSON, before sealing); 1,024 ranks: "
          f"{size * 1024 / 1e6:.1f} MB, read once by rank 0")  # fmt: skip


def simulation(runs: int) -> None:
    print("\n".join(wait_sim.markdown(wait_sim.table_rows())))
    for label, hiccup in (
        ("model noise", (wait_sim.HICCUP_P, wait_sim.HICCUP_S)),
        ("hiccups 2% x 300 us", (0.02, 300e-6)),
        ("hiccups 5% x 100 us", (0.05, 100e-6)),
    ):
        started = time.perf_counter()
        s = wait_sim.simulate(runs, nodes=16, per_node=8, seed=11, hiccup=hiccup)
        found = ", ".join(f"{k} {s.found[k]}/{s.faults[k]}" for k in wait_sim.KINDS)
        print(
            f"16 nodes x 8 ranks, {runs} runs, {label}: recall {s.recall:.1%} ({found}); healthy nodes named "
            f"{s.false}/{s.healthy_node_runs} ({s.false_rate:.2%}); {time.perf_counter() - started:.1f} s"
        )
        for miss in s.misses[:5]:
            print(f"  {miss}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--table", action="store_true", help="print the table of docs/fleet.md alone")
    args = parser.parse_args()
    if args.table:
        print("\n".join(wait_sim.markdown(wait_sim.table_rows())))
        return 0
    cost(args.repeat)
    message_size()
    simulation(args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
