"""docs/bands.md is generated (tools/update_bands_doc.py) and current; its margins and marks are right."""

from __future__ import annotations

from pathlib import Path

from tests.calibration.bands_doc import NEAR_MARK, published, render
from tests.calibration.runner import Case, Figure, Result

DOC = Path(__file__).parent.parent / "docs" / "bands.md"


def _case(case_id: str, verdict: str) -> Case:
    return Case(case_id, "x.txt", "tool", "hw", "src", verdict, "evidence", ("{file}",))  # type: ignore[arg-type]


def _result(case_id: str, verdict: str, *figures: tuple[float, float]) -> Result:
    """A labelled synthetic result: (value, floor) figures of check p2p under one condition."""
    return Result(
        _case(case_id, verdict),
        0,
        "pass",
        "",
        [
            Figure("p2p", "GPU0->GPU1", v, f, "pass", f"{v} GB/s, floor {f} (PCIe Gen4 x16), x% above")
            for v, f in figures
        ],
    )


def test_committed_doc_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "docs/bands.md is stale: run `python tools/update_bands_doc.py`"


def test_lowest_healthy_and_highest_sick_per_floor() -> None:
    rows = (
        _result("a", "healthy", (18.0, 17.3), (25.0, 17.3)),
        _result("b", "healthy", (17.9, 17.3)),
        _result("c", "sick", (9.9, 17.3), (12.0, 17.3)),
    )
    [p] = published(rows)
    assert (p.check, p.floor, p.condition) == ("p2p", 17.3, "PCIe Gen4 x16")
    assert p.healthy == (17.9, "b")
    assert p.sick == (12.0, "c")


def test_a_floor_within_five_percent_of_a_healthy_figure_is_marked() -> None:
    near = render((_result("near", "healthy", (18.0, 17.3)),))  # 4.0% above the floor
    far = render((_result("far", "healthy", (19.0, 17.3)),))  # 9.8% above
    near_row = next(line for line in near.splitlines() if "`near`" in line and line.startswith("| p2p"))
    far_row = next(line for line in far.splitlines() if "`far`" in line and line.startswith("| p2p"))
    assert "+4.0%" in near_row
    assert NEAR_MARK in near_row
    assert "+9.8%" in far_row
    assert NEAR_MARK not in far_row


def test_doc_names_no_path_of_the_machine() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "/work/" not in text
    assert "/tmp/" not in text
