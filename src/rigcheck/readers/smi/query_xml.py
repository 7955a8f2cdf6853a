"""Parse ``nvidia-smi -q -x`` XML (nvsmi_device DTD v10 to v13) into a Snapshot.

The XML holds the same tree as ``nvidia-smi -q``; its elements are mapped onto the same canonical
keys and built by the same :func:`~rigcheck.readers.smi.values.build_gpu`, so both formats give the
same fields. Old and new element names are both read: ``power_readings`` / ``gpu_power_readings``,
``clocks_throttle_reasons`` / ``clocks_event_reasons``, absolute ``*_threshold`` temperatures and
``*_tlimit_threshold`` offsets, ``sram_uncorrectable`` / ``sram_uncorrectable_parity`` +
``sram_uncorrectable_secded``, and the old ``single_bit`` / ``double_bit`` ECC totals.

Safety: a document whose DOCTYPE declares entities (or has any internal subset) is refused before
parsing, so entity expansion ("billion laughs") cannot happen; the standard
``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">`` is fine (ElementTree never fetches
the DTD). XML has no line numbers per element, so diagnostics name the GPU only.

A cut file (the root element never closes) is read as far as it goes, never into a smaller number:
an element the file ends inside gives TRUNCATED, and so does an element missing from a parent the
file ends inside (it may have come after the cut); a sum or list whose section is cut is TRUNCATED;
a note (``INPUT_ENDS_EARLY``) says the input ends early and which GPUs it lost. Known drivers print
no per-link NVLink state in ``-q -x`` (a ``<fabric>`` block at most): ``nvlinks`` stays
NOT_IN_SOURCE. A GPU whose readings are all errors, or that nvidia-smi could not open ("Unable to
determine the device handle" before the XML), is a placeholder with ``read_error`` (unreadable.py).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import INPUT_ENDS_EARLY, Diagnostic, Gpu, Missing, Snapshot, Source
from rigcheck.readers.smi.build import COUNTERS, ECC, ECC_SUMS, REASONS, GpuFields, build_gpu
from rigcheck.readers.smi.processes import corrupt_inforoms, from_xml, mark_corrupt_inforoms, set_processes
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
)

SOURCE = "smi-xml"

_ENTITY = re.compile(r"<!ENTITY", re.IGNORECASE)
_INTERNAL_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[", re.IGNORECASE)

# canonical key -> element paths under <gpu>, first found wins.
_SCALARS: dict[str, tuple[str, ...]] = {
    "name": ("product_name",),
    "uuid": ("uuid",),
    "bus_id": ("pci/pci_bus_id",),
    "architecture": ("product_architecture",),
    "vbios": ("vbios_version",),
    "persistence": ("persistence_mode",),
    "mig": ("mig_mode/current_mig",),
    "ecc_mode": ("ecc_mode/current_ecc",),
    "fan": ("fan_speed",),
    "pstate": ("performance_state",),
    "compute_mode": ("compute_mode",),
    "mem_total": ("fb_memory_usage/total",),
    "mem_used": ("fb_memory_usage/used",),
    "util_gpu": ("utilization/gpu_util",),
    "clock_graphics": ("clocks/graphics_clock",),
    "clock_sm": ("clocks/sm_clock",),
    "clock_mem": ("clocks/mem_clock",),
    "clock_graphics_max": ("max_clocks/graphics_clock",),
    "clock_sm_max": ("max_clocks/sm_clock",),
    "clock_mem_max": ("max_clocks/mem_clock",),
    "pcie_gen_max": ("pci/pci_gpu_link_info/pcie_gen/max_link_gen",),
    "pcie_gen_current": ("pci/pci_gpu_link_info/pcie_gen/current_link_gen",),
    "pcie_gen_gpu_max": ("pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",),
    "pcie_width_max": ("pci/pci_gpu_link_info/link_widths/max_link_width",),
    "pcie_width_current": ("pci/pci_gpu_link_info/link_widths/current_link_width",),
    "replays": ("pci/replay_counter",),
    "temp_gpu": ("temperature/gpu_temp",),
    "temp_memory": ("temperature/memory_temp",),
    "temp_target": ("temperature/gpu_target_temperature",),
    "temp_tlimit": ("temperature/gpu_temp_tlimit",),
    "temp_shutdown": ("temperature/gpu_temp_max_threshold",),
    "temp_slowdown": ("temperature/gpu_temp_slow_threshold",),
    "temp_max_operating": ("temperature/gpu_temp_max_gpu_threshold",),
    "temp_memory_max": ("temperature/gpu_temp_max_mem_threshold",),
    "temp_shutdown_offset": ("temperature/gpu_temp_max_tlimit_threshold",),
    "temp_slowdown_offset": ("temperature/gpu_temp_slow_tlimit_threshold",),
    "temp_max_operating_offset": ("temperature/gpu_temp_max_gpu_tlimit_threshold",),
    "temp_memory_max_offset": ("temperature/gpu_temp_max_mem_tlimit_threshold",),
    "remapped_correctable": ("remapped_rows/remapped_row_corr",),
    "remapped_uncorrectable": ("remapped_rows/remapped_row_unc",),
    "remapped_pending": ("remapped_rows/remapped_row_pending",),
    "remapped_failure": ("remapped_rows/remapped_row_failure",),
    "retired_sbe": ("retired_pages/multiple_single_bit_retirement/retired_count",),
    "retired_dbe": ("retired_pages/double_bit_retirement/retired_count",),
    "retired_pending": ("retired_pages/pending_blacklist", "retired_pages/pending_retirement"),
    "recovery_action": ("gpu_recovery_action",),
    "fabric_state": ("fabric/state",),
    "fabric_status": ("fabric/status",),
    "fabric_clique_id": ("fabric/cliqueId", "fabric/clique_id"),
    "fabric_cluster_uuid": ("fabric/clusterUuid", "fabric/cluster_uuid"),
    "fabric_health": ("fabric/health/summary",),
}

_POWER_KEYS = {
    "power_instant": "instant_power_draw",
    "power_draw": "power_draw",
    "power_average": "average_power_draw",
    "power_current_limit": "current_power_limit",
    "power_limit": "power_limit",
    "power_enforced_limit": "enforced_power_limit",
    "power_default_limit": "default_power_limit",
    "power_min_limit": "min_power_limit",
    "power_max_limit": "max_power_limit",
}


_CUDA_TAGS = ("cuda_version", "cuda_umd_version")


@dataclass(frozen=True)
class _Tree:
    """The parsed document and the elements the input ends inside (all closed in a whole file)."""

    root: ET.Element
    open: frozenset[int]  # id() of each element whose end tag the file lacks

    def is_open(self, elem: ET.Element) -> bool:
        return id(elem) in self.open

    def get(self, elem: ET.Element, path: str) -> Raw | None:
        """The text at ``path``; where a section on the way is printed as one N/A leaf, that text.

        Inside an element the file ends in, a missing child may lie past the cut: a TRUNCATED stand-in.
        """
        node = elem
        for part in path.split("/"):
            child = node.find(part)
            if child is None:
                if self.is_open(node):
                    return Raw("", cut=True)
                if node is not elem and len(node) == 0 and na_reason(node.text or "") is not None:
                    return Raw((node.text or "").strip())
                return None
            node = child
        text = (node.text or "").strip()
        if self.is_open(node) and not len(node):
            return Raw(text, cut=True)
        if len(node) or not text:
            return None
        return Raw(text)

    def section(self, gpu: ET.Element, names: tuple[str, ...]) -> tuple[ET.Element | None, bool]:
        """The first of ``names`` under ``gpu``, and whether the file ends inside it (or before it)."""
        for name in names:
            node = gpu.find(name)
            if node is not None:
                return node, self.is_open(node)
        return None, self.is_open(gpu)


def _collect(tree: _Tree, gpu: ET.Element) -> GpuFields:
    fields = GpuFields(truncated=tree.is_open(gpu))
    for key, paths in _SCALARS.items():
        for path in paths:
            raw = tree.get(gpu, path)
            if raw is not None:
                fields.put(key, raw)
                break
    bus = fields.values.get("bus_id")
    if (bus is None or bus.cut) and gpu.get("id"):  # the id attribute names the same bus id
        fields.values["bus_id"] = Raw(gpu.get("id", ""))
    _put_printed_empty(tree, gpu, fields)

    power = "gpu_power_readings" if gpu.find("gpu_power_readings") is not None else "power_readings"
    for key, tag in _POWER_KEYS.items():
        fields.put(key, tree.get(gpu, f"{power}/{tag}"))

    node, cut = tree.section(gpu, ("clocks_event_reasons", "clocks_throttle_reasons"))
    if cut:
        fields.cut_groups.add(REASONS)
    if node is not None:
        prefix = "clocks_event_reason_" if node.tag == "clocks_event_reasons" else "clocks_throttle_reason_"
        if len(node) == 0 and (node.text or "").strip():
            fields.reasons_section = Raw((node.text or "").strip())
        for child in node:
            label = child.tag.removeprefix(prefix)
            text = (child.text or "").strip()
            if label in REASON_BY_LABEL and text:
                fields.reasons.setdefault(REASON_BY_LABEL[label], Raw(text))
    node, cut = tree.section(gpu, ("clocks_event_reasons_counters", "clocks_throttle_reasons_counters"))
    if cut:
        fields.cut_groups.add(COUNTERS)
    if node is not None:
        prefix = node.tag + "_"
        for child in node:
            label = child.tag.removeprefix(prefix)
            text = (child.text or "").strip()
            if label in COUNTER_BY_LABEL and text:
                fields.counters.setdefault(COUNTER_BY_LABEL[label], Raw(text))

    node, cut = tree.section(gpu, ("ecc_errors",))
    if node is None and cut:
        fields.cut_groups.add(ECC)
    if node is not None:
        for attr in ECC_SUMS:  # a sum is whole once its <volatile> / <aggregate> element closed
            part = node.find("aggregate" if "aggregate" in attr else "volatile")
            if tree.is_open(part) if part is not None else cut:
                fields.cut_groups.add(attr)
        _collect_ecc(tree, node, fields)
    return fields


# Leaves that, printed with no text (<vbios_version/>), say nvidia-smi had no value for them, as "N/A" does.
_EMPTY_IS_NA: dict[str, str] = {"vbios": "vbios_version"}


def _put_printed_empty(tree: _Tree, gpu: ET.Element, fields: GpuFields) -> None:
    """An empty, closed leaf of ``_EMPTY_IS_NA`` as an empty value (the builder reads it as reported_na)."""
    for key, path in _EMPTY_IS_NA.items():
        node = gpu.find(path)
        if key not in fields.values and node is not None and not len(node) and not tree.is_open(node):
            fields.put(key, Raw(""))


def _collect_ecc(tree: _Tree, ecc: ET.Element, fields: GpuFields) -> None:
    if len(ecc) == 0:
        text = (ecc.text or "").strip()
        if na_reason(text) is not None:
            raw = Raw(text)
            fields.ecc_uncorrected_volatile.append(raw)
            fields.ecc_uncorrected_aggregate.append(raw)
            fields.ecc_corrected_volatile.append(raw)
        return
    for kind in ("volatile", "aggregate"):
        node = ecc.find(kind)
        if node is None:
            continue
        unc = fields.ecc_uncorrected_volatile if kind == "volatile" else fields.ecc_uncorrected_aggregate
        corr = fields.ecc_corrected_volatile if kind == "volatile" else None
        old_double = tree.get(node, "double_bit/total")
        if old_double is not None or node.find("single_bit") is not None:  # old layout
            if old_double is not None:
                unc.append(old_double)
            old_single = tree.get(node, "single_bit/total")
            if corr is not None and old_single is not None:
                corr.append(old_single)
            continue
        for child in node:
            text = (child.text or "").strip()
            if not text or len(child):
                continue
            sram = child.tag.startswith("sram")
            if "uncorrectable" in child.tag:
                unc.append(Raw(text, optional=sram))
            elif "correctable" in child.tag and corr is not None:
                corr.append(Raw(text, optional=sram))


def _read_tree(text: str, path: str | None) -> _Tree:
    for pattern, what in ((_ENTITY, "an ENTITY declaration"), (_INTERNAL_SUBSET, "an internal DOCTYPE subset")):
        match = pattern.search(text)
        if match is not None:
            line = text.count("\n", 0, match.start()) + 1
            raise ParseError(f"XML with {what} refused (entity expansion is unsafe)", path=path, line=line)
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    started: list[ET.Element] = []
    ended: set[int] = set()

    def drain() -> None:
        # With events ("start", "end") every item is (event, element).
        for event, elem in cast("Iterator[tuple[str, ET.Element]]", parser.read_events()):
            if event == "start":
                started.append(elem)
            else:
                ended.add(id(elem))

    parser.feed(text.lstrip("\ufeff"))
    try:
        drain()  # the pull parser hands a syntax error out with the events
    except ET.ParseError as exc:  # malformed, wherever it is
        raise ParseError(f"XML is not well-formed: {str(exc).split(':')[0]}", path=path, line=exc.position[0]) from None
    try:
        parser.close()
    except ET.ParseError as exc:  # the document ends before its root closes: the file was cut
        if not started:
            raise ParseError(
                "truncated: the XML ends before its root element", path=path, line=exc.position[0]
            ) from None
    root = started[0]
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"XML root is <{root.tag}>, not <nvidia_smi_log> (not `nvidia-smi -q -x` output)", path=path)
    return _Tree(root, frozenset(id(e) for e in started if id(e) not in ended))


def parse_query_xml(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi -q -x`` output. ParseError on empty, binary, malformed or foreign XML."""
    check_text(text, path)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-xml", path=path))
    start = text.find("<")
    if start < 0 or not text[start:].strip():
        if handle_errors(text):
            add_handle_errors(text, snapshot.gpus, SOURCE, snapshot.diagnostics)
            finish_missing(snapshot.software, ("driver_version", "cuda_driver_version"))
            return snapshot
        absent = absent_reason(text)
        if absent is not None:
            snapshot.gpu_absent_reason = absent
            return snapshot
    # nvidia-smi prints "Unable to determine the device handle ..." above the XML for a GPU it cannot open, and
    # "WARNING: infoROM is corrupted at gpu ..." for a GPU whose InfoROM fails its checksum.
    head = text[:start] if start > 0 else ""
    prefix = head if handle_errors(head) or corrupt_inforoms(head) else ""
    tree = _read_tree(text[len(prefix) :], path)
    root = tree.root
    software = snapshot.software
    # 610's table says "KMD Version" and "CUDA UMD Version" for the same two figures: taken where the old tags lack.
    for attr, tags in (("driver_version", ("driver_version", "kmd_version")), ("cuda_driver_version", _CUDA_TAGS)):
        raw = next((found for tag in tags if (found := tree.get(root, tag)) is not None), None)
        if raw is None:
            continue
        reason = Missing.TRUNCATED if raw.cut else na_reason(raw.text)
        if reason is not None:
            software.mark_missing(attr, reason)
        else:
            setattr(software, attr, raw.text)
    finish_missing(software, ("driver_version", "cuda_driver_version"))

    gpus = root.findall("gpu")
    cut = tree.is_open(root)
    for index, element in enumerate(gpus):
        fields = _collect(tree, element)
        if tree.is_open(element) and not any(not r.cut for k, r in fields.values.items() if k != "bus_id"):
            if index == 0:
                raise ParseError("truncated: the XML ends inside the first <gpu>, before its first field", path=path)
            detail = f'the XML ends inside <gpu id="{element.get("id", "")}"> before its first field'
            snapshot.gpus.append(placeholder(Gpu(index=index, pci_bus_id=element.get("id")), Missing.TRUNCATED, detail))
            continue
        snapshot.gpus.append(build_gpu(index, fields, SOURCE, snapshot.diagnostics))
        node = element.find("processes")
        set_processes(snapshot.gpus[-1], from_xml(element, node is not None and tree.is_open(node)))
    attached = tree.get(root, "attached_gpus")
    count = parse_int(attached.text).value if attached is not None and not attached.cut else None
    if not gpus:
        if cut:
            raise ParseError("truncated: the XML ends before its first <gpu>", path=path)
        snapshot.gpu_absent_reason = "the XML holds no <gpu> element" + (
            f" (attached_gpus {attached.text})" if attached is not None else ""
        )
    if count is not None and count != len(gpus):
        why = f"{INPUT_ENDS_EARLY}: " if cut and count > len(gpus) else ""
        snapshot.diagnostics.append(
            Diagnostic(source=SOURCE, message=f"{why}attached_gpus is {count} but the XML holds {len(gpus)} <gpu>")
        )
    mark_unreadable(snapshot.gpus, SOURCE, snapshot.diagnostics, {})
    add_handle_errors(prefix, snapshot.gpus, SOURCE, snapshot.diagnostics)
    mark_corrupt_inforoms(prefix, snapshot.gpus)
    if cut:
        inside = [g for g in gpus if tree.is_open(g)]
        where = f'inside <gpu id="{inside[0].get("id", "")}">' if inside else "after the last <gpu>"
        message = f"{INPUT_ENDS_EARLY}: the XML stops {where}; values it did not reach are null (truncated)"
        snapshot.diagnostics.append(Diagnostic(source=SOURCE, message=message, gpu=len(gpus) - 1 if inside else None))
    return snapshot
