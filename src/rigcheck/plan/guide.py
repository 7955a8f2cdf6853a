"""The guide's own result, explained: ``rigcheck plan --explain-guide`` (the ``guide`` of ``rigcheck.plan/1``).

The guide (seed/000, "Multi-GPU Connectivity") trains gpt2 with DDP on 2x TITAN RTX for 200 steps: 101.9 s over
NVLink (NV2), 131.4 s with NCCL_P2P_DISABLE=1. How much of the 29.5 s is the gradients' bytes on a slower path,
and what the bytes alone cannot explain.
"""

from __future__ import annotations

from rigcheck.facts.catalog import TITAN_RTX
from rigcheck.facts.nvlink import nvlink_pair_bandwidth_gbps, variant_for
from rigcheck.facts.pcie import PCIE_SOURCE, pcie_bandwidth_gbps
from rigcheck.model.plan import GuideScenario, PlanGuide
from rigcheck.plan.comm import (
    ASSUMED_MFU,
    BACKWARD_SHARE,
    FP32_PEAK_TFLOPS,
    GPT2_PARAMS,
    KAPLAN,
    NCCL_TESTS,
    ZERO_PAPER,
    wire_bytes_per_gpu,
)

GPT2_SOURCE = (
    "GPT-2 small config (Radford et al. 2019; Hugging Face gpt2 config.json): vocab 50257, n_positions 1024, "
    "n_embd 768, n_layer 12; GPT2LMHeadModel ties lm_head to wte"
)
GUIDE = "the guide (seed/000, 'Multi-GPU Connectivity'): gpt2 DDP on 2x TITAN RTX, 200 steps, batch 4 per GPU"
GUIDE_NVLINK_S = 101.9003  # 'train_runtime' with NVLink (NV2), the guide's output
GUIDE_NO_P2P_S = 131.4  # with NCCL_P2P_DISABLE=1 (the guide's table: 131 s; its text: 131.4 s)
GUIDE_STEPS = 200
GUIDE_TOKENS_PER_GPU = 4 * 1024  # --per_device_train_batch_size 4, run_clm's block size for gpt2: 1024
# A measured all-reduce without P2P on the same chip (TU102): rigcheck's corpus file
# nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt, busbw at 1 GiB.
TU102_NO_P2P_BUSBW_GBPS = 4.00
TU102_NO_P2P_SOURCE = (
    "nccl-tests all_reduce_perf, 2x RTX 2080 Ti (TU102, same chip as TITAN RTX), P2P not available, busbw 4.00 "
    "GB/s at 1 GiB: Anthony-Hoo/Anthony-Hoo.github.io posts/AutoDL_Multi-GPU_Interconnection_Test.md "
    "@74cc3588 lines 279-318 (rigcheck corpus nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt); another machine"
)


def guide_rig_explanation() -> PlanGuide:
    """How much of the guide's 29.5 s (101.9 s with NV2 vs 131.4 s with NCCL_P2P_DISABLE=1) is communication."""
    params = GPT2_PARAMS
    wire = wire_bytes_per_gpu(params, 2, "ddp", "fp32")
    nv_bw = nvlink_pair_bandwidth_gbps("TU102", 2)
    nv_variant = variant_for("TU102")
    pcie_bw = pcie_bandwidth_gbps(3, 16)
    assert nv_bw is not None
    assert nv_variant is not None
    assert pcie_bw is not None
    diff_s = GUIDE_NO_P2P_S - GUIDE_NVLINK_S
    per_step_diff = diff_s / GUIDE_STEPS

    def run_comm_s(bw: float) -> float:
        return GUIDE_STEPS * wire / (bw * 1e9)

    nv_s = run_comm_s(nv_bw)
    scenarios: list[GuideScenario] = []
    for name, bw, src in (
        ("SHM at the PCIe 3.0 x16 ceiling", pcie_bw, "theoretical: " + PCIE_SOURCE),
        ("SHM at a measured no-P2P TU102 all-reduce", TU102_NO_P2P_BUSBW_GBPS, TU102_NO_P2P_SOURCE),
    ):
        shm_s = run_comm_s(bw)
        scenarios.append(
            GuideScenario(
                name=name,
                shm_busbw_gbps=bw,
                shm_busbw_source=src,
                comm_s_per_run=shm_s,
                extra_comm_s_vs_nvlink=shm_s - nv_s,
                share_of_difference=(shm_s - nv_s) / diff_s,
            )
        )
    # The SHM bandwidth that would explain the whole difference, all of it exposed (no overlap at all).
    implied_bw = wire / (per_step_diff + wire / (nv_bw * 1e9)) / 1e9
    peak, peak_src = FP32_PEAK_TFLOPS["TITAN RTX"]
    flops = 6.0 * params * GUIDE_TOKENS_PER_GPU
    compute_s = flops / (peak * ASSUMED_MFU * 1e12)
    measured_step = GUIDE_NVLINK_S / GUIDE_STEPS
    return PlanGuide(
        source=GUIDE,
        params=params,
        params_source=GPT2_SOURCE,
        gpus=2,
        strategy="ddp",
        dtype="fp32",
        wire_bytes_per_gpu_per_step=wire,
        wire_formula="2(n-1)/n x params x 4 B, n = 2 (ring all-reduce of fp32 gradients)",
        wire_source=ZERO_PAPER + "; " + NCCL_TESTS,
        steps=GUIDE_STEPS,
        measured_nvlink_s=GUIDE_NVLINK_S,
        measured_no_p2p_s=GUIDE_NO_P2P_S,
        measured_difference_s=diff_s,
        measured_difference_per_step_s=per_step_diff,
        nvlink_busbw_gbps=nv_bw,
        nvlink_busbw_source=(
            f"TU102 NVLink: 2 links x {nv_variant.link_gbps:g} GB/s per direction ({nv_variant.source})"
        ),
        nvlink_comm_s_per_run=nv_s,
        shm_assumption=(
            "NCCL_P2P_DISABLE=1 sends the gradients through host memory (SHM): each GPU writes to and reads from "
            "pinned host memory over its own PCIe link. The TITAN RTX is a PCIe 3.0 x16 card (" + TITAN_RTX + "); "
            "the guide does not say at what width its slots ran."
        ),
        scenarios=scenarios,
        implied_shm_busbw_gbps=implied_bw,
        implied_shm_note="the SHM bandwidth at which exposed communication alone would account for all 29.5 s",
        compute_flops_per_step_per_gpu=flops,
        compute_source=KAPLAN + f"; tokens {GUIDE_TOKENS_PER_GPU} = 4 sequences x 1024 per GPU per step",
        fp32_peak_tflops=peak,
        fp32_peak_source=peak_src,
        assumed_mfu=ASSUMED_MFU,
        compute_s_per_step_estimate=compute_s,
        measured_nvlink_s_per_step=measured_step,
        implied_mfu_nvlink_run=flops / measured_step / (peak * 1e12),
        backward_s_per_step_estimate=compute_s * BACKWARD_SHARE,
        explanation=[
            f"Per step each GPU sends {wire / 1e6:.2f} MB of fp32 gradients (gpt2: {params:,} parameters).",
            f"Over NV2 ({nv_bw:g} GB/s) that is {wire / (nv_bw * 1e9) * 1e3:.1f} ms per step, "
            f"{nv_s:.1f} s in 200 steps.",
            f"Through host memory at the PCIe 3.0 x16 ceiling ({pcie_bw:.2f} GB/s) it is "
            f"{scenarios[0].comm_s_per_run:.1f} s: {scenarios[0].extra_comm_s_vs_nvlink:.1f} s more, "
            f"{scenarios[0].share_of_difference:.0%} of the 29.5 s.",
            f"At a measured no-P2P all-reduce on the same chip ({TU102_NO_P2P_BUSBW_GBPS:.2f} GB/s) it is "
            f"{scenarios[1].comm_s_per_run:.1f} s: {scenarios[1].extra_comm_s_vs_nvlink:.1f} s more, "
            f"{scenarios[1].share_of_difference:.0%} of the 29.5 s.",
            f"All 29.5 s would be exposed communication if the SHM path delivered {implied_bw:.2f} GB/s and nothing "
            "overlapped the backward pass.",
        ],
        not_explained=[
            "DDP overlaps its bucketed all-reduce with the backward pass (estimated "
            f"{compute_s * BACKWARD_SHARE * 1e3:.0f} ms per step at {ASSUMED_MFU:.0%} of FP32 peak), which by the "
            "bytes alone would hide even the 4 GB/s case; the slowdown is still there, so SHM costs more than "
            "its bytes: "
            "NCCL's SHM/direct kernels occupy SMs while they wait on PCIe, slowing the backward pass they overlap, "
            "and the last gradient bucket cannot overlap at all.",
            "The guide's PCIe slot widths and the host's memory bandwidth are not stated; the 4 GB/s figure is from "
            "another machine with the same chip.",
            "One run of each configuration, no repeats: run-to-run variation is unknown.",
        ],
    )
