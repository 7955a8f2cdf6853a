"""`rigcheck burn`: load the chosen GPUs with sustained matmuls while the sampler records, then judge.

The workload, per GPU, gpu-burn style: two random n×n matrices A and B (n sized to the card's free
memory, 8192 on any card with a few GiB free), C = A·B computed once as the reference, then the same
product recomputed back to back in chunks of ~0.1 s (``torch.matmul(A, B, out=C)``: cuBLAS, tensor cores
for bf16/fp16/tf32). The products go round a ring of RING output buffers, and after every chunk each buffer
written in it is compared with the reference bit for bit (outside the timed span): same inputs, same
kernel, same stream, so any difference is a wrong result from the GPU (silent corruption), counted in
``errors`` and named at once through ``on_progress``. A chunk of ~70 products (8192² bf16 on an H100) has
its last RING checked: comparing every product, as gpu-burn does, would cost ~7% of the load's time and
the sustained TFLOPS with it. (cuBLAS documents bit-wise reproducible results for
one toolkit, architecture and SM count when a handle's calls run on one stream, or each stream has its own
workspace; atomics mode, which breaks it, is off by default. Here each GPU's products run on one stream from
one thread, and torch gives each (handle, stream) its own workspace, so no CUBLAS_WORKSPACE_CONFIG or
``torch.use_deterministic_algorithms`` is needed: the latter does not change how cuBLAS reduces.) Chunks
are timed on the host after a device synchronize, and their floating-point operations (2·n³ each) are
spread over the seconds they covered:
``tflops_per_second`` → ``tflops_first_10s`` and ``tflops_sustained`` (the median after the first
minute; for runs shorter than two minutes, the median of the last half).

Why threads in one process and not the bench launcher's worker processes: the sampler must run beside
the load and its trace ends up in this process; there is no collective to set up (each GPU works
alone); a chosen subset of GPUs (``--gpus 1,3``) needs no CUDA_VISIBLE_DEVICES juggling; and the Python
work per chunk is a few dozen kernel launches every 0.1 s, with the GIL released while each thread
waits on its device, so one process drives 8 GPUs without starving any of them.

The loop (``burn_loop``) takes the product, the comparison and the synchronize as callables: tests run
it on CPU with tiny tensors and an injected fault. ``run_burn`` is the whole run. Nothing here changes a
card's settings; TF32 (``torch.backends.cuda.matmul``, a process setting) is set for the run and
restored.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rigcheck.bench.burn_fingerprint import burn_fingerprint, fingerprint_findings
from rigcheck.bench.burn_kernel_log import KernelLogReader, judge_run_log
from rigcheck.bench.device.matmul import fp32_math
from rigcheck.bench.env import require_torch
from rigcheck.bench.gpu_select import cuda_index  # one NVML -> CUDA mapping for every run
from rigcheck.bench.launcher import one_line
from rigcheck.checks.burn.judge import BURN_ONLY_FIELDS, analyze_trace, is_problem
from rigcheck.checks.burn.rates import judge_peers
from rigcheck.errors import BenchError, UsageError, was_interrupted
from rigcheck.model.burn import BurnFingerprint, BurnKernelLog, BurnRun, BurnWorkload, GpuBurnAnalysis, GpuLoadSummary
from rigcheck.model.finding import Severity
from rigcheck.model.kernel_log import KernelEvent, KernelLogRead
from rigcheck.model.monitor import SamplerReport
from rigcheck.model.telemetry import Trace, TraceGpu
from rigcheck.monitor.sampler import Poller, Sampler, SamplerStats, TraceFile

METHOD_VERSION = "burn-1"
DTYPES = ("bf16", "fp16", "tf32", "fp32")
SIZES = (8192, 4096, 2048, 1024, 512)
RING = 8  # output buffers: the products of a chunk that are checked
MATRICES = 3 + RING  # A, B, the reference and the ring
MEMORY_SHARE = 0.25  # the n×n matrices take at most this share of the free memory
CHUNK_TARGET_S = 0.1
FIRST_S = 10.0
SUSTAINED_AFTER_S = 60.0
PREROLL_S = 2.0  # idle samples before the load: the baseline for temperature rise and time to cap
PROGRESS_EVERY_S = 5.0

BurnOutcome = Literal["ok", "problems", "interrupted"]  # the CLI makes it the exit code (cli/exits.py)


def burn_outcome(run: BurnRun) -> BurnOutcome:
    """How a burn ended: cut short by a signal; a wrong result, a failed load, a problem by is_problem (the
    fingerprint's and the kernel log's fail findings among them) or a kernel-log line of severity fail on no GPU of
    the burn; else ok."""
    if run.interrupted:
        return "interrupted"
    if run.wrong_gpus or run.failed_gpus or any(is_problem(a) for a in run.analyses):
        return "problems"
    if run.kernel_log is not None and any(f.severity is Severity.FAIL for f in run.kernel_log.findings):
        return "problems"
    return "ok"


# --- pure accounting ---------------------------------------------------------------------------------
def pick_size(free_bytes: int, element_bytes: int) -> int:
    """The largest of SIZES whose MATRICES n×n matrices fit in MEMORY_SHARE of free memory."""
    for n in SIZES:
        if MATRICES * n * n * element_bytes <= free_bytes * MEMORY_SHARE:
            return n
    return SIZES[-1]


def tflops_per_second(chunks: Sequence[tuple[float, float, float]]) -> list[float]:
    """TFLOPS in each whole second [k, k+1) from chunks (start_s, end_s, flops) spread evenly over their
    span. Seconds after the last whole one are left out; a second with no chunk counts 0."""
    if not chunks:
        return []
    end = max(c[1] for c in chunks)
    seconds = [0.0] * math.floor(end)
    for start, stop, flops in chunks:
        span = stop - start
        if span <= 0:
            continue
        rate = flops / span
        k = math.floor(start)
        while k < len(seconds) and k < stop:
            overlap = min(stop, k + 1) - max(start, k)
            if overlap > 0:
                seconds[k] += rate * overlap
            k += 1
    return [f / 1e12 for f in seconds]


def tflops_first(chunks: Sequence[tuple[float, float, float]], seconds: float = FIRST_S) -> float | None:
    """Mean TFLOPS over the first ``seconds`` of load (or all of it when the load was shorter)."""
    if not chunks:
        return None
    window = min(seconds, max(c[1] for c in chunks))
    if window <= 0:
        return None
    flops = 0.0
    for start, stop, f in chunks:
        if stop <= start or start >= window:
            continue
        flops += f * (min(stop, window) - start) / (stop - start)
    return flops / window / 1e12


def tflops_sustained(per_second: Sequence[float]) -> float | None:
    """Median TFLOPS after the first minute; for loads under two minutes, the median of the last half."""
    if not per_second:
        return None
    skip = int(SUSTAINED_AFTER_S) if len(per_second) >= 2 * SUSTAINED_AFTER_S else len(per_second) // 2
    return statistics.median(per_second[skip:])


@dataclass
class GpuLoad:
    """What the load did on one GPU."""

    index: int
    size: int = 0
    dtype: str = ""
    chunks: list[tuple[float, float, float]] = field(default_factory=list)  # (start_s, end_s, flops)
    matmuls: int = 0
    checks: int = 0
    errors: int = 0  # recomputed products that differ from the reference
    first_error_s: float | None = None
    error: str | None = None  # the worker itself failed (CUDA error, out of memory): one line

    @property
    def last_tflops(self) -> float | None:
        if not self.chunks:
            return None
        start, stop, flops = self.chunks[-1]
        return flops / (stop - start) / 1e12 if stop > start else None

    def no_tflops_reason(self, key: str) -> str:
        """Why the TFLOPS figure ``key`` (tflops_sustained, tflops_first_10s) of this load is None."""
        if self.error:
            return "the load failed on this GPU"
        if self.chunks and key == "tflops_sustained":
            return "the load lasted under a whole second"
        return "no timed matmul finished"

    def summary(self) -> GpuLoadSummary:
        """What the load did, as plain data (the document's ``workload.gpus``)."""
        per_second = tflops_per_second(self.chunks)
        first, sustained = tflops_first(self.chunks), tflops_sustained(per_second)
        reasons = {
            "first_error_s": (self.first_error_s, "no wrong result"),
            "tflops_first_10s": (first, self.no_tflops_reason("tflops_first_10s")),
            "tflops_sustained": (sustained, self.no_tflops_reason("tflops_sustained")),
        }
        return GpuLoadSummary(
            index=self.index,
            dtype=self.dtype,
            matrix_size=self.size,
            matmuls=self.matmuls,
            checks=self.checks,
            errors=self.errors,
            first_error_s=self.first_error_s,
            error=self.error,
            tflops_first_10s=first,
            tflops_sustained=sustained,
            tflops_per_second=[round(v, 2) for v in per_second],
            missing={key: why for key, (value, why) in reasons.items() if value is None},
        )


def with_loads(analyses: Sequence[GpuBurnAnalysis], loads: Mapping[int, GpuLoad], gpus: Mapping[int, TraceGpu]) -> None:
    """Each GPU's analysis with what its load measured (TFLOPS, wrong results), then judged against its peers again:
    the throughput half of the clock rule (rigcheck.checks.burn.rates: a clock >= 5% under its peers' fails when its
    throughput is >= 5% under theirs too) needs the TFLOPS the trace's analysis did not have."""
    for a in analyses:
        load = loads.get(a.index)
        if load is None:
            for key in BURN_ONLY_FIELDS:
                a.missing[key] = "no burn load on this GPU"
            continue
        per_second = tflops_per_second(load.chunks)
        a.tflops_sustained = tflops_sustained(per_second)
        a.tflops_first_10s = tflops_first(load.chunks)
        a.errors = load.errors
        for key in BURN_ONLY_FIELDS:  # replace the analysis's "not measured by --analyze"
            a.missing.pop(key, None)
            if getattr(a, key) is None:
                a.missing[key] = load.no_tflops_reason(key)
    judge_peers(analyses, gpus)


class ProductRing:
    """C = A·B recomputed into a ring of output buffers; ``check`` compares those written since the last
    check with the reference, bit for bit. Device-agnostic: tests run it on CPU tensors."""

    def __init__(self, torch: Any, a: Any, b: Any, reference: Any, slots: int = RING) -> None:
        self._torch, self._a, self._b, self.reference = torch, a, b, reference
        self.outputs = [torch.empty_like(reference) for _ in range(slots)]
        self._next = 0
        self._written: set[int] = set()

    def product(self) -> None:
        slot = self._next
        self._next = (slot + 1) % len(self.outputs)
        self._torch.matmul(self._a, self._b, out=self.outputs[slot])
        self._written.add(slot)

    def check(self) -> tuple[int, int]:
        """(wrong, checked): the buffers written since the last check that differ from the reference."""
        written, self._written = sorted(self._written), set()
        wrong = sum(1 for slot in written if not bool(self._torch.equal(self.outputs[slot], self.reference)))
        return wrong, len(written)


def burn_loop(
    load: GpuLoad,
    *,
    product: Callable[[], object],
    check: Callable[[], tuple[int, int]],
    sync: Callable[[], object],
    flops_per_product: float,
    stop: threading.Event,
    t0: float,
    duration_s: float,
    clock: Callable[[], float] = time.perf_counter,
    chunk_target_s: float = CHUNK_TARGET_S,
    on_mismatch: Callable[[GpuLoad, float], None] | None = None,
) -> None:
    """Recompute the product in timed chunks until ``duration_s`` after ``t0`` or ``stop``; after every
    chunk, ``check`` says how many of the products it kept were wrong, and of how many."""
    chunk = 1
    while not stop.is_set():
        start = clock()
        if start - t0 >= duration_s:
            break
        for _ in range(chunk):
            product()
        sync()
        end = clock()
        load.chunks.append((start - t0, end - t0, chunk * flops_per_product))
        load.matmuls += chunk
        wrong, checked = check()
        load.checks += checked
        if wrong:
            load.errors += wrong
            if load.first_error_s is None:
                load.first_error_s = end - t0
            if on_mismatch is not None:
                on_mismatch(load, end - t0)
        per = (end - start) / chunk
        chunk = max(1, min(chunk * 4, round(chunk_target_s / per) if per > 0 else chunk * 4))


# --- the torch side ----------------------------------------------------------------------------------
def _torch_dtype(torch: Any, dtype: str) -> Any:
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}[dtype]


def _element_bytes(dtype: str) -> int:
    return 2 if dtype in ("bf16", "fp16") else 4


def gpu_worker(
    torch: Any,
    load: GpuLoad,
    device: Any,
    *,
    size: int | None,
    stop: threading.Event,
    start_gate: threading.Barrier,
    t0_box: list[float],
    duration_s: float,
    on_mismatch: Callable[[GpuLoad, float], None] | None,
) -> None:
    """One GPU's load (a thread). A CUDA failure ends this GPU's load with ``load.error``; others go on."""
    on_cpu = device.type == "cpu"
    try:
        try:
            if size is None:
                free, _total = torch.cuda.mem_get_info(device)
                size = pick_size(int(free), _element_bytes(load.dtype))
            load.size = size
            dt = _torch_dtype(torch, load.dtype)
            gen = torch.Generator(device=device).manual_seed(20261122 + load.index)
            a = torch.randn(size, size, device=device, dtype=dt, generator=gen)
            b = torch.randn(size, size, device=device, dtype=dt, generator=gen)
            reference = torch.matmul(a, b)
            ring = ProductRing(torch, a, b, reference)
            ring.product()  # warm-up: cuBLAS picks its kernel
            ring.check()

            def sync() -> None:
                if not on_cpu:
                    torch.cuda.synchronize(device)

            sync()
        except RuntimeError as exc:
            load.error = one_line(exc)[:300]  # kept even if the gate below is broken by a Ctrl-C meanwhile
            raise
        finally:
            start_gate.wait()  # every GPU starts its load at the same moment (even one that failed)
        burn_loop(
            load,
            product=ring.product,
            check=ring.check,
            sync=sync,
            flops_per_product=2.0 * size**3,
            stop=stop,
            t0=t0_box[0],
            duration_s=duration_s,
            on_mismatch=on_mismatch,
        )
    except threading.BrokenBarrierError:  # first: it is a RuntimeError too
        load.error = load.error or "the run was stopped before the load started"
    except RuntimeError as exc:  # CUDA errors and out of memory are RuntimeErrors in torch
        load.error = load.error or one_line(exc)[:300]


def run_burn(
    poller: Poller,
    *,
    minutes: float,
    dtype: str = "bf16",
    sink: TraceFile | None = None,
    interval_s: float = 0.1,
    on_progress: Callable[[str], None] | None = None,
    device_for: Callable[[int], Any] | None = None,
    size: int | None = None,
    preroll_s: float = PREROLL_S,
    uuids: dict[int, str] | None = None,
    progress_every_s: float = PROGRESS_EVERY_S,
    fingerprint: bool = False,
    kernel_log: KernelLogReader | None = None,
) -> BurnRun:
    """Load every GPU of the (open) ``poller`` for ``minutes`` while sampling it, then analyse the trace.

    ``device_for`` maps an NVML index to a torch device (default: the CUDA device with its UUID); tests
    pass a CPU device and a tiny ``size``. ``fingerprint``: run the cross-GPU fingerprint on those devices first
    (burn_fingerprint.py; CPU ranks for CPU devices). ``kernel_log``: read the kernel log before the run and after
    it, and judge the lines that appeared meanwhile (burn_kernel_log.py; the GPUs' bus ids are the poller's
    ``bus_ids``). Ctrl-C stops the load and returns what was measured, with ``interrupted`` set (during the
    fingerprint: no load at all). Raises BenchError when CUDA is not available.
    """
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if minutes <= 0:
        raise UsageError("--minutes must be positive")
    torch: Any = require_torch()
    say = on_progress or (lambda _: None)
    indices = sorted(poller.gpus)
    if device_for is None:
        if not torch.cuda.is_available():
            raise BenchError("torch sees no CUDA device (a CPU-only torch build, or CUDA cannot start)")
        ids = uuids or {}
        devices = {i: torch.device("cuda", cuda_index(torch, i, ids.get(i))) for i in indices}
    else:
        devices = {i: device_for(i) for i in indices}
    for i, dev in devices.items():
        if dev.type == "cuda" and dtype == "bf16" and not torch.cuda.is_bf16_supported():
            raise UsageError(f"GPU {i} has no bf16 support (compute capability < 8.0): use --dtype fp16")

    log_before = kernel_log() if kernel_log is not None else None  # before the fingerprint: its lines count too
    checked = burn_fingerprint(torch, devices, on_progress=say) if fingerprint else None
    loads = {i: GpuLoad(index=i, dtype=dtype) for i in indices}
    if checked is not None and was_interrupted(checked.error):
        say("burn: interrupted during the fingerprint; no load was run")
        return _finish(
            poller,
            Trace(source="rigcheck-sampler", gpus=dict(poller.gpus), interval_s=interval_s),
            loads,
            workload=_workload(dtype, minutes, 0.0, loads),
            sampler=SamplerStats().report(),
            interrupted=True,
            checked=checked,
            kernel_log=kernel_log,
            log_before=log_before,
        )

    duration_s = minutes * 60.0
    stop = threading.Event()
    t0_box = [0.0]  # set when the last thread reaches the gate: the load's t = 0
    gate = threading.Barrier(len(indices) + 1, action=lambda: t0_box.__setitem__(0, time.perf_counter()))

    def mismatch(load: GpuLoad, at_s: float) -> None:
        say(f"GPU {load.index}: WRONG RESULT at {at_s:.1f} s: the recomputed product differs from the first one")

    sampler = Sampler(poller, interval_s, buffer_seconds=duration_s + preroll_s + 60.0, sink=sink)
    math_mode = contextlib.ExitStack()
    math_mode.enter_context(fp32_math(torch, dtype, cuda=True))
    threads = [
        threading.Thread(
            target=gpu_worker,
            args=(torch, loads[i], devices[i]),
            kwargs={
                "size": size,
                "stop": stop,
                "start_gate": gate,
                "t0_box": t0_box,
                "duration_s": duration_s,
                "on_mismatch": mismatch,
            },
            name=f"rigcheck-burn-gpu{i}",
            daemon=True,
        )
        for i in indices
    ]
    interrupted = False
    load_started: float | None = None
    load_ended: float | None = None
    sampler.start()
    try:
        try:
            say(f"burn: {len(indices)} GPU(s), {dtype}, {minutes:g} min; preparing the matrices")
            for t in threads:
                t.start()
            time.sleep(preroll_s)  # idle baseline while the matrices are set up
            gate.wait()
            load_started = t0_box[0]
            next_progress = load_started + progress_every_s
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(timeout=0.2)
                now = time.perf_counter()
                if now >= next_progress:
                    next_progress = now + progress_every_s
                    say(_progress_line(now - load_started, duration_s, loads, sampler))
        except KeyboardInterrupt:
            interrupted = True
            say("burn: interrupted; stopping the load and keeping what was measured")
            stop.set()
            gate.abort()
            for t in threads:
                while t.ident is not None and t.is_alive():  # started, and not yet out of its chunk
                    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C still keeps the results
                        t.join(0.2)
        load_ended = time.perf_counter()
        try:
            time.sleep(min(1.0, preroll_s))  # a little of the cool-down
        except KeyboardInterrupt:
            interrupted = True
    finally:
        stop.set()
        sampler.stop()
        math_mode.close()
    load_s = (load_ended - load_started) if load_started is not None and load_ended is not None else 0.0
    return _finish(
        poller,
        sampler.trace(),
        loads,
        workload=_workload(dtype, minutes, min(load_s, duration_s) if not interrupted else load_s, loads),
        sampler=sampler.stats.report(),
        interrupted=interrupted,
        checked=checked,
        kernel_log=kernel_log,
        log_before=log_before,
    )


def _workload(dtype: str, minutes: float, load_s: float, loads: Mapping[int, GpuLoad]) -> BurnWorkload:
    return BurnWorkload(
        method_version=METHOD_VERSION,
        dtype=dtype,
        minutes_requested=minutes,
        load_s=round(load_s, 3),
        timer="perf_counter after device synchronize, per chunk of ~0.1 s",
        gpus=[load.summary() for _, load in sorted(loads.items())],
    )


def _finish(
    poller: Poller,
    trace: Trace,
    loads: Mapping[int, GpuLoad],
    *,
    workload: BurnWorkload,
    sampler: SamplerReport,
    interrupted: bool,
    checked: BurnFingerprint | None,
    kernel_log: KernelLogReader | None,
    log_before: tuple[list[KernelEvent], KernelLogRead] | None,
) -> BurnRun:
    """The trace analysed with the load's figures, the fingerprint's and the kernel log's findings, as a BurnRun."""
    analyses = analyze_trace(trace)
    if checked is not None:
        found = fingerprint_findings(checked)
        for a in analyses:
            if a.index in found:
                a.findings.append(found[a.index])
    log: BurnKernelLog | None = None
    if kernel_log is not None:
        log_after = None
        if not interrupted:
            try:
                log_after = kernel_log()
            except KeyboardInterrupt:
                interrupted = True
        log = judge_run_log(analyses, getattr(poller, "bus_ids", {}), log_before, log_after)
    with_loads(analyses, loads, trace.gpus)  # judges the peers again, and orders every GPU's findings
    return BurnRun(
        trace=trace,
        analyses=analyses,
        workload=workload,
        sampler=sampler,
        interrupted=interrupted,
        fingerprint=checked,
        kernel_log=log,
    )


def _progress_line(elapsed_s: float, duration_s: float, loads: dict[int, GpuLoad], sampler: Sampler) -> str:
    latest = sampler.latest()
    parts = []
    for i, load in sorted(loads.items()):
        s = latest.get(i)
        bits = [f"GPU{i}"]
        if load.error is not None:
            bits.append("FAILED")
        elif (tf := load.last_tflops) is not None:
            bits.append(f"{tf:.0f} TFLOPS")
        if s is not None and s.lost:
            bits.append("LOST")
        elif s is not None:
            if s.power_draw_w is not None:
                bits.append(f"{s.power_draw_w:.0f} W")
            if s.temp_c is not None:
                bits.append(f"{s.temp_c:.0f} C")
            if s.sm_clock_mhz is not None:
                bits.append(f"{s.sm_clock_mhz:.0f} MHz")
            held = [r for r in s.reasons or [] if r != "idle"]
            if held:
                bits.append("+".join(held))
        if load.errors:
            bits.append(f"{load.errors} WRONG RESULTS")
        parts.append(" ".join(bits))
    return f"burn: {elapsed_s:.0f}/{duration_s:.0f} s; " + "; ".join(parts)
