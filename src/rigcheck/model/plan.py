"""``rigcheck.plan/1``: bytes and time on the wire per GPU per step, beside compute (``rigcheck plan --json``).

Built by :func:`rigcheck.plan.comm.plan_comm` (the command: :func:`rigcheck.plan.build.build_comm_plan`), drawn
by :mod:`rigcheck.report.plan`. ``guide`` is there only with --explain-guide
(:func:`rigcheck.plan.guide.guide_rig_explanation`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from rigcheck.model.document import Document, Plain, ReasonedRecord

Strategy = Literal["ddp", "zero1", "zero2", "zero3", "fsdp"]
Dtype = Literal["fp32", "bf16", "fp16"]
CollectiveOp = Literal["all_reduce", "reduce_scatter", "all_gather"]
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
        description="field -> why it is null: no bus bandwidth for comm_time_s, no --gpu for fits_model_states"
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


class CommPlan(Document, ReasonedRecord):
    """Bytes and time on the wire per GPU per step for a data-parallel strategy, beside compute
    (docs/commands.md). `comm_time_s` and `compute_time_s` are null only with their `_reason`. Every null
    number has its reason in `missing` (per document, and per row of `strategies`)."""

    # Text beside a number, an echoed option: not readings, so no reason of their own in `missing`.
    NOT_A_READING: ClassVar[frozenset[str]] = frozenset(
        {"busbw_source", "comm_time_reason", "tflops_source", "compute_time_reason", "guide"}
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
    gpu_memory_bytes: Number | None = Field(description="null without --gpu")
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

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # After the inherited reason rules (json_schema_extra), so that they are kept and these added.
        json_schema = handler(core_schema)
        _plan_rules(handler.resolve_ref_schema(json_schema))
        return json_schema
