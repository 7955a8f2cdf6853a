"""The topology report: the `rigcheck topo --json` contract and its terminal rendering.

What the links mean for training follows the guide: DDP syncs gradients once per step, so a slow
link costs it little; ZeRO-DP/FSDP exchange parameters and gradients all the time, so they need
fast links (NVLink, or at least a PCIe switch below the CPU).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.facts.legend import LinkKind, explain, kind_of, rank_of
from rigcheck.model.snapshot import GpuPair, TopoGpu, TopoMatrix

__all__ = [
    "TOPO_SCHEMA",
    "explain_code",
    "explain_pair",
    "render_topology",
    "sorted_pairs",
    "summarize_topology",
    "topology_from_pairs",
    "topology_to_dict",
]

TOPO_SCHEMA = "rigcheck.topo/1"
UNKNOWN_LINK = "?"

KIND_STYLE: dict[LinkKind, str] = {
    "nvlink": "green",
    "pcie_switch": "cyan",
    "pcie_bridges": "cyan",
    "host_bridge": "yellow",
    "numa_local": "yellow",
    "cross_numa": "red",
}

# How ZeRO's traffic is held back by the slowest path, per kind (completes "limited by ...").
_LIMITED_BY: dict[LinkKind, str] = {
    "nvlink": "NVLink",
    "pcie_switch": "PCIe through a switch",
    "pcie_bridges": "PCIe through several bridges",
    "host_bridge": "PCIe through the CPU",
    "numa_local": "PCIe across the CPU's host bridges",
    "cross_numa": "the link between CPU sockets",
}


def _numa_node(gpu: TopoGpu | None) -> str | None:
    """The NUMA node a GPU reports, when it is a plain node number."""
    if gpu is None or gpu.numa_affinity is None:
        return None
    value = gpu.numa_affinity.strip()
    return value if value.isdigit() else None


def explain_code(code: str) -> str:
    """One sentence for a link code: the legend's words and what they mean for training."""
    return explain(code)


def explain_pair(pair: GpuPair, gpus: list[TopoGpu]) -> str:
    """One sentence: what the pair's link is and what it means (NUMA nodes named where known)."""
    if pair.link is None or pair.link == UNKNOWN_LINK:
        return f"GPU{pair.a} and GPU{pair.b}: the link between them is unknown."
    sentence = explain_code(pair.link)
    if kind_of(pair.link) != "cross_numa":
        return sentence
    by_index = {g.index: g for g in gpus}
    node_a, node_b = _numa_node(by_index.get(pair.a)), _numa_node(by_index.get(pair.b))
    if node_a is None or node_b is None:
        return sentence
    if node_a != node_b:
        extra = f"GPU{pair.a} is on NUMA node {node_a}, GPU{pair.b} on NUMA node {node_b}"
    else:
        extra = f"both report NUMA node {node_a}, as VMs that hide the host's sockets often do"
    return f"{sentence.rstrip('.')} ({extra})."


def sorted_pairs(pairs: list[GpuPair]) -> list[GpuPair]:
    """Best link first; unknown links last; ties by GPU index."""

    def key(p: GpuPair) -> tuple[tuple[int, int], int, int]:
        rank = rank_of(p.link) if p.link is not None else (100, 0)
        return (rank, p.a, p.b)

    return sorted(pairs, key=key)


def summarize_topology(topo: TopoMatrix, pairs: list[GpuPair]) -> str:
    """One line about the whole machine, e.g. "8 GPUs: all pairs NVLink (NV18)"."""
    n = len(topo.gpus) or sum(1 for label in topo.labels if label.startswith("GPU"))
    gpus = f"{n} GPU{'s' if n != 1 else ''}"
    if not pairs:
        return f"{gpus}: no GPU pairs, so nothing travels between GPUs"
    known = [p for p in pairs if p.link is not None and p.link != UNKNOWN_LINK]
    unknown = len(pairs) - len(known)
    if not known:
        return f"{gpus}: the links between them are unknown"
    codes = sorted({p.link for p in known if p.link is not None}, key=rank_of)
    worst = codes[-1]
    worst_kind = kind_of(worst)
    nvlink = [p for p in known if p.kind == "nvlink"]
    tail = f"; {unknown} pair{'s' if unknown != 1 else ''} unknown" if unknown else ""
    if len(nvlink) == len(pairs):
        return f"{gpus}: all pairs NVLink ({'/'.join(codes)}): fast enough for ZeRO/FSDP as well as DDP"
    limited = _LIMITED_BY[worst_kind] if worst_kind is not None else f"the {worst} path"
    if not nvlink:
        return f"{gpus} over {'/'.join(codes)}: no NVLink; DDP is fine, ZeRO will be limited by {limited}{tail}"
    nv_codes = "/".join(sorted({p.link for p in nvlink if p.link is not None}, key=rank_of))
    return (
        f"{gpus}: NVLink ({nv_codes}) for {len(nvlink)} of {len(pairs)} pairs, the rest over "
        f"{'/'.join(c for c in codes if kind_of(c) != 'nvlink')}; collectives run at the slowest path, "
        f"so ZeRO will be limited by {limited}{tail}"
    )


def topology_to_dict(topo: TopoMatrix, pairs: list[GpuPair]) -> dict[str, object]:
    """The JSON object `rigcheck topo --json` prints (schema ``rigcheck.topo/1``)."""
    return {
        "schema": TOPO_SCHEMA,
        "labels": list(topo.labels),
        "matrix": [list(row) for row in topo.matrix],
        "gpus": [
            {
                "index": g.index,
                "cpu_affinity": g.cpu_affinity,
                "numa_affinity": g.numa_affinity,
                "gpu_numa_id": g.gpu_numa_id,
            }
            for g in topo.gpus
        ],
        "nics": [{"label": n.label, "name": n.name} for n in topo.nics],
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "link": p.link,
                "kind": p.kind,
                "nvlinks": p.nvlinks,
                "explanation": explain_pair(p, topo.gpus),
            }
            for p in pairs
        ],
        "legend": topo.legend,
        "summary": summarize_topology(topo, pairs),
    }


def topology_from_pairs(gpu_count: int, pairs: list[GpuPair], gpus: list[TopoGpu]) -> TopoMatrix:
    """The matrix `topo -m` would print, built from per-pair links (NVML); "?" where a link is unknown."""
    matrix = [["X" if i == j else UNKNOWN_LINK for j in range(gpu_count)] for i in range(gpu_count)]
    for p in pairs:
        if 0 <= p.a < gpu_count and 0 <= p.b < gpu_count and p.a != p.b:
            code = p.link if p.link is not None else UNKNOWN_LINK
            matrix[p.a][p.b] = code
            matrix[p.b][p.a] = code
    by_index = {g.index: g for g in gpus}
    return TopoMatrix(
        labels=[f"GPU{i}" for i in range(gpu_count)],
        matrix=matrix,
        gpus=[by_index.get(i, TopoGpu(index=i)) for i in range(gpu_count)],
        legend="none",
    )


def _code_text(code: str) -> Text:
    kind = kind_of(code)
    style = KIND_STYLE[kind] if kind is not None else ("dim" if code == "X" else "")
    return Text(code, style=style)


def render_topology(topo: TopoMatrix, pairs: list[GpuPair]) -> RenderableType:
    """The matrix coloured by link kind, affinities, the NIC legend, each pair explained, a summary."""
    columns: list[tuple[str, str]] = [
        (title, attr)
        for title, attr in (
            ("CPU Affinity", "cpu_affinity"),
            ("NUMA Affinity", "numa_affinity"),
            ("GPU NUMA ID", "gpu_numa_id"),
        )
        if any(getattr(g, attr) is not None for g in topo.gpus)
    ]
    # Compact and never truncated: an 8-GPU matrix with affinities must fit a log line, whole.
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("", no_wrap=True)
    for label in topo.labels:
        table.add_column(label, justify="center", no_wrap=True)
    for title, _ in columns:
        table.add_column(title, no_wrap=True)
    gpu_by_label = {f"GPU{g.index}": g for g in topo.gpus}
    for label, row in zip(topo.labels, topo.matrix, strict=False):
        gpu = gpu_by_label.get(label)
        extra = [(getattr(gpu, attr) or "") if gpu is not None else "" for _, attr in columns]
        table.add_row(Text(label, style="bold"), *[_code_text(c) for c in row], *extra)

    parts: list[RenderableType] = [Text("GPU topology (nvidia-smi topo -m)", style="bold"), table]
    if topo.nics:
        nic_lines = Text("NICs: ")
        nic_lines.append(", ".join(f"{n.label} = {n.name or 'name not printed'}" for n in topo.nics))
        parts.append(nic_lines)
    # One line per kind of link (not per pair: an 8-GPU box has 28 pairs), fastest first.
    groups: dict[str, list[GpuPair]] = {}
    for p in sorted_pairs(pairs):
        groups.setdefault(p.link if p.link is not None else UNKNOWN_LINK, []).append(p)
    for code, members in groups.items():
        line = _code_text(code)
        names = ", ".join(f"{p.a}–{p.b}" for p in members)
        line.append(f"  GPU pair{'s' if len(members) != 1 else ''} {names}: ")
        sentence = explain_pair(members[0], topo.gpus) if len(members) == 1 else explain_code(code)
        line.append(sentence.removeprefix(f"{code}: "))
        parts.append(line)
    parts.append(Text(summarize_topology(topo, pairs), style="bold"))
    return Group(*parts)
