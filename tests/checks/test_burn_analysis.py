"""The burn analysis (rigcheck.checks.burn.judge) on the two real H100 traces and on synthetic edge cases,
and `burn --analyze` through a small Typer app."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from rigcheck.checks.burn.judge import analyze_trace, is_problem
from rigcheck.checks.doctor.power import BRAKE_ADVICE
from rigcheck.checks.doctor.thermal import COOLING_ADVICE
from rigcheck.model.burn import BURN_SCHEMA, GpuBurnAnalysis
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.model.trace import format_jsonl_row, write_jsonl_header
from rigcheck.readers.trace.stream import read_trace
from tests.support.cli import Rigcheck

TELEMETRY = Path(__file__).parent.parent / "fixtures" / "corpus" / "telemetry"
BURN = TELEMETRY / "smi-lms-torch-bf16-burn.csv"
LIGHT = TELEMETRY / "smi-lms-light-load.csv"
TRACES = Path(__file__).parent.parent / "fixtures" / "traces"


def _one(trace: Trace) -> GpuBurnAnalysis:
    [result] = analyze_trace(trace)
    return result


def _expected_from_file(path: Path) -> dict[str, float]:
    """The loaded-sample figures computed straight from the CSV, independently of rigcheck's reader.

    Loaded: utilization >= 50% or power >= 50% of the limit (the rule documented in checks/burn/judge.py).
    """
    with path.open() as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))

    def number(row: dict[str, str], key: str) -> float:
        return float(row[key].split()[0])

    loaded = [
        r
        for r in rows
        if number(r, "utilization.gpu [%]") >= 50 or number(r, "power.draw [W]") >= 0.5 * number(r, "power.limit [W]")
    ]
    capped = [r for r in loaded if int(r["clocks_event_reasons.active"], 16) & 0x4]
    return {
        "loaded": len(loaded),
        "cap_fraction": len(capped) / len(loaded),
        "power_median": statistics.median(number(r, "power.draw [W]") for r in loaded),
        "temp_max": max(float(r["temperature.gpu"]) for r in rows),
    }


# --- the real traces --------------------------------------------------------------------------------


def test_real_bf16_burn_is_power_capped_not_thermally_limited() -> None:
    expected = _expected_from_file(BURN)
    result = _one(read_trace(str(BURN)))
    assert result.limiter == "power"
    assert result.verdict == "excellent, power-limited"
    assert result.temp_c_max == 70
    assert result.temp_c_max == expected["temp_max"]
    assert expected["loaded"] == 443  # 441 capped samples, all of them while loaded
    assert result.reasons_time_fraction["sw_power_cap"] == pytest.approx(expected["cap_fraction"], abs=1e-9)
    assert result.reasons_time_fraction["sw_power_cap"] == pytest.approx(441 / 443)
    assert set(result.reasons_time_fraction) == set(CLOCK_EVENT_REASONS)
    assert result.reasons_time_fraction["sw_thermal_slowdown"] == 0
    assert result.power_draw_w_median_loaded == pytest.approx(expected["power_median"])
    assert 698 <= (result.power_draw_w_median_loaded or 0) <= 700
    assert result.power_enforced_limit_w == 700
    # the SM clock falls from its 1980 MHz max to ~1.3-1.4 GHz under the cap
    assert result.sm_clock_max_mhz == 1980
    assert 1300 <= (result.sm_clock_mhz_sustained or 0) <= 1400
    assert 1300 <= (result.sm_clock_mhz_median_loaded or 0) <= 1400
    assert 29 <= (result.sm_clock_drop_percent or 0) <= 35
    assert result.loaded_s == pytest.approx(443 * 0.1025, rel=0.02)
    assert result.time_to_power_cap_s == 0.0  # SW power cap is on from the first loaded sample
    assert result.temp_rise_c == 16  # 54 C at the first loaded sample, 70 C peak
    assert 68 <= (result.temp_plateau_c or 0) <= 70
    assert result.temp_slowdown_c is None
    assert result.slowdown_margin_c is None
    assert "power cap at work" in result.advice
    assert not is_problem(result)


def test_real_light_load_is_not_limited() -> None:
    expected = _expected_from_file(LIGHT)
    result = _one(read_trace(str(LIGHT)))
    assert result.limiter == "none"
    assert result.verdict == "excellent, not limited"
    assert result.temp_c_max == 62
    assert result.reasons_time_fraction["sw_power_cap"] == 0
    assert expected["cap_fraction"] == 0
    assert result.time_to_power_cap_s is None
    assert result.power_draw_w_median_loaded == pytest.approx(expected["power_median"])
    assert 400 <= (result.power_draw_w_median_loaded or 0) < 0.95 * 700
    assert result.sm_clock_drop_percent == 0
    assert result.loaded_s > 40
    assert not is_problem(result)


# --- a reason for every null -----------------------------------------------------------------------


def _nulls(a: GpuBurnAnalysis) -> set[str]:
    return {key for key, value in a.model_dump().items() if value is None}


ALL_TRACES = sorted(TELEMETRY.glob("*.csv")) + sorted(TRACES.glob("*.csv"))


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: p.stem)
def test_every_null_number_has_its_reason_and_only_those(path: Path) -> None:
    for a in analyze_trace(read_trace(str(path))):
        assert set(a.missing) == _nulls(a)
        assert all(isinstance(why, str) and why for why in a.missing.values())


def test_reasons_on_the_real_burn_trace() -> None:
    result = _one(read_trace(str(BURN)))  # nvidia-smi --query-gpu CSV: no slowdown threshold in it
    assert result.missing == {
        "temp_slowdown_c": "not in the trace",
        "slowdown_margin_c": "the slowdown threshold is not in the trace",
        "lost_at_s": "not lost",
        "tflops_sustained": "not measured by --analyze",
        "tflops_first_10s": "not measured by --analyze",
        "errors": "not measured by --analyze",
        # The counters and the peers (issue 28): this query read no error counter, nor the GPU's name.
        **dict.fromkeys(
            (
                "ecc_corrected_per_s",
                "ecc_uncorrected_new",
                "pcie_replays_per_min",
                "nvlink_crc_per_s_max",
                "nvlink_replay_new",
                "nvlink_recovery_new",
            ),
            "not in the trace",
        ),
        "sm_clock_vs_peers_percent": "the GPU model is not in the trace",
        "power_vs_peers_percent": "the GPU model is not in the trace",
    }


def test_reasons_on_the_light_load_that_never_capped() -> None:
    result = _one(read_trace(str(LIGHT)))
    assert result.time_to_power_cap_s is None
    assert result.missing["time_to_power_cap_s"] == "never reached the cap"
    assert result.missing["temp_slowdown_c"] == "not in the trace"


def test_reasons_when_never_loaded_lost_or_columns_absent() -> None:
    idle = _one(trace_of(ramp(100, util=3, power=60, temp=(35, 36), clock=345, reasons=["idle"])))
    for key in ("power_draw_w_median_loaded", "sm_clock_mhz_median_loaded", "time_to_power_cap_s", "temp_rise_c"):
        assert idle.missing[key] == "the GPU was never loaded"
    assert "temp_c_max" not in idle.missing  # 36 C: a number, no reason
    lost = _one(trace_of([*ramp(30, power=300, reasons=["sw_power_cap"]), Sample(t_s=3.0, gpu=0, lost=True)]))
    assert lost.lost_at_s == 3.0
    assert "lost_at_s" not in lost.missing
    bare = _one(trace_of(ramp(50, power=None, limit=None, temp=None, clock=None, clock_max=None, reasons=None)))
    assert bare.loaded_s > 0  # utilization says so
    keys = (
        "power_draw_w_median_loaded",
        "power_enforced_limit_w",
        "temp_c_max",
        "temp_rise_c",
        "sm_clock_drop_percent",
    )
    for key in keys:
        assert bare.missing[key] == "not in the trace"
    assert bare.missing["time_to_power_cap_s"] == "not in the trace"  # no power, limit or reasons: cannot tell
    assert set(bare.missing) == _nulls(bare)
    short = _one(trace_of(ramp(20, power=200, reasons=[])))  # 2 s of load: no sustained clock after 3 s
    assert short.missing["sm_clock_mhz_sustained"] == "no SM clock reading after the first 3 s of load"
    assert short.missing["time_to_power_cap_s"] == "never reached the cap"
    assert set(short.missing) == _nulls(short)


# --- synthetic traces -------------------------------------------------------------------------------


def ramp(
    n: int,
    *,
    gpu: int = 0,
    t0: float = 0.0,
    util: float | None = 100.0,
    power: float | None = 300.0,
    limit: float | None = 300.0,
    temp: tuple[float, float] | None = (50.0, 70.0),
    clock: float | None = 1800.0,
    clock_max: float | None = 1980.0,
    reasons: list[str] | None = None,
) -> list[Sample]:
    """n samples 0.1 s apart, the temperature rising linearly from temp[0] to temp[1]."""
    out = []
    for k in range(n):
        t = None if temp is None else temp[0] + (temp[1] - temp[0]) * k / max(1, n - 1)
        out.append(
            Sample(
                t_s=round(t0 + k * 0.1, 3),
                gpu=gpu,
                power_draw_w=power,
                power_enforced_limit_w=limit,
                temp_c=t,
                sm_clock_mhz=clock,
                sm_clock_max_mhz=clock_max,
                utilization_gpu_percent=util,
                reasons=list(reasons) if reasons is not None else None,
            )
        )
    return out


def trace_of(samples: list[Sample], *gpus: TraceGpu) -> Trace:
    return Trace(source="test", samples=samples, gpus={g.index: g for g in gpus}, interval_s=0.1)


def test_thermal_slowdown_at_the_threshold() -> None:
    idle = ramp(20, util=0, power=50, temp=(40, 40), clock=300, reasons=["idle"])
    warm = ramp(50, t0=2.0, power=280, temp=(60, 86), reasons=[])
    hot = ramp(50, t0=7.0, power=260, temp=(87, 87), clock=1400, reasons=["sw_thermal_slowdown"])
    result = _one(trace_of(idle + warm + hot, TraceGpu(index=0, temp_slowdown_c=87.0)))
    assert result.limiter == "thermal"
    assert result.verdict == "throttling, thermally limited"
    assert result.temp_c_max == 87
    assert result.slowdown_margin_c == 0
    assert result.reasons_time_fraction["sw_thermal_slowdown"] == pytest.approx(0.5)
    assert result.temp_rise_c == pytest.approx(27)
    assert result.temp_plateau_c == 87
    assert result.sm_clock_drop_percent == pytest.approx((1980 - 1400) / 1980 * 100, abs=0.1)
    assert result.loaded_s == pytest.approx(10.0)
    assert COOLING_ADVICE in result.advice
    assert is_problem(result)


def test_hw_slowdown_alone_near_the_threshold_counts_as_thermal() -> None:
    samples = ramp(40, power=250, temp=(85, 86), reasons=["hw_slowdown"])
    result = _one(trace_of(samples, TraceGpu(index=0, temp_slowdown_c=89.0)))
    assert result.limiter == "thermal"  # 85-86 C is within 5 C of 89 C


def test_hw_power_brake_is_power_limited_with_cable_advice() -> None:
    ok = ramp(70, power=250, temp=(55, 65), reasons=[])
    brake = ramp(30, t0=7.0, power=150, temp=(65, 65), clock=900, reasons=["hw_slowdown", "hw_power_brake_slowdown"])
    result = _one(trace_of(ok + brake, TraceGpu(index=0, temp_slowdown_c=87.0)))
    assert result.limiter == "power"  # hw_slowdown with a power brake is not thermal
    assert result.verdict == "excellent, power-limited"
    assert result.reasons_time_fraction["hw_power_brake_slowdown"] == pytest.approx(0.3)
    assert result.advice == BRAKE_ADVICE
    assert is_problem(result)  # 3 s of brake


def test_gpu_lost_mid_trace_is_analysed_up_to_the_loss() -> None:
    before = ramp(30, power=300, temp=(60, 70), reasons=["sw_power_cap"])
    lost = Sample(t_s=3.0, gpu=0, lost=True)
    after = ramp(10, t0=3.1, power=999, temp=(99, 99), reasons=["hw_thermal_slowdown"])  # ignored
    result = _one(trace_of([*before, lost, *after]))
    assert result.lost_at_s == 3.0
    assert result.verdict == "excellent, power-limited; GPU lost at 3.0 s"
    assert result.temp_c_max == 70
    assert result.loaded_s == pytest.approx(3.0)
    assert "fell off the bus" in result.advice
    assert is_problem(result)


def test_gpu_lost_in_an_nvidia_smi_trace() -> None:
    gpu0, gpu1 = analyze_trace(read_trace(str(TRACES / "smi-gpu-lost.csv")))
    assert gpu0.lost_at_s is None
    assert not is_problem(gpu0)
    assert gpu1.lost_at_s == pytest.approx(3.0)
    assert gpu1.loaded_s == pytest.approx(3.0)
    assert is_problem(gpu1)


def test_gpu_whose_samples_stop_while_others_go_on_is_lost() -> None:
    samples = ramp(100, gpu=0, reasons=[]) + ramp(30, gpu=1, reasons=[])
    gpu0, gpu1 = analyze_trace(trace_of(samples))
    assert gpu0.lost_at_s is None
    assert gpu1.lost_at_s == pytest.approx(3.0)
    assert "lost" in gpu1.verdict


def test_never_loaded_gpu() -> None:
    result = _one(trace_of(ramp(100, util=3, power=60, temp=(35, 36), clock=345, reasons=["idle"])))
    assert result.limiter == "unknown"
    assert result.verdict == "not loaded"
    assert result.loaded_s == 0
    assert result.reasons_time_fraction == {}
    assert result.power_draw_w_median_loaded is None
    assert result.temp_c_max == 36
    assert "never loads" in result.advice
    assert not is_problem(result)


def test_without_reasons_the_limiter_is_inferred_or_unknown() -> None:
    capped = _one(trace_of(ramp(50, power=296, reasons=None)))
    assert capped.limiter == "power"  # 296 of 300 W >= 95%
    assert capped.reasons_time_fraction == {}
    free = _one(trace_of(ramp(50, power=200, reasons=None)))
    assert free.limiter == "none"
    assert free.verdict == "excellent, not limited"
    blind = _one(trace_of(ramp(50, power=200, limit=None, reasons=None)))
    assert blind.limiter == "unknown"
    assert blind.verdict == "excellent, limiter unknown"
    assert "no clock-event reasons" in blind.advice
    hot = _one(trace_of(ramp(50, power=200, temp=(80, 88), reasons=None), TraceGpu(index=0, temp_slowdown_c=88)))
    assert hot.limiter == "thermal"


@pytest.mark.parametrize(
    ("peak", "band"), [(75.0, "excellent"), (79.0, "good"), (80.0, "hot"), (83.9, "hot"), (84.0, "throttling")]
)
def test_guide_bands_on_the_peak(peak: float, band: str) -> None:
    result = _one(trace_of(ramp(20, power=200, temp=(50, peak), reasons=[])))
    assert result.verdict == f"{band}, not limited"
    assert (COOLING_ADVICE in result.advice) == (band in {"hot", "throttling"})
    assert is_problem(result) == (band == "throttling")


def test_two_gpus_interleaved_get_their_own_verdicts() -> None:
    a = ramp(50, gpu=0, power=299, reasons=["sw_power_cap"])
    b = ramp(50, gpu=1, power=150, util=90, temp=(60, 82), reasons=[])
    interleaved = [s for pair in zip(a, b, strict=True) for s in pair]
    gpu0, gpu1 = analyze_trace(trace_of(interleaved))
    assert (gpu0.index, gpu0.verdict) == (0, "excellent, power-limited")
    assert (gpu1.index, gpu1.verdict) == (1, "hot, not limited")
    assert gpu0.loaded_s == gpu1.loaded_s == pytest.approx(5.0)


def test_reordered_nounits_fixture() -> None:
    gpu0, gpu1 = analyze_trace(read_trace(str(TRACES / "smi-reordered-nounits-2gpu.csv")))
    assert gpu0.limiter == "power"
    assert gpu0.loaded_s == pytest.approx(4.0)  # 40 of 60 samples
    assert gpu0.reasons_time_fraction["sw_power_cap"] == 1.0
    assert gpu0.temp_c_max == 59
    assert gpu1.limiter == "none"  # 60% utilization, 150 of 300 W, no reasons
    assert gpu1.loaded_s == pytest.approx(6.0)


def test_limit_below_default_says_raise_it() -> None:
    samples = ramp(50, power=248, limit=250, reasons=["sw_power_cap"])
    result = _one(trace_of(samples, TraceGpu(index=0, power_default_limit_w=350.0)))
    assert result.limiter == "power"
    assert "below the card's default 350 W" in result.advice
    assert "-pl 350" in result.advice
    at_default = _one(trace_of(samples, TraceGpu(index=0, power_default_limit_w=250.0)))
    assert "nothing to fix" in at_default.advice


def test_time_to_power_cap_and_clock_drop_from_first_seconds() -> None:
    # no max clock in the trace: the drop is from the first 3 s of load (1900 MHz) to the rest (1520 MHz)
    rising = ramp(20, power=200, clock=1900, clock_max=None, reasons=[])
    capped = ramp(60, t0=2.0, power=300, clock=1900, clock_max=None, reasons=[])
    rest = ramp(40, t0=8.0, power=300, clock=1520, clock_max=None, reasons=[])
    result = _one(trace_of(rising + capped + rest))
    assert result.time_to_power_cap_s == pytest.approx(2.0)
    assert result.sm_clock_mhz_first == 1900
    assert result.sm_clock_mhz_sustained == 1900  # 3 s .. 12 s: 50 samples at 1900, 40 at 1520
    all_rest = _one(trace_of(ramp(30, clock=1900, clock_max=None, reasons=[]) + rest))
    assert all_rest.sm_clock_drop_percent == pytest.approx(20.0)


def test_clock_decides_load_only_without_utilization_and_power() -> None:
    busy = ramp(30, util=None, power=None, clock=1700, reasons=[])
    idle = ramp(30, t0=3.0, util=None, power=None, clock=1980, reasons=["idle"])  # an idle card may sit at max
    result = _one(trace_of(busy + idle))
    assert result.loaded_s == pytest.approx(3.0)


# --- the command ------------------------------------------------------------------------------------


def _jsonl(tmp_path: Path, samples: list[Sample], *gpus: TraceGpu) -> Path:
    out = io.StringIO()
    write_jsonl_header(out, gpus, interval_s=0.1, started_at=None)
    for s in samples:
        out.write(format_jsonl_row(s))
    path = tmp_path / "trace.jsonl"
    path.write_text(out.getvalue())
    return path


CONTRACT_KEYS = {
    "index",
    "loaded_s",
    "power_draw_w_median_loaded",
    "power_enforced_limit_w",
    "temp_c_max",
    "temp_slowdown_c",
    "sm_clock_mhz_median_loaded",
    "reasons_time_fraction",
    "limiter",
    "verdict",
    "advice",
}


def test_cli_json_on_the_real_burn(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(BURN), "--json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == BURN_SCHEMA
    assert data["source"] == "nvidia-smi-csv"
    [gpu] = data["gpus"]
    assert set(gpu) >= CONTRACT_KEYS
    assert gpu["limiter"] == "power"
    assert gpu["temp_c_max"] == 70
    assert gpu["temp_slowdown_c"] is None
    assert gpu["reasons_time_fraction"]["sw_power_cap"] == pytest.approx(441 / 443)
    assert gpu == _one(read_trace(str(BURN))).model_dump(mode="json")


def test_cli_terminal_on_the_light_load(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(LIGHT))
    assert result.code == 0, result.stderr
    text = result.stdout
    assert "\x1b[" not in text
    assert "GPU0  excellent, not limited" in text
    assert "62 C peak" in text
    assert "clock-event reasons while loaded: none" in text
    assert "advice: nothing held the clocks back" in text


def test_cli_exit_1_when_thermally_throttling(tmp_path: Path, rigcheck: Rigcheck) -> None:
    samples = ramp(50, power=250, temp=(80, 90), reasons=["hw_thermal_slowdown"])
    path = _jsonl(tmp_path, samples, TraceGpu(index=0, temp_slowdown_c=88.0))
    result = rigcheck("burn", "--analyze", str(path), "--json")
    assert result.code == 1
    data = json.loads(result.stdout)
    assert data["exit_code"] == 1
    assert data["gpus"][0]["limiter"] == "thermal"
    assert data["gpus"][0]["temp_slowdown_c"] == 88
    assert data["gpus"][0]["slowdown_margin_c"] == -2
    terminal = rigcheck("burn", "--analyze", str(path))
    assert terminal.code == 1
    assert "GPU0  throttling, thermally limited" in terminal.stdout
    assert "peak (rise 10 C, plateau 89 C), 2 C over the card's 88 C slowdown" in terminal.stdout
    assert "problems on GPU 0" in terminal.stdout


def test_cli_exit_1_when_a_gpu_is_lost(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(TRACES / "smi-gpu-lost.csv"))
    assert result.code == 1
    assert "GPU lost at 3.0 s" in result.stdout


def test_cli_truncated_file_notes_it_on_stderr(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(TRACES / "smi-truncated.csv"), "--json")
    assert result.code == 0
    assert "last line is incomplete" in result.stderr
    assert json.loads(result.stdout)["diagnostics"][0].endswith("skipped, as a write cut short")


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02", b"hello, world\n1, 2\n"])
def test_cli_bad_input_exit_2_one_line(tmp_path: Path, content: bytes, rigcheck: Rigcheck) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    result = rigcheck("burn", "--analyze", str(path), "--json")
    assert result.code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"rigcheck: error: {path}")
    assert "Traceback" not in result.stderr


# --- what `burn --analyze` loads ------------------------------------------------------------------------
_HEAVY = ("pynvml", "rigcheck.probe.nvml", "http.server", "torch", "rigcheck.report.burn.html", "rigcheck.report.svg")
_LOADED = f"""
import sys
from rigcheck.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(m for m in {_HEAVY!r} if m in sys.modules))
"""


def _heavy_modules_loaded(*argv: str) -> set[str]:
    """The heavy modules a `rigcheck ARGV` run in a fresh interpreter has imported by its end."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, check=True)
    return set(done.stdout.splitlines()[-1].split()) if done.stdout.strip() else set()


def test_analyze_loads_neither_nvml_nor_the_page_unless_asked(tmp_path: Path) -> None:
    assert _heavy_modules_loaded("burn", "--analyze", str(LIGHT), "--json") == set()
    page = tmp_path / "burn.html"
    loaded = _heavy_modules_loaded("burn", "--analyze", str(LIGHT), "--html", str(page))
    assert loaded == {"rigcheck.report.burn.html", "rigcheck.report.svg"}
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_a_log_without_an_sm_clock_takes_the_graphics_clock(tmp_path: Path) -> None:
    """`--query-gpu=...,clocks.gr` (or clocks.current.graphics) is how many logs record the clock: one domain
    with the SM clock. Where both are there, the SM column wins."""
    header = "timestamp, index, power.draw [W], power.limit [W], utilization.gpu [%], clocks.current.graphics [MHz]"
    rows = [f"2026/01/01 00:00:{i:02d}.000, 0, 211.4, 212.5, 98, {1771 + i}" for i in range(5)]
    graphics = tmp_path / "graphics.csv"
    graphics.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    assert [s.sm_clock_mhz for s in read_trace(str(graphics)).samples] == [1771.0, 1772.0, 1773.0, 1774.0, 1775.0]
    both = tmp_path / "both.csv"
    both.write_text(
        "\n".join([f"{header}, clocks.sm [MHz]", *(f"{row}, 1500" for row in rows)]) + "\n", encoding="utf-8"
    )
    assert {s.sm_clock_mhz for s in read_trace(str(both)).samples} == {1500.0}
