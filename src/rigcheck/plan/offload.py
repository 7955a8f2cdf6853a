"""``rigcheck plan --offload cpu|nvme``: what DeepSpeed's ZeRO offload asks of each memory tier, whether this
machine has it, and what the offload traffic costs per step.

Bytes per tier, for P parameters trained in mixed precision with Adam on n GPUs per node and N nodes
(T = n x N GPUs), with l the bytes of a 16-bit parameter or gradient (2; 4 with --dtype fp32, counted the
same way) and the estimators' additional_buffer_factor f = 1.5:

- ZeRO-1/2, optimizer offloaded to CPU (DS_ZERO2_ESTIMATOR; DeepSpeed runs stage 1 and 2 offload through the
  same optimizer, DS_STAGE12_OFFLOAD): GPU l x P (the 16-bit parameters, on every GPU); CPU RAM
  P x max(4 x n, 16) x f per node, 16 = fp32 gradients 4 + master weights 4 + momentum 4 + variance 4 and
  4 x n the fp32 model each process creates when it loads (DS_MEMORY_DOC). The estimator does not divide the
  16 by the nodes; neither does this. Its 4 x term counts every GPU of the job (max(4 x T, 16), T = n x N),
  though a node's RAM holds the fp32 copies of its own n processes only: on more than one node the plan
  prints the estimator's figure beside its own and says why (estimator_cpu_bytes). NVMe: nothing, and
  --offload nvme is refused: stage 1/2 take any offload device as CPU (DS_STAGE12_OFFLOAD).
- ZeRO-3, parameters and optimizer offloaded to CPU (DS_ZERO3_ESTIMATOR, zero.Init assumed): GPU 2l x L, the
  largest layer's 16-bit parameters and gradients gathered; CPU RAM P x (16 + l) / N x f per node
  (DeepSpeed's 18 = 16 + 2 bytes of 16-bit parameters).
- ZeRO-3 to NVMe (ZeRO-Infinity): DeepSpeed publishes no estimator. The NVMe holds what the CPU tier held,
  P x (16 + l) / N per node, the four fp32 states the optimizer swaps (parameter, gradient, momentum,
  variance: DS_OFFLOAD_CONFIG) and the 16-bit parameters; CPU RAM holds DeepSpeed's default swap buffers per
  GPU: offload_param 5 x 1e8 elements x l, offload_optimizer 4 x min(sub_group_size 1e9, P / T) x 4 bytes.

Traffic per step, ignoring what DeepSpeed keeps resident (stage3_param_persistence_threshold, max_in_cpu):
the host link carries, per GPU, ZeRO-1/2: its gradient partition down (l x P / T) and its updated 16-bit
parameters up (l x P / T); ZeRO-3: its parameter partition up twice (forward and backward, 2 l x P / T) and
its gradient partition down (l x P / T). The NVMe, per node: parameters read twice (2 l x P / N), gradients
written as fp32 (4 x P / N), the optimizer step reading the four fp32 states (16 x P / N) and writing back
parameter, momentum and variance (12 x P / N) and the 16-bit parameters (l x P / N). Time = bytes /
bandwidth per link and direction, added up: no overlap, an upper bound at those bandwidths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from rigcheck.errors import UsageError
from rigcheck.facts.pcie import PCIE_SOURCE, pcie_bandwidth_gbps
from rigcheck.model.plan import (
    OffloadBreakdown,
    OffloadFit,
    OffloadTier,
    OffloadTraffic,
    PlanOffload,
    Strategy,
)
from rigcheck.units import gigabytes

TIERS: tuple[str, ...] = ("cpu", "nvme")

DS_MEMORY_DOC = (
    "DeepSpeed docs, Memory Requirements (docs/code-docs/source/memory.rst, "
    "https://deepspeed.readthedocs.io/en/latest/memory.html): 'General RAM', the 16 and 18 multipliers"
)
DS_ZERO2_ESTIMATOR = (
    "DeepSpeed estimate_zero2_model_states_mem_needs (deepspeed/runtime/zero/stage_1_and_2.py), "
    "cpu_offload=True: GPU 2 x params, CPU params x max(4 x total GPUs (nodes x GPUs per node), 16) x "
    "additional_buffer_factor 1.5, printed 'per CPU'; the same in DeepSpeed 0.19.8"
)
DS_ZERO3_ESTIMATOR = (
    "DeepSpeed estimate_zero3_model_states_mem_needs (deepspeed/runtime/zero/stage3.py), cpu_offload and "
    "cpu_offload_params, zero_init: GPU 4 x largest layer params, CPU params x 18 / nodes x "
    "additional_buffer_factor 1.5"
)
DS_OFFLOAD_CONFIG = (
    "DeepSpeed deepspeed/runtime/zero/offload_config.py: offload_param buffer_count 5 x buffer_size 1e8; "
    "offload_optimizer buffer_count 4 ('Adam optimizer has 4 states (parameter, gradient, momentum, and "
    "variance)'); DeepSpeed config docs: zero_optimization.sub_group_size 1e9"
)
DS_STAGE12_OFFLOAD = (
    "DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer: cpu_offload is set for any "
    "offload_optimizer device other than none (ZeRO-1 and ZeRO-2 share it)"
)
SOURCE_NAME = {"zero1": DS_ZERO2_ESTIMATOR, "zero2": DS_ZERO2_ESTIMATOR, "zero3": DS_ZERO3_ESTIMATOR}

BUFFER_FACTOR = 1.5  # the estimators' additional_buffer_factor default
FP32_STATES = 16  # fp32 master weights 4 + gradients 4 + momentum 4 + variance 4 (DS_MEMORY_DOC)
PARAM_BUFFERS = 5 * 100_000_000  # offload_param buffer_count x buffer_size, elements (DS_OFFLOAD_CONFIG)
OPTIMIZER_BUFFERS = 4  # offload_optimizer buffer_count (DS_OFFLOAD_CONFIG)
SUB_GROUP_SIZE = 1_000_000_000  # zero_optimization.sub_group_size default, elements

# The largest layer, when --largest-layer is not given: the larger share of DeepSpeed's own two examples
# (t5-large 32.9M of 737.67M = 4.5%; t5-3b 32M of 2851M = 1.1%; DS_MEMORY_DOC).
LARGEST_LAYER_SHARE = 0.045
LARGEST_LAYER_NOTE = (
    "largest layer assumed 4.5% of the parameters (the larger of DeepSpeed's memory examples: t5-large 32.9M of "
    "737.67M); pass --largest-layer with your model's"
)

# Assumed bandwidths when no bench result is given.
ASSUMED_HOST_SHARE = 0.8
ASSUMED_NVME_GBPS = 3.0


def assumed_host_link() -> tuple[float, str]:
    """80% of PCIe 4.0 x16's ceiling: what pinned copies typically reach; an assumption the output names."""
    ceiling = pcie_bandwidth_gbps(4, 16)
    assert ceiling is not None
    bw = ceiling * ASSUMED_HOST_SHARE
    return bw, (
        f"assumed: {bw:.1f} GB/s per direction, {ASSUMED_HOST_SHARE:.0%} of PCIe 4.0 x16's {ceiling:.2f} GB/s "
        f"({PCIE_SOURCE}), typical of pinned copies; measure with `rigcheck bench hostlink --json` and pass --from"
    )


def assumed_nvme() -> tuple[float, float, str]:
    """3 GB/s each way: a PCIe 3.0 x4 NVMe drive's sequential rate, below its link's ceiling; an assumption."""
    ceiling = pcie_bandwidth_gbps(3, 4)
    assert ceiling is not None
    return (
        ASSUMED_NVME_GBPS,
        ASSUMED_NVME_GBPS,
        f"assumed: {ASSUMED_NVME_GBPS:g} GB/s read and write, one NVMe drive on PCIe 3.0 x4 (link ceiling "
        f"{ceiling:.2f} GB/s, {PCIE_SOURCE}); measure with `rigcheck bench nvme --json` and pass --from",
    )


# --- bench documents, read defensively --------------------------------------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _rows(doc: dict[str, Any], what: str) -> list[dict[str, Any]]:
    rows = doc.get("results")
    if not isinstance(rows, list):
        raise UsageError(f"--from: a bench {what} document without a 'results' list")
    return [row for row in rows if isinstance(row, dict)]


def hostlink_from_bench(doc: dict[str, Any], path: str) -> tuple[float, float, str]:
    """Host-to-device and device-to-host GB/s from a `bench hostlink --json` document: pinned memory (what
    DeepSpeed pins for offload), the best binding per GPU, then the slowest GPU (every GPU moves its share)."""
    best: dict[tuple[str, object], float] = {}
    for row in _rows(doc, "hostlink"):
        bw = _number(row.get("gbps", row.get("value")))
        direction = row.get("direction")
        if bw is None or direction not in {"h2d", "d2h"} or row.get("memory", "pinned") != "pinned":
            continue
        key = (str(direction), row.get("gpu"))
        best[key] = max(best.get(key, 0.0), bw)
    per_dir = {d: [bw for (dd, _), bw in best.items() if dd == d] for d in ("h2d", "d2h")}
    if not per_dir["h2d"] or not per_dir["d2h"]:
        raise UsageError("--from: no pinned h2d and d2h rows with a positive gbps in the bench hostlink document")
    h2d, d2h = min(per_dir["h2d"]), min(per_dir["d2h"])
    return h2d, d2h, f"measured: bench hostlink, pinned, slowest GPU's best binding: {path}"


def _free_bytes(doc: dict[str, Any]) -> float | None:
    """A free-space figure in a bench nvme document, at its top level or one object down."""
    places = [doc, *(value for value in doc.values() if isinstance(value, dict))]
    for place in places:
        for key in ("free_bytes", "free_space_bytes"):
            found = _number(place.get(key))
            if found is not None:
                return found
    return None


def nvme_from_bench(doc: dict[str, Any], path: str) -> tuple[float, float, str, float | None]:
    """Read and write GB/s from a `bench nvme --json` document (rows ``nvme_read`` / ``nvme_write``, value in
    GB/s; the best of its sweep), and the free space under its path when the document names it."""
    best: dict[str, float] = {}
    for row in _rows(doc, "nvme"):
        name, bw = row.get("name"), _number(row.get("value"))
        if name in {"nvme_read", "nvme_write"} and bw is not None and str(row.get("unit", "GB/s")) == "GB/s":
            best[str(name)] = max(best.get(str(name), 0.0), bw)
    if "nvme_read" not in best or "nvme_write" not in best:
        raise UsageError("--from: no nvme_read and nvme_write rows with a positive value in GB/s in the document")
    source = f"measured: bench nvme, direct I/O, 1 MiB, one request at a time: {path}"
    return best["nvme_read"], best["nvme_write"], source, _free_bytes(doc)


# --- the plan --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Capacity:
    """What a tier has: bytes, where the figure came from; or why it is unknown."""

    bytes: float | None
    source: str | None
    reason: str


def check_offload(strategy: str, tier: str) -> None:
    """--offload with a strategy that cannot: one line each."""
    if tier not in TIERS:
        raise UsageError(f"--offload {tier!r}: choose cpu or nvme")
    if strategy == "ddp":
        raise UsageError("--offload needs ZeRO: DDP does not offload (use --strategy zero2 or zero3)")
    if strategy == "fsdp":
        raise UsageError(
            "--offload follows DeepSpeed's ZeRO offload: use --strategy zero2 or zero3 (FSDP's is not modelled)"
        )
    if tier == "nvme" and strategy in {"zero1", "zero2"}:
        raise UsageError(
            "--offload nvme needs --strategy zero3: DeepSpeed's ZeRO-1/2 offload any optimizer device to CPU RAM"
        )


def _fit(tier: OffloadTier, needed: float, have: Capacity, what: str) -> OffloadFit:
    if have.bytes is None:
        return OffloadFit(
            tier=tier,
            needed_bytes=needed,
            available_bytes=None,
            available_source=None,
            fits=None,
            verdict=f"needs {gigabytes(needed)} of {what}; not known: {have.reason}",
            missing={"available_bytes": have.reason, "fits": have.reason},
        )
    fits = needed <= have.bytes
    verdict = f"needs {gigabytes(needed)} of {what}, {have.source} has {have.bytes / 2**30:,.1f} GiB: " + (
        "fits" if fits else f"does not fit, {gigabytes(needed - have.bytes)} short"
    )
    return OffloadFit(
        tier=tier,
        needed_bytes=needed,
        available_bytes=have.bytes,
        available_source=have.source,
        fits=fits,
        verdict=verdict,
        missing={},
    )


def _traffic(what: str, link: str, direction: str, size: float, gbps: float) -> OffloadTraffic:
    return OffloadTraffic(
        what=what,
        link=cast("Any", link),
        direction=cast("Any", direction),
        per="gpu" if link == "host" else "node",
        bytes=size,
        time_s=size / (gbps * 1e9),
        gbps=gbps,
    )


def _tiers(  # noqa: PLR0917 - the estimator's inputs, one for one
    p: int, n: int, nodes: int, strategy: str, tier: str, lp: int, largest: int
) -> list[OffloadBreakdown]:
    """GPU (per GPU), CPU RAM and NVMe (per node): the model states, then the estimator's buffers."""
    t = n * nodes

    def row(  # noqa: PLR0917 - one tier row, its columns in order
        name: str, per: str, parts: tuple[float, float, float], total: float, formula: str, source: str
    ) -> OffloadBreakdown:
        return OffloadBreakdown(
            tier=cast("Any", name),
            per=cast("Any", per),
            params_bytes=parts[0],
            grads_bytes=parts[1],
            optimizer_bytes=parts[2],
            buffers_bytes=total - sum(parts),
            total_bytes=total,
            formula=formula,
            source=source,
        )

    none = (0.0, 0.0, 0.0)
    if strategy in {"zero1", "zero2"}:
        cpu_total = p * max(4 * n, FP32_STATES) * BUFFER_FACTOR
        return [
            row("gpu", "gpu", (float(lp * p), 0.0, 0.0), float(lp * p), f"{lp} x params", DS_ZERO2_ESTIMATOR),
            row(
                "cpu",
                "node",
                (0.0, 4.0 * p, 12.0 * p),
                cpu_total,
                f"params x max(4 x {n} GPUs, 16) x {BUFFER_FACTOR}",
                DS_ZERO2_ESTIMATOR + "; " + DS_MEMORY_DOC,
            ),
            row("nvme", "node", none, 0.0, "nothing offloaded to NVMe", DS_STAGE12_OFFLOAD),
        ]
    gpu = row(
        "gpu",
        "gpu",
        (float(lp * largest), float(lp * largest), 0.0),
        2.0 * lp * largest,
        f"{2 * lp} x largest layer params",
        DS_ZERO3_ESTIMATOR,
    )
    states = (lp * p / nodes, 4.0 * p / nodes, 12.0 * p / nodes)
    per_node = sum(states)
    if tier == "cpu":
        return [
            gpu,
            row(
                "cpu",
                "node",
                states,
                per_node * BUFFER_FACTOR,
                f"params x {FP32_STATES + lp} / {nodes} nodes x {BUFFER_FACTOR}",
                DS_ZERO3_ESTIMATOR + "; " + DS_MEMORY_DOC,
            ),
            row("nvme", "node", none, 0.0, "nothing offloaded to NVMe", DS_ZERO3_ESTIMATOR),
        ]
    buffers = n * (PARAM_BUFFERS * lp + OPTIMIZER_BUFFERS * min(SUB_GROUP_SIZE, math.ceil(p / t)) * 4)
    return [
        gpu,
        row(
            "cpu",
            "node",
            none,
            float(buffers),
            f"{n} GPUs x (5 x 1e8 x {lp} + 4 x min(1e9, params / {t}) x 4) swap buffers",
            DS_OFFLOAD_CONFIG,
        ),
        row(
            "nvme",
            "node",
            states,
            per_node,
            f"params x {FP32_STATES + lp} / {nodes} nodes",
            DS_OFFLOAD_CONFIG + "; " + DS_MEMORY_DOC,
        ),
    ]


def estimator_cpu_bytes(params: int, gpus_per_node: int, nodes: int, strategy: str, tier: str) -> float | None:
    """CPU RAM as DeepSpeed's own estimator computes it (DS_ZERO2_ESTIMATOR, DS_ZERO3_ESTIMATOR with zero.Init),
    16-bit training; None for NVMe offload, for which DeepSpeed publishes no estimator."""
    if strategy in {"zero1", "zero2"}:
        return params * max(4 * gpus_per_node * nodes, FP32_STATES) * BUFFER_FACTOR
    return params * (FP32_STATES + 2) / nodes * BUFFER_FACTOR if tier == "cpu" else None


def _estimator_note(ours: float, theirs: float | None, n: int, nodes: int, strategy: str) -> str | None:
    """Where rigcheck's CPU figure differs from DeepSpeed's estimator's: both, and why."""
    if theirs is None or abs(ours - theirs) < 0.005 * theirs:
        return None
    if strategy in {"zero1", "zero2"}:
        return (
            f"DeepSpeed's estimator (estimate_zero2_model_states_mem_needs) gives {gigabytes(theirs)} of CPU RAM, "
            f"printed 'per CPU': params x max(4 x {n * nodes} GPUs, 16) x {BUFFER_FACTOR}, its 4 x term counting "
            f"every GPU of the job. rigcheck counts the {n} GPUs of one node (a node's RAM holds the fp32 model "
            f"copies of its own processes only): {gigabytes(ours)} per node, {gigabytes(ours * nodes)} for all "
            f"{nodes} nodes. Size each node for {gigabytes(theirs)} to follow DeepSpeed's estimate"
        )
    return (
        f"DeepSpeed's estimator (estimate_zero3_model_states_mem_needs, zero_init) gives {gigabytes(theirs)} of "
        f"CPU RAM per node for 16-bit training (params x 18 / {nodes} nodes x {BUFFER_FACTOR}); rigcheck's "
        f"{gigabytes(ours)} counts the parameters at this dtype's width"
    )


def plan_offload(
    params: int,
    gpus: int,
    strategy: str,
    dtype: str,
    tier: str,
    *,
    nodes: int = 1,
    largest_layer: int | None = None,
    ram: Capacity,
    nvme_free: Capacity,
    host_link: tuple[float, float, str] | None = None,
    nvme_bw: tuple[float, float, str] | None = None,
    compute_time_s: float | None = None,
    compute_reason: str = "no compute time in the plan",
) -> PlanOffload:
    """The ``offload`` object of ``rigcheck plan --offload``: ``gpus`` in all, ``nodes`` nodes of
    ``gpus / nodes`` each; ``host_link`` (h2d, d2h GB/s, source) and ``nvme_bw`` (read, write GB/s, source)
    measured, else assumed and named."""
    check_offload(strategy, tier)
    if nodes < 1 or gpus % nodes:
        raise UsageError(f"--nodes {nodes}: must be >= 1 and divide --gpus {gpus}")
    if largest_layer is not None and not 0 < largest_layer <= params:
        raise UsageError(f"--largest-layer {largest_layer}: must be between 1 and --params ({params})")
    n, t = gpus // nodes, gpus
    lp = 4 if dtype == "fp32" else 2
    assumptions: list[str] = []
    if dtype == "fp32":
        assumptions.append(
            "--dtype fp32: DeepSpeed's estimators assume 16-bit training; its 2-byte terms are counted at 4"
        )
    largest, largest_src = largest_layer, "given (--largest-layer)"
    if largest is None:
        largest = math.ceil(params * LARGEST_LAYER_SHARE)
        largest_src = LARGEST_LAYER_NOTE
        if strategy == "zero3":
            assumptions.append(LARGEST_LAYER_NOTE)
    tiers = _tiers(params, n, nodes, strategy, tier, lp, largest)
    by_tier = {row.tier: row.total_bytes for row in tiers}
    if strategy == "zero3":
        assumptions.append(
            "zero.Init assumed (ZeRO-3 under the Hugging Face Trainer); without it CPU RAM peaks at load at "
            f"params x max(4 x {n}, {FP32_STATES + lp} / {nodes}) x {BUFFER_FACTOR} ({DS_MEMORY_DOC})"
        )
    if tier == "nvme":
        assumptions.append(
            "DeepSpeed publishes no NVMe estimator: NVMe holds what CPU RAM would (the 16 + 2 bytes), RAM the "
            "default swap buffers; max_in_cpu and pinned-memory overheads are not counted"
        )

    estimator = estimator_cpu_bytes(params, n, nodes, strategy, tier)
    differs = _estimator_note(by_tier["cpu"], estimator, n, nodes, strategy)
    fit = [_fit("cpu", by_tier["cpu"], ram, "CPU RAM per node")]
    if tier == "nvme":
        fit.append(_fit("nvme", by_tier["nvme"], nvme_free, "NVMe space"))

    h2d, d2h, host_src = host_link if host_link is not None else _pair(assumed_host_link())
    share = params / t
    traffic: list[OffloadTraffic] = []
    if strategy == "zero3":
        traffic.append(
            _traffic(f"{lp}-byte parameter partition, forward and backward", "host", "h2d", 2 * lp * share, h2d)
        )
        traffic.append(_traffic(f"{lp}-byte gradient partition", "host", "d2h", lp * share, d2h))
    else:
        traffic.append(_traffic(f"{lp}-byte gradient partition", "host", "d2h", lp * share, d2h))
        traffic.append(_traffic(f"updated {lp}-byte parameter partition", "host", "h2d", lp * share, h2d))
    rd = wr = None
    nvme_src: str | None = None
    if tier == "nvme":
        rd, wr, nvme_src = nvme_bw if nvme_bw is not None else assumed_nvme()
        node = params / nodes
        traffic += [
            _traffic(f"{lp}-byte parameters, forward and backward", "nvme", "read", 2 * lp * node, rd),
            _traffic("fp32 gradients", "nvme", "write", 4 * node, wr),
            _traffic("optimizer step: fp32 parameters, gradients, momentum, variance", "nvme", "read", 16 * node, rd),
            _traffic("optimizer step: fp32 parameters, momentum, variance", "nvme", "write", 12 * node, wr),
            _traffic(f"updated {lp}-byte parameters", "nvme", "write", lp * node, wr),
        ]
    host_s = sum(x.time_s for x in traffic if x.link == "host")
    nvme_s = sum(x.time_s for x in traffic if x.link == "nvme") if tier == "nvme" else None
    total_s = host_s + (nvme_s or 0.0)
    ratio = total_s / compute_time_s if compute_time_s else None
    notes = [f.verdict for f in fit] + ([differs] if differs else [])
    step = f"offload traffic {total_s:,.2f} s per step (host link {host_s:,.2f} s" + (
        f", NVMe {nvme_s:,.2f} s)" if nvme_s is not None else ")"
    )
    if compute_time_s:
        bound = "offload-bound" if total_s > compute_time_s else "compute hides it if overlapped"
        notes.append(f"{step} vs compute {compute_time_s:,.2f} s: {total_s / compute_time_s:.1f}x, {bound}")
    else:
        notes.append(f"{step}; compute time unknown: {compute_reason}")
    missing: dict[str, str] = {}
    if tier == "cpu":
        why = "--offload cpu: nothing goes to NVMe"
        missing.update({"nvme_read_gbps": why, "nvme_write_gbps": why, "nvme_time_s": why})
    if compute_time_s is None:
        missing.update({"compute_time_s": compute_reason, "offload_to_compute": compute_reason})
    source = SOURCE_NAME[strategy] + (f"; {DS_OFFLOAD_CONFIG}" if tier == "nvme" else "")
    return PlanOffload(
        tier=cast("OffloadTier", tier),
        strategy=cast("Strategy", strategy),
        nodes=nodes,
        gpus_per_node=n,
        largest_layer_params=largest,
        largest_layer_source=largest_src,
        buffer_factor=BUFFER_FACTOR,
        gpu_bytes=by_tier["gpu"],
        cpu_bytes=by_tier["cpu"],
        nvme_bytes=by_tier["nvme"],
        source=source,
        breakdown=tiers,
        fit=fit,
        traffic=traffic,
        host_h2d_gbps=h2d,
        host_d2h_gbps=d2h,
        host_source=host_src,
        nvme_read_gbps=rd,
        nvme_write_gbps=wr,
        nvme_source=nvme_src,
        host_time_s=host_s,
        nvme_time_s=nvme_s,
        offload_time_s=total_s,
        compute_time_s=compute_time_s,
        offload_to_compute=ratio,
        notes=notes,
        assumptions=assumptions,
        sources=[
            SOURCE_NAME[strategy],
            DS_MEMORY_DOC,
            *([DS_STAGE12_OFFLOAD] if strategy != "zero3" else []),
            *([DS_OFFLOAD_CONFIG] if tier == "nvme" else []),
        ],
        missing=missing,
    )


def _pair(assumed: tuple[float, str]) -> tuple[float, float, str]:
    return assumed[0], assumed[0], assumed[1]
