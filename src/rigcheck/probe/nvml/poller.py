"""The telemetry poller: a cheap repeated read of every GPU for the sampler (rigcheck.monitor), through the
same call-and-classify door as the probe (rigcheck.probe.nvml.calls)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from rigcheck.errors import ProbeError
from rigcheck.model.snapshot import Missing
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.probe.nvml.calls import (
    NO_GPUS_LISTED,
    NoGpuError,
    NvmlFailure,
    call,
    real_library,
    reason_for,
    start,
    stop,
)
from rigcheck.probe.nvml.constants import (
    CLOCK_MEM,
    CLOCK_SM,
    FI_DEV_MEMORY_TEMP,
    FI_POWER_INSTANT,
    MEMORY_ERROR_CORRECTED,
    MEMORY_ERROR_UNCORRECTED,
    TEMPERATURE_GPU,
    THRESHOLD_GPU_MAX,
    THRESHOLD_SHUTDOWN,
    THRESHOLD_SLOWDOWN,
    VOLATILE_ECC,
)
from rigcheck.probe.nvml.library import FieldValue, NvmlLibrary, as_text, decode_clock_event_reasons, late, value_of
from rigcheck.probe.nvml.poll_links import GpuLinkLost, LinkErrorCounters

log = logging.getLogger(__name__)

T = TypeVar("T")

# What one poll reads per GPU, in order: (field, NVML function). Static facts (name, thresholds, default
# limit, max SM clock, where the power reading comes from) are read once when the poller opens. Power is
# the instant field (a field-values read) where the driver gives it: nvmlDeviceGetPowerUsage is a 1 s
# average on Ampere (but GA100) and newer, which would smooth a 10 Hz trace (rigcheck.probe.nvml.constants).
# The reasons read picks the newer function and falls back to the pre-R535 "throttle" name when the driver lacks it.
_POLL_REASON_FUNCTIONS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
_POLL_FIELDS = (
    ("power_draw_w", "nvmlDeviceGetPowerUsage"),
    ("power_enforced_limit_w", "nvmlDeviceGetEnforcedPowerLimit"),
    ("temp_c", "nvmlDeviceGetTemperature"),
    ("temp_memory_c", "nvmlDeviceGetFieldValues"),
    ("sm_clock_mhz", "nvmlDeviceGetClockInfo"),
    ("mem_clock_mhz", "nvmlDeviceGetClockInfo"),
    ("utilization_gpu_percent", "nvmlDeviceGetUtilizationRates"),
    ("reasons", "nvmlDeviceGetCurrentClocksEventReasons"),
    ("ecc_corrected_volatile", "nvmlDeviceGetTotalEccErrors"),
    ("ecc_uncorrected_volatile", "nvmlDeviceGetTotalEccErrors"),
    ("pcie_replays", "nvmlDeviceGetPcieReplayCounter"),
)
# The error counters (issue 28: judged as rates under load, rigcheck.checks.burn.rates). nvml.h:
# nvmlDeviceGetTotalEccErrors(device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType,
# unsigned long long *eccCounts) with NVML_VOLATILE_ECC (counts since the driver loaded; ECC mode on, else
# NotSupported) and NVML_MEMORY_ERROR_TYPE_CORRECTED / _UNCORRECTED; nvmlDeviceGetPcieReplayCounter(device,
# unsigned int *value). Three calls a GPU, every poll. Each NVLink's counters (poll_links.py) are 18 links x 3
# counters (CRC as flit + data: 4 calls a link) on an H100, 72 calls a GPU and 576 on an 8-GPU board: at 10 Hz that
# would be most of the poll, so they are read every NVLINK_EVERY_S; DCGM's NVLink limits are rates per second
# (100 CRC errors/s a link) or any error at all, which a reading every few seconds of a minutes-long load shows.
NVLINK_EVERY_S = 5.0
# Reasons that will not change while polling: the field is not asked for again on that GPU.
_STATIC_FAILURES = frozenset({Missing.NOT_SUPPORTED, Missing.NO_PERMISSION})


class _GpuLost(Exception):
    """GpuIsLost during a poll; carries the function that said so."""


class _PolledGpu:
    """One GPU being polled: its handle, what it cannot give (field -> reason), and whether it is gone."""

    __slots__ = (
        "facts_missing",
        "handle",
        "index",
        "info",
        "links",
        "links_read_at",
        "lost",
        "lost_detail",
        "max_sm_clock_mhz",
        "power_instant",
        "unavailable",
    )

    def __init__(self, index: int, handle: object | None, info: TraceGpu) -> None:
        self.index = index
        self.handle = handle
        self.info = info
        self.unavailable: dict[str, Missing] = {}
        self.facts_missing: dict[str, Missing] = {}  # facts read once at open (TraceGpu fields) -> why not
        self.max_sm_clock_mhz: float | None = None
        self.power_instant = False  # power_draw_w from NVML_FI_DEV_POWER_INSTANT, not nvmlDeviceGetPowerUsage
        self.lost = False  # a lost sample has been emitted; the GPU is not polled again
        self.lost_detail: str | None = None  # lost, but the lost sample is still to be emitted
        self.links: LinkErrorCounters | None = None  # its NVLinks' error counters (poll_links.py)
        self.links_read_at: float | None = None  # the poll time they were last read


class NvmlPoller:
    """Polls power, limit, temperatures, clocks, utilisation, clock-event reasons and the error counters (volatile
    ECC, PCIe replays every poll; each NVLink's every ``nvlink_every_s``) of each GPU.

    A context manager: ``nvmlInit`` once on enter (ProbeError with one line when NVML cannot start or
    sees no GPU), ``nvmlShutdown`` on exit. ``gpus`` maps each polled GPU's index to its static facts,
    read once (``uuids`` and ``bus_ids`` name each GPU for the Prometheus labels; ``facts_unavailable`` says
    why a fact is missing). ``poll(t_s)`` returns one Sample per GPU still on the bus.

    Error mapping (rigcheck.probe.nvml.calls, as in the probe): NotSupported / NoPermission -> None, and
    the field is not asked for again on that GPU (``unavailable`` keeps the reason); a function the driver
    lacks -> None, probed once (``missing_functions``); GpuIsLost -> one Sample with ``lost=True`` (what
    was read before it kept), then that GPU is not polled again; any other NVML error -> None for this
    poll only (``errors`` counts them).
    """

    # It reads the trace/2 error counters: a CSV trace names their columns (rigcheck.monitor.sampler.TraceFile).
    reads_counters = True

    def __init__(
        self,
        nvml: NvmlLibrary | None = None,
        *,
        gpus: Sequence[int] | None = None,
        nvlink_every_s: float = NVLINK_EVERY_S,
    ) -> None:
        self._lib = real_library() if nvml is None else nvml
        self.nvlink_every_s = nvlink_every_s
        self._wanted = list(gpus) if gpus is not None else None
        self._polled: list[_PolledGpu] = []
        self._open = False
        self._reasons_fn: str | None = None
        self.gpus: dict[int, TraceGpu] = {}
        self.uuids: dict[int, str] = {}  # NVML index -> "GPU-..." (to find the same GPU in CUDA's order)
        self.bus_ids: dict[int, str] = {}  # NVML index -> "00000000:19:00.0" (the exporter's pci_bus_id label)
        self.missing_functions: set[str] = set()
        self.errors = 0  # NVML errors other than NotSupported / NoPermission / lost / absent, all polls

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> NvmlPoller:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        lib = self._lib
        start(lib)
        self._open = True
        try:
            count = int(call(lib, "nvmlDeviceGetCount", lib.nvmlDeviceGetCount))
        except NvmlFailure as failure:
            self.close()
            raise NoGpuError(f"NVML could not count the GPUs: {failure.error}", "error", failure.error) from None
        if count == 0:
            self.close()
            raise NoGpuError(NO_GPUS_LISTED, "ok")
        wanted = self._wanted if self._wanted is not None else list(range(count))
        absent = [i for i in wanted if not 0 <= i < count]
        if absent:
            self.close()
            raise ProbeError(f"no GPU {absent[0]}: NVML sees {count} GPU(s), indices 0-{count - 1}")
        for name in (*_POLL_REASON_FUNCTIONS, *(fn for _, fn in _POLL_FIELDS)):
            if not hasattr(lib, name):
                self.missing_functions.add(name)
        self._reasons_fn = next((n for n in _POLL_REASON_FUNCTIONS if n not in self.missing_functions), None)
        for index in wanted:
            self._polled.append(self._open_gpu(index))
        self.gpus = {g.index: g.info for g in self._polled}

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        stop(self._lib)

    def _open_gpu(self, index: int) -> _PolledGpu:
        lib = self._lib
        info = TraceGpu(index=index)
        try:
            handle = call(lib, "nvmlDeviceGetHandleByIndex", partial(lib.nvmlDeviceGetHandleByIndex, index))
        except NvmlFailure as failure:
            g = _PolledGpu(index, None, info)
            g.lost_detail = failure.detail
            return g
        g = _PolledGpu(index, handle, info)
        links = g.links = LinkErrorCounters(lib, handle)
        try:
            name = self._static(g, "nvmlDeviceGetName", lambda: lib.nvmlDeviceGetName(handle))
            info.name = as_text(name) if name is not None else None
            uuid = self._static(g, "nvmlDeviceGetUUID", lambda: lib.nvmlDeviceGetUUID(handle))
            if uuid is not None:
                self.uuids[index] = as_text(uuid)
            pci = self._static(g, "nvmlDeviceGetPciInfo", lambda: lib.nvmlDeviceGetPciInfo(handle))
            if pci is not None:
                self.bus_ids[index] = as_text(pci.busId)
            for attr, threshold in (
                ("temp_slowdown_c", THRESHOLD_SLOWDOWN),
                ("temp_shutdown_c", THRESHOLD_SHUTDOWN),
                ("temp_max_operating_c", THRESHOLD_GPU_MAX),
            ):
                value = self._static(
                    g,
                    "nvmlDeviceGetTemperatureThreshold",
                    partial(late, lib, "nvmlDeviceGetTemperatureThreshold", handle, threshold),
                    attr,
                )
                setattr(info, attr, float(value) if value is not None else None)
            limit = self._static(
                g,
                "nvmlDeviceGetPowerManagementDefaultLimit",
                lambda: lib.nvmlDeviceGetPowerManagementDefaultLimit(handle),
                "power_default_limit_w",
            )
            info.power_default_limit_w = limit / 1000.0 if limit is not None else None
            top = self._static(
                g,
                "nvmlDeviceGetMaxClockInfo",
                partial(late, lib, "nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
                "sm_clock_max_mhz",
            )
            g.max_sm_clock_mhz = float(top) if top is not None else None
            self._choose_power_source(g)
            links.find()
        except GpuLinkLost as lost:
            g.lost_detail = str(lost)
        except _GpuLost as lost:
            g.lost_detail = str(lost)
        return g

    def _choose_power_source(self, g: _PolledGpu) -> None:
        """The instant field where one read of it gives a draw; else the averaged call. A driver that
        predates the field answers NotSupported (or InvalidArgument) per field, or 0."""
        lib, h = self._lib, g.handle
        values = self._static(
            g, "nvmlDeviceGetFieldValues", partial(late, lib, "nvmlDeviceGetFieldValues", h, [FI_POWER_INSTANT])
        )
        first = next(iter(values), None) if values is not None else None
        mw = value_of(first) if first is not None and first.nvmlReturn == 0 else None
        g.power_instant = mw is not None and mw > 0
        g.info.power_source = "instant" if g.power_instant else "average"

    def _static(self, g: _PolledGpu, name: str, fn: Callable[[], T], field: str | None = None) -> T | None:
        """A one-off read at open: any failure but a lost GPU is None (for a ``field`` of the GPU's facts, with
        its reason in ``facts_unavailable``)."""
        if name in self.missing_functions:
            if field is not None:
                g.facts_missing[field] = Missing.DRIVER_TOO_OLD
            return None
        try:
            return call(self._lib, name, fn)
        except NvmlFailure as failure:
            if failure.reason is Missing.GPU_LOST:
                raise _GpuLost(failure.detail) from None
            if failure.reason is Missing.DRIVER_TOO_OLD:
                self.missing_functions.add(name)
            if field is not None:
                g.facts_missing[field] = failure.reason
            log.debug("GPU %d: %s", g.index, failure.detail)
            return None

    # -- polling --------------------------------------------------------------------------------
    @property
    def unavailable(self) -> dict[int, dict[str, str]]:
        """Per GPU, the fields it cannot give and why (``not_supported``, ``no_permission``, ...). Safe to call from
        another thread than the one polling (the Prometheus endpoint's): each map is copied before it is read."""
        out: dict[int, dict[str, str]] = {}
        for g in list(self._polled):
            unavailable = dict(g.unavailable)
            if unavailable:
                out[g.index] = {f: r.value for f, r in unavailable.items()}
        return out

    @property
    def facts_unavailable(self) -> dict[int, dict[str, str]]:
        """Per GPU, the facts read once at open (thresholds, default limit, max SM clock) it did not give, and why."""
        return {g.index: {f: r.value for f, r in g.facts_missing.items()} for g in self._polled if g.facts_missing}

    @property
    def active(self) -> list[int]:
        """GPUs still polled (not lost)."""
        return [g.index for g in self._polled if not g.lost and g.lost_detail is None]

    def poll(self, t_s: float) -> list[Sample]:
        """One reading of every GPU still on the bus, stamped ``t_s``."""
        if not self._open:
            raise ProbeError("the NVML poller is not open")
        out: list[Sample] = []
        for g in self._polled:
            if g.lost:
                continue
            sample = Sample(t_s=t_s, gpu=g.index, sm_clock_max_mhz=g.max_sm_clock_mhz)
            if g.lost_detail is None:
                try:
                    self._read(g, sample)
                except _GpuLost as lost:
                    g.lost_detail = str(lost)
            if g.lost_detail is not None:
                log.debug("GPU %d lost: %s", g.index, g.lost_detail)
                sample.lost = True
                g.lost = True
            out.append(sample)
        return out

    def _call(self, g: _PolledGpu, field: str, name: str, fn: Callable[[], T]) -> T | None:
        if field in g.unavailable:
            return None
        if name in self.missing_functions:
            g.unavailable[field] = Missing.DRIVER_TOO_OLD
            return None
        try:
            return call(self._lib, name, fn)
        except NvmlFailure as failure:
            if failure.reason is Missing.GPU_LOST:
                raise _GpuLost(failure.detail) from None
            if failure.reason is Missing.DRIVER_TOO_OLD:
                self.missing_functions.add(name)
            if failure.reason in _STATIC_FAILURES or failure.reason is Missing.DRIVER_TOO_OLD:
                g.unavailable[field] = failure.reason
            else:
                self.errors += 1
                log.debug("GPU %d: %s", g.index, failure.detail)
            return None

    def _read(self, g: _PolledGpu, s: Sample) -> None:
        lib, h = self._lib, g.handle
        power = self._power_mw(g)
        s.power_draw_w = power / 1000.0 if power is not None else None
        limit = self._call(
            g,
            "power_enforced_limit_w",
            "nvmlDeviceGetEnforcedPowerLimit",
            lambda: lib.nvmlDeviceGetEnforcedPowerLimit(h),
        )
        s.power_enforced_limit_w = limit / 1000.0 if limit is not None else None
        temp = self._call(
            g, "temp_c", "nvmlDeviceGetTemperature", lambda: lib.nvmlDeviceGetTemperature(h, TEMPERATURE_GPU)
        )
        s.temp_c = float(temp) if temp is not None else None
        if "temp_memory_c" not in g.unavailable:
            values = self._call(
                g,
                "temp_memory_c",
                "nvmlDeviceGetFieldValues",
                lambda: lib.nvmlDeviceGetFieldValues(h, [FI_DEV_MEMORY_TEMP]),
            )
            if values is not None:
                s.temp_memory_c = self._field_value(g, "temp_memory_c", values, FI_DEV_MEMORY_TEMP)
        sm = self._call(g, "sm_clock_mhz", "nvmlDeviceGetClockInfo", lambda: lib.nvmlDeviceGetClockInfo(h, CLOCK_SM))
        s.sm_clock_mhz = float(sm) if sm is not None else None
        mem = self._call(g, "mem_clock_mhz", "nvmlDeviceGetClockInfo", lambda: lib.nvmlDeviceGetClockInfo(h, CLOCK_MEM))
        s.mem_clock_mhz = float(mem) if mem is not None else None
        util = self._call(
            g,
            "utilization_gpu_percent",
            "nvmlDeviceGetUtilizationRates",
            lambda: lib.nvmlDeviceGetUtilizationRates(h),
        )
        s.utilization_gpu_percent = float(util.gpu) if util is not None else None
        s.reasons = self._reasons(g)
        self._counters(g, s)

    def _counters(self, g: _PolledGpu, s: Sample) -> None:
        """The error counters: ECC and PCIe replays on every poll, the NVLinks' every ``nvlink_every_s``."""
        lib, h = self._lib, g.handle
        for field, kind in (
            ("ecc_corrected_volatile", MEMORY_ERROR_CORRECTED),
            ("ecc_uncorrected_volatile", MEMORY_ERROR_UNCORRECTED),
        ):
            count = self._call(
                g,
                field,
                "nvmlDeviceGetTotalEccErrors",
                partial(late, lib, "nvmlDeviceGetTotalEccErrors", h, kind, VOLATILE_ECC),
            )
            setattr(s, field, int(count) if count is not None else None)
        replays = self._call(
            g, "pcie_replays", "nvmlDeviceGetPcieReplayCounter", partial(late, lib, "nvmlDeviceGetPcieReplayCounter", h)
        )
        s.pcie_replays = int(replays) if replays is not None else None
        links = g.links
        if links is None or (g.links_read_at is not None and s.t_s - g.links_read_at < self.nvlink_every_s):
            return
        g.links_read_at = s.t_s
        try:
            s.nvlink_crc_errors, s.nvlink_replay_errors, s.nvlink_recovery_errors = links.read()
        except GpuLinkLost as lost:
            raise _GpuLost(str(lost)) from None
        self.errors += links.errors
        links.errors = 0

    def _reasons(self, g: _PolledGpu) -> list[str] | None:
        lib, h = self._lib, g.handle
        while self._reasons_fn is not None:
            name = self._reasons_fn
            fn = getattr(lib, name)
            if "reasons" in g.unavailable:
                return None
            mask = self._call(g, "reasons", name, partial(fn, h))
            if mask is not None:
                return decode_clock_event_reasons(int(mask))
            if name not in self.missing_functions:
                return None
            # The driver lacks this one: fall back to the older name, for every GPU from now on.
            g.unavailable.pop("reasons", None)
            later = _POLL_REASON_FUNCTIONS[_POLL_REASON_FUNCTIONS.index(name) + 1 :]
            self._reasons_fn = next((n for n in later if n not in self.missing_functions), None)
        g.unavailable["reasons"] = Missing.DRIVER_TOO_OLD
        return None

    def _power_mw(self, g: _PolledGpu) -> float | None:
        """This poll's draw in mW, from the source chosen at open."""
        lib, h = self._lib, g.handle
        if g.power_instant:
            values = self._call(
                g,
                "power_draw_w",
                "nvmlDeviceGetFieldValues",
                lambda: lib.nvmlDeviceGetFieldValues(h, [FI_POWER_INSTANT]),
            )
            mw = self._field_value(g, "power_draw_w", values, FI_POWER_INSTANT) if values is not None else None
            if "power_draw_w" not in g.unavailable:
                return mw
            # The field went NotSupported / NoPermission after open: the averaged call from now on, and the
            # GPU's facts say so (a trace header already written keeps what held at open).
            log.debug(
                "GPU %d: instant power field unavailable (%s), using nvmlDeviceGetPowerUsage",
                g.index,
                g.unavailable.pop("power_draw_w").value,
            )
            g.power_instant = False
            g.info.power_source = "average"
        return self._call(g, "power_draw_w", "nvmlDeviceGetPowerUsage", lambda: lib.nvmlDeviceGetPowerUsage(h))

    def _field_value(self, g: _PolledGpu, field: str, values: Sequence[FieldValue], field_id: int) -> float | None:
        if not values:
            return None
        fv = values[0]
        if fv.nvmlReturn != 0:
            reason = reason_for(fv.nvmlReturn)
            if reason is Missing.GPU_LOST:
                raise _GpuLost(f"nvmlDeviceGetFieldValues: field {field_id}: GpuIsLost")
            if reason in _STATIC_FAILURES:
                g.unavailable[field] = reason
            return None
        return value_of(fv)
