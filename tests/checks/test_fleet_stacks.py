"""Where a hung fleet stands (checks/fleet/stacks.py): faulthandler's text read back, a rank's place (its phase and
its innermost rigcheck frame that is not a wait), and the stacks grouped: the waiting majority, and the ranks apart
from it named with their frame."""

from __future__ import annotations

from rigcheck.checks.fleet.judge import FINDING_IDS
from rigcheck.checks.fleet.stacks import (
    Frame,
    RankStack,
    group_stacks,
    parse_faulthandler,
    short_path,
    site,
    where_text,
)
from rigcheck.model.finding import Severity

DUMP = """\
Thread 0x00007f7cc6ea56c0 (most recent call first):
  File "/venv/lib/python3.11/site-packages/rigcheck/bench/fleet/stacks.py", line 120 in _loop
  File "/usr/lib/python3.11/threading.py", line 982 in run

Current thread 0x00007f7cc79e1b80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/rigcheck/bench/fleet/run.py", line 176 in _hang_here
  File "/venv/lib/python3.11/site-packages/rigcheck/bench/fleet/run.py", line 640 in _measure
  File "<frozen runpy>", line 88 in _run_code
"""

OUTER: tuple[Frame, ...] = (("runpy.py", 88, "_run_code"), ("rigcheck/bench/fleet/run.py", 560, "run_fleet"))
WAITING = (
    *OUTER,
    ("rigcheck/bench/fleet/run.py", 217, "_gather"),
    ("rigcheck/bench/fleet/state.py", 140, "await_lead"),
    ("rigcheck/bench/fleet/store.py", 230, "await_key"),
)
IN_COLLECTIVE = (
    *OUTER,
    ("rigcheck/bench/timing.py", 70, "time_repetitions"),
    ("rigcheck/bench/fleet/rounds.py", 160, "__call__"),
    ("distributed/distributed_c10d.py", 2950, "all_reduce"),
)


def test_faulthandlers_text_reads_back_as_the_main_threads_frames() -> None:
    frames = parse_faulthandler(DUMP, 0x00007F7CC79E1B80)
    assert frames == (
        ("<frozen runpy>", 88, "_run_code"),
        ("rigcheck/bench/fleet/run.py", 640, "_measure"),
        ("rigcheck/bench/fleet/run.py", 176, "_hang_here"),
    )
    assert parse_faulthandler(DUMP, 0x1234) == ()
    assert parse_faulthandler(DUMP + DUMP.replace("line 176", "line 177"), 0x7F7CC79E1B80)[-1][1] == 177  # the last
    assert short_path("/x/site-packages/torch/distributed/distributed_c10d.py") == "distributed/distributed_c10d.py"


def test_a_ranks_place_is_where_it_stands_not_where_it_waits() -> None:
    assert site(WAITING) == ("rigcheck/bench/fleet/run.py", 217, "_gather")
    assert site(IN_COLLECTIVE) == ("rigcheck/bench/fleet/rounds.py", 160, "__call__")
    assert site(OUTER[:1]) is None
    stack = RankStack(3, "collectives", None, IN_COLLECTIVE, "thread")
    assert where_text(stack) == "__call__ (rigcheck/bench/fleet/rounds.py:160) > all_reduce"


def test_the_waiting_majority_and_the_rank_apart() -> None:
    stacks = [RankStack(r, "gather", None, WAITING, "thread") for r in range(3)]
    stacks.append(RankStack(3, "inspect", None, (*OUTER, ("rigcheck/bench/fleet/run.py", 176, "_hang_here")), "signal"))
    groups, findings = group_stacks(stacks, {r: "b07" if r == 3 else "b01" for r in range(4)})
    assert [(g.ranks, g.waiting, g.via) for g in groups] == [([0, 1, 2], True, "thread"), ([3], False, "signal")]
    assert groups[1].site == "_hang_here (rigcheck/bench/fleet/run.py:176)"
    assert [(f.id, f.severity, f.node) for f in findings] == [("fleet.stuck-rank", Severity.FAIL, "b07")]
    assert findings[0].message == (
        "rank 3 (node b07) stuck in _hang_here (rigcheck/bench/fleet/run.py:176) during inspect (its stack by "
        "faulthandler, signalled on its host); 3 ranks (0-2) waiting in _gather (rigcheck/bench/fleet/run.py:217) "
        "during gather"
    )
    assert "fleet.stuck-rank" in FINDING_IDS


def test_the_collective_a_rank_is_in_is_said() -> None:
    doing = "all_reduce of 4 KiB, iteration 3"
    waiting = [RankStack(r, "collectives", doing, IN_COLLECTIVE, "thread") for r in (0, 1, 2)]
    apart = RankStack(5, "fingerprint", None, (*OUTER, ("rigcheck/bench/fleet/run.py", 250, "_fingerprint")), "thread")
    groups, findings = group_stacks([*waiting, apart], {})
    assert groups[0].doing == doing
    assert findings[0].message.startswith("rank 5 stuck in _fingerprint (rigcheck/bench/fleet/run.py:250) during")
    waited = "3 ranks (0-2) waiting in __call__ (rigcheck/bench/fleet/rounds.py:160) during collectives"
    assert findings[0].message.endswith(waited)
    assert findings[0].node is None


def test_on_a_tie_the_group_of_rank_0_is_the_waiting_one() -> None:
    """Two ranks: rank 0 saw the deadline pass, so it was the one waiting."""
    hung = RankStack(0, "gather", None, WAITING, "thread"), RankStack(1, "inspect", None, IN_COLLECTIVE, "thread")
    groups, findings = group_stacks(list(reversed(hung)), {})
    assert [g.ranks for g in groups] == [[0], [1]]
    assert len(findings) == 1
    assert group_stacks([], {}) == ([], [])
    one_place = [RankStack(r, "gather", None, WAITING, "thread") for r in range(4)]
    assert group_stacks(one_place, {})[1] == []  # all at one place: no one apart to name
