"""The cross-GPU fingerprint's judge: identical GPUs agree bit for bit, or the ones apart are named (with the first
step that differs), re-run against a float64 reference where the peers cannot settle it."""

from __future__ import annotations

import math

from rigcheck.checks.verify.fingerprint import FINDING_ID, TOLERANCE, judge_fingerprints, needs_reference
from rigcheck.model.fingerprint import FingerprintRow, FingerprintStep

STEPS = ("gemm_fp32_1", "gemm_fp32_2", "gemm_bf16_1", "gpt2_loss", "gpt2_grads")
GOOD = ("a1", "a2", "b1", "c1", "c2")


def _row(
    gpu: int,
    digests: tuple[str, ...] = GOOD,
    *,
    name: str = "NVIDIA H100 80GB HBM3",
    sm: int = 132,
    run: int = 1,
    errors: dict[str, float] | None = None,
) -> FingerprintRow:
    return FingerprintRow(
        rank=gpu,
        gpu=gpu,
        device_name=name,
        sm_count=sm,
        torch="2.9.0",
        cuda="12.8",
        run=run,
        steps=[FingerprintStep(name=s, digest=d) for s, d in zip(STEPS, digests, strict=True)],
        reference_error=errors,
    )


def _bad_from(step: int) -> tuple[str, ...]:
    return tuple(d if i < step else d + "x" for i, d in enumerate(GOOD))


FINE = {"fp32": 1e-7, "bf16": 4e-3, "gpt2": 1e-8}


def test_eight_identical_gpus_that_agree_all_pass() -> None:
    got = judge_fingerprints([_row(i) for i in range(8)])
    assert {v.verdict for v in got.values()} == {"pass"}
    assert "to those of 7 identical peers" in got[0].text
    assert needs_reference([_row(i) for i in range(8)]) == []


def test_the_gpu_apart_from_the_majority_fails_named_with_its_first_differing_step() -> None:
    rows = [_row(0), _row(1), _row(2, _bad_from(2)), _row(3)]
    got = judge_fingerprints(rows)
    assert [got[i].verdict for i in range(4)] == ["pass", "pass", "fail", "pass"]
    assert got[2].first_difference == "gemm_bf16_1"
    assert got[2].finding == FINDING_ID
    assert "differs from 3 of 4 identical GPUs from step gemm_bf16_1 on" in got[2].text
    assert needs_reference(rows) == []  # the majority settles it: no re-run


def test_gpus_of_another_model_or_sm_count_are_not_its_peers() -> None:
    rows = [_row(0), _row(1), _row(2), _row(3, _bad_from(0), name="NVIDIA A100-SXM4-80GB", sm=108)]
    got = judge_fingerprints(rows, [_row(3, _bad_from(0), name="NVIDIA A100-SXM4-80GB", sm=108, run=2, errors=FINE)])
    assert needs_reference(rows) == [3]  # alone in its group: held to the reference, not to the H100s
    assert [got[i].verdict for i in range(4)] == ["pass", "pass", "pass", "pass"]
    assert "no identical peer" in got[3].text


def test_two_that_disagree_are_both_re_run_and_the_one_off_the_reference_fails() -> None:
    rows = [_row(0), _row(1, _bad_from(0))]
    assert needs_reference(rows) == [0, 1]
    again = [_row(0, run=2, errors=FINE), _row(1, _bad_from(0), run=2, errors={**FINE, "fp32": 3.0})]
    got = judge_fingerprints(rows, again)
    assert (got[0].verdict, got[1].verdict) == ("pass", "fail")
    assert f"fp32 3 from the float64 reference (tolerance {TOLERANCE['fp32']:g})" in got[1].text


def test_a_flip_that_does_not_repeat_still_fails_its_own_two_runs_differ() -> None:
    rows = [_row(0), _row(1, _bad_from(1))]  # a transient error in GPU 1's first run
    got = judge_fingerprints(rows, [_row(0, run=2, errors=FINE), _row(1, run=2, errors=FINE)])
    assert (got[0].verdict, got[1].verdict) == ("pass", "fail")
    assert got[1].first_difference == "gemm_fp32_2"
    assert "own two runs differ" in got[1].text


def test_a_result_that_is_not_finite_fails() -> None:
    got = judge_fingerprints([_row(0)], [_row(0, run=2, errors={**FINE, "bf16": math.nan})])
    assert got[0].verdict == "fail"
    assert "bf16 not finite" in got[0].text


def test_two_that_each_repeat_themselves_within_tolerance_yet_differ_are_unjudged() -> None:
    rows = [_row(0), _row(1, _bad_from(4))]
    again = [_row(0, run=2, errors=FINE), _row(1, _bad_from(4), run=2, errors=FINE)]
    got = judge_fingerprints(rows, again)
    assert {got[0].verdict, got[1].verdict} == {"unjudged"}
    assert "cannot be said" in got[0].text


def test_a_half_and_half_split_has_no_majority_and_goes_to_the_reference() -> None:
    rows = [_row(0), _row(1), _row(2, _bad_from(0)), _row(3, _bad_from(0))]
    assert needs_reference(rows) == [0, 1, 2, 3]
    again = [_row(i, run=2, errors=FINE if i < 2 else {**FINE, "fp32": 0.5}) for i in range(4)]
    got = judge_fingerprints(rows, again)
    assert [got[i].verdict for i in range(4)] == ["pass", "pass", "fail", "fail"]


def test_a_re_run_that_gave_nothing_is_incomplete() -> None:
    got = judge_fingerprints([_row(0)], [])
    assert got[0].verdict == "incomplete"
