"""Trace readers (rigcheck.readers.trace.stream): nvidia-smi --query-gpu CSV in its forms, rigcheck's CSV and JSONL (and
their writers, rigcheck.model.trace)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from rigcheck.errors import InputError, ParseError
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.model.trace import (
    CSV_COLUMNS,
    TRACE_SCHEMA,
    format_csv_row,
    format_jsonl_row,
    write_csv_header,
    write_jsonl_header,
)
from rigcheck.readers.trace.stream import read_trace

FIXTURES = Path(__file__).parent.parent / "fixtures"
TELEMETRY = FIXTURES / "corpus" / "telemetry"
TRACES = FIXTURES / "traces"
BURN = TELEMETRY / "smi-lms-torch-bf16-burn.csv"
LIGHT = TELEMETRY / "smi-lms-light-load.csv"


def _write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


# --- the real nvidia-smi traces -------------------------------------------------------------------


def test_real_burn_trace_reads_every_row_with_units_stripped() -> None:
    trace = read_trace(str(BURN))
    with BURN.open() as f:
        rows = list(csv.reader(f, skipinitialspace=True))[1:]
    assert trace.source == "nvidia-smi-csv"
    assert len(trace.samples) == len(rows) == 583
    first, last = trace.samples[0], trace.samples[-1]
    assert first == Sample(
        t_s=0.0,
        gpu=0,
        power_draw_w=127.87,
        power_enforced_limit_w=700.0,
        temp_c=41.0,
        temp_memory_c=48.0,
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=1980.0,
        utilization_gpu_percent=0.0,
        reasons=["idle"],
    )
    # 18:08:32.717 -> 18:09:32.515
    assert last.t_s == pytest.approx(59.798)
    assert trace.interval_s == pytest.approx(0.102, abs=0.002)
    assert sum(1 for s in trace.samples if s.reasons == ["sw_power_cap"]) == 441
    assert sum(1 for s in trace.samples if s.reasons == []) == 27
    assert trace.gpu_indices() == [0]
    assert trace.diagnostics == []
    assert trace.path == str(BURN)


def test_real_light_trace_is_never_capped() -> None:
    trace = read_trace(str(LIGHT))
    assert len(trace.samples) == 564
    assert not any("sw_power_cap" in (s.reasons or []) for s in trace.samples)
    assert max(s.temp_c for s in trace.samples if s.temp_c is not None) == 62


# --- nvidia-smi CSV variants ----------------------------------------------------------------------


def test_reordered_columns_without_units_two_gpus_across_midnight() -> None:
    trace = read_trace(str(TRACES / "smi-reordered-nounits-2gpu.csv"))
    assert trace.gpu_indices() == [0, 1]
    gpu0, gpu1 = trace.for_gpu(0), trace.for_gpu(1)
    assert len(gpu0) == len(gpu1) == 60
    # the file starts at 23:59:58.000 on the 22nd and ends at 00:00:03.900 on the 23rd
    assert [s.t_s for s in gpu0[:3]] == pytest.approx([0.0, 0.1, 0.2])
    assert gpu0[-1].t_s == pytest.approx(5.9)
    assert gpu0[0].reasons == ["idle"]
    assert gpu0[20].reasons == ["sw_power_cap"]
    assert gpu0[20].power_draw_w == 300.0
    assert gpu0[20].sm_clock_mhz == 1500.0
    assert gpu0[20].mem_clock_mhz == 9501.0
    assert gpu1[0].utilization_gpu_percent == 60.0
    assert gpu1[0].reasons == []
    assert trace.interval_s == pytest.approx(0.1)
    # fan.speed is not used; pstate is known and deliberately unused
    assert len(trace.diagnostics) == 1
    assert "fan.speed" in trace.diagnostics[0]
    assert "pstate" not in trace.diagnostics[0]


def test_per_reason_columns_na_cells_and_no_timestamp() -> None:
    trace = read_trace(str(TRACES / "smi-reason-flags.csv"))
    samples = trace.for_gpu(0)
    assert len(samples) == 20
    assert samples[0].reasons == ["sw_power_cap"]
    assert samples[10].reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert samples[5].power_draw_w is None  # "[N/A]"
    assert samples[5].reasons == ["sw_power_cap"]
    assert samples[6].reasons is None  # every reason cell "[N/A]": not read, not "none active"
    assert samples[19].t_s == pytest.approx(1.9)  # 0.1 s steps assumed
    assert any("no timestamp column" in d for d in trace.diagnostics)


def test_gpu_lost_cells_mark_the_sample_lost() -> None:
    trace = read_trace(str(TRACES / "smi-gpu-lost.csv"))
    gpu1 = trace.for_gpu(1)
    assert [s.lost for s in gpu1[:30]] == [False] * 30
    assert all(s.lost for s in gpu1[30:])
    assert gpu1[30].power_draw_w is None
    assert gpu1[30].t_s == pytest.approx(3.0)
    assert not any(s.lost for s in trace.for_gpu(0))


def test_truncated_last_row_is_skipped_with_a_diagnostic() -> None:
    path = TRACES / "smi-truncated.csv"
    trace = read_trace(str(path))
    assert len(trace.samples) == 10
    assert trace.diagnostics == [
        f"{path}:12: last line is incomplete (3 fields, expected 10); skipped, as a write cut short"
    ]


@pytest.mark.parametrize("column", ["clocks_event_reasons.active", "clocks_throttle_reasons.active"])
def test_mask_decoded_with_nvml_bit_order(tmp_path: Path, column: str) -> None:
    # 0xA4 = SwPowerCap 0x4 | SwThermalSlowdown 0x20 | HwPowerBrakeSlowdown 0x80; 0x148 = 0x8 | 0x40 | 0x100
    text = (
        f"index, {column}, temperature.gpu\n"
        "0, 0x00000000000000A4, 70\n"
        "0, 0x0000000000000148, 71\n"
        "0, [Not Supported], 72\n"
    )
    samples = read_trace(_write(tmp_path, "t.csv", text)).samples
    assert samples[0].reasons == ["sw_power_cap", "sw_thermal_slowdown", "hw_power_brake_slowdown"]
    assert samples[1].reasons == ["hw_slowdown", "hw_thermal_slowdown", "display_clock_setting"]
    assert samples[2].reasons is None


def test_gpus_told_apart_by_uuid_without_index(tmp_path: Path) -> None:
    text = "uuid, name, power.draw [W], power.default_limit [W]\nGPU-a, H100, 100 W, 700 W\nGPU-b, A100, 90 W, 400 W\n"
    trace = read_trace(_write(tmp_path, "t.csv", text))
    assert trace.gpu_indices() == [0, 1]
    assert trace.gpus[1] == TraceGpu(index=1, name="A100", power_default_limit_w=400.0)
    assert trace.for_gpu(0)[0].power_draw_w == 100.0


def test_power_limit_prefers_enforced_and_header_repeats_are_skipped(tmp_path: Path) -> None:
    header = "index, power.limit [W], enforced.power.limit [W], power.draw [W]"
    text = f"{header}\n0, 700 W, 650 W, 600 W\n{header}\n0, 700 W, 650 W, 610 W\n"
    samples = read_trace(_write(tmp_path, "t.csv", text)).samples
    assert [s.power_enforced_limit_w for s in samples] == [650.0, 650.0]
    assert [s.power_draw_w for s in samples] == [600.0, 610.0]


# --- rigcheck's own formats -----------------------------------------------------------------------

GPUS = [
    TraceGpu(index=0, name="NVIDIA H100 80GB HBM3", temp_slowdown_c=89.0, temp_shutdown_c=95.0),
    TraceGpu(index=1, power_default_limit_w=700.0),
]
SAMPLES = [
    Sample(t_s=0.0, gpu=0, power_draw_w=74.25, power_enforced_limit_w=700.0, temp_c=41.0, reasons=["idle"]),
    Sample(t_s=0.0, gpu=1, power_draw_w=None, temp_c=40.0, reasons=None),
    Sample(t_s=0.1, gpu=0, power_draw_w=699.5, sm_clock_mhz=1365.0, utilization_gpu_percent=100.0, reasons=[]),
    Sample(t_s=0.1, gpu=1, lost=True),
    Sample(t_s=0.2, gpu=0, power_draw_w=698.0, reasons=["sw_power_cap", "hw_slowdown"], mem_clock_mhz=2619.0),
]


def _rigcheck_file(kind: str, sidecar: Path | None = None) -> str:
    """The trace's text; a CSV's header goes to ``sidecar`` (none: not written)."""
    out = io.StringIO()
    if kind == "csv":
        write_csv_header(out, GPUS, interval_s=0.1, started_at="2026-11-22T18:08:32Z", meta_path=sidecar)
        for s in SAMPLES:
            out.write(format_csv_row(s))
    else:
        write_jsonl_header(out, GPUS, interval_s=0.1, started_at="2026-11-22T18:08:32Z")
        for s in SAMPLES:
            out.write(format_jsonl_row(s))
    return out.getvalue()


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_rigcheck_formats_round_trip(tmp_path: Path, kind: str) -> None:
    trace = read_trace(_write(tmp_path, f"t.{kind}", _rigcheck_file(kind, tmp_path / "t.csv.meta.json")))
    assert trace.source == f"rigcheck-{kind}"
    assert trace.samples == SAMPLES
    assert trace.gpus == {g.index: g for g in GPUS}
    assert trace.interval_s == 0.1
    assert trace.started_at == "2026-11-22T18:08:32Z"
    assert trace.diagnostics == []


# The same trace as rigcheck wrote it before the power fields' names said what they are (rigcheck.trace/1:
# power_w, power_limit_w), kept as written then.
V1_HEADER = (
    '{"schema": "rigcheck.trace/1", "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "temp_slowdown_c": 89.0, '
    '"temp_shutdown_c": 95.0, "temp_max_operating_c": null, "power_default_limit_w": null}, {"index": 1, "name": null, '
    '"temp_slowdown_c": null, "temp_shutdown_c": null, "temp_max_operating_c": null, "power_default_limit_w": 700.0}], '
    '"interval_s": 0.1, "started_at": "2026-11-22T18:08:32Z"}\n'
)
V1_JSONL = V1_HEADER + "".join(
    '{{"t_s":{},"gpu":{},"power_w":{},"power_limit_w":{},"temp_c":{},"temp_memory_c":null,"sm_clock_mhz":{},'
    '"sm_clock_max_mhz":null,"mem_clock_mhz":{},"utilization_gpu_percent":{},"reasons":{},"lost":{}}}\n'.format(*row)
    for row in [
        ("0.0", 0, "74.25", "700.0", "41.0", "null", "null", "null", '["idle"]', "false"),
        ("0.0", 1, "null", "null", "40.0", "null", "null", "null", "null", "false"),
        ("0.1", 0, "699.5", "null", "null", "1365.0", "null", "100.0", "[]", "false"),
        ("0.1", 1, "null", "null", "null", "null", "null", "null", "null", "true"),
        ("0.2", 0, "698.0", "null", "null", "null", "2619.0", "null", '["sw_power_cap","hw_slowdown"]', "false"),
    ]
)
V1_CSV = """t_s,gpu,power_w,power_limit_w,temp_c,temp_memory_c,sm_clock_mhz,sm_clock_max_mhz,mem_clock_mhz,\
utilization_gpu_percent,reasons,lost
0.000,0,74.25,700,41,,,,,,idle,
0.000,1,,,40,,,,,,,
0.100,0,699.5,,,,1365,,,100,none,
0.100,1,,,,,,,,,,1
0.200,0,698,,,,,,2619,,sw_power_cap|hw_slowdown,
"""


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_trace_v1_reads_as_its_v2_twin(tmp_path: Path, kind: str) -> None:
    """A /1 trace (JSONL, or CSV with its sidecar) gives what the same trace written as /2 gives."""
    (tmp_path / "v1.csv.meta.json").write_text(V1_HEADER)
    old = read_trace(_write(tmp_path, f"v1.{kind}", V1_CSV if kind == "csv" else V1_JSONL))
    text = _rigcheck_file(kind, tmp_path / "v2.csv.meta.json")
    new = read_trace(_write(tmp_path, f"v2.{kind}", text))
    assert "power_draw_w" in text  # the twin is written as /2
    assert "power_w" not in text
    assert old.samples == new.samples == SAMPLES
    assert (old.source, old.gpus, old.interval_s, old.started_at) == (new.source, new.gpus, 0.1, new.started_at)
    assert old.diagnostics == new.diagnostics == []  # the old column names are known, not "ignored"


def test_rigcheck_csv_layout(tmp_path: Path) -> None:
    lines = _rigcheck_file("csv", tmp_path / "t.csv.meta.json").splitlines()
    header = json.loads((tmp_path / "t.csv.meta.json").read_text())
    assert header["schema"] == TRACE_SCHEMA
    assert header["gpus"][0]["temp_slowdown_c"] == 89.0
    assert lines[0].split(",") == list(CSV_COLUMNS)  # a plain CSV: the column row first
    assert lines[0].startswith("t_s,gpu,power_draw_w,")
    row = dict(zip(CSV_COLUMNS, lines[5].split(","), strict=True))
    assert row["reasons"] == "sw_power_cap|hw_slowdown"
    assert row["power_draw_w"] == "698"
    assert dict(zip(CSV_COLUMNS, lines[2].split(","), strict=True))["reasons"] == ""  # None: not read
    assert dict(zip(CSV_COLUMNS, lines[3].split(","), strict=True))["reasons"] == "none"  # []: none active


def test_jsonl_rows_are_one_object_per_line() -> None:
    lines = _rigcheck_file("jsonl").splitlines()
    assert json.loads(lines[0])["schema"] == TRACE_SCHEMA
    assert json.loads(lines[4]) == {
        "t_s": 0.1,
        "gpu": 1,
        "power_draw_w": None,
        "power_enforced_limit_w": None,
        "temp_c": None,
        "temp_memory_c": None,
        "sm_clock_mhz": None,
        "sm_clock_max_mhz": None,
        "mem_clock_mhz": None,
        "utilization_gpu_percent": None,
        "reasons": None,
        "lost": True,
    }
    assert format_jsonl_row(Sample(t_s=1.0, gpu=0, power_draw_w=float("nan"))).count('"power_draw_w":null') == 1


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_rigcheck_truncated_last_line_is_skipped(tmp_path: Path, kind: str) -> None:
    text = _rigcheck_file(kind, tmp_path / "t.csv.meta.json")
    cut = text[: text.rstrip("\n").rfind("\n") + 12]  # the last sample line cut after 11 characters
    path = _write(tmp_path, f"t.{kind}", cut)
    trace = read_trace(path)
    assert trace.samples == SAMPLES[:-1]
    assert len(trace.diagnostics) == 1
    line = 6
    assert trace.diagnostics[0].startswith(f"{path}:{line}: last line is incomplete")


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("foo, bar\n1, 2\n", 1, "not a telemetry trace"),
        ("index, name, pci.bus_id\n0, H100, 00000000:00:06.0\n", 1, "no column rigcheck can use"),
        ("index, power.draw [W]\n", None, "no samples"),
        ("index, power.draw [W]\n0, lots\n0, 100 W\n", 2, "power_draw_w: cannot read 'lots'"),
        ("index, clocks_event_reasons.active\n0, 0xZZ\n0, 0x4\n", 2, "not a hex bit mask"),
        ("timestamp, power.draw [W]\nyesterday, 100 W\n0, 100 W\n", 2, "timestamp 'yesterday'"),
        ("index, power.draw [W]\n0, 100 W, 7\n0, 100 W\n", 2, "3 fields, expected 2"),
        ('{"schema": "rigcheck.snapshot/1"}\n', 1, "expected 'rigcheck.trace/2'"),
        ('{"schema": "rigcheck.trace/1", "gpus": []}\n{"t_s": "x", "gpu": 0}\n{"t_s": 1, "gpu": 0}\n', 2, "t_s"),
        ('{"schema": "rigcheck.trace/1"}\n', None, "no samples"),
        ("{not json\n", 1, "line 1 is not JSON"),
        ("# rigcheck.trace/1 {broken\n", 1, "does not hold valid JSON"),
        ('# rigcheck.trace/1 {"schema": "rigcheck.trace/1"}\nfoo,bar\n', 2, "lacks t_s, gpu"),
    ],
)
def test_bad_input_is_one_parse_error_with_path_and_line(
    tmp_path: Path, text: str, line: int | None, words: str
) -> None:
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(ParseError) as info:
        read_trace(path)
    assert info.value.path == path
    assert info.value.line == line
    assert words in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("data", "words"), [(b"", "empty"), (b"   \n", "empty"), (b"\x00\x01GPU", "binary")])
def test_empty_and_binary_files_are_refused(tmp_path: Path, data: bytes, words: str) -> None:
    path = _write(tmp_path, "bad.bin", data)
    with pytest.raises(InputError, match=words):
        read_trace(path)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_trace(str(tmp_path / "absent.csv"))


def test_a_unicode_digit_as_gpu_index_is_a_bad_row_not_a_crash(tmp_path: Path) -> None:
    """ "¹".isdigit() is True but int("¹") fails: found by the fuzz suite in a mutated nvidia-smi trace."""
    from rigcheck.readers.trace.stream import read_trace

    path = tmp_path / "t.csv"
    path.write_text(
        "timestamp, index, power.draw [W]\n"
        "2024/01/01 00:00:00.000, 0, 100.00 W\n"
        "2024/01/01 00:00:00.100, ¹, 101.00 W\n"
        "2024/01/01 00:00:00.200, 0, 102.00 W\n"
    )
    # A bad row inside the trace (not a cut last line) is the reader's own one-line error, naming the line.
    with pytest.raises(ParseError, match=r":3: bad row: index '¹' is not a GPU index"):
        read_trace(str(path))
