"""`verify --level prolog`: the 10-s job-start check. Its three short steps for real on CPU ranks, the others left
out by the level; a driver that does not answer is a verdict in seconds, not a hang; processes stuck in D state on
/dev/nvidia* fail the node; a failed all-reduce gets its NCCL_P2P_DISABLE=1 control arm."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

import rigcheck.bench.verify.run as runner
from rigcheck.bench.verify.run import control_note, level_budget, run_verify
from rigcheck.bench.verify.steps import PROLOG, PROLOG_STEPS
from rigcheck.model.snapshot import Snapshot
from rigcheck.probe.deadline import NotAnswering, within
from rigcheck.probe.stuck import stuck_on_nvidia
from tests.support.cli import Rigcheck
from tests.support.counters import sample
from tests.support.snapshots import make_gpu, make_snapshot


def test_a_cpu_prolog_runs_its_three_steps_in_its_budget(rigcheck: Rigcheck) -> None:
    result = rigcheck("verify", "--level", "prolog", "--cpu", "--json")
    assert result.code == 0, result.stderr[-2000:]
    doc = result.json
    assert (doc["level"], doc["budget_s"]) == ("prolog", 10.0)
    steps = {s["name"]: s for s in doc["steps"]}
    assert [n for n, s in steps.items() if s["status"] == "done"] == ["doctor", *PROLOG_STEPS]
    left = {n: s["reason"] for n, s in steps.items() if s["status"] == "left_out"}
    assert sorted(left) == ["burn", "fingerprint", "hostlink", "p2p"]
    assert set(left.values()) == {"left out: the prolog level runs matmul, membw, allreduce only"}
    assert doc["elapsed_s"] <= doc["budget_s"]
    assert doc["verdict"] == "unjudged"  # CPU figures: never a pass, and nothing failed


def test_the_prolog_plan_fits_ten_seconds() -> None:
    assert level_budget("prolog", cpu=False) == level_budget("prolog", cpu=True) == 10.0
    assert sum(PROLOG.shares.values()) <= 1.0
    assert set(PROLOG.shares) == set(PROLOG_STEPS)
    assert PROLOG.control_arm


def test_a_level_the_cli_does_not_know_is_refused(rigcheck: Rigcheck) -> None:
    assert "quick, full or prolog" in rigcheck("verify", "--level", "fast").error()


def test_a_probe_that_never_returns_is_a_verdict_in_seconds(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigcheck.cli import common
    from rigcheck.probe import deadline

    def wedged(*_args: Any, **_kwargs: Any) -> Snapshot:
        time.sleep(3)  # a call blocked in the driver (the daemon thread is left behind, as in a real wedge)
        return Snapshot()

    monkeypatch.setattr(deadline, "PROBE_DEADLINE_S", 0.3)
    monkeypatch.setattr(common, "load_snapshot", wedged)
    started = time.monotonic()
    result = rigcheck("verify", "--level", "prolog", "--json")
    assert time.monotonic() - started < 2.5
    assert result.code == 1
    driver = next(c for c in result.json["node"] if c["id"] == "driver")
    assert driver["verdict"] == "fail"
    assert driver["detail"].startswith("driver not responding: the machine's probe did not return within 0.3 s")
    assert result.json["drain_reason"].startswith("rigcheck verify: fail driver not responding")
    assert "driver not responding" in result.stderr


def test_within_returns_raises_or_gives_up() -> None:
    assert within(1.0, lambda: 42, "a call") == 42
    with pytest.raises(ZeroDivisionError):
        within(1.0, lambda: 1 // 0, "a call")
    with pytest.raises(NotAnswering, match=r"a call did not return within 0\.1 s"):
        within(0.1, lambda: time.sleep(1), "a call")


def _process(proc: Path, pid: int, state: str, name: str, targets: list[str]) -> None:
    (proc / str(pid) / "fd").mkdir(parents=True)
    (proc / str(pid) / "stat").write_text(f"{pid} ({name}) {state} 1 {pid} {pid} 0 -1 4194560 123 0 0 0\n")
    for fd, target in enumerate(targets):
        os.symlink(target, proc / str(pid) / "fd" / str(fd))


def test_a_process_in_d_state_on_a_gpu_is_named(tmp_path: Path) -> None:
    _process(tmp_path, 4242, "D", "python3 train.py", ["/dev/null", "/dev/nvidia3", "/dev/nvidiactl"])
    _process(tmp_path, 5151, "D", "kworker/u8:2", ["/dev/null"])  # blocked, but not on a GPU
    _process(tmp_path, 6161, "S", "python3", ["/dev/nvidia0"])  # on a GPU, but sleeping as it may
    (tmp_path / "self").mkdir()
    scan = stuck_on_nvidia(tmp_path)
    assert scan.stuck == ["pid 4242 (python3 train.py) in D state on /dev/nvidia3, /dev/nvidiactl"]
    assert scan.unreadable == 0


def test_d_state_processes_fail_the_node() -> None:
    stuck = ["pid 7 (python3) in D state on /dev/nvidia0"]
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True, level="prolog", only=["membw"], stuck=stuck)
    driver = next(c for c in doc.node if c.id == "driver")
    assert driver.verdict == "fail"
    assert "pid 7 (python3) in D state on /dev/nvidia0" in driver.detail
    assert doc.verdict == "fail"


def test_a_failed_all_reduce_is_run_again_without_p2p(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control arm on a GPU node: the first all-reduce fails, the one with NCCL_P2P_DISABLE=1 passes."""
    calls: list[dict[str, str] | None] = []

    def collective(_op: str, **kwargs: Any) -> Any:
        calls.append(kwargs.get("env"))
        error = None if kwargs.get("env") else "rank 1 exited with code 1: NCCL error: unhandled system error"
        doc = runner.CollectiveDocument.model_construct(error=error, results=[], partial=error is not None)
        return doc, ""

    monkeypatch.setattr(runner, "run_collective", collective)
    snap = make_snapshot([make_gpu(0), make_gpu(1)])
    doc = run_verify(snapshot=snap, findings=[], level="prolog", only=["allreduce"])
    assert calls == [None, {"NCCL_P2P_DISABLE": "1"}]
    assert next(s for s in doc.steps if s.name == "allreduce").status == "failed"
    assert control_note(None) in doc.notes


def test_the_control_arm_says_what_it_rules_out() -> None:
    assert "the peer-to-peer path is what fails" in control_note(None)
    assert "not the P2P path" in control_note("rank 0 hung")


def test_the_bracket_reaches_the_document_and_fails_the_gpu() -> None:
    readings = iter(([sample(0, 0.0, 0), sample(1, 0.0, 0)], [sample(0, 1.0, 0), sample(1, 1.0, 40_000)]))
    doc = run_verify(
        snapshot=Snapshot(),
        findings=[],
        cpu=True,
        level="prolog",
        only=["matmul"],
        read_counters=lambda: next(readings),
    )
    checks = {g.index: next(c for c in g.checks if c.id == "counters") for g in doc.gpus}
    assert checks[0].verdict == "pass"
    assert checks[1].verdict == "fail"
    assert doc.verdict == "fail"
    assert doc.drain_reason is not None
    assert "rank1 counters error counters rose" in doc.drain_reason


def test_a_counter_reading_that_does_not_answer_is_the_driver_s() -> None:
    from rigcheck.errors import NotAnswering, ProbeError

    def wedged() -> list[Any]:
        raise NotAnswering("NVML's counter reading did not return within 5 s (NVML or the driver is blocked)")

    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True, level="prolog", only=["membw"], read_counters=wedged)
    driver = next(c for c in doc.node if c.id == "driver")
    assert driver.verdict == "fail"
    assert "NVML's counter reading did not return within 5 s" in driver.detail

    def unsupported() -> list[Any]:
        raise ProbeError("NVML: Not Supported")

    doc = run_verify(
        snapshot=Snapshot(), findings=[], cpu=True, level="prolog", only=["membw"], read_counters=unsupported
    )
    assert not [c for c in doc.node if c.id == "driver"]
    assert "error counters not read: NVML: Not Supported" in doc.notes
