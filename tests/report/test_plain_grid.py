"""report/grid.py's PlainGrid draws the topology matrix as rich's table draws it: the same segments (so the same
bytes, in colour or not) for every topology in the fixtures at every width, and rich's own table where a cell is
not plain."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from rich.segment import Segment

from rigcheck.model.topo import TopoDocument, snapshot_topo_document
from rigcheck.readers.from_file import load_files
from rigcheck.report import topo as topo_report
from rigcheck.report.grid import PlainGrid, plain

FIXTURES = Path(__file__).parent.parent / "fixtures"
INPUTS = sorted(
    [
        *(FIXTURES / "snapshots").glob("*.json"),
        *(FIXTURES / "topo-extra").glob("*.txt"),
        *(FIXTURES / "corpus" / "topo").rglob("*.txt"),
    ]
)
WIDTHS = [300, 160, 120, 100, 80, 60]


def _topo(path: Path, *, affinities: bool = False) -> TopoDocument | None:
    return snapshot_topo_document(load_files([str(path)]), affinities=affinities)


def _segments(renderable: object, width: int) -> list[Segment]:
    console = Console(force_terminal=True, color_system="truecolor", width=width, markup=False, highlight=False)
    return list(console.render(renderable, console.options))  # type: ignore[arg-type]


def _through_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topo_report, "_direct_grid", lambda doc, columns: None)


@pytest.mark.parametrize("affinities", [False, True], ids=["doctor", "topo"])
@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_the_matrix_is_what_rich_draws(path: Path, affinities: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _topo(path, affinities=affinities)
    if doc is None:  # nothing to draw: the input holds no matrix (else the document would have one)
        assert load_files([str(path)]).topology is None
        return
    direct = {w: _segments(topo_report._Matrix(doc), w) for w in WIDTHS}
    _through_rich(monkeypatch)
    assert {w: _segments(topo_report._Matrix(doc), w) for w in WIDTHS} == direct


def test_an_8_gpu_matrix_is_laid_out_directly_where_it_fits() -> None:
    doc = _topo(FIXTURES / "snapshots" / "healthy-8x-h100.json")
    assert doc is not None
    grid = topo_report._direct_grid(doc, topo_report._affinity_columns(doc))
    assert isinstance(grid, PlainGrid)
    assert grid.fits(160)
    drawn = "".join(s.text for s in _segments(topo_report._Matrix(doc), 160)).splitlines()
    assert max(len(line) for line in drawn) == grid.width


def test_the_boundary_width_is_rich_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the grid's own width it is laid out directly, one column less and rich abbreviates: both as rich draws."""
    doc = _topo(FIXTURES / "snapshots" / "healthy-8x-h100.json")
    assert doc is not None
    grid = topo_report._direct_grid(doc, topo_report._affinity_columns(doc))
    assert grid is not None
    widths = [grid.width, grid.width - 1]
    direct = [_segments(topo_report._Matrix(doc), w) for w in widths]
    _through_rich(monkeypatch)
    assert [_segments(topo_report._Matrix(doc), w) for w in widths] == direct


@pytest.mark.parametrize(
    ("text", "is_plain"),
    [("NV18", True), ("0-51,104-155", True), (":fire:", False), ("[bold]", False), ("ＧＰＵ", False), ("a\tb", False)],
)
def test_plain_cells(text: str, is_plain: bool) -> None:
    assert plain(text) is is_plain


def test_a_short_row_or_a_cell_that_is_not_plain_is_left_to_rich() -> None:
    assert PlainGrid.of(["a", "b"], [[("1", "")]], ["left", "left"]) is None
    assert PlainGrid.of(["a"], [[(":x:", "")]], ["left"]) is None
    assert PlainGrid.of(["a"], [[("x", "")]], ["left"]) is not None
