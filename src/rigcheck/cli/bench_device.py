"""`rigcheck bench matmul | membw | hostlink | p2p | nvme`: one device's compute and memory, its host link, GPU
pairs, and the storage an offload streams through.

``register(app)`` adds the five commands to the `bench` typer app. torch is imported only when a command runs
(through rigcheck.bench.device), never by `rigcheck --help`; `nvme` never imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigcheck.cli.bench_collectives import parse_size
from rigcheck.cli.bench_common import (
    BenchGpusOption,
    CpuOption,
    JsonOut,
    TimeoutOption,
    finish,
    placed_machine,
)
from rigcheck.cli.bench_mamf import MamfFromOption, mamf_document
from rigcheck.cli.bench_reference import (
    FromOption,
    GpuModelOption,
    given_options,
    imported_document,
    refuse_live_options,
)
from rigcheck.cli.common import (
    HtmlFileOption,
    IdOption,
    IndentOption,
    MarkdownFileOption,
    ModelAliasOption,
    interruptible,
    model_named,
)
from rigcheck.cli.progress import progress_line
from rigcheck.errors import UsageError

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
GpuOption = Annotated[
    list[str] | None,
    typer.Option(
        "--gpu",
        "-g",
        help="CUDA device index (default: every GPU; -i and --gpus name GPUs as nvidia-smi does); repeatable.",
    ),
]
HostlinkGpusOption = Annotated[
    str | None,
    typer.Option(
        "--gpus",
        help="Only these GPUs, by nvidia-smi index (e.g. 0,2), one after another; rows use that index.",
        show_default=False,
    ),
]
P2PGpusOption = Annotated[
    str | None,
    typer.Option(
        "--gpus",
        help="Only these GPUs (at least two), by nvidia-smi index (e.g. 0,2), in this order; rows use that index "
        "and matrix_gpus lists them.",
        show_default=False,
    ),
]
NumaOption = Annotated[bool, typer.Option("--numa/--no-numa", help="Also measure bound to the GPU's NUMA-local CPUs.")]
MODEL_WITHOUT_FROM = "--model names the GPU model of a --from file; a run measures this machine's GPUs"


def matmul(
    ctx: typer.Context,
    dtype: DtypeOption = None,
    cpu: CpuOption = False,
    quick: QuickOption = False,
    shape: ShapeOption = None,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    world_size: DevicesOption = 1,
    gpus: BenchGpusOption = None,
    ids: IdOption = None,
    timeout: TimeoutOption = 1800.0,
    from_files: MamfFromOption = None,
    gpu_model: GpuModelOption = None,
    former_gpu: ModelAliasOption = None,
    as_json: JsonOut = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Best matmul TFLOPS over a shape sweep (L2 flushed between products), beside the card's catalogue peak;
    --from reads a mamf-finder output instead and judges its best figure against verify's band."""
    gpu_model = model_named(gpu_model, former_gpu)
    if from_files:
        refuse_live_options(
            ctx, "dtype", "cpu", "quick", "shape", "repeats", "warmup", "world_size", "gpus", "ids", "timeout"
        )
        doc = mamf_document(from_files, gpu=gpu_model)
        finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)
    if gpu_model is not None:
        raise UsageError(MODEL_WITHOUT_FROM)
    from rigcheck.bench.device.matmul import parse_shape, run_matmul

    shapes = [parse_shape(s) for s in shape] if shape else None
    snapshot, placement = placed_machine(cpu=cpu, gpus=gpus, world_size=_world_size_given(ctx, world_size), ids=ids)
    with progress_line() as progress:
        doc = run_matmul(
            dtypes=dtype or ["bf16"],
            cpu=cpu,
            quick=quick,
            shapes=shapes,
            warmup=warmup,
            repeats=repeats,
            world_size=placement.world_size(None) if placement is not None else world_size,
            timeout_s=timeout,
            snapshot=snapshot,
            on_progress=progress,
            placement=placement,
        )
    finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


def membw(
    ctx: typer.Context,
    cpu: CpuOption = False,
    size: SizeListOption = None,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    world_size: DevicesOption = 1,
    gpus: BenchGpusOption = None,
    ids: IdOption = None,
    timeout: TimeoutOption = 600.0,
    from_files: FromOption = None,
    gpu_model: GpuModelOption = None,
    former_gpu: ModelAliasOption = None,
    as_json: JsonOut = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Device-local copy bandwidth (bytes copied once, as nvbandwidth; and read+write), beside the datasheet;
    --from reads nvbandwidth's device_local_copy instead."""
    gpu_model = model_named(gpu_model, former_gpu)
    if from_files:
        refuse_live_options(ctx, "cpu", "size", "repeats", "warmup", "world_size", "gpus", "ids", "timeout")
        doc = imported_document("membw", from_files, gpu=gpu_model)
        finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)
    if gpu_model is not None:
        raise UsageError(MODEL_WITHOUT_FROM)
    from rigcheck.bench.device.membw import run_membw

    sizes = [parse_size(s, "--size") for s in size] if size else None
    snapshot, placement = placed_machine(cpu=cpu, gpus=gpus, world_size=_world_size_given(ctx, world_size), ids=ids)
    with progress_line() as progress:
        doc = run_membw(
            cpu=cpu,
            sizes=sizes,
            warmup=warmup,
            repeats=repeats,
            world_size=placement.world_size(None) if placement is not None else world_size,
            timeout_s=timeout,
            snapshot=snapshot,
            on_progress=progress,
            placement=placement,
        )
    finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


def hostlink(
    ctx: typer.Context,
    gpu: GpuOption = None,
    gpus: HostlinkGpusOption = None,
    ids: IdOption = None,
    size: SizeOption = None,
    numa: NumaOption = True,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    from_files: FromOption = None,
    gpu_model: GpuModelOption = None,
    as_json: JsonOut = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Host→GPU and GPU→host copy bandwidth per GPU, pinned and pageable, NUMA-bound and not, beside PCIe;
    --from reads nvbandwidth's host copies instead."""
    if from_files:
        refuse_live_options(ctx, "gpus", "ids", "size", "numa", "repeats", "warmup")
        if gpu is not None and (len(gpu) > 1 or gpu[0].isdigit()):
            raise UsageError(
                "--gpu with --from is the former name of --model: one GPU model (a catalog name such as "
                "'H100 SXM5'), not an index"
            )
        doc = imported_document("hostlink", from_files, gpu=model_named(gpu_model, gpu[0] if gpu else None))
        finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)
    if gpu_model is not None:
        raise UsageError(MODEL_WITHOUT_FROM)
    from rigcheck.bench.device.hostlink import DEFAULT_SIZE, run_hostlink

    if gpu is not None and (gpus is not None or ids is not None):
        given = "--gpus" if gpus is not None else "-i/--id"
        raise UsageError(f"--gpu (a CUDA index) and {given} (nvidia-smi's ids) both pick GPUs: give one")
    indices = _indices(gpu)
    snapshot, placement = placed_machine(cpu=False, gpus=gpus, spawns=False, ids=ids)
    with progress_line() as progress:
        doc = run_hostlink(
            gpus=indices,
            size_bytes=parse_size(size, "--size") if size else DEFAULT_SIZE,
            numa=numa,
            repeats=repeats if repeats is not None else 5,
            warmup=warmup if warmup is not None else 1,
            snapshot=snapshot,
            on_progress=progress,
            placement=placement,
        )
    finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


ComparePairsOption = Annotated[
    bool,
    typer.Option(
        "--compare-p2p",
        help="Also print the guide's table per pair: the peer copy (P2P=Y) against the copy staged through the host.",
    ),
]


def p2p(
    ctx: typer.Context,
    gpus: P2PGpusOption = None,
    ids: IdOption = None,
    size: SizeOption = None,
    repeats: RepeatsOpt = None,
    warmup: WarmupOpt = None,
    compare_p2p: ComparePairsOption = False,
    from_files: FromOption = None,
    gpu_model: GpuModelOption = None,
    former_gpu: ModelAliasOption = None,
    as_json: JsonOut = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """GPU×GPU copy bandwidth (uni- and bidirectional) and latency, peer access on and staged through the host;
    --from reads nvbandwidth's device_to_device testcases or p2pBandwidthLatencyTest instead."""
    gpu_model = model_named(gpu_model, former_gpu)
    if from_files:
        refuse_live_options(ctx, "gpus", "ids", "size", "repeats", "warmup", "compare_p2p")
        doc = imported_document("p2p", from_files, gpu=gpu_model)
        finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)
    if gpu_model is not None:
        raise UsageError(MODEL_WITHOUT_FROM)
    from rigcheck.bench.device.p2p import DEFAULT_SIZE, require_pair, run_p2p
    from rigcheck.cli.common import one_selection, parse_gpus

    one_selection(gpus, ids)
    chosen = parse_gpus(gpus)
    if chosen is not None:
        require_pair(chosen)  # one GPU is refused before the machine is probed
    snapshot, placement = placed_machine(cpu=False, gpus=gpus, spawns=False, ids=ids)
    if placement is not None and len(placement.indices) < 2:  # -i: known once its ids are resolved
        raise UsageError(f"-i {ids}: bench p2p needs at least two GPUs (a GPU-to-GPU copy needs a pair)")
    with progress_line() as progress:
        doc = run_p2p(
            size_bytes=parse_size(size, "--size") if size else DEFAULT_SIZE,
            repeats=repeats if repeats is not None else 5,
            warmup=warmup if warmup is not None else 1,
            compare=compare_p2p,
            snapshot=snapshot,
            on_progress=progress,
            placement=placement,
        )
    finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


PathOption = Annotated[
    Path,
    typer.Option("--path", "-p", help="Directory to measure: a file of --size is written there, then removed."),
]
QueueDepthOption = Annotated[
    int, typer.Option("--queue-depth", "-q", min=1, max=256, help="Direct requests in flight (one thread each).")
]
BlockSizeOption = Annotated[
    list[str] | None,
    typer.Option("--block-size", help="Direct request size (a multiple of 4K; default 128K, 1M, 4M); repeatable."),
]


NvmeSizeOption = Annotated[
    str | None, typer.Option("--size", "-s", help="The file written and read: bytes, or K, M, G (default 4G).")
]


def nvme(
    path: PathOption = Path("."),
    size: NvmeSizeOption = None,
    block_size: BlockSizeOption = None,
    queue_depth: QueueDepthOption = 4,
    repeats: RepeatsOpt = None,
    as_json: JsonOut = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Sequential write and read of the filesystem under --path (default 4G): direct I/O over a block-size
    sweep, and buffered; the drive and its PCIe link named. For ZeRO-Infinity's NVMe offload."""
    import os

    from rigcheck.bench.nvme import DEFAULT_BLOCK_SIZES, DEFAULT_REPEATS, DEFAULT_SIZE, check_directory, run_nvme
    from rigcheck.probe.storage_path import storage_of

    size_bytes = parse_size(size, "--size") if size else DEFAULT_SIZE
    check_directory(path, size_bytes)  # refused in one line before anything is probed or written
    with progress_line() as progress:
        doc = run_nvme(
            path,
            storage=storage_of(path, st_dev=os.stat(path).st_dev),
            size_bytes=size_bytes,
            block_sizes=[parse_size(b, "--block-size") for b in block_size] if block_size else DEFAULT_BLOCK_SIZES,
            queue_depth=queue_depth,
            repeats=repeats if repeats is not None else DEFAULT_REPEATS,
            on_progress=progress,
        )
    finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


def _world_size_given(ctx: typer.Context, world_size: int) -> int | None:
    """-n as given on the command line, None when left at its default (--gpus then sets the world size)."""
    return world_size if given_options(ctx, "world_size") else None


def _indices(gpus: list[str] | None) -> list[int] | None:
    """--gpu of a run: CUDA device indices (a GPU model goes with --from, as --model)."""
    if gpus is None:
        return None
    try:
        return [int(g) for g in gpus]
    except ValueError:
        raise UsageError(
            f"--gpu takes CUDA device indices on a run (a model goes with --from, as --model), not {gpus!r}"
        ) from None


def register(app: typer.Typer) -> None:
    """Add matmul, membw, hostlink, p2p and nvme to the `bench` app."""
    app.command()(interruptible(matmul))
    app.command()(interruptible(membw))
    app.command()(interruptible(hostlink))
    app.command()(interruptible(p2p))
    app.command()(interruptible(nvme))
