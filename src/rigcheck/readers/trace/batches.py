"""An nvidia-smi --query-gpu CSV read a block at a time into per-GPU columns (TraceStream.batches, issue #13).

The rows are those SmiCsvReader.read_rows yields, with the same errors, diagnostics and interval: only how they
are handed over differs. A block's rows come as one SampleBatch per GPU (its rows in file order) and each
distinct row after the timestamp is one Reading object, so `burn --analyze` judges it once however often it
repeats. Needs the timestamp in the first column (the row cache is keyed by the text after it); other layouts
are read row by row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import fields
from operator import sub
from typing import cast

from rigcheck.model.telemetry import Reading, Sample, SampleBatch, counter_median
from rigcheck.model.trace import PendingBadLine, split_csv_line
from rigcheck.readers.smi.query_csv import column_key as _column_key
from rigcheck.readers.trace.lines import numbered
from rigcheck.readers.trace.smi_csv import ROW_CACHE_MAX, VALUE_FIELDS, Row, RowError, RowParser, SmiCsvReader

assert tuple(f.name for f in fields(Reading))[1:9] == VALUE_FIELDS, "a row's values are a Reading's, in order"


def smi_batches(
    reader: SmiCsvReader, header_no: int, header_line: str, blocks: Iterable[tuple[int, list[str]]]
) -> Iterator[Sample | SampleBatch]:
    cols, header_keys = reader.columns(header_no, header_line)
    if cols.timestamp != 0:
        yield from reader.read_rows(cols, header_keys, numbered(blocks))
        return
    path, trace = reader.path, reader.trace
    first_key = header_keys[0]
    width = len(header_keys)
    parser = RowParser(cols)
    parse, micros = parser.parse, parser.micros
    seen_rows: dict[str, Row] = {}
    get = seen_rows.get
    order: dict[str, int] = {}
    names: dict[str, str] = {}
    default_limits: dict[str, float] = {}
    settled: set[str] = set()
    all_settled = True
    steps: Counter[float] = Counter()  # every step between two rows of a GPU; the positive ones count
    last_t: dict[int, float] = {}
    start: int | None = None
    last_cell, t = "", 0.0
    pending = PendingBadLine()

    def accept(row: Row) -> Reading:
        """A row's GPU, named and numbered as read_rows does, and its Reading."""
        nonlocal all_settled
        key = row.identity or "0"
        index = order.get(key)
        if index is None:
            index = order[key] = int(key) if cols.index is not None else len(order)
        if key not in settled:
            reader.identify(row, key, index, names, default_limits)
            if (row.name is None or key in names) and (row.default is None or key in default_limits):
                settled.add(key)
            all_settled = len(settled) == len(order)
        reading = row.reading
        if reading is None:
            reading = row.reading = Reading(index, *row.values, row.reasons, row.lost, *row.counters)
        return reading

    for base, lines in blocks:
        ts: list[float] = []
        readings: list[Reading] = []
        put_t, put_r = ts.append, readings.append
        for k, line in enumerate(lines):
            cell, _, rest = line.partition(",")
            row = get(rest)
            if row is not None:
                # A row seen before: only its timestamp is read (the GPUs of one poll often print the same).
                if cell != last_cell:
                    stamp = micros(cell)
                    if stamp is not None:
                        last_cell, t = cell, (stamp - start) / 1_000_000  # type: ignore[operator]  # set by then
                    else:
                        row = None  # the full path below says what is wrong with it
                if row is not None:
                    put_t(t)
                    put_r(row.reading if all_settled else accept(row))  # type: ignore[arg-type]  # set when cached
                    continue
            if not line.strip():
                continue
            if pending.line is not None:
                pending.check(path)
            cells = split_csv_line(line)
            if cells[0].lower().startswith(first_key) and [_column_key(c) for c in cells] == header_keys:
                continue  # nvidia-smi repeats its header when restarted into the same file
            try:
                row, stamp = parse(cells, width)
            except RowError as exc:
                pending.hold(base + k + 1, str(exc), f"bad row: {exc}")
                get = cast(dict[str, Row], {}).get  # every later line takes the full path: it raises on the next
                continue
            reading = accept(row)
            if stamp is None:  # never: the timestamp is the first column
                raise AssertionError("a row without its timestamp")
            if start is None:
                start = stamp
            now = (stamp - start) / 1_000_000
            if '"' not in line:  # as read_rows: only a row without quotes is split at its first comma
                last_cell, t = cell, now
                if len(seen_rows) >= ROW_CACHE_MAX:
                    seen_rows.clear()
                seen_rows[rest] = row
            put_t(now)
            put_r(reading)
        if ts:
            yield from _by_gpu(ts, readings, last_t, steps)
    pending.finish(path, trace)
    interval = counter_median({step: n for step, n in steps.items() if step > 0})
    trace.interval_s = round(interval, 4) if interval is not None else None


def _by_gpu(
    ts: list[float], readings: list[Reading], last_t: dict[int, float], steps: Counter[float]
) -> Iterator[SampleBatch]:
    """A block's rows as one batch per GPU, each GPU's steps counted (read_rows' interval)."""
    gpus = [r.gpu for r in readings]
    first = gpus[0]
    period = gpus.index(first, 1) if first in gpus[1:] else len(gpus)
    if gpus[period:] == gpus[:-period] and len(set(gpus[:period])) == period:
        # nvidia-smi prints every GPU once per poll, in the same order: a GPU's rows are every period-th.
        columns = [(gpus[j], ts[j::period], readings[j::period]) for j in range(period)]
    else:
        grouped: dict[int, tuple[list[float], list[Reading]]] = {}
        for t, reading in zip(ts, readings, strict=True):
            group = grouped.get(reading.gpu)
            if group is None:
                group = grouped[reading.gpu] = ([], [])
            group[0].append(t)
            group[1].append(reading)
        columns = [(gpu, gts, grs) for gpu, (gts, grs) in grouped.items()]
    for gpu, gts, grs in columns:
        before = last_t.get(gpu)
        steps.update(map(sub, gts, [before, *gts[:-1]]) if before is not None else map(sub, gts[1:], gts))
        last_t[gpu] = gts[-1]
        yield SampleBatch(gpu, gts, grs)
