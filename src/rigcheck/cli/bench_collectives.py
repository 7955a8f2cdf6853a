"""`rigcheck bench allreduce | allgather | reducescatter | broadcast`: collective bandwidth, nccl-tests style.

``register(app)`` adds the four commands to the `bench` typer app. torch is imported only when a command
runs (through rigcheck.bench), never by `rigcheck --help`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.bench_common import (
    BenchGpusOption,
    CpuOption,
    JsonOut,
    WorldSizeOption,
    finish,
    placed_machine,
    refuse_given,
)
from rigcheck.cli.bench_nccl_tests import (
    FromOption,
    LinkOption,
    ModelOption,
    NicsOption,
    PcieOption,
    imported_document,
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
from rigcheck.cli.streams import note
from rigcheck.errors import UsageError

if TYPE_CHECKING:
    from rigcheck.model.bench import CollectiveDocument

MinBytesOption = Annotated[
    str | None,
    typer.Option(
        "--min-bytes",
        "-b",
        help="Smallest buffer: bytes, or with K, M, G (binary: 1K = 1024; default 8).",
        show_default=False,
    ),
]
MaxBytesOption = Annotated[
    str | None,
    typer.Option("--max-bytes", "-e", help="Largest buffer (default 1G on GPUs, 16M with --cpu).", show_default=False),
]
RepeatsOpt = Annotated[
    int | None,
    typer.Option("--repeats", min=1, max=10000, help="Timed repetitions per size (default 20; 10 with --cpu)."),
]

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_MULTIPLIER = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, option: str = "size") -> int:
    """ "8" -> 8, "1K" -> 1024, "16M", "1G", "4KiB" (binary multiples, as nccl-tests' -b/-e)."""
    match = _SIZE.match(text)
    if match is None:
        raise UsageError(f"{option}: cannot read {text!r} as a size (examples: 8, 1K, 16M, 1G)")
    size = int(match.group(1)) * _MULTIPLIER[match.group(2).lower()]
    if size < 1:
        raise UsageError(f"{option}: a size must be at least 1 byte")
    return size


CompareP2POption = Annotated[
    bool,
    typer.Option(
        "--compare-p2p",
        help="Run twice, with and without NCCL_P2P_DISABLE=1, each labelled with the transport NCCL used.",
    ),
]


def _run(
    op: str,
    *,
    cpu: bool,
    world_size: int | None,
    min_bytes: str,
    max_bytes: str | None,
    repeats: int | None,
    warmup: int,
    timeout: float,
    as_json: bool,
    indent: int | None = None,
    html_file: Path | None = None,
    markdown_file: Path | None = None,
    compare_p2p: bool = False,
    gpus: str | None = None,
    ids: str | None = None,
) -> None:
    from rigcheck.bench.collectives import CPU_MAX_BYTES, GPU_MAX_BYTES, resolve_world_size, run_collective, sweep

    low = parse_size(min_bytes, "--min-bytes")
    high = parse_size(max_bytes, "--max-bytes") if max_bytes is not None else (CPU_MAX_BYTES if cpu else GPU_MAX_BYTES)
    if low > high:
        raise UsageError(f"--min-bytes ({low}) is larger than --max-bytes ({high})")
    snapshot, placement = placed_machine(cpu=cpu, gpus=gpus, world_size=world_size, ids=ids)
    ranks = resolve_world_size(cpu, placement.world_size(world_size) if placement is not None else world_size)

    def one_run(env: dict[str, str] | None = None, nccl_debug: bool = False) -> tuple[CollectiveDocument, str]:
        if compare_p2p:
            note(f"{op}: run with {'NCCL_P2P_DISABLE=1' if env else 'P2P allowed'}")
        with progress_line() as progress:
            return run_collective(
                op,
                cpu=cpu,
                world_size=ranks,
                sizes=sweep(low, high),
                warmup=warmup,
                repeats=repeats if repeats is not None else (10 if cpu else 20),
                timeout_s=timeout,
                snapshot=snapshot,
                env=env,
                nccl_debug=nccl_debug,
                on_progress=progress,
                placement=placement,
            )

    if compare_p2p:
        from rigcheck.bench.compare import compare_p2p as compare

        finish(
            compare(one_run, label=op), as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file
        )
    finish(one_run()[0], as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


# What each command's help says about its busbw factor (nccl-tests' PERFORMANCE.md).
DOCS = {
    "allreduce": "All-reduce bandwidth over a size sweep: algbw, busbw = algbw × 2(n−1)/n, and a data check per size.",
    "allgather": "All-gather bandwidth over a size sweep: algbw, busbw = algbw × (n−1)/n, and a data check per size.",
    "reducescatter": (
        "Reduce-scatter bandwidth over a size sweep: algbw, busbw = algbw × (n−1)/n, and a data check per size."
    ),
    "broadcast": "Broadcast bandwidth from rank 0 over a size sweep: algbw = busbw, and a data check per size.",
}


WarmupOpt = Annotated[
    int | None, typer.Option("--warmup", min=0, max=10000, help="Untimed repetitions first (default 5).")
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option("--timeout", min=1.0, help="Give up after this many seconds (default 300); partial results are kept."),
]


def _live_options_given(**options: object) -> list[str]:
    """The live-run options given (not None, not False), by their command-line names."""
    return [name for name, value in options.items() if value not in (None, False)]


def _command(op: str) -> Callable[..., None]:
    """The typer command for one collective: the same options for all four, only the op differs."""

    def command(
        *,
        cpu: CpuOption = False,
        world_size: WorldSizeOption = None,
        gpus: BenchGpusOption = None,
        ids: IdOption = None,
        min_bytes: MinBytesOption = None,
        max_bytes: MaxBytesOption = None,
        repeats: RepeatsOpt = None,
        warmup: WarmupOpt = None,
        timeout: TimeoutOpt = None,
        compare_p2p: CompareP2POption = False,
        from_files: FromOption = None,
        link: LinkOption = None,
        pcie: PcieOption = None,
        model: ModelOption = None,
        former_gpu: ModelAliasOption = None,
        nics: NicsOption = None,
        as_json: JsonOut = False,
        indent: IndentOption = None,
        html_file: HtmlFileOption = None,
        markdown_file: MarkdownFileOption = None,
    ) -> None:
        gpu = model_named(model, former_gpu)
        if from_files:
            refuse_given(
                _live_options_given(
                    **{"--cpu": cpu, "--world-size": world_size, "--gpus": gpus, "-i/--id": ids},
                    **{"--min-bytes": min_bytes, "--max-bytes": max_bytes},
                    **{"--repeats": repeats, "--warmup": warmup, "--timeout": timeout, "--compare-p2p": compare_p2p},
                )
            )
            doc = imported_document(op, from_files, link=link, pcie=pcie, gpu=gpu, nics=nics)
            finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)
        if link is not None or pcie is not None or gpu is not None or nics is not None:
            raise UsageError(
                "--link, --pcie, --model and --nics describe the machine of an nccl-tests output: "
                "they go with --from FILE"
            )
        _run(
            op,
            cpu=cpu,
            world_size=world_size,
            min_bytes=min_bytes if min_bytes is not None else "8",
            max_bytes=max_bytes,
            repeats=repeats,
            warmup=warmup if warmup is not None else 5,
            timeout=timeout if timeout is not None else 300.0,
            as_json=as_json,
            indent=indent,
            html_file=html_file,
            markdown_file=markdown_file,
            compare_p2p=compare_p2p,
            gpus=gpus,
            ids=ids,
        )

    command.__name__ = op
    command.__doc__ = DOCS[op] + " With --from FILE: read nccl-tests' output of it instead (nothing run)."
    return command


COMMANDS = {op: _command(op) for op in DOCS}


def register(app: typer.Typer) -> None:
    """Add the four collective commands to ``app`` (the `rigcheck bench` group), each Ctrl-C safe."""
    for name, command in COMMANDS.items():
        app.command(name)(interruptible(command))
