"""Parse ``nvidia-smi -q`` text (also ``-a``, ``-q -d ...`` and pasted fragments) into a Snapshot.

The text is an indented tree of ``Key : value`` lines and section headers. It is read into
entries ``(path, value, line)`` per GPU, where ``path`` is the chain of lower-cased section names
down to the key. Fields are then looked up by the *end* of their path (``("pcie generation",
"max")``), so a fragment cut out with ``grep -A8`` still yields what it holds, whatever depth it
started at. Text with no ``GPU 0000...`` header is read as one GPU of index 0.

Both old and new layouts are read: "Clocks Throttle Reasons" and "Clocks Event Reasons",
"Power Readings" and "GPU Power Readings" (never the memory or module readings), absolute
temperature thresholds and the T.Limit offsets (made absolute from the current temperature and
the T.Limit margin), old per-location ECC counters and the newer SRAM/DRAM totals.

``-q`` does not number its GPUs: a GPU's index is its position in the file. ``-q`` prints no
NVLink state in the formats we know of (drivers 331 to 590 print a "Fabric" block at most);
``nvlinks`` stays NOT_IN_SOURCE (read ``nvidia-smi nvlink -s`` for it).

A cut file never gives a smaller number. The input ends early when its last line has no line end, or
when the last GPU section stops short: a full ``-q`` ends every GPU with "Processes" ("Compute
Processes" before ~R375), and a ``-d`` filtered one repeats the first GPU's sections. In the section
the input ends inside, a value on the cut line is kept only with its unit, and a value not reached
is TRUNCATED unless its section was complete before the cut; a note (``INPUT_ENDS_EARLY``) says so.
A GPU whose readings are all errors (``Unknown Error``, ``GPU is lost``) is a placeholder with
``read_error`` (unreadable.py), and so is one nvidia-smi could not open ("Unable to determine the
device handle").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import INPUT_ENDS_EARLY, Diagnostic, Gpu, GpuProcess, Missing, Snapshot, Source
from rigcheck.readers.smi.ansi import strip_ansi
from rigcheck.readers.smi.build import COUNTERS, ECC, REASONS, GpuFields, build_gpu
from rigcheck.readers.smi.processes import from_text_entries, mark_corrupt_inforoms, set_processes
from rigcheck.readers.smi.unreadable import add_handle_errors, handle_errors, mark_unreadable, placeholder
from rigcheck.readers.smi.values import (
    COUNTER_BY_LABEL,
    REASON_BY_LABEL,
    Raw,
    absent_reason,
    check_text,
    finish_missing,
    na_reason,
    parse_int,
    text_lines,
)

SOURCE = "smi-q"

_GPU_HEADER = re.compile(r"^\s*GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_CUT_GPU_HEADER = re.compile(r"^GPU(\s+[0-9A-Fa-f:.]*)?$")  # a GPU header the input ends inside
_KEY_VALUE = re.compile(r"^([^:]*?)\s*:\s*(.*?)\s*$")
_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")
# Sections that repeat per-GPU keys for something else: MIG devices and processes.
_FOREIGN = {"mig devices", "processes", "accounted processes"}


# The last top-level key of every GPU in a full `-q` (before ~R375: "Compute Processes").
_LAST_KEYS = {"processes", "compute processes"}


@dataclass(frozen=True)
class _Entry:
    path: tuple[str, ...]
    value: str | None
    line: int
    cut: bool = False  # on the last line, which has no line end


@dataclass
class _Section:
    """The entries of one GPU (or of the file head), in file order."""

    header_line: int | None = None
    bus_id: str | None = None
    entries: list[_Entry] = field(default_factory=list)
    closed: set[str] = field(default_factory=set)  # keys and sections a later line at their depth ended
    cut: bool = False  # the input ends inside this section

    def top_keys(self) -> list[str]:
        return [e.path[0] for e in self.entries if len(e.path) == 1]

    def ends_whole(self) -> bool:
        """It holds the last key of a full `-q` GPU section: nothing we read comes after it."""
        return bool(_LAST_KEYS & set(self.top_keys()))

    def find(self, *suffix: str) -> Raw | None:
        """The first value whose path ends with ``suffix`` (outside MIG device and process sections).

        Where the text prints a whole section as one N/A value ("Remapped Rows : N/A"), that value
        is returned for every key of the section.
        """
        n = len(suffix)
        for entry in self.entries:
            if entry.value is not None and entry.path[-n:] == suffix and not _FOREIGN & set(entry.path):
                return Raw(entry.value, entry.line, entry.cut)
        for k in range(n - 1, 0, -1):
            head = suffix[:k]
            for entry in self.entries:
                if (
                    entry.value is not None
                    and entry.path[-k:] == head
                    and na_reason(entry.value) is not None
                    and not _FOREIGN & set(entry.path)
                ):
                    return Raw(entry.value, entry.line, entry.cut)
        return None

    def has_section(self, name: str) -> bool:
        return any(e.path[-1] == name for e in self.entries)


def _normalize(key: str) -> str:
    return " ".join(key.strip().lower().split())


def _read_sections(text: str) -> tuple[_Section, list[_Section]]:
    """Split the text into the file head and one section per GPU header, building entry paths."""
    lines = text_lines(text)
    cut_line = len(lines) if lines and not strip_ansi(text).endswith(("\n", "\r")) else None
    indents = [
        len(raw.expandtabs(8)) - len(raw.expandtabs(8).lstrip())
        for raw in lines
        if raw.strip() and not _GPU_HEADER.match(raw)
    ]
    flat = bool(indents) and max(indents) == 0  # indentation lost in a paste: one level of sections

    head = _Section()
    gpus: list[_Section] = []
    current = head
    stack: list[tuple[int, str]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.expandtabs(8).rstrip()
        stripped = line.strip()
        if not stripped or stripped == "--" or _BANNER.match(stripped):
            continue
        header = _GPU_HEADER.match(line)
        if header is not None or (number == cut_line and _CUT_GPU_HEADER.match(line)):
            current.closed.update(k for _, k in stack)
            current = _Section(header_line=number, bus_id=header.group(1) if header else None)
            current.cut = header is None
            gpus.append(current)
            stack = []
            continue
        indent = len(line) - len(line.lstrip())
        match = _KEY_VALUE.match(stripped)
        if match is not None and match.group(1):
            key, value = _normalize(match.group(1)), match.group(2)
        else:
            key, value = _normalize(stripped), None
        cut = number == cut_line
        if flat:
            if value is None:
                current.closed.update(k for _, k in stack)
                stack = [(0, key)]
                current.entries.append(_Entry((key,), None, number, cut))
            else:
                current.entries.append(_Entry((*(k for _, k in stack), key), value, number, cut))
            continue
        while stack and stack[-1][0] >= indent:
            current.closed.add(stack.pop()[1])
        entry_path = (*(k for _, k in stack), key)
        current.entries.append(_Entry(entry_path, value, number, cut))
        stack.append((indent, key))
    last = gpus[-1] if gpus else head
    last.cut = last.cut or _ends_early(last, gpus, cut_line)
    return head, gpus


def _ends_early(last: _Section, gpus: list[_Section], cut_line: int | None) -> bool:
    """Whether the input ends inside ``last`` (the last GPU section, or a headerless fragment)."""
    if last.ends_whole():
        return False
    if cut_line is not None and any(e.line == cut_line for e in last.entries):
        return True
    if "product name" in last.top_keys() or any(g.ends_whole() for g in gpus):
        return True  # a full `-q` GPU section always ends with Processes
    if len(gpus) > 1:  # `-q -d ...`: every GPU prints the same sections
        first, mine = gpus[0].top_keys(), last.top_keys()
        return len(mine) < len(first) and first[: len(mine)] == mine
    return False


# Scalar fields: canonical key -> path suffixes to try, first match wins.
_SCALARS: dict[str, tuple[tuple[str, ...], ...]] = {
    "name": (("product name",),),
    "uuid": (("gpu uuid",),),
    "bus_id": (("pci", "bus id"), ("bus id",)),
    "architecture": (("product architecture",),),
    "vbios": (("vbios version",),),
    "persistence": (("persistence mode",),),
    "mig": (("mig mode", "current"),),
    "ecc_mode": (("ecc mode", "current"),),
    "fan": (("fan speed",),),
    "pstate": (("performance state",),),
    "compute_mode": (("compute mode",),),
    "mem_total": (("fb memory usage", "total"),),
    "mem_used": (("fb memory usage", "used"),),
    "util_gpu": (("utilization", "gpu"),),
    "clock_graphics": (("clocks", "graphics"),),
    "clock_sm": (("clocks", "sm"),),
    "clock_mem": (("clocks", "memory"),),
    "clock_graphics_max": (("max clocks", "graphics"),),
    "clock_sm_max": (("max clocks", "sm"),),
    "clock_mem_max": (("max clocks", "memory"),),
    "pcie_gen_max": (("pcie generation", "max"),),
    "pcie_gen_current": (("pcie generation", "current"),),
    "pcie_gen_gpu_max": (("pcie generation", "device max"),),
    "pcie_width_max": (("link width", "max"),),
    "pcie_width_current": (("link width", "current"),),
    "replays": (("replays since reset",),),
    "temp_gpu": (("gpu current temp",), ("temperature", "gpu")),  # drivers before ~R346: "Gpu : 29 C"
    "temp_memory": (("memory current temp",),),
    "temp_target": (("gpu target temperature",),),
    "temp_tlimit": (("gpu t.limit temp",),),
    "temp_shutdown": (("gpu shutdown temp",),),
    "temp_slowdown": (("gpu slowdown temp",),),
    "temp_max_operating": (("gpu max operating temp",),),
    "temp_memory_max": (("memory max operating temp",),),
    "temp_shutdown_offset": (("gpu shutdown t.limit temp",),),
    "temp_slowdown_offset": (("gpu slowdown t.limit temp",),),
    "temp_max_operating_offset": (("gpu max operating t.limit temp",),),
    "temp_memory_max_offset": (("memory max operating t.limit temp",),),
    "remapped_correctable": (("remapped rows", "correctable error"),),
    "remapped_uncorrectable": (("remapped rows", "uncorrectable error"),),
    "remapped_pending": (("remapped rows", "pending"),),
    "remapped_failure": (("remapped rows", "remapping failure occurred"),),
    "retired_sbe": (("retired pages", "single bit ecc"),),
    "retired_dbe": (("retired pages", "double bit ecc"),),
    # Driver-side health (R550+ drivers; older ones print a Fabric block with State/Status at most).
    "recovery_action": (("gpu recovery action",),),
    "fabric_state": (("fabric", "state"),),
    "fabric_status": (("fabric", "status"),),
    "fabric_clique_id": (("fabric", "cliqueid"),),
    "fabric_cluster_uuid": (("fabric", "clusteruuid"),),
    "fabric_health": (("fabric", "health", "summary"),),
    "retired_pending": (
        ("retired pages", "pending page blacklist"),
        ("retired pages", "pending page retirement"),
        ("retired pages", "pending"),
    ),
}

# Keys of the GPU power section ("GPU Power Readings" new, "Power Readings" old).
_POWER_KEYS = {
    "power_instant": "instantaneous power draw",
    "power_draw": "power draw",
    "power_average": "average power draw",
    "power_current_limit": "current power limit",
    "power_limit": "power limit",
    "power_enforced_limit": "enforced power limit",
    "power_default_limit": "default power limit",
    "power_min_limit": "min power limit",
    "power_max_limit": "max power limit",
}

_REASON_SECTIONS = {"clocks throttle reasons", "clocks event reasons", "clock throttle reasons"}
_COUNTER_SECTIONS = {"clocks event reasons counters", "clocks throttle reasons counters"}


def _collect(section: _Section) -> GpuFields:
    fields = GpuFields(truncated=section.cut)
    for key, suffixes in _SCALARS.items():
        for suffix in suffixes:
            raw = section.find(*suffix)
            if raw is not None:
                fields.put(key, raw)
                break
        else:
            fields.put(key, _past_the_cut(section, [s[0] for s in suffixes if len(s) > 1]))
    bus = fields.values.get("bus_id")
    if (bus is None or bus.cut) and section.bus_id is not None:  # the header names the same bus id
        fields.values["bus_id"] = Raw(section.bus_id, section.header_line)

    power = "gpu power readings" if section.has_section("gpu power readings") else "power readings"
    # Every layout ends its power section with "Max Power Limit": a file that ends inside it before that
    # may have lost the instantaneous draw, and the average must not stand in for it.
    power_cut = _group_cut(section, {power}, {"max power limit"})
    for key, label in _POWER_KEYS.items():
        fields.put(key, section.find(power, label) or (Raw("", None, cut=True) if power_cut else None))

    for entry in section.entries:
        if entry.value is None or _FOREIGN & set(entry.path):
            continue
        ancestors = set(entry.path[:-1])
        last = entry.path[-1]
        raw = Raw(entry.value, entry.line, entry.cut)
        if ancestors & _REASON_SECTIONS and last in REASON_BY_LABEL:
            fields.reasons.setdefault(REASON_BY_LABEL[last], raw)
        elif last in _REASON_SECTIONS and fields.reasons_section is None:
            fields.reasons_section = raw
        elif ancestors & _COUNTER_SECTIONS and last in COUNTER_BY_LABEL:
            fields.counters.setdefault(COUNTER_BY_LABEL[last], raw)
        elif "ecc errors" in ancestors:
            _collect_ecc(fields, entry)
        elif last == "ecc errors" and na_reason(entry.value) is not None:
            fields.ecc_uncorrected_volatile.append(raw)
            fields.ecc_uncorrected_aggregate.append(raw)
            fields.ecc_corrected_volatile.append(raw)
    for group, names, last_keys in _GROUPS:
        # A block the input ends inside keeps its whole lines: each is a reading (a `grep -A8` of the reasons, a
        # paste that stops after "SW Thermal Slowdown"); only a line the input cuts short is truncated (its Raw
        # says so). The block is truncated as a whole only where no line of it was read whole.
        if _group_cut(section, names, last_keys) and not _whole_lines_in(section, names):
            fields.cut_groups.add(group)
    fields.cut_groups |= _ecc_cut(section)
    return fields


# The entry each ECC sum ends with, in the new (SRAM/DRAM) and the old (Single/Double Bit) layouts.
_ECC_LAST: dict[str, tuple[str, str, str]] = {  # sum -> (subsection, new layout's last key, old layout's part)
    "ecc_uncorrected_volatile": ("volatile", "dram uncorrectable", "double bit"),
    "ecc_uncorrected_aggregate": ("aggregate", "dram uncorrectable", "double bit"),
    "ecc_corrected_volatile": ("volatile", "dram correctable", "single bit"),
}


def _ecc_cut(section: _Section) -> set[str]:
    """The ECC sums the input may have ended inside (`-q -d ECC` ends in ECC Errors, after every sum)."""
    if not _group_cut(section, {"ecc errors"}, set()):
        return set()
    own = [e for e in section.entries if e.path[-1] == "ecc errors"]
    if not own:
        return {ECC}
    inside = [e for e in section.entries if "ecc errors" in e.path[:-1] and not e.cut and e.value is not None]
    cut: set[str] = set()
    for attr, (part, last, old) in _ECC_LAST.items():
        if not any(
            part in e.path and (e.path[-1] == last or (old in e.path and e.path[-1] == "total")) for e in inside
        ):
            cut.add(attr)
    return cut


# Sections read as a whole, with the keys that end them in every layout we know: the file may end inside
# one only after such a key (`nvidia-smi -q -d PERFORMANCE` ends with its reasons).
_GROUPS: tuple[tuple[str, set[str], set[str]], ...] = (
    (REASONS, _REASON_SECTIONS, {"display clock setting", "display clocks setting", "unknown"}),
    (COUNTERS, _COUNTER_SECTIONS, {"hw power braking", "hw power brake slowdown"}),
)


def _whole_lines_in(section: _Section, names: set[str]) -> bool:
    """Whether the section named ``names`` holds a value on a line the input does not cut."""
    return any(names & set(e.path[:-1]) and e.value is not None and not e.cut for e in section.entries)


def _group_cut(section: _Section, names: set[str], last_keys: set[str]) -> bool:
    """Whether the input ends inside (or, in a cut section, before) the section named ``names``."""
    own = [e for e in section.entries if e.path[-1] in names and not _FOREIGN & set(e.path)]
    if not own:
        return section.cut
    if own[0].value is not None:  # printed whole as one value ("Clocks Throttle Reasons : N/A")
        return own[0].cut
    if names & section.closed:
        return False
    inside = [e for e in section.entries if names & set(e.path[:-1])]
    return not any(e.path[-1] in last_keys and not e.cut for e in inside)


def _past_the_cut(section: _Section, containers: list[str]) -> Raw | None:
    """A TRUNCATED stand-in for a key the section lacks, when the input may have ended before it.

    A key whose section was printed whole before the cut is simply not in the source.
    """
    if not section.cut or any(c in section.closed for c in containers):
        return None
    return Raw("", None, cut=True)


def _collect_ecc(fields: GpuFields, entry: _Entry) -> None:
    assert entry.value is not None
    path = entry.path
    last = path[-1]
    raw = Raw(entry.value, entry.line, entry.cut, optional=last.startswith("sram"))
    volatile = "volatile" in path
    aggregate = "aggregate" in path
    if not (volatile or aggregate):
        return
    if "double bit" in path or "single bit" in path:  # old layout: per location, plus a Total
        if last != "total":
            return
        uncorrected = "double bit" in path
    elif "uncorrectable" in last:
        uncorrected = True
    elif "correctable" in last:
        uncorrected = False
    else:
        return
    if uncorrected:
        (fields.ecc_uncorrected_volatile if volatile else fields.ecc_uncorrected_aggregate).append(raw)
    elif volatile:
        fields.ecc_corrected_volatile.append(raw)


def _has_gpu_field(section: _Section) -> bool:
    return any(e.value is not None for e in section.entries)


_CUDA_KEYS = ("cuda version", "cuda umd version")


def parse_query_text(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi -q`` output (whole, ``-d`` filtered, or a pasted fragment).

    Raises ParseError for an empty file, binary data, text that holds no ``-q`` field, or a file
    cut before the first GPU's first field. A file cut later keeps what it holds (a value the cut
    reached is TRUNCATED, never partial); GPUs the head announced ("Attached GPUs : 8") but the
    text lacks are noted in ``diagnostics``.
    """
    check_text(text, path)
    head, sections = _read_sections(text)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-q", path=path))
    diagnostics = snapshot.diagnostics

    # The file head; a headerless fragment keeps everything in `head`.
    attached = head.find("attached gpus")
    # 610's table says "KMD Version" and "CUDA UMD Version" for the same two figures: taken where the old names lack.
    for attr, keys in (("driver_version", ("driver version", "kmd version")), ("cuda_driver_version", _CUDA_KEYS)):
        raw = next((found for key in keys if (found := head.find(key)) is not None), None)
        if raw is None:
            continue
        reason = Missing.TRUNCATED if raw.cut else na_reason(raw.text)
        if reason is not None:
            snapshot.software.mark_missing(attr, reason)
        else:
            setattr(snapshot.software, attr, raw.text)
    finish_missing(snapshot.software, ("driver_version", "cuda_driver_version"))

    if not sections:
        fields = _collect(head)
        if fields:
            snapshot.gpus.append(build_gpu(0, fields, SOURCE, diagnostics))
            set_processes(snapshot.gpus[-1], _processes(head))
            diagnostics.append(
                Diagnostic(source=SOURCE, message="no GPU header: read as a fragment of one GPU (index 0)")
            )
        elif not handle_errors(text):
            absent = absent_reason(text)
            if absent is not None or (attached is not None and attached.text.strip() == "0"):
                snapshot.gpu_absent_reason = absent or "Attached GPUs : 0"
                return snapshot
            raise ParseError("no nvidia-smi -q fields found (not `nvidia-smi -q` output?)", path=path)
        _finish(snapshot, text, {}, head if head.cut else None)
        return snapshot

    first = sections[0]
    if not _has_gpu_field(first):
        raise ParseError(
            f"truncated: GPU {first.bus_id or '(header cut)'} has no fields (file ends or next GPU starts)",
            path=path,
            line=first.header_line,
        )
    for index, section in enumerate(sections):
        if _has_gpu_field(section):
            snapshot.gpus.append(build_gpu(index, _collect(section), SOURCE, diagnostics))
            set_processes(snapshot.gpus[-1], _processes(section))
            continue
        empty = Gpu(index=index, pci_bus_id=section.bus_id)
        reason = Missing.TRUNCATED if section.cut else Missing.ERROR
        detail = f"no fields after the GPU header at line {section.header_line} (file truncated?)"
        snapshot.gpus.append(placeholder(empty, reason, detail))
        diagnostics.append(Diagnostic(source=SOURCE, message=detail, gpu=index))

    cut = sections[-1] if sections[-1].cut else None
    if attached is not None:
        count = parse_int(attached.text).value
        if count is not None and count > len(sections):
            why = INPUT_ENDS_EARLY if cut is not None else f"{INPUT_ENDS_EARLY}, or it was filtered (-i)"
            message = f"{why}: Attached GPUs is {count} but the text holds {len(sections)} GPU section(s)"
            diagnostics.append(Diagnostic(source=SOURCE, message=message))
        elif count is not None and count != len(sections):
            message = f"Attached GPUs is {count} but the text holds {len(sections)} GPU section(s)"
            diagnostics.append(Diagnostic(source=SOURCE, message=message))
    where = {i: f"GPU section at line {s.header_line}" for i, s in enumerate(sections)}
    _finish(snapshot, text, where, cut)
    return snapshot


def _processes(section: _Section) -> list[GpuProcess] | None:
    return from_text_entries([(e.path, e.value, e.cut) for e in section.entries])


def _finish(snapshot: Snapshot, text: str, where: dict[int, str], cut: _Section | None) -> None:
    """Placeholders for the GPUs nvidia-smi could not read, and the note that the input ends early."""
    mark_unreadable(snapshot.gpus, SOURCE, snapshot.diagnostics, where)
    add_handle_errors(text, snapshot.gpus, SOURCE, snapshot.diagnostics)
    mark_corrupt_inforoms(text, snapshot.gpus)
    truncated = [
        g for g in snapshot.gpus if g.read_error is Missing.TRUNCATED or Missing.TRUNCATED in g.missing.values()
    ]
    if cut is None and not truncated:
        return
    lines = len(text_lines(text))
    inside = "this GPU's section" if cut is not None else "a section it reads whole"
    message = (
        f"{INPUT_ENDS_EARLY}: the text stops inside {inside} (line {lines}); "
        "values it did not reach are null (truncated)"
    )
    gpu = truncated[-1].index if truncated else (snapshot.gpus[-1].index if snapshot.gpus else None)
    snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=message, gpu=gpu))
