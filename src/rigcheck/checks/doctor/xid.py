"""Kernel-log events judged: Xid per GPU, SXid per NVSwitch, PCIe AER, the driver's other NVRM lines.

Pure: it reads ``Snapshot.kernel_events`` (already filtered by --since in the probe) and ``kernel_log``. An
event lands on the GPU whose bus id it names ("PCI:0000:03:00" and "00000000:03:00.0" are the same device);
an event for a GPU the snapshot does not hold is reported under its bus id. Severity per event comes from
facts/xid.py (the code and the line's own "Fatal"/"Nonfatal"); a GPU's finding takes its worst event.

A site file (``doctor --config``, model/site_config.py) may set a code's severity (ok/info/warn/fail, whatever the
catalog and the line say) and fail a GPU's application code past a count within a window.

Finding ids (category xid): xid.hardware, xid.warning, xid.application, xid.application-limit, xid.accepted,
xid.recovered, xid.init-failed, xid.gsp-timeout, xid.sxid-fatal, xid.sxid, xid.aer-uncorrected,
xid.aer-corrected, xid.driver-message, xid.log-unreadable, xid.none.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from rigcheck.checks.common import host_finding
from rigcheck.facts.xid import (
    ACTION_WORDS,
    CAUSED_BY,
    MEMORY_SOURCE,
    NONFATAL,
    RECOVERY_SOURCE,
    SXID_CATALOG,
    XID_CATALOG,
    bus_key,
    lookup,
    recovery_action,
    severity_of,
)
from rigcheck.model import Finding, Severity, Snapshot, gpu_subject
from rigcheck.model.kernel_log import KernelEvent

if TYPE_CHECKING:  # a site file's models are built only when `doctor --config` reads one
    from rigcheck.model.site_config import XidLimit, XidSite

FINDING_IDS: tuple[str, ...] = (
    "xid.hardware",
    "xid.warning",
    "xid.application",
    "xid.application-limit",
    "xid.accepted",
    "xid.recovered",
    "xid.init-failed",
    "xid.gsp-timeout",
    "xid.sxid-fatal",
    "xid.sxid",
    "xid.aer-uncorrected",
    "xid.aer-corrected",
    "xid.driver-message",
    "xid.driver-no-device",
    "xid.log-unreadable",
    "xid.none",
)

AER_SOURCE = "PCI Express Base Specification, Advanced Error Reporting; Linux Documentation/PCI/pcieaer-howto"
# Where the catalog summary of this project judges the driver's own failure lines (GSP timeouts, Xid 119/120).
NOTES_SOURCE = "NVIDIA Xid catalog as summarised in XID-NOTES.md (Xid 119/120; related non-Xid signals)"
DRIVER_SOURCE = "NVIDIA driver README, 'Common Problems' (NVRM messages)"
# "severity=Corrected", "=Uncorrected (Non-Fatal)", "=Uncorrectable (Fatal)" (kernels from 6.x), "=Fatal" (the
# aer_event trace): the word, then the kind in brackets.
_AER_SEVERITY = re.compile(r"severity=([A-Za-z]+)(?:\s*\(([A-Za-z-]+)\))?")
_GSP_TIMEOUT = re.compile(r"heartbeat timed out|GSP Timeout", re.IGNORECASE)
_GSP_ORDINAL = re.compile(r"\bfrom (GPU\d+) GSP\b")  # Xid 119: "waiting for RPC response from GPU4 GSP!"
_RANK = {"info": 0, "warn": 1, "fail": 2}
_SEVERITY = {"info": Severity.INFO, "warn": Severity.WARN, "fail": Severity.FAIL}


def _where(snapshot: Snapshot, bus_id: str | None) -> tuple[str, int | None, str | None]:
    """The finding's subject for a printed bus id: "GPU3" when the snapshot holds that GPU, else the bus id."""
    key = bus_key(bus_id) if bus_id else None
    for gpu in snapshot.gpus:
        if key is not None and gpu.pci_bus_id is not None and bus_key(gpu.pci_bus_id) == key:
            return gpu_subject(gpu.index), gpu.index, key
    return (f"PCI {key or bus_id}" if (key or bus_id) else "host"), None, None


def _xid_verdict(event: KernelEvent) -> Literal["fail", "warn", "info"]:
    if event.kind == "nvrm" or event.code is None:  # "fallen off the bus" without its Xid line: Xid 79
        return "fail"
    verdict = severity_of("xid", event.code, event.message)
    cause = CAUSED_BY.search(event.message)
    if event.code == 45 and cause is not None:
        # The cleanup of the channels another fault stopped: judged by the Xid it names (XID-NOTES.md: "follow the Xid
        # that caused it"), the catalog's verdict on that code; one not in the table is a warn (look it up). The
        # cited line itself may be gone from the log (rotated, cut by --since) while its cleanups remain.
        earlier = lookup("xid", int(cause.group(1)))
        return earlier.severity if earlier is not None else "warn"
    return verdict


def _causes(events: list[KernelEvent]) -> str:
    """The faults the Xid 45 lines among ``events`` name ("caused by previous Xid 149"), counted, with their
    meaning; empty when none names one."""
    cited = Counter(int(m.group(1)) for e in events if e.code == 45 and (m := CAUSED_BY.search(e.message)))
    if not cited:
        return ""
    parts = []
    for code, n in sorted(cited.items()):
        entry = lookup("xid", code)
        meaning = entry.meaning if entry is not None else "not in rigcheck's table"
        parts.append(f"{n} x Xid {code} ({meaning})")
    return f"; the Xid 45 lines name their cause: {', '.join(parts)}, judged by that fault"


_SEVERITY_WORD = re.compile(r"^(?:non-?fatal|fatal)\b,?\s*", re.IGNORECASE)


def _describe(codes: Counter[int], kind: Literal["xid", "sxid"], said: dict[int, str] | None = None) -> str:
    """Each code with its catalog meaning; a code not in the table with the line's own words where given."""
    parts = []
    for code, n in sorted(codes.items()):
        entry = lookup(kind, code)
        label = f"{'Xid' if kind == 'xid' else 'SXid'} {code}"
        if entry is not None:
            meaning = entry.meaning
        elif said and code in said:
            meaning = f"not in rigcheck's table; the line says: {said[code]}"
        else:
            meaning = "not in rigcheck's table"
        parts.append(f"{n} x {label} ({meaning})")
    return "; ".join(parts)


# Xid 79 (fallen off the bus): the catalog's reboot brings the GPU back, but the cause is the card, its seating,
# its power or the slot (NVIDIA Xid catalog: "GPU has fallen off the bus"; XID-NOTES.md).
OFF_BUS_ACTION = (
    "the GPU fell off the bus: reseat the card (and its power cables; check the PSU and any riser) — reboot the "
    "node only brings it back; if it falls off again, RMA it"
)


def _actions(events: list[KernelEvent], kind: Literal["xid", "sxid"]) -> str:
    """The catalog's action per code; a line that says non-fatal, or a cleanup caused by another Xid, says so."""
    seen: dict[tuple[int, str], str] = {}
    for e in events:
        code = e.code if e.code is not None else 79
        recovery = recovery_action(e.message) if kind == "xid" and code == 154 else None
        key = (code, recovery.label if recovery else "")
        if key in seen:
            continue
        entry = lookup(kind, code)
        words = ACTION_WORDS[entry.action] if entry else "look the code up in NVIDIA's catalog"
        if kind == "xid" and code == 79:  # the reboot only brings it back: the fault is the card or its slot
            words = OFF_BUS_ACTION
        if recovery is not None:  # the driver's own verdict, in the line
            words = (
                "the driver's recovery action is back to None: the GPU is usable again (the Xid that set the "
                "earlier action is judged by its own line)"
                if recovery.action == "none"
                else f"the driver now asks for {recovery.label}: {ACTION_WORDS[recovery.action]}"
            )
        if NONFATAL.search(e.message):
            words = f"the line says non-fatal: no action now, watch for repeats (a fatal one: {words})"
        cause = CAUSED_BY.search(e.message) if code == 45 else None
        earlier = lookup("xid", int(cause.group(1))) if cause else None
        if cause is not None:
            words = f"caused by an earlier Xid {cause.group(1)}" + (
                f" ({earlier.meaning}): find that line; its action: {ACTION_WORDS[earlier.action]}" if earlier else ""
            )
        seen[key] = f"{'Xid' if kind == 'xid' else 'SXid'} {code}: {words}"
    return "; ".join(seen[k] for k in sorted(seen))


def _span(events: list[KernelEvent]) -> str:
    times = [e.time for e in events if e.time]
    if not times:
        return "no time printed"
    return times[0] if times[0] == times[-1] else f"{times[0]} .. {times[-1]}"


_Verdict = Literal["limit", "fail", "warn", "info", "cleared", "ok"]
_BUCKETS: dict[_Verdict, tuple[str, Severity, str, str]] = {  # id, severity, what, expected
    "limit": ("xid.application-limit", Severity.FAIL, "application faults over the site's limit", "within the limit"),
    "fail": ("xid.hardware", Severity.FAIL, "GPU fault", "no Xid"),
    "warn": ("xid.warning", Severity.WARN, "to watch", "no Xid"),
    "info": ("xid.application", Severity.INFO, "application fault (the GPU is fine)", "no application faults"),
    "cleared": (
        "xid.recovered",
        Severity.INFO,
        "the driver's recovery action changed back to None (the GPU is usable again)",
        "recovery action None",
    ),
    "ok": ("xid.accepted", Severity.OK, "accepted by the site file", "codes the site accepts"),
}


def _wall(printed: str | None) -> float | None:
    """A printed wall-clock time ("Fri Aug 30 11:43:09 2024", ISO 8601) as epoch seconds; None for any other."""
    if printed is None:
        return None
    text = " ".join(printed.split())
    try:
        return datetime.strptime(text, "%a %b %d %H:%M:%S %Y").timestamp()
    except ValueError:
        pass
    try:
        return (
            datetime.fromisoformat(text.replace(",", ".")).timestamp() if text[:1].isdigit() and "-" in text else None
        )
    except ValueError:
        return None


def _uptime(printed: str | None) -> float | None:
    """Seconds since boot as dmesg prints them ("31543.449440"); None for any other time."""
    if printed is None:
        return None
    try:
        return float(printed) if printed.strip().replace(".", "", 1).isdigit() else None
    except ValueError:
        return None


def _most_within(times: list[float], window: float) -> int:
    """The most events any `window` seconds hold (a sliding window over sorted times)."""
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] > window:
            start += 1
        best = max(best, end - start + 1)
    return best


def _over_limit(events: list[KernelEvent], code: int, limit: XidLimit) -> tuple[bool, str]:
    """Whether a GPU's events of `code` pass the site's count-in-window limit, and the counting in words.

    Wall-clock times and seconds since boot are counted each in a sliding window of their own; events with no
    usable time (a syslog time without a year, none printed) cannot be placed, so they are counted all together.
    """
    wall: list[float] = []
    boot: list[float] = []
    untimed = 0
    for e in events:
        when = _wall(e.time)
        if when is not None:
            wall.append(when)
        elif (seconds := _uptime(e.time)) is not None:
            boot.append(seconds)
        else:
            untimed += 1
    most = max(_most_within(wall, limit.seconds), _most_within(boot, limit.seconds))
    parts = [f"at most {most} within {limit.window}"] if wall or boot else []
    if untimed:
        parts.append(f"{untimed} without a usable time, counted all together")
    over = most > limit.count or untimed > limit.count
    words = f"Xid {code}: {', '.join(parts)} (site limit: more than {limit.count} in {limit.window} fails)"
    return over, words


def _gpu_xids(snapshot: Snapshot, site: XidSite | None, origin: str) -> list[Finding]:
    by_subject: dict[tuple[str, int | None, str | None], list[tuple[KernelEvent, _Verdict]]] = defaultdict(list)
    # The driver prints Xid 79 and then "GPU at ... has fallen off the bus": one fault, counted once.
    has_79 = {
        bus_key(e.pci_bus_id) for e in snapshot.kernel_events if e.kind == "xid" and e.code == 79 and e.pci_bus_id
    }
    overridden: dict[int, str] = {}  # code -> "info -> fail", for the findings to say what the site file changed
    for e in snapshot.kernel_events:
        off_bus = e.kind == "nvrm" and e.pci_bus_id is not None and "fallen off the bus" in e.message
        if off_bus and bus_key(e.pci_bus_id or "") in has_79:
            continue
        if e.kind == "xid" or off_bus:
            verdict: _Verdict = _xid_verdict(e)
            code = e.code if e.code is not None else 79
            recovery = recovery_action(e.message) if code == 154 else None
            if recovery is not None and recovery.action == "none":
                verdict = "cleared"
            if site is not None and code in site.severity:
                overridden[code] = f"Xid {code} {verdict} -> {site.severity[code]}"
                verdict = site.severity[code]
            by_subject[_where(snapshot, e.pci_bus_id)].append((e, verdict))
    findings = []
    for (subject, index, bus), as_judged in by_subject.items():
        name = f"{subject} ({bus})" if bus else subject
        judged, recovered = _latest_recovery(as_judged, overridden)
        counted: dict[int, str] = {}  # code -> how its limit was counted on this GPU
        for code, limit in (site.limits if site is not None else {}).items():
            of_code = [e for e, _ in judged if e.code == code]
            if not of_code:
                continue
            over, counted[code] = _over_limit(of_code, code, limit)
            if over:
                judged = [(e, "limit" if e.code == code else v) for e, v in judged]
        for verdict, (finding_id, severity, what, expected) in _BUCKETS.items():
            events = [e for e, v in judged if v == verdict]
            if not events:
                continue
            codes = Counter(e.code if e.code is not None else 79 for e in events)
            procs = sorted({e.process for e in events if e.process})
            changed = [overridden[c] for c in sorted(codes) if c in overridden]
            limits = [counted[c] for c in sorted(codes) if c in counted]
            actions = sorted({r.label for e in events if e.code == 154 and (r := recovery_action(e.message))})
            findings.append(
                Finding(
                    id=finding_id,
                    severity=severity,
                    category="xid",
                    subject=subject,
                    gpu=index,
                    message=f"{name}: kernel log, {what}: {_describe(codes, 'xid')}"
                    + _causes(events)
                    + (f"; Xid 154's new action: {', '.join(actions)}" if actions else "")
                    + (f"; {recovered}" if verdict == "cleared" and recovered else "")
                    + (f"; processes: {', '.join(procs)}" if procs else "")
                    + (f" (severity set by the site file: {', '.join(changed)})" if changed else ""),
                    measured="; ".join([f"{len(events)} event(s), {_span(events)}", *limits]),
                    expected=expected,
                    # a recovered GPU: the None line's words only (the actions before it are done)
                    advice=_actions([e for e in events if verdict != "cleared" or _back_to_none(e)] or events, "xid"),
                    source=(f"site file {origin}: {', '.join(changed)}; " if changed else "")
                    + (f"site file {origin}: xid.limits; " if limits else "")
                    + XID_CATALOG
                    + (f"; {RECOVERY_SOURCE}" if 154 in codes else "")
                    + (f"; {MEMORY_SOURCE}" if 64 in codes else ""),
                )
            )
    return findings


def _latest_recovery(
    judged: list[tuple[KernelEvent, _Verdict]], overridden: dict[int, str]
) -> tuple[list[tuple[KernelEvent, _Verdict]], str]:
    """One GPU's events with the latest Xid 154 deciding: a later "... to 0x0 (None)" (the GPU usable again, after
    a reset or reboot) clears the Xid 154 actions before it; those after it stand. Also "recovered at <time>
    after <action>" where one was cleared. Log order is time order; a code the site file sets is left as set."""
    if 154 in overridden:
        return judged, ""
    recoveries = [(i, r) for i, (e, _) in enumerate(judged) if e.code == 154 and (r := recovery_action(e.message))]
    back = [i for i, r in recoveries if r.action == "none"]
    if not back:
        return judged, ""
    last = back[-1]
    before = [r.label for i, r in recoveries if i < last and r.action != "none"]
    if not before:
        return judged, ""
    cleared: list[tuple[KernelEvent, _Verdict]] = [
        (e, "cleared" if i <= last and e.code == 154 else v) for i, (e, v) in enumerate(judged)
    ]
    when = judged[last][0].time
    return cleared, f"recovered {'at ' + when if when else '(its line has no time)'} after {before[-1]}"


def _back_to_none(event: KernelEvent) -> bool:
    recovery = recovery_action(event.message) if event.code == 154 else None
    return recovery is not None and recovery.action == "none"


def _sxids(snapshot: Snapshot) -> list[Finding]:
    by_switch: dict[str, list[KernelEvent]] = defaultdict(list)
    for e in snapshot.kernel_events:
        if e.kind == "sxid":
            by_switch[f"{e.device + ' ' if e.device else ''}PCI {bus_key(e.pci_bus_id or '') or e.pci_bus_id}"].append(
                e
            )
    findings = []
    for switch, events in by_switch.items():
        assert all(e.code is not None for e in events)
        fatal = [e for e in events if severity_of("sxid", e.code or 0, e.message) == "fail"]
        chosen = fatal or events
        codes = Counter(e.code or 0 for e in chosen)
        # The driver's text after the code and its Fatal/Non-fatal word ("Link 04 RX Short Error Rate").
        said = {e.code or 0: _SEVERITY_WORD.sub("", e.message) for e in reversed(chosen)}
        findings.append(
            Finding(
                id="xid.sxid-fatal" if fatal else "xid.sxid",
                severity=Severity.FAIL if fatal else Severity.WARN,
                category="xid",
                subject=switch,
                message=f"NVSwitch {switch}: {'fatal ' if fatal else 'non-fatal '}{_describe(codes, 'sxid', said)}",
                measured=f"{len(chosen)} line(s), {_span(chosen)}",
                expected="no SXid",
                advice=_actions(chosen, "sxid")
                + ("; a fatal SXid stops the traffic through the switch: restart the VMs/jobs on it" if fatal else ""),
                source=SXID_CATALOG,
            )
        )
    return findings


def _aer_class(message: str) -> Literal["corrected", "uncorrected", "fatal"]:
    """An AER line's severity; a wording not known here is uncorrected, so that it never passes as corrected."""
    m = _AER_SEVERITY.search(message)
    if m is None:
        return "uncorrected"
    word, kind = m.group(1).lower(), (m.group(2) or "").lower()
    if word in ("corrected", "correctable"):
        return "corrected"
    return "fatal" if "fatal" in (word, kind) else "uncorrected"


def is_init_failure(event: KernelEvent) -> bool:
    return event.kind == "nvrm" and "RmInitAdapter failed" in event.message


def is_gsp_timeout(event: KernelEvent) -> bool:
    return event.kind == "nvrm" and _GSP_TIMEOUT.search(event.message) is not None


def _init_failures(snapshot: Snapshot) -> list[Finding]:
    """ "RmInitAdapter failed!": the driver could not bring the GPU up, so it serves nothing (the catalog's Xid 143,
    "GPU initialization failure", is the same fault where the driver prints it as an Xid)."""
    by_subject: dict[tuple[str, int | None, str | None], list[KernelEvent]] = defaultdict(list)
    for e in snapshot.kernel_events:
        if is_init_failure(e):
            by_subject[_where(snapshot, e.pci_bus_id)].append(e)
    return [
        Finding(
            id="xid.init-failed",
            severity=Severity.FAIL,
            category="xid",
            subject=subject,
            gpu=index,
            message=f"{f'{subject} ({bus})' if bus else subject}: the driver could not initialize the GPU: "
            f"{len(events)} x {events[-1].message}",
            measured=f"{len(events)} line(s), {_span(events)}",
            expected="every GPU initialized",
            advice="the GPU did not come up and serves nothing: reset it or reboot the node; if it fails again, "
            "check that this driver supports the GPU, its power and seating, and give NVIDIA support the "
            "(0x..:0x..:N) code",
            source=f"{DRIVER_SOURCE}; {XID_CATALOG} (Xid 143)",
        )
        for (subject, index, bus), events in by_subject.items()
    ]


def _gsp_covered(event: KernelEvent, snapshot: Snapshot) -> bool:
    """Whether an Xid 119/120 line reports this GSP timeout already: the driver prints the timeout's lines around
    the Xid, one fault. An Xid 119 names its GPU's ordinal ("from GPU4 GSP"); where none names one, any 119/120
    covers every GSP line."""
    gsp_xids = [e for e in snapshot.kernel_events if e.kind == "xid" and e.code in (119, 120)]
    named = {m.group(1) for e in gsp_xids if (m := _GSP_ORDINAL.search(e.message)) is not None}
    return bool(gsp_xids) and (event.device is None or not named or event.device in named)


def _gsp_timeouts(snapshot: Snapshot) -> list[Finding]:
    """GSP firmware timeouts printed without their Xid line: judged as the catalog judges Xid 119/120."""
    by_gpu: dict[str, list[KernelEvent]] = defaultdict(list)
    for e in snapshot.kernel_events:
        if is_gsp_timeout(e) and not _gsp_covered(e, snapshot):
            by_gpu[e.device or ""].append(e)
    findings = []
    for ordinal, events in by_gpu.items():
        who = (
            f"the driver's {ordinal} (its own numbering, not necessarily nvidia-smi's index; the lines print no bus id)"
            if ordinal
            else "a GPU the lines do not name"
        )
        finding = host_finding(
            "xid.gsp-timeout",
            Severity.FAIL,
            f"{who}: GSP firmware timeout without an Xid line: {len(events)} x, last: {events[-1].message}",
            measured=f"{len(events)} line(s), {_span(events)}",
            expected="no GSP timeout",
            advice=f"as for Xid 119/120: {ACTION_WORDS['reset_gpu']}; update the driver if it recurs",
            source=f"{NOTES_SOURCE}; {XID_CATALOG}",
        )
        # The subject names the driver's ordinal where the lines give one ("driver GPU6"), so that verify's doctor
        # check and a drain reason keep which GPU, though not as nvidia-smi numbers it.
        findings.append(finding.model_copy(update={"subject": f"driver {ordinal}"}) if ordinal else finding)
    return findings


def _aer(snapshot: Snapshot) -> list[Finding]:
    by_device: dict[tuple[str, int | None, str | None], list[KernelEvent]] = defaultdict(list)
    for e in snapshot.kernel_events:
        if e.kind == "aer":
            by_device[_where(snapshot, e.pci_bus_id)].append(e)
    findings = []
    for (subject, index, _), events in by_device.items():
        uncorrected = [e for e in events if _aer_class(e.message) != "corrected"]
        fatal = any(_aer_class(e.message) == "fatal" for e in uncorrected)
        chosen = uncorrected or events
        findings.append(
            Finding(
                id="xid.aer-uncorrected" if uncorrected else "xid.aer-corrected",
                severity=(Severity.FAIL if fatal else Severity.WARN) if uncorrected else Severity.INFO,
                category="xid",
                subject=subject,
                gpu=index,
                message=f"{subject}: {len(chosen)} PCIe AER {'uncorrected' if uncorrected else 'corrected'} "
                f"error(s) in the kernel log: {chosen[0].message}",
                measured=f"{len(chosen)} line(s), {_span(chosen)}",
                expected="no PCIe errors",
                advice=(
                    "an uncorrected PCIe error can take the GPU off the bus: check seating, risers and the slot, and "
                    "reboot if the GPU stopped answering"
                    if uncorrected
                    else "corrected errors cost bandwidth: watch the rate; many an hour point at a riser or slot"
                ),
                source=AER_SOURCE,
            )
        )
    return findings


# The driver loaded and took no GPU: another driver holds them, or none could be started (nv.c of NVIDIA's kernel
# modules, "The NVIDIA probe routine was not called for N device(s)", "None of the NVIDIA devices were
# initialized", and "No NVIDIA graphics adapter probed!" where its probe took no device at all). A GPU on the bus
# with no driver: not ready, whatever else the log says.
_NO_DEVICE = re.compile(
    r"probe routine was not called|None of the NVIDIA devices were initialized|No NVIDIA graphics adapter probed"
)


def _no_device(snapshot: Snapshot) -> list[Finding]:
    lines = [e for e in snapshot.kernel_events if e.kind == "nvrm" and _NO_DEVICE.search(e.message)]
    if not lines:
        return []
    held = any("not called" in e.message for e in lines)
    # "No NVIDIA graphics adapter probed!" alone: the driver took no GPU; whether one is on the bus it does not say
    none_probed = all("graphics adapter probed" in e.message for e in lines)
    what = (
        "the NVIDIA driver loaded and took no GPU"
        if none_probed
        else "NVIDIA GPUs on the PCI bus without the NVIDIA driver"
    )
    return [
        host_finding(
            "xid.driver-no-device",
            Severity.FAIL,
            f"{what}: {lines[-1].message}" + (" (another driver, such as nouveau, took them)" if held else ""),
            measured=f"{len(lines)} line(s), {_span(lines)}",
            expected="the driver probes every NVIDIA GPU",
            advice=(
                "load the NVIDIA driver on them: blacklist nouveau (and nvidiafb; `/etc/modprobe.d/`, rebuild the "
                "initramfs), reboot, then `sudo modprobe nvidia`; reinstall the driver if it still takes none"
                if held
                else "check that the GPU is on the bus (`lspci -d 10de:`; reseat it, its power cables, the slot or "
                "riser, and its BIOS setting if it is missing) and that nouveau does not hold it (`lsmod | grep "
                "nouveau`); then reload or reinstall the driver"
                if none_probed
                else "load or reinstall the driver: the NVRM lines just before it say why each GPU was refused "
                "(one this driver does not support: install a driver that does)"
            ),
            source=DRIVER_SOURCE,
        )
    ]


def _driver_messages(snapshot: Snapshot) -> list[Finding]:
    # An API mismatch the driver state holds is health.driver-version-mismatch's finding already.
    mismatch_reported = snapshot.driver is not None and snapshot.driver.nvml == "version_mismatch"
    lines = [
        e
        for e in snapshot.kernel_events
        if e.kind == "nvrm"
        and "fallen off the bus" not in e.message
        and not is_init_failure(e)
        and not is_gsp_timeout(e)
        and not _NO_DEVICE.search(e.message)
        and not (mismatch_reported and e.message.startswith("API mismatch"))
    ]
    if not lines:
        return []
    return [
        host_finding(
            "xid.driver-message",
            Severity.WARN,
            f"the NVIDIA driver logged: {lines[-1].message}"
            + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""),
            measured=f"{len(lines)} line(s), {_span(lines)}",
            expected="no driver errors",
            advice="API mismatch: reload the nvidia modules or reboot; "
            "probe routine failed or no device initialized: the driver took no GPU for the "
            "lines just before it (a GPU off the bus, one this driver does not support), fix that first",
            source=DRIVER_SOURCE,
        )
    ]


# Why the live read failed, in probe/tool_run.py's words or the tools' own, and what to do about each.
_UNREADABLE_ADVICE = (
    (
        ("timed out", "no time left"),
        "dmesg/journalctl did not answer in time (a hung journald or kernel log): look at `journalctl -k` by hand",
    ),
    (
        ("not permitted", "ermission denied", "insufficient permissions"),
        "run as root (or `sudo sysctl kernel.dmesg_restrict=0`), or add the user to the systemd-journal group",
    ),
    (("not found",), "install dmesg (util-linux) or run where journalctl is"),
)


def unreadable_advice(why: str) -> str:
    """The advice for a kernel log that could not be read, by the causes its reason names (a timeout, no
    permission, a missing tool; each that applies), then the way round them all: a saved log."""
    steps = [advice for words, advice in _UNREADABLE_ADVICE if any(w in why for w in words)]
    return "; ".join([*steps, "or save `sudo dmesg -T` and give it with --from"])


def check_xid(snapshot: Snapshot, site: XidSite | None = None, origin: str = "site file") -> list[Finding]:
    """The kernel log judged; ``site`` (a site file's [xid] table, from `doctor --config`) overrides a code's
    severity and sets count-in-window limits on application codes; ``origin`` names that file in the findings."""
    read = snapshot.kernel_log
    if read is not None and read.unreadable:
        return [
            host_finding(
                "xid.log-unreadable",
                Severity.UNKNOWN,
                f"the kernel log could not be read, so Xid/SXid events are unknown: {read.unreadable}",
                measured="kernel log not read",
                expected="dmesg or journalctl -k readable",
                advice=unreadable_advice(read.unreadable),
                source=XID_CATALOG,
            )
        ]
    findings = [
        *_gpu_xids(snapshot, site, origin),
        *_init_failures(snapshot),
        *_gsp_timeouts(snapshot),
        *_sxids(snapshot),
        *_aer(snapshot),
        *_no_device(snapshot),
        *_driver_messages(snapshot),
    ]
    if not findings and read is not None:
        since = f" since {read.since}" if read.since else ""
        older = f" ({read.before_since} older event(s) not counted)" if read.before_since else ""
        findings.append(
            host_finding(
                "xid.none",
                Severity.OK,
                f"no Xid, SXid or PCIe AER event in the kernel log{since}{older}",
                measured=f"read with {read.method}",
                source=XID_CATALOG,
            )
        )
    return findings
