"""Every smi / smi-q / smi-xml / nvlink file of the corpus, checked against every fact manifest.json lists.

Each fact key is either asserted or named in an explicit "not modelled" set, so a fact added to
the manifest fails here until a test reads it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rigcheck.model import CLOCK_EVENT_REASONS, Gpu, Missing, Snapshot, snapshot_from_json, snapshot_to_json
from rigcheck.readers.smi.nvlink_status import parse_nvlink_status
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))

PARSERS = {
    "smi": parse_table,
    "smi-q": parse_query_text,
    "smi-xml": parse_query_xml,
    "nvlink": parse_nvlink_status,
}
ENTRIES = [e for e in MANIFEST if e["kind"] in PARSERS]
NA = {"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Requested functionality has been deprecated"}

# Facts about a file that a Snapshot does not hold (provenance, formatting, section names).
NOT_MODELLED_FILE = {"machine", "notes", "smi_version", "dtd", "final_newline", "indentation", "command"}
NOT_MODELLED_TABLE_GPU = {"disp"}
NOT_MODELLED_Q_GPU = {"clock_reasons_section", "power_section_tag", "clock_reasons_tag"}


def _parse(entry: dict[str, Any]) -> Snapshot:
    path = CORPUS / entry["file"]
    return PARSERS[entry["kind"]](path.read_text(encoding="utf-8"), str(path))


def _number(text: str) -> float:
    match = re.match(r"^\s*([-+]?\d+(?:\.\d+)?)", text)
    assert match is not None, text
    return float(match.group(1))


def _is_na(text: str | None) -> bool:
    return text is not None and text.strip() in NA


def _assert_printed(gpu: Gpu, attr: str, printed: str | None) -> None:
    """``printed`` as the file shows it: N/A -> None with REPORTED_NA, else the number."""
    if printed is None:
        return
    value = getattr(gpu, attr)
    if _is_na(printed):
        assert value is None, (attr, value)
        assert gpu.missing.get(attr) == Missing.REPORTED_NA, (attr, gpu.missing.get(attr))
    else:
        assert value == pytest.approx(_number(printed)), (attr, value, printed)
        assert attr not in gpu.missing


def _assert_bool(gpu: Gpu, attr: str, printed: str) -> None:
    value = getattr(gpu, attr)
    if _is_na(printed):
        assert value is None
        assert gpu.missing[attr] == Missing.REPORTED_NA
    else:
        assert value is (printed in ("On", "Enabled", "Yes")), (attr, value, printed)


def _reason_name(label: str) -> str:
    """'HW Power Brake Slowdown' / 'clocks_event_reason_gpu_idle' -> a CLOCK_EVENT_REASONS name."""
    key = re.sub(r"^clocks_(event|throttle)_reason_", "", label).lower().replace(" ", "_")
    key = {"gpu_idle": "idle", "display_clocks_setting": "display_clock_setting"}.get(key, key)
    assert key in CLOCK_EVENT_REASONS, label
    return key


def _assert_no_unexplained_none(snapshot: Snapshot) -> None:
    """Every GPU field is a value or None with a reason; never both, never neither."""
    bookkeeping = {"missing", "index", "read_error", "read_error_detail"}
    for gpu in snapshot.gpus:
        for name in Gpu.model_fields:
            if name in bookkeeping:
                continue
            value = getattr(gpu, name)
            assert (value is None) == (name in gpu.missing), (gpu.index, name, value, gpu.missing.get(name))
        for link in gpu.nvlinks or []:
            for name in ("active", "version", "remote_pci_bus_id", "speed_gbps"):
                assert (getattr(link, name) is None) == (name in link.missing), (gpu.index, link.link, name)


def test_corpus_has_every_kind() -> None:
    kinds = {e["kind"] for e in ENTRIES}
    assert kinds == set(PARSERS)
    assert len(ENTRIES) == 18


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_file(entry: dict[str, Any]) -> None:
    snapshot = _parse(entry)
    facts = entry["facts"]
    kind = entry["kind"]
    expected_kind = {"smi": "nvidia-smi-table", "smi-q": "nvidia-smi-q", "smi-xml": "nvidia-smi-xml"}
    assert snapshot.source.kind == expected_kind.get(kind, "nvlink-status")
    assert snapshot.source.path == str(CORPUS / entry["file"])
    _assert_no_unexplained_none(snapshot)
    # What the parser built is a valid snapshot: it survives the JSON round trip unchanged.
    assert snapshot_from_json(snapshot_to_json(snapshot)) == snapshot

    handled = set(NOT_MODELLED_FILE) | {"gpus"}
    if "driver_version" in facts:
        handled.add("driver_version")
        assert snapshot.software.driver_version == facts["driver_version"]
    if "cuda_version" in facts:
        handled.add("cuda_version")
        assert snapshot.software.cuda_driver_version == facts["cuda_version"]
        if facts["cuda_version"] is None:
            assert snapshot.software.missing["cuda_driver_version"] == Missing.NOT_IN_SOURCE
    if "attached_gpus" in facts:
        handled.add("attached_gpus")
        assert len(snapshot.gpus) == int(facts["attached_gpus"])
    if "gpu_elements" in facts:
        handled.add("gpu_elements")
        assert len(snapshot.gpus) == facts["gpu_elements"]
    assert set(facts) <= handled, set(facts) - handled

    assert len(snapshot.gpus) == len(facts["gpus"])
    for gpu, expected in zip(snapshot.gpus, facts["gpus"], strict=True):
        if kind == "smi":
            _check_table_gpu(gpu, expected)
        elif kind == "nvlink":
            _check_nvlink_gpu(snapshot, gpu, expected)
        else:
            _check_query_gpu(gpu, expected, xml=kind == "smi-xml")


def _check_table_gpu(gpu: Gpu, expected: dict[str, Any]) -> None:
    handled = set(NOT_MODELLED_TABLE_GPU)

    def take(key: str) -> str:
        handled.add(key)
        value: str = expected[key]
        return value

    assert gpu.index == take("index")
    assert gpu.name == take("name")
    assert gpu.pci_bus_id == take("bus_id")
    _assert_bool(gpu, "persistence_mode", take("persistence"))
    ecc = take("ecc")
    if ecc == "Off":
        assert gpu.ecc_enabled is False
    elif _is_na(ecc):
        assert gpu.ecc_enabled is None
        assert gpu.missing["ecc_enabled"] == Missing.REPORTED_NA
        assert gpu.missing["ecc_uncorrected_volatile"] == Missing.REPORTED_NA
    else:
        assert gpu.ecc_enabled is True
        assert gpu.ecc_uncorrected_volatile == int(ecc)
    _assert_printed(gpu, "fan_percent", take("fan"))
    _assert_printed(gpu, "temp_c", take("temp"))
    assert gpu.pstate == take("perf")
    _assert_printed(gpu, "power_draw_w", take("power_usage"))
    _assert_printed(gpu, "power_limit_w", take("power_cap"))
    _assert_printed(gpu, "memory_used_mib", take("mem_used"))
    _assert_printed(gpu, "memory_total_mib", take("mem_total"))
    _assert_printed(gpu, "utilization_gpu_percent", take("gpu_util"))
    assert gpu.compute_mode == take("compute_mode")
    assert not set(expected) - handled, set(expected) - handled
    # The table never holds these.
    for attr in ("power_enforced_limit_w", "power_default_limit_w", "temp_slowdown_c", "pcie_gen_current", "uuid"):
        assert gpu.missing[attr] == Missing.NOT_IN_SOURCE


def _check_nvlink_gpu(snapshot: Snapshot, gpu: Gpu, expected: dict[str, Any]) -> None:
    assert set(expected) == {"index", "name", "uuid", "links", "message"}
    assert gpu.index == expected["index"]
    assert gpu.name == expected["name"]
    assert gpu.uuid == expected["uuid"]
    assert gpu.nvlinks is not None
    if expected["message"] is not None:
        # "all links are inactive": every link the GPU has is listed, none of them up
        # (tests/readers/test_nvlink_status.py).
        messages = [d.message for d in snapshot.diagnostics if d.gpu == gpu.index]
        assert any(expected["message"] in m for m in messages), messages
        assert not expected["links"]
        assert not any(link.active for link in gpu.nvlinks)
        return
    assert {str(link.link): link for link in gpu.nvlinks}.keys() == expected["links"].keys()
    for link in gpu.nvlinks:
        printed = expected["links"][str(link.link)]
        if "inactive" in printed:
            assert (link.active, link.speed_gbps) == (False, None)
            continue
        assert link.active is True
        assert link.speed_gbps == pytest.approx(_number(printed))
    assert gpu.missing["pci_bus_id"] == Missing.NOT_IN_SOURCE


# -q text power keys ("Section/Key") and XML power tags -> Gpu fields; None: deliberately not read.
Q_POWER: dict[str, str | None] = {
    "GPU Power Readings/Power Draw": "power_draw_w",
    "GPU Power Readings/Current Power Limit": "power_limit_w",
    "GPU Power Readings/Requested Power Limit": None,
    "GPU Power Readings/Default Power Limit": "power_default_limit_w",
    "GPU Power Readings/Min Power Limit": "power_min_limit_w",
    "GPU Power Readings/Max Power Limit": "power_max_limit_w",
    "power_draw": "power_draw_w",
    "instant_power_draw": "power_draw_w",
    "average_power_draw": "power_draw_avg_w",
    "power_limit": "power_limit_w",
    "current_power_limit": "power_limit_w",
    "requested_power_limit": None,
    "enforced_power_limit": "power_enforced_limit_w",
    "default_power_limit": "power_default_limit_w",
    "min_power_limit": "power_min_limit_w",
    "max_power_limit": "power_max_limit_w",
    "power_state": None,
    "power_management": None,
}
# Absolute temperatures.
Q_TEMP: dict[str, str] = {
    "GPU Current Temp": "temp_c",
    "gpu_temp": "temp_c",
    "GPU T.Limit Temp": "temp_tlimit_margin_c",
    "gpu_temp_tlimit": "temp_tlimit_margin_c",
    "GPU Shutdown Temp": "temp_shutdown_c",
    "gpu_temp_max_threshold": "temp_shutdown_c",
    "GPU Slowdown Temp": "temp_slowdown_c",
    "gpu_temp_slow_threshold": "temp_slowdown_c",
    "GPU Max Operating Temp": "temp_max_operating_c",
    "gpu_temp_max_gpu_threshold": "temp_max_operating_c",
    "Memory Max Operating Temp": "temp_memory_max_c",
    "gpu_temp_max_mem_threshold": "temp_memory_max_c",
    "GPU Target Temperature": "temp_target_c",
    "gpu_target_temperature": "temp_target_c",
    "Memory Current Temp": "temp_c_memory",
    "memory_temp": "temp_c_memory",
}
# Thresholds printed as offsets from T.Limit.
Q_TEMP_OFFSET: dict[str, str] = {
    "GPU Shutdown T.Limit Temp": "temp_shutdown_c",
    "gpu_temp_max_tlimit_threshold": "temp_shutdown_c",
    "GPU Slowdown T.Limit Temp": "temp_slowdown_c",
    "gpu_temp_slow_tlimit_threshold": "temp_slowdown_c",
    "GPU Max Operating T.Limit Temp": "temp_max_operating_c",
    "gpu_temp_max_gpu_tlimit_threshold": "temp_max_operating_c",
    "Memory Max Operating T.Limit Temp": "temp_memory_max_c",
    "gpu_temp_max_mem_tlimit_threshold": "temp_memory_max_c",
}
PCIE = {
    "gen_max": "pcie_gen_max",
    "gen_current": "pcie_gen_current",
    "width_max": "pcie_width_max",
    "width_current": "pcie_width_current",
}


def _check_query_gpu(gpu: Gpu, expected: dict[str, Any], *, xml: bool) -> None:
    handled = set(NOT_MODELLED_Q_GPU)

    def take(key: str) -> Any:
        handled.add(key)
        return expected[key]

    bus = take("id") if xml else take("bus_id")
    assert gpu.pci_bus_id == bus
    name = take("product_name")
    assert gpu.name == name
    if name is None:
        assert gpu.missing["name"] == Missing.NOT_IN_SOURCE
    pstate = take("performance_state")
    assert gpu.pstate == pstate
    if "mig_mode_current" in expected:
        _assert_bool(gpu, "mig_enabled", take("mig_mode_current"))

    power: dict[str, str] = take("power")
    for key, printed in power.items():
        assert key in Q_POWER or key.startswith(("GPU Memory Power Readings/", "Module Power Readings/")), key
        attr = Q_POWER.get(key)
        if attr is None:
            continue
        if key == "power_draw" and "instant_power_draw" in power:
            continue
        _assert_printed(gpu, attr, printed)
    memory_draw = power.get("GPU Memory Power Readings/Power Draw")
    if memory_draw is not None:  # the memory reading is not the GPU's draw
        assert gpu.power_draw_w != pytest.approx(_number(memory_draw))
    if power and "enforced_power_limit" not in power:
        assert gpu.power_enforced_limit_w is None
        assert gpu.missing["power_enforced_limit_w"] == Missing.NOT_IN_SOURCE
    if not power:
        for attr in ("power_draw_w", "power_limit_w", "power_default_limit_w", "power_min_limit_w"):
            assert gpu.missing[attr] == Missing.NOT_IN_SOURCE

    temperature: dict[str, str] = take("temperature")
    current = temperature.get("GPU Current Temp", temperature.get("gpu_temp"))
    margin = temperature.get("GPU T.Limit Temp", temperature.get("gpu_temp_tlimit"))
    for key, printed in temperature.items():
        if key in Q_TEMP:
            attr = Q_TEMP[key].replace("temp_c_memory", "temp_memory_c")
            _assert_printed(gpu, attr, printed)
            continue
        attr = Q_TEMP_OFFSET[key]
        value = getattr(gpu, attr)
        if _is_na(printed):
            assert value is None
            assert gpu.missing[attr] == Missing.REPORTED_NA
        elif attr == "temp_memory_max_c":  # no memory T.Limit to offset from
            assert value is None
            assert gpu.missing[attr] == Missing.NOT_IN_SOURCE
        else:
            assert current is not None
            assert margin is not None
            assert value == _number(current) + _number(margin) - _number(printed), (key, value)
    for attr in ("temp_slowdown_c", "temp_shutdown_c"):
        if not any(Q_TEMP.get(k) == attr or Q_TEMP_OFFSET.get(k) == attr for k in temperature):
            assert gpu.missing[attr] == Missing.NOT_IN_SOURCE

    pcie = take("pcie")
    if pcie is None:
        for attr in PCIE.values():
            assert getattr(gpu, attr) is None
            assert gpu.missing[attr] == Missing.NOT_IN_SOURCE
    else:
        assert set(pcie) == set(PCIE)
        for key, attr in PCIE.items():
            _assert_printed(gpu, attr, pcie[key])

    active = [_reason_name(r) for r in take("active_reasons")]
    if "clock_reasons" in expected:
        reasons: dict[str, str] = take("clock_reasons")
        for label, state in reasons.items():
            assert (_reason_name(label) in (gpu.clock_event_reasons_active or [])) is (state == "Active"), label
        if not reasons:
            assert gpu.clock_event_reasons_active is None
            assert gpu.missing["clock_event_reasons_active"] == Missing.NOT_IN_SOURCE
            assert not active
            assert not set(expected) - handled, set(expected) - handled
            return
    assert gpu.clock_event_reasons_active == sorted(active, key=CLOCK_EVENT_REASONS.index)
    assert not set(expected) - handled, set(expected) - handled
