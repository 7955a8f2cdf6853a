"""`rigcheck monitor`: the Prometheus exposition (dcgm-exporter's names), a real HTTP GET, and the command with a
fake NVML."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from rigcheck.cli import monitor as monitor_cmd
from rigcheck.errors import UsageError
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.monitor.prometheus import ExporterSource, GpuIdentity, MetricsServer, exposition, registry_for
from rigcheck.monitor.sampler import Sampler, SamplerStats
from rigcheck.monitor.session import exporter_source
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.readers.trace.stream import read_trace
from tests.conftest import nvidia_gpu_present
from tests.support.cli import Rigcheck
from tests.support.fakenvml import burn_gpu_lost, burn_power_capped_h100


def _fake(monkeypatch: pytest.MonkeyPatch, make: object = burn_power_capped_h100) -> None:
    def factory(gpus: list[int] | None = None) -> NvmlPoller:
        assert callable(make)
        return NvmlPoller(make(), gpus=gpus)

    monkeypatch.setattr(monitor_cmd, "make_poller", factory)


# --- exposition ---------------------------------------------------------------------------------------
GPUS = {
    0: TraceGpu(index=0, name="NVIDIA H100 80GB HBM3", temp_slowdown_c=89.0, power_default_limit_w=700.0),
    1: TraceGpu(index=1, name='odd "name" \\ here'),
}
LATEST = {
    0: Sample(
        t_s=1.0,
        gpu=0,
        power_draw_w=698.5,
        power_enforced_limit_w=700.0,
        temp_c=73.0,
        sm_clock_mhz=1335.0,
        utilization_gpu_percent=100.0,
        reasons=["sw_power_cap"],
    ),
    1: Sample(t_s=1.0, gpu=1, lost=True),
}
LINE = re.compile(r'^[A-Za-z_]+(\{([A-Za-z_]+="([^"\\]|\\.)*",?)+\})? -?[0-9.e+]+$')
GPU0 = (
    'Hostname="h",UUID="GPU-0",device="nvidia0",gpu="0",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:19:00.0"'
)


def test_exposition_text() -> None:
    source = ExporterSource(
        latest=lambda: LATEST,
        gpus=GPUS,
        identities={0: GpuIdentity("GPU-0", "00000000:19:00.0")},
        stats=SamplerStats(polls=12, missed_deadlines=1),
        hostname="h",
    )
    text = exposition(source)
    lines = text.splitlines()
    assert text.endswith("\n")
    for line in lines:
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or LINE.match(line), line
    assert f"DCGM_FI_DEV_POWER_USAGE{{{GPU0}}} 698.5" in lines
    assert f"DCGM_FI_DEV_GPU_TEMP{{{GPU0}}} 73.0" in lines
    assert f"DCGM_FI_DEV_SM_CLOCK{{{GPU0}}} 1335.0" in lines
    assert f"DCGM_FI_DEV_GPU_UTIL{{{GPU0}}} 100.0" in lines
    assert f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{GPU0}}} 4.0" in lines  # sw_power_cap: bit 2
    assert f'rigcheck_gpu_clock_event_reason_active{{{GPU0},reason="sw_power_cap"}} 1.0' in lines
    assert f'rigcheck_gpu_clock_event_reason_active{{{GPU0},reason="hw_thermal_slowdown"}} 0.0' in lines
    assert f"DCGM_FI_DEV_SLOWDOWN_TEMP{{{GPU0}}} 89.0" in lines
    gpu1 = 'Hostname="h",UUID="",device="nvidia1",gpu="1",modelName="odd \\"name\\" \\\\ here",pci_bus_id=""'
    assert f"rigcheck_gpu_lost{{{gpu1}}} 1.0" in lines
    assert "# TYPE DCGM_FI_DEV_POWER_USAGE gauge" in lines
    assert "rigcheck_sampler_polls_total 12.0" in lines
    assert "# TYPE rigcheck_sampler_polls_total counter" in lines
    # A lost GPU and a missing reading have no sample line (never a made-up 0), and a line that says why.
    assert not any(line.startswith("DCGM_FI_DEV_POWER_USAGE{") and 'gpu="1"' in line for line in lines)
    assert not any(line.startswith("DCGM_FI_DEV_MEMORY_TEMP{") for line in lines)
    assert any(
        line.startswith("rigcheck_reading_missing{") and 'field="DCGM_FI_DEV_MEMORY_TEMP"' in line and 'gpu="0"' in line
        for line in lines
    )
    # Every family is declared once, before its samples.
    types = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(types) == len(set(types))


def test_http_get_on_loopback_with_the_fake_poller() -> None:
    with NvmlPoller(burn_power_capped_h100(2)) as poller:
        sampler = Sampler(poller, interval_s=0.02)
        registry = registry_for(exporter_source(sampler, poller, None))
        with sampler, MetricsServer(registry, 0) as server:
            while sampler.stats.polls < 3:
                sampler._stop.wait(0.01)
            assert server.url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(server.url, timeout=5) as response:
                body = response.read().decode()
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/plain")
        with pytest.raises(urllib.error.URLError):  # stopped: the port is closed
            urllib.request.urlopen(server.url, timeout=5)
    assert re.search(r'DCGM_FI_DEV_POWER_USAGE\{[^}]*gpu="1"[^}]*\} 74\.0', body)
    assert re.search(r'rigcheck_gpu_clock_event_reason_active\{[^}]*gpu="0"[^}]*reason="idle"\} 1\.0', body)


def test_a_port_in_use_is_a_usage_error() -> None:
    with NvmlPoller(burn_power_capped_h100(1)) as poller:
        registry = registry_for(exporter_source(Sampler(poller, interval_s=0.02), poller, None))
        with MetricsServer(registry, 0) as first, pytest.raises(UsageError, match="cannot serve Prometheus metrics"):
            MetricsServer(registry, first.port).start()


# --- the command --------------------------------------------------------------------------------------
# On a GPU machine the real monitor would run (exit 0): this checks the message given without one.
@pytest.mark.skipif(nvidia_gpu_present(), reason="this machine has a GPU")
def test_monitor_without_a_gpu_is_one_line_and_exit_1(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("monitor", "--duration", "0.1")
    assert code == 1
    assert out == ""
    assert err.startswith("rigcheck: no NVIDIA GPU visible: ")
    assert err.count("\n") == 1


def test_monitor_json_with_duration_and_csv(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake(monkeypatch)
    path = tmp_path / "m.csv"
    code, out, err = rigcheck("monitor", "--interval", "0.02", "--duration", "0.5", "--csv", str(path), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "rigcheck.monitor/2"
    assert doc["interrupted"] is False
    assert doc["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert doc["gpus"][0]["temp_slowdown_c"] == 89.0
    assert doc["gpus"][0]["latest"]["power_enforced_limit_w"] == 700.0
    assert doc["sampler"]["polls"] >= 10
    trace = read_trace(str(path))
    assert len(trace.samples) == doc["sampler"]["samples"]
    assert f"samples written to {path}" in err


def test_monitor_live_view_shows_each_gpu(rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, lambda: burn_gpu_lost(lose_at_poll=3))
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = rigcheck("monitor", "--interval", "0.02", "--duration", "0.4")
    assert code == 0
    assert re.search(
        r"^0 +NVIDIA H100 80GB HBM3 +\d+ / 700 W +\d+ / 89 C +\d+ / 1980 MHz +\d+ % +\w+ +[▁-█]+ +[▁-█]+$", out, re.M
    )
    assert re.search(r"^1 +NVIDIA H100 80GB HBM3 +LOST at 0\.\d+ s", out, re.M)
    assert "\x1b" not in out  # not a terminal: no ANSI


def test_monitor_ctrl_c_stops_cleanly_and_flushes(
    rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake(monkeypatch)
    pauses = iter(range(1000))

    def pause(seconds: float) -> None:
        if next(pauses) >= 3:
            raise KeyboardInterrupt
        monitor_cmd.time.sleep(0.1)

    monkeypatch.setattr(monitor_cmd, "_pause", pause)
    path = tmp_path / "m.jsonl"
    code, out, err = rigcheck("monitor", "--interval", "0.02", "--jsonl", str(path), "--json")
    assert code == 0
    assert json.loads(out)["interrupted"] is True
    assert "stopped" in err
    trace = read_trace(str(path))
    assert len(trace.samples) == json.loads(out)["sampler"]["samples"] > 0


def test_monitor_prometheus_endpoint_is_announced(rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch)
    code, _, err = rigcheck("monitor", "--duration", "0.2", "--prometheus", "0", "--json")
    assert code == 0
    assert re.search(r"Prometheus metrics at http://127\.0\.0\.1:\d+/metrics", err)


@pytest.mark.parametrize(
    "argv", [["monitor", "--csv", "a", "--jsonl", "b"], ["monitor", "--interval", "0"], ["monitor", "--gpus", "a"]]
)
def test_monitor_bad_usage_is_exit_2(argv: list[str], rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck(*argv)
    assert code == 2
    assert out == ""


_MONITOR_LOADS = """
import sys
from rigcheck.cli import monitor as monitor_cmd
from rigcheck.cli.app import main
from rigcheck.probe.nvml import NvmlPoller
from tests.support.fakenvml import burn_power_capped_h100

monitor_cmd.make_poller = lambda gpus=None: NvmlPoller(burn_power_capped_h100(1), gpus=gpus)
try:
    main(["monitor", *sys.argv[1:]])
except SystemExit:
    pass
heavy = ("http.server", "prometheus_client", "rigcheck.monitor.prometheus", "rigcheck.report.html")
print(" ".join(m for m in heavy if m in sys.modules))
"""


@pytest.mark.parametrize(
    ("extra", "loaded"),
    [([], ""), (["--prometheus", "0"], "http.server prometheus_client rigcheck.monitor.prometheus")],
)
def test_monitor_starts_http_server_only_for_prometheus(extra: list[str], loaded: str) -> None:
    import subprocess
    import sys

    argv = ["--duration", "0.1", "--interval", "0.02", "--json", *extra]
    root = Path(__file__).resolve().parent.parent.parent  # the fake NVML is imported as tests.support.fakenvml
    done = subprocess.run(
        [sys.executable, "-c", _MONITOR_LOADS, *argv], capture_output=True, text=True, check=True, cwd=root
    )
    assert json.loads(done.stdout[: done.stdout.rindex("}") + 1])["schema"] == "rigcheck.monitor/2"
    assert done.stdout.splitlines()[-1] == loaded
