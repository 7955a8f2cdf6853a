"""Output files under real faults (issue 25, Deliver 1): one safe writer (model/files_out.py) behind --html,
--markdown and snapshot -o, and stdout that cannot be written. Each case is the fault itself: a full and a
read-only tmpfs, a symlink, a FIFO, a device node, /dev/full as stdout, a pipe whose reader is gone."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.support import SNAPSHOTS, fill, run_process
from tests.support.cli import Rigcheck

SMALL = SNAPSHOTS / "no-gpu.json"  # 1.2 KB: the snapshot already on the disk
LARGER = SNAPSHOTS / "2x-titan-rtx-nv2.json"  # 11 KB: the one that no longer fits
HTML_SOURCE = SNAPSHOTS / "2x-titan-rtx-nv2.json"


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "internal error" not in err
    assert "Traceback" not in err
    return lines[0]


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# --- the target: a symlink, a mode to keep, a file that is not a regular one -----------------------------------


def test_html_through_a_symlink_writes_its_target_and_keeps_0600(tmp_path: Path, rigcheck: Rigcheck) -> None:
    private = tmp_path / "private.html"
    private.write_text("old report\n")
    private.chmod(0o600)
    link = tmp_path / "report.html"
    link.symlink_to(private.name)

    code, _, err = rigcheck("doctor", "--from", str(HTML_SOURCE), "--html", str(link))

    assert code == 0, err
    assert link.is_symlink()  # the link stays a link ...
    assert os.readlink(link) == private.name
    assert private.read_text().startswith("<!DOCTYPE html>")  # ... and its target holds the report
    assert stat.S_IMODE(private.stat().st_mode) == 0o600  # still private
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.html", "report.html"]  # no temporary file left


def test_markdown_over_an_existing_file_keeps_its_mode_and_a_new_file_gets_the_umask(
    tmp_path: Path, rigcheck: Rigcheck
) -> None:
    kept = tmp_path / "kept.md"
    kept.write_text("old\n")
    kept.chmod(0o640)
    owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())  # as root: another user's file
    os.chown(kept, *owner)
    new = tmp_path / "new.md"
    with _umask(0o077):
        code, _, err = rigcheck("doctor", "--from", str(HTML_SOURCE), "--markdown", str(kept))
        assert code == 0, err
        code, _, err = rigcheck("doctor", "--from", str(HTML_SOURCE), "--markdown", str(new))
        assert code == 0, err
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    assert (kept.stat().st_uid, kept.stat().st_gid) == owner  # root writing it does not take it over
    assert stat.S_IMODE(new.stat().st_mode) == 0o600  # 0666 less the umask, not a fixed 0644
    assert kept.read_text() != "old\n"


def _device(path: Path, major: int, minor: int) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")


@pytest.mark.parametrize("kind", ["fifo", "null device", "full device", "symlink to a fifo", "directory"])
@pytest.mark.parametrize("option", ["--html", "--markdown", "snapshot -o"])
def test_a_target_that_is_not_a_regular_file_is_refused_and_left_alone(
    tmp_path: Path, rigcheck: Rigcheck, kind: str, option: str
) -> None:
    """Renaming a file over a device node destroys the device (as root, --html /dev/null did); a FIFO would
    become a file its reader never sees. The devices here are made in tmp_path (the same numbers as /dev/null
    and /dev/full), so that a failing run cannot touch the real ones."""
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "null device":
        _device(target, 1, 3)
    elif kind == "full device":
        _device(target, 1, 7)
    elif kind == "symlink to a fifo":
        os.mkfifo(tmp_path / "fifo")
        target.symlink_to("fifo")
    else:
        target.mkdir()
    before = os.lstat(target)
    if option == "snapshot -o":
        argv = ["snapshot", "--from", str(SMALL), "-o", str(target)]
    else:
        argv = ["doctor", "--from", str(HTML_SOURCE), option, str(target)]

    code, _, err = rigcheck(*argv)

    assert code == 2
    line = _one_error_line(err)
    assert "target" in line
    if kind != "directory":  # a directory is refused by the option parser already, in its own words
        assert "not a regular file" in line
    after = os.lstat(target)
    assert (stat.S_IFMT(after.st_mode), after.st_ino, after.st_rdev) == (
        stat.S_IFMT(before.st_mode),
        before.st_ino,
        before.st_rdev,
    )
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# --- a full disk, a read-only one ----------------------------------------------------------------------------


def test_snapshot_over_an_old_one_on_a_full_disk_keeps_it_whole(tiny_tmpfs: Path, rigcheck: Rigcheck) -> None:
    """Was: the old snapshot truncated in place and half rewritten (a torn file), exit 3 "internal error"."""
    saved = tiny_tmpfs / "snapshot.json"
    code, _, err = rigcheck("snapshot", "--from", str(SMALL), "-o", str(saved))
    assert code == 0, err
    old = saved.read_bytes()
    fill(tiny_tmpfs)

    code, _, err = rigcheck("snapshot", "--from", str(LARGER), "-o", str(saved))

    assert code == 2
    line = _one_error_line(err)
    assert "No space left on device" in line
    assert "snapshot.json" in line
    assert saved.read_bytes() == old
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["filler", "filler-tail", "snapshot.json"]


def test_html_on_a_full_disk_keeps_the_old_report(tiny_tmpfs: Path, rigcheck: Rigcheck) -> None:
    report = tiny_tmpfs / "report.html"
    report.write_text("the old report\n")
    fill(tiny_tmpfs)

    code, _, err = rigcheck("doctor", "--from", str(HTML_SOURCE), "--html", str(report))

    assert code == 2
    assert "No space left on device" in _one_error_line(err)
    assert report.read_text() == "the old report\n"


def test_a_read_only_disk_is_one_line_and_the_old_file_stays(tiny_tmpfs: Path, rigcheck: Rigcheck) -> None:
    saved = tiny_tmpfs / "snapshot.json"
    saved.write_text("{}\n")
    remount = subprocess.run(
        ["mount", "-o", "remount,ro", str(tiny_tmpfs)], capture_output=True, text=True, check=False
    )
    if remount.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {remount.stderr.strip()}")

    for argv in (
        ["snapshot", "--from", str(SMALL), "-o", str(saved)],
        ["doctor", "--from", str(HTML_SOURCE), "--html", str(tiny_tmpfs / "new.html")],
    ):
        code, _, err = rigcheck(*argv)
        assert code == 2, argv
        assert "Read-only file system" in _one_error_line(err)
    assert saved.read_text() == "{}\n"


# --- stdout --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["doctor", "--json"], ["doctor"], ["snapshot"]], ids=" ".join)
def test_a_full_stdout_is_exit_2_not_an_internal_error(argv: list[str]) -> None:
    """`doctor --json > /dev/full` was exit 3, "internal error: OSError"."""
    with open("/dev/full", "w") as full:
        done = run_process([*argv, "--from", str(HTML_SOURCE)], stdout=full.fileno())
    assert done.returncode == 2, done.stderr
    assert _one_error_line(done.stderr) == "rigcheck: error: cannot write to stdout: No space left on device"


def test_a_pipe_whose_reader_is_gone_is_exit_2() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = run_process(["doctor", "--from", str(HTML_SOURCE)], stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 2, done.stderr
    assert "Broken pipe" in _one_error_line(done.stderr)


# --- a trace stream (monitor --csv / --jsonl) -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["--csv", "--jsonl"])
def test_a_trace_on_a_disk_that_fills_mid_run_is_exit_2_after_the_summary(
    tiny_tmpfs: Path, rigcheck: Rigcheck, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """A trace is a stream (it grows as the run goes): it cannot be written whole, so a disk that fills under it
    ends the file there; the sampling goes on, the summary is printed, and the run says so (exit 2). Was: the
    sampling thread died with a traceback and the run ended as an internal error. The fake NVML poller of
    tests/support/fakenvml.py stands in for the GPUs (synthetic)."""
    from rigcheck.cli import monitor as monitor_cmd
    from rigcheck.probe.nvml import NvmlPoller
    from tests.support.fakenvml import burn_power_capped_h100

    monkeypatch.setattr(monitor_cmd, "make_poller", lambda gpus=None: NvmlPoller(burn_power_capped_h100(), gpus=gpus))
    fill(tiny_tmpfs)
    filler = tiny_tmpfs / "filler"
    os.truncate(filler, filler.stat().st_size - 2 * 4096)  # two pages: the sidecar's and the trace's first
    trace = tiny_tmpfs / f"trace.{fmt[2:]}"

    code, out, err = rigcheck("monitor", "--interval", "0.01", "--duration", "0.8", fmt, str(trace), "--json")

    assert code == 2
    assert json.loads(out)["sampler"]["polls"] > 20  # the summary of the whole run: the sampling went on
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"rigcheck: error: cannot write {trace}: No space left on device")
    assert "internal error" not in err
    assert trace.stat().st_size > 0  # the rows before the disk filled stay
