"""The peer rule of `rigcheck verify` (checks/verify/figures.py peer_judgement): three or more identical GPUs are
held to their median, so one card reading high fails no one; two must agree, else both are measured again and,
still apart, both are flagged naming each other."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.verify.figures import PEER_MARGIN, peer_judgement
from rigcheck.checks.verify.judge import NearFloor, judge
from rigcheck.readers.saved import load_saved
from tests.checks.test_verify_judge import BF16, CASES_DIR, gpu_check, node_inputs, rule
from tests.support.cli import Rigcheck

HIGH = 870.0  # one H100 reading high: seven at 766-775, all over the 712 floor


def _raise_matmul(directory: Path, gpu: int, tflops: float) -> None:
    """The saved matmul document with ``gpu``'s best row set to ``tflops`` (its repeats with it)."""
    path = directory / "matmul.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for row in doc["results"]:
        if row["gpu"] == gpu and row["best"]:
            scale = tflops / row["tflops_median"]
            for key in ("value", "median", "min", "max", "tflops_median", "tflops_min", "tflops_max"):
                row[key] *= scale
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")


def test_the_case_is_one_the_best_peer_rule_failed() -> None:
    # Under "more than 10% under the best", 870 x 0.9 = 783 failed all seven healthy GPUs.
    assert all(v < HIGH * (1 - PEER_MARGIN) for v in BF16[1:])


def test_verify_from_the_8xh100_fixture_with_one_gpu_at_870_passes_every_gpu(
    tmp_path: Path, rigcheck: Rigcheck
) -> None:
    saved = tmp_path / "h100x8-one-high"
    shutil.copytree(CASES_DIR / "h100x8-pass", saved)
    _raise_matmul(saved, 0, HIGH)
    inputs = load_saved(saved)
    inputs.findings = run_checks(inputs.snapshot)
    judged = judge(inputs)
    assert gpu_check(judged, 0, "matmul_bf16").value == pytest.approx(HIGH)
    assert {g.index: g.verdict for g in judged.gpus} == dict.fromkeys(range(8), "pass")
    peers = next(j for j in gpu_check(judged, 4, "matmul_bf16").judgements if j.rule == "peers")
    assert peers.verdict == "pass"
    assert peers.text == "766 TFLOPS, median 771 of it and 7 identical peers, 0.6% below"
    code, out, err = rigcheck("verify", "--from", str(saved), "--json")
    assert code in (0, 1), err
    data = json.loads(out)
    assert {g["index"]: g["verdict"] for g in data["gpus"]} == dict.fromkeys(range(8), "pass")
    assert "gpu" not in str(data["drain_reason"])  # no GPU named for draining


def test_the_gpu3_slow_fixture_still_fails_gpu3_alone_even_beside_one_reading_high(tmp_path: Path) -> None:
    saved = tmp_path / "slow-and-high"
    shutil.copytree(CASES_DIR / "h100x8-gpu3-slow", saved)
    _raise_matmul(saved, 0, HIGH)
    inputs = load_saved(saved)
    inputs.findings = run_checks(inputs.snapshot)
    judged = judge(inputs)
    assert {g.index: g.verdict for g in judged.gpus} == {i: "fail" if i == 3 else "pass" for i in range(8)}
    assert rule(gpu_check(judged, 3, "matmul_bf16"), "peers") == "fail"


def test_a_gpu_reading_high_is_not_itself_failed_and_moves_no_one() -> None:
    judged = judge(node_inputs(bf16=[HIGH, *BF16[1:]], full=False))
    high = gpu_check(judged, 0, "matmul_bf16")
    assert (high.verdict, rule(high, "peers")) == ("pass", "pass")
    assert all(rule(gpu_check(judged, i, "matmul_bf16"), "peers") == "pass" for i in range(8))
    assert judged.near_floor == []


def test_three_alike_take_the_median_so_one_slow_of_three_fails_alone() -> None:
    slow, healthy = peer_judgement(600.0, "TFLOPS", [770.0, 772.0], "identical peers")[0], []
    assert (slow.verdict, slow.reference) == ("fail", 770.0)
    for value, others in ((770.0, [772.0, 600.0]), (772.0, [770.0, 600.0])):
        healthy.append(peer_judgement(value, "TFLOPS", others, "identical peers")[0].verdict)
    assert healthy == ["pass", "pass"]


def test_two_alike_that_agree_pass_naming_the_other() -> None:
    judgement, best = peer_judgement(760.0, "TFLOPS", [775.0], "identical peers")
    assert (judgement.verdict, judgement.reference, best) == ("pass", 775.0, 775.0)
    assert judgement.text == "760 TFLOPS vs 775 of its one identical peer, 1.9% below: the two agree within 10%"


def test_two_alike_apart_are_both_measured_again_then_both_flagged() -> None:
    two = [770.0, 600.0]
    snap = node_inputs(full=False).snapshot
    snap.gpus = snap.gpus[:2]
    first = judge(node_inputs(bf16=two, snapshot=snap, full=False))
    assert first.near_floor == [NearFloor(step="matmul", check_id="matmul_bf16", gpu=i) for i in (0, 1)]
    texts = [next(j.text for j in gpu_check(first, i, "matmul_bf16").judgements if j.rule == "peers") for i in (0, 1)]
    assert texts[0].startswith("770 TFLOPS vs 600 of its one identical peer, 28% above: apart by more than 10%")
    # Measured again and still apart: both flagged, each naming the other's figure; no third measurement.
    again = judge(node_inputs(bf16=two, snapshot=snap, full=False), remeasured={(0, "matmul_bf16"): [765.0]})
    assert again.near_floor == [NearFloor(step="matmul", check_id="matmul_bf16", gpu=1)]
    remeasured: dict[tuple[int | None, str], list[float]] = {(i, "matmul_bf16"): [v] for i, v in enumerate(two)}
    final = judge(node_inputs(bf16=two, snapshot=snap, full=False), remeasured=remeasured)
    assert final.near_floor == []
    assert [rule(gpu_check(final, i, "matmul_bf16"), "peers") for i in (0, 1)] == ["fail", "fail"]
    text = next(j.text for j in gpu_check(final, 0, "matmul_bf16").judgements if j.rule == "peers")
    assert "re-measured and still apart" in text
    assert "both flagged" in text
    assert final.drain_reason is not None
    assert "gpu0 matmul_bf16" in final.drain_reason
    assert "gpu1 matmul_bf16" in final.drain_reason
