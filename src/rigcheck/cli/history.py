"""`rigcheck history add | show`: the ledger of past runs (rigcheck.ledger), and what it says over time
(rigcheck.checks.history). The ledger's path: --ledger, else RIGCHECK_LEDGER, else
$XDG_DATA_HOME/rigcheck/ledger.sqlite (~/.local/share/... without it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import LEDGER_ENV, IndentOption, JsonOption, emit, interruptible, json_indent, write_stdout
from rigcheck.cli.exits import EXIT_OK
from rigcheck.errors import UsageError

if TYPE_CHECKING:
    from rigcheck.model.history import Filters, HistoryDocument

LedgerOption = Annotated[
    Path | None,
    typer.Option(
        "--ledger",
        envvar=LEDGER_ENV,
        show_envvar=True,
        help="The ledger file (SQLite). Default $XDG_DATA_HOME/rigcheck/ledger.sqlite, else "
        "~/.local/share/rigcheck/ledger.sqlite.",
    ),
]

history_app = typer.Typer(
    name="history",
    help="Remember past runs in a ledger: `add` documents, `show` the offending nodes, GPU timelines and alerts.",
    no_args_is_help=True,
)


def ledger_path(given: Path | None) -> Path:
    from rigcheck.ledger.store import default_path

    return given if given is not None else default_path(os.environ, Path.home())


def add(
    paths: Annotated[list[Path], typer.Argument(help="rigcheck JSON documents, or folders of them (*.json).")],
    ledger: LedgerOption = None,
) -> None:
    """Add rigcheck documents (verify, doctor, snapshot, fleet, burn, bench ...) to the ledger, each once.

    Exit code: 0, 2 bad arguments, an unreadable file or a file that is not a ledger, 3 internal error, 130/143
    interrupted.
    """
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger

    path = ledger_path(ledger)
    files = document_files(paths)
    with open_ledger(path) as conn:
        added = add_files(conn, files)
    others = len(added.not_rigcheck)
    write_stdout(
        f"{path}: {added.new:,} new, {added.known:,} already known, {others:,} not rigcheck documents"
        + (f" ({added.from_mtime:,} new dated by their file's time)" if added.from_mtime else "")
        + "\n"
    )
    raise typer.Exit(EXIT_OK)


def parse_since(text: str | None) -> str | None:
    """--since as RFC 3339 UTC: a date (2025-01-31, midnight UTC) or a time with its zone."""
    if text is None:
        return None
    from datetime import datetime, timezone

    from rigcheck.ledger.ingest import RFC3339, rfc3339

    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        when = rfc3339(text)
        if when is None:
            raise UsageError(f"--since {text}: give a date (2025-01-31) or a time with its zone") from None
        return when
    return day.strftime(RFC3339)


def show(
    ledger: LedgerOption = None,
    node: Annotated[str | None, typer.Option("--node", help="Only this node (its hostname).")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Only this GPU: its UUID or board serial.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Runs from this date (2025-01-31) or time on.")] = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
) -> None:
    """Show the nodes excluded most, each failed GPU's timeline, and the alerts: reissued GPUs, repeat offenders.

    Exit code: 0, 2 bad arguments, no ledger or a file that is not one, 3 internal error, 130/143 interrupted.
    """
    from rigcheck.model.history import Filters
    from rigcheck.report.render import Format, RenderOptions

    filters = Filters(node=node, gpu=gpu, since=parse_since(since))
    doc = history_document(ledger_path(ledger), filters)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(EXIT_OK)


def history_document(path: Path, filters: Filters) -> HistoryDocument:
    """The history document of the ledger at ``path``: the ledger's rows (query.py), judged (checks/history)."""
    from rigcheck.checks.history.judge import REPEAT_WINDOW, Ledger, judge_history
    from rigcheck.ledger import query
    from rigcheck.ledger.store import open_ledger

    since, node = filters.since, filters.node
    with open_ledger(path, create=False) as conn:
        counts = query.node_counts(conn, since=since, node=node)
        runs = query.last_runs(conn, [c.node for c in counts if c.excluded], REPEAT_WINDOW, since=since)
        if filters.gpu is not None:
            uuids, serials = {filters.gpu}, {filters.gpu}
        else:
            uuids, serials = query.failed_gpus(conn, since=since)
            if node is not None:
                on_node = query.gpus_on_node(conn, node, since=since)
                uuids, serials = uuids | on_node[0], serials | on_node[1]
        sightings = query.sightings_of(conn, uuids, serials, since=since)
        window = drift_start(query.newest(conn), since)
        recent = query.sightings_with_figures(conn, since=window, node=node)
        xids = query.xid_rows(conn, since=since, node=node)
        ledger = Ledger(str(path), query.document_count(conn), counts, runs, sightings, recent, xids)
    return judge_history(ledger, filters)


def drift_start(newest: str | None, since: str | None) -> str | None:
    """The drift window's start: DRIFT_WINDOW_DAYS before the newest sighting, or --since where that is later."""
    if newest is None:
        return since
    from datetime import datetime, timedelta

    from rigcheck.checks.history.judge import DRIFT_WINDOW_DAYS
    from rigcheck.ledger.ingest import RFC3339

    start = (datetime.fromisoformat(newest) - timedelta(days=DRIFT_WINDOW_DAYS)).strftime(RFC3339)
    return max(start, since) if since is not None else start


history_app.command("add")(interruptible(add))
history_app.command("show")(interruptible(show))
