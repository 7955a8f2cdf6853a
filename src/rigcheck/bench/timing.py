"""Timers for measurements inside a worker, and the time taken across ranks.

On CPU (gloo): ranks meet at a barrier, then ``time.perf_counter`` brackets each repetition. On a GPU
(NCCL): CUDA events recorded on the current stream bracket each repetition, read after one
``torch.cuda.synchronize`` (nccl-tests also times on the device's stream, not the host's call).

"Time taken across ranks" (STYLE.md, "Measurements"): a repetition is as slow as its slowest rank, so
each repetition's time is the max over ranks (one ``all_reduce(MAX)`` of every repetition's time at the
end, so the reduction itself is not timed). Rates are computed from these times, never averaged from
per-rank rates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rigcheck.bench.env import require_torch

PERF_COUNTER = "perf_counter"
CUDA_EVENTS = "cuda_events"


def timer_name(cuda: bool) -> str:
    """The timer label recorded in a result's method."""
    return CUDA_EVENTS if cuda else PERF_COUNTER


def _is_cuda(device: Any) -> bool:
    return getattr(device, "type", str(device)) == "cuda"


def max_across_ranks(times_s: Sequence[float], device: Any) -> list[float]:
    """Each repetition's time, the max over every rank of the default process group (identity alone)."""
    torch: Any = require_torch()
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return [float(t) for t in times_s]
    tensor = torch.tensor(list(times_s), dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return [float(t) for t in tensor.tolist()]


def _barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def time_repetitions(step: Callable[[], object], *, warmup: int, repeats: int, device: Any) -> list[float]:
    """Run ``step`` ``warmup`` times untimed, then ``repeats`` times timed; seconds per repetition on this rank.

    CPU: a barrier before each repetition, so all ranks start together, and perf_counter around it.
    CUDA: one barrier before the timed repetitions, then events recorded around each step on the current
    stream, queued back to back as nccl-tests does; one synchronize at the end. (A barrier per repetition
    would drain the stream each time, so the host's launch time would be counted in every small message.)
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup):
        step()
    if not _is_cuda(device):
        times: list[float] = []
        for _ in range(repeats):
            _barrier()
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return times
    torch: Any = require_torch()
    torch.cuda.synchronize(device)
    _barrier()
    pairs = []
    for _ in range(repeats):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        step()
        end.record()
        pairs.append((begin, end))
    torch.cuda.synchronize(device)
    return [begin.elapsed_time(end) / 1e3 for begin, end in pairs]


def time_across_ranks(step: Callable[[], object], *, warmup: int, repeats: int, device: Any) -> list[float]:
    """Seconds per timed repetition, each the slowest rank's (the figure rates are computed from)."""
    return max_across_ranks(time_repetitions(step, warmup=warmup, repeats=repeats, device=device), device)
