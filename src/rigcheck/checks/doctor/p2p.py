"""P2P: can the GPUs copy to each other directly, and is anything on the PCIe fabric in the way?

Finding ids: p2p.ok, p2p.not-supported, p2p.status-unknown, p2p.iommu-on, p2p.iommu-unknown, p2p.acs-enabled,
p2p.acs-unknown.
"""

from __future__ import annotations

from rigcheck.checks.common import (
    gpu_finding,
    has_problem,
    host_finding,
    list_names,
    pair_finding,
    read_live,
    readable_gpus,
)
from rigcheck.model import Finding, Gpu, GpuPair, P2PStatus, PcieHop, Severity, Snapshot, pair_subject

FINDING_IDS: tuple[str, ...] = (
    "p2p.ok",
    "p2p.not-supported",
    "p2p.status-unknown",
    "p2p.iommu-on",
    "p2p.iommu-unknown",
    "p2p.acs-enabled",
    "p2p.acs-unknown",
)


P2P_SOURCE = "nvml.h nvmlDeviceGetP2PStatus (NVML_P2P_CAPS_INDEX_READ / _WRITE), `nvidia-smi topo -p2p r/w`"
NCCL_SOURCE = "NCCL docs, Environment Variables: NCCL_P2P_DISABLE / NCCL_P2P_LEVEL (SHM transport when P2P is off)"
IOMMU_SOURCE = (
    "NCCL docs, Troubleshooting: 'PCI Access Control Services (ACS)' and IOMMU — both can redirect P2P through "
    "the root complex; Linux kernel-parameters.txt (iommu=pt, intel_iommu, amd_iommu)"
)
ACS_SOURCE = (
    "PCI Express Base Specification, Access Control Services (ACS P2P Request Redirect); NCCL docs, "
    "Troubleshooting 'PCI Access Control Services (ACS)'"
)


def _norm_bdf(bdf: str) -> str:
    """``"00000000:18:00.0"`` and ``"0000:18:00.0"`` -> ``"0000:18:00.0"`` (lower case)."""
    text = bdf.strip().lower()
    parts = text.split(":")
    if len(parts) == 3:
        dom = parts[0][-4:].rjust(4, "0")
        return f"{dom}:{parts[1]}:{parts[2]}"
    if len(parts) == 2:
        return f"0000:{parts[0]}:{parts[1]}"
    return text


def _path_for(snapshot: Snapshot, gpu: Gpu) -> list[PcieHop] | None:
    if gpu.pci_bus_id is None:
        return None
    want = _norm_bdf(gpu.pci_bus_id)
    for key, path in snapshot.system.pcie_paths.items():
        if _norm_bdf(key) == want:
            return path
    return None


def _acs_advice(snapshot: Snapshot) -> str:
    """Root reads the bridges' ACS control live; a file cannot be re-read, so say what to run on the machine."""
    lspci = "`sudo lspci -vvv | grep ACSCtl`"
    if read_live(snapshot):
        return f"run rigcheck as root to read the bridges' ACS control (or {lspci})"
    if snapshot.source.kind == "nvml":  # a replayed live snapshot
        return f"take the snapshot again as root (`sudo rigcheck snapshot`) on the machine, or run {lspci} there"
    return f"this input does not hold the PCIe bridges' ACS state: on the machine, run {lspci}"


def _bad(pair: GpuPair) -> list[str]:
    out = []
    for label, status in (("read", pair.p2p_read), ("write", pair.p2p_write)):
        if status is not None and status is not P2PStatus.OK:
            out.append(f"{label}: {status.value}")
    return out


def check_p2p(snapshot: Snapshot) -> list[Finding]:
    gpus = readable_gpus(snapshot)
    if len(gpus) < 2:
        return []
    out: list[Finding] = []
    indices = sorted(g.index for g in gpus)

    checked = 0
    unknown: list[str] = []
    # The snapshot's pair table, indexed once for every check and report (the first record of a pair wins);
    # read from its dict directly: a call per pair is a third of this check's time at 512 GPUs (130,816 pairs).
    by_pair = snapshot.pair_table().by_key
    for i, a in enumerate(indices):
        for b in indices[i + 1 :]:
            pair = by_pair.get((a, b))
            if pair is None or (pair.p2p_read is None and pair.p2p_write is None):
                reason = "no pair record"
                if pair is not None:
                    r = pair.missing.get("p2p_read") or pair.missing.get("p2p_write")
                    reason = r.value if r is not None else "not recorded"
                unknown.append(f"{pair_subject(a, b)} ({reason})")
                continue
            checked += 1
            bad = _bad(pair)
            if bad:
                link = f" over {pair.link}" if pair.link else ""
                out.append(
                    pair_finding(
                        a,
                        b,
                        "p2p.not-supported",
                        Severity.WARN,
                        f"NVML says P2P is not supported between these GPUs{link} ({', '.join(bad)}): NCCL will "
                        "route through host memory (SHM), costing bandwidth",
                        measured=", ".join(bad),
                        expected="read: ok, write: ok",
                        advice=(
                            "typical of consumer cards without NVLink and of pairs across CPU sockets; an NVLink "
                            "bridge (where the cards have one), GPUs under one PCIe switch, or turning off ACS/IOMMU "
                            "redirection restores it; `rigcheck bench p2p --compare-p2p` measures the cost"
                        ),
                        source=f"{P2P_SOURCE}; {NCCL_SOURCE}",
                    )
                )
    if unknown:
        out.append(
            host_finding(
                "p2p.status-unknown",
                Severity.UNKNOWN,
                f"P2P support unknown for {len(unknown)} GPU pairs: {list_names(unknown)}",
                measured=list_names(unknown),
                advice="read it with `nvidia-smi topo -p2p r` (and `-p2p w`)",
                source=P2P_SOURCE,
            )
        )

    # IOMMU.
    system = snapshot.system
    if system.iommu == "on":
        detail = system.iommu_detail or ""
        passthrough = any(word in detail.lower() for word in ("iommu=pt", "passthrough", "pass-through"))
        out.append(
            host_finding(
                "p2p.iommu-on",
                Severity.INFO if passthrough else Severity.WARN,
                "IOMMU enabled"
                + (f" ({detail})" if detail else "")
                + (": in passthrough mode, so P2P DMA is not translated" if passthrough else ": can break or slow P2P"),
                measured=f"iommu on{f' ({detail})' if detail else ''}",
                expected="off, or passthrough (iommu=pt)",
                advice=(
                    "nothing to do for P2P"
                    if passthrough
                    else "use iommu=pt or disable the IOMMU for training boxes (kernel command line: `iommu=pt`, "
                    "or `intel_iommu=off` / `amd_iommu=off`), unless VMs on this host need it"
                ),
                source=IOMMU_SOURCE,
            )
        )
    elif system.iommu == "unknown":
        iommu_reason = system.missing.get("iommu")
        out.append(
            host_finding(
                "p2p.iommu-unknown",
                Severity.UNKNOWN,
                f"IOMMU state not known ({iommu_reason.value if iommu_reason is not None else 'not recorded'})",
                advice="check `ls /sys/class/iommu/` and the kernel command line (`cat /proc/cmdline`)",
                source=IOMMU_SOURCE,
            )
        )

    # ACS on the bridges above each GPU.
    unreadable: list[str] = []
    for gpu in gpus:
        path = _path_for(snapshot, gpu)
        if path is None:
            path_reason = system.missing.get("pcie_paths")
            why = path_reason.value if path_reason is not None else "not recorded"
            unreadable.append(f"GPU{gpu.index} (no PCIe path: {why})")
            continue
        bridges = path[1:]  # the GPU itself comes first
        on = [hop.bdf for hop in bridges if hop.acs_enabled is True]
        blind = [hop for hop in bridges if hop.acs_enabled is None]
        if blind:
            reasons = sorted({hop.missing["acs_enabled"].value for hop in blind if "acs_enabled" in hop.missing})
            unreadable.append(
                f"GPU{gpu.index} ({len(blind)} bridge{'s' if len(blind) != 1 else ''}: "
                f"{', '.join(reasons) or 'not recorded'})"
            )
        if on:
            out.append(
                gpu_finding(
                    gpu,
                    "p2p.acs-enabled",
                    Severity.WARN,
                    f"ACS is enabled on {len(on)} bridge{'s' if len(on) != 1 else ''} above this GPU "
                    f"({list_names(on)}): P2P requests are redirected to the root complex",
                    measured=f"ACS on: {list_names(on)}",
                    expected="ACS redirect off on bridges between GPUs",
                    advice=(
                        "disable ACS in the BIOS (often 'ACS Control' or 'PCIe ACS') or with `setpci` on each bridge; "
                        "keep it only if VMs need device isolation on this host"
                    ),
                    source=ACS_SOURCE,
                )
            )
    if unreadable:
        out.append(
            host_finding(
                "p2p.acs-unknown",
                Severity.UNKNOWN,
                f"PCIe ACS state not readable for {len(unreadable)} GPU{'s' if len(unreadable) != 1 else ''}: "
                f"{list_names(unreadable)}",
                measured=list_names(unreadable),
                advice=_acs_advice(snapshot),
                source=ACS_SOURCE,
            )
        )

    host_problems = [f for f in out if f.subject == "host"]
    pair_problems = [f for f in out if f.pair is not None]
    if checked and not unknown and not pair_problems and not has_problem(host_problems):
        out.append(
            host_finding(
                "p2p.ok",
                Severity.OK,
                "P2P read and write supported between "
                + ("the 2 GPUs" if checked == 1 else f"all {checked} GPU pairs")
                + f"; IOMMU {system.iommu}",
                measured=f"{checked} pairs ok",
                expected="P2P supported between every pair",
                source=P2P_SOURCE,
            )
        )
    return out
