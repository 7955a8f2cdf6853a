"""How long each phase of `rigcheck fleet --cpu` takes as the fleet grows, on this one machine (issue #15).

Two shapes, each on gloo over loopback:
- ranks: one torchrun launch, ``--standalone --nproc-per-node N`` (one node, N ranks);
- nodes: N torchrun launches of one process each, joined through a c10d rendezvous (N nodes, so the
  slow-node rounds run).
Beside each, the reference taken in the same run: the same torchrun launch of a bare script that starts a gloo
group, all-reduces one 64 MiB tensor and ends — what any torch.distributed job pays to start, so the difference
is what the fleet's own phases cost.

For each size it prints the wall time of the whole run and each phase's seconds from the document's
``phases``. Run:  python benchmarks/fleet_scale.py [--ranks 2 4 8] [--nodes 2 4] [--deadline 120]

``--search-table`` prints instead the slow-node search's table of docs/fleet.md: the real planner and judge over
the simulated fabric of tests/support/fleet_sim.py, 2 to 1,024 nodes (no process started; a few seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PHASES = ("rendezvous", "inspect", "gather", "collectives", "pairs", "report")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def _fleet(deadline: float) -> list[str]:
    return ["-m", "rigcheck", "fleet", "--cpu", "--json", "--deadline", str(deadline)]


BARE = (
    "import torch, torch.distributed as d\n"
    "d.init_process_group('gloo')\n"
    "d.all_reduce(torch.zeros(16 << 20))\n"
    "d.destroy_process_group()\n"
)


def reference_wall(launch: list[str], copies: int, script: str) -> float:
    """Wall seconds of ``copies`` torchrun launches of the bare script (the reference)."""
    started = time.monotonic()
    procs = [
        subprocess.Popen([*launch, script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(copies)
    ]
    for p in procs:
        p.communicate(timeout=600)
    return time.monotonic() - started


def run_ranks(n: int, deadline: float) -> tuple[float, dict[str, Any]]:
    started = time.monotonic()
    out = subprocess.run(
        _torchrun("--standalone", "--nproc-per-node", str(n), *_fleet(deadline)),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    wall = time.monotonic() - started
    if not out.stdout.strip():
        raise SystemExit(f"{n} ranks: no document (exit {out.returncode}): {out.stderr.strip()[-400:]}")
    return wall, json.loads(out.stdout)


def run_nodes(n: int, deadline: float) -> tuple[float, dict[str, Any]]:
    endpoint = f"127.0.0.1:{_free_port()}"
    common = ("--nnodes", str(n), "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint)
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            _torchrun(*common, *_fleet(deadline)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(n)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    wall = time.monotonic() - started
    docs = [json.loads(o) for o, _ in outs if o.strip()]
    if len(docs) != 1:
        raise SystemExit(f"{n} nodes: {len(docs)} documents; stderr: {outs[0][1].strip()[-400:]}")
    return wall, docs[0]


def phase_seconds(doc: dict[str, Any]) -> dict[str, float]:
    return {p["name"]: float(p["elapsed_s"]) for p in doc["phases"]}


def print_row(label: str, wall: float, reference: float, doc: dict[str, Any]) -> None:
    phases = phase_seconds(doc)
    cells = "  ".join(f"{phases[p]:6.2f}" if p in phases else f"{'-':>6}" for p in PHASES)
    rounds = len({p["round"] for p in doc["pairs"]})
    print(f"{label:<12} {wall:7.2f}  {reference:7.2f}  {cells}  {rounds:>6}  {doc['verdict']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="*", default=[2, 4, 8])
    parser.add_argument("--nodes", type=int, nargs="*", default=[2, 4])
    parser.add_argument("--deadline", type=float, default=120.0)
    parser.add_argument("--search-table", action="store_true", help="print the search's simulated table")
    args = parser.parse_args()
    if args.search_table:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.support.fleet_sim
        from tests.support import fleet_sim

        print("\n".join(fleet_sim.markdown(fleet_sim.table_rows())))
        return 0
    os.environ.pop("RIGCHECK_FLEET_TEST_SLOW_NODE", None)
    print(f"machine: {os.cpu_count()} CPUs; gloo over loopback; `rigcheck fleet --cpu`; seconds")
    header = f"{'fleet':<12} {'wall':>7}  {'bare':>7}  " + "  ".join(f"{p[:6]:>6}" for p in PHASES)
    print(header + "  rounds  verdict")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(BARE)
    try:
        for n in args.ranks:
            wall, doc = run_ranks(n, args.deadline)
            bare = reference_wall(_torchrun("--standalone", "--nproc-per-node", str(n)), 1, fh.name)
            print_row(f"1x{n} ranks", wall, bare, doc)
        for n in args.nodes:
            wall, doc = run_nodes(n, args.deadline)
            endpoint = f"127.0.0.1:{_free_port()}"
            launch = _torchrun(
                "--nnodes", str(n), "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint
            )
            print_row(f"{n} nodes", wall, reference_wall(launch, n, fh.name), doc)
    finally:
        os.unlink(fh.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
