"""The doctor report's GPU table, laid out directly (report/doctor.py's _GpuGrid), draws what rich's table draws:
the same segments (so the same bytes on a colour terminal and in a pipe) wherever it is used, and rich's own table
where a cell or the width asks for rich's measuring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.segment import Segment

from rigcheck.model import Gpu, Snapshot
from rigcheck.report.doctor import _GpuGrid, _rich_gpu_table, gpu_table
from tests.support.snapshots import make_snapshot

# The snapshots with a GPU table to draw (one without GPUs prints none).
SNAPSHOTS = sorted(
    p
    for p in (Path(__file__).parent.parent / "fixtures" / "snapshots").glob("*.json")
    if json.loads(p.read_text())["gpus"]
)


def _segments(renderable: object, width: int) -> list[Segment]:
    console = Console(force_terminal=True, color_system="truecolor", width=width, markup=False, highlight=False)
    return list(console.render(renderable, console.options))  # type: ignore[arg-type]


def _drawn(renderable: object, width: int) -> str:
    console = Console(force_terminal=True, color_system="truecolor", width=width, markup=False, highlight=False)
    with console.capture() as captured:
        console.print(renderable)  # type: ignore[arg-type]
    return captured.get()


@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.stem for p in SNAPSHOTS])
@pytest.mark.parametrize("width", [200, 107, 106, 80, 40])
def test_the_gpu_table_is_what_rich_draws(path: Path, width: int) -> None:
    snap = Snapshot.model_validate_json(path.read_text())
    fast, rich_table = gpu_table(snap), _rich_gpu_table(snap)
    assert _segments(fast, width) == _segments(rich_table, width)
    assert _drawn(fast, width) == _drawn(rich_table, width)


def test_an_8_gpu_box_takes_the_direct_layout() -> None:
    snap = Snapshot.model_validate_json((SNAPSHOTS[0].parent / "healthy-8x-h100.json").read_text())
    assert isinstance(gpu_table(snap), _GpuGrid)
    # 107 columns wide: laid out directly from 107 columns on, rich's wrapping below (the same segments either way).
    lines = "".join(s.text for s in _segments(gpu_table(snap), 200)).splitlines()
    assert max(len(line) for line in lines) == 107


@pytest.mark.parametrize(
    "name",
    ["GPU :fire: edition", "NVIDIA [bold]H100[/bold]", "NVIDIA H100 ＰＣＩｅ", "tab\there"],
    ids=["emoji-code", "markup", "wide-characters", "control"],
)
def test_a_cell_rich_would_change_goes_through_rich(name: str) -> None:
    snap = make_snapshot([Gpu(index=0, name=name), Gpu(index=1, name="NVIDIA H100 80GB HBM3")])
    drawn = gpu_table(snap)
    assert not isinstance(drawn, _GpuGrid)
    assert _segments(drawn, 160) == _segments(_rich_gpu_table(snap), 160)


def test_an_unreadable_gpu_goes_through_rich() -> None:
    from rigcheck.model import Missing

    snap = make_snapshot([Gpu(index=0, read_error=Missing.GPU_LOST), Gpu(index=1, name="NVIDIA H100 80GB HBM3")])
    assert not isinstance(gpu_table(snap), _GpuGrid)
