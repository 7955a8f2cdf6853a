"""`rigcheck snapshot`: everything read from the machine, as replayable JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import FromOption, GpusOption, IdOption, IndentOption, json_indent, load_snapshot, write_stdout
from rigcheck.cli.exits import EXIT_PROBLEMS
from rigcheck.cli.nogpu import absence
from rigcheck.model.io import snapshot_to_dict

if TYPE_CHECKING:
    from rigcheck.model.snapshot import Snapshot


def snapshot_json(snap: Snapshot, indent: int | None) -> str:
    """The snapshot as JSON text, indented by ``indent`` or compact (None: one line, no space after a separator,
    json's C encoder, as every command's compact --json); non-ASCII characters escaped, as snapshots always were."""
    data = snapshot_to_dict(snap)
    if indent is None:
        return json.dumps(data, separators=(",", ":")) + "\n"
    return json.dumps(data, indent=indent) + "\n"


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
    gpu_ids: IdOption = None,
    indent: IndentOption = None,
) -> None:
    """Print the snapshot JSON (schema rigcheck.snapshot/1); replay it anywhere with --from.

    Live on a machine with no usable NVIDIA GPU it is still written, and the exit code is 1 (cli/nogpu.py).
    """
    snap = load_snapshot(source, gpus=gpus_text, ids=gpu_ids)
    if output is not None and str(output) != "-":
        from rigcheck.model.files_out import write_whole

        # A file is read by a program (--from) as a pipe is: compact unless --indent asks otherwise.
        write_whole(output, snapshot_json(snap, indent))  # the safe writer: a full disk keeps the old file whole
    else:
        write_stdout(snapshot_json(snap, json_indent(indent)))
    if not source and absence(snap) is not None:  # load_snapshot has said why, on stderr
        raise typer.Exit(EXIT_PROBLEMS)
