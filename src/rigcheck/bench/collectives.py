"""Collective bandwidth, measured as nccl-tests measures it: all-reduce, all-gather, reduce-scatter, broadcast.

For each buffer size of a sweep: one untimed run on patterned data whose result is checked exactly on
every rank (``correct``), ``warmup`` untimed runs, then ``repeats`` timed runs. Each repetition's time is
the slowest rank's (``rigcheck.bench.timing``); the median time gives ``time_us_median``, ``algbw_gbps``
and ``busbw_gbps`` (nccl-tests' formulas, ``rigcheck.bench.formulas``). A row's ``value`` is that busbw;
its ``min`` and ``max`` are the busbw of the slowest and fastest repetition.

Sizes follow nccl-tests: ``size_bytes`` is the whole buffer (for all-gather and reduce-scatter, n × the
per-rank part) of float32 elements; a size is rounded down to whole elements (whole per-rank parts for
all-gather and reduce-scatter), and up to the smallest valid size (4 bytes, or 4 × n bytes).

Data: rank r's input element j holds (r + 1) × (j mod 61 + 1), so every sum over up to 512 ranks stays
below 2^24 and is exact in float32; the check compares every element with ``torch.equal``.

Test hook (used by the tests to kill a worker mid-run; never set it otherwise): with
``RIGCHECK_BENCH_FAIL_RANK=R`` in a worker's environment, rank R fails just after finishing
``RIGCHECK_BENCH_FAIL_AFTER`` sizes (default 0), in the way ``RIGCHECK_BENCH_FAIL_MODE`` says: ``kill``
(SIGKILL itself, the default), ``raise`` (a BenchError) or ``hang`` (sleep until ended).
"""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from rigcheck.bench.env import require_torch, software_versions
from rigcheck.bench.formulas import Collective, algbw_gbps, busbw_factor, busbw_gbps
from rigcheck.bench.launcher import WorkerContext, launch
from rigcheck.bench.timing import time_across_ranks, timer_name
from rigcheck.errors import BenchError, UsageError
from rigcheck.model.bench import CollectiveDocument, CollectiveRow, Method, row_head
from rigcheck.units import short_size

if TYPE_CHECKING:
    from rigcheck.bench.gpu_select import GpuPlacement
    from rigcheck.model.snapshot import Snapshot

OPS: tuple[Collective, ...] = ("allreduce", "allgather", "reducescatter", "broadcast")
METHOD_VERSION = "collectives-1"
ELEMENT_BYTES = 4  # float32
DEFAULT_MIN_BYTES = 8
GPU_MAX_BYTES = 1 << 30  # 1 GiB, as nccl-tests' usual -e 1G
CPU_MAX_BYTES = 16 << 20  # 16 MiB: gloo over loopback, quick enough for CI
PATTERN_PERIOD = 61
ROOT = 0  # broadcast's source rank

# Implementations, best first; a worker uses the first the backend accepts.
IMPLEMENTATIONS: dict[str, tuple[str, ...]] = {
    "allreduce": ("all_reduce",),
    "allgather": ("tensor", "list"),
    "reducescatter": ("tensor", "list", "all_reduce"),
    "broadcast": ("broadcast",),
}
# cudaEventElapsedTime: "resolution of around 0.5 microseconds" (CUDA Runtime API reference). A repetition
# that did no measurable work (one rank: NCCL's in-place all-reduce is a no-op) can read 0.0.
EVENT_RESOLUTION_S = 0.5e-6
FLOOR_NOTE = (
    "some repetitions took less than the CUDA event resolution (0.5 us) and are counted as 0.5 us: "
    "the operation did no measurable work"
)
ONE_RANK_NOTE = (
    "one rank: a collective moves no data between devices (NCCL's in-place all-reduce on one rank does "
    "nothing), so busbw is 0 by definition and the time is the launch floor; measure two or more GPUs, or "
    "check the code path with --cpu -n 2"
)
EMULATED_NOTE = (
    "reducescatter: this backend has no reduce-scatter; emulated with all_reduce + slice (correct data, "
    "but twice the traffic: busbw is not comparable with nccl-tests)"
)

FAIL_RANK_VAR = "RIGCHECK_BENCH_FAIL_RANK"
FAIL_AFTER_VAR = "RIGCHECK_BENCH_FAIL_AFTER"
FAIL_MODE_VAR = "RIGCHECK_BENCH_FAIL_MODE"
_ROWS = TypeAdapter(list[CollectiveRow])  # the rows the workers sent, as plain data, typed again


# --- sizes -------------------------------------------------------------------------------------------


def sweep(min_bytes: int, max_bytes: int) -> list[int]:
    """Sizes from ``min_bytes`` doubling while at most ``max_bytes`` (nccl-tests' -b/-e/-f 2)."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise UsageError(f"sizes must satisfy 1 <= min ({min_bytes}) <= max ({max_bytes})")
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def default_sizes(cpu: bool) -> list[int]:
    """8 B … 1 GiB on GPUs, 8 B … 16 MiB on CPU processes, doubling."""
    return sweep(DEFAULT_MIN_BYTES, CPU_MAX_BYTES if cpu else GPU_MAX_BYTES)


def valid_size(op: Collective, size_bytes: int, world_size: int) -> int:
    """The buffer size actually used for a requested size (whole elements; whole per-rank parts)."""
    elements = size_bytes // ELEMENT_BYTES
    if op in ("allgather", "reducescatter"):
        return max(1, elements // world_size) * world_size * ELEMENT_BYTES
    return max(1, elements) * ELEMENT_BYTES


def valid_sizes(op: Collective, sizes: Sequence[int], world_size: int) -> list[int]:
    """Each size made valid (see ``valid_size``), duplicates dropped, order kept."""
    out: list[int] = []
    for size in sizes:
        if size < 1:
            raise UsageError(f"a size must be at least 1 byte, not {size}")
        fixed = valid_size(op, size, world_size)
        if fixed not in out:
            out.append(fixed)
    return out


def resolve_world_size(cpu: bool, requested: int | None) -> int:
    """The number of ranks: as asked, else every visible GPU (2 with --cpu); a GPU run needs that many GPUs."""
    if requested is not None and requested < 1:
        raise UsageError("the world size must be at least 1")
    if cpu:
        return 2 if requested is None else requested
    torch: Any = require_torch()
    count = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    if count == 0:
        raise UsageError("no CUDA GPU visible to torch; add --cpu to measure CPU processes with gloo")
    if requested is None:
        return count
    if requested > count:
        raise UsageError(f"a world size of {requested} needs {requested} GPUs (one per rank); torch sees {count}")
    return requested


# --- the worker --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectivePayload:
    op: Collective
    sizes: tuple[int, ...]  # valid sizes (``valid_sizes``), bytes
    warmup: int
    repeats: int
    impl: str | None = None  # force one of IMPLEMENTATIONS[op]; None: the best the backend accepts


def _pattern(torch: Any, count: int, offset: int, device: Any) -> Any:
    """(j mod 61) + 1 for j in offset … offset + count − 1, float32 (exact integers)."""
    dtype = torch.int32 if offset + count < 2**31 else torch.int64  # int32 halves the temporary on big buffers
    index = torch.arange(offset, offset + count, device=device, dtype=dtype)
    return (index % PATTERN_PERIOD + 1).to(torch.float32)


class _Case:
    """The buffers and the call for one op at one size, on one rank."""

    def __init__(self, op: Collective, size_bytes: int, ctx: WorkerContext, impl: str) -> None:
        torch: Any = require_torch()
        import torch.distributed as dist

        self.torch = torch
        self.dist = dist
        self.op = op
        self.impl = impl
        self.rank = ctx.rank
        self.n = ctx.world_size
        self.device = ctx.device
        total = size_bytes // ELEMENT_BYTES
        self.part = total // self.n if op in ("allgather", "reducescatter") else total
        self.total = total
        n, rank, device = self.n, self.rank, self.device
        ranks_sum = float(n * (n + 1) // 2)  # sum over ranks of (r + 1)
        if op == "allreduce":
            self.send = _pattern(torch, total, 0, device) * float(rank + 1)
            self.recv = self.send  # in place
            self.expected = _pattern(torch, total, 0, device) * ranks_sum
        elif op == "broadcast":
            self.send = _pattern(torch, total, 0, device) if rank == ROOT else torch.full((total,), -1.0, device=device)
            self.recv = self.send  # in place
            self.expected = _pattern(torch, total, 0, device)
        elif op == "allgather":
            self.send = _pattern(torch, self.part, rank * self.part, device) * float(rank + 1)
            self.recv = torch.full((total,), -1.0, device=device)
            self.expected = torch.cat(
                [_pattern(torch, self.part, r * self.part, device) * float(r + 1) for r in range(n)]
            )
        else:  # reducescatter: rank r keeps the sum of every rank's part r
            self.send = _pattern(torch, total, 0, device) * float(rank + 1)
            self.recv = torch.full((self.part,), -1.0, device=device)
            self.expected = _pattern(torch, self.part, rank * self.part, device) * ranks_sum

    def run(self) -> None:
        dist, op, impl = self.dist, self.op, self.impl
        if op == "allreduce":
            dist.all_reduce(self.send, op=dist.ReduceOp.SUM)
        elif op == "broadcast":
            dist.broadcast(self.send, src=ROOT)
        elif op == "allgather":
            if impl == "tensor":
                gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
                gather(self.recv, self.send)
            else:
                dist.all_gather(list(self.recv.chunk(self.n)), self.send)
        elif impl == "tensor":
            scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
            scatter(self.recv, self.send, op=dist.ReduceOp.SUM)
        elif impl == "list":
            dist.reduce_scatter(self.recv, list(self.send.chunk(self.n)), op=dist.ReduceOp.SUM)
        else:  # all_reduce + slice: the right data, more traffic
            whole = self.send.clone()
            dist.all_reduce(whole, op=dist.ReduceOp.SUM)
            self.recv.copy_(whole[self.rank * self.part : (self.rank + 1) * self.part])

    def ok(self) -> bool:
        """Right after the first ``run``: is this rank's output exactly what it should be?"""
        return bool(self.torch.equal(self.recv, self.expected))

    def for_timing(self) -> None:
        """Make repeated runs harmless: an in-place all-reduce of zeros stays zeros (no overflow)."""
        self.expected = None
        if self.op == "allreduce":
            self.send.zero_()


def _unsupported(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "support" in text or "not implemented" in text


def _first_case(op: Collective, size_bytes: int, ctx: WorkerContext, impl: str | None) -> _Case:
    """The case for the first size, with the first implementation the backend accepts (already run once)."""
    import torch.distributed as dist

    choices = (impl,) if impl is not None else IMPLEMENTATIONS[op]
    for i, choice in enumerate(choices):
        if choice == "tensor" and op == "allgather" and not hasattr(dist, "all_gather_into_tensor"):
            continue
        if choice == "tensor" and op == "reducescatter" and not hasattr(dist, "reduce_scatter_tensor"):
            continue
        case = _Case(op, size_bytes, ctx, choice)
        try:
            case.run()
        except (RuntimeError, NotImplementedError) as exc:
            # The backend refuses this call on every rank alike (before any traffic): try the next one.
            if i == len(choices) - 1 or not _unsupported(exc):
                raise
            continue
        return case
    raise BenchError(f"{op}: no implementation of {choices} is available in this torch")


def _bool_across_ranks(flag: bool, device: Any) -> bool:
    """True when ``flag`` is True on every rank."""
    torch: Any = require_torch()
    import torch.distributed as dist

    tensor = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MIN)
    return bool(tensor.item() == 1)


def _test_hook(rank: int, sizes_done: int) -> None:
    """Fail on purpose where the environment says (see the module docstring); tests only."""
    wanted = os.environ.get(FAIL_RANK_VAR)
    if wanted is None or int(wanted) != rank or sizes_done != int(os.environ.get(FAIL_AFTER_VAR, "0")):
        return
    mode = os.environ.get(FAIL_MODE_VAR, "kill")
    if mode == "raise":
        raise BenchError(f"{FAIL_RANK_VAR} test hook: rank {rank} fails after {sizes_done} sizes")
    if mode == "hang":
        while True:
            time.sleep(3600)
    os.kill(os.getpid(), signal.SIGKILL)


def collective_worker(ctx: WorkerContext, payload: CollectivePayload) -> None:
    """One rank of the sweep; rank 0 reports one row per size as soon as it is measured."""
    op = payload.op
    method = Method(
        method_version=METHOD_VERSION,
        warmup=payload.warmup,
        repeats=payload.repeats,
        timer=timer_name(ctx.device.type == "cuda"),
    )
    impl = payload.impl
    for done, size in enumerate(payload.sizes):
        _test_hook(ctx.rank, done)
        ctx.phase(f"{op} {short_size(size)}")  # every rank: a rank that hangs is the one behind the others
        if impl is None or done == 0:
            case = _first_case(op, size, ctx, impl)
            impl = case.impl
        else:
            case = _Case(op, size, ctx, impl)
            case.run()
        correct = _bool_across_ranks(case.ok(), ctx.device)
        case.for_timing()
        times = time_across_ranks(case.run, warmup=payload.warmup, repeats=payload.repeats, device=ctx.device)
        del case
        if ctx.rank != 0:
            continue
        floored = [max(t, EVENT_RESOLUTION_S) for t in times]
        median_s = statistics.median(floored)
        busbw = busbw_gbps(op, size, median_s, ctx.world_size)
        head = row_head(
            name=op,
            unit="GB/s",
            samples=[busbw_gbps(op, size, t, ctx.world_size) for t in floored],
            method=method,
            backend=ctx.backend,
            world_size=ctx.world_size,
            sizes=[size],
        )
        # The figure is the rate of the median time. (With an even number of repeats the median of the
        # rates would average two rates: the rate of no repetition's time, and not busbw_gbps.)
        head["value"] = head["median"] = busbw
        note = None
        if impl == "all_reduce" and op == "reducescatter":
            note = EMULATED_NOTE
        elif floored != list(times):
            note = FLOOR_NOTE
        result = CollectiveRow(
            **head,
            op=op,
            size_bytes=size,
            time_us_median=median_s * 1e6,
            algbw_gbps=algbw_gbps(size, median_s),
            busbw_gbps=busbw,
            correct=correct,
            note=note,
        )
        ctx.report(result.model_dump())
        wrong = "" if correct else "; WRONG DATA"
        ctx.progress(
            f"{op} {short_size(size)}: {median_s * 1e6:.1f} us, busbw {busbw:.3f} GB/s "
            f"(algbw × {busbw_factor(op, ctx.world_size):g}){wrong}"
        )


# --- the run -----------------------------------------------------------------------------------------


def run_collective(
    op: str,
    *,
    cpu: bool,
    world_size: int,
    sizes: Sequence[int] | None,
    warmup: int,
    repeats: int,
    timeout_s: float,
    snapshot: Snapshot | None,
    env: dict[str, str] | None = None,
    nccl_debug: bool = False,
    on_progress: Callable[[str], None] | None = None,
    placement: GpuPlacement | None = None,
) -> tuple[CollectiveDocument, str]:
    """Sweep ``op`` over ``sizes`` (None: the default sweep) on ``world_size`` ranks; with ``placement``
    (--gpus) one rank on each of its GPUs, ``world_size`` then its count.

    Returns the rigcheck.bench/1 document (``snapshot``: the machine, as the caller probed it) and the ranks'
    NCCL_DEBUG=INFO output ("" unless ``nccl_debug``). A run that a worker ends early (raised, died, hung past
    ``timeout_s``) still returns its document: ``partial`` true, ``error`` naming the rank, the rows measured
    before kept.
    """
    if op not in OPS:
        raise UsageError(f"unknown collective {op!r}; one of {', '.join(OPS)}")
    collective: Collective = op
    if repeats < 1 or warmup < 0:
        raise UsageError("repeats must be at least 1 and warmup at least 0")
    require_torch()
    if placement is not None:
        world_size = placement.world_size(world_size)
        env = placement.worker_env(env)
    world_size = resolve_world_size(cpu, world_size)
    chosen = valid_sizes(collective, default_sizes(cpu) if sizes is None else sizes, world_size)
    if not chosen:
        raise UsageError("no sizes to measure")
    versions = software_versions()
    payload = CollectivePayload(op=collective, sizes=tuple(chosen), warmup=warmup, repeats=repeats)
    outcome = launch(
        collective_worker,
        payload,
        world_size=world_size,
        cpu=cpu,
        timeout_s=timeout_s,
        env=env,
        nccl_debug=nccl_debug,
        on_progress=on_progress,
    )
    rows = _ROWS.validate_python(outcome.rows)
    notes = sorted({r.note for r in rows if r.note})
    if world_size == 1:
        notes.insert(0, ONE_RANK_NOTE)
    if placement is not None and placement.note:
        notes.append(placement.note)
    doc = CollectiveDocument(
        benchmark=collective,
        partial=outcome.partial,
        error=outcome.error,
        method=Method(method_version=METHOD_VERSION, warmup=warmup, repeats=repeats, timer=timer_name(not cpu)),
        backend="gloo" if cpu else "nccl",
        world_size=world_size,
        versions=versions,
        snapshot=snapshot,
        results=rows,
        op=collective,
        sizes=chosen,
        wall_s=outcome.wall_s,
        notes=notes,
        gpus=list(placement.indices) if placement is not None else None,
    )
    return doc, outcome.nccl_log
