"""`rigcheck snapshot`: everything read from the machine, as replayable JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from rigcheck.cli.common import FromOption, load_snapshot
from rigcheck.model import snapshot_to_json


def snapshot(
    source: FromOption = None,
    output: Annotated[
        typer.FileTextWrite | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the snapshot JSON (schema rigcheck.snapshot/1); replay it anywhere with --from."""
    text = snapshot_to_json(load_snapshot(source)) + "\n"
    if output is not None:
        output.write(text)
    else:
        typer.echo(text, nl=False)
