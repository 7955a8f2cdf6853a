"""Telemetry traces on disk: read any of three formats into a :class:`Trace`.

Formats (told apart by their first line):

- **nvidia-smi CSV**, as ``nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv[,nounits]
  -lms 100`` writes it, parsed here. Columns are found by their header names, in any order and any subset;
  units in the header (``power.draw [W]``) and in the values (``127.87 W``) are stripped; ``[N/A]``, ``N/A``,
  ``[Not Supported]`` become ``None``; ``[GPU is lost]`` marks the GPU lost at that sample. Clock-event
  reasons come from the hex bit mask (``clocks_event_reasons.active``, or the older
  ``clocks_throttle_reasons.active``), decoded with nvml.h's bit order (bit i = CLOCK_EVENT_REASONS[i]),
  or from the per-reason columns (``clocks_event_reasons.sw_power_cap`` = ``Active`` / ``Not Active``).
  Timestamps (``2026/11/22 18:08:32.717``) become seconds since the first sample. Several GPUs
  interleave, told apart by ``index`` (else ``uuid`` / ``pci.bus_id``). Columns rigcheck does not use
  are ignored, and named in the trace's diagnostics.
- **rigcheck JSONL** and **rigcheck CSV** (``rigcheck.trace/1``): rigcheck's own file format, read and written
  by rigcheck.model.trace.

A last line cut short (the writer crashed mid-line) is skipped with a diagnostic; anything else that
does not parse is a :class:`ParseError` naming the file and line.
"""

from __future__ import annotations

import csv
import itertools
import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS, Missing
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.model.trace import CSV_COMMENT, Lines, csv_rows, read_rigcheck_csv, read_rigcheck_jsonl, skip_truncated
from rigcheck.probe.from_file import read_text
from rigcheck.probe.smi.values import (
    REASON_BY_LABEL,
    Parsed,
    check_text,
    na_reason,
    parse_bool,
    parse_celsius,
    parse_mhz,
    parse_percent,
    parse_str,
    parse_watts,
)

# An nvidia-smi trace without a timestamp column is taken to be sampled at the issue's `-lms 100`.
DEFAULT_INTERVAL_S = 0.1


# --- reading ------------------------------------------------------------------------------------


def read_trace(path: str) -> Trace:
    """Read a trace file ("-" for stdin) in any of the three formats."""
    text = read_text(path, "a telemetry trace (nvidia-smi --query-gpu CSV, or rigcheck CSV/JSONL)")
    check_text(text, path)
    first = next(line for line in text.splitlines() if line.strip()).strip()
    if first.startswith(CSV_COMMENT.strip()):
        trace = read_rigcheck_csv(text, path)
    elif first.startswith("{"):
        trace = read_rigcheck_jsonl(text, path)
    else:
        trace = _read_smi_csv(text, path)
    if not trace.samples:
        raise ParseError("no samples in the trace", path=path)
    trace.path = path
    return trace


# --- nvidia-smi --query-gpu CSV -----------------------------------------------------------------

_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")
_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")
_TIMESTAMP_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")

# nvidia-smi field (as asked, or as its header prints it) -> Sample field; earlier names win when a file has both.
_SMI_FIELDS: dict[str, tuple[str, ...]] = {
    "power_w": ("power.draw", "power.draw.average", "power.draw.instant"),
    "power_limit_w": ("enforced.power.limit", "power.limit"),
    "temp_c": ("temperature.gpu",),
    "temp_memory_c": ("temperature.memory",),
    "sm_clock_mhz": ("clocks.current.sm", "clocks.sm"),
    "sm_clock_max_mhz": ("clocks.max.sm", "clocks.max.sm_clock"),
    "mem_clock_mhz": ("clocks.current.memory", "clocks.mem"),
    "utilization_gpu_percent": ("utilization.gpu",),
}
_SMI_PARSERS: dict[str, Callable[[str], Parsed[float]]] = {
    "power_w": parse_watts,
    "power_limit_w": parse_watts,
    "temp_c": parse_celsius,
    "temp_memory_c": parse_celsius,
    "sm_clock_mhz": parse_mhz,
    "sm_clock_max_mhz": parse_mhz,
    "mem_clock_mhz": parse_mhz,
    "utilization_gpu_percent": parse_percent,
}
_MASK_NAMES = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
_IDENTITY_NAMES = ("uuid", "pci.bus_id", "gpu_uuid", "gpu_bus_id")
_NAME_NAMES = ("name", "gpu_name")
_DEFAULT_LIMIT_NAMES = ("power.default_limit",)
# Known, deliberately unused (no Sample field): listed so they are not reported as unknown.
_KNOWN_UNUSED = frozenset(
    {
        "temperature.gpu.tlimit",
        "clocks_event_reasons.supported",
        "clocks_throttle_reasons.supported",
        "power.min_limit",
        "power.max_limit",
        "driver_version",
        "pstate",
    }
)


def _column_key(header: str) -> str:
    return _UNIT_SUFFIX.sub("", header.strip()).strip().lower()


@dataclass
class _SmiColumns:
    """Where each quantity sits in an nvidia-smi CSV row."""

    timestamp: int | None
    index: int | None
    identity: int | None
    name: int | None
    default_limit: int | None
    values: dict[str, int]  # Sample field -> column
    mask: int | None
    reason_flags: dict[str, int]  # reason name -> column ("Active" / "Not Active")
    ignored: list[str]

    @classmethod
    def find(cls, headers: list[str]) -> _SmiColumns:
        keys = [_column_key(h) for h in headers]

        def first_of(names: Iterable[str]) -> int | None:
            for name in names:
                if name in keys:
                    return keys.index(name)
            return None

        values: dict[str, int] = {}
        for field_name, names in _SMI_FIELDS.items():
            col = first_of(names)
            if col is not None:
                values[field_name] = col
        flags: dict[str, int] = {}
        for col, key in enumerate(keys):
            for prefix in _REASON_PREFIXES:
                if key.startswith(prefix) and key[len(prefix) :] in REASON_BY_LABEL:
                    flags.setdefault(REASON_BY_LABEL[key[len(prefix) :]], col)
        found = cls(
            timestamp=first_of(["timestamp"]),
            index=first_of(["index"]),
            identity=first_of(_IDENTITY_NAMES),
            name=first_of(_NAME_NAMES),
            default_limit=first_of(_DEFAULT_LIMIT_NAMES),
            values=values,
            mask=first_of(_MASK_NAMES),
            reason_flags=flags,
            ignored=[],
        )
        used = {found.timestamp, found.index, found.identity, found.name, found.default_limit, found.mask}
        used |= set(values.values()) | set(flags.values())
        found.ignored = [
            h.strip() for col, h in enumerate(headers) if col not in used and keys[col] not in _KNOWN_UNUSED
        ]
        return found

    def measures_something(self) -> bool:
        return bool(self.values or self.mask is not None or self.reason_flags)


def _looks_like_smi_header(cells: list[str]) -> bool:
    keys = {_column_key(c) for c in cells}
    known = {n for names in _SMI_FIELDS.values() for n in names} | set(_MASK_NAMES) | {"timestamp", "index"}
    return bool(keys & known) or any(k.startswith(_REASON_PREFIXES) for k in keys)


def _parse_timestamp(raw: str) -> datetime | None:
    text = raw.strip()
    for fmt in _TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def _parse_mask(raw: str) -> tuple[list[str] | None, bool]:
    """``"0x0000000000000004"`` -> (["sw_power_cap"], ok); N/A -> (None, ok); garbage -> (None, False)."""
    if na_reason(raw) is not None:
        return None, True
    try:
        mask = int(raw.strip(), 0)
    except ValueError:
        return None, False
    return [name for bit, name in enumerate(CLOCK_EVENT_REASONS) if mask >> bit & 1], True


class _RowError(ValueError):
    pass


def _smi_row(cols: _SmiColumns, cells: list[str], width: int) -> tuple[Sample, datetime | None, str | None]:
    """One row -> a Sample (t_s and gpu filled in by the caller), its timestamp, its GPU identity."""
    if len(cells) != width:
        raise _RowError(f"{len(cells)} fields, expected {width}")
    sample = Sample(t_s=0.0, gpu=0)
    lost = False
    for field_name, col in cols.values.items():
        raw = cells[col]
        parsed = _SMI_PARSERS[field_name](raw)
        if parsed.error is not None:
            raise _RowError(f"{field_name}: {parsed.error}")
        lost |= parsed.reason is Missing.GPU_LOST
        setattr(sample, field_name, parsed.value)
    if cols.mask is not None:
        raw = cells[cols.mask]
        lost |= na_reason(raw) is Missing.GPU_LOST
        reasons, ok = _parse_mask(raw)
        if not ok:
            raise _RowError(f"clock-event reasons {raw.strip()!r} is not a hex bit mask")
        sample.reasons = reasons
    if sample.reasons is None and cols.reason_flags:
        active: list[str] = []
        read_any = False
        for name in CLOCK_EVENT_REASONS:
            flag_col = cols.reason_flags.get(name)
            if flag_col is None:
                continue
            flag = parse_bool(cells[flag_col])
            if flag.error is not None:
                raise _RowError(f"{name}: {flag.error}")
            lost |= flag.reason is Missing.GPU_LOST
            if flag.value is not None:
                read_any = True
                if flag.value:
                    active.append(name)
        sample.reasons = active if read_any else None
    stamp: datetime | None = None
    if cols.timestamp is not None:
        stamp = _parse_timestamp(cells[cols.timestamp])
        if stamp is None:
            raise _RowError(f"timestamp {cells[cols.timestamp].strip()!r} is not 'YYYY/MM/DD HH:MM:SS.mmm'")
    identity: str | None = None
    if cols.index is not None:
        identity = cells[cols.index].strip()
        if not identity.isdigit():
            raise _RowError(f"index {identity!r} is not a GPU index")
    elif cols.identity is not None:
        identity = cells[cols.identity].strip()
    sample.lost = lost
    return sample, stamp, identity


def _read_smi_csv(text: str, path: str) -> Trace:
    lines = Lines.of(text).items
    header_no, header_line = lines[0]
    headers = [c.strip() for c in next(csv.reader([header_line], skipinitialspace=True))]
    if not _looks_like_smi_header(headers):
        raise ParseError(
            "not a telemetry trace: expected an nvidia-smi --query-gpu CSV header (timestamp, index, power.draw, "
            "temperature.gpu, ...), a rigcheck.trace/1 CSV or JSONL",
            path=path,
            line=header_no,
        )
    cols = _SmiColumns.find(headers)
    if not cols.measures_something():
        raise ParseError(
            "no column rigcheck can use (power.draw, power.limit, temperature.gpu, clocks.sm, utilization.gpu, "
            "clocks_event_reasons.active)",
            path=path,
            line=header_no,
        )
    trace = Trace(source="nvidia-smi-csv")
    if cols.ignored:
        trace.diagnostics.append(f"{path}: ignored columns rigcheck does not use: {', '.join(cols.ignored)}")
    header_keys = [_column_key(h) for h in headers]
    rows: list[tuple[Sample, datetime | None, str]] = []
    names: dict[str, str] = {}
    default_limits: dict[str, float] = {}
    for k, (number, cells) in enumerate(csv_rows(lines[1:]), 2):
        if [_column_key(c) for c in cells] == header_keys:
            continue  # nvidia-smi repeats its header when restarted into the same file
        try:
            sample, stamp, identity = _smi_row(cols, cells, len(headers))
        except _RowError as exc:
            if skip_truncated(path, number, k == len(lines), trace, str(exc)):
                continue
            raise ParseError(f"bad row: {exc}", path=path, line=number) from None
        key = identity or "0"
        if cols.name is not None:
            gpu_name = parse_str(cells[cols.name]).value
            if gpu_name is not None:
                names.setdefault(key, gpu_name)
        if cols.default_limit is not None:
            default = parse_watts(cells[cols.default_limit]).value
            if default is not None:
                default_limits.setdefault(key, default)
        rows.append((sample, stamp, key))

    # GPU numbers: the index column as printed; else identities numbered in order of appearance.
    order: dict[str, int] = {}
    for _, _, key in rows:
        if key not in order:
            order[key] = int(key) if cols.index is not None else len(order)
    if cols.timestamp is None and rows:
        trace.diagnostics.append(
            f"{path}: no timestamp column: samples taken to be {DEFAULT_INTERVAL_S:g} s apart (nvidia-smi -lms 100)"
        )
    start = next((stamp for _, stamp, _ in rows if stamp is not None), None)
    counts: dict[int, int] = {}
    for sample, stamp, key in rows:
        sample.gpu = order[key]
        n = counts.get(sample.gpu, 0)
        counts[sample.gpu] = n + 1
        if stamp is not None and start is not None:
            sample.t_s = (stamp - start).total_seconds()
        else:
            sample.t_s = n * DEFAULT_INTERVAL_S
        trace.samples.append(sample)
    for key, index in order.items():
        if key in names or key in default_limits:
            trace.gpus[index] = TraceGpu(
                index=index, name=names.get(key), power_default_limit_w=default_limits.get(key)
            )
    trace.interval_s = _median_interval(trace)
    return trace


def _median_interval(trace: Trace) -> float | None:
    steps: list[float] = []
    for index in trace.gpu_indices():
        times = [s.t_s for s in trace.for_gpu(index)]
        steps += [b - a for a, b in itertools.pairwise(times) if b > a]
    return round(statistics.median(steps), 4) if steps else None
