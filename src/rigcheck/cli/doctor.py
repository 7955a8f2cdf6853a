"""`rigcheck doctor`: inspect the rig and report every finding with advice."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from rigcheck.checks.doctor import run_checks
from rigcheck.cli.common import (
    FromOption,
    GpusOption,
    HtmlFileOption,
    IdOption,
    IndentOption,
    JsonOption,
    MarkdownFileOption,
    RecordOption,
    emit,
    json_indent,
    load_snapshot,
    read_site_config,
    write_pages,
)
from rigcheck.cli.exits import exit_code_for
from rigcheck.model.doctor import doctor_document
from rigcheck.report.render import Format, RenderOptions


def _since(since: str) -> datetime | None:
    """--since as a time, or None for every event. The default ('boot') is not parsed: probe/kernel_log.py, the
    live kernel-log reader, is then not loaded by a `doctor --from` that does not need it."""
    if since == "boot":
        return None
    from rigcheck.probe.kernel_log import parse_since

    return parse_since(since, datetime.now())


def doctor(
    source: FromOption = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="Report format (--json is short for --format json).")
    ] = Format.TERMINAL,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings count as problems (exit 1).")] = False,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
    matrix: Annotated[
        bool, typer.Option("--matrix", help="Show the full GPU matrix above 16 GPUs (else a summary).")
    ] = False,
    all_unknown: Annotated[
        bool,
        typer.Option(
            "--show-unknown",
            help="List every unknown finding. From saved outputs, those that only say the input lacks some data "
            "are otherwise folded into one line per missing source (the JSON always lists them all).",
        ),
    ] = False,
    since: Annotated[
        str,
        typer.Option(
            "--since",
            help="Count kernel-log events (Xid, SXid, AER) from this time on: 'boot' (default; a saved log: all "
            "of it), a duration back from now (30m, 2h, 1d) or a local time (2025-02-23 16:00).",
        ),
    ] = "boot",
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="A site file (TOML on Python 3.11+, or JSON) that sets Xid codes' severity ([xid.severity]) and "
            "count-in-window limits for application codes ([xid.limits]); see docs/commands.md.",
        ),
    ] = None,
    gpus_text: GpusOption = None,
    gpu_ids: IdOption = None,
    ledger: RecordOption = None,
) -> None:
    """Inspect the rig — power, cooling, topology, PCIe, P2P, health, software — and say what is wrong.

    Exit code: 0 healthy, 1 problems found (warnings too with --strict), 2 bad usage or input, 3 internal error,
    130/143 interrupted.
    """
    cutoff = _since(since)  # a bad --since is exit 2 before anything is read
    site = read_site_config(config) if config is not None else None  # so is a bad site file
    snap = load_snapshot(source, gpus=gpus_text, ids=gpu_ids)
    if cutoff is not None:
        from rigcheck.probe.kernel_log import apply_since

        apply_since(snap, cutoff, since)
    findings = run_checks(snap, config=site)
    doc = doctor_document(snap, findings, exit_code=exit_code_for(findings, strict=strict), strict=strict)
    write_pages(doc, html_file, markdown_file, RenderOptions(show_unknown=all_unknown))
    options = RenderOptions(show_unknown=all_unknown, full_matrix=matrix, indent=json_indent(indent))
    emit(doc, Format.JSON if as_json else fmt, options)
    if ledger is not None:
        from rigcheck.cli.record import record

        record(doc, ledger, "doctor")
    raise typer.Exit(doc.exit_code)
