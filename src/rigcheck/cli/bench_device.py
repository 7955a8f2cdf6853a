"""`rigcheck bench matmul | membw | hostlink | p2p`: one device's compute and memory, its host link, GPU pairs.

``register(app)`` adds the four commands to the `bench` typer app. torch is imported only when a command runs
(through rigcheck.bench.device), never by `rigcheck --help`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rigcheck.cli.bench_collectives import parse_size
from rigcheck.cli.bench_common import (
    Column,
    CpuOption,
    JsonOut,
    TimeoutOption,
    emit,
    num,
    render_pair_comparison,
    size_text,
)
from rigcheck.cli.common import HtmlFileOption, interruptible, note

DtypeOption = Annotated[
    list[str] | None,
    typer.Option("--dtype", "-t", help="bf16, fp16, tf32, fp32 or all; repeat for several (default bf16)."),
]
QuickOption = Annotated[bool, typer.Option("--quick", help="A few shapes (or sizes) instead of the full sweep.")]
ShapeOption = Annotated[
    list[str] | None,
    typer.Option("--shape", help="MxNxK to measure instead of the sweep (one number: a square); repeatable."),
]
SizeListOption = Annotated[
    list[str] | None,
    typer.Option("--size", "-s", help="Buffer size: bytes, or with K, M, G (binary); repeatable."),
]
SizeOption = Annotated[str | None, typer.Option("--size", "-s", help="Bytes per copy, or with K, M, G (binary).")]
RepeatsOpt = Annotated[int | None, typer.Option("--repeats", min=1, max=10000, help="Timed repetitions.")]
WarmupOpt = Annotated[int | None, typer.Option("--warmup", min=0, max=10000, help="Untimed repetitions first.")]
DevicesOption = Annotated[
    int, typer.Option("--world-size", "-n", min=1, max=512, help="Devices measured at once, one worker each.")
]
GpuOption = Annotated[list[int] | None, typer.Option("--gpu", "-g", help="GPU index (default: every GPU); repeatable.")]
NumaOption = Annotated[bool, typer.Option("--numa/--no-numa", help="Also measure bound to the GPU's NUMA-local CPUs.")]


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _rate(value: Any) -> str:
    """A rate with enough digits whatever its size: 799.4, 2.35, 0.0123 (CPU figures are small)."""
    if not isinstance(value, float):
        return "-" if value is None else str(value)
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}" if abs(value) >= 1 else f"{value:.3f}" if abs(value) >= 0.01 else f"{value:.2g}"


def _best(value: Any) -> str:
    return "*" if value else ""


def _flag(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


MATMUL_COLUMNS = [
    Column("rank", "rank", _text),
    Column("dtype", "dtype"),
    Column("m", "m"),
    Column("n", "n"),
    Column("k", "k"),
    Column("tflops_median", "TFLOPS (median)", _rate),
    Column("tflops_min", "min", _rate),
    Column("tflops_max", "max", _rate),
    Column("peak_tflops", "peak (TFLOPS)", num(1)),
    Column("fraction_of_peak", "of peak", _pct),
    Column("correct", "correct", num(0)),
    Column("best", "best", _best),
]
MEMBW_COLUMNS = [
    Column("rank", "rank", _text),
    Column("size_bytes", "size", size_text),
    Column("time_us_median", "time (us)", num(1)),
    Column("copy_gbps", "copy (GB/s)", _rate),
    Column("read_write_gbps", "read+write (GB/s)", _rate),
    Column("peak_memory_gbps", "peak (GB/s)", num(0)),
    Column("fraction_of_peak", "r+w of peak", _pct),
    Column("correct", "correct", num(0)),
]
HOSTLINK_COLUMNS = [
    Column("gpu", "GPU"),
    Column("direction", "direction"),
    Column("memory", "memory"),
    Column("numa_bound", "NUMA-bound", _flag),
    Column("cpus", "CPUs", _text),
    Column("gbps", "GB/s (median)", _rate),
    Column("min", "min", _rate),
    Column("max", "max", _rate),
    Column("pcie_link", "PCIe link", _text),
    Column("pcie_theoretical_gbps", "PCIe theor. (GB/s)", num(1)),
    Column("fraction_of_pcie", "of PCIe", _pct),
    Column("correct", "correct", num(0)),
]
P2P_COLUMNS = [
    Column("src", "src"),
    Column("dst", "dst"),
    Column("mode", "mode"),
    Column("peer_access", "peer access", _flag),
    Column("link", "link", _text),
    Column("nvml_p2p_read", "NVML P2P read", _text),
    Column("unidirectional_gbps", "uni (GB/s)", _rate),
    Column("bidirectional_gbps", "bidi (GB/s)", _rate),
    Column("latency_us", "latency (us)", num(2)),
    Column("theoretical_gbps", "theor. (GB/s)", num(1)),
    Column("fraction_of_theoretical", "uni of theor.", _pct),
    Column("correct", "correct", num(0)),
]


def matmul(
    dtype: DtypeOption = None,
    cpu: CpuOption = False,
    quick: QuickOption = False,
    shape: ShapeOption = None,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    world_size: DevicesOption = 1,
    timeout: TimeoutOption = 1800.0,
    as_json: JsonOut = False,
    html_file: HtmlFileOption = None,
) -> None:
    """Best matmul TFLOPS over a shape sweep (L2 flushed between products), beside the card's catalogue peak."""
    from rigcheck.bench.device.matmul import parse_shape, run_matmul

    shapes = [parse_shape(s) for s in shape] if shape else None
    doc = run_matmul(
        dtypes=dtype or ["bf16"],
        cpu=cpu,
        quick=quick,
        shapes=shapes,
        warmup=warmup,
        repeats=repeats,
        world_size=world_size,
        timeout_s=timeout,
        on_progress=note,
    )
    emit(
        doc,
        MATMUL_COLUMNS,
        as_json=as_json,
        html_file=html_file,
        title="matmul: TFLOPS per shape (2·m·n·k / time), best per dtype *",
    )


def membw(
    cpu: CpuOption = False,
    size: SizeListOption = None,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    world_size: DevicesOption = 1,
    timeout: TimeoutOption = 600.0,
    as_json: JsonOut = False,
    html_file: HtmlFileOption = None,
) -> None:
    """Device-local copy bandwidth (bytes copied once, as nvbandwidth; and read+write), beside the datasheet."""
    from rigcheck.bench.device.membw import run_membw

    sizes = [parse_size(s, "--size") for s in size] if size else None
    doc = run_membw(
        cpu=cpu,
        sizes=sizes,
        warmup=warmup,
        repeats=repeats,
        world_size=world_size,
        timeout_s=timeout,
        on_progress=note,
    )
    emit(doc, MEMBW_COLUMNS, as_json=as_json, html_file=html_file, title="membw: device-local copy, dst.copy_(src)")


def hostlink(
    gpu: GpuOption = None,
    size: SizeOption = None,
    numa: NumaOption = True,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    as_json: JsonOut = False,
    html_file: HtmlFileOption = None,
) -> None:
    """Host→GPU and GPU→host copy bandwidth per GPU, pinned and pageable, NUMA-bound and not, beside PCIe."""
    from rigcheck.bench.device.hostlink import DEFAULT_SIZE, run_hostlink

    doc = run_hostlink(
        gpus=gpu,
        size_bytes=parse_size(size, "--size") if size else DEFAULT_SIZE,
        numa=numa,
        repeats=repeats if repeats is not None else 5,
        warmup=warmup if warmup is not None else 1,
        on_progress=note,
    )
    emit(
        doc,
        HOSTLINK_COLUMNS,
        as_json=as_json,
        html_file=html_file,
        title="hostlink: host<->GPU copies (GB/s, bytes copied once)",
    )


ComparePairsOption = Annotated[
    bool,
    typer.Option(
        "--compare-p2p",
        help="Also print the guide's table per pair: the peer copy (P2P=Y) against the copy staged through the host.",
    ),
]


def p2p(
    size: SizeOption = None,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    compare_p2p: ComparePairsOption = False,
    as_json: JsonOut = False,
    html_file: HtmlFileOption = None,
) -> None:
    """GPU×GPU copy bandwidth (uni- and bidirectional) and latency, peer access on and staged through the host."""
    from rigcheck.bench.device.p2p import DEFAULT_SIZE, p2p_comparison, run_p2p

    doc = run_p2p(
        size_bytes=parse_size(size, "--size") if size else DEFAULT_SIZE,
        repeats=repeats if repeats is not None else 5,
        warmup=warmup if warmup is not None else 1,
        on_progress=note,
    )
    if compare_p2p:
        doc["comparison"] = p2p_comparison(doc["results"])
        doc["warnings"] = list(doc["comparison"]["warnings"])
        if not as_json:
            render_pair_comparison(doc["comparison"])
    emit(
        doc,
        P2P_COLUMNS,
        as_json=as_json,
        html_file=html_file,
        title="p2p: GPU-to-GPU copies, per ordered pair (GB/s, bytes once)",
    )


def register(app: typer.Typer) -> None:
    """Add matmul, membw, hostlink and p2p to the `bench` app."""
    app.command()(interruptible(matmul))
    app.command()(interruptible(membw))
    app.command()(interruptible(hostlink))
    app.command()(interruptible(p2p))
