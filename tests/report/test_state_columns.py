"""The power and thermal tables at a terminal's width: whole columns left out (report/grid.FoldingTable) in the
order each concern needs them, never a cell cut, and a GPU that could not be read still named in its row."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.health import UNREADABLE_IDS
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import snapshot_from_json
from rigcheck.model.power_thermal import PowerDocument, ThermalDocument, power_document, thermal_document
from rigcheck.report.power_thermal import state_terminal

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def _doc(command: str, name: str) -> PowerDocument | ThermalDocument:
    snap = snapshot_from_json((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))
    found = [f for f in run_checks(snap) if f.category == command or f.id in UNREADABLE_IDS]
    make = power_document if command == "power" else thermal_document
    return make(snap, found, exit_code=exit_code_for(found), strict=False)


def _lines(doc: PowerDocument | ThermalDocument, width: int) -> list[str]:
    console = Console(force_terminal=True, color_system=None, width=width, markup=False, highlight=False)
    with console.capture() as captured:
        console.print(state_terminal(doc))
    return captured.get().splitlines()


@pytest.mark.parametrize(
    ("width", "kept", "left_out"),
    [
        (60, "GPU draw (W) limit (W) default (W) active events", "name, enforced (W), min (W), max (W)"),
        (40, "GPU draw (W) limit (W) active events", "name, default (W), enforced (W), min (W), max (W)"),
    ],
)
def test_power_leaves_out_the_limits_furthest_from_the_draw_first(width: int, kept: str, left_out: str) -> None:
    lines = _lines(_doc("power", "2x-3090-phb-throttling"), width)
    header = next(line for line in lines if line.startswith("GPU  "))
    assert " ".join(header.split()) == kept
    at = lines.index(header)
    row = lines[at + 1].split()
    assert row[:3] == ["0", "279", "280"]  # GPU, draw, limit: the last figures to go
    assert row[-1] == "sw_power_cap"  # whole
    note = next(i for i, line in enumerate(lines) if line.startswith("(left out"))
    said = lines[note] + "".join(f" {line.strip()}" for line in lines[note + 1 : note + 3] if line.startswith(" "))
    assert said == f"(left out at this width: {left_out})"  # in the table's order


@pytest.mark.parametrize("command", ["power", "thermal"])
@pytest.mark.parametrize("width", [50, 60, 80])
def test_a_lost_gpu_is_named_whole_at_every_width(command: str, width: int) -> None:
    lines = _lines(_doc(command, "gpu-lost"), width)
    assert max(len(line) for line in lines) <= width
    assert not any("…" in line for line in lines)
    row = next(line for line in lines if line.startswith("2 "))
    assert row.split() == ["2", "unreadable:", "gpu_lost"]
    assert lines[0].startswith(f"rigcheck {command}: FAIL, exit 1 — ")


@pytest.mark.parametrize("command", ["power", "thermal"])
def test_a_wide_terminal_shows_every_column(command: str) -> None:
    lines = _lines(_doc(command, "2x-3090-phb-throttling"), 200)
    header = next(line for line in lines if line.startswith("GPU  "))
    assert header.split("  ")[:2] == ["GPU", "name"]
    assert not any(line.startswith("(left out") for line in lines)
