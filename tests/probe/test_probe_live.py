"""probe_machine: NVML + host + versions + sysfs in one snapshot, for every fake scenario."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from rigcheck.model import Missing, snapshot_from_json, snapshot_to_json
from rigcheck.probe.live import probe_machine
from rigcheck.probe.versions import probe_versions, torch_cuda_from_metadata
from tests.support.fakenvml import SCENARIOS, FakeGpu, FakeNvml

TREE = Path(__file__).parent.parent / "fixtures/sysfs/two-gpu"
NO_GPU_TREE = Path(__file__).parent.parent / "fixtures/sysfs/no-gpu"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_through_probe_machine(name: str) -> None:
    lib = SCENARIOS[name]()
    snap = probe_machine(lib, sysfs_root=TREE)
    assert snap.source.kind == "nvml"
    assert snap.created_at is not None
    assert datetime.fromisoformat(snap.created_at).utcoffset() is not None
    assert snap.host.hostname == "rig-01"
    assert snap.software.python_version == ".".join(str(v) for v in sys.version_info[:3])
    assert snap.software.rigcheck_version
    assert snapshot_from_json(snapshot_to_json(snap)) == snap
    assert snap.driver is not None
    assert [g.bdf for g in snap.driver.pci_gpus or []] == ["0000:19:00.0", "0000:c1:00.0"]
    if lib.init_error is not None:
        assert lib.shutdowns == 0
        assert snap.driver.nvml != "ok"
        assert snap.driver.nvml_error
    else:
        assert lib.shutdowns == 1
        assert snap.gpu_absent_reason is None
        assert snap.software.driver_version == lib.driver
        assert snap.driver.nvml == "ok"
        assert snap.driver.kernel_module_version == "550.54.15"


def test_no_driver_still_reports_host_and_software() -> None:
    snap = probe_machine(SCENARIOS["no_driver"](), sysfs_root=TREE)
    assert snap.gpus == []
    assert snap.pairs == []
    assert snap.gpu_absent_reason == "no NVIDIA driver found (libnvidia-ml.so not loadable)"
    assert snap.host.os == "Ubuntu 22.04.4 LTS"
    assert snap.software.driver_version is None
    assert snap.software.missing["driver_version"] is Missing.NOT_SUPPORTED
    assert snap.system.iommu == "on"


@pytest.mark.parametrize(
    ("scenario", "state"),
    [
        ("no_driver", "library_not_found"),
        ("driver_not_loaded", "driver_not_loaded"),
        ("driver_version_mismatch", "version_mismatch"),
    ],
)
def test_nvml_start_failure_is_recorded_with_the_bus(scenario: str, state: str) -> None:
    snap = probe_machine(SCENARIOS[scenario](), sysfs_root=TREE)
    assert snap.gpus == []
    assert snap.driver is not None
    assert snap.driver.nvml == state
    assert snap.driver.kernel_module_version == "550.54.15"  # the tree's module is loaded
    assert [(g.bdf, g.driver, g.pci_class) for g in snap.driver.pci_gpus or []] == [
        ("0000:19:00.0", "nvidia", "0x030200"),
        ("0000:c1:00.0", "nvidia", "0x030200"),
    ]
    assert snapshot_from_json(snapshot_to_json(snap)) == snap


def test_machine_without_an_nvidia_gpu() -> None:
    snap = probe_machine(SCENARIOS["no_driver"](), sysfs_root=NO_GPU_TREE)
    assert snap.driver is not None
    assert snap.driver.pci_gpus == []  # an Intel VGA and an audio function: neither counts
    assert snap.driver.kernel_module_version is None
    assert snap.driver.missing["kernel_module_version"] is Missing.NOT_SUPPORTED
    assert snap.host.hostname == "build-box"


def test_unreadable_gpu_is_a_placeholder_the_others_are_read() -> None:
    snap = probe_machine(SCENARIOS["gpu_every_call_fails"](), sysfs_root=TREE)
    ok, broken = snap.gpus
    assert ok.read_error is None
    assert ok.name == "NVIDIA H100 80GB HBM3"
    assert broken.read_error is Missing.ERROR
    assert broken.read_error_detail is not None
    assert "every NVML reading failed" in broken.read_error_detail
    assert "Unknown Error" in broken.read_error_detail
    assert [d.message for d in snap.diagnostics if d.gpu == 1] == [f"GPU unreadable: {broken.read_error_detail}"]
    assert snap.pairs[0].link is None  # no pair read with a GPU that answers nothing
    assert snap.pairs[0].missing["link"] is Missing.ERROR


def test_absent_snapshot_for_the_poller() -> None:
    from rigcheck.probe.live import absent_snapshot
    from rigcheck.probe.nvml.calls import NoGpuError

    snap = absent_snapshot(
        NoGpuError("no NVIDIA driver found", "library_not_found", "NVML Shared Library Not Found"), TREE
    )
    assert snap.gpus == []
    assert snap.gpu_absent_reason == "no NVIDIA driver found"
    assert snap.driver is not None
    assert snap.driver.nvml == "library_not_found"
    assert len(snap.driver.pci_gpus or []) == 2


def test_sysfs_paths_for_the_gpus_found() -> None:
    gpus = [FakeGpu(bus_id="00000000:19:00.0"), FakeGpu(bus_id="00000000:C1:00.0", numa=1)]
    snap = probe_machine(FakeNvml(gpus), sysfs_root=TREE)
    assert set(snap.system.pcie_paths) == {"00000000:19:00.0", "00000000:C1:00.0"}
    assert len(snap.system.pcie_paths["00000000:19:00.0"]) == 4
    assert snap.system.iommu_detail == "kernel command line: intel_iommu=on iommu=pt"


def test_versions_without_torch_import() -> None:
    sw = probe_versions()
    assert "torch" not in sys.modules or sw.torch_version is not None
    if sw.torch_version is None:
        assert sw.missing["torch_version"] is Missing.NOT_IN_SOURCE
    if sw.nccl_version is None:
        assert sw.missing["nccl_version"] is Missing.NOT_IN_SOURCE


def test_torch_cuda_from_metadata() -> None:
    assert torch_cuda_from_metadata("2.4.0+cu121", None) == "12.1"
    assert torch_cuda_from_metadata("2.1.2+cu118", []) == "11.8"
    reqs = ["filelock", 'nvidia-cuda-runtime-cu12==12.4.127; platform_system == "Linux"']
    assert torch_cuda_from_metadata("2.5.1", reqs) == "12.4"
    assert torch_cuda_from_metadata("2.5.1+cpu", ["filelock"]) is None


def test_probe_machine_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from rigcheck.probe.live import probe_machine\n"
        "snap = probe_machine(sysfs_root=Path(sys.argv[1]))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print(snap.gpu_absent_reason or len(snap.gpus))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(TREE)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
