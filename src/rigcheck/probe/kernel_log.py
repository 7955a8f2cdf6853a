"""The kernel log's GPU events: Xid, SXid (NVSwitch), "fallen off the bus", API mismatch, RmInitAdapter, PCIe AER.

Reads any framing of the same kernel lines: `dmesg` ("[ 4564.303884] "), `dmesg -T` ("[Sun Feb 23 16:24:18
2025] "), `dmesg --time-format iso`, `journalctl -k` ("Jun 30 11:07:05 host kernel: ", or "kernel: " alone),
syslog (its time, then the kernel's "[uptime]"), and bare kmsg lines. Xid lines come in two formats: the old
one (`NVRM: Xid (0000:03:00): 13, ...`, later `(PCI:0000:03:00)`) and the new one with `pid=..., name=...,`
(pid may print as `'<unknown>'`, or come without the name). The driver's three-line GPU messages ("The NVIDIA GPU
<bdf>" / "(PCI ID: ...) installed in this system has" / "fallen off the bus ...") are joined into one. Every other
matching line is one event, as printed; nothing else is merged, so counts are counts of lines (the catalog's
multi-line events, e.g. an SXid's (First)/Severity/Data lines, count each line). GSP firmware timeouts printed
without an Xid line ("NVRM: GPU6 _kgspRpcRecvPoll: GSP RM heartbeat timed out") are ``nvrm`` events whose
``device`` is the driver's GPU ordinal ("GPU6": the driver's numbering, not necessarily nvidia-smi's index; the
line prints no bus id, so none is guessed). A log with no event is still a kernel log when it holds the NVIDIA
driver's own lines ("NVRM: loading NVIDIA ... Kernel Module 595.58.03", nvidia-modeset/-nvlink/-uvm/-peermem):
the saved log of a healthy node.

Live, `dmesg` is read first; where the kernel restricts it (dmesg_restrict) `journalctl -k -b`; where neither can
be read, ``KernelLogRead.unreadable`` says why (the check makes it an ``unknown``, never a pass).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from rigcheck.errors import ProbeError, UsageError
from rigcheck.facts.xid import bus_key
from rigcheck.model.kernel_log import KernelEvent, KernelLogRead
from rigcheck.model.snapshot import Gpu, Missing, Snapshot, Source
from rigcheck.probe.driver import api_mismatch, driver_state_from_text
from rigcheck.probe.tool_run import run_tool

_BDF = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"
_XID = re.compile(r"NVRM: Xid \(((?:PCI:)?" + _BDF + r")\): (\d+),? ?(.*)$")
# The process, where the driver names it: `pid=1896, name=python, ...`; drivers of about R470-R510 print the pid
# alone (`pid=1896, Row Remapper: ...`).
_NEW_FORMAT = re.compile(r"pid=('?<unknown>'?|\d+),(?: name=([^,]*),)? ?(.*)$")
_SXID = re.compile(r"(?:(nvidia-nvswitch\d+): )?SXid \(((?:PCI:)?" + _BDF + r")\): (\d+),? ?(.*)$")
_OFF_BUS = re.compile(r"NVRM: (GPU (?:at )?((?:PCI:)?" + _BDF + r"):? (?:GPU )?has fallen off the bus.*)$")
# The driver's own newer wording, three lines under one timestamp in dmesg (one line each, or "#012"-joined in
# syslog): "The NVIDIA GPU <bdf>" / "(PCI ID: 10de:26b5) installed in this system has" / "fallen off the bus and
# is not responding to commands." (nv.c of NVIDIA's open kernel modules); read as one message.
_GPU_INTRO = re.compile(r"NVRM: (The NVIDIA GPU (" + _BDF + r")\b.*)$")
# "RmInitAdapter failed!" names its GPU in later drivers: "GPU 0000:0a:00.0: ", "GPU at PCI:0000:0a:00: ".
_INIT_FAILED = re.compile(r"NVRM: ((?:GPU (?:at )?((?:PCI:)?" + _BDF + r"):? )?RmInitAdapter failed.*)$")
_NVRM_OTHER = re.compile(
    r"NVRM: ((?:API mismatch|RmInitAdapter failed|GPU (?:at )?(?:PCI:)?\S+ RmInitAdapter"
    r"|The NVIDIA probe routine (?:failed|was not called)|None of the NVIDIA devices were initialized"
    r"|No NVIDIA graphics adapter probed).*)$"
)
# GSP firmware timeouts, "NVRM: GPU<n> <function>: ...": "_kgspIsHeartbeatTimedOut: Heartbeat timed out",
# "_kgspRpcRecvPoll: GSP RM heartbeat timed out", "_kgspLogRpcTimeout: *** GSP Timeout ***" (older drivers
# print no ordinal). The function name is bounded for the same reason as _AER's device.
_GSP = re.compile(r"NVRM: ((?:(GPU\d{1,3}) )?\w{1,80}: (?:.*\bheartbeat timed out|\W*GSP Timeout\b).*)$", re.I)
# The device's driver name is bounded: an unbounded \S+ is quadratic on a long run without spaces. Kernels
# 4.19-5.x print "AER: " before "PCIe Bus Error" (".../pci/pcie/aer.c" pci_err()), later ones do not.
_AER = re.compile(r"(\S{1,64} (" + _BDF + r")): (?:AER: )?(PCIe Bus Error: severity=.*)$")
_GPU_AT = re.compile(r"NVRM: GPU at (?:PCI:)?(" + _BDF + r"): (GPU-[0-9a-fA-F-]+)")

# Timestamps before the kernel text, tried in this order on the prefix.
_CTIME = re.compile(r"\[((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d{1,2} \d\d:\d\d:\d\d \d{4})\]")
_ISO = re.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)")
_SYSLOG = re.compile(r"^((?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d)")
# Seconds since boot, or since the line before ("+0.000004", `dmesg -H`; kept as printed).
_UPTIME = re.compile(r"\[ *(\+?\d+\.\d+)\]")
_DMESG_H = re.compile(r"\[((?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\d{1,2} \d\d:\d\d)\]")  # dmesg -H
# The NVIDIA driver's own lines, after a kernel-log framing (a time, "kernel:", dmesg's continuation indent):
# what makes a log without any event a kernel log. Anchored at the line's start, so that a line of another
# tool that quotes "NVRM:" further on is not taken for one.
_DRIVER_LINE = re.compile(
    r"^\s*(?:\S[^\n]{0,120}?(?:kernel:|\])\s*)?(?:NVRM: |nvidia-(?:modeset|nvlink|uvm|peermem)(?::| nv_))"
)
_LOADING = re.compile(r"NVRM: loading NVIDIA UNIX .{0,40}Kernel Module.*?\s(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)(?!\S)")


def _time(prefix: str) -> str | None:
    for pattern in (_CTIME, _ISO, _SYSLOG, _UPTIME, _DMESG_H):
        m = pattern.search(prefix)
        if m is not None:
            return m.group(1)
    return None


def _event_of(line: str) -> KernelEvent | None:
    m = _XID.search(line)
    if m is not None:
        bus, code, rest = m.group(1), int(m.group(2)), m.group(3).rstrip()
        pid: int | None = None
        process: str | None = None
        new = _NEW_FORMAT.match(rest)
        if new is not None:
            pid = int(new.group(1)) if new.group(1).isdigit() else None
            named = new.group(2)
            process = None if named is None or "<unknown>" in named else named.strip()
            rest = new.group(3).rstrip()
        return KernelEvent(
            kind="xid",
            code=code,
            pci_bus_id=bus,
            time=_time(line[: m.start()]),
            pid=pid,
            process=process,
            message=rest,
        )
    m = _SXID.search(line)
    if m is not None:
        return KernelEvent(
            kind="sxid",
            code=int(m.group(3)),
            pci_bus_id=m.group(2),
            time=_time(line[: m.start()]),
            message=m.group(4).rstrip(),
            device=m.group(1),
        )
    m = _OFF_BUS.search(line)
    if m is not None:
        return KernelEvent(kind="nvrm", pci_bus_id=m.group(2), time=_time(line[: m.start()]), message=m.group(1))
    m = _GPU_INTRO.search(line)
    if m is not None:  # one GPU's message, its lines joined (see _GPU_INTRO)
        message = re.sub(r"(?:#012)?\s*NVRM: ", " ", m.group(1)).rstrip()
        return KernelEvent(kind="nvrm", pci_bus_id=m.group(2), time=_time(line[: m.start()]), message=message)
    m = _INIT_FAILED.search(line)
    if m is not None:
        message = re.sub(r"#012(?:NVRM: )?", " ", m.group(1)).rstrip()
        return KernelEvent(kind="nvrm", pci_bus_id=m.group(2), time=_time(line[: m.start()]), message=message)
    m = _NVRM_OTHER.search(line)
    if m is not None:  # syslog writes a multi-line message as one line with "#012" for each newline
        message = re.sub(r"#012(?:NVRM: )?", " ", m.group(1)).rstrip()
        return KernelEvent(kind="nvrm", time=_time(line[: m.start()]), message=message)
    m = _GSP.search(line) if "NVRM: " in line else None
    if m is not None:
        return KernelEvent(kind="nvrm", time=_time(line[: m.start()]), message=m.group(1).rstrip(), device=m.group(2))
    m = _AER.search(line) if "PCIe Bus Error" in line else None
    if m is not None:
        return KernelEvent(
            kind="aer",
            pci_bus_id=m.group(2),
            time=_time(line[: m.start()]),
            message=m.group(3).rstrip(),
            device=m.group(1),
        )
    return None


def parse_kernel_events(text: str) -> list[KernelEvent]:
    """Every GPU-related event of a kernel log, in log order."""
    return [e for line in _joined(text.splitlines()) if (e := _event_of(line)) is not None]


def is_driver_state_event(event: KernelEvent) -> bool:
    """The kernel's "API mismatch" message: the driver's state (DriverState), not an event of a GPU."""
    return event.kind == "nvrm" and event.message.startswith("API mismatch")


def has_gpu_events(text: str) -> bool:
    """Whether the log holds an event other than the driver's API-mismatch message."""
    return any(not is_driver_state_event(e) for e in parse_kernel_events(text))


def looks_like_kernel_log(text: str) -> bool:
    """Whether the text holds a line this module reads, or a line of the NVIDIA driver itself (the detector of
    `--from`; the outputs it must not take, nvidia-smi's and Fabric Manager's, are told apart before it)."""
    lines = text.splitlines()
    return any(_DRIVER_LINE.search(line) for line in lines) or any(
        _event_of(line) is not None for line in _joined(lines)
    )


def driver_version_of(text: str) -> str | None:
    """The version the last "NVRM: loading NVIDIA UNIX ... Kernel Module  595.58.03 ..." line names (the module
    loaded last is the one running), None where no such line is."""
    found = _LOADING.findall(text)
    return found[-1] if found else None


_CONTINUED = re.compile(r"NVRM: (.*)$")
_MESSAGE_LINES = 3  # "The NVIDIA GPU ...", "(PCI ID: ...) installed in this system ...", its last words


def _joined(lines: list[str]) -> list[str]:
    """The lines, with a GPU message the driver printed over several lines ("The NVIDIA GPU <bdf>" and the lines
    that go on with it) as one line: each following NVRM line is taken until the sentence ends with a full stop,
    at most three lines in all, and never a line that is an event of its own."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if _GPU_INTRO.search(line) is None or line.rstrip().endswith(".") or "#012" in line:
            out.append(line)
            continue
        taken = 1
        while i < len(lines) and taken < _MESSAGE_LINES:
            more = _CONTINUED.search(lines[i])
            if more is None or _event_of(lines[i]) is not None:
                break
            line = f"{line.rstrip()} {more.group(1).strip()}"
            i += 1
            taken += 1
            if line.endswith("."):
                break
        out.append(line)
    return out


def snapshot_from_kernel_log(text: str, path: str | None) -> Snapshot:
    """A snapshot of what the log shows: its events, one GPU per bus id an Xid, "GPU at" or other NVRM line names
    (numbered in bus order, as nvidia-smi numbers them; every reading not in the source), so that the events
    have a GPU to land on and a log alone is not "no GPU", and the driver version its loading line names."""
    events = parse_kernel_events(text)
    uuids: dict[str, str] = {}
    for m in _GPU_AT.finditer(text):
        key = bus_key(m.group(1))
        if key is not None:
            uuids.setdefault(key, m.group(2))
    keys = set(uuids)
    for e in events:
        if e.kind in ("xid", "nvrm") and e.pci_bus_id and (key := bus_key(e.pci_bus_id)) is not None:
            keys.add(key)
    gpus: list[Gpu] = []
    for index, key in enumerate(sorted(keys)):
        gpu = Gpu(index=index, pci_bus_id=key, uuid=uuids.get(key))
        gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
        gpus.append(gpu)
    snapshot = Snapshot(
        source=Source(kind="kernel-log", path=path),
        gpus=gpus,
        kernel_events=events,
        kernel_log=KernelLogRead(method="file"),
        gpu_absent_reason=None if gpus else "the kernel log names no GPU",
    )
    snapshot.software.driver_version = driver_version_of(text)
    if api_mismatch(text) is not None:  # the kernel refused a client of another version: the driver's state
        snapshot.driver = driver_state_from_text(text)
    return snapshot


# --- live -------------------------------------------------------------------------------------------------------

Runner = Callable[[list[str]], tuple[int, str, str]]

# All the kernel-log readers together (dmesg, then journalctl -k where dmesg fails) get this long: a hung one costs
# a run at most this, not this much per reader. The first gets at most half, so that the fallback still has time.
READ_BUDGET_S = 20.0


def _budgeted_runner() -> Runner:
    """A runner sharing :data:`READ_BUDGET_S` among its calls (probe/tool_run.py: each tool in its own process
    group, killed with it at its deadline)."""
    deadline = time.monotonic() + READ_BUDGET_S
    calls = 0

    def run(argv: list[str]) -> tuple[int, str, str]:
        nonlocal calls
        left = deadline - time.monotonic()
        calls += 1
        return run_tool(argv, left / 2 if calls == 1 else left)

    return run


# ISO times parse for --since; dmesg's default (seconds since boot) would not.
DMESG = ["dmesg", "--time-format", "iso"]
JOURNAL = ["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"]


def read_live(run: Runner | None = None) -> tuple[list[KernelEvent], KernelLogRead]:
    """This boot's events from dmesg, else the kernel journal; where neither reads, no events and the reason
    (each tool's own words, or probe/tool_run.py's "timed out", "not found", "permission denied").
    ``run``: by default both within one :data:`READ_BUDGET_S`."""
    run = run or _budgeted_runner()
    code, out, err = run(DMESG)
    if code == 0:
        return parse_kernel_events(out), KernelLogRead(method="dmesg")
    dmesg_why = (err.strip().splitlines() or [f"exit status {code}"])[-1]
    code, out, err = run(JOURNAL)
    refused = "insufficient permissions" in (out + err) or "No journal files" in (out + err)
    if code == 0 and not refused:
        return parse_kernel_events(out), KernelLogRead(method="journalctl -k")
    journal_why = (err.strip().splitlines() or out.strip().splitlines() or [f"exit status {code}"])[0]
    dmesg_why, journal_why = dmesg_why.removeprefix("dmesg: "), journal_why.removeprefix("journalctl: ")
    return [], KernelLogRead(method="dmesg", unreadable=f"dmesg: {dmesg_why}; journalctl -k: {journal_why}")


# --- --since ----------------------------------------------------------------------------------------------------

_RELATIVE = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(text: str, now: datetime) -> datetime | None:
    """--since as a local time: "boot" (None: everything), "2h"/"30m"/"1d" before ``now``, or an ISO time."""
    value = text.strip()
    if value.lower() in ("", "boot"):
        return None
    m = _RELATIVE.match(value)
    if m is not None:
        return now - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    try:
        return _naive_local(datetime.fromisoformat(value))
    except ValueError:
        raise UsageError(
            f"--since {text!r}: expected 'boot', a duration (30m, 2h, 1d) or a time (2025-02-23 16:00)"
        ) from None


def _naive_local(when: datetime) -> datetime:
    return when.astimezone().replace(tzinfo=None) if when.tzinfo is not None else when


def event_time(printed: str | None) -> datetime | None:
    """A printed time as a local time; None where it cannot say when (uptime seconds, syslog without a year)."""
    if printed is None:
        return None
    m = _CTIME.fullmatch(f"[{printed}]")
    if m is not None:
        return datetime.strptime(" ".join(printed.split()), "%a %b %d %H:%M:%S %Y")
    if _ISO.fullmatch(printed):
        try:
            return _naive_local(datetime.fromisoformat(printed.replace(",", ".")))
        except ValueError:
            return None
    return None


def apply_since(snapshot: Snapshot, since: datetime | None, given: str | None) -> None:
    """Drop the events older than ``since`` (counted in ``kernel_log.before_since``); an event without a usable
    time is kept, so a fault is never hidden by a time rigcheck cannot read."""
    if since is None or (snapshot.kernel_log is None and not snapshot.kernel_events):
        return
    read = snapshot.kernel_log or KernelLogRead(method="file")
    kept = [e for e in snapshot.kernel_events if (t := event_time(e.time)) is None or t >= since]
    read.before_since += len(snapshot.kernel_events) - len(kept)
    read.since = given
    snapshot.kernel_events = kept
    snapshot.kernel_log = read


# --- monitor: Xid events since it started --------------------------------------------------------------------


class XidCounter:
    """Counts the Xid lines that appear in the kernel log after ``start()``, per (GPU, code), for `monitor`'s
    Prometheus endpoint. Each call reads the log again (dmesg, else the kernel journal: ``read_live``) and counts
    the lines it has not seen: a line is known by its time, bus id, code and text (dmesg's ISO times carry
    microseconds), and a line printed twice alike counts twice. Lines that scroll out of the ring buffer are
    simply not seen again, so the counts never go down. ``gpus`` maps a bus id as NVML prints it to the GPU's
    index, and the ``pci_bus_id`` label is then NVML's spelling (as on the NVLink series); an Xid on another bus
    id is counted under that bus id alone (``gpu`` empty).

    A log that cannot be read raises ProbeError (the exporter then leaves the series out)."""

    def __init__(self, gpus: dict[int, str], run: Runner | None = None) -> None:
        self._run = run  # None: each read within its own READ_BUDGET_S
        self._gpus = dict(gpus)
        self._gpu_of = {key: index for index, bus in gpus.items() if (key := bus_key(bus)) is not None}
        self._seen: dict[tuple[str | None, str | None, int | None, str], int] = {}
        self._counts: dict[tuple[str, str, int], int] = {}  # (gpu, bus id, code) -> Xid lines since start
        self._started = False

    def _read(self) -> dict[tuple[str | None, str | None, int | None, str], int]:
        events, how = read_live(self._run)
        if how.unreadable is not None:
            raise ProbeError(f"kernel log unreadable: {how.unreadable}")
        now: dict[tuple[str | None, str | None, int | None, str], int] = {}
        for e in events:
            if e.kind == "xid":
                key = (e.time, e.pci_bus_id, e.code, e.message)
                now[key] = now.get(key, 0) + 1
        return now

    def start(self) -> None:
        """What the log holds now: not counted. A log unreadable now is tried again on the next read."""
        try:
            self._seen = self._read()
            self._started = True
        except ProbeError:
            self._started = False

    def __call__(self) -> list[tuple[dict[str, str], float]]:
        now = self._read()
        if not self._started:  # the log could not be read at start: count from this first good read
            self._seen, self._started = now, True
        for key, n in now.items():
            new = n - self._seen.get(key, 0)
            if new <= 0:
                continue
            self._seen[key] = n
            _, bus, code, _ = key
            norm = bus_key(bus) if bus else None
            index = self._gpu_of.get(norm) if norm is not None else None
            printed = self._gpus[index] if index is not None else (norm or bus or "")
            label = (str(index) if index is not None else "", printed, code if code is not None else -1)
            self._counts[label] = self._counts.get(label, 0) + new
        return [
            ({"gpu": gpu, "pci_bus_id": bus, "code": str(code)}, float(n))
            for (gpu, bus, code), n in sorted(self._counts.items())
        ]
