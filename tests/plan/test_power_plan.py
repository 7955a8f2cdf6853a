"""The PSU and cable planner: the guide's own rig, 12VHPWR, SXM, 6-pin mixes, PSU verdicts and errors."""

from __future__ import annotations

import json
import math
from re import escape as re_escape

import pytest

from rigcheck.errors import UsageError
from rigcheck.plan.power import (
    COMMON_PSU_SIZES_W,
    TRANSIENT_FACTOR,
    adapter_8pin_inputs,
    plan_power,
    round_up_psu,
)
from rigcheck.report.render import Format, render
from tests.support.cli import Rigcheck

REQUIRED_KEYS = {
    "schema",
    "total_gpu_power_w",
    "independent_cables_total",
    "cables",
    "recommended_psu_w",
    "cpu_watts",
    "rest_of_system_w",
    "transient_factor",
    "headroom_source",
    "notes",
}


def test_the_guides_rig_two_titan_rtx() -> None:
    plan = plan_power("TITAN RTX", 2)
    d = plan.to_json_dict()
    assert set(d) >= REQUIRED_KEYS
    assert d["schema"] == "rigcheck.power-plan/1"
    assert d["total_gpu_power_w"] == 560
    assert d["gpu"] == {
        "name": "TITAN RTX",
        "count": 2,
        "board_power_w": 280,
        "form_factor": "pcie",
        "source": d["gpu"]["source"],
    }
    assert isinstance(d["gpu"]["board_power_w"], int)  # the catalog's 280, not 280.0: the JSON keeps its types
    assert d["independent_cables_total"] == 4
    assert d["cables"] == [
        {"gpu": 0, "connectors": [{"kind": "8-pin", "count": 2, "watts_each": 150}]},
        {"gpu": 1, "connectors": [{"kind": "8-pin", "count": 2, "watts_each": 150}]},
    ]
    # 560 x 1.5 + 150 CPU (assumed) + 150 rest = 1140 -> 1200
    assert d["cpu_watts"] == 150
    assert d["cpu_watts_assumed"] is True
    assert d["recommended_psu_w"] == 1200
    assert "psu_ok" not in d  # only with --psu-watts
    assert any("pigtail" in n.lower() for n in d["notes"])
    json.dumps(d, allow_nan=False)  # JSON-clean


def test_12vhpwr_card_rtx_4090() -> None:
    d = plan_power("NVIDIA GeForce RTX 4090", 1, cpu_watts=200).to_json_dict()
    assert d["total_gpu_power_w"] == 450
    assert d["cables"] == [{"gpu": 0, "connectors": [{"kind": "12VHPWR", "count": 1, "watts_each": 600}]}]
    assert d["independent_cables_total"] == 1
    assert d["cpu_watts"] == 200
    assert d["cpu_watts_assumed"] is False
    assert d["recommended_psu_w"] == 1200  # 450 x 1.5 + 200 + 150 = 1025 -> 1200
    adapter_notes = [n for n in d["notes"] if "adapter" in n]
    assert len(adapter_notes) == 1
    assert "3 independent 8-pin" in adapter_notes[0]


def test_sxm_card_has_no_pcie_cables() -> None:
    d = plan_power("NVIDIA H100 80GB HBM3", 8).to_json_dict()
    assert d["total_gpu_power_w"] == 5600
    assert d["independent_cables_total"] == 0
    assert all(c["connectors"] == [] for c in d["cables"])
    assert len(d["cables"]) == 8
    assert any("baseboard" in n for n in d["notes"])
    # 5600 x 1.5 + 150 + 150 = 8700: beyond common sizes, rounded to 50 W and flagged
    assert d["recommended_psu_w"] == 8700
    assert any("several PSUs" in n for n in d["notes"])


def test_mixed_8_and_6_pin_sockets() -> None:
    # Reference designs only: the TITAN V / GTX 1080 Ti take one 8-pin and one 6-pin. (No reference or
    # Founders Edition card in the catalog has three 8-pin sockets: the RTX 3090 Ti FE uses one 12VHPWR, whose
    # adapter takes three 8-pin cables -- checked below.)
    d = plan_power("NVIDIA TITAN V", 3).to_json_dict()
    assert d["independent_cables_total"] == 6
    assert d["cables"][2]["connectors"] == [
        {"kind": "8-pin", "count": 1, "watts_each": 150},
        {"kind": "6-pin", "count": 1, "watts_each": 75},
    ]


def test_three_8pin_inputs_for_the_3090_ti_adapter() -> None:
    plan = plan_power("GeForce RTX 3090 Ti", 2)
    assert plan.independent_cables_total == 2  # one native 12VHPWR cable each
    assert any("at least 3 independent 8-pin" in n for n in plan.notes)
    assert adapter_8pin_inputs(450) == 3
    assert adapter_8pin_inputs(350) == 2  # RTX 3090 FE: the 12-pin adapter takes two 8-pin
    assert adapter_8pin_inputs(575) == 4  # RTX 5090
    assert adapter_8pin_inputs(900) == 4  # never more inputs than an adapter has


def test_slot_powered_and_eps_cards() -> None:
    t4 = plan_power("Tesla T4", 4)
    assert t4.independent_cables_total == 0
    assert any("slot" in n for n in t4.notes)
    a6000 = plan_power("NVIDIA RTX A6000", 2)
    assert a6000.independent_cables_total == 2
    assert a6000.cables[0].connectors[0].kind == "8-pin CPU"
    assert a6000.cables[0].connectors[0].watts_each is None
    d = a6000.to_json_dict()
    assert d["cables"][0]["connectors"][0]["watts_each"] is None
    assert any("EPS12V" in n for n in d["notes"])


def test_a_null_watts_each_has_its_reason_beside_it() -> None:
    eps = plan_power("NVIDIA RTX A6000", 1).to_json_dict()["cables"][0]["connectors"][0]
    assert eps == {
        "kind": "8-pin CPU",
        "count": 1,
        "watts_each": None,
        "watts_each_reason": "the PCIe CEM specification gives the EPS12V (CPU) 8-pin socket no rating",
    }
    fe = plan_power("RTX 3090", 1).to_json_dict()["cables"][0]["connectors"][0]
    assert (fe["kind"], fe["watts_each"]) == ("12-pin", None)
    assert fe["watts_each_reason"] == "NVIDIA published no rating for its 12-pin connector (the guide: up to 500-600 W)"
    rated = plan_power("TITAN RTX", 1).to_json_dict()["cables"][0]["connectors"][0]
    assert "watts_each_reason" not in rated  # a number needs no reason: the key is there only beside a null


@pytest.mark.parametrize(("psu", "ok"), [(1200, True), (1600, True), (1199, False), (850, False)])
def test_psu_ok(psu: float, ok: bool) -> None:
    d = plan_power("TITAN RTX", 2, psu_watts=psu).to_json_dict()
    assert d["psu_ok"] is ok
    assert d["psu_watts"] == psu


def test_psu_formula_and_rounding() -> None:
    plan = plan_power("GeForce RTX 3090", 4, cpu_watts=280)
    assert plan.transient_factor == TRANSIENT_FACTOR == 1.5
    assert plan.required_w == pytest.approx(350 * 4 * 1.5 + 280 + 150)
    assert plan.recommended_psu_w == 2550  # 2530 -> next 50 W above the common sizes
    assert round_up_psu(100) == 550
    assert round_up_psu(650) == 650
    assert round_up_psu(651) == 750
    assert round_up_psu(1201) == 1300
    assert round_up_psu(2001) == 2050
    assert list(COMMON_PSU_SIZES_W) == sorted(COMMON_PSU_SIZES_W)


def test_unknown_gpu_lists_close_matches() -> None:
    with pytest.raises(UsageError, match="TITAN RTX") as info:
        plan_power("Titan RTXX", 1)
    assert info.value.kind == "usage"


def test_ambiguous_gpu_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="Quadro RTX 6000"):
        plan_power("RTX 6000", 1)


@pytest.mark.parametrize("count", [0, -1, 65, 1000])
def test_count_out_of_range(count: int) -> None:
    with pytest.raises(UsageError, match="count"):
        plan_power("TITAN RTX", count)


@pytest.mark.parametrize(("psu", "cpu"), [(-1.0, None), (math.nan, None), (None, -5.0), (None, math.inf), (0.0, None)])
def test_bad_watts(psu: float | None, cpu: float | None) -> None:
    with pytest.raises(UsageError):
        plan_power("TITAN RTX", 1, psu_watts=psu, cpu_watts=cpu)


def test_gpu_without_board_power_cannot_be_planned() -> None:
    with pytest.raises(UsageError, match="GB200"):
        plan_power("NVIDIA GB200", 4)


def test_terminal_markdown_and_html_say_the_same_plan() -> None:
    plan = plan_power("RTX 4090", 4, psu_watts=1200)
    md = render(plan, Format.MARKDOWN)
    assert isinstance(md, str)
    assert md.startswith("# rigcheck power plan\n")
    assert "| 3 | 1 × 12VHPWR (600 W each) | 1 |" in md
    assert "- **Recommended PSU: 3000 W.**" in md
    assert "- **Your PSU is NOT enough for this load.** (1200 W given)" in md
    page = render(plan, Format.HTML)
    assert isinstance(page, str)
    assert '<p class="result bad">Your PSU is NOT enough for this load. (1200 W given)</p>' in page
    assert "<td>1 × 12VHPWR (600 W each)</td>" in page
    no_psu = render(plan_power("NVIDIA H100 80GB HBM3", 1), Format.MARKDOWN)
    assert isinstance(no_psu, str)
    assert "| 0 | none (powered by the baseboard or the slot) | 0 |" in no_psu
    assert "PSU is" not in no_psu  # no verdict without --psu-watts


# --- --power-limit: cards run below their board power -----------------------------------------------------------


def test_four_4090s_at_300_w_size_the_psu_for_the_limit_and_keep_the_cables() -> None:
    limited = plan_power("RTX 4090", 4, psu_watts=1600, power_limit_w=300)
    full = plan_power("RTX 4090", 4, psu_watts=1600)
    d = limited.to_json_dict()
    assert d["gpu"]["power_limit_w"] == 300
    assert d["total_gpu_power_w"] == 1200
    assert d["required_w"] == 1200 * TRANSIENT_FACTOR + 150 + 150
    assert d["recommended_psu_w"] == 2100
    assert d["psu_ok"] is False
    assert full.recommended_psu_w > limited.recommended_psu_w
    # the cables are the card's as built: the same sockets and count as at full board power
    assert d["cables"] == full.to_json_dict()["cables"]
    assert d["independent_cables_total"] == full.independent_cables_total == 4
    limit_note = next(n for n in d["notes"] if "power limit" in n and "board power" in n)
    assert "sized for its 450 W board power, not the limit" in limit_note
    psu_note = next(n for n in d["notes"] if n.startswith("PSU:"))
    assert "covers short GPU power excursions above the sustained power limit" in psu_note
    assert "200% of its rating for 100 us" in psu_note


def test_without_a_limit_the_plan_serializes_as_before() -> None:
    d = plan_power("TITAN RTX", 2).to_json_dict()
    assert "power_limit_w" not in d["gpu"]
    psu_note = next(n for n in d["notes"] if n.startswith("PSU:"))
    assert "above the sustained board power" in psu_note


@pytest.mark.parametrize(
    ("limit", "says"),
    [
        (451, "above the GeForce RTX 4090's 450 W board power"),
        (100, "below 112.5 W, a quarter of the GeForce RTX 4090's 450 W board power"),
        (math.nan, "--power-limit must be a finite number"),
    ],
)
def test_a_limit_outside_the_cards_range_is_refused(limit: float, says: str) -> None:
    with pytest.raises(UsageError, match=re_escape(says)):
        plan_power("RTX 4090", 1, power_limit_w=limit)


def test_the_limit_in_every_rendering_and_on_the_command_line(rigcheck: Rigcheck) -> None:
    plan = plan_power("RTX 4090", 4, power_limit_w=300)
    for fmt in (Format.MARKDOWN, Format.HTML):
        text = render(plan, fmt)
        assert isinstance(text, str)
        assert "run at a 300 W power limit" in text
    result = rigcheck("power", "plan", "--gpu", "RTX 4090", "--count", "4", "--power-limit", "300", "--json")
    assert result.code == 0
    assert result.json["gpu"]["power_limit_w"] == 300
    result = rigcheck("power", "plan", "--gpu", "RTX 4090", "--power-limit", "600")
    assert result.code == 2
    err = result.stderr
    assert len(err.strip().splitlines()) == 1
    assert "above the GeForce RTX 4090's 450 W board power" in err
