"""No GPU to read: a GPU box whose NVIDIA driver does not work, or a machine without an NVIDIA GPU at all.

Either is a ``fail`` (a health gate must not pass a box whose GPUs it cannot see); which one it is comes
from the snapshot's driver state (rigcheck.model.snapshot.DriverState, read live): NVML's start, the loaded
kernel module, and the NVIDIA GPUs sysfs lists on the PCI bus with the driver bound to each.

Finding ids (category health): health.no-gpu, health.driver-not-loaded, health.driver-version-mismatch,
health.driver-unusable. :func:`absence_line` gives the same conclusion as the one line the CLI prints.

:func:`unbound_gpus_finding` (health.gpu-no-driver) covers the box where NVML works and lists some GPUs while
the PCI bus holds another NVIDIA GPU that no driver took (or nouveau did): that GPU is invisible to every job,
so it fails too, with the action to load or reinstall the driver. A GPU bound to vfio-pci is set aside for a
virtual machine on purpose, and one bound to nvidia that NVML does not list may be an SR-IOV virtual function:
neither is judged here.

From `lspci` (rigcheck.readers.lspci), where no input says how NVML started, :func:`pci_driver_finding` judges the
bus the same way: no GPU on nvidia is health.driver-not-loaded, one left beside driven ones health.gpu-no-driver.
:func:`pci_bus_notes` adds info lines for the GPUs no check judges: health.gpu-driver-unknown (the input does not
show drivers: a plain `lspci`) and health.gpu-passthrough (vfio-pci).
"""

from __future__ import annotations

from rigcheck.checks.common import host_finding, list_names
from rigcheck.facts.pcie import normalize_bdf
from rigcheck.model import Finding, Severity, Snapshot
from rigcheck.model.snapshot import DriverState, PciGpu
from rigcheck.units import plural

DRIVER_IDS: tuple[str, ...] = (
    "health.no-gpu",
    "health.driver-not-loaded",
    "health.driver-version-mismatch",
    "health.driver-unusable",
)

INIT_SOURCE = "nvml.h nvmlInit return codes"
SYSFS_SOURCE = "Linux ABI sysfs-bus-pci (vendor 0x10de, class 03xxxx, the driver link); /sys/module/nvidia/version"
WORKS_WITHOUT_GPU = (
    "what works without one: `rigcheck plan`, `power plan`, `nccl-log`, `burn --analyze FILE`, `bench ... --cpu`, "
    "and any command with `--from` a saved output of the GPU machine"
)


def _bus(gpus: list[PciGpu]) -> str:
    """ "2 NVIDIA GPUs on the PCI bus (0000:19:00.0, 0000:c1:00.0; driver: nvidia)"."""
    drivers = sorted({g.driver or ("none bound" if g.driver_known else "not shown") for g in gpus})
    return (
        f"{plural(len(gpus), 'NVIDIA GPU')} on the PCI bus ({list_names([g.bdf for g in gpus])}; "
        f"driver: {', '.join(drivers)})"
    )


def _other_driver_advice(gpus: list[PciGpu]) -> str | None:
    """Advice for GPUs another kernel driver holds, or None when the nvidia driver has them (or none does)."""
    drivers = {g.driver for g in gpus}
    if "vfio-pci" in drivers:
        return (
            "vfio-pci holds them (set aside for a virtual machine): run rigcheck inside that VM, or unbind them "
            "from vfio-pci and load nvidia"
        )
    if "nouveau" in drivers:
        return "nouveau (the open-source driver) has them: install the NVIDIA driver and blacklist nouveau"
    return None


def _mismatch(d: DriverState, bus: str) -> Finding:
    module = d.kernel_module_version
    library = d.library_version
    versions = ", ".join(
        part
        for part in (
            f"the loaded kernel module is {module}" if module else "",
            f"the libraries are {library}" if library else "",
        )
        if part
    )
    return host_finding(
        "health.driver-version-mismatch",
        Severity.FAIL,
        "NVIDIA driver/library version mismatch" + (f": {versions}" if versions else "") + (f"; {bus}" if bus else ""),
        measured=f"kernel module {module or '?'}, libraries {library or '?'}",
        expected="one driver version",
        advice=(
            "the driver was upgraded without reloading its kernel module: reboot, or stop every GPU process and "
            "reload it (`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`); if "
            "the versions still differ, reinstall one driver version (the libraries and the DKMS module together)"
        ),
        source=f"{INIT_SOURCE}: NVML_ERROR_LIB_RM_VERSION_MISMATCH; the kernel log's 'NVRM: API mismatch'",
    )


def _not_loaded(d: DriverState, gpus: list[PciGpu], bus: str) -> Finding:
    module = d.kernel_module_version
    if module is not None and d.nvml == "library_not_found":
        message = f"{bus or 'the nvidia kernel module is loaded'}, but NVML's library (libnvidia-ml.so) is not here"
        measured = f"kernel module {module}, libnvidia-ml.so not found"
        advice = (
            "inside a container, start it with the GPUs passed in (`docker run --gpus all` with the NVIDIA "
            "Container Toolkit; Kubernetes: request nvidia.com/gpu); on the host, install the driver's user-space "
            f"libraries of the module's version ({module})"
        )
    else:
        message = (f"{bus}, but the NVIDIA driver is not loaded" if bus else "the NVIDIA driver is not loaded") + (
            f" ({d.nvml_error})" if d.nvml_error else ""
        )
        measured = "NVIDIA driver not loaded"
        advice = _other_driver_advice(gpus) or (
            "load it: `sudo modprobe nvidia`; if that fails, `sudo dmesg | grep -i nvrm` says why (a module not "
            "built for this kernel after an update: reinstall the driver or its DKMS module; Secure Boot "
            "refusing an unsigned module: sign it or enrol the key)"
        )
    return host_finding(
        "health.driver-not-loaded",
        Severity.FAIL,
        message,
        measured=measured,
        expected="the nvidia driver loaded and NVML working",
        advice=advice,
        source=f"{INIT_SOURCE}: NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_LIBRARY_NOT_FOUND; {SYSFS_SOURCE}",
    )


def _unusable(d: DriverState, gpus: list[PciGpu], bus: str) -> Finding:
    if d.nvml == "ok":  # NVML started and lists none of the GPUs on the bus
        message = f"NVML lists no GPU, although there are {bus}"
        measured = "NVML: 0 GPUs"
        advice = _other_driver_advice(gpus) or (
            "`sudo dmesg | grep -i nvrm` for a GPU the driver could not start (RmInitAdapter failed, Xid 79): "
            "reset or reboot; in a container, pass the GPUs in (`--gpus all`)"
        )
    else:
        why = "no permission to talk to the driver" if d.nvml == "no_permission" else "NVML could not start"
        message = f"{why}: {d.nvml_error or d.nvml}" + (f"; {bus}" if bus else "")
        measured = d.nvml_error or str(d.nvml)
        advice = (
            "check the device files (`ls -l /dev/nvidia*`: readable by you, or by a group you are in)"
            if d.nvml == "no_permission"
            else "`nvidia-smi` shows the same error and `sudo dmesg | grep -i -e nvrm -e xid` the driver's side"
        ) + (
            '; in a container, "Failed to initialize NVML: Unknown Error" after the host reloaded systemd means '
            "its device access was dropped: restart the container (or run with the NVIDIA Container Toolkit's "
            "device rules); else reboot"
        )
    return host_finding(
        "health.driver-unusable",
        Severity.FAIL,
        message,
        measured=measured,
        expected="NVML lists every NVIDIA GPU",
        advice=advice,
        source=f"{INIT_SOURCE}; {SYSFS_SOURCE}",
    )


def _no_gpu(snapshot: Snapshot) -> Finding:
    d = snapshot.driver
    reason = snapshot.gpu_absent_reason or "no GPU in the snapshot"
    if d is not None and d.pci_gpus == []:
        no_driver = d.nvml == "library_not_found" and d.kernel_module_version is None
        reason = "no NVIDIA GPU on the PCI bus" + (" and no NVIDIA driver" if no_driver else f"; {reason}")
    return host_finding(
        "health.no-gpu",
        Severity.FAIL,
        f"no NVIDIA GPU found: {reason}",
        measured="0 GPUs",
        expected=">= 1 NVIDIA GPU",
        advice=(
            "run rigcheck on the GPU machine, or read its saved output with `--from FILE`; "
            f"{WORKS_WITHOUT_GPU}. If this machine should have one: `lspci | grep -i nvidia`; in a container, "
            "pass the GPUs in (`--gpus all`)"
        ),
        source=f"{INIT_SOURCE} / nvmlDeviceGetCount; {SYSFS_SOURCE}",
    )


# Inputs that never list GPUs: their snapshot without GPUs is silent about them, not a GPU-less machine.
# Inputs that say nothing about whether the box has GPUs: a Fabric Manager log; a kernel log (its NVSwitch SXid
# lines name switches, not GPUs).
GPU_SILENT_SOURCES = frozenset({"fabric-manager", "kernel-log"})


def _never_lists_gpus(snapshot: Snapshot) -> bool:
    kinds = [p.kind for p in snapshot.source.parts] or [snapshot.source.kind]
    return all(kind in GPU_SILENT_SOURCES for kind in kinds)


def absence_finding(snapshot: Snapshot) -> Finding | None:
    """The one finding for a snapshot whose GPUs NVML could not give (None when it gave some): the driver's
    problem on a GPU box, else no NVIDIA GPU at all."""
    d = snapshot.driver
    broken = d is not None and d.nvml not in (None, "ok")
    if snapshot.gpus and not broken:
        return None
    if d is None and _never_lists_gpus(snapshot):
        return None  # a Fabric Manager log alone: it says nothing about whether the box has GPUs
    if d is not None and d.nvml is None and d.pci_gpus:
        return None  # no word of NVML, the bus as lspci shows it: pci_driver_finding judges the drivers
    if d is None or d.nvml is None:
        return _no_gpu(snapshot)
    gpus = d.pci_gpus or []
    bus = _bus(gpus) if gpus else ""
    gpu_box = bool(gpus) or d.kernel_module_version is not None
    if d.nvml == "version_mismatch":  # a mismatch needs a loaded module: always a GPU box
        return _mismatch(d, bus)
    if d.nvml == "library_not_found":
        return _not_loaded(d, gpus, bus) if gpu_box else _no_gpu(snapshot)
    if d.nvml == "driver_not_loaded":  # its libraries are installed: a GPU box unless the bus shows none
        return _not_loaded(d, gpus, bus) if gpu_box or d.pci_gpus is None else _no_gpu(snapshot)
    if d.nvml == "ok":
        return _unusable(d, gpus, bus) if gpus else _no_gpu(snapshot)
    # no_permission, error: a driver is installed; where the bus could not be listed, assume a GPU box
    return _unusable(d, gpus, bus) if gpu_box or d.pci_gpus is None else _no_gpu(snapshot)


def _bdf(bus_id: str) -> str | None:
    try:
        return normalize_bdf(bus_id)
    except ValueError:
        return None


def unbound_gpus_finding(snapshot: Snapshot) -> Finding | None:
    """health.gpu-no-driver: NVML lists GPUs, but an NVIDIA GPU on the PCI bus has no driver (or nouveau); None
    when every GPU on the bus is accounted for, or the listing cannot be compared (a bus id unknown, a --gpu
    selection)."""
    d = snapshot.driver
    if d is None or not d.pci_gpus or not snapshot.gpus or snapshot.gpu_selection is not None:
        return None
    if d.nvml != "ok" and not (d.nvml is None and nvml_listed(snapshot)):  # an nvidia-smi output beside lspci
        return None
    listed = {_bdf(g.pci_bus_id) if g.pci_bus_id else None for g in snapshot.gpus}
    if None in listed:
        return None
    left = [p for p in d.pci_gpus if p.driver_known and p.driver in NOT_NVIDIA and _bdf(p.bdf) not in listed]
    if not left:
        return None
    drivers = sorted({p.driver or "none bound" for p in left})
    return host_finding(
        "health.gpu-no-driver",
        Severity.FAIL,
        f"{plural(len(left), 'NVIDIA GPU')} on the PCI bus without the NVIDIA driver "
        f"({list_names([p.bdf for p in left])}; driver: {', '.join(drivers)}): NVML lists only the other "
        f"{plural(len(listed), 'GPU')}, so no job sees "
        f"{'it' if len(left) == 1 else 'them'}",
        measured=f"{len(listed)} GPUs listed, {len(listed) + len(left)} on the bus",
        expected="every NVIDIA GPU on the bus driven by nvidia",
        advice=_other_driver_advice(left)
        or (
            "load or reinstall the driver: `sudo modprobe nvidia` (or reload it); if the GPU stays without a driver, "
            "`sudo dmesg | grep -i nvrm` says why (a GPU this driver version does not support: install one that "
            "does; the probe failing: reseat the card)"
        ),
        source=f"{SYSFS_SOURCE}; nvml.h nvmlDeviceGetCount",
    )


# Drivers that leave a GPU to no job: none, or the open-source ones (nouveau; nova_core, its successor, claims
# Turing and later on some 2026 kernels: github.com/beclab/Olares/pull/3963 quotes "NVRM: GPU ... is already bound
# to NovaCore").
NOT_NVIDIA: frozenset[str | None] = frozenset({None, "nouveau", "nova_core"})
# A GPU bound to one of these is set aside for a virtual machine on purpose (VFIO; Grace Hopper's variant driver).
PASSTHROUGH = frozenset({"vfio-pci", "pci-stub", "nvgrace_gpu_vfio_pci"})
# Sources whose GPUs are NVML's own listing: beside them, a GPU of the bus they lack is one no job sees.
NVML_LISTINGS = frozenset({"nvml", "nvidia-smi-q", "nvidia-smi-xml", "nvidia-smi-table"})
# The words of rigcheck.readers.lspci's diagnostic for a GPU whose "Kernel modules" lack nvidia (checks do not import
# probe: tests/readers/test_lspci.py holds the two together).
NO_MODULE_NOTE = "no nvidia module for the running kernel"
LSPCI_SOURCE = "lspci(8) -k: 'Kernel driver in use' (none printed: no driver bound); PCI class 03xx, vendor 10de"


def nvml_listed(snapshot: Snapshot) -> bool:
    """Whether the snapshot's GPUs are NVML's listing (nvidia-smi's or the live probe's), not a log's mentions."""
    kinds = [p.kind for p in snapshot.source.parts] or [snapshot.source.kind]
    return any(kind in NVML_LISTINGS for kind in kinds) and bool(snapshot.gpus)


def pci_driver_finding(snapshot: Snapshot) -> Finding | None:
    """The drivers lspci shows, judged where no source said how NVML's start went: a GPU no driver (or nouveau)
    has fails, health.driver-not-loaded when no GPU has the nvidia driver, health.gpu-no-driver beside GPUs that
    have it. GPUs whose driver is not shown, or set aside for a VM, are left to pci_bus_notes."""
    d = snapshot.driver
    if d is None or d.nvml is not None or not d.pci_gpus:
        return None
    judged = [g for g in d.pci_gpus if g.driver_known and g.driver not in PASSTHROUGH]
    left = [g for g in judged if g.driver in NOT_NVIDIA]
    if not left:
        return None
    driven = [g for g in judged if g.driver == "nvidia"]
    drivers = sorted({g.driver or "none bound" for g in left})
    no_module = any(n.source == "lspci" and NO_MODULE_NOTE in n.message for n in snapshot.diagnostics)
    advice = _other_driver_advice(left) or (
        "install the NVIDIA driver for the running kernel (its DKMS module did not build, or the kernel was "
        "updated after it), then `sudo modprobe nvidia`"
        if no_module
        else "load it: `sudo modprobe nvidia`; if that fails or the GPU stays without a driver, "
        "`sudo dmesg | grep -i nvrm` says why (a module not built for this kernel after an update: reinstall the "
        "driver or its DKMS module; Secure Boot refusing an unsigned module: sign it or enrol the key; a GPU this "
        "driver version does not support: install one that does)"
    )
    if not driven:
        return host_finding(
            "health.driver-not-loaded",
            Severity.FAIL,
            f"{_bus(left)}, but the NVIDIA driver has none of them (lspci)",
            measured=f"{plural(len(left), 'GPU')} with driver: {', '.join(drivers)}",
            expected="every NVIDIA GPU on the bus driven by nvidia",
            advice=advice,
            source=LSPCI_SOURCE,
        )
    return host_finding(
        "health.gpu-no-driver",
        Severity.FAIL,
        f"{plural(len(left), 'NVIDIA GPU')} on the PCI bus without the NVIDIA driver "
        f"({list_names([g.bdf for g in left])}; driver: {', '.join(drivers)}): lspci shows nvidia on the other "
        f"{plural(len(driven), 'GPU')}, so no job sees {'it' if len(left) == 1 else 'them'}",
        measured=f"{len(driven)} GPUs driven by nvidia, {len(driven) + len(left)} on the bus",
        expected="every NVIDIA GPU on the bus driven by nvidia",
        advice=advice,
        source=LSPCI_SOURCE,
    )


def pci_bus_notes(snapshot: Snapshot) -> list[Finding]:
    """Info lines for GPUs of the bus that no check judges: those whose driver the input does not show (plain
    `lspci`, without -k) and those set aside for a virtual machine."""
    d = snapshot.driver
    if d is None or not d.pci_gpus:
        return []
    out: list[Finding] = []
    unknown = [g for g in d.pci_gpus if not g.driver_known]
    if unknown:
        out.append(
            host_finding(
                "health.gpu-driver-unknown",
                Severity.INFO,
                f"{plural(len(unknown), 'NVIDIA GPU')} on the PCI bus ({list_names([g.bdf for g in unknown])}) "
                "whose driver the input does not show: whether the NVIDIA driver has "
                f"{'it' if len(unknown) == 1 else 'them'} is unknown",
                measured="driver not shown",
                expected="the driver bound to each GPU",
                advice="save `lspci -nnk -d 10de:` (its 'Kernel driver in use' line names the driver) and read it too",
                source=LSPCI_SOURCE,
            )
        )
    aside = [g for g in d.pci_gpus if g.driver_known and g.driver in PASSTHROUGH]
    if aside:
        out.append(
            host_finding(
                "health.gpu-passthrough",
                Severity.INFO,
                f"{plural(len(aside), 'NVIDIA GPU')} bound to {', '.join(sorted({str(g.driver) for g in aside}))} "
                f"({list_names([g.bdf for g in aside])}): set aside for a virtual machine, not judged here",
                measured=f"driver: {', '.join(sorted({str(g.driver) for g in aside}))}",
                expected="a GPU for this host's jobs bound to nvidia",
                advice="run rigcheck inside the virtual machine that has the GPU; to use it on this host, unbind it "
                "from vfio-pci and load nvidia",
                source=LSPCI_SOURCE,
            )
        )
    return out


def absence_line(snapshot: Snapshot) -> str | None:
    """The finding above as the CLI's one line, None when GPUs were read. It always starts "no NVIDIA GPU
    visible: " (what scripts may key on), then says whether there is none or the driver does not work."""
    finding = absence_finding(snapshot)
    if finding is None:
        return None
    if finding.id == "health.no-gpu":
        return finding.message.replace("no NVIDIA GPU found: ", "no NVIDIA GPU visible: ", 1)
    return f"no NVIDIA GPU visible: the NVIDIA driver does not work: {finding.message}"
