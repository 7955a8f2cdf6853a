"""The offenders, the GPUs' timelines and the alerts of `rigcheck history show`.

- offenders: the nodes with an excluded run (fail or incomplete), the most first, with their share of all the
  excluded runs (Lablup's 504-GPU report: 3 of 63 nodes behind more than half of the exclusions);
- ``repeat-offender``: a node excluded in at least ``repeat_failures`` of its last ``repeat_window`` runs: one more
  reboot will not fix a node that keeps failing;
- ``reissued``: a GPU (by UUID, or by board serial) that failed on one node and is then seen on another, raised at
  its first sighting there: the faulty part went back into service instead of to repair;
- ``drift`` (drift.py): a figure trending the wrong way over the drift window (Theil-Sen);
- ``escalation`` (escalation.py): the same Xid after recoveries, row-remap headroom running out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rigcheck.checks.history.drift import (
    DRIFT_DROP,
    DRIFT_MIN_DAYS,
    DRIFT_MIN_POINTS,
    DRIFT_WINDOW_DAYS,
    drift_alerts,
)
from rigcheck.checks.history.escalation import ESCALATION_DAYS, remap_escalations, xid_escalations
from rigcheck.model.history import (
    EXCLUDED_VERDICTS,
    Alert,
    Filters,
    HistoryDocument,
    NodeCount,
    Offender,
    Rules,
    RunRow,
    SightingRow,
    Timeline,
    TimelineEntry,
    TrendRow,
    XidRow,
)

REPEAT_FAILURES = 2  # excluded runs ...
REPEAT_WINDOW = 10  # ... among the last this many: one failure may be a fault, two in ten runs a pattern
TIMELINE_LIMIT = 50


@dataclass(frozen=True)
class Ledger:
    """What the ledger handed over, already narrowed by --since and --node (query.py)."""

    path: str
    documents: int
    counts: Sequence[NodeCount]
    last_runs: Sequence[RunRow]  # the last repeat_window runs of the nodes with an excluded run
    sightings: Sequence[SightingRow]  # every sighting of the GPUs that failed, or were asked for; oldest first
    trends: Sequence[TrendRow] = ()  # each GPU's trend of each figure over its drift window
    remaps: Sequence[SightingRow] = ()  # every sighting with remapped-row counts; oldest first
    xids: Sequence[XidRow] = ()  # every Xid on a GPU; oldest first


def offenders(counts: Sequence[NodeCount]) -> list[Offender]:
    total = sum(c.excluded for c in counts)
    ranked = sorted((c for c in counts if c.excluded), key=lambda c: (-c.excluded, -c.excluded / c.runs, c.node))
    return [
        Offender(
            node=c.node,
            runs=c.runs,
            excluded=c.excluded,
            share=round(c.excluded / total, 4),
            last_excluded=c.last_excluded or "",
        )
        for c in ranked
    ]


def repeat_offenders(runs: Sequence[RunRow], rules: Rules) -> list[Alert]:
    by_node: dict[str, list[RunRow]] = defaultdict(list)
    for run in runs:
        by_node[run.node].append(run)
    alerts = []
    for node, rows in sorted(by_node.items()):
        last = sorted(rows, key=lambda r: r.created_at, reverse=True)[: rules.repeat_window]
        bad = [r for r in last if r.verdict in EXCLUDED_VERDICTS]
        if len(bad) >= rules.repeat_failures:
            alerts.append(
                Alert(
                    kind="repeat-offender",
                    node=node,
                    gpu=None,
                    created_at=bad[0].created_at,
                    message=f"{node} was excluded in {len(bad)} of its last {len(last)} runs (the rule: "
                    f"{rules.repeat_failures} of {rules.repeat_window}); a node that keeps failing needs an "
                    "inspection, not another reboot",
                )
            )
    return alerts


def reissued(sightings: Sequence[SightingRow]) -> list[Alert]:
    """A GPU that failed on a node, seen after on a node where it had not failed: once per GPU and node."""
    failed_on: dict[str, dict[str, str]] = defaultdict(dict)  # gpu -> node -> first failure
    flagged: set[tuple[str, str]] = set()
    alerts = []
    for s in sightings:
        key = s.key
        if key is None or s.node is None:
            continue
        before = failed_on[key]
        if before and s.node not in before and (key, s.node) not in flagged:
            flagged.add((key, s.node))
            where = ", ".join(f"{n} ({t[:10]})" for n, t in before.items())
            alerts.append(
                Alert(
                    kind="reissued",
                    node=s.node,
                    gpu=key,
                    created_at=s.created_at,
                    message=f"GPU {key} failed on {where} and is now on {s.node}"
                    + (f" at {s.pci_bus_id}" if s.pci_bus_id else "")
                    + ": a faulty GPU put back into service; take it out and send it for repair",
                )
            )
        if s.verdict in EXCLUDED_VERDICTS:
            before.setdefault(s.node, s.created_at)
    return alerts


def timelines(sightings: Sequence[SightingRow]) -> list[Timeline]:
    by_gpu: dict[str, list[SightingRow]] = defaultdict(list)
    for s in sightings:
        key = s.key
        if key is not None:
            by_gpu[key].append(s)
    out = []
    for key, rows in by_gpu.items():
        nodes = list(dict.fromkeys(r.node for r in rows if r.node))
        entries = [
            TimelineEntry(
                created_at=r.created_at,
                node=r.node,
                pci_bus_id=r.pci_bus_id,
                index=r.index,
                verdict=r.verdict,
                figures=r.figures,
            )
            for r in rows
        ]
        failures = sum(r.verdict in EXCLUDED_VERDICTS for r in rows)
        out.append(
            Timeline(gpu=key, uuid=rows[0].uuid, serial=rows[0].serial, failures=failures, nodes=nodes, entries=entries)
        )
    out.sort(key=lambda t: (-t.failures, t.gpu))
    return out


def judge_history(ledger: Ledger, filters: Filters, rules: Rules | None = None) -> HistoryDocument:
    rules = rules or Rules(
        repeat_failures=REPEAT_FAILURES,
        repeat_window=REPEAT_WINDOW,
        timeline_limit=TIMELINE_LIMIT,
        drift_window_days=DRIFT_WINDOW_DAYS,
        drift_min_points=DRIFT_MIN_POINTS,
        drift_min_days=DRIFT_MIN_DAYS,
        drift_drop=DRIFT_DROP,
        escalation_days=ESCALATION_DAYS,
    )
    alerts = reissued(ledger.sightings) + repeat_offenders(ledger.last_runs, rules)
    alerts += drift_alerts(ledger.trends) + xid_escalations(ledger.xids, rules.escalation_days)
    alerts += remap_escalations(ledger.remaps)
    lines = timelines(ledger.sightings)
    if filters.node is not None:
        alerts = [a for a in alerts if a.node == filters.node]
        lines = [t for t in lines if filters.node in t.nodes]
    if filters.gpu is not None:
        alerts = [a for a in alerts if a.gpu == filters.gpu]
        lines = [t for t in lines if filters.gpu in (t.uuid, t.serial)]
    shown = len(lines)
    alerts.sort(key=lambda a: (a.created_at, a.kind, a.node))
    notes = []
    if shown > rules.timeline_limit:
        lines = lines[: rules.timeline_limit]
        notes.append(f"{len(lines)} of {shown} GPUs' timelines shown (the most failures first; --gpu for one)")
    if not ledger.documents:
        notes.append("the ledger holds no documents: add some with rigcheck history add PATH...")
    return HistoryDocument(
        ledger=ledger.path,
        filters=filters,
        rules=rules,
        documents=ledger.documents,
        runs=sum(c.runs for c in ledger.counts),
        excluded=sum(c.excluded for c in ledger.counts),
        offenders=offenders(ledger.counts),
        timelines=lines,
        alerts=alerts,
        notes=notes,
    )
