"""`rigcheck bench hostlink`: host→GPU and GPU→host copy bandwidth, per GPU, pinned and pageable host memory,
with this process bound to the GPU's NUMA-local CPUs and not, beside the PCIe link's theoretical rate.

Method: a 1 GiB host buffer and a 1 GiB device buffer; ``dev.copy_(host)`` (host→GPU) and
``host.copy_(dev)`` (GPU→host), ``non_blocking=True`` from pinned memory (a copy-engine DMA, as nvbandwidth's
``*_memcpy_ce``), synchronous from pageable memory (the driver stages it through its own pinned buffers);
``iters`` copies between CUDA events per timed round, the median of ``repeats`` rounds; GB/s = bytes copied
once / time (1e9 bytes per second), as nvbandwidth counts them.

The GPUs are measured one after another, in this one process, rather than one worker per GPU at once: copies
of several GPUs at the same time share the host's memory bandwidth and, often, a PCIe switch or root port,
so concurrent figures would not be the GPU's own (nvbandwidth measures each GPU alone too); and no process
group is needed. For the bound run, the calling thread is bound (``os.sched_setaffinity``) to the CPUs local
to the GPU (NVML's CPU affinity in the snapshot, else sysfs ``local_cpulist``) before its host buffers are
allocated, so their pages are first touched, and placed, on that NUMA node; fresh buffers are allocated for
each binding (the earlier ones are kept alive so the pinned-memory cache cannot hand them back), and the
pinned-memory cache is emptied after each GPU.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rigcheck.bench.device.common import (
    GIB,
    allowed_cpus,
    pci_bdf,
    require_gpus,
    set_cpus,
    snapshot_gpu,
    sysfs_local_cpus,
    time_calls,
)
from rigcheck.bench.env import require_torch, software_versions
from rigcheck.bench.gpu_select import GpuPlacement, cuda_index, same_index_note
from rigcheck.cpulist import format_cpulist, parse_cpulist
from rigcheck.errors import UsageError
from rigcheck.facts.pcie import PCIE_SOURCE, gpu_pcie_link
from rigcheck.model.bench import HostlinkDocument, HostlinkRow, Method, reasons, row_head
from rigcheck.model.snapshot import Gpu, Snapshot

METHOD_VERSION = "hostlink-1"
DEFAULT_SIZE = GIB
DEFAULT_ITERS = 4
DIRECTIONS = ("h2d", "d2h")
MEMORIES = ("pinned", "pageable")
CHECK_BYTES = 1 << 16  # compared at both ends of the buffer after the copies


@dataclass(frozen=True)
class Binding:
    numa_bound: bool
    cpus: frozenset[int] | None  # None: leave the affinity as it is


def local_cpus(gpu: Gpu | None, bdf: str | None) -> tuple[set[int] | None, str]:
    """The CPUs local to a GPU and where that came from (NVML's affinity in the snapshot, else sysfs)."""
    if gpu is not None and gpu.cpu_affinity:
        try:
            cpus = parse_cpulist(gpu.cpu_affinity)
        except ValueError:
            cpus = set()
        if cpus:
            return cpus, "NVML CPU affinity"
    if bdf is not None:
        cpus_sysfs = sysfs_local_cpus(bdf)
        if cpus_sysfs:
            return cpus_sysfs, "sysfs local_cpulist"
    return None, "unknown"


def plan_bindings(local: set[int] | None, allowed: set[int], gpu: int) -> tuple[list[Binding], list[str]]:
    """The runs to make for one GPU: unbound always; NUMA-bound when that differs. Notes say why not."""
    runs = [Binding(numa_bound=False, cpus=None)]
    if local is None:
        return runs, [f"GPU {gpu}: its local CPUs are unknown (no NVML affinity, no sysfs local_cpulist): no bound run"]
    usable = local & allowed
    if not usable:
        return runs, [f"GPU {gpu}: none of its local CPUs ({format_cpulist(local)}) is allowed to this process"]
    if usable == allowed:
        return runs, [
            f"GPU {gpu}: every CPU this process may use is local to it (one NUMA node, or none reported): "
            "a bound run would be the same run"
        ]
    return [*runs, Binding(numa_bound=True, cpus=frozenset(usable))], []


def pcie_theoretical(gpu: Gpu | None) -> tuple[float | None, str | None]:
    """The link's theoretical rate per direction and its label ("Gen5 x16"), from the snapshot's record of the
    GPU (rigcheck.facts.pcie.gpu_pcie_link: the width it trained to, at the generation it runs under load)."""
    link = gpu_pcie_link(gpu)
    return (None, None) if link is None else (link.gbps, link.label)


def first_touch(torch: Any, host: Any) -> None:
    """Write every page of ``host`` from the calling thread alone, so that its pages land on the NUMA node of
    the CPUs this thread is bound to.

    A plain ``fill_`` of a large tensor runs on torch's intra-op (OpenMP) threads, which were created before
    the binding and keep the affinity they were created with (``sched_setaffinity`` binds only the calling
    thread): the pages of a pageable buffer would then be spread over every node. (Pinned buffers are placed
    by cudaHostAlloc in this thread already; the fill does no harm there.)
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        host.fill_(1)
    finally:
        torch.set_num_threads(threads)


def _measure(
    torch: Any, index: int, direction: str, host: Any, dev: Any, *, warmup: int, repeats: int, iters: int, pinned: bool
) -> tuple[list[float], bool]:
    device = torch.device("cuda", index)
    if direction == "h2d":
        host[:CHECK_BYTES].fill_(0x5A)
        host[-CHECK_BYTES:].fill_(0x5A)
        dev.fill_(0)

        def call() -> None:
            dev.copy_(host, non_blocking=pinned)

    else:
        dev.fill_(0xA5)
        host[:CHECK_BYTES].fill_(0)
        host[-CHECK_BYTES:].fill_(0)

        def call() -> None:
            host.copy_(dev, non_blocking=pinned)

    with torch.cuda.device(device):
        times = time_calls(torch, device, call, warmup=warmup, repeats=repeats, iters=iters)
        torch.cuda.synchronize(device)
    head, tail = dev[:CHECK_BYTES].cpu(), dev[-CHECK_BYTES:].cpu()
    correct = bool(torch.equal(head, host[:CHECK_BYTES]) and torch.equal(tail, host[-CHECK_BYTES:]))
    return times, correct


def run_hostlink(
    *,
    gpus: Sequence[int] | None = None,
    size_bytes: int = DEFAULT_SIZE,
    warmup: int = 1,
    repeats: int = 5,
    iters: int = DEFAULT_ITERS,
    numa: bool = True,
    snapshot: Snapshot,
    on_progress: Callable[[str], None] | None = None,
    placement: GpuPlacement | None = None,
) -> HostlinkDocument:
    """Host↔GPU copy bandwidth for each GPU (all by default), one GPU at a time in this process.

    ``gpus``: CUDA indices; ``placement`` (--gpus, instead): nvidia-smi indices, found among CUDA's devices by
    UUID, and the rows named by them. ``snapshot``: the machine, as the caller probed it (each GPU's local
    CPUs, NUMA node and PCIe link)."""
    torch: Any = require_torch()
    count = require_gpus(torch, "hostlink", hint="; there is no CPU version of a host-to-GPU copy")
    if placement is not None:
        if gpus:
            raise UsageError("--gpu (a CUDA index) and --gpus (nvidia-smi indices) both pick GPUs: give one")
        # (label, CUDA ordinal): the rows name the GPU as nvidia-smi does, CUDA is asked by its own number
        targets = [(i, cuda_index(torch, i, placement.uuids.get(i))) for i in placement.indices]
    else:
        chosen = list(gpus) if gpus else list(range(count))
        bad = [g for g in chosen if not 0 <= g < count]
        if bad:
            raise UsageError(f"no GPU {bad[0]}: torch sees GPUs 0..{count - 1}")
        targets = [(i, i) for i in chosen]
    if size_bytes < 2 * CHECK_BYTES:
        raise UsageError(f"hostlink size must be at least {2 * CHECK_BYTES} bytes")
    progress = on_progress or (lambda _m: None)
    method = Method(method_version=METHOD_VERSION, warmup=warmup, repeats=repeats, timer="cuda_events")
    original = allowed_cpus()
    rows: list[HostlinkRow] = []
    notes: list[str] = []
    for label, index in targets:
        bdf = pci_bdf(torch, index)
        record = snapshot_gpu(snapshot, bdf, label)
        name = str(torch.cuda.get_device_name(index))
        local, local_source = local_cpus(record, bdf)
        bindings, why = plan_bindings(local, original, label) if numa else ([Binding(False, None)], [])
        notes.extend(why)
        theoretical, link = pcie_theoretical(record)
        dev = torch.empty(size_bytes, dtype=torch.uint8, device=torch.device("cuda", index))
        keep: list[Any] = []
        for binding in bindings:
            try:
                if binding.cpus is not None:
                    set_cpus(set(binding.cpus))
                for memory in MEMORIES:
                    pinned = memory == "pinned"
                    host = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=pinned)
                    first_touch(torch, host)  # from this (possibly bound) thread: places the pages
                    keep.append(host)
                    for direction in DIRECTIONS:
                        progress(f"GPU {label} {direction} {memory}{' NUMA-bound' if binding.numa_bound else ''}")
                        times, correct = _measure(
                            torch,
                            index,
                            direction,
                            host,
                            dev,
                            warmup=warmup,
                            repeats=repeats,
                            iters=iters,
                            pinned=pinned,
                        )
                        head = row_head(
                            name=f"GPU {label} {direction} {memory}{' numa-bound' if binding.numa_bound else ''}",
                            unit="GB/s",
                            samples=[size_bytes / t / 1e9 for t in times],
                            method=method,
                            backend="cuda",
                            world_size=1,
                            sizes=[size_bytes],
                        )
                        fraction = head["median"] / theoretical if theoretical else None
                        rows.append(
                            HostlinkRow(
                                **head,
                                gpu=label,
                                device_name=name,
                                pci_bus_id=bdf,
                                direction=direction,
                                memory=memory,
                                numa_bound=binding.numa_bound,
                                cpus=format_cpulist(set(binding.cpus)) if binding.cpus is not None else None,
                                local_cpus=format_cpulist(local) if local else None,
                                local_cpus_source=local_source,
                                numa_node=record.numa_node if record is not None else None,
                                size_bytes=size_bytes,
                                iters=iters,
                                time_us_median=statistics.median(times) * 1e6,
                                pcie_link=link,
                                pcie_theoretical_gbps=theoretical,
                                correct=correct,
                                gbps=head["median"],
                                fraction_of_pcie=fraction,
                                missing=reasons(
                                    "the PCIe link's generation or width is not known",
                                    pcie_theoretical_gbps=theoretical,
                                    fraction_of_pcie=fraction,
                                ),
                            )
                        )
            finally:
                if binding.cpus is not None:
                    set_cpus(original)
        del keep, dev
        # Hand the pinned buffers back to the driver, not just to torch's pinned-memory cache: the next GPU's
        # runs would otherwise be served this GPU's blocks, placed on this GPU's NUMA node.
        # The public name (torch >= 2.9) first, then the private one older versions have.
        empty_host_cache = getattr(getattr(torch, "accelerator", None), "empty_host_cache", None) or getattr(
            torch._C, "_host_emptyCache", None
        )
        if empty_host_cache is not None:
            empty_host_cache()
    notes += [
        f"copies of {size_bytes} bytes, {iters} per timed round between CUDA events, median of {repeats} rounds; "
        "GB/s counts the bytes copied once, as nvbandwidth does",
        "pinned: non_blocking copy-engine DMA (nvbandwidth's *_memcpy_ce); pageable: synchronous, staged by the "
        "driver through pinned buffers, so usually well below pinned",
        "GPUs measured one at a time in this process: concurrent copies would share host memory and PCIe "
        "switches, and the figures would not be each GPU's own",
        "theoretical = PCIe rate per direction of the link from the snapshot (its current width at its max "
        f"generation: an idle link runs slower and speeds up under load), after line encoding only ({PCIE_SOURCE}); "
        "TLP/DLLP overheads leave real copies well below it",
    ]
    uuid_note = same_index_note(placement)
    if uuid_note is not None:
        notes.append(uuid_note)
    return HostlinkDocument(
        partial=False,
        error=None,
        method=method,
        backend="cuda",
        world_size=1,
        versions=software_versions(),
        snapshot=snapshot,
        results=rows,
        notes=notes,
        gpus=list(placement.indices) if placement is not None else None,
    )
