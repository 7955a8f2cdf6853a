"""The slow counters of `rigcheck monitor --prometheus`: NVLink error counters and Xid events since the start,
read on scrape (cached), and left out with their reason, never fatal, where they cannot be read."""

from __future__ import annotations

import urllib.request
from dataclasses import replace

import pytest

from rigcheck.errors import ProbeError
from rigcheck.model.telemetry import TraceGpu
from rigcheck.monitor.prometheus import (
    Cached,
    CounterRows,
    Counters,
    ExporterSource,
    GpuIdentity,
    MetricsServer,
    cached_rows,
    exposition,
    registry_for,
)
from rigcheck.probe.kernel_log import XidCounter
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.probe.nvml.counters import NvlinkErrorReader
from tests.support.fakenvml import H100_BUS_IDS, nvlink_replay_errors
from tests.support.fakenvml_parts import NO_PERMISSION

H100 = "NVIDIA H100 80GB HBM3"
GPU2_HEAD = 'Hostname="h",UUID="GPU-8e1b0000-0000-0000-0000-000000000002",device="nvidia2",gpu="2"'
GPU2_TAIL = f'modelName="{H100}",pci_bus_id="00000000:3A:00.0"'


def nvlink(link: int, kind: str) -> str:
    """The per-link series of GPU2 (labels in the order prometheus_client writes them: sorted)."""
    return f'rigcheck_gpu_nvlink_errors_total{{{GPU2_HEAD},link="{link}",{GPU2_TAIL},type="{kind}"}}'


def missing_line(field: str, reason: str) -> str:
    """GPU2's line saying why ``field`` is left out (``field`` sorts before ``gpu``)."""
    head = GPU2_HEAD.removesuffix(',gpu="2"')
    return f'rigcheck_reading_missing{{{head},field="{field}",gpu="2",{GPU2_TAIL},reason="{reason}"}} 1.0'


def page(poller: NvmlPoller, counters: Counters) -> str:
    identities = {i: GpuIdentity(poller.uuids.get(i, ""), poller.bus_ids.get(i, "")) for i in poller.gpus}
    return exposition(
        ExporterSource(latest=dict, gpus=poller.gpus, identities=identities, counters=counters, hostname="h")
    )


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _lines(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name)]


def test_nvlink_error_counters_in_the_exposition() -> None:
    with NvmlPoller(nvlink_replay_errors()) as poller:
        text = page(poller, Counters(nvlink_errors=cached_rows(NvlinkErrorReader.for_poller(poller))))
    assert "# HELP rigcheck_gpu_nvlink_errors_total " in text
    assert "# TYPE rigcheck_gpu_nvlink_errors_total counter" in text
    assert f"{nvlink(4, 'replay')} 12.0" in text
    assert f"{nvlink(5, 'replay')} 3.0" in text
    assert f"{nvlink(5, 'recovery')} 1.0" in text
    assert f"{nvlink(5, 'crc')} 40.0" in text  # flit only: no data counter
    # 8 GPUs x 18 links x 3 types, zeros included (a counter is exported from 0).
    assert len(_lines(text, "rigcheck_gpu_nvlink_errors_total{")) == 8 * 18 * 3
    assert f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{GPU2_HEAD},{GPU2_TAIL}}} 15.0" in text
    assert "rigcheck_gpu_xid_events_total" not in text  # not given: not exported


def test_counters_grow_between_scrapes_and_are_read_at_most_every_ttl() -> None:
    lib = nvlink_replay_errors()
    clock = Clock()
    with NvmlPoller(lib) as poller:
        reads = 0
        reader = NvlinkErrorReader.for_poller(poller)

        def counting() -> object:
            nonlocal reads
            reads += 1
            return reader()

        empty: CounterRows = ()
        counters = Counters(nvlink_errors=Cached(counting, empty, ttl_s=5.0, clock=clock))  # type: ignore[arg-type]
        first = page(poller, counters)
        links = lib.gpus[2].links
        links[4] = replace(links[4], replay=20)
        clock.t = 1.0
        cached = page(poller, counters)
        clock.t = 5.5
        later = page(poller, counters)
    line = nvlink(4, "replay")
    assert f"{line} 12.0" in first
    assert f"{line} 12.0" in cached  # within the TTL: the cached reading, NVML not asked again
    assert f"{line} 20.0" in later
    assert reads == 2


def test_a_failing_reader_leaves_its_series_out_and_the_rest_stays() -> None:
    def broken() -> list[tuple[dict[str, str], float]]:
        raise ProbeError("kernel log unreadable: dmesg: Operation not permitted")

    cached = cached_rows(broken)
    with NvmlPoller(nvlink_replay_errors()) as poller:
        counters = Counters(nvlink_errors=cached_rows(NvlinkErrorReader.for_poller(poller)), xid_events=cached)
        text = page(poller, counters)
    assert "rigcheck_gpu_xid_events_total{" not in text
    assert "DCGM_FI_DEV_XID_ERRORS{" not in text
    assert missing_line("DCGM_FI_DEV_XID_ERRORS", "error") in text
    assert "rigcheck_gpu_nvlink_errors_total{" in text
    assert "DCGM_FI_DEV_SLOWDOWN_TEMP{" in text
    assert cached.failures == 1
    assert cached.error == "kernel log unreadable: dmesg: Operation not permitted"


def test_nvlink_counters_without_permission_give_no_rows() -> None:
    lib = nvlink_replay_errors()
    for gpu in lib.gpus:
        gpu.errors["nvmlDeviceGetNvLinkErrorCounter"] = NO_PERMISSION
    with NvmlPoller(lib) as poller:
        rows = NvlinkErrorReader.for_poller(poller)()
        text = page(poller, Counters(nvlink_errors=cached_rows(NvlinkErrorReader.for_poller(poller))))
    assert rows == []
    assert "rigcheck_gpu_nvlink_errors_total{" not in text
    assert "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{" not in text
    assert missing_line("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "not_supported") in text


# --- Xid events since the start -------------------------------------------------------------------------------
_OLD = "2025-02-23T16:24:18,100000+00:00 NVRM: Xid (PCI:0000:3a:00): 79, pid=1234, name=python, fallen off the bus"
_NEW_1 = "2025-02-23T16:30:00,000001+00:00 NVRM: Xid (PCI:0000:3a:00): 48, pid=1234, name=python, DBE"
_NEW_2 = "2025-02-23T16:30:01,000002+00:00 NVRM: Xid (PCI:0000:3a:00): 48, pid=1234, name=python, DBE"
_OTHER_BUS = "2025-02-23T16:30:02,000000+00:00 NVRM: Xid (PCI:0000:ff:00): 13, Graphics Exception"


class Dmesg:
    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.calls = 0

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls += 1
        return 0, "\n".join(self.lines) + "\n", ""


def test_xid_events_count_only_lines_after_the_start() -> None:
    dmesg = Dmesg("some unrelated line", _OLD)
    xids = XidCounter({2: H100_BUS_IDS[2]}, run=dmesg)
    xids.start()
    assert xids() == []  # the Xid 79 was there before the monitor started
    dmesg.lines += [_NEW_1, _NEW_2, _OTHER_BUS]
    rows = xids()
    assert ({"gpu": "2", "pci_bus_id": "00000000:3A:00.0", "code": "48"}, 2.0) in rows
    assert ({"gpu": "", "pci_bus_id": "0000:ff:00.0", "code": "13"}, 1.0) in rows
    # The ring buffer drops the old lines: nothing counted goes away.
    dmesg.lines = [_NEW_2, _OTHER_BUS]
    assert xids() == rows
    gpus = {2: TraceGpu(index=2, name=H100)}
    identities = {2: GpuIdentity("GPU-8e1b0000-0000-0000-0000-000000000002", H100_BUS_IDS[2])}
    source = ExporterSource(dict, gpus, identities, counters=Counters(xid_events=cached_rows(xids)), hostname="h")
    text = exposition(source)
    assert "# TYPE rigcheck_gpu_xid_events_total counter" in text
    assert f'rigcheck_gpu_xid_events_total{{{GPU2_HEAD},{GPU2_TAIL},xid="48"}} 2.0' in text
    other = 'Hostname="h",UUID="",device="",gpu="",modelName="",pci_bus_id="0000:ff:00.0",xid="13"'
    assert f"rigcheck_gpu_xid_events_total{{{other}}} 1.0" in text
    assert f"DCGM_FI_DEV_XID_ERRORS{{{GPU2_HEAD},{GPU2_TAIL}}} 48.0" in text


def test_xid_counter_on_an_unreadable_log_raises_and_starts_counting_once_readable() -> None:
    readable = False

    def run(argv: list[str]) -> tuple[int, str, str]:
        if not readable:
            return 1, "", "dmesg: read kernel buffer failed: Operation not permitted"
        return 0, _OLD + "\n", ""

    xids = XidCounter({}, run=run)
    xids.start()  # does not raise: the exporter tries again on scrape
    with pytest.raises(ProbeError, match="unreadable"):
        xids()
    readable = True
    assert xids() == []  # the first good read is the baseline


# --- over HTTP ----------------------------------------------------------------------------------------------------
def test_counters_served_on_loopback_by_default() -> None:
    with NvmlPoller(nvlink_replay_errors()) as poller:
        counters = Counters(nvlink_errors=cached_rows(NvlinkErrorReader.for_poller(poller)))
        identities = {i: GpuIdentity(poller.uuids.get(i, ""), poller.bus_ids.get(i, "")) for i in poller.gpus}
        source = ExporterSource(dict, poller.gpus, identities, counters=counters, hostname="h")
        with MetricsServer(registry_for(source), 0) as server:
            assert server.url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(server.url, timeout=5) as response:
                body = response.read().decode()
    assert f"{nvlink(4, 'replay')} 12.0" in body


def test_the_cli_builds_cached_counters_for_its_poller() -> None:
    from rigcheck.cli.monitor import make_counters

    with NvmlPoller(nvlink_replay_errors()) as poller:
        counters = make_counters(poller)  # reads this machine's kernel log (or cannot: then no Xid series)
        assert isinstance(counters.nvlink_errors, Cached)
        assert isinstance(counters.xid_events, Cached)
        assert isinstance(counters.memory, Cached)
        text = page(poller, counters)
    assert f"{nvlink(4, 'replay')} 12.0" in text
    assert f"DCGM_FI_DEV_FB_USED{{{GPU2_HEAD},{GPU2_TAIL}}} 512.0" in text
