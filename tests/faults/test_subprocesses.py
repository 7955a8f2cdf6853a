"""The system tools rigcheck runs (issue 25, Deliver 5), hung for real: dmesg, journalctl and systemctl stand-ins
on PATH that sleep and start a child that sleeps too (what a tool stuck behind a pager or a helper does). Each is
killed with its whole process group at its deadline, the kernel-log readers share one budget, nothing is left
running, and the hint names the cause. The budgets are lowered here (module constants), so the suite stays fast;
the real ones are 20 s for the kernel log and 10 s for systemctl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigcheck.checks.doctor.xid import check_xid
from rigcheck.model import Snapshot
from rigcheck.probe import fabric_manager, kernel_log
from rigcheck.probe.tool_run import run_tool
from tests.faults.support import ROOT

# A stand-in (synthetic, labelled as such): it writes its pid and its child's to PIDS, then hangs.
HANGING = """#!/bin/sh
echo $$ >> "{pids}"
sleep 30 &
echo $! >> "{pids}"
sleep 30
"""


def _stand_ins(directory: Path, names: tuple[str, ...]) -> Path:
    directory.mkdir(exist_ok=True)
    pids = directory / "pids"
    for name in names:
        tool = directory / name
        tool.write_text(HANGING.format(pids=pids))
        tool.chmod(0o755)
    return pids


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its reaper has stopped: it holds nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _left_running(pids: Path) -> list[int]:
    """The stand-ins' processes still running, given a moment for the kernel to finish the kill."""
    started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    end = time.monotonic() + 2.0
    while (alive := [p for p in started if _running(p)]) and time.monotonic() < end:
        time.sleep(0.05)
    return alive


def test_a_hung_tool_is_killed_with_its_children_at_its_deadline(tmp_path: Path) -> None:
    pids = _stand_ins(tmp_path, ("dmesg",))
    before = time.monotonic()
    code, out, err = run_tool([str(tmp_path / "dmesg")], 0.5)
    took = time.monotonic() - before
    assert (code, out, err) == (124, "", "dmesg: timed out after 0.5 s")
    assert took < 3.0  # subprocess.run waited for the child's pipes after killing the tool alone: 30 s
    assert len(pids.read_text().split()) == 2
    assert _left_running(pids) == []


def test_a_missing_tool_and_one_that_cannot_run_say_so(tmp_path: Path) -> None:
    not_executable = tmp_path / "dmesg"
    not_executable.write_text("#!/bin/sh\n")
    not_executable.chmod(0o644)
    assert run_tool([str(tmp_path / "absent")], 1.0) == (127, "", "absent: not found")
    assert run_tool([str(not_executable)], 1.0) == (126, "", "dmesg: permission denied")  # root too: no x bit


def test_doctor_with_a_hung_dmesg_and_journalctl_keeps_to_one_budget_and_leaves_nothing(tmp_path: Path) -> None:
    """Was: 20 s for dmesg, then 20 s more for journalctl (41 s), their children left running, and the hint
    "run as root". Here the budget is 2 s; doctor (live, whatever the machine has) reads the kernel log once."""
    stubs = tmp_path / "bin"
    pids = _stand_ins(stubs, ("dmesg", "journalctl"))
    program = (
        "import sys; import rigcheck.probe.kernel_log as k; k.READ_BUDGET_S = 2.0; "
        "from rigcheck.cli.app import main; main(sys.argv[1:])"
    )
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ.get('PATH', '')}"}
    before = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", program, "doctor", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=30,
        check=False,
    )
    took = time.monotonic() - before
    assert done.returncode in (0, 1), done.stderr  # the verdict is the machine's; no error
    assert took < 2.0 + 8.0  # the budget, and the start and probing of a rigcheck process
    assert len(pids.read_text().split()) == 4  # both tools ran (journalctl after dmesg's half), each with a child
    assert _left_running(pids) == []
    (finding,) = [f for f in json.loads(done.stdout)["findings"] if f["id"] == "xid.log-unreadable"]
    assert "timed out" in finding["message"]
    assert "did not answer in time" in finding["advice"]
    assert "run as root" not in finding["advice"]


def test_the_kernel_log_readers_share_one_budget(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pids = _stand_ins(tmp_path, ("dmesg", "journalctl"))
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(kernel_log, "READ_BUDGET_S", 1.0)
    before = time.monotonic()
    events, read = kernel_log.read_live()
    took = time.monotonic() - before
    assert events == []
    assert took < 1.0 + 1.5
    assert read.unreadable is not None
    assert read.unreadable.startswith("dmesg: timed out after 0.5 s; journalctl -k: timed out after 0.")
    assert _left_running(pids) == []


def test_missing_tools_are_named_as_missing_not_a_permission(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither dmesg nor journalctl on it
    _, read = kernel_log.read_live()
    assert read.unreadable == "dmesg: not found; journalctl -k: not found"
    (finding,) = check_xid(Snapshot(kernel_log=read))
    assert finding.advice is not None
    assert "install dmesg" in finding.advice
    assert "run as root" not in finding.advice


def test_a_hung_systemctl_costs_its_timeout_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fabric Manager's state on an NVSwitch host: a systemctl that hangs (a stuck systemd) was killed alone,
    and subprocess.run then waited for its child's pipes (30 s here)."""
    switches = tmp_path / "nvswitch-devices"
    switches.mkdir()
    (switches / "0").mkdir()  # one NVSwitch, as /proc/driver/nvidia-nvswitch/devices lists them
    pids = _stand_ins(tmp_path / "bin", ("systemctl",))
    monkeypatch.setattr(fabric_manager, "SYSTEMCTL_TIMEOUT_S", 0.5)
    before = time.monotonic()
    fm = fabric_manager.read_fabric_manager_live(switches, str(tmp_path / "bin" / "systemctl"))
    assert time.monotonic() - before < 3.0
    assert fm is not None
    assert fm.state == "unknown"
    assert fm.detail == "systemctl is-active nvidia-fabricmanager: systemctl: timed out after 0.5 s"
    assert _left_running(pids) == []
