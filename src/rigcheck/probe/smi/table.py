"""Parse the plain ``nvidia-smi`` table into a Snapshot.

Layouts read: the 79-column table of drivers before 530 (with or without the "MIG M." row), the
wider table of newer drivers, the header without "CUDA Version" of old drivers, names that
nvidia-smi cut with "..." (kept as printed), Windows' TCC/WDDM column, and a MIG-enabled GPU
(its "MIG devices" table, printed below, is not read as GPUs).

Per GPU the table gives: index, name, persistence mode, bus id, volatile uncorrected ECC count
("Off" when ECC is disabled), fan, temperature, performance state, power draw and cap (the cap is
``power_limit_w``), memory used/total, GPU utilization, compute mode and MIG mode. Every other
field is NOT_IN_SOURCE.

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
from rigcheck.probe.smi.processes import from_table, mark_corrupt_inforoms, set_processes
from rigcheck.probe.smi.unreadable import add_handle_errors, handle_errors, mark_unreadable
from rigcheck.probe.smi.values import (
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

_VERSIONS = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)(?:\s+CUDA Version:\s*(?P<cuda>\S+))?"
)
_FIRST_ROW = re.compile(r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<pm>On|Off|N/A|TCC|WDDM|MCDM|ERR!)\s*$")
_INDEX = re.compile(r"^\s*(?P<index>\d+)\s")
_SECOND_ROW_CELL = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<usage>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
_MEMORY_CELL = re.compile(r"^\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*$")

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


def _read_first_row(row: _Row, cells: list[str]) -> None:
    match = _FIRST_ROW.match(cells[0])
    if match is None:
        row.note("unreadable first GPU row")
        return
    row.set("name", parse_str(match.group("name")))
    persistence = match.group("pm")
    if persistence in ("On", "Off", "N/A", "ERR!"):
        row.set("persistence_mode", parse_bool(persistence))
    if len(cells) > 1 and cells[1].split():
        row.set("pci_bus_id", parse_str(cells[1].split()[0]))
    if len(cells) < 3:
        return
    ecc = cells[2].strip()
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


def _read_second_row(row: _Row, cells: list[str]) -> None:
    if not cells:  # the input ends inside its first cell
        return
    metrics = _SECOND_ROW_CELL.match(cells[0])
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
        parts = cells[2].split(None, 1)
        if parts:
            row.set("utilization_gpu_percent", parse_percent(parts[0], unit=True))
        if len(parts) > 1:
            row.set("compute_mode", parse_compute_mode(parts[1]))


def _read_block(
    block: list[_Line], rows: int, cut: bool, diagnostics: list[Diagnostic], path: str | None
) -> Gpu | None:
    """One GPU from its rows; ``cut``: the input ends inside this GPU (its missing rows are TRUNCATED).

    None when the input ends before the GPU's index.
    """
    first = block[0]
    cells = first.cells()
    match = _FIRST_ROW.match(cells[0]) if cells else None
    index = match or _INDEX.match(_cells(first.text)[0])
    if match is None:
        if not first.cut:
            raise ParseError("not a GPU row of the nvidia-smi table", path=path, line=first.number)
        if index is None:
            return None
        cells = []  # the row is cut before its persistence column: nothing on it is whole
    assert index is not None
    gpu = Gpu(index=int(index.group("index")))
    row = _Row(gpu, diagnostics, first.number)
    if cells:
        _read_first_row(row, cells)
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
    if cut:  # what the input did not reach, on a cut row or on rows it never printed
        for (r, c), fields in _CELLS.items():
            if r < rows and (r >= len(block) or c >= len(block[r].cells())):
                for attr in fields:
                    if getattr(gpu, attr) is None and gpu.missing.get(attr) is None:
                        gpu.mark_missing(attr, Missing.TRUNCATED)
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


def parse_table(text: str, path: str | None = None) -> Snapshot:
    """Parse the output of a plain ``nvidia-smi``.

    Raises ParseError for an empty file, binary data, text that is not the table, or a table cut
    before its first GPU row.
    """
    check_text(text, path)
    lines = text_lines(text)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-table", path=path))
    header_line = _read_versions(lines, snapshot)

    # The GPU table: the first "|===" rule after a header row naming "Bus-Id".
    start: int | None = None
    rows = 2
    for i, line in enumerate(lines):
        if line.strip().startswith("|=") and any("Bus-Id" in previous for previous in lines[max(0, i - 4) : i]):
            start = i + 1
            bus_row = next(j for j in range(i - 1, max(0, i - 4) - 1, -1) if "Bus-Id" in lines[j])
            rows = i - bus_row  # 2 header rows, or 3 with "MIG M."
            break
    if start is None:
        if handle_errors(text):
            add_handle_errors(text, snapshot.gpus, SOURCE, snapshot.diagnostics)
            return snapshot
        absent = absent_reason(text)
        if absent is not None:
            snapshot.gpu_absent_reason = absent
            return snapshot
        if header_line is not None:
            raise ParseError("truncated: the GPU table has no rows", path=path, line=header_line)
        raise ParseError("no nvidia-smi table found (not `nvidia-smi` output?)", path=path)

    blocks, closed = _blocks(lines, start)
    if not blocks:
        raise ParseError("truncated: the GPU table has no rows", path=path, line=start)
    where: dict[int, str] = {}
    for k, block in enumerate(blocks):
        cut = not closed and k == len(blocks) - 1 and (block[-1].cut or len(block) < rows)
        gpu = _read_block(block, rows, cut, snapshot.diagnostics, path)
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
        if not line.startswith("|"):
            closed = True
            break
        last = i == len(lines) - 1
        current.append(_Line(i + 1, lines[i], cut=last and not line.endswith("|")))
    if current:
        blocks.append(current)
    return blocks, closed
