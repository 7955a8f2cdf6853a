"""Host copies judged against the PCIe link the slot allows (facts/bands.py hostlink_band, facts/pcie.py
slot_pcie_link): every published healthy figure in tests/fixtures/hostlink-floor (and reference-tools) over its
generation's floor with a margin, a card in an older host a platform note and not a failure, a link trained below
its slot a failure, in `bench hostlink --from` and in verify."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rigcheck.checks.verify.judge import judge
from rigcheck.facts import catalog
from rigcheck.facts.bands import HOSTLINK_EVIDENCE, band_for, hostlink_band
from rigcheck.facts.pcie import pcie_bandwidth_gbps
from rigcheck.model import Snapshot
from rigcheck.readers.reference.reference_import import hostlink_document, read_tool_output
from tests.checks.test_verify_judge import gpu_check, hostlink_doc, node_inputs
from tests.support.cli import Rigcheck
from tests.support.snapshots import healthy_8x_h100

FIXTURES = Path(__file__).parent.parent / "fixtures"
FLOOR = FIXTURES / "hostlink-floor"
NVB_H100_25 = FLOOR / "nvbandwidth-1xh100-25gbs-synthetic.txt"
Q_GEN4_SLOT = FLOOR / "smi-q-1xh100-gen4-slot-synthetic.txt"
Q_GEN5_TRAINED_GEN4 = FLOOR / "smi-q-1xh100-gen5-slot-trained-gen4-synthetic.txt"
MARGIN = 0.10  # every healthy figure at least this far over its floor


def _bandwidth_test(path: Path) -> list[tuple[str, float]]:
    """(direction, GB/s) of each pinned host copy in CUDA bandwidthTest output: the largest size's row."""
    text = path.read_text(encoding="utf-8")
    found: list[tuple[str, float]] = []
    for block in re.split(r"(?m)^\s*(?=(?:Host to Device|Device to Host|Device to Device) Bandwidth)", text):
        if block.startswith(("Host to Device", "Device to Host")):
            rows = re.findall(r"(?m)^\s*(\d+)\s+([\d.]+)\s*$", block)
            found.append((block[:14], float(max(rows, key=lambda r: int(r[0]))[1])))
    return found


def _nvbandwidth(path: Path) -> list[float]:
    output = read_tool_output(path.read_text(encoding="utf-8"), str(path))
    assert output is not None
    one_way = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce")
    return [r.gbps for r in hostlink_document(output).results if r.name in one_way]


# The published healthy figures, by the generation of the link they ran on (x16 each).
def _healthy() -> dict[int, list[float]]:
    gen3 = _bandwidth_test(FLOOR / "bandwidthtest-t4-a100-v100-gen3-host.md")
    assert len(gen3) == 6  # T4, A100 (in a Gen3 host), V100: h2d and d2h each
    gen4 = [v for _, v in _bandwidth_test(FLOOR / "bandwidthtest-a100-pcie-della-cut.txt")]
    gen4 += _nvbandwidth(FIXTURES / "reference-tools" / "nvbandwidth-8x4090-v0.2-cut.txt")
    gen5 = _nvbandwidth(FLOOR / "nvbandwidth-8x5090-cut.txt")
    gen5 += _nvbandwidth(FIXTURES / "reference-tools" / "nvbandwidth-1xh100-vm-v0.8.txt")
    return {3: [v for _, v in gen3], 4: gen4, 5: gen5}


def test_every_published_healthy_copy_is_over_its_generations_floor_with_a_margin() -> None:
    healthy = _healthy()
    assert {g: len(v) for g, v in healthy.items()} == {3: 6, 4: 18, 5: 18}
    for gen, figures in healthy.items():
        band = hostlink_band("hostlink_h2d", gen, 16)
        assert band is not None
        assert min(figures) >= band.expected_min * (1 + MARGIN), (gen, min(figures), band.expected_min)
        evidence = HOSTLINK_EVIDENCE[gen]
        assert evidence.lowest_healthy == pytest.approx(min(figures), abs=0.01)  # the facts cite these files
        assert evidence.best_healthy == pytest.approx(max(figures), abs=0.01)


def test_the_old_floors_failed_the_published_healthy_gen3_and_crowded_gen4() -> None:
    # 0.75 x the encoded rate, the floor before: 11.8 on Gen3 x16, 23.6 on Gen4 x16.
    healthy = _healthy()
    assert all(v < 0.75 * 15.75 for v in healthy[3] if v < 11.5)  # T4 9.7 and V100 9.6 failed
    assert min(healthy[4]) < 0.75 * 31.51 * 1.02  # 23.9 against 23.6: 1% over, no margin at all


def test_a_link_trained_one_generation_down_or_to_half_its_lanes_falls_under_the_floor() -> None:
    healthy = _healthy()
    for gen in (4, 5):
        floor = HOSTLINK_EVIDENCE[gen].floor_x16
        assert max(healthy[gen - 1]) < floor  # the best the generation below reaches: it fails
        assert max(healthy[gen]) / 2 < floor  # the same generation at x8 of x16
    # No generation's copies reach more of its encoded rate than this (Gen5: 57.35 of 63.0): a Gen3 link trained
    # at Gen2 (8.0 GB/s encoded, 8b/10b) reaches less than Gen3's floor.
    best_fraction = max(max(healthy[g]) / (pcie_bandwidth_gbps(g, 16) or 1) for g in healthy)
    assert best_fraction == pytest.approx(0.91, abs=0.01)
    assert (pcie_bandwidth_gbps(2, 16) or 0) * best_fraction < HOSTLINK_EVIDENCE[3].floor_x16
    x8 = hostlink_band("hostlink_d2h", 5, 8)
    assert x8 is not None
    assert x8.expected_min == pytest.approx(21.0)  # a slot that allows x8: half the floor


def test_a_generation_without_published_figures_gets_half_its_encoded_rate() -> None:
    band = hostlink_band("hostlink_h2d", 2, 16)
    assert band is not None
    assert band.expected_min == pytest.approx(4.0)
    assert band.peak == pytest.approx(8.0)
    assert "no published Gen2" in band.source


def test_the_skus_own_link_as_built_is_the_fallback_band() -> None:
    h100 = catalog.lookup("H100 SXM5")
    t4 = catalog.lookup("Tesla T4")
    assert h100 is not None
    assert t4 is not None
    h100_band, t4_band = band_for(h100, "hostlink_h2d"), band_for(t4, "hostlink_h2d")
    assert h100_band is not None
    assert t4_band is not None
    assert (h100_band.expected_min, t4_band.expected_min) == (42.0, 8.0)
    assert "as built" in h100_band.basis


# --- bench hostlink --from: the tool's output and the machine's description ------------------------------------


def _bench(rigcheck: Rigcheck, *files: Path) -> tuple[int, dict[str, object]]:
    argv = ["bench", "hostlink", *(a for f in files for a in ("--from", str(f))), "--json"]
    code, out, err = rigcheck(*argv)
    assert code in (0, 1), err
    return code, json.loads(out)


def test_a_gen5_h100_in_a_gen4_slot_copying_25_gbs_is_not_failed(rigcheck: Rigcheck) -> None:
    code, doc = _bench(rigcheck, NVB_H100_25, Q_GEN4_SLOT)
    judged = doc["judgement"]
    assert isinstance(judged, list)
    assert [(j["check"], j["verdict"], j["floor"]) for j in judged] == [
        ("hostlink_h2d", "pass", 20.0),
        ("hostlink_d2h", "pass", 20.0),
    ]
    assert judged[0]["margin_pct"] == pytest.approx(28.0)  # 25.61 over 20
    assert "the link the slot allows; the card can do Gen5" in judged[0]["reason"]
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert "GPU 0: the slot allows PCIe Gen4 x16, the card Gen5: a platform limit, not a GPU fault" in " ".join(notes)
    assert code == 0


def test_a_gen5_h100_whose_link_trained_down_in_a_gen5_slot_fails(rigcheck: Rigcheck) -> None:
    code, doc = _bench(rigcheck, NVB_H100_25, Q_GEN5_TRAINED_GEN4)
    judged = doc["judgement"]
    assert isinstance(judged, list)
    assert [(j["verdict"], j["floor"]) for j in judged] == [("fail", 42.0), ("fail", 42.0)]
    assert judged[0]["margin_pct"] == pytest.approx(-39.0)
    assert "the link reads Gen4 x16, below the Gen5 x16 its slot allows: trained down" in judged[0]["reason"]
    assert not any("platform limit" in n for n in doc["notes"])  # type: ignore[attr-defined]
    assert code == 1


def test_without_the_machine_the_card_is_held_to_its_own_link_and_told_to_add_it(
    rigcheck: Rigcheck,
) -> None:
    # 25.6 GB/s is under the H100's own Gen5 floor but a Gen4 slot's figure: unjudged, not failed
    # (tests/checks/test_hostlink_no_slot.py); the note asks for the machine
    code, doc = _bench(rigcheck, NVB_H100_25)
    assert [j["verdict"] for j in doc["judgement"]] == ["unjudged", "unjudged"]  # type: ignore[attr-defined]
    assert any("the link the slot allows is not known" in n for n in doc["notes"])  # type: ignore[attr-defined]
    assert code == 0


def test_the_published_healthy_5090s_pass_with_their_margin(rigcheck: Rigcheck) -> None:
    code, doc = _bench(rigcheck, FLOOR / "nvbandwidth-8x5090-cut.txt")
    judged = doc["judgement"]
    assert isinstance(judged, list)
    assert len(judged) == 16
    assert {j["verdict"] for j in judged} == {"pass"}
    assert min(j["margin_pct"] for j in judged) == pytest.approx(34.0)  # 56.30 over 42
    assert code == 0


# --- verify: the snapshot's slot --------------------------------------------------------------------------------


def _slot(gen_max: int, gen_now: int, card: int = 5) -> Snapshot:
    snap = healthy_8x_h100()
    for g in snap.gpus:
        g.pcie_gen_max, g.pcie_gen_current, g.pcie_gen_gpu_max = gen_max, gen_now, card
    return snap


def test_verify_holds_host_copies_to_the_slots_link() -> None:
    h2d, d2h = [25.6] * 8, [26.3] * 8
    gen4 = judge(node_inputs(snapshot=_slot(4, 4), full=False, hostlink=hostlink_doc(h2d, d2h)))
    check = gpu_check(gen4, 0, "hostlink_h2d")
    assert (check.verdict, check.expected_min) == ("pass", 20.0)
    band = next(j for j in check.judgements if j.rule == "band")
    assert band.text.startswith("25.6 GB/s, floor 20.0 (PCIe Gen4 x16, the link the slot allows; the card can do Gen5")
    assert band.text.endswith("), 28% above")
    assert any(
        n.startswith("GPU 0, 1, 2, 3, 4, 5, 6, 7: the slot allows PCIe Gen4 x16, the card Gen5") for n in gen4.notes
    )
    gen5 = judge(node_inputs(snapshot=_slot(5, 4), full=False, hostlink=hostlink_doc(h2d, d2h)))
    failed = gpu_check(gen5, 0, "hostlink_h2d")
    assert (failed.verdict, failed.expected_min) == ("fail", 42.0)
    assert not any("platform limit" in n for n in gen5.notes)
