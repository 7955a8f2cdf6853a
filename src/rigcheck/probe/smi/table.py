"""Parse the plain ``nvidia-smi`` table into a Snapshot.

Layouts read: the 79-column table of drivers before 530 (with or without the "MIG M." row), the
wider table of newer drivers, the header without "CUDA Version" of old drivers, names that
nvidia-smi cut with "..." (kept as printed), Windows' TCC/WDDM column, and a MIG-enabled GPU
(its "MIG devices" table, printed below, is not read as GPUs).

Per GPU the table gives: index, name, persistence mode, bus id, volatile uncorrected ECC count
("Off" when ECC is disabled), fan, temperature, performance state, power draw and cap (the cap is
``power_limit_w``), memory used/total, GPU utilization, compute mode and MIG mode. Every other
field is NOT_IN_SOURCE.
"""

from __future__ import annotations

import re
from typing import TypeVar

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Diagnostic, Gpu, Missing, Snapshot, Source
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
_FIRST_ROW = re.compile(r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<pm>On|Off|N/A|TCC|WDDM|MCDM)\s*$")
_SECOND_ROW_CELL = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<usage>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
_MEMORY_CELL = re.compile(r"^\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*$")


def _cells(line: str) -> list[str]:
    """The cells of a ``| a | b | c |`` row (outer bars dropped)."""
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return stripped.split("|")


class _Row:
    def __init__(self, gpu: Gpu, diagnostics: list[Diagnostic], line: int) -> None:
        self.gpu = gpu
        self.diagnostics = diagnostics
        self.line = line

    def set(self, attr: str, result: Parsed[T]) -> None:
        if result.value is not None:
            setattr(self.gpu, attr, result.value)
        elif result.reason is not None:
            self.gpu.mark_missing(attr, result.reason)
        if result.error is not None:
            self.diagnostics.append(
                Diagnostic(source=SOURCE, message=f"{attr}: {result.error} (line {self.line})", gpu=self.gpu.index)
            )


def _read_block(block: list[tuple[int, str]], diagnostics: list[Diagnostic], path: str | None) -> Gpu:
    number, first = block[0]
    cells = _cells(first)
    match = _FIRST_ROW.match(cells[0]) if cells else None
    if match is None or len(cells) < 3:
        raise ParseError("not a GPU row of the nvidia-smi table", path=path, line=number)
    gpu = Gpu(index=int(match.group("index")))
    row = _Row(gpu, diagnostics, number)
    row.set("name", parse_str(match.group("name")))
    persistence = match.group("pm")
    if persistence in ("On", "Off", "N/A"):
        row.set("persistence_mode", parse_bool(persistence))
    bus = cells[1].split()
    if bus:
        row.set("pci_bus_id", parse_str(bus[0]))
    ecc = cells[2].strip()
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

    if len(block) > 1:
        number, second = block[1]
        row.line = number
        cells = _cells(second)
        metrics = _SECOND_ROW_CELL.match(cells[0]) if cells else None
        if metrics is None:
            diagnostics.append(
                Diagnostic(source=SOURCE, message=f"unreadable second GPU row (line {number})", gpu=gpu.index)
            )
        else:
            row.set("fan_percent", parse_percent(metrics.group("fan")))
            row.set("temp_c", parse_celsius(metrics.group("temp")))
            row.set("pstate", parse_str(metrics.group("perf")))
            row.set("power_draw_w", parse_watts(metrics.group("usage")))
            row.set("power_limit_w", parse_watts(metrics.group("cap")))
        memory = _MEMORY_CELL.match(cells[1]) if len(cells) > 1 else None
        if memory is not None:
            row.set("memory_used_mib", parse_mib(memory.group("used")))
            row.set("memory_total_mib", parse_mib(memory.group("total")))
        if len(cells) > 2:
            parts = cells[2].split(None, 1)
            if parts:
                row.set("utilization_gpu_percent", parse_percent(parts[0]))
            if len(parts) > 1:
                row.set("compute_mode", parse_compute_mode(parts[1]))
    else:
        diagnostics.append(
            Diagnostic(source=SOURCE, message=f"GPU row cut after its first line (line {number})", gpu=gpu.index)
        )
    if len(block) > 2:
        number, third = block[2]
        cells = _cells(third)
        if len(cells) > 2 and cells[2].strip():
            row.line = number
            row.set("mig_enabled", parse_bool(cells[2].strip()))
    finish_missing(gpu)
    return gpu


def parse_table(text: str, path: str | None = None) -> Snapshot:
    """Parse the output of a plain ``nvidia-smi``.

    Raises ParseError for an empty file, binary data, text that is not the table, or a table cut
    before its first GPU row.
    """
    check_text(text, path)
    lines = text_lines(text)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-table", path=path))
    software = snapshot.software

    header_line: int | None = None
    for number, line in enumerate(lines, start=1):
        versions = _VERSIONS.search(line)
        if versions is not None:
            header_line = number
            software.driver_version = versions.group("driver")
            if versions.group("cuda") is not None and na_reason(versions.group("cuda")) is None:
                software.cuda_driver_version = versions.group("cuda")
            elif versions.group("cuda") is not None:
                software.mark_missing("cuda_driver_version", Missing.REPORTED_NA)
            break
    finish_missing(software, ("driver_version", "cuda_driver_version"))

    # The GPU table: the first "|===" rule after a header row naming "Bus-Id".
    start: int | None = None
    for i, line in enumerate(lines):
        if line.strip().startswith("|=") and any("Bus-Id" in previous for previous in lines[max(0, i - 4) : i]):
            start = i + 1
            break
    if start is None:
        absent = absent_reason(text)
        if absent is not None:
            snapshot.gpu_absent_reason = absent
            return snapshot
        if header_line is not None:
            raise ParseError("truncated: the GPU table has no rows", path=path, line=header_line)
        raise ParseError("no nvidia-smi table found (not `nvidia-smi` output?)", path=path)

    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if line.startswith("+") or line.startswith("|-") or line.startswith("|="):
            if current:
                blocks.append(current)
            current = []
            continue
        if not line.startswith("|"):
            break
        current.append((i + 1, lines[i]))
    if current:
        blocks.append(current)
    if not blocks:
        raise ParseError("truncated: the GPU table has no rows", path=path, line=start)
    for block in blocks:
        snapshot.gpus.append(_read_block(block, snapshot.diagnostics, path))
    return snapshot
