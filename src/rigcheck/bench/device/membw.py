"""`rigcheck bench membw`: device-local copy bandwidth (``dst.copy_(src)`` within one device's memory).

Method (as nvbandwidth's ``device_local_copy``): a buffer is copied to another of the same size on the same
device; ``copy_gbps`` counts the bytes copied once (bytes / time). Every byte copied is read once and written
once, so the memory itself moves twice that: ``read_write_gbps`` = 2 × ``copy_gbps``, the figure comparable
with the datasheet memory bandwidth (``rigcheck.facts.catalog``, ``memory_bandwidth_gbps``).
Timing: ``iters`` copies back to back between CUDA events (CPU: ``time.perf_counter``), after ``warmup``
untimed rounds; the median over ``repeats`` rounds. 1 GiB on a GPU is far above any L2, so every copy goes to
device memory; the source holds a counting pattern and the destination is compared with it afterwards.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from rigcheck.bench.device.common import (
    GIB,
    MIB,
    device_name,
    is_cuda,
    launched_head,
    require_gpus,
    time_calls,
    timer_label,
)
from rigcheck.bench.env import require_torch
from rigcheck.bench.gpu_select import label_rows
from rigcheck.bench.launcher import WorkerContext, launch
from rigcheck.errors import UsageError
from rigcheck.facts import catalog
from rigcheck.model.bench import MembwDocument, MembwRow, Method, reasons, row_head
from rigcheck.units import exact_size

if TYPE_CHECKING:
    from rigcheck.bench.gpu_select import GpuPlacement
    from rigcheck.model.snapshot import Snapshot

METHOD_VERSION = "membw-1"
GPU_SIZES: tuple[int, ...] = (GIB,)
CPU_SIZES: tuple[int, ...] = (4 * MIB, 64 * MIB, 256 * MIB)
GPU_ITERS = 8
CPU_ITERS = 2
GPU_WARMUP_S = 1.0  # copies until then before timing: an idle GPU starts at its lowest clocks


@dataclass(frozen=True)
class MembwPayload:
    sizes: tuple[int, ...]
    warmup: int
    repeats: int
    iters: int
    warmup_s: float = 0.0  # device warm-up (seconds of copies) before the first size


def copy_rates(size_bytes: int, times_s: Sequence[float]) -> list[float]:
    """GB/s (1e9 bytes per second) of each timed copy, bytes counted once."""
    return [size_bytes / t / 1e9 for t in times_s]


def _copy_times(torch: Any, device: Any, size: int, payload: MembwPayload) -> tuple[int, list[float], bool]:
    """(bytes copied, seconds per copy, destination equal to source afterwards) for one size."""
    words = size // 8
    src = torch.arange(words, dtype=torch.int64, device=device)  # a counting pattern, checked afterwards
    dst = torch.empty_like(src)
    if is_cuda(device) and payload.warmup_s > 0:
        deadline = time.perf_counter() + payload.warmup_s
        while time.perf_counter() < deadline:
            for _ in range(payload.iters):
                dst.copy_(src)
            torch.cuda.synchronize(device)
    times = time_calls(
        torch, device, lambda: dst.copy_(src), warmup=payload.warmup, repeats=payload.repeats, iters=payload.iters
    )
    return words * 8, times, bool(torch.equal(dst, src))


def membw_worker(ctx: WorkerContext, payload: MembwPayload) -> None:
    """Time ``dst.copy_(src)`` for each size on ``ctx.device``; one row per size through ``ctx.report``."""
    torch: Any = require_torch()
    device = torch.device(ctx.device)
    cuda = is_cuda(device)
    if cuda:
        torch.cuda.set_device(device)
    elif ctx.world_size > 1:
        torch.set_num_threads(max(1, (torch.get_num_threads() or 1) // ctx.world_size))
    name = device_name(torch, device)
    spec = catalog.lookup(name) if cuda else None
    peak = spec.memory_bandwidth_gbps if spec is not None else None
    method = Method(
        method_version=METHOD_VERSION, warmup=payload.warmup, repeats=payload.repeats, timer=timer_label(device)
    )
    no_peak = "this GPU is not in rigcheck's catalog" if cuda else "no catalogue bandwidth for host memory"
    for size in payload.sizes:
        nbytes, times, correct = _copy_times(torch, device, size, payload)
        head = row_head(
            name=f"device-local copy {exact_size(nbytes)}",
            unit="GB/s",
            samples=copy_rates(nbytes, times),
            method=method,
            backend=ctx.backend,
            world_size=ctx.world_size,
            sizes=[nbytes],
        )
        read_write = 2 * head["median"]
        fraction = read_write / peak if peak else None
        r = MembwRow(
            **head,
            rank=ctx.rank,
            gpu=device.index if cuda else None,
            device_name=name,
            size_bytes=nbytes,
            iters=payload.iters,
            time_us_median=statistics.median(times) * 1e6,
            correct=correct,
            copy_gbps=head["median"],
            read_write_gbps=read_write,
            peak_memory_gbps=peak,
            peak_source=spec.source if (spec is not None and peak is not None) else None,
            fraction_of_peak=fraction,
            missing=reasons(no_peak, peak_memory_gbps=peak, fraction_of_peak=fraction),
        )
        ctx.progress(f"rank {ctx.rank}: copy {exact_size(nbytes)}: {r.copy_gbps:.1f} GB/s")
        ctx.report(r.model_dump())


def run_membw(
    *,
    cpu: bool = False,
    sizes: Sequence[int] | None = None,
    warmup: int | None = None,
    repeats: int | None = None,
    iters: int | None = None,
    world_size: int = 1,
    timeout_s: float = 600.0,
    snapshot: Snapshot | None,
    on_progress: Callable[[str], None] | None = None,
    placement: GpuPlacement | None = None,
) -> MembwDocument:
    """Device-local copy bandwidth on ``world_size`` devices (one worker each); the result document
    (``snapshot``: the machine, as the caller probed it)."""
    torch: Any = require_torch()
    if placement is not None:  # --gpus: one worker per GPU given (a world size of 1 is the default, not a choice)
        world_size = placement.world_size(None if world_size == 1 else world_size)
    if not cpu:
        require_gpus(torch, "membw", hint="; add --cpu to measure this CPU's memory instead", world_size=world_size)
    chosen = tuple(sizes) if sizes else (CPU_SIZES if cpu else GPU_SIZES)
    if any(s < 8 for s in chosen):
        raise UsageError("membw sizes must be at least 8 bytes")
    payload = MembwPayload(
        sizes=chosen,
        warmup=(1 if cpu else 2) if warmup is None else warmup,
        repeats=(5 if cpu else 10) if repeats is None else repeats,
        iters=(CPU_ITERS if cpu else GPU_ITERS) if iters is None else iters,
        warmup_s=0.0 if cpu else GPU_WARMUP_S,
    )
    outcome = launch(
        membw_worker,
        payload,
        world_size=world_size,
        cpu=cpu,
        timeout_s=timeout_s,
        env=placement.worker_env() if placement is not None else None,
        on_progress=on_progress,
    )
    notes = [
        f"dst.copy_(src) on one device, {payload.iters} copies per timed round, median of {payload.repeats} "
        "rounds; sizes rounded down to whole 8-byte words"
        + (f"; {payload.warmup_s:g} s of copies first, so the clocks have left idle" if payload.warmup_s else ""),
        "copy (GB/s) counts the bytes copied once, as nvbandwidth's device_local_copy; read+write (GB/s) = 2 × "
        "copy counts the read and the write, the traffic the memory sees",
        "peak = the datasheet memory bandwidth (rigcheck.facts.catalog, with its source), held against "
        "read+write: a ceiling that copies approach but do not reach (DRAM refresh, read/write turnarounds)",
    ]
    head = launched_head(
        method_version=METHOD_VERSION,
        warmup=payload.warmup,
        repeats=payload.repeats,
        cpu=cpu,
        world_size=world_size,
        outcome=outcome,
        snapshot=snapshot,
    )
    if placement is not None and placement.note:
        notes.append(placement.note)
    # a worker names its GPU by CUDA ordinal; with --gpus the rows name it by nvidia-smi index
    rows = label_rows(TypeAdapter(list[MembwRow]).validate_python(outcome.rows), placement)
    gpus = list(placement.indices) if placement is not None else None
    return MembwDocument(**head, results=rows, notes=notes, gpus=gpus)
