"""`rigcheck burn`: load the GPUs with sustained matmuls, record telemetry, say whether, when and why they slowed.

``--analyze FILE`` judges a recorded trace instead (rigcheck.cli.burn_analyze). The JSON (schema
``rigcheck.burn/1``) is the analysis document of ``--analyze`` plus, per GPU, ``tflops_sustained``,
``tflops_first_10s`` and ``errors`` (products that came out wrong), and ``workload`` / ``sampler`` /
``partial`` / ``interrupted``.

Exit codes: 0 nothing wrong; 1 a wrong result, a GPU whose load failed, or a problem by
rigcheck.checks.burn.is_problem (thermal throttling, lost GPU, HW power brake), or no GPU; 2 bad usage;
130 Ctrl-C (what was measured is still printed, marked partial).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.text import Text

from rigcheck.checks.burn import is_problem
from rigcheck.cli import monitor_cmd
from rigcheck.cli.burn_analyze import burn_analyze, burn_to_dict, gpu_lines
from rigcheck.cli.common import (
    EXIT_INTERRUPTED,
    HtmlFileOption,
    interruptible,
    note,
    out_console,
    print_json,
    write_report_file,
)
from rigcheck.errors import BenchError
from rigcheck.monitor.sampler import TraceFile

if TYPE_CHECKING:  # the workload module is imported when a burn runs, not at every start of the CLI
    from rigcheck.bench.burn import BurnResult


def burn_exit_code(result: BurnResult) -> int:
    if result.interrupted:
        return EXIT_INTERRUPTED
    if result.errors or result.failed_gpus or any(is_problem(a) for a in result.analyses):
        return 1
    return 0


def burn_document(result: BurnResult, exit_code: int) -> dict[str, Any]:
    doc = burn_to_dict(result.trace, result.analyses, exit_code)
    doc["partial"] = result.interrupted or bool(result.failed_gpus)
    doc["interrupted"] = result.interrupted
    doc["workload"] = result.workload()
    doc["sampler"] = result.sampler.to_dict()
    return doc


def _throughput_line(result: BurnResult, index: int) -> Text:
    load = result.loads.get(index)
    if load is None:
        return Text("")
    if load.error is not None:
        return Text(f"  load FAILED: {load.error}", style="bold red")
    summary = load.summary()
    sustained, first = summary["tflops_sustained"], summary["tflops_first_10s"]
    text = f"  {result.dtype} {load.size}×{load.size} matmul: "
    text += f"{sustained:.0f} TFLOPS sustained" if sustained is not None else "no whole second of load"
    if sustained is not None and first:
        text += f", {first:.0f} in the first 10 s ({(sustained - first) / first:+.1%})"
    if load.errors:
        when = f", first at {load.first_error_s:.1f} s" if load.first_error_s is not None else ""
        return Text(
            text + f"; {load.errors} of {load.checks} checked results WRONG{when}: this GPU computes wrong answers",
            style="bold red",
        )
    return Text(
        text + f"; all {load.checks} checked results (of {load.matmuls} products) matched the first bit for bit"
    )


def render(result: BurnResult) -> None:
    title = f"rigcheck burn: {result.load_s:.0f} s of {result.dtype} matmuls"
    if result.interrupted:
        title += " (interrupted: partial)"
    parts: list[RenderableType] = [Text(title, style="bold")]
    for a in result.analyses:
        lines = gpu_lines(a)
        parts += [*lines[:-1], _throughput_line(result, a.index), lines[-1]]
    wrong = [i for i, load in sorted(result.loads.items()) if load.errors]
    bad = sorted({a.index for a in result.analyses if is_problem(a)} | set(result.failed_gpus) | set(wrong))
    parts.append(Text(""))
    if wrong:
        parts.append(Text(f"WRONG RESULTS on GPU {', '.join(map(str, wrong))}", style="bold red"))
    if bad:
        parts.append(Text(f"problems on GPU {', '.join(map(str, bad))}", style="bold red"))
    else:
        parts.append(Text("no GPU computed a wrong result, throttled for heat or was lost", style="bold green"))
    out_console().print(Group(*parts))


def burn(
    *,
    minutes: Annotated[float, typer.Option("--minutes", min=0.05, max=24 * 60, help="Minutes of load.")] = 5.0,
    gpus_text: Annotated[str | None, typer.Option("--gpus", help="Only these GPUs, e.g. 0,1 (default: all).")] = None,
    dtype: Annotated[
        str, typer.Option("--dtype", help="bf16 | fp16 | tf32 | fp32 (tensor cores for all but fp32).")
    ] = "bf16",
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Also log the telemetry to this CSV file.", dir_okay=False)
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option("--jsonl", help="Also log the telemetry to this JSONL file.", dir_okay=False)
    ] = None,
    analyze: Annotated[
        Path | None,
        typer.Option("--analyze", help="Analyse a recorded trace (rigcheck CSV/JSONL, nvidia-smi CSV) instead."),
    ] = None,
    interval: Annotated[float, typer.Option("--interval", min=0.01, max=10.0, help="Seconds between polls.")] = 0.1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result (rigcheck.burn/1) as JSON.")] = False,
    html_file: HtmlFileOption = None,
) -> None:
    """Load the GPUs with sustained matmuls while recording power, temperature, clocks and throttle reasons."""
    if analyze is not None:
        burn_analyze(analyze, as_json, html_file)
        return
    from rigcheck.bench.burn import DTYPES, run_burn

    if dtype not in DTYPES:
        raise typer.BadParameter(f"one of {', '.join(DTYPES)}", param_hint="--dtype")
    target = monitor_cmd.trace_target(csv, jsonl)
    poller = monitor_cmd.open_poller(monitor_cmd.parse_gpus(gpus_text))
    sink: TraceFile | None = None
    try:
        sink = TraceFile(target[0], target[1]) if target is not None else None
        result = run_burn(
            poller,
            minutes=minutes,
            dtype=dtype,
            sink=sink,
            interval_s=interval,
            on_progress=note,
            uuids=dict(poller.uuids),
        )
    except BenchError as exc:
        note(f"no usable NVIDIA GPU: {exc}")
        raise typer.Exit(1) from None
    finally:
        if sink is not None:
            sink.close()  # the sampler closed it, unless the run failed before it started
        poller.close()
    if sink is not None:
        note(f"{sink.rows} samples written to {sink.path}")
    code = burn_exit_code(result)
    if html_file is not None:
        from rigcheck.report.html import burn_html

        write_report_file(html_file, burn_html(result.trace, result.analyses))
    if as_json:
        print_json(burn_document(result, code))
    else:
        render(result)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add `burn` to a typer app (cli/app.py mounts it on `rigcheck`)."""
    app.command("burn")(interruptible(burn))
