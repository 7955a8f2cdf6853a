"""The fingerprint's workload in this process (what a fleet rank runs on its own device, and each verify worker):
deterministic from one run to the next, a flipped bit changes its first product and everything after, the float64
reference sees the flip, and the settings it needs are put back afterwards."""

from __future__ import annotations

import importlib.util
import math

import pytest

from rigcheck.bench.fingerprint import compute_row, deterministic, make_payload
from rigcheck.model.fingerprint import FLIP_VAR, FingerprintRow

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


def _row(rank: int, environ: dict[str, str], *, reference: bool = False) -> FingerprintRow:
    import torch

    device = torch.device("cpu")
    with deterministic(torch, device):
        return compute_row(torch, device, make_payload(cpu=True, reference=reference, environ=environ), rank)


def test_the_same_workload_gives_the_same_digests_and_restores_the_threads() -> None:
    import torch

    threads = torch.get_num_threads()
    first, again = _row(0, {}), _row(1, {})
    assert torch.get_num_threads() == threads  # a fleet rank goes on measuring with its own settings
    assert [s.digest for s in first.steps] == [s.digest for s in again.steps]
    names = [s.name for s in first.steps]
    assert names == [*(f"gemm_{d}_{i}" for d in ("fp32", "bf16") for i in (1, 2, 3)), "gpt2_loss", "gpt2_grads"]
    assert first.reference_error is None


def test_a_flip_changes_the_first_product_on_and_the_reference_sees_it() -> None:
    clean = _row(1, {}, reference=True)
    flipped = _row(1, {FLIP_VAR: "1:2:persistent"}, reference=True)
    steps = list(zip(clean.steps, flipped.steps, strict=True))
    assert [a.digest == b.digest for a, b in steps[:3]] == [False, False, False]  # the fp32 chain carries it on
    assert all(a.digest == b.digest for a, b in steps[3:])  # the other chains and the GPT-2 step do not see it
    errors = clean.reference_error
    assert errors is not None
    assert errors["fp32"] < 1e-5
    assert errors["bf16"] < 0.05
    assert errors["gpt2"] < 1e-6
    assert flipped.reference_error is not None
    off = flipped.reference_error["fp32"]
    assert not math.isfinite(off) or off > 1.0
    other_rank = _row(0, {FLIP_VAR: "1:2:persistent"})
    assert other_rank.steps[0].digest == clean.steps[0].digest  # only rank 1 flips
