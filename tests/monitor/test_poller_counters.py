"""The poller's error counters (issue 28), on the fake NVML: volatile ECC and PCIe replays every poll, each active
NVLink's CRC (flit + data), replay and recovery counts at a slower cadence, what NVML does not give left out (never
0), and the trace/2 file that carries them."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from rigcheck.monitor.sampler import Sampler, TraceFile
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.probe.nvml.poller import NVLINK_EVERY_S
from rigcheck.readers.trace.stream import read_trace
from tests.support.fakenvml import (
    BURN_IDLE_POLLS,
    ECC_STORM_GPU,
    ECC_STORM_PER_POLL,
    SCENARIOS,
    ecc_storm,
    healthy_8x_h100_nvlink,
)
from tests.support.fakenvml_parts import NOT_SUPPORTED


def test_each_links_counters_are_read_with_crc_as_flit_plus_data() -> None:
    """GPU2's link 4 counts 12 replays; link 5 3 replays, 1 recovery and 40 flit CRC errors on a part without the
    data CRC counter (the sum is the flit count alone)."""
    lib = SCENARIOS["nvlink_replay_errors"]()
    links = lib.gpus[2].links
    links[6] = replace(links[6], crc_flit=7, crc_data=5)
    with NvmlPoller(lib, gpus=[2]) as poller:
        s = poller.poll(0.0)[0]
    assert s.nvlink_replay_errors is not None
    assert s.nvlink_recovery_errors is not None
    assert s.nvlink_crc_errors is not None
    assert len(s.nvlink_crc_errors) == 18
    assert (s.nvlink_replay_errors[4], s.nvlink_replay_errors[5], s.nvlink_replay_errors[0]) == (12, 3, 0)
    assert s.nvlink_recovery_errors[5] == 1
    assert (s.nvlink_crc_errors[5], s.nvlink_crc_errors[6], s.nvlink_crc_errors[0]) == (40, 12, 0)
    assert (s.ecc_corrected_volatile, s.ecc_uncorrected_volatile, s.pcie_replays) == (0, 0, 0)


def test_inactive_and_absent_links_are_not_read() -> None:
    """Link 2 disabled (NotSupported to every call), link 3 inactive: None in their places, the others read."""
    lib = healthy_8x_h100_nvlink()
    links = lib.gpus[0].links
    links[2] = replace(links[2], present=False)
    links[3] = replace(links[3], active=False, replay=9)
    with NvmlPoller(lib, gpus=[0]) as poller:
        s = poller.poll(0.0)[0]
    assert s.nvlink_replay_errors is not None
    assert s.nvlink_replay_errors[:5] == [0, 0, None, None, 0]
    assert len(s.nvlink_replay_errors) == 18


def test_a_part_without_nvlink_leaves_the_keys_out() -> None:
    lib = SCENARIOS["ecc_errors_pending_remap"]()  # one A100 on PCIe, no links; corrected 113, uncorrected 2
    with NvmlPoller(lib) as poller:
        s = poller.poll(0.0)[0]
        assert poller.unavailable == {}
    assert (s.nvlink_crc_errors, s.nvlink_replay_errors, s.nvlink_recovery_errors) == (None, None, None)
    assert (s.ecc_corrected_volatile, s.ecc_uncorrected_volatile) == (113, 2)


def test_nvlink_counters_are_read_every_few_seconds_not_every_poll() -> None:
    lib = healthy_8x_h100_nvlink()
    with NvmlPoller(lib, gpus=[0, 1]) as poller:
        times = [0.0, 0.1, NVLINK_EVERY_S - 0.1, NVLINK_EVERY_S, NVLINK_EVERY_S + 0.1]
        read = [[s.nvlink_crc_errors is not None for s in poller.poll(t)] for t in times]
    assert read == [[True, True], [False, False], [False, False], [True, True], [False, False]]
    assert lib.count("nvmlDeviceGetNvLinkErrorCounter") == 2 * 2 * 18 * 4  # two reads of 2 GPUs x 18 links x 4
    assert lib.count("nvmlDeviceGetTotalEccErrors") == 2 * 2 * len(times)  # ECC on every poll


def test_a_counter_nvml_does_not_give_is_left_out_and_not_asked_again() -> None:
    lib = healthy_8x_h100_nvlink()
    lib.gpus[0].errors["nvmlDeviceGetPcieReplayCounter"] = NOT_SUPPORTED
    for link in range(18):  # a part that keeps no recovery counter
        lib.gpus[0].links[link] = replace(lib.gpus[0].links[link], recovery=None)  # type: ignore[arg-type]
    with NvmlPoller(lib, gpus=[0], nvlink_every_s=0.0) as poller:
        samples = [poller.poll(float(k))[0] for k in range(3)]
        assert poller.unavailable[0] == {"pcie_replays": "not_supported"}
    assert lib.count("nvmlDeviceGetPcieReplayCounter") == 1
    assert all(s.pcie_replays is None and s.nvlink_recovery_errors is None for s in samples)
    assert all(s.nvlink_replay_errors == [0] * 18 for s in samples)  # read on every poll at a cadence of 0


def test_ecc_storm_climbs_on_one_gpu_while_loaded() -> None:
    lib = ecc_storm()
    with NvmlPoller(lib) as poller:
        polls = [poller.poll(k / 10) for k in range(BURN_IDLE_POLLS + 5)]
    storm = [p[ECC_STORM_GPU].ecc_corrected_volatile for p in polls]
    assert storm[: BURN_IDLE_POLLS + 1] == [12] * (BURN_IDLE_POLLS + 1)  # idle: no corrections
    assert storm[-1] == 12 + 4 * ECC_STORM_PER_POLL
    assert {s.ecc_corrected_volatile for p in polls for s in p if s.gpu != ECC_STORM_GPU} == {0}
    assert {s.ecc_uncorrected_volatile for p in polls for s in p} == {0}


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_trace_file_carries_the_counters_and_reads_back(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"trace.{fmt}"
    with NvmlPoller(healthy_8x_h100_nvlink(), gpus=[0, 1]) as poller:
        sampler = Sampler(poller, interval_s=0.01, sink=TraceFile(path, fmt))  # type: ignore[arg-type]
        sampler.start()
        while sampler.stats.polls < 5:
            time.sleep(0.01)
        sampler.stop()
    if fmt == "csv":
        assert (
            path.read_text()
            .splitlines()[0]
            .endswith(
                ",lost,ecc_corrected_volatile,ecc_uncorrected_volatile,pcie_replays,nvlink_crc_errors,"
                "nvlink_replay_errors,nvlink_recovery_errors"
            )
        )
    trace = read_trace(str(path))
    first, later = trace.for_gpu(0)[0], trace.for_gpu(0)[1]
    assert (first.ecc_corrected_volatile, first.pcie_replays) == (0, 0)
    assert first.nvlink_crc_errors == [0] * 18
    assert later.nvlink_crc_errors is None  # within the NVLink cadence: not read, not 0
    assert later.ecc_corrected_volatile == 0


def test_a_trace_without_counters_writes_the_columns_it_always_did(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    sink = TraceFile(path, "csv")
    sink.begin({}, interval_s=0.1, started_at=None)
    sink.close()
    assert path.read_text().splitlines()[0].endswith(",reasons,lost")
