"""Driver-side health: the recovery action the driver asks for, the NVLink fabric each GPU joined, NVLink error
counters, and Fabric Manager on NVSwitch systems.

- A recovery action other than "None" (Reset, Reboot, Drain P2P, Drain and Reset) means the driver itself says
  the GPU cannot be used until that is done: a fail.
- The fabric is judged beyond "not N/A": a registration "Completed" with an error status (NVML writes the
  error in ``status``: "Insufficient Resources", …), a health summary "Unhealthy", or clique 0 on a multi-node
  NVLink GPU (GB200/GB300, or one whose cluster UUID names a cluster) each fail; so does "Not Started"/"In
  Progress" on a GPU that has a fabric: not ready is not healthy (CUDA answers 802 "system not yet initialized"
  until registration completes), and its action is to wait and re-check, not to fix anything yet.
- NVLink replay and recovery errors count against DCGM's limit of 1 (a warning); CRC errors matter only at 100
  a second (DCGM), which one snapshot cannot tell, so they are information.
- An InfoROM that fails validation (corrupt checksum) is a warning, as DCGM's InfoROM health watch has it: the
  GPU may run, but its ECC and page-retirement records cannot be trusted.
- Compute processes holding GPU memory are information: a node about to be benchmarked or accepted should be
  idle, and they name what to stop.
- Fabric Manager failed or inactive on a machine with NVSwitches (or one whose NVSwitches are unknown: a log
  alone, or systemd's "Job for nvidia-fabricmanager.service failed") fails, with the action to restart the
  service and read its log; on a box whose GPUs are all PCIe cards it is a warning (nothing for it to manage).
  CUDA's 802 "system not yet initialized" is that failure seen from CUDA.

Finding ids: see FINDING_IDS.
"""

from __future__ import annotations

import re

from rigcheck.checks.common import gpu_finding, host_finding, list_names, readable_gpus
from rigcheck.facts import catalog
from rigcheck.model import Finding, Gpu, Severity, Snapshot
from rigcheck.units import plural

FINDING_IDS: tuple[str, ...] = (
    "fabric.ok",
    "fabric.recovery-action",
    "fabric.registration-error",
    "fabric.unhealthy",
    "fabric.degraded",
    "fabric.clique-zero",
    "fabric.not-registered",
    "fabric.nvlink-errors",
    "fabric.nvlink-crc-errors",
    "fabric.manager-failed",
    "fabric.not-initialized",
    "fabric.manager-errors",
    "fabric.inforom-invalid",
    "fabric.gpu-processes",
)

RECOVERY_SOURCE = "nvml.h NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvmlDeviceGpuRecoveryAction_t: none, reset, reboot, "
RECOVERY_SOURCE += "drain P2P, drain and reset); `nvidia-smi -q` GPU Recovery Action"
FABRIC_SOURCE = (
    "nvml.h nvmlDeviceGetGpuFabricInfoV (state, status: checked once the state is Completed; cliqueId; clusterUuid; "
    "NVML_GPU_FABRIC_HEALTH_SUMMARY_*); `nvidia-smi -q` Fabric block"
)
COUNTER_SOURCE = (
    "nvml.h nvmlDeviceGetNvLinkErrorCounter (DL replay, DL recovery, DL CRC flit/data); DCGM "
    "DcgmGpuHardwareLimits.h: NVLink error limit 1, CRC errors matter at 100+ per second"
)
FM_SOURCE = (
    "NVIDIA Fabric Manager User Guide: on NVSwitch systems (HGX/DGX) the fabric manager must run before CUDA can "
    "use the GPUs; CUDA runtime API cudaErrorSystemNotReady = 802 'system not yet initialized'"
)

INFOROM_SOURCE = (
    "nvml.h nvmlDeviceValidateInforom (NVML_ERROR_CORRUPTED_INFOROM); DCGM health watch INFOROM: a corrupt InfoROM "
    "is a warning"
)
PROCESS_SOURCE = "nvml.h nvmlDeviceGetComputeRunningProcesses; `nvidia-smi` Processes table"

_ACTION_ADVICE = {
    "reset": "drain the GPU's jobs and reset it (`nvidia-smi -r -i N`, or a reboot)",
    "reboot": "drain the node and reboot it",
    "drain p2p": "stop peer-to-peer work on it; NVIDIA asks for a reset once it is drained",
    "drain and reset": "drain the GPU's jobs, then reset it",
}
_ZERO_UUID = re.compile(r"^[0-]+$")
_MULTI_NODE = re.compile(r"\bGB[23]00\b", re.IGNORECASE)  # NVL72-class parts: the fabric spans nodes
FM_ADVICE = (
    "`systemctl status nvidia-fabricmanager` and `journalctl -u nvidia-fabricmanager`: its version must equal the "
    "driver's; start it (`systemctl enable --now nvidia-fabricmanager`), then check `nvidia-smi -q` shows Fabric "
    "State Completed, Status Success"
)


# Registration is a transient state: Fabric Manager registers each GPU shortly after it starts (NVIDIA Fabric
# Manager User Guide, "GPU fabric registration"), so the first action is to wait, then read the state again.
WAIT_ADVICE = (
    "wait a minute and re-check (`nvidia-smi --query-gpu=index,fabric.state,fabric.status --format=csv`, or "
    "`rigcheck doctor` again) before running jobs; if it stays Not Started or In Progress, Fabric Manager is not "
    "doing its part: `systemctl status nvidia-fabricmanager` and `journalctl -u nvidia-fabricmanager` (its version "
    "must equal the driver's), restart it, and reset a GPU that still does not register"
)
RESTART_ADVICE = (
    "restart the service (`sudo systemctl restart nvidia-fabricmanager`) and read its log for why it stopped "
    "(`journalctl -u nvidia-fabricmanager -b`, /var/log/fabricmanager.log): its version must equal the driver's; "
    "then check `nvidia-smi -q` shows Fabric State Completed, Status Success on every GPU"
)


def _fabric_gpu(gpu: Gpu) -> bool:
    """The GPU reports a fabric at all (state printed, not N/A)."""
    return gpu.fabric_state is not None and gpu.fabric_state.lower() != "not supported"


def _check_recovery(gpu: Gpu) -> list[Finding]:
    action = gpu.recovery_action
    if action is None or action.strip().lower() in ("none", "0"):
        return []
    advice = _ACTION_ADVICE.get(action.strip().lower(), "follow the action the driver names; reset or reboot")
    return [
        gpu_finding(
            gpu,
            "fabric.recovery-action",
            Severity.FAIL,
            f"the driver asks for a recovery action: {action}; the GPU is not usable until it is done",
            measured=action,
            expected="None",
            advice=advice,
            source=RECOVERY_SOURCE,
        )
    ]


def _check_fabric(gpu: Gpu) -> list[Finding]:
    if not _fabric_gpu(gpu):
        return []
    state = gpu.fabric_state or ""
    status = gpu.fabric_status
    where = f"fabric state {state}, status {status or 'n/a'}"
    if state.lower() == "completed" and status is not None and status.lower() != "success":
        return [_fabric_fail(gpu, "fabric.registration-error", f"{where}: the GPU did not join the NVLink fabric")]
    if state.lower() != "completed":
        message = (
            f"{where}: the GPU is not ready, it has not finished registering with the NVLink fabric (CUDA answers "
            "802 'system not yet initialized' until it has)"
        )
        return [_fabric_finding(gpu, "fabric.not-registered", Severity.FAIL, message, advice=WAIT_ADVICE)]
    health = (gpu.fabric_health or "").lower()
    if health == "unhealthy":
        return [_fabric_fail(gpu, "fabric.unhealthy", f"{where}, but its fabric health is Unhealthy")]
    uuid = gpu.fabric_cluster_uuid
    multi_node = bool(_MULTI_NODE.search(gpu.name or "")) or (uuid is not None and not _ZERO_UUID.match(uuid))
    if gpu.fabric_clique_id == 0 and multi_node:
        message = f"{where}, but clique id 0: the GPU is in no NVLink partition of its multi-node fabric"
        return [_fabric_fail(gpu, "fabric.clique-zero", message)]
    if health and health not in ("healthy", "not supported"):
        message = f"{where}, fabric health {gpu.fabric_health}: the NVLink bandwidth may be reduced"
        return [_fabric_finding(gpu, "fabric.degraded", Severity.WARN, message)]
    clique = f", clique {gpu.fabric_clique_id}" if gpu.fabric_clique_id is not None else ""
    return [_fabric_finding(gpu, "fabric.ok", Severity.OK, f"{where}{clique}")]


def _fabric_fail(gpu: Gpu, finding_id: str, message: str) -> Finding:
    return _fabric_finding(gpu, finding_id, Severity.FAIL, message)


def _fabric_finding(gpu: Gpu, finding_id: str, severity: Severity, message: str, advice: str | None = None) -> Finding:
    return gpu_finding(
        gpu,
        finding_id,
        severity,
        message,
        measured=f"{gpu.fabric_state} / {gpu.fabric_status}",
        expected="Completed / Success, health Healthy, a clique on multi-node NVLink",
        advice=advice or FM_ADVICE + "; a GPU that stays out of the fabric needs a reset, then the vendor",
        source=FABRIC_SOURCE,
    )


def _check_counters(gpu: Gpu) -> list[Finding]:
    bad: list[str] = []
    crc: list[str] = []
    for link in gpu.nvlinks or []:
        counts = [(n, w) for n, w in ((link.replay_errors, "replay"), (link.recovery_errors, "recovery")) if n]
        if counts:
            bad.append(f"link {link.link}: " + ", ".join(f"{n} {w}" for n, w in counts))
        if link.crc_errors:
            crc.append(f"link {link.link}: {link.crc_errors} CRC")
    out: list[Finding] = []
    if bad:
        out.append(
            gpu_finding(
                gpu,
                "fabric.nvlink-errors",
                Severity.WARN,
                f"NVLink replay/recovery errors on {plural(len(bad), 'link')}: {list_names(bad)}",
                measured=list_names(bad),
                expected="0 (DCGM's limit is 1)",
                advice="watch whether they grow (`nvidia-smi nvlink -e`); links that keep retraining need a GPU "
                "reset, then the vendor; Xid 74 in the kernel log names the same fault",
                source=COUNTER_SOURCE,
            )
        )
    if crc:
        out.append(
            gpu_finding(
                gpu,
                "fabric.nvlink-crc-errors",
                Severity.INFO,
                f"NVLink CRC errors on {plural(len(crc), 'link')}: {list_names(crc)} (they matter only at 100+ a "
                "second: compare two readings)",
                measured=list_names(crc),
                expected="a rate under 100/s",
                advice="read `nvidia-smi nvlink -e` twice, a minute apart",
                source=COUNTER_SOURCE,
            )
        )
    return out


def _check_inforom(gpu: Gpu) -> list[Finding]:
    if gpu.inforom_valid is not False:
        return []
    return [
        gpu_finding(
            gpu,
            "fabric.inforom-invalid",
            Severity.WARN,
            "the InfoROM fails validation (corrupt): the GPU's ECC and retired-page records cannot be trusted",
            measured="corrupt",
            expected="valid",
            advice="reset the GPU and validate again (`nvidia-smi -q` warns while it stays corrupt); a board whose "
            "InfoROM stays corrupt goes back to the vendor",
            source=INFOROM_SOURCE,
        )
    ]


def _check_processes(gpu: Gpu) -> list[Finding]:
    if not gpu.processes:
        return []
    held = [
        f"{p.name or 'pid'} {p.pid}" + (f" ({p.used_memory_mib:.0f} MiB)" if p.used_memory_mib is not None else "")
        for p in gpu.processes
    ]
    return [
        gpu_finding(
            gpu,
            "fabric.gpu-processes",
            Severity.INFO,
            (
                f"{len(held)} {'process holds' if len(held) == 1 else 'processes hold'} GPU memory: {list_names(held)}"
                if any(p.used_memory_mib is not None for p in gpu.processes)
                # a vGPU guest or WDDM prints the processes with their memory N/A: they run, what they hold is unknown
                else f"{len(held)} {'process runs' if len(held) == 1 else 'processes run'} on the GPU (memory use "
                f"not reported): {list_names(held)}"
            ),
            measured=list_names(held),
            expected="no processes on a node about to be benchmarked or accepted",
            advice="stop them (or wait for the job) before a benchmark or an acceptance run",
            source=PROCESS_SOURCE,
        )
    ]


def _no_nvswitch(snapshot: Snapshot) -> bool:
    """The GPUs are known and none is an SXM/superchip part with NVLink: there is no NVSwitch to manage."""
    fm = snapshot.fabric_manager
    if fm is not None and fm.nvswitches:
        return False
    gpus = readable_gpus(snapshot)
    if not gpus or any(link.remote_device_type == "switch" for g in gpus for link in g.nvlinks or []):
        return False
    specs = [catalog.lookup(g.name) if g.name else None for g in gpus]
    return all(s is not None and (s.form_factor == "pcie" or s.nvlink_links == 0) for s in specs)


def _check_manager(snapshot: Snapshot) -> list[Finding]:
    fm = snapshot.fabric_manager
    if fm is None:
        return []
    said = fm.detail or (fm.errors[-1] if fm.errors else "")
    cause = next((e for e in fm.errors if "NV_WARN_NOTHING_TO_DO" in e), None)
    if fm.state == "not_initialized":
        message = "CUDA says the system is not yet initialized (error 802): the NVLink fabric was never set up, "
        message += f"Fabric Manager not running or failed — {said!r}"
        return [
            host_finding(
                "fabric.not-initialized",
                Severity.FAIL,
                message,
                measured=said,
                expected="CUDA sees the GPUs",
                advice=FM_ADVICE,
                source=FM_SOURCE,
            )
        ]
    if fm.state in ("failed", "inactive"):
        none_here = _no_nvswitch(snapshot)
        # NV_WARN_NOTHING_TO_DO is the NVSwitch driver saying it found none. With GPUs read, their form says
        # whether a switch should be there (SXM on a baseboard: the switches are missing, a failure); with the log
        # alone, a PCIe box that runs the service for nothing (gpu-operator#610, cube-studio#29) is the common case.
        unseen = cause is not None and not none_here and not readable_gpus(snapshot)
        why = "the NVSwitch driver found no NVSwitch (NV_WARN_NOTHING_TO_DO)" if cause else f"{said!r}"
        message = f"Fabric Manager is {fm.state}: {why}"
        if none_here:
            message += "; this machine's GPUs are PCIe cards with no NVSwitch, so it has nothing to manage"
        elif unseen:
            message += (
                "; expected on a machine without NVSwitch (PCIe cards), a failure on an NVSwitch baseboard (HGX/DGX), "
                "where the switches are then not seen: no GPU was read to tell which"
            )
            none_here = True
        advice = "disable the service on machines without NVSwitch" if none_here else RESTART_ADVICE
        severity = Severity.WARN if none_here else Severity.FAIL
        return [
            host_finding(
                "fabric.manager-failed",
                severity,
                message,
                measured=fm.state,
                expected="running",
                advice=advice,
                source=FM_SOURCE,
            )
        ]
    if fm.errors:
        message = f"Fabric Manager {fm.state}, its log holds {plural(len(fm.errors), 'error line')}: {fm.errors[-1]}"
        return [
            host_finding(
                "fabric.manager-errors",
                Severity.INFO,
                message,
                measured=str(len(fm.errors)),
                expected="no error lines",
                advice="read the log's NVSwitch errors (SXid) with the kernel log",
                source=FM_SOURCE,
            )
        ]
    if fm.state == "running":
        return [
            host_finding("fabric.ok", Severity.OK, f"Fabric Manager running ({said or 'its log'})", source=FM_SOURCE)
        ]
    return []


def check_fabric(snapshot: Snapshot) -> list[Finding]:
    out: list[Finding] = []
    for gpu in readable_gpus(snapshot):
        out += _check_recovery(gpu)
        out += _check_fabric(gpu)
        out += _check_counters(gpu)
        out += _check_inforom(gpu)
        out += _check_processes(gpu)
    out += _check_manager(snapshot)
    return out
