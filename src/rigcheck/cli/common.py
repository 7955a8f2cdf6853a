"""What every command shares: consoles, the snapshot source (live or --from), JSON output."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from rigcheck.model import Snapshot
from rigcheck.report.json_report import dumps

FromOption = Annotated[
    Path | None,
    typer.Option(
        "--from",
        help="Read a saved output instead of this machine: nvidia-smi -q / -q -x / table / topo -m / "
        "nvlink -s, or a rigcheck snapshot JSON ('-' for stdin).",
        show_default=False,
        dir_okay=True,
        exists=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of the report.")]


def out_console() -> Console:
    """Data and reports go to stdout; rich handles NO_COLOR, FORCE_COLOR and pipes."""
    return Console(highlight=False, soft_wrap=False)


def err_console() -> Console:
    return Console(stderr=True, highlight=False)


def note(message: str) -> None:
    """A human message on stderr (never mixed into JSON on stdout)."""
    err_console().print(f"rigcheck: {message}", markup=False)


def load_snapshot(source: Path | None) -> Snapshot:
    """The snapshot to work on: the file given with --from, else this machine probed live."""
    if source is not None:
        from rigcheck.probe.from_file import load_file

        return load_file(str(source))
    from rigcheck.probe.live import probe_machine

    snap = probe_machine()
    if not snap.gpus and snap.gpu_absent_reason:
        note(f"no NVIDIA GPU visible ({snap.gpu_absent_reason}); showing what can be checked without one.")
    return snap


def print_json(data: Any) -> None:
    sys.stdout.write(dumps(data))
    sys.stdout.flush()
