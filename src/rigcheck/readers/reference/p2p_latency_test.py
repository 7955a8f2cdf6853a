"""The CUDA sample p2pBandwidthLatencyTest's output: its devices, the "Device=0 CAN/CANNOT Access Peer Device=1"
lines, the P2P connectivity matrix and every bandwidth and latency matrix, as printed.

Matrices are named as rigcheck's own `bench p2p` names them: ``<figure>_<mode>``, with P2P=Enabled as mode
``peer`` and P2P=Disabled (the copy staged through host memory by the driver) as ``staged``:
``unidirectional_gbps_peer``, ``bidirectional_gbps_staged``, ``latency_us_peer`` (the GPU sub-matrix of a
latency matrix), ``cpu_latency_us_peer`` (its CPU sub-matrix); the "(P2P Reads)" variants newer samples print
add ``_reads`` (the "(P2P Writes)" ones, and older samples' untagged titles, are the plain names). The diagonal
is kept: there the sample measures a copy within one GPU.

Read for the format: ANSI escapes, CRLF, tabs, a launcher or collector prefix (readers/launcher_prefix.py), extra
spaces and a cut end are tolerated; a matrix the input ends inside keeps the rows it has and the run is marked
``truncated``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.readers.launcher_prefix import strip_launcher_prefix
from rigcheck.readers.smi.ansi import strip_ansi

TOOL = "p2pBandwidthLatencyTest"

_BANNER = re.compile(r"\[P2P \(Peer-to-Peer\) GPU Bandwidth Latency Test\]")
_DEVICE = re.compile(
    r"^\s*Device:\s*(\d+),\s*(.+?),\s*pciBusID:\s*([0-9a-fA-F]+),\s*pciDeviceID:\s*([0-9a-fA-F]+),"
    r"\s*pciDomainID:\s*([0-9a-fA-F]+)"
)
_PEER = re.compile(r"^\s*Device=(\d+)\s+(CAN|CANNOT)\s+Access Peer Device=(\d+)")
_CONNECTIVITY = re.compile(r"^\s*P2P Connectivity Matrix\s*$")
_TITLE = re.compile(
    r"^\s*(?:(Unidirectional|Bidirectional)\s+)?P2P=(Enabled|Disabled)\s+(Bandwidth|Latency)"
    r"(?:\s*\(P2P (Writes|Reads)\))?\s+Matrix\s*\((GB/s|us)\)\s*$"
)
_HEADER = re.compile(r"^\s*(D\\D|GPU|CPU)((?:\s+\d+)+)\s*$")
_ROW = re.compile(r"^\s*(\d+)((?:\s+-?(?:\d+(?:\.\d*)?|inf|nan))+)\s*$")

Matrix = list[list[float | None]]


@dataclass(frozen=True)
class P2PDevice:
    index: int
    name: str
    bus_id: str  # "0000:b4:00.0", from the printed domain, bus and device


@dataclass
class P2PTestRun:
    devices: list[P2PDevice] = field(default_factory=list)
    peer_access: dict[tuple[int, int], bool] = field(default_factory=dict)  # (src, dst) -> CAN
    connectivity: Matrix | None = None
    matrices: dict[str, Matrix] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)  # matrix name -> its title as printed
    truncated: bool = False

    @property
    def size(self) -> int:
        """GPUs in the run: the devices listed, else the widest matrix."""
        widths = [len(r) for m in self.matrices.values() for r in m]
        return max(len(self.devices), max(widths, default=0))

    def device_name(self, index: int) -> str | None:
        return next((d.name for d in self.devices if d.index == index), None)


def looks_like_p2p_latency_test(text: str) -> bool:
    clean = strip_ansi(text)
    if _BANNER.search(clean):
        return True
    return any(_TITLE.match(_clean(line)) for line in clean.splitlines())


def _clean(line: str) -> str:
    return strip_launcher_prefix(line).rstrip("\r").expandtabs(8)


def _name(title: re.Match[str], sub: str) -> str:
    direction, enabled, kind, variant, _unit = title.groups()
    mode = "peer" if enabled == "Enabled" else "staged"
    suffix = "_reads" if variant == "Reads" else ""
    if kind == "Latency":
        return f"{'cpu_' if sub == 'CPU' else ''}latency_us_{mode}{suffix}"
    return f"{(direction or 'unidirectional').lower()}_gbps_{mode}{suffix}"


def parse_p2p_latency_test(text: str, path: str | None = None) -> P2PTestRun:
    """Read p2pBandwidthLatencyTest's output; ParseError when it holds no matrix at all."""
    run = P2PTestRun()
    title: re.Match[str] | None = None
    connectivity = False
    current: Matrix | None = None
    columns = 0
    lines = strip_ansi(text).lstrip("\ufeff").split("\n")
    last = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
    ends_cut = not text.endswith(("\n", "\r"))
    for number, raw in enumerate(lines):
        line = _clean(raw)
        if m := _DEVICE.match(line):
            domain, bus, dev = (int(m.group(i), 16) for i in (5, 3, 4))
            run.devices.append(P2PDevice(int(m.group(1)), m.group(2).strip(), f"{domain:04x}:{bus:02x}:{dev:02x}.0"))
        elif m := _PEER.match(line):
            run.peer_access[(int(m.group(1)), int(m.group(3)))] = m.group(2) == "CAN"
        elif _CONNECTIVITY.match(line):
            connectivity, title, current = True, None, None
        elif m := _TITLE.match(line):
            connectivity, title, current = False, m, None
        elif (m := _HEADER.match(line)) and (title is not None or connectivity):
            current, columns = [], len(m.group(2).split())
            if connectivity:
                run.connectivity = current
            else:
                assert title is not None
                name = _name(title, m.group(1))
                run.matrices[name], run.titles[name] = current, line_title(title)
        elif current is not None and (m := _ROW.match(line)):
            cells: list[float | None] = [float(c) for c in m.group(2).split()]
            if number == last and ends_cut:  # the last token of a file cut mid-line may be a number cut short
                cells = cells[:-1]
            if len(cells) < columns:
                run.truncated = True
            current.append(cells[:columns])
    n = run.size
    if not run.matrices:
        raise ParseError("p2pBandwidthLatencyTest output without any bandwidth or latency matrix", path=path)
    if any(len(m) < n or any(len(r) < n for r in m) for m in run.matrices.values()):
        run.truncated = True
    return run


def line_title(title: re.Match[str]) -> str:
    return " ".join(title.group(0).split())
