"""The nvidia-smi --query-gpu CSV of a trace, a row at a time: the columns its header names, each row parsed
(distinct cells and whole rows remembered), the GPUs' names and default limits into the trace's header.

Shared by the two ways of reading one (the interface between them): stream.py yields a Sample per row
(:meth:`SmiCsvReader.read_rows`), batches.py hands the same rows over as per-GPU columns for `burn --analyze`,
with the same parser (:class:`RowParser`, :class:`Row`), errors (:class:`RowError`) and header bookkeeping
(:meth:`SmiCsvReader.columns`, :meth:`SmiCsvReader.identify`).
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import cast

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS, Missing
from rigcheck.model.telemetry import GPU_COUNTER_FIELDS, Reading, Sample, Trace, TraceGpu, counter_median
from rigcheck.model.trace import (
    PendingBadLine,
    split_csv_line,
)
from rigcheck.readers.smi.query_csv import IDENTITY_NAMES as _IDENTITY_NAMES
from rigcheck.readers.smi.query_csv import MASK_NAMES as _MASK_NAMES
from rigcheck.readers.smi.query_csv import NAME_NAMES as _NAME_NAMES
from rigcheck.readers.smi.query_csv import REASON_PREFIXES as _REASON_PREFIXES
from rigcheck.readers.smi.query_csv import column_key as _column_key
from rigcheck.readers.smi.query_csv import parse_mask as _parse_mask
from rigcheck.readers.smi.query_csv import reason_of_column
from rigcheck.readers.smi.values import (
    Parsed,
    na_reason,
    parse_bool,
    parse_celsius,
    parse_int,
    parse_mhz,
    parse_percent,
    parse_str,
    parse_watts,
)

# An nvidia-smi trace without a timestamp column is taken to be sampled at the issue's `-lms 100`.
DEFAULT_INTERVAL_S = 0.1


# --- nvidia-smi --query-gpu CSV -----------------------------------------------------------------

# The field names (units dropped, reason columns, identity columns) are readers/smi/query_csv.py's, shared with the
# snapshot reader of a saved query.
_TIMESTAMP_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")

# nvidia-smi field (as asked, or as its header prints it) -> Sample field; earlier names win when a file has both.
_SMI_FIELDS: dict[str, tuple[str, ...]] = {
    "power_draw_w": ("power.draw", "power.draw.average", "power.draw.instant"),
    "power_enforced_limit_w": ("enforced.power.limit", "power.limit"),
    "temp_c": ("temperature.gpu",),
    "temp_memory_c": ("temperature.memory",),
    # The graphics clock stands in where a log has no SM clock: one domain on every NVIDIA GPU since Kepler, so
    # nvidia-smi -q prints the same Graphics and SM figures (NVML's NVML_CLOCK_GRAPHICS and NVML_CLOCK_SM).
    "sm_clock_mhz": ("clocks.current.sm", "clocks.sm", "clocks.current.graphics", "clocks.gr"),
    "sm_clock_max_mhz": ("clocks.max.sm", "clocks.max.sm_clock", "clocks.max.graphics", "clocks.max.gr"),
    "mem_clock_mhz": ("clocks.current.memory", "clocks.mem"),
    "utilization_gpu_percent": ("utilization.gpu",),
}
_SMI_PARSERS: dict[str, Callable[[str], Parsed[float]]] = {
    "power_draw_w": parse_watts,
    "power_enforced_limit_w": parse_watts,
    "temp_c": parse_celsius,
    "temp_memory_c": parse_celsius,
    "sm_clock_mhz": parse_mhz,
    "sm_clock_max_mhz": parse_mhz,
    "mem_clock_mhz": parse_mhz,
    "utilization_gpu_percent": parse_percent,
}
# Error counters since the driver loaded -> the Sample's counter fields, in Sample's order (judged as rates under
# load: rigcheck.checks.burn.rates). `nvidia-smi --help-query-gpu` documents the ECC totals; the PCIe replay
# counter is read under the names other tools pass to --query-gpu, where a header has one.
_SMI_COUNTERS: dict[str, tuple[str, ...]] = {
    "ecc_corrected_volatile": ("ecc.errors.corrected.volatile.total",),
    "ecc_uncorrected_volatile": ("ecc.errors.uncorrected.volatile.total",),
    "pcie_replays": ("pcie.replay.counter", "pcie.replay_counter"),
}
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


@dataclass
class _SmiColumns:
    """Where each quantity sits in an nvidia-smi CSV row."""

    timestamp: int | None
    index: int | None
    identity: int | None
    name: int | None
    default_limit: int | None
    values: dict[str, int]  # Sample field -> column
    counters: dict[str, int]  # Sample counter field -> column
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
        counters: dict[str, int] = {}
        for field_name, names in _SMI_COUNTERS.items():
            col = first_of(names)
            if col is not None:
                counters[field_name] = col
        flags: dict[str, int] = {}
        for col, key in enumerate(keys):
            reason = reason_of_column(key)
            if reason is not None:
                flags.setdefault(reason, col)
        found = cls(
            timestamp=first_of(["timestamp"]),
            index=first_of(["index"]),
            identity=first_of(_IDENTITY_NAMES),
            name=first_of(_NAME_NAMES),
            default_limit=first_of(_DEFAULT_LIMIT_NAMES),
            values=values,
            counters=counters,
            mask=first_of(_MASK_NAMES),
            reason_flags=flags,
            ignored=[],
        )
        used = {found.timestamp, found.index, found.identity, found.name, found.default_limit, found.mask}
        used |= set(values.values()) | set(flags.values()) | set(counters.values())
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


class RowError(ValueError):
    pass


# A timestamp as nvidia-smi prints it, for the fast path: the seconds part parsed once per second, not per row.
_STAMP = re.compile(r"(\d{4}([/-])\d{2}\2\d{2} \d{2}:\d{2}:\d{2})\.(\d{1,6})")
# Distinct raw cells remembered per column: readings repeat (41 C, 1980 MHz, 700.00 W), so parsing each
# distinct text once is most of the reader's speed; the bound keeps a column of all-distinct values small.
_CACHE_MAX = 4096
# Distinct whole rows (a line after its timestamp) remembered with what they parsed to: an idle GPU, or a
# steady load read at whole watts, prints the same row again and again; the bound keeps memory flat.
ROW_CACHE_MAX = 1 << 14
# Timestamps are whole microseconds since this origin: (us - first us) / 10**6 is one correctly rounded
# division of integers, the very float timedelta.total_seconds() gives, without a datetime per row.
_ORIGIN = datetime(1, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
# The Sample fields an nvidia-smi row fills, in Sample's own order (after t_s and gpu): a row's values are
# kept as one tuple and passed to Sample positionally.
VALUE_FIELDS = tuple(f.name for f in fields(Sample))[2:10]
assert set(_SMI_FIELDS) == set(VALUE_FIELDS), "every value column of the CSV is a Sample field"
_Values = tuple[
    float | None, float | None, float | None, float | None, float | None, float | None, float | None, float | None
]
_Counts = tuple[int | None, int | None, int | None]
_NO_COUNTS: _Counts = (None, None, None)
assert tuple(_SMI_COUNTERS) == GPU_COUNTER_FIELDS, "the CSV's counters are the Sample's, in order"


class Row:
    """What a row says besides its timestamp: shared by every row that prints the same cells."""

    __slots__ = ("counters", "default", "identity", "lost", "name", "reading", "reasons", "values")

    def __init__(
        self,
        *,
        values: _Values,
        counters: _Counts,
        reasons: tuple[str, ...] | None,
        lost: bool,
        identity: str | None,
        name: str | None,
        default: str | None,
    ) -> None:
        self.values = values
        self.counters = counters  # the Sample's counter fields after ``lost``, in order (GPU_COUNTER_FIELDS)
        self.reasons = reasons
        self.lost = lost
        self.identity = identity
        self.name = name  # the raw cells, parsed only the first time a GPU is seen
        self.default = default
        self.reading: Reading | None = None  # made once its GPU's number is known (batches.py)


class RowParser:
    """Parse rows with the columns found in the header, remembering what each distinct cell parsed to."""

    def __init__(self, cols: _SmiColumns) -> None:
        self.cols = cols
        slot = {name: k for k, name in enumerate(VALUE_FIELDS)}
        self.values: list[
            tuple[str, int, int, Callable[[str], Parsed[float]], dict[str, tuple[float | None, bool]]]
        ] = [(name, slot[name], col, _SMI_PARSERS[name], {}) for name, col in cols.values.items()]
        counter_slot = {name: k for k, name in enumerate(GPU_COUNTER_FIELDS)}
        self.counters = [(name, counter_slot[name], col) for name, col in cols.counters.items()]
        self.masks: dict[str, tuple[tuple[str, ...] | None, bool, bool]] = {}
        self.seconds: dict[str, int | None] = {}  # "YYYY/MM/DD HH:MM:SS" -> its microseconds since _ORIGIN
        self.minutes: dict[str, int | None] = {}  # "YYYY/MM/DD HH:MM:" -> the same at its second 0

    def parse(self, cells: list[str], width: int) -> tuple[Row, int | None]:
        """One row -> what it says and its timestamp (microseconds since _ORIGIN; None without the column)."""
        if len(cells) != width:
            raise RowError(f"{len(cells)} fields, expected {width}")
        cols = self.cols
        values: list[float | None] = [None] * len(VALUE_FIELDS)
        lost = False
        for field_name, slot, col, parser, cache in self.values:
            raw = cells[col]
            hit = cache.get(raw)
            if hit is None:
                parsed = parser(raw)
                if parsed.error is not None:
                    raise RowError(f"{field_name}: {parsed.error}")
                if len(cache) >= _CACHE_MAX:
                    cache.clear()
                hit = cache[raw] = (parsed.value, parsed.reason is Missing.GPU_LOST)
            lost |= hit[1]
            values[slot] = hit[0]
        counts = _NO_COUNTS
        if self.counters:
            read: list[int | None] = [None, None, None]
            for field_name, slot, col in self.counters:
                parsed_count = parse_int(cells[col])
                if parsed_count.error is not None:
                    raise RowError(f"{field_name}: {parsed_count.error}")
                lost |= parsed_count.reason is Missing.GPU_LOST
                read[slot] = parsed_count.value
            counts = cast(_Counts, tuple(read))
        reasons: tuple[str, ...] | None = None
        if cols.mask is not None:
            raw = cells[cols.mask]
            mask = self.masks.get(raw)
            if mask is None:
                names, ok = _parse_mask(raw)
                if len(self.masks) >= _CACHE_MAX:
                    self.masks.clear()
                mask = self.masks[raw] = (
                    tuple(names) if names is not None else None,
                    ok,
                    na_reason(raw) is Missing.GPU_LOST,
                )
            if not mask[1]:
                raise RowError(f"clock-event reasons {raw.strip()!r} is not a hex bit mask")
            lost |= mask[2]
            reasons = mask[0]
        if reasons is None and cols.reason_flags:
            active: list[str] = []
            read_any = False
            for name in CLOCK_EVENT_REASONS:
                flag_col = cols.reason_flags.get(name)
                if flag_col is None:
                    continue
                flag = parse_bool(cells[flag_col])
                if flag.error is not None:
                    raise RowError(f"{name}: {flag.error}")
                lost |= flag.reason is Missing.GPU_LOST
                if flag.value is not None:
                    read_any = True
                    if flag.value:
                        active.append(name)
            reasons = tuple(active) if read_any else None
        stamp: int | None = None
        if cols.timestamp is not None:
            stamp = self.micros(cells[cols.timestamp])
            if stamp is None:
                raise RowError(f"timestamp {cells[cols.timestamp].strip()!r} is not 'YYYY/MM/DD HH:MM:SS.mmm'")
        identity: str | None = None
        if cols.index is not None:
            identity = cells[cols.index].strip()
            if not (identity.isascii() and identity.isdigit()):  # "¹".isdigit() is True, int("¹") fails
                raise RowError(f"index {identity!r} is not a GPU index")
        elif cols.identity is not None:
            identity = cells[cols.identity].strip()
        row = Row(
            values=cast(_Values, tuple(values)),
            counters=counts,
            reasons=reasons,
            lost=lost,
            identity=identity,
            name=cells[cols.name] if cols.name is not None else None,
            default=cells[cols.default_limit] if cols.default_limit is not None else None,
        )
        return row, stamp

    def micros(self, raw: str) -> int | None:
        """A timestamp cell -> microseconds since _ORIGIN; None when it is not a timestamp."""
        # The fast path: a second seen before and 1 to 6 digits after the dot (what _STAMP matches: \d is
        # a Unicode decimal digit, as str.isdecimal).
        whole, dot, fraction = raw.strip().partition(".")
        base = self.seconds.get(whole)
        if base is not None and dot and 0 < len(fraction) <= 6 and fraction.isdecimal():
            return base + int(fraction.ljust(6, "0"))
        match = _STAMP.fullmatch(raw.strip())
        if match is None:
            stamp = _parse_timestamp(raw)
            return (stamp - _ORIGIN) // _MICROSECOND if stamp is not None else None
        whole = match.group(1)
        if whole not in self.seconds:
            if len(self.seconds) >= _CACHE_MAX:
                self.seconds.clear()
            self.seconds[whole] = self._second(whole)
        base = self.seconds[whole]
        # strptime's %f reads 1 to 6 digits as the leading digits of the microseconds: "717" is 717000.
        return base + int(match.group(3).ljust(6, "0")) if base is not None else None

    def _second(self, whole: str) -> int | None:
        """ "YYYY/MM/DD HH:MM:SS" -> its microseconds since _ORIGIN: strptime once a minute, the seconds added
        (the same fields parse the same way at :00 and at :SS, for SS 00 to 59; %S reads 60 and 61 too,
        which datetime then refuses: those take strptime's own way)."""
        minute, ss = whole[:-2], whole[-2:]
        if not (ss.isascii() and ss.isdigit() and int(ss) < 60):
            second = _parse_timestamp(whole)
            return (second - _ORIGIN) // _MICROSECOND if second is not None else None
        if minute not in self.minutes:
            if len(self.minutes) >= _CACHE_MAX:
                self.minutes.clear()
            start = _parse_timestamp(minute + "00")
            self.minutes[minute] = (start - _ORIGIN) // _MICROSECOND if start is not None else None
        base = self.minutes[minute]
        return base + int(ss) * 1_000_000 if base is not None else None


class SmiCsvReader:
    """An nvidia-smi --query-gpu CSV, one row at a time: the GPUs' names and default limits go into the header
    as they are first seen, the median interval once the last row is read."""

    def __init__(self, path: str, header: Trace) -> None:
        self.path = path
        self.trace = header
        self.trace.source = "nvidia-smi-csv"

    def read(self, lines: Iterator[tuple[int, str]]) -> Iterator[Sample]:
        header_no, header_line = next(lines)
        yield from self.read_rows(*self.columns(header_no, header_line), lines)

    def columns(self, header_no: int, header_line: str) -> tuple[_SmiColumns, list[str]]:
        """The columns the header names, and its keys (to tell a repeated header)."""
        path, trace = self.path, self.trace
        headers = [c.strip() for c in next(csv.reader([header_line], skipinitialspace=True))]
        if not _looks_like_smi_header(headers):
            raise ParseError(
                "not a telemetry trace: expected an nvidia-smi --query-gpu CSV header (timestamp, index, power.draw, "
                "temperature.gpu, ...), nvidia-smi dmon output (# gpu pwr gtemp ...), a rigcheck.trace CSV or JSONL",
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
        if cols.ignored:
            trace.diagnostics.append(f"{path}: ignored columns rigcheck does not use: {', '.join(cols.ignored)}")
        return cols, [_column_key(h) for h in headers]

    def read_rows(
        self, cols: _SmiColumns, header_keys: list[str], lines: Iterable[tuple[int, str]]
    ) -> Iterator[Sample]:
        """The rows after the header, one Sample each."""
        path, trace = self.path, self.trace
        first_key = header_keys[0]
        width = len(header_keys)
        parser = RowParser(cols)
        parse, micros = parser.parse, parser.micros
        # With the timestamp first and no quotes, a line is its timestamp, a comma, and the rest: a rest seen
        # before is the same row again, and only the timestamp is read (the cells split as split_csv_line would).
        by_rest = cols.timestamp == 0
        seen_rows: dict[str, Row] = {}
        last_cell, last_stamp = "", 0
        # GPU numbers: the index column as printed; else identities numbered in order of appearance.
        order: dict[str, int] = {}
        names: dict[str, str] = {}
        default_limits: dict[str, float] = {}
        settled: set[str] = set()  # GPUs whose name and default limit are known (or not in the file)
        counts: dict[int, int] = {}
        last_t: dict[int, float] = {}
        steps: Counter[float] = Counter()
        start: int | None = None
        pending = PendingBadLine()
        rows = 0
        for number, line in lines:
            if pending.line is not None:
                pending.check(path)
            row: Row | None = None
            stamp: int | None = None
            quoted = '"' in line
            if by_rest and not quoted:
                stamp_cell, _, rest = line.partition(",")
                row = seen_rows.get(rest)
                if row is not None:
                    if stamp_cell == last_cell:  # the GPUs of one poll often print the same time
                        stamp = last_stamp
                    else:
                        stamp = micros(stamp_cell)
                        if stamp is None:
                            row = None  # the full path below says what is wrong with it
                        else:
                            last_cell, last_stamp = stamp_cell, stamp
            if row is None:
                cells = split_csv_line(line)
                # A repeated header starts with the first header's key (a data row with a timestamp or index
                # never does): the cheap test first, the column-by-column one only then.
                if cells[0].lower().startswith(first_key) and [_column_key(c) for c in cells] == header_keys:
                    continue  # nvidia-smi repeats its header when restarted into the same file
                try:
                    row, stamp = parse(cells, width)
                except RowError as exc:
                    pending.hold(number, str(exc), f"bad row: {exc}")
                    continue
                if by_rest and not quoted:
                    if len(seen_rows) >= ROW_CACHE_MAX:
                        seen_rows.clear()
                    seen_rows[line.partition(",")[2]] = row
            rows += 1
            key = row.identity or "0"
            index = order.get(key)
            if index is None:
                index = order[key] = int(key) if cols.index is not None else len(order)
            if key not in settled:
                self.identify(row, key, index, names, default_limits)
                if (row.name is None or key in names) and (row.default is None or key in default_limits):
                    settled.add(key)
            if stamp is not None:
                if start is None:
                    start = stamp
                t = (stamp - start) / 1_000_000
            else:
                n = counts.get(index, 0)
                counts[index] = n + 1
                t = n * DEFAULT_INTERVAL_S
            before = last_t.get(index)
            if before is not None and t > before:
                steps[t - before] += 1
            last_t[index] = t
            reasons = row.reasons
            yield Sample(t, index, *row.values, list(reasons) if reasons is not None else None, row.lost, *row.counters)
        pending.finish(path, trace)
        if cols.timestamp is None and rows:
            trace.diagnostics.append(
                f"{path}: no timestamp column: samples taken to be {DEFAULT_INTERVAL_S:g} s apart (nvidia-smi -lms 100)"
            )
        interval = counter_median(steps)
        trace.interval_s = round(interval, 4) if interval is not None else None

    def identify(self, row: Row, key: str, index: int, names: dict[str, str], default_limits: dict[str, float]) -> None:
        """A GPU's name and default limit into the header, from the first row that gives each."""
        if row.name is not None and key not in names:
            gpu_name = parse_str(row.name).value
            if gpu_name is not None:
                names[key] = gpu_name
                self._gpu(key, index, names, default_limits)
        if row.default is not None and key not in default_limits:
            default = parse_watts(row.default).value
            if default is not None:
                default_limits[key] = default
                self._gpu(key, index, names, default_limits)

    def _gpu(self, key: str, index: int, names: dict[str, str], default_limits: dict[str, float]) -> None:
        self.trace.gpus[index] = TraceGpu(
            index=index, name=names.get(key), power_default_limit_w=default_limits.get(key)
        )
