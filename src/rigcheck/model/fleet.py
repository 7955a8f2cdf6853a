"""``rigcheck.fleet/1``: the same verdict over many nodes (`rigcheck fleet`), and what each node sends to rank 0.

A :class:`NodeReport` is one node's own inspection (its snapshot, its doctor findings, optionally its
`verify` document), made by the node and gathered by rank 0 — or read from a saved file with ``--from DIR``.
Rank 0 compares them (``rigcheck.checks.fleet.judge``: consistency across nodes, outliers by median/MAD, the slow
node named from pairwise rounds) into a :class:`FleetDocument`, drawn by ``rigcheck.report.fleet``.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from rigcheck.model.absent import absent_unless_set
from rigcheck.model.bench import Count
from rigcheck.model.document import Document, Plain
from rigcheck.model.finding import Finding, Severity
from rigcheck.model.snapshot import Snapshot
from rigcheck.model.verify import Verdict, VerifyDocument

FLEET_SCHEMA: Final = "rigcheck.fleet/1"

PhaseStatus = Literal["done", "timed_out", "failed", "skipped"]
PairVerdict = Literal["ok", "slow", "failed"]


class NodeReport(Plain):
    """One node's inspection as it reaches rank 0 (over the c10d store) or as read from a saved file."""

    name: str = Field(description="the node's name: its hostname, made unique with its node rank where shared")
    node_rank: int | None = Field(description="torchrun's GROUP_RANK / Slurm's SLURM_NODEID; null from files")
    ranks: list[int] = Field(description="the global ranks that ran on this node")
    snapshot: Snapshot | None = Field(description="null when the saved file was a verify document alone")
    findings: list[Finding] = Field(description="the doctor's findings on this node (empty without a snapshot)")
    verify: VerifyDocument | None = Field(description="`verify` of this node (--verify quick, or a saved one)")
    versions: dict[str, str | None] = Field(description="software as the node's ranks import it: torch, nccl, python")
    source: str = Field(description="'live', or the file it was read from")


class FleetNode(Plain):
    """One node in the fleet's report."""

    name: str
    ranks: list[int]
    verdict: Verdict = Field(description="fail: a fleet finding or one of its own fails; incomplete: missing ranks")
    gpus: int | None = Field(description="GPUs the node reported; null when unknown")
    findings: list[Finding] = Field(description="the node's own doctor findings that are not ok")
    verify_verdict: Verdict | None = Field(description="its `verify` verdict; null when verify did not run")


class FleetFinding(Plain):
    """A finding about the fleet: a node (or a GPU of it) unlike the others, slow, or missing."""

    id: str = Field(description='"fleet.driver", "fleet.gpu-count", "fleet.pcie-width", "fleet.outlier", ...')
    severity: Severity
    node: str | None
    gpu: int | None
    message: str
    measured: str | float | None = Field(description="this node's (or GPU's) value")
    expected: str | float | None = Field(description="the fleet's: the majority value, or the median")


class FleetCollective(Plain):
    """One size of a collective over the whole fleet (nccl-tests' formulas)."""

    op: str
    size_bytes: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    world_size: int
    backend: str
    expected_gbps: float | None = Field(description="what the nodes' NICs can carry, as bus bandwidth")
    expected_source: str | None
    wrong: Count | None = absent_unless_set(
        "read from nccl-tests output (--from DIR): the wrong elements it counted at this size, out-of-place and "
        "in-place; absent where it did not check (-c 0) and on a live run, whose check fails the phase instead"
    )


class FleetPair(Plain):
    """One pair of nodes in one round of the slow-node search: an all-reduce over the two nodes' ranks."""

    round: int
    a: str
    b: str
    busbw_gbps: float | None = Field(description="null when the pair's measurement failed")
    time_us: float | None
    verdict: PairVerdict


class MissingRank(Plain):
    """A rank that did not arrive by a phase's deadline, or stopped answering inside a measurement."""

    rank: int
    host: str | None = Field(description="where it ran, when it said so before going quiet")
    phase: str | None = Field(description="the last phase it reached; null when it never checked in")
    reason: str
    kind: Literal["missing", "died"] = Field(
        "missing",
        description=(
            "missing: it did not reach a phase's meeting point by the deadline (fleet.missing-rank); died: it "
            "joined a measurement (collectives, pairs) and stopped answering inside it (fleet.rank-died)"
        ),
    )
    stack: str | None = absent_unless_set(
        "where it was when rank 0 asked every rank for its Python stack at the deadline: its innermost rigcheck "
        "frame and the innermost frame ('_hang_here (rigcheck/bench/fleet/run.py:141) > sleep'); absent when no "
        "stack was asked for"
    )
    stack_source: str | None = absent_unless_set(
        "how the stack was had ('its own thread', 'faulthandler, signalled by rank 0'), or why it could not be "
        "('not obtained: ...'); absent when no stack was asked for"
    )


class RankTiming(Plain):
    """One rank's per-iteration timing: its own iteration times at the collectives' largest size, and what the
    wait-for analysis (checks/fleet/waits.py) found of it over every timed iteration (collectives and pairs)."""

    rank: int
    node: str | None
    size_bytes: int | None = Field(description="the size the iteration times are of: the collectives' largest")
    iterations: int = Field(description="timed iterations at that size")
    mean_us: float | None
    p50_us: float | None
    p99_us: float | None = Field(description="nearest rank: with 5 or 20 iterations, the slowest")
    spikes: int = Field(description="iterations over 1.5x this rank's mean at that size")
    clock_offset_us: float | None = Field(
        description="what is added to this rank's clock to read rank 0's: 0 on rank 0's host (one clock), else "
        "estimated at the start (NTP-style midpoint of the quickest of a few round trips); null when unknown"
    )
    analysed: int = Field(description="iterations of every timed collective it took part in")
    last: int = Field(description="iterations it entered last by more than the margin: the one the others waited for")
    late: int = Field(description="iterations it entered late by more than the margin, last or not")
    late_p50_us: float | None = Field(description="its median lateness in those iterations")
    late_max_us: float | None


class WaitSummary(Plain):
    """What the wait-for analysis measured against: its noise, its margin, how much it read."""

    iterations: int = Field(description="timed iterations analysed, over every collective")
    series: int = Field(description="timed collectives analysed (each size, each pair of each round)")
    noise_us: float = Field(description="the spread of healthy arrivals: 1.4826 x the MAD of every lateness")
    margin_us: float = Field(description="lateness above which a rank is late: max(floor, k x noise)")
    clock: str = Field(description="how the ranks' clocks were put on rank 0's")


class StackGroup(Plain):
    """Ranks whose Python stacks, asked for at a deadline, stand at the same place (phase and rigcheck frame)."""

    ranks: list[int]
    nodes: list[str]
    phase: str | None = Field(description="the phase the ranks were in")
    site: str = Field(
        description="the innermost rigcheck frame that is not a wait on the store: 'function (file:line)'"
    )
    frame: str = Field(description="the innermost frame of all (a torch call, a sleep)")
    doing: str | None = Field(
        description="the collective in progress, where one was ('all_reduce of 4 KiB, iteration 3')"
    )
    via: str = Field(description="'thread' (the rank answered) or 'signal' (faulthandler, signalled on its host)")
    waiting: bool = Field(description="the dominant group: the waiting majority; the others are named")


class FleetPhase(Plain):
    name: str = Field(description="rendezvous, inspect, gather, fingerprint, collectives, pairs, report")
    status: PhaseStatus
    elapsed_s: float
    deadline_s: float | None
    reason: str | None


class FleetDocument(Document):
    """`rigcheck fleet --json`, printed by rank 0 (or by `fleet --from DIR`)."""

    schema_: Literal["rigcheck.fleet/1"] = Field(FLEET_SCHEMA, alias="schema")
    verdict: Verdict
    source: Literal["live", "files"]
    launcher: str | None = Field(description="torchrun, slurm, or null with --from")
    backend: str | None = Field(description="the measurements' backend: nccl, or gloo with --cpu")
    world_size: int | None
    elapsed_s: float
    nodes: list[FleetNode]
    findings: list[FleetFinding]
    collectives: list[FleetCollective]
    pairs: list[FleetPair]
    slow_nodes: list[str]
    slow_links: list[list[str]] = absent_unless_set(
        "pairs of nodes slow together though each is fine with other nodes: the link between them (switch port, "
        "cable, routing), each as its two node names; absent when none",
        empty=[],
    )
    missing_ranks: list[MissingRank]
    partial: bool = Field(description="a rank went missing or a phase timed out: the rest is still reported")
    rejected_messages: int | None = Field(
        None,
        description=(
            "live runs: messages rank 0 read from the job's store and dropped, each counted once: not sealed with "
            "the job's key (a stranger's write), not JSON, of another job, or replayed (the notes say which key "
            "and why); null with --from"
        ),
    )
    phases: list[FleetPhase]
    notes: list[str]
    created_at: str | None = absent_unless_set(
        "live runs: when rank 0 wrote the document, RFC 3339 in UTC (2025-01-31T06:00:00Z): what dates it in the "
        "ledger (`rigcheck history`); absent with --from"
    )
    timing: list[RankTiming] = absent_unless_set(
        "live runs: each rank's per-iteration timing and what the wait-for analysis found of it; absent when "
        "nothing was timed",
        empty=[],
    )
    waits: WaitSummary | None = absent_unless_set("live runs: what the wait-for analysis measured against")
    stacks: list[StackGroup] = absent_unless_set(
        "live runs with a deadline missed: the ranks' Python stacks grouped by where they stood, the waiting "
        "majority first; absent when none was asked for",
        empty=[],
    )
