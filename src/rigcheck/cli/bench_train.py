"""`rigcheck bench train`: the guide's gpt2 DDP benchmark, and with --compare-p2p the guide's NVLink table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rigcheck.cli.bench_common import (
    Column,
    CpuOption,
    JsonOut,
    TimeoutOption,
    WorldSizeOption,
    emit,
    emit_comparison,
    num,
)
from rigcheck.cli.common import HtmlFileOption, interruptible, note
from rigcheck.errors import RigcheckError

GIB = 2**30

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


def _gib(value: Any) -> str:
    return "-" if not isinstance(value, int) else f"{value / GIB:.2f}"


COLUMNS = [
    Column("train_runtime_s", "runtime (s)", num(2)),
    Column("samples_per_s", "samples/s", num(1)),
    Column("tokens_per_s", "tokens/s", num(0)),
    Column("step_time_median_ms", "step median (ms)", num(1)),
    Column("step_time_p10_ms", "p10 (ms)", num(1)),
    Column("step_time_p90_ms", "p90 (ms)", num(1)),
    Column("peak_memory_bytes", "peak mem (GiB)", _gib),
    Column("loss_final", "final loss", num(3)),
]


def _title(doc: dict[str, Any]) -> str:
    if not doc["results"]:
        return f"train: DDP on {doc['world_size']} × {doc['backend']}: no result"
    r = doc["results"][0]
    model = r.get("model", "gpt2")
    return (
        f"train: {model}, DDP on {doc['world_size']} × {doc['backend']}, {r.get('dtype', '')}, "
        f"batch {r.get('batch_size', '?')} × {r.get('seq_len', '?')} per rank, {r.get('steps', '?')} steps"
    )


def train(
    *,
    cpu: CpuOption = False,
    world_size: WorldSizeOption = None,
    steps: StepsOption = None,
    batch_size: BatchOption = None,
    seq_len: SeqOption = None,
    bf16: Bf16Option = False,
    tiny: TinyOption = False,
    text: TextOption = None,
    timeout: TimeoutOption = 1800.0,
    compare_p2p: CompareOption = False,
    as_json: JsonOut = False,
    html_file: HtmlFileOption = None,
) -> None:
    """gpt2 (124M, random weights) trained with DDP: runtime, samples/s, tokens/s, step times, peak memory.

    The guide's benchmark: batch 4 per GPU × 1024 tokens, 200 steps, fp32. Nothing is downloaded.
    """
    from rigcheck.bench.train import read_text_tokens, run_train

    try:
        if text is not None:
            read_text_tokens(text, 2)  # a bad path is one line and exit 2, before anything starts

        def one_run(env: dict[str, str] | None = None, nccl_debug: bool = False) -> dict[str, Any]:
            if compare_p2p:
                note(f"train: run with {'NCCL_P2P_DISABLE=1' if env else 'P2P allowed'}")
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
                env=env,
                nccl_debug=nccl_debug,
                on_progress=note,
            )

        if compare_p2p:
            from rigcheck.bench.compare import compare_p2p as compare

            doc = compare(one_run, label="train")
        else:
            doc = one_run()
    except RigcheckError as exc:
        note(f"error: {exc}")
        raise typer.Exit(exc.exit_code) from None

    if not compare_p2p:
        emit(doc, COLUMNS, as_json=as_json, html_file=html_file, title=_title(doc))
        return
    emit_comparison(doc, as_json=as_json, html_file=html_file)


def register(app: typer.Typer) -> None:
    """Add `train` to a typer app (cli/app.py mounts it under `rigcheck bench`)."""
    app.command("train")(interruptible(train))
