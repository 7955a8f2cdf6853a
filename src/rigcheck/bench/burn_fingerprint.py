"""`rigcheck burn`'s cross-GPU fingerprint, run once before its load (issue 28): the seeded workload of
rigcheck.bench.fingerprint on each GPU of the burn, the GPUs their peers cannot settle once more with the float64
reference (fingerprint_runs, the sequence `verify` runs), judged as `verify` judges it
(rigcheck.checks.verify.fingerprint). A GPU whose result differs from its identical peers' (or from the reference)
gets the finding ``sdc.fingerprint-mismatch`` (fail): the burn exits 1.

Ranks: one per GPU of the burn, in NVML index order. The launcher's ranks are CUDA devices 0..n-1, so where the
burn's GPUs are not CUDA's 0..n-1 in that order (`--gpus 1,3`, CUDA numbering GPUs otherwise than NVML) the workers
get CUDA_VISIBLE_DEVICES naming them (by this process's own entries where it has the variable): no rank starts CUDA
on a GPU outside the burn. On CPU devices (the tests' path, as `verify --cpu`) each GPU is a CPU rank. The test hook
``RIGCHECK_TEST_FLIP=RANK[:BITS[:persistent]]`` names the rank: the GPU's place in the burn's list.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from rigcheck.bench.fingerprint import fingerprint_runs, gpu_dtypes
from rigcheck.checks.verify.fingerprint import FINDING_ID, judge_fingerprints
from rigcheck.errors import was_interrupted
from rigcheck.model.burn import BurnFingerprint, BurnFingerprintGpu
from rigcheck.model.finding import Finding, Severity, gpu_subject

# Spawning a rank per GPU, starting CUDA in each and the workload (~10 s on 8 H100s, verify's share), and a re-run.
TIMEOUT_S = 180.0
SOURCE = (
    "cuBLAS documentation, 'Results reproducibility' (bitwise identical results for one toolkit, architecture and SM "
    "count): identical GPUs must agree bit for bit; NVIDIA's gate-level study of GPU faults (arXiv 2605.04213): few "
    "corrupted outcomes are NaN/Inf; docs/checks.md 'fingerprint'"
)
ADVICE = (
    "this GPU computes a wrong answer, the same way each time, where its identical peers agree: drain it, reset it "
    "and run the fingerprint again (`rigcheck verify --only fingerprint`); if it repeats, run NVIDIA's field "
    "diagnostic (`dcgmi diag -r 3`) and have the GPU replaced"
)


def visible_devices(ordinals: list[int], environ: Mapping[str, str]) -> dict[str, str]:
    """The workers' CUDA_VISIBLE_DEVICES making ranks 0..n-1 the CUDA devices ``ordinals`` of this process; none
    where they already are."""
    if ordinals == list(range(len(ordinals))):
        return {}
    given = environ.get("CUDA_VISIBLE_DEVICES")
    entries = [e.strip() for e in given.split(",")] if given else None
    return {"CUDA_VISIBLE_DEVICES": ",".join(entries[o] if entries else str(o) for o in ordinals)}


def _plan(
    torch: Any, devices: Mapping[int, Any], environ: Mapping[str, str]
) -> tuple[bool, dict[str, str], tuple[str, ...] | None]:
    """Whether the ranks are CPU processes, the workers' environment, and the chains (the lowest compute capability
    decides)."""
    if all(d.type == "cpu" for d in devices.values()):
        return True, {}, None
    ordinals = [int(devices[i].index) for i in sorted(devices)]
    capability = min(tuple(torch.cuda.get_device_capability(d)) for d in devices.values())
    return False, visible_devices(ordinals, environ), gpu_dtypes(capability)


def burn_fingerprint(
    torch: Any,
    devices: Mapping[int, Any],
    *,
    timeout_s: float = TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> BurnFingerprint:
    """The fingerprint of the burn's GPUs (NVML index -> the torch device its load runs on), each GPU's verdict."""
    say = on_progress or (lambda _: None)
    cpu, worker_env, dtypes = _plan(torch, devices, os.environ if environ is None else environ)
    index_of = dict(enumerate(sorted(devices)))  # rank -> NVML index
    rank_of = {index: rank for rank, index in index_of.items()}
    say(f"burn: fingerprint of {len(rank_of)} GPU(s) before the load (identical GPUs must agree bit for bit)")
    runs = fingerprint_runs(
        cpu=cpu,
        world_size=len(rank_of),
        timeout_s=timeout_s,
        dtypes=dtypes,
        environ=environ,
        on_progress=say,
        on_rerun=lambda again: say(
            f"burn: fingerprint: GPU {', '.join(str(index_of[r]) for r in again)} re-run with a float64 reference "
            "(their peers disagree)"
        ),
        worker_env=worker_env,
    )
    rerun = sorted(index_of[r.rank] for r in runs.again_rows if r.rank in index_of)
    verdicts = {} if was_interrupted(runs.error) else judge_fingerprints(runs.first.rows, runs.again_rows)
    gpus: list[BurnFingerprintGpu] = []
    for index in sorted(rank_of):
        v = verdicts.get(rank_of[index])
        if v is None:
            why = runs.error or "its rank reported no result"
            gpus.append(BurnFingerprintGpu(index=index, verdict="incomplete", text=why, first_difference=None))
        else:
            gpus.append(
                BurnFingerprintGpu(index=index, verdict=v.verdict, text=v.text, first_difference=v.first_difference)
            )
    return BurnFingerprint(method=runs.first.method, skipped=None, error=runs.error, rerun=rerun, gpus=gpus)


def fingerprint_findings(fingerprint: BurnFingerprint) -> dict[int, Finding]:
    """The finding of each GPU the fingerprint fails (``sdc.fingerprint-mismatch``)."""
    return {
        g.index: Finding(
            id=FINDING_ID,
            severity=Severity.FAIL,
            category="sdc",
            subject=gpu_subject(g.index),
            gpu=g.index,
            message=f"fingerprint before the load: {g.text.removeprefix(FINDING_ID + ': ')}",
            measured=f"first differs at {g.first_difference}" if g.first_difference else g.text,
            expected="equal bit for bit to its identical peers' (alone or split: within tolerance of a float64 "
            "CPU reference, and repeating itself)",
            advice=ADVICE,
            source=SOURCE,
        )
        for g in fingerprint.gpus
        if g.verdict == "fail"
    }
