"""`rigcheck plan`: bytes and time on the wire per step for DDP / ZeRO / FSDP, beside compute."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.cli.common import JsonOption, interruptible, out_console, print_json
from rigcheck.errors import InputError, UsageError
from rigcheck.model import Snapshot
from rigcheck.plan.comm import (
    DTYPES,
    STRATEGIES,
    busbw_from_bench,
    comm_plan_to_dict,
    guide_rig_explanation,
    parse_params,
    plan_comm,
)
from rigcheck.probe.from_file import read_text


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:,.2f} MB"


def _ms(value: float | None, reason: str | None = None) -> str:
    if value is None:
        return f"n/a ({reason})" if reason else "n/a"
    return f"{value * 1e3:,.1f} ms"


def render(doc: dict[str, Any]) -> RenderableType:
    i = doc["inputs"]
    parts: list[RenderableType] = [
        Text(
            f"rigcheck plan: {i['params']:,} parameters, {i['gpus']} GPUs, {doc['strategy']}, {i['dtype']}",
            style="bold",
        ),
        Text(f"Bytes on the wire per GPU per step: {_mb(doc['wire_bytes_per_gpu_per_step'])}", style="bold"),
    ]
    for c in doc["collectives"]:
        parts.append(Text(f"  {c['op']} of {c['what']}: {_mb(c['bytes_per_gpu'])}"))
    bw = doc["busbw_gbps"]
    parts.append(
        Text(f"Bus bandwidth: {bw:g} GB/s ({doc['busbw_source']})" if bw is not None else "Bus bandwidth: unknown")
    )
    parts.append(Text(f"Time on the wire per step: {_ms(doc['comm_time_s'], doc['comm_time_reason'])}"))
    parts.append(Text(f"Compute per step: {_ms(doc['compute_time_s'], doc['compute_time_reason'])}"))
    if doc["comm_share"] is not None:
        parts.append(Text(f"Communication share without overlap: {doc['comm_share']:.1%}"))
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("strategy", "MB/GPU/step", "wire time", "model states/GPU"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for row in doc["strategies"]:
        table.add_row(
            row["strategy"],
            f"{row['wire_bytes_per_gpu_per_step'] / 1e6:,.2f}",
            _ms(row["comm_time_s"]),
            f"{row['model_state_bytes_per_gpu'] / 2**30:,.2f} GiB",
        )
    parts.append(table)
    parts.extend(Text(f"• {line}") for line in doc["advice"])
    parts.extend(Text(f"assumption: {line}", style="dim") for line in doc["assumptions"])
    return Group(*parts)


def render_guide(doc: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = [
        Text("The guide's NVLink result, explained (gpt2, 2x TITAN RTX, fp32 DDP)", style="bold")
    ]
    parts.extend(Text(f"• {line}") for line in doc["explanation"])
    parts.append(Text("Not explained by the bytes:", style="bold"))
    parts.extend(Text(f"• {line}") for line in doc["not_explained"])
    return Group(*parts)


def _from_document(source: Path) -> tuple[float | None, str | None, Snapshot | None]:
    """--from: a bench result (busbw) or anything `--from` reads elsewhere (a snapshot, topo -m ...)."""
    path = str(source)
    text = read_text(path, "a bench result, a snapshot or a topo -m file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict) and str(data.get("schema", "")).startswith("rigcheck.bench/"):
        bw, src = busbw_from_bench(data)
        return bw, f"{src}: {path}", None
    from rigcheck.probe.from_file import load_file

    try:
        return None, None, load_file(path)
    except InputError as exc:
        raise InputError(
            f"neither a rigcheck.bench/1 result nor a snapshot/topology: {exc.detail}", path=path
        ) from None


def plan(
    params: Annotated[str, typer.Option("--params", help="Model size: 124M, 1.3B, 7e9, 124439808, or gpt2.")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in data parallel.", min=1)] = 2,
    strategy: Annotated[str, typer.Option("--strategy", help="ddp, zero1, zero2, zero3 or fsdp.")] = "ddp",
    dtype: Annotated[str, typer.Option("--dtype", help="Gradient / parameter dtype: fp32, bf16, fp16.")] = "fp32",
    busbw: Annotated[float | None, typer.Option("--busbw", help="Bus bandwidth in GB/s (measured).")] = None,
    source: Annotated[
        Path | None,
        typer.Option("--from", help="A `rigcheck bench allreduce --json` result, or a snapshot / topo -m file."),
    ] = None,
    link: Annotated[str | None, typer.Option("--link", help="A link to assume: NV2 (with --gpu), PCIe3x16.")] = None,
    gpu: Annotated[
        str | None, typer.Option("--gpu", help='GPU model for peak FLOPS and memory, e.g. "TITAN RTX".')
    ] = None,
    tokens: Annotated[
        int | None, typer.Option("--tokens", help="Tokens per GPU per step (default 4096: the guide's 4 x 1024).")
    ] = None,
    tflops: Annotated[float | None, typer.Option("--tflops", help="Achieved TFLOPS per GPU (measured).")] = None,
    as_json: JsonOption = False,
    explain_guide: Annotated[
        bool, typer.Option("--explain-guide", help="Also explain the guide's 101.9 s vs 131.4 s NVLink result.")
    ] = False,
) -> None:
    """Predict bytes and time on the wire per GPU per step, beside compute, and say which strategy suits.

    Exit code: 0, or 2 for bad arguments or input.
    """
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    if busbw is not None and source is not None:
        raise UsageError("give --busbw or --from, not both")
    bw, bw_src, snap = busbw, None, None
    if source is not None:
        bw, bw_src, snap = _from_document(source)
    assumptions: list[str] = []
    if tokens is None:
        tokens = 4096
        assumptions.append("tokens per GPU per step: 4096 (the guide's batch: 4 sequences x 1024 tokens); set --tokens")
    result = plan_comm(
        parse_params(params),
        gpus,
        strategy,
        dtype,
        busbw_gbps=bw,
        tokens_per_step_per_gpu=tokens,
        achieved_tflops=tflops,
        snapshot=snap,
        busbw_source=bw_src,
        gpu=gpu,
        link=link,
    )
    result.assumptions[:0] = assumptions
    doc = comm_plan_to_dict(result)
    if explain_guide:
        doc["guide"] = guide_rig_explanation()
    if as_json:
        print_json(doc)
    else:
        console = out_console()
        console.print(render(doc))
        if explain_guide:
            console.print(render_guide(doc["guide"]))
    raise typer.Exit(0)


def register(app: typer.Typer) -> None:
    app.command("plan")(interruptible(plan))
