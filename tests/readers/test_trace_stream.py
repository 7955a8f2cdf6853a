"""One-pass reading and analysis of traces (issue #13): the streaming verdict equals the in-memory one, and input
that never ends still ends in one error."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import pytest

from rigcheck.checks.burn.judge import BurnAggregator, analyze_trace
from rigcheck.errors import InputError
from rigcheck.model.telemetry import Sample, counter_median
from rigcheck.readers.trace.stream import TraceStream, read_trace

BURN = Path(__file__).parent.parent / "fixtures" / "corpus" / "telemetry" / "smi-lms-torch-bf16-burn.csv"


def _stream_analysis(path: str) -> list[dict[str, object]] | None:
    stream = TraceStream(path)
    agg = BurnAggregator(stream.header.gpus)
    for sample in stream:
        agg.add(sample)
    result = agg.finish(stream.header.interval_s)
    return None if result is None else [a.model_dump() for a in result]


def _replicated(tmp_path: Path, copies: int) -> str:
    """The real H100 trace repeated back to back on two GPUs (so the plateau and the medians span the copies)."""
    lines = BURN.read_text().splitlines()
    out = [lines[0]]
    for k in range(copies):
        for row in lines[1:]:
            cells = row.split(", ")
            stamp = cells[0]
            minute = int(stamp[14:16]) + k  # the source spans under a minute: one minute per copy
            when = f"{stamp[:11]}{int(stamp[11:13]) + minute // 60:02d}:{minute % 60:02d}{stamp[16:]}"
            out += [", ".join([when, str(g), *cells[2:]]) for g in (0, 1)]
    path = tmp_path / "replicated.csv"
    path.write_text("\n".join(out) + "\n")
    return str(path)


@pytest.mark.parametrize("copies", [1, 3])
def test_one_pass_equals_the_analysis_in_memory(tmp_path: Path, copies: int) -> None:
    path = _replicated(tmp_path, copies)
    expected = [a.model_dump() for a in analyze_trace(read_trace(path))]
    assert _stream_analysis(path) == expected
    assert expected[0]["loaded_s"] > 0


def test_samples_out_of_order_ask_for_the_analysis_in_memory() -> None:
    agg = BurnAggregator({})
    for t in (0.0, 0.2, 0.1):
        agg.add(Sample(t_s=t, gpu=0, utilization_gpu_percent=100.0, power_draw_w=300.0, power_enforced_limit_w=400.0))
    assert agg.finish(0.1) is None


def test_clock_only_trace_whose_ceiling_rises_asks_for_the_analysis_in_memory() -> None:
    agg = BurnAggregator({})
    agg.add(Sample(t_s=0.0, gpu=0, sm_clock_mhz=900.0))
    agg.add(Sample(t_s=0.1, gpu=0, sm_clock_mhz=900.0, sm_clock_max_mhz=1980.0))
    assert agg.finish(0.1) is None


def test_an_endless_input_ends_in_one_error() -> None:
    with pytest.raises(InputError, match="NUL"):
        list(TraceStream("/dev/zero"))


def test_a_line_without_end_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rigcheck.inputs.STREAM_MAX_LINE", 1000)
    path = tmp_path / "long.csv"
    path.write_text("timestamp, index, power.draw [W]\n" + "x" * 5000)
    with pytest.raises(InputError, match="longer than"):
        list(TraceStream(str(path)))


def test_counter_median_is_statistics_median() -> None:
    rng = random.Random(13)
    for n in range(1, 60):
        values = [float(rng.randint(0, 9)) / 4 for _ in range(n)]
        counts: dict[float, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        assert counter_median(counts) == statistics.median(values)
    assert counter_median({}) is None
