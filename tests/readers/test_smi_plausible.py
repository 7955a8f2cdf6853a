"""Values outside what any card can report are null with reason ``implausible`` (bounds in facts/plausible.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigcheck.facts.plausible import BOUNDS, out_of_bounds
from rigcheck.model import Gpu, Missing
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
Q = CORPUS / "smi-q" / "001-1xh100-545-full-event-reasons-tlimit.txt"


def test_every_bound_is_a_gpu_field_with_a_source() -> None:
    assert set(BOUNDS) <= set(Gpu.model_fields)
    for field, bounds in BOUNDS.items():
        assert bounds.low < bounds.high, field
        assert "nvml.h" in bounds.source or "PCI Express" in bounds.source, field


@pytest.mark.parametrize(
    ("field", "value", "bad"),
    [
        ("power_draw_w", -5.0, True),
        ("power_draw_w", 700.0, False),
        ("power_limit_w", 1400.0, False),
        ("power_limit_w", 70000.0, True),
        ("temp_c", 2.0**31, True),
        ("temp_c", -3.0, True),
        ("temp_tlimit_margin_c", -8.0, False),
        ("fan_percent", 105.0, False),  # nvml.h: may exceed 100 %
        ("fan_percent", -5.0, True),
        ("utilization_gpu_percent", 101.0, True),
        ("pcie_gen_current", 0, True),
        ("pcie_width_max", 16, False),
        ("pcie_width_max", 64, True),
        ("ecc_uncorrected_volatile", 2**40, False),
        ("ecc_uncorrected_volatile", -1, True),
        ("name", 5, False),  # no bounds
    ],
)
def test_out_of_bounds(field: str, value: float, bad: bool) -> None:
    assert (out_of_bounds(field, value) is not None) is bad


def _q(replace: dict[str, str]) -> Gpu:
    text = Q.read_text()
    for key, value in replace.items():
        text, n = re.subn(
            rf"^(\s+{re.escape(key)}\s+: ).*$", lambda m, v=value: m.group(1) + v, text, count=1, flags=re.M
        )
        assert n == 1, key
    return parse_query_text(text, "q.txt").gpus[0]


def test_q_text_implausible_values_are_null_with_their_reason() -> None:
    gpu = _q({"Power Draw": "-5.00 W", "GPU Current Temp": "2147483648 C", "Fan Speed": "-1 %"})
    for field in ("power_draw_w", "temp_c", "fan_percent"):
        assert getattr(gpu, field) is None
        assert gpu.missing[field] == Missing.IMPLAUSIBLE
    assert gpu.power_limit_w == 700  # the rest is read as printed


def test_implausible_value_is_said() -> None:
    text = Q.read_text().replace(
        "GPU Current Temp                  : 33 C", "GPU Current Temp                  : 4294967295 C"
    )
    snapshot = parse_query_text(text, "q.txt")
    assert snapshot.gpus[0].missing["temp_c"] == Missing.IMPLAUSIBLE
    assert any("temp_c" in d.message and "outside" in d.message for d in snapshot.diagnostics)


def test_xml_implausible_power() -> None:
    text = (CORPUS / "smi-xml" / "001-tesla-t4-515-v11.xml").read_text()
    text = re.sub(r"<power_draw>[^<]*</power_draw>", "<power_draw>-26.78 W</power_draw>", text, count=1)
    gpu = parse_query_xml(text, "x.xml").gpus[0]
    assert gpu.power_draw_w is None
    assert gpu.missing["power_draw_w"] == Missing.IMPLAUSIBLE


def test_table_implausible_temperature() -> None:
    text = (CORPUS / "smi" / "003-1xh100-545.txt").read_text().replace(" 33C ", " 999C ")
    gpu = parse_table(text, "t.txt").gpus[0]
    assert gpu.temp_c is None
    assert gpu.missing["temp_c"] == Missing.IMPLAUSIBLE
    assert gpu.power_draw_w == 72


@pytest.mark.parametrize(
    "path",
    [
        *sorted((CORPUS / "smi").glob("*.txt")),
        *sorted((CORPUS / "smi-q").glob("*.txt")),
        *sorted((CORPUS / "smi-xml").glob("*.xml")),
        *(CORPUS / "h100-vm" / n for n in ("q.txt", "q-d.txt", "q.xml", "nvidia-smi.txt")),
    ],
    ids=lambda p: p.name,
)
def test_real_outputs_are_plausible(path: Path) -> None:
    parse = (
        parse_query_xml
        if path.suffix == ".xml"
        else parse_query_text
        if "smi-q" in str(path) or "/q" in str(path)
        else parse_table
    )
    snapshot = parse(path.read_text(encoding="utf-8"), str(path))
    assert not any(Missing.IMPLAUSIBLE in g.missing.values() for g in snapshot.gpus)
