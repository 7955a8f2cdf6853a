"""Small pieces shared by the nvidia-smi text parsers.

- Input hygiene: :func:`check_text` (empty file, binary garbage -> ParseError), :func:`strip_ansi`.
- Value parsers: ``"55.63 W" -> 55.63``, ``"16x" -> 16``, ``"Enabled" -> True``. Each returns a
  :class:`Parsed`: a value, or ``None`` with the reason it is missing (``"N/A"`` -> REPORTED_NA).
- :class:`GpuFields` and :func:`build_gpu`: the ``-q`` text and ``-q -x`` XML parsers both collect the
  raw strings they find under canonical keys, and one builder turns them into a :class:`Gpu`, so
  the two formats give the same fields with the same semantics.
- :func:`finish_missing`: every field still ``None`` and without a reason becomes NOT_IN_SOURCE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS, Diagnostic, Gpu, Missing, NvLink, Record
from rigcheck.probe.smi.ansi import strip_ansi

T = TypeVar("T")

# C0 controls that never occur in nvidia-smi output (tab, LF, VT, FF, CR and ESC are allowed).
_BAD_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd\ud800-\udfff]")


def check_text(text: str, path: str | None = None) -> None:
    """Reject input no nvidia-smi command prints: an empty file, or binary data (NUL bytes, ...)."""
    if not text.strip():
        raise ParseError("empty file", path=path)
    bad = _BAD_CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        what = "NUL byte" if bad.group() == "\x00" else f"character {bad.group()!r}"
        raise ParseError(f"binary data ({what}), not nvidia-smi output", path=path, line=line)


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` with ANSI escapes removed, tabs kept."""
    return strip_ansi(text).splitlines()


# --- missing values -----------------------------------------------------------------------------

_NA_REASONS: dict[str, Missing] = {
    "n/a": Missing.REPORTED_NA,
    "na": Missing.REPORTED_NA,
    "not supported": Missing.REPORTED_NA,
    "requested functionality has been deprecated": Missing.REPORTED_NA,
    "not found": Missing.REPORTED_NA,
    "not available": Missing.REPORTED_NA,
    "unknown": Missing.REPORTED_NA,
    "-": Missing.REPORTED_NA,
    "insufficient permissions": Missing.NO_PERMISSION,
    "no permission": Missing.NO_PERMISSION,
    "gpu requires reset": Missing.GPU_LOST,
    "gpu is lost": Missing.GPU_LOST,
    "err!": Missing.ERROR,
    "unknown error": Missing.ERROR,
    "error": Missing.ERROR,
}


def na_reason(raw: str) -> Missing | None:
    """Why a printed value is not a value: ``"N/A"``, ``"[Not Supported]"``, ``"ERR!"``; else None."""
    key = raw.strip().strip("[]").strip().lower()
    return _NA_REASONS.get(key)


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A parsed value, or ``None`` with the reason (``error`` holds why a value did not parse)."""

    value: T | None
    reason: Missing | None = None
    error: str | None = None


def _parse(raw: str, convert: Callable[[str], T | None], what: str) -> Parsed[T]:
    reason = na_reason(raw)
    if reason is not None:
        return Parsed(None, reason)
    value = convert(raw.strip())
    if value is None:
        return Parsed(None, Missing.ERROR, f"cannot read {raw.strip()!r} as {what}")
    return Parsed(value)


_NUMBER = r"([-+]?\d+(?:\.\d+)?)"


def _number_with_units(units: dict[str, float]) -> Callable[[str], float | None]:
    pattern = re.compile(
        rf"^{_NUMBER}\s*({'|'.join(re.escape(u) for u in sorted(units, key=len, reverse=True))})?$",
        re.IGNORECASE,
    )
    lowered = {u.lower(): f for u, f in units.items()}

    def convert(text: str) -> float | None:
        match = pattern.match(text)
        if match is None:
            return None
        factor = lowered[match.group(2).lower()] if match.group(2) else 1.0
        return float(match.group(1)) * factor

    return convert


_WATTS = _number_with_units({"W": 1.0, "mW": 0.001})
_CELSIUS = _number_with_units({"C": 1.0})
_MIB = _number_with_units({"MiB": 1.0, "GiB": 1024.0, "KiB": 1 / 1024, "MB": 1.0, "GB": 1024.0})
_PERCENT = _number_with_units({"%": 1.0})
_MHZ = _number_with_units({"MHz": 1.0, "GHz": 1000.0})
_MICROSECONDS = _number_with_units({"us": 1.0, "ns": 0.001, "ms": 1000.0, "s": 1e6})
_GBPS = _number_with_units({"GB/s": 1.0, "MB/s": 0.001})


def parse_watts(raw: str) -> Parsed[float]:
    """``"55.63 W"`` or ``"74W"`` -> 55.63 / 74.0."""
    return _parse(raw, _WATTS, "watts")


def parse_celsius(raw: str) -> Parsed[float]:
    """``"33 C"``, ``"31C"``, ``"-8 C"`` -> degrees Celsius."""
    return _parse(raw, _CELSIUS, "degrees C")


def parse_mib(raw: str) -> Parsed[float]:
    """``"81559 MiB"`` or ``"2MiB"`` -> MiB."""
    return _parse(raw, _MIB, "MiB")


def parse_percent(raw: str) -> Parsed[float]:
    """``"0 %"`` or ``"30%"`` -> percent."""
    return _parse(raw, _PERCENT, "percent")


def parse_mhz(raw: str) -> Parsed[float]:
    """``"345 MHz"`` -> MHz."""
    return _parse(raw, _MHZ, "MHz")


def parse_microseconds(raw: str) -> Parsed[float]:
    """``"33534556 us"`` -> microseconds."""
    return _parse(raw, _MICROSECONDS, "a duration")


def parse_gbps(raw: str) -> Parsed[float]:
    """``"25.781 GB/s"`` -> GB/s."""
    return _parse(raw, _GBPS, "GB/s")


def _to_int(text: str) -> int | None:
    match = re.match(r"^[+]?(\d+)$", text)
    return int(match.group(1)) if match else None


def parse_int(raw: str) -> Parsed[int]:
    """A plain count, ``"0"`` -> 0."""
    return _parse(raw, _to_int, "a count")


def _to_width(text: str) -> int | None:
    match = re.match(r"^x?(\d+)x?$", text, re.IGNORECASE)
    return int(match.group(1)) if match else None


def parse_width(raw: str) -> Parsed[int]:
    """A PCIe link width, ``"16x"`` -> 16."""
    return _parse(raw, _to_width, "a link width")


def _to_gen(text: str) -> int | None:
    match = re.match(r"^(?:gen\s*)?(\d+)$", text, re.IGNORECASE)
    return int(match.group(1)) if match else None


def parse_gen(raw: str) -> Parsed[int]:
    """A PCIe generation, ``"5"`` -> 5."""
    return _parse(raw, _to_gen, "a PCIe generation")


_TRUE = {"enabled", "on", "yes", "active", "true", "enable"}
_FALSE = {"disabled", "off", "no", "not active", "inactive", "false", "disable"}


def _to_bool(text: str) -> bool | None:
    key = text.strip().lower()
    if key in _TRUE:
        return True
    if key in _FALSE:
        return False
    return None


def parse_bool(raw: str) -> Parsed[bool]:
    """``"Enabled"/"On"/"Yes"/"Active"`` -> True, ``"Disabled"/"Off"/"No"/"Not Active"`` -> False."""
    return _parse(raw, _to_bool, "on/off")


def parse_str(raw: str) -> Parsed[str]:
    """A string as printed (stripped), or missing if it is N/A."""
    return _parse(raw, lambda t: t or None, "text")


_COMPUTE_MODES = {
    "default": "Default",
    "exclusive_process": "Exclusive_Process",
    "exclusive process": "Exclusive_Process",
    "e. process": "Exclusive_Process",
    "exclusive_thread": "Exclusive_Thread",
    "exclusive thread": "Exclusive_Thread",
    "e. thread": "Exclusive_Thread",
    "prohibited": "Prohibited",
}


def parse_compute_mode(raw: str) -> Parsed[str]:
    """``"Default"``, ``"Exclusive_Process"`` (the table's ``"E. Process"``), ``"Prohibited"``."""
    return _parse(raw, lambda t: _COMPUTE_MODES.get(t.lower(), t or None), "a compute mode")


# --- clock-event reasons --------------------------------------------------------------------------

# Labels printed by `nvidia-smi -q` ("Clocks Throttle Reasons" / "Clocks Event Reasons") and the
# suffixes of the XML elements (clocks_throttle_reason_<suffix> / clocks_event_reason_<suffix>).
REASON_BY_LABEL: dict[str, str] = {
    "idle": "idle",
    "gpu idle": "idle",
    "gpu_idle": "idle",
    "applications clocks setting": "applications_clocks_setting",
    "applications_clocks_setting": "applications_clocks_setting",
    "user defined clocks": "applications_clocks_setting",
    "user_defined_clocks": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "sw_power_cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw_slowdown": "hw_slowdown",
    "sync boost": "sync_boost",
    "sync_boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "sw_thermal_slowdown": "sw_thermal_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw_thermal_slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown",
    "display clock setting": "display_clock_setting",
    "display clocks setting": "display_clock_setting",
    "display_clock_setting": "display_clock_setting",
    "display_clocks_setting": "display_clock_setting",
}

# Labels of the "Clocks Event Reasons Counters" section (and the XML counter element suffixes).
COUNTER_BY_LABEL: dict[str, str] = {
    "sw power capping": "sw_power_cap",
    "sw power cap": "sw_power_cap",
    "sw_power_cap": "sw_power_cap",
    "sync boost": "sync_boost",
    "sync_boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "sw_therm_slowdown": "sw_thermal_slowdown",
    "sw_thermal_slowdown": "sw_thermal_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw_therm_slowdown": "hw_thermal_slowdown",
    "hw_thermal_slowdown": "hw_thermal_slowdown",
    "hw power braking": "hw_power_brake_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "hw_power_brake": "hw_power_brake_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown",
    "hw slowdown": "hw_slowdown",
    "hw_slowdown": "hw_slowdown",
    "idle": "idle",
    "gpu_idle": "idle",
}


# --- the shared builder ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """A value as printed, with the line it came from (None where the format has no lines)."""

    text: str
    line: int | None = None


@dataclass
class GpuFields:
    """Raw strings one GPU section holds, under canonical keys (see :func:`build_gpu`).

    Scalar keys: name, uuid, bus_id, architecture, persistence, mig, ecc_mode, fan, pstate,
    compute_mode, mem_total, mem_used, util_gpu, clock_graphics, clock_sm, clock_mem,
    clock_graphics_max, clock_sm_max, clock_mem_max, pcie_gen_max, pcie_gen_current,
    pcie_gen_gpu_max, pcie_width_max, pcie_width_current, replays, power_instant, power_draw,
    power_average, power_current_limit, power_limit, power_enforced_limit, power_default_limit,
    power_min_limit, power_max_limit, temp_gpu, temp_memory, temp_target, temp_tlimit,
    temp_shutdown, temp_slowdown, temp_max_operating, temp_memory_max, temp_shutdown_offset,
    temp_slowdown_offset, temp_max_operating_offset, temp_memory_max_offset, remapped_correctable,
    remapped_uncorrectable, remapped_pending, remapped_failure, retired_sbe, retired_dbe,
    retired_pending.
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

    def put(self, key: str, raw: Raw | None) -> None:
        """Keep the first value seen for ``key``."""
        if raw is not None and key not in self.values:
            self.values[key] = raw

    def __bool__(self) -> bool:
        return bool(
            self.values
            or self.reasons
            or self.reasons_section
            or self.counters
            or self.ecc_uncorrected_volatile
            or self.ecc_uncorrected_aggregate
            or self.ecc_corrected_volatile
            or self.nvlinks is not None
        )


class _Builder:
    def __init__(self, gpu: Gpu, fields: GpuFields, source: str, diagnostics: list[Diagnostic]) -> None:
        self.gpu = gpu
        self.fields = fields
        self.source = source
        self.diagnostics = diagnostics

    def note(self, message: str, raw: Raw | None) -> None:
        where = f" (line {raw.line})" if raw is not None and raw.line is not None else ""
        self.diagnostics.append(Diagnostic(source=self.source, message=f"{message}{where}", gpu=self.gpu.index))

    def parsed(self, key: str, parse: Callable[[str], Parsed[T]]) -> Parsed[T] | None:
        raw = self.fields.values.get(key)
        if raw is None:
            return None
        result = parse(raw.text)
        if result.error is not None:
            self.note(f"{key}: {result.error}", raw)
        return result

    def set(self, attr: str, result: Parsed[T] | None) -> None:
        """Store a parsed value on the GPU, or its reason; None (not in the text) leaves it alone."""
        if result is None:
            return
        if result.value is not None:
            setattr(self.gpu, attr, result.value)
            self.gpu.missing.pop(attr, None)
        elif result.reason is not None:
            self.gpu.mark_missing(attr, result.reason)

    def first(self, attr: str, keys: Iterable[str], parse: Callable[[str], Parsed[T]]) -> Parsed[T] | None:
        """The first key that holds a value wins; else the first that was printed (with its reason)."""
        printed: Parsed[T] | None = None
        for key in keys:
            result = self.parsed(key, parse)
            if result is None:
                continue
            if result.value is not None:
                self.set(attr, result)
                return result
            if printed is None:
                printed = result
        self.set(attr, printed)
        return printed

    def total(self, attr: str, raws: list[Raw]) -> None:
        """Sum of counters (None with the first reason when any is N/A)."""
        if not raws:
            return
        total = 0
        for raw in raws:
            result = parse_int(raw.text)
            if result.error is not None:
                self.note(f"{attr}: {result.error}", raw)
            if result.value is None:
                self.set(attr, result)
                return
            total += result.value
        self.set(attr, Parsed(total))


def build_gpu(index: int, fields: GpuFields, source: str, diagnostics: list[Diagnostic]) -> Gpu:
    """Turn one GPU's raw strings into a :class:`Gpu`; see the field docs in model/snapshot.py."""
    gpu = Gpu(index=index)
    b = _Builder(gpu, fields, source, diagnostics)

    for attr, key in (("name", "name"), ("uuid", "uuid"), ("pci_bus_id", "bus_id"), ("architecture", "architecture")):
        b.set(attr, b.parsed(key, parse_str))
    b.set("pstate", b.parsed("pstate", parse_str))
    b.set("compute_mode", b.parsed("compute_mode", parse_compute_mode))
    b.set("persistence_mode", b.parsed("persistence", parse_bool))
    b.set("mig_enabled", b.parsed("mig", parse_bool))
    b.set("ecc_enabled", b.parsed("ecc_mode", parse_bool))
    b.set("fan_percent", b.parsed("fan", parse_percent))
    b.set("memory_total_mib", b.parsed("mem_total", parse_mib))
    b.set("memory_used_mib", b.parsed("mem_used", parse_mib))
    b.set("utilization_gpu_percent", b.parsed("util_gpu", parse_percent))
    for attr, key in (
        ("clock_graphics_mhz", "clock_graphics"),
        ("clock_sm_mhz", "clock_sm"),
        ("clock_mem_mhz", "clock_mem"),
        ("clock_graphics_max_mhz", "clock_graphics_max"),
        ("clock_sm_max_mhz", "clock_sm_max"),
        ("clock_mem_max_mhz", "clock_mem_max"),
    ):
        b.set(attr, b.parsed(key, parse_mhz))

    # PCIe.
    b.set("pcie_gen_max", b.parsed("pcie_gen_max", parse_gen))
    b.set("pcie_gen_current", b.parsed("pcie_gen_current", parse_gen))
    b.set("pcie_gen_gpu_max", b.parsed("pcie_gen_gpu_max", parse_gen))
    b.set("pcie_width_max", b.parsed("pcie_width_max", parse_width))
    b.set("pcie_width_current", b.parsed("pcie_width_current", parse_width))
    b.set("pcie_replay_count", b.parsed("replays", parse_int))

    # Power: instantaneous draw where given, else "Power Draw", else the average.
    b.first("power_draw_w", ("power_instant", "power_draw", "power_average"), parse_watts)
    b.set("power_draw_avg_w", b.parsed("power_average", parse_watts))
    b.first("power_limit_w", ("power_current_limit", "power_limit"), parse_watts)
    b.set("power_enforced_limit_w", b.parsed("power_enforced_limit", parse_watts))
    b.set("power_default_limit_w", b.parsed("power_default_limit", parse_watts))
    b.set("power_min_limit_w", b.parsed("power_min_limit", parse_watts))
    b.set("power_max_limit_w", b.parsed("power_max_limit", parse_watts))

    _build_temperatures(b)
    _build_reasons(b)
    _build_memory_health(b)

    if fields.nvlinks is not None:
        for link in fields.nvlinks:
            finish_missing(link)
        gpu.nvlinks = fields.nvlinks
    finish_missing(gpu)
    return gpu


def _build_temperatures(b: _Builder) -> None:
    current = b.parsed("temp_gpu", parse_celsius)
    b.set("temp_c", current)
    b.set("temp_memory_c", b.parsed("temp_memory", parse_celsius))
    b.set("temp_target_c", b.parsed("temp_target", parse_celsius))
    margin = b.parsed("temp_tlimit", parse_celsius)
    b.set("temp_tlimit_margin_c", margin)
    # Absolute thresholds (old format, XML *_threshold).
    b.set("temp_shutdown_c", b.parsed("temp_shutdown", parse_celsius))
    b.set("temp_slowdown_c", b.parsed("temp_slowdown", parse_celsius))
    b.set("temp_max_operating_c", b.parsed("temp_max_operating", parse_celsius))
    b.set("temp_memory_max_c", b.parsed("temp_memory_max", parse_celsius))
    # T.Limit format: offsets from T.Limit; T.Limit itself is the current temperature plus the margin.
    for attr, key in (
        ("temp_shutdown_c", "temp_shutdown_offset"),
        ("temp_slowdown_c", "temp_slowdown_offset"),
        ("temp_max_operating_c", "temp_max_operating_offset"),
    ):
        offset = b.parsed(key, parse_celsius)
        if offset is None or getattr(b.gpu, attr) is not None:
            continue
        if offset.value is None:
            b.set(attr, offset)
        elif current is None or margin is None:
            b.gpu.mark_missing(attr, Missing.NOT_IN_SOURCE)
        elif current.value is None or margin.value is None:
            b.gpu.mark_missing(attr, current.reason or margin.reason or Missing.REPORTED_NA)
        else:
            b.set(attr, Parsed(current.value + margin.value - offset.value))
    # A memory threshold given as a T.Limit offset cannot be made absolute: there is no memory T.Limit.
    memory_offset = b.parsed("temp_memory_max_offset", parse_celsius)
    if memory_offset is not None and memory_offset.reason is not None and b.gpu.temp_memory_max_c is None:
        b.set("temp_memory_max_c", memory_offset)


def _build_reasons(b: _Builder) -> None:
    fields = b.fields
    if fields.reasons:
        active: list[str] = []
        supported: list[str] = []
        for name in CLOCK_EVENT_REASONS:
            raw = fields.reasons.get(name)
            if raw is None:
                continue
            result = parse_bool(raw.text)
            if result.error is not None:
                b.note(f"clock event reason {name}: {result.error}", raw)
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
    if fields.counters:
        durations: dict[str, float] = {}
        for name, raw in fields.counters.items():
            duration = parse_microseconds(raw.text)
            if duration.error is not None:
                b.note(f"clock event counter {name}: {duration.error}", raw)
            if duration.value is not None:
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


# Fields of a record that are never "missing": identity and bookkeeping.
def finish_missing(record: Record, fields: Iterable[str] | None = None) -> None:
    """Mark every field still ``None`` and without a reason as NOT_IN_SOURCE (the text does not hold it)."""
    record.mark_unset_missing(Missing.NOT_IN_SOURCE, fields)


_ABSENT_PHRASES = (
    "no devices were found",
    "nvidia-smi has failed because it couldn't communicate with the nvidia driver",
    "couldn't communicate with the nvidia driver",
    "no nvidia gpu found",
    "unable to determine the device handle",
)


def absent_reason(text: str) -> str | None:
    """The message nvidia-smi prints instead of data when it sees no GPU (or no driver), if any."""
    for line in text_lines(text):
        lowered = line.strip().lower()
        if any(phrase in lowered for phrase in _ABSENT_PHRASES):
            return line.strip()
    return None
