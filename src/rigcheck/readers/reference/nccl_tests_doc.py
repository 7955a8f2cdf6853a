"""A read nccl-tests run as a ``rigcheck.bench/1`` CollectiveDocument, each figure beside its link's ceiling.

Which collective a file holds: the binary it names (its command line, a log line), else its rows' shape
(nccl-tests' redop/root columns and count = size / type size, divided by the ranks for all-gather and
reduce-scatter). The ceiling is the rate per direction of the slowest link between the ranks' GPUs — what
nccl-tests' PERFORMANCE.md compares busbw with — from a machine description (a snapshot, topo -m, -q) or a
link named (``LinkChoice``); none across hosts (the network bounds it). The all-reduce is judged against the
band of its condition (facts/allreduce_bands.py): NVSwitch with NVLS on or off at the largest size, PCIe, or
across hosts the NICs' aggregate; the verdict names the condition and the margin. All-gather and reduce-scatter
are judged on one NVSwitch board (facts/collective_bands.py); broadcast is unjudged, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rigcheck.errors import ParseError, UsageError
from rigcheck.facts import catalog, collective_bands, legend
from rigcheck.facts.allreduce_bands import (
    HGX_NVSWITCH,
    HOPPER_RING_MAX,
    NVSWITCH_BOARD_GPUS,
    Condition,
    Fabric,
    assumed_nics,
    is_nvswitch_board,
    network_condition,
    node_condition,
    nvls_state,
    parse_nics,
    pcie_condition,
    size_text,
    smallest_fabric,
)
from rigcheck.facts.bands import PCIE_LINKS, PCIE_LINKS_SOURCE
from rigcheck.facts.catalog import GpuSpec
from rigcheck.facts.nvlink import NvlinkVariant, variant_for, variant_for_chip
from rigcheck.facts.pcie import PCIE_SOURCE, gpu_pcie_link, pcie_bandwidth_gbps
from rigcheck.model.bench import (
    Ceiling,
    CollectiveDocument,
    CollectiveJudgement,
    CollectiveOp,
    CollectiveRow,
    ImportedDevice,
    ImportedSource,
    Method,
    Versions,
)
from rigcheck.model.links import pairs_with_link_state
from rigcheck.model.snapshot import Snapshot
from rigcheck.readers.reference.nccl_tests import (
    READABLE,
    READABLE_TEXT,
    TYPE_BYTES,
    NcclTestsRun,
    Nodes,
    Row,
    nodes_of,
)

METHOD_VERSION = "nccl-tests"
OP_BINARY = {op: binary for binary, op in READABLE.items()}
NO_LINK_NOTE = (
    "no link named: add --from topo.txt (or a snapshot, nvidia-smi -q) or --link to see each figure's ceiling"
)
TIME_NOTE = (
    "nccl-tests prints the mean time of its iterations (a host clock around them): time_us_median holds it as printed"
)
OLD_LAYOUT_NOTE = (
    "nccl-tests before 2.0 prints the largest error (max_error), not a count of wrong values: the rows are "
    "judged by the footer's out-of-bounds count"
)


@dataclass(frozen=True)
class LinkChoice:
    """What the user named: a topo code (NV18, PIX, ... SYS), a PCIe link (gen, width), a catalog SKU."""

    code: str | None = None
    pcie: tuple[int, int] | None = None
    gpu: GpuSpec | None = None
    nics: tuple[int, float] | None = None  # --nics: NICs per node and Gb/s each


def parse_link(code: str | None, pcie: str | None, gpu: str | None, nics: str | None = None) -> LinkChoice:
    """--link, --pcie, --model and --nics read; UsageError (one line) for what names nothing."""
    nic_count = parse_nics(nics) if nics is not None else None
    if nics is not None and nic_count is None:
        raise UsageError(f"--nics {nics!r}: NICs per node x Gb/s each, e.g. 8x400")
    if code is not None:
        code = code.strip().upper()
        if legend.lookup(code) is None and legend.nvlink_count(code) is None:
            raise UsageError(f"--link {code!r}: one of NV<links> (NV18), PIX, PXB, PHB, NODE, SYS")
    link = None
    if pcie is not None:
        text = pcie.strip().lower().replace(" ", "")
        gen, _, width = text.removeprefix("gen").partition("x")
        if not (gen.isdigit() and width.isdigit()) or pcie_bandwidth_gbps(int(gen), int(width)) is None:
            raise UsageError(f"--pcie {pcie!r}: a PCIe link as gen<1-6>x<width>, e.g. gen4x16")
        link = (int(gen), int(width))
    spec = None
    if gpu is not None:
        spec = catalog.lookup(gpu)
        if spec is None:
            close = catalog.candidates(gpu)
            raise UsageError(
                f"--model {gpu!r} is not in rigcheck's catalog"
                + (f" (did you mean: {', '.join(close)}?)" if close else "")
            )
    return LinkChoice(code, link, spec, nic_count)


# --- which collective -----------------------------------------------------------------------------------------


def _error_of(run: NcclTestsRun) -> str | None:
    if run.failure is not None:
        kept = f"the {len(run.rows)} sizes printed before it are kept" if run.rows else "no size was measured"
        return f"the run failed: {run.failure} ({kept})"
    if run.cut_row_line is not None:
        return f"input ends inside a row (line {run.cut_row_line}): the sizes printed before the cut are kept"
    return None


def collective_of(run: NcclTestsRun, ranks: int | None) -> tuple[str | None, str]:
    """(op, how it is known): the binary named in the file, else the rows' shape; op None when neither tells."""
    if run.binary is not None:
        return READABLE.get(run.binary), f"the file names {run.binary}"
    if not run.rows:  # a run that failed before its first size
        return None, "unknown type: the run failed before printing a row"
    row = max(run.rows, key=lambda r: r.size_bytes)
    per = TYPE_BYTES.get(row.dtype.lower())
    if row.redop == "":
        return None, "a blank redop column (alltoall_perf's shape)"
    if run.layout == "old" and row.redop is None and row.root is not None:
        return "broadcast", "its columns (root, no redop)"
    if row.root is not None and row.root >= 0:
        return (
            ("broadcast", "its columns (redop none, a root)")
            if row.redop == "none"
            else (None, "a redop and a root (reduce_perf's shape)")
        )
    if per is None or row.count == 0:
        return None, f"unknown type {row.dtype!r}"
    whole = row.count * per >= row.size_bytes
    if row.redop not in (None, "none"):
        return ("allreduce" if whole else "reducescatter"), "its columns (a redop, count against size)"
    if not whole:
        return "allgather", "its columns (redop none, count = size / ranks; alltoall_perf prints the same)"
    if ranks == 1:
        return "allgather", "its columns (one rank)"
    return None, "redop none with count = size (sendrecv_perf's shape)"


def check_collective(run: NcclTestsRun, op: str, ranks: int | None, path: str) -> str:
    """The note saying how the file's collective is known; ParseError when it is not ``op``."""
    found, how = collective_of(run, ranks)
    if found == op:
        return f"read as {OP_BINARY[op]} output: {how}"
    if found is None and run.binary is None and how.startswith("unknown type"):
        return f"taken as {OP_BINARY[op]} output as asked ({how}: its shape cannot be checked)"
    held = run.binary or (OP_BINARY[found] if found else None)
    what = f"{held} output ({how})" if held else f"not {OP_BINARY[op]} output ({how})"
    raise ParseError(
        f"{what}: `bench {found or op}` reads it" if found else f"{what}; rigcheck reads {READABLE_TEXT}", path=path
    )


# --- ranks and hosts ------------------------------------------------------------------------------------------

_FACTORS = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
}


def ranks_of(run: NcclTestsRun, op: str) -> tuple[int | None, str | None]:
    """(ranks, a note when they are not listed): NCCL's nranks (its INFO lines), else the rank lines (a fragment
    that starts at rank 143 has 144), else the busbw/algbw ratio at the largest size (nccl-tests' factor solved
    for n), else nThread x nGpus."""
    if run.comm_ranks:
        return max([run.comm_ranks, *(d.rank + 1 for d in run.devices)]), None
    if run.devices:
        ranks = max(d.rank for d in run.devices) + 1
        shown = {d.rank for d in run.devices}
        gap = "the rank lines start mid-list" if min(shown) > 0 else "some rank lines are left out"
        note = None if len(shown) == ranks else f"{ranks} ranks ({gap})"
        return ranks, note
    row = max(run.rows, key=lambda r: r.size_bytes) if run.rows else None
    f = row.out_of_place if row is not None else None
    factor = _FACTORS.get(op)
    if f is not None and factor is not None and f.algbw_gbps > 0 and f.busbw_gbps > 0:
        ratio = f.busbw_gbps / f.algbw_gbps
        # Both figures are printed to 0.01: the ratio is known only that well, and must name one n.
        slack = ratio * (0.005 / f.algbw_gbps + 0.005 / f.busbw_gbps)
        fits = [n for n in range(2, 4097) if abs(factor(n) - ratio) <= slack]
        if len(fits) == 1:
            return fits[0], f"{fits[0]} ranks: the file lists none; solved from busbw/algbw at the largest size"
    if run.n_gpus is None:
        return None, "the number of ranks is unknown (no rank lines, no header): world_size 1 stands for it"
    per_process = (run.n_threads or 1) * run.n_gpus
    return per_process, f"{per_process} ranks assumed (nThread x nGpus of one process): the file lists none"


# --- the ceiling ------------------------------------------------------------------------------------------------


def _spec(choice: LinkChoice, run: NcclTestsRun, snapshot: Snapshot | None) -> GpuSpec | None:
    """The GPU model: --model, else the one name nccl-tests or the snapshot gives."""
    if choice.gpu is not None:
        return choice.gpu
    names = {d.name for d in run.devices if d.name} or {g.name for g in (snapshot.gpus if snapshot else []) if g.name}
    return catalog.lookup(names.pop()) if len(names) == 1 else None


def _variant(spec: GpuSpec | None, snapshot: Snapshot | None) -> NvlinkVariant | None:
    if spec is not None:
        return variant_for_chip(spec.chip) or variant_for(spec.name)
    for gpu in snapshot.gpus if snapshot else []:
        found = variant_for(gpu.name or "") or variant_for(gpu.architecture or "")
        if found is not None:
            return found
    return None


def _used_gpus(run: NcclTestsRun, snapshot: Snapshot) -> list[int]:
    indices = sorted({d.device for d in run.devices})
    known = {g.index for g in snapshot.gpus}
    return indices if indices and set(indices) <= known else sorted(known)


def _snapshot_link(run: NcclTestsRun, snapshot: Snapshot | None) -> tuple[str | None, tuple[int, int] | None]:
    """The slowest pair link among the GPUs the ranks used, and the narrowest PCIe link among them."""
    if snapshot is None:
        return None, None
    used = _used_gpus(run, snapshot)
    pairs, _ = pairs_with_link_state(snapshot.gpus, snapshot.pairs)
    codes = [p.link for p in pairs if p.link and p.a in used and p.b in used]
    code = max(codes, key=legend.rank_of) if codes else None
    links = [gpu_pcie_link(g) for g in snapshot.gpus if g.index in used]
    known = [lk for lk in links if lk is not None and lk.gbps is not None]
    pcie = min(((lk.gen, lk.width) for lk in known), key=lambda gw: pcie_bandwidth_gbps(*gw) or 0) if known else None
    return code, pcie


@dataclass(frozen=True)
class Span:
    """Whether the ranks span nodes, how that is known, and the node class's smallest published fabric."""

    nodes: bool
    how: str
    fabric: Fabric | None


def span_of(run: NcclTestsRun, spec: GpuSpec | None, ranks: int | None, nodes: Nodes | None = None) -> Span:
    """The nodes the file shows (:func:`nodes_of`); where it shows none for sure, more ranks than one node of
    the GPU's class holds (8 on an HGX board, 4 on a GB200/GB300 tray) span nodes too."""
    fabric = smallest_fabric(spec.name if spec is not None else None, [d.name for d in run.devices])
    found = nodes or nodes_of(run, ranks)
    if found.count is not None and found.count > 1:
        return Span(True, found.how, fabric)
    if not found.exact and fabric is not None and ranks is not None and ranks > fabric.gpus:
        board = f"{fabric.gpus}-GPU {'board' if fabric.gpus == NVSWITCH_BOARD_GPUS else 'tray'}"
        gpu = spec.name if spec is not None else fabric.nodes.split()[-1]
        count = -(-ranks // fabric.gpus)
        return Span(
            True, f"{ranks} ranks of {gpu}, more than one {board} holds: {count} or more nodes inferred", fabric
        )
    return Span(False, found.how, fabric)


def ceiling_of(
    run: NcclTestsRun, choice: LinkChoice, snapshot: Snapshot | None, span: Span | None = None
) -> tuple[Ceiling | None, str | None, GpuSpec | None]:
    """(the ceiling, why there is none, the GPU model)."""
    spec = _spec(choice, run, snapshot)
    span = span or span_of(run, spec, ranks_of(run, "allreduce")[0])
    if span.nodes:
        return (
            None,
            f"the ranks span nodes ({span.how}): the network bounds busbw, and rigcheck names no ceiling for it",
            spec,
        )
    code, pcie = _snapshot_link(run, snapshot)
    code = choice.code or code
    where = "--pcie" if choice.pcie else "the machine's GPUs" if pcie else ""
    if choice.pcie is None and pcie is None and spec is not None and spec.name in PCIE_LINKS:
        pcie, where = PCIE_LINKS[spec.name], f"the {spec.name}'s link as built"
    pcie = choice.pcie or pcie
    if code is None and choice.pcie is None:
        return None, NO_LINK_NOTE, spec
    links = legend.nvlink_count(code) if code else None
    if links:
        variant = _variant(spec, snapshot)
        if variant is None:
            return None, f"{code}: the GPUs' NVLink generation is unknown: add --model with the model", spec
        gbps = variant.link_gbps * links
        text = f"{code}: NVLink gen {variant.generation}, {links} links x {variant.link_gbps:g} GB/s per direction"
        return Ceiling(gbps=gbps, link=text, source=variant.source), None, spec
    if pcie is None:
        return None, f"{code}: a PCIe path whose link is unknown: add --pcie (gen4x16) or --model", spec
    gen, width = pcie
    rate = pcie_bandwidth_gbps(gen, width)
    assert rate is not None  # parse_link and the facts only give known links
    through = f"{code}: " if code else ""
    text = f"{through}PCIe Gen{gen} x{width} per direction ({where})"
    source = PCIE_SOURCE + (f"; link: {PCIE_LINKS_SOURCE} ({spec.source})" if spec and where.endswith("built") else "")
    return Ceiling(gbps=round(rate, 2), link=text, source=source), None, spec


def _switch(spec: GpuSpec, ranks: int, snapshot: Snapshot | None, code: str | None) -> tuple[bool, str]:
    """(the GPUs on NVSwitch, how it is known): the snapshot's switch links or NVSwitches, every pair joined by
    all of the part's links (only a switch gives that to 8 GPUs), or an 8-GPU SXM board (HGX/DGX)."""
    if snapshot is not None and (
        (snapshot.fabric_manager is not None and (snapshot.fabric_manager.nvswitches or 0) > 0)
        or any(lk.remote_device_type == "switch" for g in snapshot.gpus for lk in g.nvlinks or ())
    ):
        return True, "the machine description shows NVSwitches"
    if code is not None and spec.nvlink_links > 0 and legend.nvlink_count(code) == spec.nvlink_links:
        return True, f"every pair {code}"
    if code is None and is_nvswitch_board(spec.architecture, spec.form_factor, ranks):
        return True, f"{ranks} {spec.name} (an 8-GPU SXM board is NVSwitch)"
    return False, ""


def _nics(choice: LinkChoice, snapshot: Snapshot | None, fabric: Fabric | None) -> tuple[tuple[int, float], str, bool]:
    """(NIC count, Gb/s each; where from; assumed): --nics, the snapshot's active RDMA ports, else the node
    class's smallest published fabric, else the weak default (facts/allreduce_bands.py: assumed_nics)."""
    if choice.nics is not None:
        return choice.nics, "--nics", False
    ports = snapshot.system.ib_ports if snapshot is not None else None
    active = [p.rate_gbps for p in ports or [] if p.state == "ACTIVE" and p.rate_gbps]
    if active:
        return (len(active), sum(active) / len(active)), "the machine description's active RDMA ports", False
    nics, why = assumed_nics(fabric, "give --nics" if fabric is not None else "give --nics (and --model)")
    return nics, why, True


def _network(choice: LinkChoice, snapshot: Snapshot | None, span: Span, size: int) -> Condition:
    """The band across nodes, naming how the nodes are known and where the NICs come from."""
    nics, where, assumed = _nics(choice, snapshot, span.fabric)
    found = network_condition(nics, f"{span.how}; {where}", size)
    if assumed and span.fabric is not None and found.source is not None:
        return replace(found, source=f"{found.source}; smallest published fabric: {span.fabric.source}")
    return found


def _condition(
    run: NcclTestsRun,
    *,
    op: str = "allreduce",
    spec: GpuSpec | None,
    ranks: int,
    size: int,
    busbw: float,
    snapshot: Snapshot | None,
    choice: LinkChoice,
    code: str | None,
    ceiling: Ceiling | None,
    span: Span,
) -> Condition:
    """The band of the run's condition: across nodes the NICs; on one node NVSwitch (NVLS on/off) or PCIe."""
    if op != "allreduce":
        return _other_condition(op, run, spec=spec, ranks=ranks, size=size, snapshot=snapshot, code=code, span=span)
    if span.nodes:
        return _network(choice, snapshot, span, size)
    if spec is None:
        return Condition(None, "the GPU model is not in the output: name it with --model NAME", None)
    switch, how = _switch(spec, ranks, snapshot, code)
    if switch:
        nvls, why = nvls_state(
            env=run.env,
            support=run.nvls_support,
            channels=run.nvls_channels,
            nccl_version=run.nccl_version,
            busbw=busbw,
            ring_max=HOPPER_RING_MAX if spec.chip == "GH100" else None,
        )
        found = node_condition(spec.chip, gpus=ranks, nvswitch=True, size=size, nvls=nvls, nvls_why=why)
        if found.floor is not None and how.endswith("is NVSwitch)"):  # the board rule, not a file, said NVSwitch
            return replace(found, condition=f"{found.condition}; {how}", source=f"{found.source}; {HGX_NVSWITCH}")
        return found
    if ceiling is not None and "PCIe" in ceiling.link and not (code and legend.nvlink_count(code)):
        return pcie_condition(ceiling.gbps, ceiling.link, size)
    built = PCIE_LINKS.get(spec.name)
    if ceiling is None and spec.form_factor != "sxm" and built is not None:
        # A PCIe card with no link named: its link as built. A bridge or P2P only raises the figure.
        rate = pcie_bandwidth_gbps(*built)
        assert rate is not None  # the facts give known links only
        return pcie_condition(round(rate, 2), f"Gen{built[0]} x{built[1]} as built", size)
    if spec.form_factor == "superchip":  # a GB200/GB300 tray: its GPUs reach each other through the rack's switches
        return Condition(
            None,
            f"no public all-reduce figure for {ranks} x {spec.name} on one tray (its GPUs talk through the NVL72 "
            "rack's NVLink switches; published figures are for the whole rack)",
            None,
        )
    return Condition(None, f"no public all-reduce figure for {ranks} x {spec.name} without NVSwitch", None)


def _other_condition(
    op: str,
    run: NcclTestsRun,
    *,
    spec: GpuSpec | None,
    ranks: int,
    size: int,
    snapshot: Snapshot | None,
    code: str | None,
    span: Span,
) -> Condition:
    """All-gather and reduce-scatter on one NVSwitch board (facts/collective_bands.py); broadcast has no band."""
    if op == "broadcast":
        return collective_bands.broadcast_condition()
    if span.nodes:
        return Condition(None, "no published figure across nodes for this collective", None)
    if spec is None:
        return Condition(None, "the GPU model is not in the output: name it with --model NAME", None)
    switch, how = _switch(spec, ranks, snapshot, code)
    found = collective_bands.node_condition(
        op, spec.chip, spec.nvlink_links, gpus=ranks, nvswitch=switch, size=size, env=run.env
    )
    if found.floor is not None and how.endswith("is NVSwitch)"):  # the board rule, not a file, said NVSwitch
        return replace(found, condition=f"{found.condition}; {how}", source=f"{found.source}; {HGX_NVSWITCH}")
    return found


def _judge(
    op: str,
    *,
    rows: list[CollectiveRow],
    spec: GpuSpec | None,
    ranks: int,
    run: NcclTestsRun,
    snapshot: Snapshot | None,
    choice: LinkChoice,
    code: str | None,
    ceiling: Ceiling | None,
    span: Span,
) -> CollectiveJudgement | None:
    """The band's verdict at the largest size, naming the condition it assumed and the margin; None without rows."""
    if not rows:
        return None
    last = max(rows, key=lambda r: r.size_bytes)
    busbw, size = last.busbw_gbps, last.size_bytes
    found = _condition(
        run,
        op=op,
        spec=spec,
        ranks=ranks,
        size=size,
        busbw=busbw,
        snapshot=snapshot,
        choice=choice,
        code=code,
        ceiling=ceiling,
        span=span,
    )
    if found.floor is None:
        return CollectiveJudgement(
            band_floor_gbps=None, verdict="unjudged", reason=f"no band: {found.condition}", source=None
        )
    verdict = "pass" if busbw >= found.floor else "fail"
    margin = busbw / found.floor - 1
    side = f"{margin:.0%} above" if margin >= 0 else f"{-margin:.0%} below"
    close = (
        f"; the floor is within 5% of the lowest healthy figure published ({found.lowest_healthy:g})"
        if found.close
        else ""
    )
    reason = f"busbw {busbw:g} GB/s at {size_text(size)}, floor {found.floor:g} ({found.condition}), {side}{close}"
    return CollectiveJudgement(band_floor_gbps=found.floor, verdict=verdict, reason=reason, source=found.source)


# --- the document -----------------------------------------------------------------------------------------------


# nccl-tests' tolerance for a row's largest difference (its DeltaMaxValue): a reduction of floating-point data
# may differ by rounding (half and bfloat16 5e-2, float 1e-5, double 1e-12); a copy (all-gather, broadcast) and
# integer data must match exactly.
_TOLERANCE = {"half": 5e-2, "bfloat16": 5e-2, "float": 1e-5, "double": 1e-12}


def error_tolerance(dtype: str, *, reduction: bool) -> float:
    return _TOLERANCE.get(dtype.lower(), 0.0) if reduction else 0.0


def _row(
    op: CollectiveOp, r: Row, *, run: NcclTestsRun, method: Method, ranks: int, ceiling: Ceiling | None
) -> CollectiveRow:
    o, i = r.out_of_place, r.in_place
    wrong = [w for w in (o.wrong, i.wrong if i else None) if w is not None]
    note = None
    if run.check_disabled:
        note = "not checked (-c 0)"
    elif run.layout == "old":
        note = "old layout: max error printed, no count"
        if run.out_of_bounds:  # the footer counted failures: name the rows whose error is past the tolerance
            tolerance = error_tolerance(r.dtype, reduction=op in ("allreduce", "reducescatter"))
            wrong = [1 for e in (o.max_error, i.max_error if i else None) if e is not None and e > tolerance]
    return CollectiveRow(
        name=op,
        unit="GB/s",
        value=o.busbw_gbps,
        median=o.busbw_gbps,
        min=o.busbw_gbps,
        max=o.busbw_gbps,
        repeats=method.repeats,
        warmup=method.warmup,
        sizes=[r.size_bytes],
        backend="nccl",
        world_size=ranks,
        method_version=METHOD_VERSION,
        op=op,
        size_bytes=r.size_bytes,
        time_us_median=o.time_us,
        algbw_gbps=o.algbw_gbps,
        busbw_gbps=o.busbw_gbps,
        correct=not any(wrong),
        note=note,
        count=r.count,
        dtype=r.dtype,
        redop=r.redop,
        root=r.root,
        wrong=o.wrong,
        max_error=o.max_error,
        in_place_time_us=i.time_us if i else None,
        in_place_algbw_gbps=i.algbw_gbps if i else None,
        in_place_busbw_gbps=i.busbw_gbps if i else None,
        in_place_wrong=i.wrong if i else None,
        in_place_max_error=i.max_error if i else None,
        ceiling_gbps=ceiling.gbps if ceiling else None,
        fraction_of_ceiling=o.busbw_gbps / ceiling.gbps if ceiling and ceiling.gbps else None,
    )


def collective_document(
    run: NcclTestsRun,
    *,
    op: CollectiveOp,
    path: str,
    snapshot: Snapshot | None = None,
    choice: LinkChoice | None = None,
) -> CollectiveDocument:
    """The run as `bench <op> --json` prints a run; ParseError when the file holds another collective."""
    known_ranks, ranks_note = ranks_of(run, op)
    ranks = known_ranks or 1
    notes = [check_collective(run, op, known_ranks, path), *run.notes]
    notes += [ranks_note] if ranks_note else []
    choice = choice or LinkChoice()
    nodes = nodes_of(run, known_ranks)
    span = span_of(run, _spec(choice, run, snapshot), known_ranks, nodes)
    ceiling, why_not, spec = ceiling_of(run, choice, snapshot, span)
    notes += [why_not] if why_not else []
    if ceiling is not None and any(r.out_of_place.busbw_gbps > ceiling.gbps for r in run.rows):
        notes.append("busbw passes the link's rate at some sizes: NVLink SHARP (NVLS) or a link faster than named")
    method = Method(method_version=METHOD_VERSION, warmup=run.warmup or 0, repeats=run.iters or 1, statistic="mean")
    if run.warmup is None or run.iters is None:
        notes.append("no nccl-tests header line: warmup 0 and repeats 1 stand for the unknown counts")
    notes.append(TIME_NOTE)
    if run.layout == "old":
        notes.append(OLD_LAYOUT_NOTE)
    rows = [_row(op, r, run=run, method=method, ranks=ranks, ceiling=ceiling) for r in run.rows]
    code = choice.code or _snapshot_link(run, snapshot)[0]
    source = ImportedSource(
        tool="nccl-tests",
        file=path,
        version=run.tool_version,
        ranks=known_ranks,
        hosts=run.hosts,
        devices=[
            ImportedDevice(rank=d.rank, host=d.host, device=d.device, pci_bus_id=d.pci_bus_id, name=d.name)
            for d in run.devices
        ],
        avg_busbw_gbps=run.avg_busbw_gbps,
        out_of_bounds=run.out_of_bounds,
        command=run.header_line,
    )
    return CollectiveDocument(
        benchmark=op,
        # A file cut inside a row is a sweep cut short, as the reference-tool imports treat a cut matrix: partial,
        # the rows before it kept (exit 1). A missing footer alone is only said in the notes.
        # A run that stopped at a failed CUDA or NCCL call is partial too, with that line as its error.
        partial=run.cut_row_line is not None or run.failure is not None,
        error=_error_of(run),
        method=method,
        backend="nccl",
        world_size=ranks,
        versions=Versions(rigcheck=None, python=None, torch=None, cuda=None, nccl=run.nccl_version),
        snapshot=snapshot,
        results=rows,
        op=op,
        sizes=[r.size_bytes for r in run.rows],
        wall_s=0.0,
        notes=notes,
        source=source,
        ceiling=ceiling,
        judgement=_judge(
            op,
            rows=rows,
            spec=spec,
            ranks=ranks,
            run=run,
            snapshot=snapshot,
            choice=choice,
            code=code,
            ceiling=ceiling,
            span=span,
        ),
    )
