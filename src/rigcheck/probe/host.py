"""Host facts: hostname, OS, kernel, CPU, NUMA nodes, memory — read from /proc, /etc and /sys.

Paths are relative to ``root`` so tests can point it at a hand-made tree. A file that is absent gives
not_supported (this OS does not offer it), an unreadable one no_permission.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

from rigcheck.inputs import read_sys_text
from rigcheck.model.snapshot import Host, Missing

_NODE_RE = re.compile(r"^node[0-9]+$")
# /proc/cpuinfo keys naming the CPU: x86 "model name", some ARM kernels "Model name"/"Hardware".
_CPU_MODEL_KEYS = ("model name", "cpu model", "hardware")


def parse_os_release(text: str) -> str | None:
    """PRETTY_NAME from /etc/os-release, unquoted; None if absent."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "PRETTY_NAME":
            return value.strip().strip("\"'") or None
    return None


def parse_cpuinfo(text: str) -> tuple[str | None, int]:
    """(CPU model, number of "processor" entries) from /proc/cpuinfo."""
    model: str | None = None
    count = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "processor":
            count += 1
        elif model is None and key in _CPU_MODEL_KEYS and value.strip():
            model = value.strip()
    return model, count


def parse_meminfo_total_gib(text: str) -> float | None:
    """MemTotal from /proc/meminfo (kB) in GiB."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isascii() and parts[1].isdigit():
                return int(parts[1]) * 1024 / 2**30
    return None


def probe_host(root: Path = Path("/")) -> Host:
    host = Host()
    live = root == Path("/")

    text, reason = read_sys_text(root / "proc/sys/kernel/hostname")
    host.hostname = text.strip() if text and text.strip() else (socket.gethostname() if live else None)
    if host.hostname is None:
        host.mark_missing("hostname", reason or Missing.NOT_SUPPORTED)

    text, reason = read_sys_text(root / "etc/os-release")
    host.os = parse_os_release(text) if text is not None else None
    if host.os is None:
        host.mark_missing("os", reason or Missing.NOT_SUPPORTED)

    text, reason = read_sys_text(root / "proc/sys/kernel/osrelease")
    host.kernel = text.strip() if text and text.strip() else None
    if host.kernel is None:
        host.mark_missing("kernel", reason or Missing.NOT_SUPPORTED)

    text, reason = read_sys_text(root / "proc/cpuinfo")
    model, count = parse_cpuinfo(text) if text is not None else (None, 0)
    host.cpu_model = model
    host.cpu_count = count or None
    for field, value in (("cpu_model", host.cpu_model), ("cpu_count", host.cpu_count)):
        if value is None:
            host.mark_missing(field, reason or Missing.NOT_SUPPORTED)

    node_dir = root / "sys/devices/system/node"
    try:
        nodes = [p for p in node_dir.iterdir() if _NODE_RE.match(p.name)]
        host.numa_nodes = len(nodes) or None
        reason = None
    except PermissionError:
        reason = Missing.NO_PERMISSION
    except OSError:  # no such directory: a kernel without NUMA support
        reason = Missing.NOT_SUPPORTED
    if host.numa_nodes is None:
        host.mark_missing("numa_nodes", reason or Missing.NOT_SUPPORTED)

    text, reason = read_sys_text(root / "proc/meminfo")
    host.memory_total_gib = parse_meminfo_total_gib(text) if text is not None else None
    if host.memory_total_gib is None:
        host.mark_missing("memory_total_gib", reason or Missing.NOT_SUPPORTED)
    return host
