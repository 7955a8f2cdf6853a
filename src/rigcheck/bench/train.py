"""`rigcheck bench train`: the guide's benchmark — gpt2 trained with DDP, timed like a plain torch loop.

The model is ``GPT2LMHeadModel(GPT2Config())`` (124M parameters) built with random weights: nothing is
downloaded, and a random-weight model runs at the same speed as the pretrained one. Each rank trains on
batch 4 × 1024 tokens per step, 200 steps, fp32 (``bf16=True``: bf16 autocast), AdamW at lr 5e-5 (the
Hugging Face Trainer's default that the guide's ``run_clm.py`` used), no gradient clipping, no schedule,
no gradient accumulation: ``loss = model(input_ids=x, labels=x).loss; loss.backward(); opt.step();
opt.zero_grad()``. ``tiny`` is a 2-layer, 64-wide model on 2 × 64 tokens for CI (lr 1e-3, so that ten
steps show the loss falling on a text file).

Data: generated tokens (uniform over the vocabulary, from a generator seeded per rank: the same speed as
real text), or ``text_path``: the file's UTF-8 bytes, one token per byte (id = byte value, 0..255, which
fits every vocabulary here). No hub tokenizer: GPT-2's BPE would pack ~4 bytes into a token, but the step
costs the same for any 1024 ids. The file is cut into blocks of batch × seq_len tokens; rank r takes
block (step × world + r), wrapping round a short file.

Timing: the ranks meet at a barrier, then the clock starts; ``train_runtime_s`` covers every step, the
first ones included (as the guide's ``train_runtime`` does), and ends after the device has finished the
last step. Each step is timed too — CUDA events on a GPU (no synchronisation inside the loop), the host
clock on CPU — and the step-time statistics (median, p10, p90) leave out the first ``warmup`` steps.
Times are taken across ranks (the slowest rank, step by step) before they become rates;
``samples_per_s`` = batch × world × steps / train_runtime_s, ``tokens_per_s`` = that × seq_len.
"""

from __future__ import annotations

import gc
import importlib
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import TypeAdapter

from rigcheck.bench.env import require_torch, software_versions
from rigcheck.bench.progress import PROGRESS_TICK_S, StepTicker
from rigcheck.errors import InputError, UsageError
from rigcheck.model.bench import Method, TrainDocument, TrainRow, row_head

if TYPE_CHECKING:
    from rigcheck.bench.gpu_select import GpuPlacement
    from rigcheck.bench.launcher import WorkerContext
    from rigcheck.model.snapshot import Snapshot

METHOD_VERSION = "train-1"
TRANSFORMERS_MISSING = "the train benchmark needs transformers: pip install 'rigcheck[train]'"

# The guide's run: batch 4 per GPU, 200 steps; gpt2's full context of 1024 tokens (as run_clm's block size).
FULL_STEPS, FULL_BATCH, FULL_SEQ, FULL_WARMUP, FULL_LR = 200, 4, 1024, 5, 5e-5
TINY_STEPS, TINY_BATCH, TINY_SEQ, TINY_WARMUP, TINY_LR = 10, 2, 64, 2, 1e-3
TINY_CONFIG: dict[str, int] = {"n_layer": 2, "n_embd": 64, "n_head": 2, "n_positions": 128, "vocab_size": 512}
GPT2_POSITIONS = 1024
SEED = 1234
PROGRESS_EVERY = 20  # steps between phase marks and progress lines (tiny: every 5); lines also every tick
DEFAULT_TIMEOUT_S = 1800.0
_ROWS = TypeAdapter(list[TrainRow])  # the row rank 0 sent, as plain data, typed again


def require_transformers() -> ModuleType:
    """Import transformers, or say in one line how to get it."""
    try:
        return importlib.import_module("transformers")
    except ImportError:
        raise UsageError(TRANSFORMERS_MISSING) from None


@dataclass(frozen=True)
class TrainShape:
    steps: int
    batch_size: int  # per rank
    seq_len: int
    warmup: int  # leading steps left out of the step-time statistics (still in train_runtime_s)
    lr: float


def train_shape(
    *, tiny: bool, steps: int | None = None, batch_size: int | None = None, seq_len: int | None = None
) -> TrainShape:
    """The run's shape: the guide's (or tiny's) defaults, with what the caller set."""
    steps = steps if steps is not None else (TINY_STEPS if tiny else FULL_STEPS)
    batch_size = batch_size if batch_size is not None else (TINY_BATCH if tiny else FULL_BATCH)
    seq_len = seq_len if seq_len is not None else (TINY_SEQ if tiny else FULL_SEQ)
    if steps < 1 or batch_size < 1 or seq_len < 2:
        raise UsageError("steps and batch size must be at least 1, the sequence length at least 2")
    if not tiny and seq_len > GPT2_POSITIONS:
        raise UsageError(f"gpt2 reads at most {GPT2_POSITIONS} tokens: --seq-len {seq_len} is too long")
    warmup = min(TINY_WARMUP if tiny else FULL_WARMUP, steps - 1)
    return TrainShape(steps, batch_size, seq_len, warmup, TINY_LR if tiny else FULL_LR)


@dataclass(frozen=True)
class TrainOptions:
    """What the worker needs (picklable: it travels to spawned processes)."""

    shape: TrainShape
    bf16: bool
    tiny: bool
    text: bytes | None  # the text's bytes (one token each), or None for generated tokens
    seed: int = SEED
    progress_every: int = PROGRESS_EVERY
    progress_tick_s: float = PROGRESS_TICK_S  # a progress line at least this often while steps finish


def read_text_tokens(path: str | Path, limit: int) -> bytes:
    """The first ``limit`` bytes of a text file: its tokens (one per byte). InputError if unusable."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file" if not p.exists() else "not a regular file", path=str(p))
    try:
        with p.open("rb") as f:
            data = f.read(limit)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=str(p)) from None
    if len(data) < 2:
        raise InputError("the text file is empty (it needs at least 2 bytes to train on)", path=str(p))
    return data


def model_config(transformers: Any, *, tiny: bool, seq_len: int) -> Any:
    """GPT2Config(): gpt2 124M; tiny: 2 layers × 64 wide, vocabulary 512 (byte tokens fit)."""
    if not tiny:
        return transformers.GPT2Config()
    cfg = dict(TINY_CONFIG)
    cfg["n_positions"] = max(cfg["n_positions"], seq_len)
    last = cfg["vocab_size"] - 1
    return transformers.GPT2Config(**cfg, bos_token_id=last, eos_token_id=last)


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), for q in [0, 1]."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class StepStats(TypedDict):
    step_time_median_ms: float
    step_time_p10_ms: float
    step_time_p90_ms: float
    step_time_min_ms: float
    step_time_max_ms: float


def step_stats_ms(step_ms: list[float]) -> StepStats:
    """Median, p10, p90, min and max of step times (ms)."""
    if not step_ms:
        raise ValueError("no step times")
    s = sorted(step_ms)
    return StepStats(
        step_time_median_ms=statistics.median(s),
        step_time_p10_ms=_quantile(s, 0.10),
        step_time_p90_ms=_quantile(s, 0.90),
        step_time_min_ms=s[0],
        step_time_max_ms=s[-1],
    )


def _peak_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)  # Linux reports KiB, macOS bytes


def _token_stream(torch: Any, opts: TrainOptions, *, vocab: int, rank: int, device: Any) -> Any:
    """A 1-D LongTensor on ``device`` holding whole blocks of batch × seq_len tokens."""
    block = opts.shape.batch_size * opts.shape.seq_len
    if opts.text is not None:
        ids = torch.frombuffer(bytearray(opts.text), dtype=torch.uint8).to(torch.long)
        if ids.numel() < block:
            ids = ids.repeat(-(-block // ids.numel()))
        ids = ids[: (ids.numel() // block) * block]
    else:
        blocks = min(opts.shape.steps, 64)  # distinct batches per rank, reused in turn: same speed
        gen = torch.Generator().manual_seed(opts.seed * 1000 + rank)
        ids = torch.randint(0, vocab, (blocks * block,), generator=gen, dtype=torch.long)
    return ids.to(device)


def cpu_threads_per_rank(world_size: int) -> int:
    """Intra-op threads for one CPU rank: this machine's cores shared out, so ranks do not oversubscribe them."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, world_size))


def train_worker(ctx: WorkerContext, opts: TrainOptions) -> None:
    """One rank: build gpt2, wrap it in DDP, train ``opts.shape.steps`` steps; rank 0 reports one row.

    On CPU the rank's intra-op threads are set to its share of the cores for the run (and put back after).
    """
    torch: Any = require_torch()
    if ctx.device.type == "cuda":
        _train(torch, ctx, opts)
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(min(threads, cpu_threads_per_rank(ctx.world_size)))
    try:
        _train(torch, ctx, opts)
    finally:
        torch.set_num_threads(threads)


def _train(torch: Any, ctx: WorkerContext, opts: TrainOptions) -> None:
    transformers = require_transformers()
    transformers.logging.set_verbosity_error()  # keep its advice off the workers' stderr
    dist: Any = importlib.import_module("torch.distributed")
    ddp_cls: Any = importlib.import_module("torch.nn.parallel").DistributedDataParallel

    shape = opts.shape
    device = ctx.device
    cuda = device.type == "cuda"
    lead = ctx.rank == 0
    world = ctx.world_size

    torch.manual_seed(opts.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    config = model_config(transformers, tiny=opts.tiny, seq_len=shape.seq_len)
    model = transformers.GPT2LMHeadModel(config).to(device)
    model.train()
    params = sum(int(p.numel()) for p in model.parameters())
    ddp = ddp_cls(model, device_ids=[device.index] if cuda else None)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=shape.lr)

    stream = _token_stream(torch, opts, vocab=int(config.vocab_size), rank=ctx.rank, device=device)
    block = shape.batch_size * shape.seq_len
    nblocks = stream.numel() // block

    def batch(step: int) -> Any:
        index = ((step * world + ctx.rank) % nblocks) if opts.text is not None else (step % nblocks)
        return stream[index * block : (index + 1) * block].view(shape.batch_size, shape.seq_len)

    events: list[Any] = []
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(shape.steps + 1)]
    host_marks: list[float] = []
    losses: list[Any] = []
    every = max(1, 5 if opts.tiny else opts.progress_every)
    if lead:
        ctx.progress(
            f"train: gpt2{' (tiny)' if opts.tiny else ''}, {params / 1e6:.1f}M parameters, {shape.steps} steps"
        )

    dist.barrier()
    if cuda:
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    ticker = StepTicker("train", shape.steps, tick_s=opts.progress_tick_s)
    if cuda:
        events[0].record()
    else:
        host_marks.append(start)
    for step in range(shape.steps):
        x = batch(step)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=opts.bf16):
            loss = ddp(input_ids=x, labels=x).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        if cuda:
            events[step + 1].record()
        else:
            host_marks.append(time.perf_counter())
        if (step + 1) % every == 0:
            # every rank, not every step (a message per step would be timed): names the rank that hangs
            ctx.phase(f"train step {step + 1}")
        if lead:  # by time (a line within PROGRESS_TICK_S while steps finish), and every ``every`` steps
            line = ticker.step(step + 1)
            if line is None and (step + 1) % every == 0 and step + 1 < shape.steps:
                line = ticker.line(step + 1, time.perf_counter())
            if line is not None:
                ctx.progress(line)
    if cuda:
        torch.cuda.synchronize(device)
    runtime = time.perf_counter() - start

    if cuda:
        step_s = [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(shape.steps)]
        peak = int(torch.cuda.max_memory_allocated(device))
    else:
        step_s = [host_marks[i + 1] - host_marks[i] for i in range(shape.steps)]
        peak = _peak_rss_bytes()

    # Across ranks: the slowest rank's runtime, step by step, and peak memory; the mean loss.
    times = torch.tensor([runtime, float(peak), *step_s], dtype=torch.float64, device=device)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    loss_sum = torch.stack(losses).float()
    dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)
    # DDP's reducer must go while its process group still exists: left to the garbage collector, it can be
    # destroyed after the launcher tears the group down, and gloo then aborts the process at exit.
    del ddp, optimizer, model, events
    gc.collect()
    dist.barrier()
    if not lead:
        return
    runtime, peak_f, *step_s = times.tolist()
    loss_mean = [v / world for v in loss_sum.tolist()]
    timed_ms = [t * 1e3 for t in step_s[shape.warmup :]]
    samples_per_s = shape.batch_size * world * shape.steps / runtime
    finite = all(math.isfinite(v) for v in loss_mean)
    k = max(1, min(3, shape.steps // 3))  # compare the mean of the first and last k steps' loss
    first, last = statistics.fmean(loss_mean[:k]), statistics.fmean(loss_mean[-k:])
    result = TrainRow(
        **row_head(
            name="train",
            unit="ms",
            samples=timed_ms,
            method=_method(shape, cuda=cuda),
            backend=ctx.backend,
            world_size=world,
        ),
        model="gpt2-tiny" if opts.tiny else "gpt2",
        parameters=params,
        dtype="bf16 autocast" if opts.bf16 else "fp32",
        optimizer=f"AdamW lr {shape.lr:g}",
        data="text bytes" if opts.text is not None else "generated tokens",
        steps=shape.steps,
        warmup_steps=shape.warmup,
        timed_steps=len(timed_ms),
        batch_size=shape.batch_size,
        global_batch_size=shape.batch_size * world,
        seq_len=shape.seq_len,
        train_runtime_s=runtime,
        samples_per_s=samples_per_s,
        tokens_per_s=samples_per_s * shape.seq_len,
        **step_stats_ms(timed_ms),
        peak_memory_bytes=int(peak_f),
        peak_memory_kind="cuda max_memory_allocated" if cuda else "host process peak RSS (ru_maxrss)",
        loss_first=loss_mean[0],
        loss_final=loss_mean[-1],
        loss_finite=finite,
        loss_decreased=finite and last < first,
        correct=finite,  # a non-finite loss means the numbers trained on nothing
    )
    ctx.report(result.model_dump())


def _method(shape: TrainShape, *, cuda: bool) -> Method:
    return Method(
        method_version=METHOD_VERSION,
        warmup=shape.warmup,
        repeats=shape.steps - shape.warmup,
        statistic="median",
        timer="cuda_events" if cuda else "perf_counter",
    )


def method_notes(shape: TrainShape, *, tiny: bool, bf16: bool, text: bool, cuda: bool) -> list[str]:
    """How the figures were made, for the document's ``notes``."""
    model = "gpt2-tiny (2 layers, 64 wide, vocabulary 512)" if tiny else "gpt2 124M (GPT2Config())"
    return [
        f"{model}, random weights (nothing downloaded; same speed as pretrained), DDP, "
        f"{'bf16 autocast' if bf16 else 'fp32'}, AdamW lr {shape.lr:g}, batch {shape.batch_size} × "
        f"{shape.seq_len} tokens per rank, {shape.steps} steps",
        "data: the text file's UTF-8 bytes, one token per byte (no hub tokenizer)"
        if text
        else "data: generated tokens, uniform over the vocabulary, seeded per rank",
        f"train_runtime_s covers all {shape.steps} steps (warm-up included, as the guide's train_runtime); "
        f"step times leave out the first {shape.warmup} and are timed with "
        f"{'CUDA events' if cuda else 'the host clock'}; the slowest rank counts",
        "samples_per_s = batch × world size × steps / train_runtime_s (the guide's 1.963 "
        "'train_samples_per_second' is 200 steps / 101.9 s: that Trainer version counted steps, "
        "not samples; its 2 × 4 × 200 samples took 101.9 s = 15.7 samples/s)",
        "peak memory: torch.cuda.max_memory_allocated"
        if cuda
        else "peak memory: the worker process's peak RSS (ru_maxrss), host memory, not a GPU figure; "
        "each CPU rank uses its share of the cores (torch.set_num_threads)",
    ]


def run_train(
    *,
    cpu: bool,
    world_size: int | None,
    steps: int | None = None,
    batch_size: int | None = None,
    seq_len: int | None = None,
    bf16: bool = False,
    tiny: bool = False,
    text_path: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    snapshot: Snapshot | None,
    env: Mapping[str, str] | None = None,
    nccl_debug: bool = False,
    on_progress: Callable[[str], None] | None = None,
    placement: GpuPlacement | None = None,
) -> tuple[TrainDocument, str]:
    """Run the gpt2 DDP benchmark on ``world_size`` processes.

    Returns its ``rigcheck.bench/1`` document (``snapshot``: the machine, as the caller probed it) and the
    ranks' NCCL_DEBUG=INFO output ("" unless ``nccl_debug``: for `compare_p2p`). ``world_size`` None: 2 with
    ``cpu``, else every visible GPU; with ``placement`` (--gpus) one process on each of its GPUs.
    """
    torch: Any = require_torch()
    transformers = require_transformers()
    shape = train_shape(tiny=tiny, steps=steps, batch_size=batch_size, seq_len=seq_len)
    if placement is not None:
        world_size = placement.world_size(world_size)
        env = placement.worker_env(env)
    if not cpu and not torch.cuda.is_available():
        raise UsageError("no CUDA GPU visible to torch: run with --cpu (gloo on CPU processes)")
    if world_size is None:
        world_size = 2 if cpu else int(torch.cuda.device_count())
    if not cpu and world_size > torch.cuda.device_count():
        raise UsageError(f"world size {world_size} needs {world_size} GPUs; torch sees {torch.cuda.device_count()}")
    text = None
    if text_path is not None:
        text = read_text_tokens(text_path, shape.steps * world_size * shape.batch_size * shape.seq_len)

    from rigcheck.bench.launcher import launch

    opts = TrainOptions(shape=shape, bf16=bf16, tiny=tiny, text=text)
    outcome = launch(
        train_worker,
        opts,
        world_size=world_size,
        cpu=cpu,
        timeout_s=timeout_s,
        env=env,
        nccl_debug=nccl_debug,
        on_progress=on_progress,
    )
    error = outcome.error
    if error is None and not outcome.rows:
        error = "the run ended without a result"
    versions = software_versions().model_copy(update={"transformers": str(getattr(transformers, "__version__", None))})
    doc = TrainDocument(
        partial=outcome.partial or error is not None,
        error=error,
        method=_method(shape, cuda=not cpu),
        backend="gloo" if cpu else "nccl",
        world_size=world_size,
        versions=versions,
        snapshot=snapshot,
        results=_ROWS.validate_python(outcome.rows),
        notes=method_notes(shape, tiny=tiny, bf16=bf16, text=text is not None, cuda=not cpu)
        + ([placement.note] if placement is not None and placement.note else []),
        wall_s=outcome.wall_s,
        gpus=list(placement.indices) if placement is not None else None,
    )
    return doc, outcome.nccl_log


__all__ = [
    "METHOD_VERSION",
    "TrainOptions",
    "TrainShape",
    "model_config",
    "read_text_tokens",
    "require_transformers",
    "run_train",
    "step_stats_ms",
    "train_shape",
    "train_worker",
]
