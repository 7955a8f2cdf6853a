"""`rigcheck nccl-log FILE`: which transport NCCL used on each channel, P2P on or off, version and ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.cli.common import JsonOption, interruptible, out_console, print_json
from rigcheck.nccllog import nccl_log_to_dict, parse_nccl_log
from rigcheck.probe.from_file import read_text

# Pair connections listed in the terminal before "... and N more".
MAX_PAIRS_SHOWN = 16


def _p2p_text(doc: dict[str, Any]) -> Text:
    value = doc["p2p_disabled"]
    if value is None:
        return Text(f"P2P disabled: unknown ({doc['p2p_evidence']})", style="yellow")
    return Text(f"P2P disabled: {'yes' if value else 'no'} ({doc['p2p_evidence']})")


def render(doc: dict[str, Any]) -> RenderableType:
    version = doc["nccl_version"] or "not printed"
    cuda = f" (CUDA {doc['cuda']})" if doc["cuda"] else ""
    ranks = doc["nranks"] if doc["nranks"] is not None else "not printed"
    parts: list[RenderableType] = [
        Text(f"rigcheck nccl-log: {doc['path'] or '-'}", style="bold"),
        Text(f"NCCL {version}{cuda}; ranks: {ranks}; hosts: {len(doc['hosts']) or 'not printed'}"),
        Text(f"Transport: {doc['description']}", style="bold"),
        _p2p_text(doc),
    ]
    if doc["transport_channel_lines"]:
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("transport")
        table.add_column("channel lines", justify="right")
        for transport, count in doc["transport_channel_lines"].items():
            table.add_row(transport, str(count))
        parts.append(table)
        pairs = list(doc["channel_connections"].items())
        parts.append(Text(f"Connections: {doc['peer_connections']} (rank[device or bus id] -> rank[...])"))
        for key, by_transport in pairs[:MAX_PAIRS_SHOWN]:
            used = "; ".join(f"{t} ch {','.join(ch)}" for t, ch in by_transport.items())
            parts.append(Text(f"  {key}: {used}"))
        if len(pairs) > MAX_PAIRS_SHOWN:
            parts.append(Text(f"  ... and {len(pairs) - MAX_PAIRS_SHOWN} more (--json lists them all)", style="dim"))
    else:
        parts.append(Text("No channel connection lines in the log.", style="dim"))
    return Group(*parts)


def nccl_log(
    file: Annotated[Path, typer.Argument(help="A log written with NCCL_DEBUG=INFO ('-' for stdin).")],
    as_json: JsonOption = False,
) -> None:
    """Read an NCCL_DEBUG=INFO log: transports per channel, P2P disabled or not, NCCL version, ranks.

    Exit code: 0, or 2 when the file is not an NCCL log.
    """
    path = str(file)
    doc = nccl_log_to_dict(parse_nccl_log(read_text(path, "an NCCL_DEBUG=INFO log"), path))
    if as_json:
        print_json(doc)
    else:
        out_console().print(render(doc))
    raise typer.Exit(0)


def register(app: typer.Typer) -> None:
    app.command("nccl-log")(interruptible(nccl_log))
