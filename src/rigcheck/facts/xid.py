"""What each Xid (GPU) and SXid (NVSwitch) code means, what it points at, and the action NVIDIA's catalog gives.

The meanings and actions are our one-line summaries of NVIDIA's pages (never quotes); check the catalog for
the driver branch in use, since NVIDIA revised actions between releases (Xid 64, the NVLink5 codes 144-150).
``cause`` is where the catalog points: ``hardware`` (the GPU, its memory, links or board), ``driver`` (the
driver or its firmware), ``application`` (a program's own fault: the GPU is fine). ``severity`` is rigcheck's
verdict for one event of the code: ``fail`` for what takes the GPU out of service until reset/reboot/drain,
``warn`` for what needs watching or a reset when convenient, ``info`` for application faults (counted, never a
fail). A line that says "Nonfatal"/"Non-fatal" is never a fail, one that says "Fatal" always is (see
:func:`severity_of`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rigcheck.facts.pcie import normalize_bdf

XID_CATALOG = (
    "NVIDIA Xid Errors (docs.nvidia.com/deploy/xid-errors/): Xid catalog and resolution buckets, "
    "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
)
SXID_CATALOG = (
    "NVIDIA Fabric Manager User Guide, NVSwitch SXid errors appendix, "
    "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/"
)

Cause = Literal["hardware", "driver", "application"]
Action = Literal[
    "none",
    "restart_app",
    "restart_app_reset_later",
    "reset_gpu",
    "reboot",
    "drain",
    "drain_p2p",
    "recover_imex",
    "rma",
    "contact_support",
]
Verdict = Literal["fail", "warn", "info"]

ACTION_WORDS: dict[Action, str] = {
    "none": "no action for the GPU",
    "restart_app": "restart the application",
    "restart_app_reset_later": "restart the application; reset the GPU when convenient (a pending row remap "
    "takes effect on reset)",
    "reset_gpu": "reset the GPU (`nvidia-smi -r` with no process on it), else reboot the node",
    "reboot": "reboot the node",
    "drain": "drain the node and reset the GPU",
    "drain_p2p": "stop the peer-to-peer/NVLink traffic to the GPU (drain the jobs that use it), then read its recovery "
    "action again (`nvidia-smi -q`, GPU Recovery Action): the driver then names the action that remains",
    "recover_imex": "recover the IMEX domain (restart the IMEX service on the domain's nodes); the GPU itself needs "
    "no reset",
    # No reset here: a reset only activates remaps already recorded; one that failed to record stays failed.
    "rma": "drain the node and take the GPU out of service: its memory repair is exhausted, an RMA condition in "
    "NVIDIA's memory-error guide; run NVIDIA's field diagnostic and contact NVIDIA support or the system vendor "
    "for an RMA (`nvidia-bug-report.sh` for the case)",
    "contact_support": "collect `nvidia-bug-report.sh` and contact NVIDIA support",
}


@dataclass(frozen=True)
class Code:
    code: int
    meaning: str
    cause: Cause
    action: Action
    severity: Verdict


def _c(code: int, meaning: str, cause: Cause, action: Action, severity: Verdict | None = None) -> Code:
    if severity is None:  # the default: an application fault is counted; the GPU's own faults need the action
        severity = (
            "info"
            if cause == "application"
            else ("fail" if action in ("reset_gpu", "reboot", "drain", "drain_p2p", "rma") else "warn")
        )
    return Code(code, meaning, cause, action, severity)


_VIDEO = "video/display engine exception (NVDEC/NVENC/NVJPG/OFA/display)"
_PUSHBUF = "invalid or corrupted push buffer stream (driver or application)"

XIDS: dict[int, Code] = {
    c.code: c
    for c in (
        *(_c(n, _PUSHBUF, "application", "restart_app") for n in (1, 2, 3, 4, 6, 7, 11, 25)),
        _c(8, "GPU stopped processing (channel idle timeout)", "application", "restart_app"),
        _c(9, "driver error programming the GPU", "driver", "restart_app"),
        _c(12, "driver error handling a GPU exception", "driver", "restart_app"),
        _c(
            13,
            "graphics/compute engine exception (illegal instruction or address, warp error)",
            "application",
            "restart_app",
        ),
        _c(16, "display engine hung", "driver", "reset_gpu", "warn"),
        _c(18, "bus mastering disabled in PCI config space", "driver", "reboot"),
        _c(19, "display engine error", "driver", "restart_app"),
        *(_c(n, _VIDEO, "application", "restart_app") for n in (20, 21, 22, 27, 28, 29, 34, 35, 36, 42, 47, 60, 65)),
        _c(24, "GPU semaphore timeout", "application", "restart_app"),
        _c(26, "framebuffer timeout", "driver", "restart_app", "warn"),
        _c(30, "GPU semaphore access error", "application", "restart_app"),
        _c(31, "GPU memory-management (MMU) fault: a context touched an invalid address", "application", "restart_app"),
        _c(32, "invalid or corrupted push buffer stream; persistent: the PCIe path", "application", "restart_app"),
        _c(33, "internal micro-controller error", "driver", "restart_app", "warn"),
        _c(37, "driver firmware error", "driver", "reset_gpu"),
        _c(38, "driver firmware error", "driver", "reset_gpu"),
        _c(
            43,
            "GPU stopped processing a channel (the application's fault, e.g. a killed kernel)",
            "application",
            "none",
        ),
        _c(44, "graphics engine fault during a context switch", "driver", "reset_gpu"),
        _c(45, "preemptive cleanup of a channel after an earlier error or a user kill", "application", "none"),
        _c(46, "GPU stopped processing", "hardware", "reset_gpu"),
        _c(48, "uncorrectable double-bit ECC error in GPU memory", "hardware", "reset_gpu"),
        _c(54, "auxiliary power is not connected to the board", "hardware", "reboot"),
        _c(56, "display engine error", "driver", "restart_app", "warn"),
        _c(57, "error programming the video memory interface", "hardware", "reset_gpu"),
        _c(58, "unstable video memory interface detected", "hardware", "reset_gpu"),
        _c(59, "internal micro-controller error (older drivers)", "driver", "reset_gpu"),
        _c(61, "internal micro-controller breakpoint/warning", "driver", "reset_gpu"),
        _c(62, "internal micro-controller halt", "hardware", "reset_gpu"),
        _c(63, "ECC page retirement or row remapping recorded (pending until reset)", "hardware", "reset_gpu", "warn"),
        # The catalog's immediate action is a reset, but NVIDIA's memory-error guide lists a row-remapping failure
        # among its RMA conditions (MEMORY_SOURCE): the GPU goes out of service, not back after a reset.
        _c(64, "ECC page retirement or row remapping failed to record", "hardware", "rma"),
        _c(66, "illegal access by the driver", "driver", "restart_app", "warn"),
        _c(67, "illegal access by the driver", "driver", "restart_app", "warn"),
        _c(68, "NVDEC0 exception", "application", "restart_app"),
        _c(69, "graphics engine class error", "application", "restart_app"),
        *(_c(n, "copy engine (CE) error", "driver", "restart_app", "warn") for n in (70, 71, 72, 75, 76, 77, 85)),
        _c(73, "NVENC2 error", "application", "restart_app"),
        _c(74, "NVLink error (link down, training or uncorrectable link fault)", "hardware", "reset_gpu"),
        _c(78, "vGPU start error", "driver", "restart_app", "warn"),
        _c(79, "GPU has fallen off the bus (no longer reachable over PCIe)", "hardware", "reboot"),
        _c(80, "corrupted data sent to the GPU", "hardware", "reset_gpu"),
        _c(81, "VGA subsystem error", "hardware", "reset_gpu"),
        *(_c(n, _VIDEO, "application", "restart_app") for n in (82, 83, 84, 86, 88, 89, 96, 97, 98, 99, 100, 101)),
        *(_c(n, _VIDEO, "application", "restart_app") for n in (102, 103, 104, 105)),
        _c(92, "high single-bit ECC error rate", "hardware", "none", "warn"),
        _c(93, "non-fatal violation of the provisioned InfoROM wear limit", "hardware", "none", "warn"),
        # A warn: the row is contained and the GPU keeps serving; the catalog's resolution is "restart the
        # application; reset the GPU when convenient (pending remap)" (XID-NOTES.md, Xid 94). 95 stays a fail.
        _c(
            94,
            "contained ECC error: only the affected applications were stopped",
            "hardware",
            "restart_app_reset_later",
            "warn",
        ),
        _c(95, "uncontained ECC error: every application on the GPU is affected", "hardware", "reset_gpu"),
        _c(106, "SMBPBI test message", "driver", "none", "info"),
        _c(107, "SMBPBI test message (silent)", "driver", "none", "info"),
        _c(109, "context switch timeout", "application", "restart_app", "warn"),
        _c(110, "security fault", "hardware", "reset_gpu"),
        *(_c(n, "display pipeline error", "driver", "restart_app", "warn") for n in range(111, 119)),
        _c(119, "timeout waiting for a GSP firmware RPC", "hardware", "reset_gpu"),
        _c(120, "error reported by the GSP firmware", "hardware", "reset_gpu"),
        _c(121, "C2C (chip-to-chip) link error", "hardware", "reset_gpu"),
        _c(122, "SPI PMU RPC read failure", "hardware", "reset_gpu"),
        _c(123, "SPI PMU RPC write failure", "hardware", "reset_gpu"),
        _c(124, "SPI PMU RPC erase failure", "hardware", "reset_gpu"),
        _c(125, "InfoROM file-system failure", "hardware", "reset_gpu"),
        _c(140, "unrecovered ECC error", "hardware", "reset_gpu"),
        _c(143, "GPU initialization failure", "hardware", "reboot"),
        _c(144, "NVLink SAW/MVB error (sub-code in the payload)", "hardware", "reset_gpu"),
        _c(145, "NVLink RLW (link-layer) error", "hardware", "reset_gpu"),
        _c(146, "NVLink TLW (transaction layer) error", "hardware", "reset_gpu"),
        _c(147, "NVLink TREX error", "hardware", "reset_gpu"),
        _c(148, "NVLink NVLPW control error", "hardware", "reset_gpu"),
        _c(149, "NVLink NETIR (fabric/network interface) error", "hardware", "reset_gpu"),
        _c(150, "NVLink MSE (management) error", "hardware", "reset_gpu"),
        # The line names the new action; recovery_action() judges each line by it (this entry is the fallback for a
        # line that names none).
        _c(154, "the driver changed the GPU's recovery action (its own verdict)", "driver", "drain"),
    )
}

SXIDS: dict[int, Code] = {
    c.code: c
    for c in (
        _c(
            11004,
            "NVSwitch ingress invalid ACL: traffic to a GPU outside the allowed partition",
            "driver",
            "none",
            "warn",
        ),
        _c(
            11012,
            "NVSwitch ingress uncorrectable error (single-bit ECC corrected where non-fatal)",
            "hardware",
            "none",
            "warn",
        ),
        _c(12028, "NVSwitch egress non-posted PRIV error", "hardware", "reset_gpu"),
        _c(15008, "NVSwitch route table uncorrectable ECC error", "hardware", "reboot"),
        _c(19084, "NVSwitch uncorrectable link error (AN1 heartbeat timeout)", "hardware", "reboot"),
        _c(22013, "NVSwitch minion link DL fatal error", "hardware", "reboot"),
        # 20009 and 24007 were here with meanings their own lines contradict ("20009, Non-fatal, Link 04 RX Short
        # Error Rate", "24007, Fatal, Link 28 sourcetrack timeout error"); neither is in XID-NOTES.md, so they
        # are left out: the check quotes the line's own words for them, its Fatal/Non-fatal word sets severity.
    )
}

# Lines that override the code's default: NVIDIA prints the event's own fatality on NVLink and SXid lines.
NONFATAL = re.compile(r"\bnon-?fatal\b", re.IGNORECASE)
_FATAL = re.compile(r"(?<![-\w])fatal\b", re.IGNORECASE)
# Xid 45 names its cause: "caused by previous Xid 149".
CAUSED_BY = re.compile(r"caused by previous Xid (\d+)", re.IGNORECASE)


MEMORY_SOURCE = (
    "NVIDIA GPU Memory Error Management, RMA policy (a row-remapping failure is an RMA condition), "
    "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
)
RECOVERY_SOURCE = (
    "NVIDIA Xid catalog, Xid 154 ('GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)'; "
    "values None, Drain P2P, Drain and Reset, GPU Reset Required, Node Reboot Required); nvml.h "
    "nvmlDeviceGpuRecoveryAction_t (0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset, "
    "5 recover IMEX domain)"
)

# "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"; later drivers print "PF FLR" (a
# function-level reset) and "OS Reboot" for the same two actions. The words after "to" are the new action.
_RECOVERY_CHANGE = re.compile(r"recovery action changed\b.*?\bto\s+(0x[0-9A-Fa-f]+)\s*\(([^)]*)\)", re.IGNORECASE)
_RECOVERY_WORDS: dict[str, Action] = {
    "none": "none",
    "gpu reset required": "reset_gpu",
    "gpu reset": "reset_gpu",
    "reset": "reset_gpu",
    "pf flr": "reset_gpu",
    "bus reset": "reset_gpu",
    "gpu reset bus": "reset_gpu",
    "node reboot required": "reboot",
    "node reboot": "reboot",
    "os reboot": "reboot",
    "reboot": "reboot",
    "system reboot": "reboot",
    "drain p2p": "drain_p2p",
    "drain and reset": "drain",
    "recover imex domain": "recover_imex",
}
# nvmlDeviceGpuRecoveryAction_t, for a label this table does not know.
_RECOVERY_VALUES: dict[int, Action] = {
    0: "none",
    1: "reset_gpu",
    2: "reboot",
    3: "drain_p2p",
    4: "drain",
    5: "recover_imex",
}


@dataclass(frozen=True)
class RecoveryAction:
    """The new action an Xid 154 line names: ``label`` as printed ("0x2 (Node Reboot Required)")."""

    label: str
    action: Action

    @property
    def severity(self) -> Verdict:
        """None: the GPU is usable again; IMEX-domain recovery leaves the GPU itself alone; the rest are faults."""
        return "info" if self.action == "none" else ("warn" if self.action == "recover_imex" else "fail")


def recovery_action(message: str) -> RecoveryAction | None:
    """The recovery action an Xid 154 line changes to; None where the line names none that can be read."""
    m = _RECOVERY_CHANGE.search(message)
    if m is None:
        return None
    words = " ".join(m.group(2).split())
    action = _RECOVERY_WORDS.get(words.lower())
    if action is None:
        action = _RECOVERY_VALUES.get(int(m.group(1), 16))
    if action is None:  # neither the words nor the value are known: a fault until someone reads the line
        action = "contact_support"
    return RecoveryAction(f"{m.group(1)} ({words})", action)


def lookup(kind: Literal["xid", "sxid"], code: int) -> Code | None:
    return (XIDS if kind == "xid" else SXIDS).get(code)


def severity_of(kind: Literal["xid", "sxid"], code: int, message: str) -> Verdict:
    """One event's verdict from its code and its line: "Nonfatal" is never a fail, "Fatal" always is.

    A code rigcheck's table does not hold is a ``warn`` (look it up), an SXid the same unless its line says fatal.
    """
    if kind == "xid" and code == 154 and (recovery := recovery_action(message)) is not None:
        return "fail" if recovery.action == "contact_support" else recovery.severity
    if NONFATAL.search(message):
        return "warn"
    if _FATAL.search(message):
        return "fail"
    entry = lookup(kind, code)
    return entry.severity if entry is not None else "warn"


def bus_key(bus_id: str) -> str | None:
    """A printed bus id in sysfs' spelling: "PCI:0000:03:00" and "00000000:03:00.0" both give "0000:03:00.0"."""
    text = bus_id.strip().removeprefix("PCI:")
    if re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}", text):
        text += ".0"  # the driver prints the device without its function: function 0 is the GPU
    try:
        return normalize_bdf(text)
    except ValueError:
        return None
