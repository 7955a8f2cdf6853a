"""Small pieces shared by the nvidia-smi parsers.

- Input hygiene: :func:`check_text` (empty file, binary garbage -> ParseError), :func:`strip_ansi`.
- Value parsers: ``"55.63 W" -> 55.63``, ``"16x" -> 16``, ``"Enabled" -> True``. Each returns a
  :class:`Parsed`: a value, or ``None`` with the reason it is missing (``"N/A"`` -> REPORTED_NA). With
  ``unit=True`` a number must carry the unit its format always prints: ``"70"`` where nvidia-smi prints
  ``"700.00 W"`` is the start of a cut line, so it is TRUNCATED, never 70 W.
- :class:`Raw`: a value as printed, with its line and whether that line was cut.
- :func:`finish_missing`: every field still ``None`` and without a reason gets one (NOT_IN_SOURCE).

The builder that turns the raw strings of ``-q`` and ``-q -x`` into a Gpu is in build.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Missing, Record
from rigcheck.probe.driver import ascii_quotes
from rigcheck.readers.smi.ansi import strip_ansi

T = TypeVar("T")

# C0 controls that never occur in nvidia-smi output (tab, LF, VT, FF, CR and ESC are allowed).
BAD_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd\ud800-\udfff]")


def check_text(text: str, path: str | None = None) -> None:
    """Reject input no nvidia-smi command prints: an empty file, or binary data (NUL bytes, ...)."""
    if not text.strip():
        raise ParseError("empty file", path=path)
    bad = BAD_CONTROL.search(text)
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
    "gpu access blocked by the operating system": Missing.NO_PERMISSION,
    "no data": Missing.REPORTED_NA,
    # nvidia-smi prints NVML's error string (nvmlErrorString) where a call failed; the table prints ERR!.
    "gpu requires reset": Missing.GPU_LOST,
    "gpu is lost": Missing.GPU_LOST,
    "err!": Missing.ERROR,
    "unknown error": Missing.ERROR,
    "error": Missing.ERROR,
    "timeout": Missing.ERROR,
    "insufficient external power": Missing.ERROR,
    "driver not loaded": Missing.ERROR,
    "corrupted inforom": Missing.ERROR,
    "uninitialized": Missing.ERROR,
    "insufficient memory": Missing.ERROR,
    "insufficient resources": Missing.ERROR,
    "interrupt request issue": Missing.ERROR,
}


def na_reason(raw: str) -> Missing | None:
    """Why a printed value is not a value: ``"N/A"``, ``"[Not Supported]"``, ``"ERR!"``; else None."""
    key = raw.strip().strip("[]").strip().rstrip(".").lower()
    return _NA_REASONS.get(key)


@dataclass(frozen=True)
class Raw:
    """A value as printed, with the line it came from (None where the format has no lines).

    ``cut``: the value sits where the input ends (the last line, with no line end, or an XML element the
    file ends inside): it may be the start of a longer value. ``Raw("", cut=True)`` stands for a value
    that would have come after the cut.
    """

    text: str
    line: int | None = None
    cut: bool = False
    # A counter a GPU may print N/A beside counted ones (SRAM ECC on a vGPU guest, whose DRAM counts are there):
    # totals sum around it where it is N/A, and say so, instead of losing the others.
    optional: bool = False


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A parsed value, or ``None`` with the reason (``error`` holds why a value did not parse)."""

    value: T | None
    reason: Missing | None = None
    error: str | None = None


class _NoUnit(Exception):
    """A number printed without the unit its format always prints."""


def _parse(raw: str, convert: Callable[[str], T | None], what: str) -> Parsed[T]:
    reason = na_reason(raw)
    if reason is not None:
        return Parsed(None, reason)
    try:
        value = convert(raw.strip())
    except _NoUnit:
        return Parsed(None, Missing.TRUNCATED, f"{raw.strip()!r} has no unit: the line was cut")
    if value is None:
        return Parsed(None, Missing.ERROR, f"cannot read {raw.strip()!r} as {what}")
    return Parsed(value)


_NUMBER = r"([-+]?\d+(?:\.\d+)?)"


def _number_with_units(units: dict[str, float], *, unit: bool) -> Callable[[str], float | None]:
    pattern = re.compile(
        rf"^{_NUMBER}\s*({'|'.join(re.escape(u) for u in sorted(units, key=len, reverse=True))})?$",
        re.IGNORECASE,
    )
    lowered = {u.lower(): f for u, f in units.items()}

    def convert(text: str) -> float | None:
        match = pattern.match(text)
        if match is None:
            return None
        if not match.group(2):
            if unit:
                raise _NoUnit
            return float(match.group(1))
        return float(match.group(1)) * lowered[match.group(2).lower()]

    return convert


_UNITS: dict[str, dict[str, float]] = {
    "watts": {"W": 1.0, "mW": 0.001},
    "degrees C": {"C": 1.0},
    "MiB": {"MiB": 1.0, "GiB": 1024.0, "KiB": 1 / 1024, "MB": 1.0, "GB": 1024.0},
    "percent": {"%": 1.0},
    "MHz": {"MHz": 1.0, "GHz": 1000.0},
    "a duration": {"us": 1.0, "ns": 0.001, "ms": 1000.0, "s": 1e6},
    "GB/s": {"GB/s": 1.0, "MB/s": 0.001},
}
_CONVERT = {(what, unit): _number_with_units(u, unit=unit) for what, u in _UNITS.items() for unit in (False, True)}


def _parse_number(raw: str, what: str, unit: bool) -> Parsed[float]:
    return _parse(raw, _CONVERT[what, unit], what)


def parse_watts(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"55.63 W"`` or ``"74W"`` -> 55.63 / 74.0 (``unit=True``: ``"74"`` is TRUNCATED)."""
    return _parse_number(raw, "watts", unit)


def parse_celsius(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"33 C"``, ``"31C"``, ``"-8 C"`` -> degrees Celsius."""
    return _parse_number(raw, "degrees C", unit)


def parse_mib(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"81559 MiB"`` or ``"2MiB"`` -> MiB."""
    return _parse_number(raw, "MiB", unit)


def parse_percent(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"0 %"`` or ``"30%"`` -> percent."""
    return _parse_number(raw, "percent", unit)


def parse_mhz(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"345 MHz"`` -> MHz."""
    return _parse_number(raw, "MHz", unit)


def parse_microseconds(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"33534556 us"`` -> microseconds."""
    return _parse_number(raw, "a duration", unit)


def parse_gbps(raw: str, *, unit: bool = False) -> Parsed[float]:
    """``"25.781 GB/s"`` -> GB/s."""
    return _parse_number(raw, "GB/s", unit)


def _to_int(text: str) -> int | None:
    match = re.match(r"^[+]?(\d+)$", text)
    return int(match.group(1)) if match else None


def parse_int(raw: str) -> Parsed[int]:
    """A plain count, ``"0"`` -> 0."""
    return _parse(raw, _to_int, "a count")


def _to_width(text: str) -> int | None:
    match = re.match(r"^x?(\d+)x?$", text, re.IGNORECASE)
    return int(match.group(1)) if match else None


def _to_width_with_x(text: str) -> int | None:
    match = re.match(r"^(\d+)(x?)$", text, re.IGNORECASE)
    if match is None:
        return _to_width(text)
    if not match.group(2):
        raise _NoUnit
    return int(match.group(1))


def parse_width(raw: str, *, unit: bool = False) -> Parsed[int]:
    """A PCIe link width, ``"16x"`` -> 16 (``unit=True``: ``"1"``, a cut ``"16x"``, is TRUNCATED)."""
    return _parse(raw, _to_width_with_x if unit else _to_width, "a link width")


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


# Fields of a record that are never "missing": identity and bookkeeping.
def finish_missing(record: Record, fields: Iterable[str] | None = None) -> None:
    """Mark every field still ``None`` and without a reason as NOT_IN_SOURCE (the text does not hold it)."""
    record.mark_unset_missing(Missing.NOT_IN_SOURCE, fields)


_ABSENT_PHRASES = (
    "no devices were found",
    "nvidia-smi has failed because it couldn't communicate with the nvidia driver",
    "couldn't communicate with the nvidia driver",
    "no nvidia gpu found",
)


def absent_reason(text: str) -> str | None:
    """The message nvidia-smi prints instead of data when it sees no GPU (or no driver), if any."""
    for line in text_lines(text):
        lowered = ascii_quotes(line.strip().lower())  # "couldn’t" as pasted from a web page or a chat
        if any(phrase in lowered for phrase in _ABSENT_PHRASES):
            return line.strip()
    return None
