"""nvbandwidth and p2pBandwidthLatencyTest outputs as rigcheck's bench documents (`bench p2p | membw | hostlink
--from FILE`): which tool wrote a file, and its figures as rows, each as printed. Nothing here knows a ceiling:
rigcheck.checks.reference.judge puts each figure beside its link and band.

Mapping: nvbandwidth's host_to_device_* / device_to_host_* / host_to_all_* / all_to_host_* testcases are host-link
rows (one per GPU), device_local_copy is membw rows (one per GPU), device_to_device_* are p2p rows (one per
ordered pair); p2pBandwidthLatencyTest is p2p rows per ordered pair and mode (P2P=Enabled: ``peer``,
P2P=Disabled: ``staged``) with every matrix it printed. What the tools do not print (buffer size, iterations,
time) is null with the reason ``not_in_source``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rigcheck import __version__
from rigcheck.errors import InputError
from rigcheck.model.bench import (
    HostlinkDocument,
    HostlinkRow,
    ImportedDevice,
    ImportedSource,
    MembwDocument,
    MembwRow,
    Method,
    P2PDocument,
    P2PRow,
    Versions,
)
from rigcheck.readers.reference.nvbandwidth import NvbandwidthRun, NvbTestcase, cuda_version, looks_like_nvbandwidth
from rigcheck.readers.reference.p2p_latency_test import P2PTestRun, looks_like_p2p_latency_test

Command = Literal["p2p", "membw", "hostlink"]
TOOL_P2P = "p2pBandwidthLatencyTest"
NOT_IN_SOURCE = "not_in_source"
# nvbandwidth checks every copy's data and aborts on a wrong pattern, so a figure it printed passed its check.
NVB_CORRECT = "correct: nvbandwidth checks the copied data and stops on a mismatch, so a printed figure passed"
P2P_CORRECT = "correct: p2pBandwidthLatencyTest does not check the copied data; rigcheck marks no row wrong"


@dataclass(frozen=True)
class ToolOutput:
    """A reference tool's output as read: which tool, the file, and its parsed run."""

    tool: Literal["nvbandwidth", "p2pBandwidthLatencyTest"]
    path: str
    run: NvbandwidthRun | P2PTestRun


def detect_tool(text: str) -> Literal["nvbandwidth", "p2pBandwidthLatencyTest"] | None:
    """Which reference tool wrote ``text``; None for anything else (a machine description, another tool)."""
    if looks_like_nvbandwidth(text):
        return "nvbandwidth"
    if looks_like_p2p_latency_test(text):
        return "p2pBandwidthLatencyTest"
    return None


def other_reader(text: str) -> str | None:
    """Where a measurement output these commands do not read goes (mamf-finder: `bench matmul --from`, read by
    rigcheck.readers.reference.mamf); None when ``text`` is none of them."""
    from rigcheck.readers.reference.mamf import looks_like_mamf

    if looks_like_mamf(text):
        return "mamf-finder output (matmul TFLOPS per shape): read it with `rigcheck bench matmul --from FILE`"
    return None


def read_tool_output(text: str, path: str) -> ToolOutput | None:
    """The tool output in ``text`` read, or None when it is not one (ParseError when it is one but unreadable)."""
    tool = detect_tool(text)
    if tool == "nvbandwidth":
        from rigcheck.readers.reference.nvbandwidth import parse_nvbandwidth

        return ToolOutput(tool, path, parse_nvbandwidth(text, path))
    if tool == "p2pBandwidthLatencyTest":
        from rigcheck.readers.reference.p2p_latency_test import parse_p2p_latency_test

        return ToolOutput(tool, path, parse_p2p_latency_test(text, path))
    return None


# --- which testcases each command reads ---------------------------------------------------------------------


def _host_direction(name: str) -> Literal["h2d", "d2h"] | None:
    if name.startswith(("host_to_device", "host_to_all")):
        return "h2d"
    if name.startswith(("device_to_host", "all_to_host")):
        return "d2h"
    return None


def _reads(command: Command, testcase: NvbTestcase) -> bool:
    if testcase.unit != "GB/s" and testcase.status == "passed":
        return False  # a latency testcase (ns): no bench document holds latency per GPU or host
    if command == "hostlink":
        return _host_direction(testcase.name) is not None
    if command == "membw":
        return testcase.name == "device_local_copy"
    # multinode nvbandwidth names its GPU-to-GPU testcases "multinode_device_to_device_*": the same matrix
    return testcase.name.startswith(("device_to_device", "multinode_device_to_device"))


def wrong_tool(output: ToolOutput, command: Command) -> InputError | None:
    """The one-line error for a file the command cannot read (another command reads it); None when it can."""
    if output.tool == "p2pBandwidthLatencyTest":
        if command == "p2p":
            return None
        return InputError(
            f"holds p2pBandwidthLatencyTest output (GPU pair matrices), not a {command} measurement: "
            "read it with `rigcheck bench p2p --from`",
            path=output.path,
        )
    run = output.run
    assert isinstance(run, NvbandwidthRun)
    if any(_reads(command, t) for t in run.testcases):
        return None
    readers = sorted(
        {f"`rigcheck bench {c} --from`" for c in ("p2p", "membw", "hostlink") for t in run.testcases if _reads(c, t)}
    )
    held = ", ".join(t.name for t in run.testcases)
    hint = f"; read it with {' or '.join(readers)}" if readers else ""
    if any(t.unit != "GB/s" and t.status == "passed" for t in run.testcases):
        hint += " (latency testcases are not read: no bench document holds a latency per GPU pair or host)"
    wanted = {
        "p2p": "device_to_device_*",
        "membw": "device_local_copy",
        "hostlink": "host_to_device_* / device_to_host_*",
    }
    return InputError(f"holds nvbandwidth's {held}, no {wanted[command]} bandwidth testcase{hint}", path=output.path)


# --- the parts every imported document shares ---------------------------------------------------------------


def source_of(output: ToolOutput) -> ImportedSource:
    run = output.run
    if isinstance(run, NvbandwidthRun):
        devices = [ImportedDevice(device=d.index, pci_bus_id=d.bus_id, name=d.name) for d in run.devices]
        return ImportedSource(
            tool="nvbandwidth", file=output.path, version=run.version, ranks=len(devices) or None, devices=devices
        )
    devices = [ImportedDevice(device=d.index, pci_bus_id=d.bus_id, name=d.name) for d in run.devices]
    return ImportedSource(tool="p2pBandwidthLatencyTest", file=output.path, ranks=run.size or None, devices=devices)


def method_of(output: ToolOutput) -> Method:
    version = output.run.version if isinstance(output.run, NvbandwidthRun) else None
    return Method(
        method_version=f"{output.tool} {version}" if version else output.tool,
        warmup=0,
        repeats=1,
        statistic=f"as printed by {output.tool} (rigcheck reads one figure per cell)",
        timer="cuda_events",
    )


def versions_of(output: ToolOutput) -> Versions:
    cuda = cuda_version(output.run.cuda_runtime) if isinstance(output.run, NvbandwidthRun) else None
    return Versions(rigcheck=__version__, python=None, torch=None, cuda=cuda, nccl=None)


def _cut_error(output: ToolOutput) -> str | None:
    run = output.run
    if isinstance(run, NvbandwidthRun):
        cut = [t.name for t in run.testcases if t.truncated]
        return f"input ends early inside {', '.join(cut)}: the figures printed before the cut are kept" if cut else None
    return "input ends early inside a matrix: the figures printed before the cut are kept" if run.truncated else None


def imported_head(name: str, value: float, method_version: str, sizes: list[int] | None = None) -> dict[str, object]:
    """The contract fields of one figure a reference tool printed once (no repeats of rigcheck's own, no warm-up
    counted): value, median, min and max are the printed figure."""
    return {
        "name": name,
        "unit": "GB/s",
        "value": value,
        "median": value,
        "min": value,
        "max": value,
        "repeats": 1,
        "warmup": 0,
        "sizes": sizes or [],
        "backend": "cuda",
        "world_size": 1,
        "method_version": method_version,
    }


def _head(name: str, value: float, method: Method) -> dict[str, object]:
    return imported_head(name, value, method.method_version)


def _skipped_notes(run: NvbandwidthRun, command: Command) -> list[str]:
    notes = []
    for t in run.testcases:
        if _reads(command, t) and t.status != "passed":
            notes.append(f"{t.name}: {t.status}" + (f" ({t.message})" if t.message else ""))
    if run.unnamed_waived:
        notes.append(f"{run.unnamed_waived} testcase(s) waived (nvbandwidth does not name a testcase it waives)")
    return notes


def _columns(testcase: NvbTestcase) -> list[tuple[int, float]]:
    """(GPU, figure) of a host or local testcase: its one row's printed cells by column."""
    cells = next(iter(testcase.rows.values()), [])
    return [(gpu, v) for gpu, v in zip(testcase.columns, cells, strict=False) if v is not None]


# --- the documents ------------------------------------------------------------------------------------------


def hostlink_document(output: ToolOutput) -> HostlinkDocument:
    run = output.run
    assert isinstance(run, NvbandwidthRun)
    method = method_of(output)
    rows = []
    for t in run.testcases:
        direction = _host_direction(t.name)
        if direction is None or not _reads("hostlink", t):
            continue
        for gpu, value in _columns(t):
            rows.append(
                HostlinkRow.model_validate(
                    _head(t.name, value, method)
                    | {
                        "gpu": gpu,
                        "device_name": run.device_name(gpu) or f"GPU {gpu}",
                        "pci_bus_id": _bus_id(run, gpu),
                        "direction": direction,
                        "memory": "pinned",
                        "numa_bound": False,
                        "cpus": None,
                        "local_cpus": None,
                        "local_cpus_source": "unknown",
                        "numa_node": None,
                        "size_bytes": None,
                        "iters": None,
                        "time_us_median": None,
                        "pcie_link": None,
                        "pcie_theoretical_gbps": None,
                        "correct": True,
                        "gbps": value,
                        "fraction_of_pcie": None,
                        "missing": dict.fromkeys(("size_bytes", "iters", "time_us_median"), NOT_IN_SOURCE),
                    }
                )
            )
    notes = [
        "read from nvbandwidth's output: each figure as printed (GB/s, bytes copied once); nvbandwidth copies "
        "to and from pinned host memory without binding CPUs; *_ce: copy engine (cuMemcpyAsync), *_sm: a copy "
        "kernel; bidirectional testcases report one direction while the other runs",
        NVB_CORRECT,
        *_skipped_notes(run, "hostlink"),
    ]
    return HostlinkDocument(**_document_keys(output, method), results=rows, notes=notes)


def membw_document(output: ToolOutput) -> MembwDocument:
    run = output.run
    assert isinstance(run, NvbandwidthRun)
    method = method_of(output)
    rows = []
    for t in run.testcases:
        if not _reads("membw", t):
            continue
        for gpu, value in _columns(t):
            rows.append(
                MembwRow.model_validate(
                    _head(t.name, value, method)
                    | {
                        "rank": gpu,
                        "gpu": gpu,
                        "device_name": run.device_name(gpu) or f"GPU {gpu}",
                        "size_bytes": None,
                        "iters": None,
                        "time_us_median": None,
                        "correct": True,
                        "copy_gbps": value,
                        "read_write_gbps": 2 * value,
                        "peak_memory_gbps": None,
                        "peak_source": None,
                        "fraction_of_peak": None,
                        "missing": dict.fromkeys(("size_bytes", "iters", "time_us_median"), NOT_IN_SOURCE),
                    }
                )
            )
    notes = [
        "read from nvbandwidth's device_local_copy: copy_gbps as printed (bytes copied once); read_write_gbps = "
        "2 x copy, what the memory moves and what the memory spec is compared with",
        NVB_CORRECT,
        *_skipped_notes(run, "membw"),
    ]
    return MembwDocument(**_document_keys(output, method), results=rows, notes=notes)


def _bus_id(run: NvbandwidthRun, gpu: int) -> str | None:
    return next((d.bus_id for d in run.devices if d.index == gpu), None)


def _document_keys(output: ToolOutput, method: Method) -> dict[str, object]:
    error = _cut_error(output)
    return {
        "partial": error is not None,
        "error": error,
        "method": method,
        "backend": "cuda",
        "world_size": 1,
        "versions": versions_of(output),
        "snapshot": None,
        "source": source_of(output),
    }


def _p2p_row(name: str, value: float, method: Method, **keys: object) -> P2PRow:
    return P2PRow.model_validate(
        _head(name, value, method)
        | {
            "size_bytes": None,
            "link": None,
            "nvlinks": None,
            "nvml_p2p_read": None,
            "nvml_p2p_write": None,
            "correct": True,
            "unidirectional_gbps": value,
            "theoretical_gbps": None,
            "theoretical_source": None,
            "fraction_of_theoretical": None,
            "missing": {"size_bytes": NOT_IN_SOURCE},
        }
        | keys
    )


def p2p_document(output: ToolOutput) -> P2PDocument:
    if isinstance(output.run, P2PTestRun):
        return _p2p_test_document(output, output.run)
    run = output.run
    method = method_of(output)
    rows: list[P2PRow] = []
    matrices: dict[str, list[list[float | None]]] = {}
    for t in run.testcases:
        if not _reads("p2p", t) or t.status != "passed":
            continue
        matrices[t.name] = [t.rows[r] for r in sorted(t.rows)]
        for row, cells in sorted(t.rows.items()):
            for column, value in zip(t.columns, cells, strict=False):
                if value is None or row == column:
                    continue
                src, dst = (column, row) if t.arrow == "<-" else (row, column)
                rows.append(
                    _p2p_row(
                        t.name,
                        value,
                        method,
                        src=src,
                        dst=dst,
                        mode="peer",
                        peer_access=True,
                        bidirectional_gbps=None,
                        latency_us=None,
                    )
                )
    n = max([len(run.devices), *(max(r.src, r.dst) + 1 for r in rows)], default=0)
    notes = [
        "read from nvbandwidth's device_to_device testcases: each figure as printed (GB/s, bytes copied once); "
        "matrices: each testcase's matrix as printed, row -> column as its title says; nvbandwidth measures only "
        "pairs with peer access (others N/A, or the testcase is waived); bidirectional testcases report one "
        "direction while the other runs",
        NVB_CORRECT,
        *_skipped_notes(run, "p2p"),
    ]
    return P2PDocument(**_document_keys(output, method), results=rows, notes=notes, gpus=n, matrices=matrices)


def _peer_access(run: P2PTestRun, src: int, dst: int) -> bool | None:
    """The "Device=0 CAN/CANNOT Access Peer Device=1" line, else the connectivity matrix's cell (an excerpt)."""
    if (src, dst) in run.peer_access:
        return run.peer_access[(src, dst)]
    matrix = run.connectivity or []
    cell = matrix[src][dst] if src < len(matrix) and dst < len(matrix[src]) else None
    return None if cell is None else cell == 1


def _p2p_test_document(output: ToolOutput, run: P2PTestRun) -> P2PDocument:
    """One row per ordered pair and mode (P2P=Enabled: peer, P2P=Disabled: staged) where its unidirectional
    figure was printed; the "(P2P Reads)" and CPU latency matrices are kept in ``matrices`` only."""
    method = method_of(output)
    n = run.size

    def cell(name: str, src: int, dst: int) -> float | None:
        matrix = run.matrices.get(name, [])
        return matrix[src][dst] if src < len(matrix) and dst < len(matrix[src]) else None

    rows: list[P2PRow] = []
    for mode in ("peer", "staged"):
        for src in range(n):
            for dst in range(n):
                uni = cell(f"unidirectional_gbps_{mode}", src, dst)
                if src == dst or uni is None:
                    continue
                keys: dict[str, object] = {
                    "src": src,
                    "dst": dst,
                    "mode": mode,
                    "peer_access": _peer_access(run, src, dst),
                    "bidirectional_gbps": cell(f"bidirectional_gbps_{mode}", src, dst),
                    "latency_us": cell(f"latency_us_{mode}", src, dst),
                }
                rows.append(_p2p_row(TOOL_P2P, uni, method, **keys))
    matrices = dict(run.matrices)
    if run.connectivity is not None:
        matrices["p2p_connectivity"] = run.connectivity
    notes = [
        "read from p2pBandwidthLatencyTest's output: each figure as printed (GB/s, latency in us); mode peer is "
        "its P2P=Enabled figures (writes), staged its P2P=Disabled ones (the driver stages the copy through host "
        "memory); a pair that CANNOT access its peer copies through the host in both modes",
        "matrices: every matrix as printed, diagonal included (a copy within one GPU); "
        "<figure>_<mode> as rigcheck's own bench p2p names them, cpu_latency_us_*: the latency measured from the "
        "CPU, *_reads: the (P2P Reads) variants, p2p_connectivity: 1 where peer access is possible",
        P2P_CORRECT,
    ]
    return P2PDocument(**_document_keys(output, method), results=rows, notes=notes, gpus=n, matrices=matrices)
