"""`rigcheck snapshot`: everything read from the machine, as replayable JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigcheck.cli.common import FromOption, GpusOption, load_snapshot, write_stdout
from rigcheck.cli.exits import EXIT_PROBLEMS
from rigcheck.cli.nogpu import absence
from rigcheck.model import snapshot_to_json


def snapshot(
    source: FromOption = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write to this file instead of stdout, whole or not at all (an old file is replaced only once the "
            "new one is complete).",
            dir_okay=False,
        ),
    ] = None,
    gpus_text: GpusOption = None,
) -> None:
    """Print the snapshot JSON (schema rigcheck.snapshot/1); replay it anywhere with --from.

    Live on a machine with no usable NVIDIA GPU it is still written, and the exit code is 1 (cli/nogpu.py).
    """
    snap = load_snapshot(source, gpus=gpus_text)
    text = snapshot_to_json(snap) + "\n"
    if output is not None and str(output) != "-":
        from rigcheck.model.files_out import write_whole

        write_whole(output, text)  # the safe writer: a full disk keeps the old snapshot whole (exit 2)
    else:
        write_stdout(text)
    if not source and absence(snap) is not None:  # load_snapshot has said why, on stderr
        raise typer.Exit(EXIT_PROBLEMS)
