"""The fleet's timing and stack parts that need no launch (tests/bench/test_fleet_timing.py holds the round trip's
offset and the clock leaders): the skew hook's clock, a stack as the store carries it (untrusted: what is not one
is dropped), and rank 0's offsets, clock line and timing rows."""

from __future__ import annotations

import os
import sys
import time

import pytest

from rigcheck.bench.fleet.clocks import skewed_clock
from rigcheck.bench.fleet.stacks import MAX_FRAMES, _frames, _start_time, from_json, stack_file, to_json
from rigcheck.bench.fleet.timeline import Received, Summary
from rigcheck.bench.fleet.waiting import _clock_text, _offsets, _row
from rigcheck.checks.fleet.stacks import RankStack


def test_the_skew_hook_reads_the_clock_later() -> None:
    assert skewed_clock(0.0) is time.perf_counter
    assert skewed_clock(2.0)() - time.perf_counter() == pytest.approx(2.0, abs=0.05)


def test_a_stack_goes_through_the_store_and_back() -> None:
    frames = _frames(sys._getframe())
    assert frames[-1][2] == "test_a_stack_goes_through_the_store_and_back"
    assert len(frames) <= MAX_FRAMES
    stack = RankStack(3, "collectives", "all_reduce 64 KiB", frames, "asked")
    back = from_json(3, to_json(stack), "asked")
    assert back == stack


@pytest.mark.parametrize(
    "value",
    [None, "frames", {"frames": "x"}, {"frames": [["a.py", "7", "f"]]}, {"frames": [["a.py", 7]]}],
)
def test_what_is_not_a_stack_is_dropped(value: object) -> None:
    assert from_json(1, value, "asked") is None


def test_a_process_start_time_and_its_stack_file() -> None:
    assert (_start_time(os.getpid()) or "").isdigit()
    assert _start_time(2**22 + 12345) is None  # no such process
    assert stack_file(42).name == f"rigcheck-fleet-{os.getuid()}-42.stacks"


def _received(offset: float | None, summary: Summary | None = None) -> Received:
    return Received(base=0.0, offset_s=offset, series=[], summary=summary, dropped=0)


def test_clock_offsets_come_from_each_host_s_leader() -> None:
    led = {0: 0, 1: 0, 2: 2, 3: 2, 4: 4}  # ranks 2-3 on host b (2 leads), 4 alone on c
    received = {0: _received(None), 1: _received(None), 2: _received(0.25), 3: _received(None), 4: _received(None)}
    offsets = _offsets(led, received)
    assert offsets == {0: 0.0, 1: 0.0, 2: 0.25, 3: 0.25}  # rank 4's leader estimated nothing: unknown, left out
    assert _clock_text(offsets, received) == (
        "rank 0's host's clock; 2 rank(s) of other hosts by an NTP-style midpoint at the start; "
        "1 rank(s) without an offset, left out"
    )
    assert _clock_text({0: 0.0, 1: 0.0}, {0: received[0], 1: received[1]}) == "one clock (every rank on rank 0's host)"


def test_a_rank_s_timing_row_in_microseconds() -> None:
    summary = Summary(size_bytes=1 << 20, iterations=5, mean_s=0.002, p50_s=0.0019, p99_s=0.004, spikes=1)
    row = _row(2, _received(0.25, summary), "node-b", 0.25, {})
    assert (row.rank, row.node, row.iterations, row.spikes) == (2, "node-b", 5, 1)
    assert (row.mean_us, row.p50_us, row.p99_us, row.clock_offset_us) == (2000.0, 1900.0, 4000.0, 250000.0)
    assert (row.analysed, row.last, row.late, row.late_p50_us, row.late_max_us) == (0, 0, 0, None, None)
    bare = _row(3, _received(None), None, None, {})
    assert (bare.iterations, bare.mean_us, bare.clock_offset_us) == (0, None, None)
