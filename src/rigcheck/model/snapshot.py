"""The Snapshot: everything rigcheck read from one machine, schema ``rigcheck.snapshot/1``.

A value is either present or ``None``; every ``None`` that a source *could* have filled carries a
reason in its record's ``missing`` map (see :class:`Missing`). Units are part of field names.
"""

from collections.abc import Iterable
from enum import Enum
from operator import attrgetter
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from rigcheck.facts.legend import LinkKind, nvlink_count
from rigcheck.model.kernel_log import KernelEvent, KernelLogRead

SNAPSHOT_SCHEMA: Literal["rigcheck.snapshot/1"] = "rigcheck.snapshot/1"


class Missing(str, Enum):
    """Why a field has no value. Kept distinct so a report can say *why* a figure is absent."""

    NOT_SUPPORTED = "not_supported"  # the card or driver does not offer it (NVML NotSupported)
    NO_PERMISSION = "no_permission"  # it needs root or a capability we lack
    GPU_LOST = "gpu_lost"  # the GPU fell off the bus while being read
    DRIVER_TOO_OLD = "driver_too_old"  # the NVML function is absent from this driver
    ERROR = "error"  # any other failure; the diagnostics say which
    REPORTED_NA = "reported_na"  # a text source printed "N/A" (or similar) for it
    NOT_IN_SOURCE = "not_in_source"  # the input (a pasted fragment, an older format) does not hold it
    TRUNCATED = "truncated"  # the input ends early: the value's line was cut, or it came after the cut
    IMPLAUSIBLE = "implausible"  # outside what any card can report (bounds in facts/plausible.py)


# The start of a Diagnostic's message saying a text input was cut; reports show these notes to the reader.
INPUT_ENDS_EARLY = "input ends early"


# Fields that describe a record rather than measure something: never "missing".
_NOT_MEASURED = frozenset({"missing", "index", "link", "read_error", "read_error_detail"})


def _no_items() -> list[Any]:
    """The default of a list field. Not ``list`` itself: pydantic asks each default factory for its signature,
    inspect reads a builtin's from its text, and the first such read compiles tokenize's regex (~1.5 ms, 15 M
    instructions of every command's start)."""
    return []


class Record(BaseModel):
    """Base of every snapshot record: strict keys, and a reason for each missing value."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    missing: dict[str, Missing] = Field(default_factory=dict)

    def mark_missing(self, field: str, reason: Missing) -> None:
        """Record why ``field`` is ``None``; the field must exist on this record."""
        if field not in type(self).model_fields:
            raise KeyError(f"{type(self).__name__} has no field {field!r}")
        self.missing[field] = reason

    def mark_unset_missing(self, reason: Missing, fields: Iterable[str] | None = None) -> None:
        """Give ``reason`` to every field (of ``fields``, default all) still ``None`` without one.

        A probe calls this last, so that every null in its output says why it is null.
        """
        names = list(fields) if fields is not None else list(type(self).model_fields)
        for name in names:
            if name in _NOT_MEASURED or name in self.missing:
                continue
            if getattr(self, name) is None:
                self.mark_missing(name, reason)


# Names of clock-event ("throttle") reasons, as used in `clock_event_reasons_active`.
# Order and meaning follow nvml.h's nvmlClocksEventReason* bit masks.
ClockEventReason = Literal[
    "idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
]
CLOCK_EVENT_REASONS: tuple[str, ...] = get_args(ClockEventReason)


class NvLink(Record):
    """One NVLink of a GPU."""

    link: int
    active: bool | None = None
    version: int | None = None
    remote_pci_bus_id: str | None = None
    remote_device_type: str | None = None  # "gpu", "switch" (NVSwitch), "ibmnpu", "unknown" (NVML)
    speed_gbps: float | None = None  # per direction, as `nvidia-smi nvlink -s` prints it (GB/s)
    # Error counters since the driver loaded (or the last `nvidia-smi nvlink -re`): NVML's
    # nvmlNvLinkErrorCounter_t DL replay / DL recovery / DL CRC (flit + data), as `nvlink -e` prints them.
    replay_errors: int | None = None
    recovery_errors: int | None = None
    crc_errors: int | None = None


class GpuProcess(Record):
    """A compute process holding memory on a GPU (nvmlDeviceGetComputeRunningProcesses; -q's Processes)."""

    pid: int
    name: str | None = None  # /proc/PID/comm live (None: another PID namespace), the printed name from text
    used_memory_mib: float | None = None


class Gpu(Record):
    """One GPU. ``read_error`` set means the GPU could not be read and this is a placeholder."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    architecture: str | None = None
    compute_capability: str | None = None  # "9.0"
    vbios_version: str | None = None  # "96.00.74.00.0D": nvmlDeviceGetVbiosVersion, -q "VBIOS Version"
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    utilization_gpu_percent: float | None = None

    # Power (watts). power_draw_w is the instantaneous draw where the source gives it, else average.
    power_draw_w: float | None = None
    power_draw_avg_w: float | None = None
    power_limit_w: float | None = None  # current (requested/management) limit
    power_default_limit_w: float | None = None
    power_enforced_limit_w: float | None = None  # the limit actually applied (min of all caps)
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None

    # Temperatures (Celsius). Thresholds are absolute; where a source gives them only as T.Limit
    # offsets, the parser derives them from the current temperature and the T.Limit margin.
    temp_c: float | None = None
    temp_memory_c: float | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_max_operating_c: float | None = None
    temp_memory_max_c: float | None = None
    temp_target_c: float | None = None
    temp_tlimit_margin_c: float | None = None  # degrees left before T.Limit (the max operating temp)

    fan_percent: float | None = None

    # Clocks (MHz): current and maximum.
    clock_graphics_mhz: float | None = None
    clock_sm_mhz: float | None = None
    clock_mem_mhz: float | None = None
    clock_graphics_max_mhz: float | None = None
    clock_sm_max_mhz: float | None = None
    clock_mem_max_mhz: float | None = None

    # Clock-event (throttle) reasons: names from CLOCK_EVENT_REASONS.
    clock_event_reasons_active: list[str] | None = None
    clock_event_reasons_supported: list[str] | None = None
    # Time spent under each reason since the driver loaded (microseconds), keyed by reason name.
    clock_event_durations_us: dict[str, float] | None = None

    pstate: str | None = None  # "P0"

    # PCIe link. *_max is the link's max (what host and GPU both support); *_gpu_max the GPU's own.
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_gen_gpu_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_replay_count: int | None = None

    persistence_mode: bool | None = None
    compute_mode: str | None = None  # "Default", "Exclusive_Process", "Prohibited"
    mig_enabled: bool | None = None

    # Memory health.
    ecc_enabled: bool | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    ecc_corrected_volatile: int | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None

    numa_node: int | None = None
    cpu_affinity: str | None = None  # CPU list, "0-23,48-71"

    nvlinks: list[NvLink] | None = None
    # Driver-side health, strings as nvidia-smi prints them (NVML enums turned into the same words).
    recovery_action: str | None = None  # "None", "Reset", "Reboot", "Drain P2P", "Drain and Reset"
    fabric_state: str | None = None  # "Not Supported", "Not Started", "In Progress", "Completed"
    fabric_status: str | None = None  # "Success" or the NVML error text; meaningful once "Completed"
    fabric_clique_id: int | None = None
    fabric_cluster_uuid: str | None = None
    fabric_health: str | None = None  # the health summary: "Healthy", "Unhealthy", "Limited Capacity"
    # Read live (NVML) only so far: left out of the JSON when unknown, so a snapshot from text is written as before.
    # inforom_valid: nvmlDeviceValidateInforom, False when the checksum fails (corrupt); processes: the compute
    # processes holding GPU memory ([]: none).
    inforom_valid: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    processes: list[GpuProcess] | None = Field(default=None, exclude_if=lambda value: value is None)

    read_error: Missing | None = None  # set on a placeholder for a GPU that could not be read
    read_error_detail: str | None = None


class P2PStatus(str, Enum):
    """NVML's nvmlGpuP2PStatus_t, by name; `nvidia-smi topo -p2p` prints them as OK, CNS, GNS, TNS, DR, NS, U
    (readers/smi/topo_p2p.py maps the printed codes)."""

    OK = "ok"
    CHIPSET_NOT_SUPPORTED = "chipset_not_supported"
    GPU_NOT_SUPPORTED = "gpu_not_supported"
    IOH_TOPOLOGY_NOT_SUPPORTED = "ioh_topology_not_supported"
    DISABLED_BY_REGKEY = "disabled_by_regkey"
    NOT_SUPPORTED = "not_supported"
    UNKNOWN = "unknown"


class GpuPair(Record):
    """How two GPUs reach each other. ``link`` is the code `nvidia-smi topo -m` prints."""

    a: int
    b: int
    link: str | None = None  # "NV12", "PIX", "PXB", "PHB", "NODE", "SYS" (or old "SOC")
    kind: LinkKind | None = None
    nvlinks: int | None = None
    p2p_read: P2PStatus | None = None
    p2p_write: P2PStatus | None = None
    p2p_nvlink: P2PStatus | None = None
    p2p_atomics: P2PStatus | None = None
    # NVML_P2P_CAPS_INDEX_PCI (`nvidia-smi topo -p2p p`); read from that output only, so left out of the
    # JSON when unknown (a snapshot without it is written exactly as before the field existed).
    p2p_pcie: P2PStatus | None = Field(default=None, exclude_if=lambda value: value is None)


class Nic(Record):
    label: str  # "NIC0"
    name: str | None = None  # "mlx5_0"


class TopoGpu(BaseModel):
    """Per-GPU affinity columns of `nvidia-smi topo -m`, as printed (None: column absent)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    cpu_affinity: str | None = None
    numa_affinity: str | None = None
    gpu_numa_id: str | None = None


class TopoMatrix(BaseModel):
    """The `nvidia-smi topo -m` table, as printed: labels, link codes, affinity columns, NICs."""

    model_config = ConfigDict(extra="forbid")

    labels: list[str]
    matrix: list[list[str]]
    gpus: list[TopoGpu]
    nics: list[Nic] = Field(default_factory=_no_items)
    legend: Literal["new", "old", "none"] = "none"


class Host(Record):
    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    numa_nodes: int | None = None
    memory_total_gib: float | None = None
    # /proc/meminfo MemAvailable, SwapTotal, SwapFree (probe/storage.py), read live only: left out of the JSON when
    # unread, so a snapshot from files is written as before.
    memory_available_gib: float | None = Field(default=None, exclude_if=lambda value: value is None)
    swap_total_gib: float | None = Field(default=None, exclude_if=lambda value: value is None)
    swap_free_gib: float | None = Field(default=None, exclude_if=lambda value: value is None)


class Software(Record):
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: str | None = None  # the CUDA version the driver supports, "12.4"
    torch_version: str | None = None
    torch_cuda_version: str | None = None
    nccl_version: str | None = None
    rigcheck_version: str | None = None
    python_version: str | None = None


class PcieHop(Record):
    """One device on the PCIe path from a GPU up to its root port (the GPU itself first)."""

    bdf: str
    link_speed_gts: float | None = None
    link_speed_max_gts: float | None = None
    link_width: int | None = None
    link_width_max: int | None = None
    acs_enabled: bool | None = None  # ACS redirect on a bridge forces P2P through the root complex


class IbPort(Record):
    """One port of an RDMA NIC (InfiniBand or RoCE), from /sys/class/infiniband/<device>/ports/<port>/."""

    device: str  # "mlx5_0"
    port: int
    state: str | None = None  # the name after "N: " in ``state``: "ACTIVE", "DOWN", "INIT", "ARMED"
    phys_state: str | None = None  # likewise from ``phys_state``: "LinkUp", "Polling", "Disabled"
    rate_gbps: float | None = None  # ``rate``: "200 Gb/sec (4X HDR)" -> 200.0
    link_layer: str | None = None  # "InfiniBand" or "Ethernet" (RoCE)


class Mount(Record):
    """A filesystem mounted from a drive (/proc/mounts), with its space (statvfs) where it could be asked."""

    device: str  # as /proc/mounts names it: "/dev/nvme0n1p2", "/dev/mapper/vg0-scratch", "/dev/md0"
    mount_point: str
    fstype: str | None = None  # "ext4", "xfs"
    size_bytes: int | None = None  # f_blocks * f_frsize
    free_bytes: int | None = None  # f_bavail * f_frsize: what an unprivileged user can still write


class NvmeNamespace(Record):
    """One namespace of an NVMe controller: a block device, /sys/block/nvmeXnY."""

    name: str  # "nvme0n1" (the block device; with native multipath the shared one, not nvme0c0n1)
    size_bytes: int | None = None  # /sys/block/<name>/size (512-byte sectors, whatever the LBA size) * 512
    # Filesystems on it, its partitions, or a device-mapper / md device built on them (sorted by mount point).
    mounts: list[Mount] = Field(default_factory=_no_items)


class NvmeDrive(Record):
    """One NVMe controller, /sys/class/nvme/nvmeX (the serial number is not read: it identifies the unit)."""

    name: str  # "nvme0"
    model: str | None = None
    transport: str | None = None  # "pcie", or a fabric ("tcp", "rdma", "fc", "loop"): no PCIe link then
    pci_bus_id: str | None = None  # "0000:01:00.0", the controller's PCI function
    # The PCIe link as sysfs gives it (GT/s turned into the generation): current, the drive's own max, and the
    # max of the port above it (the slot), which caps what the link can train at.
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_gen_port_max: int | None = None
    pcie_width_port_max: int | None = None
    numa_node: int | None = None  # device/numa_node; -1 (no affinity known) is None
    namespaces: list[NvmeNamespace] = Field(default_factory=_no_items)


class SwapArea(Record):
    """One line of /proc/swaps."""

    path: str  # "/dev/nvme0n1p3", "/swap.img"
    kind: str | None = None  # "partition" or "file"
    size_bytes: int | None = None
    used_bytes: int | None = None
    drive: str | None = None  # the NVMe controller it lives on ("nvme0"), where it is on one


class StorageFacts(Record):
    """The drives offload would write to: the NVMe controllers and the swap areas, read live (probe/storage.py)."""

    nvme: list[NvmeDrive] | None = None  # []: no NVMe controller; None: /sys/class could not be read
    swaps: list[SwapArea] | None = None  # None: /proc/swaps could not be read


class System(Record):
    """Facts about the host's PCIe fabric, read from sysfs."""

    iommu: Literal["on", "off", "unknown"] = "unknown"
    iommu_detail: str | None = None
    pcie_paths: dict[str, list[PcieHop]] = Field(default_factory=dict)  # GPU bus id -> path
    # RDMA NIC ports and the GPUDirect RDMA kernel module, read live only (None: not looked, or no
    # /sys/class/infiniband): left out of the JSON then, so a snapshot from files is written as before.
    ib_ports: list[IbPort] | None = Field(default=None, exclude_if=lambda value: value is None)
    # Whether nvidia_peermem (or the older nv_peer_mem) is loaded; peermem_module names the one found.
    peermem_loaded: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    peermem_module: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # NVMe drives and swap (offload targets), read live only: left out of the JSON when unread.
    storage: StorageFacts | None = Field(default=None, exclude_if=lambda value: value is None)


# How NVML's start went: "ok", or why it could not start (nvml.h nvmlReturn_t of nvmlInit).
NvmlState = Literal["ok", "library_not_found", "driver_not_loaded", "version_mismatch", "no_permission", "error"]


class PciGpu(BaseModel):
    """An NVIDIA display or 3D controller on the PCI bus, as sysfs or lspci lists it (whatever drives it)."""

    model_config = ConfigDict(extra="forbid")

    bdf: str  # "0000:19:00.0"
    device_id: str | None = None  # "0x2330"
    pci_class: str  # "0x030200" (3D controller), "0x030000" (VGA)
    driver: str | None = None  # the kernel driver bound to it: "nvidia", "nouveau", "vfio-pci"; None: none
    driver_known: bool = True  # False: the source lists the device but not its driver (`lspci` without -k)


class DriverState(Record):
    """Whether the NVIDIA driver works here: NVML's start, the kernel module, the NVIDIA GPUs on the PCI bus."""

    nvml: NvmlState | None = None
    nvml_error: str | None = None  # NVML's own words when it did not start
    kernel_module_version: str | None = None  # the loaded nvidia module (/sys/module/nvidia/version)
    library_version: str | None = None  # the user-space driver's, where a source names it (a mismatch message)
    pci_gpus: list[PciGpu] | None = None  # None: the PCI bus could not be listed


FabricManagerState = Literal["running", "failed", "inactive", "not_initialized", "unknown"]


class FabricManager(Record):
    """Fabric Manager (NVSwitch systems): whether it runs, and the lines that say what went wrong."""

    # running: active / its log shows it working; failed: the service failed or the log says it stopped;
    # inactive: systemd says not running; not_initialized: CUDA error 802, the fabric was never set up.
    state: FabricManagerState | None = None
    detail: str | None = None  # the line that decided the state, as printed
    errors: list[str] = Field(default_factory=_no_items)  # error lines as printed (at most a few)
    nvswitches: int | None = None  # NVSwitch devices the host shows (live: /proc/driver/nvidia-nvswitch)


class Diagnostic(BaseModel):
    """Something a probe noticed about itself: a missing NVML function, a parse it skipped."""

    model_config = ConfigDict(extra="forbid")

    source: str  # "nvml", "sysfs", "smi-q", ...
    message: str
    gpu: int | None = None


SourceKind = Literal[
    "nvml",
    "nvidia-smi-q",
    "nvidia-smi-xml",
    "nvidia-smi-table",
    "topo",
    "nvlink-status",
    "topo-p2p",
    "nvlink-errors",  # `nvidia-smi nvlink -e`
    "fabric-manager",  # a Fabric Manager log or journal, or CUDA's "system not yet initialized"
    "kernel-log",  # dmesg, dmesg -T, journalctl -k or a syslog excerpt
    "nvidia-smi-error",  # what nvidia-smi prints when it cannot read a GPU or reach the driver
    "lspci",  # `lspci` (-k, -nn, -v ...): the NVIDIA GPUs on the PCI bus and the driver bound to each
    "nvidia-smi-query-csv",  # `nvidia-smi --query-gpu=... --format=csv`, saved
    "snapshot",
    "combined",  # several --from files merged into one snapshot: ``parts`` lists them
    "none",
]


def _no_parts(parts: list["Source"]) -> bool:
    return not parts


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: SourceKind
    path: str | None = None  # the file the data was parsed from, when it came from text
    replayed_from: str | None = None  # the snapshot file this was loaded from with --from
    # A combined snapshot's files, in --from order; left out of the JSON when empty, so a single-file
    # snapshot is written exactly as before this field existed.
    parts: list["Source"] = Field(
        default_factory=_no_items, exclude_if=_no_parts, description="the files of a combined snapshot, in --from order"
    )


class PairTable:
    """A snapshot's GPU pairs indexed once, for the checks and the reports that walk them (a 512-GPU machine has
    130,816 pairs): ``get(a, b)``, the first record of a pair (in either order), and ``nvlink``, the pairs on
    NVLink. Built by :meth:`Snapshot.pair_table` and kept while the snapshot's pairs list is the same list of the
    same length; the records are not copied, so a record changed in place is what the table returns."""

    __slots__ = ("_by_link", "_nvlink", "by_key", "pairs", "size")

    def __init__(self, pairs: list[GpuPair]) -> None:
        self.pairs = pairs  # held, so that its id cannot be reused by another list while the table is cached
        self.size = len(pairs)
        self.by_key: dict[tuple[int, int], GpuPair] = {}
        for p in pairs:
            self.by_key.setdefault((p.a, p.b), p)
        self._nvlink: frozenset[tuple[int, int]] | None = None
        self._by_link: dict[str | None, list[GpuPair]] | None = None

    def describes(self, pairs: list[GpuPair]) -> bool:
        """Whether this table was built from ``pairs`` as it is now (the same list, not grown or shrunk)."""
        return pairs is self.pairs and len(pairs) == self.size

    def get(self, a: int, b: int) -> GpuPair | None:
        return self.by_key.get((a, b) if a < b else (b, a))

    @property
    def nvlink(self) -> frozenset[tuple[int, int]]:
        """The (a, b) of the pairs whose record says NVLink: its kind, an NV# link code or a link count."""
        if self._nvlink is None:
            self._nvlink = frozenset(
                (p.a, p.b)
                for p in self.pairs
                if p.kind == "nvlink" or (p.link is not None and nvlink_count(p.link)) or (p.nvlinks or 0) > 0
            )
        return self._nvlink

    @property
    def by_link(self) -> dict[str | None, list[GpuPair]]:
        """The pairs (one record each, as :meth:`get`) per link code, None for an unknown link; each list in (a, b)
        order. What the reports of a large topology count and name (report/topo.py's summary)."""
        if self._by_link is None:
            groups: dict[str | None, list[GpuPair]] = {}
            for p in self.by_key.values():
                groups.setdefault(p.link, []).append(p)
            for members in groups.values():
                members.sort(key=_PAIR_ORDER)
            self._by_link = groups
        return self._by_link


_PAIR_ORDER = attrgetter("a", "b")  # (a, b) of a pair, read in C: the key of 130,816 pairs at 512 GPUs


def _is_none(value: object) -> bool:
    return value is None


def _no_events(events: list[KernelEvent]) -> bool:
    return not events


class Snapshot(BaseModel):
    """What rigcheck knows about a machine; replayable with ``--from``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["rigcheck.snapshot/1"] = Field(default=SNAPSHOT_SCHEMA, alias="schema")
    created_at: str | None = None  # ISO 8601, UTC
    source: Source = Field(default_factory=lambda: Source(kind="none"))
    host: Host = Field(default_factory=Host)
    software: Software = Field(default_factory=Software)
    gpus: list[Gpu] = Field(default_factory=_no_items)
    pairs: list[GpuPair] = Field(default_factory=_no_items)
    topology: TopoMatrix | None = None
    nics: list[Nic] = Field(default_factory=_no_items)
    system: System = Field(default_factory=System)
    diagnostics: list[Diagnostic] = Field(default_factory=_no_items)
    # NVML functions this driver lacks (probed once); shown in the report's diagnostics.
    missing_functions: list[str] = Field(default_factory=_no_items)
    # Why there are no GPUs at all, when there are none ("no NVIDIA driver", ...).
    gpu_absent_reason: str | None = None
    # The driver's state, read live (null where the source does not say: left out of the JSON then).
    driver: DriverState | None = Field(default=None, exclude_if=_is_none)
    # NVSwitch systems: Fabric Manager's state (live systemctl or a saved log); left out of the JSON when unread.
    fabric_manager: FabricManager | None = Field(default=None, exclude_if=_is_none)

    # Xid/SXid/AER/NVRM lines of the kernel log (model/kernel_log.py), in log order; left out when none.
    kernel_events: list[KernelEvent] = Field(default_factory=_no_items, exclude_if=_no_events)
    kernel_log: KernelLogRead | None = Field(default=None, exclude_if=_is_none)
    # `--gpus 0,2`: the GPU indices this snapshot was narrowed to (model/selection.py); left out when not narrowed.
    gpu_selection: list[int] | None = Field(
        default=None, exclude_if=_is_none, description="the GPU indices --gpus narrowed this snapshot to"
    )

    def gpu(self, index: int) -> Gpu | None:
        return next((g for g in self.gpus if g.index == index), None)

    # The pairs indexed (PairTable): pair() is called for every GPU pair, and the checks and reports walk them
    # all, so each would otherwise index or scan them again. Rebuilt when ``pairs`` is another list or another
    # length (assigned, appended to: readers/merge.py appends while it looks up).
    _pair_table: PairTable | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Equal fields: the pair table is a cache, not a fact (pydantic's equality compares private attributes,
        so a snapshot that had been checked differed from the same snapshot read back)."""
        if not isinstance(other, Snapshot):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, like every pydantic model that is not frozen

    def pair_table(self) -> PairTable:
        """The pairs indexed once for every reader of this snapshot (see :class:`PairTable`)."""
        table = self._pair_table
        if table is None or not table.describes(self.pairs):
            table = self._pair_table = PairTable(self.pairs)
        return table

    def pair(self, a: int, b: int) -> GpuPair | None:
        lo, hi = min(a, b), max(a, b)
        found = self.pair_table().get(lo, hi)
        if found is None or (found.a == lo and found.b == hi):
            return found
        # A hit is checked against the record: its GPUs were changed in place since the table was built. Look the
        # slow way, and rebuild the table next time.
        self._pair_table = None
        return next((p for p in self.pairs if p.a == lo and p.b == hi), None)
