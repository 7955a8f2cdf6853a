"""`rigcheck monitor --prometheus` speaks dcgm-exporter: a monitor under the fake NVML served on an ephemeral
loopback port, scraped over HTTP and parsed with prometheus_client's own parser; and `monitor --csv` writes a
plain CSV with its header in a sidecar, which `burn --analyze` still reads."""

from __future__ import annotations

import csv
import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample as PromSample

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Missing
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.model.trace import CSV_COLUMNS, CSV_COUNTER_COLUMNS, format_csv_row, sidecar_path, trace_header
from rigcheck.monitor.prometheus import (
    GPU_LABELS,
    Counters,
    ExporterSource,
    GpuCollector,
    GpuIdentity,
    MetricsServer,
    cached_memory,
    cached_rows,
    exposition,
    registry_for,
)
from rigcheck.monitor.sampler import Sampler
from rigcheck.monitor.session import exporter_source
from rigcheck.probe.kernel_log import XidCounter
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.probe.nvml.counters import NvlinkErrorReader
from rigcheck.probe.nvml.memory_health import MemoryHealthReader
from rigcheck.readers.trace.stream import read_trace
from tests.cli.test_monitor_cli import _fake
from tests.support.cli import Rigcheck
from tests.support.fakenvml import (
    H100_BUS_IDS,
    SCENARIOS,
    FakeNvml,
    burn_gpu_lost,
    nvlink_replay_errors,
)
from tests.support.fakenvml_parts import NO_PERMISSION

H100 = "NVIDIA H100 80GB HBM3"
_XID_BEFORE = "2025-02-23T16:24:18,100000+00:00 NVRM: Xid (PCI:0000:5d:00): 13, pid=1, name=python, Graphics Exception"
_XID_79 = "2025-02-23T16:30:00,000001+00:00 NVRM: Xid (PCI:0000:3a:00): 79, pid=1234, name=python, fallen off the bus"
_XID_48 = "2025-02-23T16:30:05,000001+00:00 NVRM: Xid (PCI:0000:3a:00): 48, pid=1234, name=python, DBE"


def faulty_board() -> FakeNvml:
    """The 8x H100 board; GPU2 has NVLink replay/recovery errors, ECC errors, rows remapped and pending, and no
    memory temperature; GPU5 will not say its utilisation (NoPermission)."""
    lib = nvlink_replay_errors()
    gpu2 = lib.gpus[2]
    gpu2.ecc_counts = {(1, 0): 2, (1, 1): 7, (0, 0): 113}
    gpu2.remapped = (3, 2, 1, 0)  # correctable, uncorrectable, pending, failure
    gpu2.memory_temp = None
    lib.gpus[5].errors["nvmlDeviceGetUtilizationRates"] = NO_PERMISSION
    return lib


class Dmesg:
    """`dmesg --time-format iso` as the XidCounter runs it: the lines it holds now."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        return 0, "\n".join(self.lines) + "\n", ""


def families(text: str) -> dict[str, tuple[str, list[PromSample]]]:
    """Family name -> (type, samples), as Prometheus' own parser reads the page."""
    return {f.name: (f.type, list(f.samples)) for f in text_string_to_metric_families(text)}


def value(fams: dict[str, tuple[str, list[PromSample]]], name: str, gpu: int, **labels: str) -> float | None:
    found = [
        s.value
        for s in fams[name][1]
        if s.labels.get("gpu") == str(gpu) and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1, f"{name} gpu {gpu}: {len(found)} samples"
    return found[0] if found else None


def missing(fams: dict[str, tuple[str, list[PromSample]]], gpu: int, field: str) -> str | None:
    reasons = [
        s.labels["reason"]
        for s in fams["rigcheck_reading_missing"][1]
        if s.labels["gpu"] == str(gpu) and s.labels["field"] == field
    ]
    return reasons[0] if reasons else None


@pytest.fixture
def scraped() -> Iterator[str]:
    """One scrape over HTTP of a monitor of the faulty board (an Xid 79 on GPU2 since the monitor started)."""
    dmesg = Dmesg("unrelated", _XID_BEFORE)
    with NvmlPoller(faulty_board()) as poller:
        xids = XidCounter(poller.bus_ids, run=dmesg)
        xids.start()
        dmesg.lines.append(_XID_79)
        counters = Counters(
            nvlink_errors=cached_rows(NvlinkErrorReader.for_poller(poller)),
            xid_events=cached_rows(xids),
            memory=cached_memory(MemoryHealthReader.for_poller(poller)),
        )
        sampler = Sampler(poller, interval_s=0.02)
        registry = registry_for(exporter_source(sampler, poller, counters))
        with sampler, MetricsServer(registry, 0) as server:
            while sampler.stats.polls < 2:
                sampler._stop.wait(0.01)
            assert server.url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(server.url, timeout=5) as response:
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/plain")
                yield response.read().decode()


def test_every_gpu_series_carries_dcgm_exporters_labels(scraped: str) -> None:
    fams = families(scraped)
    host = socket.gethostname()
    gpu_samples = [s for _, samples in fams.values() for s in samples if s.labels.get("gpu")]
    assert len({s.name for s in gpu_samples}) >= 30
    for s in gpu_samples:
        assert set(GPU_LABELS) <= set(s.labels), s
        i = int(s.labels["gpu"])
        assert s.labels["UUID"] == f"GPU-8e1b0000-0000-0000-0000-00000000000{i}", s
        assert s.labels["pci_bus_id"] == H100_BUS_IDS[i], s
        assert s.labels["device"] == f"nvidia{i}", s
        assert s.labels["modelName"] == H100, s
        assert s.labels["Hostname"] == host, s


def test_names_units_and_types_are_dcgms(scraped: str) -> None:
    fams = families(scraped)
    assert value(fams, "DCGM_FI_DEV_POWER_USAGE", 0) == 74.21  # W, not mW
    assert value(fams, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 0) == 700.0
    assert value(fams, "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", 0) == 700.0
    assert value(fams, "DCGM_FI_DEV_GPU_TEMP", 0) == 43.0
    assert value(fams, "DCGM_FI_DEV_MEMORY_TEMP", 0) == 46.0
    assert value(fams, "DCGM_FI_DEV_SLOWDOWN_TEMP", 0) == 89.0
    assert value(fams, "DCGM_FI_DEV_SM_CLOCK", 0) == 1980.0  # MHz
    assert value(fams, "DCGM_FI_DEV_MEM_CLOCK", 0) == 2619.0
    assert value(fams, "DCGM_FI_DEV_GPU_UTIL", 0) == 0.0  # %
    assert value(fams, "DCGM_FI_DEV_FB_USED", 0) == 512.0  # MiB (nvmlMemory_v2: the reservation left out)
    assert value(fams, "DCGM_FI_DEV_FB_FREE", 0) == 81559 - 512 - 480
    assert value(fams, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0) == 1.0  # idle: bit 0 of NVML's mask
    assert value(fams, "rigcheck_gpu_clock_event_reason_active", 0, reason="idle") == 1.0
    assert value(fams, "rigcheck_gpu_power_limit_ratio", 0) == pytest.approx(74.21 / 700)
    assert value(fams, "rigcheck_gpu_lost", 0) == 0.0
    assert all(kind == "gauge" for name, (kind, _) in fams.items() if name.startswith("DCGM_"))
    assert fams["rigcheck_gpu_xid_events"][0] == "counter"  # served as rigcheck_gpu_xid_events_total
    assert "rigcheck_gpu_xid_events_total" in scraped
    assert fams["rigcheck_sampler_polls"][0] == "counter"


def test_ecc_remap_nvlink_and_xid_series(scraped: str) -> None:
    fams = families(scraped)
    assert value(fams, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 2) == 2.0
    assert value(fams, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 2) == 7.0
    assert value(fams, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 2) == 113.0
    assert value(fams, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0) == 0.0  # read, and none: a real zero
    assert value(fams, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 2) == 3.0
    assert value(fams, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 2) == 2.0
    assert value(fams, "DCGM_FI_DEV_ROW_REMAP_PENDING", 2) == 1.0
    assert value(fams, "DCGM_FI_DEV_ROW_REMAP_FAILURE", 2) == 0.0
    assert value(fams, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 2) == 15.0  # links 4 and 5: 12 + 3
    assert value(fams, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", 2) == 1.0
    assert value(fams, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 3) == 0.0
    assert value(fams, "rigcheck_gpu_nvlink_errors", 2, link="5", type="crc") == 40.0
    # The Xid 13 was in the log before the start: not counted; the Xid 79 since is GPU2's last.
    assert value(fams, "DCGM_FI_DEV_XID_ERRORS", 2) == 79.0
    assert value(fams, "DCGM_FI_DEV_XID_ERRORS", 3) == 0.0
    assert value(fams, "rigcheck_gpu_xid_events", 2, xid="79") == 1.0
    assert value(fams, "rigcheck_gpu_xid_events", 3, xid="13") is None


def test_a_missing_reading_is_absent_and_says_why(scraped: str) -> None:
    fams = families(scraped)
    assert value(fams, "DCGM_FI_DEV_MEMORY_TEMP", 2) is None  # never a made-up 0
    assert missing(fams, 2, "DCGM_FI_DEV_MEMORY_TEMP") == "not_supported"
    assert value(fams, "DCGM_FI_DEV_GPU_UTIL", 5) is None
    assert missing(fams, 5, "DCGM_FI_DEV_GPU_UTIL") == "no_permission"
    assert missing(fams, 0, "DCGM_FI_DEV_MEMORY_TEMP") is None
    assert all(s.value == 1.0 for s in fams["rigcheck_reading_missing"][1])


def _page(
    poller: NvmlPoller, sampler: Sampler, counters: Counters | None = None
) -> dict[str, tuple[str, list[PromSample]]]:
    return families(exposition(exporter_source(sampler, poller, counters)))


def test_a_consumer_card_without_power_nor_ecc() -> None:
    with NvmlPoller(SCENARIOS["consumer_power_not_supported"]()) as poller:
        sampler = Sampler(poller, interval_s=0.1)
        sampler._poll_once(0.0)
        counters = Counters(memory=cached_memory(MemoryHealthReader.for_poller(poller)))
        fams = _page(poller, sampler, counters)
    for series in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF"):
        assert value(fams, series, 0) is None
        assert missing(fams, 0, series) == "not_supported"
    assert value(fams, "rigcheck_gpu_power_limit_ratio", 0) is None
    assert missing(fams, 0, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") == "not_supported"
    assert missing(fams, 0, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS") == "not_supported"
    assert value(fams, "DCGM_FI_DEV_FB_USED", 0) == 512.0
    assert value(fams, "DCGM_FI_DEV_GPU_TEMP", 0) == 43.0


def test_a_lost_gpu_has_its_readings_absent_as_lost() -> None:
    with NvmlPoller(burn_gpu_lost(lose_at_poll=1)) as poller:
        sampler = Sampler(poller, interval_s=0.1)
        for k in range(3):
            sampler._poll_once(k * 0.1)
        fams = _page(poller, sampler)
    assert value(fams, "rigcheck_gpu_lost", 1) == 1.0
    assert value(fams, "rigcheck_gpu_lost", 0) == 0.0
    assert value(fams, "DCGM_FI_DEV_POWER_USAGE", 1) is None
    assert missing(fams, 1, "DCGM_FI_DEV_POWER_USAGE") == "gpu_lost"
    assert missing(fams, 1, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS") == "gpu_lost"
    assert value(fams, "DCGM_FI_DEV_POWER_USAGE", 0) is not None


def test_a_slow_reading_that_fails_is_absent_with_reason_error() -> None:
    def broken() -> dict[int, dict[str, float | Missing]]:
        raise OSError("NVML went away")

    def dmesg_refused(argv: list[str]) -> tuple[int, str, str]:
        return 1, "", "dmesg: read kernel buffer failed: Operation not permitted"

    source = ExporterSource(
        latest=dict,
        gpus={0: TraceGpu(index=0, name=H100)},
        identities={0: GpuIdentity("GPU-x", "00000000:19:00.0")},
        counters=Counters(memory=cached_memory(broken), xid_events=cached_rows(XidCounter({}, run=dmesg_refused))),
        hostname="node-7",
    )
    fams = families(exposition(source))
    assert missing(fams, 0, "DCGM_FI_DEV_FB_USED") == "error"
    assert missing(fams, 0, "DCGM_FI_DEV_XID_ERRORS") == "error"
    assert value(fams, "DCGM_FI_DEV_XID_ERRORS", 0) is None
    (row,) = [s for s in fams["rigcheck_reading_missing"][1] if s.labels["field"] == "DCGM_FI_DEV_FB_USED"]
    assert (row.labels["Hostname"], row.labels["UUID"], row.labels["device"]) == ("node-7", "GPU-x", "nvidia0")


def test_the_last_xid_follows_the_newest_code() -> None:
    dmesg = Dmesg()
    xids = XidCounter({2: H100_BUS_IDS[2]}, run=dmesg)
    xids.start()
    source = ExporterSource(
        latest=dict, gpus={2: TraceGpu(index=2)}, counters=Counters(xid_events=cached_rows(xids, 0))
    )
    collector = GpuCollector(source)  # one collector, as one server keeps: it remembers the counts between scrapes

    def last() -> float:
        (fam,) = [m for m in collector.collect() if m.name == "DCGM_FI_DEV_XID_ERRORS"]
        return fam.samples[0].value

    assert last() == 0.0
    dmesg.lines.append(_XID_79)
    assert last() == 79.0
    dmesg.lines.append(_XID_48)
    assert last() == 48.0  # the newest, not the highest
    assert last() == 48.0  # nothing new: unchanged
    assert exposition(source).count("rigcheck_gpu_xid_events_total{") == 2


# --- the CSV trace ---------------------------------------------------------------------------------------------
def test_monitor_csv_is_plain_with_a_sidecar_and_burn_analyze_reads_it(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake(monkeypatch)
    path = tmp_path / "m.csv"
    code, _, err = rigcheck("monitor", "--interval", "0.02", "--duration", "0.3", "--csv", str(path), "--json")
    assert code == 0, err
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    columns = list(CSV_COLUMNS + CSV_COUNTER_COLUMNS)  # NVML's poller reads the error counters too
    assert rows[0] == columns  # the header row first: any CSV reader takes it as is
    assert len(rows) > 5
    assert all(len(r) == len(columns) for r in rows)
    meta = json.loads(sidecar_path(path).read_text())
    assert meta["schema"] == "rigcheck.trace/2"
    assert meta["gpus"][0]["name"] == H100
    assert meta["interval_s"] == 0.02
    trace = read_trace(str(path))
    assert trace.source == "rigcheck-csv"
    assert trace.gpus[0].temp_slowdown_c == 89.0
    assert trace.interval_s == 0.02
    assert trace.diagnostics == []
    code, out, err = rigcheck("burn", "--analyze", str(path), "--json")
    assert code in (0, 1), err
    doc = json.loads(out)
    assert doc["schema"] == "rigcheck.burn/2"
    assert [g["index"] for g in doc["gpus"]] == [0]


GPUS = [TraceGpu(index=0, name=H100, temp_slowdown_c=89.0)]
SAMPLES = [Sample(t_s=0.0, gpu=0, power_draw_w=74.25, temp_c=41.0, reasons=["idle"]), Sample(t_s=0.1, gpu=0, lost=True)]


def _header_json() -> str:
    return json.dumps(trace_header(GPUS, interval_s=0.1, started_at="2026-11-22T18:08:32Z").to_json_dict())


def test_a_trace_written_before_the_sidecar_still_reads(tmp_path: Path) -> None:
    old = tmp_path / "old.csv"
    body = "".join(format_csv_row(s) for s in SAMPLES)
    old.write_text(f"# rigcheck.trace/1 {_header_json()}\n{','.join(CSV_COLUMNS)}\n{body}")
    trace = read_trace(str(old))
    assert (trace.source, trace.samples, trace.interval_s) == ("rigcheck-csv", SAMPLES, 0.1)
    assert trace.gpus == {0: GPUS[0]}


def test_a_plain_csv_without_its_sidecar_reads_and_says_what_is_unknown(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(",".join(CSV_COLUMNS) + "\n" + "".join(format_csv_row(s) for s in SAMPLES))
    trace = read_trace(str(path))
    assert trace.samples == SAMPLES
    assert trace.gpus == {}
    assert trace.diagnostics == [
        f"{path}: no sidecar t.csv.meta.json: GPU names, thresholds and the interval are unknown"
    ]
    sidecar_path(path).write_text(_header_json())
    assert read_trace(str(path)).gpus == {0: GPUS[0]}
    sidecar_path(path).write_text('{"schema": "rigcheck.snapshot/1"}')
    with pytest.raises(ParseError, match=r"t\.csv\.meta\.json:1: schema"):
        read_trace(str(path))
