"""The power and thermal documents (``rigcheck.power/1``, ``rigcheck.thermal/1``): one concern's figures per
GPU, each null with its reason, and that concern's findings."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from pydantic import Field

from rigcheck.model.document import Document, FindingsRef, ReasonedRecord
from rigcheck.model.finding import Finding
from rigcheck.model.snapshot import ClockEventReason, Gpu, Missing, Snapshot

MISSING_MAP = "field -> why it is null, for the fields of this document"


class StateGpu(ReasonedRecord):
    """One GPU's row; a subclass adds its concern's figures between ``name`` and ``events_active``."""

    # The events list is null when the source gives no reasons at all, not always with a reason of its own.
    NOT_A_READING: ClassVar[frozenset[str]] = frozenset({"name", "events_active"})
    MISSING_KEYS: ClassVar[tuple[str, ...]] = ("events_active",)
    # The clock events this concern shows (the others are another command's business).
    EVENTS: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:  # declared by each subclass, after its figures (the JSON's key order)
        events_active: list[ClockEventReason] | None
        missing: dict[str, Missing]

    index: int = Field(ge=0)
    name: str | None
    # Not in the JSON (docs/commands.md): why the GPU could not be read at all, for the terminal's row.
    read_error: Missing | None = Field(None, exclude=True)


class PowerGpu(StateGpu):
    EVENTS: ClassVar[tuple[str, ...]] = ("sw_power_cap", "hw_power_brake_slowdown", "hw_slowdown")

    power_draw_w: float | None
    power_limit_w: float | None
    power_default_limit_w: float | None
    power_enforced_limit_w: float | None
    power_min_limit_w: float | None
    power_max_limit_w: float | None
    events_active: list[ClockEventReason] | None = Field(
        description="the power-related clock events active now (sw_power_cap, hw_power_brake_slowdown, "
        "hw_slowdown); null when the source does not give the reasons"
    )
    missing: dict[str, Missing] = Field(description=MISSING_MAP)


class ThermalGpu(StateGpu):
    EVENTS: ClassVar[tuple[str, ...]] = ("sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown")

    temp_c: float | None
    temp_memory_c: float | None
    temp_slowdown_c: float | None
    temp_shutdown_c: float | None
    temp_max_operating_c: float | None
    fan_percent: float | None
    events_active: list[ClockEventReason] | None = Field(
        description="the thermal clock events active now (sw_thermal_slowdown, hw_thermal_slowdown, "
        "hw_slowdown); null when the source does not give the reasons"
    )
    missing: dict[str, Missing] = Field(description=MISSING_MAP)


class PowerDocument(Document):
    """Power draw and limits per GPU and the power findings (docs/commands.md). A null number has its reason
    in the GPU's `missing` map."""

    schema_: Literal["rigcheck.power/1"] = Field("rigcheck.power/1", alias="schema")
    gpus: list[PowerGpu]
    findings: FindingsRef
    # Not in the JSON (docs/commands.md has none of them): what the reports show besides the rows and the
    # findings: why there are no GPUs, the CLI's exit decision and --strict (the result line).
    gpu_absent_reason: str | None = Field(None, exclude=True)
    exit_code: int = Field(0, exclude=True)
    strict: bool = Field(False, exclude=True)


class ThermalDocument(Document):
    """Temperatures against the card's own thresholds, fan, and the thermal findings (docs/commands.md).
    A null number has its reason in the GPU's `missing` map."""

    schema_: Literal["rigcheck.thermal/1"] = Field("rigcheck.thermal/1", alias="schema")
    gpus: list[ThermalGpu]
    findings: FindingsRef
    # Not in the JSON (docs/commands.md has none of them): what the reports show besides the rows and the
    # findings: why there are no GPUs, the CLI's exit decision and --strict (the result line).
    gpu_absent_reason: str | None = Field(None, exclude=True)
    exit_code: int = Field(0, exclude=True)
    strict: bool = Field(False, exclude=True)


StateDocument = PowerDocument | ThermalDocument
G = TypeVar("G", bound=StateGpu)


def figure_names(row: type[StateGpu]) -> list[str]:
    """The figures a row holds, in order: every field in the JSON but the GPU's identity, its events and
    ``missing``."""
    identity = ("index", "name", "events_active", "missing")
    return [n for n, field in row.model_fields.items() if not field.exclude and n not in identity]


def state_row(row: type[G], g: Gpu) -> G:
    """One GPU's row: its figures, the concern's active events, and why each null is null."""
    names = figure_names(row)
    values: dict[str, object] = {n: getattr(g, n) for n in names}
    active = g.clock_event_reasons_active
    values["events_active"] = None if active is None else [r for r in active if r in row.EVENTS]
    # Every null says why: the field's own reason, the reasons list's for events_active, or, for a GPU that
    # could not be read at all, why it could not.
    why = {k: v for k, v in g.missing.items() if k in names}
    if values["events_active"] is None and "clock_event_reasons_active" in g.missing:
        why["events_active"] = g.missing["clock_event_reasons_active"]
    if g.read_error is not None:
        for key, value in values.items():
            if value is None:
                why.setdefault(key, g.read_error)
    return row(index=g.index, name=g.name, read_error=g.read_error, **values, missing=why)


def power_document(snap: Snapshot, findings: list[Finding], *, exit_code: int, strict: bool) -> PowerDocument:
    """The power document; ``findings`` are the power findings, ``exit_code`` the CLI's decision."""
    return PowerDocument(
        gpus=[state_row(PowerGpu, g) for g in snap.gpus],
        findings=findings,
        gpu_absent_reason=snap.gpu_absent_reason,
        exit_code=exit_code,
        strict=strict,
    )


def thermal_document(snap: Snapshot, findings: list[Finding], *, exit_code: int, strict: bool) -> ThermalDocument:
    """The thermal document; ``findings`` are the thermal findings, ``exit_code`` the CLI's decision."""
    return ThermalDocument(
        gpus=[state_row(ThermalGpu, g) for g in snap.gpus],
        findings=findings,
        gpu_absent_reason=snap.gpu_absent_reason,
        exit_code=exit_code,
        strict=strict,
    )
