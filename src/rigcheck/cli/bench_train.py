"""`rigcheck bench train`: the guide's gpt2 DDP benchmark, and with --compare-p2p the guide's NVLink table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.bench_common import (
    BenchGpusOption,
    CpuOption,
    JsonOut,
    TimeoutOption,
    WorldSizeOption,
    finish,
    placed_machine,
)
from rigcheck.cli.common import HtmlFileOption, IdOption, IndentOption, MarkdownFileOption, interruptible
from rigcheck.cli.exits import exit_code_for_error
from rigcheck.cli.progress import progress_line
from rigcheck.cli.streams import note
from rigcheck.errors import RigcheckError

if TYPE_CHECKING:
    from rigcheck.model.bench import TrainDocument
    from rigcheck.report.bench.render import BenchDoc

StepsOption = Annotated[
    int | None, typer.Option("--steps", min=1, max=1_000_000, help="Training steps (default 200; --tiny: 10).")
]
BatchOption = Annotated[
    int | None, typer.Option("--batch-size", min=1, max=4096, help="Sequences per GPU per step (default 4; --tiny: 2).")
]
SeqOption = Annotated[
    int | None, typer.Option("--seq-len", min=2, max=1024, help="Tokens per sequence (default 1024; --tiny: 64).")
]
Bf16Option = Annotated[bool, typer.Option("--bf16", help="bf16 autocast (default fp32, as in the guide).")]
TinyOption = Annotated[bool, typer.Option("--tiny", help="A 2-layer, 64-wide gpt2 on 2 × 64 tokens, 10 steps (CI).")]
TextOption = Annotated[
    Path | None,
    typer.Option(
        "--text",
        help="Train on this text file (its UTF-8 bytes, one token per byte) instead of generated tokens.",
        show_default=False,
    ),
]
CompareOption = Annotated[
    bool,
    typer.Option(
        "--compare-p2p", help="Run twice, with and without NCCL_P2P_DISABLE=1, and print the guide's NVLink table."
    ),
]


def train(
    *,
    cpu: CpuOption = False,
    world_size: WorldSizeOption = None,
    gpus: BenchGpusOption = None,
    ids: IdOption = None,
    steps: StepsOption = None,
    batch_size: BatchOption = None,
    seq_len: SeqOption = None,
    bf16: Bf16Option = False,
    tiny: TinyOption = False,
    text: TextOption = None,
    timeout: TimeoutOption = 1800.0,
    compare_p2p: CompareOption = False,
    as_json: JsonOut = False,
    indent: IndentOption = None,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """gpt2 (124M, random weights) trained with DDP: runtime, samples/s, tokens/s, step times, peak memory.

    The guide's benchmark: batch 4 per GPU × 1024 tokens, 200 steps, fp32. Nothing is downloaded.
    """
    from rigcheck.bench.train import read_text_tokens, run_train

    try:
        if text is not None:
            read_text_tokens(text, 2)  # a bad path is one line and exit 2, before anything starts

        snapshot, placement = placed_machine(cpu=cpu, gpus=gpus, world_size=world_size, ids=ids)

        def one_run(env: dict[str, str] | None = None, nccl_debug: bool = False) -> tuple[TrainDocument, str]:
            if compare_p2p:
                note(f"train: run with {'NCCL_P2P_DISABLE=1' if env else 'P2P allowed'}")
            with progress_line() as progress:
                return run_train(
                    cpu=cpu,
                    world_size=world_size,
                    steps=steps,
                    batch_size=batch_size,
                    seq_len=seq_len,
                    bf16=bf16,
                    tiny=tiny,
                    text_path=text,
                    timeout_s=timeout,
                    snapshot=snapshot,
                    env=env,
                    nccl_debug=nccl_debug,
                    on_progress=progress,
                    placement=placement,
                )

        doc: BenchDoc
        if compare_p2p:
            from rigcheck.bench.compare import compare_p2p as compare

            doc = compare(one_run, label="train")
        else:
            doc = one_run()[0]
    except RigcheckError as exc:
        note(f"error: {exc}")
        raise typer.Exit(exit_code_for_error(exc)) from None
    finish(doc, as_json=as_json, indent=indent, html_file=html_file, markdown_file=markdown_file)


def register(app: typer.Typer) -> None:
    """Add `train` to a typer app (cli/app.py mounts it under `rigcheck bench`)."""
    app.command("train")(interruptible(train))
