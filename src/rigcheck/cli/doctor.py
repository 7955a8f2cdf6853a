"""`rigcheck doctor`: inspect the rig and report every finding with advice."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from rigcheck.checks import run_checks
from rigcheck.cli.common import (
    FromOption,
    HtmlFileOption,
    JsonOption,
    MarkdownFileOption,
    load_snapshot,
    out_console,
    write_report_file,
)
from rigcheck.report.base import DoctorReport, Format
from rigcheck.report.html import doctor_html
from rigcheck.report.json_report import render_json
from rigcheck.report.markdown import render_markdown
from rigcheck.report.terminal import render_terminal
from rigcheck.report.topology import render_topology, topology_from_pairs


def doctor(
    source: FromOption = None,
    as_json: JsonOption = False,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="Report format (--json is short for --format json).")
    ] = Format.TERMINAL,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings count as problems (exit 1).")] = False,
    html_file: HtmlFileOption = None,
    markdown_file: MarkdownFileOption = None,
) -> None:
    """Inspect the rig — power, cooling, topology, PCIe, P2P, health, software — and say what is wrong.

    Exit code: 0 healthy, 1 problems found (warnings too with --strict), 2 bad input, 3 internal error.
    """
    snap = load_snapshot(source)
    report = DoctorReport(snapshot=snap, findings=run_checks(snap), strict=strict)
    if as_json:
        fmt = Format.JSON
    if html_file is not None:
        write_report_file(html_file, doctor_html(report))
    if markdown_file is not None:
        write_report_file(markdown_file, render_markdown(report))
    if fmt is Format.JSON:
        sys.stdout.write(render_json(report))
    elif fmt is Format.MARKDOWN:
        sys.stdout.write(render_markdown(report))
    elif fmt is Format.HTML:
        sys.stdout.write(doctor_html(report))
    else:
        topology = None
        if len(snap.gpus) > 1:
            topo = snap.topology or topology_from_pairs(len(snap.gpus), snap.pairs, [])
            topology = render_topology(topo, snap.pairs)
        out_console().print(render_terminal(report, topology))
    raise typer.Exit(report.exit_code)
