"""The benchmark launcher, for real: two spawned CPU processes with gloo (no GPU needed).

Each test ends by checking that no worker process is left behind.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from rigcheck.bench.launcher import (
    LaunchOutcome,
    WorkerContext,
    exit_text,
    free_port,
    in_launched_job,
    launch,
    one_line,
    setup_budget,
)


def _descendants(pid: int) -> list[int]:
    """Living descendants of ``pid`` (from /proc), except multiprocessing's own resource tracker."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # the process ended while we looked
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if state == "Z" or b"resource_tracker" in cmdline:
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def assert_no_worker_left() -> None:
    assert multiprocessing.active_children() == []
    assert _descendants(os.getpid()) == []


def _launch(fn: Any, payload: Any = None, **kwargs: Any) -> LaunchOutcome:
    options: dict[str, Any] = {"world_size": 2, "cpu": True, "timeout_s": 60.0}
    options.update(kwargs)
    outcome = launch(fn, payload, **options)
    assert_no_worker_left()
    return outcome


# --- workers (module level: spawn pickles them by name) -----------------------------------------------


def report_worker(ctx: WorkerContext, payload: Any) -> None:
    import torch
    import torch.distributed as dist

    total = torch.tensor([float(ctx.rank + 1)])
    dist.all_reduce(total)
    ctx.progress(f"rank {ctx.rank} here")
    ctx.report(
        {
            "rank": ctx.rank,
            "world_size": ctx.world_size,
            "backend": ctx.backend,
            "device": str(ctx.device),
            "sum": float(total.item()),
            "env": os.environ.get("RIGCHECK_TEST_ENV"),
            "payload": payload,
        }
    )


def raise_worker(ctx: WorkerContext, payload: Any) -> None:
    import torch.distributed as dist

    if ctx.rank == 0:
        ctx.report({"step": 0})
    dist.barrier()
    if ctx.rank == 1:
        raise ValueError("boom on purpose")
    dist.barrier()  # rank 0 waits for a peer that has gone
    ctx.report({"step": 1})


def die_worker(ctx: WorkerContext, how: str) -> None:
    import torch.distributed as dist

    if ctx.rank == 0:
        ctx.report({"step": 0})
    dist.barrier()
    if ctx.rank == 1:
        if how == "exit":
            os._exit(3)
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()
    ctx.report({"step": 1})


def hang_worker(ctx: WorkerContext, payload: Any) -> None:
    if ctx.rank == 0:
        ctx.report({"step": 0})
        return
    time.sleep(600)


def stop_worker(ctx: WorkerContext, payload: Any) -> None:
    """Rank 1 stops (SIGSTOP) after its phase, as a hung rank; rank 0 goes one phase further and waits."""
    ctx.phase("allreduce 1 KiB")
    if ctx.rank == 1:
        os.kill(os.getpid(), signal.SIGSTOP)
    ctx.phase("allreduce 2 KiB")
    time.sleep(600)


def report_then_raise_worker(ctx: WorkerContext, payload: Any) -> None:
    ctx.report({"step": 0})
    raise RuntimeError("boom")


def progress_then_hang_worker(ctx: WorkerContext, payload: Any) -> None:
    ctx.progress("started")
    time.sleep(600)


def nccl_log_worker(ctx: WorkerContext, payload: Any) -> None:
    # gloo writes no NCCL log: stand in for NCCL by writing where NCCL_DEBUG_FILE says, as NCCL would.
    path = os.environ["NCCL_DEBUG_FILE"].replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))
    Path(path).write_text(f"fake NCCL INFO line from rank {ctx.rank}\n")
    ctx.report({"rank": ctx.rank, "nccl_debug": os.environ.get("NCCL_DEBUG"), "log_dir": str(Path(path).parent)})


def stuck_at_exit_worker(ctx: WorkerContext, payload: Any) -> None:
    """Reports, then cannot exit: a non-daemon thread holds the interpreter open, as a teardown that hangs
    in destroy_process_group would."""
    import threading

    ctx.report({"rank": ctx.rank})
    threading.Thread(target=time.sleep, args=(600,), daemon=False).start()


def print_worker(ctx: WorkerContext, payload: Any) -> None:
    print(f"stdout of rank {ctx.rank}", flush=True)  # what NCCL_DEBUG=INFO would print
    ctx.report({"rank": ctx.rank})


# --- tests -------------------------------------------------------------------------------------------


def test_workers_report_rows_progress_and_see_env() -> None:
    lines: list[str] = []
    alive: list[int] = []

    def progress(line: str) -> None:
        lines.append(line)
        alive.append(len(_descendants(os.getpid())))

    outcome = _launch(report_worker, {"x": 1}, env={"RIGCHECK_TEST_ENV": "set-by-test"}, on_progress=progress)
    assert outcome.error is None
    assert outcome.partial is False
    assert outcome.nccl_log == ""
    assert sorted(r["rank"] for r in outcome.rows) == [0, 1]
    for row in outcome.rows:
        assert row["sum"] == 3.0  # 1 + 2: the two ranks really talked
        assert row["env"] == "set-by-test"
        assert row["backend"] == "gloo"
        assert row["device"] == "cpu"
        assert row["world_size"] == 2
        assert row["payload"] == {"x": 1}
    assert sorted(lines) == ["rank 0 here", "rank 1 here"]
    assert alive[0] >= 1  # the process check sees workers while they run (so "none left" means something)
    assert outcome.wall_s > 0


def test_a_worker_that_raises_names_its_rank_and_keeps_rows() -> None:
    outcome = _launch(raise_worker)
    assert outcome.partial is True
    assert outcome.error == "rank 1 failed: ValueError: boom on purpose"
    assert outcome.rows == [{"step": 0}]


@pytest.mark.parametrize(
    ("how", "expected"), [("exit", "exited with code 3"), ("kill", "exited with code -9 (SIGKILL)")]
)
def test_a_worker_that_dies_names_its_rank_and_keeps_rows(how: str, expected: str) -> None:
    outcome = _launch(die_worker, how)
    assert outcome.partial is True
    assert outcome.error == f"rank 1 {expected}"
    assert "\n" not in outcome.error
    assert outcome.rows == [{"step": 0}]


def test_a_worker_that_hangs_is_ended_at_the_timeout() -> None:
    start = time.monotonic()
    # With a set-up budget the 5 s count from when both workers are in the group, however long a loaded
    # machine takes to start them (the hang itself is forever: a longer timeout would only wait longer).
    with setup_budget(60.0) as setup:
        outcome = _launch(hang_worker, timeout_s=5.0)
    took = time.monotonic() - start - setup.used_s
    assert outcome.partial is True
    assert outcome.error is not None
    # the hung rank named, with its pid and the phase it last reached
    assert outcome.error.startswith("rank 1 (pid ")
    assert " did not finish within 5 s: last phase 'started', silent for " in outcome.error
    assert outcome.rows == [{"step": 0}]
    assert 5.0 <= took < 20.0


def test_a_stopped_worker_is_named_with_its_pid_and_phase() -> None:
    start = time.monotonic()
    with setup_budget(60.0) as setup:  # the 5 s count from when both workers are in the group, as above
        outcome = _launch(stop_worker, timeout_s=5.0)
    assert outcome.error is not None
    assert outcome.error.startswith("rank 1 (pid ")
    assert "did not finish within 5 s: stopped (process state T) at 'allreduce 1 KiB'" in outcome.error
    assert outcome.error.endswith("; rank 0 waited at 'allreduce 2 KiB'")
    assert time.monotonic() - start - setup.used_s < 5.0 + 3.0  # a stopped worker is continued: it goes at once


def test_a_worker_stuck_after_it_delivered_does_not_make_the_run_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.bench import launcher

    monkeypatch.setattr(launcher, "EXIT_GRACE_S", 0.5)
    start = time.monotonic()
    outcome = _launch(stuck_at_exit_worker, timeout_s=60.0)
    assert outcome.partial is False
    assert outcome.error is None
    assert sorted(r["rank"] for r in outcome.rows) == [0, 1]
    assert time.monotonic() - start < 30.0  # ended after the grace, long before the timeout


def test_worker_stdout_goes_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """A library printing in a worker must not land in the parent's stdout (a --json document)."""
    outcome = _launch(print_worker)
    assert outcome.error is None
    out, err = capfd.readouterr()
    assert "stdout of rank" not in out
    assert "stdout of rank 0" in err
    assert "stdout of rank 1" in err


def test_ctrl_c_ends_every_worker_and_keeps_the_rows() -> None:
    def interrupt(_: str) -> None:
        raise KeyboardInterrupt

    outcome = launch(progress_then_hang_worker, None, world_size=2, cpu=True, timeout_s=60.0, on_progress=interrupt)
    assert_no_worker_left()
    assert outcome.partial is True
    assert outcome.error == "interrupted (SIGINT)"


def test_sigterm_as_the_cli_raises_it_is_named() -> None:
    from rigcheck.errors import Interrupted

    def interrupt(_: str) -> None:
        raise Interrupted(signal.SIGTERM)

    outcome = launch(progress_then_hang_worker, None, world_size=2, cpu=True, timeout_s=60.0, on_progress=interrupt)
    assert_no_worker_left()
    assert (outcome.partial, outcome.error) == (True, "interrupted (SIGTERM)")


def test_nccl_debug_sets_the_variables_and_returns_every_ranks_log() -> None:
    outcome = _launch(nccl_log_worker, nccl_debug=True)
    assert outcome.error is None
    assert {r["nccl_debug"] for r in outcome.rows} == {"INFO"}
    assert "fake NCCL INFO line from rank 0\n" in outcome.nccl_log
    assert "fake NCCL INFO line from rank 1\n" in outcome.nccl_log
    assert not Path(outcome.rows[0]["log_dir"]).exists()  # the temporary folder is removed


def test_inside_a_torchrun_job_fn_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    monkeypatch.delenv("RIGCHECK_TEST_ENV", raising=False)
    assert in_launched_job()
    lines: list[str] = []
    outcome = launch(
        report_worker, "inline", world_size=7, cpu=True, timeout_s=30.0, env={"RIGCHECK_TEST_ENV": "x"},
        on_progress=lines.append,
    )  # fmt: skip
    assert outcome.error is None
    assert outcome.rows == [
        {"rank": 0, "world_size": 1, "backend": "gloo", "device": "cpu", "sum": 1.0, "env": "x", "payload": "inline"}
    ]
    assert lines == ["rank 0 here"]
    assert "RIGCHECK_TEST_ENV" not in os.environ  # restored afterwards
    assert not dist.is_initialized()  # the group it created is gone

    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    failed = launch(report_then_raise_worker, None, world_size=1, cpu=True, timeout_s=30.0)
    assert failed.partial is True
    assert failed.error == "rank 0 failed: RuntimeError: boom"
    assert failed.rows == [{"step": 0}]


def test_helpers() -> None:
    assert exit_text(3) == "exited with code 3"
    assert exit_text(-15) == "exited with code -15 (SIGTERM)"
    assert one_line(ValueError("two\nlines")) == "ValueError: two lines"
    assert not in_launched_job({"RANK": "0", "WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="world_size"):
        launch(report_worker, None, world_size=0, cpu=True, timeout_s=1.0)
