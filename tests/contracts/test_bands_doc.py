"""docs/bands.md and facts/published_figures.py are generated (tools/update_bands_doc.py) and current; the doc's
margins and marks are right."""

from __future__ import annotations

from pathlib import Path

from tools.update_bands_doc import FACTS, calibration, facts_module, lowest_healthy

from rigcheck.checks.verify.bands import explain_bands
from tests.calibration.bands_doc import BELOW_MARK, NEAR_MARK, published, render
from tests.calibration.runner import Case, Figure, Result

DOC = Path(__file__).parent.parent.parent / "docs" / "bands.md"


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
    assert DOC.read_text(encoding="utf-8") == render(calibration()), (
        "docs/bands.md is stale: run `python tools/update_bands_doc.py`"
    )


def test_committed_published_figures_module_is_current() -> None:
    # `verify --explain` shows these figures: the package cannot read tests/, so the tool writes them into facts/.
    assert FACTS.read_text(encoding="utf-8") == facts_module(calibration()), (
        "src/rigcheck/facts/published_figures.py is stale: run `python tools/update_bands_doc.py`"
    )


def test_an_all_gather_figure_is_not_lent_to_the_all_reduce_floor() -> None:
    # bench allgather's judgement names no op, so its figure was read as "allreduce" and stood beside the A100
    # all-reduce floor of the same value (180): the runner takes the document's op.
    gather = next(r for r in calibration() if r.case.command[:2] == ("bench", "allgather") and r.figures)
    assert {f.check for f in gather.figures} == {"allgather"}
    cited = lowest_healthy(calibration())[("A100 SXM4 40GB", "allreduce")]
    assert not cited[1].startswith("allgather")


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
    assert str(Path(__file__).resolve().parent.parents[1]) not in text  # the checkout, wherever it is
    assert "/tmp/" not in text


def test_a_floor_above_a_healthy_figure_is_marked_below() -> None:
    text = render((_result("under", "healthy", (15.0, 17.3)),))
    row = next(line for line in text.splitlines() if "`under`" in line and line.startswith("| p2p"))
    assert "-13.3%" in row
    assert BELOW_MARK in row


def _catalogue_row(text: str, gpu: str, check: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {gpu} | {check} |"))


def test_a_figure_judged_against_one_sku_is_not_lent_to_another_with_the_same_floor() -> None:
    # The host-link condition names the SKU; another SKU with the same floor must not borrow its figure.
    bands = {g.name: {b.check: b.expected_min for b in g.bands} for g in explain_bands(None, None, None).gpus}
    floor = bands["A100 SXM4 40GB"]["hostlink_h2d"]
    other = next(n for n, b in bands.items() if n != "A100 SXM4 40GB" and b.get("hostlink_h2d") == floor)
    reason = f"x GB/s, floor {floor} (PCIe Gen4 x16, as built (A100 SXM4 40GB, x))"
    figure = Figure("hostlink_h2d", "GPU0", floor + 5, floor, "pass", reason)
    text = render((Result(_case("a100", "healthy"), 0, "pass", "", [figure]),))
    assert "`a100`" in _catalogue_row(text, "A100 SXM4 40GB", "hostlink_h2d")
    assert "`a100`" not in _catalogue_row(text, other, "hostlink_h2d")
