"""p2p bands of PCIe GeForce/RTX pairs and the P2P-enabled-slower-than-staged flag (checks/reference/p2p.py),
on real p2pBandwidthLatencyTest and nvbandwidth outputs (tests/fixtures/p2p-bands/README.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import Rigcheck

HERE = Path(__file__).parent.parent / "fixtures"
NO_P2P_4090 = HERE / "p2p-bands" / "2x4090-p2p-disabled-by-driver.txt"
BROKEN_4090 = HERE / "p2p-bands" / "2x4090-broken-p2p-driver-525.txt"
ACS_6GPU = HERE / "reference-tools" / "p2p-6gpu-pcie-writes-reads-cut.txt"
A6000_6 = HERE / "reference-tools" / "nvbandwidth-6xa6000-d2d-read-ce-v0.8.txt"


def _bench(rigcheck: Rigcheck, *argv: str, expect: int) -> list[dict[str, Any]]:
    code, out, err = rigcheck("bench", "p2p", "--from", *argv, "--json")
    assert code == expect, err
    judgements: list[dict[str, Any]] = json.loads(out)["judgement"]
    return judgements


def test_a_4090_pair_without_p2p_is_judged_on_its_pcie_link_and_passes(rigcheck: Rigcheck) -> None:
    judged = _bench(rigcheck, str(NO_P2P_4090), expect=0)
    assert [(j["check"], j["subject"], j["verdict"]) for j in judged] == [
        ("p2p", "GPU0->GPU1", "pass"),
        ("p2p", "GPU1->GPU0", "pass"),
    ]
    assert "PCIe Gen4 x16" in judged[0]["reason"]  # the catalog's link as built: no snapshot needed


def test_p2p_enabled_slower_than_staged_is_flagged_with_why(rigcheck: Rigcheck) -> None:
    judged = _bench(rigcheck, str(BROKEN_4090), expect=1)
    flagged = [j for j in judged if j["check"] == "p2p_vs_staged"]
    assert [(j["subject"], j["verdict"], j["value"], j["floor"]) for j in flagged] == [
        ("GPU1->GPU0", "fail", 11.46, 22.67)
    ]
    assert "49% slower than the staged copy" in flagged[0]["reason"]
    assert "ACS" in flagged[0]["reason"]
    assert "IOMMU" in flagged[0]["reason"]
    assert flagged[0]["margin_pct"] == pytest.approx(-49.4, abs=0.1)


def test_a_pair_that_cannot_use_peer_access_is_not_flagged(rigcheck: Rigcheck) -> None:
    # CANNOT Access Peer: both matrices are staged copies (20.91 against 21.73 is noise, not a slow path).
    judged = _bench(rigcheck, str(NO_P2P_4090), expect=0)
    assert not [j for j in judged if j["check"] == "p2p_vs_staged"]


def test_every_pair_of_a_matrix_routed_through_the_root_complex_is_flagged(
    rigcheck: Rigcheck,
) -> None:
    # NVIDIA/nccl #814: P2P enabled 9.6-10.5 GB/s against staged 20.1-22.4 on six PCIe GPUs. The output names
    # no GPU, so the p2p band is not judged, and says so; the comparison needs no model. The excerpt is cut: 1.
    judged = _bench(rigcheck, str(ACS_6GPU), expect=1)
    assert Counter((j["check"], j["verdict"]) for j in judged) == {
        ("p2p", "unjudged"): 30,
        ("p2p_vs_staged", "fail"): 30,
    }
    assert "the output does not name the GPU model" in judged[0]["reason"]


def test_bridge_capable_cards_without_topology_are_held_to_pcie(rigcheck: Rigcheck) -> None:
    judged = _bench(rigcheck, str(A6000_6), "--gpu", "RTX A6000", expect=0)
    assert {j["verdict"] for j in judged} == {"pass"}
    assert all("an NVLink bridge, if any, is not assumed" in j["reason"] for j in judged)


def test_a_pair_without_peer_access_is_held_to_the_staged_band(rigcheck: Rigcheck) -> None:
    # 2x RTX 2080 Ti that CANNOT access each other: 5.72 GB/s staged through host memory, published as a working
    # box; the direct-P2P floor (8.7 on Gen3 x16) failed it, the staged one (0.30 x 15.75 = 4.7) does not.
    path = HERE / "corpus" / "p2p" / "001-2x2080ti-cannot-access-peer.txt"
    judged = _bench(rigcheck, str(path), expect=0)
    assert [(j["verdict"], j["floor"]) for j in judged] == [("pass", 4.7), ("pass", 4.7)]
    assert "staged through host memory (no peer access)" in judged[0]["reason"]


def test_verify_holds_a_pair_without_peer_access_to_the_staged_band() -> None:
    from rigcheck.checks.verify.judge import judge
    from tests.checks.test_verify_judge import node_check, node_inputs, p2p_doc, rule

    doc = p2p_doc({(0, 1): 20.0}, link="PIX", nvlinks=None)  # synthetic: 20 GB/s over a Gen5 x16 PCIe link
    direct = judge(node_inputs(p2p=doc, full=False))
    assert rule(node_check(direct, "p2p_0_1"), "band") == "fail"  # with peer access: 0.55 x 63 = 34.7
    staged = doc.model_copy(update={"results": [r.model_copy(update={"peer_access": False}) for r in doc.results]})
    check = node_check(judge(node_inputs(p2p=staged, full=False)), "p2p_0_1")
    assert rule(check, "band") == "pass"
    assert check.expected_min == pytest.approx(18.9)  # 0.30 x 63.0: copies staged through host memory
