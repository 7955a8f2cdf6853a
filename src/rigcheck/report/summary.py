"""Plain-text lines that describe the machine, shared by the terminal and Markdown reports."""

from __future__ import annotations

from rigcheck.model import Snapshot

SOURCE_WORDS = {
    "nvml": "read live through NVML",
    "nvidia-smi-q": "read from `nvidia-smi -q` output",
    "nvidia-smi-xml": "read from `nvidia-smi -q -x` output",
    "nvidia-smi-table": "read from the `nvidia-smi` table",
    "topo": "read from `nvidia-smi topo -m` output",
    "nvlink-status": "read from `nvidia-smi nvlink -s` output",
    "snapshot": "replayed from a rigcheck snapshot",
    "none": "no source",
}


def machine_lines(snap: Snapshot) -> list[str]:
    """Host, software and GPU count, one fact a line; only what is known."""
    src = SOURCE_WORDS.get(snap.source.kind, snap.source.kind)
    if snap.source.path:
        src += f" ({snap.source.path})"
    if snap.source.replayed_from:
        src = f"snapshot {snap.source.replayed_from}, originally {src}"
    lines = [f"source: {src}"]
    host = snap.host
    if host.hostname or host.cpu_model:
        parts = [p for p in (host.hostname, host.os, host.cpu_model) if p]
        if host.cpu_count:
            parts.append(f"{host.cpu_count} CPUs")
        if host.numa_nodes:
            parts.append(f"{host.numa_nodes} NUMA node{'s' if host.numa_nodes != 1 else ''}")
        if host.memory_total_gib:
            parts.append(f"{host.memory_total_gib:.0f} GiB RAM")
        lines.append("host: " + ", ".join(parts))
    sw = snap.software
    versions = [
        f"{label} {value}"
        for label, value in (
            ("driver", sw.driver_version),
            ("CUDA (driver)", sw.cuda_driver_version),
            ("torch", sw.torch_version),
            ("NCCL", sw.nccl_version),
        )
        if value
    ]
    if versions:
        lines.append("software: " + ", ".join(versions))
    if snap.gpus:
        readable = [g for g in snap.gpus if g.read_error is None]
        names = sorted({g.name or "name unknown" for g in readable})
        text = f"GPUs: {len(snap.gpus)}" + (" × " + " / ".join(names) if names else "")
        lost = len(snap.gpus) - len(readable)
        if lost:
            text += f" ({lost} unreadable)"
        lines.append(text)
    elif snap.gpu_absent_reason:
        lines.append(f"GPUs: none visible — {snap.gpu_absent_reason}")
    else:
        lines.append("GPUs: none in this input")
    return lines
