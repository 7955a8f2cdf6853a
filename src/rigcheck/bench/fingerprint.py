"""The cross-GPU fingerprint's workload: the same seeded computation on every GPU (every CPU rank on a CPU run),
each step's output hashed, for rigcheck.checks.verify.fingerprint to compare across identical GPUs.

The workload, in order (every input drawn on the CPU from one seeded generator, so each rank starts from the same
bits):
- a **chain of products per dtype** the card computes (fp32 with TF32 off, tf32, bf16, fp16 by compute capability;
  fp32 and bf16 on a CPU): ``x = a``; ``x = (x @ w_i) / sqrt(n)`` for each of ``depth`` weights, each product's
  output hashed (``gemm_<dtype>_<i>``). A flipped bit early in the chain is carried through every later product;
  the first step that differs names where it went wrong.
- **one GPT-2 training step** (a GPT-2 of a few layers written out in torch: embeddings, causal self-attention,
  GELU MLP, layer norms, tied LM head, cross-entropy), its loss and its gradients hashed (``gpt2_loss``,
  ``gpt2_grads``): the kernels of a real step (softmax, layer norm, the embedding's backward), not products alone.

Determinism: on a GPU ``torch.use_deterministic_algorithms(True)`` with ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` (the
setting cuBLAS needs for bitwise reproducibility across runs with several streams, torch's "Reproducibility" notes)
and TF32 off but in the tf32 chain; on a CPU rank one intra-op thread (a CPU product's blocking depends on it).

``reference`` (the re-run of GPUs the peers cannot settle, and of a GPU with no peer): each chain's final output
(its first REFERENCE_ROWS rows) and the GPT-2 loss are computed again in float64 on the CPU from the same (rounded)
inputs, and the largest error relative to the reference's largest magnitude is reported per chain (the judge holds
it to a tolerance per dtype).

Test hook: ``RIGCHECK_TEST_FLIP=GPU[:BITS[:persistent]]`` flips BITS (default 1) bits of the first element of that
GPU's (rank's, on a CPU run) first product, from the exponent's top bit down, before it is hashed and carried on:
on the first run only, or on every run with ``persistent``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from rigcheck.bench.device.common import device_name, is_cuda
from rigcheck.bench.device.matmul import fp32_math
from rigcheck.bench.env import require_torch
from rigcheck.bench.launcher import WorkerContext, launch
from rigcheck.checks.verify.fingerprint import needs_reference
from rigcheck.errors import UsageError
from rigcheck.model.fingerprint import FLIP_VAR, FingerprintRow, FingerprintRun, FingerprintStep

SEED = 20260524
REFERENCE_ROWS = 32  # rows of each chain recomputed in float64 for the reference
DIGEST_HEX = 16  # 64 bits of SHA-256: two different outputs share a digest with odds of 2^-64
# cuBLAS is bitwise reproducible across runs only with a fixed workspace per stream (cuBLAS docs, "Results
# reproducibility"; torch.use_deterministic_algorithms raises without it).
DETERMINISTIC_ENV: Mapping[str, str] = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


@dataclass(frozen=True)
class Gpt2Shape:
    """A small GPT-2: enough of every kernel of a step, little enough to take well under a second."""

    vocab: int
    context: int
    embd: int
    layers: int
    heads: int
    batch: int


@dataclass(frozen=True)
class FingerprintPayload:
    dtypes: tuple[str, ...]
    size: int  # n of the n x n products
    depth: int  # products per chain
    gpt2: Gpt2Shape
    reference: bool  # also compute each chain's float64 CPU reference error
    only: tuple[int, ...] | None  # the ranks that compute; the others join the launch and leave (a re-run)
    flip: tuple[int, int] | None  # (rank, bits) whose first product is flipped on this run
    run: int


GPU_SIZE, GPU_DEPTH = 4096, 4
CPU_SIZE, CPU_DEPTH = 96, 3
GPU_GPT2 = Gpt2Shape(vocab=8192, context=256, embd=768, layers=2, heads=12, batch=4)
CPU_GPT2 = Gpt2Shape(vocab=256, context=32, embd=64, layers=2, heads=4, batch=2)
METHOD = (
    "seeded inputs; a chain of products per dtype ((x @ w) / sqrt(n), each output hashed) and one GPT-2 training "
    "step (loss and gradients hashed), under torch's deterministic algorithms; SHA-256 of each output's bytes"
)


def parse_flip(text: str | None) -> tuple[int, int, bool] | None:
    """``RIGCHECK_TEST_FLIP``: ``GPU[:BITS[:persistent]]`` -> (gpu, bits, persistent); None when unset."""
    if not text:
        return None
    parts = text.split(":")
    try:
        gpu = int(parts[0])
        bits = int(parts[1]) if len(parts) > 1 and parts[1] else 1
    except ValueError:
        raise UsageError(f"{FLIP_VAR} takes GPU[:BITS[:persistent]], not {text!r}") from None
    persistent = len(parts) > 2 and parts[2] == "persistent"
    if gpu < 0 or not 1 <= bits <= 8 or len(parts) > 3 or (len(parts) > 2 and not persistent):
        raise UsageError(f"{FLIP_VAR} takes GPU[:BITS[:persistent]] (BITS 1-8), not {text!r}")
    return gpu, bits, persistent


def gpu_dtypes(capability: tuple[int, int] | None) -> tuple[str, ...]:
    """The chains a GPU computes: fp32 and fp16 everywhere, tf32 and bf16 from compute capability 8.0 (Ampere)."""
    if capability is not None and capability >= (8, 0):
        return ("fp32", "tf32", "bf16", "fp16")
    return ("fp32", "fp16")


def _torch_dtype(torch: Any, name: str) -> Any:
    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def digest(torch: Any, tensor: Any) -> str:
    """The first DIGEST_HEX hex digits of the SHA-256 of a tensor's bytes (on the CPU, contiguous)."""
    raw = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(raw.numpy().tobytes()).hexdigest()[:DIGEST_HEX]


def flip_bits(torch: Any, tensor: Any, bits: int) -> None:
    """Flip ``bits`` bits of the tensor's first element in place, from the exponent's top bit down."""
    width = tensor.element_size() * 8
    as_int = {16: torch.int16, 32: torch.int32, 64: torch.int64}[width]
    mask = sum(1 << (width - 2 - i) for i in range(bits))
    flat = tensor.view(-1).view(as_int)
    flat[0] = flat[0] ^ mask


def _relative_error(torch: Any, got: Any, ref: Any) -> float:
    scale = float(ref.abs().max())
    err = float((got.to(torch.float64) - ref).abs().max())
    return err / scale if scale > 0 else err


def _chain(torch: Any, device: Any, dtype_name: str, payload: FingerprintPayload, flip: int) -> tuple[list[str], Any]:
    """The products of one chain: each output's digest, and the float64 reference error (None unless asked)."""
    n, depth = payload.size, payload.depth
    gen = torch.Generator().manual_seed(SEED + n)
    a = torch.randn(n, n, generator=gen)
    weights = [torch.randn(n, n, generator=gen) for _ in range(depth)]
    dtype = _torch_dtype(torch, dtype_name)
    scale = 1.0 / math.sqrt(n)
    x = a.to(dtype).to(device)
    digests: list[str] = []
    with fp32_math(torch, dtype_name, is_cuda(device)):  # TF32 for the tf32 chain alone (matmul's one TF32 API)
        for i, w in enumerate(weights):
            x = (x @ w.to(dtype).to(device)) * scale
            if i == 0 and flip:
                flip_bits(torch, x, flip)
            digests.append(digest(torch, x))
    if not payload.reference:
        return digests, None
    # Row r of each product depends on row r of the one before only: the first REFERENCE_ROWS rows of the chain
    # are checked (a 4096-wide chain in float64 whole would take the CPU a minute; these take milliseconds).
    rows = min(n, REFERENCE_ROWS)
    ref = a[:rows].to(dtype).to(torch.float64)
    for w in weights:
        ref = (ref @ w.to(dtype).to(torch.float64)) * scale
    return digests, _relative_error(torch, x[:rows].to("cpu"), ref)


def _gpt2_params(torch: Any, shape: Gpt2Shape) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(SEED + 1)
    e, v, t = shape.embd, shape.vocab, shape.context

    def normal(*size: int) -> Any:
        return torch.randn(*size, generator=gen) * 0.02

    params = {"wte": normal(v, e), "wpe": normal(t, e), "lnf_w": torch.ones(e), "lnf_b": torch.zeros(e)}
    for layer in range(shape.layers):
        p = f"h{layer}_"
        params |= {
            p + "ln1_w": torch.ones(e),
            p + "ln1_b": torch.zeros(e),
            p + "qkv_w": normal(e, 3 * e),
            p + "qkv_b": torch.zeros(3 * e),
            p + "proj_w": normal(e, e),
            p + "proj_b": torch.zeros(e),
            p + "ln2_w": torch.ones(e),
            p + "ln2_b": torch.zeros(e),
            p + "fc_w": normal(e, 4 * e),
            p + "fc_b": torch.zeros(4 * e),
            p + "out_w": normal(4 * e, e),
            p + "out_b": torch.zeros(e),
        }
    return params


def gpt2_loss(torch: Any, params: Mapping[str, Any], tokens: Any, shape: Gpt2Shape) -> Any:
    """The language-modelling loss of GPT-2's forward pass (pre-norm blocks, causal attention, tied head)."""
    functional = torch.nn.functional
    b, t = tokens.shape
    e, heads = shape.embd, shape.heads
    x = params["wte"][tokens] + params["wpe"][:t]
    causal = torch.ones(t, t, dtype=torch.bool, device=tokens.device).triu(1)
    for layer in range(shape.layers):
        p = f"h{layer}_"
        h = functional.layer_norm(x, (e,), params[p + "ln1_w"], params[p + "ln1_b"])
        q, k, v = (h @ params[p + "qkv_w"] + params[p + "qkv_b"]).split(e, dim=-1)
        q, k, v = (z.view(b, t, heads, e // heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(e // heads)
        att = att.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, e)
        x = x + y @ params[p + "proj_w"] + params[p + "proj_b"]
        h = functional.layer_norm(x, (e,), params[p + "ln2_w"], params[p + "ln2_b"])
        x = x + functional.gelu(h @ params[p + "fc_w"] + params[p + "fc_b"]) @ params[p + "out_w"] + params[p + "out_b"]
    logits = functional.layer_norm(x, (e,), params["lnf_w"], params["lnf_b"]) @ params["wte"].t()
    return functional.cross_entropy(logits[:, :-1].reshape(-1, shape.vocab), tokens[:, 1:].reshape(-1))


def _gpt2_step(torch: Any, device: Any, payload: FingerprintPayload) -> tuple[list[str], float | None]:
    shape = payload.gpt2
    cpu_params = _gpt2_params(torch, shape)
    gen = torch.Generator().manual_seed(SEED + 2)
    tokens = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=gen)
    params = {k: v.to(device).requires_grad_(True) for k, v in cpu_params.items()}
    with fp32_math(torch, "fp32", is_cuda(device)):  # IEEE fp32 products, whatever the process default
        loss = gpt2_loss(torch, params, tokens.to(device), shape)
        loss.backward()
    grads = torch.cat([params[k].grad.reshape(-1) for k in sorted(params)])
    digests = [digest(torch, loss), digest(torch, grads)]
    if not payload.reference:
        return digests, None
    with torch.no_grad():
        ref = gpt2_loss(torch, {k: v.to(torch.float64) for k, v in cpu_params.items()}, tokens, shape)
    return digests, _relative_error(torch, loss.detach().to("cpu"), ref)


def compute_row(torch: Any, device: Any, payload: FingerprintPayload, rank: int) -> FingerprintRow:
    """The workload on ``device`` as rank ``rank``: one :class:`FingerprintRow` (this process, no launch: what a
    fleet rank calls on its own GPU, and each verify worker)."""
    cuda = is_cuda(device)
    flip = payload.flip[1] if payload.flip is not None and payload.flip[0] == rank else 0
    steps: list[FingerprintStep] = []
    errors: dict[str, float] = {}
    for i, dtype_name in enumerate(payload.dtypes):
        digests, err = _chain(torch, device, dtype_name, payload, flip if i == 0 else 0)
        steps += [FingerprintStep(name=f"gemm_{dtype_name}_{j + 1}", digest=d) for j, d in enumerate(digests)]
        if err is not None:
            errors[dtype_name] = err
    digests, err = _gpt2_step(torch, device, payload)
    names = ("gpt2_loss", "gpt2_grads")
    steps += [FingerprintStep(name=name, digest=d) for name, d in zip(names, digests, strict=True)]
    if err is not None:
        errors["gpt2"] = err
    props = torch.cuda.get_device_properties(device) if cuda else None
    return FingerprintRow(
        rank=rank,
        gpu=device.index if cuda else None,
        device_name=device_name(torch, device),
        sm_count=props.multi_processor_count if props is not None else None,
        torch=str(torch.__version__),
        cuda=torch.version.cuda,
        run=payload.run,
        steps=steps,
        reference_error=errors if payload.reference else None,
    )


@contextlib.contextmanager
def deterministic(torch: Any, device: Any) -> Iterator[None]:
    """The settings the workload needs, restored afterwards (a fleet rank goes on measuring after it)."""
    if is_cuda(device):
        torch.cuda.set_device(device)
        was = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)  # the embedding's backward: no atomic adds in any order
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was)
        return
    # One thread: a CPU product's blocking, and so its rounding, follows the thread count; every op here is then
    # deterministic. (use_deterministic_algorithms would cost each CPU rank a second: it imports inductor.)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def fingerprint_worker(ctx: WorkerContext, payload: FingerprintPayload) -> None:
    """Compute the workload on ``ctx.device`` and report one :class:`FingerprintRow`."""
    torch: Any = require_torch()
    if payload.only is not None and ctx.rank not in payload.only:
        return
    device = torch.device(ctx.device)
    with deterministic(torch, device):
        row = compute_row(torch, device, payload, ctx.rank)
    ctx.progress(f"rank {ctx.rank}: fingerprint of {len(row.steps)} steps")
    ctx.report(row.model_dump())


def make_payload(
    *,
    cpu: bool,
    dtypes: Sequence[str] | None = None,
    reference: bool = False,
    only: Sequence[int] | None = None,
    run: int = 1,
    environ: Mapping[str, str] | None = None,
) -> FingerprintPayload:
    """The workload's parameters (the test hook read from ``environ``, default the process's)."""
    env = os.environ if environ is None else environ
    flip_spec = parse_flip(env.get(FLIP_VAR))
    flip = None
    if flip_spec is not None and (flip_spec[2] or run == 1):
        flip = (flip_spec[0], flip_spec[1])
    return FingerprintPayload(
        dtypes=tuple(dtypes) if dtypes else (("fp32", "bf16") if cpu else ("fp32", "fp16")),
        size=CPU_SIZE if cpu else GPU_SIZE,
        depth=CPU_DEPTH if cpu else GPU_DEPTH,
        gpt2=CPU_GPT2 if cpu else GPU_GPT2,
        reference=reference,
        only=tuple(only) if only is not None else None,
        flip=flip,
        run=run,
    )


def run_fingerprint(
    *,
    cpu: bool,
    world_size: int,
    timeout_s: float,
    dtypes: Sequence[str] | None = None,
    reference: bool = False,
    only: Sequence[int] | None = None,
    run: int = 1,
    environ: Mapping[str, str] | None = None,
    on_progress: Callable[[str], None] | None = None,
    worker_env: Mapping[str, str] | None = None,
) -> FingerprintRun:
    """Launch the workload on ``world_size`` ranks (GPUs 0..n-1, or CPU processes) and collect their rows.

    ``dtypes``: the chains (default: fp32 and bf16 on CPU; on GPUs each worker's by its compute capability is
    the caller's to give, from the snapshot). ``only``: the ranks that compute (a re-run). ``worker_env``: set in
    each worker besides the determinism settings (CUDA_VISIBLE_DEVICES: the GPUs ranks 0..n-1 are)."""
    payload = make_payload(cpu=cpu, dtypes=dtypes, reference=reference, only=only, run=run, environ=environ)
    outcome = launch(
        fingerprint_worker,
        payload,
        world_size=world_size,
        cpu=cpu,
        timeout_s=timeout_s,
        env={**DETERMINISTIC_ENV, **(worker_env or {})},
        on_progress=on_progress,
    )
    rows = TypeAdapter(list[FingerprintRow]).validate_python(outcome.rows)
    return FingerprintRun(rows=sorted(rows, key=lambda r: r.rank), error=outcome.error, method=METHOD)


@dataclass(frozen=True)
class FingerprintRuns:
    """The first run on every rank, and the re-run with the float64 reference of those the peers cannot settle."""

    first: FingerprintRun
    again: FingerprintRun | None  # None: no rank needed it, or the first run did not finish

    @property
    def error(self) -> str | None:
        """How the last launch ended (None: done): the re-run's when there was one."""
        return self.again.error if self.again is not None else self.first.error

    @property
    def again_rows(self) -> list[FingerprintRow]:
        return self.again.rows if self.again is not None else []


def fingerprint_runs(
    *,
    cpu: bool,
    world_size: int,
    timeout_s: float,
    dtypes: Sequence[str] | None = None,
    only: Sequence[int] | None = None,
    environ: Mapping[str, str] | None = None,
    on_progress: Callable[[str], None] | None = None,
    on_rerun: Callable[[list[int]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    worker_env: Mapping[str, str] | None = None,
) -> FingerprintRuns:
    """The fingerprint as `verify` and `burn` run it: the workload on the ranks (``only``: those that compute), then,
    when it finished, the ranks rigcheck.checks.verify.fingerprint.needs_reference names once more with the float64
    reference (``on_rerun`` told which first), in what is left of ``timeout_s`` (at least a second)."""
    started = clock()
    first = run_fingerprint(
        cpu=cpu,
        world_size=world_size,
        timeout_s=timeout_s,
        dtypes=dtypes,
        only=only,
        environ=environ,
        on_progress=on_progress,
        worker_env=worker_env,
    )
    again = needs_reference(first.rows) if first.error is None else []
    if not again:
        return FingerprintRuns(first, None)
    if on_rerun is not None:
        on_rerun(again)
    rerun = run_fingerprint(
        cpu=cpu,
        world_size=world_size,
        timeout_s=max(1.0, timeout_s - (clock() - started)),
        dtypes=dtypes,
        reference=True,
        only=again,
        run=2,
        environ=environ,
        on_progress=on_progress,
        worker_env=worker_env,
    )
    return FingerprintRuns(first, rerun)
