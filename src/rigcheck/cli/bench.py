"""`rigcheck bench`: the measurement commands, gathered from their modules when `bench` itself runs."""

from __future__ import annotations

import typer

from rigcheck.cli import bench_collectives, bench_device, bench_train

bench_app = typer.Typer(
    name="bench",
    help="Measure: collectives, matmul, memory and host-link bandwidth, P2P, NVMe, and the guide's gpt2 training run.",
    no_args_is_help=True,
)
bench_collectives.register(bench_app)
bench_device.register(bench_app)
bench_train.register(bench_app)
