"""Slow-changing counters for the Prometheus endpoint of `rigcheck monitor`: each NVLink's error counters.

Too many calls for the 10 Hz poller (18 links x 4 counters x 8 GPUs on an HGX board), so the exporter reads
them on scrape, at most every few seconds (rigcheck.monitor.prometheus caches them). The counters are read with
the same code as the snapshot (rigcheck.probe.nvml.nvlink: replay, recovery, CRC flit + data), through the NVML
session the poller opened: the reader never starts or stops NVML itself.

A read returns rows ``(labels, value)`` with the labels ``gpu``, ``uuid``, ``pci_bus_id``, ``link`` and ``type``
(``replay``, ``recovery``, ``crc``). A counter the part lacks, a link that is absent, a GPU that cannot be read
(no permission, lost): no row. A GPU without NVLink gives no rows, not an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import partial

from rigcheck.model.snapshot import Gpu
from rigcheck.probe.nvml.calls import NvmlFailure, call
from rigcheck.probe.nvml.library import NvmlLibrary, as_text
from rigcheck.probe.nvml.nvlink import read_nvlinks
from rigcheck.probe.nvml.poller import NvmlPoller
from rigcheck.probe.nvml.session import GpuReader, Session

log = logging.getLogger(__name__)

Row = tuple[dict[str, str], float]

# NvLink attribute -> the ``type`` label (dcgm-exporter: DCGM_FI_DEV_NVLINK_{REPLAY,RECOVERY,CRC_FLIT}_ERROR_COUNT_*)
NVLINK_ERROR_TYPES = (("replay_errors", "replay"), ("recovery_errors", "recovery"), ("crc_errors", "crc"))


class NvlinkErrorReader:
    """Reads every NVLink error counter of the given GPUs (NVML index -> UUID) on an already started NVML."""

    def __init__(self, lib: NvmlLibrary, gpus: Sequence[int], uuids: Mapping[int, str] | None = None) -> None:
        self._lib = lib
        self._gpus = list(gpus)
        self._uuids = dict(uuids or {})
        self._handles: dict[int, object] = {}
        self._bus_ids: dict[int, str] = {}
        self._opened = False

    @classmethod
    def for_poller(cls, poller: NvmlPoller) -> NvlinkErrorReader:
        """A reader of the GPUs ``poller`` polls, through its (open) NVML."""
        return cls(poller._lib, sorted(poller.gpus), poller.uuids)  # same package: the poller's open NVML

    def _open(self) -> None:
        """Each GPU's handle and bus id, looked up once (a GPU NVML will not hand out is left out)."""
        if self._opened:
            return
        self._opened = True
        lib = self._lib
        for index in self._gpus:
            try:
                handle = call(lib, "nvmlDeviceGetHandleByIndex", partial(lib.nvmlDeviceGetHandleByIndex, index))
            except NvmlFailure as failure:
                log.debug("NVLink counters: GPU %d: %s", index, failure.detail)
                continue
            self._handles[index] = handle
            try:
                pci = call(lib, "nvmlDeviceGetPciInfo", partial(lib.nvmlDeviceGetPciInfo, handle))
                self._bus_ids[index] = as_text(pci.busId)
            except NvmlFailure as failure:
                log.debug("NVLink counters: GPU %d bus id: %s", index, failure.detail)

    @property
    def bus_ids(self) -> dict[int, str]:
        """NVML index -> PCI bus id as NVML prints it ("00000000:18:00.0"), for the GPUs that gave one."""
        self._open()
        return dict(self._bus_ids)

    def __call__(self) -> list[Row]:
        self._open()
        rows: list[Row] = []
        session = Session(self._lib)
        for index, handle in self._handles.items():
            gpu = Gpu(index=index)
            read_nvlinks(GpuReader(session, gpu), self._lib, handle)
            for link in gpu.nvlinks or []:
                for attr, kind in NVLINK_ERROR_TYPES:
                    value = getattr(link, attr)
                    if value is None:
                        continue
                    labels = {
                        "gpu": str(index),
                        "uuid": self._uuids.get(index, ""),
                        "pci_bus_id": self._bus_ids.get(index, ""),
                        "link": str(link.link),
                        "type": kind,
                    }
                    rows.append((labels, float(value)))
        return rows
