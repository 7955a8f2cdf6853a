"""SIGINT and SIGTERM mid-run of `rigcheck bench allreduce --cpu --world-size 2 --json`, for real (issue #12):
the rows measured so far come out as valid JSON marked partial, the exit code is 130 or 143, no process is
left, and while it runs nothing in its process tree listens beyond loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _tree(pid: int) -> list[int]:
    """``pid`` and its living descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [pid], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _listening(pids: list[int]) -> list[str]:
    """The local address (hex, as /proc/net/tcp writes it) of every listening TCP socket these processes hold."""
    addresses = []
    for pid in pids:
        try:
            inodes = {
                os.readlink(f"/proc/{pid}/fd/{fd}")[len("socket:[") : -1]
                for fd in os.listdir(f"/proc/{pid}/fd")
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")
            }
            tables = [Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:] for name in ("tcp", "tcp6")]
        except OSError:  # the process ended while we looked
            continue
        for line in (row for table in tables for row in table):
            fields = line.split()
            if fields[3] == LISTEN and fields[9] in inodes:
                addresses.append(fields[1])
    return addresses


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_run_keeps_the_rows_and_leaves_nothing(signum: int, code: int) -> None:
    command = [sys.executable, "-m", "rigcheck", "bench", "allreduce", "--cpu", "--world-size", "2", "--json"]
    command += ["-b", "1K", "-e", "256M", "--repeats", "3", "--warmup", "1", "--timeout", "120"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # wait for the first measured row
            seen.append(line)
            if "allreduce 1 KiB:" in line:
                break
        else:
            pytest.fail("no row measured: " + "".join(seen))
        tree = _tree(proc.pid)
        assert len(tree) >= 3  # the launcher and its two ranks (and spawn's resource tracker)
        if signum == signal.SIGTERM:  # while it runs: every listening socket of the tree is on loopback
            addresses = _listening(tree)
            assert addresses, "the rendezvous store should be listening"
            assert {a.split(":")[0] for a in addresses} <= LOOPBACK, addresses
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    doc = json.loads(out)
    assert doc["partial"] is True
    assert doc["error"] == f"interrupted ({signal.Signals(signum).name})"
    sizes = [row["size_bytes"] for row in doc["results"]]
    assert sizes[0] == 1024
    assert 1 <= len(sizes) < 19  # the rows measured before the signal, not the whole sweep
    assert "Traceback" not in err
    deadline = time.monotonic() + 5.0
    while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in tree if _alive(pid)] == []
