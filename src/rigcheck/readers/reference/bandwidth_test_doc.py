"""A bandwidthTest output (readers/reference/bandwidth_test.py) as rigcheck's bench documents: its host-to-device and
device-to-host tables as `bench hostlink` rows, its device-to-device tables as `bench membw` rows, each figure
as printed at its largest transfer size (shmoo and range mode: the converged end of the sweep; every size stays
in the row's ``sizes``). Nothing here knows a ceiling: rigcheck.checks.reference.judge judges the rows as it
judges nvbandwidth's.

Row names say what the figure is: ``bandwidthTest_h2d_pinned`` (cudaMemcpyAsync from pinned memory: a copy
engine, what nvbandwidth's host_to_device_memcpy_ce times), ``bandwidthTest_h2d_pageable`` (cudaMemcpy from
malloc'd memory, staged by the driver: slower by design, never judged), ``bandwidthTest_d2d``.
"""

from __future__ import annotations

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
    Versions,
)
from rigcheck.readers.reference.bandwidth_test import TOOL, BandwidthTestRun, BwTable
from rigcheck.readers.reference.reference_import import imported_head

NOT_IN_SOURCE = "not_in_source"
CORRECT = (
    "correct: bandwidthTest does not check the copied data (its Result line reports CUDA errors only); rigcheck "
    "marks no row wrong"
)
SUMMED = (
    "bandwidthTest ran {n} devices one after the other and printed the SUM of their figures for each size: each "
    "GPU's row holds that sum / {n}, their mean, so one slow GPU is diluted; run it with --device=N per GPU to "
    "judge each"
)
MB_NOTE = (
    "this output prints MB/s (older samples): converted as those samples computed it, bytes x 1024 / (ms x 2^20) "
    "= bytes/s / 1,024,000; the CUDA SDK before them divided by 2^20 (2.4% apart)"
)


def method() -> Method:
    return Method(
        method_version=TOOL,
        warmup=0,
        repeats=1,
        statistic=f"as printed by {TOOL} at its largest transfer size (its own mean of 100 copies)",
        timer="cuda_events",
    )


def source(run: BandwidthTestRun, path: str) -> ImportedSource:
    devices = [ImportedDevice(device=d.index, name=d.name) for d in run.devices]
    return ImportedSource(tool=TOOL, file=path, ranks=len(devices) or None, devices=devices)


def _head(name: str, value: float, table: BwTable) -> dict[str, object]:
    return imported_head(name, value, TOOL, [size for size, _ in table.rows])


def _gpus(run: BandwidthTestRun, table: BwTable) -> list[int]:
    """The GPUs a table's figure is of: the devices listed (one sum over them), else 0..n-1."""
    listed = [d.index for d in run.devices]
    return listed if len(listed) == table.devices else list(range(table.devices))


def _keys(run: BandwidthTestRun, path: str) -> dict[str, object]:
    error = "input ends early inside a table: the figures printed before the cut are kept" if run.truncated else None
    if run.result == "FAIL":
        error = "bandwidthTest printed Result = FAIL (a CUDA error during the copies): the figures before it are kept"
    return {
        "partial": error is not None,
        "error": error,
        "method": method(),
        "backend": "cuda",
        "world_size": 1,
        "versions": Versions(rigcheck=__version__, python=None, torch=None, cuda=None, nccl=None),
        "snapshot": None,
        "source": source(run, path),
    }


def _notes(run: BandwidthTestRun, tables: list[BwTable]) -> list[str]:
    notes = [CORRECT]
    if any(t.unit == "MB/s" for t in tables):
        notes.append(MB_NOTE)
    notes += sorted({SUMMED.format(n=t.devices) for t in tables if t.devices > 1})
    if any(len(t.rows) > 1 for t in tables):
        notes.append(f"{run.mode or 'range'} mode: each row is the largest size's figure; sizes lists the sweep")
    if run.result is None:
        notes.append("no 'Result =' line in the input (a paste that left it out, or a cut end)")
    return notes


def _tables(run: BandwidthTestRun, kinds: set[str]) -> list[BwTable]:
    return [t for t in run.tables if t.kind in kinds]


def hostlink_document(run: BandwidthTestRun, path: str) -> HostlinkDocument:
    tables = _tables(run, {"h2d", "d2h"})
    rows = []
    for t in tables:
        largest = t.largest
        assert largest is not None
        size, total = largest
        gbps = total / t.devices
        name = f"{TOOL}_{t.kind}_{t.memory}" + ("_wc" if t.write_combined else "")
        for gpu in _gpus(run, t):
            rows.append(
                HostlinkRow.model_validate(
                    _head(name, gbps, t)
                    | {
                        "gpu": gpu,
                        "device_name": run.device_name(gpu) or f"GPU {gpu}",
                        "pci_bus_id": None,
                        "direction": t.kind,
                        "memory": t.memory,
                        "numa_bound": False,
                        "cpus": None,
                        "local_cpus": None,
                        "local_cpus_source": "unknown",
                        "numa_node": None,
                        "size_bytes": size,
                        "iters": None,
                        "time_us_median": None,
                        "pcie_link": None,
                        "pcie_theoretical_gbps": None,
                        "correct": True,
                        "gbps": gbps,
                        "fraction_of_pcie": None,
                        "missing": dict.fromkeys(("iters", "time_us_median"), NOT_IN_SOURCE),
                    }
                )
            )
    notes = [
        "read from bandwidthTest's output: pinned rows are cudaMemcpyAsync copies (a copy engine) from "
        "cudaHostAlloc'd memory, judged as nvbandwidth's *_memcpy_ce testcases are; pageable rows are cudaMemcpy "
        "from malloc'd memory (staged by the driver), not judged; the CPUs were not bound by rigcheck (numactl "
        "around the run, if any, is not in the output)",
        *_notes(run, tables),
    ]
    return HostlinkDocument(**_keys(run, path), results=rows, notes=notes)


def membw_document(run: BandwidthTestRun, path: str) -> MembwDocument:
    tables = _tables(run, {"d2d"})
    rows = []
    for t in tables:
        largest = t.largest
        assert largest is not None
        size, total = largest
        read_write = total / t.devices  # bandwidthTest counts a device copy's bytes twice: read and write
        for gpu in _gpus(run, t):
            rows.append(
                MembwRow.model_validate(
                    _head(f"{TOOL}_d2d", read_write / 2, t)
                    | {
                        "rank": gpu,
                        "gpu": gpu,
                        "device_name": run.device_name(gpu) or f"GPU {gpu}",
                        "size_bytes": size,
                        "iters": None,
                        "time_us_median": None,
                        "correct": True,
                        "copy_gbps": read_write / 2,
                        "read_write_gbps": read_write,
                        "peak_memory_gbps": None,
                        "peak_source": None,
                        "fraction_of_peak": None,
                        "missing": dict.fromkeys(("iters", "time_us_median"), NOT_IN_SOURCE),
                    }
                )
            )
    notes = [
        "read from bandwidthTest's Device to Device table: it prints 2 x bytes / time (the read and the write), "
        "read_write_gbps here; copy_gbps is half of it; its 32 MB quick-mode copy is small enough for part of it "
        "to stay in a large L2 cache",
        *_notes(run, tables),
    ]
    return MembwDocument(**_keys(run, path), results=rows, notes=notes)


# Healthy GPUs' bandwidthTest Device to Device figures (tests/fixtures/bandwidth-test) against their memory spec:
# T4 241.4 of 320 (75%), A10 467.6 of 600 (78%), P100 454.5 of 732 (62%): its 32 MB cudaMemcpy loop is not the
# large copy kernel verify's membw band was set on, so the band would fail healthy GPUs.
DEVICE_COPY_UNJUDGED = (
    "bandwidthTest's Device to Device figure (a 32 MB cudaMemcpy loop) is not held to verify's membw band: "
    "healthy GPUs read 62-78% of their memory spec with it (T4 75%, A10 78%, P100 62%, tests/fixtures/"
    "bandwidth-test), under the band's floor; measure with `rigcheck bench membw` or nvbandwidth's "
    "device_local_copy to judge the memory"
)


def unjudge_device_copies(doc: MembwDocument) -> MembwDocument:
    """The judged document with its membw verdicts made unjudged, the figure and the reason kept (see
    DEVICE_COPY_UNJUDGED): called on a bandwidthTest membw document after rigcheck.checks.reference.judge."""
    judged = doc.judgement or []
    kept = [
        j.model_copy(
            update={
                "verdict": "unjudged",
                "floor": None,
                "source": None,
                "margin_pct": None,
                "reason": DEVICE_COPY_UNJUDGED,
            }
        )
        for j in judged
    ]
    return doc.model_copy(update={"judgement": kept, "notes": [*doc.notes, DEVICE_COPY_UNJUDGED]})


def bandwidth_test_document(
    command: Literal["p2p", "membw", "hostlink"], run: BandwidthTestRun, path: str
) -> HostlinkDocument | MembwDocument:
    """The command's document, or a one-line error naming the command that reads this file."""
    if command == "p2p":
        raise InputError(
            "holds bandwidthTest output (host and device-local copies), no GPU pair: read it with "
            "`rigcheck bench hostlink --from` (and `bench membw --from` for its device-to-device table)",
            path=path,
        )
    wanted = {"hostlink": {"h2d", "d2h"}, "membw": {"d2d"}}[command]
    if not _tables(run, wanted):
        held = ", ".join(sorted({t.kind for t in run.tables}))
        other = "membw" if command == "hostlink" else "hostlink"
        raise InputError(
            f"holds bandwidthTest's {held} table(s) only, none that `bench {command}` reads: read it with "
            f"`rigcheck bench {other} --from`",
            path=path,
        )
    return hostlink_document(run, path) if command == "hostlink" else membw_document(run, path)
