"""`rigcheck snapshot`: everything read from the machine, as replayable JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from rigcheck.cli.common import FromOption, GpusOption, load_snapshot
from rigcheck.cli.exits import EXIT_PROBLEMS
from rigcheck.cli.nogpu import absence
from rigcheck.model import snapshot_to_json


def snapshot(
    source: FromOption = None,
    output: Annotated[
        typer.FileTextWrite | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
    gpus_text: GpusOption = None,
) -> None:
    """Print the snapshot JSON (schema rigcheck.snapshot/1); replay it anywhere with --from.

    Live on a machine with no usable NVIDIA GPU it is still written, and the exit code is 1 (cli/nogpu.py).
    """
    snap = load_snapshot(source, gpus=gpus_text)
    text = snapshot_to_json(snap) + "\n"
    if output is not None:
        output.write(text)
    else:
        typer.echo(text, nl=False)
    if not source and absence(snap) is not None:  # load_snapshot has said why, on stderr
        raise typer.Exit(EXIT_PROBLEMS)
