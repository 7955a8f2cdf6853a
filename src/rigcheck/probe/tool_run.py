"""Running a system tool (dmesg, journalctl, systemctl) with a deadline that holds.

Each tool runs in its own session, so its own process group: on the deadline the whole group is killed
(SIGKILL), the tool and whatever it started (a pager, a helper that inherited its pipes). Killing only the
direct child, as subprocess.run does, left the helpers running and holding the pipes. Ctrl-C (the terminal's
SIGINT reaches rigcheck only, the tool being in another session) kills the group too before it is passed on.

The result says what happened in words the hint can be chosen by (checks/doctor/xid.py): "timed out", "not found",
"permission denied", or the tool's own exit status and output.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

# How long to wait for a killed group's pipes to close: only a process that left the group (setsid) keeps them.
_REAP_S = 1.0

TIMED_OUT = 124  # the exit statuses of timeout(1) and the shell, for a tool killed at its deadline,
NOT_RUNNABLE = 126  # one that exists but cannot be run,
NOT_FOUND = 127  # and one that is not there


def run_tool(argv: list[str], timeout: float) -> tuple[int, str, str]:
    """Run ``argv`` for at most ``timeout`` seconds; (exit status, stdout, stderr), text decoded with replacement.

    Never raises for the tool's sake: a missing tool is 127 "<tool>: not found", one that cannot be executed 126
    "<tool>: permission denied", one still running at the deadline 124 "<tool>: timed out after N s", its
    process group killed."""
    name = os.path.basename(argv[0])
    if timeout <= 0:
        return TIMED_OUT, "", f"{name}: not run, no time left"
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except FileNotFoundError:
        return NOT_FOUND, "", f"{name}: not found"
    except PermissionError:
        return NOT_RUNNABLE, "", f"{name}: permission denied"
    except OSError as exc:
        return NOT_RUNNABLE, "", f"{name}: {exc.strerror or exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return TIMED_OUT, "", f"{name}: timed out after {timeout:.3g} s"
    except BaseException:  # Ctrl-C or SIGTERM while waiting: the tool must not outlive rigcheck
        kill_group(proc)
        raise
    return proc.returncode, out, err


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL ``proc``'s process group and reap ``proc``. The group is killed before the reaping: an unreaped
    leader keeps its pid, so the group id cannot have passed to another process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=_REAP_S)
    except subprocess.TimeoutExpired:  # a process that left the group holds the pipes: stop reading them
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        proc.wait()
