"""Counters under load and GPUs against their peers (issue 28, rigcheck.checks.burn.rates): each rule at the edges of
its limit, peers of another model left out, a trace without the counters judged on nothing it lacks, and the two
replay fixtures of tests/fixtures/traces/ through the command."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rigcheck.checks.burn.judge import analyze_trace, is_problem, load_problems
from rigcheck.checks.burn.rates import judge_peers
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.finding import Severity
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.readers.trace.stream import read_trace
from tests.support.cli import Rigcheck

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"
ECC_STORM = TRACES / "smi-gb200-ecc-storm-4gpu.csv"
CLOCK_5PCT = TRACES / "rigcheck-h100-clock-5pct-4gpu.jsonl"
H100 = "NVIDIA H100 80GB HBM3"
LOAD_S = 100  # loaded samples, 1 s apart


@dataclass
class Gpu:
    """One GPU of a synthetic trace: LOAD_S loaded samples at these figures (counters: the rise a second)."""

    name: str | None = H100
    clock: float = 1980.0
    power: float = 700.0
    limit: float = 700.0
    temp: float = 65.0
    memory: float | None = None
    reasons: list[str] | None = field(default_factory=list)
    ecc_per_s: float | None = None
    uncorrected_total: int | None = None  # the uncorrected count added over the load
    pcie_per_min: float | None = None
    crc_per_s: dict[int, float] | None = None  # link -> CRC errors a second
    replay_total: dict[int, int] | None = None  # link -> replays over the load


def _count(per_s: float, k: int) -> int:
    return round(per_s * k)


def _links(per_link: dict[int, float] | None, k: int, *, total: bool = False) -> list[int | None] | None:
    if per_link is None:
        return None
    links: list[int | None] = [0] * 4
    for link, value in per_link.items():
        links[link] = (int(value) if k == LOAD_S - 1 else 0) if total else _count(value, k)
    return links


def trace(*gpus: Gpu) -> Trace:
    samples: list[Sample] = []
    for k in range(LOAD_S):
        for i, g in enumerate(gpus):
            samples.append(
                Sample(
                    t_s=float(k),
                    gpu=i,
                    power_draw_w=g.power,
                    power_enforced_limit_w=g.limit,
                    temp_c=g.temp,
                    temp_memory_c=g.memory,
                    sm_clock_mhz=g.clock,
                    sm_clock_max_mhz=1980.0,
                    utilization_gpu_percent=100.0,
                    reasons=list(g.reasons) if g.reasons is not None else None,
                    ecc_corrected_volatile=_count(g.ecc_per_s, k) if g.ecc_per_s is not None else None,
                    ecc_uncorrected_volatile=(
                        (g.uncorrected_total if k == LOAD_S - 1 else 0) if g.uncorrected_total is not None else None
                    ),
                    pcie_replays=_count(g.pcie_per_min / 60, k) if g.pcie_per_min is not None else None,
                    nvlink_crc_errors=_links(g.crc_per_s, k),
                    nvlink_replay_errors=_links(
                        {link: float(n) for link, n in g.replay_total.items()} if g.replay_total else None,
                        k,
                        total=True,
                    ),
                )
            )
    return Trace(
        source="rigcheck-jsonl",
        samples=samples,
        gpus={i: TraceGpu(index=i, name=g.name) for i, g in enumerate(gpus)},
        interval_s=1.0,
    )


def analyses(*gpus: Gpu) -> list[GpuBurnAnalysis]:
    return analyze_trace(trace(*gpus))


def ids(a: GpuBurnAnalysis) -> dict[str, Severity]:
    return {f.id: f.severity for f in a.findings}


def four(odd: Gpu, peer: Gpu | None = None) -> list[GpuBurnAnalysis]:
    """GPU0 ``odd``, GPU1-3 healthy peers (or ``peer``)."""
    return analyses(odd, *(peer or Gpu() for _ in range(3)))


# --- corrected ECC --------------------------------------------------------------------------------


def test_corrected_ecc_at_the_floor_with_peers_at_zero_fails() -> None:
    out = four(Gpu(ecc_per_s=1.0), Gpu(ecc_per_s=0.0))
    assert out[0].ecc_corrected_per_s == 1.0
    assert ids(out[0]) == {"burn.ecc-corrected-rate": Severity.FAIL}
    assert is_problem(out[0])
    assert all(not p.findings and not is_problem(p) for p in out[1:])


def test_corrected_ecc_under_the_floor_is_no_finding() -> None:
    out = four(Gpu(ecc_per_s=0.99), Gpu(ecc_per_s=0.0))
    assert out[0].ecc_corrected_per_s == pytest.approx(0.99, abs=0.01)
    assert not out[0].findings
    assert not is_problem(out[0])


@pytest.mark.parametrize(("rate", "severity"), [(10.0, Severity.FAIL), (9.9, Severity.WARN)])
def test_corrected_ecc_against_the_peers_median_times_ten(rate: float, severity: Severity) -> None:
    out = four(Gpu(ecc_per_s=rate), Gpu(ecc_per_s=1.0))
    assert ids(out[0]) == {"burn.ecc-corrected-rate": severity}
    assert is_problem(out[0]) is (severity is Severity.FAIL)
    # The peers at 1/s are at the floor, and the odd one is no more than ten times theirs: a rate they share.
    assert all(ids(p) == {"burn.ecc-corrected-rate": Severity.WARN} for p in out[1:])


def test_corrected_ecc_on_a_gpu_alone_is_judged_on_the_floor() -> None:
    [alone] = analyses(Gpu(ecc_per_s=2.0))
    assert alone.peers == []
    [finding] = alone.findings
    assert finding.severity is Severity.FAIL
    assert "no identical peer read the counter" in finding.message


def test_only_loaded_steps_count_and_a_counter_that_restarts_adds_nothing() -> None:
    t = trace(Gpu(ecc_per_s=0.0))
    for s in t.samples:
        if s.t_s < 10:  # idle: the counter climbs, but not under load
            s.utilization_gpu_percent, s.power_draw_w = 0.0, 50.0
            s.ecc_corrected_volatile = 1000 * int(s.t_s)
        elif s.t_s == 50:  # the driver reloaded: the counter starts again from 0
            s.ecc_corrected_volatile = 0
        else:
            s.ecc_corrected_volatile = 20_000 if s.t_s < 50 else 0
    [a] = analyze_trace(t)
    assert a.ecc_corrected_per_s == 0.0
    assert not a.findings


# --- uncorrected ECC, NVLink, PCIe ----------------------------------------------------------------


def test_one_new_uncorrected_ecc_error_fails() -> None:
    out = four(Gpu(uncorrected_total=1), Gpu(uncorrected_total=0))
    assert out[0].ecc_uncorrected_new == 1
    assert ids(out[0]) == {"burn.ecc-uncorrected-new": Severity.FAIL}
    assert "1 uncorrected ECC error counted while loaded" in load_problems(out[0])
    assert out[1].ecc_uncorrected_new == 0


@pytest.mark.parametrize(("rate", "fails"), [(100.0, True), (99.0, False)])
def test_nvlink_crc_fails_at_dcgm_100_a_second_on_one_link(rate: float, fails: bool) -> None:
    out = four(Gpu(crc_per_s={3: rate, 1: 5.0}), Gpu(crc_per_s={}))
    assert out[0].nvlink_crc_per_s_max == pytest.approx(rate)
    assert ("burn.nvlink-crc-rate" in ids(out[0])) is fails
    if fails:
        assert "on link 3" in out[0].findings[0].message
    assert out[1].nvlink_crc_per_s_max == 0.0


def test_any_nvlink_replay_while_loaded_fails_naming_the_link() -> None:
    out = four(Gpu(replay_total={2: 1}), Gpu(replay_total={}))
    assert out[0].nvlink_replay_new == 1
    [finding] = out[0].findings
    assert finding.id == "burn.nvlink-replay-recovery"
    assert finding.severity is Severity.FAIL
    assert "1 replay error while loaded, on 1 link 2" in finding.message
    assert out[0].nvlink_recovery_new is None
    assert out[0].missing["nvlink_recovery_new"] == "not in the trace"


@pytest.mark.parametrize(("per_min", "warns"), [(9.0, True), (8.0, False)])
def test_pcie_replays_warn_above_dcgm_8_a_minute(per_min: float, warns: bool) -> None:
    out = four(Gpu(pcie_per_min=per_min), Gpu(pcie_per_min=0.0))
    assert out[0].pcie_replays_per_min == pytest.approx(per_min, abs=0.2)
    assert ids(out[0]) == ({"burn.pcie-replay-rate": Severity.WARN} if warns else {})
    assert not is_problem(out[0])


# --- clocks, power and the cause ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clock", "percent", "severity"),
    [
        (1882.0, -4.9, None),
        (1881.0, -5.0, Severity.WARN),
        (1783.0, -9.9, Severity.WARN),
        (1782.0, -10.0, Severity.FAIL),
    ],
)
def test_clock_below_the_peers_median(clock: float, percent: float, severity: Severity | None) -> None:
    out = four(Gpu(clock=clock, reasons=["hw_thermal_slowdown", "hw_slowdown"]))
    assert out[0].sm_clock_vs_peers_percent == percent
    assert ids(out[0]).get("burn.clock-below-peers") == severity
    assert out[0].peers == [1, 2, 3]
    assert all(p.sm_clock_vs_peers_percent == 0.0 and not p.findings for p in out[1:])
    if severity is not None:
        message = out[0].findings[0].message
        assert f"{-percent:g}% under the 1980 MHz median of its 3 identical peers" in message
        assert "thermal (hw_thermal_slowdown 100% of the loaded time, its peers 0%)" in message


def test_a_clock_5_percent_under_fails_once_its_throughput_is_5_percent_under() -> None:
    out = four(Gpu(clock=1881.0, reasons=["sw_thermal_slowdown"]))
    assert ids(out[0])["burn.clock-below-peers"] is Severity.WARN
    for a, tflops in zip(out, (950.0, 1000.0, 1000.0, 1000.0), strict=True):  # what `rigcheck burn` measures
        a.tflops_sustained = tflops
    judge_peers(out, {i: TraceGpu(index=i, name=H100) for i in range(4)})
    [finding] = [f for f in out[0].findings if f.id == "burn.clock-below-peers"]
    assert finding.severity is Severity.FAIL
    assert "its throughput 5% under theirs" in finding.message
    out[0].tflops_sustained = 960.0
    judge_peers(out, {i: TraceGpu(index=i, name=H100) for i in range(4)})
    assert ids(out[0]) == {"burn.clock-below-peers": Severity.WARN}  # judged again, not added twice


@pytest.mark.parametrize(
    ("reasons", "cause"),
    [
        (["sw_power_cap"], "power cap (sw_power_cap 100% of the loaded time, its peers 0%)"),
        (["hw_power_brake_slowdown", "hw_slowdown"], "power brake (hw_power_brake_slowdown 100%"),
        (["hw_slowdown"], "hardware slowdown (hw_slowdown 100%"),
        (["sync_boost"], "sync boost (sync_boost 100%"),
        ([], "no clock-event reason held"),
        (None, "the cause is not in the trace"),
    ],
)
def test_the_cause_of_a_clock_deficit_comes_from_its_reasons(reasons: list[str] | None, cause: str) -> None:
    peer = Gpu(reasons=[] if reasons is not None else None)
    out = four(Gpu(clock=1800.0, reasons=reasons), peer)
    [finding] = [f for f in out[0].findings if f.id == "burn.clock-below-peers"]
    assert cause in finding.message


def test_a_reason_its_peers_share_is_not_the_cause() -> None:
    out = four(Gpu(clock=1800.0, reasons=["sw_power_cap"]), Gpu(reasons=["sw_power_cap"]))
    [finding] = [f for f in out[0].findings if f.id == "burn.clock-below-peers"]
    assert "no reason beyond its peers' (power cap (sw_power_cap 100% of the loaded time, its peers 100%))" in (
        finding.message
    )


@pytest.mark.parametrize(("power", "named"), [(665.0, True), (666.0, False)])
def test_power_below_the_peers_median_is_a_warning(power: float, named: bool) -> None:
    out = four(Gpu(power=power))
    assert out[0].power_vs_peers_percent == pytest.approx((power - 700) / 7, abs=0.05)
    assert ids(out[0]) == ({"burn.power-below-peers": Severity.WARN} if named else {})
    assert not is_problem(out[0])


def test_power_below_the_peers_explained_by_a_lower_limit() -> None:
    out = four(Gpu(power=500.0, limit=500.0))
    [finding] = out[0].findings
    assert "its power limit 500 W is under theirs (700 W)" in finding.message
    assert "-pl 700" in (finding.advice or "")


def test_gpus_of_another_model_are_not_peers() -> None:
    a100 = Gpu(name="NVIDIA A100-SXM4-80GB", clock=1410.0, power=400.0, limit=400.0, ecc_per_s=50.0)
    out = analyses(a100, a100, Gpu(ecc_per_s=0.0), Gpu(ecc_per_s=0.0))
    assert [a.peers for a in out] == [[1], [0], [3], [2]]
    assert all(a.sm_clock_vs_peers_percent == 0.0 and a.power_vs_peers_percent == 0.0 for a in out)
    # The A100s share their rate (the node, not a GPU): a warn each, never measured against the H100s' 0/s.
    assert [ids(a) for a in out] == [{"burn.ecc-corrected-rate": Severity.WARN}] * 2 + [{}, {}]


def test_without_the_model_there_are_no_peers() -> None:
    out = four(Gpu(name=None, clock=1500.0))
    assert out[0].peers == []
    assert out[0].missing["sm_clock_vs_peers_percent"] == "the GPU model is not in the trace"
    assert out[1].peers == [2, 3]
    assert not out[0].findings


# --- HBM gradient ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("memory", "named"), [(75.0, True), (74.9, False)])
def test_hbm_over_the_core_by_10_c(memory: float, named: bool) -> None:
    out = four(Gpu(memory=memory), Gpu(memory=70.0))
    assert out[0].hbm_gradient_c == pytest.approx(memory - 65)
    assert ids(out[0]) == ({"burn.hbm-gradient": Severity.WARN} if named else {})


def test_hbm_10_c_more_over_the_core_than_its_peers() -> None:
    out = four(Gpu(memory=65.0), Gpu(memory=55.0))
    assert out[0].hbm_gradient_c == 0.0
    [finding] = out[0].findings
    assert finding.id == "burn.hbm-gradient"
    assert "its peers' memory runs -10 C against their core" in finding.message


# --- what a trace does not hold ---------------------------------------------------------------------


def test_a_trace_without_the_counters_says_so_and_judges_nothing() -> None:
    out = four(Gpu(name=None), Gpu(name=None))
    for a in out:
        assert not a.findings
        assert not is_problem(a)
        for key in ("ecc_corrected_per_s", "ecc_uncorrected_new", "pcie_replays_per_min", "nvlink_crc_per_s_max"):
            assert getattr(a, key) is None
            assert a.missing[key] == "not in the trace"
        assert a.missing["hbm_gradient_c"] == "not in the trace"
        assert a.missing["sm_clock_vs_peers_percent"] == "the GPU model is not in the trace"


def test_a_healthy_four_gpu_trace_passes() -> None:
    healthy = Gpu(memory=60.0, ecc_per_s=0.0, uncorrected_total=0, pcie_per_min=0.0, crc_per_s={0: 1.0})
    out = analyses(healthy, healthy, healthy, healthy)
    for a in out:
        assert not a.findings
        assert not is_problem(a)
        assert (a.ecc_corrected_per_s, a.ecc_uncorrected_new, a.pcie_replays_per_min) == (0.0, 0, 0.0)
        assert a.nvlink_crc_per_s_max == 1.0
        assert (a.sm_clock_vs_peers_percent, a.power_vs_peers_percent, a.hbm_gradient_c) == (0.0, 0.0, -5.0)
        assert set(a.missing) == {k for k, v in a.model_dump().items() if v is None}


def test_a_gpu_never_loaded_has_no_rates_and_no_peers() -> None:
    t = trace(Gpu(ecc_per_s=5.0), Gpu(), Gpu(), Gpu())
    for s in t.samples:
        if s.gpu == 0:
            s.utilization_gpu_percent, s.power_draw_w = 0.0, 50.0
    out = analyze_trace(t)
    assert out[0].ecc_corrected_per_s is None
    assert out[0].missing["ecc_corrected_per_s"] == "the GPU was never loaded"
    assert out[0].missing["sm_clock_vs_peers_percent"] == "the GPU was never loaded"
    assert out[1].peers == [2, 3]


# --- the replay fixtures through the command (the check) -----------------------------------


def test_the_gb200_ecc_storm_fails_gpu2_on_its_rate_and_names_gpu3s_clock(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(ECC_STORM), "--json")
    assert result.code == 1, result.stderr
    gpus = [GpuBurnAnalysis.model_validate(g) for g in json.loads(result.stdout)["gpus"]]
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert [g.index for g in gpus if is_problem(g)] == [2, 3]  # neither GPU0 nor GPU1
    assert gpus[0].findings == gpus[1].findings == []
    assert gpus[2].ecc_corrected_per_s == 17_700
    [ecc] = gpus[2].findings
    assert (ecc.id, ecc.severity) == ("burn.ecc-corrected-rate", Severity.FAIL)
    assert "corrected ECC errors at 17,700/s under load" in ecc.message
    assert "3 identical peers (NVIDIA GB200: GPU 0, 1, 3) is 0/s" in ecc.message
    assert ecc.message in load_problems(gpus[2])
    [clock] = gpus[3].findings
    assert clock.id == "burn.clock-below-peers"
    assert gpus[3].sm_clock_vs_peers_percent == -7.0
    assert "7% under the 1980 MHz median of its 3 identical peers" in clock.message
    assert "thermal (hw_thermal_slowdown 67% of the loaded time, its peers 0%)" in clock.message
    # The one pass over the file's columns and the in-memory analysis agree.
    assert [g.model_dump() for g in gpus] == [a.model_dump() for a in analyze_trace(read_trace(str(ECC_STORM)))]
    terminal = rigcheck("burn", "--analyze", str(ECC_STORM))
    assert terminal.code == 1
    assert "FAIL burn.ecc-corrected-rate: corrected ECC errors at 17,700/s" in terminal.stdout
    assert "WARN burn.clock-below-peers: SM clock 1841 MHz under load" in terminal.stdout
    assert "problems on GPU 2, 3" in terminal.stdout


def test_the_h100_trace_names_the_gpu_5_percent_under_with_its_thermal_cause(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(CLOCK_5PCT), "--json")
    assert result.code == 1, result.stderr
    gpus = [GpuBurnAnalysis.model_validate(g) for g in json.loads(result.stdout)["gpus"]]
    assert [g.index for g in gpus if is_problem(g)] == [1]  # its HW thermal slowdown fails it
    assert all(not g.findings for g in gpus if g.index != 1)
    odd = gpus[1]
    assert (odd.sm_clock_vs_peers_percent, odd.power_vs_peers_percent) == (-5.0, -5.0)
    assert ids(odd) == {"burn.clock-below-peers": Severity.WARN, "burn.power-below-peers": Severity.WARN}
    assert "thermal (hw_thermal_slowdown 58% of the loaded time, its peers 0%)" in odd.findings[0].message
    assert "its SM clock 5% under theirs" in odd.findings[1].message
    # rigcheck's own trace carries every counter: read, and none climbed.
    for g in gpus:
        assert (g.ecc_corrected_per_s, g.ecc_uncorrected_new, g.pcie_replays_per_min) == (0.0, 0, 0.0)
        assert (g.nvlink_crc_per_s_max, g.nvlink_replay_new, g.nvlink_recovery_new) == (0.0, 0, 0)
