"""Each active NVLink's error counters for the poller (rigcheck.probe.nvml.poller): DL CRC (flit + data summed, as
`nvidia-smi nvlink -e` prints one CRC count), DL replay and DL recovery, into a sample's ``nvlink_crc_errors``,
``nvlink_replay_errors`` and ``nvlink_recovery_errors`` (a list per GPU, index = link, None for a link not read).

nvml.h: ``nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
nvmlNvLinkErrorCounter_t counter, unsigned long long *counterValue)`` ("Retrieve the specified error counter value",
Pascal or newer), the counters of ``nvmlNvLinkErrorCounter_t`` (NVML_NVLINK_ERROR_DL_REPLAY 0, _RECOVERY 1,
_CRC_FLIT 2, _CRC_DATA 3). They count since the driver loaded or ``nvidia-smi nvlink -ec`` reset them.

Which links: found once (:meth:`LinkErrorCounters.find`, when the poller opens): the field
``NVML_FI_DEV_NVLINK_LINK_COUNT`` where the driver gives it, else every link up to ``NVML_NVLINK_MAX_LINKS``; of
those, the ones ``nvmlDeviceGetNvLinkState`` calls active. An inactive link carries no traffic, so its counters
cannot climb under load; a link that answers NotSupported (or InvalidArgument) does not exist on this part (a
disabled link in the middle: the others after it are still read, as rigcheck.probe.nvml.nvlink does). A counter a
link answers NotSupported for is left out from then on (a part that keeps the flit CRC count only sums that one); a
counter no link gives is None for the GPU, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from rigcheck.model.snapshot import Missing
from rigcheck.probe.nvml.calls import NvmlFailure, call
from rigcheck.probe.nvml.constants import (
    ERR_INVALID_ARGUMENT,
    ERR_NOT_SUPPORTED,
    FI_NVLINK_LINK_COUNT,
    NVLINK_ERROR_DL_CRC_DATA,
    NVLINK_ERROR_DL_CRC_FLIT,
    NVLINK_ERROR_DL_RECOVERY,
    NVLINK_ERROR_DL_REPLAY,
    NVLINK_MAX_LINKS,
)
from rigcheck.probe.nvml.library import NvmlLibrary, late, value_of

T = TypeVar("T")
Counts = list[int | None]  # per link (index = link): a Sample's nvlink_*_errors

_ABSENT = frozenset({ERR_NOT_SUPPORTED, ERR_INVALID_ARGUMENT})  # no such link, or no such counter on it
# The sample's fields, each with the counters summed into it.
COUNTERS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("nvlink_crc_errors", (NVLINK_ERROR_DL_CRC_FLIT, NVLINK_ERROR_DL_CRC_DATA)),
    ("nvlink_replay_errors", (NVLINK_ERROR_DL_REPLAY,)),
    ("nvlink_recovery_errors", (NVLINK_ERROR_DL_RECOVERY,)),
)


class GpuLinkLost(Exception):
    """The GPU said GpuIsLost while its links were read; carries the function's words."""


class LinkErrorCounters:
    """One GPU's NVLink error counters: the active links found once, each counter read on every :meth:`read`."""

    def __init__(self, lib: NvmlLibrary, handle: object) -> None:
        self._lib = lib
        self._handle = handle
        self.links: list[int] | None = None  # the active links; None until found
        self._absent: set[tuple[int, int]] = set()  # (link, counter) the part does not keep
        self.errors = 0  # reads that failed for another reason (this read only)

    def _call(self, name: str, fn: Callable[[], T]) -> T:
        try:
            return call(self._lib, name, fn)
        except NvmlFailure as failure:
            if failure.reason is Missing.GPU_LOST:
                raise GpuLinkLost(failure.detail) from None
            raise

    def find(self) -> None:
        """Find the active links (once). GpuLinkLost when the GPU is lost."""
        if self.links is None:
            self.links = self._find_links()

    def _find_links(self) -> list[int]:
        lib, h = self._lib, self._handle
        count: int | None = None
        try:
            values = self._call(
                "nvmlDeviceGetFieldValues", partial(late, lib, "nvmlDeviceGetFieldValues", h, [FI_NVLINK_LINK_COUNT])
            )
            first = next(iter(values), None)
            number = value_of(first) if first is not None and first.nvmlReturn == 0 else None
            count = int(number) if number is not None and number >= 0 else None
        except NvmlFailure:
            pass  # a driver that predates the field: try every link
        active: list[int] = []
        for link in range(min(count, NVLINK_MAX_LINKS) if count is not None else NVLINK_MAX_LINKS):
            try:
                state = self._call("nvmlDeviceGetNvLinkState", partial(late, lib, "nvmlDeviceGetNvLinkState", h, link))
            except NvmlFailure as failure:
                if failure.reason is Missing.DRIVER_TOO_OLD:
                    break  # no NVLink calls in this driver or pynvml
                continue  # no such link, or one NVML will not describe: not read
            if state:
                active.append(link)
        return active

    def read(self) -> tuple[Counts | None, Counts | None, Counts | None]:
        """Per counter (CRC, replay, recovery), each link's count (None: not read); None where no link gave it.
        GpuLinkLost when the GPU is lost."""
        self.find()
        if not self.links:
            return None, None, None
        lib, h = self._lib, self._handle
        width = self.links[-1] + 1
        out: list[Counts | None] = []
        for _field, counters in COUNTERS:
            per_link: list[int | None] = [None] * width
            for link in self.links:
                total: int | None = None
                for counter in counters:
                    if (link, counter) in self._absent:
                        continue
                    try:
                        value = self._call(
                            "nvmlDeviceGetNvLinkErrorCounter",
                            partial(late, lib, "nvmlDeviceGetNvLinkErrorCounter", h, link, counter),
                        )
                    except NvmlFailure as failure:
                        if failure.code in _ABSENT or failure.reason is Missing.DRIVER_TOO_OLD:
                            self._absent.add((link, counter))
                        else:
                            self.errors += 1
                            total = None  # a sum with one part unread would read as a drop, then a jump
                            break
                        continue
                    total = (total or 0) + int(value)
                per_link[link] = total
            out.append(per_link if any(v is not None for v in per_link) else None)
        return out[0], out[1], out[2]
