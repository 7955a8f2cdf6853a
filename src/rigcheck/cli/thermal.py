"""`rigcheck thermal`: the temperatures per GPU against the card's own thresholds, and the thermal findings; with
them, the findings that say a GPU (or every GPU) could not be read, so `thermal` passes no GPU it could not see."""

from __future__ import annotations

import typer

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.health import UNREADABLE_IDS
from rigcheck.cli.common import (
    FromOption,
    GpusOption,
    IdOption,
    IndentOption,
    JsonOption,
    StrictOption,
    emit,
    json_indent,
    load_snapshot,
)
from rigcheck.cli.exits import exit_code_for
from rigcheck.model.power_thermal import thermal_document
from rigcheck.report.render import Format, RenderOptions


def thermal(
    source: FromOption = None,
    as_json: JsonOption = False,
    indent: IndentOption = None,
    strict: StrictOption = False,
    gpus_text: GpusOption = None,
    gpu_ids: IdOption = None,
) -> None:
    """Temperatures against the card's own slowdown/shutdown thresholds and the guide's bands."""
    snap = load_snapshot(source, gpus=gpus_text, ids=gpu_ids)
    found = [f for f in run_checks(snap) if f.category == "thermal" or f.id in UNREADABLE_IDS]
    doc = thermal_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(doc.exit_code)
