"""The error counters of a trace (issue 28): read from an nvidia-smi --query-gpu CSV (ECC volatile totals, a PCIe
replay column where the query has one) by both ways of reading it, and written and read back by rigcheck's own
trace/2 (optional keys and columns: a trace written without them is what it was)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from rigcheck.errors import InputError
from rigcheck.model.telemetry import COUNTER_FIELDS, Reading, Sample, SampleBatch, TraceGpu
from rigcheck.model.trace import (
    CSV_COLUMNS,
    CSV_COUNTER_COLUMNS,
    TraceHeaderDocument,
    format_csv_row,
    format_jsonl_row,
    write_csv_header,
    write_jsonl_header,
)
from rigcheck.readers.trace.stream import TraceStream, read_trace

HEADER = (
    "timestamp, index, name, utilization.gpu [%], power.draw [W], ecc.errors.corrected.volatile.total, "
    "ecc.errors.uncorrected.volatile.total, pcie.replay.counter"
)


def _smi(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "query.csv"
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def _row(k: int, gpu: int, corrected: str, uncorrected: str = "0", replays: str = "4") -> str:
    return f"2026/09/07 14:00:{k:02d}.000, {gpu}, NVIDIA GB200, 100 %, 1150.00 W, {corrected}, {uncorrected}, {replays}"


def test_smi_csv_counters_are_read_n_a_is_none_and_no_column_is_ignored(tmp_path: Path) -> None:
    path = _smi(tmp_path, [_row(0, 0, "9600000000"), _row(1, 0, "9600017700"), _row(2, 0, "[N/A]", "[N/A]", "[N/A]")])
    trace = read_trace(str(path))
    assert [s.ecc_corrected_volatile for s in trace.samples] == [9_600_000_000, 9_600_017_700, None]
    assert [s.ecc_uncorrected_volatile for s in trace.samples] == [0, 0, None]
    assert [s.pcie_replays for s in trace.samples] == [4, 4, None]
    assert all(s.nvlink_crc_errors is None for s in trace.samples)  # not a --query-gpu field
    assert trace.diagnostics == []  # every column is used
    assert trace.gpus[0].name == "NVIDIA GB200"


def test_smi_csv_counters_in_columns_are_those_of_the_rows(tmp_path: Path) -> None:
    rows = [_row(k, gpu, str(17_700 * k if gpu == 2 else 0)) for k in range(30) for gpu in range(4)]
    path = _smi(tmp_path, rows)
    by_row = read_trace(str(path)).samples
    stream = TraceStream(str(path))
    by_column: list[Sample] = []
    for item in stream.batches():
        by_column += item.samples() if isinstance(item, SampleBatch) else [item]
    assert sorted(by_column, key=lambda s: (s.gpu, s.t_s)) == sorted(by_row, key=lambda s: (s.gpu, s.t_s))
    assert [s.ecc_corrected_volatile for s in by_row if s.gpu == 2][:3] == [0, 17_700, 35_400]


def test_smi_csv_a_counter_that_is_not_a_count_names_the_column(tmp_path: Path) -> None:
    path = _smi(tmp_path, [_row(0, 0, "lots"), _row(1, 0, "0")])
    with pytest.raises(InputError, match="ecc_corrected_volatile"):
        read_trace(str(path))


def test_smi_csv_a_lost_gpu_reads_lost_in_a_counter_cell(tmp_path: Path) -> None:
    path = _smi(tmp_path, [_row(0, 0, "0"), _row(1, 0, "[GPU is lost]")])
    assert [s.lost for s in read_trace(str(path)).samples] == [False, True]


COUNTED = Sample(
    t_s=1.5,
    gpu=0,
    power_draw_w=700.0,
    utilization_gpu_percent=100.0,
    reasons=["sw_power_cap"],
    ecc_corrected_volatile=17_700,
    ecc_uncorrected_volatile=0,
    pcie_replays=12,
    nvlink_crc_errors=[3, None, 0],
    nvlink_replay_errors=[0, None, 0],
    nvlink_recovery_errors=[0, None, 1],
)
PLAIN = Sample(t_s=2.0, gpu=1, power_draw_w=650.0, reasons=[])


def test_jsonl_writes_the_counters_read_and_leaves_out_the_others(tmp_path: Path) -> None:
    assert not set(COUNTER_FIELDS) & set(json.loads(format_jsonl_row(PLAIN)))  # a trace/2 line as it was
    assert json.loads(format_jsonl_row(COUNTED))["nvlink_crc_errors"] == [3, None, 0]
    out = io.StringIO()
    write_jsonl_header(out, [TraceGpu(index=0), TraceGpu(index=1)], interval_s=0.5, started_at=None)
    path = tmp_path / "t.jsonl"
    path.write_text(out.getvalue() + format_jsonl_row(COUNTED) + format_jsonl_row(PLAIN))
    assert read_trace(str(path)).samples == [COUNTED, PLAIN]


def test_csv_counter_columns_only_when_the_writer_asks_for_them(tmp_path: Path) -> None:
    plain = io.StringIO()
    write_csv_header(plain, [], interval_s=None, started_at=None)
    assert plain.getvalue().strip().split(",") == list(CSV_COLUMNS)
    assert len(format_csv_row(COUNTED).split(",")) == len(CSV_COLUMNS)
    columns = CSV_COLUMNS + CSV_COUNTER_COLUMNS
    path = tmp_path / "t.csv"
    with path.open("w") as fh:
        write_csv_header(fh, [TraceGpu(index=0)], interval_s=0.5, started_at=None, columns=columns)
        fh.write(format_csv_row(COUNTED, columns) + format_csv_row(PLAIN, columns))
    assert path.read_text().splitlines()[1].endswith(",17700,0,12,3||0,0||0,0||1")
    trace = read_trace(str(path))
    assert trace.samples == [COUNTED, PLAIN]
    assert trace.diagnostics == []  # the counter columns are known


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("ecc_corrected_volatile", -1, "'ecc_corrected_volatile' is not a count"),
        ("pcie_replays", 1.5, "'pcie_replays' is not a count"),
        ("nvlink_crc_errors", 3, "'nvlink_crc_errors' is not a list of counts"),
        ("nvlink_replay_errors", [0, "x"], "'nvlink_replay_errors' is not a list of counts"),
    ],
)
def test_jsonl_a_bad_counter_is_an_error_naming_it(tmp_path: Path, key: str, value: object, error: str) -> None:
    out = io.StringIO()
    write_jsonl_header(out, [TraceGpu(index=0)], interval_s=1.0, started_at=None)
    line = json.loads(format_jsonl_row(PLAIN)) | {key: value}
    path = tmp_path / "t.jsonl"
    path.write_text(out.getvalue() + json.dumps(line) + "\n" + format_jsonl_row(PLAIN))
    with pytest.raises(InputError, match=error):
        read_trace(str(path))


def test_the_sample_schema_takes_the_counters_absent_null_or_counted() -> None:
    sample = TraceHeaderDocument.model_json_schema()["$defs"]["sample"]
    assert not set(COUNTER_FIELDS) & set(sample["required"])
    validator = jsonschema.Draft202012Validator(sample)
    counted = json.loads(format_jsonl_row(COUNTED))
    validator.validate(counted)
    validator.validate(json.loads(format_jsonl_row(PLAIN)))
    validator.validate(json.loads(format_jsonl_row(PLAIN)) | dict.fromkeys(COUNTER_FIELDS))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(counted | {"ecc_corrected_volatile": -3})


def test_a_reading_gives_its_counters_to_its_samples() -> None:
    reading = Reading(0, 700.0, ecc_corrected_volatile=5, nvlink_crc_errors=(1, None))
    sample = reading.sample(3.0)
    assert (sample.t_s, sample.ecc_corrected_volatile, sample.nvlink_crc_errors) == (3.0, 5, [1, None])
