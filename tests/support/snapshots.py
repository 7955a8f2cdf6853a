"""Build Snapshot objects for tests: ``make_gpu(**overrides)``, pairs, topology, and named real-world rigs.

The named rigs are also written as JSON fixtures under tests/fixtures/snapshots/ (used by the CLI tests);
``python tests/support/snapshots.py`` rewrites them, and test_checks_run.py fails if they drift from this file.

Figures come from real outputs where we have them: the H100 from ../shared/corpus/h100-vm (driver 580,
thresholds 89/95 C, 700 W) and topo/007-8xh100; the TITAN RTX pair from the guide (NV2, CPU 0-23); the
3090 pair from topo/019-2x3090-phb (PHB, CPU 0-15, x8, power-capped); board limits from NVIDIA's product
pages (TITAN RTX 280 W, RTX 3090 350 W, A100 SXM4 400 W, A100 PCIe 300 W).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rigcheck.facts.legend import kind_of, nvlink_count
from rigcheck.model import (
    CLOCK_EVENT_REASONS,
    Diagnostic,
    Gpu,
    GpuPair,
    Host,
    Missing,
    NvLink,
    P2PStatus,
    PcieHop,
    Snapshot,
    Software,
    Source,
    System,
    TopoGpu,
    TopoMatrix,
    snapshot_to_json,
)

FIXTURE_DIR = Path(__file__).parent.parent / "fixtures" / "snapshots"
CREATED_AT = "2026-11-22T18:00:00Z"

NO_DURATIONS = {"sw_power_cap": 0.0, "sync_boost": 0.0, "sw_thermal_slowdown": 0.0, "hw_thermal_slowdown": 0.0}
NO_DURATIONS["hw_power_brake_slowdown"] = 0.0

# One H100 SXM5 at idle, as read on the real machine of ../shared/corpus/h100-vm (nvidia-smi -q -d ...).
H100: dict[str, Any] = {
    "name": "NVIDIA H100 80GB HBM3",
    "architecture": "Hopper",
    "compute_capability": "9.0",
    "memory_total_mib": 81559.0,
    "memory_used_mib": 1.0,
    "utilization_gpu_percent": 0.0,
    "power_draw_w": 74.21,
    "power_draw_avg_w": 74.23,
    "power_limit_w": 700.0,
    "power_default_limit_w": 700.0,
    "power_enforced_limit_w": 700.0,
    "power_min_limit_w": 200.0,
    "power_max_limit_w": 700.0,
    "temp_c": 43.0,
    "temp_memory_c": 46.0,
    "temp_slowdown_c": 89.0,
    "temp_shutdown_c": 95.0,
    "temp_max_operating_c": 87.0,
    "temp_memory_max_c": 95.0,
    "temp_tlimit_margin_c": 44.0,
    "clock_graphics_mhz": 345.0,
    "clock_sm_mhz": 345.0,
    "clock_mem_mhz": 2619.0,
    "clock_graphics_max_mhz": 1980.0,
    "clock_sm_max_mhz": 1980.0,
    "clock_mem_max_mhz": 2619.0,
    "clock_event_reasons_active": ["idle"],
    "clock_event_reasons_supported": list(CLOCK_EVENT_REASONS),
    "clock_event_durations_us": dict(NO_DURATIONS),
    "pstate": "P0",
    "pcie_gen_current": 5,
    "pcie_gen_max": 5,
    "pcie_gen_gpu_max": 5,
    "pcie_width_current": 16,
    "pcie_width_max": 16,
    "pcie_replay_count": 0,
    "persistence_mode": True,
    "compute_mode": "Default",
    "mig_enabled": False,
    "ecc_enabled": True,
    "ecc_uncorrected_volatile": 0,
    "ecc_uncorrected_aggregate": 0,
    "ecc_corrected_volatile": 0,
    "remapped_rows_correctable": 0,
    "remapped_rows_uncorrectable": 0,
    "remapped_rows_pending": False,
    "remapped_rows_failure": False,
    "numa_node": 0,
}
H100_MISSING = {
    "fan_percent": Missing.NOT_SUPPORTED,  # SXM modules have no fan of their own
    "temp_target_c": Missing.REPORTED_NA,
    "retired_pages_sbe": Missing.NOT_SUPPORTED,  # Hopper uses row remapping, not page retirement
    "retired_pages_dbe": Missing.NOT_SUPPORTED,
    "retired_pages_pending": Missing.NOT_SUPPORTED,
}


def make_gpu(
    index: int = 0, *, base: dict[str, Any] | None = None, missing: dict[str, Missing] | None = None, **overrides: Any
) -> Gpu:
    """A GPU: ``base`` (default: an idle, healthy H100) with ``overrides``; fields in ``missing`` are None
    with that reason. ``missing`` defaults to the base card's own (H100_MISSING for the H100)."""
    values = dict(H100 if base is None else base)
    reasons = dict(H100_MISSING if base is None and missing is None else (missing or {}))
    values.update(overrides)
    for field in reasons:
        if field not in overrides:
            values[field] = None
    for field, value in overrides.items():
        if value is not None:
            reasons.pop(field, None)
    values.setdefault("pci_bus_id", f"00000000:{0x18 + index:02X}:00.0")
    values.setdefault("uuid", f"GPU-00000000-0000-0000-0000-{index:012d}")
    return Gpu(index=index, missing=reasons, **values)


def nvlinks(
    count: int,
    *,
    active: bool = True,
    version: int = 4,
    speed_gbps: float = 26.562,
    remote: str | None = None,
    remote_type: str | None = None,
) -> list[NvLink]:
    return [
        NvLink(
            link=i,
            active=active,
            version=version if active else None,
            remote_pci_bus_id=remote if active else None,
            remote_device_type=remote_type if active else None,
            speed_gbps=speed_gbps if active else None,
        )
        for i in range(count)
    ]


def make_pairs(
    indices: Iterable[int],
    link: str | Callable[[int, int], str | None],
    *,
    p2p: P2PStatus | None = P2PStatus.OK,
    missing_link: Missing | None = None,
) -> list[GpuPair]:
    """Every pair of ``indices``; ``link`` is a code ("NV18") or a function of (a, b) returning one."""
    idx = sorted(indices)
    pairs = []
    for i, a in enumerate(idx):
        for b in idx[i + 1 :]:
            code = link(a, b) if callable(link) else link
            nv = nvlink_count(code) if code else None
            pair = GpuPair(
                a=a,
                b=b,
                link=code,
                kind=kind_of(code) if code else None,
                nvlinks=nv if nv is not None else (0 if code else None),
                p2p_read=p2p,
                p2p_write=p2p,
                p2p_nvlink=(P2PStatus.OK if nv else P2PStatus.NOT_SUPPORTED) if code and p2p else None,
                p2p_atomics=p2p,
            )
            if code is None:
                for field in ("link", "kind", "nvlinks", "p2p_read", "p2p_write"):
                    pair.mark_missing(field, missing_link or Missing.NOT_IN_SOURCE)
            pairs.append(pair)
    return pairs


def make_topology(
    pairs: list[GpuPair], n: int, cpu: list[str], numa: list[str], *, gpu_numa_id: bool = True
) -> TopoMatrix:
    labels = [f"GPU{i}" for i in range(n)]
    matrix = [["X" if a == b else "" for b in range(n)] for a in range(n)]
    for p in pairs:
        matrix[p.a][p.b] = matrix[p.b][p.a] = p.link or "N/A"
    return TopoMatrix(
        labels=labels,
        matrix=matrix,
        gpus=[
            TopoGpu(index=i, cpu_affinity=cpu[i], numa_affinity=numa[i], gpu_numa_id="N/A" if gpu_numa_id else None)
            for i in range(n)
        ],
        legend="new",
    )


def pcie_path(
    gpu_bdf: str,
    gen_gts: float,
    width: int,
    bridges: list[str],
    *,
    acs: bool | None = False,
    acs_missing: Missing | None = None,
) -> list[PcieHop]:
    hops = [
        PcieHop(bdf=gpu_bdf, link_speed_gts=gen_gts, link_speed_max_gts=gen_gts, link_width=width, link_width_max=width)
    ]
    for bdf in bridges:
        hop = PcieHop(
            bdf=bdf,
            link_speed_gts=gen_gts,
            link_speed_max_gts=gen_gts,
            link_width=width,
            link_width_max=width,
            acs_enabled=acs,
        )
        if acs is None and acs_missing is not None:
            hop.mark_missing("acs_enabled", acs_missing)
        hops.append(hop)
    return hops


def sysfs_bdf(pci_bus_id: str) -> str:
    """NVML's ``00000000:18:00.0`` as sysfs writes it, ``0000:18:00.0``."""
    return pci_bus_id[4:].lower()


def make_snapshot(gpus: list[Gpu] | None = None, **fields: Any) -> Snapshot:
    fields.setdefault("created_at", CREATED_AT)
    fields.setdefault("source", Source(kind="nvml"))
    return Snapshot(gpus=gpus or [], **fields)


# --- named rigs ---------------------------------------------------------------------------------------------

H100_BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]  # DGX H100 GPU bus numbers


def healthy_8x_h100() -> Snapshot:
    """An 8x H100 SXM5 HGX node, idle and healthy: NV18 everywhere (topo/007), two NUMA nodes."""
    cpu = ["0-51,104-155"] * 4 + ["52-103,156-207"] * 4
    numa = ["0"] * 4 + ["1"] * 4
    gpus = []
    paths = {}
    for i, bus in enumerate(H100_BUS):
        bdf = f"00000000:{bus}:00.0"
        durations = dict(NO_DURATIONS)
        if i == 0:
            durations["sw_power_cap"] = 33534556.0  # 33.5 s capped during a burn, as on the real H100
        gpus.append(
            make_gpu(
                i,
                pci_bus_id=bdf,
                uuid=f"GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d{i:04x}",
                temp_c=[33.0, 31.0, 32.0, 34.0, 33.0, 30.0, 32.0, 31.0][i],
                power_draw_w=[74.2, 71.8, 72.5, 70.9, 73.3, 69.8, 71.1, 72.0][i],
                numa_node=int(numa[i]),
                cpu_affinity=cpu[i],
                clock_event_durations_us=durations,
                nvlinks=nvlinks(18, version=4, speed_gbps=26.562, remote_type="switch"),
            )
        )
        root = f"0000:{int(bus, 16) - 3:02x}:01.0"
        switch = f"0000:{int(bus, 16) - 1:02x}:00.0"
        paths[sysfs_bdf(bdf)] = pcie_path(sysfs_bdf(bdf), 32.0, 16, [switch, root])
    pairs = make_pairs(range(8), "NV18")
    return make_snapshot(
        gpus,
        host=Host(
            hostname="dgx-h100-01",
            os="Ubuntu 22.04.4 LTS",
            kernel="5.15.0-119-generic",
            cpu_model="Intel(R) Xeon(R) Platinum 8470",
            cpu_count=208,
            numa_nodes=2,
            memory_total_gib=2015.6,
        ),
        software=Software(
            driver_version="550.90.07",
            nvml_version="12.550.90.07",
            cuda_driver_version="12.4",
            torch_version="2.4.1+cu124",
            torch_cuda_version="12.4",
            nccl_version="2.20.5",
            rigcheck_version="0.1.0",
            python_version="3.11.9",
        ),
        pairs=pairs,
        topology=make_topology(pairs, 8, cpu, numa, gpu_numa_id=False),
        system=System(iommu="off", iommu_detail="no IOMMU groups", pcie_paths=paths),
    )


TITAN_RTX: dict[str, Any] = {
    "name": "TITAN RTX",
    "architecture": "Turing",
    "compute_capability": "7.5",
    "memory_total_mib": 24220.0,
    "memory_used_mib": 0.0,
    "utilization_gpu_percent": 0.0,
    "power_draw_w": 16.4,
    "power_limit_w": 280.0,
    "power_default_limit_w": 280.0,
    "power_enforced_limit_w": 280.0,
    "power_min_limit_w": 100.0,
    "power_max_limit_w": 320.0,
    "temp_c": 38.0,
    "temp_slowdown_c": 91.0,
    "temp_shutdown_c": 94.0,
    "temp_max_operating_c": 89.0,
    "fan_percent": 41.0,
    "clock_graphics_mhz": 300.0,
    "clock_sm_mhz": 300.0,
    "clock_mem_mhz": 405.0,
    "clock_graphics_max_mhz": 2100.0,
    "clock_sm_max_mhz": 2100.0,
    "clock_mem_max_mhz": 7000.0,
    "clock_event_reasons_active": ["idle"],
    "clock_event_reasons_supported": list(CLOCK_EVENT_REASONS),
    "clock_event_durations_us": dict(NO_DURATIONS),
    "pstate": "P8",
    "pcie_gen_current": 1,  # idle: the link drops to Gen1 in P8 and returns to Gen3 under load
    "pcie_gen_max": 3,
    "pcie_gen_gpu_max": 3,
    "pcie_width_current": 16,
    "pcie_width_max": 16,
    "pcie_replay_count": 0,
    "persistence_mode": False,
    "compute_mode": "Default",
    "cpu_affinity": "0-23",
}
CONSUMER_MISSING = {
    "ecc_enabled": Missing.NOT_SUPPORTED,
    "ecc_uncorrected_volatile": Missing.NOT_SUPPORTED,
    "ecc_uncorrected_aggregate": Missing.NOT_SUPPORTED,
    "ecc_corrected_volatile": Missing.NOT_SUPPORTED,
    "remapped_rows_correctable": Missing.NOT_SUPPORTED,
    "remapped_rows_uncorrectable": Missing.NOT_SUPPORTED,
    "remapped_rows_pending": Missing.NOT_SUPPORTED,
    "remapped_rows_failure": Missing.NOT_SUPPORTED,
    "retired_pages_sbe": Missing.NOT_SUPPORTED,
    "retired_pages_dbe": Missing.NOT_SUPPORTED,
    "retired_pages_pending": Missing.NOT_SUPPORTED,
    "mig_enabled": Missing.NOT_SUPPORTED,
    "temp_memory_c": Missing.NOT_SUPPORTED,
    "temp_memory_max_c": Missing.REPORTED_NA,
    "numa_node": Missing.NOT_SUPPORTED,
}


def two_titan_rtx_nv2() -> Snapshot:
    """The guide's own rig: 2x TITAN RTX 24GB joined by an NVLink bridge (NV2), cuda-11.0, pytorch 1.8."""
    buses = ["00000000:1A:00.0", "00000000:68:00.0"]
    gpus = [
        make_gpu(
            i,
            base=TITAN_RTX,
            missing=CONSUMER_MISSING,
            pci_bus_id=buses[i],
            uuid=f"GPU-8c7e2f1d-4b3a-9e60-71d5-a2c4e6f80{i:03d}",
            temp_c=[38.0, 35.0][i],
            fan_percent=[41.0, 38.0][i],
            nvlinks=nvlinks(2, version=2, speed_gbps=25.781, remote=buses[1 - i], remote_type="gpu"),
        )
        for i in range(2)
    ]
    pairs = make_pairs(range(2), "NV2")
    return make_snapshot(
        gpus,
        host=Host(
            hostname="titan-workstation",
            os="Ubuntu 20.04.2 LTS",
            kernel="5.8.0-43-generic",
            cpu_model="Intel(R) Core(TM) i9-10920X CPU @ 3.50GHz",
            cpu_count=24,
            numa_nodes=1,
            memory_total_gib=125.5,
        ),
        software=Software(
            driver_version="450.80.02",
            nvml_version="11.450.80.02",
            cuda_driver_version="11.0",
            torch_version="1.8.0.dev20210112+cu110",
            torch_cuda_version="11.0",
            nccl_version="2.7.8",
            rigcheck_version="0.1.0",
            python_version="3.8.5",
        ),
        pairs=pairs,
        topology=make_topology(pairs, 2, ["0-23", "0-23"], ["N/A", "N/A"], gpu_numa_id=False),
        system=System(
            iommu="off",
            pcie_paths={
                sysfs_bdf(b): pcie_path(sysfs_bdf(b), 8.0, 16, [root])
                for b, root in zip(buses, ["0000:17:00.0", "0000:64:00.0"], strict=True)
            },
        ),
    )


RTX_3090: dict[str, Any] = {
    "name": "NVIDIA GeForce RTX 3090",
    "architecture": "Ampere",
    "compute_capability": "8.6",
    "memory_total_mib": 24576.0,
    "memory_used_mib": 22914.0,
    "utilization_gpu_percent": 100.0,
    "power_draw_w": 279.4,
    "power_limit_w": 280.0,  # capped by the owner (topo/019's rig was power-capped)
    "power_default_limit_w": 350.0,
    "power_enforced_limit_w": 280.0,
    "power_min_limit_w": 100.0,
    "power_max_limit_w": 400.0,
    "temp_c": 86.0,
    "temp_slowdown_c": 95.0,
    "temp_shutdown_c": 98.0,
    "temp_max_operating_c": 93.0,
    "temp_target_c": 83.0,
    "fan_percent": 100.0,
    "clock_graphics_mhz": 1395.0,
    "clock_sm_mhz": 1395.0,
    "clock_mem_mhz": 9501.0,
    "clock_graphics_max_mhz": 2100.0,
    "clock_sm_max_mhz": 2100.0,
    "clock_mem_max_mhz": 9751.0,
    "clock_event_reasons_active": ["sw_power_cap", "sw_thermal_slowdown"],
    "clock_event_reasons_supported": list(CLOCK_EVENT_REASONS),
    "pstate": "P2",
    "pcie_gen_current": 4,
    "pcie_gen_max": 4,
    "pcie_gen_gpu_max": 4,
    "pcie_width_current": 8,  # two cards on a consumer board: x8/x8
    "pcie_width_max": 16,
    "pcie_replay_count": 0,
    "persistence_mode": True,
    "compute_mode": "Default",
    "cpu_affinity": "0-15",
}


def two_3090_phb_throttling() -> Snapshot:
    """2x RTX 3090 on a consumer board under load (topo/019): PHB, x8/x8, power-capped at 280 W, hot, no P2P."""
    buses = ["00000000:0B:00.0", "00000000:0C:00.0"]
    gpus = [
        make_gpu(
            0,
            base=RTX_3090,
            missing=CONSUMER_MISSING,
            pci_bus_id=buses[0],
            uuid="GPU-3b1d9c47-2e8f-6a05-d41b-97c0e5f2a810",
            clock_event_durations_us={
                "sw_power_cap": 5423100000.0,
                "sync_boost": 0.0,
                "sw_thermal_slowdown": 1210400000.0,
                "hw_thermal_slowdown": 0.0,
                "hw_power_brake_slowdown": 0.0,
            },
        ),
        make_gpu(
            1,
            base=RTX_3090,
            missing=CONSUMER_MISSING,
            pci_bus_id=buses[1],
            uuid="GPU-9f04a2c6-71be-3d58-0e2a-4c8b6d1f7e23",
            temp_c=83.0,
            fan_percent=87.0,
            power_draw_w=278.1,
            clock_event_reasons_active=["sw_power_cap"],
            pcie_replay_count=3,
            clock_event_durations_us={
                "sw_power_cap": 5610800000.0,
                "sync_boost": 0.0,
                "sw_thermal_slowdown": 0.0,
                "hw_thermal_slowdown": 0.0,
                "hw_power_brake_slowdown": 0.0,
            },
        ),
    ]
    pairs = make_pairs(range(2), "PHB", p2p=P2PStatus.CHIPSET_NOT_SUPPORTED)
    return make_snapshot(
        gpus,
        host=Host(
            hostname="club3090",
            os="Ubuntu 24.04.1 LTS",
            kernel="6.8.0-48-generic",
            cpu_model="AMD Ryzen 7 5800X 8-Core Processor",
            cpu_count=16,
            numa_nodes=1,
            memory_total_gib=62.7,
        ),
        software=Software(
            driver_version="550.120",
            nvml_version="12.550.120",
            cuda_driver_version="12.4",
            torch_version="2.5.1+cu124",
            torch_cuda_version="12.4",
            nccl_version="2.21.5",
            rigcheck_version="0.1.0",
            python_version="3.12.3",
        ),
        pairs=pairs,
        topology=make_topology(pairs, 2, ["0-15", "0-15"], ["0", "0"]),
        system=System(
            iommu="on",
            iommu_detail="AMD-Vi, DMA translation (iommu groups present)",
            pcie_paths={
                sysfs_bdf(b): pcie_path(sysfs_bdf(b), 16.0, 8, [root], acs=None, acs_missing=Missing.NO_PERMISSION)
                for b, root in zip(buses, ["0000:00:01.1", "0000:00:01.2"], strict=True)
            },
        ),
    )


MX250: dict[str, Any] = {
    "name": "NVIDIA GeForce MX250",
    "architecture": "Pascal",
    "compute_capability": "6.1",
    "memory_total_mib": 2048.0,
    "memory_used_mib": 5.0,
    "utilization_gpu_percent": 0.0,
    "temp_c": 46.0,
    "clock_graphics_mhz": 139.0,
    "clock_sm_mhz": 139.0,
    "clock_mem_mhz": 405.0,
    "clock_graphics_max_mhz": 1911.0,
    "clock_sm_max_mhz": 1911.0,
    "clock_mem_max_mhz": 3004.0,
    "clock_event_reasons_active": ["idle"],
    "pstate": "P8",
    "pcie_gen_current": 1,
    "pcie_gen_max": 3,
    "pcie_gen_gpu_max": 3,
    "pcie_width_current": 4,
    "pcie_width_max": 4,
    "pcie_replay_count": 0,
    "persistence_mode": False,
    "compute_mode": "Default",
    "cpu_affinity": "0-7",
}
MX250_MISSING = dict(CONSUMER_MISSING) | {
    # A laptop GPU: the board reports no power figures, no fan, no thresholds ("N/A" in nvidia-smi).
    "power_draw_w": Missing.NOT_SUPPORTED,
    "power_draw_avg_w": Missing.NOT_SUPPORTED,
    "power_limit_w": Missing.NOT_SUPPORTED,
    "power_default_limit_w": Missing.NOT_SUPPORTED,
    "power_enforced_limit_w": Missing.NOT_SUPPORTED,
    "power_min_limit_w": Missing.NOT_SUPPORTED,
    "power_max_limit_w": Missing.NOT_SUPPORTED,
    "fan_percent": Missing.NOT_SUPPORTED,
    "temp_slowdown_c": Missing.NOT_SUPPORTED,
    "temp_shutdown_c": Missing.NOT_SUPPORTED,
    "temp_max_operating_c": Missing.NOT_SUPPORTED,
    "clock_event_durations_us": Missing.NOT_SUPPORTED,
}


def consumer_power_not_supported() -> Snapshot:
    """One GeForce MX250 (laptop): NVML answers NotSupported for every power reading."""
    gpu = make_gpu(
        0,
        base=MX250,
        missing=MX250_MISSING,
        pci_bus_id="00000000:02:00.0",
        uuid="GPU-1d6e0b3a-5c42-8f97-e210-6a9b3c4d5e7f",
    )
    return make_snapshot(
        [gpu],
        host=Host(
            hostname="laptop",
            os="Ubuntu 22.04.4 LTS",
            kernel="6.5.0-41-generic",
            cpu_model="Intel(R) Core(TM) i7-8565U CPU @ 1.80GHz",
            cpu_count=8,
            numa_nodes=1,
            memory_total_gib=15.5,
        ),
        software=Software(
            driver_version="535.183.01",
            nvml_version="12.535.183.01",
            cuda_driver_version="12.2",
            torch_version="2.3.1+cu121",
            torch_cuda_version="12.1",
            nccl_version="2.20.5",
            rigcheck_version="0.1.0",
            python_version="3.10.12",
        ),
        system=System(iommu="off"),
    )


A100_SXM: dict[str, Any] = H100 | {
    "name": "NVIDIA A100-SXM4-80GB",
    "architecture": "Ampere",
    "compute_capability": "8.0",
    "memory_total_mib": 81920.0,
    "memory_used_mib": 0.0,
    "power_draw_w": 61.3,
    "power_draw_avg_w": None,
    "power_limit_w": 400.0,
    "power_default_limit_w": 400.0,
    "power_enforced_limit_w": 400.0,
    "power_min_limit_w": 100.0,
    "power_max_limit_w": 400.0,
    "temp_c": 31.0,
    "temp_memory_c": 36.0,
    "temp_slowdown_c": 89.0,
    "temp_shutdown_c": 92.0,
    "temp_max_operating_c": 85.0,
    "temp_memory_max_c": 95.0,
    "temp_tlimit_margin_c": None,
    "clock_graphics_mhz": 210.0,
    "clock_sm_mhz": 210.0,
    "clock_mem_mhz": 1593.0,
    "clock_graphics_max_mhz": 1410.0,
    "clock_sm_max_mhz": 1410.0,
    "clock_mem_max_mhz": 1593.0,
    "pcie_gen_current": 4,
    "pcie_gen_max": 4,
    "pcie_gen_gpu_max": 4,
}
A100_MISSING = dict(H100_MISSING) | {"power_draw_avg_w": Missing.DRIVER_TOO_OLD}


def gpu_lost() -> Snapshot:
    """A 4x A100 SXM4 HGX board (NV4 between every pair) where GPU2 fell off the bus (Xid 79)."""
    buses = ["00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0"]
    numa = ["0", "0", "1", "1"]
    cpu = ["0-63,128-191", "0-63,128-191", "64-127,192-255", "64-127,192-255"]
    gpus: list[Gpu] = []
    for i, bus in enumerate(buses):
        if i == 2:
            gpus.append(
                Gpu(
                    index=2,
                    pci_bus_id=bus,
                    read_error=Missing.GPU_LOST,
                    read_error_detail="Unable to determine the device handle for GPU 00000000:47:00.0: GPU is lost",
                )
            )
            continue
        gpus.append(
            make_gpu(
                i,
                base=A100_SXM,
                missing=A100_MISSING,
                pci_bus_id=bus,
                uuid=f"GPU-a7c3e9f1-0b2d-4e6f-8a1c-3d5e7f9b{i:04x}",
                numa_node=int(numa[i]),
                cpu_affinity=cpu[i],
                nvlinks=nvlinks(12, version=3, speed_gbps=25.0, remote_type="gpu"),
            )
        )

    def link(a: int, b: int) -> str | None:
        return None if 2 in (a, b) else "NV4"

    pairs = make_pairs(range(4), link, missing_link=Missing.GPU_LOST)
    return make_snapshot(
        gpus,
        host=Host(
            hostname="hgx-a100-07",
            os="Rocky Linux 8.9 (Green Obsidian)",
            kernel="4.18.0-513.5.1.el8_9.x86_64",
            cpu_model="AMD EPYC 7763 64-Core Processor",
            cpu_count=256,
            numa_nodes=2,
            memory_total_gib=1007.5,
        ),
        software=Software(
            driver_version="535.161.08",
            nvml_version="12.535.161.08",
            cuda_driver_version="12.2",
            torch_version="2.2.2+cu121",
            torch_cuda_version="12.1",
            nccl_version="2.19.3",
            rigcheck_version="0.1.0",
            python_version="3.11.7",
        ),
        pairs=pairs,
        topology=make_topology(pairs, 4, cpu, numa),
        system=System(
            iommu="off",
            pcie_paths={
                sysfs_bdf(b): pcie_path(sysfs_bdf(b), 16.0, 16, [f"0000:{int(b[9:11], 16) - 1:02x}:00.0"])
                for i, b in enumerate(buses)
                if i != 2
            },
        ),
        diagnostics=[Diagnostic(source="nvml", message="nvmlDeviceGetHandleByIndex(2): GPU is lost", gpu=2)],
    )


A100_PCIE: dict[str, Any] = A100_SXM | {
    "name": "NVIDIA A100 80GB PCIe",
    "power_draw_w": 44.6,
    "power_limit_w": 300.0,
    "power_default_limit_w": 300.0,
    "power_enforced_limit_w": 300.0,
    "power_min_limit_w": 150.0,
    "power_max_limit_w": 300.0,
}


def ecc_errors() -> Snapshot:
    """2x A100 80GB PCIe under one PCIe switch (PIX); GPU1 has uncorrected ECC errors and a pending row remap."""
    buses = ["00000000:81:00.0", "00000000:82:00.0"]
    gpus = [
        make_gpu(
            0,
            base=A100_PCIE,
            missing=A100_MISSING,
            pci_bus_id=buses[0],
            uuid="GPU-0e4f6a8c-1b3d-5f70-92a4-c6e8f0b2d4a6",
            numa_node=1,
            cpu_affinity="32-63",
        ),
        make_gpu(
            1,
            base=A100_PCIE,
            missing=A100_MISSING,
            pci_bus_id=buses[1],
            uuid="GPU-7d9f1b3e-5a7c-4e90-b2d4-f6a8c0e2a4b6",
            numa_node=1,
            cpu_affinity="32-63",
            ecc_uncorrected_volatile=2,
            ecc_uncorrected_aggregate=2,
            ecc_corrected_volatile=14,
            remapped_rows_uncorrectable=2,
            remapped_rows_pending=True,
        ),
    ]
    pairs = make_pairs(range(2), "PIX")
    return make_snapshot(
        gpus,
        host=Host(
            hostname="gpu-node-12",
            os="Ubuntu 22.04.4 LTS",
            kernel="5.15.0-105-generic",
            cpu_model="AMD EPYC 7543 32-Core Processor",
            cpu_count=64,
            numa_nodes=2,
            memory_total_gib=503.7,
        ),
        software=Software(
            driver_version="535.161.08",
            nvml_version="12.535.161.08",
            cuda_driver_version="12.2",
            torch_version="2.2.2+cu121",
            torch_cuda_version="12.1",
            nccl_version="2.19.3",
            rigcheck_version="0.1.0",
            python_version="3.11.7",
        ),
        pairs=pairs,
        topology=make_topology(pairs, 2, ["32-63", "32-63"], ["1", "1"]),
        system=System(
            iommu="off",
            pcie_paths={
                sysfs_bdf(b): pcie_path(sysfs_bdf(b), 16.0, 16, ["0000:80:00.0", "0000:7f:01.0"]) for b in buses
            },
        ),
    )


def no_gpu() -> Snapshot:
    """A machine without the NVIDIA driver: NVML cannot be loaded."""
    software = Software(torch_version="2.4.1+cpu", rigcheck_version="0.1.0", python_version="3.11.9")
    for field in ("driver_version", "nvml_version", "cuda_driver_version"):
        software.mark_missing(field, Missing.ERROR)
    software.mark_missing("torch_cuda_version", Missing.NOT_SUPPORTED)
    software.mark_missing("nccl_version", Missing.NOT_SUPPORTED)
    return make_snapshot(
        [],
        host=Host(
            hostname="build-box",
            os="Debian GNU/Linux 12 (bookworm)",
            kernel="6.1.0-25-amd64",
            cpu_model="AMD Ryzen 9 7950X 16-Core Processor",
            cpu_count=32,
            numa_nodes=1,
            memory_total_gib=124.9,
        ),
        software=software,
        gpu_absent_reason="NVML Shared Library Not Found: the NVIDIA driver is not installed",
        source=Source(kind="none"),
    )


FIXTURES: dict[str, Callable[[], Snapshot]] = {
    "healthy-8x-h100.json": healthy_8x_h100,
    "2x-titan-rtx-nv2.json": two_titan_rtx_nv2,
    "2x-3090-phb-throttling.json": two_3090_phb_throttling,
    "consumer-power-not-supported.json": consumer_power_not_supported,
    "gpu-lost.json": gpu_lost,
    "ecc-errors.json": ecc_errors,
    "no-gpu.json": no_gpu,
}


def fixture_text(name: str) -> str:
    return snapshot_to_json(FIXTURES[name]()) + "\n"


def write_fixtures(directory: Path = FIXTURE_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in FIXTURES:
        path = directory / name
        path.write_text(fixture_text(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write_fixtures():
        sys.stdout.write(f"wrote {p}\n")
