"""`rigcheck power` (with `power plan`, loaded only when asked for): the power figures per GPU and the power
findings; with them, the findings that say a GPU (or every GPU) could not be read, so `power` passes no GPU it
could not see."""

from __future__ import annotations

from pathlib import Path

import typer

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.health import UNREADABLE_IDS
from rigcheck.cli.common import (
    FromOption,
    GpusOption,
    IdOption,
    IndentOption,
    JsonOption,
    StrictOption,
    emit,
    interruptible,
    json_indent,
    load_snapshot,
)
from rigcheck.cli.exits import exit_code_for
from rigcheck.cli.lazy import LazyCommand, LazyGroup
from rigcheck.model.power_thermal import power_document
from rigcheck.report.render import Format, RenderOptions


def power_state(
    source: list[Path] | None,
    as_json: bool,
    strict: bool,
    gpus: str | None = None,
    indent: int | None = None,
    ids: str | None = None,
) -> None:
    snap = load_snapshot(source, gpus=gpus, ids=ids)
    found = [f for f in run_checks(snap) if f.category == "power" or f.id in UNREADABLE_IDS]
    doc = power_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(doc.exit_code)


class PowerGroup(LazyGroup):
    table = (
        LazyCommand(
            "plan",
            "Plan the PSU and the independent PCIe power cables for COUNT cards of one model.",
            "rigcheck.cli.power_plan",
            "power_plan",
        ),
    )


power_app = typer.Typer(
    name="power",
    cls=PowerGroup,
    help="Power: draw and limits per GPU, power-cap and power-brake events; `plan` sizes a PSU and its cables.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@power_app.callback(invoke_without_command=True)
@interruptible
def power(
    ctx: typer.Context,
    source: FromOption = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    strict: StrictOption = False,
    gpus_text: GpusOption = None,
    gpu_ids: IdOption = None,
) -> None:
    """Power draw and limits (default, enforced, min, max) per GPU, and power-related findings."""
    if ctx.invoked_subcommand is None:
        power_state(source, as_json, strict, gpus_text, indent, gpu_ids)
