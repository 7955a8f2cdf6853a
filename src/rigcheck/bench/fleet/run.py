"""The runtime of `rigcheck fleet`: one process per GPU under torchrun or srun, each node inspecting itself, rank 0
comparing them, on torch.distributed (no transport of rigcheck's own).

Phases, each recorded as a FleetPhase on rank 0, each with a deadline (``deadline_s``) so nothing hangs:

- **rendezvous** (rigcheck.bench.fleet.meet): the job's c10d store (rigcheck.bench.fleet.store), the job's key
  (rigcheck.bench.fleet.auth: every message sealed, what does not open dropped and counted), every rank checks
  in (``rank/<r>``: host, node rank, local rank, pid); rank 0 waits for all of them, then everyone joins a gloo
  process group (control: barriers, the reduction of times). Ranks missing at the deadline are named; nothing
  else runs.
- **inspect**: local rank 0 of each node calls ``inspect()`` (the CLI's: probe, doctor checks, optional verify)
  while the node's other ranks wait idle: no rank has touched a GPU yet (the NCCL group and ``set_device`` come
  after), so a verify on the node has its GPUs to itself. Bounded by ``inspect_s``, not by ``deadline_s``. A
  node whose inspection raises a RigcheckError is left out of the nodes and fails the phase (its reason).
- **gather**: each node's local rank 0 writes its NodeReport (``node/<node rank>``), every rank says it arrived;
  rank 0 polls the store until every rank did or ``deadline_s`` after its own inspect (the other nodes inspect
  at the same time). A rank that never arrived is a MissingRank: its host and the last phase it wrote
  (``phase/<r>``). Rank 0 then writes the layout (nodes, their names and ranks) and whether to measure: only when
  every rank arrived. A node's name is its hostname, with ``#<node rank>`` where two nodes share one.
- **fingerprint**: every rank hashes the same seeded workload on its device (rigcheck.bench.fingerprint, with the
  float64 reference) and writes its row; rank 0 gathers them (``fingerprint/<r>``) and compares identical GPUs
  across the nodes bit for bit (checks/fleet/fingerprint.py): one gather, no re-run.
- **collectives**: first the clocks (rigcheck.bench.fleet.clocks: one per host; each other host's offset to rank 0's
  from a few round trips), then all-reduce over the whole world across ``sizes`` (rigcheck.bench.fleet.rounds) on
  gloo (``cpu``) or a NCCL group (each rank on GPU ``local_rank``), the time being the slowest rank's; each rank
  keeps every timed iteration's enter time and time (rigcheck.bench.fleet.timeline).
- **pairs** (two nodes or more): rounds planned by rank 0 with checks.fleet.plan_round, sent through the store
  (``round/<n>``); all the pairs of a round measured at once, each on its own group; stops when plan_round plans
  nothing, wants_more says the search is over, or the deadline would be overrun.
- **report**: every rank sends what it timed (``timing/<rank>``), rank 0 runs the wait-for analysis
  (rigcheck.bench.fleet.waiting, checks/fleet/waits.py: the rank the others wait for, ``fleet.straggler``), builds
  the document (checks.fleet.fleet_document) and sends the fleet's verdict to every rank (``end``), so each rank
  can exit as rank 0 does.

From the rendezvous on every rank runs a stack watch (rigcheck.bench.fleet.stacks): when a deadline passes with
ranks missing, rank 0 asks every rank for its Python stack (a silent one is signalled on its host: faulthandler),
groups them and names the ranks apart from the waiting majority (``fleet.stuck-rank``).

A failing or timed-out measurement marks its phase and the report still comes out; a rank that joined a
measurement and never reported its end is named as died there (``fleet.rank-died``). The process groups are
always destroyed. Ctrl-C / SIGTERM (KeyboardInterrupt) ends a rank at once (torchrun stops the others); rank 0
first builds the document so far, the phase it cut marked failed, for the CLI to print. Under a launcher, a
rank whose launcher died (its parent changed) exits: no rank outlives a killed torchrun.

Test hooks, read from the environment and inert unless set (the tests use them; never set them otherwise):
``RIGCHECK_FLEET_TEST_SLOW_NODE=<node rank>[,<node rank>...]`` makes those nodes' ranks late in each timed
all-reduce by ``SLOW_SCALE`` times their fastest one (``SLOW_EXTRA_S`` at least; rigcheck.bench.fleet.rounds):
the nodes are slow for real, on CPU as on GPUs. ``RIGCHECK_FLEET_TEST_SLOW_RANK=<rank>:<pct>`` and
``RIGCHECK_FLEET_TEST_JITTER=<rank>:<ms>`` make one rank late every iteration by a share of its fastest all-reduce
(a slow GPU), or at random iterations by up to ``ms`` (a jittery NIC); ``RIGCHECK_FLEET_TEST_SKEW=<rank>:<ms>``
makes its clock read later, as on another host (rigcheck.bench.fleet.clocks).
``RIGCHECK_FLEET_TEST_HANG_RANK=<rank>[:collectives]`` makes that rank stop before the gather phase (or before
the collectives' first all-reduce) and sleep until it is killed, its stack watch mute, so the deadline must name
it and its stack comes by the signal.
``RIGCHECK_FLEET_TEST_SIZES=<bytes>[,<bytes>...]`` and ``RIGCHECK_FLEET_TEST_PAIR_BYTES=<bytes>`` replace the
collectives' sizes and the pairs' size, so a test of many processes on a small machine stays short.

torch is imported lazily (through the modules this one calls).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from pydantic import ValidationError

from rigcheck.bench.env import require_torch
from rigcheck.bench.fingerprint import compute_row, deterministic, make_payload
from rigcheck.bench.fleet import waiting
from rigcheck.bench.fleet.auth import KeyPlan, plan_key
from rigcheck.bench.fleet.clocks import exchange, skewed_clock
from rigcheck.bench.fleet.env import FleetEnv
from rigcheck.bench.fleet.meet import rendezvous, sealing_note
from rigcheck.bench.fleet.rounds import (
    CPU_PAIR_BYTES,
    GPU_PAIR_BYTES,
    PairFigure,
    Rig,
    default_sizes,
    measure_pairs,
    measure_world,
    one_line,
    pair_busbw,
    status_of,
)
from rigcheck.bench.fleet.stacks import StackWatch, collect
from rigcheck.bench.fleet.state import (
    HANG_RANK_VAR,
    JITTER_VAR,
    PAIR_BYTES_VAR,
    SIZES_VAR,
    SKEW_VAR,
    SLOW_NODE_VAR,
    SLOW_RANK_VAR,
    FleetRun,
    Layout,
    hook_ints,
    hook_number,
    hook_pair,
    node_names,
)
from rigcheck.bench.fleet.store import Bounded
from rigcheck.checks.fleet.collectives import nic_busbw
from rigcheck.checks.fleet.fingerprint import fingerprint_findings
from rigcheck.checks.fleet.judge import (
    fleet_document,
    pair_verdict,
    plan_round,
    reference_busbw,
    slow_fraction,
    wants_more,
)
from rigcheck.errors import BenchError, RigcheckError, UsageError, signal_name, signal_of
from rigcheck.model.document import utc_now
from rigcheck.model.fingerprint import FingerprintRow
from rigcheck.model.fleet import FleetDocument, FleetPair, FleetPhase, NodeReport, PhaseStatus
from rigcheck.model.verify import Verdict

SLOW_EXTRA_S: Final = 0.02  # the slow node's least lateness per all-reduce (the first, with nothing to scale by)
# ... and its lateness as a multiple of its fastest all-reduce: a slow node's pairs then take 4x a healthy one's
# time or more, under CPU_SLOW_FRACTION (half) of the reference whatever the size and the machine's load.
SLOW_SCALE: Final = 3.0
BYE_S: Final = 10.0  # rank 0 keeps the store up this long at most for the others' last reads
ORPHAN_POLL_S: Final = 1.0
SHOWN_REJECTIONS: Final = 5  # the dropped messages the notes name one by one


def _watch_parent() -> None:
    """Exit when the launcher that started this rank is gone (killed outright: it cannot stop us itself)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(ORPHAN_POLL_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="rigcheck-fleet-orphan-watch", daemon=True).start()


def _need_gpu(env: FleetEnv, cpu: bool) -> None:
    """Without ``cpu``, each rank measures on GPU ``local_rank``: say so at once when it has none (before the
    rendezvous, so the job stops with this line rather than at a deadline)."""
    torch: Any = require_torch()
    if cpu:
        return
    count = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    if count <= env.local_rank:
        raise UsageError(
            f"rank {env.rank} runs on GPU {env.local_rank} (its local rank), but torch sees {count} GPU(s) here; "
            "run one process per GPU, or add --cpu to measure CPU processes with gloo"
        )


# --- the phases ----------------------------------------------------------------------------------------


def _inspect(run: FleetRun, inspect: Callable[[], NodeReport]) -> dict[str, Any] | None:
    """Local rank 0 inspects its node: the report as JSON data, or the error it raised."""
    run.mark("inspect")
    if run.env.local_rank != 0:
        return None
    since = run.clock()
    try:
        report = inspect()
    except RigcheckError as exc:  # a node that cannot be inspected is reported, not fatal to the fleet
        payload: dict[str, Any] = {"error": " ".join(str(exc).split())}
    else:
        payload = {"report": report.model_dump(mode="json", by_alias=True)}
    run.inspected_s = run.clock() - since
    return payload


def _hang_here(run: FleetRun, where: str = "gather") -> None:
    """The test hook: this rank stops before the gather (``RANK``) or before the collectives' first all-reduce
    (``RANK:collectives``) and sleeps until it is killed, its stack watch mute (as a process whose interpreter is
    stuck: its stack comes by the signal, rigcheck.bench.fleet.stacks)."""
    hooked = hook_pair(run.environ, HANG_RANK_VAR)
    if hooked is not None and hooked[0] == run.env.rank and (hooked[1] or "gather") == where:
        if run.watch is not None:
            run.watch.mute = True
        while True:
            time.sleep(60)


def _gather(run: FleetRun, payload: dict[str, Any] | None) -> Layout | None:
    """Reports to rank 0; rank 0 names who never arrived and sends the layout (None: do not measure)."""
    env, ctl = run.env, run.control
    run.mark("gather")
    if payload is not None:
        ctl.put(f"node/{env.node_rank}", payload)
    ctl.put(f"arrived/{env.rank}", True)
    ctl.bump("arrived")
    if not run.lead:
        allowance = run.inspect_s + 2 * run.deadline_s
        decision = run.await_lead("layout", "the gather", allowance)
        return Layout.from_json(decision) if decision.get("go") else None
    since = run.clock()
    arrived = ctl.await_keys([f"arrived/{r}" for r in range(env.world_size)], since + run.deadline_s, hint="arrived")
    records = run.checkins
    absent = {r for r in range(env.world_size) if f"arrived/{r}" not in arrived}
    for rank in sorted(absent):
        run.lost(rank, f"did not reach the gather within {run.deadline_s:g} s")
    hosts = {int(rec["node_rank"]): str(rec["host"]) for rec in records.values()}
    layout = Layout(
        names=node_names(hosts),
        ranks={nr: [] for nr in hosts},
        hosts={rank: str(rec["host"]) for rank, rec in records.items()},
    )
    for rank, rec in sorted(records.items()):
        layout.ranks[int(rec["node_rank"])].append(rank)
    failures = _collect_reports(run, layout)
    run.phases.append(
        FleetPhase(
            name="inspect",
            status="failed" if failures else "done",
            elapsed_s=run.inspected_s,  # rank 0's node's; the others inspect at the same time
            deadline_s=None,
            reason="; ".join(failures) or None,
        )
    )
    go = not absent
    if absent:
        _stacks(run, "the gather", sorted(absent), sys._getframe())
    run.record(
        "gather",
        "done" if go else "timed_out",
        since,
        run.deadline_s,
        None if go else f"{len(absent)} rank(s) missing at the deadline",
    )
    ctl.put("layout", {"go": go, **layout.to_json()})
    return layout if go else None


def _collect_reports(run: FleetRun, layout: Layout) -> list[str]:
    """Rank 0: every node's report that arrived, named and given its ranks; the inspections that failed."""
    failures = []
    for nr, name in sorted(layout.names.items()):
        payload = run.control.read_if(f"node/{nr}")
        if payload is None:
            continue  # its local rank 0 is missing: named there
        try:
            if "error" in payload:
                failures.append(f"{name}: {' '.join(str(payload['error']).split())}")
                continue
            report = NodeReport.model_validate(payload["report"])
        except (TypeError, KeyError, ValidationError):  # sealed, yet not a report: dropped, never a crash
            run.control.reject(f"node/{nr}", repr(payload).encode(), "a node report that does not parse")
            failures.append(f"{name}: its report did not parse")
            continue
        run.nodes.append(report.model_copy(update={"name": name, "node_rank": nr, "ranks": layout.ranks[nr]}))
    return failures


def _measurement_rig(run: FleetRun) -> tuple[Rig, Any]:
    """The rig and the group over the whole world for the measurements: gloo's default group with ``cpu``, else
    a NCCL group with this rank on GPU ``local_rank``."""
    torch: Any = require_torch()
    import torch.distributed as dist

    rank = run.env.rank
    slow = run.env.node_rank in hook_ints(run.environ, SLOW_NODE_VAR)
    late = (SLOW_EXTRA_S, SLOW_SCALE) if slow else (0.0, 0.0)
    jitter_s = hook_number(run.environ, JITTER_VAR, rank) / 1e3
    hooks: dict[str, Any] = {
        "slow_pct": hook_number(run.environ, SLOW_RANK_VAR, rank),
        "jitter_s": jitter_s,
        "jitter": random.Random(f"rigcheck-fleet-jitter-{rank}") if jitter_s > 0 else None,
        "clock": skewed_clock(hook_number(run.environ, SKEW_VAR, rank) / 1e3),
        "doing": run.watch.note if run.watch is not None else (lambda _what: None),
    }
    if run.cpu:
        return Rig("gloo", torch.device("cpu"), *late, **hooks), None
    # Without this, torchrun's default (1: tear down) kills the process when a NCCL operation times out, and
    # rank 0 could not report; 2 (clean up only) aborts the communicator and lets the operation raise.
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "2"
    torch.cuda.set_device(run.env.local_rank)
    group = dist.new_group(backend="nccl", timeout=timedelta(seconds=run.deadline_s))
    run.groups.append(group)
    run.backend = "nccl"
    return Rig("nccl", torch.device("cuda", run.env.local_rank), *late, **hooks), group


def _fingerprint(run: FleetRun, rig: Rig, layout: Layout) -> None:
    """Every rank hashes the same seeded workload on its device (with the float64 reference: a fleet does not
    re-run) and writes its row; rank 0 gathers them by the deadline and compares identical GPUs across the nodes
    (checks/fleet/fingerprint.py). A rank whose row does not come is named by the collectives that follow."""
    env, ctl = run.env, run.control
    run.mark("fingerprint")
    since = run.clock()
    torch: Any = require_torch()
    try:
        payload = make_payload(cpu=run.cpu, reference=True, environ=run.environ)
        with deterministic(torch, rig.device):
            row: dict[str, Any] = {"row": compute_row(torch, rig.device, payload, env.rank).model_dump()}
    except (RuntimeError, UsageError) as exc:  # a CUDA error, or a test hook that does not parse
        row = {"error": f"rank {env.rank}: {one_line(exc)}"}
    ctl.put(f"fingerprint/{env.rank}", row)
    ctl.bump("fingerprint")
    if not run.lead:
        return
    keys = [f"fingerprint/{r}" for r in range(env.world_size)]
    found = ctl.await_keys(keys, since + run.deadline_s, hint="fingerprint")
    rows: list[FingerprintRow] = []
    errors: list[str] = []
    for key, value in found.items():
        try:
            if "error" in value:
                errors.append(str(value["error"]))
                continue
            rows.append(FingerprintRow.model_validate(value["row"]))
        except (TypeError, KeyError, ValidationError):  # sealed, yet not a row: dropped, never a crash
            ctl.reject(key, repr(value).encode(), "a fingerprint row that does not parse")
            errors.append(f"{key}: its row did not parse")
    node_of = {r: layout.names[nr] for nr, ranks in layout.ranks.items() for r in ranks}
    run.fingerprints, note = fingerprint_findings(rows, node_of)
    if note is not None:
        run.notes.append(note)
    late = [r for r in range(env.world_size) if f"fingerprint/{r}" not in found]
    if late:
        _stacks(run, "the fingerprint", late, sys._getframe())
    status: PhaseStatus = "done"
    reason = "; ".join(errors) or None
    if late:
        status, reason = "timed_out", f"rank(s) {_ranks(late)} gave no fingerprint within {run.deadline_s:g} s"
    elif errors:
        status = "failed"
    run.record("fingerprint", status, since, run.deadline_s, reason)


def _collectives(run: FleetRun, rig: Rig, group: Any, sizes: Sequence[int], layout: Layout) -> bool:
    """The clocks' offsets (rigcheck.bench.fleet.clocks), then the whole world's all-reduce; whether every rank came
    through (rank 0 decides, through the store)."""
    env, ctl = run.env, run.control
    run.mark("collectives")
    since = run.clock()
    ok = True
    reason: str | None = None
    status: PhaseStatus = "done"
    try:
        _hang_here(run, "collectives")
        rig.doing("the clocks' round trips with rank 0")
        run.timeline.offset_s = exchange(env.rank, sorted(set(waiting.clock_leaders(run, layout).values())), rig.clock)
        result = measure_world(
            rig, group, sizes, world_size=env.world_size, until=since + run.deadline_s, clock=run.clock, say=run.say
        )
        run.collectives, status, reason = result.rows, result.status, result.reason
        run.timeline.timed += result.timed
        ok = status != "failed"
    except RuntimeError as exc:  # the barrier or the reduction failed: this rank cannot go on measuring
        status, reason, ok = status_of(exc), f"rank {env.rank}: {one_line(exc)}", False
    finally:
        rig.doing("")  # out of the collective: its stack says where it waits next
    ctl.put(f"done/collectives/{env.rank}", {"ok": ok, "reason": reason})
    ctl.bump("done/collectives")
    if not run.lead:
        return bool(run.await_lead("go/pairs", "after the collectives", 2 * run.deadline_s))
    keys = [f"done/collectives/{r}" for r in range(env.world_size)]
    found = ctl.await_keys(keys, run.clock() + run.deadline_s, hint="done/collectives")
    reports = {r: rep for r, key in enumerate(keys) if isinstance(rep := found.get(key), dict)}
    failed = [(r, rep) for r, rep in sorted(reports.items()) if rep.get("ok") is not True]
    if failed and status == "done":
        status, reason = "failed", str(failed[0][1].get("reason"))
    gone = [r for r in range(env.world_size) if r not in reports]
    _name_the_dead(run, gone, "collectives", reason)
    came = not gone
    if not came:
        status, reason = "failed", f"rank(s) {_ranks(gone)} stopped answering during the collectives"
    expected, source = nic_busbw(run.nodes) if rig.cuda and len(run.nodes) > 1 else (None, None)
    run.collectives = [
        c.model_copy(update={"expected_gbps": expected, "expected_source": source}) for c in run.collectives
    ]
    run.record("collectives", status, since, run.deadline_s, reason)
    go = came and not failed
    ctl.put("go/pairs", go)
    return go


def _pairs(run: FleetRun, rig: Rig, layout: Layout) -> None:
    """Rounds of pairs planned by rank 0; every rank measures its pair (or waits, the odd node out) and says how
    it went, so rank 0 plans the next round only when every rank came through the last one."""
    env, ctl = run.env, run.control
    run.mark("pairs")
    since = run.clock()
    until = since + run.deadline_s
    size = next(iter(hook_ints(run.environ, PAIR_BYTES_VAR)), GPU_PAIR_BYTES if rig.cuda else CPU_PAIR_BYTES)
    names = [layout.names[nr] for nr in sorted(layout.names)]
    round_no = 1
    status: PhaseStatus = "done"
    reason: str | None = None
    last_round_s = 0.0
    while True:
        if run.lead:
            fraction = slow_fraction(run.backend)
            more = status == "done" and _more(run, names, round_no)
            plan = plan_round(names, round_no, run.pairs, fraction=fraction) if more else []
            if plan and run.clock() + last_round_s > until:
                status, reason, plan = "timed_out", f"round {round_no} would overrun the deadline", []
            ctl.put(f"round/{round_no}", [list(p) for p in plan])
        else:
            wait = f"pairs round {round_no}"
            plan = [(str(a), str(b)) for a, b in run.await_lead(f"round/{round_no}", wait, 2 * run.deadline_s)]
        if not plan:
            break
        round_started = run.clock()
        ranks = [sorted(layout.ranks_of(a) + layout.ranks_of(b)) for a, b in plan]
        error: str | None = None
        failed_as: PhaseStatus = "failed"
        figures: list[PairFigure] = []
        labels = [f"pairs round {round_no}: {a} + {b}" for a, b in plan]
        try:
            result = measure_pairs(
                rig, ranks, rank=env.rank, size_bytes=size, timeout_s=until - run.clock(), labels=labels
            )
            figures = result.figures
            if result.timed is not None:
                run.timeline.timed.append(result.timed)
        except RuntimeError as exc:  # a group, the barrier or the reduction failed: reported, the rounds stop
            error, failed_as = f"round {round_no}, rank {env.rank}: {one_line(exc)}", status_of(exc)
        finally:
            rig.doing("")
        ctl.put(f"round/{round_no}/done/{env.rank}", error)
        ctl.bump(f"round/{round_no}/done")
        last_round_s = run.clock() - round_started
        if run.lead:
            keys = [f"round/{round_no}/done/{r}" for r in range(env.world_size)]
            found = ctl.await_keys(keys, run.clock() + run.deadline_s, hint=f"round/{round_no}/done")
            errors = [str(e) for key in keys if (e := found.get(key))]
            gone = [r for r, key in enumerate(keys) if key not in found]
            _name_the_dead(run, gone, "pairs", error or next(iter(errors), None))
            came = not gone
            if error is not None:
                status, reason = failed_as, error
            elif errors:
                status, reason = "failed", str(errors[0])
            elif not came:
                status, reason = "failed", f"rank(s) {_ranks(gone)} stopped answering in round {round_no}"
            else:
                _add_round(run, round_no=round_no, plan=plan, ranks=ranks, figures=figures, size=size)
        round_no += 1
    if run.lead:
        run.record("pairs", status, since, run.deadline_s, reason)


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks)


def _name_the_dead(run: FleetRun, ranks: Sequence[int], phase: str, seen: str | None) -> None:
    """Rank 0 names the ranks that joined a measurement and never said how it went (killed, hung, cut off); what
    this rank's own collective said about it, where it failed."""
    for rank in ranks:
        why = f"it never reported the end of the {phase} (waited {run.deadline_s:g} s)"
        run.lost(rank, why + (f"; the collective said: {seen}" if seen else ""), phase=phase, died=True)
    if ranks:
        _stacks(run, f"the {phase}", ranks, sys._getframe(1))


def _stacks(run: FleetRun, where: str, suspects: Sequence[int], caller: Any) -> None:
    """Rank 0 at a missed deadline: every rank's stack, once a run (the first hang is the one to explain)."""
    if run.stacks or not run.lead:
        return
    run.say(f"fleet: {len(suspects)} rank(s) missing at {where}: asking every rank for its stack")
    collect(run, f"rank(s) {_ranks(suspects)} missing at {where}", dict.fromkeys(suspects, where), caller)


def _more(run: FleetRun, names: Sequence[str], round_no: int) -> bool:
    """Round 1 always runs; later ones while the search wants another."""
    return round_no == 1 or wants_more(run.pairs, nodes=names, fraction=slow_fraction(run.backend))


def _add_round(
    run: FleetRun,
    *,
    round_no: int,
    plan: Sequence[tuple[str, str]],
    ranks: Sequence[Sequence[int]],
    figures: Sequence[PairFigure],
    size: int,
) -> None:
    """Rank 0: the round's pairs added, and every pair's verdict judged again against the reference so far."""
    for (a, b), members, figure in zip(plan, ranks, figures, strict=True):
        busbw = pair_busbw(figure.time_s, size, len(members)) if figure.time_s else None
        run.pairs.append(
            FleetPair(
                round=round_no,
                a=a,
                b=b,
                busbw_gbps=busbw,
                time_us=figure.time_s * 1e6 if figure.time_s else None,
                verdict="ok",
            )
        )
        if figure.error:
            run.notes.append(f"pairs round {round_no}: {a} with {b}: {figure.error}")
    fraction = slow_fraction(run.backend)
    reference = reference_busbw(run.pairs, fraction)
    run.pairs = [p.model_copy(update={"verdict": pair_verdict(p.busbw_gbps, reference, fraction)}) for p in run.pairs]
    shown = ", ".join(f"{p.a}+{p.b} {p.busbw_gbps or 0:.2f} GB/s" for p in run.pairs if p.round == round_no)
    run.say(f"fleet: pairs round {round_no}: {shown}")


def _farewell(run: FleetRun, doc: FleetDocument | None) -> Verdict:
    """Rank 0 sends the fleet's verdict and keeps the store up (it may serve it) until every rank still here has
    read it; the others wait for it. The fleet's verdict on every rank: each rank can exit as rank 0 does, so
    every torchrun agent sees the same outcome (agents whose workers all succeeded wait at torchrun's exit
    barrier, 300 s by default, for an agent whose worker failed, and that one never comes)."""
    if run.lead:
        assert doc is not None
        if run.ctl is None:  # the store was never reached: no one to tell
            return doc.verdict
        ctl = run.ctl
        with contextlib.suppress(BenchError):  # the store lost: the others cannot be told, the document still is
            ctl.put("end", doc.verdict)
            gone = {m.rank for m in run.missing}
            others = [f"bye/{r}" for r in range(1, run.env.world_size) if r not in gone]
            ctl.await_keys(others, run.clock() + min(BYE_S, run.deadline_s), hint="bye")
        return doc.verdict
    verdict = run.await_lead("end", "the report", 2 * run.deadline_s)
    run.control.put(f"bye/{run.env.rank}", True)
    run.control.bump("bye")
    if verdict not in ("pass", "fail", "incomplete"):
        raise BenchError(f"rank {run.env.rank}: rank 0's verdict {str(verdict)[:40]!r} is not one")
    return str(verdict)  # type: ignore[return-value]


def _teardown(run: FleetRun) -> None:
    import torch.distributed as dist

    for group in run.groups:
        with contextlib.suppress(RuntimeError, ValueError):  # already gone with an aborted communicator
            dist.destroy_process_group(group)
    run.groups.clear()
    if dist.is_initialized():
        dist.destroy_process_group()


def _rejection_notes(run: FleetRun) -> list[str]:
    """The messages rank 0 dropped, the first few by key and reason (the key names are rigcheck's own)."""
    dropped = run.ctl.rejections() if run.ctl is not None else []
    shown = [f"dropped a message in the store's {key!r}: {why}" for key, why in dropped[:SHOWN_REJECTIONS]]
    more = len(dropped) - len(shown)
    return shown + ([f"... and {more} more dropped message(s)"] if more > 0 else [])


def _cut(run: FleetRun, status: PhaseStatus, reason: str) -> None:
    """The phase rank 0 was in ends here (unless it was recorded already)."""
    if run.current not in {p.name for p in run.phases}:
        elapsed = run.clock() - run.current_since
        cut = FleetPhase(name=run.current, status=status, elapsed_s=elapsed, deadline_s=None, reason=reason)
        run.phases.append(cut)


def _interrupted(run: FleetRun, exc: KeyboardInterrupt) -> FleetDocument:
    """Rank 0 cut short by SIGINT/SIGTERM: the phase it was in ends there, and the document so far comes out."""
    name = signal_name(signal_of(exc) or signal.SIGINT)
    _cut(run, "failed", f"interrupted ({name})")
    run.notes.append(f"the run was interrupted by {name} in the {run.current} phase: what came before is reported")
    return _document(run)


def _document(run: FleetRun) -> FleetDocument:
    """Rank 0: the document, with the report phase (its own building) added."""
    since = run.clock()
    env = run.env
    doc = fleet_document(
        nodes=run.nodes,
        collectives=run.collectives,
        pairs=run.pairs,
        missing=run.missing,
        phases=run.phases,
        source="live",
        launcher=env.launcher,
        backend=run.backend,
        world_size=env.world_size,
        elapsed_s=run.clock() - run.started,
        notes=[*run.notes, *_rejection_notes(run)],
        rejected_messages=len(run.ctl.rejections()) if run.ctl is not None else 0,
        fingerprints=run.fingerprints,
        timing=run.timing,
        waits=run.waits,
        stragglers=run.stragglers,
        stacks=run.stacks,
        stuck=run.stuck,
    )
    run.record("report", "done", since, None, None)
    ended = utc_now()  # dates the document in the ledger
    return doc.model_copy(
        update={"phases": list(run.phases), "elapsed_s": run.clock() - run.started, "created_at": ended}
    )


def run_fleet(
    *,
    env: FleetEnv,
    inspect: Callable[[], NodeReport],
    cpu: bool,
    sizes: Sequence[int] | None = None,
    deadline_s: float = 120.0,
    inspect_s: float | None = None,
    on_progress: Callable[[str], None] | None = None,
    on_verdict: Callable[[Verdict], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    environ: Mapping[str, str] | None = None,
    key: KeyPlan | None = None,
) -> FleetDocument | None:
    """Run this rank's part of the fleet (see the module docstring): the document on rank 0, None elsewhere.

    ``inspect``: the node's own inspection, called on each node's local rank 0. ``deadline_s``: each phase's
    deadline; ``inspect_s``: how long an inspection may take (default ``deadline_s``): the other ranks wait that
    much longer for rank 0. ``on_verdict``: told the fleet's verdict on every rank (rank 0 sends it to the
    others at the end), so that every rank can exit as rank 0 does. ``environ``: where the test hooks are read
    (default ``os.environ``). ``key``: how the job's messages are sealed (rigcheck.bench.fleet.auth; default:
    RIGCHECK_FLEET_KEY in ``environ``, else none on loopback, else a UsageError).
    Raises BenchError when this rank cannot reach the store, or rank 0 goes quiet (a non-zero rank). SIGINT or
    SIGTERM (a KeyboardInterrupt) on rank 0 ends the run with the document so far (the phase it cut marked
    failed); on another rank it propagates.
    """
    if deadline_s <= 0:
        raise BenchError(f"the deadline must be positive, not {deadline_s:g} s")
    environ = os.environ if environ is None else environ
    run = FleetRun(
        env=env,
        cpu=cpu,
        deadline_s=deadline_s,
        inspect_s=deadline_s if inspect_s is None else inspect_s,
        say=on_progress or (lambda _line: None),
        clock=clock,
        environ=environ,
        key=key or plan_key(env, environ),
        bounded=Bounded(deadline_s),
    )
    run.started = run.current_since = clock()
    if run.lead and env.launcher != "single":
        run.notes.append(sealing_note(run))
    _need_gpu(env, cpu)
    if env.launcher != "single":
        _watch_parent()
    try:
        try:
            if rendezvous(run):
                _measure(run, inspect, sizes)
            elif run.lead:
                for phase in ("inspect", "gather", "fingerprint", "collectives", "pairs"):
                    run.skip(phase, "the rendezvous did not complete")
            run.current, run.current_since = "report", run.clock()
            doc = _document(run) if run.lead else None
        except BenchError as exc:  # the store lost or unreachable: rank 0 reports the phase it cut short
            if not run.lead:
                raise
            _cut(run, "failed", str(exc))
            doc = _document(run)
        except KeyboardInterrupt as exc:  # SIGINT/SIGTERM (the CLI's handler): rank 0 still reports
            if not run.lead:
                raise
            doc = _interrupted(run, exc)
            if run.ctl is not None:
                with contextlib.suppress(BenchError):  # best effort: the others stop waiting for the verdict
                    run.ctl.put("end", doc.verdict)
            if on_verdict is not None:
                on_verdict(doc.verdict)
            return doc
        verdict = _farewell(run, doc)
        if on_verdict is not None:
            on_verdict(verdict)
        return doc
    finally:
        if run.watch is not None:
            run.watch.stop()
        _teardown(run)


def _measure(run: FleetRun, inspect: Callable[[], NodeReport], sizes: Sequence[int] | None) -> None:
    run.watch = StackWatch(run)
    run.watch.start()
    payload = _inspect(run, inspect)
    _hang_here(run)
    layout = _gather(run, payload)
    if layout is None:
        if run.lead:
            run.skip("fingerprint", "not every rank arrived")
            run.skip("collectives", "not every rank arrived")
            run.skip("pairs", "not every rank arrived")
        return
    if run.env.world_size == 1:
        run.skip("fingerprint", "one rank: no GPU to compare it with")
        run.skip("collectives", "one rank: an all-reduce moves nothing between ranks")
        run.skip("pairs", "one node")
        return
    run.say(f"fleet: {len(layout.names)} node(s), {run.env.world_size} rank(s): measuring")
    rig, group = _measurement_rig(run)
    _fingerprint(run, rig, layout)
    hooked = [size for size in hook_ints(run.environ, SIZES_VAR) if size > 0]
    chosen = list(sizes) if sizes is not None else hooked or default_sizes(run.cpu)
    if _collectives(run, rig, group, chosen, layout) and len(layout.names) > 1:
        _pairs(run, rig, layout)
    elif run.lead:
        run.skip("pairs", "one node" if len(layout.names) < 2 else "the collectives did not come through")
    waiting.send(run)
    if run.lead:
        waiting.read(run, layout)
