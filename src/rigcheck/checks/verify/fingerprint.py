"""The cross-GPU fingerprint judged: identical GPUs must agree bit for bit (rigcheck.model.fingerprint says why).

Pure. The rules, rigcheck's unless a source is named:

- **Peers**: the GPUs of one model with the same SM count, torch and CUDA (rows that differ in any of these may
  round differently and are never compared). On a CPU run the ranks are the peers.
- **Three or more peers**: the digests every step agrees on in more than half of them are the reference. A GPU
  that differs fails (``sdc.fingerprint-mismatch``), named with the first step where it differs: a wrong answer
  repeated the same way every time, which a GPU compared with itself never shows. With no majority (half and
  half, or all different), every GPU of the group is re-run with a float64 CPU reference.
- **Two peers that disagree, or a GPU with no peer**: re-run, and each chain's final output is held to a float64
  CPU reference within :data:`TOLERANCE` of its dtype; a GPU over it (or with a result that is not finite)
  fails. A GPU whose own two runs differ fails too: under deterministic settings a GPU repeats itself bit for
  bit. Two GPUs that both repeat themselves, both within tolerance and still differ cannot be told apart: both
  are ``unjudged``, with why.

:func:`needs_reference` says which GPUs the runner re-runs; :func:`judge_fingerprints` gives each GPU its check.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from rigcheck.model.fingerprint import FingerprintRow
from rigcheck.units import plural

FINDING_ID: Final = "sdc.fingerprint-mismatch"
# The largest error of a chain's final output from the float64 reference, relative to the reference's largest
# magnitude. A product of length n in a dtype of unit roundoff u is off by about sqrt(n)·u with random signs
# (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §3.1 and the probabilistic bound of Higham &
# Mary 2019); a chain rounds again at every product. Measured on 4 CPU ranks (n=96, 3 products): fp32 4.6e-7, bf16
# 5.1e-3, the GPT-2 loss 2.7e-8. Each tolerance is about 20x what a chain of 4 products of n=4096 gives in its dtype
# (u: fp32 6.0e-8, tf32 and fp16 4.9e-4, bf16 3.9e-3), far below what a flipped exponent or high mantissa bit does.
TOLERANCE: Final[Mapping[str, float]] = {"fp32": 1e-4, "tf32": 0.05, "fp16": 0.05, "bf16": 0.25, "gpt2": 1e-3}

Outcome = Literal["pass", "fail", "unjudged", "incomplete"]


@dataclass(frozen=True)
class FingerprintVerdict:
    """One GPU's fingerprint check."""

    key: int  # the GPU index (the rank on a CPU run)
    verdict: Outcome
    text: str
    first_difference: str | None = None  # the first step where it differs from the reference digests
    finding: str | None = None  # FINDING_ID when it fails


def key_of(row: FingerprintRow) -> int:
    return row.gpu if row.gpu is not None else row.rank


def _peer_key(row: FingerprintRow) -> tuple[str, int | None, str, str | None]:
    return (row.device_name, row.sm_count, row.torch, row.cuda)


def _groups(rows: Sequence[FingerprintRow]) -> list[list[FingerprintRow]]:
    groups: dict[tuple[str, int | None, str, str | None], list[FingerprintRow]] = {}
    for row in rows:
        groups.setdefault(_peer_key(row), []).append(row)
    return list(groups.values())


def _first_difference(row: FingerprintRow, reference: Sequence[str | None]) -> str | None:
    for step, ref in zip(row.steps, reference, strict=False):
        if ref is None or step.digest != ref:
            return step.name
    return None if len(row.steps) == len(reference) else "the step count"


def _majority(group: Sequence[FingerprintRow]) -> list[str | None]:
    """Per step, the digest more than half the group agree on (None where none has a majority)."""
    steps = max(len(r.steps) for r in group)
    out: list[str | None] = []
    for i in range(steps):
        counts = Counter(r.steps[i].digest for r in group if i < len(r.steps))
        digest, count = counts.most_common(1)[0]
        out.append(digest if count * 2 > len(group) else None)
    return out


def _settled_by_peers(group: Sequence[FingerprintRow]) -> dict[int, FingerprintVerdict] | None:
    """The verdicts of a group its peers settle; None when the group needs the reference."""
    if len(group) == 2 and [s.digest for s in group[0].steps] == [s.digest for s in group[1].steps]:
        return {key_of(r): _agree(r, 1) for r in group}
    if len(group) < 3:
        return None
    majority = _majority(group)
    if any(d is None for d in majority):
        return None
    out: dict[int, FingerprintVerdict] = {}
    for row in group:
        step = _first_difference(row, majority)
        if step is None:
            out[key_of(row)] = _agree(row, len(group) - 1)
        else:
            agree = sum(1 for r in group if _first_difference(r, majority) is None)
            out[key_of(row)] = FingerprintVerdict(
                key=key_of(row),
                verdict="fail",
                text=(
                    f"{FINDING_ID}: its result differs from {agree} of {plural(len(group), 'identical GPU')} from "
                    f"step {step} on (they agree bit for bit): a wrong answer the same workload gives every time"
                ),
                first_difference=step,
                finding=FINDING_ID,
            )
    return out


def _agree(row: FingerprintRow, peers: int) -> FingerprintVerdict:
    return FingerprintVerdict(
        key=key_of(row),
        verdict="pass",
        text=f"{plural(len(row.steps), 'step')} equal bit for bit to those of {plural(peers, 'identical peer')}",
    )


def needs_reference(rows: Sequence[FingerprintRow]) -> list[int]:
    """The GPUs to re-run with the float64 reference: those whose peers cannot settle them."""
    return sorted(key_of(r) for g in _groups(rows) if _settled_by_peers(g) is None for r in g)


def _over_tolerance(errors: Mapping[str, float]) -> list[str]:
    out = []
    for chain, err in errors.items():
        limit = TOLERANCE.get(chain)
        if not math.isfinite(err):
            out.append(f"{chain} not finite")
        elif limit is not None and err > limit:
            out.append(f"{chain} {err:.2g} from the float64 reference (tolerance {limit:g})")
    return out


def _by_reference(first: FingerprintRow, again: FingerprintRow | None, alone: bool) -> FingerprintVerdict:
    key = key_of(first)
    if again is None or again.reference_error is None:
        return FingerprintVerdict(key, "incomplete", "its re-run with the float64 reference gave no result")
    over = _over_tolerance(again.reference_error)
    if over:
        return FingerprintVerdict(
            key,
            "fail",
            f"{FINDING_ID}: {'; '.join(over)}",
            first_difference=None,
            finding=FINDING_ID,
        )
    changed = _first_difference(again, [s.digest for s in first.steps])
    if changed is not None:
        return FingerprintVerdict(
            key,
            "fail",
            f"{FINDING_ID}: its own two runs differ from step {changed} on, under deterministic settings",
            first_difference=changed,
            finding=FINDING_ID,
        )
    why = "no identical peer to compare with" if alone else "its identical peers and it did not agree bit for bit"
    return FingerprintVerdict(key, "pass", f"{why}: within tolerance of a float64 CPU reference, and repeats itself")


def judge_fingerprints(
    first: Sequence[FingerprintRow], again: Sequence[FingerprintRow] = ()
) -> dict[int, FingerprintVerdict]:
    """Each GPU's verdict from the first run and the re-run of :func:`needs_reference`'s GPUs."""
    rerun = {key_of(r): r for r in again}
    out: dict[int, FingerprintVerdict] = {}
    for group in _groups(first):
        settled = _settled_by_peers(group)
        if settled is not None:
            out |= settled
            continue
        judged = {key_of(r): _by_reference(r, rerun.get(key_of(r)), len(group) == 1) for r in group}
        passed = [k for k, v in judged.items() if v.verdict == "pass"]
        repeat_apart = len(passed) > 1 and len({tuple(s.digest for s in rerun[k].steps) for k in passed}) > 1
        if repeat_apart:  # each repeats itself within tolerance, yet they differ: which one is right is not known
            for k in passed:
                judged[k] = FingerprintVerdict(
                    k,
                    "unjudged",
                    "its identical peers and it each repeat their own result within tolerance of the float64 "
                    "reference, yet differ bit for bit: which one rounds wrongly cannot be said",
                )
        out |= judged
    return dict(sorted(out.items()))
