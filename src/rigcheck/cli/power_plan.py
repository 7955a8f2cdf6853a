"""`rigcheck power plan`: the PSU and the independent PCIe cables a set of GPUs needs."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.cli.common import JsonOption, out_console, print_json
from rigcheck.plan.power import plan_power, power_plan_to_dict


def _connector_text(conn: dict[str, Any]) -> str:
    watts = conn["watts_each"]
    rating = f" ({watts:g} W each)" if watts is not None else ""
    return f"{conn['count']} × {conn['kind']}{rating}"


def _render(plan: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = [Text("rigcheck power plan", style="bold")]
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("GPU", "power sockets on the card", "sockets"):
        table.add_column(col)
    for entry in plan["cables"]:
        conns = entry["connectors"]
        text = ", ".join(_connector_text(c) for c in conns) or "none (powered by the baseboard or the slot)"
        table.add_row(str(entry["gpu"]), text, str(sum(c["count"] for c in conns)))
    parts.append(table)
    parts.append(Text(""))
    parts.append(Text(f"GPUs draw up to {plan['total_gpu_power_w']:g} W (board power)."))
    parts.append(Text(f"Independent PCIe power cables from the PSU: {plan['independent_cables_total']} (no pigtails)."))
    parts.append(Text(f"Recommended PSU: {plan['recommended_psu_w']:g} W.", style="bold"))
    if "psu_ok" in plan:
        ok = bool(plan["psu_ok"])
        parts.append(
            Text(
                "Your PSU is enough." if ok else "Your PSU is NOT enough for this load.",
                style="green" if ok else "bold red",
            )
        )
    for line in plan.get("notes", []):
        parts.append(Text(f"• {line}", style="dim"))
    return Group(*parts)


def power_plan(
    gpu: Annotated[str, typer.Option("--gpu", help='GPU model, e.g. "TITAN RTX", "RTX 4090", "H100 SXM".')],
    count: Annotated[int, typer.Option("--count", help="How many of them.")] = 1,
    psu_watts: Annotated[
        float | None, typer.Option("--psu-watts", help="Your PSU's rating, to check it.", min=1)
    ] = None,
    cpu_watts: Annotated[
        float | None, typer.Option("--cpu-watts", help="CPU power (default: a stated assumption).", min=0)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Plan the PSU and the independent PCIe power cables for COUNT cards of one model.

    Exit code: 0 (and 1 when --psu-watts is given and the PSU is too small).
    """
    plan = power_plan_to_dict(plan_power(gpu, count, psu_watts=psu_watts, cpu_watts=cpu_watts))
    if as_json:
        print_json(plan)
    else:
        out_console().print(_render(plan))
    raise typer.Exit(1 if plan.get("psu_ok") is False else 0)
