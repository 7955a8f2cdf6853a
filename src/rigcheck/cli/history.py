"""`rigcheck history add | show`: the ledger of past runs (rigcheck.ledger), and what it says over time
(rigcheck.checks.history). The ledger's path: --ledger, else RIGCHECK_LEDGER, else
$XDG_DATA_HOME/rigcheck/ledger.sqlite (~/.local/share/... without it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import (
    LEDGER_ENV,
    HtmlFileOption,
    IndentOption,
    JsonOption,
    MarkdownFileOption,
    emit,
    interruptible,
    json_indent,
    write_pages,
    write_stdout,
)
from rigcheck.cli.exits import EXIT_OK
from rigcheck.errors import UsageError

if TYPE_CHECKING:
    import sqlite3

    from rigcheck.model.history import Filters, HistoryDocument, TrendRow

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
    from rigcheck.cli.progress import progress_line
    from rigcheck.ledger import trends
    from rigcheck.ledger.ingest import add_files, document_files
    from rigcheck.ledger.store import open_ledger

    path = ledger_path(ledger)
    files = document_files(paths)
    with open_ledger(path) as conn, progress_line() as progress:
        added = add_files(conn, files, progress=lambda done, total: progress(f"read {done:,} of {total:,} files"))
        if stale := len(trends.stale(conn)):  # the new documents' GPUs, and any a migration left to fit
            progress(f"fitting the drift trends of {stale:,} GPUs")
            refresh_trends(conn)
    others = len(added.not_rigcheck)
    write_stdout(
        f"{path}: {added.new:,} new, {added.known:,} already known, {others:,} not rigcheck documents"
        + _dated(added.from_name, added.from_mtime)
        + "\n"
    )
    raise typer.Exit(EXIT_OK)


def _dated(by_name: int, by_mtime: int) -> str:
    """How many new documents without a date of their own were dated by their file's name, and by its time."""
    said = []
    if by_name:
        said.append(f"{by_name:,} new dated by a date in their file's name")
    if by_mtime:
        said.append(f"{by_mtime:,} new dated by their file's time")
    return f" ({', '.join(said)})" if said else ""


def parse_since(text: str | None) -> str | None:
    """--since as RFC 3339 UTC: a date (2025-01-31, midnight UTC) or a time with its zone."""
    if text is None:
        return None
    from datetime import datetime, timezone

    from rigcheck.ledger.ingest import rfc3339
    from rigcheck.model.document import RFC3339

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
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Show the nodes excluded most, the timelines of the GPUs that failed or drift (charted in --html), and the
    alerts: reissued GPUs, repeat offenders, drift, escalation.

    Exit code: 0, 2 bad arguments, no ledger or a file that is not one, 3 internal error, 130/143 interrupted.
    """
    from rigcheck.model.history import Filters
    from rigcheck.report.render import Format, RenderOptions

    filters = Filters(node=node, gpu=gpu, since=parse_since(since))
    doc = history_document(ledger_path(ledger), filters)
    write_pages(doc, html_file, markdown_file)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(EXIT_OK)


def history_document(path: Path, filters: Filters) -> HistoryDocument:
    """The history document of the ledger at ``path``: the ledger's rows (query.py), judged (checks/history)."""
    from rigcheck.checks.history.drift import drifting as drifts
    from rigcheck.checks.history.judge import REPEAT_WINDOW, Ledger, judge_history
    from rigcheck.ledger import query
    from rigcheck.ledger.store import open_ledger

    since, node = filters.since, filters.node
    with open_ledger(path, create=False) as conn:
        counts = query.node_counts(conn, since=since, node=node)
        runs = query.last_runs(conn, [c.node for c in counts if c.excluded], REPEAT_WINDOW, since=since)
        trends = _trends(conn, filters)
        if filters.gpu is not None:
            uuids, serials = {filters.gpu}, {filters.gpu}
        else:
            uuids, serials = query.failed_gpus(conn, since=since)
            if node is not None:
                on_node = query.gpus_on_node(conn, node, since=since)
                uuids, serials = uuids | on_node[0], serials | on_node[1]
            drifting = {t.gpu for t in trends if drifts(t)}  # a key is a UUID or a serial: asked as both
            uuids, serials = uuids | drifting, serials | drifting
        sightings = query.sightings_of(conn, uuids, serials, since=since)
        remaps = query.remap_sightings(conn, since=since, node=node)
        xids = query.xid_rows(conn, since=since, node=node)
        ledger = Ledger(str(path), query.document_count(conn), counts, runs, sightings, trends, remaps, xids)
    return judge_history(ledger, filters)


def _trends(conn: sqlite3.Connection, filters: Filters) -> list[TrendRow]:
    """The GPUs' trends over their drift windows: the ledger's cached ones where they hold for the filters, the
    others fitted here (the GPUs still stale, the windows --since cuts, and every GPU of --node: a node's view
    fits its own runs only)."""
    from rigcheck.checks.history.drift import DRIFT_WINDOW_DAYS, fit_trends, still_valid
    from rigcheck.ledger import query, trends

    if filters.node is not None:
        return fit_trends(query.sightings_with_figures(conn, since=filters.since, node=filters.node))
    stale = trends.stale(conn)
    kept, redo = still_valid(trends.cached(conn, gpu=filters.gpu), filters.since)
    redo |= stale if filters.gpu is None else stale & {filters.gpu}
    kept = [t for t in kept if t.gpu not in redo]
    return kept + fit_trends(query.window_sightings(conn, redo, DRIFT_WINDOW_DAYS, since=filters.since))


def refresh_trends(conn: sqlite3.Connection) -> int:
    """Fit the trends of the GPUs the documents just added made stale, and keep them (ledger/trends.py)."""
    from rigcheck.checks.history.drift import DRIFT_WINDOW_DAYS, fit_trends
    from rigcheck.ledger import trends

    return trends.refresh(conn, fit_trends, DRIFT_WINDOW_DAYS)


history_app.command("add")(interruptible(add))
history_app.command("show")(interruptible(show))
