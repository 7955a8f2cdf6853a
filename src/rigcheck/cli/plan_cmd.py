"""`rigcheck plan`: bytes and time on the wire per step for DDP / ZeRO / FSDP, beside compute."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigcheck.cli.common import JsonOption, emit, interruptible
from rigcheck.cli.exits import EXIT_OK
from rigcheck.report.render import Format


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
    from rigcheck.plan.build import build_comm_plan

    doc = build_comm_plan(
        params, gpus, strategy, dtype, busbw, source, link, gpu, tokens, tflops, explain_guide=explain_guide
    )
    emit(doc, Format.JSON if as_json else Format.TERMINAL)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    app.command("plan")(interruptible(plan))
