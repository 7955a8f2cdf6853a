"""The CUDA sample bandwidthTest's output: its devices and every bandwidth table, as printed.

Layouts read (NVIDIA/cuda-samples Samples/1_Utilities/bandwidthTest, and the SDK before it):

- readable tables: " Host to Device Bandwidth, 1 Device(s)" / " PINNED Memory Transfers" (or PAGEABLE; an optional
  "Write-Combined Memory Writes are Enabled") / "Transfer Size (Bytes)<tab>Bandwidth(GB/s)" then one row per size:
  quick mode (one size, 32000000 bytes; 33554432 in older samples), range and shmoo mode (many sizes);
- older samples print "Bandwidth(MB/s)": converted to GB/s as those samples computed it, bytes x 1024 /
  (ms x 2^20), i.e. bytes/s / 1,024,000 (MB_PER_GB_OLD);
- ``--csv``: "bandwidthTest-H2D-Pinned, Bandwidth = 12.1 GB/s, Time = 0.00264 s, Size = 32000000 bytes,
  NumDevsUsed = 1".

What the figures mean (the sample's source): host copies are cudaMemcpyAsync from pinned memory (a copy engine) or
cudaMemcpy from pageable memory; a device-to-device figure counts the bytes twice (read and write: 2 x size /
time); with several devices (``--device=all`` or a range) each size's figure is the SUM over the devices, measured
one after the other, so a per-GPU figure is only their mean. Read for the format: CRLF, tabs, ANSI escapes, a
launcher prefix, the shmoo progress dots and a cut end are tolerated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from rigcheck.errors import ParseError
from rigcheck.readers.launcher_prefix import strip_launcher_prefix
from rigcheck.readers.smi.ansi import strip_ansi

TOOL = "bandwidthTest"
# Older samples' "MB/s": ((1 << 10) * bytes) / (ms * (1 << 20)) = bytes/s / 1,024,000 (helper_cuda-era
# bandwidthTest.cu); the SDK's cutil-era code divided by 2^20 (MiB/s), 2.4% apart: noted on the rows.
MB_PER_GB_OLD = 1e9 / 1_024_000

Kind = Literal["h2d", "d2h", "d2d"]
Memory = Literal["pinned", "pageable"]

_BANNER = re.compile(r"CUDA Bandwidth Test\]")
_DEVICE = re.compile(r"^\s*Device\s+(\d+):\s*(.+?)\s*$")
_TABLE = re.compile(r"^\s*(Host to Device|Device to Host|Device to Device) Bandwidth,\s*(\d+)\s*Device\(s\)")
_MEMORY = re.compile(r"^\s*(PINNED|PAGEABLE|PAGED) Memory Transfers", re.IGNORECASE)
_UNIT = re.compile(r"Bandwidth\s*\((GB/s|MB/s)\)")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+(?:\.\d*)?)\s*$")
_CSV = re.compile(
    r"bandwidthTest-(H2D|D2H|D2D)(?:-(Pinned|Paged)(-WriteCombined)?)?,\s*Bandwidth\s*=\s*([\d.]+)\s*(GB/s|MB/s)"
    r".*?Size\s*=\s*(\d+)\s*bytes(?:,\s*NumDevsUsed\s*=\s*(\d+))?"
)
_MODE = re.compile(r"^\s*(Quick|Range|Shmoo) Mode\s*$")
_RESULT = re.compile(r"^\s*Result\s*=\s*(PASS|FAIL|WAIVED)")
_KINDS: dict[str, Kind] = {
    "Host to Device": "h2d",
    "Device to Host": "d2h",
    "Device to Device": "d2d",
    "H2D": "h2d",
    "D2H": "d2h",
    "D2D": "d2d",
}


@dataclass
class BwTable:
    """One table: a direction, host memory kind, how many devices it sums, and (bytes, GB/s) per size."""

    kind: Kind
    memory: Memory
    devices: int
    write_combined: bool = False
    unit: str = "GB/s"
    rows: list[tuple[int, float]] = field(default_factory=list)

    @property
    def largest(self) -> tuple[int, float] | None:
        """The largest size's row: where the figure has converged (shmoo's small sizes are latency-bound)."""
        return max(self.rows, key=lambda r: r[0]) if self.rows else None


@dataclass(frozen=True)
class BwDevice:
    index: int
    name: str
    bus_id: str | None = None  # bandwidthTest prints none


@dataclass
class BandwidthTestRun:
    devices: list[BwDevice] = field(default_factory=list)
    mode: str | None = None
    tables: list[BwTable] = field(default_factory=list)
    result: str | None = None
    truncated: bool = False

    def device_name(self, index: int) -> str | None:
        return next((d.name for d in self.devices if d.index == index), None)


def _lines(text: str) -> list[str]:
    return [strip_launcher_prefix(strip_ansi(line)).rstrip() for line in text.replace("\r\n", "\n").split("\n")]


def looks_like_bandwidth_test(text: str) -> bool:
    """The banner, a readable table title with its unit line, or a --csv row."""
    head = text[:200_000]
    if _BANNER.search(head) or _CSV.search(head):
        return True
    return bool(re.search(_TABLE.pattern, head, re.MULTILINE)) and bool(_UNIT.search(head))


def _gbps(value: float, unit: str) -> float:
    return value / MB_PER_GB_OLD if unit == "MB/s" else value


def parse_bandwidth_test(text: str, path: str) -> BandwidthTestRun:
    """Every table of a bandwidthTest output; ParseError where none has a row."""
    run = BandwidthTestRun()
    table: BwTable | None = None
    pending: tuple[Kind, int] | None = None  # a title whose memory line has not come yet
    for line in _lines(text):
        if (m := _DEVICE.match(line)) is not None and table is None and pending is None:
            run.devices.append(BwDevice(int(m.group(1)), m.group(2)))
            continue
        if (m := _MODE.match(line)) is not None:
            run.mode = m.group(1).lower()
            continue
        if (m := _TABLE.match(line)) is not None:
            pending, table = (_KINDS[m.group(1)], int(m.group(2))), None
            continue
        if (m := _MEMORY.match(line)) is not None and pending is not None:
            memory: Memory = "pinned" if m.group(1).upper() == "PINNED" else "pageable"
            table = BwTable(kind=pending[0], memory=memory, devices=pending[1])
            run.tables.append(table)
            pending = None
            continue
        if table is not None and "Write-Combined" in line:
            table.write_combined = True
        if table is not None and (m := _UNIT.search(line)) is not None:
            table.unit = m.group(1)
            continue
        if table is not None and (m := _ROW.match(line)) is not None:
            table.rows.append((int(m.group(1)), _gbps(float(m.group(2)), table.unit)))
            continue
        if (m := _CSV.search(line)) is not None:
            kind = _KINDS[m.group(1)]
            csv_memory: Memory = "pageable" if m.group(2) == "Paged" else "pinned"
            devices = int(m.group(7)) if m.group(7) else 1
            found = next(
                (
                    t
                    for t in run.tables
                    if (t.kind, t.memory, t.devices, t.write_combined) == (kind, csv_memory, devices, bool(m.group(3)))
                ),
                None,
            )
            if found is None:
                found = BwTable(kind, csv_memory, devices, bool(m.group(3)), m.group(5))
                run.tables.append(found)
            found.rows.append((int(m.group(6)), _gbps(float(m.group(4)), m.group(5))))
            continue
        if (m := _RESULT.match(line)) is not None:
            run.result = m.group(1)
            table = None
    # Cut inside a table: its title printed and no row after it (a paste that stops at "Bandwidth(MB/"). A
    # missing "Result =" line alone is not a cut: pastes often leave it out.
    run.truncated = pending is not None or any(not t.rows for t in run.tables)
    run.tables = [t for t in run.tables if t.rows]
    if not run.tables:
        raise ParseError("bandwidthTest output without any bandwidth table row", path=path)
    return run
