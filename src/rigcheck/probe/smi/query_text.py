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
NVLink state in the formats we know of; ``nvlinks`` stays NOT_IN_SOURCE (read ``nvidia-smi
nvlink -s`` for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Diagnostic, Missing, Snapshot, Source
from rigcheck.probe.smi.values import (
    COUNTER_BY_LABEL,
    REASON_BY_LABEL,
    GpuFields,
    Raw,
    absent_reason,
    build_gpu,
    check_text,
    finish_missing,
    na_reason,
    parse_int,
    text_lines,
)

SOURCE = "smi-q"

_GPU_HEADER = re.compile(r"^\s*GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KEY_VALUE = re.compile(r"^([^:]*?)\s*:\s*(.*?)\s*$")
_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")
# Sections that repeat per-GPU keys for something else: MIG devices and processes.
_FOREIGN = {"mig devices", "processes", "accounted processes"}


@dataclass(frozen=True)
class _Entry:
    path: tuple[str, ...]
    value: str | None
    line: int


@dataclass
class _Section:
    """The entries of one GPU (or of the file head), in file order."""

    header_line: int | None = None
    bus_id: str | None = None
    entries: list[_Entry] = field(default_factory=list)

    def find(self, *suffix: str) -> Raw | None:
        """The first value whose path ends with ``suffix`` (outside MIG device and process sections).

        Where the text prints a whole section as one N/A value ("Remapped Rows : N/A"), that value
        is returned for every key of the section.
        """
        n = len(suffix)
        for entry in self.entries:
            if entry.value is not None and entry.path[-n:] == suffix and not _FOREIGN & set(entry.path):
                return Raw(entry.value, entry.line)
        for k in range(n - 1, 0, -1):
            head = suffix[:k]
            for entry in self.entries:
                if (
                    entry.value is not None
                    and entry.path[-k:] == head
                    and na_reason(entry.value) is not None
                    and not _FOREIGN & set(entry.path)
                ):
                    return Raw(entry.value, entry.line)
        return None

    def has_section(self, name: str) -> bool:
        return any(e.path[-1] == name for e in self.entries)


def _normalize(key: str) -> str:
    return " ".join(key.strip().lower().split())


def _read_sections(text: str, path: str | None) -> tuple[_Section, list[_Section]]:
    """Split the text into the file head and one section per GPU header, building entry paths."""
    lines = text_lines(text)
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
        if header is not None:
            current = _Section(header_line=number, bus_id=header.group(1))
            gpus.append(current)
            stack = []
            continue
        indent = len(line) - len(line.lstrip())
        match = _KEY_VALUE.match(stripped)
        if match is not None and match.group(1):
            key, value = _normalize(match.group(1)), match.group(2)
        else:
            key, value = _normalize(stripped), None
        if flat:
            if value is None:
                stack = [(0, key)]
                current.entries.append(_Entry((key,), None, number))
            else:
                current.entries.append(_Entry((*(k for _, k in stack), key), value, number))
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        entry_path = (*(k for _, k in stack), key)
        current.entries.append(_Entry(entry_path, value, number))
        stack.append((indent, key))
    return head, gpus


# Scalar fields: canonical key -> path suffixes to try, first match wins.
_SCALARS: dict[str, tuple[tuple[str, ...], ...]] = {
    "name": (("product name",),),
    "uuid": (("gpu uuid",),),
    "bus_id": (("pci", "bus id"), ("bus id",)),
    "architecture": (("product architecture",),),
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
    fields = GpuFields()
    for key, suffixes in _SCALARS.items():
        for suffix in suffixes:
            raw = section.find(*suffix)
            if raw is not None:
                fields.put(key, raw)
                break
    if "bus_id" not in fields.values and section.bus_id is not None:
        fields.put("bus_id", Raw(section.bus_id, section.header_line))

    power = "gpu power readings" if section.has_section("gpu power readings") else "power readings"
    for key, label in _POWER_KEYS.items():
        fields.put(key, section.find(power, label))

    for entry in section.entries:
        if entry.value is None or _FOREIGN & set(entry.path):
            continue
        ancestors = set(entry.path[:-1])
        last = entry.path[-1]
        if ancestors & _REASON_SECTIONS and last in REASON_BY_LABEL:
            fields.reasons.setdefault(REASON_BY_LABEL[last], Raw(entry.value, entry.line))
        elif last in _REASON_SECTIONS and fields.reasons_section is None:
            fields.reasons_section = Raw(entry.value, entry.line)
        elif ancestors & _COUNTER_SECTIONS and last in COUNTER_BY_LABEL:
            fields.counters.setdefault(COUNTER_BY_LABEL[last], Raw(entry.value, entry.line))
        elif "ecc errors" in ancestors:
            _collect_ecc(fields, entry)
        elif last == "ecc errors" and na_reason(entry.value) is not None:
            raw = Raw(entry.value, entry.line)
            fields.ecc_uncorrected_volatile.append(raw)
            fields.ecc_uncorrected_aggregate.append(raw)
            fields.ecc_corrected_volatile.append(raw)
    return fields


def _collect_ecc(fields: GpuFields, entry: _Entry) -> None:
    assert entry.value is not None
    path = entry.path
    last = path[-1]
    raw = Raw(entry.value, entry.line)
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


def parse_query_text(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi -q`` output (whole, ``-d`` filtered, or a pasted fragment).

    Raises ParseError for an empty file, binary data, text that holds no ``-q`` field, or a file
    cut before the first GPU's first field. A file cut later keeps what it holds; GPUs the head
    announced ("Attached GPUs : 8") but the text lacks are noted in ``diagnostics``.
    """
    check_text(text, path)
    head, sections = _read_sections(text, path)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-q", path=path))
    diagnostics = snapshot.diagnostics

    # The file head; a headerless fragment keeps everything in `head`.
    driver = head.find("driver version")
    cuda = head.find("cuda version")
    attached = head.find("attached gpus")
    for attr, raw in (("driver_version", driver), ("cuda_driver_version", cuda)):
        if raw is None:
            continue
        reason = na_reason(raw.text)
        if reason is not None:
            snapshot.software.mark_missing(attr, reason)
        else:
            setattr(snapshot.software, attr, raw.text)
    finish_missing(snapshot.software, ("driver_version", "cuda_driver_version"))

    if not sections:
        fields = _collect(head)
        if not fields:
            absent = absent_reason(text)
            if absent is not None or (attached is not None and attached.text.strip() == "0"):
                snapshot.gpu_absent_reason = absent or "Attached GPUs : 0"
                return snapshot
            raise ParseError("no nvidia-smi -q fields found (not `nvidia-smi -q` output?)", path=path)
        snapshot.gpus.append(build_gpu(0, fields, SOURCE, diagnostics))
        diagnostics.append(Diagnostic(source=SOURCE, message="no GPU header: read as a fragment of one GPU (index 0)"))
        return snapshot

    first = sections[0]
    if not _has_gpu_field(first):
        raise ParseError(
            f"truncated: GPU {first.bus_id} has no fields (file ends or next GPU starts)",
            path=path,
            line=first.header_line,
        )
    for index, section in enumerate(sections):
        if not _has_gpu_field(section):
            placeholder = GpuFields(values={"bus_id": Raw(section.bus_id or "", section.header_line)})
            gpu = build_gpu(index, placeholder, SOURCE, [])
            gpu.read_error = Missing.ERROR
            gpu.read_error_detail = f"no fields after the GPU header at line {section.header_line} (file truncated?)"
            diagnostics.append(Diagnostic(source=SOURCE, message=gpu.read_error_detail, gpu=index))
            snapshot.gpus.append(gpu)
            continue
        snapshot.gpus.append(build_gpu(index, _collect(section), SOURCE, diagnostics))

    if attached is not None:
        count = parse_int(attached.text).value
        if count is not None and count != len(sections):
            diagnostics.append(
                Diagnostic(
                    source=SOURCE,
                    message=f"Attached GPUs is {count} but the text holds {len(sections)} GPU section(s)",
                )
            )
    return snapshot
