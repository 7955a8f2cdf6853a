"""`nvidia-smi dmon` output as a telemetry trace (rigcheck.readers.trace.dmon, through read_trace / TraceStream and
`burn --analyze`): the real captures in tests/fixtures/traces/ and the corpus, then each layout dmon prints."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from rigcheck.checks.burn.judge import NOT_IN_TRACE, analyze_trace
from rigcheck.errors import ParseError
from rigcheck.model.telemetry import Sample, Trace
from rigcheck.readers.trace.dmon import header_names
from rigcheck.readers.trace.stream import TraceStream, read_trace
from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRACES = FIXTURES / "traces"
H200_BURN = TRACES / "dmon-h200-pucv-DT-burn.txt"
GTX_2GPU = TRACES / "dmon-gtx1050ti-2gpu-pucvmet.txt"
CTRL_C = TRACES / "dmon-pucvmet-DT-ctrlc.txt"
H100_IDLE = FIXTURES / "corpus" / "h100-vm" / "dmon.txt"

DEFAULT_HEADER = (
    "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
    "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz\n"
)


def _read(tmp_path: Path, text: str) -> Trace:
    path = tmp_path / "dmon.txt"
    path.write_text(text)
    return read_trace(str(path))


def vars_of(sample: Sample) -> dict[str, object]:
    return {f.name: getattr(sample, f.name) for f in fields(sample)}


def _values(trace: Trace, gpu: int, name: str) -> list[float | None]:
    return [getattr(s, name) for s in trace.for_gpu(gpu)]


# --- real captures --------------------------------------------------------------------------------------


def test_h200_burn_with_date_and_time() -> None:
    trace = read_trace(str(H200_BURN))
    assert trace.source == "nvidia-smi-dmon"
    assert len(trace.samples) == 30
    assert trace.interval_s == 1.0
    assert trace.diagnostics == []
    first, loaded, last = trace.samples[0], trace.samples[11], trace.samples[-1]
    assert first == Sample(0.0, 0, 78.0, None, 38.0, 37.0, 345.0, None, 3201.0, 0.0, None)
    assert loaded == Sample(11.0, 0, 676.0, None, 56.0, 43.0, 1320.0, None, 3201.0, 100.0, None)
    assert last == Sample(29.0, 0, 127.0, None, 43.0, 43.0, 1980.0, None, 3201.0, 0.0, None)
    assert max(_values(trace, 0, "temp_c")) == 63.0  # type: ignore[type-var]
    assert trace.gpus == {}  # dmon prints no name, no limit


def test_gtx1050ti_two_gpus_old_driver_no_power() -> None:
    """Driver 390: `temp` for gtemp, no mtemp; a GeForce prints '-' for its power; GPUs interleave."""
    trace = read_trace(str(GTX_2GPU))
    assert [s.gpu for s in trace.samples] == [0, 1] * 4
    assert [s.t_s for s in trace.for_gpu(1)] == [0.0, 1.0, 2.0, 3.0]
    assert _values(trace, 0, "temp_c") == [50.0, 51.0, 51.0, 51.0]
    assert _values(trace, 0, "utilization_gpu_percent") == [91.0, 94.0, 59.0, 91.0]
    assert _values(trace, 0, "sm_clock_mhz") == [1784.0, 1784.0, 1784.0, 1771.0]
    assert _values(trace, 1, "sm_clock_mhz") == [1341.0] * 4
    assert _values(trace, 1, "mem_clock_mhz") == [3504.0] * 4
    assert all(s.power_draw_w is None and s.temp_memory_c is None for s in trace.samples)
    assert trace.interval_s == 1.0
    path = str(GTX_2GPU)
    assert trace.diagnostics == [
        f"{path}: pwr is '-' (the GPU does not report it): GPU 0 in 4 of 4 rows, GPU 1 in 4 of 4 rows; "
        "missing there, not 0",
        f"{path}: no Time column: samples taken to be 1 s apart (dmon's default -d 1; record with -o DT to keep "
        "the times)",
    ]


def test_ctrl_c_capture_skips_the_cut_last_line() -> None:
    """Every group (-s pucvmet) with -o DT; the terminal's ^C landed inside the last row."""
    trace = read_trace(str(CTRL_C))
    assert [s.t_s for s in trace.samples] == [0.0, 1.0, 2.0]
    assert {(s.power_draw_w, s.temp_c, s.temp_memory_c, s.mem_clock_mhz, s.sm_clock_mhz) for s in trace.samples} == {
        (6.0, 38.0, None, 405.0, 180.0)
    }
    assert trace.diagnostics[0] == (
        f"{CTRL_C}:6: last line is incomplete (25 fields, expected 24); skipped, as a write cut short"
    )
    assert "mtemp is '-'" in trace.diagnostics[1]


def test_h100_idle_corpus_capture() -> None:
    trace = read_trace(str(H100_IDLE))
    assert _values(trace, 0, "power_draw_w") == [74.0, 74.0, 73.0]
    assert _values(trace, 0, "temp_c") == [43.0, 42.0, 42.0]
    assert _values(trace, 0, "temp_memory_c") == [46.0, 46.0, 45.0]
    assert _values(trace, 0, "sm_clock_mhz") == [345.0] * 3


# --- layouts ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "row", "expected"),
    [
        ("# gpu   mclk   pclk", "    0   3201   1980", {"mem_clock_mhz": 3201.0, "sm_clock_mhz": 1980.0}),
        (
            "# gpu    pwr  gtemp  mtemp",
            "    0    690     62     50",
            {"power_draw_w": 690.0, "temp_c": 62.0, "temp_memory_c": 50.0},
        ),
        ("# gpu     sm    mem    enc    dec", "    0     99     25      0      0", {"utilization_gpu_percent": 99.0}),
        ("# gpu  pviol  tviol     fb   pclk", "    0    100      0   4580   1500", {"sm_clock_mhz": 1500.0}),
        ("# pclk   gpu    pwr", "    1980    0    690", None),  # gpu first, after any Date / Time: not dmon
        (
            "# gpu  pclk  pwr  sm",
            "    0   1500  690  100",
            {"sm_clock_mhz": 1500.0, "power_draw_w": 690.0, "utilization_gpu_percent": 100.0},
        ),
    ],
)
def test_columns_are_found_by_name_in_any_subset_and_order(
    tmp_path: Path, header: str, row: str, expected: dict[str, float] | None
) -> None:
    if expected is None:
        assert header_names(header) is None
        return
    [sample] = _read(tmp_path, f"{header}\n# Idx  x  x  x  x\n{row}\n").samples
    read = {name: v for name, v in vars_of(sample).items() if v is not None and name not in ("t_s", "gpu", "lost")}
    assert read == expected


def test_date_and_time_give_the_interval_across_midnight(tmp_path: Path) -> None:
    rows = ["20261231 23:59:50", "20261231 23:59:55", "20270101 00:00:00", "20270101 00:00:05"]
    text = "#Date Time gpu pwr\n#YYYYMMDD HH:MM:SS Idx W\n" + "".join(f" {r}  0  100\n {r}  1  200\n" for r in rows)
    trace = _read(tmp_path, text)
    assert [s.t_s for s in trace.for_gpu(1)] == [0.0, 5.0, 10.0, 15.0]
    assert trace.interval_s == 5.0  # -d 5, read from the times
    assert trace.diagnostics == []


def test_time_alone_rolls_over_midnight(tmp_path: Path) -> None:
    text = "#Time gpu sm\n#HH:MM:SS Idx %\n 23:59:58 0 50\n 23:59:59 0 60\n 00:00:00 0 70\n 00:00:01 0 80\n"
    assert [s.t_s for s in _read(tmp_path, text).samples] == [0.0, 1.0, 2.0, 3.0]


def test_date_alone_is_no_time(tmp_path: Path) -> None:
    trace = _read(tmp_path, "#Date gpu sm\n#YYYYMMDD Idx %\n 20261126 0 50\n 20261126 0 60\n 20261126 0 70\n")
    assert [s.t_s for s in trace.samples] == [0.0, 1.0, 2.0]
    assert trace.interval_s == 1.0
    assert "no Time column: samples taken to be 1 s apart" in trace.diagnostics[0]


def test_repeated_header_blocks_are_skipped_and_a_new_one_is_read(tmp_path: Path) -> None:
    row = "    0     73     33     40      0      0      0      0      0      0   2619   1980\n"
    restarted = "# gpu    pwr  gtemp\n# Idx      W      C\n    0    400     55\n"  # dmon run again with -s p
    trace = _read(tmp_path, DEFAULT_HEADER + row * 2 + DEFAULT_HEADER + row + restarted)
    assert _values(trace, 0, "power_draw_w") == [73.0, 73.0, 73.0, 400.0]
    assert _values(trace, 0, "sm_clock_mhz") == [1980.0, 1980.0, 1980.0, None]
    assert [s.t_s for s in trace.samples] == [0.0, 1.0, 2.0, 3.0]


def test_dash_is_missing_never_zero(tmp_path: Path) -> None:
    rows = "    0      -     44      -     29      5      0      0      -      -    405    210\n" * 2
    rows += "    0     12     44      -     29      5      0      0      -      -    405    210\n"
    trace = _read(tmp_path, DEFAULT_HEADER + rows)
    assert _values(trace, 0, "power_draw_w") == [None, None, 12.0]
    assert _values(trace, 0, "temp_memory_c") == [None] * 3
    dashes = [d for d in trace.diagnostics if "is '-'" in d]
    assert len(dashes) == 2
    assert "pwr is '-' (the GPU does not report it): GPU 0 in 2 of 3 rows" in dashes[0]
    assert "mtemp is '-' (the GPU does not report it): GPU 0 in 3 of 3 rows" in dashes[1]  # jpg, ofa: unused


def test_cut_last_line_is_skipped_like_the_csv_reader(tmp_path: Path) -> None:
    row = "    0     73     33     40      0      0      0      0      0      0   2619   1980\n"
    trace = _read(tmp_path, DEFAULT_HEADER + row * 3 + "    0     73     33     4")
    assert len(trace.samples) == 3
    assert trace.diagnostics[0].endswith(
        ":6: last line is incomplete (4 fields, expected 12); skipped, as a write cut short"
    )


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("    0     73     33     4\n", "4 fields, expected 12"),
        ("    0     73    hot     40      0      0      0      0      0      0   2619   1980\n", "gtemp: 'hot'"),
        ("    0    nan     33     40      0      0      0      0      0      0   2619   1980\n", "pwr: 'nan'"),
        ("    x     73     33     40      0      0      0      0      0      0   2619   1980\n", "gpu 'x'"),
    ],
)
def test_a_bad_row_before_the_end_is_one_parse_error(tmp_path: Path, bad: str, words: str) -> None:
    row = "    0     73     33     40      0      0      0      0      0      0   2619   1980\n"
    path = tmp_path / "dmon.txt"
    path.write_text(DEFAULT_HEADER + row + bad + row)
    with pytest.raises(ParseError) as info:
        read_trace(str(path))
    assert info.value.line == 4
    assert words in str(info.value)


def test_bad_time_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "dmon.txt"
    path.write_text("#Date Time gpu sm\n 20261126 25:00:00 0 50\n 20261126 11:00:00 0 50\n")
    with pytest.raises(ParseError, match="'YYYYMMDD HH:MM:SS'"):
        read_trace(str(path))


def test_unknown_columns_are_named(tmp_path: Path) -> None:
    trace = _read(tmp_path, "# gpu pwr nvdec2\n# Idx W %\n 0 100 3\n")
    assert trace.diagnostics[0] == f"{tmp_path / 'dmon.txt'}: ignored columns rigcheck does not use: nvdec2"


# --- detection ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "is_dmon"),
    [
        ("# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk ", True),
        ("#Date        Time         gpu    pwr  gtemp", True),
        ("#Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk", True),
        ("# gpu        pid  type    sm   mem   enc   dec   command", False),  # pmon
        ("# gpu  foo  bar", False),
        ('# rigcheck.trace/1 {"schema": "rigcheck.trace/1"}', False),
        ("timestamp, index, power.draw [W]", False),
        ("    0     73     33", False),
    ],
)
def test_detected_by_its_header(line: str, is_dmon: bool) -> None:
    assert (header_names(line) is not None) is is_dmon


def test_a_file_that_is_neither_names_dmon_among_the_inputs(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("foo, bar\n1, 2\n")
    with pytest.raises(ParseError, match=r"nvidia-smi dmon output \(# gpu pwr gtemp \.\.\.\)"):
        read_trace(str(path))


def test_csv_and_dmon_are_told_apart(tmp_path: Path) -> None:
    assert _read(tmp_path, DEFAULT_HEADER + "    0  1  2  3  4  5  6  7  8  9  10  11\n").source == "nvidia-smi-dmon"
    csv = tmp_path / "q.csv"
    csv.write_text("index, power.draw [W]\n0, 100 W\n")
    assert read_trace(str(csv)).source == "nvidia-smi-csv"


# --- burn --analyze ---------------------------------------------------------------------------------------


def test_burn_analyze_json_on_the_h200_capture(rigcheck: Rigcheck) -> None:
    result = rigcheck("burn", "--analyze", str(H200_BURN), "--json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert_valid(data)
    assert data["source"] == "nvidia-smi-dmon"
    assert data["interval_s"] == 1.0
    [gpu] = data["gpus"]
    assert gpu["loaded_s"] == 17.0  # 11:21:26 to 11:21:42 at sm >= 99%
    assert gpu["power_draw_w_median_loaded"] == 690.0
    assert gpu["temp_c_max"] == 63.0
    assert gpu["sm_clock_mhz_median_loaded"] == 1500.0
    # dmon has no power limit and no reasons: the cap cannot be told, and the analysis says so.
    assert gpu["power_enforced_limit_w"] is None
    assert gpu["missing"]["power_enforced_limit_w"] == NOT_IN_TRACE
    assert gpu["reasons_time_fraction"] == {}
    assert gpu["limiter"] == "unknown"
    assert gpu["verdict"] == "excellent, limiter unknown"


def test_streamed_batches_match_the_whole_read() -> None:
    stream = TraceStream(str(GTX_2GPU))
    assert list(stream.batches()) == read_trace(str(GTX_2GPU)).samples
    [busy, idle] = analyze_trace(read_trace(str(GTX_2GPU)))
    assert busy.loaded_s == 4.0
    assert busy.missing["power_draw_w_median_loaded"] == NOT_IN_TRACE
    assert idle.verdict == "not loaded"
