"""The measurements of `rigcheck fleet`: all-reduce over the whole fleet across sizes, and the pairs of a round.

Both time an in-place all-reduce of float32 zeros (zeros: a sum that never grows, whatever the repetitions) as
rigcheck.bench.timing does: on CPU a barrier then perf_counter around each repetition, on a GPU CUDA events
queued back to back. A repetition is as slow as its slowest rank: every rank's times go through one
all-reduce(MAX) over the control group (gloo, CPU tensors), which also carries, per slot, whether a rank's
operation failed and whether a rank wants to stop for the deadline, so every rank takes the same decision
(each rank's clock is its own). Figures: the median repetition; nccl-tests' formulas (rigcheck.bench.formulas),
except a pair's figure on gloo (CPU): its fastest repetition. CPU processes share their cores with everything
else on the machine, so a repetition's max over ranks mostly measures the scheduler, and a healthy pair's median
can halve from one round to the next; a node slow for real is slow in every repetition, its fastest included.

A failing operation is caught inside the timed step (``_Step``): the rank keeps calling the barrier and the
reduction the others call, so the ranks stay in step and the failure reaches rank 0 as a flag. On NCCL the
last operation's handle is waited on again after the timing, which raises what the watchdog recorded (the
runtime sets TORCH_NCCL_ASYNC_ERROR_HANDLING so that a timed-out communicator is aborted without killing the
process: rank 0 still reports).

Test hook: ``slow_s`` > 0 (RIGCHECK_FLEET_TEST_SLOW_NODE, read by rigcheck.bench.fleet.run) makes this rank late in
each all-reduce, sleeping between the start of its timing and the operation: the rank really is late, its
partners wait for it inside the operation, and their times (and the max) grow. The lateness is ``slow_scale``
times this rank's fastest all-reduce so far (``slow_s`` at least): a fixed 50 ms was lost in a CPU pair's own
time on a busy machine, while a multiple of the step keeps the slow node's pairs at a fraction of the others'
at any message size and load. The fastest, not the last: a late rank's last all-reduce includes its wait for
another late rank, and scaling that would grow the lateness round after round. ``slow_pct`` > 0
(RIGCHECK_FLEET_TEST_SLOW_RANK=RANK:PCT) makes one rank late by that percentage of its fastest all-reduce, every
iteration (a slow GPU); ``jitter_s`` > 0 (RIGCHECK_FLEET_TEST_JITTER=RANK:MS) makes it late in a random
``JITTER_SHARE`` of the iterations (drawn from a generator seeded with the rank: every run the same) by 0.6 to 1 x
``jitter_s`` (a jittery NIC or host).

Per iteration, each rank also records when it entered the all-reduce (its clock, after the hooks' lateness) and
hands each timed collective back as a :class:`rigcheck.bench.fleet.timeline.Timed` for the wait-for analysis. On
CPU the enter time is the host's clock at the call; on a GPU, a CUDA event recorded before the operation on the
stream, read against an event recorded on the idle stream beside a host reading when the step was set up (the
stream's arrival at the collective, not the host's queueing of it).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from rigcheck.bench.env import require_torch
from rigcheck.bench.fleet.timeline import Timed
from rigcheck.bench.formulas import algbw_gbps, busbw_gbps
from rigcheck.bench.timing import time_repetitions
from rigcheck.model.fleet import FleetCollective, PhaseStatus
from rigcheck.units import short_size

ELEMENT_BYTES: Final = 4  # float32
KIB: Final = 1024
CPU_MAX_BYTES: Final = 64 << 20  # gloo over TCP: 64 MiB takes ~0.1 s on 4 local ranks
GPU_MAX_BYTES: Final = 1 << 30  # 1 GiB, as nccl-tests' usual -e 1G
# (warmup, repeats): nccl-tests runs 5 warmups and 20 timed iterations; gloo is 10-100x slower per byte.
CPU_REPEATS: Final = (1, 5)
GPU_REPEATS: Final = (5, 20)
CPU_PAIR_REPEATS: Final = (1, 10)
# The pairs' fixed size: large enough to be bandwidth-bound (on gloo, 4 MiB took 2-8 ms and scheduling noise
# halved a healthy pair's figure; 32 MiB takes ~20 ms, within ~10%), small enough for a round in seconds.
CPU_PAIR_BYTES: Final = 32 << 20
GPU_PAIR_BYTES: Final = 256 << 20
GROWTH: Final = 4  # sizes grow 4x: the next size takes about 4x as long (the deadline's estimate)
JITTER_SHARE: Final = 0.3  # the test hook's jittery rank is late in about this share of its iterations
JITTER_LEAST: Final = 0.6  # ... by 0.6 to 1 x its most (over the --cpu margin's 20 ms floor at 40 ms)


def default_sizes(cpu: bool) -> list[int]:
    """Powers of 4 from 1 KiB to 64 MiB on gloo (CPU), to 1 GiB on NCCL."""
    top = CPU_MAX_BYTES if cpu else GPU_MAX_BYTES
    sizes = []
    size = KIB
    while size <= top:
        sizes.append(size)
        size *= GROWTH
    return sizes


@dataclass(frozen=True)
class Rig:
    """What this rank measures with."""

    backend: str  # "gloo" or "nccl"
    device: Any  # torch.device
    slow_s: float = 0.0  # the test hook's least lateness per all-reduce (0: none)
    slow_scale: float = 0.0  # ... and its lateness as a multiple of this rank's fastest all-reduce
    slow_pct: float = 0.0  # the slow-rank hook: late by this percentage of its fastest all-reduce
    jitter_s: float = 0.0  # the jitter hook: late at random iterations by up to this much
    jitter: random.Random | None = None  # ... drawn from this generator (seeded with the rank)
    clock: Callable[[], float] = time.perf_counter  # this rank's clock (the skew hook reads it later)
    doing: Callable[[str], None] = lambda _what: None  # told what the rank is in, for its stack at a deadline

    @property
    def cuda(self) -> bool:
        return self.backend == "nccl"

    @property
    def repeats(self) -> tuple[int, int]:
        return GPU_REPEATS if self.cuda else CPU_REPEATS


def one_line(exc: BaseException) -> str:
    """An error's first line (torch appends a C++ trace to some) with its type."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def status_of(exc: BaseException) -> PhaseStatus:
    """A collective's error is a timeout when it says so (gloo: "Timed out", NCCL's watchdog: "timeout")."""
    text = str(exc).lower()
    return "timed_out" if "timed out" in text or "timeout" in text else "failed"


class _Step:
    """One rank's timed operation: the in-place all-reduce (late under the test hooks), or nothing for a rank
    outside every pair. An error is kept, not raised, so the rank stays in step with the others. Each call's
    enter time is kept (CUDA: an event, read once the stream is synchronized)."""

    def __init__(self, rig: Rig, size_bytes: int | None, group: Any, what: str = "all_reduce") -> None:
        torch: Any = require_torch()
        import torch.distributed as dist

        self.torch = torch
        self.dist = dist
        self.rig = rig
        self.group = group
        self.what = what
        self.tensor = None if size_bytes is None else torch.zeros(size_bytes // ELEMENT_BYTES, device=rig.device)
        self.error: BaseException | None = None
        self.last: Any = None  # the last NCCL work queued
        self.op_s = 0.0  # the fastest all-reduce on this rank so far (the test hook's scale)
        self.calls = 0
        self.enters: list[Any] = []  # host seconds (CPU) or CUDA events (GPU)
        self.anchor: tuple[Any, float] | None = None
        if rig.cuda and self.tensor is not None:
            torch.cuda.synchronize(rig.device)
            event = torch.cuda.Event(enable_timing=True)
            host = rig.clock()
            event.record()  # the stream is idle: the event completes now, at ``host``
            self.anchor = (event, host)

    def _lateness(self) -> float:
        rig = self.rig
        late = max(rig.slow_s, rig.slow_scale * self.op_s) if rig.slow_s > 0 else 0.0
        if rig.slow_pct > 0:
            late = max(late, rig.slow_pct / 100 * self.op_s)
        if rig.jitter is not None and rig.jitter.random() < JITTER_SHARE:
            late += rig.jitter.uniform(JITTER_LEAST, 1.0) * rig.jitter_s
        return late

    def __call__(self) -> None:
        if self.tensor is None or self.error is not None:
            return
        self.calls += 1
        late = self._lateness()
        if late > 0:
            time.sleep(late)
        self.rig.doing(f"{self.what}, iteration {self.calls}")
        if self.anchor is not None:
            event = self.torch.cuda.Event(enable_timing=True)
            event.record()
            self.enters.append(event)
        else:
            self.enters.append(self.rig.clock())
        started = time.perf_counter()
        try:
            work = self.dist.all_reduce(self.tensor, group=self.group, async_op=self.rig.cuda)
            if work is not None:
                # NCCL: the current stream waits for NCCL's (the host does not), so the CUDA events around this
                # step bracket the operation; the handle is kept to ask for its error after the timing
                work.wait()
                self.last = work
        except RuntimeError as exc:  # DistBackendError & co: kept, reported through the flags
            self.error = exc
        took = time.perf_counter() - started
        self.op_s = took if self.op_s == 0.0 else min(self.op_s, took)
        self.rig.doing(f"{self.what}: between iterations (after {self.calls})")

    def settle(self) -> None:
        """NCCL, after the timing's synchronize: wait on the last operation again, which raises what the watchdog
        recorded (a timeout aborts the communicator), keeping the error."""
        if self.rig.cuda and self.last is not None and self.error is None:
            try:
                self.last.wait()
            except RuntimeError as exc:
                self.error = exc

    def timed(self, label: str, size_bytes: int, times: Sequence[float], *, world: bool) -> Timed:
        """The last ``len(times)`` calls (the timed ones) as this rank's record of the collective; after
        :meth:`settle` (CUDA: the events are complete)."""
        kept = self.enters[len(self.enters) - len(times) :] if len(self.enters) >= len(times) else []
        if self.anchor is not None and kept:
            anchor, host = self.anchor
            try:
                enters = [host + anchor.elapsed_time(event) / 1e3 for event in kept]
            except RuntimeError:  # an event never completed (an aborted communicator): no enter times
                enters = []
        else:
            enters = [float(t) for t in kept]
        return Timed(label, size_bytes, world, enters, [float(t) for t in times] if enters else [])


def max_world(values: Sequence[float]) -> list[float]:
    """Each value, the max over every rank of the default (gloo, control) group."""
    torch: Any = require_torch()
    import torch.distributed as dist

    if dist.get_world_size() == 1:
        return [float(v) for v in values]
    tensor = torch.tensor(list(values), dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return [float(v) for v in tensor.tolist()]


@dataclass
class WorldResult:
    rows: list[FleetCollective]
    status: PhaseStatus
    reason: str | None
    timed: list[Timed]  # this rank's record of each size measured


def measure_world(
    rig: Rig,
    group: Any,
    sizes: Sequence[int],
    *,
    world_size: int,
    until: float,
    clock: Callable[[], float],
    say: Callable[[str], None],
) -> WorldResult:
    """All-reduce over ``group`` (every rank) at each size, until the sizes or the deadline ``until`` run out.

    Raises RuntimeError from the barrier or the reduction (the caller records the phase as failed).
    """
    warmup, repeats = rig.repeats
    rows: list[FleetCollective] = []
    timed: list[Timed] = []
    for i, requested in enumerate(sizes):
        size = max(1, requested // ELEMENT_BYTES) * ELEMENT_BYTES
        label = f"allreduce {short_size(size)}"
        step = _Step(rig, size, group, f"all_reduce of {short_size(size)} over the world")
        started = clock()
        times = time_repetitions(step, warmup=warmup, repeats=repeats, device=rig.device)
        step.settle()
        timed.append(step.timed(label, size, times, world=True))
        # the next size takes about GROWTH times as long: stop now rather than overrun the deadline
        late = clock() + GROWTH * (clock() - started) > until and i + 1 < len(sizes)
        reduced = max_world([*times, 1.0 if step.error is not None else 0.0, 1.0 if late else 0.0])
        if reduced[repeats] > 0:
            where = one_line(step.error) if step.error is not None else "on another rank"
            status: PhaseStatus = status_of(step.error) if step.error is not None else "failed"
            return WorldResult(rows, status, f"the all-reduce of {short_size(size)} failed {where}", timed[:-1])
        time_s = statistics.median(reduced[:repeats])
        rows.append(
            FleetCollective(
                op="allreduce",
                size_bytes=size,
                time_us=time_s * 1e6,
                algbw_gbps=algbw_gbps(size, time_s),
                busbw_gbps=busbw_gbps("allreduce", size, time_s, world_size),
                world_size=world_size,
                backend=rig.backend,
                expected_gbps=None,
                expected_source=None,
            )
        )
        say(f"fleet: allreduce {short_size(size)}: {rows[-1].busbw_gbps:.2f} GB/s bus bandwidth")
        if reduced[repeats + 1] > 0:
            return WorldResult(
                rows, "timed_out", f"stopped after {short_size(size)}: the next size would overrun the deadline", timed
            )
    return WorldResult(rows, "done", None, timed)


@dataclass(frozen=True)
class PairFigure:
    """One pair's all-reduce: its median time (None when it failed) and why it failed."""

    time_s: float | None
    error: str | None


@dataclass
class PairsResult:
    figures: list[PairFigure]
    timed: Timed | None  # this rank's record of its pair (None: in no pair, or it failed)


def measure_pairs(
    rig: Rig, pairs: Sequence[Sequence[int]], *, rank: int, size_bytes: int, timeout_s: float, labels: Sequence[str]
) -> PairsResult:
    """All the pairs of a round at once: each ``pairs[i]`` is the ranks of one pair (its two nodes' ranks),
    ``labels[i]`` its name in the per-iteration record.

    Every rank creates every pair's group, in the same order (torch.distributed requires it), and takes part in
    the barriers and the reduction; a rank outside every pair (the odd node out) times nothing.
    Raises RuntimeError from group creation, the barrier or the reduction.
    """
    import torch.distributed as dist

    warmup, repeats = GPU_REPEATS if rig.cuda else CPU_PAIR_REPEATS
    timeout = timedelta(seconds=max(1.0, timeout_s))
    groups = [dist.new_group(sorted(ranks), timeout=timeout, backend=rig.backend) for ranks in pairs]
    try:
        mine = next((i for i, ranks in enumerate(pairs) if rank in ranks), None)
        what = f"all_reduce of {short_size(size_bytes)} in {labels[mine]}" if mine is not None else "no pair"
        step = _Step(rig, size_bytes if mine is not None else None, groups[mine] if mine is not None else None, what)
        times = time_repetitions(step, warmup=warmup, repeats=repeats, device=rig.device)
        step.settle()
        timed = None
        if mine is not None and step.error is None:
            timed = step.timed(labels[mine], size_bytes, times, world=False)
        slots = [0.0] * (len(pairs) * (repeats + 1))
        if mine is not None:
            slots[mine * repeats : (mine + 1) * repeats] = times
            slots[len(pairs) * repeats + mine] = 1.0 if step.error is not None else 0.0
        reduced = max_world(slots)
    finally:
        for group in groups:
            if group is not None and group != dist.GroupMember.NON_GROUP_MEMBER:
                dist.destroy_process_group(group)
    figures = []
    for i in range(len(pairs)):
        if reduced[len(pairs) * repeats + i] > 0:
            own = step.error if mine == i and step.error is not None else None
            figures.append(PairFigure(None, one_line(own) if own is not None else "failed on one of its ranks"))
        else:
            times = reduced[i * repeats : (i + 1) * repeats]
            figures.append(PairFigure(statistics.median(times) if rig.cuda else min(times), None))
    return PairsResult(figures, timed)


def pair_busbw(time_s: float, size_bytes: int, ranks: int) -> float:
    return busbw_gbps("allreduce", size_bytes, time_s, ranks)
