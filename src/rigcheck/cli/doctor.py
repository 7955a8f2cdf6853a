"""`rigcheck doctor`: inspect the rig and report every finding with advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigcheck.checks.doctor import run_checks
from rigcheck.cli.common import (
    FromOption,
    GpusOption,
    HtmlFileOption,
    JsonOption,
    MarkdownFileOption,
    emit,
    load_snapshot,
    read_site_config,
    write_pages,
)
from rigcheck.cli.exits import exit_code_for
from rigcheck.model.doctor import doctor_document
from rigcheck.report.render import Format


def doctor(
    source: FromOption = None,
    as_json: JsonOption = False,
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
) -> None:
    """Inspect the rig — power, cooling, topology, PCIe, P2P, health, software — and say what is wrong.

    Exit code: 0 healthy, 1 problems found (warnings too with --strict), 2 bad input, 3 internal error.
    """
    from datetime import datetime

    from rigcheck.probe.kernel_log import apply_since, parse_since

    cutoff = parse_since(since, datetime.now())  # a bad --since is exit 2 before anything is read
    site = read_site_config(config) if config is not None else None  # so is a bad site file
    snap = load_snapshot(source, gpus=gpus_text)
    apply_since(snap, cutoff, since)
    findings = run_checks(snap, config=site)
    doc = doctor_document(snap, findings, exit_code=exit_code_for(findings, strict=strict), strict=strict)
    from rigcheck.report.doctor import show_unknown
    from rigcheck.report.topo import full_matrix

    with show_unknown(all_unknown):
        write_pages(doc, html_file, markdown_file)
        with full_matrix(matrix):
            emit(doc, Format.JSON if as_json else fmt)
    raise typer.Exit(doc.exit_code)
