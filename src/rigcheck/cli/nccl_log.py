"""`rigcheck nccl-log FILE`: which transport NCCL used on each channel, P2P on or off, version and ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigcheck.cli.common import IndentOption, JsonOption, emit, interruptible, json_indent
from rigcheck.cli.exits import EXIT_OK, EXIT_PROBLEMS
from rigcheck.report.render import Format, RenderOptions


def nccl_log(
    file: Annotated[Path, typer.Argument(help="A log written with NCCL_DEBUG=INFO ('-' for stdin).")],
    as_json: JsonOption = False,
    indent: IndentOption = None,
) -> None:
    """Read an NCCL_DEBUG=INFO log: transports per channel, P2P disabled or not, NCCL version, ranks.

    Exit code: 0, 1 when the log shows the run failed (a communicator abort, a watchdog timeout, an NCCL error),
    2 bad usage or input (a file that is not an NCCL log), 3 internal error, 130/143 interrupted.
    """
    from rigcheck.readers.nccl_log import read_nccl_log  # the parser loads only for this command (and --compare-p2p)

    doc = read_nccl_log(str(file))
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(EXIT_PROBLEMS if doc.failures else EXIT_OK)


def register(app: typer.Typer) -> None:
    app.command("nccl-log")(interruptible(nccl_log))
