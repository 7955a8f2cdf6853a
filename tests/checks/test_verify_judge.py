"""The judge of `rigcheck verify` (checks/verify/judge.py): each rule on realistic documents of an 8x H100 SXM node.

The figures are those of a healthy H100 SXM5 (../shared/gpu-evidence/h100-2026-11-22): bf16 matmul ~770 TFLOPS
at 8192^3 (floor 712), device copy ~2989 GB/s read + write (floor 2680), pinned host copies ~55 GB/s (floor
47.3), NV18 peer copies ~390 GB/s one way (floor 351), 8-GPU NVSwitch all-reduce ~475 GB/s busbw (floor 460).

The builders below also write tests/fixtures/verify/<case>/ (the CLI tests' saved directories):
``python -m tests.checks.test_verify_judge`` rewrites them, and test_fixtures_match_the_builders fails when they drift.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.verify.judge import (
    CPU_SOURCE,
    DRAIN_MAX,
    Judged,
    NearFloor,
    drain_reason,
    judge,
    verify_document,
)
from rigcheck.model import Snapshot, snapshot_from_json
from rigcheck.model.bench import (
    CollectiveDocument,
    CollectiveRow,
    HostlinkDocument,
    HostlinkRow,
    MatmulBest,
    MatmulDocument,
    MatmulRow,
    MembwDocument,
    MembwRow,
    Method,
    P2PDocument,
    P2PRow,
    Versions,
    row_head,
)
from rigcheck.model.burn import BurnDocument, BurnWorkload, GpuBurnAnalysis, GpuLoadSummary
from rigcheck.model.monitor import SamplerReport
from rigcheck.model.site_config import parse_site_config
from rigcheck.model.verify import VerifyCheck, VerifyDocument, VerifyGpu, VerifyInputs
from tests.support.snapshots import FIXTURE_DIR as SNAPSHOT_DIR
from tests.support.snapshots import healthy_8x_h100

CASES_DIR = Path(__file__).parent.parent / "fixtures" / "verify"
H100 = "NVIDIA H100 80GB HBM3"
CPU_NAME = "x86_64 CPU"
VERSIONS = Versions(rigcheck="0.1.0", python="3.11.9", torch="2.11.0+cu130", cuda="13.0", nccl="2.28.9")
PEAK_BF16 = 989.4
PEAK_SOURCE = "NVIDIA H100 Tensor Core GPU datasheet"
# Healthy per-GPU figures: a few tenths of a percent apart, as eight identical boards are.
BF16 = (771.6, 768.9, 775.2, 770.1, 766.4, 773.8, 769.5, 772.3)
MEMBW = (2989.0, 2984.2, 2992.5, 2986.8, 2990.1, 2981.7, 2987.9, 2993.4)
H2D = (55.1, 54.8, 55.3, 54.9, 55.0, 55.2, 54.7, 55.1)
D2H = (54.4, 54.1, 54.6, 54.2, 54.3, 54.5, 54.0, 54.4)
NV18_P2P = 389.5
ALLREDUCE_BUSBW = 476.3
SLOW = 0.8  # "20% under its peers"


# --- builders ----------------------------------------------------------------------------------------------


def _samples(value: float, spread: float) -> list[float]:
    """Five repeats whose median is ``value`` and whose (max - min) / median is ``spread``."""
    return [
        value * (1 - spread / 2),
        value * (1 - spread / 4),
        value,
        value * (1 + spread / 4),
        value * (1 + spread / 2),
    ]


def matmul_doc(
    tflops: Sequence[float],
    *,
    dtype: Literal["bf16", "fp16", "tf32", "fp32"] = "bf16",
    cpu: bool = False,
    wrong: Sequence[int] = (),
    spread: float = 0.01,
    snapshot: Snapshot | None = None,
    partial: bool = False,
) -> MatmulDocument:
    """Two shapes per rank: 8192^3 reaching ``tflops[rank]`` (the best) and 4096x8192x8192 3% under it."""
    backend: Literal["gloo", "nccl"] = "gloo" if cpu else "nccl"
    method = Method(method_version="matmul-2", warmup=10, repeats=5, timer="perf_counter" if cpu else "cuda_events")
    rows: list[MatmulRow] = []
    best: list[MatmulBest] = []
    for rank, value in enumerate(tflops):
        for (m, n, k), figure in (((4096, 8192, 8192), value * 0.97), ((8192, 8192, 8192), value)):
            head = row_head(
                name=f"matmul {dtype} {m}x{n}x{k}",
                unit="TFLOPS",
                samples=_samples(figure, spread),
                method=method,
                backend=backend,
                world_size=len(tflops),
                sizes=[m, n, k],
            )
            peak = None if cpu else PEAK_BF16
            row = MatmulRow(
                **head,
                rank=rank,
                gpu=None if cpu else rank,
                device_name=CPU_NAME if cpu else H100,
                dtype=dtype,
                m=m,
                n=n,
                k=k,
                time_us_median=2 * m * n * k / (figure * 1e12) * 1e6,
                peak_tflops=peak,
                peak_source=None if cpu else PEAK_SOURCE,
                correct=rank not in wrong,
                max_rel_error=0.4 if rank in wrong else 0.002,
                best=figure == value and rank not in wrong,
                tflops_median=head["median"],
                tflops_min=head["min"],
                tflops_max=head["max"],
                fraction_of_peak=figure / peak if peak else None,
                missing={
                    "peak_tflops": "no catalogue peak for a CPU",
                    "fraction_of_peak": "no catalogue peak for a CPU",
                }
                if cpu
                else {},
            )
            rows.append(row)
            if row.best:
                best.append(
                    MatmulBest(
                        rank=rank,
                        gpu=row.gpu,
                        dtype=row.dtype,
                        m=m,
                        n=n,
                        k=k,
                        tflops_median=row.tflops_median,
                        peak_tflops=peak,
                        fraction_of_peak=row.fraction_of_peak,
                    )
                )
    return MatmulDocument(
        partial=partial,
        error="worker 7 exited with code 1" if partial else None,
        method=method,
        backend=backend,
        world_size=len(tflops),
        versions=VERSIONS,
        snapshot=snapshot,
        results=rows,
        notes=["TFLOPS = 2·m·n·k / time / 1e12"],
        best=best,
    )


def membw_doc(
    gbps: Sequence[float], *, cpu: bool = False, spread: float = 0.004, snapshot: Snapshot | None = None
) -> MembwDocument:
    """Two buffer sizes per rank; the 1 GiB one reaches ``gbps[rank]`` read + write."""
    backend: Literal["gloo", "nccl"] = "gloo" if cpu else "nccl"
    method = Method(method_version="membw-1", warmup=2, repeats=5, timer="perf_counter" if cpu else "cuda_events")
    rows: list[MembwRow] = []
    for rank, value in enumerate(gbps):
        for size, read_write in ((256 << 20, value * 0.96), (1 << 30, value)):
            head = row_head(
                name=f"device-local copy {size >> 20} MiB",
                unit="GB/s",
                samples=_samples(read_write / 2, spread),
                method=method,
                backend=backend,
                world_size=len(gbps),
                sizes=[size],
            )
            peak = None if cpu else 3350
            rows.append(
                MembwRow(
                    **head,
                    rank=rank,
                    gpu=None if cpu else rank,
                    device_name=CPU_NAME if cpu else H100,
                    size_bytes=size,
                    iters=20,
                    time_us_median=size / (head["median"] * 1e9) * 1e6,
                    correct=True,
                    copy_gbps=head["median"],
                    read_write_gbps=2 * head["median"],
                    peak_memory_gbps=peak,
                    peak_source=None if cpu else PEAK_SOURCE,
                    fraction_of_peak=2 * head["median"] / peak if peak else None,
                    missing={
                        "peak_memory_gbps": "no catalogue bandwidth for host memory",
                        "fraction_of_peak": "no catalogue bandwidth for host memory",
                    }
                    if cpu
                    else {},
                )
            )
    return MembwDocument(
        partial=False,
        error=None,
        method=method,
        backend=backend,
        world_size=len(gbps),
        versions=VERSIONS,
        snapshot=snapshot,
        results=rows,
        notes=["read_write_gbps = 2 x copy_gbps"],
    )


def hostlink_doc(h2d: Sequence[float], d2h: Sequence[float]) -> HostlinkDocument:
    """Pinned and pageable rows per GPU and direction, unbound and NUMA-bound (bound ~1% faster)."""
    method = Method(method_version="hostlink-1", warmup=2, repeats=5, timer="cuda_events")
    rows: list[HostlinkRow] = []
    size = 1 << 30
    for gpu, (up, down) in enumerate(zip(h2d, d2h, strict=True)):
        for bound in (False, True):
            for memory in ("pinned", "pageable"):
                for direction, value in (("h2d", up), ("d2h", down)):
                    figure = value * (1.0 if bound else 0.99) * (1.0 if memory == "pinned" else 0.4)
                    head = row_head(
                        name=f"GPU {gpu} {direction} {memory}",
                        unit="GB/s",
                        samples=_samples(figure, 0.01),
                        method=method,
                        backend="cuda",
                        world_size=1,
                        sizes=[size],
                    )
                    rows.append(
                        HostlinkRow(
                            **head,
                            gpu=gpu,
                            device_name=H100,
                            pci_bus_id=None,
                            direction=direction,
                            memory=memory,
                            numa_bound=bound,
                            cpus="0-51" if bound else None,
                            local_cpus="0-51,104-155",
                            local_cpus_source="snapshot",
                            numa_node=0,
                            size_bytes=size,
                            iters=10,
                            time_us_median=size / (figure * 1e9) * 1e6,
                            pcie_link="Gen5 x16",
                            pcie_theoretical_gbps=63.02,
                            correct=True,
                            gbps=figure,
                            fraction_of_pcie=figure / 63.02,
                        )
                    )
    return HostlinkDocument(
        partial=False,
        error=None,
        method=method,
        backend="cuda",
        world_size=1,
        versions=VERSIONS,
        snapshot=None,
        results=rows,
        notes=[],
    )


def p2p_doc(gbps: Mapping[tuple[int, int], float], *, link: str = "NV18", nvlinks: int | None = 18) -> P2PDocument:
    """Peer and staged rows for each ordered pair."""
    method = Method(method_version="p2p-1", warmup=1, repeats=5, timer="perf_counter")
    size = 256 << 20
    rows: list[P2PRow] = []
    for (src, dst), value in gbps.items():
        for mode, figure in (("peer", value), ("staged", 21.0)):
            head = row_head(
                name=f"p2p {src}->{dst} {mode}",
                unit="GB/s",
                samples=_samples(figure, 0.01),
                method=method,
                backend="cuda",
                world_size=1,
                sizes=[size],
            )
            rows.append(
                P2PRow(
                    **head,
                    src=src,
                    dst=dst,
                    mode=mode,
                    peer_access=True,
                    size_bytes=size,
                    link=link,
                    nvlinks=nvlinks,
                    nvml_p2p_read="ok",
                    nvml_p2p_write="ok",
                    correct=True,
                    unidirectional_gbps=figure,
                    bidirectional_gbps=None,
                    latency_us=None,
                    theoretical_gbps=450,
                    theoretical_source="NVLink 4 x 18",
                    fraction_of_theoretical=figure / 450,
                )
            )
    gpus = 1 + max((max(p) for p in gbps), default=0)
    return P2PDocument(
        partial=False,
        error=None,
        method=method,
        backend="cuda",
        world_size=1,
        versions=VERSIONS,
        snapshot=None,
        results=rows,
        notes=[],
        gpus=gpus,
        matrices={},
    )


def allreduce_doc(busbw: float, *, world: int = 8, correct: bool = True, cpu: bool = False) -> CollectiveDocument:
    """A sweep to 1 GiB whose largest size reaches ``busbw``."""
    method = Method(method_version="coll-1", warmup=5, repeats=5, timer="perf_counter" if cpu else "cuda_events")
    rows = []
    for size, figure in ((1 << 20, busbw * 0.2), (1 << 30, busbw)):
        head = row_head(
            name=f"allreduce {size}",
            unit="GB/s",
            samples=_samples(figure, 0.01),
            method=method,
            backend="gloo" if cpu else "nccl",
            world_size=world,
            sizes=[size],
        )
        algbw = figure * world / (2 * (world - 1))
        rows.append(
            CollectiveRow(
                **head,
                op="allreduce",
                size_bytes=size,
                time_us_median=size / (algbw * 1e9) * 1e6,
                algbw_gbps=algbw,
                busbw_gbps=figure,
                correct=correct,
            )
        )
    return CollectiveDocument(
        benchmark="allreduce",
        partial=False,
        error=None,
        method=method,
        backend="gloo" if cpu else "nccl",
        world_size=world,
        versions=VERSIONS,
        snapshot=None,
        results=rows,
        op="allreduce",
        sizes=[1 << 20, 1 << 30],
        wall_s=12.5,
        notes=[],
    )


def burn_doc(
    gpus: int = 8, *, thermal: Sequence[int] = (), wrong: Mapping[int, int] | None = None, tflops: float = 663.2
) -> BurnDocument:
    """A 60 s burn as the H100 evidence shows it: held at the 700 W cap, 73 C, SM ~1335 MHz, 663 TFLOPS."""
    wrong = wrong or {}
    analyses = []
    loads = []
    for i in range(gpus):
        hot = i in thermal
        analyses.append(
            GpuBurnAnalysis(
                index=i,
                loaded_s=60.0,
                power_draw_w_median_loaded=698.0,
                power_enforced_limit_w=700.0,
                temp_c_max=91.0 if hot else 73.0,
                temp_slowdown_c=89.0,
                sm_clock_mhz_median_loaded=1100.0 if hot else 1335.0,
                reasons_time_fraction={"sw_thermal_slowdown": 0.6} if hot else {"sw_power_cap": 0.85},
                limiter="thermal" if hot else "power",
                verdict="throttling, thermally limited" if hot else "excellent, power-limited",
                advice="",
                tflops_sustained=tflops,
                tflops_first_10s=tflops * 1.1,
                errors=wrong.get(i, 0),
            )
        )
        loads.append(
            GpuLoadSummary(
                index=i,
                dtype="bf16",
                matrix_size=8192,
                matmuls=100000,
                checks=60,
                errors=wrong.get(i, 0),
                first_error_s=12.0 if wrong.get(i) else None,
                error=None,
                tflops_first_10s=tflops * 1.1,
                tflops_sustained=tflops,
                tflops_per_second=[tflops] * 60,
                missing={} if wrong.get(i) else {"first_error_s": "no wrong result"},
            )
        )
    workload = BurnWorkload(
        method_version="burn-1", dtype="bf16", minutes_requested=1.0, load_s=60.0, timer="cuda_events", gpus=loads
    )
    return BurnDocument(
        source="rigcheck-sampler",
        path=None,
        interval_s=0.1,
        exit_code=1 if thermal or wrong else 0,
        diagnostics=[],
        gpus=analyses,
        partial=False,
        interrupted=False,
        workload=workload,
        sampler=SamplerReport(
            polls=600, samples=4800, missed_deadlines=0, poll_us_mean=7.0, poll_us_max=40.0, cpu_s=0.2
        ),
    )


def all_pairs(value: float = NV18_P2P, gpus: int = 8) -> dict[tuple[int, int], float]:
    return {(a, b): value for a in range(gpus) for b in range(gpus) if a != b}


def node_inputs(
    *,
    bf16: Sequence[float] = BF16,
    snapshot: Snapshot | None = None,
    full: bool = True,
    **overrides: Any,
) -> VerifyInputs:
    """The 8x H100 node: its snapshot and findings, matmul and membw; with ``full`` every other step too."""
    snap = snapshot or healthy_8x_h100()
    docs: dict[str, Any] = {"matmul": matmul_doc(bf16), "membw": membw_doc(MEMBW)}
    if full:
        docs |= {
            "hostlink": hostlink_doc(H2D, D2H),
            "p2p": p2p_doc(all_pairs()),
            "allreduce": allreduce_doc(ALLREDUCE_BUSBW),
            "burn": burn_doc(),
        }
    docs |= overrides
    return VerifyInputs(snapshot=snap, findings=run_checks(snap), **docs)


def gpu_check(judged: Judged | VerifyDocument, gpu: int, check_id: str) -> VerifyCheck:
    found = next(g for g in judged.gpus if g.index == gpu)
    return next(c for c in found.checks if c.id == check_id)


def node_check(judged: Judged | VerifyDocument, check_id: str) -> VerifyCheck:
    return next(c for c in judged.node if c.id == check_id)


def rule(check: VerifyCheck, name: str) -> str:
    """The verdict of one rule on a check."""
    return next(j.verdict for j in check.judgements if j.rule == name)


def as_document(judged: Judged) -> VerifyDocument:
    return verify_document(
        judged,
        level=None,
        source="files",
        elapsed_s=0.4,
        budget_s=None,
        steps=[],
        host="dgx-h100-01",
        baseline_name=None,
        site_name=None,
    )


# --- the saved directories of the CLI tests ----------------------------------------------------------------

CASES: dict[str, Sequence[float]] = {
    "h100x8-pass": BF16,
    "h100x8-gpu3-slow": tuple(v * SLOW if i == 3 else v for i, v in enumerate(BF16)),
}


def case_files(case: str) -> dict[str, str]:
    """The files of one saved directory: the node's snapshot, its matmul and its membw documents."""
    snapshot = (SNAPSHOT_DIR / "healthy-8x-h100.json").read_text(encoding="utf-8")
    return {
        "snapshot.json": snapshot,
        "matmul.json": json.dumps(matmul_doc(CASES[case]).to_json_dict(), indent=2) + "\n",
        "membw.json": json.dumps(membw_doc(MEMBW).to_json_dict(), indent=2) + "\n",
    }


def write_cases(directory: Path = CASES_DIR) -> list[Path]:
    written = []
    for case in CASES:
        (directory / case).mkdir(parents=True, exist_ok=True)
        for name, text in case_files(case).items():
            path = directory / case / name
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


# --- tests -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixtures_match_the_builders(case: str) -> None:
    for name, text in case_files(case).items():
        assert (CASES_DIR / case / name).read_text(encoding="utf-8") == text, f"{case}/{name}: run the builder"


def test_all_within_band_passes() -> None:
    judged = judge(node_inputs())
    assert judged.verdict == "pass", [
        (g.index, c.id, c.detail) for g in judged.gpus for c in g.checks if c.verdict != "pass"
    ]
    assert judged.drain_reason is None
    assert judged.near_floor == []
    assert [g.index for g in judged.gpus] == list(range(8))
    assert [c.id for c in judged.gpus[0].checks] == [
        "doctor",
        "matmul_bf16",
        "membw",
        "hostlink_h2d",
        "hostlink_d2h",
        "burn",
    ]
    assert [c.id for c in judged.node][:2] == ["doctor", "p2p_0_1"]
    assert len([c for c in judged.node if c.id.startswith("p2p_")]) == 56
    matmul = gpu_check(judged, 2, "matmul_bf16")
    assert matmul.value == pytest.approx(775.2)
    assert matmul.expected_min == pytest.approx(712.4)
    assert matmul.peer_best == pytest.approx(max(v for i, v in enumerate(BF16) if i != 2))
    assert {j.rule: j.verdict for j in matmul.judgements} == {"band": "pass", "peers": "pass", "result": "pass"}
    assert gpu_check(judged, 0, "membw").value == pytest.approx(2989.0)
    assert gpu_check(judged, 0, "hostlink_h2d").value == pytest.approx(55.1)  # NUMA-bound pinned: the best row
    assert gpu_check(judged, 0, "burn").value == pytest.approx(663.2)  # power-capped at 700 W is healthy
    allreduce = node_check(judged, "allreduce")
    # 476.3 GB/s is above what a ring reaches: NVLS on, its floor from 1 GiB (facts/allreduce_bands.py).
    assert (allreduce.verdict, allreduce.expected_min) == ("pass", 400.0)
    assert "NVLS on, >= 1 GiB" in (allreduce.expected_source or "")
    assert node_check(judged, "p2p_3_5").expected_min == pytest.approx(351.0)


def test_one_gpu_20_percent_under_its_peers_fails_that_gpu_only() -> None:
    judged = judge(node_inputs(bf16=CASES["h100x8-gpu3-slow"], full=False))
    assert judged.verdict == "fail"
    verdicts = {g.index: g.verdict for g in judged.gpus}
    assert verdicts == {i: "fail" if i == 3 else "pass" for i in range(8)}
    slow = gpu_check(judged, 3, "matmul_bf16")
    assert rule(slow, "peers") == "fail"
    assert slow.peer_best == pytest.approx(775.2)
    peers = next(j for j in slow.judgements if j.rule == "peers")
    # Held to the median of the eight (770.55: between 769.5 and 771.6), not the best (775.2).
    assert peers.reference == pytest.approx(770.55)
    assert peers.margin_pct == pytest.approx(-20.0)
    assert peers.text == "616 TFLOPS, median 771 of it and 7 identical peers, 20% below: more than 10% under"
    assert all(rule(gpu_check(judged, i, "matmul_bf16"), "peers") == "pass" for i in range(8) if i != 3)
    assert judged.drain_reason is not None
    assert judged.drain_reason.startswith("rigcheck verify: fail gpu3 matmul_bf16 616<712 TFLOPS, 616 vs peers 771")


def test_peers_rule_alone_fails_a_gpu_inside_its_band() -> None:
    # A mamf-finder best-of-sweep run: peers at ~800 TFLOPS, GPU 5 at 715 (over the 712 floor, 10.6% under).
    bf16 = [800.0, 799.1, 801.3, 798.4, 800.6, 715.0, 799.8, 800.2]
    check = gpu_check(judge(node_inputs(bf16=bf16, full=False)), 5, "matmul_bf16")
    assert (check.verdict, rule(check, "band"), rule(check, "peers")) == ("fail", "pass", "fail")
    within = gpu_check(judge(node_inputs(bf16=[*bf16[:5], 725.0, *bf16[6:]], full=False)), 5, "matmul_bf16")
    assert (within.verdict, rule(within, "peers")) == ("pass", "pass")  # 9.4% under: within 10%


def test_a_figure_under_the_floor_fails_by_band() -> None:
    judged = judge(node_inputs(bf16=[650.0] * 8, full=False))
    check = gpu_check(judged, 0, "matmul_bf16")
    assert (check.verdict, rule(check, "band"), rule(check, "peers")) == ("fail", "fail", "pass")
    band = next(j for j in check.judgements if j.rule == "band")
    assert band.text == "650 TFLOPS, floor 712 (BF16 dense tensor, 989.4 TFLOPS), 8.8% below"
    assert band.reference == pytest.approx(712.4)
    assert band.margin_pct == pytest.approx(-8.8)
    assert judged.near_floor == []  # 8.8% under: not "just under", no second measurement


def test_just_under_the_floor_is_re_measured_before_it_fails() -> None:
    judged = judge(node_inputs(bf16=[700.0] * 8, full=False))
    assert judged.near_floor == [NearFloor(step="matmul", check_id="matmul_bf16", gpu=i) for i in range(8)]
    # The re-measurement reached 720 on GPU 0; its earlier 700 is handed back: the best of both is judged.
    again = node_inputs(bf16=[720.0, *[700.0] * 7], full=False)
    remeasured: dict[tuple[int | None, str], list[float]] = {(i, "matmul_bf16"): [700.0] for i in range(8)}
    judged = judge(again, remeasured=remeasured)
    first = gpu_check(judged, 0, "matmul_bf16")
    assert (first.verdict, first.value, first.remeasured) == ("pass", 720.0, [700.0])
    assert "re-measured" in first.detail
    assert gpu_check(judged, 1, "matmul_bf16").verdict == "fail"
    assert judged.near_floor == []  # measured twice already: it fails now


def test_remeasured_keeps_the_best_figure() -> None:
    judged = judge(node_inputs(bf16=[690.0] * 8, full=False), remeasured={(4, "matmul_bf16"): [709.0, 701.0]})
    check = gpu_check(judged, 4, "matmul_bf16")
    assert (check.value, check.remeasured) == (709.0, [709.0, 701.0])


def test_cpu_documents_are_not_judged_against_gpu_bands() -> None:
    snap = snapshot_from_json((SNAPSHOT_DIR / "no-gpu.json").read_text(encoding="utf-8"))
    inputs = VerifyInputs(
        snapshot=snap,
        findings=run_checks(snap),
        cpu=True,
        matmul=matmul_doc([0.41, 0.37], dtype="fp32", cpu=True),
        membw=membw_doc([9.8, 7.9], cpu=True),
        allreduce=allreduce_doc(0.9, world=2, cpu=True),
    )
    judged = judge(inputs)
    assert judged.verdict == "unjudged"  # not failed: the doctor's "no GPU" is expected on a CPU run
    assert [(g.index, g.name, g.uuid) for g in judged.gpus] == [(0, CPU_NAME, None), (1, CPU_NAME, None)]
    for gpu in judged.gpus:
        assert [c.id for c in gpu.checks] == ["matmul_fp32", "membw"]
        for check in gpu.checks:
            assert (check.expected_min, check.expected_source, check.peak) == (None, CPU_SOURCE, None)
            assert rule(check, "band") == "not_judged"
            assert rule(check, "peers") == "not_judged"
    # Rank 1's 7.9 GB/s is 19% under rank 0's: on CPU it is not judged against it.
    assert gpu_check(judged, 1, "membw").verdict == "unjudged"
    assert rule(node_check(judged, "allreduce"), "band") == "not_judged"
    assert node_check(judged, "doctor").verdict == "pass"
    assert any("CPU run" in n for n in judged.notes)
    assert "no hostlink measurement" in judged.notes


def _baseline(bf16: Sequence[float] = BF16, membw: Sequence[float] = MEMBW) -> VerifyDocument:
    judged = judge(node_inputs(bf16=bf16, full=False, membw=membw_doc(membw)))
    return VerifyDocument.model_validate(as_document(judged).to_json_dict())


def test_baseline_regression_beyond_noise_fails_within_noise_passes() -> None:
    baseline = _baseline()
    # GPU 2's copy 8% slower than last time: inside the band (2753 > 2680) and within 10% of its peers.
    slower = [v * 0.92 if i == 2 else v for i, v in enumerate(MEMBW)]
    check = gpu_check(judge(node_inputs(full=False, membw=membw_doc(slower)), baseline=baseline), 2, "membw")
    assert (check.verdict, rule(check, "band"), rule(check, "peers"), rule(check, "baseline")) == (
        "fail",
        "pass",
        "pass",
        "fail",
    )
    assert check.baseline == pytest.approx(2992.5)
    # 3% slower: within the 5% the rule forgives.
    noisy = [v * 0.97 if i == 2 else v for i, v in enumerate(MEMBW)]
    check = gpu_check(judge(node_inputs(full=False, membw=membw_doc(noisy)), baseline=baseline), 2, "membw")
    assert (check.verdict, rule(check, "baseline")) == ("pass", "pass")
    # 8% slower, but the run's own repeats spread 12%: within its noise.
    check = gpu_check(
        judge(node_inputs(full=False, membw=membw_doc(slower, spread=0.12)), baseline=baseline), 2, "membw"
    )
    assert (check.verdict, rule(check, "baseline")) == ("pass", "pass")
    assert "12.0% noise" in next(j.text for j in check.judgements if j.rule == "baseline")


def test_baseline_matches_gpus_by_uuid_before_index() -> None:
    baseline = _baseline()
    # The same boards listed in another order: GPU 0 of the baseline (by UUID) is GPU 7 here.
    moved = [g.model_copy(update={"index": 7 - g.index}) for g in reversed(baseline.gpus)]
    shuffled = baseline.model_copy(update={"gpus": moved})
    judged = judge(node_inputs(full=False), baseline=shuffled)
    assert gpu_check(judged, 0, "matmul_bf16").baseline == pytest.approx(BF16[0])


def test_a_check_absent_from_the_baseline_is_not_judged_against_it() -> None:
    baseline = _baseline()
    judged = judge(node_inputs(), baseline=baseline)  # hostlink was not measured in the baseline run
    assert rule(gpu_check(judged, 0, "hostlink_h2d"), "baseline") == "not_judged"
    assert judged.verdict == "pass"


def test_wrong_results_fail() -> None:
    judged = judge(node_inputs(full=False, matmul=matmul_doc(BF16, wrong=[1])))
    check = gpu_check(judged, 1, "matmul_bf16")
    assert (check.verdict, rule(check, "result")) == ("fail", "fail")
    assert "wrong results in 2 of 2 bf16 products" in check.detail
    assert gpu_check(judged, 0, "matmul_bf16").verdict == "pass"
    reduced = judge(node_inputs(allreduce=allreduce_doc(ALLREDUCE_BUSBW, correct=False)))
    assert rule(node_check(reduced, "allreduce"), "result") == "fail"


def test_burn_fails_on_wrong_results_and_thermal_slowdown_not_on_a_power_cap() -> None:
    judged = judge(node_inputs(burn=burn_doc(thermal=[2], wrong={6: 3})))
    assert gpu_check(judged, 0, "burn").verdict == "pass"
    hot = gpu_check(judged, 2, "burn")
    assert hot.verdict == "fail"
    assert "thermal slowdown" in hot.judgements[0].text
    wrong = gpu_check(judged, 6, "burn")
    assert wrong.verdict == "fail"
    assert "3 wrong results" in wrong.judgements[0].text
    assert [j.rule for j in hot.judgements] == ["result"]  # burn has no band: it is judged by what happened


def test_cut_short_and_failed_steps_are_incomplete() -> None:
    inputs = node_inputs(membw=None, hostlink=None, allreduce=None)
    inputs.cut_short = {"membw", "allreduce"}
    inputs.failed = {"hostlink": "CUDA error: out of memory"}
    judged = judge(inputs)
    assert judged.verdict == "incomplete"
    membw = gpu_check(judged, 0, "membw")
    assert (membw.verdict, membw.value) == ("incomplete", None)
    assert "cut short" in membw.detail
    h2d = gpu_check(judged, 5, "hostlink_h2d")
    assert h2d.verdict == "incomplete"
    assert "out of memory" in h2d.detail
    assert node_check(judged, "allreduce").verdict == "incomplete"
    assert {g.verdict for g in judged.gpus} == {"incomplete"}
    assert judged.drain_reason is not None
    assert "gpu0 membw incomplete" in judged.drain_reason


def test_a_partial_document_leaves_its_missing_gpu_incomplete() -> None:
    inputs = node_inputs(full=False, matmul=matmul_doc(BF16[:7], partial=True))
    judged = judge(inputs)
    check = gpu_check(judged, 7, "matmul_bf16")
    assert check.verdict == "incomplete"
    assert "worker 7 exited" in check.detail
    assert gpu_check(judged, 6, "matmul_bf16").verdict == "pass"
    assert judged.verdict == "incomplete"


def test_an_absent_document_is_not_listed_but_noted_once() -> None:
    judged = judge(node_inputs(full=False))
    assert all(not c.id.startswith("hostlink") for g in judged.gpus for c in g.checks)
    assert judged.notes.count("no hostlink measurement") == 1
    assert "allreduce" not in [c.id for c in judged.node]
    assert judged.verdict == "pass"


def test_failures_in_the_doctor_fail_the_gpu_they_name() -> None:
    snap = snapshot_from_json((SNAPSHOT_DIR / "ecc-errors.json").read_text(encoding="utf-8"))
    failing = {f.gpu for f in run_checks(snap) if f.severity.value == "fail"}
    assert failing, "the fixture has failing findings"
    judged = judge(VerifyInputs(snapshot=snap, findings=run_checks(snap)))
    for gpu in judged.gpus:
        assert gpu_check(judged, gpu.index, "doctor").verdict == ("fail" if gpu.index in failing else "pass")
    doctor = node_check(judged, "doctor")
    assert doctor.verdict == "fail"
    assert "health." in doctor.judgements[0].text
    assert judged.drain_reason is not None
    assert " doctor health." in judged.drain_reason


def test_p2p_pair_under_its_link_peers_fails() -> None:
    pairs = all_pairs()
    pairs[(2, 6)] = 250.0
    judged = judge(node_inputs(p2p=p2p_doc(pairs)))
    slow = node_check(judged, "p2p_2_6")
    assert (slow.verdict, rule(slow, "band"), rule(slow, "peers")) == ("fail", "fail", "fail")
    assert slow.peer_best == pytest.approx(NV18_P2P)
    assert node_check(judged, "p2p_6_2").verdict == "pass"
    assert judged.drain_reason is not None
    assert "p2p_2_6 250<351 GB/s" in judged.drain_reason


def test_allreduce_judged_against_its_band_on_nvswitch_only() -> None:
    low = judge(node_inputs(allreduce=allreduce_doc(250.0)))  # no NVLS shown: the NVLS-off floor, 300
    assert rule(node_check(low, "allreduce"), "band") == "fail"
    assert "NVLS unknown, the NVLS-off floor" in (node_check(low, "allreduce").expected_source or "")
    snap = healthy_8x_h100()
    for gpu in snap.gpus:
        for link in gpu.nvlinks or ():
            link.remote_device_type = "gpu"
    no_switch = judge(node_inputs(snapshot=snap, allreduce=allreduce_doc(300.0)))
    check = node_check(no_switch, "allreduce")
    # no band, no peer: the figure is unjudged, not a pass (docs/verdicts.md)
    assert (check.verdict, rule(check, "band"), check.expected_min) == ("unjudged", "not_judged", None)
    assert "NVSwitch" in (check.expected_source or "")


def test_an_unknown_sku_is_not_judged_against_a_band() -> None:
    snap = healthy_8x_h100()
    for gpu in snap.gpus:
        gpu.name = "NVIDIA Mystery X1"
    judged = judge(node_inputs(snapshot=snap, full=False))
    check = gpu_check(judged, 0, "matmul_bf16")  # no SKU to say which dtype: the first that ran
    assert rule(check, "band") == "not_judged"
    assert "not in rigcheck's catalog" in (check.expected_source or "")
    assert any("Mystery" in n for n in judged.notes)


def test_gpus_restricts_what_is_judged_and_listed() -> None:
    judged = judge(node_inputs(), gpus=[0, 3])
    assert [g.index for g in judged.gpus] == [0, 3]
    assert sorted(c.id for c in judged.node if c.id.startswith("p2p")) == ["p2p_0_3", "p2p_3_0"]
    slow = judge(node_inputs(bf16=CASES["h100x8-gpu3-slow"]), gpus=[0, 1])
    assert slow.verdict == "pass"  # GPU 3 is not judged, nor listed


def test_one_gpu_alone_is_judged_by_its_band_not_by_peers() -> None:
    snap = healthy_8x_h100()
    snap.gpus = snap.gpus[:1]
    snap.pairs = []
    inputs = VerifyInputs(
        snapshot=snap, findings=run_checks(snap), matmul=matmul_doc(BF16[:1]), membw=membw_doc(MEMBW[:1])
    )
    judged = judge(inputs)
    assert judged.verdict == "pass"
    check = gpu_check(judged, 0, "matmul_bf16")
    assert (rule(check, "band"), rule(check, "peers"), check.peer_best) == ("pass", "not_judged", None)


def test_a_site_floor_replaces_the_catalogues() -> None:
    site = parse_site_config(b'[bands."H100 SXM5"]\nmatmul_bf16 = 780\n[bands."*"]\np2p = 400\n', "site.toml")
    judged = judge(node_inputs(), site=site)
    check = gpu_check(judged, 0, "matmul_bf16")
    assert (check.verdict, rule(check, "band"), check.expected_min) == ("fail", "fail", 780.0)
    assert (check.expected_source or "").startswith('site.toml: bands."H100 SXM5".matmul_bf16')
    pair = node_check(judged, "p2p_0_1")
    assert (pair.verdict, pair.expected_min) == ("fail", 400.0)  # 389.5 GB/s: under the site's floor
    assert gpu_check(judged, 0, "membw").expected_min == pytest.approx(2680.0)  # not overridden


def test_drain_reason_is_one_short_ascii_line() -> None:
    every = judge(node_inputs(bf16=[500.0] * 8, membw=membw_doc([2000.0] * 8), burn=burn_doc(thermal=range(8))))
    reason = every.drain_reason
    assert reason is not None
    assert reason.startswith("rigcheck verify: fail gpu0 matmul_bf16 500<712 TFLOPS; gpu0 membw 2000<2680 GB/s")
    assert len(reason) <= DRAIN_MAX
    assert reason.endswith("...")
    assert reason.isascii()
    assert not any(c in reason for c in "\"'\n\r")
    line = drain_reason("fail", ['gpu1 doctor "bad"\nthing ≥ 5'])
    assert line == "rigcheck verify: fail gpu1 doctor bad thing ? 5"
    assert drain_reason("pass", ["anything"]) is None


def test_verify_document_carries_the_judgement() -> None:
    judged = judge(node_inputs(bf16=CASES["h100x8-gpu3-slow"], full=False))
    doc = as_document(judged)
    data = doc.to_json_dict()
    assert data["schema"] == "rigcheck.verify/1"
    assert (data["verdict"], data["source"], data["level"], data["host"]) == ("fail", "files", None, "dgx-h100-01")
    assert data["drain_reason"] == judged.drain_reason
    assert VerifyDocument.model_validate(data) == doc
    gpu3 = next(g for g in data["gpus"] if g["index"] == 3)
    assert isinstance(VerifyGpu.model_validate(gpu3), VerifyGpu)
    assert {"id", "verdict", "value", "unit", "expected_min", "expected_source", "peer_best", "baseline"} <= set(
        gpu3["checks"][1]
    )


if __name__ == "__main__":
    for p in write_cases():
        sys.stdout.write(f"wrote {p}\n")
