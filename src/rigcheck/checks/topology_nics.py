"""GPUs and NICs: how each GPU reaches the network cards `nvidia-smi topo -m` lists (its NIC columns).

Multi-node training moves gradients through the NICs. GPUDirect RDMA lets the NIC read and write GPU memory
directly, and NCCL uses it by the GPU-NIC distance (NCCL_NET_GDR_LEVEL: PIX/PXB, under PCIe switches, is where
it pays off). A GPU that reaches every NIC only across the CPU-socket interconnect (SYS) gets the worst path:
its network traffic crosses sockets and is staged through host memory.
"""

from __future__ import annotations

from rigcheck.checks.common import host_finding, list_names
from rigcheck.facts.legend import LEGEND_SOURCE, kind_of
from rigcheck.facts.sources import GPUDIRECT_RDMA
from rigcheck.model import Finding, Severity, Snapshot

GDR_SOURCE = GPUDIRECT_RDMA


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
