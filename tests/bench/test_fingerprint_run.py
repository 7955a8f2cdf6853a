"""The fingerprint for real on CPU ranks (gloo): `verify --cpu --gpus 0,1,2,3` runs four ranks of the same code the
GPUs run; the test hook flips bits of one rank's result and that rank alone fails, named with its first step (its
three peers passing: a run without the hook passes every rank, as tests/bench/test_verify_run.py's CPU run shows)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from rigcheck.bench.fingerprint import flip_bits, parse_flip
from rigcheck.errors import UsageError
from rigcheck.model.fingerprint import FLIP_VAR
from tests.support.cli import Rigcheck

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
RUN = ("verify", "--cpu", "--only", "fingerprint", "--json")


def _fingerprints(data: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {g["index"]: next(c for c in g["checks"] if c["id"] == "fingerprint") for g in data["gpus"]}


@needs_torch
def test_a_flipped_rank_fails_and_its_three_peers_pass(rigcheck: Rigcheck) -> None:
    result = rigcheck(*RUN, "--gpus", "0,1,2,3", env={FLIP_VAR: "2"})
    assert result.code == 1, result.stderr[-2000:]
    checks = _fingerprints(result.json)
    assert sorted(checks) == [0, 1, 2, 3]
    assert [checks[i]["verdict"] for i in range(4)] == ["pass", "pass", "fail", "pass"]
    judgement = checks[2]["judgements"][0]
    assert judgement["finding"] == "sdc.fingerprint-mismatch"
    assert judgement["first_difference"] == "gemm_fp32_1"  # the hook flips the first product
    assert (
        result.json["drain_reason"] == "rigcheck verify: fail rank2 fingerprint sdc.fingerprint-mismatch at gemm_fp32_1"
    )


@needs_torch
def test_two_ranks_apart_are_re_run_against_the_float64_reference(rigcheck: Rigcheck) -> None:
    once = rigcheck(*RUN, "--gpus", "0,1", env={FLIP_VAR: "1"})  # the first run only: its two runs differ
    assert [once.json["gpus"][i]["checks"][0]["verdict"] for i in (0, 1)] == ["pass", "fail"]
    assert "own two runs differ from step gemm_fp32_1" in _fingerprints(once.json)[1]["detail"]
    assert "re-run with a float64 reference" in once.stderr
    # A flip on every run (persistent) is off the float64 reference instead: tests/bench/test_fingerprint_inprocess.py


@needs_torch
def test_a_bad_hook_fails_the_step_with_its_words(rigcheck: Rigcheck) -> None:
    result = rigcheck(*RUN, "--gpus", "0,1", env={FLIP_VAR: "two"})
    step = next(s for s in result.json["steps"] if s["name"] == "fingerprint")
    assert step["status"] == "failed"
    assert "RIGCHECK_TEST_FLIP takes GPU[:BITS[:persistent]]" in step["reason"]


def test_the_hook_is_read_as_written() -> None:
    assert parse_flip("2") == (2, 1, False)
    assert parse_flip("3:4:persistent") == (3, 4, True)
    assert parse_flip(None) is None
    for bad in ("x", "1:0", "1:9", "1:2:always", "-1", "1:2:persistent:x"):
        with pytest.raises(UsageError):
            parse_flip(bad)


@needs_torch
def test_a_flip_changes_the_exponent_of_the_first_element_only() -> None:
    import torch

    t = torch.ones(4, dtype=torch.float32)
    flip_bits(torch, t, 1)
    assert t[0].item() != 1.0
    assert t[1:].tolist() == [1.0, 1.0, 1.0]
    b = torch.ones(2, dtype=torch.bfloat16)
    flip_bits(torch, b, 2)
    flip_bits(torch, b, 2)  # twice: the same bits back
    assert b.tolist() == [1.0, 1.0]
