"""Bandwidth formulas, written once. Source: nccl-tests doc/PERFORMANCE.md (NVIDIA), "Bus bandwidth".

algbw = bytes / time. busbw rescales algbw so that it is comparable to the hardware's peak link bandwidth,
whatever the number of ranks n:
    all-reduce:                busbw = algbw × 2(n−1)/n
    all-gather, reduce-scatter: busbw = algbw × (n−1)/n   (bytes = the total buffer, n × per-rank part)
    broadcast, reduce:          busbw = algbw
One rank moves nothing over any bus: busbw = 0 for every collective (the first two factors are 0 there
already; nccl-tests' broadcast factor of 1 presumes a second rank).
"""

from __future__ import annotations

from typing import Literal

Collective = Literal["allreduce", "allgather", "reducescatter", "broadcast"]

GB = 1e9  # GB/s means 1e9 bytes per second throughout rigcheck


def algbw_gbps(size_bytes: int, time_s: float) -> float:
    """Algorithm bandwidth: the bytes of the operation over its time, in GB/s."""
    if time_s <= 0:
        raise ValueError("time must be positive")
    return size_bytes / time_s / GB


def busbw_factor(op: Collective, world_size: int) -> float:
    """The nccl-tests factor that turns algbw into bus bandwidth for ``op`` over ``world_size`` ranks."""
    if world_size < 1:
        raise ValueError("world_size must be at least 1")
    n = world_size
    if n == 1:
        return 0.0
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in ("allgather", "reducescatter"):
        return (n - 1) / n
    return 1.0


def busbw_gbps(op: Collective, size_bytes: int, time_s: float, world_size: int) -> float:
    return algbw_gbps(size_bytes, time_s) * busbw_factor(op, world_size)


def matmul_tflops(m: int, n: int, k: int, time_s: float) -> float:
    """Dense matmul throughput: 2·m·n·k floating-point operations per product."""
    if time_s <= 0:
        raise ValueError("time must be positive")
    return 2 * m * n * k / time_s / 1e12
