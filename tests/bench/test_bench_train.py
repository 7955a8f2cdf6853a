"""`rigcheck bench train`: the gpt2 DDP worker in-process (one gloo rank), then for real on two CPU processes.

Nothing here times anything against a threshold: the numbers are checked for shape and sanity (positive,
finite, consistent with each other), the arithmetic against hand-worked values.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
import torch.distributed as dist

from rigcheck.bench.launcher import WorkerContext
from rigcheck.bench.train import (
    METHOD_VERSION,
    TrainOptions,
    cpu_threads_per_rank,
    read_text_tokens,
    run_train,
    step_stats_ms,
    train_shape,
    train_worker,
)
from rigcheck.errors import InputError, UsageError
from rigcheck.model.bench import BENCH_SCHEMA
from tests.support.cli import Rigcheck

REPO = Path(__file__).resolve().parent.parent.parent
TEXT = REPO / "docs" / "design.md"  # English prose: a byte-level model learns its letter frequencies fast

ROW_KEYS = {
    "train_runtime_s",
    "samples_per_s",
    "tokens_per_s",
    "step_time_median_ms",
    "step_time_p10_ms",
    "step_time_p90_ms",
    "peak_memory_bytes",
    "loss_final",
}


@pytest.fixture
def one_rank(tmp_path: Path) -> Iterator[None]:
    """A gloo process group of one rank in this process (a FileStore: no port)."""
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def run_in_process(opts: TrainOptions) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    messages: list[str] = []
    ctx = WorkerContext(
        rank=0,
        world_size=1,
        local_rank=0,
        backend="gloo",
        device=torch.device("cpu"),
        on_row=rows.append,
        on_progress=messages.append,
    )
    train_worker(ctx, opts)
    return rows, messages


# --- pure pieces ----------------------------------------------------------------------------------------


def test_shapes_default_to_the_guide_and_to_tiny() -> None:
    full = train_shape(tiny=False)
    assert (full.steps, full.batch_size, full.seq_len, full.lr) == (200, 4, 1024, 5e-5)
    assert 0 < full.warmup < full.steps
    tiny = train_shape(tiny=True)
    assert (tiny.steps, tiny.batch_size, tiny.seq_len) == (10, 2, 64)
    assert train_shape(tiny=True, steps=1).warmup == 0  # a one-step run still has a timed step
    assert train_shape(tiny=False, steps=3, batch_size=1, seq_len=16).warmup == 2


def test_shape_rejects_what_gpt2_cannot_run() -> None:
    with pytest.raises(UsageError, match="1024"):
        train_shape(tiny=False, seq_len=2048)
    with pytest.raises(UsageError):
        train_shape(tiny=True, steps=0)


def test_step_statistics_by_hand() -> None:
    stats = step_stats_ms([float(v) for v in range(10, 0, -1)])  # 1..10, unsorted
    assert stats["step_time_median_ms"] == 5.5
    assert stats["step_time_p10_ms"] == pytest.approx(1.9)  # 1 + 0.9 x (2 - 1)
    assert stats["step_time_p90_ms"] == pytest.approx(9.1)
    assert (stats["step_time_min_ms"], stats["step_time_max_ms"]) == (1.0, 10.0)
    assert step_stats_ms([7.0])["step_time_p90_ms"] == 7.0


def test_text_file_problems_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_text_tokens(tmp_path / "missing.txt", 100)
    with pytest.raises(InputError, match="not a regular file"):
        read_text_tokens(tmp_path, 100)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        read_text_tokens(empty, 100)
    text = tmp_path / "t.txt"
    text.write_bytes("héllo world".encode())
    assert read_text_tokens(text, 4) == b"h\xc3\xa9l"  # bytes, cut at the limit


def test_cpu_ranks_share_the_cores() -> None:
    one = cpu_threads_per_rank(1)
    assert one >= 1
    assert cpu_threads_per_rank(2) == max(1, one // 2)
    assert cpu_threads_per_rank(10_000) == 1


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(UsageError, match=r"rigcheck\[train\]"):
        run_train(cpu=True, world_size=1, tiny=True, snapshot=None)


# --- the worker, in this process ---------------------------------------------------------------------------


@pytest.mark.usefixtures("one_rank")
def test_worker_reports_one_consistent_row() -> None:
    shape = train_shape(tiny=True, steps=6)
    threads = torch.get_num_threads()
    rows, messages = run_in_process(TrainOptions(shape=shape, bf16=False, tiny=True, text=None))
    assert torch.get_num_threads() == threads  # put back after the run

    assert len(rows) == 1
    row = rows[0]
    assert row.keys() >= ROW_KEYS
    assert row["method_version"] == METHOD_VERSION
    assert (row["backend"], row["world_size"], row["dtype"], row["data"]) == ("gloo", 1, "fp32", "generated tokens")
    assert row["steps"] == 6
    assert row["timed_steps"] == row["repeats"] == 6 - shape.warmup
    assert row["unit"] == "ms"
    assert row["value"] == row["step_time_median_ms"]
    assert 0 < row["step_time_p10_ms"] <= row["step_time_median_ms"] <= row["step_time_p90_ms"]
    # Rates follow from the runtime: batch x world x steps / runtime, and tokens = samples x seq_len.
    assert row["train_runtime_s"] > 0
    assert row["samples_per_s"] == pytest.approx(2 * 1 * 6 / row["train_runtime_s"])
    assert row["tokens_per_s"] == pytest.approx(row["samples_per_s"] * 64)
    # The runtime covers every step, so it is at least the timed steps' sum.
    assert row["train_runtime_s"] * 1e3 >= row["timed_steps"] * row["step_time_min_ms"]
    assert row["peak_memory_bytes"] > 10 * 2**20
    assert "ru_maxrss" in row["peak_memory_kind"]
    assert math.isfinite(row["loss_final"])
    assert row["correct"] is True
    # Random tokens over 512 ids: the loss starts near ln(512) = 6.24.
    assert row["loss_first"] == pytest.approx(math.log(512), abs=0.5)
    assert messages[0].startswith("train: gpt2 (tiny)")
    assert any("step 5/6" in m for m in messages)


@pytest.mark.usefixtures("one_rank")
def test_loss_falls_on_text() -> None:
    shape = train_shape(tiny=True, steps=12)
    text = read_text_tokens(TEXT, shape.steps * shape.batch_size * shape.seq_len)
    rows, _ = run_in_process(TrainOptions(shape=shape, bf16=False, tiny=True, text=text))
    row = rows[0]
    assert row["data"] == "text bytes"
    assert row["loss_decreased"] is True
    assert row["loss_final"] < row["loss_first"] - 0.3


@pytest.mark.usefixtures("one_rank")
def test_bf16_autocast_runs_and_says_so() -> None:
    shape = train_shape(tiny=True, steps=3)
    rows, _ = run_in_process(TrainOptions(shape=shape, bf16=True, tiny=True, text=b"short text, repeated"))
    assert rows[0]["dtype"] == "bf16 autocast"
    assert rows[0]["loss_finite"] is True


# --- for real: two CPU processes through the launcher -------------------------------------------------------


def test_cli_train_tiny_on_two_cpu_processes(rigcheck: Rigcheck) -> None:
    result = rigcheck("bench", "train", "--tiny", "--cpu", "--world-size", "2", "--steps", "4", "--json")
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == BENCH_SCHEMA
    assert doc["benchmark"] == "train"
    assert (doc["partial"], doc["error"]) == (False, None)
    assert (doc["backend"], doc["world_size"]) == ("gloo", 2)
    assert doc["method"]["method_version"] == METHOD_VERSION
    assert doc["method"]["timer"] == "perf_counter"
    assert doc["versions"]["transformers"]
    assert isinstance(doc["snapshot"], dict)
    assert doc["notes"]
    assert "nccl_log" not in doc
    (row,) = doc["results"]
    for key in ROW_KEYS:
        assert isinstance(row[key], (int, float)), key
        assert row[key] > 0, key
    assert row["world_size"] == 2
    assert row["global_batch_size"] == 4
    assert row["samples_per_s"] == pytest.approx(2 * 2 * 4 / row["train_runtime_s"])
    assert multiprocessing.active_children() == []
    # Progress went to stderr (stdout parsed as JSON above).
    assert "train: gpt2 (tiny)" in result.stderr


def test_cli_bad_text_path_is_one_line_and_exit_2(tmp_path: Path, rigcheck: Rigcheck) -> None:
    missing = tmp_path / "nope.txt"
    result = rigcheck("bench", "train", "--tiny", "--cpu", "--text", str(missing))
    assert result.code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "nope.txt" in lines[0]
    assert "no such file" in lines[0]


def test_a_run_that_times_out_is_partial_and_names_the_rank() -> None:
    # The workers cannot even import torch in 1 s; the document says so instead of raising.
    doc, _ = run_train(cpu=True, world_size=2, tiny=True, steps=10_000, timeout_s=1.0, snapshot=None)
    assert doc.partial is True
    assert doc.results == []
    assert doc.error is not None
    assert "rank" in doc.error
    assert multiprocessing.active_children() == []


@pytest.mark.gpu
def test_gpu_train_tiny_on_one_gpu_with_nccl() -> None:
    """The CUDA path end to end: NCCL on one GPU, CUDA-event step times, peak memory, both precisions."""
    for bf16 in (False, True):
        document, _ = run_train(cpu=False, world_size=1, tiny=True, steps=8, bf16=bf16, timeout_s=300.0, snapshot=None)
        doc = document.to_json_dict()
        assert (doc["partial"], doc["error"]) == (False, None)
        assert (doc["backend"], doc["world_size"]) == ("nccl", 1)
        (row,) = doc["results"]
        for key in ROW_KEYS:
            assert row[key] > 0, key
        assert math.isfinite(row["loss_final"])
    assert multiprocessing.active_children() == []
