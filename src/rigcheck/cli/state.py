"""`rigcheck power` and `rigcheck thermal`: one concern's figures per GPU, and its findings; with them, the
findings that say a GPU (or every GPU) could not be read, so neither command passes a GPU it could not see."""

from __future__ import annotations

from pathlib import Path

import typer

from rigcheck.checks import run_checks
from rigcheck.checks.health import UNREADABLE_IDS
from rigcheck.cli.common import emit, load_snapshot
from rigcheck.cli.exits import exit_code_for
from rigcheck.model.state import power_document, thermal_document
from rigcheck.report.render import Format


def power_state(source: list[Path] | None, as_json: bool, strict: bool, gpus: str | None = None) -> None:
    snap = load_snapshot(source, gpus=gpus)
    found = [f for f in run_checks(snap) if f.category == "power" or f.id in UNREADABLE_IDS]
    doc = power_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)
    emit(doc, Format.JSON if as_json else Format.TERMINAL)
    raise typer.Exit(doc.exit_code)


def thermal_state(source: list[Path] | None, as_json: bool, strict: bool, gpus: str | None = None) -> None:
    snap = load_snapshot(source, gpus=gpus)
    found = [f for f in run_checks(snap) if f.category == "thermal" or f.id in UNREADABLE_IDS]
    doc = thermal_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)
    emit(doc, Format.JSON if as_json else Format.TERMINAL)
    raise typer.Exit(doc.exit_code)
