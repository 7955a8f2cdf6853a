"""Host copies judged where the slot's generation is not known (a bare bandwidthTest or nvbandwidth output, a
snapshot without the PCIe max generation): a figure under the card's own floor but at or over the floor of the
same width one generation older is not judged, its reason naming the likely slot limit and asking for the
machine's `nvidia-smi -q`; under that older floor it still fails; with the slot known nothing changes
(checks/verify/figures.py hostlink_floor, facts/bands.py older_hostlink_band)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigcheck.checks.verify.figures import hostlink_floor
from rigcheck.checks.verify.judge import judge
from rigcheck.facts import catalog
from rigcheck.facts.bands import HOSTLINK_EVIDENCE, older_hostlink_band
from rigcheck.model import Snapshot
from tests.checks.test_verify_judge import gpu_check, hostlink_doc, node_inputs, rule
from tests.support.cli import Rigcheck
from tests.support.snapshots import healthy_8x_h100

HERE = Path(__file__).parent.parent
# Real: an A100 SXM4 (a Gen4 card) in a cloud VM, 12.3 / 13.2 GB/s, healthy by its source (tests/calibration).
A100_VM = HERE / "calibration" / "cases" / "bandwidthtest-1xa100-sxm4-cloud-vm.txt"
# Synthetic (tests/fixtures/hostlink-floor/README.md): one H100's nvidia-smi -q edited to a Gen4 slot.
Q_H100_GEN4_SLOT = HERE / "fixtures" / "hostlink-floor" / "smi-q-1xh100-gen4-slot-synthetic.txt"


def _bench(rigcheck: Rigcheck, *files: Path) -> tuple[int, list[dict[str, object]], list[str]]:
    argv = ["bench", "hostlink", *(a for f in files for a in ("--from", str(f))), "--json"]
    code, out, err = rigcheck(*argv)
    assert code in (0, 1), err
    doc = json.loads(out)
    return code, doc["judgement"], doc["notes"]


def _a100_copies(tmp_path: Path, h2d: str, d2h: str) -> Path:
    """SYNTHETIC: the real A100 VM output with its two pinned host figures replaced."""
    text = A100_VM.read_text(encoding="utf-8")
    assert text.count("\t12.3\n") == 1
    assert text.count("\t13.2\n") == 1
    out = tmp_path / "bandwidthtest-a100-synthetic.txt"
    out.write_text(text.replace("\t12.3\n", f"\t{h2d}\n").replace("\t13.2\n", f"\t{d2h}\n"), encoding="utf-8")
    return out


def _a100_gen4_slot(tmp_path: Path) -> Path:
    """SYNTHETIC: the H100 Gen4-slot nvidia-smi -q renamed to an A100 SXM4 whose own max is Gen4: the slot allows
    the card's own Gen4 x16."""
    text = Q_H100_GEN4_SLOT.read_text(encoding="utf-8")
    assert "NVIDIA H100 80GB HBM3" in text
    assert text.count("Device Max                : 5") == 1
    text = text.replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB")
    out = tmp_path / "smi-q-a100-gen4-slot-synthetic.txt"
    out.write_text(text.replace("Device Max                : 5", "Device Max                : 4"), encoding="utf-8")
    return out


# --- bench hostlink --from ---------------------------------------------------------------------------------------


def test_the_a100_in_a_cloud_vm_is_not_failed_and_the_reason_names_the_slot(
    rigcheck: Rigcheck,
) -> None:
    code, judged, notes = _bench(rigcheck, A100_VM)
    assert [(j["check"], j["verdict"], j["floor"]) for j in judged] == [
        ("hostlink_h2d", "unjudged", None),
        ("hostlink_d2h", "unjudged", None),
    ]
    reason = str(judged[0]["reason"])
    assert reason.startswith("12.3 GB/s, under the floor 20.0 of the card's own link Gen4 x16 (38% below), over 8")
    assert "the slot likely allows only Gen3 (an older host, or a VM's passthrough)" in reason
    assert "a link trained down to Gen3 in a Gen4 slot reads the same, so this is no pass" in reason
    assert "add the machine's `nvidia-smi -q` with a second --from" in reason
    assert "margin_pct" not in judged[0]  # unjudged: no margin, as the document's contract says
    assert any("one generation older would reach is not judged" in n for n in notes)
    assert code == 0


def test_a_figure_at_half_the_older_generations_floor_still_fails(tmp_path: Path, rigcheck: Rigcheck) -> None:
    gen3 = HOSTLINK_EVIDENCE[3].floor_x16
    half = gen3 / 2  # 4.0: half the lanes of a Gen3 slot, or worse: no plausible slot explains it
    code, judged, _ = _bench(rigcheck, _a100_copies(tmp_path, f"{half:g}", f"{gen3 - 0.1:g}"))
    assert [(j["verdict"], j["floor"]) for j in judged] == [("fail", 20.0), ("fail", 20.0)]
    assert judged[0]["margin_pct"] == pytest.approx(-80.0)
    assert code == 1


def test_a_figure_at_the_older_generations_floor_is_not_judged(tmp_path: Path, rigcheck: Rigcheck) -> None:
    gen3 = HOSTLINK_EVIDENCE[3].floor_x16
    code, judged, _ = _bench(rigcheck, _a100_copies(tmp_path, f"{gen3:g}", "19.9"))
    assert [j["verdict"] for j in judged] == ["unjudged", "unjudged"]  # the floor itself and just under 20
    assert code == 0


def test_with_the_slot_given_as_gen4_a_gen3_figure_fails(tmp_path: Path, rigcheck: Rigcheck) -> None:
    code, judged, notes = _bench(rigcheck, A100_VM, _a100_gen4_slot(tmp_path))
    assert [(j["check"], j["verdict"], j["floor"]) for j in judged] == [
        ("hostlink_h2d", "fail", 20.0),
        ("hostlink_d2h", "fail", 20.0),
    ]
    assert "PCIe Gen4 x16, the link the slot allows" in str(judged[0]["reason"])
    assert "not judged" not in str(judged[0]["reason"])
    assert not any("the link the slot allows is not known" in n for n in notes)
    assert code == 1


# --- the rule's reach -----------------------------------------------------------------------------------------------


def test_only_onto_a_generation_with_published_copies() -> None:
    # Gen4 -> Gen3 and Gen5 -> Gen4 have measured floors; a Gen3 card has no Gen2 leeway (no published Gen2 copy)
    gen4_in_gen3, gen5_in_gen4 = older_hostlink_band("hostlink_h2d", 4, 16), older_hostlink_band("hostlink_h2d", 5, 16)
    assert gen4_in_gen3 is not None
    assert gen5_in_gen4 is not None
    assert (gen4_in_gen3.expected_min, gen5_in_gen4.expected_min) == (8.0, 20.0)
    assert older_hostlink_band("hostlink_h2d", 3, 16) is None
    t4 = catalog.lookup("Tesla T4")
    assert t4 is not None
    floor = hostlink_floor("hostlink_h2d", None, t4)
    assert floor.older is None
    assert not floor.slot_explains(5.0)  # a T4 at 5 GB/s fails as before


def test_a_link_read_at_the_cards_own_generation_gets_no_leeway() -> None:
    # no max generation in the snapshot, but the link reads Gen4 now: the slot allows Gen4, so 12.3 fails
    a100 = catalog.lookup("A100 SXM4 40GB")
    assert a100 is not None
    gpu = healthy_8x_h100().gpus[0]
    gpu.pcie_gen_max, gpu.pcie_gen_current = None, 4
    assert hostlink_floor("hostlink_h2d", gpu, a100).older is None
    gpu.pcie_gen_current = 1  # idle power saving says nothing of the slot
    assert hostlink_floor("hostlink_h2d", gpu, a100).slot_explains(12.3)


# --- verify: a snapshot without the PCIe max generation -------------------------------------------------------------


def _no_max(gen_now: int | None = 1) -> Snapshot:
    snap = healthy_8x_h100()
    for g in snap.gpus:
        g.pcie_gen_max, g.pcie_gen_current, g.pcie_gen_gpu_max = None, gen_now, None
    return snap


def test_verify_without_the_max_generation_leaves_a_gen4_figure_of_an_h100_unjudged() -> None:
    judged = judge(node_inputs(snapshot=_no_max(), full=False, hostlink=hostlink_doc([25.6] * 8, [26.3] * 8)))
    check = gpu_check(judged, 0, "hostlink_h2d")
    band = next(j for j in check.judgements if j.rule == "band")
    assert band.verdict == "not_judged"
    assert band.text.startswith("25.6 GB/s, under the floor 42.0 of the card's own link Gen5 x16 (39% below)")
    assert "the slot likely allows only Gen4" in band.text
    assert "a snapshot that reads the PCIe max generation" in band.text
    assert check.verdict != "fail"
    # the eight alike pass the peers rule; the band holds nothing either way
    assert rule(check, "peers") == "pass"


def test_verify_without_the_max_generation_fails_half_the_older_floor() -> None:
    judged = judge(node_inputs(snapshot=_no_max(), full=False, hostlink=hostlink_doc([10.0] * 8, [10.0] * 8)))
    check = gpu_check(judged, 0, "hostlink_h2d")
    assert (check.verdict, check.expected_min, rule(check, "band")) == ("fail", 42.0, "fail")


def test_verify_with_the_max_generation_holds_the_slot() -> None:
    snap = healthy_8x_h100()
    for g in snap.gpus:
        g.pcie_gen_max, g.pcie_gen_current, g.pcie_gen_gpu_max = 5, 4, 5  # a Gen5 slot, trained down to Gen4
    judged = judge(node_inputs(snapshot=snap, full=False, hostlink=hostlink_doc([25.6] * 8, [26.3] * 8)))
    check = gpu_check(judged, 0, "hostlink_h2d")
    assert (check.verdict, rule(check, "band")) == ("fail", "fail")
