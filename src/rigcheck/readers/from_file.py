"""`--from FILE`: recognise a saved output (nvidia-smi in its forms, topo -m, topo -p2p, a snapshot) and read
it; several files (`--from A --from B`) are combined by readers/merge.py.

Everything here raises InputError subclasses with the file's name, so the CLI can print one line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from rigcheck.errors import InputError, ParseError
from rigcheck.inputs import input_limits, read_input_text
from rigcheck.model import Gpu, Missing, Snapshot, Source, snapshot_from_json
from rigcheck.model.kernel_log import KernelEvent
from rigcheck.readers.smi.ansi import strip_ansi

InputKind = Literal[
    "snapshot",
    "nvidia-smi-xml",
    "nvidia-smi-q",
    "nvidia-smi-table",
    "topo",
    "topo-p2p",
    "nvlink-status",
    "nvidia-smi-error",
    "kernel-log",
    "nvlink-errors",
    "fabric-manager",
    "lspci",
    "nvidia-smi-query-csv",  # `nvidia-smi --query-gpu=... --format=csv` (readers/smi/query_csv.py)
]

_TOPO_HEADER = re.compile(r"^\s*(GPU\d+\s+)+", re.MULTILINE)
_TOPO_ROW = re.compile(r"^\s*GPU\d+\s+(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)\b", re.MULTILINE)
_P2P_LEGEND = re.compile(r"^\s*CNS\s+=\s+Chipset not supported", re.MULTILINE)
# A P2P status code as a cell: only then is topo_p2p's own (stricter) matrix test imported and run.
_P2P_CELL = re.compile(r"(?<!\S)(OK|CNS|GNS|TNS|NS|DR)(?!\S)")
_NVLINK = re.compile(r"^\s*Link \d+: ", re.MULTILINE)
_NVLINK_GPU = re.compile(r"^[ \t]*GPU \d+: .*\(UUID: ", re.MULTILINE)  # indented where pasted into a post
_Q_SECTION = re.compile(
    r"^\s*(Attached GPUs|Driver Version|Product Name|Clocks (Throttle|Event) Reasons|GPU Power Readings|"
    r"Power Readings|Temperature|GPU Current Temp|Max Clocks|PCIe Generation|GPU Link Info|"
    r"GPU Recovery Action|CliqueId|ClusterUUID|Remapped Rows|Retired Pages|ECC Errors)\s*(:|$)",
    re.MULTILINE,
)


SNAPSHOT_INPUTS = "nvidia-smi output or a rigcheck snapshot"


def detect_kind(text: str) -> InputKind | None:
    """Which output this is, from its content alone; None when it is none of them."""
    clean = strip_ansi(text).lstrip("\ufeff")
    head = clean.lstrip()[:4096]
    if head.startswith("{"):
        return "snapshot"
    if head.startswith("<?xml") or "<nvidia_smi_log" in head:
        return "nvidia-smi-xml"
    if "NVSMI LOG" in head:
        return "nvidia-smi-q"
    if "NVIDIA-SMI" in clean and "|" in clean:
        return "nvidia-smi-table"
    # Before topo -m: a P2P matrix has the same shape ("GPU0  X  OK"), other codes.
    if _P2P_LEGEND.search(clean) or (_P2P_CELL.search(clean) and _looks_like_topo_p2p(clean)):
        return "topo-p2p"
    if _TOPO_HEADER.search(clean) and _TOPO_ROW.search(clean):
        return "topo"
    if _looks_like_nvlink_errors(clean):  # before nvlink -s: the same headers, "Link 0: Replay Errors: 0" lines
        return "nvlink-errors"
    if _NVLINK_GPU.search(clean) and (_NVLINK.search(clean) or "NVLink" in clean):
        return "nvlink-status"
    if _Q_SECTION.search(clean):
        return "nvidia-smi-q"
    if _says_smi_failed(clean):
        # A kernel log with the driver's API-mismatch line and other GPU events (RmInitAdapter failures naming a
        # bus id, Xids) is read as the kernel log it is: nvidia-smi's error output would lose those GPUs.
        return "kernel-log" if _kernel_log_beyond_driver_state(clean) else "nvidia-smi-error"
    if _looks_like_kernel_log(clean):  # Xid/SXid/AER lines; a log with "API mismatch" is read just above
        return "kernel-log"
    if _looks_like_query_csv(clean, header=True):  # its first line names --query-gpu fields
        return "nvidia-smi-query-csv"
    if _looks_like_fabric_manager(clean):
        return "fabric-manager"
    if _looks_like_lspci(clean):  # a paste of lspci beside any output above is read with that output
        return "lspci"
    if _looks_like_query_csv(clean, header=False):  # last: rows of values alone (csv,noheader)
        return "nvidia-smi-query-csv"
    return None


def _looks_like_query_csv(text: str, *, header: bool) -> bool:
    from rigcheck.readers.smi.query_csv import looks_like_header, looks_like_noheader

    if header:
        first = next((line for line in text.splitlines() if line.strip()), "")
        return looks_like_header(first)
    return looks_like_noheader(text)


def _says_smi_failed(text: str) -> bool:
    """nvidia-smi's own failure output: a GPU it could not open, or a driver it could not reach."""
    from rigcheck.probe.driver import driver_state_from_text
    from rigcheck.readers.smi.unreadable import handle_errors

    return bool(handle_errors(text)) or driver_state_from_text(text) is not None or _NO_DEVICES.search(text) is not None


# nvidia-smi's whole output where the driver runs but sees no GPU (or could open none: after the handle errors).
_NO_DEVICES = re.compile(r"^\s*No devices were found\s*$", re.MULTILINE | re.IGNORECASE)


def snapshot_from_smi_error(text: str, path: str | None) -> Snapshot:
    """What nvidia-smi's failure says: placeholders for the GPUs it could not open (each a failed GPU), and
    the driver's state where the text tells it (a broken driver is a failed machine, never "no GPU")."""
    from rigcheck.model.snapshot import Diagnostic
    from rigcheck.probe.driver import driver_state_from_text
    from rigcheck.readers.smi.unreadable import add_handle_errors

    gpus: list[Gpu] = []
    diagnostics: list[Diagnostic] = []
    add_handle_errors(text, gpus, path or "input", diagnostics)
    driver = driver_state_from_text(text)
    absent = None
    if not gpus:
        said = _NO_DEVICES.search(text)
        absent = (
            driver.nvml_error
            if driver is not None and driver.nvml_error
            else said.group(0).strip() + " (nvidia-smi)"
            if said is not None
            else "nvidia-smi could not read any GPU"
        )
    return Snapshot(
        source=Source(kind="nvidia-smi-error", path=path),
        gpus=gpus,
        diagnostics=diagnostics,
        driver=driver,
        gpu_absent_reason=absent,
        kernel_events=_gpu_events(text),
    )


def _kernel_log_beyond_driver_state(text: str) -> bool:
    """A kernel log that says more than the driver's state, and no nvidia-smi failure words of its own."""
    from rigcheck.probe.driver import says_nvml_failed
    from rigcheck.probe.kernel_log import has_gpu_events
    from rigcheck.readers.smi.unreadable import handle_errors

    own = says_nvml_failed(text) or bool(handle_errors(text)) or _NO_DEVICES.search(text) is not None
    return not own and has_gpu_events(text)


def _looks_like_kernel_log(text: str) -> bool:
    from rigcheck.probe.kernel_log import looks_like_kernel_log

    return looks_like_kernel_log(text)


def _gpu_events(text: str) -> list[KernelEvent]:
    """A broken driver's log may hold Xid/SXid/AER lines and GPUs the driver could not bring up (RmInitAdapter,
    fallen off the bus): keep them; its API-mismatch lines are the driver state, reported by that."""
    from rigcheck.probe.kernel_log import is_driver_state_event, parse_kernel_events

    return [e for e in parse_kernel_events(text) if not is_driver_state_event(e)]


def _looks_like_nvlink_errors(text: str) -> bool:
    from rigcheck.readers.smi.nvlink_errors import looks_like_nvlink_errors

    return looks_like_nvlink_errors(text)


def _looks_like_fabric_manager(text: str) -> bool:
    from rigcheck.probe.fabric_manager import looks_like_fabric_manager

    return looks_like_fabric_manager(text)


def _looks_like_lspci(text: str) -> bool:
    from rigcheck.readers.lspci import looks_like_lspci

    return looks_like_lspci(text)


def _with_lspci(snapshot: Snapshot, text: str) -> Snapshot:
    """nvidia-smi's failure or a kernel log pasted with `lspci` beside it (the usual report of a card the driver
    does not see): the PCI bus as lspci shows it goes into the driver's state, as live sysfs would."""
    from rigcheck.readers.lspci import driver_state_from_lspci

    found = driver_state_from_lspci(text)
    if found is None or not found[0].pci_gpus:
        return snapshot
    state, notes = found
    if snapshot.driver is None:
        snapshot.driver = state
    else:
        snapshot.driver.pci_gpus = state.pci_gpus
        snapshot.driver.missing.pop("pci_gpus", None)
    snapshot.diagnostics += notes
    return snapshot


def _looks_like_topo_p2p(text: str) -> bool:
    from rigcheck.readers.smi.topo_p2p import looks_like_topo_p2p

    return looks_like_topo_p2p(text)


def snapshot_from_topo_text(text: str, path: str | None) -> Snapshot:
    from rigcheck.model.snapshot import Diagnostic
    from rigcheck.readers.smi.topo import NUMA_AFFINITY, pairs_from_topology, read_topo

    topo, cut = read_topo(text, path)
    gpus: list[Gpu] = []
    for tg in topo.gpus:
        gpu = Gpu(index=tg.index)
        if tg.cpu_affinity:
            gpu.cpu_affinity = tg.cpu_affinity
        # isascii too: str.isdigit() is true for '¹', which int() refuses.
        node = _first_numa_node(tg.numa_affinity)
        if node is not None:
            gpu.numa_node = node
        if cut is not None and cut.partial is not None and cut.partial[0] == tg.index:  # the value the text ends on
            gpu.mark_missing("numa_node" if cut.partial[1] == NUMA_AFFINITY else "cpu_affinity", Missing.TRUNCATED)
        gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
        gpus.append(gpu)
    return Snapshot(
        source=Source(kind="topo", path=path),
        gpus=gpus,
        pairs=pairs_from_topology(topo),
        topology=topo,
        nics=list(topo.nics),
        diagnostics=[] if cut is None else [Diagnostic(source="topo", message=cut.message())],
    )


_LINK_CODE = re.compile(r"^\s*GPU\d+\s.*(?<!\S)(?:NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)(?!\S)", re.MULTILINE)
# A matrix's header: GPU0 followed by another column's name (or nothing: one GPU); a row has a cell there.
_NUMA_LIST = re.compile(r"^(\d+)(?:[-,]\d+)*$")


def _first_numa_node(affinity: str | None) -> int | None:
    """The node to bind to from `topo -m`'s NUMA Affinity: "1", or the first of a list ("0,2-17" on a GB200,
    where the CPU's node comes first and the GPU memory's own nodes follow); None for N/A or anything else."""
    m = _NUMA_LIST.match(affinity.strip()) if affinity is not None and affinity.isascii() else None
    return int(m.group(1)) if m is not None else None


_MATRIX_HEADER = re.compile(r"^\s*GPU0(?=\s+(?:GPU\d|NIC\d|mlx|CPU Affinity)|\s*$)")


def topo_m_section(text: str) -> str | None:
    """The `topo -m` matrix of a file that holds `topo -p2p` matrices too (one saved report of both): from its
    header (a GPU header whose first row has link codes) to the next matrix's header or a `====` rule. None
    when there is none."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if _MATRIX_HEADER.match(line) is None:
            continue
        end = start + 1
        while end < len(lines) and _MATRIX_HEADER.match(lines[end]) is None and not lines[end].startswith("===="):
            end += 1
        block = "\n".join(lines[start:end]) + "\n"
        # A P2P matrix has the same shape ("GPU0  X  OK"): topo -m names the affinity columns or a link code.
        if "Affinity" in line or _LINK_CODE.search(block):
            return block
    return None


def _topo_p2p_with_topo_m(text: str, path: str | None) -> Snapshot:
    """`topo -p2p`, and the `topo -m` matrix beside it in the same file, combined as two files would be."""
    from rigcheck.readers.smi.topo_p2p import parse_topo_p2p

    p2p = parse_topo_p2p(text, path=path)
    section = topo_m_section(strip_ansi(text))
    if section is None:
        return p2p
    from rigcheck.readers.merge import Part, merge_snapshots

    where = path or "-"
    return merge_snapshots(
        [Part(f"{where} (topo -m)", snapshot_from_topo_text(section, path)), Part(f"{where} (topo -p2p)", p2p)]
    )


def _parse(kind: InputKind, text: str, path: str | None) -> Snapshot:
    """Read ``text`` as ``kind``. Each text parser is imported here: a snapshot JSON (the common case) needs none."""
    if kind == "snapshot":
        snap = snapshot_from_json(text, path=path)
        # Keep where the data originally came from; remember the file it was replayed from.
        snap.source.replayed_from = path
        return snap
    if kind == "nvidia-smi-xml":
        from rigcheck.readers.smi.query_xml import parse_query_xml

        return parse_query_xml(text, path)
    if kind == "nvidia-smi-q":
        from rigcheck.readers.smi.query_text import parse_query_text

        return parse_query_text(text, path)
    if kind == "nvidia-smi-table":
        from rigcheck.readers.smi.table import parse_table

        return parse_table(text, path)
    if kind == "nvlink-status":
        from rigcheck.readers.smi.nvlink_status import parse_nvlink_status

        return parse_nvlink_status(text, path)
    if kind == "topo-p2p":
        return _topo_p2p_with_topo_m(text, path)
    if kind == "nvidia-smi-error":
        return _with_lspci(snapshot_from_smi_error(text, path), text)
    if kind == "nvlink-errors":
        from rigcheck.readers.smi.nvlink_errors import parse_nvlink_errors

        return parse_nvlink_errors(text, path)
    if kind == "kernel-log":
        from rigcheck.probe.kernel_log import snapshot_from_kernel_log

        return _with_lspci(snapshot_from_kernel_log(text, path), text)
    if kind == "lspci":
        from rigcheck.readers.lspci import snapshot_from_lspci

        return snapshot_from_lspci(text, path)
    if kind == "fabric-manager":
        from rigcheck.probe.fabric_manager import parse_fabric_manager

        return parse_fabric_manager(text, path)
    if kind == "nvidia-smi-query-csv":
        from rigcheck.readers.smi.query_csv import parse_query_csv

        return parse_query_csv(strip_ansi(text), path)
    return snapshot_from_topo_text(text, path)  # "topo", the one kind left


def _measurement_hint(text: str) -> str | None:
    """Where a measurement tool's output goes instead, when ``text`` is one (only on the error path)."""
    from rigcheck.readers.reference.nccl_tests import looks_like_nccl_tests
    from rigcheck.readers.reference.reference_import import detect_tool

    if looks_like_nccl_tests(text):
        return "nccl-tests output: read it with `rigcheck bench allreduce --from FILE` (or the collective it ran)"
    tool = detect_tool(text)
    if tool == "nvbandwidth":
        return "nvbandwidth output: read it with `rigcheck bench hostlink --from FILE` (membw, p2p: its other tests)"
    if tool == "p2pBandwidthLatencyTest":
        return "p2pBandwidthLatencyTest output: read it with `rigcheck bench p2p --from FILE`"
    from rigcheck.readers.reference.reference_import import other_reader

    if (reader := other_reader(text)) is not None:
        return reader
    from rigcheck.readers.reference.bandwidth_test import looks_like_bandwidth_test

    if looks_like_bandwidth_test(text):
        return "bandwidthTest output: read it with `rigcheck bench hostlink --from FILE` (membw: its device table)"
    dcgm_verify = "put it in a directory and run `rigcheck verify --from DIR --only dcgm` (beside a snapshot and "
    dcgm_verify += "rigcheck's saved measurements: without --only)"
    if text.lstrip().startswith("{") and ("DCGM Diagnostic" in text[:4096] or "DCGM GPU Diagnostic" in text[:4096]):
        return f"a DCGM diagnostic (dcgmi diag -j): {dcgm_verify}"
    from rigcheck.readers.reference.dcgm_diag_text import looks_like_dcgm_text

    if looks_like_dcgm_text(text):
        return f"a DCGM diagnostic table (`dcgmi diag` without -j): {dcgm_verify}"
    return _log_hint(text[:65536])


def _log_hint(head: str) -> str | None:
    """Where a log or a trace goes (the reads below probe/ live in other commands: only words are matched here)."""
    from rigcheck.readers.reference.gpu_burn import looks_like_gpu_burn

    if " NCCL INFO " in head or " NCCL WARN " in head:
        return "an NCCL_DEBUG log: read it with `rigcheck nccl-log FILE` (transports, rings, failures)"
    if looks_like_gpu_burn(head):
        return "gpu-burn output: read it with `rigcheck burn --analyze FILE`"
    first = next((line.strip().lower() for line in head.splitlines() if line.strip()), "")
    if first.startswith("# gpu") or (first.startswith("timestamp") and "," in first):
        return (
            "a telemetry trace (nvidia-smi dmon, or --query-gpu with timestamps): read it with "
            "`rigcheck burn --analyze FILE`"
        )
    return None


def load_text(text: str, path: str | None = None) -> Snapshot:
    kind = detect_kind(text)
    if kind is None:
        hint = _measurement_hint(text)
        if hint is not None:
            raise ParseError(f"not a machine description but {hint}", path=path)
        raise ParseError(
            "not a recognised input: expected `nvidia-smi -q` (or -q -x), the `nvidia-smi` table, "
            "`nvidia-smi --query-gpu=... --format=csv`, `nvidia-smi topo -m`, `nvidia-smi topo -p2p`, "
            "`nvidia-smi nvlink -s` or `-e`, nvidia-smi's error output, "
            "a kernel log (dmesg, journalctl -k, syslog) with NVIDIA lines, a Fabric Manager journal or log, "
            "`lspci` (-k, -nn, -v), or a rigcheck snapshot JSON",
            path=path,
        )
    try:
        with input_limits(path):  # a 5,000-digit number, a 100,000-deep JSON: exit 2, not a traceback
            return _parse(kind, text, path)
    except InputError:
        # Taken for a machine description it is not (nvbandwidth's header reads like -q, DCGM's JSON like a
        # snapshot): name the command that reads it, else the parser's own line.
        hint = _measurement_hint(text)
        if hint is None:
            raise
        raise ParseError(f"not a machine description but {hint}", path=path) from None


def load_file(path: str) -> Snapshot:
    """Read ``path`` (or "-" for stdin) as whichever supported output it is."""
    return load_text(read_input_text(path, SNAPSHOT_INPUTS), path)


def load_files(paths: Sequence[str]) -> Snapshot:
    """Read each of ``paths`` and combine them into one snapshot of one machine; one path is :func:`load_file`.

    In a combination an empty file is a Diagnostic rather than an error: `nvidia-smi nvlink -s` prints
    nothing on a machine without NVLink, and the other files still describe the machine.
    """
    if not paths:
        raise ValueError("no file to read")
    if len(paths) == 1:
        return load_file(paths[0])
    if list(paths).count("-") > 1:
        raise InputError("standard input can be read only once ('-' is given more than once)", path="-")
    from rigcheck.readers.merge import Part, merge_snapshots

    parts = []
    for path in paths:
        text = read_input_text(path, SNAPSHOT_INPUTS, allow_empty=True)
        parts.append(Part(path, load_text(text, path) if text else None))
    return merge_snapshots(parts)
