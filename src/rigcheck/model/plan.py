"""``rigcheck.plan/1``: bytes and time on the wire per GPU per step, beside compute (``rigcheck plan --json``).

Built by :func:`rigcheck.plan.comm.plan_comm` (the command: :func:`rigcheck.plan.build.build_comm_plan`), drawn
by :mod:`rigcheck.report.plan`. ``guide`` is there only with --explain-guide
(:func:`rigcheck.plan.guide.guide_rig_explanation`). ``offload`` is there only with --offload
(:func:`rigcheck.plan.offload.plan_offload`): the bytes each tier holds, the fit against the machine, the traffic.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from rigcheck.model.bench import absent_unless_set
from rigcheck.model.document import Document, Plain, ReasonedRecord

Strategy = Literal["ddp", "zero1", "zero2", "zero3", "fsdp"]
Dtype = Literal["fp32", "bf16", "fp16"]
CollectiveOp = Literal["all_reduce", "reduce_scatter", "all_gather"]
OffloadTier = Literal["cpu", "nvme"]
Reason = Annotated[str, Field(min_length=1)]
# Where a figure comes out an int or a float depending on the inputs (params x 16 B, a catalog's 24 GiB):
# kept as computed, so the JSON prints what it always printed.
Number = int | float


class PlanInputs(Plain):
    params: int = Field(ge=1)
    gpus: int = Field(ge=1)
    strategy: Strategy
    dtype: Dtype
    tokens_per_step_per_gpu: int | None


class Collective(Plain):
    """One collective of a training step, and the bytes one GPU sends in it (ring algorithms)."""

    op: CollectiveOp
    what: str
    bytes_per_gpu: float


class StrategyRow(ReasonedRecord):
    """One strategy at the same model, GPUs and bandwidth: the table that compares them."""

    strategy: Strategy
    wire_bytes_per_gpu_per_step: float
    comm_time_s: float | None
    model_state_bytes_per_gpu: Number
    fits_model_states: bool | None
    missing: dict[str, Reason] = Field(
        description="field -> why it is null: no bus bandwidth for comm_time_s, no --model for fits_model_states"
    )


class GuideScenario(Plain):
    """One guess at the SHM path's bandwidth, and how much of the guide's difference it explains."""

    name: str
    shm_busbw_gbps: float
    shm_busbw_source: str
    comm_s_per_run: float
    extra_comm_s_vs_nvlink: float
    share_of_difference: float


class PlanGuide(Plain):
    """--explain-guide: the guide's NVLink result (101.9 s with NV2, 131.4 s without P2P) explained."""

    schema_: Literal["rigcheck.plan-guide/1"] = Field("rigcheck.plan-guide/1", alias="schema")
    source: str
    params: int
    params_source: str
    gpus: int
    strategy: Strategy
    dtype: Dtype
    wire_bytes_per_gpu_per_step: float
    wire_formula: str
    wire_source: str
    steps: int
    measured_nvlink_s: float
    measured_no_p2p_s: float
    measured_difference_s: float
    measured_difference_per_step_s: float
    nvlink_busbw_gbps: float
    nvlink_busbw_source: str
    nvlink_comm_s_per_run: float
    shm_assumption: str
    scenarios: list[GuideScenario]
    implied_shm_busbw_gbps: float
    implied_shm_note: str
    compute_flops_per_step_per_gpu: float
    compute_source: str
    fp32_peak_tflops: float
    fp32_peak_source: str
    assumed_mfu: float
    compute_s_per_step_estimate: float
    measured_nvlink_s_per_step: float
    implied_mfu_nvlink_run: float
    backward_s_per_step_estimate: float
    explanation: list[str]
    not_explained: list[str]


class OffloadBreakdown(Plain):
    """What one tier holds: per GPU for the GPU tier, per node for CPU RAM and NVMe; model states only, then
    the buffers the estimator adds (its additional_buffer_factor, DeepSpeed's swap buffers)."""

    tier: Literal["gpu", "cpu", "nvme"]
    per: Literal["gpu", "node"]
    params_bytes: Number
    grads_bytes: Number
    optimizer_bytes: Number
    buffers_bytes: Number = Field(description="what the estimator adds beyond the model states")
    total_bytes: Number
    formula: str
    source: str


class OffloadFit(ReasonedRecord):
    """One tier against the machine: CPU RAM against host.memory_total_gib, NVMe against free space."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"available_source"})

    tier: OffloadTier
    needed_bytes: Number
    available_bytes: Number | None
    available_source: str | None
    fits: bool | None
    verdict: str
    missing: dict[str, Reason] = Field(description="field -> why it is null")


class OffloadTraffic(Plain):
    """Bytes one step moves over one link: the host link (per GPU, each GPU on its own link) or the NVMe
    drive (per node)."""

    what: str
    link: Literal["host", "nvme"]
    direction: Literal["h2d", "d2h", "read", "write"]
    per: Literal["gpu", "node"]
    bytes: Number
    time_s: float
    gbps: float


class PlanOffload(ReasonedRecord):
    """--offload: the bytes each tier must hold (DeepSpeed's estimators), the fit against the machine, and the
    offload traffic per step and its time beside compute."""

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"nvme_source"})

    tier: OffloadTier
    strategy: Strategy
    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)
    largest_layer_params: int = Field(ge=0)
    largest_layer_source: str
    buffer_factor: float
    gpu_bytes: Number = Field(description="per GPU")
    cpu_bytes: Number = Field(description="per node")
    nvme_bytes: Number = Field(description="per node")
    source: str
    breakdown: list[OffloadBreakdown]
    fit: list[OffloadFit]
    traffic: list[OffloadTraffic]
    host_h2d_gbps: float
    host_d2h_gbps: float
    host_source: str
    nvme_read_gbps: float | None
    nvme_write_gbps: float | None
    nvme_source: str | None
    host_time_s: float = Field(description="per step, each GPU on its own host link, no overlap")
    nvme_time_s: float | None = Field(description="per step per node; null with --offload cpu")
    offload_time_s: float = Field(description="host + NVMe, no overlap with each other or with compute")
    compute_time_s: float | None
    offload_to_compute: float | None = Field(description="offload_time_s / compute_time_s")
    notes: list[str]
    assumptions: list[str]
    sources: list[str]
    missing: dict[str, Reason] = Field(description="field -> why it is null")


# A null figure with a sibling `<figure>_reason` (older than `missing`, kept, same text): the sibling is a string.
REASON_SIBLINGS = {"comm_time_s": "comm_time_reason", "compute_time_s": "compute_time_reason"}


def _plan_rules(schema: dict[str, Any]) -> None:
    """The plan's own rules, beside the ones every :class:`ReasonedRecord` has: a null time has its ``_reason``
    sibling; a known bus bandwidth has its source; ``guide``, printed only with --explain-guide, is never null."""
    guide = schema["properties"]["guide"]
    (ref,) = [alt for alt in guide.pop("anyOf") if alt.get("type") != "null"]
    guide.pop("default", None)
    guide.update(ref)
    rules = [
        {
            "if": {"properties": {field: {"type": "null"}}, "required": [field]},
            "then": {"properties": {reason: {"type": "string"}}, "required": [reason]},
        }
        for field, reason in REASON_SIBLINGS.items()
    ]
    rules.append(
        {
            "if": {"properties": {"busbw_gbps": {"type": "number"}}, "required": ["busbw_gbps"]},
            "then": {"properties": {"busbw_source": {"type": "string"}}},
        }
    )
    schema["allOf"] = [*schema.get("allOf", []), *rules]


def _absent(value: object) -> bool:
    """A key printed only when it has a value (pydantic's ``exclude_if``)."""
    return value is None


class PlanDocument(Document, ReasonedRecord):
    """Bytes and time on the wire per GPU per step for a data-parallel strategy, beside compute
    (docs/commands.md). `comm_time_s` and `compute_time_s` are null only with their `_reason`. Every null
    number has its reason in `missing` (per document, and per row of `strategies`)."""

    # Text beside a number, an echoed option: not readings, so no reason of their own in `missing`.
    NOT_A_READING: ClassVar[frozenset[str]] = frozenset(
        {"busbw_source", "comm_time_reason", "tflops_source", "compute_time_reason", "guide", "offload"}
    )

    schema_: Literal["rigcheck.plan/1"] = Field("rigcheck.plan/1", alias="schema")
    inputs: PlanInputs
    strategy: Strategy
    bytes_per_element: int
    wire_bytes_per_gpu_per_step: float
    collectives: list[Collective]
    busbw_gbps: float | None
    busbw_source: str | None
    comm_time_s: float | None
    comm_time_reason: str | None
    flops_per_step_per_gpu: float | None
    achieved_tflops: float | None
    tflops_source: str | None
    compute_time_s: float | None
    compute_time_reason: str | None
    comm_share: float | None = Field(description="comm / (comm + compute) with no overlap; null when either is unknown")
    exposed_comm_s: float | None = Field(
        description="what DDP-style overlap with the backward pass cannot hide; null when comm or compute time is "
        "unknown"
    )
    model_state_bytes_per_gpu: Number
    gpu_memory_bytes: Number | None = Field(description="null without --model")
    strategies: list[StrategyRow]
    advice: list[str]
    assumptions: list[str]
    sources: list[str]
    missing: dict[str, Reason] = Field(
        description="field -> why it is null; every null number of this document has its reason here "
        "(comm_time_reason and compute_time_reason stay, with the same text)"
    )
    guide: PlanGuide | None = Field(
        None, exclude_if=_absent, description="--explain-guide: the guide's NVLink result explained; only with it"
    )
    offload: PlanOffload | None = absent_unless_set("--offload: tiers, fit and traffic; only with it")

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # After the inherited reason rules (json_schema_extra), so that they are kept and these added.
        json_schema = handler(core_schema)
        _plan_rules(handler.resolve_ref_schema(json_schema))
        return json_schema
