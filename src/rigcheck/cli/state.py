"""`rigcheck power` and `rigcheck thermal`: one concern's figures per GPU, and its findings."""

from __future__ import annotations

from pathlib import Path

import typer

from rigcheck.checks import run_checks
from rigcheck.cli.common import emit, load_snapshot
from rigcheck.cli.exits import exit_code_for
from rigcheck.model.state import power_document, thermal_document
from rigcheck.report.render import Format


def power_state(source: Path | None, as_json: bool, strict: bool) -> None:
    snap = load_snapshot(source)
    found = [f for f in run_checks(snap) if f.category == "power"]
    doc = power_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)
    emit(doc, Format.JSON if as_json else Format.TERMINAL)
    raise typer.Exit(doc.exit_code)


def thermal_state(source: Path | None, as_json: bool, strict: bool) -> None:
    snap = load_snapshot(source)
    found = [f for f in run_checks(snap) if f.category == "thermal"]
    doc = thermal_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)
    emit(doc, Format.JSON if as_json else Format.TERMINAL)
    raise typer.Exit(doc.exit_code)
