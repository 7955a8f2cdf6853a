"""The communication planner behind ``rigcheck plan``: bytes on the wire per GPU per step, and what they cost.

Bytes per GPU per step, for a model of P parameters whose gradients (and gathered parameters) travel in a dtype
of b bytes, S = P x b, on n GPUs (ring algorithms; ZERO_PAPER §7, NCCL_TESTS):
- DDP: one all-reduce of the gradients. A ring all-reduce is a reduce-scatter then an all-gather; each GPU
  sends (n-1)/n x S in each half: 2(n-1)/n x S.
- ZeRO-1 / ZeRO-2: a reduce-scatter of the gradients ((n-1)/n x S) and an all-gather of the updated parameters
  ((n-1)/n x S): the same 2(n-1)/n x S as DDP (ZeRO paper: "2Ψ", the same as baseline data parallelism).
- ZeRO-3 / FSDP: the parameters are all-gathered twice, in the forward and again in the backward pass, and the
  gradients reduce-scattered: 3(n-1)/n x S = 1.5x DDP (ZeRO paper: "3Ψ ... 1.5x").

Time on the wire = bytes / bus bandwidth (nccl-tests defines busbw so that this holds for all-reduce,
all-gather and reduce-scatter: busbw = algbw x 2(n-1)/n, resp. (n-1)/n). Compute per step = 6 x P x tokens
(Kaplan et al. 2020) / achieved FLOPS.

"124M" means exactly 124,000,000 parameters: the issue's figure, 496 MB per GPU per step for gpt2 / 2 GPUs /
fp32 DDP, is 124e6 x 4 B. gpt2 itself (GPT2LMHeadModel, tied embeddings) has 124,439,808 parameters
(``gpt2_param_count()``; ``--params gpt2``), 497.76 MB per step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, cast, get_args

from rigcheck.errors import UsageError
from rigcheck.facts import catalog
from rigcheck.facts.catalog import A100_DS, ADA_WP, H100_DS, TITAN_RTX
from rigcheck.facts.nvlink import GA102_WP, nvlink_pair_bandwidth_gbps, variant_for
from rigcheck.facts.pcie import PCIE_SOURCE, gpu_pcie_link, pcie_bandwidth_gbps
from rigcheck.model import Gpu, Snapshot
from rigcheck.model.plan import Collective, Dtype, PlanDocument, PlanInputs, Strategy, StrategyRow

STRATEGIES: tuple[str, ...] = get_args(Strategy)
DTYPES: tuple[str, ...] = get_args(Dtype)

ZERO_PAPER = (
    "Rajbhandari, Rasley, Ruwase, He: ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, "
    "SC 2020 (arXiv:1910.02054), §7 'Communication Analysis of ZeRO-DP' and §5 / Figure 1 (model-state memory)"
)
NCCL_TESTS = "NVIDIA nccl-tests doc/PERFORMANCE.md, https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
KAPLAN = "Kaplan et al., Scaling Laws for Neural Language Models (arXiv:2001.08361) §2.1: training compute C ≈ 6NT"

BYTES_PER_ELEMENT: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2}

# Model FLOPs utilisation assumed when only a peak is known. An assumption, not a measurement: published
# large-scale runs report 30-55% (PaLM 540B: 46.2%, Chowdhery et al. 2022, Table 3). Measure it with
# `rigcheck bench train` and pass --tflops.
ASSUMED_MFU = 0.40
MFU_SOURCE = (
    "40% model FLOPs utilisation assumed, not measured (published large runs report 30-55%, e.g. PaLM 540B 46.2%, "
    "Chowdhery et al. 2022 Table 3); pass --tflops with a measured figure to replace it"
)
# Backward pass = 2/3 of training FLOPs (forward 2NT, backward 4NT: Kaplan et al. §2.1). DDP overlaps its
# bucketed all-reduce with the backward pass, so communication shorter than the backward pass can hide.
BACKWARD_SHARE = 2 / 3

# Peak FP32 (CUDA-core, non-tensor) TFLOPS: fp32 training in PyTorch runs here unless TF32 is switched on.
FP32_PEAK_TFLOPS: dict[str, tuple[float, str]] = {
    "TITAN RTX": (4608 * 1.770 * 2 / 1000, TITAN_RTX + ": 4608 CUDA cores x 1770 MHz boost x 2 FLOP/clock"),
    "GeForce RTX 3090": (35.6, GA102_WP + " (Table: peak FP32 TFLOPS)"),
    "GeForce RTX 4090": (82.6, ADA_WP + " (Appendix: peak FP32 TFLOPS)"),
    "A100 SXM4 40GB": (19.5, A100_DS + " (FP32 19.5 TFLOPS)"),
    "A100 SXM4 80GB": (19.5, A100_DS + " (FP32 19.5 TFLOPS)"),
    "H100 SXM5": (67.0, H100_DS + " (FP32 67 TFLOPS, SXM)"),
}

# Why a number of the plan is None (its `missing` map; comm_time_reason / compute_time_reason say the same).
ONE_GPU_REASON = "one GPU: nothing goes on the wire"
NO_BUSBW_REASON = "no bus bandwidth: pass --busbw GBPS, --from a bench result, --link, or a snapshot with GPU pairs"
NO_TOKENS_REASON = "no tokens per step: pass --tokens (sequences x sequence length per GPU)"
NO_TFLOPS_REASON = "no FLOPS: pass --tflops (achieved) or --model (catalog peak x an assumed utilisation)"
NO_MEMORY_REASON = "no --model: the memory per GPU is unknown"

# When the snapshot names a link but not its speed.
DEFAULT_PCIE = (3, 16)
DEFAULT_PCIE_NOTE = "PCIe generation/width not in the snapshot: assumed PCIe 3.0 x16 (the TITAN RTX's interface)"


# --- small pure functions --------------------------------------------------------------------------------------


def gpt2_param_count(
    vocab: int = 50257, n_positions: int = 1024, n_embd: int = 768, n_layer: int = 12, tied: bool = True
) -> int:
    """Parameters of GPT2LMHeadModel from its config (124,439,808 for gpt2 small)."""
    per_layer = (
        2 * n_embd  # ln_1
        + n_embd * 3 * n_embd
        + 3 * n_embd  # attn.c_attn
        + n_embd * n_embd
        + n_embd  # attn.c_proj
        + 2 * n_embd  # ln_2
        + n_embd * 4 * n_embd
        + 4 * n_embd  # mlp.c_fc
        + 4 * n_embd * n_embd
        + n_embd  # mlp.c_proj
    )
    total = vocab * n_embd + n_positions * n_embd + n_layer * per_layer + 2 * n_embd  # wte, wpe, blocks, ln_f
    return total if tied else total + vocab * n_embd


GPT2_PARAMS = gpt2_param_count()
_ALIASES = {"gpt2": GPT2_PARAMS, "gpt2-small": GPT2_PARAMS}
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_PARAMS_RE = re.compile(r"^\s*(?P<num>[0-9][0-9_,]*(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*(?P<suffix>[kmbgt]?)\s*$", re.I)


def parse_params(text: str) -> int:
    """ "124M" -> 124_000_000, "1.3B", "7e9", "124439808", "124,439,808", "gpt2" -> 124_439_808."""
    key = text.strip().lower()
    if key in _ALIASES:
        return _ALIASES[key]
    m = _PARAMS_RE.match(key)
    if m is None:
        raise UsageError(f"--params {text!r}: expected a count such as 124M, 1.3B, 7e9, 124439808 or gpt2")
    try:
        value = Decimal(m.group("num").replace(",", "").replace("_", "")) * _SUFFIX[m.group("suffix").lower()]
    except InvalidOperation:
        raise UsageError(f"--params {text!r}: not a number") from None
    if value != value.to_integral_value() or value < 1:
        raise UsageError(f"--params {text!r}: must be a whole number of parameters >= 1")
    return int(value)


def collectives(strategy: str, gpus: int, size_bytes: float) -> list[Collective]:
    """The collectives one training step runs, each with the bytes one GPU sends (ring algorithms)."""
    n = gpus
    part = (n - 1) / n * size_bytes
    if strategy == "ddp":
        return [Collective(op="all_reduce", what="gradients", bytes_per_gpu=2 * part)]
    if strategy in {"zero1", "zero2"}:
        return [
            Collective(op="reduce_scatter", what="gradients", bytes_per_gpu=part),
            Collective(op="all_gather", what="updated parameters", bytes_per_gpu=part),
        ]
    if strategy in {"zero3", "fsdp"}:
        return [
            Collective(op="all_gather", what="parameters, forward pass", bytes_per_gpu=part),
            Collective(op="all_gather", what="parameters, backward pass", bytes_per_gpu=part),
            Collective(op="reduce_scatter", what="gradients", bytes_per_gpu=part),
        ]
    raise UsageError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")


def wire_bytes_per_gpu(params: int, gpus: int, strategy: str, dtype: str = "fp32") -> float:
    """Bytes each GPU sends per training step (what it receives is the same)."""
    _check(params, gpus, strategy, dtype)
    return float(sum(c.bytes_per_gpu for c in collectives(strategy, gpus, params * BYTES_PER_ELEMENT[dtype])))


def model_state_bytes_per_gpu(params: int, gpus: int, strategy: str, dtype: str) -> float:
    """Parameters + gradients + Adam states per GPU (ZERO_PAPER §5), activations excluded.

    Mixed precision (bf16/fp16): 2 + 2 + 12 bytes per parameter (fp32 master copy, momentum, variance);
    fp32: 4 + 4 + 8. ZeRO-1 partitions the optimizer states, ZeRO-2 also the gradients, ZeRO-3/FSDP everything.
    """
    p, g, k = (4, 4, 8) if dtype == "fp32" else (2, 2, 12)
    n = gpus
    per_gpu = {
        "ddp": p + g + k,
        "zero1": p + g + k / n,
        "zero2": p + (g + k) / n,
        "zero3": (p + g + k) / n,
        "fsdp": (p + g + k) / n,
    }[strategy]
    return params * per_gpu


def _check(params: int, gpus: int, strategy: str, dtype: str) -> tuple[Strategy, Dtype]:
    """The arguments checked; the strategy and dtype as the names they are."""
    if params < 1:
        raise UsageError(f"--params must be >= 1, got {params}")
    if gpus < 1:
        raise UsageError(f"--gpus must be >= 1, got {gpus}")
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    return cast("Strategy", strategy), cast("Dtype", dtype)


# --- bandwidth sources -----------------------------------------------------------------------------------------


def busbw_from_bench(doc: dict[str, Any]) -> tuple[float, str]:
    """The all-reduce busbw of the largest size in a ``rigcheck.bench/1`` document (or a list of its rows)."""
    rows = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise UsageError("--from: expected a rigcheck.bench/1 document with a 'results' list")
    best: tuple[int, float] | None = None
    for row in rows:
        if not isinstance(row, dict) or row.get("op", "all_reduce") not in {"all_reduce", "allreduce"}:
            continue
        size, bw = row.get("size_bytes"), row.get("busbw_gbps")
        usable = isinstance(size, int) and isinstance(bw, (int, float)) and not isinstance(bw, bool) and bw > 0
        if usable and isinstance(size, int) and isinstance(bw, (int, float)) and (best is None or size > best[0]):
            best = (size, float(bw))
    if best is None:
        raise UsageError("--from: no all_reduce row with size_bytes and a positive busbw_gbps in the document")
    return best[1], f"measured: all_reduce busbw at {best[0]:,} B from the bench results (rigcheck.bench/1)"


def _gpu_pcie_gbps(gpu: Gpu | None) -> tuple[float, str]:
    link = gpu_pcie_link(gpu)  # the one rule for a GPU's link (facts/pcie.py)
    if link is None:
        bw = pcie_bandwidth_gbps(*DEFAULT_PCIE)
        assert bw is not None
        return bw, DEFAULT_PCIE_NOTE + "; " + PCIE_SOURCE
    if link.gbps is None:
        fallback = pcie_bandwidth_gbps(*DEFAULT_PCIE)
        assert fallback is not None
        return fallback, f"PCIe gen {link.gen} x{link.width} unknown to rigcheck; " + DEFAULT_PCIE_NOTE
    return link.gbps, f"PCIe {link.gen}.0 x{link.width}: {link.gbps:.2f} GB/s per direction ({PCIE_SOURCE})"


def theoretical_busbw(snapshot: Snapshot, gpus: int) -> tuple[float, str] | None:
    """The ceiling of a ring over the first ``gpus`` GPUs: the slowest pair link among them, GB/s per direction.

    NVLink pairs: links x per-link bandwidth of the GPU's NVLink generation (facts/nvlink). Other pairs: the
    slower of the two GPUs' PCIe links (facts/pcie); traffic between them goes through host memory or a PCIe
    switch, whose own limits are not modelled. None when the snapshot has fewer than two of those GPUs.
    """
    chosen = sorted(g.index for g in snapshot.gpus)[:gpus]
    if len(chosen) < 2 or gpus < 2:
        return None
    worst: tuple[float, str] | None = None
    for i, a in enumerate(chosen):
        for b in chosen[i + 1 :]:
            pair = snapshot.pair(a, b)
            ga, gb = snapshot.gpu(a), snapshot.gpu(b)
            found: tuple[float, str] | None = None
            if pair is not None and pair.kind == "nvlink" and pair.nvlinks:
                names = [x for x in (ga.architecture, ga.name) if x] if ga is not None else []
                for name in names:
                    bw = nvlink_pair_bandwidth_gbps(name, pair.nvlinks)
                    variant = variant_for(name)
                    if bw is not None and variant is not None:
                        found = (
                            bw,
                            f"GPU{a}-GPU{b} {pair.link}: {pair.nvlinks} x {variant.link_gbps:g} GB/s "
                            f"({variant.source})",
                        )
                        break
                if found is None:
                    found = (
                        pair.nvlinks * 25.0,
                        f"GPU{a}-GPU{b} {pair.link}: NVLink generation unknown, assumed 25 GB/s per link",
                    )
            else:
                bw_a, src_a = _gpu_pcie_gbps(ga)
                bw_b, src_b = _gpu_pcie_gbps(gb)
                link = pair.link if pair is not None and pair.link else "PCIe"
                found = (min(bw_a, bw_b), f"GPU{a}-GPU{b} {link}: " + (src_a if bw_a <= bw_b else src_b))
            if worst is None or found[0] < worst[0]:
                worst = found
    assert worst is not None
    return worst[0], "theoretical ceiling, slowest pair link: " + worst[1]


_LINK_RE = re.compile(r"^(?:(?P<nv>nv)(?P<links>\d+)|pcie(?P<gen>\d)(?:\.0)?x(?P<width>\d+))$", re.I)


def link_busbw(link: str, gpu: str | None) -> tuple[float, str]:
    """A link named on the command line: "NV2" (with --model for the NVLink generation) or "PCIe3x16"."""
    m = _LINK_RE.match(link.strip().replace(" ", ""))
    if m is None:
        raise UsageError(f"--link {link!r}: expected NV<links> (e.g. NV2) or PCIe<gen>x<width> (e.g. PCIe3x16)")
    if m.group("nv"):
        links = int(m.group("links"))
        if gpu is None:
            raise UsageError("--link NV#: give --model too, so the NVLink generation (bandwidth per link) is known")
        bw = nvlink_pair_bandwidth_gbps(gpu, links)
        variant = variant_for(gpu)
        if bw is None or variant is None:
            raise UsageError(f"--model {gpu!r}: no NVLink generation known for it")
        return bw, f"theoretical: {links} NVLink links x {variant.link_gbps:g} GB/s per direction ({variant.source})"
    gen, width = int(m.group("gen")), int(m.group("width"))
    pbw = pcie_bandwidth_gbps(gen, width)
    if pbw is None:
        raise UsageError(f"--link {link!r}: unknown PCIe generation or width")
    return pbw, f"theoretical: PCIe {gen}.0 x{width}, {pbw:.2f} GB/s per direction ({PCIE_SOURCE})"


def peak_tflops(gpu: str, dtype: str) -> tuple[float, str]:
    """The catalog's dense peak for the dtype (FP32: CUDA-core peak), with its source."""
    spec = catalog.lookup(gpu)
    if spec is None:
        hint = ", ".join(catalog.candidates(gpu)) or "see `rigcheck power plan --help`"
        raise UsageError(f"--model {gpu!r}: not in rigcheck's catalog (did you mean: {hint}?)")
    if dtype == "fp32":
        entry = FP32_PEAK_TFLOPS.get(spec.name)
        if entry is None:
            raise UsageError(f"--model {spec.name}: no FP32 peak on record; pass --tflops (achieved TFLOPS)")
        return float(entry[0]), str(entry[1])
    value = spec.bf16_tflops if dtype == "bf16" else spec.fp16_tflops
    if value is None:
        raise UsageError(f"--model {spec.name}: no {dtype} tensor peak on record; pass --tflops (achieved TFLOPS)")
    return value, f"{spec.name} dense {dtype} tensor peak ({spec.source})"


GUIDE_FP32 = "--dtype fp32 for the guide's fp32 run (run_clm without --bf16/--fp16)"
# bf16 tensor cores arrive with Ampere; Volta and Turing train in fp16 mixed precision; older chips have no
# tensor cores (Pascal's fp16 is no faster for training than fp32).
FP16_ARCHITECTURES = frozenset({"Volta", "Turing"})
FP32_ARCHITECTURES = frozenset({"Kepler", "Maxwell", "Pascal"})


def default_dtype(gpu: str | None, *, explain_guide: bool = False) -> tuple[str, str]:
    """The dtype when --dtype is not given, and the sentence that says so: bf16 mixed precision (bf16 on the wire,
    fp32 master weights and Adam states); fp16 mixed precision on a catalog GPU without bf16 (Volta, Turing);
    fp32 on one without tensor cores, or with --explain-guide (the guide's run is fp32)."""
    if explain_guide:
        return "fp32", "dtype fp32: the guide's run (run_clm without --bf16/--fp16), as --explain-guide explains it"
    spec = catalog.lookup(gpu) if gpu is not None else None
    if spec is not None and spec.architecture in FP16_ARCHITECTURES:
        return "fp16", f"fp16 mixed precision: the {spec.name} ({spec.architecture}) has no bf16; {GUIDE_FP32}"
    if spec is not None and spec.architecture in FP32_ARCHITECTURES:
        return "fp32", f"dtype fp32: the {spec.name} ({spec.architecture}) has no tensor cores for bf16/fp16"
    return "bf16", f"bf16 mixed precision (the default: fp32 master weights and Adam states); {GUIDE_FP32}"


# --- the plan --------------------------------------------------------------------------------------------------


def plan_comm(  # noqa: PLR0917 - the documented call: plan_comm(params, gpus, strategy, dtype, ...)
    params: int,
    gpus: int,
    strategy: str,
    dtype: str = "fp32",
    busbw_gbps: float | None = None,
    tokens_per_step_per_gpu: int | None = None,
    achieved_tflops: float | None = None,
    snapshot: Snapshot | None = None,
    *,
    busbw_source: str | None = None,
    gpu: str | None = None,
    link: str | None = None,
    assumptions: Sequence[str] = (),
) -> PlanDocument:
    """Predict communication per step for a strategy, against compute, and say which strategy suits: the
    ``rigcheck.plan/1`` document.

    Bus bandwidth, first found: ``busbw_gbps`` (measured or given), ``link`` ("NV2", "PCIe3x16"), the
    snapshot's slowest pair link; else the time on the wire is None with a reason. Compute: ``achieved_tflops``,
    else the catalog peak of ``gpu`` for ``dtype`` x ASSUMED_MFU; else None with a reason. ``assumptions``: the
    caller's own (a default it chose), listed before the plan's.
    """
    strategy_name, dtype_name = _check(params, gpus, strategy, dtype)
    if busbw_gbps is not None and not (busbw_gbps > 0 and math.isfinite(busbw_gbps)):
        raise UsageError(f"--busbw must be a positive number of GB/s, got {busbw_gbps}")
    if achieved_tflops is not None and not (achieved_tflops > 0 and math.isfinite(achieved_tflops)):
        raise UsageError(f"--tflops must be a positive number, got {achieved_tflops}")
    if tokens_per_step_per_gpu is not None and tokens_per_step_per_gpu < 1:
        raise UsageError(f"--tokens must be >= 1, got {tokens_per_step_per_gpu}")
    stated = list(assumptions)
    bpe = BYTES_PER_ELEMENT[dtype]
    colls = collectives(strategy, gpus, params * bpe)
    wire = sum(c.bytes_per_gpu for c in colls)

    bw, bw_src = busbw_gbps, busbw_source
    if bw is not None and bw_src is None:
        bw_src = "given (--busbw)"
    if bw is None and link is not None:
        bw, bw_src = link_busbw(link, gpu)
    if bw is None and snapshot is not None:
        found = theoretical_busbw(snapshot, gpus)
        if found is not None:
            bw, bw_src = found
    comm_reason: str | None = None
    comm_s: float | None = None
    if gpus == 1:
        bw_reason = ONE_GPU_REASON
    elif snapshot is not None:
        bw_reason = "the snapshot has fewer than two GPUs to pair; " + NO_BUSBW_REASON
    else:
        bw_reason = NO_BUSBW_REASON
    if gpus == 1:
        comm_s, comm_reason = 0.0, ONE_GPU_REASON
    elif bw is None:
        comm_reason = NO_BUSBW_REASON
    else:
        comm_s = wire / (bw * 1e9)
        if bw_src and bw_src.startswith("theoretical"):
            stated.append("a theoretical link ceiling: NCCL achieves less; measure with `rigcheck bench allreduce`")

    flops = 6.0 * params * tokens_per_step_per_gpu if tokens_per_step_per_gpu is not None else None
    tflops, tflops_src = achieved_tflops, ("given (--tflops)" if achieved_tflops is not None else None)
    if tflops is None and gpu is not None:
        peak, peak_src = peak_tflops(gpu, dtype)
        tflops = peak * ASSUMED_MFU
        tflops_src = f"{peak:.1f} TFLOPS peak x {ASSUMED_MFU:.0%}: {peak_src}; {MFU_SOURCE}"
        stated.append(MFU_SOURCE)
    compute_s: float | None = None
    compute_reason: str | None = None
    if flops is None:
        compute_reason = NO_TOKENS_REASON
    elif tflops is None:
        compute_reason = NO_TFLOPS_REASON
    else:
        compute_s = flops / (tflops * 1e12)

    share = exposed = None
    if comm_s is not None and compute_s is not None:
        share = comm_s / (comm_s + compute_s) if comm_s + compute_s > 0 else 0.0
        if strategy in {"zero3", "fsdp"}:
            # the forward all-gather has no backward pass to hide behind (prefetching hides some)
            exposed = max(0.0, comm_s / 3 + max(0.0, comm_s * 2 / 3 - compute_s * BACKWARD_SHARE))
        else:
            exposed = max(0.0, comm_s - compute_s * BACKWARD_SHARE)

    spec = catalog.lookup(gpu) if gpu is not None else None
    mem = spec.memory_gib * 2**30 if spec is not None else None
    unknown = [
        name for name, value in (("the time on the wire", comm_s), ("the compute time", compute_s)) if value is None
    ]
    needs_both = " and ".join(unknown) + (" are" if len(unknown) > 1 else " is") + " unknown"
    reasons = {
        "busbw_gbps": (bw, bw_reason),
        "comm_time_s": (comm_s, comm_reason or bw_reason),
        "flops_per_step_per_gpu": (flops, NO_TOKENS_REASON),
        "achieved_tflops": (tflops, NO_TFLOPS_REASON),
        "compute_time_s": (compute_s, compute_reason or NO_TFLOPS_REASON),
        "comm_share": (share, needs_both),
        "exposed_comm_s": (exposed, needs_both),
        "gpu_memory_bytes": (mem, NO_MEMORY_REASON),
    }
    plan = PlanDocument(
        inputs=PlanInputs(
            params=params,
            gpus=gpus,
            strategy=strategy_name,
            dtype=dtype_name,
            tokens_per_step_per_gpu=tokens_per_step_per_gpu,
        ),
        strategy=strategy_name,
        bytes_per_element=bpe,
        wire_bytes_per_gpu_per_step=wire,
        collectives=colls,
        busbw_gbps=bw,
        busbw_source=bw_src,
        comm_time_s=comm_s,
        comm_time_reason=comm_reason,
        flops_per_step_per_gpu=flops,
        achieved_tflops=tflops,
        tflops_source=tflops_src,
        compute_time_s=compute_s,
        compute_time_reason=compute_reason,
        comm_share=share,
        exposed_comm_s=exposed,
        model_state_bytes_per_gpu=model_state_bytes_per_gpu(params, gpus, strategy, dtype),
        gpu_memory_bytes=mem,
        strategies=_strategy_rows(params, gpus, dtype, bw=bw, mem=mem, bw_reason=bw_reason),
        advice=[],
        assumptions=stated,
        sources=[ZERO_PAPER, NCCL_TESTS, KAPLAN],
        missing={key: why for key, (value, why) in reasons.items() if value is None},
    )
    plan.advice = _advice(plan)
    return plan


def _strategy_rows(
    params: int, gpus: int, dtype: str, *, bw: float | None, mem: float | None, bw_reason: str
) -> list[StrategyRow]:
    """Every strategy at the same model, GPUs and bandwidth, in STRATEGIES' order (bytes, then memory saved)."""
    rows: list[StrategyRow] = []
    for s in STRATEGIES:
        w = sum(c.bytes_per_gpu for c in collectives(s, gpus, params * BYTES_PER_ELEMENT[dtype]))
        states = model_state_bytes_per_gpu(params, gpus, s, dtype)
        comm = (w / (bw * 1e9)) if bw is not None and gpus > 1 else (0.0 if gpus == 1 else None)
        fits = (states < mem) if mem is not None else None
        reasons = {"comm_time_s": (comm, bw_reason), "fits_model_states": (fits, NO_MEMORY_REASON)}
        rows.append(
            StrategyRow(
                strategy=cast("Strategy", s),
                wire_bytes_per_gpu_per_step=w,
                comm_time_s=comm,
                model_state_bytes_per_gpu=states,
                fits_model_states=fits,
                missing={key: why for key, (value, why) in reasons.items() if value is None},
            )
        )
    return rows


def _advice(p: PlanDocument) -> list[str]:
    out: list[str] = []
    if p.inputs.gpus == 1:
        return ["One GPU: no gradient traffic. Data parallelism starts at two GPUs."]
    if p.comm_time_s is not None and p.compute_time_s is not None:
        backward = p.compute_time_s * BACKWARD_SHARE
        ms = p.comm_time_s * 1e3
        if p.strategy in {"ddp", "zero1", "zero2"}:
            if p.comm_time_s <= backward:
                out.append(
                    f"Communication ({ms:.1f} ms/step) fits inside the backward pass (~{backward * 1e3:.0f} ms): "
                    "DDP overlaps its bucketed all-reduce with backward, so this interconnect costs little here."
                )
            else:
                out.append(
                    f"Communication ({ms:.1f} ms/step) is longer than the backward pass (~{backward * 1e3:.0f} ms): "
                    f"about {(p.comm_time_s - backward) * 1e3:.0f} ms per step stays exposed. A faster link (NVLink "
                    "/ P2P), more tokens per GPU per step, or bf16 gradients (half the bytes) help."
                )
        else:
            out.append(
                f"ZeRO-3/FSDP moves 1.5x DDP's bytes ({ms:.1f} ms/step here) and its forward all-gathers have no "
                "backward pass to hide behind: latency-bound on slow links. Use it when the model states do not fit "
                "with ZeRO-2."
            )
        if p.comm_share is not None and p.comm_share > 0.5:
            out.append(f"Without overlap, communication would be {p.comm_share:.0%} of the step: communication-bound.")
    elif p.comm_time_reason:
        out.append(f"Time on the wire unknown: {p.comm_time_reason}.")
    fits = [row for row in p.strategies if row.fits_model_states]
    if p.gpu_memory_bytes is not None:
        if fits:
            best = fits[0].strategy  # STRATEGIES is ordered by bytes on the wire, then memory saved
            out.append(
                f"Least traffic whose model states fit ({p.gpu_memory_bytes / 2**30:.0f} GiB per GPU, activations "
                f"not counted): {best}."
                + (
                    " ZeRO-1/2 move no more bytes than DDP, so prefer them over ZeRO-3 when DDP does not fit."
                    if best != "ddp"
                    else ""
                )
            )
        else:
            out.append("The model states do not fit even with ZeRO-3/FSDP: offload to CPU/NVMe or add GPUs.")
    else:
        out.append("ZeRO-1/2 cost no more bytes than DDP and save memory; ZeRO-3/FSDP costs 1.5x (ZeRO paper §7).")
    return out
