"""rigcheck's own trace files (``rigcheck.trace/2``): the header, and writing and reading the two formats.

- **JSONL**: line 1 is the header object (:class:`TraceHeaderDocument`: ``{"schema": "rigcheck.trace/2", "gpus":
  [{"index", "name", "temp_slowdown_c", ...}], "interval_s", "started_at"}``); every further line is one
  sample object with the fields of :class:`rigcheck.model.telemetry.Sample` (``reasons``: a list of names,
  or ``null`` when not read). The error counters (:data:`COUNTER_FIELDS`: ECC, PCIe replays, NVLink per link)
  are optional keys, written only where read.
- **CSV**: a plain CSV that any reader takes as it is: line 1 the column names :data:`CSV_COLUMNS`
  (``t_s,gpu,power_draw_w,...``), then one sample per row. An empty cell is ``None``; ``reasons`` holds names joined
  by ``|``, ``none`` for an empty list; ``lost`` is ``1`` or empty. The header (the same JSON object as JSONL's
  line 1) is in the sidecar file ``FILE.meta.json`` (:func:`sidecar_path`). Traces written before the sidecar
  have ``# rigcheck.trace/1 {the JSON header}`` as line 1 and the column names as line 2; they still read. The
  error counters are optional columns (:data:`CSV_COUNTER_COLUMNS`, after the others; a writer names them in its
  column row only when it reads them); a per-link cell holds the links' counts joined by ``|``, an empty part for
  a link not read.
- ``rigcheck.trace/1`` files (written before the power fields were named ``power_draw_w`` and
  ``power_enforced_limit_w``) still read: their ``power_w`` and ``power_limit_w`` keys and columns are those
  two fields (:data:`V1_NAMES`); rigcheck writes only /2.

The sampler writes through :func:`write_csv_header` / :func:`format_csv_row` (and the JSONL pair);
rigcheck.readers.trace.stream reads any trace file (and the sidecar, when there is one) and hands rigcheck's own to
:func:`read_rigcheck_csv` / :func:`read_rigcheck_jsonl`. A last line cut short (the writer crashed mid-line) is
skipped with a diagnostic; anything else that does not parse is a :class:`ParseError` naming the file and line.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import Field, TypeAdapter

from rigcheck.errors import ParseError
from rigcheck.model.document import Document
from rigcheck.model.files_out import write_whole
from rigcheck.model.telemetry import COUNTER_FIELDS, LINK_COUNTER_FIELDS, Sample, Trace, TraceGpu

TRACE_SCHEMA: Literal["rigcheck.trace/2"] = "rigcheck.trace/2"
TRACE_SCHEMA_V1 = "rigcheck.trace/1"
READ_SCHEMAS = (TRACE_SCHEMA, TRACE_SCHEMA_V1)
# A /1 trace's sample key or CSV column -> the Sample field it is (the power fields' names before /2).
V1_NAMES = {"power_w": "power_draw_w", "power_limit_w": "power_enforced_limit_w"}

# Sample fields in the order rigcheck's CSV writes them; the error counters are optional columns after them.
CSV_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Sample) if f.name not in COUNTER_FIELDS)
CSV_COUNTER_COLUMNS: tuple[str, ...] = COUNTER_FIELDS
_FLOAT_FIELDS = frozenset(CSV_COLUMNS) - {"t_s", "gpu", "reasons", "lost"}
# Per schema a JSONL file may name, its sample lines' float keys: (key in the file, Sample field).
_V1_KEYS = {field: key for key, field in V1_NAMES.items()}
_FLOAT_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    TRACE_SCHEMA: tuple((name, name) for name in _FLOAT_FIELDS),
    TRACE_SCHEMA_V1: tuple((_V1_KEYS.get(name, name), name) for name in _FLOAT_FIELDS),
}
REASONS_SEPARATOR = "|"
NO_REASONS = "none"
CSV_COMMENT = "# "  # line 1 of a CSV trace written before the sidecar
SIDECAR_SUFFIX = ".meta.json"


class TraceHeaderDocument(Document):
    """Line 1 of a rigcheck JSONL trace, and the whole of a rigcheck CSV trace's sidecar FILE.meta.json (older CSV
    traces: the JSON after '# rigcheck.trace/1 ' on line 1). The sample lines that follow are `$defs/sample`."""

    schema_: Literal["rigcheck.trace/2"] = Field(TRACE_SCHEMA, alias="schema")
    gpus: list[TraceGpu]
    interval_s: float | None = Field(description="seconds between polls")
    started_at: str | None = Field(description="ISO 8601, UTC", json_schema_extra={"format": "date-time"})

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The header's schema, with the sample lines' schema (from :class:`Sample`) as ``$defs/sample``."""
        schema = super().model_json_schema(*args, **kwargs)
        sample = TypeAdapter(Sample).json_schema(mode="serialization")
        # The error counters are optional keys: a writer leaves out those it did not read (a sample in another
        # document, the monitor's latest, may hold them as null).
        sample["required"] = [name for name in sample["required"] if name not in COUNTER_FIELDS]
        sample["description"] = "Every further line of a JSONL trace (the CSV has the same fields as columns)."
        schema.setdefault("$defs", {})["sample"] = sample
        return schema


# --- writing (the sampler's side) ---------------------------------------------------------------


def trace_header(gpus: Iterable[TraceGpu], *, interval_s: float | None, started_at: str | None) -> TraceHeaderDocument:
    """The header both rigcheck formats start with."""
    return TraceHeaderDocument(gpus=list(gpus), interval_s=interval_s, started_at=started_at)


def _header_json(gpus: Iterable[TraceGpu], interval_s: float | None, started_at: str | None) -> str:
    return json.dumps(trace_header(gpus, interval_s=interval_s, started_at=started_at).to_json_dict())


def write_jsonl_header(
    out: TextIO, gpus: Iterable[TraceGpu], *, interval_s: float | None, started_at: str | None
) -> None:
    """Line 1 of a rigcheck JSONL trace."""
    out.write(_header_json(gpus, interval_s, started_at) + "\n")


def sidecar_path(path: str | Path) -> Path:
    """Where a CSV trace's header lives: ``trace.csv`` -> ``trace.csv.meta.json``."""
    return Path(f"{path}{SIDECAR_SUFFIX}")


def write_csv_header(
    out: TextIO,
    gpus: Iterable[TraceGpu],
    *,
    interval_s: float | None,
    started_at: str | None,
    meta_path: str | Path | None = None,
    columns: tuple[str, ...] = CSV_COLUMNS,
) -> None:
    """Line 1 of a rigcheck CSV trace (the column names), and its header in the sidecar ``meta_path``: by default
    beside the file ``out`` writes (:func:`sidecar_path` of its name); an ``out`` with no file name (a pipe, a
    buffer) gets no sidecar unless ``meta_path`` names one. The sidecar is written whole or not at all
    (model/files_out.py; OutputError, exit 2, when it cannot be). ``columns``: :data:`CSV_COLUMNS`, and the
    counters (:data:`CSV_COUNTER_COLUMNS`) after them when the writer reads them."""
    out.write(",".join(columns) + "\n")
    if meta_path is None:
        name = getattr(out, "name", None)
        if not _is_file_name(name):
            return
        meta_path = sidecar_path(str(name))
    write_whole(meta_path, _header_json(gpus, interval_s, started_at) + "\n")


def _is_file_name(name: object) -> bool:
    """A file's name as open() keeps it: not a descriptor number nor a pseudo-name such as "<stdout>"."""
    return isinstance(name, str) and bool(name) and not (name.startswith("<") and name.endswith(">"))


def _cell(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return ""
    return repr(round(float(value), 3)).removesuffix(".0")


def _count_cell(value: int | list[int | None] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return REASONS_SEPARATOR.join("" if v is None else str(v) for v in value)
    return str(value)


def format_csv_row(sample: Sample, columns: tuple[str, ...] = CSV_COLUMNS) -> str:
    """One sample as a line of rigcheck's CSV (with its newline), in the ``columns`` of its column row."""
    cells: list[str] = []
    for name in columns:
        value = getattr(sample, name)
        if name in COUNTER_FIELDS:
            cells.append(_count_cell(value))
        elif name == "gpu":
            cells.append(str(value))
        elif name == "t_s":
            cells.append(f"{value:.3f}")
        elif name == "reasons":
            cells.append("" if value is None else (REASONS_SEPARATOR.join(value) if value else NO_REASONS))
        elif name == "lost":
            cells.append("1" if value else "")
        else:
            cells.append(_cell(value))
    return ",".join(cells) + "\n"


def format_jsonl_row(sample: Sample) -> str:
    """One sample as a line of rigcheck's JSONL (with its newline); non-finite numbers become null."""
    data = asdict(sample)
    for name in COUNTER_FIELDS:  # optional keys: absent where not read
        if data[name] is None:
            del data[name]
    data["t_s"] = round(sample.t_s, 4)
    for name in _FLOAT_FIELDS:
        value = data[name]
        if value is not None and not math.isfinite(value):
            data[name] = None
    return json.dumps(data, separators=(",", ":")) + "\n"


# --- reading ------------------------------------------------------------------------------------


NumberedLines = Iterator[tuple[int, str]]


class PendingBadLine:
    """A bad line held back until the next line shows it was not the last one (a reader reads one pass, so it
    cannot know up front which line is last): then it is an error; at the end it is a write cut short."""

    __slots__ = ("line", "message", "what")

    def __init__(self) -> None:
        self.line: int | None = None
        self.what = ""
        self.message = ""

    def hold(self, line: int, what: str, message: str) -> None:
        self.line, self.what, self.message = line, what, message

    def check(self, path: str) -> None:
        """A further line came: a held bad line was not the last, so it is an error."""
        if self.line is not None:
            raise ParseError(self.message, path=path, line=self.line)

    def finish(self, path: str, trace: Trace) -> None:
        if self.line is not None:
            trace.diagnostics.append(
                f"{path}:{self.line}: last line is incomplete ({self.what}); skipped, as a write cut short"
            )


def split_csv_line(line: str) -> list[str]:
    """A line's CSV cells, stripped (the plain split when no cell is quoted: the same cells, several times faster)."""
    if '"' not in line:
        return [c.strip() for c in line.split(",")]
    return [c.strip() for c in next(csv.reader([line], skipinitialspace=True))]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number_or_none(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _header_from_json(data: object, path: str, line: int) -> tuple[dict[int, TraceGpu], float | None, str | None]:
    if not isinstance(data, dict):
        raise ParseError("the header is not a JSON object", path=path, line=line)
    schema = data.get("schema")
    if schema not in READ_SCHEMAS:
        raise ParseError(f"schema {schema!r}, expected {TRACE_SCHEMA!r}", path=path, line=line)
    gpus: dict[int, TraceGpu] = {}
    raw_gpus = data.get("gpus") or []
    if not isinstance(raw_gpus, list):
        raise ParseError("header 'gpus' is not a list", path=path, line=line)
    for item in raw_gpus:
        if not isinstance(item, dict) or not _is_int(item.get("index")):
            raise ParseError("a header GPU lacks an integer 'index'", path=path, line=line)
        known = {k: v for k, v in item.items() if k in TraceGpu.model_fields}
        for key, value in known.items():
            if key == "name":
                if value is not None and not isinstance(value, str):
                    raise ParseError("header GPU 'name' is not a string", path=path, line=line)
            elif key == "power_source":
                if value not in (None, "instant", "average"):
                    raise ParseError("header GPU 'power_source' is not 'instant' or 'average'", path=path, line=line)
            elif key != "index" and not _is_number_or_none(value):
                raise ParseError(f"header GPU {key!r} is not a number", path=path, line=line)
        if known["index"] < 0:
            raise ParseError("a header GPU has a negative 'index'", path=path, line=line)
        gpu = TraceGpu(**known)
        gpus[gpu.index] = gpu
    interval = data.get("interval_s")
    if not _is_number_or_none(interval):
        raise ParseError("header 'interval_s' is not a number", path=path, line=line)
    started = data.get("started_at")
    if started is not None and not isinstance(started, str):
        raise ParseError("header 'started_at' is not a string", path=path, line=line)
    return gpus, (float(interval) if interval is not None else None), started


def _sample_from_json(data: object, keys: tuple[tuple[str, str], ...] = _FLOAT_KEYS[TRACE_SCHEMA]) -> Sample:
    """A sample object -> Sample (``keys``: its float keys as :data:`_FLOAT_KEYS` gives them for the file's
    schema); ValueError says what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    t_s, gpu = data.get("t_s"), data.get("gpu")
    if not _is_number_or_none(t_s) or t_s is None:
        raise ValueError("'t_s' is not a number")
    if not isinstance(gpu, int) or isinstance(gpu, bool):
        raise ValueError("'gpu' is not an integer")
    values: dict[str, Any] = {}
    for key, name in keys:
        value = data.get(key)
        if not _is_number_or_none(value):
            raise ValueError(f"{key!r} is not a number")
        values[name] = float(value) if value is not None else None
    reasons = data.get("reasons")
    if reasons is not None and (not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons)):
        raise ValueError("'reasons' is not a list of names")
    lost = data.get("lost", False)
    if not isinstance(lost, bool):
        raise ValueError("'lost' is not true/false")
    counters = {name: _json_count(data.get(name), name) for name in COUNTER_FIELDS}
    return Sample(t_s=float(t_s), gpu=int(gpu), reasons=reasons, lost=lost, **values, **counters)


def _is_count(value: object) -> bool:
    return _is_int(value) and value >= 0  # type: ignore[operator]  # an int by then


def _json_count(value: object, name: str) -> Any:
    """An error counter of a sample line: a count (one per link for the NVLink ones), or absent/null."""
    if value is None:
        return None
    if name in LINK_COUNTER_FIELDS:
        if not isinstance(value, list) or not all(v is None or _is_count(v) for v in value):
            raise ValueError(f"{name!r} is not a list of counts (null for a link not read)")
        return value
    if not _is_count(value):
        raise ValueError(f"{name!r} is not a count")
    return value


def read_rigcheck_jsonl(lines: NumberedLines, path: str, trace: Trace) -> Iterator[Sample]:
    """A rigcheck JSONL trace, its numbered non-empty lines read one at a time (``path`` names it in errors):
    the header fills ``trace`` (its samples are left alone), and the samples are yielded."""
    first_no, first = next(lines)
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        raise ParseError(f"line 1 is not JSON: expected the {TRACE_SCHEMA} header", path=path, line=first_no) from None
    gpus, trace.interval_s, trace.started_at = _header_from_json(header, path, first_no)
    keys = _FLOAT_KEYS[header["schema"]]  # a dict naming one of READ_SCHEMAS: _header_from_json checked
    trace.gpus.update(gpus)  # in place: whoever holds the header's GPUs (an aggregator) sees them
    trace.source = "rigcheck-jsonl"
    pending = PendingBadLine()
    for number, line in lines:
        pending.check(path)
        try:
            yield _sample_from_json(json.loads(line), keys)
        except json.JSONDecodeError:
            pending.hold(number, "not complete JSON", "not a JSON sample line")
        except (ValueError, TypeError) as exc:
            pending.hold(number, str(exc), f"bad sample: {exc}")
    pending.finish(path, trace)


def is_rigcheck_csv_columns(line: str) -> bool:
    """Whether a first line is the column row of a rigcheck CSV trace (``t_s,gpu,...``)."""
    return split_csv_line(line)[:2] == ["t_s", "gpu"]


def read_rigcheck_csv(
    lines: NumberedLines, path: str, trace: Trace, *, meta: tuple[str, str] | None = None
) -> Iterator[Sample]:
    """A rigcheck CSV trace, as :func:`read_rigcheck_jsonl`. ``meta``: the sidecar's (path, text) where the caller
    found one; a trace whose header is on its line 1 (the older layout) needs none."""
    first_no, first = next(lines)
    trace.source = "rigcheck-csv"
    if first.lstrip().startswith(CSV_COMMENT.strip()):
        _header_from_comment(first, first_no, path, trace)
        second = next(lines, None)
        if second is None:
            raise ParseError("no column header row after the comment line", path=path)
        cols_no, cols_line = second
    else:
        cols_no, cols_line = first_no, first
        if meta is not None:
            _header_from_sidecar(*meta, trace)
        else:
            trace.diagnostics.append(
                f"{path}: no sidecar {sidecar_path(path).name}: GPU names, thresholds and the interval are unknown"
            )
    # A /1 trace's power columns are the /2 fields (the column names tell, with or without a header).
    columns = [V1_NAMES.get(c, c) for c in (c.strip() for c in next(csv.reader([cols_line])))]
    missing = [c for c in ("t_s", "gpu") if c not in columns]
    if missing:
        raise ParseError(f"column header lacks {', '.join(missing)}", path=path, line=cols_no)
    ignored = [c for c in columns if c not in CSV_COLUMNS and c not in CSV_COUNTER_COLUMNS]
    if ignored:
        trace.diagnostics.append(f"{path}: ignored columns rigcheck does not know: {', '.join(ignored)}")
    pending = PendingBadLine()
    for number, line in lines:
        pending.check(path)
        try:
            yield _sample_from_cells(columns, split_csv_line(line))
        except ValueError as exc:
            pending.hold(number, str(exc), f"bad sample: {exc}")
    pending.finish(path, trace)


def _header_from_comment(first: str, number: int, path: str, trace: Trace) -> None:
    body = first.strip()[len(CSV_COMMENT.strip()) :].strip()
    schema = next((name for name in READ_SCHEMAS if body.startswith(name)), None)
    if schema is None:
        raise ParseError(f"expected '# {TRACE_SCHEMA_V1} {{...}}' on the first line", path=path, line=number)
    try:
        header = json.loads(body[len(schema) :].strip() or "{}")
    except json.JSONDecodeError:
        raise ParseError("the header comment does not hold valid JSON", path=path, line=number) from None
    gpus, trace.interval_s, trace.started_at = _header_from_json(header, path, number)
    trace.gpus.update(gpus)  # in place: whoever holds the header's GPUs (an aggregator) sees them


def _header_from_sidecar(meta_path: str, text: str, trace: Trace) -> None:
    try:
        header = json.loads(text)
    except json.JSONDecodeError:
        raise ParseError(f"not JSON: expected the {TRACE_SCHEMA} header", path=meta_path, line=1) from None
    gpus, trace.interval_s, trace.started_at = _header_from_json(header, meta_path, 1)
    trace.gpus.update(gpus)


def _float_cell(cell: str, name: str) -> float | None:
    if cell == "":
        return None
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(f"{name} {cell!r} is not a number") from None
    return value if math.isfinite(value) else None


def _sample_from_cells(columns: list[str], cells: list[str]) -> Sample:
    if len(cells) != len(columns):
        raise ValueError(f"{len(cells)} fields, expected {len(columns)}")
    row = dict(zip(columns, cells, strict=True))
    t_s = _float_cell(row["t_s"], "t_s")
    if t_s is None:
        raise ValueError("t_s is empty")
    try:
        gpu = int(row["gpu"])
    except ValueError:
        raise ValueError(f"gpu {row['gpu']!r} is not an integer") from None
    values: dict[str, Any] = {name: _float_cell(row[name], name) for name in _FLOAT_FIELDS if name in row}
    reasons: list[str] | None = None
    raw = row.get("reasons", "")
    if raw == NO_REASONS:
        reasons = []
    elif raw:
        reasons = [r.strip() for r in raw.split(REASONS_SEPARATOR) if r.strip()]
    lost_cell = row.get("lost", "").lower()
    if lost_cell not in {"", "0", "1", "true", "false"}:
        raise ValueError(f"lost {lost_cell!r} is not 1 or empty")
    counters = {name: _count_from_cell(row[name], name) for name in COUNTER_FIELDS if name in row}
    return Sample(t_s=t_s, gpu=gpu, reasons=reasons, lost=lost_cell in {"1", "true"}, **values, **counters)


def _one_count(cell: str, name: str) -> int:
    if not (cell.isascii() and cell.isdigit()):
        raise ValueError(f"{name} {cell!r} is not a count")
    return int(cell)


def _count_from_cell(cell: str, name: str) -> Any:
    """An error counter's cell: empty (not read), a count, or per link counts joined by '|' (empty: not read)."""
    if cell == "":
        return None
    if name in LINK_COUNTER_FIELDS:
        return [None if part == "" else _one_count(part, name) for part in cell.split(REASONS_SEPARATOR)]
    return _one_count(cell, name)
