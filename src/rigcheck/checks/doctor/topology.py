"""Topology: how the GPUs reach each other (the guide's "Multi-GPU Connectivity" section).

Finding ids: topology.single-gpu, topology.summary, topology.nvlink, topology.pcie-only, topology.cross-numa,
topology.mixed-links, topology.nvlink-mesh, topology.link-unknown, topology.nic-cross-socket. The links of each
GPU's own NVLinks (up or down) are checks/doctor/nvlink.py's.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from rigcheck.checks.common import (
    GUIDE_CONNECTIVITY,
    host_finding,
    list_names,
    pair_finding,
    readable_gpus,
)
from rigcheck.checks.doctor.topology_nics import nic_findings
from rigcheck.facts.legend import KIND_MEANING, LEGEND_SOURCE, kind_of, lookup, nvlink_count, rank_of
from rigcheck.model import Finding, LinkKind, Severity, Snapshot, pair_subject
from rigcheck.model.links import link_state_text, nvlink_ring, pairs_with_link_state
from rigcheck.model.topo import (
    ADD_TOPOLOGY,
    FROM_LINK_STATE,
    NCCL_MESH,
    NCCL_MESH_SOURCE,
    STRATEGY_BYTES,
    SUMMARY_ABOVE,
    gpu_names,
    nvlink_words,
    plan_hint,
)
from rigcheck.units import plural

FINDING_IDS: tuple[str, ...] = (
    "topology.single-gpu",
    "topology.summary",
    "topology.nvlink",
    "topology.pcie-only",
    "topology.cross-numa",
    "topology.mixed-links",
    "topology.nvlink-mesh",
    "topology.link-unknown",
    "topology.nic-cross-socket",
)


# As `rigcheck plan` counts a step (plan/comm.py): a slow path slows DDP as much as ZeRO-1/2; ZeRO-3/FSDP most.
DDP_VS_ZERO = f"collectives over this path set the pace of every strategy: {STRATEGY_BYTES} ({plan_hint()})"


class _Link(NamedTuple):
    """One GPU pair's link as the checks see it (a tuple: built once per pair, 130k times at 512 GPUs)."""

    a: int
    b: int
    code: str | None  # as topo -m prints it: "NV2", "PHB"
    kind: LinkKind | None
    nvlinks: int | None
    missing_reason: str
    from_link_state: bool = False

    @property
    def is_nvlink(self) -> bool:
        return self.kind == "nvlink" or (self.nvlinks is not None and self.nvlinks > 0)

    @property
    def label(self) -> str:
        if self.code is not None:
            return self.code
        if self.nvlinks:
            return f"NV{self.nvlinks}"
        return self.kind or "?"

    @property
    def subject(self) -> str:
        return pair_subject(self.a, self.b)


def _gpu_indices(snapshot: Snapshot) -> list[int]:
    if snapshot.gpus:
        return sorted({g.index for g in readable_gpus(snapshot)})
    found: set[int] = set()
    for p in snapshot.pairs:
        found |= {p.a, p.b}
    if snapshot.topology is not None:
        found |= {g.index for g in snapshot.topology.gpus}
    return sorted(found)


def _matrix_code(snapshot: Snapshot, where: dict[str, int], a: int, b: int) -> str | None:
    """The code `topo -m` printed for a pair, when the snapshot holds the matrix but not the pair; ``where``:
    each label's position (built once: ``labels.index`` per pair would be cubic in GPUs)."""
    topo = snapshot.topology
    if topo is None:
        return None
    row, col = where.get(f"GPU{a}"), where.get(f"GPU{b}")
    if row is None or col is None:
        return None
    if row >= len(topo.matrix) or col >= len(topo.matrix[row]):
        return None
    return topo.matrix[row][col]


def _links(snapshot: Snapshot, indices: list[int]) -> list[_Link]:
    links: list[_Link] = []
    inferred: set[tuple[int, int]] = set()
    if snapshot.topology is None:
        pairs, inferred = pairs_with_link_state(readable_gpus(snapshot), snapshot.pairs)
        by_pair = {(p.a, p.b): p for p in pairs}
    else:
        by_pair = snapshot.pair_table().by_key  # indexed once for every check and report
    topo = snapshot.topology
    where: dict[str, int] = {}
    for pos, label in enumerate(topo.labels if topo is not None else []):
        where.setdefault(label, pos)
    get_pair = by_pair.get
    for i, a in enumerate(indices):
        for b in indices[i + 1 :]:
            pair = get_pair((a, b))
            code = pair.link if pair is not None else None
            if code is None:
                code = _matrix_code(snapshot, where, a, b)
            kind: LinkKind | None = pair.kind if pair is not None else None
            if kind is None and code is not None:
                kind = kind_of(code)
            nvlinks = pair.nvlinks if pair is not None else None
            if nvlinks is None and code is not None:
                nvlinks = nvlink_count(code)
            # The reason is read only where the link is unknown: most pairs have one, and this loop runs per pair.
            reason = ""
            if pair is None:
                reason = "no pair record"
            elif kind is None and not nvlinks:
                r = pair.missing.get("link") or pair.missing.get("kind")
                reason = r.value if r is not None else "not recorded"
            links.append(_Link(a, b, code, kind, nvlinks, reason, (a, b) in inferred))
    return links


def _numa_of(snapshot: Snapshot) -> dict[int, str]:
    out: dict[int, str] = {}
    for g in readable_gpus(snapshot):
        if g.numa_node is not None and g.numa_node >= 0:
            out[g.index] = str(g.numa_node)
    if snapshot.topology is not None:
        for t in snapshot.topology.gpus:
            if t.index not in out and t.numa_affinity not in (None, "", "N/A"):
                out[t.index] = str(t.numa_affinity)
    return out


def check_topology(snapshot: Snapshot) -> list[Finding]:
    indices = _gpu_indices(snapshot)
    if not indices:
        return []
    if len(indices) == 1:
        return [
            host_finding(
                "topology.single-gpu",
                Severity.INFO,
                f"one GPU (GPU{indices[0]}): no GPU-to-GPU links to check",
                measured="1 GPU",
                advice="multi-GPU connectivity matters only with two or more GPUs",
                source=GUIDE_CONNECTIVITY,
            )
        ]

    out: list[Finding] = []
    links = _links(snapshot, indices)
    # One pass: `link not in known` over a list is quadratic in pairs.
    known: list[_Link] = []
    unknown: list[_Link] = []
    for link in links:
        (known if link.kind is not None or link.is_nvlink else unknown).append(link)

    models = gpu_names(snapshot)
    if len(indices) > SUMMARY_ABOVE:
        out += _folded_link_findings(known, models)
    else:
        out += [_link_finding(link, models) for link in known]

    if unknown:
        names = [f"{link.subject} ({link.missing_reason})" for link in unknown]
        out.append(
            host_finding(
                "topology.link-unknown",
                Severity.UNKNOWN,
                f"link type unknown for {len(unknown)} of {len(links)} GPU pairs: {list_names(names)}",
                measured=list_names(names),
                advice=ADD_TOPOLOGY + " (rigcheck combines several --from files)",
                source=LEGEND_SOURCE,
            )
        )

    numa = _numa_of(snapshot)
    cross = [link for link in known if link.kind == "cross_numa" and not link.is_nvlink]
    if cross:
        codes = "/".join(sorted({c.label for c in cross}))
        nodes = sorted(set(numa.values()))
        placement = (
            "; ".join(f"node {n}: " + ", ".join(f"GPU{i}" for i in indices if numa.get(i) == n) for n in nodes)
            if nodes
            else "NUMA node of each GPU not known"
        )
        out.append(
            host_finding(
                "topology.cross-numa",
                Severity.WARN,
                f"{len(cross)} of {len(links)} GPU pairs cross CPU sockets ({codes}): "
                f"{list_names([c.subject for c in cross])}",
                measured=placement,
                expected="GPUs that talk most on the same NUMA node",
                advice=(
                    "bind each rank to its GPU's NUMA node (torchrun with `numactl --cpunodebind=N --membind=N`, or "
                    f"`--cpu-bind` in srun); {placement}; traffic between sockets goes over QPI/UPI/Infinity Fabric "
                    "and P2P is usually unavailable there"
                ),
                source=f"{LEGEND_SOURCE} (SYS/SOC); {GUIDE_CONNECTIVITY}",
            )
        )

    nv = [link for link in known if link.is_nvlink]
    pcie = [link for link in known if not link.is_nvlink]
    if nv and pcie:
        out.append(_mixed_links(nv, pcie, indices, mesh=not unknown and nvlink_ring(indices, [(x.a, x.b) for x in nv])))

    out.append(_summary(snapshot, indices, links=links, known=known, unknown=unknown, numa=numa, names=models))
    out += nic_findings(snapshot, indices)
    return out


def _link_text(link: _Link, names: tuple[str, ...]) -> tuple[str, str, str, str]:
    """(id, message, measured, advice) of a known link: the same for every pair with the same code; ``names``:
    the GPUs' names, which give an NVLink pair's bandwidth."""
    if link.is_nvlink:
        n = link.nvlinks
        count = f"{n} NVLink{'s' if n != 1 else ''}" if n else "NVLink"
        return (
            "topology.nvlink",
            f"{link.label} ({count}): {KIND_MEANING['nvlink']}"
            + (f" ({FROM_LINK_STATE})" if link.from_link_state else ""),
            link.label + (" (from NVLink state)" if link.from_link_state else ""),
            f"the fastest path here: {nvlink_words(link.label, names)}",
        )
    entry = lookup(link.code) if link.code is not None else None
    meaning = KIND_MEANING[link.kind] if link.kind is not None else "a PCIe path"
    legend = entry.legend if entry is not None else None
    return (
        "topology.pcie-only",
        f"{link.label}: {meaning}; no NVLink",
        f"{link.label} ({legend})" if legend else link.label,
        DDP_VS_ZERO + "; where memory allows, prefer DDP or ZeRO-1/2 to ZeRO-3/FSDP on this pair",
    )


def _link_finding(link: _Link, names: tuple[str, ...]) -> Finding:
    finding_id, message, measured, advice = _link_text(link, names)
    return pair_finding(
        link.a,
        link.b,
        finding_id,
        Severity.INFO,
        message,
        measured=measured,
        advice=advice,
        source=f"{LEGEND_SOURCE}; {GUIDE_CONNECTIVITY}",
    )


def _folded_link_findings(known: list[_Link], names: tuple[str, ...]) -> list[Finding]:
    """One host finding per link code (and origin) with its pairs counted, for a machine above
    SUMMARY_ABOVE GPUs: 512 GPUs have 130,816 pairs that mostly say the same thing, and a finding each was
    most of the doctor's time (docs/checks.md)."""
    groups: dict[tuple[str, str, bool], list[_Link]] = {}
    for link in known:
        groups.setdefault((link.label, link.code or "", link.from_link_state), []).append(link)
    out: list[Finding] = []
    for members in sorted(groups.values(), key=lambda m: (rank_of(m[0].label), m[0].a, m[0].b)):
        finding_id, message, measured, advice = _link_text(members[0], names)
        n = len(members)
        out.append(
            host_finding(
                finding_id,
                Severity.INFO,
                f"{plural(n, 'GPU pair')} on {message}",
                measured=f"{measured} on {list_names([m.subject for m in members])}",
                advice=advice.replace("on this pair", "on these pairs"),
                source=f"{LEGEND_SOURCE}; {GUIDE_CONNECTIVITY}",
            )
        )
    return out


def _mixed_links(nv: list[_Link], pcie: list[_Link], indices: list[int], *, mesh: bool) -> Finding:
    """Some pairs on NVLink, others not. Where the NVLink pairs close a ring through every GPU (DGX-1's hybrid
    cube mesh) NCCL keeps collectives on NVLink: that is the design, worth an info; otherwise a ring over all
    GPUs must cross the slower links, worth a warning."""
    pcie_names = list_names([f"{p.subject} {p.label}" for p in pcie])
    if mesh:
        return host_finding(
            "topology.nvlink-mesh",
            Severity.INFO,
            f"NVLink mesh: {len(nv)} pairs on NVLink, {len(pcie)} without ({pcie_names}); the NVLink pairs close a "
            f"ring through all {len(indices)} GPUs",
            measured=f"NVLink: {list_names([f'{p.subject} {p.label}' for p in nv])}",
            expected="a ring of NVLink pairs through every GPU",
            advice=(
                f"{NCCL_MESH}; only point-to-point traffic between GPUs without NVLink (pipeline stages, a "
                "tensor-parallel group that spans them) crosses the slower path: put such groups on NVLinked GPUs"
            ),
            source=f"{NCCL_MESH_SOURCE}; {LEGEND_SOURCE}",
        )
    return host_finding(
        "topology.mixed-links",
        Severity.WARN,
        f"mixed links: {len(nv)} pairs on NVLink, {len(pcie)} on PCIe only ({pcie_names})",
        measured=f"NVLink: {list_names([p.subject for p in nv])}",
        expected="every pair on the same kind of link",
        advice=(
            "the NVLink pairs do not close a ring through every GPU, so a collective over all GPUs (a ring "
            "through each of them) crosses the slower links and runs at their speed: the NVLink bridge helps "
            "little there; run jobs that talk a lot (ZeRO/FSDP, tensor parallel) on the NVLinked GPUs only "
            "(CUDA_VISIBLE_DEVICES), or bridge every pair"
        ),
        source=f"{NCCL_MESH_SOURCE}; {LEGEND_SOURCE}; {GUIDE_CONNECTIVITY}",
    )


def _summary(
    snapshot: Snapshot,
    indices: list[int],
    *,
    links: list[_Link],
    known: list[_Link],
    unknown: list[_Link],
    numa: dict[int, str],
    names: tuple[str, ...],
) -> Finding:
    nv = [link for link in known if link.is_nvlink]
    pcie = [link for link in known if not link.is_nvlink]
    kinds = Counter(link.label for link in known)
    parts = [f"{n}x {code}" for code, n in sorted(kinds.items(), key=lambda kv: rank_of(kv[0]))]
    numa_nodes = sorted(set(numa.values()))
    state = link_state_text(readable_gpus(snapshot)) if unknown or any(x.from_link_state for x in nv) else None
    head = f"{len(indices)} GPUs, {plural(len(links), 'pair')}: "
    if known:
        absent = all(x.missing_reason in ("no pair record", "not_in_source", "not recorded") for x in unknown)
        counts = f"{len(nv)} NVLink, {len(pcie)} PCIe only" + (
            f", {len(unknown)} {'not in this input' if absent else 'unknown'}" if unknown else ""
        )
    else:
        counts = "how they are linked is not in this input"
    if known and nv and not pcie and not unknown:
        slowest = max((link.label for link in nv), key=rank_of)
        advice: str | None = f"all pairs on NVLink: {nvlink_words(slowest, names)}"
    elif known:
        advice = DDP_VS_ZERO
    else:
        advice = None
    if unknown:
        advice = (f"{advice}; " if advice else "") + ADD_TOPOLOGY
    return host_finding(
        "topology.summary",
        Severity.INFO,
        head
        + counts
        + (f" ({', '.join(parts)})" if parts else "")
        + (f"; {state}" if state else "")
        + (f"; NUMA nodes {', '.join(numa_nodes)}" if numa_nodes else ""),
        measured=", ".join(parts) or state,
        advice=advice,
        source=f"{LEGEND_SOURCE}; {GUIDE_CONNECTIVITY}",
    )
