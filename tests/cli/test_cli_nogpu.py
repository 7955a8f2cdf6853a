"""The no-GPU rule (cli/nogpu.py, docs/commands.md "Exit codes"): every command that reads this machine live
exits 1 with one line on stderr when there is no usable NVIDIA GPU (none on the PCI bus, or a driver that does
not work); `--from`, `bench ... --cpu` and `burn --analyze` are not affected.

The machine is faked: the live probe runs over a fake NVML and a fake sysfs tree, so these hold on any host.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rigcheck.cli import bench_common
from rigcheck.cli import monitor as monitor_cmd
from rigcheck.probe import live
from rigcheck.probe.nvml import NvmlPoller
from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck
from tests.support.fakenvml import SCENARIOS, FakeNvml

FIXTURES = Path(__file__).parent.parent / "fixtures"
TREES = {"no-gpu": FIXTURES / "sysfs/no-gpu", "two-gpu": FIXTURES / "sysfs/two-gpu"}
# (fake NVML scenario, sysfs tree, how the line starts)
MACHINES = {
    "no-gpu": (
        "no_driver",
        "no-gpu",
        "rigcheck: no NVIDIA GPU visible: no NVIDIA GPU on the PCI bus and no NVIDIA driver",
    ),
    "mismatch": (
        "driver_version_mismatch",
        "two-gpu",
        "rigcheck: no NVIDIA GPU visible: the NVIDIA driver does not work: NVIDIA driver/library version mismatch",
    ),
    "not-loaded": (
        "driver_not_loaded",
        "two-gpu",
        "rigcheck: no NVIDIA GPU visible: the NVIDIA driver does not work: 2 NVIDIA GPUs on the PCI bus",
    ),
}
# What each machine's NVML start is recorded as in the snapshot.
SCENARIOS_STATE = {
    "no_driver": "library_not_found",
    "driver_version_mismatch": "version_mismatch",
    "driver_not_loaded": "driver_not_loaded",
}
LIVE_COMMANDS = [
    ["doctor"],
    ["doctor", "--json"],
    ["power"],
    ["thermal", "--json"],
    ["snapshot"],
    ["topo"],
    ["monitor", "--duration", "0.1"],
    ["burn", "--minutes", "0.1"],
    ["bench", "allreduce"],
    ["bench", "matmul"],
    ["bench", "membw"],
    ["bench", "hostlink"],
    ["bench", "p2p"],
    ["bench", "train", "--tiny"],
    ["verify"],
    ["verify", "--json"],
    ["verify", "--slurm"],
    ["fleet"],
]


def fake_machine(monkeypatch: pytest.MonkeyPatch, scenario: str, tree: str) -> None:
    """This machine is the fake: the snapshot probe, the poller (monitor, burn) and its sysfs."""
    make: Callable[[], FakeNvml] = SCENARIOS[scenario]
    probe = live.probe_machine
    absent = live.absent_snapshot
    root = TREES[tree]
    monkeypatch.setattr(live, "probe_machine", lambda nvml=None, sysfs_root=None: probe(make(), sysfs_root=root))
    monkeypatch.setattr(live, "absent_snapshot", lambda exc, sysfs_root=None: absent(exc, root))
    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(make(), gpus=gpus))


@pytest.mark.parametrize("machine", list(MACHINES))
@pytest.mark.parametrize("argv", LIVE_COMMANDS, ids=" ".join)
def test_every_live_command_exits_1_with_one_line(
    argv: list[str], machine: str, monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    scenario, tree, start = MACHINES[machine]
    fake_machine(monkeypatch, scenario, tree)
    code, out, err = rigcheck(*argv)
    assert code == 1
    assert err.count("\n") == 1, err
    assert err.startswith(start), err
    if argv[0] in ("doctor", "power", "thermal", "snapshot", "verify"):  # these still show what they could read
        assert out
    else:
        assert out == ""


@pytest.mark.parametrize("machine", list(MACHINES))
def test_documents_carry_the_fail(machine: str, monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    scenario, tree, _ = MACHINES[machine]
    fake_machine(monkeypatch, scenario, tree)
    _, out, _ = rigcheck("doctor", "--json")
    doctor = json.loads(out)
    assert doctor["exit_code"] == 1
    assert doctor["counts"]["fail"] == 1
    (finding,) = doctor["findings"][:1]
    assert finding["severity"] == "fail"
    assert finding["id"].startswith("health.")
    assert doctor["snapshot"]["driver"]["nvml"] == SCENARIOS_STATE[scenario]
    _, out, _ = rigcheck("power", "--json")
    assert [f["id"] for f in json.loads(out)["findings"]] == [finding["id"]]


@pytest.mark.parametrize("machine", list(MACHINES))
def test_verify_without_a_gpu_still_gives_its_document_and_a_drain_reason(
    machine: str, monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    """The node that most needs draining gets a reason: --json one rigcheck.verify document (fail), --slurm one
    non-empty line naming why, both exit 1 (before, stdout was empty for both)."""
    scenario, tree, start = MACHINES[machine]
    fake_machine(monkeypatch, scenario, tree)
    code, out, _ = rigcheck("verify", "--json")
    doc = json.loads(out)
    assert_valid(doc)
    assert (code, doc["schema"], doc["verdict"], doc["gpus"]) == (1, "rigcheck.verify/1", "fail", [])
    assert doc["node"][0]["id"] == "doctor"
    assert doc["node"][0]["verdict"] == "fail"
    assert {s["status"] for s in doc["steps"][1:]} == {"skipped"}
    why = start.removeprefix("rigcheck: ")
    assert doc["drain_reason"].startswith(f"rigcheck verify: fail {why}")
    code, out, _ = rigcheck("verify", "--slurm")
    lines = out.splitlines()
    assert (code, len(lines)) == (1, 1)
    assert lines[0] == doc["drain_reason"]
    assert lines[0].isascii()
    assert len(lines[0]) <= 200


def test_verify_whose_telemetry_does_not_start_still_gives_its_document(
    monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    """The snapshot sees GPUs but NVML's poller does not start: the burn is skipped (incomplete, exit 1) and the
    document is still printed (it exited 1 with nothing on stdout)."""
    fake_machine(monkeypatch, "healthy_8x_h100_nvlink", "two-gpu")
    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(SCENARIOS["no_driver"](), gpus=gpus))
    code, out, err = rigcheck("verify", "--json", "--only", "burn")
    doc = json.loads(out)
    assert (code, doc["verdict"]) == (1, "incomplete")
    burn = next(s for s in doc["steps"] if s["name"] == "burn")
    assert burn["status"] == "skipped"
    assert "poller" in burn["reason"]
    assert "the burn's telemetry (NVML) did not start" in err


def test_unreadable_gpu_makes_power_and_thermal_fail(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    fake_machine(monkeypatch, "gpu_every_call_fails", "two-gpu")
    for command in ("power", "thermal", "doctor"):
        code, out, err = rigcheck(command, "--json")
        assert code == 1, command
        assert err == ""  # GPU0 was read: not the no-GPU rule, a finding naming GPU1
        unreadable = [f for f in json.loads(out)["findings"] if f["id"] == "health.gpu-unreadable"]
        assert [f["subject"] for f in unreadable] == ["GPU1"]


def test_healthy_fake_machine_passes(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    fake_machine(monkeypatch, "healthy_8x_h100_nvlink", "two-gpu")
    code, out, err = rigcheck("power", "--json")
    assert (code, err) == (0, "")
    assert {f["category"] for f in json.loads(out)["findings"]} == {"power"}
    code, _, err = rigcheck("snapshot")
    assert (code, err) == (0, "")


def test_from_files_are_not_affected(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    fake_machine(monkeypatch, "no_driver", "no-gpu")
    topo = FIXTURES / "corpus/topo/007-8xh100-nv18-2numa-no-nics-spaces.txt"
    code, out, err = rigcheck("topo", "--from", str(topo), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["labels"][0] == "GPU0"


@pytest.mark.parametrize("bench", ["membw", "hostlink"])
def test_reference_tool_outputs_are_not_affected(
    bench: str, monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    fake_machine(monkeypatch, "no_driver", "no-gpu")
    nvbandwidth = FIXTURES / "reference-tools/nvbandwidth-1xh100-vm-v0.8.txt"
    code, out, err = rigcheck("bench", bench, "--from", str(nvbandwidth), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["source"]["tool"] == "nvbandwidth"


@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_nccl_tests_outputs_are_not_affected(
    collective: str, monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck
) -> None:
    fake_machine(monkeypatch, "no_driver", "no-gpu")
    output = {
        "allreduce": FIXTURES / "corpus/nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt",
        "allgather": FIXTURES / "nccl-tests-extra/old-allgather-8xa100-c0.log",
    }[collective]
    code, out, err = rigcheck("bench", collective, "--from", str(output), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["source"]["tool"] == "nccl-tests"


def test_cpu_benchmarks_are_not_affected(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fake_machine(monkeypatch, "no_driver", "no-gpu")
    snap = bench_common.machine(cpu=True)
    assert snap.gpus == []
    assert capsys.readouterr().err == ""


def test_replayed_snapshot_of_a_broken_driver_still_fails(
    monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck, tmp_path: Path
) -> None:
    fake_machine(monkeypatch, "driver_version_mismatch", "two-gpu")
    _, out, _ = rigcheck("snapshot")
    saved = tmp_path / "rig.json"
    saved.write_text(out, encoding="utf-8")
    code, out, err = rigcheck("doctor", "--from", str(saved), "--json")
    assert (code, err) == (1, "")  # a file: no stderr line, but the same fail
    assert [f["id"] for f in json.loads(out)["findings"] if f["severity"] == "fail"] == [
        "health.driver-version-mismatch"
    ]
