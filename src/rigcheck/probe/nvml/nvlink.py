"""One GPU's NVLinks through NVML: each link's state, version, far end and speed, as ``nvidia-smi nvlink -s``
reads them.

Which links exist: NVML's field ``NVML_FI_DEV_NVLINK_LINK_COUNT`` ("number of NVLinks present on the device")
where the driver has it, and every link up to ``NVML_NVLINK_MAX_LINKS`` otherwise. A link that answers
NotSupported (or InvalidArgument) is skipped and the loop goes on: a part with a disabled link in the middle
(link 2 absent, links 3-11 present) keeps all its other links, where stopping at the first absent link would
count two. A link within the count that NVML will not describe is listed with its state unknown.

Speed: the per-link field ``NVML_FI_DEV_NVLINK_GET_SPEED`` (MB/s, scoped to the link; R520-era drivers on),
else the older per-link fields ``NVML_FI_DEV_NVLINK_SPEED_MBPS_L0..L11``, else the common speed of the active
links ``NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON``: nvml.h. nvidia-smi prints the same figure in GB/s (26562 MB/s
-> "26.562 GB/s" on H100). An inactive link has no speed (not_supported).

Error counters: ``nvmlDeviceGetNvLinkErrorCounter`` per described link, DL replay, DL recovery and DL CRC (flit
and data, summed: `nvidia-smi nvlink -e` prints one CRC count), read on inactive links too, as nvidia-smi does.
A CRC counter the part lacks (NotSupported) leaves the sum to the other; both absent, the CRC count is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from rigcheck.model.snapshot import Missing, NvLink
from rigcheck.probe.nvml.calls import NvmlFailure
from rigcheck.probe.nvml.constants import (
    ERR_INVALID_ARGUMENT,
    ERR_NOT_SUPPORTED,
    FI_NVLINK_GET_SPEED,
    FI_NVLINK_LINK_COUNT,
    FI_NVLINK_SPEED_COMMON,
    FI_NVLINK_SPEED_LEGACY,
    NVLINK_DEVICE_TYPES,
    NVLINK_ERROR_DL_CRC_DATA,
    NVLINK_ERROR_DL_CRC_FLIT,
    NVLINK_ERROR_DL_RECOVERY,
    NVLINK_ERROR_DL_REPLAY,
    NVLINK_MAX_LINKS,
)
from rigcheck.probe.nvml.library import FieldId, NvmlLibrary, as_text, late, value_of
from rigcheck.probe.nvml.session import GpuReader

T = TypeVar("T")

_ABSENT = frozenset({ERR_NOT_SUPPORTED, ERR_INVALID_ARGUMENT})  # "no such link"


def read_nvlinks(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    """Fill ``r.gpu.nvlinks`` (or give it a reason)."""
    gpu = r.gpu
    if r.lost_detail is not None:
        gpu.mark_missing("nvlinks", Missing.GPU_LOST)
        return
    count = _link_count(r, lib, h)
    links: list[NvLink] = []
    for link in range(min(count, NVLINK_MAX_LINKS) if count is not None else NVLINK_MAX_LINKS):
        try:
            state = r.s.call(
                "nvmlDeviceGetNvLinkState",
                partial(late, lib, "nvmlDeviceGetNvLinkState", h, link),
                gpu=gpu.index,
                quiet=_ABSENT,
            )
        except NvmlFailure as failure:
            absent = failure.code in _ABSENT
            if failure.reason is Missing.GPU_LOST:
                r.lost_detail = failure.detail
            if not links and not absent:
                gpu.mark_missing("nvlinks", failure.reason)  # the first read failed: the others would too
                return
            if r.lost_detail is not None:
                break
            if absent and count is None:
                continue  # no such link: read on, a later one may exist
            links.append(_unknown_link(link, Missing.NOT_SUPPORTED if absent else failure.reason))
            continue
        links.append(_described_link(r, lib, h, link, active=bool(state)))
        if r.lost_detail is not None:
            break
    _read_speeds(r, lib, h, links)
    gpu.nvlinks = links


def _link_count(r: GpuReader, lib: NvmlLibrary, h: object) -> int | None:
    values = _fields(r, lib, h, [FI_NVLINK_LINK_COUNT])
    return int(values[0]) if values[0] is not None and values[0] >= 0 else None


def _unknown_link(link: int, reason: Missing) -> NvLink:
    entry = NvLink(link=link)
    for field in ("active", "version", "remote_pci_bus_id", "remote_device_type", "speed_gbps", *_COUNTER_FIELDS):
        entry.mark_missing(field, reason)
    return entry


def _described_link(r: GpuReader, lib: NvmlLibrary, h: object, link: int, *, active: bool) -> NvLink:
    entry = NvLink(link=link, active=active)
    version = _link_read(
        r, entry, "version", "nvmlDeviceGetNvLinkVersion", partial(late, lib, "nvmlDeviceGetNvLinkVersion", h, link)
    )
    entry.version = int(version) if version is not None else None
    remote = _link_read(
        r,
        entry,
        "remote_pci_bus_id",
        "nvmlDeviceGetNvLinkRemotePciInfo",
        partial(late, lib, "nvmlDeviceGetNvLinkRemotePciInfo", h, link),
    )
    entry.remote_pci_bus_id = as_text(remote.busId) if remote is not None else None
    kind = _link_read(
        r,
        entry,
        "remote_device_type",
        "nvmlDeviceGetNvLinkRemoteDeviceType",
        partial(late, lib, "nvmlDeviceGetNvLinkRemoteDeviceType", h, link),
    )
    entry.remote_device_type = NVLINK_DEVICE_TYPES.get(kind, "unknown") if kind is not None else None
    _read_error_counters(r, lib, h, entry)
    return entry


_COUNTERS = (
    ("replay_errors", (NVLINK_ERROR_DL_REPLAY,)),
    ("recovery_errors", (NVLINK_ERROR_DL_RECOVERY,)),
    ("crc_errors", (NVLINK_ERROR_DL_CRC_FLIT, NVLINK_ERROR_DL_CRC_DATA)),
)


_COUNTER_FIELDS = tuple(name for name, _ in _COUNTERS)


def _read_error_counters(r: GpuReader, lib: NvmlLibrary, h: object, entry: NvLink) -> None:
    """The link's replay, recovery and CRC counters (CRC: flit + data, each where the part has it)."""
    for field, counters in _COUNTERS:
        counts: list[int] = []
        reason: Missing | None = None
        for counter in counters:
            if r.lost_detail is not None:
                reason = Missing.GPU_LOST
                break
            try:
                value = r.s.call(
                    "nvmlDeviceGetNvLinkErrorCounter",
                    partial(late, lib, "nvmlDeviceGetNvLinkErrorCounter", h, entry.link, counter),
                    gpu=r.gpu.index,
                    quiet=_ABSENT,  # a counter this part or link does not keep
                )
            except NvmlFailure as failure:
                if failure.reason is Missing.GPU_LOST:
                    r.lost_detail = failure.detail
                absent = failure.code in _ABSENT
                reason = reason or (Missing.NOT_SUPPORTED if absent else failure.reason)
                continue
            counts.append(int(value))
        if counts and r.lost_detail is None:
            setattr(entry, field, sum(counts))
        else:
            entry.mark_missing(field, Missing.GPU_LOST if r.lost_detail is not None else reason or Missing.ERROR)


def _link_read(r: GpuReader, entry: NvLink, field: str, name: str, fn: Callable[[], T]) -> T | None:
    if r.lost_detail is not None:
        entry.mark_missing(field, Missing.GPU_LOST)
        return None
    try:
        return r.s.call(name, fn, gpu=r.gpu.index)
    except NvmlFailure as failure:
        if failure.reason is Missing.GPU_LOST:
            r.lost_detail = failure.detail
        entry.mark_missing(field, failure.reason)
        return None


def _read_speeds(r: GpuReader, lib: NvmlLibrary, h: object, links: list[NvLink]) -> None:
    """Each active link's speed in GB/s (per direction), from the first field value the driver gives."""
    for link in links:
        if link.active is False:
            link.mark_missing("speed_gbps", Missing.NOT_SUPPORTED)
    active = [link for link in links if link.active]
    if not active:
        return
    # Per link, the fields to try in order; asked for in one call.
    tries = [
        [(FI_NVLINK_GET_SPEED, link.link)]
        + ([FI_NVLINK_SPEED_LEGACY[link.link]] if link.link < len(FI_NVLINK_SPEED_LEGACY) else [])
        + [FI_NVLINK_SPEED_COMMON]
        for link in active
    ]
    asked: list[FieldId] = [fid for fids in tries for fid in fids]
    values = iter(_fields(r, lib, h, asked))
    for link, fids in zip(active, tries, strict=True):
        mbps = [next(values) for _ in fids]
        speed = next((v for v in mbps if v is not None and v > 0), None)
        if speed is not None:
            link.speed_gbps = speed / 1000.0
        else:
            link.mark_missing("speed_gbps", Missing.GPU_LOST if r.lost_detail is not None else Missing.NOT_SUPPORTED)


def _fields(r: GpuReader, lib: NvmlLibrary, h: object, ids: Sequence[FieldId]) -> list[float | None]:
    """Field values a driver may lack: each a number, or None where it does not give it (no diagnostic)."""
    if r.lost_detail is not None:
        return [None] * len(ids)
    try:
        values = r.s.call(
            "nvmlDeviceGetFieldValues",
            lambda: lib.nvmlDeviceGetFieldValues(h, list(ids)),
            gpu=r.gpu.index,
            quiet=_ABSENT,  # a driver that predates the field ids
        )
    except NvmlFailure as failure:
        if failure.reason is Missing.GPU_LOST:
            r.lost_detail = failure.detail
        return [None] * len(ids)
    numbers = [value_of(fv) if fv.nvmlReturn == 0 else None for fv in list(values)[: len(ids)]]
    return numbers + [None] * (len(ids) - len(numbers))
