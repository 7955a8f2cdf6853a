"""The NVML poller and the sampler, driven by the fake NVML: rate, bounded buffer, files, lost GPUs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigcheck.errors import ProbeError
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.monitor.sampler import Sampler, TraceFile, next_deadline
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.readers.trace.stream import read_trace
from tests.support.fakenvml import (
    BURN_IDLE_POLLS,
    SCENARIOS,
    FakeNvml,
    burn_gpu_lost,
    burn_power_capped_h100,
    burn_power_capped_h100_instant,
    old_driver_consumer_polling,
)
from tests.support.fakenvml_parts import FakeGpu

REPO = Path(__file__).resolve().parent.parent.parent


# --- the poller --------------------------------------------------------------------------------------
def test_poller_reads_every_field_and_static_facts_once() -> None:
    lib = SCENARIOS["healthy_8x_h100_nvlink"]()
    with NvmlPoller(lib) as poller:
        assert sorted(poller.gpus) == list(range(8))
        info = poller.gpus[3]
        assert (info.name, info.temp_slowdown_c, info.temp_shutdown_c, info.temp_max_operating_c) == (
            "NVIDIA H100 80GB HBM3",
            89.0,
            92.0,
            87.0,
        )
        assert info.power_default_limit_w == 700.0
        before = len(lib.calls)
        samples = poller.poll(0.5)
        per_poll = lib.calls[before:]
        before = len(lib.calls)
        poller.poll(0.6)
        next_poll = lib.calls[before:]
    assert lib.initialized == 0
    assert lib.shutdowns == 1
    # 8 readings, 2 ECC totals and the PCIe replays per GPU per poll; on the first, each of the 18 links' 4 counters
    assert len(next_poll) == 8 * 11
    assert len(per_poll) == 8 * (11 + 18 * 4)
    assert "nvmlDeviceGetNvLinkState" not in per_poll  # the links were found when the poller opened
    assert "nvmlDeviceGetTemperatureThreshold" not in per_poll
    assert "nvmlDeviceGetMaxClockInfo" not in per_poll
    assert lib.count("nvmlDeviceGetMaxClockInfo") == 8  # cached: once per GPU
    s = samples[0]
    assert (s.t_s, s.gpu, s.power_draw_w, s.power_enforced_limit_w) == (0.5, 0, 74.21, 700.0)
    assert (s.temp_c, s.temp_memory_c) == (43.0, 46.0)
    assert (s.sm_clock_mhz, s.sm_clock_max_mhz, s.mem_clock_mhz, s.utilization_gpu_percent) == (
        1980.0,
        1980.0,
        2619.0,
        0.0,
    )
    assert s.reasons == ["idle"]
    assert not s.lost


def test_poller_not_supported_is_none_and_not_asked_again() -> None:
    lib = SCENARIOS["consumer_power_not_supported"]()
    with NvmlPoller(lib) as poller:
        first = poller.poll(0.0)[0]
        n = lib.count("nvmlDeviceGetPowerUsage")
        second = poller.poll(0.1)[0]
        assert lib.count("nvmlDeviceGetPowerUsage") == n
        assert poller.unavailable[0] == {
            "power_draw_w": "not_supported",
            "power_enforced_limit_w": "not_supported",
            "temp_memory_c": "not_supported",
            "ecc_corrected_volatile": "not_supported",  # a GeForce card has no ECC
            "ecc_uncorrected_volatile": "not_supported",
        }
    for s in (first, second):
        assert (s.power_draw_w, s.power_enforced_limit_w, s.temp_memory_c) == (None, None, None)
        assert s.temp_c == 43.0
        assert (s.ecc_corrected_volatile, s.ecc_uncorrected_volatile, s.pcie_replays) == (None, None, 0)
        assert s.nvlink_crc_errors is None  # no NVLink: left out, never 0
    assert lib.count("nvmlDeviceGetTotalEccErrors") == 2  # asked once each, then left out


def test_poller_old_driver_falls_back_to_throttle_reasons_once() -> None:
    lib = old_driver_consumer_polling()
    with NvmlPoller(lib) as poller:
        samples = [poller.poll(float(k))[0] for k in range(3)]
        assert poller.missing_functions == {"nvmlDeviceGetCurrentClocksEventReasons"}
    assert [s.reasons for s in samples] == [["sw_thermal_slowdown"]] * 3
    assert lib.count("nvmlDeviceGetCurrentClocksEventReasons") <= 1
    assert lib.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 3


def test_poller_lost_gpu_reported_once_then_not_polled() -> None:
    lib = burn_gpu_lost(lose_at_poll=3)
    with NvmlPoller(lib) as poller:
        polls = [poller.poll(k / 10) for k in range(6)]
        assert poller.active == [0]
    assert [len(p) for p in polls] == [2, 2, 2, 2, 1, 1]
    lost = polls[3][1]
    assert (lost.gpu, lost.lost, lost.t_s, lost.power_draw_w) == (1, True, 0.3, None)
    assert all(not s.lost for p in polls for s in p if s.gpu == 0)
    assert lib.polls[1] == 4  # never asked again after it said GpuIsLost


def test_poller_gpu_lost_before_the_first_poll() -> None:
    with NvmlPoller(SCENARIOS["gpu_off_bus"]()) as poller:
        first = poller.poll(0.0)
        second = poller.poll(0.1)
    assert [(s.gpu, s.lost) for s in first] == [(0, False), (1, True), (2, False)]
    assert [s.gpu for s in second] == [0, 2]


def test_poller_no_driver_and_bad_index_are_probe_errors() -> None:
    with pytest.raises(ProbeError, match="no NVIDIA driver"):
        NvmlPoller(SCENARIOS["no_driver"]()).open()
    lib = burn_power_capped_h100(2)
    with pytest.raises(ProbeError, match="no GPU 5"):
        NvmlPoller(lib, gpus=[0, 5]).open()
    assert lib.initialized == 0  # shut down again
    with NvmlPoller(burn_power_capped_h100(3), gpus=[2]) as poller:
        assert [s.gpu for s in poller.poll(0.0)] == [2]


# --- scheduling, with a fake clock ---------------------------------------------------------------------
def test_next_deadline_skips_passed_deadlines() -> None:
    assert next_deadline(0.0, 0.1, 0, 0.05) == (1, 0)
    assert next_deadline(10.0, 0.1, 4, 10.449) == (5, 0)
    assert next_deadline(0.0, 0.1, 0, 0.35) == (4, 3)  # deadlines 1, 2, 3 passed while poll 0 ran


class FakeClock:
    """A clock the poller advances by ``poll_cost`` per poll; the wait jumps to its deadline."""

    def __init__(self, poll_cost: float, polls: int) -> None:
        self.now = 1000.0
        self.poll_cost = poll_cost
        self.polls_left = polls

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return self.polls_left <= 0  # True: stop was set


class ClockedPoller:
    def __init__(self, fake: FakeClock, gpus: int = 2) -> None:
        self.fake = fake
        self.gpus = {i: TraceGpu(index=i) for i in range(gpus)}

    def poll(self, t_s: float) -> list[Sample]:
        self.fake.now += self.fake.poll_cost
        self.fake.polls_left -= 1
        return [Sample(t_s=t_s, gpu=i, power_draw_w=float(i)) for i in self.gpus]


def test_schedule_has_no_drift() -> None:
    fake = FakeClock(poll_cost=0.03, polls=50)
    sampler = Sampler(ClockedPoller(fake), interval_s=0.1, clock=fake.clock, wait=fake.wait)
    sampler.run()
    times = sorted({s.t_s for s in sampler.samples()})
    assert len(times) == 50
    assert times[-1] == pytest.approx(4.9, abs=1e-9)  # sleep(interval) would have drifted to 6.37
    assert sampler.stats.missed_deadlines == 0
    assert sampler.stats.polls == 50


def test_slow_polls_count_missed_deadlines_without_bursting() -> None:
    fake = FakeClock(poll_cost=0.25, polls=10)
    sampler = Sampler(ClockedPoller(fake), interval_s=0.1, clock=fake.clock, wait=fake.wait)
    sampler.run()
    times = sorted({s.t_s for s in sampler.samples()})
    assert times[:3] == pytest.approx([0.0, 0.3, 0.6])  # every poll on a deadline, 2 skipped in between
    assert sampler.stats.missed_deadlines == 2 * 10


def test_buffer_is_bounded_and_keeps_the_newest() -> None:
    fake = FakeClock(poll_cost=0.0, polls=50)
    sampler = Sampler(ClockedPoller(fake), interval_s=0.1, buffer_seconds=1.0, clock=fake.clock, wait=fake.wait)
    sampler.run()
    kept = sampler.samples()
    assert len(kept) == 10 * 2
    assert kept[0].t_s == pytest.approx(4.0)
    assert sampler.stats.samples == 100
    trace = sampler.trace()
    assert trace.source == "rigcheck-sampler"
    assert trace.interval_s == 0.1
    assert sorted(trace.gpus) == [0, 1]


# --- the thread, for real ------------------------------------------------------------------------------
def test_thread_polls_at_about_the_rate_and_stops() -> None:
    with NvmlPoller(burn_power_capped_h100(2)) as poller:
        sampler = Sampler(poller, interval_s=0.02)
        sampler.start()
        time.sleep(0.5)
        sampler.stop()
        assert not sampler.running
    polls = sampler.stats.polls
    assert 10 <= polls <= 27  # 25 deadlines in 0.5 s; a busy CI box may skip some, never add
    assert sampler.stats.samples == 2 * polls
    assert sampler.stats.poll_us_mean is not None
    assert sampler.stats.poll_us_max >= sampler.stats.poll_us_mean > 0
    latest = sampler.latest()
    assert sorted(latest) == [0, 1]


def test_file_is_flushed_while_running_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    with NvmlPoller(burn_power_capped_h100(1)) as poller:
        sampler = Sampler(poller, interval_s=0.02, sink=TraceFile(path, "csv", flush_interval_s=0.25))
        sampler.start()
        time.sleep(1.3)
        # Read while the sampler still runs, as a crash would leave it: at most ~1 s missing.
        during = read_trace(str(path))
        elapsed = sampler.stats.polls * 0.02
        sampler.stop()
    assert max(s.t_s for s in during.samples) >= elapsed - 1.0
    after = read_trace(str(path))
    assert len(after.samples) == sampler.stats.samples
    assert after.gpus[0].temp_slowdown_c == 89.0
    assert after.gpus[0].power_source == "average"  # the header says which power reading the samples are
    assert after.interval_s == 0.02


def test_lost_gpu_recorded_from_that_moment_others_go_on(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with NvmlPoller(burn_gpu_lost(lose_at_poll=5)) as poller:
        sampler = Sampler(poller, interval_s=0.01, sink=TraceFile(path, "jsonl"))
        sampler.start()
        while sampler.stats.polls < 15:
            time.sleep(0.01)
        sampler.stop()
    for trace in (sampler.trace(), read_trace(str(path))):
        gpu1 = trace.for_gpu(1)
        assert len(gpu1) == 6
        assert [s.lost for s in gpu1] == [False] * 5 + [True]
        assert len(trace.for_gpu(0)) >= 15


WRITER = """
import sys, time
from rigcheck.monitor.sampler import Sampler, TraceFile
from rigcheck.probe.nvml import NvmlPoller
from tests.support.fakenvml import burn_power_capped_h100
from pathlib import Path
poller = NvmlPoller(burn_power_capped_h100(2)).__enter__()
sampler = Sampler(poller, interval_s=0.02, sink=TraceFile(Path(sys.argv[1]), sys.argv[2]))
sampler.start()
print("started", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_killed_writer_leaves_a_readable_file(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"trace.{fmt}"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), fmt], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        started = time.monotonic()
        time.sleep(2.0)
        alive_s = time.monotonic() - started
        os.kill(proc.pid, signal.SIGKILL)  # no chance to flush: what the sampler flushed is all there is
    finally:
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    trace = read_trace(str(path))
    assert sorted(trace.gpus) == [0, 1]
    newest = max(s.t_s for s in trace.samples)
    assert newest >= alive_s - 1.3  # flushed at least every second (plus start-up slack)
    assert {s.gpu for s in trace.samples} == {0, 1}


def test_burn_profile_reads_as_a_power_capped_load() -> None:
    with NvmlPoller(burn_power_capped_h100(1)) as poller:
        samples = [poller.poll(k / 10)[0] for k in range(BURN_IDLE_POLLS + 40)]
    idle, loaded = samples[0], samples[-1]
    assert idle.reasons == ["idle"]
    assert idle.power_draw_w == 74.0
    assert loaded.reasons == ["sw_power_cap"]
    assert loaded.power_draw_w == 698.0
    assert loaded.sm_clock_mhz == 1335.0
    assert loaded.temp_c is not None
    assert idle.temp_c is not None
    assert loaded.temp_c > idle.temp_c


# --- the power reading: the instant field where the driver has it ------------------------------------
def test_poller_reads_instant_power_where_the_driver_has_it() -> None:
    gpu = FakeGpu(power_mw=74_210, power_fields_mw={186: 312_500})  # averaged call idle, the field loaded
    lib = FakeNvml([gpu])
    with NvmlPoller(lib) as poller:
        assert poller.gpus[0].power_source == "instant"
        before = len(lib.calls)
        s = poller.poll(0.0)[0]
        per_poll = lib.calls[before:]
    assert s.power_draw_w == 312.5
    assert "nvmlDeviceGetPowerUsage" not in per_poll
    assert per_poll.count("nvmlDeviceGetFieldValues") == 2  # the power field, then the memory temperature


def test_poller_falls_back_to_the_averaged_call_without_the_field() -> None:
    with NvmlPoller(FakeNvml([FakeGpu(power_mw=74_210)])) as poller:  # field 186 answers NotSupported
        s = poller.poll(0.0)[0]
        assert poller.gpus[0].power_source == "average"
        assert poller.unavailable == {}
    assert s.power_draw_w == 74.21


def test_poller_field_gone_mid_run_falls_back_and_says_so() -> None:
    gpu = FakeGpu(power_mw=74_210, power_fields_mw={186: 312_500})
    with NvmlPoller(FakeNvml([gpu])) as poller:
        first = poller.poll(0.0)[0]
        gpu.power_fields_mw = {}  # the field now answers NotSupported
        second = poller.poll(0.1)[0]
        third = poller.poll(0.2)[0]
        assert poller.gpus[0].power_source == "average"
        assert "power_draw_w" not in poller.unavailable.get(0, {})
    assert (first.power_draw_w, second.power_draw_w, third.power_draw_w) == (312.5, 74.21, 74.21)


def test_instant_burn_profile_shows_the_load_the_average_hides() -> None:
    with NvmlPoller(burn_power_capped_h100_instant(1)) as poller:
        samples = [poller.poll(k / 10)[0] for k in range(BURN_IDLE_POLLS + 40)]
        assert poller.gpus[0].power_source == "instant"
    assert samples[0].power_draw_w == 74.0
    assert samples[-1].power_draw_w == 698.0
    assert samples[-1].reasons == ["sw_power_cap"]


def test_power_source_absent_not_null_when_unset() -> None:
    assert "power_source" not in TraceGpu(index=0).model_dump(mode="json")  # traces read from files: as before
    assert TraceGpu(index=0, power_source="average").model_dump(mode="json")["power_source"] == "average"
    assert TraceGpu.model_validate({"index": 0}).power_source is None


def test_monitor_package_never_imports_the_probe() -> None:
    """The sampler takes its poller through a Protocol; the CLI builds the NVML one (rigcheck.probe.nvml)."""
    import ast

    import rigcheck.monitor

    for path in Path(rigcheck.monitor.__file__).parent.glob("*.py"):
        imported: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                imported.append(node.module or "")
        assert "rigcheck.model.telemetry" in imported or path.name == "__init__.py", path  # the walk sees imports
        assert not [m for m in imported if m.startswith("rigcheck.probe")], path


# --- monitor's bounded memory: a window in the buffer, the summary aggregated as the samples arrive ---------
class VaryingPoller:
    """Two GPUs with readings that vary every poll (1500 distinct powers: under the histogram's bound), GPU 1
    lost at poll ``lose_at``."""

    def __init__(self, fake: FakeClock, lose_at: int) -> None:
        self.fake = fake
        self.k = 0
        self.lose_at = lose_at
        self.gpus = {i: TraceGpu(index=i) for i in range(2)}

    def poll(self, t_s: float) -> list[Sample]:
        self.fake.polls_left -= 1
        k = self.k
        self.k += 1
        out = [
            Sample(
                t_s=t_s,
                gpu=0,
                power_draw_w=round(300.0 + (k * 37 % 1500) / 10, 2),
                temp_c=float(40 + k % 31),
                sm_clock_mhz=float(1200 + (k * 7) % 600) if k % 5 else None,
            )
        ]
        if k < self.lose_at:
            out.append(Sample(t_s=t_s, gpu=1, power_draw_w=float(k % 3), sm_clock_mhz=1980.0))
        elif k == self.lose_at:
            out.append(Sample(t_s=t_s, gpu=1, lost=True))
        return out


def test_monitor_keeps_a_window_and_summarises_every_sample() -> None:
    import statistics

    from rigcheck.monitor.session import WINDOW_POLLS, gpu_summary
    from rigcheck.monitor.summary import RunSummary

    polls = 20_000
    fake = FakeClock(poll_cost=0.0, polls=polls)
    running = RunSummary()
    every: list[Sample] = []  # the reference: what the old monitor kept

    def on_poll(samples: list[Sample]) -> None:
        running.add(samples)
        every.extend(samples)

    sampler = Sampler(
        VaryingPoller(fake, lose_at=15_000),
        interval_s=0.1,
        buffer_seconds=WINDOW_POLLS * 0.1,
        clock=fake.clock,
        wait=fake.wait,
        on_poll=on_poll,
    )
    sampler.run()
    assert sampler.stats.samples == len(every) == polls + 15_001
    assert len(sampler.samples()) <= WINDOW_POLLS * 2  # the window, not the run
    assert sampler.latest()[1].lost  # lost long before the window: still the newest of GPU 1
    gpu0 = [s for s in every if s.gpu == 0]
    power = [s.power_draw_w for s in gpu0 if s.power_draw_w is not None]
    clock = [s.sm_clock_mhz for s in gpu0 if s.sm_clock_mhz is not None]
    s0 = running.summary(0)
    assert s0.samples == polls
    assert s0.power_draw_w_median == statistics.median(power)
    assert s0.sm_clock_mhz_median == statistics.median(clock)
    assert (s0.power_draw_w_max, s0.temp_c_max, s0.sm_clock_mhz_min) == (max(power), 70.0, min(clock))
    s1 = running.summary(1)
    assert s1.lost_at_s == pytest.approx(1500.0)
    assert s1.samples == 15_001
    assert s1.power_draw_w_median == 1.0
    for gpu in (0, 1):  # the running summary is the summary over the list, field by field
        assert running.summary(gpu) == gpu_summary([s for s in every if s.gpu == gpu])
    assert running.last_t_s == every[-1].t_s


def test_histogram_past_its_bound_stays_within_half_a_grid_step() -> None:
    import random
    import statistics

    from rigcheck.monitor.summary import Histogram

    rng = random.Random(7)
    values = [round(rng.uniform(80.0, 700.0), 3) for _ in range(30_000)]  # mW resolution: ~all distinct
    hist = Histogram(max_distinct=1000)
    for v in values:
        hist.add(v)
    assert len(hist.counts) <= 1000
    assert hist.digits == 0  # 620 whole watts fit; tenths (6200) would not
    median = hist.median()
    assert median is not None
    assert abs(median - statistics.median(values)) <= 0.5
