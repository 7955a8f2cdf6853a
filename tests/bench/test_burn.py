"""`rigcheck burn`: the workload's loop and accounting on CPU with tiny tensors, the whole run on CPU
devices with the fake NVML, and the command line without a GPU."""

from __future__ import annotations

import itertools
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from rigcheck.bench.burn import (
    GpuLoad,
    ProductRing,
    burn_loop,
    cuda_index,
    pick_size,
    tflops_first,
    tflops_per_second,
    tflops_sustained,
)
from rigcheck.cli import monitor as monitor_cmd
from rigcheck.cli.burn import burn_document, burn_exit_code
from rigcheck.errors import BenchError
from rigcheck.probe.nvml import NvmlPoller
from tests.conftest import nvidia_gpu_present
from tests.support.burn import cpu_burn
from tests.support.cli import Rigcheck
from tests.support.fakenvml import ECC_STORM_GPU, burn_gpu_lost, burn_power_capped_h100, ecc_storm

TELEMETRY = Path(__file__).parent.parent / "fixtures" / "corpus" / "telemetry"
GIB = 2**30


# --- accounting (pure) --------------------------------------------------------------------------------
def test_flops_are_spread_over_the_seconds_a_chunk_covers() -> None:
    chunks = [(0.0, 0.5, 1e12), (0.5, 1.5, 2e12), (1.5, 2.2, 0.7e12)]
    assert tflops_per_second(chunks) == pytest.approx([2.0, 1.5])  # 2.0-2.2 is not a whole second
    assert tflops_first(chunks, 10.0) == pytest.approx(3.7 / 2.2)
    assert tflops_first(chunks, 1.0) == pytest.approx(2.0)
    assert tflops_per_second([]) == []
    assert tflops_first([]) is None


def test_a_gap_between_chunks_counts_as_no_work() -> None:
    assert tflops_per_second([(0.0, 1.0, 5e12), (2.0, 3.0, 5e12)]) == pytest.approx([5.0, 0.0, 5.0])


def test_sustained_is_after_the_first_minute_or_the_last_half() -> None:
    long_run = [800.0] * 60 + [660.0] * 60 + [670.0] * 61
    assert tflops_sustained(long_run) == 670.0
    short = [800.0] * 30 + [660.0] * 30
    assert tflops_sustained(short) == 660.0
    assert tflops_sustained([700.0]) == 700.0
    assert tflops_sustained([]) is None


def test_size_follows_free_memory() -> None:
    # 11 matrices (A, B, the reference, a ring of 8) in a quarter of the free memory
    assert pick_size(80 * GIB, 2) == 8192
    assert pick_size(80 * GIB, 4) == 8192  # 11 x 256 MiB = 2.75 GiB of 20
    assert pick_size(6 * GIB, 2) == 8192  # 1.375 GiB of 1.5
    assert pick_size(5 * GIB, 2) == 4096
    assert pick_size(1 * GIB, 2) == 2048
    assert pick_size(256 * 2**20, 4) == 1024
    assert pick_size(0, 2) == 512


class _FakeCuda:
    """torch.cuda as far as ``cuda_index`` asks: CUDA's devices with their UUIDs (torch prints no "GPU-")."""

    def __init__(self, uuids: list[str | None]) -> None:
        self.uuids = uuids

    def device_count(self) -> int:
        return len(self.uuids)

    def get_device_properties(self, i: int) -> Any:
        return type("Props", (), {"uuid": self.uuids[i]})() if self.uuids[i] is not None else object()


def _fake_torch(uuids: list[str | None]) -> Any:
    return type("FakeTorch", (), {"cuda": _FakeCuda(uuids)})()


def test_cuda_index_matches_nvml_uuids_to_cuda_order() -> None:
    torch_ = _fake_torch(["bbbb-2", "aaaa-1"])  # CUDA orders the GPUs differently from NVML
    assert cuda_index(torch_, 0, "GPU-AAAA-1") == 1
    assert cuda_index(torch_, 1, "GPU-bbbb-2") == 0
    assert cuda_index(_fake_torch([None, None]), 1, "GPU-bbbb-2") == 1  # no UUIDs from CUDA: same index
    assert cuda_index(torch_, 1, None) == 1


def test_cuda_index_refuses_a_gpu_cuda_visible_devices_hides() -> None:
    # CUDA_VISIBLE_DEVICES=1 on a 2-GPU box: CUDA's device 0 is NVML's GPU 1. NVML's GPU 0 must not be
    # mapped to CUDA's device 0 (another card) just because the index exists.
    with pytest.raises(BenchError, match="not visible to CUDA"):
        cuda_index(_fake_torch(["bbbb-2"]), 0, "GPU-aaaa-1")


# --- the loop, on CPU ---------------------------------------------------------------------------------
class StepClock:
    """Each product takes 10 ms of fake time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _cpu_pair(n: int = 32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(n, n, generator=gen)
    b = torch.randn(n, n, generator=gen)
    return a, b, torch.matmul(a, b), torch.empty(n, n)


def _run_loop(fault_from: int | None, only: bool = False) -> tuple[GpuLoad, list[tuple[int, float]]]:
    """The loop on CPU tensors: each product takes 0.01 s on a fake clock; from product ``fault_from`` on
    (``only``: that product alone) the result has one element wrong."""
    a, b, reference, _ = _cpu_pair()
    ring = ProductRing(torch, a, b, reference, slots=4)
    clock = StepClock()
    calls = itertools.count(1)
    seen: list[tuple[int, float]] = []

    def product() -> None:
        ring.product()
        clock.now += 0.01
        n = next(calls)
        if fault_from is not None and (n == fault_from if only else n >= fault_from):
            ring.outputs[(n - 1) % 4][3, 7] += 1e-3  # the GPU got one element of this product wrong

    load = GpuLoad(index=2, dtype="fp32")
    burn_loop(
        load,
        product=product,
        check=ring.check,
        sync=lambda: None,
        flops_per_product=2.0 * 32**3,
        stop=threading.Event(),
        t0=0.0,
        duration_s=1.0,
        clock=clock,
        on_mismatch=lambda gl, at: seen.append((gl.index, at)),
    )
    return load, seen


def test_loop_recomputes_in_growing_chunks_and_matches_bit_for_bit() -> None:
    load, seen = _run_loop(fault_from=None)
    sizes = [round((stop - start) / 0.01) for start, stop, _ in load.chunks]
    assert sizes[:4] == [1, 4, 10, 10]  # grows to ~0.1 s chunks
    assert load.matmuls == sum(sizes)
    assert load.chunks[-1][1] >= 1.0 > load.chunks[-1][0]
    assert load.errors == 0
    assert load.checks == sum(min(n, 4) for n in sizes)  # the last 4 products of every chunk
    assert seen == []
    assert tflops_first(load.chunks) == pytest.approx(2.0 * 32**3 / 0.01 / 1e12)


def test_loop_counts_wrong_results_and_names_the_gpu() -> None:
    load, seen = _run_loop(fault_from=20)
    sizes = [round((stop - start) / 0.01) for start, stop, _ in load.chunks]
    ends = list(itertools.accumulate(sizes))
    # every checked product from the 20th on is wrong: the last min(size, 4) of each chunk, those >= 20
    expected = 0
    for size, end in zip(sizes, ends, strict=True):
        expected += sum(1 for p in range(end - min(size, 4) + 1, end + 1) if p >= 20)
    assert load.errors == expected > 0
    assert load.checks == sum(min(n, 4) for n in sizes)
    assert seen[0][0] == 2
    assert load.first_error_s == pytest.approx(seen[0][1])
    assert load.summary().errors == load.errors


def test_a_single_wrong_product_among_the_ring_is_caught() -> None:
    """One transient fault: found when it is one of the last products of its chunk, counted once."""
    load, seen = _run_loop(fault_from=14, only=True)  # chunks of 1, 4, 10: product 14 is 15 - 1, in the ring
    assert load.errors == 1
    assert len(seen) == 1
    missed, _ = _run_loop(fault_from=8, only=True)  # product 8 of the third chunk (6..15): overwritten unseen
    assert missed.errors == 0


def test_ring_checks_only_what_was_written_since_the_last_check() -> None:
    a, b, reference, _ = _cpu_pair()
    ring = ProductRing(torch, a, b, reference, slots=3)
    assert ring.check() == (0, 0)
    ring.product()
    ring.product()
    assert ring.check() == (0, 2)
    ring.outputs[0][0, 0] += 1.0  # a wrong value in a buffer already checked is not counted again
    assert ring.check() == (0, 0)
    for _ in range(5):
        ring.product()
    assert ring.check() == (0, 3)


def test_loop_stops_when_told() -> None:
    stop = threading.Event()
    stop.set()
    load = GpuLoad(index=0)
    burn_loop(
        load,
        product=lambda: None,
        check=lambda: (0, 1),
        sync=lambda: None,
        flops_per_product=1.0,
        stop=stop,
        t0=0.0,
        duration_s=100.0,
    )
    assert load.chunks == []


# --- the whole run on CPU devices with the fake NVML -------------------------------------------------


def test_run_burn_on_cpu_devices_gives_analysis_throughput_and_errors() -> None:
    lines: list[str] = []
    result = cpu_burn(burn_power_capped_h100(2), on_progress=lines.append, progress_every_s=0.5)
    assert not result.interrupted
    assert result.workload.load_s == pytest.approx(1.5, abs=0.3)
    assert [a.index for a in result.analyses] == [0, 1]
    for a in result.analyses:
        assert a.errors == 0
        assert a.tflops_first_10s is not None
        assert a.tflops_first_10s > 0
        assert a.tflops_sustained is not None
        assert a.loaded_s > 0
        assert a.power_enforced_limit_w == 700.0
    assert any(line.startswith("burn: ") and "GPU1" in line for line in lines[1:])
    doc = json.loads(json.dumps(burn_document(result, burn_exit_code(result)).to_json_dict()))
    assert doc["schema"] == "rigcheck.burn/2"
    assert doc["partial"] is False
    gpu = doc["gpus"][0]
    for key in ("index", "loaded_s", "power_draw_w_median_loaded", "limiter", "verdict", "advice"):
        assert key in gpu
    assert gpu["errors"] == 0
    assert gpu["tflops_sustained"] > 0
    assert doc["workload"]["gpus"][1]["matrix_size"] == 48
    assert doc["sampler"]["polls"] > 50
    # burn measured what --analyze cannot: those reasons are gone; a null keeps its reason
    for g in doc["gpus"]:
        assert not {"tflops_sustained", "tflops_first_10s", "errors"} & set(g["missing"])
        assert set(g["missing"]) == {key for key, value in g.items() if value is None}
    assert doc["workload"]["gpus"][0]["missing"] == {"first_error_s": "no wrong result"}


def test_a_run_is_drawn_in_every_format() -> None:
    """A `rigcheck burn` document (not only a `--analyze` one) in the terminal, Markdown and the HTML page."""
    import io

    from rich.console import Console

    from rigcheck.report.render import Format, render

    run = cpu_burn(burn_power_capped_h100(1))
    doc = burn_document(run, burn_exit_code(run))
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(render(doc, Format.TERMINAL))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert re.match(r"rigcheck burn: \d+ s of fp32 matmuls\nGPU0  ", text)
    matmuls = doc.workload.gpus[0].matmuls if doc.workload is not None else 0
    assert f"checked results (of {matmuls} products) matched the first bit for bit" in text
    assert text.rstrip().endswith("no GPU computed a wrong result, throttled for heat or was lost")
    markdown = render(doc, Format.MARKDOWN)
    assert isinstance(markdown, str)
    assert re.match(r"# rigcheck burn: \d+ s of fp32 matmuls\n\n## GPU0: ", markdown)
    assert "- fp32 48×48 matmul: " in markdown
    page = render(doc, Format.HTML)
    assert isinstance(page, str)
    assert "<title>rigcheck burn</title>" in page
    assert 'data-plot="power"' in page  # the samples behind the verdict are drawn, not only the numbers


def test_load_summary_gives_a_reason_for_throughput_it_could_not_measure() -> None:
    load = GpuLoad(index=0, error="CUDA out of memory")
    summary = load.summary()
    assert summary.tflops_sustained is None
    assert summary.missing == {
        "first_error_s": "no wrong result",
        "tflops_first_10s": "the load failed on this GPU",
        "tflops_sustained": "the load failed on this GPU",
    }
    assert GpuLoad(index=1).summary().missing["tflops_sustained"] == "no timed matmul finished"
    short = GpuLoad(index=2, chunks=[(0.0, 0.5, 1e12)])  # half a second of load: no whole second to take
    assert short.summary().tflops_first_10s is not None
    assert short.summary().missing == {
        "first_error_s": "no wrong result",
        "tflops_sustained": "the load lasted under a whole second",
    }


def test_run_burn_keeps_the_other_gpus_when_one_is_lost() -> None:
    result = cpu_burn(burn_gpu_lost(lose_at_poll=20))
    by_index = {a.index: a for a in result.analyses}
    assert by_index[1].lost_at_s is not None
    assert by_index[0].lost_at_s is None
    assert by_index[0].loaded_s > 0
    assert burn_exit_code(result) == 1  # a lost GPU is a problem


def test_ctrl_c_keeps_what_was_measured() -> None:
    calls = itertools.count()

    def progress(line: str) -> None:
        if next(calls) == 2:  # the second progress line during the load
            raise KeyboardInterrupt

    result = cpu_burn(burn_power_capped_h100(1), minutes=1.0, on_progress=progress, progress_every_s=0.2)
    assert result.interrupted
    assert result.workload.load_s < 5.0
    assert result.workload.gpus[0].matmuls > 0
    assert result.analyses[0].tflops_first_10s is not None
    assert burn_exit_code(result) == 130
    doc = burn_document(result, 130).to_json_dict()
    assert doc["partial"] is True
    assert doc["interrupted"] is True


# --- the command line ---------------------------------------------------------------------------------
# On a GPU machine the real burn would run (exit 0): this checks the message given without one.
@pytest.mark.skipif(nvidia_gpu_present(), reason="this machine has a GPU")
def test_burn_without_a_gpu_is_one_line_and_exit_1(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("burn", "--minutes", "0.1")
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("rigcheck: no NVIDIA GPU visible: ")


def test_burn_with_nvml_but_no_cuda_is_one_line(rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(burn_power_capped_h100(1), gpus=gpus))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, out, err = rigcheck("burn", "--minutes", "0.1")
    assert code == 1
    assert out == ""
    assert "torch sees no CUDA device" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["burn", "--dtype", "int8"],
        ["burn", "--csv", "a.csv", "--jsonl", "b.jsonl"],
        ["burn", "--gpus", "0,x"],
    ],
)
def test_burn_bad_usage_is_exit_2(argv: list[str], rigcheck: Rigcheck, tmp_path: Path) -> None:
    code, out, _ = rigcheck(*argv)
    assert code == 2
    assert out == ""


def test_burn_analyze_delegates_to_the_analysis(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("burn", "--analyze", str(TELEMETRY / "smi-lms-torch-bf16-burn.csv"), "--json")
    doc = json.loads(out)
    assert doc["schema"] == "rigcheck.burn/2"
    assert doc["gpus"][0]["limiter"] == "power"
    assert code == 0


def test_a_setup_failure_is_kept_when_the_start_is_aborted() -> None:
    """Out of memory while preparing the matrices, and Ctrl-C (the gate broken) meanwhile: the load's error
    is the out-of-memory, not "stopped before the load started"."""
    from rigcheck.bench.burn import gpu_worker

    class NoMemoryTorch:
        bfloat16, float16, float32 = torch.bfloat16, torch.float16, torch.float32

        @staticmethod
        def Generator(device: object) -> torch.Generator:
            return torch.Generator()

        @staticmethod
        def randn(*args: object, **kwargs: object) -> object:
            raise RuntimeError("CUDA out of memory. Tried to allocate 256.00 MiB")

    gate = threading.Barrier(2)
    gate.abort()
    load = GpuLoad(index=0, dtype="fp32")
    gpu_worker(
        NoMemoryTorch(),
        load,
        torch.device("cpu"),
        size=64,
        stop=threading.Event(),
        start_gate=gate,
        t0_box=[0.0],
        duration_s=1.0,
        on_mismatch=None,
    )
    assert load.error is not None
    assert "out of memory" in load.error


def test_a_live_burn_names_its_host_its_end_and_each_gpu(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`rigcheck burn --json` (the load on CPU devices, NVML faked, one GPU's corrected ECC climbing): host,
    created_at and each GPU's UUID and bus id, what places its rates in the ledger; the ledger keeps each GPU's
    corrected-ECC rate as its counters figure."""
    import socket

    from rigcheck.bench import burn as burn_bench
    from rigcheck.ledger.ingest import add_document
    from rigcheck.ledger.store import open_ledger
    from tests.contracts.test_schemas import assert_valid

    real = burn_bench.run_burn
    cpu = {"dtype": "fp32", "device_for": lambda i: torch.device("cpu"), "size": 48, "preroll_s": 0.3}
    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(ecc_storm(3), gpus=gpus))
    monkeypatch.setattr(burn_bench, "run_burn", lambda poller, **kw: real(poller, **{**kw, **cpu, "interval_s": 0.02}))
    result = rigcheck("burn", "--minutes", "0.05", "--no-fingerprint", "--json")
    doc = result.json
    assert_valid(doc)
    assert doc["host"] == socket.gethostname()
    assert doc["created_at"].endswith("Z")
    with NvmlPoller(ecc_storm(3)) as poller:
        expected = [(poller.uuids[i], poller.bus_ids[i]) for i in sorted(poller.gpus)]
    assert [(g["uuid"], g["pci_bus_id"]) for g in doc["gpus"]] == expected
    with open_ledger(tmp_path / "l.sqlite") as conn:
        assert add_document(conn, result.stdout.encode(), "rigcheck burn").new == 1
        rows = conn.execute("SELECT node, gpu_uuid, pci_bus_id, verdict, figures FROM observations").fetchall()
        created = conn.execute("SELECT created_at, created_from FROM documents").fetchone()
    rates = [g.get("ecc_corrected_per_s") for g in doc["gpus"]]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [(doc["host"], u, b, None) for u, b in expected]
    assert [json.loads(r[4]).get("counters") for r in rows] == rates
    assert rates[ECC_STORM_GPU] > 0  # the GPU whose memory corrects errors under load: a figure the drift rule reads
    assert created == (doc["created_at"], "document")
