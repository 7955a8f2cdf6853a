"""probe_sysfs and probe_host over the hand-made tree in tests/fixtures/sysfs/two-gpu."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rigcheck.model import Missing
from rigcheck.probe.host import parse_cpuinfo, parse_os_release, probe_host
from rigcheck.probe.sysfs import (
    acs_redirect_from_config,
    normalize_bdf,
    parse_link_speed,
    probe_sysfs,
    read_numa_node,
)

TREE = Path(__file__).parent.parent / "fixtures/sysfs/two-gpu"
DEVICES = "sys/devices"
GPU0_PATH = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:19:00.0"
NVML_BUS_IDS = ["00000000:19:00.0", "00000000:C1:00.0"]


def config_space(ext_caps: list[tuple[int, bytes]], size: int = 4096) -> bytes:
    """A config-space dump with the given extended capabilities chained from 0x100."""
    data = bytearray(size)
    offset = 0x100
    for i, (cap_id, body) in enumerate(ext_caps):
        nxt = offset + 0x40 if i + 1 < len(ext_caps) else 0
        header = cap_id | (1 << 16) | (nxt << 20)
        data[offset : offset + 4] = header.to_bytes(4, "little")
        data[offset + 4 : offset + 4 + len(body)] = body
        offset = nxt
    return bytes(data)


def acs_body(control: int) -> bytes:
    return (0x5F).to_bytes(2, "little") + control.to_bytes(2, "little")


AER = 0x0001
ACS = 0x000D


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(TREE, root, symlinks=True)
    bridges = root / DEVICES / "pci0000:00/0000:00:01.0"
    (bridges / "config").write_bytes(bytes(64))  # unprivileged read: only the header
    (bridges / "0000:01:00.0/config").write_bytes(config_space([(AER, b"")]))  # no ACS at all
    (bridges / "0000:01:00.0/0000:02:08.0/config").write_bytes(config_space([(AER, b""), (ACS, acs_body(0x1D))]))
    return root


def test_pcie_path_walks_to_the_root_port(tree: Path) -> None:
    system = probe_sysfs(NVML_BUS_IDS, tree)
    assert set(system.pcie_paths) == set(NVML_BUS_IDS)  # keyed by the ids as passed in
    path = system.pcie_paths["00000000:19:00.0"]
    assert [h.bdf for h in path] == ["0000:19:00.0", "0000:02:08.0", "0000:01:00.0", "0000:00:01.0"]
    gpu = path[0]
    assert (gpu.link_speed_gts, gpu.link_speed_max_gts, gpu.link_width, gpu.link_width_max) == (16.0, 32.0, 16, 16)
    assert gpu.acs_enabled is None
    assert "acs_enabled" not in gpu.missing  # ACS on the endpoint is not asked
    assert path[1].acs_enabled is True
    assert path[2].acs_enabled is False
    assert path[3].acs_enabled is None
    assert path[3].missing["acs_enabled"] is Missing.NO_PERMISSION


def test_second_gpu_trained_low_and_config_absent(tree: Path) -> None:
    path = probe_sysfs(NVML_BUS_IDS, tree).pcie_paths["00000000:C1:00.0"]
    assert [h.bdf for h in path] == ["0000:c1:00.0", "0000:80:03.1"]
    assert (path[0].link_speed_gts, path[0].link_width) == (8.0, 8)
    assert path[1].missing["acs_enabled"] is Missing.NOT_SUPPORTED


def test_iommu_on_with_cmdline_hints(tree: Path) -> None:
    system = probe_sysfs([], tree)
    assert system.iommu == "on"
    assert system.iommu_detail == "kernel command line: intel_iommu=on iommu=pt"


def test_iommu_off_and_unknown(tmp_path: Path) -> None:
    assert probe_sysfs([], tmp_path).iommu == "unknown"
    (tmp_path / "sys/class/iommu").mkdir(parents=True)
    (tmp_path / "sys/kernel/iommu_groups").mkdir(parents=True)
    off = probe_sysfs(["0000:19:00.0"], tmp_path)
    assert off.iommu == "off"
    assert off.iommu_detail is None
    assert off.pcie_paths == {}
    assert off.missing["pcie_paths"] is Missing.NOT_SUPPORTED


def test_acs_decoder() -> None:
    assert acs_redirect_from_config(config_space([(ACS, acs_body(0x04))])) == (True, None)
    assert acs_redirect_from_config(config_space([(ACS, acs_body(0x1B))])) == (False, None)  # RR bit clear
    assert acs_redirect_from_config(config_space([(AER, b"")])) == (False, None)
    assert acs_redirect_from_config(bytes(64)) == (None, Missing.NO_PERMISSION)
    assert acs_redirect_from_config(bytes(256)) == (None, Missing.NOT_SUPPORTED)
    looped = bytearray(4096)
    looped[0x100:0x104] = (AER | (0x100 << 20)).to_bytes(4, "little")  # points at itself
    assert acs_redirect_from_config(bytes(looped)) == (False, None)


def test_bus_id_and_speed_parsing(tree: Path) -> None:
    assert normalize_bdf("00000000:1B:00.0") == "0000:1b:00.0"
    assert normalize_bdf("0000:1b:00.0") == "0000:1b:00.0"
    with pytest.raises(ValueError, match="not a PCI bus id"):
        normalize_bdf("GPU0")
    assert parse_link_speed("16.0 GT/s PCIe") == 16.0
    assert parse_link_speed("2.5 GT/s") == 2.5
    assert parse_link_speed("Unknown") is None
    assert read_numa_node("00000000:C1:00.0", tree) == 1
    assert read_numa_node("00000000:AA:00.0", tree) is None


def test_host_from_tree() -> None:
    host = probe_host(TREE)
    assert host.hostname == "rig-01"
    assert host.os == "Ubuntu 22.04.4 LTS"
    assert host.kernel == "6.5.0-35-generic"
    assert host.cpu_model == "Intel(R) Xeon(R) Platinum 8480+"
    assert host.cpu_count == 4
    assert host.numa_nodes == 2
    assert host.memory_total_gib == pytest.approx(2015.3, abs=0.1)
    assert host.missing == {}


def test_host_empty_tree_gives_reasons(tmp_path: Path) -> None:
    host = probe_host(tmp_path)
    assert host.os is None
    assert host.missing["os"] is Missing.NOT_SUPPORTED
    assert host.missing["hostname"] is Missing.NOT_SUPPORTED
    assert host.missing["numa_nodes"] is Missing.NOT_SUPPORTED


def test_host_parsers() -> None:
    assert parse_os_release('NAME=x\nPRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"\n') == "Rocky Linux 9.3 (Blue Onyx)"
    assert parse_os_release("NAME=x\n") is None
    assert parse_cpuinfo("processor : 0\nHardware : BCM2835\nprocessor : 1\n") == ("BCM2835", 2)
