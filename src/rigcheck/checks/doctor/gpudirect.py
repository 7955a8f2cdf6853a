"""GPUDirect RDMA: the RDMA NICs' ports (InfiniBand or RoCE) and the peer-memory kernel module.

Multi-node training moves gradients through the RDMA NICs. A port that is not ACTIVE with its physical link up
(LinkUp) carries nothing: NCCL skips it, or the job hangs or runs on fewer rails. GPUDirect RDMA, the NIC reading
and writing GPU memory directly, needs the peer-memory module (nvidia_peermem, shipped with the NVIDIA driver
since R470, or the older nv_peer_mem); without it NCCL stages every network transfer through host memory. Read
live only (``System.ib_ports``): a snapshot from files gives no finding here.

Sources: Linux Documentation/ABI/stable/sysfs-class-infiniband (state, phys_state, rate, link_layer); NVIDIA
GPUDirect RDMA documentation (nvidia-peermem); NCCL docs, Environment Variables (NCCL_NET_GDR_LEVEL,
NCCL_DMABUF_ENABLE).
"""

from __future__ import annotations

from rigcheck.checks.common import host_finding, list_names, readable_gpus
from rigcheck.model import Finding, Severity, Snapshot
from rigcheck.model.snapshot import IbPort
from rigcheck.units import fmt

FINDING_IDS: tuple[str, ...] = (
    "gpudirect.ok",
    "gpudirect.port-down",
    "gpudirect.peermem-missing",
    "gpudirect.peermem-unknown",
)

PORT_SOURCE = "Linux Documentation/ABI/stable/sysfs-class-infiniband: ports/<N>/state, phys_state"
PEERMEM_SOURCE = (
    "NVIDIA GPUDirect RDMA documentation (the nvidia-peermem module, part of the driver since R470); "
    "NCCL docs, Environment Variables: NCCL_NET_GDR_LEVEL, NCCL_DMABUF_ENABLE"
)


def port_name(port: IbPort) -> str:
    return f"{port.device} port {port.port}"


def _port_text(port: IbPort) -> str:
    """``"mlx5_1 port 1 (InfiniBand): DOWN, Disabled, 10 Gb/s"``."""
    layer = f" ({port.link_layer})" if port.link_layer else ""
    parts = [port.state or "state unknown", port.phys_state or "phys_state unknown"]
    if port.rate_gbps is not None:
        parts.append(fmt(port.rate_gbps, "Gb/s", 1))
    return f"{port_name(port)}{layer}: {', '.join(parts)}"


def port_up(port: IbPort) -> bool:
    return (port.state or "").upper() == "ACTIVE" and (port.phys_state or "").lower() == "linkup"


def check_gpudirect(snapshot: Snapshot) -> list[Finding]:
    ports = snapshot.system.ib_ports
    if not ports:
        return []
    out: list[Finding] = []
    down = [p for p in ports if not port_up(p)]
    if down:
        out.append(
            host_finding(
                "gpudirect.port-down",
                Severity.WARN,
                f"RDMA port{'s' if len(down) > 1 else ''} not up: {list_names([port_name(p) for p in down])}; "
                "NCCL cannot send over a port that is not ACTIVE",
                measured="; ".join(_port_text(p) for p in down),
                expected="state 4: ACTIVE, phys_state 5: LinkUp",
                advice=(
                    "a port with no cable is expected to be down (then ignore it, or keep it out of NCCL_IB_HCA); "
                    "otherwise check the cable and the switch port (ibstat, ibv_devinfo), and that the subnet "
                    "manager runs (InfiniBand ports stay INIT until it configures them)"
                ),
                source=PORT_SOURCE,
            )
        )
    gpus = readable_gpus(snapshot)
    system = snapshot.system
    if gpus and system.peermem_loaded is False:
        out.append(
            host_finding(
                "gpudirect.peermem-missing",
                Severity.WARN,
                f"GPUDirect RDMA is off: {plural_ports(ports)} and neither nvidia_peermem nor nv_peer_mem is loaded; "
                "NCCL stages network traffic through host memory (more latency, less bandwidth, CPU memory load)",
                measured="no nvidia_peermem or nv_peer_mem in /sys/module or /proc/modules",
                expected="nvidia_peermem loaded",
                advice=(
                    "`sudo modprobe nvidia_peermem` and load it at boot (/etc/modules-load.d/); NCCL_DEBUG=INFO "
                    "then says 'GPU Direct RDMA Enabled' per HCA. On kernel 5.12+ with NCCL 2.19+ NCCL can use "
                    "DMA-BUF instead (no module needed): if its log says so, ignore this"
                ),
                source=PEERMEM_SOURCE,
            )
        )
    elif gpus and system.peermem_loaded is None:
        out.append(
            host_finding(
                "gpudirect.peermem-unknown",
                Severity.UNKNOWN,
                f"{plural_ports(ports)}, but whether the GPUDirect RDMA module (nvidia_peermem) is loaded could not "
                "be read (/sys/module and /proc/modules unreadable)",
                source=PEERMEM_SOURCE,
            )
        )
    if not out:
        module = f", {system.peermem_module} loaded" if gpus and system.peermem_module else ""
        out.append(
            host_finding(
                "gpudirect.ok",
                Severity.OK,
                f"RDMA ports up: {'; '.join(_port_text(p) for p in ports)}{module}",
                source=PORT_SOURCE,
            )
        )
    return out


def plural_ports(ports: list[IbPort]) -> str:
    return f"{len(ports)} RDMA port{'s' if len(ports) != 1 else ''} present"
