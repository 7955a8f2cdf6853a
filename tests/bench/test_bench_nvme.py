"""`rigcheck bench nvme`: real I/O on this machine's filesystem (small files), the file removed on every way
out, the refusals, the O_DIRECT-refused path, and the device under a path read from a hand-made /proc + /sys."""

from __future__ import annotations

import errno
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rigcheck.bench.nvme import DEFAULT_QUEUE_DEPTH, MIB, run_nvme
from rigcheck.errors import Interrupted, UsageError
from rigcheck.model.bench import NvmeDocument, StorageDevice, parse_bench
from rigcheck.probe.storage_path import mount_of, parse_mounts, storage_of
from rigcheck.report.bench.render import RENDERERS
from tests.contracts.test_schemas import validator
from tests.support.cli import Rigcheck

SIZE = 64 * MIB
SWEEP = (128 * 1024, MIB, 4 * MIB)


def _storage(path: Path) -> StorageDevice:
    return storage_of(path, st_dev=os.stat(path).st_dev)


def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".rigcheck-nvme")]


def _run(directory: Path, **kwargs: Any) -> NvmeDocument:
    return run_nvme(directory, storage=_storage(directory), size_bytes=SIZE, repeats=2, **kwargs)


# --- measurement ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[NvmeDocument, Path]:
    directory = tmp_path_factory.mktemp("nvme")
    return _run(directory), directory


def test_rows_present_positive_and_the_file_removed(measured: tuple[NvmeDocument, Path]) -> None:
    doc, directory = measured
    if doc.direct_io_error is not None:
        pytest.skip(f"this filesystem refuses O_DIRECT: {doc.direct_io_error}")
    names = [r.name for r in doc.results]
    swept = [f"nvme_{d}_direct_{b}" for b in ("128k", "1m", "4m") for d in ("write", "read")]
    dd_like = ["nvme_write_direct_1m_dd", "nvme_read_direct_1m_dd"]
    assert names == ["nvme_read", "nvme_write", *dd_like, *swept, "nvme_write_buffered", "nvme_read_buffered"]
    for r in doc.results:
        assert r.value > 0, r.name
        assert r.gbps == r.value
        assert r.min <= r.median <= r.max
        assert r.repeats == 2
        assert r.file_bytes == SIZE
        assert r.unit == "GB/s"
    for direction in ("read", "write"):
        summary = next(r for r in doc.results if r.name == f"nvme_{direction}")
        direct = [r for r in doc.results if r.direction == direction and r.mode == "direct" and not r.summary]
        assert {r.block_size_bytes for r in direct} == set(SWEEP)
        # The headline is dd's pass (1 MiB, one request; the write into a new file), not the sweep's best.
        dd = next(r for r in direct if r.name == f"nvme_{direction}_direct_1m_dd")
        assert (dd.block_size_bytes, dd.queue_depth) == (1 << 20, 1)
        assert dd.note
        assert "dd" in dd.note
        assert summary.summary
        assert summary.value == dd.value
        assert summary.queue_depth == 1
        assert [r.queue_depth for r in direct if not r.name.endswith("_dd")] == [DEFAULT_QUEUE_DEPTH] * len(SWEEP)
    buffered_read = next(r for r in doc.results if r.name == "nvme_read_buffered")
    assert buffered_read.queue_depth == 1
    assert buffered_read.note
    assert "page cache" in buffered_read.note
    assert not doc.partial
    assert doc.error is None
    assert doc.backend == "posix"
    assert _leftovers(directory) == []


def test_json_validates_against_the_generated_schema(measured: tuple[NvmeDocument, Path]) -> None:
    doc, _ = measured
    data = doc.to_json_dict()
    validator("rigcheck.bench/1").validate(data)
    assert isinstance(parse_bench(data), NvmeDocument)
    broken = json.loads(json.dumps(data))
    broken["results"][0]["gbps"] = "fast"
    assert list(validator("rigcheck.bench/1").iter_errors(broken))


def test_every_rendering_names_the_storage(measured: tuple[NvmeDocument, Path]) -> None:
    doc, _ = measured
    markdown = RENDERERS.markdown(doc)
    assert "storage: " in markdown
    assert "nvme_read" in markdown
    assert "Storage" in RENDERERS.html(doc)


@pytest.mark.parametrize(
    ("interrupt", "error"),
    [(KeyboardInterrupt(), "interrupted (SIGINT)"), (Interrupted(signal.SIGTERM), "interrupted (SIGTERM)")],
)
def test_an_interruption_mid_run_keeps_the_rows_and_removes_the_file(
    tmp_path: Path, interrupt: KeyboardInterrupt, error: str
) -> None:
    calls: list[str] = []

    def hook(message: str) -> None:  # the progress callback runs between passes: Ctrl-C lands there too
        calls.append(message)
        if len(calls) == 6:
            raise interrupt

    doc = _run(tmp_path, on_progress=hook)
    assert doc.partial
    assert doc.error == error
    assert _leftovers(tmp_path) == []
    assert len(calls) == 6


def test_an_interruption_inside_an_io_pass_removes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the threads are writing: the pass stops its threads, the file is removed."""
    from rigcheck.bench import nvme

    real = nvme.io_pass
    passes = [0]

    def interrupted_pass(*args: Any, **kwargs: Any) -> float:
        passes[0] += 1
        if passes[0] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(nvme, "io_pass", interrupted_pass)
    doc = _run(tmp_path)
    assert doc.partial
    assert _leftovers(tmp_path) == []


def test_o_direct_refused_still_gives_the_buffered_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open: Callable[..., int] = os.open

    def no_direct(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_direct)
    doc = _run(tmp_path)
    assert doc.direct_io_error is not None
    assert "O_DIRECT refused" in doc.direct_io_error
    assert [r.name for r in doc.results] == ["nvme_write_buffered", "nvme_read_buffered"]
    assert all(r.value > 0 for r in doc.results)
    assert any("direct rows" in n for n in doc.notes)
    validator("rigcheck.bench/1").validate(doc.to_json_dict())
    assert _leftovers(tmp_path) == []


def test_an_io_error_is_one_line_and_removes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.errors import BenchError

    def full(*_args: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwritev", full)
    with pytest.raises(BenchError, match="No space left on device"):
        _run(tmp_path)
    assert _leftovers(tmp_path) == []


# --- refusals, through the command line ----------------------------------------------------------------------


def _refused(argv: list[str], rigcheck: Rigcheck) -> str:
    code, out, err = rigcheck("bench", "nvme", *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_refuses_a_missing_directory_and_a_file(tmp_path: Path, rigcheck: Rigcheck) -> None:
    assert "no such directory" in _refused(["--path", str(tmp_path / "absent"), "--size", "4M"], rigcheck)
    a_file = tmp_path / "f"
    a_file.write_text("x")
    assert "not a directory" in _refused(["--path", str(a_file), "--size", "4M"], rigcheck)


def test_refuses_too_little_free_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    real = os.statvfs(tmp_path)

    class Small:
        f_frsize = real.f_frsize
        f_bavail = (10 * MIB) // real.f_frsize

    monkeypatch.setattr(os, "statvfs", lambda _p: Small())
    line = _refused(["--path", str(tmp_path), "--size", "1G"], rigcheck)
    assert "GiB free" in line
    assert "needs" in line
    assert _leftovers(tmp_path) == []


def test_refuses_a_read_only_directory(tmp_path: Path, rigcheck: Rigcheck) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    tmp_path.chmod(0o500)
    try:
        assert "not writable" in _refused(["--path", str(tmp_path), "--size", "4M"], rigcheck)
    finally:
        tmp_path.chmod(0o700)


def test_a_size_below_the_minimum_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="at least"):
        run_nvme(tmp_path, storage=_storage(tmp_path), size_bytes=64 * 1024)


def test_through_the_command_line_json(tmp_path: Path, rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck(
        "bench", "nvme", "--path", str(tmp_path), "--size", "16M", "--repeats", "1", "--block-size", "1M", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    validator("rigcheck.bench/1").validate(data)
    assert data["benchmark"] == "nvme"
    assert data["storage"]["path"] == str(tmp_path.resolve())
    assert _leftovers(tmp_path) == []


# --- the device under a path, from a hand-made tree ----------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def fake_nvme_tree(root: Path, *, speed: str = "16.0 GT/s PCIe", width: str = "4") -> None:
    """A Gen4 x4 NVMe drive (nvme0, PCI 0000:01:00.0) with a partition nvme0n1p2 mounted at /data, as sysfs
    lays it out: the class directories are links into /sys/devices."""
    _write(
        root / "proc/mounts",
        "/dev/vda1 / ext4 rw 0 0\ntmpfs /data/tmp tmpfs rw 0 0\n/dev/nvme0n1p2 /data ext4 rw,relatime 0 0\n",
    )
    pci = root / "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0"
    ctrl = pci / "nvme/nvme0"
    disk = ctrl / "nvme0n1"
    part = disk / "nvme0n1p2"
    for name, text in (
        ("current_link_speed", speed),
        ("current_link_width", width),
        ("max_link_speed", "16.0 GT/s PCIe"),
        ("max_link_width", "4"),
    ):
        _write(pci / name, text + "\n")
    _write(ctrl / "model", "Samsung SSD 990 PRO 2TB                 \n")
    _link(ctrl / "device", Path("../.."))
    _write(disk / "queue/rotational", "0\n")
    _link(disk / "device", Path(".."))
    _write(part / "partition", "2\n")
    _link(root / "sys/class/block/nvme0n1p2", part)
    _link(root / "sys/class/block/nvme0n1", disk)
    _link(root / "sys/block/nvme0n1", disk)
    _link(root / "sys/class/nvme/nvme0", ctrl)


def test_storage_of_an_nvme_partition_names_its_link_and_ceiling(tmp_path: Path) -> None:
    fake_nvme_tree(tmp_path)
    s = storage_of(Path("/data/offload"), root=tmp_path)
    assert (s.mount_point, s.fs_type, s.mount_source) == ("/data", "ext4", "/dev/nvme0n1p2")
    assert (s.device, s.disk, s.nvme_controller) == ("nvme0n1p2", "nvme0n1", "nvme0")
    assert s.model == "Samsung SSD 990 PRO 2TB"
    assert s.rotational is False
    assert s.pci_bus_id == "0000:01:00.0"
    assert (s.pcie_link, s.pcie_link_max) == ("Gen4 x4", "Gen4 x4")
    # 16 GT/s x 128/130 / 8 bits x 4 lanes
    assert s.pcie_theoretical_gbps == pytest.approx(16 * 128 / 130 / 8 * 4)
    assert s.pcie_source is not None
    assert "PCI-SIG" in s.pcie_source
    assert s.missing == {}


def test_a_drive_trained_below_its_link_gets_the_trained_ceiling(tmp_path: Path) -> None:
    fake_nvme_tree(tmp_path, speed="8.0 GT/s PCIe", width="2")
    s = storage_of(Path("/data"), root=tmp_path)
    assert (s.pcie_link, s.pcie_link_max) == ("Gen3 x2", "Gen4 x4")
    assert s.pcie_theoretical_gbps == pytest.approx(8 * 128 / 130 / 8 * 2)


def test_storage_of_tmpfs_and_an_unreadable_link_say_why(tmp_path: Path) -> None:
    fake_nvme_tree(tmp_path, speed="Unknown")
    s = storage_of(Path("/data/tmp/x"), root=tmp_path)
    assert s.fs_type == "tmpfs"
    assert s.device is None
    assert s.pcie_link is None
    assert "not a block device" in s.missing["device"]
    assert set(s.missing) >= {"disk", "model", "pcie_link"}
    s = storage_of(Path("/data"), root=tmp_path)
    assert s.pcie_link is None
    assert "not understood" in s.missing["pcie_link"]
    assert s.pcie_link_max == "Gen4 x4"
    assert s.pcie_theoretical_gbps is None
    assert s.missing.keys() >= {"pcie_theoretical_gbps", "pcie_source"}


def test_storage_without_proc_mounts(tmp_path: Path) -> None:
    s = storage_of(Path("/data"), root=tmp_path)
    assert s.mount_point is None
    assert "mounts" in s.missing["mount_point"]


def test_the_longest_mount_point_wins_and_escapes_are_read() -> None:
    mounts = parse_mounts("/dev/a / ext4 rw 0 0\n/dev/b /mnt/my\\040disk xfs rw 0 0\n/dev/c /mnt ext4 rw 0 0\n")
    chosen = mount_of("/mnt/my disk/x", mounts)
    assert chosen is not None
    assert chosen.source == "/dev/b"
    chosen = mount_of("/mnt/my diskette", mounts)
    assert chosen is not None
    assert chosen.source == "/dev/c"
