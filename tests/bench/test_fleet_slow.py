"""Real fleets under torchrun where something is wrong for real: a jittery rank, a slow node, three slow nodes of
eight, a rank that never arrives (apart from tests/bench/test_fleet_run.py, so the two test workers share the
launches)."""

from __future__ import annotations

import importlib.util
import socket

import pytest

from rigcheck.bench.fleet.state import HANG_RANK_VAR, JITTER_VAR, SKEW_VAR, SLOW_NODE_VAR
from tests.support.fleet_launch import SMALL, finish, fleet_env, nodes, the_document, torchrun

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (gloo)")


@needs_torch
def test_a_jittery_rank_is_the_one_the_others_wait_for() -> None:
    """The issue's check: four ranks, rank 2 late by up to 40 ms at random iterations (the hook, seeded): each
    rank's p50 and p99 in the document, and a straggler finding naming rank 2 and no other, as jittery. Rank 1's
    clock is skewed by 500 ms (the hook): its offset is estimated at the start, and it is not taken for late."""
    launch = torchrun(["--standalone", "--nproc-per-node", "4"], fleet_env(**{JITTER_VAR: "2:40", SKEW_VAR: "1:500"}))
    code, data = the_document(finish([launch]))
    assert code == 1  # the others waited a third of the time for it: a fail
    timing = {t["rank"]: t for t in data["timing"]}
    assert sorted(timing) == [0, 1, 2, 3]
    assert all(t["p50_us"] > 0 and t["p99_us"] >= t["p50_us"] for t in timing.values())
    assert timing[1]["clock_offset_us"] == pytest.approx(-500_000, abs=20_000)
    assert [timing[r]["clock_offset_us"] for r in (0, 2, 3)] == [0.0, 0.0, 0.0]
    stragglers = [f for f in data["findings"] if f["id"] == "fleet.straggler"]
    assert [f["message"].split(":")[0] for f in stragglers] == [f"rank 2 (node {socket.gethostname()})"]
    assert "jittery" in stragglers[0]["message"]
    assert timing[2]["late"] >= 3
    assert 20_000 < timing[2]["late_p50_us"] < 60_000  # 24-40 ms, give or take the scheduler and the clocks
    assert "NTP-style" in data["waits"]["clock"]


@needs_torch
def test_a_slow_node_is_named_by_the_pairs() -> None:
    """Four one-rank nodes; node 2's ranks are late in every all-reduce (the test hook, one number): slow for
    real, on CPU processes too (its lateness scales with the step, where a fixed 50 ms went unseen)."""
    results = finish(nodes(4, 1, fleet_env(**{SLOW_NODE_VAR: "2"}, **SMALL)))
    _, data = the_document(results)
    host = socket.gethostname()
    assert data["slow_nodes"] == [f"{host}#2"], data["pairs"]
    # a slow node fails the fleet, on every node: each rank exits with the fleet's code (torchrun's agents then
    # all end at once; one whose ranks succeeded would wait at torchrun's exit barrier for the one that failed)
    assert [c for c, _, _ in results] == [1, 1, 1, 1]
    assert [f["node"] for f in data["findings"] if f["id"] == "fleet.slow-node"] == [f"{host}#2"]
    assert {p["round"] for p in data["pairs"]} == {1, 2, 3}  # the block of four: every pair of it
    slow = [p for p in data["pairs"] if p["verdict"] == "slow"]
    assert slow
    assert all(f"{host}#2" in (p["a"], p["b"]) for p in slow)


@needs_torch
def test_three_slow_nodes_of_eight_are_named() -> None:
    """Eight one-rank nodes, three of them slow (the hook's list): 3 of 8 is the share at which the median
    reference took the slow figure for the normal one. Exit 1 on every node, exactly those three named."""
    results = finish(nodes(8, 1, fleet_env(**{SLOW_NODE_VAR: "0,2,5"}, **SMALL)), timeout=240)
    _, data = the_document(results)
    host = socket.gethostname()
    assert data["slow_nodes"] == [f"{host}#{nr}" for nr in (0, 2, 5)], data["pairs"]
    assert [c for c, _, _ in results] == [1] * 8
    assert sorted(f["node"] for f in data["findings"] if f["id"] == "fleet.slow-node") == data["slow_nodes"]
    # Eight processes share two cores with the other tests' workers: a pair of two healthy nodes can fall under half
    # the reference for a round (noise, named as a slow link between good nodes). What may never happen is a link
    # that holds a slow node: those are the nodes' own finding.
    named = set(data["slow_nodes"])
    assert all(not named & set(link) for link in data.get("slow_links", [])), data["pairs"]
    assert [c["size_bytes"] for c in data["collectives"]] == [4096]


@needs_torch
def test_a_rank_that_never_arrives_is_named_with_its_stack() -> None:
    """The issue's check (a shorter deadline): rank 3 stops before the gather (the test hook) and answers nothing.
    Rank 0 names it at the deadline, with its host, the last phase it reached and where it is stuck: its stack,
    dumped by faulthandler when rank 0 signalled it (one host), grouped against the three ranks that waited;
    torchrun then stops it (rank 0 exits 1), and nothing is left."""
    launch = torchrun(["--standalone", "--nproc-per-node", "4"], fleet_env(**{HANG_RANK_VAR: "3"}), "--deadline", "3")
    code, data = the_document(finish([launch]))
    host = socket.gethostname()
    assert code == 1
    assert data["verdict"] != "pass"
    assert data["partial"] is True
    assert [(m["rank"], m["host"], m["phase"]) for m in data["missing_ranks"]] == [(3, host, "inspect")]
    missing = data["missing_ranks"][0]
    assert missing["stack"].startswith("_hang_here (rigcheck/bench/fleet/run.py:")
    assert missing["stack_source"] == "faulthandler, signalled on its host"
    assert [(g["ranks"], g["phase"], g["waiting"], g["via"]) for g in data["stacks"]] == [
        ([0, 1, 2], "gather", True, "thread"),
        ([3], "inspect", False, "signal"),
    ]
    stuck = [f for f in data["findings"] if f["id"] == "fleet.stuck-rank"]
    assert [f["node"] for f in stuck] == [host]
    assert stuck[0]["message"].startswith(f"rank 3 (node {host}) stuck in _hang_here (rigcheck/bench/fleet/run.py:")
    assert "3 ranks (0-2) waiting in _gather (rigcheck/bench/fleet/run.py:" in stuck[0]["message"]
    phases = {p["name"]: p for p in data["phases"]}
    assert phases["gather"]["status"] == "timed_out"
    assert phases["gather"]["deadline_s"] == 3
    assert phases["collectives"]["status"] == "skipped"
    assert phases["gather"]["elapsed_s"] < 15
