"""What the device benchmarks share: the worker-context protocol, a per-call timer, GPU checks, CPU lists.

torch is imported lazily (``rigcheck.bench.env.require_torch``) and typed ``Any``: this module is importable,
and its pure helpers testable, without it.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from rigcheck.bench.launcher import LaunchOutcome
from rigcheck.cpulist import parse_cpulist
from rigcheck.errors import UsageError
from rigcheck.facts.pcie import normalize_bdf
from rigcheck.model.bench import Backend, Method, Versions
from rigcheck.model.snapshot import Gpu, Snapshot

GIB = 1 << 30
MIB = 1 << 20


def is_cuda(device: Any) -> bool:
    return getattr(device, "type", str(device)) == "cuda"


def timer_label(device: Any) -> str:
    return "cuda_events" if is_cuda(device) else "perf_counter"


def time_calls(
    torch: Any,
    device: Any,
    call: Callable[[], object],
    *,
    warmup: int,
    repeats: int,
    iters: int = 1,
    before: Callable[[], object] | None = None,
) -> list[float]:
    """Seconds per ``call``: ``warmup`` untimed rounds, then ``repeats`` timed rounds of ``iters`` calls each.

    ``before`` runs ahead of every round, outside the timed region (the L2 flush of the matmul sweep).
    GPU: CUDA events recorded on the device's current stream bracket each round; every round is enqueued,
    then one synchronize reads them all (nothing on the host clock). CPU: ``time.perf_counter``.
    """
    if repeats < 1 or iters < 1:
        raise ValueError("repeats and iters must be at least 1")

    def round_() -> None:
        for _ in range(iters):
            call()

    for _ in range(warmup):
        if before is not None:
            before()
        round_()
    if not is_cuda(device):
        times: list[float] = []
        for _ in range(repeats):
            if before is not None:
                before()
            start = time.perf_counter()
            round_()
            times.append((time.perf_counter() - start) / iters)
        return times
    torch.cuda.synchronize(device)
    events = []
    for _ in range(repeats):
        if before is not None:
            before()
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        round_()
        end.record()
        events.append((begin, end))
    torch.cuda.synchronize(device)
    return [begin.elapsed_time(end) / 1e3 / iters for begin, end in events]


def cuda_device_count(torch: Any) -> int:
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def no_gpu_reason(torch: Any) -> str:
    """Why torch sees no CUDA GPU, in a few words."""
    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) is a CPU-only build"
    return "torch sees no CUDA device (no driver, or CUDA_VISIBLE_DEVICES hides them)"


def require_gpus(torch: Any, what: str, *, count: int = 1, hint: str = "", world_size: int | None = None) -> int:
    """The number of CUDA devices, or a one-line UsageError when there are fewer than ``count``
    (or fewer than the ``world_size`` asked for with --world-size)."""
    n = cuda_device_count(torch)
    if n == 0:
        raise UsageError(f"{what} needs an NVIDIA GPU; {no_gpu_reason(torch)}{hint}")
    if n < count:
        raise UsageError(f"{what} needs at least {count} NVIDIA GPUs; torch sees {n}{hint}")
    if world_size is not None and world_size > n:
        raise UsageError(f"--world-size {world_size} asks for more GPUs than torch sees ({n})")
    return n


def device_name(torch: Any, device: Any) -> str:
    if is_cuda(device):
        return str(torch.cuda.get_device_name(device))
    return platform.processor() or platform.machine() or "cpu"


def pci_bdf(torch: Any, index: int) -> str | None:
    """The sysfs-form PCI address of CUDA device ``index`` ("0000:1b:00.0"), from torch's device properties."""
    props = torch.cuda.get_device_properties(index)
    bus = getattr(props, "pci_bus_id", None)
    dev = getattr(props, "pci_device_id", None)
    if bus is None or dev is None:
        return None
    domain = getattr(props, "pci_domain_id", 0) or 0
    return f"{int(domain):04x}:{int(bus):02x}:{int(dev):02x}.0"


def sysfs_local_cpus(bdf: str, root: Path = Path("/")) -> set[int] | None:
    """The CPUs sysfs lists as local to a PCI device, or None where it cannot be read."""
    path = root / "sys" / "bus" / "pci" / "devices" / bdf / "local_cpulist"
    try:
        return parse_cpulist(path.read_text()) or None
    except (OSError, ValueError):
        return None


def allowed_cpus() -> set[int]:
    """The CPUs this process may run on (its cgroup / affinity mask)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def set_cpus(cpus: set[int]) -> None:
    """Bind the calling thread (pid 0) to ``cpus``."""
    os.sched_setaffinity(0, cpus)


def snapshot_gpu(snap: Snapshot, bdf: str | None, index: int) -> Gpu | None:
    """The snapshot's record of a CUDA device: matched by PCI address (CUDA and NVML may order GPUs
    differently), else by index when the address is unknown."""
    if bdf is not None:
        for g in snap.gpus:
            if g.pci_bus_id is None:
                continue
            try:
                if normalize_bdf(g.pci_bus_id) == bdf:
                    return g
            except ValueError:
                continue
        return None
    return snap.gpu(index)


class LaunchedHead(TypedDict):
    """The keys a document of a launched benchmark starts with (unpacked into its constructor)."""

    partial: bool
    error: str | None
    method: Method
    backend: Backend
    world_size: int
    versions: Versions
    snapshot: Snapshot | None


def launched_head(
    *,
    method_version: str,
    warmup: int,
    repeats: int,
    cpu: bool,
    world_size: int,
    outcome: LaunchOutcome,
    snapshot: Snapshot | None,
) -> LaunchedHead:
    """The head of the document of a benchmark run through the launcher (one worker per device)."""
    from rigcheck.bench.env import software_versions

    return LaunchedHead(
        partial=outcome.partial,
        error=outcome.error,
        method=Method(
            method_version=method_version,
            warmup=warmup,
            repeats=repeats,
            statistic="median",
            timer="perf_counter" if cpu else "cuda_events",
        ),
        backend="gloo" if cpu else "nccl",
        world_size=world_size,
        versions=software_versions(),
        snapshot=snapshot,
    )
