"""`rigcheck power` and `rigcheck thermal`: one concern's figures per GPU, and its findings."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.checks import run_checks
from rigcheck.cli.common import load_snapshot, out_console, print_json
from rigcheck.model import Finding, Gpu, Snapshot
from rigcheck.report.base import MISSING_WORDS, DoctorReport, value_text
from rigcheck.report.json_report import findings_to_list
from rigcheck.report.terminal import finding_lines, passed_line, result_line

# (field, column header, unit) for each view; the JSON carries the same fields.
POWER_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("power_draw_w", "draw", "W"),
    ("power_limit_w", "limit", "W"),
    ("power_default_limit_w", "default", "W"),
    ("power_enforced_limit_w", "enforced", "W"),
    ("power_min_limit_w", "min", "W"),
    ("power_max_limit_w", "max", "W"),
)
THERMAL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("temp_c", "GPU", "C"),
    ("temp_memory_c", "memory", "C"),
    ("temp_slowdown_c", "slowdown", "C"),
    ("temp_shutdown_c", "shutdown", "C"),
    ("temp_max_operating_c", "max operating", "C"),
    ("fan_percent", "fan", "%"),
)
POWER_REASONS = ("sw_power_cap", "hw_power_brake_slowdown", "hw_slowdown")
THERMAL_REASONS = ("sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown")

# The guide's temperature bands, shown under the thermal table.
GUIDE_BANDS = "guide: ≤75 C excellent, <80 C good, throttling likely from 84–90 C; the card's own thresholds rule."


def _reasons(g: Gpu, wanted: tuple[str, ...]) -> list[str] | None:
    if g.clock_event_reasons_active is None:
        return None
    return [r for r in g.clock_event_reasons_active if r in wanted]


def _gpu_rows(
    snap: Snapshot, fields: tuple[tuple[str, str, str], ...], reasons: tuple[str, ...]
) -> tuple[Table, list[str]]:
    """The table (missing cells say just "n/a") and one footnote per GPU naming why they are missing."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("GPU", no_wrap=True)
    table.add_column("name", no_wrap=True)
    for _, header, unit in fields:
        table.add_column(f"{header} ({unit})" if unit else header, justify="right", no_wrap=True)
    table.add_column("active events", no_wrap=True)
    notes: list[str] = []
    for g in snap.gpus:
        if g.read_error is not None:
            table.add_row(str(g.index), Text(f"unreadable: {g.read_error.value}", style="red"))
            continue
        active = _reasons(g, reasons)
        shown = ", ".join(active) if active else ("none" if active is not None else "n/a")
        cells = [value_text(g, f, digits=0) if getattr(g, f) is not None else "n/a" for f, _, _ in fields]
        table.add_row(str(g.index), g.name or "?", *cells, shown)
        why: dict[str, list[str]] = {}
        for f, header, _ in fields:
            reason = g.missing.get(f)
            if getattr(g, f) is None and reason is not None:
                why.setdefault(MISSING_WORDS[reason], []).append(header)
        if why:
            notes.append(f"GPU{g.index} n/a: " + "; ".join(f"{r} ({', '.join(h)})" for r, h in why.items()))
    return table, notes


def _to_dict(
    schema: str,
    snap: Snapshot,
    fields: tuple[tuple[str, str, str], ...],
    reasons: tuple[str, ...],
    found: list[Finding],
) -> dict[str, Any]:
    gpus = []
    names = [f for f, _, _ in fields]
    for g in snap.gpus:
        values: dict[str, Any] = {f: getattr(g, f) for f in names}
        values["events_active"] = _reasons(g, reasons)
        # Every null says why: the field's own reason, the reasons list's for events_active, or,
        # for a GPU that could not be read at all, why it could not.
        why = {k: v.value for k, v in g.missing.items() if k in names}
        if values["events_active"] is None and "clock_event_reasons_active" in g.missing:
            why["events_active"] = g.missing["clock_event_reasons_active"].value
        if g.read_error is not None:
            for key, value in values.items():
                if value is None:
                    why.setdefault(key, g.read_error.value)
        gpus.append({"index": g.index, "name": g.name, **values, "missing": why})
    return {"schema": schema, "gpus": gpus, "findings": findings_to_list(found)}


def show_state(
    snap: Snapshot,
    category: str,
    fields: tuple[tuple[str, str, str], ...],
    reasons: tuple[str, ...],
    *,
    as_json: bool,
    strict: bool,
    footer: str | None = None,
) -> None:
    found = [f for f in run_checks(snap) if f.category == category]
    report = DoctorReport(snapshot=snap, findings=found, strict=strict)
    if as_json:
        print_json(_to_dict(f"rigcheck.{category}/1", snap, fields, reasons, found))
        raise typer.Exit(report.exit_code)
    parts: list[RenderableType] = [Text(f"rigcheck {category}", style="bold")]
    if snap.gpus:
        table, notes = _gpu_rows(snap, fields, reasons)
        parts.append(table)
        parts += [Text(n, style="dim") for n in notes]
    else:
        parts.append(Text(f"no GPUs: {snap.gpu_absent_reason or 'none in this input'}"))
    if footer:
        parts.append(Text(footer, style="dim"))
    parts.append(Text(""))
    parts += finding_lines(found)
    passed = passed_line(found)
    if passed is not None:
        parts.append(passed)
    parts.append(result_line(report))
    out_console().print(Group(*parts))
    raise typer.Exit(report.exit_code)


def power_state(source: Any, as_json: bool, strict: bool) -> None:
    show_state(load_snapshot(source), "power", POWER_FIELDS, POWER_REASONS, as_json=as_json, strict=strict)


def thermal_state(source: Any, as_json: bool, strict: bool) -> None:
    show_state(
        load_snapshot(source),
        "thermal",
        THERMAL_FIELDS,
        THERMAL_REASONS,
        as_json=as_json,
        strict=strict,
        footer=GUIDE_BANDS,
    )
