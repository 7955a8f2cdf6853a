"""`rigcheck burn --analyze FILE [--json]`: the burn verdict on a recorded trace (schema ``rigcheck.burn/1``).

Exit codes: 0 nothing wrong; 1 a GPU throttled for heat, was lost, or hit the hardware power brake for
a second or more (:func:`rigcheck.checks.burn.is_problem`); 2 a file that is not a trace.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.console import Group, RenderableType
from rich.text import Text

from rigcheck.checks.burn import analyze_trace, is_problem
from rigcheck.checks.common import fmt
from rigcheck.cli.common import note, out_console, print_json, write_report_file
from rigcheck.errors import InputError
from rigcheck.model.telemetry import GpuBurnAnalysis, Trace

BURN_SCHEMA = "rigcheck.burn/1"


def burn_to_dict(trace: Trace, analyses: list[GpuBurnAnalysis], exit_code: int) -> dict[str, Any]:
    return {
        "schema": BURN_SCHEMA,
        "source": trace.source,
        "path": trace.path,
        "interval_s": trace.interval_s,
        "exit_code": exit_code,
        "diagnostics": list(trace.diagnostics),
        "gpus": [asdict(a) for a in analyses],
    }


def _style(a: GpuBurnAnalysis) -> str:
    if is_problem(a):
        return "bold red"
    if a.verdict.startswith("hot") or a.limiter == "unknown":
        return "bold yellow"
    return "bold green"


def _value(value: float | None, unit: str, digits: int = 0) -> str:
    return fmt(value, unit, digits) if value is not None else "n/a"


def gpu_lines(a: GpuBurnAnalysis) -> list[RenderableType]:
    """A few lines per GPU: the verdict, the numbers behind it, the advice."""
    lines: list[RenderableType] = [Text.assemble((f"GPU{a.index}  ", "bold"), (a.verdict, _style(a)))]
    if a.loaded_s > 0:
        cap = (
            f", power cap reached after {fmt(a.time_to_power_cap_s, 's', 1)}"
            if a.time_to_power_cap_s is not None
            else ""
        )
        lines.append(
            Text(
                f"  loaded {fmt(a.loaded_s, 's', 1)}: power {_value(a.power_w_median_loaded, 'W')} median "
                f"of a {_value(a.power_limit_w, 'W')} limit{cap}"
            )
        )
        if a.slowdown_margin_c is not None and a.temp_slowdown_c is not None:
            side = "under" if a.slowdown_margin_c >= 0 else "over"
            margin = (
                f", {fmt(abs(a.slowdown_margin_c), 'C', 1)} {side} the card's {fmt(a.temp_slowdown_c, 'C')} slowdown"
            )
        else:
            margin = ", slowdown threshold not in the trace"
        lines.append(
            Text(
                f"  temperature {_value(a.temp_c_max, 'C')} peak (rise {_value(a.temp_rise_c, 'C')}, plateau "
                f"{_value(a.temp_plateau_c, 'C')}){margin}"
            )
        )
        ref = (
            f"{_value(a.sm_clock_max_mhz, 'MHz')} max"
            if a.sm_clock_max_mhz is not None
            else (f"{_value(a.sm_clock_mhz_first, 'MHz')} in the first seconds")
        )
        drop = f", {fmt(a.sm_clock_drop_percent, '%', 1)} below {ref}" if a.sm_clock_drop_percent is not None else ""
        lines.append(Text(f"  SM clock {_value(a.sm_clock_mhz_median_loaded, 'MHz')} median while loaded{drop}"))
        shares = [(name, share) for name, share in a.reasons_time_fraction.items() if share > 0]
        shares.sort(key=lambda item: -item[1])
        if a.reasons_time_fraction:
            text = ", ".join(f"{name} {share:.1%}" for name, share in shares) or "none"
        else:
            text = "not in the trace"
        lines.append(Text(f"  clock-event reasons while loaded: {text}"))
    elif a.temp_c_max is not None:
        lines.append(Text(f"  temperature {fmt(a.temp_c_max, 'C')} peak"))
    lines.append(Text(f"  advice: {a.advice}", style="dim"))
    return lines


def burn_analyze(file: Path, as_json: bool, html_file: Path | None = None) -> None:
    """Analyse a recorded trace (rigcheck CSV/JSONL, or nvidia-smi --query-gpu CSV) and set the exit code."""
    from rigcheck.probe.trace import read_trace

    try:
        trace = read_trace(str(file))
    except InputError as exc:
        note(f"error: {exc}")
        raise typer.Exit(exc.exit_code) from None
    for line in trace.diagnostics:
        note(line)
    analyses = analyze_trace(trace)
    exit_code = 1 if any(is_problem(a) for a in analyses) else 0
    if html_file is not None:
        from rigcheck.report.html import burn_html

        write_report_file(html_file, burn_html(trace, analyses, title=f"rigcheck burn --analyze {file.name}"))
    if as_json:
        print_json(burn_to_dict(trace, analyses, exit_code))
        raise typer.Exit(exit_code)
    parts: list[RenderableType] = [Text(f"rigcheck burn --analyze {file} ({trace.source})", style="bold")]
    for a in analyses:
        parts += gpu_lines(a)
    parts.append(Text(""))
    bad = [a.index for a in analyses if is_problem(a)]
    if bad:
        parts.append(Text(f"problems on GPU {', '.join(map(str, bad))}", style="bold red"))
    else:
        parts.append(Text("no GPU throttled for heat or was lost", style="bold green"))
    out_console().print(Group(*parts))
    raise typer.Exit(exit_code)
