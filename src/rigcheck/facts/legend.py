"""The link codes of `nvidia-smi topo -m` and what they mean for training.

Source: the legend `nvidia-smi topo -m` prints (driver 450+; quoted in the guide), the older legend of
drivers before ~384 that used SOC for the inter-socket link, and nvml.h's nvmlGpuTopologyLevel_t.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

LinkKind = Literal["nvlink", "pcie_switch", "pcie_bridges", "host_bridge", "numa_local", "cross_numa"]

LEGEND_SOURCE = "nvidia-smi topo -m legend (NVIDIA driver); nvml.h nvmlGpuTopologyLevel_t"


@dataclass(frozen=True)
class LinkCode:
    code: str  # as printed: "PIX", "SYS", "NV#"
    kind: LinkKind
    legend: str  # the legend's own words
    rank: int  # lower is faster; NVLink ranks above every PCIe path


LINK_CODES: dict[str, LinkCode] = {
    c.code: c
    for c in (
        LinkCode("NV#", "nvlink", "Connection traversing a bonded set of # NVLinks", 0),
        LinkCode("PIX", "pcie_switch", "Connection traversing at most a single PCIe bridge", 1),
        LinkCode(
            "PXB",
            "pcie_bridges",
            "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
            2,
        ),
        LinkCode(
            "PHB", "host_bridge", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)", 3
        ),
        LinkCode(
            "NODE",
            "numa_local",
            "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
            4,
        ),
        LinkCode(
            "SYS",
            "cross_numa",
            "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
            5,
        ),
        # Old drivers: "SOC = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)"
        LinkCode(
            "SOC",
            "cross_numa",
            "Connection traversing PCIe as well as the SMP link between CPU sockets (e.g. QPI)",
            5,
        ),
    )
}

# What each kind means for the traffic of data-parallel training, in one sentence.
KIND_MEANING: dict[LinkKind, str] = {
    "nvlink": "direct NVLink, the fastest path: peer-to-peer copies bypass PCIe and the CPU",
    "pcie_switch": "one PCIe switch between them: peer-to-peer stays below the CPU, at PCIe speed",
    "pcie_bridges": "several PCIe bridges but not the CPU: peer-to-peer at PCIe speed",
    "host_bridge": "through the CPU's PCIe host bridge: peer-to-peer may be slow or unsupported",
    "numa_local": "across PCIe host bridges within one CPU socket: traffic crosses the CPU's internal fabric",
    "cross_numa": "across CPU sockets (QPI/UPI/Infinity Fabric): the slowest path, P2P usually unavailable",
}

_NV_RE = re.compile(r"^NV(\d+)$")

# nvml.h nvmlGpuTopologyLevel_t values -> the code topo -m prints for them.
NVML_TOPOLOGY_LEVELS: dict[int, str] = {
    0: "PIX",  # NVML_TOPOLOGY_INTERNAL: two GPUs on one board (behind its own bridge)
    10: "PIX",  # NVML_TOPOLOGY_SINGLE
    20: "PXB",  # NVML_TOPOLOGY_MULTIPLE
    30: "PHB",  # NVML_TOPOLOGY_HOSTBRIDGE
    40: "NODE",  # NVML_TOPOLOGY_NODE
    50: "SYS",  # NVML_TOPOLOGY_SYSTEM
}


# Cached: called for every GPU pair (130k at 512 GPUs) with a handful of distinct codes.
@lru_cache(maxsize=512)
def nvlink_count(code: str) -> int | None:
    """``"NV12"`` -> 12; None for a code that is not an NVLink bond."""
    m = _NV_RE.match(code)
    return int(m.group(1)) if m else None


@lru_cache(maxsize=512)
def lookup(code: str) -> LinkCode | None:
    """The legend entry for a printed code (``"NV4"`` finds ``"NV#"``); None if unknown."""
    if nvlink_count(code) is not None:
        return LINK_CODES["NV#"]
    return LINK_CODES.get(code)


def kind_of(code: str) -> LinkKind | None:
    entry = lookup(code)
    return entry.kind if entry else None


@lru_cache(maxsize=512)
def rank_of(code: str) -> tuple[int, int]:
    """Sort key, fastest first: NVLink by more links first, then the PCIe paths; unknown last."""
    n = nvlink_count(code)
    if n is not None:
        return (0, -n)
    entry = LINK_CODES.get(code)
    return (entry.rank, 0) if entry else (99, 0)


def code_from_nvml(level: int | None, nvlinks: int) -> str | None:
    """The code topo -m would print for a pair, from NVML's common ancestor and NVLink count."""
    if nvlinks > 0:
        return f"NV{nvlinks}"
    if level is None:
        return None
    return NVML_TOPOLOGY_LEVELS.get(level)


@lru_cache(maxsize=512)
def explain(code: str) -> str:
    """One sentence for a pair's link code, as the topo report prints it."""
    n = nvlink_count(code)
    if n is not None:
        return f"{code}: {n} bonded NVLink{'s' if n != 1 else ''} — {KIND_MEANING['nvlink']}."
    entry = LINK_CODES.get(code)
    if entry is None:
        return f"{code}: not a link code rigcheck knows."
    words = entry.legend[0].lower() + entry.legend[1:]  # keep the acronyms (PCIe, CPU, NUMA) as printed
    return f"{code}: {words} — {KIND_MEANING[entry.kind]}."
