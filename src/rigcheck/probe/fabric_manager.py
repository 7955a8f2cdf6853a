"""Fabric Manager on NVSwitch systems: its state, live (``systemctl is-active nvidia-fabricmanager``, the NVSwitch
devices under /proc/driver/nvidia-nvswitch) or from a saved text (``--from``).

Texts read: its journal (``journalctl -u nvidia-fabricmanager``, any date framing, any locale), its own log
(/var/log/fabricmanager.log: ``[Feb 27 2025 15:10:02] [ERROR] [tid 12727] ...``), ``systemctl status`` output, and
CUDA's error 802 (``cudaErrorSystemNotReady``, "system not yet initialized"), which is what a CUDA program says on an
NVSwitch system whose fabric Fabric Manager never set up. The last line that says how the service stands decides
(a restart after a failure is running again); error lines are kept as printed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import FabricManager, FabricManagerState, Missing, Snapshot, Source
from rigcheck.probe.tool_run import NOT_FOUND, NOT_RUNNABLE, TIMED_OUT, run_tool

SOURCE = "fabric-manager"
_MAX_ERRORS = 5

# Lines that name Fabric Manager at all: the service, its binary, its log's own framing.
_FM_NAME = re.compile(r"fabric\s*manager|nv-fabricmanager|nvidia-fabricmanager", re.IGNORECASE)
_FM_LOG_LINE = re.compile(r"^\[[A-Z][a-z]{2} +\d+ \d{4} [\d:]+\] \[(?P<level>[A-Z]+)\] \[tid \d+\] ", re.MULTILINE)
_NOT_READY = re.compile(r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|returned 802\b", re.IGNORECASE)

# (pattern, state): systemd's and Fabric Manager's own words for how the service stands.
_STATE_LINES: tuple[tuple[re.Pattern[str], FabricManagerState], ...] = (
    (re.compile(r"Active:\s+active\b", re.IGNORECASE), "running"),
    (re.compile(r"Active:\s+failed\b", re.IGNORECASE), "failed"),
    (re.compile(r"Active:\s+inactive\b", re.IGNORECASE), "inactive"),
    (re.compile(r"fabricmanager\.service: (Main|Control) process exited, code=(exited|killed|dumped)", re.I), "failed"),
    (re.compile(r"fabricmanager\.service: Failed with result", re.IGNORECASE), "failed"),
    (re.compile(r"Failed to start NVIDIA fabric manager", re.IGNORECASE), "failed"),
    # What systemctl/service print when a start or restart fails ("Job for nvidia-fabricmanager.service failed
    # because the control process exited with error code."), newer systemd's "Failed to start
    # nvidia-fabricmanager.service - ...", and journalctl -x's "A start job for unit ... has failed".
    (re.compile(r"Job for nvidia-fabricmanager\.service (?:failed|canceled)", re.IGNORECASE), "failed"),
    (re.compile(r"Failed to start nvidia-fabricmanager\.service", re.IGNORECASE), "failed"),
    (re.compile(r"start job for unit nvidia-fabricmanager\.service has failed", re.IGNORECASE), "failed"),
    # systemd names the unit ("Started nvidia-fabricmanager.service - NVIDIA fabric manager service.", older:
    # "Started NVIDIA fabric manager service."); the start script quotes it ('Stopped "Nvidia Fabric Manager"').
    (re.compile(r"\bStarted \"?(?:NVIDIA fabric ?manager|nvidia-fabricmanager)", re.IGNORECASE), "running"),
    (
        re.compile(r"\b(?:Stopped|Stopping) \"?(?:NVIDIA fabric ?manager|nvidia-fabricmanager)", re.IGNORECASE),
        "inactive",
    ),
    (re.compile(r"fabricmanager\.service: Deactivated successfully", re.IGNORECASE), "inactive"),
    # Fabric Manager's own log: how it ends when it cannot run.
    (
        re.compile(r"\[ERROR\].*(fabric manager .*(exit|terminat|abort)|failed to (start|initiali[sz]e))", re.I),
        "failed",
    ),
    (re.compile(r"(not compatible|incompatible|version mismatch).*driver", re.IGNORECASE), "failed"),
    (
        re.compile(r"successfully configured all the available NVSwitches|fabric manager.*(started|running)", re.I),
        "running",
    ),
)
_ERROR = re.compile(r"\[ERROR\]|\bfailed\b|\berror\b|NV_WARN_NOTHING_TO_DO|status=\d+/FAILURE", re.IGNORECASE)


def looks_like_fabric_manager(text: str) -> bool:
    """A Fabric Manager journal, log or status, or CUDA's "system not yet initialized" (error 802)."""
    head = text[:65536]
    return bool(_FM_LOG_LINE.search(head) or _FM_NAME.search(head) or _NOT_READY.search(head))


def fabric_manager_from_text(text: str) -> FabricManager | None:
    """What the text says about Fabric Manager; None when it says nothing about it."""
    state: FabricManagerState | None = None
    detail: str | None = None
    errors: list[str] = []
    log_lines = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _FM_LOG_LINE.match(line):
            log_lines += 1
        if _NOT_READY.search(line):
            state, detail = "not_initialized", line
            errors.append(line)
            continue
        for pattern, said in _STATE_LINES:
            if pattern.search(line):
                state, detail = said, line
                break
        if _ERROR.search(line) and (_FM_NAME.search(line) or _FM_LOG_LINE.match(line) or "NV_WARN" in line):
            errors.append(line)
    if state is None and log_lines:
        # Its own log, writing records, with no line saying it stopped: it was running when the log was saved.
        state, detail = "running", None
    if state is None and not errors:
        return None
    fm = FabricManager(state=state or "unknown", detail=detail, errors=errors[-_MAX_ERRORS:])
    fm.mark_missing("nvswitches", Missing.NOT_IN_SOURCE)
    if detail is None:
        fm.mark_missing("detail", Missing.NOT_IN_SOURCE)
    return fm


def parse_fabric_manager(text: str, path: str | None = None) -> Snapshot:
    """A snapshot holding only ``fabric_manager``; ParseError when the text says nothing about it."""
    fm = fabric_manager_from_text(text)
    if fm is None:
        raise ParseError("no Fabric Manager state in this text (its journal, log, or systemctl status)", path=path)
    return Snapshot(source=Source(kind="fabric-manager", path=path), fabric_manager=fm)


_NVSWITCH_DIR = Path("/proc/driver/nvidia-nvswitch/devices")
SYSTEMCTL_TIMEOUT_S = 10.0


def read_fabric_manager_live(nvswitch_dir: Path = _NVSWITCH_DIR, systemctl: str | None = None) -> FabricManager | None:
    """Live: None on a host without NVSwitches (nothing for Fabric Manager to do); else its systemd state.

    ``systemctl``: the program to ask (tests give a fake one); by default the one on PATH."""
    try:
        switches = sum(1 for _ in nvswitch_dir.iterdir())
    except OSError:
        switches = 0
    if switches == 0:
        return None
    fm = FabricManager(nvswitches=switches)
    systemctl = systemctl or shutil.which("systemctl")
    if systemctl is None:
        fm.state, fm.detail = "unknown", "systemctl not found: cannot ask systemd about nvidia-fabricmanager"
        return fm
    # Its own process group, killed whole at the deadline (probe/tool_run.py).
    code, out, err = run_tool([systemctl, "is-active", "nvidia-fabricmanager"], SYSTEMCTL_TIMEOUT_S)
    if code in (TIMED_OUT, NOT_FOUND, NOT_RUNNABLE):
        fm.state, fm.detail = "unknown", f"systemctl is-active nvidia-fabricmanager: {err}"
        return fm
    word = out.strip() or err.strip()
    states: dict[str, FabricManagerState] = {"active": "running", "failed": "failed", "inactive": "inactive"}
    fm.state = states.get(word, "unknown")
    fm.detail = f"systemctl is-active nvidia-fabricmanager: {word}"
    return fm
