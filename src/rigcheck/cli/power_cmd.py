"""`rigcheck power` (with `power plan`, loaded only when asked for) and `rigcheck thermal`."""

from __future__ import annotations

from typing import Annotated

import typer

from rigcheck.cli.common import FromOption, GpusOption, JsonOption, interruptible
from rigcheck.cli.lazy import LazyCommand, LazyGroup
from rigcheck.cli.state import power_state, thermal_state

StrictOption = Annotated[bool, typer.Option("--strict", help="Warnings count as problems (exit 1).")]


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
    strict: StrictOption = False,
    gpus_text: GpusOption = None,
) -> None:
    """Power draw and limits (default, enforced, min, max) per GPU, and power-related findings."""
    if ctx.invoked_subcommand is None:
        power_state(source, as_json, strict, gpus_text)


def thermal(
    source: FromOption = None, as_json: JsonOption = False, strict: StrictOption = False, gpus_text: GpusOption = None
) -> None:
    """Temperatures against the card's own slowdown/shutdown thresholds and the guide's bands."""
    thermal_state(source, as_json, strict, gpus_text)
