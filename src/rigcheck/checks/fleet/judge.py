"""The fleet's comparison rules: nodes unlike the others, figures far under the fleet's median, the slow node
(checks/fleet/pairs.py), and the ``rigcheck.fleet/1`` document they make.

Pure, like every check: rank 0 (rigcheck.bench.fleet.run) or ``fleet --from DIR`` (readers/fleet_saved.py) hands
over the nodes' reports and what was measured; nothing here reads a file or a clock.

Consistency (:func:`compare_nodes`): for each property the majority value across the nodes that know it is the
expected one, and each node (or GPU) with another value is named with its own (``measured``) beside the
majority (``expected``). A node that does not know a property is skipped for it, never a mismatch. No majority
(a tie): one warn finding naming every value and its nodes, ``expected`` null. Fewer than two nodes knowing a
property: nothing to compare. Per-GPU properties (PCIe link, VBIOS version) are compared among the GPUs of one
model across the fleet, so a node's odd GPU is named with its index.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, Literal

from rigcheck.checks.common import list_names, num, readable_gpus
from rigcheck.checks.fleet.collectives import nic_busbw
from rigcheck.checks.fleet.fingerprint import FINDING_IDS as FINGERPRINT_IDS
from rigcheck.checks.fleet.pairs import (
    CPU_SLOW_FRACTION,
    MAX_ROUNDS,
    SLOW_FRACTION,
    judge_pairs,
    pair_verdict,
    plan_round,
    reference_busbw,
    search_judgement,
    wants_more,
)
from rigcheck.checks.fleet.pairs import (
    FINDING_IDS as PAIR_IDS,
)
from rigcheck.checks.fleet.stacks import FINDING_IDS as STACK_IDS
from rigcheck.checks.fleet.waits import FINDING_IDS as WAIT_IDS
from rigcheck.checks.verify.figures import num as figure
from rigcheck.checks.verify.figures import size_text
from rigcheck.facts.allreduce_bands import NETWORK_FRACTION, NETWORK_MIN_BYTES
from rigcheck.model.finding import Severity
from rigcheck.model.fleet import (
    FleetCollective,
    FleetDocument,
    FleetFinding,
    FleetNode,
    FleetPair,
    FleetPhase,
    MissingRank,
    NodeReport,
    RankTiming,
    StackGroup,
    WaitSummary,
)
from rigcheck.model.snapshot import Gpu, Snapshot
from rigcheck.model.verify import Verdict, VerifyCheck

__all__ = [
    "CPU_SLOW_FRACTION",
    "FINDING_IDS",
    "MAX_ROUNDS",
    "SLOW_FRACTION",
    "compare_nodes",
    "fleet_document",
    "judge_pairs",
    "pair_verdict",
    "plan_round",
    "reference_busbw",
    "search_judgement",
    "slow_fraction",
    "wants_more",
]

FINDING_IDS: tuple[str, ...] = (
    "fleet.driver",
    "fleet.cuda",
    "fleet.nccl",
    "fleet.torch",
    "fleet.gpu-model",
    "fleet.gpu-count",
    "fleet.pcie",
    "fleet.vbios",
    "fleet.nic-count",
    "fleet.nic-rate",
    "fleet.outlier",
    *PAIR_IDS,
    "fleet.missing-rank",
    "fleet.rank-died",
    "fleet.internode-bandwidth",
    "fleet.collective-wrong",
    *FINGERPRINT_IDS,
    *WAIT_IDS,
    *STACK_IDS,
)

# Outliers: robust z = 0.6745 (x - median) / MAD (Iglewicz and Hoaglin's modified z-score; 0.6745 makes the MAD
# of normal data comparable to its standard deviation, 3.5 is their cut). Only the low side: every figure judged
# is a throughput, and a fast card is not a fault. The z-score alone would name a GPU 2% under a fleet whose
# cards agree to 0.1%, so a figure must also be more than 10% under the median (verify's peer rule); with MAD 0
# (most of the fleet identical) the 10% rule decides alone.
MAD_SCALE: Final = 0.6745
OUTLIER_Z: Final = -3.5
OUTLIER_DROP: Final = 0.10
# At least three figures, from at least two nodes: with two, the median is their mean and neither can be told
# off; one node's GPUs among themselves are verify's own peer rule.
OUTLIER_MIN_VALUES: Final = 3
THROUGHPUT_UNITS: Final = frozenset({"TFLOPS", "GB/s"})

# The whole fleet's all-reduce at its largest size against the NICs' aggregate: under NETWORK_FRACTION (40%, the
# floor `bench allreduce --from` holds a run across nodes to, facts/allreduce_bands.py) fails: a fabric set up
# wrong (NCCL on TCP sockets, GPUDirect RDMA off, a NIC down); from there to half it warns, under the 58% the
# least healthy published fabric reaches.
INTERNODE_WARN_FRACTION: Final = 0.5

Subject = tuple[str, int | None]  # (node, GPU index or None for the node)

_NUM = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[object, ...]:
    """node2 before node10."""
    return tuple(int(p) if p.isdigit() else p for p in _NUM.split(text))


def _where(subject: Subject) -> str:
    node, gpu = subject
    return node if gpu is None else f"{node} GPU{gpu}"


def _subject_key(subject: Subject) -> tuple[tuple[object, ...], int]:
    return _natural(subject[0]), -1 if subject[1] is None else subject[1]


def sort_key(finding: FleetFinding) -> tuple[int, str, tuple[object, ...], int]:
    """Worst first, then by id, node and GPU."""
    gpu = -1 if finding.gpu is None else finding.gpu
    return (-finding.severity.rank, finding.id, _natural(finding.node or ""), gpu)


def _odd_ones(
    finding_id: str, what: str, severity: Severity, values: Mapping[Subject, str], among: str
) -> list[FleetFinding]:
    """The subjects whose value is not the majority's; one warn finding naming every value when there is none.

    ``among`` names what was counted ("nodes", "NVIDIA H100 GPUs")."""
    if len({node for node, _ in values}) < 2:
        return []
    counts = Counter(values.values())
    if len(counts) < 2:
        return []
    ranked = counts.most_common()
    top, n_top = ranked[0]
    if ranked[1][1] == n_top:
        split = "; ".join(
            f"{value} on {list_names([_where(s) for s in sorted(values, key=_subject_key) if values[s] == value])}"
            for value in sorted(counts)
        )
        return [
            FleetFinding(
                id=finding_id,
                severity=Severity.WARN,
                node=None,
                gpu=None,
                message=f"no majority {what} across the fleet's {among}: {split}",
                measured=split,
                expected=None,
            )
        ]
    return [
        FleetFinding(
            id=finding_id,
            severity=severity,
            node=subject[0],
            gpu=subject[1],
            message=f"{_where(subject)}: {what} {value}, where {n_top} of {len(values)} {among} have {top}",
            measured=value,
            expected=top,
        )
        for subject, value in sorted(values.items(), key=lambda item: _subject_key(item[0]))
        if value != top
    ]


# --- what each node says about itself ---------------------------------------------------------------------


def _text(value: str | None) -> str | None:
    return (value.strip() or None) if value is not None else None


def _driver(node: NodeReport) -> str | None:
    return _text(node.snapshot.software.driver_version) if node.snapshot is not None else None


def _cuda(node: NodeReport) -> str | None:
    return _text(node.snapshot.software.cuda_driver_version) if node.snapshot is not None else None


def _imported(node: NodeReport, name: str, recorded: str | None) -> str | None:
    """As the node's ranks import it (live), else as its snapshot recorded it."""
    return _text(node.versions.get(name)) or _text(recorded)


def _nccl(node: NodeReport) -> str | None:
    return _imported(node, "nccl", node.snapshot.software.nccl_version if node.snapshot is not None else None)


def _torch(node: NodeReport) -> str | None:
    return _imported(node, "torch", node.snapshot.software.torch_version if node.snapshot is not None else None)


def _gpu_model(node: NodeReport) -> str | None:
    if node.snapshot is None:
        return None
    names = sorted({name for g in readable_gpus(node.snapshot) if (name := _text(g.name)) is not None})
    return " + ".join(names) or None


def _gpu_count(node: NodeReport) -> str | None:
    # Every GPU the node listed, unreadable ones too: a card that fell off the bus is the node's own finding.
    return str(len(node.snapshot.gpus)) if node.snapshot is not None else None


def _nic_count(snapshot: Snapshot) -> int | None:
    """RDMA NICs: the devices of /sys/class/infiniband (live), else the NICs `nvidia-smi topo -m` lists."""
    if snapshot.system.ib_ports is not None:
        return len({p.device for p in snapshot.system.ib_ports})
    if snapshot.topology is not None:
        return len(snapshot.nics or snapshot.topology.nics)
    return None


def _nics(node: NodeReport) -> str | None:
    count = _nic_count(node.snapshot) if node.snapshot is not None else None
    return str(count) if count is not None else None


def _nic_rates(node: NodeReport) -> str | None:
    """The active ports' rates, "4 x 400 Gb/s"; None where the ports were not read (a snapshot from files)."""
    ports = node.snapshot.system.ib_ports if node.snapshot is not None else None
    if ports is None:
        return None
    rates = Counter(
        rate for p in ports if (p.state or "").upper() == "ACTIVE" and (rate := num(p.rate_gbps)) is not None
    )
    if not rates:
        return "no active port"
    return ", ".join(f"{n} x {rate:g} Gb/s" for rate, n in sorted(rates.items(), reverse=True))


_NODE_FIELDS: tuple[tuple[str, str, Severity, Callable[[NodeReport], str | None]], ...] = (
    ("fleet.driver", "driver", Severity.FAIL, _driver),
    ("fleet.cuda", "CUDA driver version", Severity.FAIL, _cuda),
    ("fleet.nccl", "NCCL", Severity.WARN, _nccl),
    ("fleet.torch", "torch", Severity.WARN, _torch),
    ("fleet.gpu-model", "GPU model", Severity.FAIL, _gpu_model),
    ("fleet.gpu-count", "GPU count", Severity.FAIL, _gpu_count),
    ("fleet.nic-count", "RDMA NIC count", Severity.WARN, _nics),
    ("fleet.nic-rate", "active NIC ports", Severity.WARN, _nic_rates),
)


def _nic_rates_unknown(nodes: Sequence[NodeReport]) -> list[FleetFinding]:
    """One info line when nodes with NICs have no port rates to compare (read live only)."""
    unknown = [
        n.name for n in nodes if n.snapshot is not None and (_nic_count(n.snapshot) or 0) > 0 and _nic_rates(n) is None
    ]
    if not unknown:
        return []
    return [
        FleetFinding(
            id="fleet.nic-rate",
            severity=Severity.INFO,
            node=None,
            gpu=None,
            message=(
                f"NIC rates not compared on {list_names(unknown)}: their snapshots hold no port rates (read live "
                "only, from /sys/class/infiniband)"
            ),
            measured=None,
            expected=None,
        )
    ]


def _per_model(nodes: Sequence[NodeReport], read: Callable[[Gpu], str | None]) -> dict[str, dict[Subject, str]]:
    """Each readable GPU's value by GPU model, keyed by (node, GPU index); a GPU without a value is skipped."""
    values: dict[str, dict[Subject, str]] = defaultdict(dict)
    for node in nodes:
        if node.snapshot is None:
            continue
        for gpu in readable_gpus(node.snapshot):
            model = _text(gpu.name)
            value = read(gpu)
            if model is not None and value is not None:
                values[model][(node.name, gpu.index)] = value
    return values


def _pcie(nodes: Sequence[NodeReport]) -> list[FleetFinding]:
    """Each GPU's link against the fleet's majority for GPUs of its model: width as trained, generation as the
    link's max (the current generation drops at idle and comes back under load; a busy GPU stuck low is its
    node's own pcie.gen-below-max)."""
    gens = _per_model(nodes, lambda g: f"Gen{g.pcie_gen_max}" if g.pcie_gen_max is not None else None)
    widths = _per_model(nodes, lambda g: f"x{g.pcie_width_current}" if g.pcie_width_current is not None else None)
    findings: list[FleetFinding] = []
    for model in sorted(set(gens) | set(widths)):
        among = f"{model} GPUs"
        findings += _odd_ones("fleet.pcie", "PCIe link generation (max)", Severity.FAIL, gens[model], among)
        findings += _odd_ones("fleet.pcie", "PCIe link width", Severity.FAIL, widths[model], among)
    return findings


def _vbios(nodes: Sequence[NodeReport]) -> list[FleetFinding]:
    """``fleet.vbios``: each GPU's VBIOS version against the fleet's majority for GPUs of its model (a GPU whose
    version is unknown is skipped). A warning, not a fail: a card on another VBIOS trains correctly, unlike a node
    on another driver, whose NCCL may not talk to the rest; the operator brings it in line at the next window."""
    versions = _per_model(nodes, lambda g: _text(g.vbios_version))
    findings: list[FleetFinding] = []
    for model in sorted(versions):
        findings += _odd_ones("fleet.vbios", "VBIOS", Severity.WARN, versions[model], f"{model} GPUs")
    return findings


# --- outliers ------------------------------------------------------------------------------------------------

_Group = tuple[str, str, str]  # (check id, GPU model or the node's models, unit)


def _figures(nodes: Sequence[NodeReport]) -> dict[_Group, list[tuple[Subject, float]]]:
    groups: dict[_Group, list[tuple[Subject, float]]] = defaultdict(list)

    def add(check: VerifyCheck, model: str, subject: Subject) -> None:
        value = num(check.value)
        if value is not None and check.unit in THROUGHPUT_UNITS:
            groups[(check.id, model, check.unit)].append((subject, value))

    for node in nodes:
        doc = node.verify
        if doc is None:
            continue
        for gpu in doc.gpus:
            for check in gpu.checks:
                add(check, gpu.name, (node.name, gpu.index))
        # A node check (all-reduce, p2p between two GPUs) is compared among nodes of the same GPUs.
        models = " + ".join(sorted({g.name for g in doc.gpus})) or "no GPU"
        for check in doc.node:
            add(check, models, (node.name, None))
    return groups


def _outliers_of(group: _Group, values: list[tuple[Subject, float]]) -> list[FleetFinding]:
    check_id, model, unit = group
    if len(values) < OUTLIER_MIN_VALUES or len({s[0] for s, _ in values}) < 2:
        return []
    median = statistics.median(v for _, v in values)
    if median <= 0:
        return []
    mad = statistics.median(abs(v - median) for _, v in values)
    among = f"{model} GPUs" if any(s[1] is not None for s, _ in values) else f"nodes of {model}"
    found: list[FleetFinding] = []
    for subject, value in sorted(values, key=lambda item: _subject_key(item[0])):
        low = value < (1 - OUTLIER_DROP) * median
        z = MAD_SCALE * (value - median) / mad if mad > 0 else None
        if not low or (z is not None and z >= OUTLIER_Z):
            continue
        rule = f"robust z {z:.1f}" if z is not None else "the others agree exactly"
        found.append(
            FleetFinding(
                id="fleet.outlier",
                severity=Severity.FAIL,
                node=subject[0],
                gpu=subject[1],
                message=(
                    f"{_where(subject)} {check_id}: {figure(value)} {unit}, {(1 - value / median):.0%} under the "
                    f"median {figure(median)} {unit} of {len(values)} {among} ({rule})"
                ),
                measured=value,
                expected=median,
            )
        )
    return found


def outliers(nodes: Sequence[NodeReport]) -> list[FleetFinding]:
    """``fleet.outlier`` (fail): a figure of the nodes' verify documents far under the fleet's median.

    Per-GPU figures are grouped by check id and GPU model, node figures (all-reduce, p2p) by check id and the
    node's GPU models; throughputs only (TFLOPS, GB/s: the doctor's count of failing findings and a burn's
    watts are not "higher is better"). A figure is an outlier when its robust z = 0.6745·(x − median)/MAD is
    under −3.5 AND it is more than 10% under the median; with MAD 0 the 10% rule alone. ``measured`` is the
    figure, ``expected`` the fleet's median. A group needs three figures from two nodes at least."""
    found: list[FleetFinding] = []
    for group, values in sorted(_figures(nodes).items()):
        found += _outliers_of(group, values)
    return found


def compare_nodes(nodes: Sequence[NodeReport]) -> list[FleetFinding]:
    """Consistency across the nodes and the outliers of their verify figures, worst first.

    Fail: driver, CUDA driver version, GPU model, GPU count, a GPU's PCIe width or generation unlike its model's
    majority; warn: a GPU's VBIOS unlike its model's majority, torch, NCCL, RDMA NIC count, active NIC port rates
    (a tie is always warn); info:
    NICs whose rates the snapshots do not hold. Then :func:`outliers`."""
    findings: list[FleetFinding] = []
    for finding_id, what, severity, read in _NODE_FIELDS:
        values: dict[Subject, str] = {(n.name, None): value for n in nodes if (value := read(n)) is not None}
        findings += _odd_ones(finding_id, what, severity, values, "nodes")
    if len(nodes) > 1:
        findings += _nic_rates_unknown(nodes)
    findings += _pcie(nodes)
    findings += _vbios(nodes)
    findings += outliers(nodes)
    return sorted(findings, key=sort_key)


# --- the document ------------------------------------------------------------------------------------------


def _owner(rank: MissingRank, nodes: Sequence[NodeReport]) -> str | None:
    """The node a missing rank belongs to: the one that lists it, else the host it said it ran on."""
    for node in nodes:
        if rank.rank in node.ranks:
            return node.name
    return rank.host


def _missing_finding(rank: MissingRank, nodes: Sequence[NodeReport]) -> FleetFinding:
    owner = _owner(rank, nodes)
    on = f" on {owner}" if owner is not None else ""
    last = f"last reached {rank.phase}" if rank.phase is not None else "never checked in"
    died = rank.kind == "died"  # it joined a measurement and stopped answering inside it
    return FleetFinding(
        id="fleet.rank-died" if died else "fleet.missing-rank",
        severity=Severity.FAIL,
        node=owner,
        gpu=None,
        message=(
            f"rank {rank.rank}{on} stopped answering during {rank.phase}: {rank.reason}"
            if died
            else f"rank {rank.rank}{on} did not arrive ({last}): {rank.reason}"
        ),
        measured=rank.phase or "never checked in",
        expected=None,
    )


def _bandwidth(collectives: Iterable[FleetCollective]) -> list[FleetFinding]:
    """``fleet.internode-bandwidth``: a collective's largest size under half of what the NICs can carry (a warning),
    under NETWORK_FRACTION of it (a failure)."""
    largest: dict[str, FleetCollective] = {}
    for row in collectives:
        held = largest.get(row.op)
        if held is None or row.size_bytes > held.size_bytes:
            largest[row.op] = row
    found: list[FleetFinding] = []
    for op, row in sorted(largest.items()):
        expected = num(row.expected_gbps)
        busbw = num(row.busbw_gbps)
        if expected is None or busbw is None or busbw >= INTERNODE_WARN_FRACTION * expected:
            continue
        source = f" ({row.expected_source})" if row.expected_source else ""
        # Under NETWORK_MIN_BYTES (a run cut short) a healthy fabric may not have reached its rate yet: a warning.
        failed = busbw < NETWORK_FRACTION * expected and row.size_bytes >= NETWORK_MIN_BYTES
        found.append(
            FleetFinding(
                id="fleet.internode-bandwidth",
                severity=Severity.FAIL if failed else Severity.WARN,
                node=None,
                gpu=None,
                message=(
                    f"{op} over {row.world_size} ranks reached {busbw:.1f} GB/s bus bandwidth at "
                    f"{row.size_bytes / 2**20:g} MiB, under "
                    f"{NETWORK_FRACTION if failed else INTERNODE_WARN_FRACTION:.0%} of the {expected:.1f} GB/s "
                    f"the nodes' NICs can carry{source}"
                ),
                measured=busbw,
                expected=expected,
            )
        )
    return found


def _wrong_results(collectives: Iterable[FleetCollective]) -> list[FleetFinding]:
    """``fleet.collective-wrong``: sizes at which nccl-tests' own data check counted wrong elements (read with
    ``--from DIR``; a live run's check fails its phase instead). A wrong sum is silent corruption: fail."""
    found: list[FleetFinding] = []
    by_op: dict[str, list[FleetCollective]] = defaultdict(list)
    for row in collectives:
        if row.wrong:
            by_op[row.op].append(row)
    for op, rows in sorted(by_op.items()):
        total = sum(row.wrong or 0 for row in rows)
        sizes = ", ".join(f"{size_text(row.size_bytes)} ({row.wrong})" for row in rows)
        found.append(
            FleetFinding(
                id="fleet.collective-wrong",
                severity=Severity.FAIL,
                node=None,
                gpu=None,
                message=(
                    f"{op} over {rows[0].world_size} ranks gave wrong results: {total} wrong elements at {sizes}; "
                    "a rank's GPU, memory or link corrupts data (run it again per node pair to find which)"
                ),
                measured=total,
                expected=0,
            )
        )
    return found


def _node(report: NodeReport, findings: Sequence[FleetFinding], lost: set[str]) -> FleetNode:
    own = [f for f in report.findings if f.severity is not Severity.OK]
    verify = report.verify.verdict if report.verify is not None else None
    verdict: Verdict = "pass"
    if (
        any(f.node == report.name and f.severity is Severity.FAIL for f in findings)
        or any(f.severity is Severity.FAIL for f in own)
        or verify == "fail"
    ):
        verdict = "fail"
    elif report.name in lost or verify == "incomplete":
        verdict = "incomplete"
    return FleetNode(
        name=report.name,
        ranks=list(report.ranks),
        verdict=verdict,
        gpus=len(report.snapshot.gpus) if report.snapshot is not None else None,
        findings=own,
        verify_verdict=verify,
    )


def slow_fraction(backend: str | None) -> float:
    """The slow-pair fraction for the measurements' backend: CPU processes on gloo are judged more loosely."""
    return CPU_SLOW_FRACTION if backend == "gloo" else SLOW_FRACTION


def fleet_document(
    *,
    nodes: Sequence[NodeReport],
    collectives: Sequence[FleetCollective] = (),
    pairs: Sequence[FleetPair] = (),
    missing: Sequence[MissingRank] = (),
    phases: Sequence[FleetPhase] = (),
    source: Literal["live", "files"],
    launcher: str | None,
    backend: str | None,
    world_size: int | None,
    elapsed_s: float,
    notes: Sequence[str] = (),
    rejected_messages: int | None = None,
    fingerprints: Sequence[FleetFinding] = (),
    timing: Sequence[RankTiming] = (),
    waits: WaitSummary | None = None,
    stragglers: Sequence[FleetFinding] = (),
    stacks: Sequence[StackGroup] = (),
    stuck: Sequence[FleetFinding] = (),
) -> FleetDocument:
    """The fleet's report: each node's verdict, the fleet findings worst first, and the fleet's verdict.

    A node fails when a fail fleet finding names it, one of its own findings fails, or its verify failed; it is
    incomplete when one of its ranks is missing or its verify is incomplete. The fleet fails when any finding
    fails or any node does; it is incomplete when partial (a rank missing, a phase timed out or failed) or a
    node is incomplete; else it passes. Each pair's verdict is restated against the final reference (a pair of
    round 1 was measured before there was one). On NCCL the pairs are also held against what the nodes' NICs
    carry (their snapshots' RDMA ports), the check that sees a fleet slow all over. A live run also hands over
    its per-iteration ``timing`` and ``waits`` with the ``stragglers`` the wait-for analysis named
    (checks/fleet/waits.py), and at a missed deadline the ranks' ``stacks`` grouped, with the ranks ``stuck``
    apart from the waiting majority (checks/fleet/stacks.py)."""
    names = [n.name for n in nodes]
    fraction = slow_fraction(backend)
    ceiling = nic_busbw(nodes)[0] if backend == "nccl" and len(nodes) > 1 and pairs else None
    judgement = search_judgement(pairs, nodes=names, fraction=fraction, ceiling=ceiling)
    reference = judgement.reference
    settled = [p.model_copy(update={"verdict": pair_verdict(p.busbw_gbps, reference, fraction)}) for p in pairs]
    findings = [
        *compare_nodes(nodes),
        *judgement.findings,
        *(_missing_finding(m, nodes) for m in missing),
        *_bandwidth(collectives),
        *_wrong_results(collectives),
        *fingerprints,  # checks/fleet/fingerprint.py's, from the digests rank 0 gathered
        *stragglers,  # checks/fleet/waits.py's, from the per-iteration enter times
        *stuck,  # checks/fleet/stacks.py's, from the stacks at a missed deadline
    ]
    findings.sort(key=sort_key)
    lost = {owner for m in missing if (owner := _owner(m, nodes)) is not None}
    fleet_nodes = [_node(n, findings, lost) for n in nodes]
    # A skipped phase was not wanted (no pairs with one node, --from): only a cut-off one makes the run partial.
    partial = bool(missing) or any(p.status in ("timed_out", "failed") for p in phases)
    verdict: Verdict = "pass"
    if any(f.severity is Severity.FAIL for f in findings) or any(n.verdict == "fail" for n in fleet_nodes):
        verdict = "fail"
    elif partial or any(n.verdict == "incomplete" for n in fleet_nodes):
        verdict = "incomplete"
    return FleetDocument(
        verdict=verdict,
        source=source,
        launcher=launcher,
        backend=backend,
        world_size=world_size,
        elapsed_s=elapsed_s,
        nodes=fleet_nodes,
        findings=findings,
        collectives=list(collectives),
        pairs=settled,
        slow_nodes=judgement.slow,
        slow_links=[list(link) for link in judgement.links],
        missing_ranks=list(missing),
        partial=partial,
        rejected_messages=rejected_messages,
        phases=list(phases),
        notes=list(notes),
        timing=list(timing),
        waits=waits,
        stacks=list(stacks),
    )
