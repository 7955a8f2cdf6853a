"""`rigcheck fleet` at run time: the launcher's variables read, and real fleets on gloo under torchrun on this
machine: one launch of 4 ranks, two launches joined through a c10d endpoint (two nodes), four one-rank nodes
with one made slow for real and named, a rank that never arrives named by the deadline, and a rank that never
reaches the store. Every launch runs in its own session; none may leave a live process behind."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rigcheck.bench.fleet.auth import KEY_VAR
from rigcheck.bench.fleet.env import (
    SLURM_PORT_BASE,
    SLURM_PORT_SPAN,
    FleetEnv,
    expand_hostlist,
    expand_tasks_per_node,
    parse_fleet_env,
)
from rigcheck.bench.fleet.state import (
    HANG_RANK_VAR,
    HOOK_VARS,
    JITTER_VAR,
    PAIR_BYTES_VAR,
    SIZES_VAR,
    SKEW_VAR,
    SLOW_NODE_VAR,
    node_names,
)
from rigcheck.checks.fleet.collectives import nic_busbw
from rigcheck.errors import UsageError
from rigcheck.model.fingerprint import FLIP_VAR
from rigcheck.model.fleet import NodeReport
from rigcheck.model.snapshot import IbPort, Snapshot, System
from tests.support.cli import Rigcheck
from tests.support.procs import assert_none_left

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (gloo)")


# --- the launcher's variables --------------------------------------------------------------------------

TORCHRUN = {
    "RANK": "5",
    "WORLD_SIZE": "8",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "4",
    "GROUP_RANK": "1",
    "MASTER_ADDR": "node0",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
    "TORCHELASTIC_RESTART_COUNT": "2",
}

SLURM = {
    "SLURM_PROCID": "3",
    "SLURM_NTASKS": "6",
    "SLURM_LOCALID": "1",
    "SLURM_NODEID": "1",
    "SLURM_TASKS_PER_NODE": "2(x3)",
    "SLURM_JOB_NODELIST": "gpu[01-03]",
    "SLURM_JOB_ID": "123457",
}


def test_torchrun_variables() -> None:
    assert parse_fleet_env(TORCHRUN) == FleetEnv(
        rank=5,
        world_size=8,
        local_rank=1,
        local_world_size=4,
        node_rank=1,
        master_addr="node0",
        master_port=29500,
        launcher="torchrun",
        agent_store=True,
        attempt=2,
    )


def test_torchrun_without_group_rank_derives_the_node() -> None:
    env = parse_fleet_env({k: v for k, v in TORCHRUN.items() if k != "GROUP_RANK"})
    assert env.node_rank == 1  # RANK 5 // LOCAL_WORLD_SIZE 4
    assert not parse_fleet_env({**TORCHRUN, "TORCHELASTIC_USE_AGENT_STORE": "False"}).agent_store


def test_slurm_variables() -> None:
    env = parse_fleet_env(SLURM)
    assert env == FleetEnv(
        rank=3,
        world_size=6,
        local_rank=1,
        local_world_size=2,
        node_rank=1,
        master_addr="gpu01",
        master_port=SLURM_PORT_BASE + 123457 % SLURM_PORT_SPAN,
        launcher="slurm",
    )
    assert 20000 <= env.master_port < 30000


def test_slurm_prefers_the_step_and_explicit_values() -> None:
    env = parse_fleet_env(
        {
            **SLURM,
            "SLURM_STEP_NODELIST": "gpu[02-03]",
            "SLURM_STEP_TASKS_PER_NODE": "3,3",
            "SLURM_LOCALID": "2",
            "MASTER_PORT": "31000",
        }
    )
    assert (env.master_addr, env.master_port, env.local_world_size) == ("gpu02", 31000, 3)
    assert parse_fleet_env({**SLURM, "MASTER_ADDR": "head"}).master_addr == "head"
    only_ntasks = {k: v for k, v in SLURM.items() if k != "SLURM_TASKS_PER_NODE"} | {"SLURM_NTASKS_PER_NODE": "2"}
    assert parse_fleet_env(only_ntasks).local_world_size == 2


def test_no_launcher_is_one_process() -> None:
    env = parse_fleet_env({"HOME": "/root"})
    assert (env.launcher, env.rank, env.world_size, env.master_addr, env.master_port) == (
        "single",
        0,
        1,
        "127.0.0.1",
        0,
    )


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu[01-03,07],cpu5", ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]),
        ("node7", ["node7"]),
        ("a,b", ["a", "b"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("gpu[1]-ib", ["gpu1-ib"]),
        ("x-[3,1]", ["x-3", "x-1"]),
    ],
)
def test_expand_hostlist(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty host list"),
        ("gpu[01-03", "'\\[' without '\\]'"),
        ("gpu01]", "'\\]' without '\\['"),
        ("gpu[3-1]", "runs backwards"),
        ("gpu[a-b]", "bad range"),
        ("gpu[[1]]", "nested"),
        ("a,,b", "empty host name"),
        ("gpu[]", "bad range"),
    ],
)
def test_expand_hostlist_refuses(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        expand_hostlist(text)


def test_tasks_per_node() -> None:
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert expand_tasks_per_node("8") == [8]
    with pytest.raises(ValueError, match="bad item"):
        expand_tasks_per_node("2(x)")


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"RANK": "eight"}, "RANK='eight'"),
        ({"RANK": "8"}, "RANK=8"),
        ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0"),
        ({"LOCAL_RANK": "4"}, "LOCAL_RANK=4"),
        ({"LOCAL_WORLD_SIZE": "16"}, "LOCAL_WORLD_SIZE=16"),
        ({"GROUP_RANK": "-1"}, "GROUP_RANK=-1"),
        ({"MASTER_PORT": "70000"}, "MASTER_PORT=70000"),
        ({"MASTER_ADDR": " "}, "MASTER_ADDR"),
        ({"LOCAL_RANK": None}, "LOCAL_RANK is not set"),
    ],
)
def test_bad_torchrun_values_name_the_variable(changes: Mapping[str, str | None], named: str) -> None:
    environ = {k: v for k, v in {**TORCHRUN, **changes}.items() if v is not None}
    with pytest.raises(UsageError, match=named.replace("(", r"\(")) as caught:
        parse_fleet_env(environ)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"SLURM_JOB_NODELIST": "gpu[01-03"}, "SLURM_JOB_NODELIST"),
        ({"SLURM_TASKS_PER_NODE": "2(x"}, "SLURM_TASKS_PER_NODE"),
        ({"SLURM_NODEID": "3"}, "SLURM_NODEID=3"),
        ({"SLURM_LOCALID": "2"}, "SLURM_LOCALID=2"),
        ({"SLURM_PROCID": "6"}, "SLURM_PROCID=6"),
        ({"SLURM_JOB_ID": None}, "SLURM_JOB_ID is not set"),
        ({"SLURM_JOB_NODELIST": None}, "SLURM_STEP_NODELIST"),
    ],
)
def test_bad_slurm_values_name_the_variable(changes: Mapping[str, str | None], named: str) -> None:
    environ = {k: v for k, v in {**SLURM, **changes}.items() if v is not None}
    with pytest.raises(UsageError, match=named.replace("[", r"\[")):
        parse_fleet_env(environ)


def test_node_names_are_made_unique_where_hosts_repeat() -> None:
    assert node_names({0: "vm", 1: "vm", 2: "gpu7"}) == {0: "vm#0", 1: "vm#1", 2: "gpu7"}


def _node(name: str, ports: list[IbPort] | None) -> NodeReport:
    return NodeReport(
        name=name,
        node_rank=None,
        ranks=[],
        snapshot=Snapshot(system=System(ib_ports=ports)),
        findings=[],
        verify=None,
        versions={},
        source="live",
    )


def test_what_the_nics_carry_is_the_least_node() -> None:
    full = [IbPort(device=f"mlx5_{i}", port=1, state="ACTIVE", rate_gbps=400.0) for i in range(8)]
    half = [*full[:4], *(p.model_copy(update={"state": "DOWN"}) for p in full[4:])]
    gbps, source = nic_busbw([_node("a", full), _node("b", half)])
    assert gbps == 200.0  # 4 x 400 Gb/s = 1600 Gb/s = 200 GB/s
    assert source is not None
    assert source.startswith("b:")
    assert nic_busbw([_node("a", full), _node("c", None)]) == (None, None)


# --- the command's other ways in ------------------------------------------------------------------------

FLEET_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "fleet" / "4-nodes"


def test_from_a_directory_compares_the_saved_nodes(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("fleet", "--from", str(FLEET_DIR), "--json")
    data = json.loads(out)
    assert code == 1
    assert (data["source"], data["launcher"], data["world_size"]) == ("files", None, None)
    assert len(data["nodes"]) == 4
    assert {(f["id"], f["node"]) for f in data["findings"]} >= {("fleet.driver", "node03"), ("fleet.pcie", "node02")}
    assert any(n["findings"] for n in data["nodes"])  # the doctor's checks ran on each snapshot


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--from", str(FLEET_DIR), "--cpu"], "runs nothing"),
        (["--from", str(FLEET_DIR), "--verify", "quick"], "runs nothing"),
        (["--verify", "fast"], "quick, full, prolog or none"),
    ],
)
def test_bad_usage_exits_2(argv: list[str], says: str, rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("fleet", *argv)
    assert (code, out) == (2, "")
    assert says in err


def test_bad_launcher_variables_exit_2_naming_the_variable() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rigcheck", "fleet", "--cpu", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **TORCHRUN, "RANK": "9"},
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "RANK=9 is not below WORLD_SIZE=8" in proc.stderr


@needs_torch
def test_a_node_whose_inspection_fails_fails_the_phase() -> None:
    """One process (no launcher): its inspection raises one of rigcheck's errors; the fleet still reports, with
    the inspect phase failed for its reason, and every rank is told the verdict."""
    from rigcheck.bench.fleet.run import run_fleet
    from rigcheck.errors import ProbeError

    def inspect() -> NodeReport:
        raise ProbeError("NVML could not start: driver not loaded")

    told: list[str] = []
    doc = run_fleet(env=parse_fleet_env({}), inspect=inspect, cpu=True, deadline_s=10, on_verdict=told.append)
    assert doc is not None
    phases = {p.name: p for p in doc.phases}
    assert phases["inspect"].status == "failed"
    assert phases["inspect"].reason == f"{socket.gethostname()}: NVML could not start: driver not loaded"
    assert doc.nodes == []
    assert doc.verdict == "incomplete"
    assert told == ["incomplete"]


# --- real fleets under torchrun ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HOOK_VARS}
    # one host: gloo on loopback whatever the hostname resolves to; torchrun's own OMP default, without its banner
    env.update(GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", **extra)
    # a key for the ranks' messages: torchrun's MASTER_ADDR is the hostname, not loopback on every machine
    env.setdefault(KEY_VAR, "test-fleet-key-" + "0" * 16)
    return env


def _torchrun(args: Sequence[str], env: Mapping[str, str], *fleet_args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "torch.distributed.run", *args, "-m", "rigcheck", "fleet", "--cpu", "--json"]
    command += fleet_args
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(env), start_new_session=True
    )


def _none_left(procs: Sequence[subprocess.Popen[str]]) -> None:
    """No live process of the launches' sessions (a zombie runs nothing), within a few seconds."""
    assert_none_left((p.pid for p in procs), within_s=10)


def _finish(procs: Sequence[subprocess.Popen[str]], timeout: float = 120) -> list[tuple[int, str, str]]:
    """Wait for every launch; (exit code, stdout, stderr) each; then no process of their sessions may live."""
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        results.append((proc.returncode, out, err))
    _none_left(procs)
    return results


def _the_document(results: Sequence[tuple[int, str, str]]) -> tuple[int, dict[str, Any]]:
    """The one launch that printed (rank 0's), its exit code and its document; the others printed nothing."""
    printed = [(code, out) for code, out, _ in results if out.strip()]
    assert len(printed) == 1, [err[-2000:] for _, _, err in results]
    code, out = printed[0]
    data = json.loads(out)
    assert data["schema"] == "rigcheck.fleet/1"
    return code, data


def _phases(data: Mapping[str, Any]) -> dict[str, str]:
    return {p["name"]: p["status"] for p in data["phases"]}


@needs_torch
def test_four_ranks_under_torchrun_standalone() -> None:
    results = _finish([_torchrun(["--standalone", "--nproc-per-node", "4"], _env())])
    code, data = _the_document(results)
    assert code == 0, results[0][2][-3000:]
    assert data["verdict"] == "pass"
    assert (data["source"], data["launcher"], data["backend"], data["world_size"]) == ("live", "torchrun", "gloo", 4)
    assert [n["ranks"] for n in data["nodes"]] == [[0, 1, 2, 3]]
    assert data["nodes"][0]["name"] == socket.gethostname()
    sizes = [c["size_bytes"] for c in data["collectives"]]
    assert sizes == [1024 * 4**i for i in range(9)]  # 1 KiB ... 64 MiB
    assert all(c["busbw_gbps"] > 0 and c["world_size"] == 4 for c in data["collectives"])
    assert _phases(data) == {
        "rendezvous": "done",
        "inspect": "done",
        "gather": "done",
        "fingerprint": "done",
        "collectives": "done",
        "pairs": "skipped",  # one node
        "report": "done",
    }
    assert data["missing_ranks"] == []
    assert data["partial"] is False
    assert data["created_at"].endswith("Z")  # when rank 0 wrote it: what dates it in the ledger
    # per-iteration timing: every rank's own figures at 64 MiB, on one clock, and no one the others waited for
    timing = data["timing"]
    assert [(t["rank"], t["size_bytes"], t["iterations"], t["clock_offset_us"]) for t in timing] == [
        (r, 64 << 20, 5, 0.0) for r in range(4)
    ]
    assert all(0 < t["p50_us"] <= t["p99_us"] and t["analysed"] == 45 for t in timing)
    assert data["waits"]["iterations"] == 45
    assert not [f for f in data["findings"] if f["id"] == "fleet.straggler"]


@needs_torch
def test_a_jittery_rank_is_the_one_the_others_wait_for() -> None:
    """The issue's check: four ranks, rank 2 late by up to 40 ms at random iterations (the hook, seeded): each
    rank's p50 and p99 in the document, and a straggler finding naming rank 2 and no other, as jittery. Rank 1's
    clock is skewed by 500 ms (the hook): its offset is estimated at the start, and it is not taken for late."""
    launch = _torchrun(["--standalone", "--nproc-per-node", "4"], _env(**{JITTER_VAR: "2:40", SKEW_VAR: "1:500"}))
    code, data = _the_document(_finish([launch]))
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


# Small measurements for the launches of many processes on a small machine: one collective size, 64 KiB pairs.
SMALL = {SIZES_VAR: "4096", PAIR_BYTES_VAR: str(64 << 10)}


def _nodes(count: int, per_node: int, env: Mapping[str, str]) -> list[subprocess.Popen[str]]:
    """``count`` torchrun launches on this host joined by a c10d rendezvous: ``count`` nodes."""
    endpoint = f"127.0.0.1:{_free_port()}"
    args = ["--nnodes", str(count), "--nproc-per-node", str(per_node), "--rdzv-backend", "c10d"]
    args += ["--rdzv-endpoint", endpoint, "--rdzv-id", f"fleet-test-{os.getpid()}-{time.monotonic_ns()}"]
    return [_torchrun(args, env) for _ in range(count)]


@needs_torch
def test_two_launches_are_two_nodes() -> None:
    results = _finish(_nodes(2, 2, _env(**SMALL)))  # what is asserted is the nodes and the pair, not the sizes
    _, data = _the_document(results)
    assert [c for c, _, _ in results] == [0, 0], [err[-2000:] for _, _, err in results]
    host = socket.gethostname()
    assert sorted(n["name"] for n in data["nodes"]) == [f"{host}#0", f"{host}#1"]  # one host, two nodes
    assert sorted(r for n in data["nodes"] for r in n["ranks"]) == [0, 1, 2, 3]
    assert all(len(n["ranks"]) == 2 for n in data["nodes"])
    assert [(p["round"], p["a"], p["b"]) for p in data["pairs"]] == [(1, f"{host}#0", f"{host}#1")]
    assert data["pairs"][0]["busbw_gbps"] > 0
    assert _phases(data)["pairs"] == "done"


@needs_torch
def test_a_flipped_rank_on_another_node_fails_its_fingerprint() -> None:
    """Two nodes of two ranks; the test hook flips a bit of rank 3's first product (node 1): rank 0 gathers every
    rank's digests once, and names node 1 alone; the ranks of node 0 agree with rank 2."""
    results = _finish(_nodes(2, 2, _env(**{FLIP_VAR: "3"}, **SMALL)))
    _, data = _the_document(results)
    host = socket.gethostname()
    assert [c for c, _, _ in results] == [1, 1], [err[-2000:] for _, _, err in results]
    found = [(f["id"], f["node"]) for f in data["findings"] if f["id"].startswith("fleet.fingerprint")]
    assert found == [("fleet.fingerprint-mismatch", f"{host}#1")]
    assert "rank 3" in next(f["message"] for f in data["findings"] if f["id"] == "fleet.fingerprint-mismatch")
    assert {n["name"]: n["verdict"] for n in data["nodes"]} == {f"{host}#0": "pass", f"{host}#1": "fail"}
    assert _phases(data)["fingerprint"] == "done"
    assert any(n.startswith("fingerprint: 3 of 4 ranks on 2 node(s) agree") for n in data["notes"])


@needs_torch
def test_a_slow_node_is_named_by_the_pairs() -> None:
    """Four one-rank nodes; node 2's ranks are late in every all-reduce (the test hook, one number): slow for
    real, on CPU processes too (its lateness scales with the step, where a fixed 50 ms went unseen)."""
    results = _finish(_nodes(4, 1, _env(**{SLOW_NODE_VAR: "2"}, **SMALL)))
    _, data = _the_document(results)
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
    results = _finish(_nodes(8, 1, _env(**{SLOW_NODE_VAR: "0,2,5"}, **SMALL)), timeout=240)
    _, data = _the_document(results)
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
    launch = _torchrun(["--standalone", "--nproc-per-node", "4"], _env(**{HANG_RANK_VAR: "3"}), "--deadline", "3")
    code, data = _the_document(_finish([launch]))
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


@needs_torch
def test_a_rank_that_never_reaches_the_store_is_named() -> None:
    """Rank 0 of a two-rank job whose rank 1 never starts (as under srun when a node does not come up)."""
    port = _free_port()
    env = _env(
        RANK="0",
        WORLD_SIZE="2",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigcheck", "fleet", "--cpu", "--json", "--deadline", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    code, data = _the_document(_finish([proc]))
    assert code == 1
    assert data["partial"] is True
    assert [(m["rank"], m["host"], m["phase"]) for m in data["missing_ranks"]] == [(1, None, None)]
    assert _phases(data)["rendezvous"] == "timed_out"
    assert data["nodes"] == []


@needs_torch
def test_sigterm_to_torchrun_ends_every_rank() -> None:
    """A job cancelled mid-measurement (Slurm and Kubernetes send SIGTERM to the launcher): every rank goes at
    once (torchrun forwards the SIGTERM, each rank raises at once and exits 143), rank 0 printing the document
    so far (the phase it cut marked failed), and nothing is left."""
    launch = _torchrun(["--standalone", "--nproc-per-node", "4"], _env(**{SLOW_NODE_VAR: "0"}))
    assert launch.stderr is not None
    for line in launch.stderr:
        if "fleet: allreduce" in line:  # measuring: every rank is inside the collectives
            break
    cancelled = time.monotonic()
    launch.send_signal(signal.SIGTERM)
    out, err = launch.communicate(timeout=60)
    assert time.monotonic() - cancelled < 15, err[-2000:]
    assert launch.returncode != 0
    data = json.loads(out)  # the partial document: the run was cut, what it had is reported
    assert data["schema"] == "rigcheck.fleet/1"
    assert data["partial"] is True
    assert data["verdict"] == "incomplete"
    assert {"name": "collectives", "status": "failed", "reason": "interrupted (SIGTERM)"}.items() <= next(
        p for p in data["phases"] if p["name"] == "collectives"
    ).items()
    _none_left([launch])
