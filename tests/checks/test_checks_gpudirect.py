"""RDMA ports and the GPUDirect RDMA module from a fake sysfs tree (tests/fixtures/sysfs/ib-node), and the
gpudirect check over them."""

from __future__ import annotations

import shutil
from pathlib import Path

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.gpudirect import check_gpudirect
from rigcheck.model import Missing, Severity, Snapshot, System
from rigcheck.probe.sysfs import ib_ports, parse_ib_rate, peermem_module, probe_rdma
from tests.support.snapshots import make_gpu, make_snapshot

TREE = Path(__file__).parent.parent / "fixtures/sysfs/ib-node"
TWO_GPU = Path(__file__).parent.parent / "fixtures/sysfs/two-gpu"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(TREE, root)
    return root


def _set_port(root: Path, device: str, state: str, phys: str) -> None:
    port = root / "sys/class/infiniband" / device / "ports/1"
    (port / "state").write_text(state + "\n")
    (port / "phys_state").write_text(phys + "\n")


def _system(root: Path) -> System:
    system = System()
    probe_rdma(system, root)
    return system


def test_parse_ib_rate() -> None:
    assert parse_ib_rate("200 Gb/sec (4X HDR)") == 200.0
    assert parse_ib_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert parse_ib_rate("Unknown") is None


def test_ports_read_from_sysfs() -> None:
    ports, reason = ib_ports(TREE)
    assert reason is None
    assert ports is not None
    got = [(p.device, p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer) for p in ports]
    assert got == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand"),
        ("mlx5_1", 1, "DOWN", "Disabled", 10.0, "InfiniBand"),
        ("mlx5_2", 1, "ACTIVE", "LinkUp", 100.0, "Ethernet"),
    ]
    assert all(not p.missing for p in ports)


def test_unreadable_port_file_has_a_reason(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "sys/class/infiniband/mlx5_0/ports/1/rate").unlink()
    ports, _ = ib_ports(root)
    assert ports is not None
    assert ports[0].rate_gbps is None
    assert ports[0].missing == {"rate_gbps": Missing.NOT_SUPPORTED}


def test_no_infiniband_class_leaves_the_fields_out() -> None:
    assert ib_ports(TWO_GPU) == (None, Missing.NOT_SUPPORTED)
    system = _system(TWO_GPU)
    assert system.ib_ports is None
    assert system.peermem_loaded is None
    dumped = Snapshot(system=system).model_dump(mode="json", by_alias=True)["system"]
    assert "ib_ports" not in dumped
    assert "peermem_loaded" not in dumped
    assert "peermem_module" not in dumped


def test_peermem_from_proc_modules_and_sys_module(tmp_path: Path) -> None:
    assert peermem_module(TREE) == (False, None)
    root = _tree(tmp_path)
    (root / "sys/module/nvidia_peermem").mkdir()
    assert peermem_module(root) == (True, "nvidia_peermem")
    shutil.rmtree(root / "sys/module/nvidia_peermem")
    modules = root / "proc/modules"
    modules.write_text(modules.read_text() + "nv_peer_mem 16384 0 - Live 0x0000000000000000 (OE)\n")
    assert peermem_module(root) == (True, "nv_peer_mem")


def test_peermem_unreadable_is_unknown(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "proc/modules").unlink()
    shutil.rmtree(root / "sys/module")
    assert peermem_module(root) == (None, None)
    system = _system(root)
    assert system.peermem_loaded is None
    assert system.missing == {"peermem_loaded": Missing.NOT_SUPPORTED}
    found = check_gpudirect(make_snapshot([make_gpu(0)], system=system))
    ids = {f.id: f.severity for f in found}
    assert ids["gpudirect.peermem-unknown"] is Severity.UNKNOWN


def test_down_port_and_missing_peermem_warn() -> None:
    found = check_gpudirect(make_snapshot([make_gpu(0)], system=_system(TREE)))
    by_id = {f.id: f for f in found}
    assert set(by_id) == {"gpudirect.port-down", "gpudirect.peermem-missing"}
    down = by_id["gpudirect.port-down"]
    assert down.severity is Severity.WARN
    assert "mlx5_1 port 1" in down.message
    assert "mlx5_0" not in down.message
    assert down.measured == "mlx5_1 port 1 (InfiniBand): DOWN, Disabled, 10 Gb/s"
    peer = by_id["gpudirect.peermem-missing"]
    assert peer.severity is Severity.WARN
    assert "nvidia_peermem" in peer.message
    assert "GPUDirect RDMA" in (peer.source or "")


def test_all_good_is_ok(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _set_port(root, "mlx5_1", "4: ACTIVE", "5: LinkUp")
    (root / "sys/module/nvidia_peermem").mkdir()
    found = check_gpudirect(make_snapshot([make_gpu(0)], system=_system(root)))
    assert [(f.id, f.severity) for f in found] == [("gpudirect.ok", Severity.OK)]
    assert "nvidia_peermem loaded" in found[0].message
    assert "mlx5_0 port 1" in found[0].message


def test_init_port_warns(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _set_port(root, "mlx5_1", "2: INIT", "5: LinkUp")  # no subnet manager yet
    (root / "sys/module/nvidia_peermem").mkdir()
    found = check_gpudirect(make_snapshot([make_gpu(0)], system=_system(root)))
    assert [f.id for f in found] == ["gpudirect.port-down"]
    assert "INIT" in (found[0].measured or "")


def test_no_gpus_no_peermem_finding() -> None:
    found = check_gpudirect(make_snapshot([], system=_system(TREE)))
    assert [f.id for f in found] == ["gpudirect.port-down"]


def test_snapshot_from_file_gives_nothing_and_round_trips(tmp_path: Path) -> None:
    snap = make_snapshot([make_gpu(0)])
    assert check_gpudirect(snap) == []
    assert not [f for f in run_checks(snap) if f.category == "gpudirect"]
    live = make_snapshot([make_gpu(0)], system=_system(TREE))
    again = Snapshot.model_validate_json(live.model_dump_json(by_alias=True))
    assert again.system == live.system
