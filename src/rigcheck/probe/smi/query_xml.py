"""Parse ``nvidia-smi -q -x`` XML (nvsmi_device DTD v10 to v13) into a Snapshot.

The XML holds the same tree as ``nvidia-smi -q``; its elements are mapped onto the same canonical
keys and built by the same :func:`~rigcheck.probe.smi.values.build_gpu`, so both formats give the
same fields. Old and new element names are both read: ``power_readings`` / ``gpu_power_readings``,
``clocks_throttle_reasons`` / ``clocks_event_reasons``, absolute ``*_threshold`` temperatures and
``*_tlimit_threshold`` offsets, ``sram_uncorrectable`` / ``sram_uncorrectable_parity`` +
``sram_uncorrectable_secded``, and the old ``single_bit`` / ``double_bit`` ECC totals.

Safety: a document whose DOCTYPE declares entities (or has any internal subset) is refused before
parsing, so entity expansion ("billion laughs") cannot happen; the standard
``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">`` is fine (ElementTree never fetches
the DTD). XML has no line numbers per element, so diagnostics name the GPU only.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Diagnostic, Snapshot, Source
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


def _get(elem: ET.Element, path: str) -> Raw | None:
    """The text at ``path``; where a section on the way is printed as one N/A leaf, that text."""
    node = elem
    for part in path.split("/"):
        child = node.find(part)
        if child is None:
            if node is not elem and len(node) == 0 and na_reason(node.text or "") is not None:
                return Raw((node.text or "").strip())
            return None
        node = child
    text = (node.text or "").strip()
    if len(node) or not text:
        return None
    return Raw(text)


def _collect(gpu: ET.Element) -> GpuFields:
    fields = GpuFields()
    for key, paths in _SCALARS.items():
        for path in paths:
            raw = _get(gpu, path)
            if raw is not None:
                fields.put(key, raw)
                break
    if "bus_id" not in fields.values and gpu.get("id"):
        fields.put("bus_id", Raw(gpu.get("id", "")))

    power = "gpu_power_readings" if gpu.find("gpu_power_readings") is not None else "power_readings"
    for key, tag in _POWER_KEYS.items():
        fields.put(key, _get(gpu, f"{power}/{tag}"))

    for section, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        node = gpu.find(section)
        if node is None:
            continue
        if len(node) == 0 and (node.text or "").strip():
            fields.reasons_section = fields.reasons_section or Raw((node.text or "").strip())
        for child in node:
            label = child.tag.removeprefix(prefix)
            text = (child.text or "").strip()
            if label in REASON_BY_LABEL and text:
                fields.reasons.setdefault(REASON_BY_LABEL[label], Raw(text))
    for section, prefix in (
        ("clocks_event_reasons_counters", "clocks_event_reasons_counters_"),
        ("clocks_throttle_reasons_counters", "clocks_throttle_reasons_counters_"),
    ):
        node = gpu.find(section)
        for child in node if node is not None else ():
            label = child.tag.removeprefix(prefix)
            text = (child.text or "").strip()
            if label in COUNTER_BY_LABEL and text:
                fields.counters.setdefault(COUNTER_BY_LABEL[label], Raw(text))

    _collect_ecc(gpu, fields)
    return fields


def _collect_ecc(gpu: ET.Element, fields: GpuFields) -> None:
    ecc = gpu.find("ecc_errors")
    if ecc is None:
        return
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
        old_double = _get(node, "double_bit/total")
        if old_double is not None or node.find("single_bit") is not None:  # old layout
            if old_double is not None:
                unc.append(old_double)
            old_single = _get(node, "single_bit/total")
            if corr is not None and old_single is not None:
                corr.append(old_single)
            continue
        for child in node:
            text = (child.text or "").strip()
            if not text or len(child):
                continue
            if "uncorrectable" in child.tag:
                unc.append(Raw(text))
            elif "correctable" in child.tag and corr is not None:
                corr.append(Raw(text))


def _xml_root(text: str, path: str | None) -> ET.Element:
    for pattern, what in ((_ENTITY, "an ENTITY declaration"), (_INTERNAL_SUBSET, "an internal DOCTYPE subset")):
        match = pattern.search(text)
        if match is not None:
            line = text.count("\n", 0, match.start()) + 1
            raise ParseError(f"XML with {what} refused (entity expansion is unsafe)", path=path, line=line)
    try:
        root = ET.fromstring(text.lstrip("\ufeff"))
    except ET.ParseError as exc:
        line, _column = exc.position
        message = str(exc).split(":")[0]
        raise ParseError(f"XML is not well-formed: {message}", path=path, line=line) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"XML root is <{root.tag}>, not <nvidia_smi_log> (not `nvidia-smi -q -x` output)", path=path)
    return root


def parse_query_xml(text: str, path: str | None = None) -> Snapshot:
    """Parse ``nvidia-smi -q -x`` output. ParseError on empty, binary, malformed or foreign XML."""
    check_text(text, path)
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped.startswith("<"):
        absent = absent_reason(text)
        if absent is not None:
            return Snapshot(source=Source(kind="nvidia-smi-xml", path=path), gpu_absent_reason=absent)
    root = _xml_root(text, path)
    snapshot = Snapshot(source=Source(kind="nvidia-smi-xml", path=path))
    software = snapshot.software
    for attr, tag in (("driver_version", "driver_version"), ("cuda_driver_version", "cuda_version")):
        raw = _get(root, tag)
        if raw is None:
            continue
        reason = na_reason(raw.text)
        if reason is not None:
            software.mark_missing(attr, reason)
        else:
            setattr(software, attr, raw.text)
    finish_missing(software, ("driver_version", "cuda_driver_version"))

    gpus = root.findall("gpu")
    for index, element in enumerate(gpus):
        snapshot.gpus.append(build_gpu(index, _collect(element), SOURCE, snapshot.diagnostics))
    attached = _get(root, "attached_gpus")
    count = parse_int(attached.text).value if attached is not None else None
    if not gpus:
        snapshot.gpu_absent_reason = "the XML holds no <gpu> element" + (
            f" (attached_gpus {attached.text})" if attached is not None else ""
        )
    if count is not None and count != len(gpus):
        snapshot.diagnostics.append(
            Diagnostic(source=SOURCE, message=f"attached_gpus is {count} but the XML holds {len(gpus)} <gpu>")
        )
    return snapshot
