"""Collective benchmarks for real on two CPU processes (gloo), the worker in-process, and the CLI commands."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

import torch

from rigcheck.bench import collectives
from rigcheck.bench.collectives import (
    CPU_MAX_BYTES,
    EMULATED_NOTE,
    EVENT_RESOLUTION_S,
    FLOOR_NOTE,
    METHOD_VERSION,
    CollectivePayload,
    collective_worker,
    default_sizes,
    resolve_world_size,
    run_collective,
    sweep,
    valid_size,
    valid_sizes,
)
from rigcheck.bench.formulas import busbw_factor
from rigcheck.bench.launcher import WorkerContext, free_port, launch, setup_budget
from rigcheck.bench.timing import time_across_ranks, time_repetitions, timer_name
from rigcheck.cli.bench_collectives import parse_size
from rigcheck.errors import UsageError
from rigcheck.model import snapshot_from_json, snapshot_to_dict
from rigcheck.model.bench import BENCH_SCHEMA
from tests.bench.test_bench_launcher import assert_no_worker_left
from tests.support.cli import Rigcheck

SNAPSHOT = snapshot_from_json(
    (Path(__file__).parent.parent / "fixtures" / "snapshots" / "2x-titan-rtx-nv2.json").read_text(encoding="utf-8")
)

CONTRACT_KEYS = {"op", "size_bytes", "time_us_median", "algbw_gbps", "busbw_gbps", "world_size", "backend", "correct"}
GENERIC_KEYS = {
    "name", "unit", "value", "median", "min", "max", "repeats", "warmup", "sizes", "backend", "world_size",
    "method_version",
}  # fmt: skip


def check_row(row: dict[str, Any], op: str, world_size: int, backend: str = "gloo") -> None:
    assert set(row) - {"note"} == CONTRACT_KEYS | GENERIC_KEYS
    assert row["op"] == row["name"] == op
    assert row["unit"] == "GB/s"
    assert row["correct"] is True
    assert row["backend"] == backend
    assert row["world_size"] == world_size
    assert row["method_version"] == METHOD_VERSION
    assert row["sizes"] == [row["size_bytes"]]
    assert row["time_us_median"] > 0
    assert row["algbw_gbps"] == pytest.approx(row["size_bytes"] / (row["time_us_median"] * 1e-6) / 1e9, rel=1e-9)
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * busbw_factor(op, world_size), rel=1e-9)
    assert row["value"] == row["median"] == row["busbw_gbps"]
    assert row["min"] <= row["busbw_gbps"] <= row["max"]


# --- sizes and options -------------------------------------------------------------------------------


def test_sweeps_double_from_min_to_max() -> None:
    assert sweep(8, 64) == [8, 16, 32, 64]
    assert sweep(8, 100) == [8, 16, 32, 64]
    assert sweep(1024, 1024) == [1024]
    assert default_sizes(cpu=True)[0] == 8
    assert default_sizes(cpu=True)[-1] == CPU_MAX_BYTES == 16 * 2**20
    assert default_sizes(cpu=False)[-1] == 2**30
    assert len(default_sizes(cpu=False)) == 28  # 2^3 … 2^30
    with pytest.raises(UsageError):
        sweep(64, 8)


def test_sizes_are_made_valid_like_nccl_tests() -> None:
    assert valid_size("allreduce", 8, 2) == 8
    assert valid_size("allreduce", 1, 2) == 4  # below one float32: the smallest valid size
    assert valid_size("allreduce", 10, 2) == 8  # whole elements
    assert valid_size("broadcast", 2, 8) == 4
    assert valid_size("allgather", 8, 2) == 8  # one element per rank
    assert valid_size("allgather", 8, 3) == 12  # below 4 × n: rounded up to one element per rank
    assert valid_size("reducescatter", 100, 3) == 96  # whole per-rank parts
    assert valid_sizes("allgather", [8, 16, 32, 64], 8) == [32, 64]  # duplicates dropped
    with pytest.raises(UsageError):
        valid_sizes("allreduce", [0], 2)


@pytest.mark.parametrize(("text", "size"), [("8", 8), ("1K", 1024), ("16M", 16 << 20), ("1G", 1 << 30), ("4kib", 4096)])
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "1X", "-8", "1.5M", "0"])
def test_parse_size_refuses_nonsense(text: str) -> None:
    with pytest.raises(UsageError, match="--max-bytes"):
        parse_size(text, "--max-bytes")


def test_world_size_defaults() -> None:
    assert resolve_world_size(True, None) == 2
    assert resolve_world_size(True, 3) == 3
    if not torch.cuda.is_available():
        with pytest.raises(UsageError, match="--cpu"):
            resolve_world_size(False, None)


def test_unknown_op_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown collective"):
        run_collective("alltoall", cpu=True, world_size=2, sizes=[8], warmup=0, repeats=1, timeout_s=10, snapshot=None)


# --- timing ------------------------------------------------------------------------------------------


def slow_rank_worker(ctx: WorkerContext, payload: Any) -> None:
    """Rank 1 takes 50 ms per repetition, rank 0 none: every rank must see 50 ms (the slowest rank's time)."""
    delay = 0.05 if ctx.rank == 1 else 0.0
    times = time_across_ranks(lambda: time.sleep(delay), warmup=1, repeats=3, device=ctx.device)
    ctx.report({"rank": ctx.rank, "times": times})


def test_each_repetition_is_timed_as_its_slowest_rank() -> None:
    outcome = launch(slow_rank_worker, None, world_size=2, cpu=True, timeout_s=60)
    assert_no_worker_left()
    assert outcome.error is None
    by_rank = {row["rank"]: row["times"] for row in outcome.rows}
    assert by_rank[0] == by_rank[1]  # all ranks agree
    assert len(by_rank[0]) == 3
    assert all(0.05 <= t < 1.0 for t in by_rank[0])


def test_time_repetitions_runs_warmup_then_repeats() -> None:
    calls: list[int] = []
    times = time_repetitions(lambda: calls.append(1), warmup=2, repeats=5, device=torch.device("cpu"))
    assert len(calls) == 7
    assert len(times) == 5
    assert all(t >= 0 for t in times)
    assert timer_name(False) == "perf_counter"
    assert timer_name(True) == "cuda_events"
    with pytest.raises(ValueError, match="repeats"):
        time_repetitions(lambda: None, warmup=0, repeats=0, device=torch.device("cpu"))


# --- the worker in this process (a one-rank gloo group) ------------------------------------------------


@pytest.fixture
def one_rank() -> Iterator[tuple[WorkerContext, list[dict[str, Any]], list[str]]]:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    ctx = WorkerContext(
        rank=0, world_size=1, local_rank=0, backend="gloo", device=torch.device("cpu"), on_row=rows.append,
        on_progress=lines.append,
    )  # fmt: skip
    try:
        yield ctx, rows, lines
    finally:
        dist.destroy_process_group()


def test_worker_floors_times_under_the_event_resolution(
    one_rank: tuple[WorkerContext, list[dict[str, Any]], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rank on NCCL: the in-place all-reduce is a no-op and CUDA events can read 0.0 ms. That must give
    a row (busbw 0, the time at the timer's resolution, a note), not a division by zero."""
    from rigcheck.bench import collectives

    monkeypatch.setattr(collectives, "time_across_ranks", lambda *a, **k: [0.0, 0.0, 2e-6])
    ctx, rows, lines = one_rank
    collective_worker(ctx, CollectivePayload(op="broadcast", sizes=(4096,), warmup=0, repeats=3))
    (row,) = rows
    check_row(row, "broadcast", 1)
    assert row["time_us_median"] == pytest.approx(EVENT_RESOLUTION_S * 1e6)
    assert row["busbw_gbps"] == 0.0  # one rank: nothing crosses a bus
    assert row["note"] == FLOOR_NOTE
    assert "busbw 0.000" in lines[-1]


@pytest.mark.parametrize(
    ("op", "impl"),
    [
        ("allreduce", None),
        ("broadcast", None),
        ("allgather", "tensor"),
        ("allgather", "list"),
        ("reducescatter", "tensor"),
        ("reducescatter", "all_reduce"),
    ],
)
def test_worker_in_process(
    one_rank: tuple[WorkerContext, list[dict[str, Any]], list[str]], op: Any, impl: str | None
) -> None:
    ctx, rows, lines = one_rank
    collective_worker(ctx, CollectivePayload(op=op, sizes=(4, 4096), warmup=1, repeats=3, impl=impl))
    assert [r["size_bytes"] for r in rows] == [4, 4096]
    for row in rows:
        check_row(row, op, 1)
        assert row["repeats"] == 3
        assert row["warmup"] == 1
        assert ("note" in row) == (impl == "all_reduce")
    assert len(lines) == 2
    assert lines[0].startswith(f"{op} 4 B: ")


def test_wrong_data_is_caught(
    one_rank: tuple[WorkerContext, list[dict[str, Any]], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, rows, lines = one_rank
    real_run = collectives._Case.run

    def corrupting_run(self: Any) -> None:
        real_run(self)
        self.recv[-1] += 1.0  # one element off by one

    monkeypatch.setattr(collectives._Case, "run", corrupting_run)
    collective_worker(ctx, CollectivePayload(op="allgather", sizes=(64,), warmup=0, repeats=1))
    assert rows[0]["correct"] is False
    assert lines[0].endswith("WRONG DATA")


# --- for real: two processes -----------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter", "broadcast"])
def test_run_collective_on_two_cpu_processes(op: str) -> None:
    lines: list[str] = []
    document, nccl_log = run_collective(
        op, cpu=True, world_size=2, sizes=[1, 8, 1000], warmup=1, repeats=3, timeout_s=60, snapshot=SNAPSHOT,
        on_progress=lines.append,
    )  # fmt: skip
    assert_no_worker_left()
    assert nccl_log == ""  # not asked for
    doc = document.to_json_dict()
    assert doc["schema"] == BENCH_SCHEMA
    assert doc["benchmark"] == op
    assert doc["partial"] is False
    assert doc["error"] is None
    assert doc["backend"] == "gloo"
    assert doc["world_size"] == 2
    assert doc["method"] == {
        "method_version": METHOD_VERSION, "warmup": 1, "repeats": 3, "statistic": "median", "timer": "perf_counter"
    }  # fmt: skip
    assert doc["versions"]["torch"] == str(torch.__version__)
    assert doc["snapshot"] == snapshot_to_dict(SNAPSHOT)  # the machine the caller handed in, not probed here
    assert doc["notes"] == []  # torch 2.13's gloo has every collective natively (no emulation)
    # 1 B becomes the smallest valid size: one float32 (allreduce, broadcast) or one per rank (same as 8 B)
    expected = [4, 8, 1000] if op in ("allreduce", "broadcast") else [8, 1000]
    assert [r["size_bytes"] for r in doc["results"]] == expected
    for row in doc["results"]:
        check_row(row, op, 2)
        assert "note" not in row
    assert len(lines) == len(expected)


@pytest.mark.parametrize(
    ("op", "impl"), [("allgather", "list"), ("reducescatter", "list"), ("reducescatter", "all_reduce")]
)
def test_fallback_implementations_are_correct_on_two_processes(op: Any, impl: str) -> None:
    payload = CollectivePayload(op=op, sizes=(8, 4096), warmup=0, repeats=2, impl=impl)
    outcome = launch(collective_worker, payload, world_size=2, cpu=True, timeout_s=60)
    assert_no_worker_left()
    assert outcome.error is None
    assert len(outcome.rows) == 2
    for row in outcome.rows:
        check_row(row, op, 2)
        assert row.get("note") == (EMULATED_NOTE if impl == "all_reduce" else None)


# --- the commands --------------------------------------------------------------------------------------


def test_contract_allreduce_cpu_world_size_2_json(rigcheck: Rigcheck) -> None:
    result = rigcheck("bench", "allreduce", "--cpu", "--world-size", "2", "--json")
    assert_no_worker_left()
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "rigcheck.bench/1"
    assert [r["size_bytes"] for r in doc["results"]] == default_sizes(cpu=True)
    for row in doc["results"]:
        check_row(row, "allreduce", 2)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert row["repeats"] == 10
        assert row["warmup"] == 5
    assert "allreduce 16 MiB: " in result.stderr  # progress, one line per size, on stderr


def test_table_output(rigcheck: Rigcheck) -> None:
    args = [
        "broadcast",
        "--cpu",
        "-n",
        "2",
        "--min-bytes",
        "1K",
        "--max-bytes",
        "4K",
        "--repeats",
        "2",
        "--warmup",
        "0",
    ]
    result = rigcheck("bench", *args)
    assert result.code == 0, result.stderr
    out = result.stdout
    for header in ("size", "count (float32)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "correct"):
        assert header in out
    assert "broadcast (from rank 0" in out
    assert "gloo, world size 2; 0 warm-up, 2 timed, median (perf_counter); method collectives-1" in out
    for size, count in (("1 KiB", "256"), ("2 KiB", "512"), ("4 KiB", "1024")):
        line = next(line for line in out.splitlines() if line.strip().startswith(size))
        assert count in line.split()
        assert line.rstrip().endswith("yes")


def test_a_killed_worker_gives_exit_1_one_line_and_partial_rows(
    monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    monkeypatch.setenv("RIGCHECK_BENCH_FAIL_RANK", "1")
    monkeypatch.setenv("RIGCHECK_BENCH_FAIL_AFTER", "2")
    args = ["allreduce", "--cpu", "--world-size", "2", "--max-bytes", "1K", "--repeats", "2", "--warmup", "0", "--json"]
    result = rigcheck("bench", *args)
    assert_no_worker_left()
    assert result.code == 1
    doc = json.loads(result.stdout)
    assert doc["partial"] is True
    assert doc["error"] == "rank 1 exited with code -9 (SIGKILL)"
    assert [r["size_bytes"] for r in doc["results"]] == [8, 16]  # the two sizes measured before it died
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == ["rigcheck: error: rank 1 exited with code -9 (SIGKILL) (partial results kept)"]
    assert "Traceback" not in result.stderr


def test_a_hung_worker_is_named_at_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_BENCH_FAIL_RANK", "1")
    monkeypatch.setenv("RIGCHECK_BENCH_FAIL_AFTER", "1")
    monkeypatch.setenv("RIGCHECK_BENCH_FAIL_MODE", "hang")
    with setup_budget(60.0):  # the 5 s count from when both workers are in the group, however slow their start
        document, _ = run_collective(
            "allreduce", cpu=True, world_size=2, sizes=[8, 16], warmup=0, repeats=1, timeout_s=5, snapshot=None
        )
    assert_no_worker_left()
    doc = document.to_json_dict()
    assert doc["partial"] is True
    # rank 0 waits in the next collective for rank 1: rank 1, a phase behind, is the one named
    assert doc["error"].startswith("rank 1 (pid ")
    assert "did not finish within 5 s: last phase 'allreduce 8 B'" in doc["error"]
    assert doc["error"].endswith("; rank 0 waited at 'allreduce 16 B'")
    assert [r["size_bytes"] for r in doc["results"]] == [8]


def test_no_gpu_and_no_cpu_flag_follows_the_no_gpu_rule(rigcheck: Rigcheck) -> None:
    """No GPU at all: exit 1, as every command that reads the live machine (docs/commands.md), one line that
    points at --cpu, and no document on stdout."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = rigcheck("bench", "allreduce", "--json")
    assert result.code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("rigcheck: no NVIDIA GPU visible: ")
    assert "--cpu" in lines[0]


def test_bad_sizes_are_usage_errors(rigcheck: Rigcheck) -> None:
    assert "2X" in rigcheck("bench", "allgather", "--cpu", "--min-bytes", "2X").error()
    refused = rigcheck("bench", "allgather", "--cpu", "--min-bytes", "1M", "--max-bytes", "1K").error()
    assert "larger than --max-bytes" in refused


@pytest.mark.gpu
def test_allreduce_on_gpus_with_nccl() -> None:
    world_size = torch.cuda.device_count()
    document, _ = run_collective("allreduce", cpu=False, world_size=world_size, sizes=[8, 1 << 20, 64 << 20],
                                 warmup=2, repeats=5, timeout_s=120, snapshot=None)  # fmt: skip
    assert_no_worker_left()
    doc = document.to_json_dict()
    assert doc["error"] is None
    assert doc["backend"] == "nccl"
    assert doc["method"]["timer"] == "cuda_events"
    assert doc["versions"]["nccl"]
    assert [r["size_bytes"] for r in doc["results"]] == [8, 1 << 20, 64 << 20]
    for row in doc["results"]:
        check_row(row, "allreduce", world_size, backend="nccl")
