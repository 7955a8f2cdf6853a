"""The topo document (``rigcheck.topo/1``): the `nvidia-smi topo -m` matrix and every GPU pair explained.

What the links mean for training follows `rigcheck plan`'s traffic model (plan/comm.py, the ZeRO paper §7):
DDP's all-reduce and ZeRO-1/2's reduce-scatter plus all-gather move the same bytes per step over the same
links, ZeRO-3/FSDP 1.5x that; so a slow path slows every strategy, and ZeRO-3/FSDP the most. An NVLink pair is
described by its bandwidth (facts/nvlink.py), since an RTX 3090 bridge's NV4 (56 GB/s per direction) and an
H100's NV18 (450) are 8x apart. The sentences are part of the document (``explanation``, ``summary``), so they
are worded here, where it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from pydantic import Field

from rigcheck.facts.legend import LinkKind, explain, kind_of, nvlink_count, rank_of
from rigcheck.facts.nvlink import NVLINK_VARIANTS, variant_for
from rigcheck.facts.pcie import pcie_bandwidth_gbps
from rigcheck.facts.sources import NCCL_RINGS
from rigcheck.model.document import Document, Plain
from rigcheck.model.links import link_state_text, nvlink_pairs_of, nvlink_ring, pairs_with_link_state
from rigcheck.model.snapshot import GpuPair, Missing, PairTable, Snapshot, TopoGpu, TopoMatrix

TOPO_SCHEMA: Literal["rigcheck.topo/1"] = "rigcheck.topo/1"
UNKNOWN_LINK = "?"
# How to give rigcheck the links an input lacks: several --from files are combined into one snapshot.
ADD_TOPOLOGY = "save `nvidia-smi topo -m > topo.txt` on the machine and add it with another `--from topo.txt`"
FROM_LINK_STATE = "known from the GPUs' NVLink state, not from a topology matrix"
# What NCCL does on an NVLink mesh whose pairs close a ring through every GPU (DGX-1's hybrid cube mesh):
# it builds several rings (channels) over the NVLink links at once and uses trees as well, so the GPU pairs
# without NVLink carry none of the collective. Sources: NVIDIA/nccl issues #299 (rings as concurrent
# channels to use every link of the DGX-1 cube mesh) and #301 (GPUs that cannot close an NVLink ring fall back
# to PCIe or shared memory); NCCL GTC 2019 talk S9656.
NCCL_MESH = (
    "the NVLink pairs close a ring through every GPU, so NCCL builds its rings (and trees) over the NVLink "
    "links, several at once to use them all; the pairs without NVLink carry none of the collective, so the "
    "slowest path does not limit it"
)
NCCL_MESH_SOURCE = NCCL_RINGS

# Above this many GPUs a topology is summarised: the reports draw link kinds per GPU group instead of the N×N
# matrix (--matrix draws it), and the doctor folds the per-pair link findings into one per link code. An N×N
# grid of 512 GPUs is 262k cells nobody reads, and a finding per pair (130,816) was most of the doctor's time; a
# box (≤ 16) keeps both.
SUMMARY_ABOVE = 16

AS_PRINTED = 'as printed, "" for an empty cell, null when the column is absent'


class TopoGpuRow(Plain):
    index: int = Field(ge=0)
    cpu_affinity: str | None = Field(description=AS_PRINTED)
    numa_affinity: str | None = Field(description=AS_PRINTED)
    gpu_numa_id: str | None = Field(description=AS_PRINTED)


class TopoNic(Plain):
    label: str = Field(description='"NIC0"')
    name: str | None = Field(description='"mlx5_0"; null without a NIC legend')


class TopoPair(Plain):
    a: int = Field(ge=0)
    b: int = Field(ge=0)
    link: str | None = Field(
        description='the code as printed ("NV12", "PIX", "SYS", ...); null only where a snapshot lacks the link'
    )
    kind: LinkKind | None = Field(description="null only where the link is unknown")
    nvlinks: int | None = Field(description="NVLink links between the pair; null when not NVLink")
    explanation: str = Field(description="one sentence")


class TopoDocument(Document):
    """The GPU interconnect matrix as `nvidia-smi topo -m` prints it, and every GPU pair explained
    (docs/commands.md)."""

    schema_: Literal["rigcheck.topo/1"] = Field(TOPO_SCHEMA, alias="schema")
    labels: list[str] = Field(description='row/column names as printed: "GPU0", ..., "NIC0", ...')
    matrix: list[list[str]] = Field(
        description='rows of link codes as printed: "X" on the diagonal, "NV12", "SYS", ...'
    )
    gpus: list[TopoGpuRow]
    nics: list[TopoNic]
    pairs: list[TopoPair]
    legend: Literal["new", "old", "none"] = Field(description="which legend the source printed")
    summary: str = Field(description="one line about the whole topology")


# ------------------------------------------------------------------------------------------ the words

# How ZeRO's traffic is held back by the slowest path, per kind (completes "limited by ...").
_LIMITED_BY: dict[LinkKind, str] = {
    "nvlink": "NVLink",
    "pcie_switch": "PCIe through a switch",
    "pcie_bridges": "PCIe through several bridges",
    "host_bridge": "PCIe through the CPU",
    "numa_local": "PCIe across the CPU's host bridges",
    "cross_numa": "the link between CPU sockets",
}


# What `rigcheck plan` counts per step (plan/comm.py; ZeRO paper §7: 2Ψ for DDP and ZeRO-1/2, 3Ψ for ZeRO-3).
STRATEGY_BYTES = "DDP and ZeRO-1/2 move the same bytes per step over it, ZeRO-3/FSDP 1.5x"


def plan_hint(link: str | None = None) -> str:
    """The plan command that times a step over this link."""
    given = f" --link {link} --model NAME" if link else ""
    return f"`rigcheck plan --params N --gpus G{given}` times a step"


# An NVLink pair at least twice PCIe 5.0 x16 (63 GB/s per direction) is faster than any PCIe slot by a margin
# that leaves the wire rarely the limit; below that it is a bridge-class link, worth timing.
PCIE5_X16_GBPS = pcie_bandwidth_gbps(5, 16) or 63.0
FAST_NVLINK_GBPS = 2 * PCIE5_X16_GBPS


def nvlink_rate(links: int, gpu_names: tuple[str, ...] = ()) -> tuple[float, float] | None:
    """Per-direction bandwidth of a pair on ``links`` NVLinks: exact where the GPUs name one NVLink variant, else
    the range over the variants that have that many links; None when no variant does."""
    variants = {v for name in gpu_names if (v := variant_for(name)) is not None}
    if len(variants) == 1:
        rate = next(iter(variants)).link_gbps * links
        return rate, rate
    rates = [v.link_gbps * links for v in NVLINK_VARIANTS if v.max_links >= links]
    return (min(rates), max(rates)) if rates else None


def nvlink_words(code: str, gpu_names: tuple[str, ...] = ()) -> str:
    """What an NVLink pair's speed means for training, scaled to its bandwidth (NV4 on an RTX 3090 is not NV18)."""
    links = nvlink_count(code) or 0
    rate = nvlink_rate(links, gpu_names) if links else None
    if rate is None:
        return f"{STRATEGY_BYTES} ({plan_hint(code)})"
    lo, hi = rate
    gbps = f"{lo:.0f} GB/s per direction" if lo == hi else f"{lo:.0f}-{hi:.0f} GB/s per direction by GPU model"
    if lo >= FAST_NVLINK_GBPS:
        return f"{gbps}, several times any PCIe slot: the wire is rarely what limits DDP, ZeRO or FSDP"
    if hi < FAST_NVLINK_GBPS:
        ratio = f"{lo / PCIE5_X16_GBPS:.1f}" + (f"-{hi / PCIE5_X16_GBPS:.1f}" if hi != lo else "")
        return (
            f"{gbps}, {ratio}x PCIe 5.0 x16's {PCIE5_X16_GBPS:.0f} GB/s: {STRATEGY_BYTES}, and "
            f"a large model's step can wait on it ({plan_hint(code)})"
        )
    return (
        f"{gbps} (this input does not name the GPU: a bridge's is at the low end, an SXM board's at the high end; "
        f"{plan_hint(code)})"
    )


class PairLink(Protocol):
    """A GPU pair and its link code: a TopoPair, or a snapshot's GpuPair where the reports summarise."""

    @property
    def a(self) -> int: ...
    @property
    def b(self) -> int: ...
    @property
    def link(self) -> str | None: ...


P = TypeVar("P", bound=PairLink)


def sorted_pairs(pairs: list[P]) -> list[P]:
    """Best link first; unknown links last; ties by GPU index."""

    def key(p: P) -> tuple[tuple[int, int], int, int]:
        rank = rank_of(p.link) if p.link is not None else (100, 0)
        return (rank, p.a, p.b)

    return sorted(pairs, key=key)


def _numa_node(gpu: TopoGpu | None) -> str | None:
    """The NUMA node a GPU reports, when it is a plain node number."""
    if gpu is None or gpu.numa_affinity is None:
        return None
    value = gpu.numa_affinity.strip()
    return value if value.isascii() and value.isdigit() else None  # '¹' is a digit to isdigit() alone


def _unknown_why(pair: GpuPair) -> str:
    """Why a pair's link is unknown: "not in this input", or the reason the source gave (``gpu_lost``)."""
    reason = pair.missing.get("link")
    if reason is None or reason is Missing.NOT_IN_SOURCE:
        return "not in this input"
    return f"unknown ({reason.value})"


def explain_pair(pair: GpuPair, gpus: list[TopoGpu] | dict[int, TopoGpu]) -> str:
    """One sentence: what the pair's link is and what it means (NUMA nodes named where known). ``gpus`` by
    index where it is called for every pair (a list is indexed on each call)."""
    if pair.link is None or pair.link == UNKNOWN_LINK:
        return f"GPU{pair.a} and GPU{pair.b}: the link between them is {_unknown_why(pair)}."
    sentence = explain(pair.link)
    if kind_of(pair.link) != "cross_numa":
        return sentence
    by_index = gpus if isinstance(gpus, dict) else {g.index: g for g in gpus}
    node_a, node_b = _numa_node(by_index.get(pair.a)), _numa_node(by_index.get(pair.b))
    if node_a is None or node_b is None:
        return sentence
    if node_a != node_b:
        extra = f"GPU{pair.a} is on NUMA node {node_a}, GPU{pair.b} on NUMA node {node_b}"
    else:
        extra = f"both report NUMA node {node_a}, as VMs that hide the host's sockets often do"
    return f"{sentence.rstrip('.')} ({extra})."


def summarize_topology(
    topo: TopoMatrix,
    pairs: list[GpuPair],
    *,
    inferred: frozenset[tuple[int, int]] = frozenset(),
    link_state: str | None = None,
    gpu_names: tuple[str, ...] = (),
) -> str:
    """One line about the whole machine, e.g. "8 GPUs: all pairs NVLink (NV18)".

    ``inferred``: the pairs whose NVLink came from link state rather than a matrix; ``link_state``: a sentence
    about the GPUs' NVLink state, added where the input lacks links; ``gpu_names``: the GPUs' names where the
    input has them (an NVLink pair's bandwidth depends on the model).
    """
    n = len(topo.gpus) or sum(1 for label in topo.labels if label.startswith("GPU"))
    gpus = f"{n} GPU{'s' if n != 1 else ''}"
    state = f"; {link_state}" if link_state else ""
    # One pass, by the link itself: testing membership in a list of pydantic models compares them field by
    # field, quadratic in pairs.
    known: list[GpuPair] = []
    not_known: list[GpuPair] = []
    for p in pairs:
        (known if p.link is not None and p.link != UNKNOWN_LINK else not_known).append(p)
    if n < 2:
        return f"{gpus}: no GPU pairs, so nothing travels between GPUs"
    if not known:
        return f"{gpus}: how they are linked is not in this input ({ADD_TOPOLOGY}){state}"
    total = max(len(pairs), n * (n - 1) // 2)
    unknown = total - len(known)
    # Pairs a source could not read (a GPU lost) are unknown for that reason; the rest are missing from the input.
    unread = [p for p in not_known if _unknown_why(p) != "not in this input"]
    absent = unknown - len(unread)
    codes = sorted({p.link for p in known if p.link is not None}, key=rank_of)
    worst = codes[-1]
    worst_kind = kind_of(worst)
    nvlink = [p for p in known if p.kind == "nvlink"]
    tail = f"; {absent} pair{'s' if absent != 1 else ''} not in this input ({ADD_TOPOLOGY})" if absent else ""
    if unread:
        why = ", ".join(sorted({_unknown_why(p).removeprefix("unknown ") for p in unread}))
        tail = f"; {len(unread)} pair{'s' if len(unread) != 1 else ''} unknown {why}{tail}"
    from_state = [p for p in nvlink if (p.a, p.b) in inferred]
    if from_state:
        names = ", ".join(f"GPU{p.a}-GPU{p.b}" for p in from_state)
        tail = f" ({names}: {FROM_LINK_STATE}){tail}{state}"
    if len(nvlink) == total:
        # The slowest NVLink pair sets a collective's pace: its speed is the sentence's.
        return f"{gpus}: all pairs NVLink ({'/'.join(codes)}): {nvlink_words(worst, gpu_names)}{tail}"
    limited = _LIMITED_BY[worst_kind] if worst_kind is not None else f"the {worst} path"
    if not nvlink:
        return (
            f"{gpus} over {'/'.join(codes)}: no NVLink; every collective crosses {limited}: {STRATEGY_BYTES} "
            f"({plan_hint()}){tail}"
        )
    nv_codes = "/".join(sorted({p.link for p in nvlink if p.link is not None}, key=rank_of))
    others = [c for c in codes if kind_of(c) != "nvlink"]
    head = f"{gpus}: NVLink ({nv_codes}) for {len(nvlink)} of {total} pairs"
    if not others:
        return f"{head}{tail}"
    indices = sorted({i for p in pairs for i in (p.a, p.b)} | {g.index for g in topo.gpus})
    if not unknown and nvlink_ring(indices, nvlink_pairs_of(nvlink)):
        return f"{head}, the rest over {'/'.join(others)}: {NCCL_MESH}"
    return (
        f"{head}, the rest over {'/'.join(others)}; collectives run at the slowest path, {limited}: "
        f"{STRATEGY_BYTES}{tail}"
    )


# ------------------------------------------------------------------------------------------ building


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


def snapshot_matrix(snap: Snapshot, *, affinities: bool = True) -> TopoMatrix | None:
    """The matrix of a snapshot: the `topo -m` table it read, else one built from its per-pair links, with
    each GPU's CPU and NUMA affinity when ``affinities``; None when it has neither a table nor a GPU."""
    if snap.topology is not None:
        return snap.topology
    if not snap.gpus:
        return None
    gpus = (
        [
            TopoGpu(
                index=g.index,
                cpu_affinity=g.cpu_affinity,
                numa_affinity=str(g.numa_node) if g.numa_node is not None else None,
            )
            for g in snap.gpus
        ]
        if affinities
        else []
    )
    return topology_from_pairs(len(snap.gpus), snap.pairs, gpus)


def explain_inferred(pair: GpuPair) -> str:
    """The sentence of an NVLink pair known from link state only."""
    return f"{explain(pair.link or UNKNOWN_LINK).rstrip('.')} ({FROM_LINK_STATE})."


def topo_document(
    topo: TopoMatrix,
    pairs: list[GpuPair],
    *,
    inferred: frozenset[tuple[int, int]] = frozenset(),
    link_state: str | None = None,
    gpu_names: tuple[str, ...] = (),
) -> TopoDocument:
    """The topo document of a matrix and its GPU pairs (``inferred``, ``link_state``, ``gpu_names``: see
    summarize_topology)."""
    by_index = {g.index: g for g in topo.gpus}
    return TopoDocument(
        labels=list(topo.labels),
        matrix=[list(row) for row in topo.matrix],
        gpus=[
            TopoGpuRow(
                index=g.index, cpu_affinity=g.cpu_affinity, numa_affinity=g.numa_affinity, gpu_numa_id=g.gpu_numa_id
            )
            for g in topo.gpus
        ],
        nics=[TopoNic(label=n.label, name=n.name) for n in topo.nics],
        pairs=[
            TopoPair(
                a=p.a,
                b=p.b,
                link=p.link,
                kind=p.kind,
                nvlinks=p.nvlinks,
                explanation=explain_inferred(p) if (p.a, p.b) in inferred else explain_pair(p, by_index),
            )
            for p in pairs
        ],
        legend=topo.legend,
        summary=summarize_topology(topo, pairs, inferred=inferred, link_state=link_state, gpu_names=gpu_names),
    )


def _unknown_pair(a: int, b: int) -> GpuPair:
    pair = GpuPair(a=a, b=b)
    for field in ("link", "kind", "nvlinks"):
        pair.mark_missing(field, Missing.NOT_IN_SOURCE)
    return pair


def _snapshot_topo_inputs(
    snap: Snapshot, *, affinities: bool
) -> tuple[TopoMatrix, list[GpuPair], frozenset[tuple[int, int]], str | None] | None:
    """What a snapshot's topo document is built of: (matrix, one pair per GPU pair, the pairs known from link
    state, a sentence about that state); None when it has neither a table nor a GPU."""
    if snap.topology is not None:
        return snap.topology, snap.pairs, frozenset(), None
    pairs, inferred = pairs_with_link_state(snap.gpus, snap.pairs)
    matrix = snapshot_matrix(snap.model_copy(update={"pairs": pairs}), affinities=affinities)
    if matrix is None:
        return None
    # One pair per GPU pair, as the document promises: the pairs the input says nothing about, unknown.
    have = {(p.a, p.b) for p in pairs}
    indices = [g.index for g in matrix.gpus]
    pairs += [_unknown_pair(a, b) for i, a in enumerate(indices) for b in indices[i + 1 :] if (a, b) not in have]
    pairs.sort(key=lambda p: (p.a, p.b))
    known = any(p.link is not None for p in pairs)
    return matrix, pairs, frozenset(inferred), None if known and not inferred else link_state_text(snap.gpus)


def gpu_names(snap: Snapshot) -> tuple[str, ...]:
    """The GPUs' names a snapshot holds, once each (what nvlink_rate reads)."""
    return tuple(sorted({g.name for g in snap.gpus if g.name}))


def snapshot_topo_document(snap: Snapshot, *, affinities: bool = True) -> TopoDocument | None:
    """The topo document of a snapshot: its `topo -m` table, else the matrix of its pair links with the NVLink
    pairs its GPUs' link state shows (see model/links.py); None when it has neither a table nor a GPU."""
    inputs = _snapshot_topo_inputs(snap, affinities=affinities)
    if inputs is None:
        return None
    matrix, pairs, inferred, link_state = inputs
    return topo_document(matrix, pairs, inferred=inferred, link_state=link_state, gpu_names=gpu_names(snap))


@dataclass(frozen=True)
class TopoSummaryInput:
    """A topology to draw as a summary, without a TopoPair per GPU pair: ``doc`` lists no pairs (its matrix,
    GPUs, NICs and summary line are whole), ``pairs`` are the snapshot's own, ``explanation`` words one of them,
    ``table`` indexes ``pairs`` (the snapshot's own pair table, which the checks read too, where ``pairs`` are the
    snapshot's). Building 130,816 TopoPair models for a 512-GPU summary that names eight of them was a third of
    the doctor's time; `topo --json` still builds the whole document."""

    doc: TopoDocument
    pairs: list[GpuPair]
    explanation: Callable[[GpuPair], str]
    table: PairTable


def snapshot_topo_summary(snap: Snapshot, *, affinities: bool = True) -> TopoSummaryInput | None:
    """The topology of a snapshot for a summarised report (see TopoSummaryInput); None as snapshot_topo_document."""
    inputs = _snapshot_topo_inputs(snap, affinities=affinities)
    if inputs is None:
        return None
    matrix, pairs, inferred, link_state = inputs
    summary = summarize_topology(matrix, pairs, inferred=inferred, link_state=link_state, gpu_names=gpu_names(snap))
    doc = topo_document(matrix, [], link_state=link_state).model_copy(update={"summary": summary})
    by_index = {g.index: g for g in matrix.gpus}

    def explanation(p: GpuPair) -> str:
        return explain_inferred(p) if (p.a, p.b) in inferred else explain_pair(p, by_index)

    # With a `topo -m` table the pairs are the snapshot's (indexed once for the checks); else they are built here.
    table = snap.pair_table() if pairs is snap.pairs else PairTable(pairs)
    return TopoSummaryInput(doc, pairs, explanation, table)
