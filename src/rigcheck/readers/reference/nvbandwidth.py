"""NVIDIA nvbandwidth output, as text or as its JSON (`nvbandwidth -j`): the header (versions, devices) and every
testcase with its matrix, its SUM and its status (passed, waived, error).

The text form, per testcase::

    Running host_to_device_memcpy_ce.
    memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
               0         1
     0     49.47     50.12
    SUM host_to_device_memcpy_ce 99.59

A waived testcase prints "Waived: ..." without its name or a "Running" line (v0.5+; counted) or "Waiving
<name>." (older). The JSON
form is ``{"nvbandwidth": {"version", "CUDA Runtime Version", "Driver Version", "testcases": [{"name",
"status", "bandwidth_description", "bandwidth_matrix" (rows of strings, "N/A"), "sum"}]}}`` (nvbandwidth's
json_output.cpp). Figures are kept as printed. Read for the format, not for one file: ANSI escapes, CRLF, a
launcher or collector prefix before a line (readers/launcher_prefix.py), extra spaces, missing sections and a cut
end are tolerated; a matrix the input ends inside keeps its complete cells and is marked ``truncated``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from rigcheck.errors import ParseError
from rigcheck.readers.launcher_prefix import strip_launcher_prefix
from rigcheck.readers.smi.ansi import strip_ansi

TOOL = "nvbandwidth"
Status = Literal["passed", "waived", "error"]

_VERSION = re.compile(r"nvbandwidth Version:\s*(\S+)")
# "CUDA Runtime Version: 12040" (up to v0.8), "CUDA Runtime Version: 13.2 (13020)" (v0.10): the integer either way.
_RUNTIME = re.compile(r"CUDA Runtime Version:\s*(?:\d+\.\d+\s*\((\d+)\)|(\d+))")
_CUDA_DRIVER = re.compile(r"CUDA Driver Version(?: \(API\))?:\s*(?:\d+\.\d+\s*\((\d+)\)|(\d+))")
_DRIVER = re.compile(r"^\s*Driver Version:\s*(\S+)")
# Multinode nvbandwidth prefixes "Process P (host): ": its matrices are indexed by process, so P names the row.
_DEVICE = re.compile(
    r"^\s*(?:Process (\d+) \([^)]*\): )?[Dd]evice (\d+): (.+?)(?: \(([0-9a-fA-F]{4,8}:[0-9a-fA-F:.]+)\))?\s*$"
)
_RUNNING = re.compile(r"^\s*Running (\w+)\.?\s*$")
_WAIVING = re.compile(r"^\s*Waiving (\w+)\.?\s*$")
_WAIVED = re.compile(r"^\s*Waived\b:?\s*(.*)$")
_ERROR = re.compile(r"^\s*(?:ERROR|Error|ASSERT|Invalid value)\b.*$")
_TITLE = re.compile(r"^\s*(.*?\S)\s*\((GB/s|ns|us)\)\s*$")
_HEADER = re.compile(r"^\s*\d+(?:\s+\d+)*\s*$")
_CELL = r"(?:-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|N/A)"
_ROW = re.compile(rf"^\s*(\d+)((?:\s+{_CELL})+)\s*$")
_SUM = re.compile(r"^\s*SUM (\w+) (-?\d+(?:\.\d+)?)\s*$")


@dataclass
class NvbTestcase:
    """One testcase: its matrix (row label -> cells, None where the tool printed N/A), as printed."""

    name: str
    status: Status = "passed"
    title: str | None = None  # "memcpy CE CPU(row) -> GPU(column) bandwidth"
    unit: str | None = None  # "GB/s"; "ns" for the latency testcases
    columns: list[int] = field(default_factory=list)
    rows: dict[int, list[float | None]] = field(default_factory=dict)
    sum: float | None = None
    message: str | None = None  # why it was waived or failed
    truncated: bool = False  # the input ends inside its matrix

    @property
    def arrow(self) -> str:
        """ "->" (row to column), "<-" (column to row) or "<->" (both at once), as the title prints it."""
        title = self.title or ""
        return "<->" if "<->" in title else "<-" if "<-" in title else "->"

    def cell(self, row: int, column: int) -> float | None:
        cells = self.rows.get(row, [])
        position = self.columns.index(column) if column in self.columns else -1
        return cells[position] if 0 <= position < len(cells) else None


@dataclass(frozen=True)
class NvbDevice:
    index: int
    name: str
    bus_id: str | None  # "00000000:00:06" as nvbandwidth prints it (no function); None before v0.7


@dataclass
class NvbandwidthRun:
    form: Literal["text", "json"]
    version: str | None = None
    cuda_runtime: int | None = None  # 13000 = CUDA 13.0
    cuda_driver: int | None = None
    driver_version: str | None = None
    devices: list[NvbDevice] = field(default_factory=list)
    testcases: list[NvbTestcase] = field(default_factory=list)
    error: str | None = None
    unnamed_waived: int = 0  # "Waived:" lines: v0.5+ names no testcase it waives (no "Running" line either)

    def testcase(self, name: str) -> NvbTestcase | None:
        return next((t for t in self.testcases if t.name == name), None)

    def device_name(self, index: int) -> str | None:
        return next((d.name for d in self.devices if d.index == index), None)

    @property
    def truncated(self) -> bool:
        return any(t.truncated for t in self.testcases)


def cuda_version(number: int | None) -> str | None:
    """CUDA's integer version as a dotted one: 12040 -> "12.4"."""
    return None if number is None else f"{number // 1000}.{number % 1000 // 10}"


def _clean(line: str) -> str:
    return strip_launcher_prefix(line).rstrip("\r")


def looks_like_nvbandwidth(text: str) -> bool:
    """nvbandwidth's text (its version line, or a "Running" line followed by a "memcpy ..." matrix title), or
    its JSON (an object with an "nvbandwidth" key)."""
    clean = strip_ansi(text).lstrip("\ufeff")
    head = clean.lstrip()
    if head.startswith("{"):
        return bool(re.match(r'\{\s*"nvbandwidth"\s*:', head))
    if _VERSION.search(clean):
        return True
    return bool(re.search(r"^\s*Running \w+\.\s*$", clean, re.MULTILINE)) and (
        re.search(r"^\s*(memcpy|memory latency) .*\((GB/s|ns)\)", clean, re.MULTILINE) is not None
    )


def _number(token: str) -> float | None:
    return None if token == "N/A" else float(token)


def parse_nvbandwidth(text: str, path: str | None = None) -> NvbandwidthRun:
    """Read nvbandwidth's output (text or -j JSON); ParseError when it holds no testcase at all."""
    clean = strip_ansi(text).lstrip("\ufeff")
    run = _parse_json(clean, path) if clean.lstrip().startswith("{") else _parse_text(clean)
    if not run.testcases:
        raise ParseError('nvbandwidth output without any testcase (no "Running <testcase>." line)', path=path)
    return run


def _parse_text(text: str) -> NvbandwidthRun:
    run = NvbandwidthRun(form="text")
    current: NvbTestcase | None = None
    lines = [_clean(raw) for raw in text.split("\n")]
    ends_cut = not text.endswith(("\n", "\r"))
    for number, line in enumerate(lines):
        if run.version is None and (m := _VERSION.search(line)):
            run.version = m.group(1)
        elif run.cuda_runtime is None and (m := _RUNTIME.search(line)):
            run.cuda_runtime = int(m.group(1) or m.group(2))
        elif run.cuda_driver is None and (m := _CUDA_DRIVER.search(line)):
            run.cuda_driver = int(m.group(1) or m.group(2))
        elif run.driver_version is None and (m := _DRIVER.match(line)):
            run.driver_version = m.group(1)
        elif current is None and (m := _DEVICE.match(line)):
            run.devices.append(NvbDevice(int(m.group(1) or m.group(2)), m.group(3).strip(), m.group(4)))
        elif m := _RUNNING.match(line):
            current = NvbTestcase(m.group(1))
            run.testcases.append(current)
        elif m := _WAIVING.match(line):
            found = run.testcase(m.group(1))
            if found is None:
                found = NvbTestcase(m.group(1))
                run.testcases.append(found)
            found.status, current = "waived", None
        elif m := _WAIVED.match(line):
            if current is not None and current.title is None and not current.rows:
                current.status, current.message = "waived", m.group(1).strip() or None
            else:
                run.unnamed_waived, current = run.unnamed_waived + 1, None
        elif (current is None or current.columns) and _TITLE.match(line) and not _ROW.match(line):
            # A matrix without its "Running" line (an excerpt): named by the SUM line that follows it.
            current = NvbTestcase("")
            run.testcases.append(current)
            _testcase_line(current, line, cut=False)
        elif current is not None:
            last = number == len(lines) - 1 or all(not rest.strip() for rest in lines[number + 1 :])
            _testcase_line(current, line, cut=last and ends_cut)
    run.testcases = [t for t in run.testcases if t.name]  # a nameless matrix cut before its SUM: unknown test
    for testcase in run.testcases:
        if testcase.columns and any(len(c) < len(testcase.columns) for c in testcase.rows.values()):
            testcase.truncated = True
    # A matrix still open at the input's end without its SUM line was cut there (a testcase that another line
    # followed was not: some outputs print no SUM before a "Waived:" line).
    if current is not None and current.name and current.status == "passed" and current.title and current.sum is None:
        current.truncated = True
    return run


def _testcase_line(testcase: NvbTestcase, line: str, *, cut: bool) -> None:
    """One line after "Running <testcase>.": its title, header, rows, SUM, or a waiver or error."""
    if m := _SUM.match(line):
        if m.group(1) == testcase.name or not testcase.name:
            testcase.name, testcase.sum = m.group(1), float(m.group(2))
    elif testcase.title is None and (m := _TITLE.match(line)) and not _ROW.match(line):
        testcase.title, testcase.unit = m.group(1), m.group(2)
    elif testcase.title is not None and not testcase.columns and _HEADER.match(line):
        testcase.columns = [int(c) for c in line.split()]
    elif testcase.columns and (m := _ROW.match(line)):
        cells = [_number(c) for c in m.group(2).split()]
        if cut:  # the last token of a file cut mid-line may be a number cut short ("16." of "16.42")
            cells = cells[:-1]
        testcase.rows[int(m.group(1))] = cells[: len(testcase.columns)]
    elif _ERROR.match(line) and testcase.sum is None:
        testcase.status, testcase.message = "error", line.strip()


def _parse_json(text: str, path: str | None) -> NvbandwidthRun:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"nvbandwidth JSON that does not parse: {exc.msg}", path=path, line=exc.lineno) from None
    root = data.get("nvbandwidth") if isinstance(data, dict) else None
    if not isinstance(root, dict):
        raise ParseError('not nvbandwidth JSON: no "nvbandwidth" object', path=path)
    run = NvbandwidthRun(form="json")
    run.version = _str(root.get("version"))
    run.cuda_runtime = _int(root.get("CUDA Runtime Version"))
    run.driver_version = _str(root.get("Driver Version"))
    run.error = _str(root.get("error"))
    cases = root.get("testcases")
    for raw in cases if isinstance(cases, list) else []:
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            run.testcases.append(_json_testcase(raw, path))
    return run


def _json_testcase(raw: dict[str, Any], path: str | None) -> NvbTestcase:
    status = str(raw.get("status", "")).lower()
    testcase = NvbTestcase(
        str(raw["name"]),
        status="passed" if status == "passed" else "waived" if status == "waived" else "error",
        message=_str(raw.get("error")),
    )
    description = _str(raw.get("bandwidth_description"))
    if description is not None and (m := _TITLE.match(description)):
        testcase.title, testcase.unit = m.group(1), m.group(2)
    matrix = raw.get("bandwidth_matrix")
    if isinstance(matrix, list):
        for index, row in enumerate(matrix):
            if not isinstance(row, list):
                raise ParseError(f"{testcase.name}: a bandwidth_matrix row that is not a list", path=path)
            try:
                testcase.rows[index] = [_number(str(cell).strip()) for cell in row]
            except ValueError:
                raise ParseError(f"{testcase.name}: a matrix cell that is not a number", path=path) from None
        width = max((len(r) for r in testcase.rows.values()), default=0)
        testcase.columns = list(range(width))
    sum_ = raw.get("sum")
    testcase.sum = float(sum_) if isinstance(sum_, int | float) and not isinstance(sum_, bool) else None
    return testcase


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None
