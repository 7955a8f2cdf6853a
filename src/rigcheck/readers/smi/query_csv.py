"""`nvidia-smi --query-gpu=FIELDS --format=csv`: the query's field names, and a saved query read as a snapshot.

The field-name handling is shared with the trace reader (readers/trace/stream.py, `burn --analyze`): :func:`column_key`
(a header cell's field name, its unit ``[W]`` dropped), the clock-event reason columns (the hex mask
:func:`parse_mask`, or one ``Active`` / ``Not Active`` column per reason) and the columns that tell GPUs apart.
Values are read by readers/smi/values.py (``[N/A]``, ``[Not Supported]``, ``[GPU is lost]`` are reasons).

As a snapshot (`--from FILE`):

- **With its header** (``--format=csv`` or ``csv,nounits``): each column is found by the field name
  `nvidia-smi --help-query-gpu` documents (:data:`GPU_FIELDS`), in any order and any subset; the columns
  rigcheck does not read are listed once in a diagnostic. A GPU on several rows (``-l`` / ``-lms``: a trace) is
  refused, naming `rigcheck burn --analyze FILE`: one row of a trace (its last, say) is not the machine's
  state, a throttle or a fault in between would pass unseen, and burn --analyze judges every row.
- **Without its header** (``csv,noheader``): a column cannot be named from its values in general, so the file is
  refused with one line asking for the header, except ``index,gpu_recovery_action``, told by its words alone
  (nvml.h nvmlDeviceGpuRecoveryAction_t: None, Reset, Reboot, Drain P2P, Drain and Reset); a file whose every
  action is "None" is refused too (``addressing_mode`` prints "None" as well).

A row of another width than the header (a cut line), a value that does not parse, a header without rows: one
ParseError naming the file and line.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from typing import Any

from rigcheck.errors import ParseError
from rigcheck.facts.plausible import out_of_bounds
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS, Diagnostic, Gpu, Missing, Snapshot, Software, Source
from rigcheck.model.trace import split_csv_line
from rigcheck.readers.smi.values import (
    REASON_BY_LABEL,
    Parsed,
    finish_missing,
    na_reason,
    parse_bool,
    parse_celsius,
    parse_compute_mode,
    parse_gen,
    parse_int,
    parse_mhz,
    parse_mib,
    parse_percent,
    parse_str,
    parse_watts,
    parse_width,
)

# --- field names (shared with readers/trace/stream.py) ----------------------------------------------------

_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")
REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")  # the newer name, and the one before 530
MASK_NAMES = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
IDENTITY_NAMES = ("uuid", "pci.bus_id", "gpu_uuid", "gpu_bus_id")
NAME_NAMES = ("name", "gpu_name")


def column_key(header: str) -> str:
    """A header cell's field name: ``"power.draw [W]"`` -> ``"power.draw"`` (lower case, as the query takes it)."""
    return _UNIT_SUFFIX.sub("", header.strip()).strip().lower()


def reason_of_column(key: str) -> str | None:
    """The clock-event reason a per-reason column reports (``clocks_event_reasons.sw_power_cap``), else None."""
    for prefix in REASON_PREFIXES:
        if key.startswith(prefix):
            return REASON_BY_LABEL.get(key[len(prefix) :])
    return None


def parse_mask(raw: str) -> tuple[list[str] | None, bool]:
    """``"0x0000000000000004"`` -> (["sw_power_cap"], ok); N/A -> (None, ok); garbage -> (None, False).

    Bit i is CLOCK_EVENT_REASONS[i], nvml.h's nvmlClocksEventReason* order."""
    if na_reason(raw) is not None:
        return None, True
    try:
        mask = int(raw.strip(), 0)
    except ValueError:
        return None, False
    return [name for bit, name in enumerate(CLOCK_EVENT_REASONS) if mask >> bit & 1], True


# --- the snapshot's fields -------------------------------------------------------------------------

Parser = Callable[[str], Parsed[Any]]


def _fabric_status(raw: str) -> Parsed[Any]:
    """The fabric's status is NVML's error string once registration failed ("Insufficient Resources"): the value
    itself, not a failed read; only N/A means there is none (as readers/smi/build.py reads -q's)."""
    if na_reason(raw) is Missing.REPORTED_NA or not raw.strip():
        return parse_str(raw)
    return Parsed(raw.strip())


# Gpu field -> (query fields, earlier ones preferred; parser). Names as `nvidia-smi --help-query-gpu` lists them
# (driver 530+ names first, the older clocks_throttle_* / short clock names after).
GPU_FIELDS: dict[str, tuple[tuple[str, ...], Parser]] = {
    "name": (NAME_NAMES, parse_str),
    "uuid": (("uuid", "gpu_uuid"), parse_str),
    "pci_bus_id": (("pci.bus_id", "gpu_bus_id"), parse_str),
    "vbios_version": (("vbios_version",), parse_str),
    "compute_capability": (("compute_cap",), parse_str),
    "memory_total_mib": (("memory.total",), parse_mib),
    "memory_used_mib": (("memory.used",), parse_mib),
    "utilization_gpu_percent": (("utilization.gpu",), parse_percent),
    "power_draw_w": (("power.draw.instant", "power.draw"), parse_watts),
    "power_draw_avg_w": (("power.draw.average",), parse_watts),
    "power_limit_w": (("power.limit",), parse_watts),
    "power_enforced_limit_w": (("enforced.power.limit",), parse_watts),
    "power_default_limit_w": (("power.default_limit",), parse_watts),
    "power_min_limit_w": (("power.min_limit",), parse_watts),
    "power_max_limit_w": (("power.max_limit",), parse_watts),
    "temp_c": (("temperature.gpu",), parse_celsius),
    "temp_memory_c": (("temperature.memory",), parse_celsius),
    "temp_tlimit_margin_c": (("temperature.gpu.tlimit",), parse_celsius),
    "fan_percent": (("fan.speed",), parse_percent),
    "clock_graphics_mhz": (("clocks.current.graphics", "clocks.gr"), parse_mhz),
    "clock_sm_mhz": (("clocks.current.sm", "clocks.sm"), parse_mhz),
    "clock_mem_mhz": (("clocks.current.memory", "clocks.mem"), parse_mhz),
    "clock_graphics_max_mhz": (("clocks.max.graphics", "clocks.max.gr"), parse_mhz),
    "clock_sm_max_mhz": (("clocks.max.sm", "clocks.max.sm_clock"), parse_mhz),
    "clock_mem_max_mhz": (("clocks.max.memory", "clocks.max.mem"), parse_mhz),
    "pstate": (("pstate",), parse_str),
    # pcie.link.gen.max: what GPU and host both reach (-q's link "Max"); gpumax: the GPU's own.
    "pcie_gen_current": (("pcie.link.gen.current", "pcie.link.gen.gpucurrent"), parse_gen),
    "pcie_gen_max": (("pcie.link.gen.max",), parse_gen),
    "pcie_gen_gpu_max": (("pcie.link.gen.gpumax",), parse_gen),
    "pcie_width_current": (("pcie.link.width.current",), parse_width),
    "pcie_width_max": (("pcie.link.width.max",), parse_width),
    "persistence_mode": (("persistence_mode",), parse_bool),
    "compute_mode": (("compute_mode",), parse_compute_mode),
    "mig_enabled": (("mig.mode.current",), parse_bool),
    "ecc_enabled": (("ecc.mode.current",), parse_bool),
    "ecc_uncorrected_volatile": (("ecc.errors.uncorrected.volatile.total",), parse_int),
    "ecc_uncorrected_aggregate": (("ecc.errors.uncorrected.aggregate.total",), parse_int),
    "ecc_corrected_volatile": (("ecc.errors.corrected.volatile.total",), parse_int),
    "retired_pages_sbe": (("retired_pages.single_bit_ecc.count", "retired_pages.sbe"), parse_int),
    "retired_pages_dbe": (("retired_pages.double_bit.count", "retired_pages.dbe"), parse_int),
    "retired_pages_pending": (("retired_pages.pending",), parse_bool),
    "remapped_rows_correctable": (("remapped_rows.correctable",), parse_int),
    "remapped_rows_uncorrectable": (("remapped_rows.uncorrectable",), parse_int),
    "remapped_rows_pending": (("remapped_rows.pending",), parse_bool),
    "remapped_rows_failure": (("remapped_rows.failure",), parse_bool),
    "recovery_action": (("gpu_recovery_action",), parse_str),
    "fabric_state": (("fabric.state",), parse_str),
    "fabric_status": (("fabric.status",), _fabric_status),
    "fabric_clique_id": (("fabric.cliqueid",), parse_int),
    "fabric_cluster_uuid": (("fabric.clusteruuid",), parse_str),
}
_SUPPORTED_MASK_NAMES = ("clocks_event_reasons.supported", "clocks_throttle_reasons.supported")
_OTHER_KNOWN = ("index", "timestamp", "driver_version", *MASK_NAMES, *_SUPPORTED_MASK_NAMES)
KNOWN_FIELDS = frozenset(n for names, _ in GPU_FIELDS.values() for n in names) | frozenset(_OTHER_KNOWN)
# A header cell: a field name (letters, digits, _ and .), maybe a unit in brackets.
_HEADER_CELL = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*(\s*\[[^\]]*\])?$")


def _cells(line: str) -> list[str] | None:
    """A line's CSV cells, or None where csv refuses it (a quoted field over its limit): detection never raises."""
    try:
        return split_csv_line(line)
    except csv.Error:
        return None


def looks_like_header(line: str) -> bool:
    """Whether ``line`` is a --query-gpu CSV header: every cell a field name, one of them a field rigcheck knows."""
    cells = _cells(line)
    if cells is None or not all(_HEADER_CELL.match(c) for c in cells):
        return False
    keys = [column_key(c) for c in cells]
    return any(k in KNOWN_FIELDS or reason_of_column(k) is not None for k in keys)


# --- without a header ------------------------------------------------------------------------------

# nvidia-smi's words for nvmlDeviceGpuRecoveryAction_t (nvml.h; probe/nvml/constants.py RECOVERY_ACTIONS), longest
# first so "Drain and Reset" is not read as "Drain...".
_ACTIONS = ("Drain and Reset", "Recover IMEX Domain", "System Reboot", "Drain P2P", "Bus Reset", "Reboot", "Reset")
_ACTION_ROW = re.compile(
    r"^\s*(\d+)\s*,\s*(" + "|".join(re.escape(a) for a in (*_ACTIONS, "None")) + r")(?:\s+(\S.*?))?\s*$"
)
_INDEX_ROW = re.compile(r"^\s*\d+\s*,")
# Values only nvidia-smi's query prints: a figure with its unit, a bracketed N/A, a bus id, a UUID, a reason mask.
_SMI_VALUE = re.compile(
    r"^(?:[-+]?\d+(?:\.\d+)?\s*(?:W|MHz|MiB|%)|\[(?:N/A|Not Supported|GPU is lost|GPU requires reset|Unknown Error)\]"
    r"|[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]|GPU-[0-9a-fA-F-]{36}|0x[0-9a-fA-F]{16})$"
)


def looks_like_noheader(text: str) -> bool:
    """A --query-gpu CSV saved without its header: rows of one width, each starting with a GPU index or holding
    a value only nvidia-smi prints that way."""
    lines = [line for line in text.splitlines() if line.strip()]
    rows = [cells for line in lines if (cells := _cells(line)) is not None]
    if not rows or len(rows) < len(lines) or len(rows[0]) < 2 or any(len(r) != len(rows[0]) for r in rows):
        return _recovery_rows(text) is not None  # the annotated corpus line has a comma of its own
    if all(_INDEX_ROW.match(line) for line in lines):
        return True
    return any(_SMI_VALUE.match(cell) for row in rows for cell in row)


def _recovery_rows(text: str) -> list[tuple[int, int, str, str | None]] | None:
    """(line, index, action, text after it) of each row of an ``index,gpu_recovery_action`` query; None if not one."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _ACTION_ROW.match(line)
        if match is None:
            return None
        rows.append((number, int(match.group(1)), match.group(2), match.group(3)))
    return rows or None


NEEDS_HEADER = (
    "an nvidia-smi --query-gpu CSV without its header (--format=csv,noheader): its columns cannot be told from "
    "their values; save it with the header (--format=csv)"
)


def _snapshot_without_header(text: str, path: str | None) -> Snapshot:
    rows = _recovery_rows(text)
    if rows is None:
        raise ParseError(NEEDS_HEADER, path=path)
    if all(action == "None" for _, _, action, _ in rows):
        raise ParseError(NEEDS_HEADER + " (every value is None: addressing_mode prints it too)", path=path)
    diagnostics: list[Diagnostic] = [
        Diagnostic(
            source="smi-query-csv",
            message="no header: read as index,gpu_recovery_action (a recovery action is told by its words)",
        )
    ]
    gpus: dict[int, Gpu] = {}
    for number, index, action, note in rows:
        if note is not None:  # an annotation pasted after the value: not nvidia-smi's, said rather than dropped
            diagnostics.append(
                Diagnostic(
                    source="smi-query-csv",
                    message=f"line {number}: text after the recovery action is not nvidia-smi's, left out: {note!r}",
                    gpu=index,
                )
            )
        gpu = Gpu(index=index, recovery_action=action)
        finish_missing(gpu)
        gpus[index] = gpu
    _refuse_trace(len(rows), len(gpus), path)
    return _snapshot([gpus[i] for i in sorted(gpus)], diagnostics, path)


# --- with a header ---------------------------------------------------------------------------------


class _Columns:
    """Where each field sits in a row, from the header."""

    def __init__(self, headers: list[str]) -> None:
        self.headers = headers
        self.keys = [column_key(h) for h in headers]
        keys = self.keys

        def first(names: Iterable[str]) -> int | None:
            return next((keys.index(n) for n in names if n in keys), None)

        self.index = first(["index"])
        self.identity = first(IDENTITY_NAMES)
        self.timestamp = first(["timestamp"])
        self.driver = first(["driver_version"])
        self.mask = first(MASK_NAMES)
        self.supported = first(_SUPPORTED_MASK_NAMES)
        self.values: dict[str, list[int]] = {}
        for attr, (names, _) in GPU_FIELDS.items():
            cols = [keys.index(n) for n in names if n in keys]
            if cols:
                self.values[attr] = cols
        self.flags: dict[str, int] = {}
        for col, key in enumerate(keys):
            reason = reason_of_column(key)
            if reason is not None and key not in MASK_NAMES and key not in _SUPPORTED_MASK_NAMES:
                self.flags.setdefault(reason, col)
        used = {self.index, self.identity, self.timestamp, self.driver, self.mask, self.supported}
        used |= {c for cols in self.values.values() for c in cols} | set(self.flags.values())
        self.unread = [h.strip() for col, h in enumerate(headers) if col not in used]


def _read_row(
    cells: list[str], cols: _Columns, index: int, where: tuple[str | None, int], out: list[Diagnostic]
) -> Gpu:
    """One row -> the GPU it describes; a value that does not parse is a ParseError naming the line."""
    path, line = where
    gpu = Gpu(index=index)

    def parsed(col: int, parse: Parser) -> Parsed[Any]:
        result = parse(cells[col])
        if result.error is not None:
            raise ParseError(f"{cols.headers[col].strip()}: {result.error}", path=path, line=line)
        if result.reason is Missing.GPU_LOST:
            gpu.read_error = Missing.GPU_LOST
            gpu.read_error_detail = f"nvidia-smi printed {cells[col].strip()!r} for {cols.keys[col]}"
        return result

    for attr, col_list in cols.values.items():
        parse = GPU_FIELDS[attr][1]
        results = [parsed(col, parse) for col in col_list]
        result = next((r for r in results if r.value is not None), results[0])
        value = result.value
        if isinstance(value, (int, float)) and (bounds := out_of_bounds(attr, value)) is not None:
            out.append(
                Diagnostic(
                    source="smi-query-csv",
                    message=f"line {line}: {attr}: {value:g} is outside what any card reports ({bounds.text()})",
                    gpu=index,
                )
            )
            gpu.mark_missing(attr, Missing.IMPLAUSIBLE)
        elif value is not None:
            setattr(gpu, attr, value)
        elif result.reason is not None:
            gpu.mark_missing(attr, result.reason)
    for attr, col in (("clock_event_reasons_active", cols.mask), ("clock_event_reasons_supported", cols.supported)):
        if col is None:
            continue
        names, ok = parse_mask(cells[col])
        if not ok:
            raise ParseError(f"{cols.headers[col].strip()}: {cells[col]!r} is not a hex bit mask", path=path, line=line)
        if names is None:
            gpu.mark_missing(attr, na_reason(cells[col]) or Missing.REPORTED_NA)
        else:
            setattr(gpu, attr, names)
    if cols.mask is None and cols.flags:
        active: list[str] = []
        read: list[str] = []
        for name in CLOCK_EVENT_REASONS:
            if name in cols.flags:
                flag = parsed(cols.flags[name], parse_bool)
                if flag.value is not None:
                    read.append(name)
                    if flag.value:
                        active.append(name)
        if read:
            gpu.clock_event_reasons_active = active
        else:
            gpu.mark_missing("clock_event_reasons_active", Missing.REPORTED_NA)
    finish_missing(gpu)
    return gpu


def _refuse_trace(rows: int, gpus: int, path: str | None) -> None:
    if rows > gpus:
        raise ParseError(
            f"a telemetry trace ({rows} rows of {gpus} GPU{'s' if gpus != 1 else ''}: nvidia-smi -l/-lms), not one "
            "state of the machine: read it with `rigcheck burn --analyze FILE`",
            path=path,
        )


def _snapshot(gpus: list[Gpu], diagnostics: list[Diagnostic], path: str | None, driver: str | None = None) -> Snapshot:
    software = Software(driver_version=driver)
    finish_missing(software)
    return Snapshot(
        source=Source(kind="nvidia-smi-query-csv", path=path),
        gpus=gpus,
        software=software,
        diagnostics=diagnostics,
    )


def parse_query_csv(text: str, path: str | None) -> Snapshot:
    """A saved ``nvidia-smi --query-gpu=... --format=csv`` (or csv,noheader) as a snapshot; see the module doc."""
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered or not looks_like_header(numbered[0][1]):
        return _snapshot_without_header(text, path)
    header_no, header_line = numbered[0]
    cols = _Columns(split_csv_line(header_line))
    diagnostics: list[Diagnostic] = []
    if cols.unread:
        diagnostics.append(
            Diagnostic(source="smi-query-csv", message=f"columns rigcheck does not read: {', '.join(cols.unread)}")
        )
    width = len(cols.keys)
    rows_of: dict[str, tuple[int, list[str]]] = {}
    rows = 0
    for number, line in numbered[1:]:
        cells = split_csv_line(line)
        if [column_key(c) for c in cells] == cols.keys:
            continue  # nvidia-smi repeats its header when restarted into the same file
        if len(cells) != width:
            raise ParseError(
                f"{len(cells)} fields where the header (line {header_no}) names {width}: a cut or foreign row",
                path=path,
                line=number,
            )
        key = _row_key(cells, cols, rows, path, number)
        rows_of[key] = (number, cells)
        rows += 1
    if not rows:
        raise ParseError("an nvidia-smi --query-gpu CSV header without any row", path=path, line=header_no)
    _refuse_trace(rows, len(rows_of), path)
    order = _gpu_numbers(list(rows_of), cols)
    gpus = [_read_row(cells, cols, order[key], (path, number), diagnostics) for key, (number, cells) in rows_of.items()]
    gpus.sort(key=lambda g: g.index)
    driver = None
    if cols.driver is not None:
        driver = parse_str(next(iter(rows_of.values()))[1][cols.driver]).value
    return _snapshot(gpus, diagnostics, path, driver)


def _row_key(cells: list[str], cols: _Columns, rows: int, path: str | None, line: int) -> str:
    """Which GPU a row is of: its index, else its UUID / bus id; a file with neither has one GPU per file."""
    if cols.index is not None:
        index = cells[cols.index].strip()
        if not (index.isascii() and index.isdigit()):  # "¹".isdigit() is True, int("¹") fails
            raise ParseError(f"index {index!r} is not a GPU index", path=path, line=line)
        return index
    if cols.identity is not None:
        return cells[cols.identity].strip()
    if rows:
        raise ParseError(
            "several rows and no index, uuid or pci.bus_id column: GPUs cannot be told from samples over time; "
            "add index to --query-gpu",
            path=path,
            line=line,
        )
    return "0"


def _gpu_numbers(keys: list[str], cols: _Columns) -> dict[str, int]:
    if cols.index is not None:
        return {k: int(k) for k in keys}
    return {k: n for n, k in enumerate(keys)}  # UUIDs / bus ids in the order nvidia-smi lists them
