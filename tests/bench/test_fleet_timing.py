"""The per-iteration timing of `rigcheck fleet` on each rank (rigcheck.bench.fleet.timeline, clocks, the hooks of
rounds._Step) and the stacks' watch (rigcheck.bench.fleet.stacks), without a launcher: the message each rank sends
and rank 0's reading of it, the clocks' midpoint, and the hooks' lateness."""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rigcheck.bench.fleet.clocks import leaders, midpoint_offset
from rigcheck.bench.fleet.state import hook_number, hook_pair
from rigcheck.bench.fleet.timeline import (
    MAX_SENT,
    Timed,
    Timeline,
    nearest_rank,
    read_message,
    summarize,
    to_series,
)

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


def _timed(label: str, size: int, n: int, *, start: float = 100.0, step: float = 0.01, world: bool = True) -> Timed:
    enters = [start + i * step + (0.004 if i == 3 else 0.0) for i in range(n)]
    times = [step * (2.0 if i == 3 else 1.0) for i in range(n)]
    return Timed(label, size, world, enters, times)


def test_the_summary_is_the_largest_size_of_the_whole_world() -> None:
    timed = [_timed("allreduce 1 KiB", 1024, 20, step=0.001), _timed("allreduce 1 MiB", 1 << 20, 20)]
    timed.append(_timed("pairs round 1: a + b", 64 << 20, 10, world=False))  # a pair is not the world's
    s = summarize(timed)
    assert s is not None
    assert (s.size_bytes, s.iterations, s.spikes) == (1 << 20, 20, 1)  # 2x the step: over 1.5x the mean
    assert s.p50_s == pytest.approx(0.01)
    assert s.p99_s == pytest.approx(0.02)  # nearest rank: of 20, the slowest
    assert nearest_rank([3.0, 1.0, 2.0, 5.0, 4.0], 50) == 3.0
    assert summarize([]) is None


def test_a_message_reads_back_to_the_microsecond() -> None:
    timeline = Timeline([_timed("allreduce 1 KiB", 1024, 5), _timed("allreduce 4 KiB", 4096, 5, start=101.0)])
    timeline.offset_s = -0.5
    got = read_message(timeline.message())
    assert got.offset_s == -0.5
    assert [label for label, _, _ in got.series] == ["allreduce 1 KiB", "allreduce 4 KiB"]
    for (_, median_s, enters), timed in zip(got.series, timeline.timed, strict=True):
        assert median_s == pytest.approx(0.01)
        assert enters == pytest.approx(timed.enters, abs=2e-6)
    assert got.summary is not None
    assert got.summary.size_bytes == 4096


def test_a_message_is_bounded() -> None:
    """A rank with more iterations than MAX_SENT sends its latest collectives only, and says how many it left."""
    timeline = Timeline([_timed(f"allreduce {i}", 1024 * (i + 1), 100, start=10.0 * i) for i in range(8)])
    message = timeline.message()
    assert sum(len(steps) for _, _, steps in message["series"]) <= MAX_SENT
    assert message["dropped"] == 3
    assert [label for label, _, _ in message["series"]][-1] == "allreduce 7"
    assert len(repr(message)) < 4096  # a few digits an iteration


@pytest.mark.parametrize(
    "value",
    [None, [], {"base": "x", "series": []}, {"base": 1.0}, {"base": 1.0, "series": [[1, 2, 3]]},
     {"base": 1.0, "series": [["a", 1.0, ["x"]]]}, {"base": float("nan"), "series": []},
     {"base": 1.0, "series": [["a", 1.0, [1] * (MAX_SENT + 1)]]}],
)  # fmt: skip
def test_what_is_not_a_message_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="not a"):
        read_message(value)


def test_the_ranks_are_put_on_rank_0s_clock() -> None:
    """Rank 1's clock reads 0.5 s later than rank 0's: with its offset its enter times line up with rank 0's; a
    rank without an offset is left out."""
    a = read_message(Timeline([_timed("x", 1, 5)]).message())
    b = read_message(Timeline([_timed("x", 1, 5, start=100.5)]).message())
    series = to_series({0: a, 1: b, 2: b}, {0: 0.0, 1: -0.5})
    assert [s.label for s in series] == ["x"]
    assert sorted(series[0].enters) == [0, 1]
    assert series[0].enters[1] == pytest.approx(series[0].enters[0], abs=2e-6)


def test_the_clocks_midpoint_takes_the_quickest_round_trip() -> None:
    # the leader's clock is 2 s behind rank 0's; each sample (t1, t2, t4), the first delayed on its way back
    samples = [(10.0, 12.0 + 0.001, 10.010), (11.0, 13.0 + 0.0005, 11.001)]
    offset, rtt = midpoint_offset(samples)
    assert rtt == pytest.approx(0.001)
    assert offset == pytest.approx(2.0, abs=1e-6)
    with pytest.raises(ValueError, match="no round trip"):
        midpoint_offset([])


def test_each_host_has_one_clock_leader() -> None:
    hosts = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c"}
    assert leaders(hosts) == {0: 0, 1: 0, 2: 2, 3: 2, 4: 4}
    assert leaders(hosts, skewed=[1]) == {0: 0, 1: 1, 2: 2, 3: 2, 4: 4}  # a skewed clock leads itself


def test_the_hooks_read_rank_and_number() -> None:
    environ = {"H": "2:40", "BAD": "x:1", "NAN": "2:fast", "HANG": "3", "WHERE": "3:collectives"}
    assert hook_pair(environ, "H") == (2, "40")
    assert hook_pair(environ, "HANG") == (3, "")  # the hang hook's rank alone: before the gather
    assert hook_pair(environ, "WHERE") == (3, "collectives")
    assert hook_pair(environ, "BAD") is None
    assert hook_pair(environ, "UNSET") is None
    assert hook_number(environ, "H", 2) == 40.0
    assert hook_number(environ, "H", 1) == 0.0  # another rank's
    assert hook_number(environ, "NAN", 2) == 0.0


@needs_torch
def test_the_hooks_make_a_rank_late() -> None:
    """The slow-rank hook: late by its percentage of the fastest all-reduce, every call; the jitter hook: late in
    about JITTER_SHARE of the calls, by 0.6 to 1 x its most, the same calls every run (seeded)."""
    import torch

    from rigcheck.bench.fleet.rounds import JITTER_LEAST, JITTER_SHARE, Rig, _Step

    slow = _Step(Rig("gloo", torch.device("cpu"), slow_pct=50.0), 1024, None)
    slow.op_s = 0.010
    assert slow._lateness() == pytest.approx(0.005)

    def draws() -> list[float]:
        rig = Rig("gloo", torch.device("cpu"), jitter_s=0.040, jitter=random.Random("rigcheck-fleet-jitter-2"))
        step = _Step(rig, 1024, None)
        return [step._lateness() for _ in range(1000)]

    late = draws()
    assert late == draws()
    hit = [x for x in late if x > 0]
    assert abs(len(hit) / len(late) - JITTER_SHARE) < 0.05
    assert min(hit) >= JITTER_LEAST * 0.040
    assert max(hit) <= 0.040


SIGNALLED = textwrap.dedent(
    """
    import sys, time
    from types import SimpleNamespace
    from rigcheck.bench.fleet.stacks import StackWatch

    env = SimpleNamespace(rank=3, world_size=2)
    watch = StackWatch(SimpleNamespace(env=env, current="inspect", ctl=None))
    watch._register()
    print(watch.file, flush=True)

    def stuck_here():
        time.sleep(60)

    stuck_here()
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGRTMAX") or not Path("/proc/self/stat").exists(), reason="Linux")
def test_a_rank_that_cannot_answer_is_read_by_the_signal() -> None:
    """A process that registered its stack file (as every rank does) and is stuck: signalled, it writes its main
    thread's stack from C, read back as frames; a pid whose file names another rank is never signalled."""
    from rigcheck.bench.fleet.stacks import signalled

    with subprocess.Popen([sys.executable, "-c", SIGNALLED], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        path = Path(proc.stdout.readline().strip())
        try:
            assert path.exists()
            time.sleep(0.2)  # inside stuck_here
            assert signalled(2, proc.pid) == ((), "its stack file names another process")
            frames, why = signalled(3, proc.pid)
            assert why is None
            assert frames[-1][2] == "stuck_here"
            assert proc.poll() is None  # the signal dumped the stack; the process lives on
        finally:
            proc.kill()
            proc.wait()
            path.unlink(missing_ok=True)
    assert signalled(3, proc.pid)[1] is not None
    assert not os.path.exists(path)
