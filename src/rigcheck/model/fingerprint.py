"""The cross-GPU fingerprint: one seeded workload per GPU, each step's output hashed (rigcheck.bench.fingerprint
measures it, rigcheck.checks.verify.fingerprint judges it).

A GPU that computes a wrong answer the same way every time passes every self-comparison (gpu-burn, DCGM's diag
compare a GPU with its own earlier result) and most NaN watches: NVIDIA's gate-level study of silent data
corruption finds NaN/Inf in about 1% of the corrupted outcomes. cuBLAS promises bitwise-identical results for the
same toolkit, architecture and SM count (the cuBLAS documentation, "Results reproducibility"), so identical GPUs of
one node, under the same driver, CUDA and torch, must agree bit for bit: the peers are the reference.
"""

from __future__ import annotations

from pydantic import Field

from rigcheck.model.document import Plain

FLIP_VAR = "RIGCHECK_TEST_FLIP"  # GPU[:BITS[:persistent]]: flip bits of that GPU's result before hashing (tests)


class FingerprintStep(Plain):
    """One step of the workload and the hash of its output."""

    name: str = Field(description='"gemm_fp32_1" (the first product of the fp32 chain), "gpt2_loss", "gpt2_grads"')
    digest: str = Field(description="the first 16 hex digits of the SHA-256 of the output's bytes")


class FingerprintRow(Plain):
    """What one rank (one GPU, or a CPU process on a CPU run) computed."""

    rank: int
    gpu: int | None = Field(description="the GPU (CUDA ordinal); null on a CPU run")
    device_name: str
    sm_count: int | None = Field(description="streaming multiprocessors (cuBLAS's results depend on it); null: CPU")
    torch: str
    cuda: str | None = Field(description="the CUDA runtime torch was built with; null on a CPU build")
    run: int = Field(description="1: the first run; 2: the re-run of GPUs the peers could not settle")
    steps: list[FingerprintStep]
    reference_error: dict[str, float] | None = Field(
        description="per chain (fp32, bf16, ..., gpt2): the final output's largest error from a float64 CPU "
        "reference, relative to the reference's largest magnitude; null when not asked for (the first run)"
    )


class FingerprintRun(Plain):
    """Every rank's fingerprint of one launch, and how the launch ended."""

    rows: list[FingerprintRow]
    error: str | None = Field(description="the one line of a launch that failed or was cut short; null: done")
    method: str = Field(description="what was hashed, in one line")
