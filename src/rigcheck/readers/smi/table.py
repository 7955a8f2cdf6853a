"""Parse the plain ``nvidia-smi`` table into a Snapshot.

Layouts read: the 79-column table of drivers before 530 (with or without the "MIG M." row), the
wider table of newer drivers, the header without "CUDA Version" of old drivers, names that
nvidia-smi cut with "..." (kept as printed), Windows' TCC/WDDM column, and a MIG-enabled GPU
(its "MIG devices" table, printed below, is not read as GPUs). What a GPU's rows hold is read from the
header (:class:`_Layout`), so two more layouts read: a vGPU host's table (``nvidia-smi vgpu``: one row per
GPU with index, name, bus id and utilization, then one row per vGPU it runs for a VM, which is not a GPU)
and the table of drivers before ~300 ("Nb.  Name", "Bus Id", index "0.", temperature "62 C", memory
"17%  42MB / 255MB" with the memory's percentage first, "Volatile ECC SB / DB": corrected and
uncorrected counts; its process box, "Compute processes:", hangs on the GPU table).

Per GPU the table gives: index, name, persistence mode, bus id, volatile uncorrected ECC count
("Off" when ECC is disabled), fan, temperature, performance state, power draw and cap (the cap is
``power_limit_w``), memory used/total, GPU utilization, compute mode and MIG mode, less what the
layout's header does not name. Every other field is NOT_IN_SOURCE.

Fail closed: a GPU whose readings are all ``ERR!`` (the driver lost it, e.g. after an Xid 119) is a
placeholder with ``read_error``, and so is a GPU nvidia-smi printed "Unable to determine the device
handle" for (unreadable.py). Never a smaller number from a cut file: every row ends with ``|``, so a row
without it is where the input was cut, and its last cell is TRUNCATED; the rows of a GPU the input
ends inside are TRUNCATED; every number carries its unit (``72W``), so one without it is TRUNCATED; a
GPU table with no border and no line after its last GPU may have lost GPUs, and a note says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from rigcheck.errors import ParseError
from rigcheck.facts.plausible import out_of_bounds
from rigcheck.model.snapshot import INPUT_ENDS_EARLY, Diagnostic, Gpu, Missing, Snapshot, Source
from rigcheck.readers.smi.processes import from_table, mark_corrupt_inforoms, set_processes
from rigcheck.readers.smi.unreadable import add_handle_errors, handle_errors, mark_unreadable
from rigcheck.readers.smi.values import (
    Parsed,
    absent_reason,
    check_text,
    finish_missing,
    na_reason,
    parse_bool,
    parse_celsius,
    parse_compute_mode,
    parse_int,
    parse_mib,
    parse_percent,
    parse_str,
    parse_watts,
    text_lines,
)

SOURCE = "smi-table"

T = TypeVar("T")

# Drivers from 610 name the kernel-mode driver and the CUDA user-mode driver: "KMD Version: 610.57.04  CUDA UMD
# Version: 13.3" where earlier ones print "Driver Version: 580.82.07  CUDA Version: 13.0" (the same two figures).
_VERSIONS = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s*(?P<driver>\S+)"
    r"(?:\s+CUDA (?:UMD )?Version:\s*(?P<cuda>\S+))?"
)
_FIRST_ROW = re.compile(r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<pm>On|Off|N/A|TCC|WDDM|MCDM|ERR!)\s*$")
# A first cell whose header column ends at "Name" (no persistence value): old drivers print the index as "0.".
_NAME_ROW = re.compile(r"^\s*(?P<index>\d+)\.?\s+(?P<name>\S.*?)\s*$")
_INDEX = re.compile(r"^\s*(?P<index>\d+)\.?\s")
_BUS_ID = re.compile(r"Bus[- ]Id")  # "Bus Id" before driver ~300
_HEADER_ENDS_AT_NAME = re.compile(r"\bName\s*$")
_SPACED_CELSIUS = re.compile(r"(\d)\s+C(?=\s|$)")  # "62 C" of drivers before ~300
# The process box that old drivers hang on the GPU table itself, after a "|---" rule instead of a "+---" border.
_PROCESS_BOX = re.compile(r"^\|\s*(?:Compute processes|Processes):")
_SECOND_ROW_CELL = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<usage>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
# Drivers before ~300 print the memory's percentage first ("17%   42MB /  255MB").
_MEMORY_CELL = re.compile(r"^\s*(?:\d+%\s+)?(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*$")

# The fields each cell of a GPU's rows holds: (row, cell) -> fields. Rows 0 and 1 always, row 2 ("MIG M.")
# where the header has that third row.
_CELLS: dict[tuple[int, int], tuple[str, ...]] = {
    (0, 0): ("name", "persistence_mode"),
    (0, 1): ("pci_bus_id",),
    (0, 2): ("ecc_enabled", "ecc_uncorrected_volatile"),
    (1, 0): ("fan_percent", "temp_c", "pstate", "power_draw_w", "power_limit_w"),
    (1, 1): ("memory_used_mib", "memory_total_mib"),
    (1, 2): ("utilization_gpu_percent", "compute_mode"),
    (2, 2): ("mig_enabled",),
}
# A vGPU host's GPU row: "GPU  Name | Bus-Id | GPU-Util"; the rows below it are its vGPUs.
_VGPU_HOST_CELLS: dict[tuple[int, int], tuple[str, ...]] = {
    (0, 0): ("name",),
    (0, 1): ("pci_bus_id",),
    (0, 2): ("utilization_gpu_percent",),
}


@dataclass(frozen=True)
class _Layout:
    """What a GPU's rows hold, from the table's header rows (those between the "Bus-Id" row and the "|===" rule)."""

    rows: int  # the rows of one GPU: 2, 3 with "MIG M.", 1 on a vGPU host (its vGPUs' rows follow)
    persistence: bool  # the first cell ends in the persistence mode (or the driver model), not at "Name"
    vgpu_host: bool  # the second header row names the vGPUs ("vGPU ID"): rows after a GPU's first are vGPUs
    sb_db: bool  # "Volatile ECC SB / DB" (before ~300): corrected and uncorrected counts, in that order

    @classmethod
    def of(cls, header: list[str]) -> _Layout:
        first = _cells(header[0])
        vgpu_host = len(header) > 1 and "vGPU ID" in header[1]
        return cls(
            rows=1 if vgpu_host else len(header),
            persistence=_HEADER_ENDS_AT_NAME.search(first[0]) is None,
            vgpu_host=vgpu_host,
            sb_db=len(first) > 2 and "SB / DB" in first[2],
        )

    def cells(self) -> dict[tuple[int, int], tuple[str, ...]]:
        """The fields each cell of a GPU's rows holds: (row, cell) -> fields."""
        if self.vgpu_host:
            return _VGPU_HOST_CELLS
        cells = {key: fields for key, fields in _CELLS.items() if key[0] < self.rows}
        if not self.persistence:
            cells[(0, 0)] = ("name",)
        if self.sb_db:
            cells[(0, 2)] = ("ecc_enabled", "ecc_corrected_volatile", "ecc_uncorrected_volatile")
        return cells


def _cells(line: str) -> list[str]:
    """The cells of a ``| a | b | c |`` row (outer bars dropped)."""
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return stripped.split("|")


@dataclass
class _Line:
    number: int
    text: str
    cut: bool  # the input ends inside this row: its last cell may be partial

    def cells(self) -> list[str]:
        """The whole cells of the row: a cut row's last cell is left out."""
        cells = _cells(self.text)
        return cells[:-1] if self.cut else cells


class _Row:
    def __init__(self, gpu: Gpu, diagnostics: list[Diagnostic], line: int) -> None:
        self.gpu = gpu
        self.diagnostics = diagnostics
        self.line = line

    def note(self, message: str) -> None:
        self.diagnostics.append(Diagnostic(source=SOURCE, message=f"{message} (line {self.line})", gpu=self.gpu.index))

    def set(self, attr: str, result: Parsed[T]) -> None:
        value = result.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bounds = out_of_bounds(attr, value)
            if bounds is not None:
                self.note(f"{attr}: {value:g} is outside what any card reports ({bounds.text()})")
                self.gpu.mark_missing(attr, Missing.IMPLAUSIBLE)
                return
        if value is not None:
            setattr(self.gpu, attr, value)
        elif result.reason is not None:
            self.gpu.mark_missing(attr, result.reason)
        if result.error is not None:
            self.note(f"{attr}: {result.error}")


def _read_first_row(row: _Row, match: re.Match[str], cells: list[str], layout: _Layout) -> None:
    row.set("name", parse_str(match.group("name")))
    persistence = match.group("pm") if layout.persistence else None
    if persistence in ("On", "Off", "N/A", "ERR!"):
        row.set("persistence_mode", parse_bool(persistence))
    if len(cells) > 1 and cells[1].split():
        row.set("pci_bus_id", parse_str(cells[1].split()[0]))
    if len(cells) < 3:
        return
    if layout.vgpu_host:
        _read_utilization(row, cells[2])
    else:
        _read_ecc(row, cells[2], layout.sb_db)


def _read_ecc(row: _Row, cell: str, sb_db: bool) -> None:
    ecc = cell.strip()
    words = ecc.split()
    if sb_db and len(words) == 2:  # "SB / DB": the single-bit (corrected) count, then the uncorrected one
        corrected, ecc = words
        reason = na_reason(corrected)
        row.set("ecc_corrected_volatile", Parsed(None, reason) if reason is not None else parse_int(corrected))
    gpu = row.gpu
    if ecc == "Off":
        gpu.ecc_enabled = False
    elif ecc == "On":
        gpu.ecc_enabled = True
    elif na_reason(ecc) is not None:
        row.set("ecc_enabled", Parsed(None, na_reason(ecc)))
        row.set("ecc_uncorrected_volatile", Parsed(None, na_reason(ecc)))
    else:
        count = parse_int(ecc)
        row.set("ecc_uncorrected_volatile", count)
        if count.value is not None:
            gpu.ecc_enabled = True


def _read_utilization(row: _Row, cell: str) -> None:
    """The GPU's utilization ("3%"), then its compute mode ("Default") where the layout prints one."""
    parts = cell.split(None, 1)
    if parts:
        row.set("utilization_gpu_percent", parse_percent(parts[0], unit=True))
    if len(parts) > 1:
        row.set("compute_mode", parse_compute_mode(parts[1]))


def _read_second_row(row: _Row, cells: list[str]) -> None:
    if not cells:  # the input ends inside its first cell
        return
    metrics = _SECOND_ROW_CELL.match(_SPACED_CELSIUS.sub(r"\1C", cells[0]))
    if metrics is None:
        row.note("unreadable second GPU row")
    else:
        row.set("fan_percent", parse_percent(metrics.group("fan"), unit=True))
        row.set("temp_c", parse_celsius(metrics.group("temp"), unit=True))
        row.set("pstate", parse_str(metrics.group("perf")))
        row.set("power_draw_w", parse_watts(metrics.group("usage"), unit=True))
        row.set("power_limit_w", parse_watts(metrics.group("cap"), unit=True))
    memory = _MEMORY_CELL.match(cells[1]) if len(cells) > 1 else None
    if memory is not None:
        row.set("memory_used_mib", parse_mib(memory.group("used"), unit=True))
        row.set("memory_total_mib", parse_mib(memory.group("total"), unit=True))
    if len(cells) > 2:
        _read_utilization(row, cells[2])


def _read_more_rows(row: _Row, block: list[_Line], cut: bool) -> None:
    """The rows after a GPU's first: its readings, and its MIG mode where the header has that row."""
    if len(block) > 1:
        row.line = block[1].number
        _read_second_row(row, block[1].cells())
    elif not cut:
        row.note("GPU row cut after its first line")
    if len(block) > 2:
        third = block[2].cells()
        if len(third) > 2 and third[2].strip():
            row.line = block[2].number
            row.set("mig_enabled", parse_bool(third[2].strip()))


def _note_vgpus(row: _Row, vgpus: list[_Line]) -> None:
    """A vGPU host's rows under a GPU are the vGPUs it runs for virtual machines: said, never read as GPUs."""
    if vgpus:
        row.line = vgpus[0].number
        row.note(f"{len(vgpus)} vGPU row(s) of GPU {row.gpu.index} not read (vGPUs of virtual machines, not GPUs)")


def _mark_cut(gpu: Gpu, block: list[_Line], layout: _Layout) -> None:
    """TRUNCATED for what the input did not reach, on a cut row or on rows it never printed."""
    for (r, c), fields in layout.cells().items():
        if r < layout.rows and (r >= len(block) or c >= len(block[r].cells())):
            for attr in fields:
                if getattr(gpu, attr) is None and gpu.missing.get(attr) is None:
                    gpu.mark_missing(attr, Missing.TRUNCATED)


def _read_block(
    block: list[_Line], layout: _Layout, cut: bool, diagnostics: list[Diagnostic], path: str | None
) -> Gpu | None:
    """One GPU from its rows; ``cut``: the input ends inside this GPU (its missing rows are TRUNCATED).

    None when the input ends before the GPU's index.
    """
    first = block[0]
    cells = first.cells()
    pattern = _FIRST_ROW if layout.persistence else _NAME_ROW
    match = pattern.match(cells[0]) if cells else None
    index = match or _INDEX.match(_cells(first.text)[0])
    if match is None:
        if not first.cut:
            raise ParseError("not a GPU row of the nvidia-smi table", path=path, line=first.number)
        if index is None:
            return None
    assert index is not None
    gpu = Gpu(index=int(index.group("index")))
    row = _Row(gpu, diagnostics, first.number)
    if match is not None:  # else the row is cut inside its first cell: nothing on it is whole
        _read_first_row(row, match, cells, layout)
    if layout.vgpu_host:
        _note_vgpus(row, block[1:])
    else:
        _read_more_rows(row, block, cut)
    if cut:
        _mark_cut(gpu, block, layout)
    finish_missing(gpu)
    return gpu


def _read_versions(lines: list[str], snapshot: Snapshot) -> int | None:
    software = snapshot.software
    for number, line in enumerate(lines, start=1):
        versions = _VERSIONS.search(line)
        if versions is None:
            continue
        if not line.rstrip().endswith("|") and number == len(lines):
            break  # the header line itself is cut: its versions may be partial
        software.driver_version = versions.group("driver")
        if versions.group("cuda") is not None and na_reason(versions.group("cuda")) is None:
            software.cuda_driver_version = versions.group("cuda")
        elif versions.group("cuda") is not None:
            software.mark_missing("cuda_driver_version", Missing.REPORTED_NA)
        finish_missing(software, ("driver_version", "cuda_driver_version"))
        return number
    finish_missing(software, ("driver_version", "cuda_driver_version"))
    return None


def _find_table(lines: list[str]) -> tuple[int, _Layout] | None:
    """Where the GPU rows start (after the first "|===" rule under a header row naming the bus id), and the
    layout its header rows give."""
    for i, line in enumerate(lines):
        if not line.strip().startswith("|="):
            continue
        bus_row = next((j for j in range(i - 1, max(0, i - 4) - 1, -1) if _BUS_ID.search(lines[j])), None)
        if bus_row is not None:
            return i + 1, _Layout.of(lines[bus_row:i])
    return None


def _without_table(
    text: str, lines: list[str], header_line: int | None, snapshot: Snapshot, path: str | None
) -> Snapshot:
    """A text with no GPU table: nvidia-smi's own failure or "no devices", else a ParseError that says which."""
    if handle_errors(text):
        add_handle_errors(text, snapshot.gpus, SOURCE, snapshot.diagnostics)
        return snapshot
    absent = absent_reason(text)
    if absent is not None:
        snapshot.gpu_absent_reason = absent
        return snapshot
    if header_line is None:
        raise ParseError("no nvidia-smi table found (not `nvidia-smi` output?)", path=path)
    rule = next(
        (n for n, line in enumerate(lines[header_line:], start=header_line + 1) if line.strip().startswith("|=")), None
    )
    if rule is not None:  # a whole table: "truncated" would be false
        raise ParseError(
            "an nvidia-smi table whose header names no Bus-Id column: a layout this reader does not know",
            path=path,
            line=rule,
        )
    raise ParseError("truncated: the GPU table has no rows", path=path, line=header_line)


def parse_table(text: str, path: str | None = None) -> Snapshot:
    """Parse the output of a plain ``nvidia-smi``.

    Raises ParseError for an empty file, binary data, text that is not the table, or a table cut
    before its first GPU row.
    """
    check_text(text, path)
    lines = text_lines(text)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-table", path=path))
    header_line = _read_versions(lines, snapshot)

    table = _find_table(lines)
    if table is None:
        return _without_table(text, lines, header_line, snapshot, path)
    start, layout = table

    blocks, closed = _blocks(lines, start)
    if not blocks:
        raise ParseError("truncated: the GPU table has no rows", path=path, line=start)
    where: dict[int, str] = {}
    for k, block in enumerate(blocks):
        cut = not closed and k == len(blocks) - 1 and (block[-1].cut or len(block) < layout.rows)
        gpu = _read_block(block, layout, cut, snapshot.diagnostics, path)
        if gpu is not None:
            snapshot.gpus.append(gpu)
            where[gpu.index] = f"table row at line {block[0].number}"
    if not closed:
        last = f"GPU {snapshot.gpus[-1].index}" if snapshot.gpus else "its first GPU"
        message = (
            f"{INPUT_ENDS_EARLY}: the GPU table stops at line {len(lines)}, after {last}; "
            "GPUs listed after it, if any, are not in the text"
        )
        snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=message))
    mark_unreadable(snapshot.gpus, SOURCE, snapshot.diagnostics, where)
    add_handle_errors(text, snapshot.gpus, SOURCE, snapshot.diagnostics)
    box = from_table(lines)
    for gpu in snapshot.gpus:
        set_processes(gpu, None if box is None else box.get(gpu.index, []))
    mark_corrupt_inforoms(text, snapshot.gpus)
    return snapshot


def _blocks(lines: list[str], start: int) -> tuple[list[list[_Line]], bool]:
    """The GPU rows, one list per GPU, and whether the table is closed (a line follows its last border)."""
    blocks: list[list[_Line]] = []
    current: list[_Line] = []
    closed = False
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if line.startswith(("+", "|-", "|=")):
            if current:
                blocks.append(current)
            current = []
            continue
        if not line.startswith("|") or _PROCESS_BOX.match(line):
            closed = True
            break
        last = i == len(lines) - 1
        current.append(_Line(i + 1, lines[i], cut=last and not line.endswith("|")))
    if current:
        blocks.append(current)
    return blocks, closed
