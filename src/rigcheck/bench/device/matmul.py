"""`rigcheck bench matmul`: the best dense-matmul throughput a device reaches over a sweep of shapes.

The method follows the maximum-achievable-matmul-FLOPS finder (ml-engineering ``mamf-finder.py``, benchmark
version 2), so that its best figure is comparable with rigcheck's:
- A is m×k, B is k×n stored as an n×k matrix and transposed (mamf-finder's layout), both N(0, 1); the output
  C is preallocated and reused: ``torch.mm(a, b, out=c)``.
- Before every product, untimed: one memset of a buffer larger than the L2 cache (max(256 MiB, 2 × L2) on a
  GPU) evicts whatever the previous product left in L2, and C is overwritten with random values so that the
  product really writes new bits. A flush rather than rotating input buffers: one memset costs ~0.1 ms on an
  H100 whatever the shape, where rotation needs several copies of A and B per shape to exceed the 50 MB L2
  and so more memory for small shapes; mamf-finder flushes too.
- Each product is timed alone between CUDA events (CPU: ``time.perf_counter``), after ``warmup`` untimed
  ones; a shape's figure is the median over ``repeats``; the best shape is the one with the highest median.
- A short device warm-up (a few seconds of products) runs first, so the first shape does not pay for clocks
  ramping up from idle.
- TFLOPS = 2·m·n·k / time / 1e12 (``rigcheck.bench.formulas.matmul_tflops``).
- tf32 is fp32 tensors with TF32 tensor-core math allowed; fp32 forbids it (IEEE fp32 on CUDA cores).
- Correctness: a few rows × up to 256 columns of the last product are recomputed in float64 on the CPU from
  the same inputs, and must agree within a tolerance set by the dtype (see :data:`RTOL`).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from rigcheck.bench.device.common import (
    MIB,
    device_name,
    is_cuda,
    launched_head,
    require_gpus,
    time_calls,
    timer_label,
)
from rigcheck.bench.env import require_torch
from rigcheck.bench.formulas import matmul_tflops
from rigcheck.bench.gpu_select import label_rows
from rigcheck.bench.launcher import WorkerContext, launch
from rigcheck.errors import UsageError
from rigcheck.facts import catalog
from rigcheck.model.bench import MatmulBest, MatmulDocument, MatmulRow, Method, reasons, row_head

if TYPE_CHECKING:
    from rigcheck.bench.gpu_select import GpuPlacement
    from rigcheck.model.snapshot import Snapshot

METHOD_VERSION = "matmul-1"
DTYPES = ("bf16", "fp16", "tf32", "fp32")
CPU_DTYPES = ("bf16", "fp32")

# The mamf-finder sweep the reference figure came from: m = 1024 … 15360 step 1024, n = k = 8192; plus squares.
GPU_SHAPES: tuple[tuple[int, int, int], ...] = (
    *((m, 8192, 8192) for m in range(1024, 16384, 1024)),
    (4096, 4096, 4096),
    (16384, 16384, 16384),
)
GPU_QUICK_SHAPES: tuple[tuple[int, int, int], ...] = (
    (2048, 8192, 8192),
    (3072, 8192, 8192),
    (4096, 8192, 8192),
    (8192, 8192, 8192),
)
CPU_SHAPES: tuple[tuple[int, int, int], ...] = (
    (256, 256, 256),
    (512, 512, 512),
    (768, 768, 768),
    (1024, 1024, 1024),
)
CPU_QUICK_SHAPES: tuple[tuple[int, int, int], ...] = ((256, 256, 256), (512, 512, 512))

GPU_FLUSH_MIN_BYTES = 256 * MIB  # mamf-finder's figure: above every accelerator's last-level cache so far
CPU_FLUSH_BYTES = 32 * MIB  # above the L2 and most of the L3 a CI runner has; the CPU path is for CI
GPU_WARMUP_S = 3.0

# Largest allowed |C - reference| / (|reference| + sqrt(k)). sqrt(k) is the spread of a sum of k products of
# N(0,1) values, so entries near zero are judged on the scale of the sum's terms. Sources of error: the
# output's rounding (bf16 keeps 8 significant bits, fp16 11, fp32 24), tf32 rounding the inputs to 11 bits,
# and split-K partial sums that torch lets cuBLAS reduce in bf16/fp16 (allow_*_reduced_precision_reduction).
RTOL: dict[str, float] = {"bf16": 2.0**-6, "fp16": 2.0**-8, "tf32": 2.0**-8, "fp32": 2.0**-16}
SAMPLE_ROWS = 4
SAMPLE_COLS = 256


@dataclass(frozen=True)
class MatmulPayload:
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, int, int], ...]
    warmup: int
    repeats: int
    flush_bytes: int | None = None  # None: max(256 MiB, 2 × L2) on a GPU, CPU_FLUSH_BYTES on a CPU
    warmup_s: float = 0.0  # device warm-up before the sweep


def default_shapes(*, cpu: bool, quick: bool) -> tuple[tuple[int, int, int], ...]:
    if cpu:
        return CPU_QUICK_SHAPES if quick else CPU_SHAPES
    return GPU_QUICK_SHAPES if quick else GPU_SHAPES


def parse_shape(text: str) -> tuple[int, int, int]:
    """ "MxNxK" (or one number for a square) -> (m, n, k); UsageError otherwise."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise UsageError(f"bad shape {text!r}: expected MxNxK, e.g. 4096x8192x8192") from None
    if len(dims) == 1:
        dims = dims * 3
    if len(dims) != 3 or min(dims) < 1:
        raise UsageError(f"bad shape {text!r}: expected MxNxK with positive sizes")
    return dims[0], dims[1], dims[2]


def torch_dtype(torch: Any, name: str) -> Any:
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}[name]


def check_sample(got: Any, ref: Any, dtype: str, k: int) -> tuple[bool, float]:
    """Whether a sample of a product (``got``, any float tensor) matches its float64 ``ref``.

    Returns (within tolerance, the largest normalised error |got - ref| / (|ref| + sqrt(k))).
    """
    diff = (got.double() - ref).abs()
    scale = ref.abs() + math.sqrt(k)
    err = float((diff / scale).max()) if diff.numel() else 0.0
    if math.isnan(err):
        return False, err
    return err <= RTOL[dtype], err


def sample_indices(count: int, limit: int) -> list[int]:
    """Up to ``limit`` indices spread evenly over range(count), first and last included."""
    if count <= limit:
        return list(range(count))
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})


@contextlib.contextmanager
def fp32_math(torch: Any, dtype: str, cuda: bool) -> Iterator[None]:
    """TF32 on for tf32, off for fp32 (CUDA only), restored afterwards. torch >= 2.9 refuses to read the
    legacy ``allow_tf32`` once the new ``fp32_precision`` was set, so only one of the two is ever used."""
    if not cuda or dtype not in ("tf32", "fp32"):
        yield
        return
    matmul = torch.backends.cuda.matmul
    want = "tf32" if dtype == "tf32" else "ieee"
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9; allow_tf32 is deprecated there
        saved = matmul.fp32_precision
        matmul.fp32_precision = want
        try:
            yield
        finally:
            matmul.fp32_precision = saved
    else:
        saved_flag = matmul.allow_tf32
        matmul.allow_tf32 = want == "tf32"
        try:
            yield
        finally:
            matmul.allow_tf32 = saved_flag


def _flush_bytes(torch: Any, device: Any, requested: int | None) -> int:
    if requested is not None:
        return requested
    if not is_cuda(device):
        return CPU_FLUSH_BYTES
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return max(GPU_FLUSH_MIN_BYTES, 2 * l2)


def _operands(torch: Any, dtype: Any, shape: tuple[int, int, int], device: Any) -> tuple[Any, Any, Any, Any]:
    m, n, k = shape
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(n, k, dtype=dtype, device=device).t()  # k×n, column-major: mamf-finder's layout
    c = torch.empty(m, n, dtype=dtype, device=device)
    c_fill = torch.randn(m, n, dtype=dtype, device=device)
    return a, b, c, c_fill


def _device_warmup(torch: Any, device: Any, dtype: Any, shape: tuple[int, int, int], seconds: float) -> None:
    """Products for about ``seconds`` so the clocks are up before the first timed shape."""
    a, b, c, _ = _operands(torch, dtype, shape, device)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(10):
            torch.mm(a, b, out=c)
        torch.cuda.synchronize(device)


def _measure_shape(
    torch: Any, device: Any, dtype_name: str, shape: tuple[int, int, int], *, payload: MatmulPayload, flush: Any
) -> tuple[list[float], bool, float]:
    m, n, k = shape
    dtype = torch_dtype(torch, dtype_name)
    a, b, c, c_fill = _operands(torch, dtype, shape, device)

    def before() -> None:
        flush.zero_()  # evict L2: the product must read A and B from device memory
        c.copy_(c_fill)  # fresh bits in C: the product really writes its output

    def product() -> None:
        torch.mm(a, b, out=c)

    times = time_calls(torch, device, product, warmup=payload.warmup, repeats=payload.repeats, before=before)
    rows = sample_indices(m, SAMPLE_ROWS)
    cols = sample_indices(n, SAMPLE_COLS)
    ref = a[rows].double().cpu() @ b[:, cols].double().cpu()
    got = c[rows][:, cols].cpu()
    ok, err = check_sample(got, ref, dtype_name, k)
    return times, ok, err


def matmul_worker(ctx: WorkerContext, payload: MatmulPayload) -> None:
    """Measure every (dtype, shape) of ``payload`` on ``ctx.device``; one row per shape through ``ctx.report``."""
    torch: Any = require_torch()
    device = torch.device(ctx.device)
    cuda = is_cuda(device)
    if cuda:
        torch.cuda.set_device(device)
    elif ctx.world_size > 1:  # CPU ranks share the cores: do not oversubscribe them
        torch.set_num_threads(max(1, (torch.get_num_threads() or 1) // ctx.world_size))
    name = device_name(torch, device)
    spec = catalog.lookup(name) if cuda else None
    flush = torch.empty(_flush_bytes(torch, device, payload.flush_bytes) // 4, dtype=torch.int32, device=device)
    if cuda and payload.warmup_s > 0 and payload.shapes:
        ctx.progress(f"rank {ctx.rank}: warming up {name} for {payload.warmup_s:g} s")
        _device_warmup(torch, device, torch_dtype(torch, payload.dtypes[0]), payload.shapes[0], payload.warmup_s)
    method = Method(
        method_version=METHOD_VERSION, warmup=payload.warmup, repeats=payload.repeats, timer=timer_label(device)
    )
    for dtype_name in payload.dtypes:
        peak = getattr(spec, f"{dtype_name}_tflops", None) if spec is not None else None
        with fp32_math(torch, dtype_name, cuda):
            for m, n, k in payload.shapes:
                times, ok, err = _measure_shape(torch, device, dtype_name, (m, n, k), payload=payload, flush=flush)
                head = row_head(
                    name=f"matmul {dtype_name} {m}x{n}x{k}",
                    unit="TFLOPS",
                    samples=[matmul_tflops(m, n, k, t) for t in times],
                    method=method,
                    backend=ctx.backend,
                    world_size=ctx.world_size,
                    sizes=[m, n, k],
                )
                fraction = head["median"] / peak if peak else None
                r = MatmulRow(
                    **head,
                    rank=ctx.rank,
                    gpu=device.index if cuda else None,
                    device_name=name,
                    dtype=dtype_name,
                    m=m,
                    n=n,
                    k=k,
                    time_us_median=statistics.median(times) * 1e6,
                    peak_tflops=peak,
                    peak_source=spec.source if (spec is not None and peak is not None) else None,
                    correct=ok,
                    max_rel_error=err,
                    best=False,
                    tflops_median=head["median"],
                    tflops_min=head["min"],
                    tflops_max=head["max"],
                    fraction_of_peak=fraction,
                    missing=reasons(
                        _no_peak_reason(spec, dtype_name, cuda), peak_tflops=peak, fraction_of_peak=fraction
                    ),
                )
                ctx.progress(f"rank {ctx.rank}: {dtype_name} {m}x{n}x{k}: {r.median:.1f} TFLOPS")
                ctx.report(r.model_dump())


def mark_best(rows: Sequence[MatmulRow]) -> tuple[list[MatmulRow], list[MatmulBest]]:
    """The rows with ``best`` set on the correct row with the highest median per (rank, dtype), and those
    best rows' summaries (in the order their rank and dtype first appear)."""
    best: dict[tuple[int, str], int] = {}
    for i, r in enumerate(rows):
        if not r.correct:
            continue
        key = (r.rank, r.dtype)
        if key not in best or r.tflops_median > rows[best[key]].tflops_median:
            best[key] = i
    chosen = set(best.values())
    marked = [r.model_copy(update={"best": i in chosen}) for i, r in enumerate(rows)]
    summaries = [
        MatmulBest(
            rank=r.rank,
            gpu=r.gpu,
            dtype=r.dtype,
            m=r.m,
            n=r.n,
            k=r.k,
            tflops_median=r.tflops_median,
            peak_tflops=r.peak_tflops,
            fraction_of_peak=r.fraction_of_peak,
        )
        for r in (marked[i] for i in best.values())
    ]
    return marked, summaries


def plan_dtypes(dtypes: Sequence[str], *, cpu: bool) -> tuple[tuple[str, ...], list[str]]:
    """The dtypes to measure and a note for each one skipped; UsageError when none is left."""
    wanted: list[str] = []
    for d in dtypes:
        if d == "all":
            wanted.extend(DTYPES)
        elif d in DTYPES:
            wanted.append(d)
        else:
            raise UsageError(f"unknown dtype {d!r}: choose from {', '.join(DTYPES)} or all")
    wanted = list(dict.fromkeys(wanted))
    if not cpu:
        return tuple(wanted), []
    kept = tuple(d for d in wanted if d in CPU_DTYPES)
    notes = [
        f"{d} skipped: on CPU only {' and '.join(CPU_DTYPES)} are measured "
        f"({'TF32 is a GPU tensor-core mode' if d == 'tf32' else 'fp16 matmul on CPU is an emulation'})"
        for d in wanted
        if d not in CPU_DTYPES
    ]
    if not kept:
        raise UsageError(f"on CPU matmul measures only {' and '.join(CPU_DTYPES)}; {'; '.join(notes)}")
    return kept, notes


def _no_peak_reason(spec: Any, dtype_name: str, cuda: bool) -> str:
    if not cuda:
        return "no catalogue peak for a CPU"
    if spec is None:
        return "this GPU is not in rigcheck's catalog"
    return f"the catalog has no dense {dtype_name} figure for the {spec.name}"


def run_matmul(
    *,
    dtypes: Sequence[str] = ("bf16",),
    cpu: bool = False,
    quick: bool = False,
    shapes: Sequence[tuple[int, int, int]] | None = None,
    warmup: int | None = None,
    repeats: int | None = None,
    world_size: int = 1,
    timeout_s: float = 1800.0,
    flush_bytes: int | None = None,
    warmup_s: float | None = None,
    snapshot: Snapshot | None,
    on_progress: Callable[[str], None] | None = None,
    placement: GpuPlacement | None = None,
) -> MatmulDocument:
    """Sweep shapes for each dtype on ``world_size`` devices (one worker each) and return the document
    (``snapshot``: the machine, as the caller probed it)."""
    torch: Any = require_torch()
    if placement is not None:  # --gpus: one worker per GPU given (a world size of 1 is the default, not a choice)
        world_size = placement.world_size(None if world_size == 1 else world_size)
    if not cpu:
        require_gpus(torch, "matmul", hint="; add --cpu to measure this CPU instead", world_size=world_size)
    measured, notes = plan_dtypes(dtypes, cpu=cpu)
    payload = MatmulPayload(
        dtypes=measured,
        shapes=tuple(shapes) if shapes else default_shapes(cpu=cpu, quick=quick),
        warmup=(2 if cpu else 10) if warmup is None else warmup,
        repeats=(5 if cpu else 20) if repeats is None else repeats,
        flush_bytes=flush_bytes,
        warmup_s=(0.0 if cpu else GPU_WARMUP_S) if warmup_s is None else warmup_s,
    )
    outcome = launch(
        matmul_worker,
        payload,
        world_size=world_size,
        cpu=cpu,
        timeout_s=timeout_s,
        env=placement.worker_env() if placement is not None else None,
        on_progress=on_progress,
    )
    # a worker names its GPU by CUDA ordinal; with --gpus the rows name it by nvidia-smi index
    rows, best = mark_best(label_rows(TypeAdapter(list[MatmulRow]).validate_python(outcome.rows), placement))
    flush_text = (
        f"{flush_bytes / MIB:g} MiB"
        if flush_bytes is not None
        else (f"{CPU_FLUSH_BYTES // MIB} MiB" if cpu else f"max({GPU_FLUSH_MIN_BYTES // MIB} MiB, 2 × L2)")
    )
    notes = [
        *notes,
        "each product torch.mm(a, b, out=c) timed alone after warm-up; before each, untimed: a "
        f"{flush_text} memset to evict the cache and c refilled with random values (mamf-finder's method)",
        "TFLOPS = 2·m·n·k / time / 1e12; a shape's figure is the median over repeats; best = highest median "
        "among shapes whose sampled result matched a float64 reference",
        "peak = the catalogue's dense tensor-core figure for this card (rigcheck.facts.catalog, with its "
        "source); fp32 on CUDA cores and CPUs have none. A sweep's best reaches about 80% of the datasheet "
        "peak on an H100 SXM: the peak assumes boost clocks that a 700 W power cap does not sustain",
    ]
    head = launched_head(
        method_version=METHOD_VERSION,
        warmup=payload.warmup,
        repeats=payload.repeats,
        cpu=cpu,
        world_size=world_size,
        outcome=outcome,
        snapshot=snapshot,
    )
    if placement is not None and placement.note:
        notes.append(placement.note)
    gpus = list(placement.indices) if placement is not None else None
    return MatmulDocument(**head, results=rows, notes=notes, best=best, gpus=gpus)
