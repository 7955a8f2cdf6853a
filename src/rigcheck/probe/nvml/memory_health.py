"""The memory readings of `rigcheck monitor --prometheus` that change slowly: framebuffer used and free, ECC error
counts, remapped rows and retired pages of each GPU.

Not part of the 10 Hz poll (about ten NVML calls per GPU, and the figures move over minutes): the exporter reads
them on scrape, at most every few seconds (rigcheck.monitor.prometheus caches them), through the NVML session the
poller opened. ECC, remapped rows and retired pages are read by the snapshot's own code
(rigcheck.probe.nvml.device), so a reading means the same in `doctor` and on the endpoint.

A read returns, per GPU index, each field's value or the reason it is missing (``Missing``): a card without ECC
gives ``not_supported`` for the ECC counts, a GPU whose handle NVML refuses gives its reason for every field.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rigcheck.model.snapshot import Gpu, Missing
from rigcheck.probe.nvml.calls import NvmlFailure, call
from rigcheck.probe.nvml.constants import MEMORY_V2
from rigcheck.probe.nvml.device import read_memory_health
from rigcheck.probe.nvml.library import NvmlLibrary
from rigcheck.probe.nvml.poller import NvmlPoller
from rigcheck.probe.nvml.session import GpuReader, Session

# The snapshot's fields read here (rigcheck.model.snapshot.Gpu), beside the framebuffer's used and free MiB.
HEALTH_FIELDS = (
    "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate",
    "ecc_corrected_volatile",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "retired_pages_pending",
)
MEMORY_FIELDS = ("memory_used_mib", "memory_free_mib")
FIELDS = (*MEMORY_FIELDS, *HEALTH_FIELDS)

Readings = dict[int, dict[str, float | Missing]]


class MemoryHealthReader:
    """Reads the memory figures of the given GPUs (NVML indices) on an already started NVML."""

    def __init__(self, lib: NvmlLibrary, gpus: Sequence[int]) -> None:
        self._lib = lib
        self._gpus = list(gpus)

    @classmethod
    def for_poller(cls, poller: NvmlPoller) -> MemoryHealthReader:
        """A reader of the GPUs ``poller`` polls, through its (open) NVML."""
        return cls(poller._lib, sorted(poller.gpus))  # same package: the poller's open NVML

    def __call__(self) -> Readings:
        lib = self._lib
        session = Session(lib)
        out: Readings = {}
        for index in self._gpus:
            try:
                handle = call(lib, "nvmlDeviceGetHandleByIndex", partial(lib.nvmlDeviceGetHandleByIndex, index))
            except NvmlFailure as failure:
                out[index] = dict.fromkeys(FIELDS, failure.reason)
                continue
            gpu = Gpu(index=index)
            reader = GpuReader(session, gpu)
            readings: dict[str, float | Missing] = {}
            readings.update(_memory(reader, lib, handle))
            read_memory_health(reader, lib, handle)
            for field in HEALTH_FIELDS:
                value = getattr(gpu, field)
                readings[field] = float(value) if value is not None else gpu.missing.get(field, Missing.ERROR)
            out[index] = readings
        return out


def _memory(r: GpuReader, lib: NvmlLibrary, h: object) -> dict[str, float | Missing]:
    """Used and free MiB as DCGM gives them: nvmlMemory_v2 (its ``used`` leaves the driver's reservation out), else
    v1. Free is NVML's own figure, not total - used (v2 keeps the reservation apart from both)."""
    mem = r.first(
        ("memory_used_mib",),
        [
            ("nvmlDeviceGetMemoryInfo_v2", lambda: lib.nvmlDeviceGetMemoryInfo(h, MEMORY_V2)),
            ("nvmlDeviceGetMemoryInfo", lambda: lib.nvmlDeviceGetMemoryInfo(h)),
        ],
    )
    if mem is None:
        reason = r.gpu.missing.get("memory_used_mib", Missing.ERROR)
        return dict.fromkeys(MEMORY_FIELDS, reason)
    free = getattr(mem, "free", None)  # pynvml's struct has it; the protocol names only what the probe reads
    return {
        "memory_used_mib": mem.used / 2**20,
        "memory_free_mib": free / 2**20 if isinstance(free, int | float) else Missing.NOT_SUPPORTED,
    }
