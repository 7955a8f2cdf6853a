"""The ranks' clocks put on rank 0's, for the per-iteration enter times of `rigcheck fleet`.

Every rank times with ``time.perf_counter``: CLOCK_MONOTONIC on Linux, one clock for every process of a host. So
the ranks on rank 0's host need no estimate (offset 0, exactly), and the ranks of another host share one offset:
one rank of each other host (its lowest, the host's clock leader) estimates it at the start of the collectives,
NTP-style, in ``ROUNDS`` round trips with rank 0 over the gloo control group (point to point): the leader sends
its time t1, rank 0 answers with its own t2, the leader reads t4 on receipt; the offset is t2 - (t1 + t4) / 2 of
the round trip that took least (the one least delayed on either way; its error is at most half that round trip).
The leaders run their round trips one after the other with rank 0; every other rank goes on to the collectives'
first barrier and waits there. The leader sends its estimate to rank 0 in its timing message.

Test hook ``RIGCHECK_FLEET_TEST_SKEW=<rank>:<ms>`` (read by rigcheck.bench.fleet.run): that rank's clock reads
``ms`` later than its host's, as if it ran on another host; it becomes a clock leader of its own, so the estimate
runs (and is tested) on one machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from rigcheck.bench.env import require_torch

ROUNDS: Final = 8
TAG: Final = 7301  # the round trips' messages, apart from anything else sent point to point


def midpoint_offset(samples: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """(offset, round trip) of the round trip that took least; each sample is (t1, t2, t4): the leader's send,
    rank 0's answer, the leader's receipt. The offset is what to add to the leader's clock to read rank 0's."""
    if not samples:
        raise ValueError("no round trip")
    t1, t2, t4 = min(samples, key=lambda s: s[2] - s[0])
    return t2 - (t1 + t4) / 2, t4 - t1


def leaders(host_of: Mapping[int, str], skewed: Sequence[int] = ()) -> dict[int, int]:
    """Each rank's clock leader: 0 for the ranks of rank 0's host (its clock), else the lowest rank of its host; a
    rank with a skewed clock (the test hook) leads itself."""
    home = host_of.get(0)
    lowest: dict[str, int] = {}
    for rank in sorted(host_of):
        lowest.setdefault(host_of[rank], rank)
    out = {}
    for rank, host in host_of.items():
        if rank in skewed:
            out[rank] = rank
        elif host == home:
            out[rank] = 0
        else:
            out[rank] = lowest[host]
    return out


def exchange(rank: int, led: Sequence[int], clock: Callable[[], float]) -> float | None:
    """This rank's part of the round trips: rank 0 answers every leader in ``led`` (sorted), a leader estimates its
    offset (returned); any other rank does nothing (None). Raises RuntimeError from gloo (its timeout)."""
    torch: Any = require_torch()
    import torch.distributed as dist

    cell = torch.zeros(1, dtype=torch.float64)
    if rank == 0:
        for leader in sorted(set(led) - {0}):
            for _ in range(ROUNDS):
                dist.recv(cell, src=leader, tag=TAG)
                cell[0] = clock()
                dist.send(cell, dst=leader, tag=TAG)
        return None
    if rank not in led:
        return None
    samples = []
    for _ in range(ROUNDS):
        t1 = clock()
        cell[0] = t1
        dist.send(cell, dst=0, tag=TAG)
        dist.recv(cell, src=0, tag=TAG)
        samples.append((t1, float(cell[0]), clock()))
    return midpoint_offset(samples)[0]


def skewed_clock(skew_s: float) -> Callable[[], float]:
    """perf_counter, read ``skew_s`` later (the test hook); perf_counter itself without one."""
    if skew_s == 0.0:
        return time.perf_counter
    return lambda: time.perf_counter() + skew_s
