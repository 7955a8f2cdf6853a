"""One builder for the ``-q`` text and ``-q -x`` XML parsers: raw strings under canonical keys -> a Gpu.

Both parsers collect what a GPU section prints into :class:`GpuFields`, so the two formats give the same
fields with the same semantics. The builder never reads a smaller number from a cut file:

- a value on the line where the input ends (``Raw.cut``) is kept only when its unit shows it is whole
  (``"700.00 W"``); ``"70"`` or ``"Enab"`` is TRUNCATED;
- a number without the unit its format always prints is TRUNCATED (the start of a cut line);
- a preferred key that may lie past the cut (a TRUNCATED raw) stops the fallback to a lesser one (the
  average draw never stands in for an instantaneous draw the file lost);
- a sum or list whose section the input ends inside (``GpuFields.cut_groups``) is TRUNCATED, not partial.

A figure outside what any card reports (facts/plausible.py) is IMPLAUSIBLE, with a diagnostic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from rigcheck.facts.plausible import out_of_bounds
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS, Diagnostic, Gpu, Missing, NvLink
from rigcheck.readers.smi.values import (
    Parsed,
    Raw,
    finish_missing,
    na_reason,
    parse_bool,
    parse_celsius,
    parse_compute_mode,
    parse_gen,
    parse_int,
    parse_mhz,
    parse_mib,
    parse_microseconds,
    parse_percent,
    parse_str,
    parse_watts,
    parse_width,
)

T = TypeVar("T")
Parser = Callable[[str], Parsed[T]]


# nvidia-smi -q and -q -x print these with their unit; a value whose unit is there was not cut.
def _watts(text: str) -> Parsed[float]:
    return parse_watts(text, unit=True)


def _celsius(text: str) -> Parsed[float]:
    return parse_celsius(text, unit=True)


def _mib(text: str) -> Parsed[float]:
    return parse_mib(text, unit=True)


def _percent(text: str) -> Parsed[float]:
    return parse_percent(text, unit=True)


def _mhz(text: str) -> Parsed[float]:
    return parse_mhz(text, unit=True)


def _microseconds(text: str) -> Parsed[float]:
    return parse_microseconds(text, unit=True)


def _width(text: str) -> Parsed[int]:
    return parse_width(text, unit=True)


def _fabric_status(text: str) -> Parsed[str]:
    """The fabric's probe status is NVML's error string ("Insufficient Resources", "Unknown Error"): the
    value itself, not a failed read; only "N/A" / "Not Supported" mean there is none."""
    reason = na_reason(text)
    if reason is Missing.REPORTED_NA or not text.strip():
        return parse_str(text)
    return Parsed(text.strip())


def _vbios(text: str) -> Parsed[str]:
    """The VBIOS version as printed ("96.00.74.00.0D"); printed empty, like "N/A", it is one the tool did not give."""
    if not text.strip():
        return Parsed(None, Missing.REPORTED_NA)
    return parse_str(text)


_WHOLE_WITH_UNIT: frozenset[Callable[[str], object]] = frozenset(
    {_watts, _celsius, _mib, _percent, _mhz, _microseconds, _width}
)

# Groups of GpuFields that are read as a whole: a cut inside one makes its result TRUNCATED. ECC: all three
# sums; a single sum is named by its Gpu field ("ecc_uncorrected_aggregate").
REASONS, COUNTERS, ECC = "reasons", "counters", "ecc"
ECC_SUMS = ("ecc_uncorrected_volatile", "ecc_uncorrected_aggregate", "ecc_corrected_volatile")


@dataclass
class GpuFields:
    """Raw strings one GPU section holds, under canonical keys (see :func:`build_gpu`).

    Scalar keys: name, uuid, bus_id, architecture, vbios, persistence, mig, ecc_mode, fan, pstate,
    compute_mode, mem_total, mem_used, util_gpu, clock_graphics, clock_sm, clock_mem,
    clock_graphics_max, clock_sm_max, clock_mem_max, pcie_gen_max, pcie_gen_current,
    pcie_gen_gpu_max, pcie_width_max, pcie_width_current, replays, power_instant, power_draw,
    power_average, power_current_limit, power_limit, power_enforced_limit, power_default_limit,
    power_min_limit, power_max_limit, temp_gpu, temp_memory, temp_target, temp_tlimit,
    temp_shutdown, temp_slowdown, temp_max_operating, temp_memory_max, temp_shutdown_offset,
    temp_slowdown_offset, temp_max_operating_offset, temp_memory_max_offset, remapped_correctable,
    remapped_uncorrectable, remapped_pending, remapped_failure, retired_sbe, retired_dbe,
    retired_pending, recovery_action, fabric_state, fabric_status, fabric_clique_id, fabric_cluster_uuid,
    fabric_health.
    """

    values: dict[str, Raw] = field(default_factory=dict)
    reasons: dict[str, Raw] = field(default_factory=dict)  # reason name -> "Active"/"Not Active"
    reasons_section: Raw | None = None  # the section itself, when printed as one N/A value
    counters: dict[str, Raw] = field(default_factory=dict)  # reason name -> "123 us"
    # Uncorrectable / correctable ECC counters of the Volatile and Aggregate sections.
    ecc_uncorrected_volatile: list[Raw] = field(default_factory=list)
    ecc_uncorrected_aggregate: list[Raw] = field(default_factory=list)
    ecc_corrected_volatile: list[Raw] = field(default_factory=list)
    nvlinks: list[NvLink] | None = None
    truncated: bool = False  # the input ends inside this GPU's section
    cut_groups: set[str] = field(default_factory=set)  # REASONS, COUNTERS, ECC, ECC_SUMS: the input ends inside

    def put(self, key: str, raw: Raw | None) -> None:
        """Keep the first value seen for ``key``."""
        if raw is not None and key not in self.values:
            self.values[key] = raw

    def __bool__(self) -> bool:
        return any(
            (
                any(not raw.cut or raw.text for raw in self.values.values()),
                self.reasons,
                self.reasons_section,
                self.counters,
                self.ecc_uncorrected_volatile,
                self.ecc_uncorrected_aggregate,
                self.ecc_corrected_volatile,
                self.nvlinks is not None,
            )
        )


class _Builder:
    def __init__(self, gpu: Gpu, fields: GpuFields, source: str, diagnostics: list[Diagnostic]) -> None:
        self.gpu = gpu
        self.fields = fields
        self.source = source
        self.diagnostics = diagnostics

    @property
    def absent(self) -> Missing:
        """Why a value the section did not print is missing: the input may have ended before it."""
        return Missing.TRUNCATED if self.fields.truncated else Missing.NOT_IN_SOURCE

    def note(self, message: str, raw: Raw | None) -> None:
        where = f" (line {raw.line})" if raw is not None and raw.line is not None else ""
        self.diagnostics.append(Diagnostic(source=self.source, message=f"{message}{where}", gpu=self.gpu.index))

    def read(self, raw: Raw, parse: Parser[T], what: str) -> Parsed[T]:
        result = parse(raw.text)
        if raw.cut:
            # A value where the input ends is whole only when its unit was printed after it.
            if parse in _WHOLE_WITH_UNIT and result.value is not None:
                return result
            return Parsed(None, Missing.TRUNCATED)
        if result.error is not None:
            self.note(f"{what}: {result.error}", raw)
        return result

    def parsed(self, key: str, parse: Parser[T]) -> Parsed[T] | None:
        raw = self.fields.values.get(key)
        return None if raw is None else self.read(raw, parse, key)

    def set(self, attr: str, result: Parsed[T] | None) -> None:
        """Store a parsed value on the GPU, or its reason; None (not in the text) leaves it alone."""
        if result is None:
            return
        value = result.value
        if isinstance(value, (int, float)):
            bounds = out_of_bounds(attr, value)
            if bounds is not None:
                self.note(f"{attr}: {value:g} is outside what any card reports ({bounds.text()})", None)
                self.gpu.mark_missing(attr, Missing.IMPLAUSIBLE)
                return
        if value is not None:
            setattr(self.gpu, attr, value)
            self.gpu.missing.pop(attr, None)
        elif result.reason is not None:
            self.gpu.mark_missing(attr, result.reason)

    def first(self, attr: str, keys: Iterable[str], parse: Parser[T]) -> Parsed[T] | None:
        """The first key that holds a value wins; else the first that was printed (with its reason).

        A key that may lie past the cut stops the search: a lesser key must not stand in for it.
        """
        printed: Parsed[T] | None = None
        for key in keys:
            result = self.parsed(key, parse)
            if result is None:
                continue
            if result.value is not None or (result.reason is Missing.TRUNCATED and printed is None):
                self.set(attr, result)
                return result
            if printed is None and result.reason is not Missing.TRUNCATED:
                printed = result
        self.set(attr, printed)
        return printed

    def total(self, attr: str, raws: list[Raw]) -> None:
        """Sum of counters (None with the first reason when any is N/A), except an optional counter printed N/A
        beside counted ones (Raw.optional: a vGPU guest's SRAM counts): summed around, with a note."""
        if ECC in self.fields.cut_groups or attr in self.fields.cut_groups:
            self.gpu.mark_missing(attr, Missing.TRUNCATED)
            return
        if not raws:
            return
        read = [(raw, self.read(raw, parse_int, attr)) for raw in raws]
        skipped = [raw for raw, r in read if r.value is None and raw.optional and r.reason is Missing.REPORTED_NA]
        total = 0
        for raw, result in read:
            if raw in skipped and len(skipped) < len(read):
                continue
            if result.value is None:
                self.set(attr, result)
                return
            total += result.value
        if skipped:
            self.note(f"{attr}: the SRAM counters print N/A; the total counts the others", skipped[0])
        self.set(attr, Parsed(total))


# Keys of different layouts for one figure: where one is printed, the other never comes, cut or not
# (old "Power Draw" / new "Instantaneous Power Draw", old "Power Limit" / new "Current Power Limit").
_OTHER_LAYOUT = (("power_instant", "power_draw"), ("power_current_limit", "power_limit"))


def _drop_other_layout_stand_ins(fields: GpuFields) -> None:
    for a, b in _OTHER_LAYOUT:
        for mine, other in ((a, b), (b, a)):
            raw, printed = fields.values.get(mine), fields.values.get(other)
            if raw is not None and raw.cut and not raw.text and printed is not None and printed.text:
                del fields.values[mine]


def build_gpu(index: int, fields: GpuFields, source: str, diagnostics: list[Diagnostic]) -> Gpu:
    """Turn one GPU's raw strings into a :class:`Gpu`; see the field docs in model/snapshot.py."""
    _drop_other_layout_stand_ins(fields)
    gpu = Gpu(index=index)
    b = _Builder(gpu, fields, source, diagnostics)

    for attr, key in (("name", "name"), ("uuid", "uuid"), ("pci_bus_id", "bus_id"), ("architecture", "architecture")):
        b.set(attr, b.parsed(key, parse_str))
    b.set("vbios_version", b.parsed("vbios", _vbios))
    b.set("pstate", b.parsed("pstate", parse_str))
    b.set("compute_mode", b.parsed("compute_mode", parse_compute_mode))
    b.set("persistence_mode", b.parsed("persistence", parse_bool))
    b.set("mig_enabled", b.parsed("mig", parse_bool))
    b.set("ecc_enabled", b.parsed("ecc_mode", parse_bool))
    b.set("fan_percent", b.parsed("fan", _percent))
    b.set("memory_total_mib", b.parsed("mem_total", _mib))
    b.set("memory_used_mib", b.parsed("mem_used", _mib))
    b.set("utilization_gpu_percent", b.parsed("util_gpu", _percent))
    for attr, key in (
        ("clock_graphics_mhz", "clock_graphics"),
        ("clock_sm_mhz", "clock_sm"),
        ("clock_mem_mhz", "clock_mem"),
        ("clock_graphics_max_mhz", "clock_graphics_max"),
        ("clock_sm_max_mhz", "clock_sm_max"),
        ("clock_mem_max_mhz", "clock_mem_max"),
    ):
        b.set(attr, b.parsed(key, _mhz))

    # PCIe.
    b.set("pcie_gen_max", b.parsed("pcie_gen_max", parse_gen))
    b.set("pcie_gen_current", b.parsed("pcie_gen_current", parse_gen))
    b.set("pcie_gen_gpu_max", b.parsed("pcie_gen_gpu_max", parse_gen))
    b.set("pcie_width_max", b.parsed("pcie_width_max", _width))
    b.set("pcie_width_current", b.parsed("pcie_width_current", _width))
    b.set("pcie_replay_count", b.parsed("replays", parse_int))

    # Power: instantaneous draw where given, else "Power Draw", else the average.
    b.first("power_draw_w", ("power_instant", "power_draw", "power_average"), _watts)
    b.set("power_draw_avg_w", b.parsed("power_average", _watts))
    b.first("power_limit_w", ("power_current_limit", "power_limit"), _watts)
    b.set("power_enforced_limit_w", b.parsed("power_enforced_limit", _watts))
    b.set("power_default_limit_w", b.parsed("power_default_limit", _watts))
    b.set("power_min_limit_w", b.parsed("power_min_limit", _watts))
    b.set("power_max_limit_w", b.parsed("power_max_limit", _watts))

    _build_temperatures(b)
    _build_reasons(b)
    _build_memory_health(b)
    for attr in ("recovery_action", "fabric_state", "fabric_cluster_uuid", "fabric_health"):
        b.set(attr, b.parsed(attr, parse_str))
    b.set("fabric_status", b.parsed("fabric_status", _fabric_status))
    b.set("fabric_clique_id", b.parsed("fabric_clique_id", parse_int))

    if fields.nvlinks is not None:
        for link in fields.nvlinks:
            finish_missing(link)
        gpu.nvlinks = fields.nvlinks
    finish_missing(gpu)
    return gpu


def _build_temperatures(b: _Builder) -> None:
    current = b.parsed("temp_gpu", _celsius)
    b.set("temp_c", current)
    b.set("temp_memory_c", b.parsed("temp_memory", _celsius))
    b.set("temp_target_c", b.parsed("temp_target", _celsius))
    margin = b.parsed("temp_tlimit", _celsius)
    b.set("temp_tlimit_margin_c", margin)
    # Absolute thresholds (old format, XML *_threshold).
    b.set("temp_shutdown_c", b.parsed("temp_shutdown", _celsius))
    b.set("temp_slowdown_c", b.parsed("temp_slowdown", _celsius))
    b.set("temp_max_operating_c", b.parsed("temp_max_operating", _celsius))
    b.set("temp_memory_max_c", b.parsed("temp_memory_max", _celsius))
    # T.Limit format: offsets from T.Limit; T.Limit itself is the current temperature plus the margin.
    for attr, key in (
        ("temp_shutdown_c", "temp_shutdown_offset"),
        ("temp_slowdown_c", "temp_slowdown_offset"),
        ("temp_max_operating_c", "temp_max_operating_offset"),
    ):
        offset = b.parsed(key, _celsius)
        if offset is None or getattr(b.gpu, attr) is not None:
            continue
        if offset.value is None:
            b.set(attr, offset)
        elif current is None or margin is None:
            b.gpu.mark_missing(attr, b.absent)
        elif current.value is None or margin.value is None:
            b.gpu.mark_missing(attr, current.reason or margin.reason or Missing.REPORTED_NA)
        else:
            b.set(attr, Parsed(current.value + margin.value - offset.value))
    # A memory threshold given as a T.Limit offset cannot be made absolute: there is no memory T.Limit.
    memory_offset = b.parsed("temp_memory_max_offset", _celsius)
    if memory_offset is not None and memory_offset.reason is not None and b.gpu.temp_memory_max_c is None:
        b.set("temp_memory_max_c", memory_offset)


def _build_reasons(b: _Builder) -> None:
    fields = b.fields
    if REASONS in fields.cut_groups:
        b.gpu.mark_missing("clock_event_reasons_active", Missing.TRUNCATED)
        b.gpu.mark_missing("clock_event_reasons_supported", Missing.TRUNCATED)
    elif fields.reasons:
        active: list[str] = []
        supported: list[str] = []
        for name in CLOCK_EVENT_REASONS:
            raw = fields.reasons.get(name)
            if raw is None:
                continue
            result = b.read(raw, parse_bool, f"clock event reason {name}")
            if result.value is None:
                continue
            supported.append(name)
            if result.value:
                active.append(name)
        if supported:
            b.gpu.clock_event_reasons_active = active
            b.gpu.clock_event_reasons_supported = supported
        else:
            b.gpu.mark_missing("clock_event_reasons_active", Missing.REPORTED_NA)
            b.gpu.mark_missing("clock_event_reasons_supported", Missing.REPORTED_NA)
    elif fields.reasons_section is not None:
        reason = na_reason(fields.reasons_section.text) or Missing.REPORTED_NA
        b.gpu.mark_missing("clock_event_reasons_active", reason)
        b.gpu.mark_missing("clock_event_reasons_supported", reason)
    if COUNTERS in fields.cut_groups:
        b.gpu.mark_missing("clock_event_durations_us", Missing.TRUNCATED)
    elif fields.counters:
        durations: dict[str, float] = {}
        for name, raw in fields.counters.items():
            duration = b.read(raw, _microseconds, f"clock event counter {name}")
            if duration.value is None:
                continue
            if out_of_bounds("clock_event_durations_us", duration.value) is not None:
                b.note(f"clock event counter {name}: {duration.value:g} us is not a duration", raw)
                continue
            durations[name] = duration.value
        if durations:
            b.gpu.clock_event_durations_us = durations
        else:
            b.gpu.mark_missing("clock_event_durations_us", Missing.REPORTED_NA)


def _build_memory_health(b: _Builder) -> None:
    fields = b.fields
    b.total("ecc_uncorrected_volatile", fields.ecc_uncorrected_volatile)
    b.total("ecc_uncorrected_aggregate", fields.ecc_uncorrected_aggregate)
    b.total("ecc_corrected_volatile", fields.ecc_corrected_volatile)
    b.set("remapped_rows_correctable", b.parsed("remapped_correctable", parse_int))
    b.set("remapped_rows_uncorrectable", b.parsed("remapped_uncorrectable", parse_int))
    b.set("remapped_rows_pending", b.parsed("remapped_pending", parse_bool))
    b.set("remapped_rows_failure", b.parsed("remapped_failure", parse_bool))
    b.set("retired_pages_sbe", b.parsed("retired_sbe", parse_int))
    b.set("retired_pages_dbe", b.parsed("retired_dbe", parse_int))
    b.set("retired_pages_pending", b.parsed("retired_pending", parse_bool))
