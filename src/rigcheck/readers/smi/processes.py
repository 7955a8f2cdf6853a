"""Processes holding GPU memory, and the InfoROM-corrupted warning, from saved ``nvidia-smi`` outputs.

Live NVML fills ``Gpu.processes`` from nvmlDeviceGetComputeRunningProcesses and ``Gpu.inforom_valid`` from
nvmlDeviceValidateInforom; the saved outputs give the same through:

- ``-q`` text: the per-GPU "Processes" block ("Compute Processes" before ~R375): ``None``, or entries of
  "Process ID" with "Type", "Name" and "Used GPU Memory" (R470+ put "GPU instance ID" / "Compute instance
  ID" before each);
- ``-q -x``: ``<processes>`` with one ``<process_info>`` (pid, type, process_name, used_memory) each;
- the table: the box under the GPU table, rows ``|  0  N/A  N/A  1234  C  python  500MiB |`` (older drivers
  print no GI/CI columns), or "No running processes found".

Graphics-only processes (type ``G``: Xorg, a desktop) are left out, as NVML's compute list leaves them out.
A block the output lacks, or one cut off or unreadable, leaves ``processes`` as it was (not in the source).

The InfoROM: nvidia-smi prints "WARNING: infoROM is corrupted at gpu 0000:xx:00.0" before its output for a
GPU whose InfoROM fails its checksum; such a GPU gets ``inforom_valid`` False. Nothing in the outputs proves
an InfoROM valid (an "Inforom Version" block is printed either way), so otherwise it stays unset.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from rigcheck.model.snapshot import Gpu, GpuProcess
from rigcheck.readers.smi.ansi import strip_ansi

_INFOROM_CORRUPT = re.compile(
    r"infoROM is corrupted at gpu\s+([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-9A-Fa-f])", re.IGNORECASE
)
_MIB = re.compile(r"^(\d+(?:\.\d+)?)\s*MiB$", re.IGNORECASE)
_BOX_TITLE = re.compile(r"^\|\s*Processes:")
_BOX_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(?P<pid>\d+)\s+(?P<type>[CGM](?:\+[CGM])?)\s+"
    r"(?P<name>.*?)\s+(?P<mem>N/A|\d+\s*MiB)\s*\|$"
)
_GRAPHICS = "G"
# -q text keys under Processes, by the GpuProcess field they give.
_PID, _TYPE, _NAME, _USED = "process id", "type", "name", "used gpu memory"
PROCESS_SECTIONS = ("processes", "compute processes")


def _key(bus_id: str) -> tuple[int, ...] | None:
    parts = re.split(r"[:.]", bus_id.strip())
    try:
        return tuple(int(p, 16) for p in parts)
    except ValueError:
        return None


def corrupt_inforoms(text: str) -> set[tuple[int, ...]]:
    """The bus ids (as numbers: domain, bus, device, function) nvidia-smi warned have a corrupted InfoROM."""
    found = (_key(m.group(1)) for m in _INFOROM_CORRUPT.finditer(strip_ansi(text)))
    return {k for k in found if k is not None}


def mark_corrupt_inforoms(text: str, gpus: Iterable[Gpu]) -> None:
    """Set ``inforom_valid`` False on each GPU whose bus id the infoROM-corrupted warning names."""
    corrupt = corrupt_inforoms(text)
    if not corrupt:
        return
    for gpu in gpus:
        if gpu.pci_bus_id is not None and _key(gpu.pci_bus_id) in corrupt:
            gpu.inforom_valid = False
            gpu.missing.pop("inforom_valid", None)


def set_processes(gpu: Gpu, processes: list[GpuProcess] | None) -> None:
    """Store what an output read (None: nothing read, ``gpu`` unchanged)."""
    if processes is None or gpu.read_error is not None:
        return
    gpu.processes = processes
    gpu.missing.pop("processes", None)


def _mib(text: str | None) -> float | None:
    match = _MIB.match((text or "").strip())
    return float(match.group(1)) if match else None


def _process(pid: str | None, kind: str | None, name: str | None, used: str | None) -> GpuProcess | None:
    """One process, or None for one to leave out (graphics only); ValueError for an unreadable PID."""
    if (kind or "").strip() == _GRAPHICS:
        return None
    name = (name or "").strip()
    return GpuProcess(pid=int((pid or "").strip()), name=name or None, used_memory_mib=_mib(used))


def from_text_entries(entries: Sequence[tuple[tuple[str, ...], str | None, bool]]) -> list[GpuProcess] | None:
    """The processes of one GPU from its ``-q`` entries ``(path, value, cut)``, in file order."""
    block = [e for e in entries if e[0] and e[0][0] in PROCESS_SECTIONS]
    if not block:
        return None
    head = block[0]
    if len(head[0]) == 1 and head[1] is not None:  # "Processes : None"
        return [] if head[1].strip().lower() == "none" and not head[2] else None
    rows: list[dict[str, str]] = []
    for path, value, cut in block[1:]:
        if cut:
            return None
        key = path[-1]
        if key == _PID:
            rows.append({})
        elif key not in (_TYPE, _NAME, _USED) or not rows:
            continue
        rows[-1][key] = value or ""
    if not rows or any(_USED not in row for row in rows):  # a fragment, or cut short of an entry's last key
        return None
    try:
        found = [_process(r.get(_PID), r.get(_TYPE), r.get(_NAME), r.get(_USED)) for r in rows]
    except ValueError:
        return None
    return [p for p in found if p is not None]


def from_xml(gpu: ET.Element, is_open: bool) -> list[GpuProcess] | None:
    """The processes under one ``<gpu>`` (``is_open``: the file ends inside its ``<processes>``)."""
    block = gpu.find("processes")
    if block is None or is_open:
        return None
    try:
        found = [
            _process(p.findtext("pid"), p.findtext("type"), p.findtext("process_name"), p.findtext("used_memory"))
            for p in block.findall("process_info")
        ]
    except ValueError:
        return None
    return [p for p in found if p is not None]


def from_table(lines: Sequence[str]) -> dict[int, list[GpuProcess]] | None:
    """The table's process box: processes by GPU index ({} for "No running processes found"), None without
    a whole box (none printed, or the file ends inside it)."""
    title = next((i for i, line in enumerate(lines) if _BOX_TITLE.match(line.strip())), None)
    if title is None:
        return None
    rule = next((i for i in range(title + 1, min(title + 4, len(lines))) if lines[i].strip().startswith("|=")), None)
    if rule is None:
        return None
    out: dict[int, list[GpuProcess]] = {}
    for raw in lines[rule + 1 :]:
        line = strip_ansi(raw).strip()
        if line.startswith("+"):
            return out
        if "no running processes found" in line.lower():
            continue
        match = _BOX_ROW.match(line)
        if match is None:
            if line.strip("| "):
                return None  # a row this reader does not know: claim nothing rather than too little
            continue
        process = _process(match["pid"], match["type"], match["name"], match["mem"])
        entry = out.setdefault(int(match["gpu"]), [])
        if process is not None:
            entry.append(process)
    return None  # no closing border: cut
