"""`nvidia-smi dmon` output read as a telemetry trace (TraceStream picks it by its header).

dmon prints a header block, then one whitespace-separated row per GPU per interval::

    #Date        Time         gpu    pwr  gtemp  mtemp     sm ...   mclk   pclk  pviol  tviol
    #YYYYMMDD    HH:MM:SS     Idx      W      C      C      % ...    MHz    MHz      %   bool
     20261126    11:21:26       0    676     56     43    100 ...   3201   1320      0      0

``-s`` picks the metric groups and ``-o D`` / ``-o T`` / ``-o DT`` put Date / Time first, so columns are found by
their header names. Drivers before the memory temperature print ``temp`` where newer ones print ``gtemp``. The
header block repeats every screenful (and when dmon is restarted into the same file): each ``#`` line is
either a header, which sets the columns, or the units line, which is skipped. ``-`` is a metric the GPU does
not report (a GeForce's power): the value is missing, never 0, and a diagnostic says so. dmon prints no power
limit, no clock ceiling and no clock-event reasons. Without a Time column there is no interval to read (``-d``
is not printed): 1 s, dmon's default, is assumed and a diagnostic says so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import datetime

from rigcheck.errors import ParseError
from rigcheck.model.telemetry import Sample, Trace, counter_median
from rigcheck.model.trace import PendingBadLine

# dmon's own default for -d: the only interval a file without a Time column can be read at.
DEFAULT_INTERVAL_S = 1.0

# dmon column -> Sample field.
_FIELDS: dict[str, str] = {
    "pwr": "power_draw_w",
    "gtemp": "temp_c",
    "temp": "temp_c",  # drivers before the memory temperature: one "temp" column
    "mtemp": "temp_memory_c",
    "sm": "utilization_gpu_percent",
    # dmon's processor clock is the graphics clock, one domain with the SM clock on every NVIDIA GPU since
    # Kepler (nvidia-smi -q prints the same Graphics and SM figures), as clocks.gr stands in for the CSV.
    "pclk": "sm_clock_mhz",
    "mclk": "mem_clock_mhz",
}
# Known, deliberately unused (no Sample field), so not reported as unknown. pviol is the share of the interval
# spent in power violation and tviol a thermal-violation flag: Sample.reasons holds reasons active at an
# instant, and a share of an interval is not one.
_KNOWN_UNUSED = frozenset(
    {"mem", "enc", "dec", "jpg", "ofa", "pviol", "tviol", "fb", "bar1", "ccpm", "sbecc", "dbecc", "pci"}
    | {"rxpci", "txpci"}
)
_STAMPS = ("date", "time")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DAY_S = 86_400
_EPOCH = datetime(1970, 1, 1)  # dmon prints local time without a zone: only differences are used
# The Sample fields a row can fill, in Sample's order after t_s and gpu: a row's values pass positionally.
_SLOTS = {f.name: k for k, f in enumerate(fields(Sample)[2:10])}
assert set(_FIELDS.values()) <= set(_SLOTS), "every dmon column rigcheck uses is a Sample field"
_CACHE_MAX = 4096


def header_names(line: str) -> list[str] | None:
    """A dmon header's column names, lower-cased (``#Date Time gpu pwr ...``); None for any other line.

    It is ``#``, optional Date and Time, ``gpu``, then columns of which at least one is dmon's. pmon's header
    (``# gpu pid type sm ...``) shares some names and is not dmon's.
    """
    text = line.strip()
    if not text.startswith("#"):
        return None
    names = [n.lower() for n in text[1:].split()]
    k = 0
    while k < len(names) and names[k] in _STAMPS:
        k += 1
    rest = names[k + 1 :]
    if k >= len(names) or names[k] != "gpu" or "pid" in rest:
        return None
    return names if any(n in _FIELDS or n in _KNOWN_UNUSED for n in rest) else None


@dataclass
class _Columns:
    """Where each quantity sits in a row of one header."""

    names: list[str]
    gpu: int
    date: int | None
    time: int | None
    values: dict[int, str]  # column -> Sample field
    unknown: list[str]

    @classmethod
    def of(cls, names: list[str]) -> _Columns:
        values: dict[int, str] = {}
        for col, name in enumerate(names):
            target = _FIELDS.get(name)
            if target is not None and target not in values.values():
                values[col] = target
        date = names.index("date") if "date" in names else None
        time = names.index("time") if "time" in names else None
        known = set(_FIELDS) | _KNOWN_UNUSED | {"gpu", *_STAMPS}
        return cls(names, names.index("gpu"), date, time, values, [n for n in names if n not in known])


class _RowError(ValueError):
    pass


@dataclass
class _Clock:
    """Seconds since the first row, from the Date and Time cells (Time alone: midnight rolls the day over)."""

    start: float | None = None
    day: int = 0
    last_of_day: int | None = None
    stamps: dict[str, float] = field(default_factory=dict)

    def seconds(self, date: str | None, time: str) -> float:
        if date is None:
            of_day = _time_of_day(time)
            if self.last_of_day is not None and of_day < self.last_of_day - _DAY_S // 2:
                self.day += 1
            self.last_of_day = of_day
            absolute = float(self.day * _DAY_S + of_day)
        else:
            absolute = self._stamp(date, time)
        if self.start is None:
            self.start = absolute
        return absolute - self.start

    def _stamp(self, date: str, time: str) -> float:
        key = f"{date} {time}"
        hit = self.stamps.get(key)
        if hit is None:
            try:
                when = datetime.strptime(key, "%Y%m%d %H:%M:%S")
            except ValueError:
                raise _RowError(f"date and time {key!r} are not 'YYYYMMDD HH:MM:SS'") from None
            if len(self.stamps) >= _CACHE_MAX:
                self.stamps.clear()
            hit = self.stamps[key] = (when - _EPOCH).total_seconds()
        return hit


def _time_of_day(cell: str) -> int:
    parts = cell.split(":")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) == 2 for p in parts):
        raise _RowError(f"time {cell!r} is not 'HH:MM:SS'")
    h, m, s = (int(p) for p in parts)
    if h > 23 or m > 59 or s > 59:
        raise _RowError(f"time {cell!r} is not 'HH:MM:SS'")
    return h * 3600 + m * 60 + s


def _value(cell: str) -> float | None:
    """A metric cell: a number, or None for dmon's '-' (not reported by this GPU)."""
    if cell == "-":
        return None
    if _NUMBER.fullmatch(cell) is None or not cell.isascii():
        raise _RowError(f"{cell!r} is not a number")
    return float(cell)


@dataclass
class _Row:
    gpu: int
    t_s: float | None
    values: list[float | None]  # by _SLOTS
    dashes: list[str]  # dmon names of the mapped columns that read '-'


class DmonReader:
    """nvidia-smi dmon output, one row at a time, into Samples; its diagnostics and interval go into ``trace``."""

    def __init__(self, path: str, trace: Trace) -> None:
        self.path = path
        self.trace = trace
        trace.source = "nvidia-smi-dmon"
        self.clock = _Clock()
        self.cache: dict[str, float | None] = {}
        self.counts: dict[int, int] = {}  # rows per GPU
        self.dashes: dict[str, Counter[int]] = {}  # dmon column -> rows of each GPU that read '-'
        self.unknown: list[str] = []
        self.timed = True

    def read(self, lines: Iterator[tuple[int, str]]) -> Iterator[Sample]:
        """The samples of the lines (the first is a dmon header: TraceStream read it so)."""
        cols: _Columns | None = None
        pending = PendingBadLine()
        last_t: dict[int, float] = {}
        steps: Counter[float] = Counter()
        for number, line in lines:
            pending.check(self.path)
            if line.lstrip().startswith("#"):
                cols = self._header(line, cols)
                continue
            if cols is None:
                raise ParseError("a row before any dmon header", path=self.path, line=number)
            try:
                row = self._row(line.split(), cols)
            except _RowError as exc:
                pending.hold(number, str(exc), f"bad row: {exc}")
                continue
            yield self._sample(row, last_t, steps)
        pending.finish(self.path, self.trace)
        self._finish(steps)

    def _header(self, line: str, cols: _Columns | None) -> _Columns | None:
        """A header sets the columns (a repeat changes nothing); the units line and other comments are skipped."""
        names = header_names(line)
        if names is None or (cols is not None and names == cols.names):
            return cols
        found = _Columns.of(names)
        self.timed = self.timed and found.time is not None
        self.unknown += [n for n in found.unknown if n not in self.unknown]
        return found

    def _row(self, cells: list[str], cols: _Columns) -> _Row:
        if len(cells) != len(cols.names):
            raise _RowError(f"{len(cells)} fields, expected {len(cols.names)}")
        gpu = cells[cols.gpu]
        if not (gpu.isascii() and gpu.isdigit()):
            raise _RowError(f"gpu {gpu!r} is not a GPU index")
        t_s = None
        if cols.time is not None:
            t_s = self.clock.seconds(cells[cols.date] if cols.date is not None else None, cells[cols.time])
        values: list[float | None] = [None] * len(_SLOTS)
        dashes: list[str] = []
        for col, target in cols.values.items():
            values[_SLOTS[target]] = self._parsed(cells[col], cols.names[col])
            if cells[col] == "-":
                dashes.append(cols.names[col])
        return _Row(int(gpu), t_s, values, dashes)

    def _parsed(self, cell: str, name: str) -> float | None:
        hit = self.cache.get(cell, ...)
        if hit is ...:
            try:
                hit = _value(cell)
            except _RowError as exc:
                raise _RowError(f"{name}: {exc}") from None
            if len(self.cache) >= _CACHE_MAX:
                self.cache.clear()
            self.cache[cell] = hit
        return hit

    def _sample(self, row: _Row, last_t: dict[int, float], steps: Counter[float]) -> Sample:
        n = self.counts.get(row.gpu, 0)
        self.counts[row.gpu] = n + 1
        for name in row.dashes:
            self.dashes.setdefault(name, Counter())[row.gpu] += 1
        t = row.t_s if row.t_s is not None else n * DEFAULT_INTERVAL_S
        before = last_t.get(row.gpu)
        if before is not None and t > before:
            steps[t - before] += 1
        last_t[row.gpu] = t
        v = row.values
        # No reasons: dmon prints none (None: not read).
        return Sample(t, row.gpu, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7])

    def _finish(self, steps: Counter[float]) -> None:
        path, diagnostics = self.path, self.trace.diagnostics
        if self.unknown:
            diagnostics.append(f"{path}: ignored columns rigcheck does not use: {', '.join(self.unknown)}")
        for name, by_gpu in self.dashes.items():
            where = ", ".join(f"GPU {g} in {k} of {self.counts[g]} rows" for g, k in sorted(by_gpu.items()))
            diagnostics.append(f"{path}: {name} is '-' (the GPU does not report it): {where}; missing there, not 0")
        if not self.counts:
            return
        if not self.timed:
            diagnostics.append(
                f"{path}: no Time column: samples taken to be {DEFAULT_INTERVAL_S:g} s apart "
                "(dmon's default -d 1; record with -o DT to keep the times)"
            )
        interval = counter_median(steps)
        self.trace.interval_s = round(interval, 4) if interval is not None else None
