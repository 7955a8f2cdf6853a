"""`rigcheck plan`: bytes and time on the wire per step for DDP / ZeRO / FSDP, beside compute."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import (
    IndentOption,
    JsonOption,
    ModelAliasOption,
    emit,
    interruptible,
    json_indent,
    model_named,
)
from rigcheck.cli.exits import EXIT_OK
from rigcheck.report.render import Format, RenderOptions

if TYPE_CHECKING:
    from rigcheck.model.plan import PlanDocument


def plan(
    params: Annotated[str, typer.Option("--params", help="Model size: 124M, 1.3B, 7e9, 124439808, or gpt2.")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in data parallel.", min=1)] = 2,
    strategy: Annotated[str, typer.Option("--strategy", help="ddp, zero1, zero2, zero3 or fsdp.")] = "ddp",
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="bf16, fp16 or fp32: gradients and parameters on the wire. Default bf16 mixed precision (fp32 "
            "master weights and Adam states; fp16 on a Volta/Turing --model); fp32 is the guide's run.",
        ),
    ] = None,
    busbw: Annotated[float | None, typer.Option("--busbw", help="Bus bandwidth in GB/s (measured).")] = None,
    source: Annotated[
        list[Path] | None,
        typer.Option(
            "--from",
            help="A `rigcheck bench allreduce --json` result, or a snapshot / topo -m file; with --offload also "
            "`bench hostlink --json` and `bench nvme --json` results (repeat --from).",
        ),
    ] = None,
    link: Annotated[str | None, typer.Option("--link", help="A link to assume: NV2 (with --model), PCIe3x16.")] = None,
    gpu: Annotated[
        str | None, typer.Option("--model", help='GPU model for peak FLOPS and memory, e.g. "TITAN RTX".')
    ] = None,
    former_gpu: ModelAliasOption = None,
    tokens: Annotated[
        int | None, typer.Option("--tokens", help="Tokens per GPU per step (default 4096: the guide's 4 x 1024).")
    ] = None,
    tflops: Annotated[float | None, typer.Option("--tflops", help="Achieved TFLOPS per GPU (measured).")] = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    explain_guide: Annotated[
        bool, typer.Option("--explain-guide", help="Also explain the guide's 101.9 s vs 131.4 s NVLink result.")
    ] = False,
    offload: Annotated[
        str | None,
        typer.Option("--offload", help="cpu or nvme: DeepSpeed ZeRO offload; bytes per tier, fit, traffic."),
    ] = None,
    nodes: Annotated[
        int, typer.Option("--nodes", help="Nodes the --gpus are spread over (with --offload).", min=1)
    ] = 1,
    largest_layer: Annotated[
        str | None, typer.Option("--largest-layer", help="Parameters of the largest layer (ZeRO-3 --offload).")
    ] = None,
    nvme_path: Annotated[
        Path | None, typer.Option("--nvme-path", help="Where DeepSpeed's nvme_path will point: its free space.")
    ] = None,
    ram: Annotated[
        str | None,
        typer.Option(
            "--ram",
            help="The target's RAM in GiB (with --offload cpu), or 'local' for the machine running plan; "
            "else a --from snapshot's host memory, else not known.",
        ),
    ] = None,
) -> None:
    """Predict bytes and time on the wire per GPU per step, beside compute, and say which strategy suits.

    Exit code: 0, 2 bad arguments or input, 3 internal error, 130/143 interrupted.
    """
    doc = build_comm_plan(
        params,
        gpus,
        strategy,
        dtype,
        busbw,
        source,
        link,
        model_named(gpu, former_gpu),
        tokens,
        tflops,
        explain_guide=explain_guide,
        offload=offload,
        nodes=nodes,
        largest_layer=largest_layer,
        nvme_free=_free_space(nvme_path) if nvme_path is not None else None,
        ram=ram,
    )
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(EXIT_OK)


def build_comm_plan(
    params: str,
    gpus: int,
    strategy: str,
    dtype: str | None,
    busbw: float | None,
    source: Path | Sequence[Path] | None,
    link: str | None,
    gpu: str | None,
    tokens: int | None,
    tflops: float | None,
    *,
    explain_guide: bool = False,
    offload: str | None = None,
    nodes: int = 1,
    largest_layer: str | None = None,
    nvme_free: tuple[float, str] | None = None,
    ram: str | None = None,
) -> PlanDocument:
    """The plan of the options as given: the options checked, the --from files read (readers/plan_sources.py) and
    this machine's RAM when --ram local asks for it, then the pure plan (rigcheck.plan.build)."""
    from rigcheck.plan import build
    from rigcheck.readers.plan_sources import read_bench_document, read_plan_snapshot

    paths = [source] if isinstance(source, Path) else list(source or [])
    build.check_options(strategy, dtype, busbw, len(paths), offload, nodes, largest_layer, nvme_free is not None, ram)
    sources = build.sort_sources([(str(p), read_bench_document(str(p))) for p in paths], busbw=busbw, offload=offload)
    snapshot = None
    if sources.plain is not None and sources.plain_bench is None:
        snapshot = read_plan_snapshot(sources.plain)
    given_ram = None
    if ram is not None:
        gib = build.parse_ram(ram)
        if gib is not None:
            given_ram = build.GivenRam(gib, f"the target (--ram {gib:g})")
        else:
            from rigcheck.probe.host import probe_host

            given_ram = build.GivenRam(probe_host().memory_total_gib, "the machine running plan (--ram local)")
    return build.build_comm_plan(
        params,
        gpus,
        strategy,
        dtype,
        busbw,
        sources,
        snapshot,
        link,
        gpu,
        tokens,
        tflops,
        explain_guide=explain_guide,
        offload=offload,
        nodes=nodes,
        largest_layer=largest_layer,
        nvme_free=nvme_free,
        ram=given_ram,
    )


def _free_space(path: Path) -> tuple[float, str]:
    """Bytes free under --nvme-path, for the NVMe fit; a missing or unreadable path is a one-line error."""
    import shutil

    from rigcheck.errors import UsageError

    try:
        return float(shutil.disk_usage(path).free), str(path)
    except OSError as exc:
        raise UsageError(f"--nvme-path {path}: {exc.strerror or exc}") from None


def register(app: typer.Typer) -> None:
    app.command("plan")(interruptible(plan))
