"""The fleet report's per-iteration timing, wait-for line and stacks (report/fleet.py): the ranks the others waited
for first, the table cut at SHOWN_TIMING ranks with a line for the rest, the stack groups and a missing rank's
place; a document without them (``--from DIR``) shows none of it."""

from __future__ import annotations

from rich.console import Console

from rigcheck.checks.fleet.judge import fleet_document
from rigcheck.model.fleet import FleetDocument, MissingRank, RankTiming, StackGroup, WaitSummary
from rigcheck.report.fleet import SHOWN_TIMING, html, markdown, terminal, timing_rows


def _timing(rank: int, late: int = 0) -> RankTiming:
    return RankTiming(
        rank=rank, node=f"b{rank // 8:02d}", size_bytes=64 << 20, iterations=5, mean_us=1000.0, p50_us=990.0,
        p99_us=1100.0 + rank, spikes=0, clock_offset_us=0.0, analysed=45, last=late, late=late,
        late_p50_us=33000.0 if late else None, late_max_us=40000.0 if late else None,
    )  # fmt: skip


def _doc(ranks: int = 4) -> FleetDocument:
    missing = MissingRank(
        rank=3, host="b00", phase="inspect", reason="did not reach the gather within 3 s",
        stack="_hang_here (rigcheck/bench/fleet/run.py:176)", stack_source="faulthandler, signalled on its host",
    )  # fmt: skip
    groups = [
        StackGroup(ranks=[0, 1, 2], nodes=["b00"], phase="gather", site="_gather (rigcheck/bench/fleet/run.py:217)",
                   frame="sleep", doing=None, via="thread", waiting=True),
        StackGroup(ranks=[3], nodes=["b00"], phase="inspect", site="_hang_here (rigcheck/bench/fleet/run.py:176)",
                   frame="_hang_here", doing=None, via="signal", waiting=False),
    ]  # fmt: skip
    return fleet_document(
        nodes=[], source="live", launcher="torchrun", backend="gloo", world_size=ranks, elapsed_s=3.0,
        missing=[missing], timing=[_timing(r, 12 if r == 2 else 0) for r in range(ranks)],
        waits=WaitSummary(iterations=45, series=9, noise_us=200.0, margin_us=20000.0, clock="one clock"),
        stacks=groups,
    )  # fmt: skip


def _text(doc: FleetDocument) -> str:
    console = Console(width=200, record=True)
    console.print(terminal(doc))
    return console.export_text()


def test_the_late_rank_leads_the_timing_table() -> None:
    rows, left = timing_rows(_doc())
    assert [r[0] for r in rows] == ["2", "3", "1", "0"]  # the late one, then the slowest p99
    assert rows[0][4:8] == ("0/5", "12/45", "12", "33")
    assert left == 0
    text = _text(_doc())
    assert "per-iteration timing (p50, p99 and spikes over 1.5x the mean at 64 MiB)" in text
    assert "wait-for: 45 iterations of 9 timed collectives; a rank is late past 20 ms (noise 0.2 ms)" in text
    assert (
        "stack at the deadline, waiting: ranks 0-2 in _gather (rigcheck/bench/fleet/run.py:217) during gather" in text
    )
    assert (
        "apart: rank 3 in _hang_here (rigcheck/bench/fleet/run.py:176) during inspect (faulthandler, signalled)" in text
    )
    assert "stuck in _hang_here (rigcheck/bench/fleet/run.py:176) (faulthandler, signalled on its host)" in text


def test_a_large_fleets_table_is_cut() -> None:
    doc = _doc(64)
    rows, left = timing_rows(doc)
    assert len(rows) == SHOWN_TIMING
    assert left == 64 - SHOWN_TIMING
    assert f"timing: {left} more rank(s), none late, not shown" in _text(doc)
    assert "## Per-iteration timing" in markdown(doc)
    assert "<h2>Waits</h2>" in html(doc)


def test_a_document_without_timing_shows_none() -> None:
    doc = fleet_document(nodes=[], source="files", launcher=None, backend=None, world_size=None, elapsed_s=0.0)
    text = _text(doc)
    assert "per-iteration timing" not in text
    assert "wait-for" not in text
    assert "## Waits" not in markdown(doc)
    assert '"timing"' not in doc.model_dump_json(by_alias=True)
