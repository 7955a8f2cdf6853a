"""Health: can each GPU be read, is its memory sound, and are its modes right for training?

Finding ids: health.no-gpu, health.driver-not-loaded, health.driver-version-mismatch, health.driver-unusable
(rigcheck.checks.doctor.driver: no GPU to read), health.gpu-unreadable, health.ok, health.ecc-uncorrected-volatile,
health.ecc-uncorrected-aggregate, health.remapped-rows-pending, health.remapped-rows-failure,
health.retired-pages-pending, health.retired-pages-dbe, health.memory-errors-unavailable,
health.persistence-off, health.mig-enabled, health.compute-mode, health.ecc-disabled, health.gpu-index-gap,
health.gpu-no-driver (rigcheck.checks.doctor.driver: a GPU on the bus that no driver took, beside GPUs NVML lists),
health.gpu-driver-unknown and health.gpu-passthrough (info: GPUs of the bus whose driver an input does not show,
or that vfio-pci holds for a virtual machine).
"""

from __future__ import annotations

from rigcheck.checks.common import gpu_finding, has_problem, host_finding, missing_text, why_missing
from rigcheck.checks.doctor.driver import (
    DRIVER_IDS,
    absence_finding,
    pci_bus_notes,
    pci_driver_finding,
    unbound_gpus_finding,
)
from rigcheck.model import Finding, Gpu, Missing, Severity, Snapshot

FINDING_IDS: tuple[str, ...] = (
    *DRIVER_IDS,
    "health.gpu-unreadable",
    "health.ok",
    "health.ecc-uncorrected-volatile",
    "health.ecc-uncorrected-aggregate",
    "health.remapped-rows-pending",
    "health.remapped-rows-failure",
    "health.retired-pages-pending",
    "health.retired-pages-dbe",
    "health.memory-errors-unavailable",
    "health.persistence-off",
    "health.mig-enabled",
    "health.compute-mode",
    "health.ecc-disabled",
    "health.gpu-index-gap",
    "health.gpu-no-driver",
    "health.gpu-driver-unknown",
    "health.gpu-passthrough",
)


MEM_ERR_SOURCE = (
    "NVIDIA GPU Memory Error Management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt): row remapping and "
    "its RMA policy; nvml.h nvmlDeviceGetTotalEccErrors / nvmlDeviceGetRemappedRows"
)
DPR_SOURCE = (
    "NVIDIA Dynamic Page Retirement (docs.nvidia.com/deploy/dynamic-page-retirement): a page is retired after one "
    "DBE or two SBEs, at most 64 retirements per board; nvml.h nvmlDeviceGetRetiredPages"
)
# Retired pages at or above half of the 64 the InfoROM holds (DPR_SOURCE): warn. The "half" is rigcheck's.
RETIRED_PAGES_WARN = 32
# Reasons that mean "this card has no such feature" rather than "could not read it".
NOT_APPLICABLE = frozenset({Missing.NOT_SUPPORTED, Missing.REPORTED_NA})


# Findings that say a GPU, or every GPU, could not be read: every command that reads GPUs shows them and
# exits 1 with them (a GPU gate never passes what it could not see).
UNREADABLE_IDS: frozenset[str] = frozenset({*DRIVER_IDS, "health.gpu-unreadable", "health.gpu-no-driver"})


def check_health(snapshot: Snapshot) -> list[Finding]:
    absent = absence_finding(snapshot) or unbound_gpus_finding(snapshot) or pci_driver_finding(snapshot)
    out: list[Finding] = [absent] if absent is not None else []
    if absent is None:  # a driver fail names the bus itself (vfio-pci's advice, "driver: not shown")
        out += pci_bus_notes(snapshot)
    windows = "windows" in (snapshot.host.os or "").lower()
    for gpu in snapshot.gpus:
        if gpu.read_error is not None:
            out.append(_unreadable(gpu))
            continue
        out += _check_gpu(gpu, windows=windows)
    return out + _index_gap(snapshot)


def _index_gap(snapshot: Snapshot) -> list[Finding]:
    """``health.gpu-index-gap``: the `nvidia-smi` table numbers its GPUs 0, 1, 2 ... and skips the index of one
    it cannot open; a gap with no placeholder (its error line not in the paste) is a GPU missing from view.
    A warning: `nvidia-smi -i 0,2` skips indices on purpose."""
    if snapshot.source.kind != "nvidia-smi-table" or snapshot.gpu_selection is not None or not snapshot.gpus:
        return []
    listed = {g.index for g in snapshot.gpus}
    gaps = [i for i in range(max(listed)) if i not in listed]
    if not gaps:
        return []
    names = ", ".join(f"GPU{i}" for i in gaps)
    return [
        host_finding(
            "health.gpu-index-gap",
            Severity.WARN,
            f"the nvidia-smi table lists GPUs {', '.join(map(str, sorted(listed)))}: {names} missing from it",
            measured=f"{len(listed)} GPUs listed, highest index {max(listed)}",
            expected="indices 0 to N-1 without a gap",
            advice="nvidia-smi skips a GPU it cannot open (its 'Unable to determine the device handle' line comes "
            "first: keep it in the saved output); unless the table was taken with `-i`, check `nvidia-smi -L`, "
            "`lspci | grep -i nvidia` and `dmesg` for the missing GPU",
            source="nvidia-smi: GPU indices follow the PCI bus order of the GPUs it enumerates (nvidia-smi(1), -i)",
        )
    ]


def _unreadable(gpu: Gpu) -> Finding:
    reason = gpu.read_error or Missing.ERROR
    detail = f": {gpu.read_error_detail}" if gpu.read_error_detail else ""
    if reason is Missing.GPU_LOST:
        advice = (
            "reseat the card and check its power cables, the PSU and any riser (a reset, `nvidia-smi -r -i N` where "
            "allowed, or a reboot only brings it back); if it falls off again, RMA it; `dmesg` shows the Xid 79 "
            "(fallen off the bus)"
        )
    elif reason is Missing.NO_PERMISSION:
        advice = "run as root, or check the permissions of /dev/nvidia* (`ls -l /dev/nvidia*`)"
    elif reason is Missing.TRUNCATED:
        # Fail closed: a GPU the saved output was cut before is a GPU nobody has checked.
        advice = "the saved output ends before this GPU's readings: save the whole output again and read that"
    else:
        advice = (
            "`nvidia-smi -q -i N` shows ERR! where NVML fails; check `sudo dmesg | grep -i -e nvrm -e xid` for the "
            "driver's reason, and reset the GPU or reboot"
        )
    return gpu_finding(
        gpu,
        "health.gpu-unreadable",
        Severity.FAIL,
        f"the GPU could not be read ({reason.value}){detail}",
        measured=reason.value,
        expected="readable",
        advice=advice,
        source="nvml.h NVML_ERROR_GPU_IS_LOST and friends; NVIDIA Xid Errors guide (Xid 79)",
    )


def _memory(gpu: Gpu) -> list[Finding]:
    out: list[Finding] = []
    vol = gpu.ecc_uncorrected_volatile
    agg = gpu.ecc_uncorrected_aggregate
    if vol is not None and vol > 0:
        out.append(
            gpu_finding(
                gpu,
                "health.ecc-uncorrected-volatile",
                Severity.FAIL,
                f"{vol} uncorrected ECC errors since the driver loaded",
                measured=str(vol),
                expected="0",
                advice=(
                    "a job on this GPU may have read corrupt memory: drain it, reset the GPU (this applies pending "
                    "row remaps or page retirements), re-run `rigcheck doctor`, and run NVIDIA's field diagnostic "
                    "(dcgmi diag -r 3) if errors recur"
                ),
                source=MEM_ERR_SOURCE,
            )
        )
    elif agg is not None and agg > 0:
        out.append(
            gpu_finding(
                gpu,
                "health.ecc-uncorrected-aggregate",
                Severity.WARN,
                f"{agg} uncorrected ECC errors over the card's lifetime (none since the driver loaded)",
                measured=str(agg),
                expected="0",
                advice="watch the count: if it grows, run `dcgmi diag -r 3` and consider an RMA",
                source=MEM_ERR_SOURCE,
            )
        )
    if gpu.remapped_rows_failure is True:
        out.append(
            gpu_finding(
                gpu,
                "health.remapped-rows-failure",
                Severity.FAIL,
                "row remapping failed: the memory has run out of spare rows in a bank",
                measured="remapping failure flag set",
                expected="not set",
                advice="this meets NVIDIA's RMA criterion for GPU memory: take the GPU out of service and RMA it",
                source=MEM_ERR_SOURCE,
            )
        )
    if gpu.remapped_rows_pending is True:
        unc = gpu.remapped_rows_uncorrectable
        out.append(
            gpu_finding(
                gpu,
                "health.remapped-rows-pending",
                Severity.FAIL,
                "a row remap is pending: the faulty row stays in use until the GPU is reset"
                + (f" ({unc} rows remapped for uncorrectable errors)" if unc else ""),
                measured="pending",
                expected="no pending remap",
                advice="drain the GPU and reset it to apply the remap (`sudo nvidia-smi -r -i N` with no processes on "
                "it, or reboot), then check again: a remap that applies is a repair, not an RMA",
                source=MEM_ERR_SOURCE,
            )
        )
    if gpu.retired_pages_pending is True:
        out.append(
            gpu_finding(
                gpu,
                "health.retired-pages-pending",
                Severity.WARN,
                "a page retirement is pending",
                measured="pending",
                expected="none pending",
                advice="reset the GPU or reload the driver to retire the page",
                source=DPR_SOURCE,
            )
        )
    dbe = gpu.retired_pages_dbe
    sbe = gpu.retired_pages_sbe or 0
    if dbe is not None and dbe > 0:
        total = dbe + max(sbe, 0)
        severity = Severity.WARN if total >= RETIRED_PAGES_WARN else Severity.INFO
        out.append(
            gpu_finding(
                gpu,
                "health.retired-pages-dbe",
                severity,
                f"{dbe} pages retired for double-bit ECC errors ({total} retired in all, of at most 64)",
                measured=f"{dbe} DBE, {max(sbe, 0)} SBE",
                expected=f"< {RETIRED_PAGES_WARN} retired pages",
                advice=(
                    "the memory is wearing: plan an RMA"
                    if severity is Severity.WARN
                    else "retired pages are taken out of use; watch whether the count grows"
                ),
                source=f"{DPR_SOURCE}; the warn at 32 (half of 64) is rigcheck's",
            )
        )

    # Could not read memory health on a card that has ECC.
    if gpu.ecc_enabled is True and vol is None and agg is None:
        fields = [
            ("ecc_uncorrected_volatile", "volatile uncorrected ECC count"),
            ("ecc_uncorrected_aggregate", "aggregate uncorrected ECC count"),
        ]
        out.append(
            gpu_finding(
                gpu,
                "health.memory-errors-unavailable",
                Severity.UNKNOWN,
                f"ECC is on but its error counts could not be read: {missing_text(gpu, fields)}",
                measured=missing_text(gpu, fields),
                advice="read them with `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` (may need root)",
                source=MEM_ERR_SOURCE,
            )
        )
    elif gpu.ecc_enabled is None and gpu.missing.get("ecc_enabled") not in NOT_APPLICABLE | {None}:
        out.append(
            gpu_finding(
                gpu,
                "health.memory-errors-unavailable",
                Severity.UNKNOWN,
                f"cannot tell whether ECC is on: ECC mode not available ({why_missing(gpu, 'ecc_enabled')})",
                measured=f"ECC mode: {why_missing(gpu, 'ecc_enabled')}",
                advice="read it with `nvidia-smi -q -d ECC` (may need root)",
                source=MEM_ERR_SOURCE,
            )
        )
    return out


def _check_gpu(gpu: Gpu, *, windows: bool) -> list[Finding]:
    out = _memory(gpu)

    if gpu.mig_enabled is True:
        out.append(
            gpu_finding(
                gpu,
                "health.mig-enabled",
                Severity.WARN,
                "MIG mode is enabled: a training job sees one slice of this GPU, not the whole card",
                measured="MIG enabled",
                expected="MIG disabled for whole-GPU training",
                advice=(
                    "disable it if the whole card is meant for training: `sudo nvidia-smi -i N -mig 0` and a GPU reset"
                ),
                source="NVIDIA Multi-Instance GPU User Guide; nvml.h nvmlDeviceGetMigMode",
            )
        )
    if gpu.persistence_mode is False and not windows:
        out.append(
            gpu_finding(
                gpu,
                "health.persistence-off",
                Severity.INFO,
                "persistence mode is off: the driver tears the GPU down when no process uses it",
                measured="off",
                expected="on (Linux)",
                advice=(
                    "the first CUDA call after an idle spell is slower and settings such as application clocks reset "
                    "when the GPU goes idle; enable the daemon: `sudo systemctl enable --now nvidia-persistenced` "
                    "(or `sudo nvidia-smi -pm 1`)"
                ),
                source="NVIDIA Driver Persistence documentation (docs.nvidia.com/deploy/driver-persistence)",
            )
        )
    mode = gpu.compute_mode
    if mode is not None and mode.replace(" ", "_").lower() != "default":
        out.append(
            gpu_finding(
                gpu,
                "health.compute-mode",
                Severity.INFO,
                f"compute mode is {mode}, not Default",
                measured=mode,
                expected="Default",
                advice=(
                    "Exclusive_Process allows one CUDA process per GPU (fine for one rank per GPU, but a second "
                    "process such as a profiler or an eval job fails); Prohibited blocks CUDA entirely: "
                    "`sudo nvidia-smi -i N -c DEFAULT` to reset"
                ),
                source="nvml.h nvmlComputeMode_t; `nvidia-smi -c`",
            )
        )
    # A readable ECC mode that is off means the card has ECC (datacenter and workstation parts); a card without
    # ECC reports it as not supported, so it never lands here.
    if gpu.ecc_enabled is False:
        out.append(
            gpu_finding(
                gpu,
                "health.ecc-disabled",
                Severity.INFO,
                "ECC is supported but disabled on this card",
                measured="ECC off",
                expected="ECC on for long training runs",
                advice=(
                    "ECC trades a few percent of memory and bandwidth for detection of memory errors and page "
                    "retirement / row remapping; enable it with `sudo nvidia-smi -i N -e 1` and a reboot"
                ),
                source="nvml.h nvmlDeviceGetEccMode; NVIDIA GPU Memory Error Management",
            )
        )

    if not has_problem(out):
        checked = []
        if gpu.ecc_enabled is True:
            checked.append(f"ECC on, {gpu.ecc_uncorrected_volatile or 0} uncorrected errors")
        if gpu.remapped_rows_failure is False:
            checked.append("no row-remap failure")
        if gpu.mig_enabled is False:
            checked.append("MIG off")
        if gpu.persistence_mode is True:
            checked.append("persistence on")
        out.append(
            gpu_finding(
                gpu,
                "health.ok",
                Severity.OK,
                "readable" + (": " + ", ".join(checked) if checked else ""),
                measured=", ".join(checked) or "readable",
                source=MEM_ERR_SOURCE,
            )
        )
    return out
