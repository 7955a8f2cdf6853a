"""The kernel log around `rigcheck burn` (issue 28): read before the run and after it, the lines that appeared
meanwhile (Xid, SXid, PCIe AER, the driver's NVRM lines) landed on the GPU whose bus id they name and judged by the
doctor's rules (rigcheck.checks.doctor.xid: an Xid of a fatal class, an uncorrectable fatal AER, a fatal SXid fail).

A GPU that fails under load often says why only there: Xid 79 (fallen off the bus), 48 or 63/64 (memory), 74
(NVLink), 13/31/43 of the load itself, an AER burst on its link. A line is new when the log read after the run holds
it more times than the one before did: a line is known by its kind, time, bus id, code and text (dmesg's ISO times
carry microseconds), and a line that scrolled out of the ring buffer meanwhile is simply not read again. The reader
is given (the CLI's is rigcheck.probe.kernel_log.read_live: dmesg, else `journalctl -k`); a log that cannot be read
before or after the run, or that was read by two different tools, gives no lines, with the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from rigcheck.checks.doctor.xid import check_xid
from rigcheck.facts.xid import bus_key
from rigcheck.model.burn import BurnKernelLog, GpuBurnAnalysis
from rigcheck.model.finding import Finding, Severity
from rigcheck.model.kernel_log import KernelEvent, KernelLogRead
from rigcheck.model.snapshot import Gpu, Snapshot, Source

KernelLogReader = Callable[[], tuple[list[KernelEvent], KernelLogRead]]
Read = tuple[list[KernelEvent], KernelLogRead]
_Key = tuple[str, str | None, str | None, int | None, str, str | None]


def _key(e: KernelEvent) -> _Key:
    return (e.kind, e.time, e.pci_bus_id, e.code, e.message, e.device)


def new_events(before: Sequence[KernelEvent], after: Sequence[KernelEvent]) -> list[KernelEvent]:
    """The events of ``after`` beyond those ``before`` held (counted as a multiset: a line printed twice alike and
    read once before is new once), in log order."""
    left = Counter(_key(e) for e in before)
    out: list[KernelEvent] = []
    for e in after:
        k = _key(e)
        if left[k] > 0:
            left[k] -= 1
        else:
            out.append(e)
    return out


def unreadable(before: Read | None, after: Read | None) -> str | None:
    """Why the lines new during the run cannot be known (None: they can)."""
    if before is None or after is None:
        return "the run was interrupted before the log was read again"
    for when, (_, how) in (("before", before), ("after", after)):
        if how.unreadable is not None:
            return f"the kernel log could not be read {when} the run: {how.unreadable}"
    if before[1].method != after[1].method:
        return (
            f"the kernel log was read with {before[1].method} before the run and {after[1].method} after it: "
            "their lines cannot be matched"
        )
    return None


def judge_run_log(
    analyses: Sequence[GpuBurnAnalysis], bus_ids: Mapping[int, str], before: Read | None, after: Read | None
) -> BurnKernelLog:
    """Each GPU's new lines (``kernel_events``) and the doctor's findings on them (added to its ``findings``); the
    lines on no GPU of the burn and their findings, or why none are known, in the document's ``kernel_log``."""
    why = unreadable(before, after)
    if why is not None or before is None or after is None:
        return BurnKernelLog(method=None, unreadable=why, other_events=[], findings=[])
    method = after[1].method
    events = new_events(before[0], after[0])
    gpus = [Gpu(index=i, pci_bus_id=bus_key(bus) or bus) for i, bus in sorted(bus_ids.items())]
    index_of = {g.pci_bus_id: g.index for g in gpus}
    by_gpu: dict[int, list[KernelEvent]] = {a.index: [] for a in analyses}
    other: list[KernelEvent] = []
    for e in events:
        index = index_of.get(bus_key(e.pci_bus_id) if e.pci_bus_id else None)
        if index is not None and index in by_gpu and e.kind != "sxid":
            by_gpu[index].append(e)
        else:
            other.append(e)
    snapshot = Snapshot(
        source=Source(kind="none"), gpus=gpus, kernel_events=events, kernel_log=KernelLogRead(method=method)
    )
    found = [_during_run(f) for f in check_xid(snapshot) if f.severity is not Severity.OK]
    for a in analyses:
        a.kernel_events = by_gpu.get(a.index, [])
        a.findings += [f for f in found if f.gpu == a.index]
    return BurnKernelLog(
        method=method,
        unreadable=None,
        other_events=other,
        findings=[f for f in found if f.gpu is None or f.gpu not in by_gpu],
    )


def _during_run(f: Finding) -> Finding:
    return f.model_copy(update={"message": f"new in the kernel log during the burn: {f.message}"})
