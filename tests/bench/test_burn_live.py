"""`rigcheck burn`'s live judgement beyond the trace (issue 28): the counters the poller reads judged as rates, and the
throughput half of the clock rule once the load's TFLOPS are known."""

from __future__ import annotations

from functools import partial
from typing import Any

from rigcheck.bench.burn import GpuLoad, with_loads
from rigcheck.checks.burn.judge import is_problem
from rigcheck.checks.burn.rates import judge_peers
from rigcheck.cli.burn import burn_exit_code
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.finding import Severity
from rigcheck.model.telemetry import TraceGpu
from tests.support.burn import cpu_burn
from tests.support.fakenvml import ECC_STORM_GPU, ecc_storm

H100 = "NVIDIA H100 80GB HBM3"


_cpu_burn = partial(cpu_burn, minutes=0.02, size=32)


def test_a_live_burn_fails_the_gpu_whose_corrected_ecc_climbs() -> None:
    """The ECC storm of DCGM#313 on the fake NVML: the sampler's counters, judged by the rule burn --analyze uses."""
    run = _cpu_burn(ecc_storm())
    by_index = {a.index: a for a in run.analyses}
    storm = by_index[ECC_STORM_GPU]
    assert storm.ecc_corrected_per_s is not None
    assert storm.ecc_corrected_per_s > 1000
    assert [f.id for f in storm.findings if f.severity is Severity.FAIL] == ["burn.ecc-corrected-rate"]
    assert is_problem(storm)
    for index in (0, 1, 3):
        assert by_index[index].ecc_corrected_per_s == 0.0
        assert not any(f.id == "burn.ecc-corrected-rate" for f in by_index[index].findings)
        assert by_index[index].ecc_uncorrected_new == 0
    assert burn_exit_code(run) == 1


# --- the throughput half of the clock rule ---------------------------------------------------------------------------
def _analysis(index: int, clock: float) -> GpuBurnAnalysis:
    return GpuBurnAnalysis(
        index=index,
        loaded_s=60.0,
        power_draw_w_median_loaded=690.0,
        power_enforced_limit_w=700.0,
        temp_c_max=70.0,
        temp_slowdown_c=89.0,
        sm_clock_mhz_median_loaded=clock,
        reasons_time_fraction={"sw_power_cap": 0.6},
        limiter="power",
        verdict="good, power-limited",
        advice="",
    )


def _load(index: int, tflops: float) -> GpuLoad:
    return GpuLoad(index=index, dtype="bf16", chunks=[(float(k), k + 1.0, tflops * 1e12) for k in range(20)])


def _clock_finding(a: GpuBurnAnalysis) -> Any:
    return next(f for f in a.findings if f.id == "burn.clock-below-peers")


def test_a_clock_5_percent_under_its_peers_fails_once_its_throughput_is_too() -> None:
    gpus = {i: TraceGpu(index=i, name=H100) for i in range(4)}
    analyses = [_analysis(i, 1980.0) for i in range(3)] + [_analysis(3, 1881.0)]  # GPU3 5.0% under
    judge_peers(analyses, gpus)  # as the trace's analysis leaves it: no throughput yet
    assert _clock_finding(analyses[3]).severity is Severity.WARN
    with_loads(analyses, {i: _load(i, 700.0) for i in range(3)} | {3: _load(3, 660.0)}, gpus)  # 5.7% under
    finding = _clock_finding(analyses[3])
    assert finding.severity is Severity.FAIL
    assert "its throughput 5.7% under theirs" in finding.message
    assert is_problem(analyses[3])
    assert analyses[3].tflops_sustained == 660.0
    assert not any(is_problem(a) for a in analyses[:3])


def test_a_clock_under_its_peers_with_the_same_throughput_stays_a_warning() -> None:
    gpus = {i: TraceGpu(index=i, name=H100) for i in range(4)}
    analyses = [_analysis(i, 1980.0) for i in range(3)] + [_analysis(3, 1881.0)]
    with_loads(analyses, {i: _load(i, 700.0) for i in range(4)}, gpus)
    assert _clock_finding(analyses[3]).severity is Severity.WARN
    assert [f.id for f in analyses[3].findings] == ["burn.clock-below-peers"]  # replaced, not added twice
    assert not is_problem(analyses[3])
