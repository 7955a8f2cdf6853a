"""On a real GPU: the figures themselves, held against shared/gpu-evidence (tests/support/gpu_bands.py).

On the evidence's card (an H100 SXM5) each figure must reach its band; on any other card it must be a positive,
finite figure in the right unit. Expected time on an H100, all of them: ~2 min 10 s (each test says its own),
within the ~6 min of `benchmarks/gpu_validation.sh tests`.
"""

from __future__ import annotations

import itertools
import statistics
import time

import pytest

from tests.support.gpu_bands import (
    BURN_POWER_W,
    DEVICE_COPY_GBPS,
    HOST_PINNED_GBPS,
    MATMUL_BF16_TFLOPS,
    card_name,
    is_reference_name,
    on_reference_card,
    positive_finite,
)

pytestmark = pytest.mark.gpu

# mamf-finder's best shape on the evidence's card and its neighbours (mamf.txt): the best of these is the
# sweep's best there; a full sweep m=1024..16384 would take 30 s more for the same figure.
MATMUL_SHAPES = [(3072, 8192, 8192), (4096, 8192, 8192), (8192, 8192, 8192)]


def test_gpu_matmul_bf16_best_reaches_the_band() -> None:
    """~15 s: three shapes, 10 warm-up + 20 timed products each, after the clocks' warm-up."""
    from rigcheck.bench.device import matmul

    doc = matmul.run_matmul(dtypes=["bf16"], shapes=MATMUL_SHAPES, snapshot=None).to_json_dict()
    assert (doc["partial"], doc["error"]) == (False, None)
    assert all(r["correct"] for r in doc["results"])
    (best,) = doc["best"]
    tflops = positive_finite(best["tflops_median"], "bf16 best TFLOPS")
    assert tflops < 5000, f"{tflops} TFLOPS: not a single GPU's figure (wrong unit?)"
    if on_reference_card(0):
        MATMUL_BF16_TFLOPS.check(tflops, f"bf16 matmul best on {card_name(0)}")


def test_gpu_device_copy_reaches_the_band() -> None:
    """~5 s: 1 GiB copies, default warm-up and repeats."""
    from rigcheck.bench.device import membw

    doc = membw.run_membw(sizes=[1 << 30], snapshot=None).to_json_dict()
    assert (doc["partial"], doc["error"]) == (False, None)
    (row,) = doc["results"]
    assert row["correct"] is True
    copy = positive_finite(row["copy_gbps"], "device copy GB/s")
    assert row["read_write_gbps"] == pytest.approx(2 * copy)
    assert copy < 20_000, f"{copy} GB/s: not a single GPU's copy (wrong unit?)"
    if on_reference_card(0):
        DEVICE_COPY_GBPS.check(copy, f"device copy on {card_name(0)}")


def test_gpu_pinned_host_link_reaches_the_band_both_ways() -> None:
    """~10 s: GPU 0, default size, pinned and pageable both ways, unbound (the evidence's VM has no NUMA node)."""
    from rigcheck.bench.device import hostlink
    from rigcheck.probe.live import probe_machine

    doc = hostlink.run_hostlink(gpus=[0], numa=False, snapshot=probe_machine()).to_json_dict()
    rows = doc["results"]
    assert all(r["correct"] for r in rows)
    pinned = {r["direction"]: r for r in rows if r["memory"] == "pinned"}
    assert set(pinned) == {"h2d", "d2h"}
    for direction, row in pinned.items():
        gbps = positive_finite(row["gbps"], f"{direction} pinned GB/s")
        assert gbps < 1000, f"{gbps} GB/s: not a host link (wrong unit?)"
        if on_reference_card(0):
            HOST_PINNED_GBPS.check(gbps, f"{direction} pinned on {card_name(0)}")


def test_gpu_burn_one_minute_is_power_capped_at_the_band() -> None:
    """~70 s: one minute of bf16 load on every GPU (plus the pre-roll), sampled at 10 Hz."""
    from rigcheck.bench.burn import run_burn
    from rigcheck.probe.nvml import NvmlPoller

    with NvmlPoller() as poller:
        run = run_burn(poller, minutes=1.0, uuids=dict(poller.uuids))
        names = {i: info.name for i, info in poller.gpus.items()}
    assert run.interrupted is False
    assert run.failed_gpus == []
    assert run.wrong_gpus == []
    assert {a.index for a in run.analyses} == set(names)
    for a in run.analyses:
        assert a.loaded_s >= 50, f"GPU {a.index} loaded only {a.loaded_s} s of 60"
        power = positive_finite(a.power_draw_w_median_loaded, f"GPU {a.index} median power loaded (W)")
        limit = a.power_enforced_limit_w
        assert limit is not None
        assert power <= limit * 1.1, f"GPU {a.index}: {power} W over its {limit} W limit"
        positive_finite(a.temp_c_max, f"GPU {a.index} max temperature (C)")
        positive_finite(a.tflops_sustained, f"GPU {a.index} sustained TFLOPS")
        if is_reference_name(names[a.index]):
            BURN_POWER_W.check(power, f"GPU {a.index} ({names[a.index]}) median power loaded")
            assert a.limiter == "power", f"GPU {a.index}: limiter {a.limiter}, not power ({a.verdict})"


def test_gpu_poller_keeps_10_hz_and_reads_the_instant_power() -> None:
    """~4 s: the sampler at 0.1 s for 3 s on an idle GPU."""
    from rigcheck.monitor.sampler import Sampler
    from rigcheck.probe.nvml import NvmlPoller

    with NvmlPoller() as poller:
        sampler = Sampler(poller, 0.1)
        sampler.start()
        try:
            time.sleep(3.0)
        finally:
            sampler.stop()
        gpus = dict(poller.gpus)
    samples = sampler.samples()
    for index, info in gpus.items():
        mine = sorted(s.t_s for s in samples if s.gpu == index and not s.lost)
        assert len(mine) >= 25, f"GPU {index}: {len(mine)} samples in 3 s at 10 Hz"
        gaps = [b - a for a, b in itertools.pairwise(mine)]
        assert statistics.median(gaps) == pytest.approx(0.1, rel=0.10), f"GPU {index}: median interval"
        assert info.power_source in {"instant", "average"}, f"GPU {index}: power source {info.power_source!r}"
        for s in samples:
            if s.gpu == index and not s.lost:
                positive_finite(s.power_draw_w, f"GPU {index} power (W)")
        if is_reference_name(info.name):
            # The driver of the evidence (580) gives NVML_FI_DEV_POWER_INSTANT on Hopper: the poller must use it,
            # not nvmlDeviceGetPowerUsage's 1 s average.
            assert info.power_source == "instant", f"GPU {index} ({info.name}): power read from the 1 s average"
    assert sampler.stats.missed_deadlines <= 3, sampler.stats


def test_gpu_monitor_summarises_power_and_temperature_of_every_gpu() -> None:
    """~4 s: a 3 s monitor run, as `rigcheck monitor --duration 3` does it, without the live view."""
    from rigcheck.cli.monitor import open_poller
    from rigcheck.monitor.session import run_monitor

    def watch(*_: object) -> bool:
        time.sleep(3.0)
        return False

    poller = open_poller()
    try:
        result = run_monitor(
            poller, interval_s=0.1, target=None, duration_s=3.0, prometheus=None, watch=watch, say=lambda _: None
        )
        count = len(poller.gpus)
    finally:
        poller.close()
    assert result.interrupted is False
    assert len(result.gpus) == count > 0
    assert result.duration_s == pytest.approx(3.0, abs=0.5)
    for gpu in result.gpus:
        summary = gpu.summary
        assert summary.samples >= 25, (gpu.index, summary)
        positive_finite(summary.power_draw_w_median, f"GPU {gpu.index} median power (W)")
        positive_finite(summary.power_draw_w_max, f"GPU {gpu.index} max power (W)")
        temp = positive_finite(summary.temp_c_max, f"GPU {gpu.index} max temperature (C)")
        assert temp < 120, f"GPU {gpu.index}: {temp} C is not a GPU's temperature in Celsius"


def test_gpu_gpt2_200_steps_within_three_percent_of_the_plain_loop() -> None:
    """~25 s: the guide's gpt2 (124M, random init, batch 4 x 1024, fp32) on one GPU, 200 steps, DDP world 1,
    against the plain torch loop of the evidence (gpt2-ddp-1gpu.jsonl, amp false): rigcheck's harness must not
    cost more than 3%, nor be faster than the same work can be (a shorter run means it skipped work)."""
    pytest.importorskip("transformers")
    from rigcheck.bench.train import run_train
    from tests.support.gpu_bands import GPT2_200_STEPS_S, GPT2_SOURCE, GPT2_TOLERANCE

    doc, _ = run_train(cpu=False, world_size=1, steps=200, snapshot=None)
    data = doc.to_json_dict()
    assert (data["partial"], data["error"]) == (False, None)
    (row,) = data["results"]
    assert row["steps"] == 200
    runtime = positive_finite(row["train_runtime_s"], "gpt2 200 steps runtime")
    if on_reference_card(0):
        low, high = GPT2_200_STEPS_S * (1 - GPT2_TOLERANCE), GPT2_200_STEPS_S * (1 + GPT2_TOLERANCE)
        assert low <= runtime <= high, (
            f"gpt2 200 steps on {card_name(0)}: {runtime:.2f} s, outside {low:.2f}-{high:.2f} s "
            f"(the plain loop's {GPT2_200_STEPS_S:.2f} s within {GPT2_TOLERANCE:.0%}, {GPT2_SOURCE})"
        )
