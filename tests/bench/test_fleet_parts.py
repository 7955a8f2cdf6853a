"""The fleet's timing and stack parts that need no launch: the clock offset of a round trip, each rank's clock
leader, the skew hook's clock, and a stack as the store carries it (untrusted: what is not one is dropped)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from rigcheck.bench.fleet.clocks import leaders, midpoint_offset, skewed_clock
from rigcheck.bench.fleet.stacks import MAX_FRAMES, _frames, _start_time, from_json, stack_file, to_json
from rigcheck.checks.fleet.stacks import RankStack


def test_the_shortest_round_trip_sets_the_offset() -> None:
    # (leader's send, rank 0's answer, leader's receipt): rank 0 reads 5 s ahead; the 2nd trip is the tightest
    offset, trip = midpoint_offset([(10.0, 15.6, 10.4), (20.0, 25.05, 20.1), (30.0, 35.5, 31.0)])
    assert trip == pytest.approx(0.1)
    assert offset == pytest.approx(5.0)
    with pytest.raises(ValueError, match="no round trip"):
        midpoint_offset([])


def test_each_rank_follows_its_host_s_clock() -> None:
    hosts = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c"}
    assert leaders(hosts) == {0: 0, 1: 0, 2: 2, 3: 2, 4: 4}
    assert leaders(hosts, skewed=[1]) == {0: 0, 1: 1, 2: 2, 3: 2, 4: 4}  # a skewed clock leads itself


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
