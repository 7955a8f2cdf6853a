"""The power and thermal documents (rigcheck.model.power_thermal) and their renderings
(rigcheck.report.power_thermal)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from rich.console import Console

from rigcheck.checks.doctor import run_checks
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import CLOCK_EVENT_REASONS, Missing, Snapshot, snapshot_from_json
from rigcheck.model.power_thermal import (
    ClockEventReason,
    PowerDocument,
    ThermalDocument,
    power_document,
    thermal_document,
)
from rigcheck.report.render import Format, render

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def _snapshot(name: str) -> Snapshot:
    return snapshot_from_json((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))


def _power(name: str, *, strict: bool = False) -> PowerDocument:
    snap = _snapshot(name)
    found = [f for f in run_checks(snap) if f.category == "power"]
    return power_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)


def _thermal(name: str, *, strict: bool = False) -> ThermalDocument:
    snap = _snapshot(name)
    found = [f for f in run_checks(snap) if f.category == "thermal"]
    return thermal_document(snap, found, exit_code=exit_code_for(found, strict=strict), strict=strict)


def _terminal(doc: PowerDocument | ThermalDocument) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(render(doc, Format.TERMINAL))
    return console.export_text()


def test_the_events_enum_is_the_snapshots_list_of_reasons() -> None:
    assert get_args(ClockEventReason) == CLOCK_EVENT_REASONS


def test_json_keeps_the_contract_keys_only() -> None:
    doc = _thermal("gpu-lost", strict=True)
    data = json.loads(str(render(doc, Format.JSON)))
    assert list(data) == ["schema", "gpus", "findings"]  # no exit code, --strict or absence reason
    assert list(data["gpus"][0]) == [
        "index",
        "name",
        "temp_c",
        "temp_memory_c",
        "temp_slowdown_c",
        "temp_shutdown_c",
        "temp_max_operating_c",
        "fan_percent",
        "events_active",
        "missing",
    ]
    lost = data["gpus"][2]
    assert lost["temp_c"] is None
    assert lost["missing"]["temp_c"] == "gpu_lost"  # the read error is the reason of every null
    assert doc.gpus[2].read_error is Missing.GPU_LOST


def test_power_events_are_the_power_ones_only() -> None:
    doc = _power("2x-3090-phb-throttling")
    thermal = _thermal("2x-3090-phb-throttling")
    power_events = {e for g in doc.gpus for e in g.events_active or []}
    thermal_events = {e for g in thermal.gpus for e in g.events_active or []}
    assert power_events <= {"sw_power_cap", "hw_power_brake_slowdown", "hw_slowdown"}
    assert thermal_events <= {"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"}
    assert power_events or thermal_events  # the fixture throttles: something is active


def test_terminal_says_why_there_are_no_gpus_and_the_exit_code() -> None:
    text = _terminal(_power("no-gpu"))
    assert "no GPUs: NVML Shared Library Not Found" in text
    assert "Result: nothing to check (no problems) — exit 0" in text
    strict = _terminal(_thermal("gpu-lost", strict=True))
    assert "unreadable: gpu_lost" in strict
    assert "(--strict: warnings count)" in strict
    assert "guide: ≤75 C excellent" in strict


def test_markdown_gives_each_missing_figure_its_reason() -> None:
    md = str(render(_power("consumer-power-not-supported"), Format.MARKDOWN))
    assert md.startswith("# rigcheck power\n")
    row = next(line for line in md.splitlines() if line.startswith("| 0 |"))
    assert row.count("n/a (not supported)") == 6
    assert "| UNKNOWN | `power.readings-unavailable` | GPU0 |" in md
    lost = str(render(_thermal("gpu-lost"), Format.MARKDOWN))
    assert "| 2 | unreadable: gpu_lost |" in lost
    assert "<details><summary>Checks that passed</summary>" in lost


def test_html_page_greys_missing_cells_and_escapes() -> None:
    doc = _thermal("consumer-power-not-supported")
    doc.gpus[0].name = "<script>x</script>"
    html = str(render(doc, Format.HTML))
    assert '<td class="na">n/a (not supported)</td>' in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<script>" not in html
    assert 'data-id="thermal.ok"' in html
