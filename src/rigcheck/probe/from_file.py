"""`--from FILE`: recognise a saved output (nvidia-smi in its forms, topo -m, a snapshot) and read it.

Everything here raises InputError subclasses with the file's name, so the CLI can print one line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Literal

from rigcheck.errors import InputError, ParseError
from rigcheck.model import Gpu, Missing, Snapshot, Source, snapshot_from_json
from rigcheck.probe.smi.ansi import strip_ansi

# Real outputs are kilobytes; a 64 MiB ceiling keeps a wrong file from eating the machine's memory.
MAX_INPUT_BYTES = 64 * 1024 * 1024

InputKind = Literal["snapshot", "nvidia-smi-xml", "nvidia-smi-q", "nvidia-smi-table", "topo", "nvlink-status"]

_TOPO_HEADER = re.compile(r"^\s*(GPU\d+\s+)+", re.MULTILINE)
_TOPO_ROW = re.compile(r"^\s*GPU\d+\s+(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)\b", re.MULTILINE)
_P2P_LEGEND = re.compile(r"^\s*CNS\s+=\s+Chipset not supported", re.MULTILINE)
_NVLINK = re.compile(r"^\s*Link \d+: ", re.MULTILINE)
_NVLINK_GPU = re.compile(r"^GPU \d+: .*\(UUID: ", re.MULTILINE)
_Q_SECTION = re.compile(
    r"^\s*(Attached GPUs|Driver Version|Product Name|Clocks (Throttle|Event) Reasons|GPU Power Readings|"
    r"Power Readings|Temperature|GPU Current Temp|Max Clocks|PCIe Generation|GPU Link Info)\s*(:|$)",
    re.MULTILINE,
)


SNAPSHOT_INPUTS = "nvidia-smi output or a rigcheck snapshot"


def read_text(path: str, expected: str = SNAPSHOT_INPUTS) -> str:
    """The file's text ("-" is standard input), refusing what cannot be an output of these tools.

    ``expected`` names what the caller reads, for the message about an empty file.
    """
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            p = Path(path)
            if p.is_dir():
                raise InputError("is a directory, not a file", path=path)
            size = p.stat().st_size
            if size > MAX_INPUT_BYTES:
                raise InputError(
                    f"file is too large ({size / 1e6:.1f} MB; rigcheck reads at most {MAX_INPUT_BYTES // 2**20} MiB)",
                    path=path,
                )
            raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=path) from None
    if len(raw) > MAX_INPUT_BYTES:
        raise InputError(f"input is too large (over {MAX_INPUT_BYTES // 2**20} MiB)", path=path)
    if not raw.strip():
        raise InputError(f"empty file: expected {expected}", path=path)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # PowerShell redirects write UTF-16
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise InputError("binary data, not text", path=path) from None
    if b"\x00" in raw:
        raise InputError("binary data, not text (it holds NUL bytes)", path=path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("binary data, not UTF-8 text", path=path, line=line) from None


def detect_kind(text: str) -> InputKind | None:
    """Which output this is, from its content alone; None when it is none of them."""
    clean = strip_ansi(text).lstrip("\ufeff")
    head = clean.lstrip()[:4096]
    if head.startswith("{"):
        return "snapshot"
    if head.startswith("<?xml") or "<nvidia_smi_log" in head:
        return "nvidia-smi-xml"
    if "NVSMI LOG" in head:
        return "nvidia-smi-q"
    if "NVIDIA-SMI" in clean and "|" in clean:
        return "nvidia-smi-table"
    if _P2P_LEGEND.search(clean):
        return None  # `nvidia-smi topo -p2p`: same shape as topo -m, other codes
    if _TOPO_HEADER.search(clean) and _TOPO_ROW.search(clean):
        return "topo"
    if _NVLINK_GPU.search(clean) and (_NVLINK.search(clean) or "NVLink" in clean):
        return "nvlink-status"
    if _Q_SECTION.search(clean):
        return "nvidia-smi-q"
    return None


def snapshot_from_topo_text(text: str, path: str | None) -> Snapshot:
    from rigcheck.probe.smi.topo import pairs_from_topology, parse_topo

    topo = parse_topo(text, path)
    gpus: list[Gpu] = []
    for tg in topo.gpus:
        gpu = Gpu(index=tg.index)
        if tg.cpu_affinity:
            gpu.cpu_affinity = tg.cpu_affinity
        if tg.numa_affinity is not None and tg.numa_affinity.isdigit():
            gpu.numa_node = int(tg.numa_affinity)
        gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
        gpus.append(gpu)
    return Snapshot(
        source=Source(kind="topo", path=path),
        gpus=gpus,
        pairs=pairs_from_topology(topo),
        topology=topo,
        nics=list(topo.nics),
    )


def _parse(kind: InputKind, text: str, path: str | None) -> Snapshot:
    """Read ``text`` as ``kind``. Each text parser is imported here: a snapshot JSON (the common case) needs none."""
    if kind == "snapshot":
        snap = snapshot_from_json(text, path=path)
        # Keep where the data originally came from; remember the file it was replayed from.
        snap.source.replayed_from = path
        return snap
    if kind == "nvidia-smi-xml":
        from rigcheck.probe.smi.query_xml import parse_query_xml

        return parse_query_xml(text, path)
    if kind == "nvidia-smi-q":
        from rigcheck.probe.smi.query_text import parse_query_text

        return parse_query_text(text, path)
    if kind == "nvidia-smi-table":
        from rigcheck.probe.smi.table import parse_table

        return parse_table(text, path)
    if kind == "nvlink-status":
        from rigcheck.probe.smi.nvlink_status import parse_nvlink_status

        return parse_nvlink_status(text, path)
    return snapshot_from_topo_text(text, path)  # "topo", the one kind left


def load_text(text: str, path: str | None = None) -> Snapshot:
    kind = detect_kind(text)
    if kind is None and _P2P_LEGEND.search(strip_ansi(text)):
        raise ParseError(
            "this is `nvidia-smi topo -p2p` output; rigcheck reads `nvidia-smi topo -m` (and finds P2P status itself)",
            path=path,
        )
    if kind is None:
        raise ParseError(
            "not a recognised input: expected `nvidia-smi -q` (or -q -x), the `nvidia-smi` table, "
            "`nvidia-smi topo -m`, `nvidia-smi nvlink -s`, or a rigcheck snapshot JSON",
            path=path,
        )
    return _parse(kind, text, path)


def load_file(path: str) -> Snapshot:
    """Read ``path`` (or "-" for stdin) as whichever supported output it is."""
    return load_text(read_text(path), path)
