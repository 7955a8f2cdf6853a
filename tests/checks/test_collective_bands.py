"""All-gather and reduce-scatter bands on 8-GPU NVSwitch boards (facts/collective_bands.py), and broadcast unjudged.

Real inputs: the 8x A100-SXM4-40GB SuperBench reference logs and the DGX-2 all-gather whose footer counts wrong
values (tests/calibration/cases, sources in tests/calibration/manifest.json). The slow and wrong-data variants
below are SYNTHETIC: the real A100 log with its 8 GiB row rewritten, as each test says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.facts import collective_bands
from rigcheck.facts.allreduce_bands import GIB, MIB
from tests.calibration.runner import CASES_DIR
from tests.support.cli import Rigcheck

A100_AG = CASES_DIR / "allgather-8xa100-sxm4-40gb-superbench.log"
A100_RS = CASES_DIR / "reducescatter-8xa100-sxm4-40gb-superbench.log"
A100_BC = CASES_DIR / "broadcast-8xa100-sxm4-40gb-superbench.log"
V100_AG_FAILED = CASES_DIR / "allgather-12xv100-dgx2-4-failed.txt"
AG_8GIB_ROW = "8589934592     268435456   float    33646  255.31  223.39    N/A    32669  262.94  230.07    N/A"


def _bench(rigcheck: Rigcheck, op: str, path: Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = rigcheck("bench", op, "--from", str(path), "--json")
    return code, json.loads(out)


@pytest.mark.parametrize(
    ("chip", "links", "floor"), [("GA100", 12, 180.0), ("GH100", 18, 300.0)], ids=["a100", "h100-h200"]
)
@pytest.mark.parametrize("op", collective_bands.OPS)
def test_board_band_sits_under_its_lowest_published_healthy_figure(
    op: str, chip: str, links: int, floor: float
) -> None:
    found = collective_bands.node_condition(op, chip, links, gpus=8, nvswitch=True, size=8 * GIB, env={})
    assert found.floor == floor
    assert found.lowest_healthy is not None
    assert found.floor < found.lowest_healthy * 0.9  # a margin of 10% or more
    assert found.source is not None
    assert "https://" in found.source
    assert "margin" in found.source
    assert "NVSwitch" in found.condition
    assert ">= 1 GiB" in found.condition


def test_no_band_off_the_board_under_1_gib_for_fewer_links_or_a_forced_algorithm() -> None:
    def floor(**kw: Any) -> float | None:
        args: dict[str, Any] = {"gpus": 8, "nvswitch": True, "size": 8 * GIB, "env": {}}
        args.update(kw)
        chip, links = args.pop("chip", "GH100"), args.pop("links", 18)
        return collective_bands.node_condition("allgather", chip, links, **args).floor

    assert floor() == 300.0
    assert floor(gpus=4) is None
    assert floor(nvswitch=False) is None
    assert floor(size=512 * MIB) is None
    assert floor(links=8) is None  # H800: GH100 with fewer NVLinks
    assert floor(chip="GV100", links=6) is None
    assert floor(env={"NCCL_ALGO": "NVLS"}) is None  # NVLS forced: slower for these two, no published figure
    assert floor(env={"NCCL_ALGO": "Ring"}) == 300.0
    assert floor(env={"NCCL_ALGO": "^NVLS"}) == 300.0


@pytest.mark.parametrize(("op", "path", "busbw"), [("allgather", A100_AG, 223.39), ("reducescatter", A100_RS, 231.52)])
def test_healthy_a100_board_passes_with_its_margin(op: str, path: Path, busbw: float, rigcheck: Rigcheck) -> None:
    code, doc = _bench(rigcheck, op, path)
    judgement = doc["judgement"]
    assert code == 0
    assert judgement["verdict"] == "pass"
    assert judgement["band_floor_gbps"] == 180.0
    assert f"busbw {busbw:g} GB/s at 8 GiB, floor 180" in judgement["reason"]
    assert "% above" in judgement["reason"]


def test_slow_a100_all_gather_fails(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # SYNTHETIC: the real log with its 8 GiB row slowed to 150.33 GB/s busbw
    text = A100_AG.read_text(encoding="utf-8")
    assert text.count(AG_8GIB_ROW) == 1
    slow = text.replace("33646  255.31  223.39    N/A", "50000  171.80  150.33    N/A")
    path = tmp_path / "all_gather_slow.log"
    path.write_text(slow, encoding="utf-8")
    _, doc = _bench(rigcheck, "allgather", path)
    assert doc["judgement"]["verdict"] == "fail"
    assert "busbw 150.33 GB/s at 8 GiB, floor 180" in doc["judgement"]["reason"]
    code_text, _, _ = rigcheck("bench", "allgather", "--from", str(path))
    assert code_text == 1


def test_wrong_data_still_fails_above_the_floor(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # SYNTHETIC: the real log as if run with validation on (errors 0e+00), an error at 8 GiB and the footer
    # counting it, as nccl-tests before 2.0 prints
    text = A100_AG.read_text(encoding="utf-8").replace("validation: 0", "validation: 1")
    bad = (
        text.replace(AG_8GIB_ROW, AG_8GIB_ROW.replace("223.39    N/A", "223.39  1e+00"))
        .replace("    N/A", "  0e+00")
        .replace("# Out of bounds values : 0 OK", "# Out of bounds values : 1 FAILED")
    )
    path = tmp_path / "all_gather_wrong.log"
    path.write_text(bad, encoding="utf-8")
    _, doc = _bench(rigcheck, "allgather", path)
    assert doc["judgement"]["verdict"] == "pass"  # the speed is fine...
    assert any(r["correct"] is False for r in doc["results"])  # ...the data is not
    assert rigcheck("bench", "allgather", "--from", str(path))[0] == 1


def test_real_dgx2_all_gather_with_wrong_values_fails(rigcheck: Rigcheck) -> None:
    _, doc = _bench(rigcheck, "allgather", V100_AG_FAILED)
    assert any(r["correct"] is False for r in doc["results"])
    assert rigcheck("bench", "allgather", "--from", str(V100_AG_FAILED))[0] == 1


def test_broadcast_is_unjudged_with_its_reason(rigcheck: Rigcheck) -> None:
    _, doc = _bench(rigcheck, "broadcast", A100_BC)
    judgement = doc["judgement"]
    assert judgement["verdict"] == "unjudged"
    assert judgement["band_floor_gbps"] is None
    assert "no floor for broadcast" in judgement["reason"]
    assert "nccl/issues/1678" in judgement["reason"]


def test_a_gb300_tray_is_not_called_a_box_without_nvswitch(rigcheck: Rigcheck) -> None:
    # 4x GB300 on one tray (OCI, tests/calibration): its GPUs reach each other through the NVL72 rack's switches,
    # so "without NVSwitch" misled; no band either way (published figures are for the whole rack).
    _, out, _ = rigcheck("bench", "allreduce", "--from", str(CASES_DIR / "allreduce-4xgb300-oci-single-node.txt"))
    assert "without NVSwitch" not in out
    assert "on one tray" in out
