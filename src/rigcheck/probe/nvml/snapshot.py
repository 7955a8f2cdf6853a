"""The NVML probe: every GPU read in one pass (rigcheck.probe.nvml.device), then each GPU pair's link and
P2P status, the topology matrix as `nvidia-smi topo -m` would print it, and the driver's versions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from rigcheck.facts.legend import code_from_nvml, kind_of
from rigcheck.facts.pcie import normalize_bdf
from rigcheck.model.snapshot import Gpu, GpuPair, Missing, P2PStatus, Snapshot, Software, Source, TopoGpu, TopoMatrix
from rigcheck.probe.nvml.calls import NO_GPUS_LISTED, NoGpuError, NvmlFailure, real_library, start, stop
from rigcheck.probe.nvml.constants import P2P_CAPS, P2P_STATUS
from rigcheck.probe.nvml.device import read_gpu
from rigcheck.probe.nvml.library import NvmlLibrary, as_text, cuda_version_string, late
from rigcheck.probe.nvml.session import Session

log = logging.getLogger(__name__)

T = TypeVar("T")


def _bdf(bus_id: str | None) -> str | None:
    if bus_id is None:
        return None
    try:
        return normalize_bdf(bus_id)
    except ValueError:
        return None


def count_nvlinks(a: Gpu, b: Gpu, gpu_bus_ids: set[str]) -> int | None:
    """Active NVLinks joining two GPUs: direct links, else the links both have into NVSwitches.

    On an NVSwitch system (HGX/DGX) every link ends at a switch and `topo -m` prints NV<links> for
    every pair; a link counts as a switch link when NVML says so, or, where the driver cannot say,
    when its far end is no GPU of this machine. None when either GPU's links are unknown.
    """
    if a.nvlinks is None or b.nvlinks is None:
        return None
    b_bdf, a_bdf = _bdf(b.pci_bus_id), _bdf(a.pci_bus_id)
    direct = sum(1 for link in a.nvlinks if link.active and b_bdf and _bdf(link.remote_pci_bus_id) == b_bdf)
    if direct:
        return direct
    if a_bdf is None or b_bdf is None:
        return 0

    def switch_links(g: Gpu) -> int:
        n = 0
        for link in g.nvlinks or []:
            if not link.active:
                continue
            remote = _bdf(link.remote_pci_bus_id)
            if link.remote_device_type == "switch" or (
                link.remote_device_type is None and remote is not None and remote not in gpu_bus_ids
            ):
                n += 1
        return n

    return min(switch_links(a), switch_links(b))


def _pair_unreadable(pair: GpuPair, reason: Missing) -> GpuPair:
    for field in ("link", "kind", "nvlinks", "p2p_read", "p2p_write", "p2p_nvlink", "p2p_atomics"):
        pair.mark_missing(field, reason)
    return pair


def _read_pair(s: Session, a: Gpu, b: Gpu, handles: tuple[object, object], bus_ids: set[str]) -> tuple[GpuPair, bool]:
    """One GPU pair; returns (pair, whether a GPU got lost while reading it)."""
    lib = s.lib
    ha, hb = handles
    pair = GpuPair(a=a.index, b=b.index)
    level: int | None = None
    level_reason: Missing | None = None
    try:
        level = s.call(
            "nvmlDeviceGetTopologyCommonAncestor", lambda: lib.nvmlDeviceGetTopologyCommonAncestor(ha, hb), gpu=a.index
        )
    except NvmlFailure as failure:
        level_reason = failure.reason
        if failure.reason is Missing.GPU_LOST:
            return _pair_unreadable(pair, Missing.GPU_LOST), True
    nvlinks = count_nvlinks(a, b, bus_ids)
    pair.nvlinks = nvlinks
    if nvlinks is None:
        pair.mark_missing("nvlinks", a.missing.get("nvlinks") or b.missing.get("nvlinks") or Missing.ERROR)
    pair.link = code_from_nvml(level, nvlinks or 0)
    if pair.link is None:
        pair.mark_missing("link", level_reason or Missing.NOT_SUPPORTED)
        pair.mark_missing("kind", level_reason or Missing.NOT_SUPPORTED)
    else:
        pair.kind = kind_of(pair.link)
    for field, caps in P2P_CAPS:
        try:
            status = s.call(
                "nvmlDeviceGetP2PStatus",
                partial(late, lib, "nvmlDeviceGetP2PStatus", ha, hb, caps),
                gpu=a.index,
            )
        except NvmlFailure as failure:
            pair.mark_missing(field, failure.reason)
            if failure.reason is Missing.GPU_LOST:
                return pair, True
            continue
        setattr(pair, field, P2P_STATUS.get(status, P2PStatus.UNKNOWN))
    return pair, False


def _topology(gpus: list[Gpu], pairs: list[GpuPair], gpu_numa_ids: dict[int, str]) -> TopoMatrix:
    n = len(gpus)
    pos = {g.index: i for i, g in enumerate(gpus)}
    matrix = [["X" if i == j else "N/A" for j in range(n)] for i in range(n)]
    for p in pairs:
        code = p.link or "N/A"
        matrix[pos[p.a]][pos[p.b]] = code
        matrix[pos[p.b]][pos[p.a]] = code
    # topo -m prints N/A where it has no value; "new" because NVML's levels map to the new codes.
    return TopoMatrix(
        labels=[f"GPU{g.index}" for g in gpus],
        matrix=matrix,
        gpus=[
            TopoGpu(
                index=g.index,
                cpu_affinity=g.cpu_affinity or "N/A",
                numa_affinity=str(g.numa_node) if g.numa_node is not None else "N/A",
                gpu_numa_id=gpu_numa_ids.get(g.index, "N/A"),
            )
            for g in gpus
        ],
        legend="new",
    )


def _first(s: Session, attempts: Sequence[tuple[str, Callable[[], T]]]) -> T:
    """The first versioned symbol the driver has; re-raises the last failure."""
    for i, (name, fn) in enumerate(attempts):
        try:
            return s.call(name, fn)
        except NvmlFailure as failure:
            if failure.reason is not Missing.DRIVER_TOO_OLD or i + 1 == len(attempts):
                raise
    raise ValueError("no NVML function to try")


def _read_software(s: Session, software: Software) -> None:
    lib = s.lib
    for field, name, fn in (
        ("driver_version", "nvmlSystemGetDriverVersion", partial(late, lib, "nvmlSystemGetDriverVersion")),
        ("nvml_version", "nvmlSystemGetNVMLVersion", partial(late, lib, "nvmlSystemGetNVMLVersion")),
    ):
        try:
            setattr(software, field, as_text(s.call(name, fn)))
        except NvmlFailure as failure:
            software.mark_missing(field, failure.reason)
    cuda: int | None = None
    try:
        cuda = _first(
            s,
            [
                ("nvmlSystemGetCudaDriverVersion_v2", partial(late, lib, "nvmlSystemGetCudaDriverVersion_v2")),
                ("nvmlSystemGetCudaDriverVersion", partial(late, lib, "nvmlSystemGetCudaDriverVersion")),
            ],
        )
    except NvmlFailure as failure:
        software.mark_missing("cuda_driver_version", failure.reason)
    if cuda is not None:
        software.cuda_driver_version = cuda_version_string(int(cuda))


def _read_gpu_numa_id(s: Session, index: int, h: object) -> str | None:
    """topo -m's "GPU NUMA ID": only GPUs that are NUMA nodes themselves have one."""
    try:
        node = s.call("nvmlDeviceGetNumaNodeId", lambda: s.lib.nvmlDeviceGetNumaNodeId(h), gpu=index)
    except NvmlFailure:
        return None
    return str(node) if node >= 0 else None


def probe_nvml(nvml: NvmlLibrary | None = None, *, sysfs_root: Path | None = Path("/")) -> Snapshot:
    """Read every GPU through NVML (``nvml=None``: the real pynvml module).

    ``sysfs_root`` is where to find sysfs for the NUMA-node fallback (None: no fallback).
    Raises NoGpuError with a one-line message when NVML cannot start at all, or cannot count the GPUs.
    """
    lib = real_library() if nvml is None else nvml
    start(lib)
    try:
        return _probe(lib, sysfs_root)
    finally:
        stop(lib)


def _probe(lib: NvmlLibrary, sysfs_root: Path | None) -> Snapshot:
    s = Session(lib)
    snap = Snapshot(source=Source(kind="nvml"))
    _read_software(s, snap.software)
    try:
        count = s.call("nvmlDeviceGetCount", partial(late, lib, "nvmlDeviceGetCount"))
    except NvmlFailure as failure:
        raise NoGpuError(f"NVML could not count the GPUs: {failure.detail}", "error", failure.error) from None

    handles: dict[int, object] = {}
    lost: set[int] = set()
    gpu_numa_ids: dict[int, str] = {}
    for index in range(count):
        gpu, handle, gone = read_gpu(s, index, sysfs_root)
        snap.gpus.append(gpu)
        if handle is not None:
            handles[index] = handle
            if not gone:
                numa_id = _read_gpu_numa_id(s, index, handle)
                if numa_id is not None:
                    gpu_numa_ids[index] = numa_id
        if gone:
            lost.add(index)

    bus_ids = {bdf for g in snap.gpus if (bdf := _bdf(g.pci_bus_id)) is not None}
    for i, a in enumerate(snap.gpus):
        for b in snap.gpus[i + 1 :]:
            pair = GpuPair(a=a.index, b=b.index)
            if a.index in lost or b.index in lost:
                bad = a if a.index in lost else b
                snap.pairs.append(_pair_unreadable(pair, bad.read_error or Missing.GPU_LOST))
                continue
            pair, gone = _read_pair(s, a, b, (handles[a.index], handles[b.index]), bus_ids)
            snap.pairs.append(pair)
            if gone:  # which of the two fell off is unknown; their later calls will say
                log.debug("GPU lost while reading pair %d-%d", a.index, b.index)

    if not snap.gpus:
        snap.gpu_absent_reason = NO_GPUS_LISTED
    snap.topology = _topology(snap.gpus, snap.pairs, gpu_numa_ids) if snap.gpus else None
    snap.diagnostics = s.diagnostics
    snap.missing_functions = sorted(s.missing_functions)
    return snap
