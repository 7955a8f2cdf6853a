"""GPUs and NICs: how each GPU reaches the network cards `nvidia-smi topo -m` lists (its NIC columns).

Multi-node training moves gradients through the NICs. GPUDirect RDMA lets the NIC read and write GPU memory
directly, and NCCL uses it by the GPU-NIC distance (NCCL_NET_GDR_LEVEL: PIX/PXB, under PCIe switches, is where
it pays off). A GPU that reaches every NIC only across the CPU-socket interconnect (SYS) gets the worst path:
its network traffic crosses sockets and is staged through host memory.
"""

from __future__ import annotations

import re

from rigcheck.checks.common import host_finding, list_names
from rigcheck.facts import catalog
from rigcheck.facts.legend import LEGEND_SOURCE, kind_of
from rigcheck.facts.sources import GPUDIRECT_RDMA
from rigcheck.model import Finding, Severity, Snapshot

GDR_SOURCE = GPUDIRECT_RDMA
GRACE_GDR_SOURCE = (
    "NVIDIA Grace Blackwell GPUDirect RDMA guide (docs.nvidia.com/multi-node-nvlink-systems/"
    "grace-blackwell-cx8-gpudirect-rdma-guide): GPUDirect RDMA between a Blackwell GPU and the NICs of its Grace node"
)
# Grace superchips: GH200, GB200, GB300. Their GPUs reach the NICs through the Grace CPU (NVLink-C2C), which
# `topo -m` prints as SYS for every GPU-NIC pair whatever the wiring.
_GRACE = re.compile(r"\bG[HB]\d{3}\b")


def _on_grace(snapshot: Snapshot, indices: list[int]) -> bool:
    names = [g.name or "" for g in snapshot.gpus if g.index in indices]
    if not names:
        return False
    for name in names:
        spec = catalog.lookup(name) if name else None
        if not (_GRACE.search(name) or (spec is not None and spec.form_factor == "superchip")):
            return False
    return True


def _nic_codes(snapshot: Snapshot, index: int) -> dict[str, str]:
    """NIC label -> the code on this GPU's row, e.g. {"NIC0": "SYS"}; empty without a matrix or NICs."""
    topo = snapshot.topology
    label = f"GPU{index}"
    if topo is None or label not in topo.labels:
        return {}
    row = topo.matrix[topo.labels.index(label)] if topo.labels.index(label) < len(topo.matrix) else []
    return {
        nic: row[col]
        for col, nic in enumerate(topo.labels)
        if nic.startswith("NIC") and col < len(row) and row[col] not in ("", "X")
    }


def _nic_names(snapshot: Snapshot) -> str:
    topo = snapshot.topology
    nics = topo.nics if topo is not None else []
    return ", ".join(f"{n.label} {n.name}" if n.name else n.label for n in nics)


def nic_findings(snapshot: Snapshot, indices: list[int]) -> list[Finding]:
    """``topology.nic-cross-socket``: the GPUs whose every NIC is across the CPU sockets (SYS/SOC)."""
    far: list[str] = []
    near: list[str] = []
    for i in indices:
        codes = _nic_codes(snapshot, i)
        if not codes:
            continue
        best = min(codes.values(), key=lambda c: 0 if kind_of(c) != "cross_numa" else 1)
        (far if kind_of(best) == "cross_numa" else near).append(f"GPU{i}")
    if not far:
        return []
    every = len(far) == len(indices)
    if _on_grace(snapshot, indices):
        return [
            host_finding(
                "topology.nic-cross-socket",
                Severity.INFO,
                f"every GPU reaches every NIC ({_nic_names(snapshot)}) as SYS: on a Grace superchip the NICs hang off "
                "the Grace CPU and each GPU reaches them over NVLink-C2C, which `nvidia-smi topo -m` prints as SYS; "
                "GPUDirect RDMA works over that path",
                measured=f"GPU to nearest NIC SYS: {list_names(far)}",
                expected="SYS on a Grace superchip",
                advice=(
                    "nothing to rewire: check GPUDirect RDMA with NVIDIA's rdma_topo tool and a multi-node nccl-tests "
                    "run (`rigcheck fleet` compares the nodes' all-reduce)"
                ),
                source=f"{GRACE_GDR_SOURCE}; {LEGEND_SOURCE}",
            )
        ]
    return [
        host_finding(
            "topology.nic-cross-socket",
            Severity.WARN,
            f"{'every GPU reaches' if every else list_names(far) + ' reach'} every NIC ({_nic_names(snapshot)}) only "
            "across the CPU sockets (SYS): multi-node training traffic of "
            f"{'these GPUs' if not every else 'this box'} crosses the socket interconnect and loses GPUDirect RDMA",
            measured=f"GPU to nearest NIC SYS: {list_names(far)}" + (f"; nearer: {list_names(near)}" if near else ""),
            expected="each GPU and a NIC under one PCIe switch (PIX/PXB)",
            advice=(
                "matters for training across several nodes (single-node training does not use the NICs): fit a "
                "NIC on each CPU socket, ideally under the same PCIe switch as its GPUs, and let NCCL pick the "
                "nearest NIC per GPU; in a VM the reported path may be the hypervisor's view, so check on the host"
            ),
            source=f"{GDR_SOURCE}; {LEGEND_SOURCE}",
        )
    ]
