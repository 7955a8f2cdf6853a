"""The lines of a burn's counters and peer comparisons, and of what `rigcheck burn` checks beyond its trace (the
fingerprint, the kernel log: issue 28), shared by the terminal, Markdown and HTML renderings (render.py, html.py)."""

from __future__ import annotations

from rigcheck.model.burn import BurnDocument, GpuBurnAnalysis
from rigcheck.model.finding import Finding
from rigcheck.model.kernel_log import KernelEvent
from rigcheck.units import figure, fmt, plural


def under_load(a: GpuBurnAnalysis) -> list[str]:
    """The error counters' rates and the comparison with the peers (issue 28), where the trace gives them: a line
    each, none for a trace without them."""
    counters = [
        (a.ecc_corrected_per_s, "corrected ECC {}/s"),
        (a.ecc_uncorrected_new, "uncorrected ECC {} new"),
        (a.pcie_replays_per_min, "PCIe replays {}/min"),
        (a.nvlink_crc_per_s_max, "NVLink CRC {}/s (worst link)"),
        (a.nvlink_replay_new, "NVLink replays {} new"),
        (a.nvlink_recovery_new, "NVLink recoveries {} new"),
    ]
    lines: list[str] = []
    read = [text.format(figure(value)) for value, text in counters if value is not None]
    if read:
        lines.append("error counters while loaded: " + ", ".join(read))
    if a.peers:
        against = [
            f"{what} {fmt(value, '%', 1)}"
            for value, what in ((a.sm_clock_vs_peers_percent, "SM clock"), (a.power_vs_peers_percent, "power"))
            if value is not None
        ]
        peers = f"{plural(len(a.peers), 'peer')} (GPU {', '.join(map(str, a.peers))})"
        lines.append(f"against its {peers}: {', '.join(against) or 'no clock or power to compare'}")
    return lines


def finding_lines(f: Finding) -> tuple[str, str | None]:
    """A finding of the counters or the peers: its line, and its advice."""
    return f"{f.severity.value.upper()} {f.id}: {f.message}", f.advice


# --- what `rigcheck burn` checks beyond its trace: the fingerprint before the load, the kernel log around it ---------
EVENTS_SHOWN = 3  # a GPU's new kernel-log lines printed in full; the rest counted


def _event_text(e: KernelEvent) -> str:
    if e.kind in ("xid", "sxid"):
        return f"{'Xid' if e.kind == 'xid' else 'SXid'} {e.code}: {e.message}"
    return f"PCIe AER: {e.message}" if e.kind == "aer" else e.message


def _events_text(events: list[KernelEvent]) -> str:
    shown = "; ".join(_event_text(e) for e in events[:EVENTS_SHOWN])
    more = f"; and {len(events) - EVENTS_SHOWN} more" if len(events) > EVENTS_SHOWN else ""
    return f"{plural(len(events), 'new line')}: {shown}{more}"


def run_checks(doc: BurnDocument, a: GpuBurnAnalysis) -> list[str]:
    """One GPU's fingerprint verdict and its kernel-log lines new during the run, where the burn has them."""
    lines: list[str] = []
    verdict = next((g for g in doc.fingerprint.gpus if g.index == a.index), None) if doc.fingerprint else None
    if verdict is not None and verdict.verdict != "fail":  # a fail is the GPU's finding, printed with its advice
        lines.append(f"fingerprint before the load: {verdict.verdict}: {verdict.text}")
    if a.kernel_events is not None:
        news = _events_text(a.kernel_events) if a.kernel_events else "no new Xid, PCIe AER or driver line"
        lines.append(f"kernel log during the run: {news}")
    return lines


def run_notes(doc: BurnDocument) -> list[tuple[str, Finding | None]]:
    """The run's lines of no single GPU: a fingerprint not run or cut short, a kernel log not read, lines on no GPU
    of the burn with the doctor's findings on them (each line with its finding, if it is one)."""
    notes: list[tuple[str, Finding | None]] = []
    checked = doc.fingerprint
    if checked is not None and checked.skipped:
        notes.append((f"fingerprint: not run ({checked.skipped})", None))
    elif checked is not None and checked.error:
        notes.append((f"fingerprint: {checked.error}", None))
    log = doc.kernel_log
    if log is not None and log.unreadable:
        notes.append((f"kernel log: lines new during the run unknown: {log.unreadable}", None))
    elif log is not None and log.other_events:
        notes.append((f"kernel log during the run, on no GPU of the burn: {_events_text(log.other_events)}", None))
    if log is not None:
        notes += [(finding_lines(f)[0], f) for f in log.findings]
    return notes
