"""`rigcheck power plan`: the PSU and the independent PCIe cables a set of GPUs needs."""

from __future__ import annotations

from typing import Annotated

import typer

from rigcheck.cli.common import IndentOption, JsonOption, ModelAliasOption, emit, json_indent, model_named
from rigcheck.cli.exits import EXIT_OK, EXIT_PROBLEMS
from rigcheck.report.render import Format, RenderOptions


def power_plan(
    model: Annotated[
        str | None, typer.Option("--model", help='GPU model, e.g. "TITAN RTX", "RTX 4090", "H100 SXM".')
    ] = None,
    count: Annotated[int, typer.Option("--count", help="How many of them.")] = 1,
    psu_watts: Annotated[
        float | None, typer.Option("--psu-watts", help="Your PSU's rating, to check it.", min=1)
    ] = None,
    cpu_watts: Annotated[
        float | None, typer.Option("--cpu-watts", help="CPU power (default: a stated assumption).", min=0)
    ] = None,
    power_limit: Annotated[
        float | None,
        typer.Option(
            "--power-limit",
            help="The limit the cards run at (nvidia-smi -pl), in watts: the PSU is sized for it, the cables for the "
            "board. At most the board power.",
            min=1,
        ),
    ] = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    former_gpu: ModelAliasOption = None,
) -> None:
    """Plan the PSU and the independent PCIe power cables for COUNT cards of one model.

    Exit code: 0, 1 when --psu-watts is given and the PSU is too small, 2 bad usage or input, 3 internal error,
    130/143 interrupted.
    """
    from rigcheck.plan.power import plan_power

    gpu = model_named(model, former_gpu)
    if gpu is None:
        from rigcheck.errors import UsageError

        raise UsageError("Missing option '--model' (the GPU model, e.g. \"RTX 4090\")")
    plan = plan_power(gpu, count, psu_watts=psu_watts, cpu_watts=cpu_watts, power_limit_w=power_limit)
    emit(plan, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(EXIT_PROBLEMS if plan.psu_ok is False else EXIT_OK)
