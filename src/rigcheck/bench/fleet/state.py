"""One rank's run of `rigcheck fleet` (rigcheck.bench.fleet.run): its place, clocks, the phases recorded, what rank 0
collects, and the layout rank 0 sends; the test hooks' names. Shared by the runtime's modules."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rigcheck.bench.fleet.auth import KeyPlan
from rigcheck.bench.fleet.env import FleetEnv
from rigcheck.bench.fleet.store import POLL_S, Bounded, Control
from rigcheck.bench.fleet.timeline import Timeline
from rigcheck.errors import BenchError
from rigcheck.model.fleet import (
    FleetCollective,
    FleetFinding,
    FleetPair,
    FleetPhase,
    MissingRank,
    NodeReport,
    PhaseStatus,
    RankTiming,
    StackGroup,
    WaitSummary,
)

SLOW_NODE_VAR: Final = "RIGCHECK_FLEET_TEST_SLOW_NODE"
HANG_RANK_VAR: Final = "RIGCHECK_FLEET_TEST_HANG_RANK"
SIZES_VAR: Final = "RIGCHECK_FLEET_TEST_SIZES"
PAIR_BYTES_VAR: Final = "RIGCHECK_FLEET_TEST_PAIR_BYTES"
JITTER_VAR: Final = "RIGCHECK_FLEET_TEST_JITTER"
SLOW_RANK_VAR: Final = "RIGCHECK_FLEET_TEST_SLOW_RANK"
SKEW_VAR: Final = "RIGCHECK_FLEET_TEST_SKEW"
HOOK_VARS: Final = (SLOW_NODE_VAR, HANG_RANK_VAR, SIZES_VAR, PAIR_BYTES_VAR, JITTER_VAR, SLOW_RANK_VAR, SKEW_VAR)


@dataclass
class Layout:
    """The fleet as rank 0 saw it at the gather: node names (node-rank order), each node's ranks, and each rank's
    host (the ranks of one host share one clock: rigcheck.bench.fleet.clocks)."""

    names: dict[int, str]
    ranks: dict[int, list[int]]
    hosts: dict[int, str] = field(default_factory=dict)  # rank -> host

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [[nr, self.names[nr], self.ranks[nr]] for nr in sorted(self.names)],
            "hosts": [[r, h] for r, h in sorted(self.hosts.items())],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layout:
        return cls(
            names={int(nr): str(name) for nr, name, _ in data["nodes"]},
            ranks={int(nr): [int(r) for r in ranks] for nr, _, ranks in data["nodes"]},
            hosts={int(r): str(h) for r, h in data.get("hosts", [])},
        )

    def ranks_of(self, name: str) -> list[int]:
        return next(self.ranks[nr] for nr, n in self.names.items() if n == name)

    def node_of(self) -> dict[int, str]:
        """Each rank's node name."""
        return {r: self.names[nr] for nr, ranks in self.ranks.items() for r in ranks}


def node_names(hosts: Mapping[int, str]) -> dict[int, str]:
    """Node rank -> name: the hostname, with "#<node rank>" where two nodes share one (two torchrun launches on
    one host are two nodes)."""
    counts: dict[str, int] = {}
    for host in hosts.values():
        counts[host] = counts.get(host, 0) + 1
    return {nr: host if counts[host] == 1 else f"{host}#{nr}" for nr, host in hosts.items()}


def hook_pair(environ: Mapping[str, str], name: str) -> tuple[int, str] | None:
    """A test hook's ``RANK:VALUE`` ("2:40"), the value as text; None when unset or the rank is not a number."""
    rank, _, value = environ.get(name, "").strip().partition(":")
    return (int(rank), value.strip()) if rank.strip().isdigit() else None


def hook_number(environ: Mapping[str, str], name: str, rank: int) -> float:
    """The number a ``RANK:NUMBER`` hook gives this rank; 0 when it names another rank, is unset or not a number."""
    pair = hook_pair(environ, name)
    if pair is None or pair[0] != rank:
        return 0.0
    try:
        return max(0.0, float(pair[1]))
    except ValueError:
        return 0.0


def hook_ints(environ: Mapping[str, str], name: str) -> list[int]:
    """A test hook's comma-separated numbers ("0,2,5"; one number is a list of one); what is not a number is
    left out."""
    items = (item.strip() for item in environ.get(name, "").split(","))
    return [int(item) for item in items if item.lstrip("-").isdigit()]


def _dropped(reasons: list[str]) -> str:
    return f"; rank 0's message there was dropped: {reasons[-1]}" if reasons else ""


@dataclass
class FleetRun:
    """One rank's run: its place, its clocks, the phases recorded, what rank 0 collects."""

    env: FleetEnv
    cpu: bool
    deadline_s: float
    inspect_s: float
    say: Callable[[str], None]
    clock: Callable[[], float]
    environ: Mapping[str, str]
    key: KeyPlan
    bounded: Bounded
    host: str = field(default_factory=socket.gethostname)
    started: float = 0.0
    ctl: Control | None = None
    current: str = "rendezvous"  # the phase this rank is in: where an interruption is recorded
    current_since: float = 0.0
    checkins: dict[int, dict[str, Any]] = field(default_factory=dict)  # rank 0: each rank's sealed check-in
    phases: list[FleetPhase] = field(default_factory=list)
    missing: list[MissingRank] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nodes: list[NodeReport] = field(default_factory=list)
    collectives: list[FleetCollective] = field(default_factory=list)
    pairs: list[FleetPair] = field(default_factory=list)
    fingerprints: list[FleetFinding] = field(default_factory=list)  # rank 0: checks/fleet/fingerprint.py's
    timeline: Timeline = field(default_factory=Timeline)  # what this rank timed, per iteration
    timing: list[RankTiming] = field(default_factory=list)  # rank 0: every rank's, analysed
    waits: WaitSummary | None = None
    stragglers: list[FleetFinding] = field(default_factory=list)  # rank 0: checks/fleet/waits.py's
    stacks: list[StackGroup] = field(default_factory=list)  # rank 0: the ranks' stacks at a deadline, grouped
    stuck: list[FleetFinding] = field(default_factory=list)  # rank 0: checks/fleet/stacks.py's
    watch: Any = None  # this rank's StackWatch (rigcheck.bench.fleet.stacks), from the rendezvous on
    groups: list[Any] = field(default_factory=list)  # measurement groups to destroy
    backend: str = "gloo"
    inspected_s: float = 0.0  # how long this node's inspection took (rank 0 records it for the fleet)

    @property
    def lead(self) -> bool:
        return self.env.rank == 0

    @property
    def control(self) -> Control:
        assert self.ctl is not None, "the store is open from the rendezvous on"
        return self.ctl

    def record(self, name: str, status: PhaseStatus, since: float, deadline: float | None, reason: str | None) -> None:
        self.phases.append(
            FleetPhase(name=name, status=status, elapsed_s=self.clock() - since, deadline_s=deadline, reason=reason)
        )

    def skip(self, name: str, reason: str) -> None:
        self.phases.append(FleetPhase(name=name, status="skipped", elapsed_s=0.0, deadline_s=None, reason=reason))

    def mark(self, phase: str) -> None:
        """Where this rank is, for rank 0 to name if it goes quiet."""
        if phase != self.current:
            self.current, self.current_since = phase, self.clock()
        self.control.put(f"phase/{self.env.rank}", {"phase": phase, "host": self.host})

    def await_lead(self, key: str, what: str, allowance: float) -> Any:
        """A non-zero rank waits for rank 0's word; BenchError when it does not come within ``allowance``."""
        try:
            value = self.control.await_key(key, self.clock() + allowance)
        except BenchError as exc:  # the store went: say too what this rank could not open before
            dropped = [why for where, why in self.control.rejections() if where == key]
            raise BenchError(f"{exc}{_dropped(dropped)}") from None
        if value is None:
            dropped = [why for where, why in self.control.rejections() if where == key]
            raise BenchError(
                f"rank {self.env.rank}: no word from rank 0 within {allowance:g} s ({what}){_dropped(dropped)}"
            )
        return value

    def sleep(self) -> None:
        time.sleep(POLL_S)

    def host_of(self, rank: int) -> str | None:
        return str(self.checkins.get(rank, {}).get("host") or "") or None

    def lost(self, rank: int, reason: str, *, phase: str | None = None, died: bool = False) -> None:
        """Rank 0 names a rank that went missing: in ``phase``, else the last phase it said it reached
        (``died``: it stopped answering inside a measurement it had joined)."""
        try:
            last = self.control.read_if(f"phase/{rank}")
        except BenchError:  # the store itself is lost: name the rank with what its check-in said
            last = None
        last = last if isinstance(last, dict) else {}
        self.missing.append(
            MissingRank(
                rank=rank,
                host=str(last.get("host") or self.host_of(rank) or "") or None,
                phase=phase or (str(last["phase"]) if last.get("phase") else None),
                reason=reason,
                kind="died" if died else "missing",
            )
        )
