"""``rigcheck.power-plan/1``: the PSU and its cables for a set of GPUs (``rigcheck power plan --json``).

Built by :func:`rigcheck.plan.power.plan_power`, drawn by :mod:`rigcheck.report.power_plan`. Two kinds of key
are there only sometimes, as the command has always printed them: ``psu_watts`` / ``psu_ok`` only with
--psu-watts, ``gpu.power_limit_w`` only with --power-limit, and a connector's ``watts_each_reason`` only beside a
null ``watts_each``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, WithJsonSchema

from rigcheck.facts.catalog import FormFactor
from rigcheck.model.document import Document, Plain


def _absent(value: object) -> bool:
    """A key printed only when it has a value (pydantic's ``exclude_if``)."""
    return value is None


def _no_default(schema: dict[str, Any], *keys: str) -> None:
    """A key printed only with a value has no default to show (pydantic writes ``"default": null``)."""
    for key in keys:
        schema["properties"][key].pop("default", None)


def _reason_beside_a_null(schema: dict[str, Any]) -> None:
    """A null ``watts_each`` has its ``watts_each_reason`` beside it, and only a null one has."""
    _no_default(schema, "watts_each_reason")
    schema["allOf"] = [
        {
            "if": {"properties": {"watts_each": {"type": "null"}}, "required": ["watts_each"]},
            "then": {"required": ["watts_each_reason"]},
            "else": {"not": {"required": ["watts_each_reason"]}},
        }
    ]


def _psu_keys_together(schema: dict[str, Any]) -> None:
    """``psu_watts`` and ``psu_ok``: both (with --psu-watts) or neither."""
    _no_default(schema, "psu_watts", "psu_ok")
    schema["dependentRequired"] = {"psu_watts": ["psu_ok"], "psu_ok": ["psu_watts"]}


class ConnectorUse(Plain):
    """The power sockets of one kind on one card."""

    model_config = ConfigDict(json_schema_extra=_reason_beside_a_null)

    kind: str = Field(description='"8-pin", "6-pin", "12VHPWR", ...')
    count: int = Field(ge=1)
    watts_each: float | None = Field(description="null where the connector has no fixed rating (12-pin, 8-pin CPU)")
    watts_each_reason: Annotated[str | None, WithJsonSchema({"type": "string", "minLength": 1})] = Field(
        None,
        exclude_if=_absent,
        description="why watts_each is null (no specification gives the connector a rating); present only then",
    )


class GpuCables(Plain):
    """One card's power sockets, each needing its own cable(s) from the PSU."""

    gpu: int = Field(ge=0)
    connectors: list[ConnectorUse]


def _limit_key(schema: dict[str, Any]) -> None:
    _no_default(schema, "power_limit_w")


class PlannedGpu(Plain):
    """The card planned for, as rigcheck's catalog knows it; ``power_limit_w`` only with --power-limit."""

    model_config = ConfigDict(json_schema_extra=_limit_key)

    name: str
    count: int = Field(ge=1)
    board_power_w: int | float
    form_factor: FormFactor
    source: str
    power_limit_w: Annotated[float | None, WithJsonSchema({"type": "number"})] = Field(
        None,
        exclude_if=_absent,
        description="the limit the cards run at (--power-limit), planned as each GPU's draw; present only with it",
    )


class PowerPlanDocument(Document):
    """The PSU and its cables for a list of GPUs (docs/commands.md). `psu_watts` and `psu_ok` are present only
    with --psu-watts. A connector's null `watts_each` has its reason beside it in `watts_each_reason`."""

    model_config = ConfigDict(json_schema_extra=_psu_keys_together)

    schema_: Literal["rigcheck.power-plan/1"] = Field("rigcheck.power-plan/1", alias="schema")
    gpu: PlannedGpu
    total_gpu_power_w: float
    independent_cables_total: int = Field(ge=0)
    cables: list[GpuCables]
    cpu_watts: float
    cpu_watts_assumed: bool = Field(description="true when --cpu-watts was not given")
    rest_of_system_w: float
    transient_factor: float
    required_w: float
    recommended_psu_w: int = Field(ge=0)
    headroom_source: str
    notes: list[str]
    psu_watts: Annotated[float | None, WithJsonSchema({"type": "number"})] = Field(
        None, exclude_if=_absent, description="your PSU's rating (--psu-watts); present only with it"
    )
    psu_ok: Annotated[bool | None, WithJsonSchema({"type": "boolean"})] = Field(
        None, exclude_if=_absent, description="whether that PSU is enough; present only with --psu-watts"
    )
