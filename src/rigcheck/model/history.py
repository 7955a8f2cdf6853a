"""``rigcheck.history/1``: what the ledger remembers across runs (``rigcheck history show --json``).

The ledger (:mod:`rigcheck.ledger`) holds the documents ``rigcheck history add`` read and, per GPU, what each run
saw of it; :mod:`rigcheck.checks.history` judges the rows the ledger hands it (:class:`RunRow`,
:class:`SightingRow`, plain data defined here so that the judge needs no database) into a
:class:`HistoryDocument`, drawn by :mod:`rigcheck.report.history`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from pydantic import Field

from rigcheck.model.document import Document, Plain, utc_time

HISTORY_SCHEMA: Final = "rigcheck.history/1"
DAY_S: Final = 86_400.0


def day_number(created_at: str) -> float:
    """A ledger time as days since the epoch (fractional): the x of a trend and of a timeline's chart."""
    return utc_time(created_at).timestamp() / DAY_S


AlertKind = Literal["reissued", "repeat-offender", "drift", "escalation"]

# A run that did not pass its node: verify's fail and incomplete (both exit 1, docs/verdicts.md), doctor's problems.
EXCLUDED_VERDICTS = frozenset({"fail", "incomplete"})


@dataclass(frozen=True)
class RunRow:
    """One document that judged a node: when, which node, its verdict (pass, fail, incomplete, unjudged)."""

    created_at: str  # RFC 3339, UTC, "2025-01-31T00:00:00Z": sorts as text
    node: str
    verdict: str


@dataclass(frozen=True)
class NodeCount:
    """One node's runs in the ledger: how many, how many excluded it, the latest of those."""

    node: str
    runs: int
    excluded: int
    last_excluded: str | None


@dataclass(frozen=True)
class SightingRow:
    """One GPU as one document saw it."""

    created_at: str
    node: str | None
    uuid: str | None
    serial: str | None
    pci_bus_id: str | None
    index: int | None
    verdict: str | None  # null where the document judged no GPU (a snapshot)
    figures: dict[str, float]  # check id -> value (verify's figures: membw, matmul_bf16, ...)

    @property
    def key(self) -> str | None:
        """The GPU across documents and nodes: its UUID, else its board serial (the ledger's key, query.py)."""
        return self.uuid or self.serial


@dataclass(frozen=True)
class XidRow:
    """One Xid code the kernel log of one document (doctor's, a snapshot's) showed on one GPU."""

    created_at: str
    node: str | None
    uuid: str | None
    serial: str | None
    pci_bus_id: str | None
    code: int

    @property
    def key(self) -> str | None:
        """As :attr:`SightingRow.key`."""
        return self.uuid or self.serial


@dataclass(frozen=True)
class TrendRow:
    """One GPU's trend of one figure over its drift window (the Theil-Sen line of checks/history/drift.py), as the
    ledger caches it between runs: the window's first and last run, the fitted level at each, the line's slope."""

    gpu: str  # its UUID, else its board serial
    figure: str  # membw, matmul_bf16, ..., counters
    node: str | None  # where its last run in the window was
    first_at: str
    last_at: str
    points: int  # runs in the window
    days: float  # from the first to the last run
    slope_per_day: float
    start: float  # the fitted level at the first run
    end: float  # ... at the last


class Filters(Plain):
    node: str | None = Field(description="--node: only this node's runs and GPUs")
    gpu: str | None = Field(description="--gpu: only this GPU's timeline and alerts (a UUID or a board serial)")
    since: str | None = Field(description="--since: runs from this time on (RFC 3339, UTC)")


class Rules(Plain):
    """The thresholds the alerts were raised with."""

    repeat_failures: int = Field(description="repeat-offender: this many excluded runs ...")
    repeat_window: int = Field(description="... among the node's last this many runs")
    timeline_limit: int = Field(description="timelines printed at most (the GPUs with the most failures first)")
    drift_window_days: float = Field(description="drift: a GPU's runs of this many days before its last one")
    drift_min_points: int = Field(description="drift: a trend over at least this many runs ...")
    drift_min_days: float = Field(description="... spanning at least this many days")
    drift_drop: float = Field(description="drift: a throughput figure's fitted change over the window, at most this")
    escalation_days: int = Field(
        description="escalation: the same Xid on the same GPU in documents of at least this many distinct days"
    )


class Offender(Plain):
    node: str
    runs: int = Field(description="documents that judged the node")
    excluded: int = Field(description="runs that did not pass it: fail or incomplete")
    share: float = Field(description="excluded / the excluded runs of all nodes (0..1)")
    last_excluded: str = Field(description="the latest excluded run (RFC 3339, UTC)")


class TimelineEntry(Plain):
    created_at: str
    node: str | None
    pci_bus_id: str | None
    index: int | None
    verdict: str | None
    figures: dict[str, float]


class Timeline(Plain):
    gpu: str = Field(description="the GPU's UUID, else its board serial")
    uuid: str | None
    serial: str | None
    failures: int
    nodes: list[str] = Field(description="the nodes it was seen on, first seen first")
    entries: list[TimelineEntry]


class Alert(Plain):
    kind: AlertKind
    node: str
    gpu: str | None = Field(description="the GPU's UUID or serial; null for a node's alert")
    created_at: str = Field(description="when it was raised: the run that showed it")
    message: str


class HistoryDocument(Document):
    """The offenders, the GPUs' timelines and the alerts over what the ledger holds (docs/commands.md)."""

    schema_: Literal["rigcheck.history/1"] = Field(HISTORY_SCHEMA, alias="schema")
    ledger: str = Field(description="the ledger file read")
    filters: Filters
    rules: Rules
    documents: int = Field(description="documents in the ledger")
    runs: int = Field(description="runs that judged a node, after the filters")
    excluded: int = Field(description="of them, runs that did not pass their node")
    offenders: list[Offender] = Field(description="nodes with an excluded run, the most first")
    timelines: list[Timeline]
    alerts: list[Alert]
    notes: list[str]
