"""rigcheck.bench.device and `rigcheck bench matmul|membw|hostlink|p2p`: CPU paths for real, GPU paths marked `gpu`.

Workers run in-process with a WorkerContext whose rows go to a list; the CLI tests go through the launcher
(one spawned CPU worker each). Sizes are tiny: this is about the method and the arithmetic, not speed.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rigcheck.bench.device import common, hostlink, matmul, membw, p2p
from rigcheck.bench.launcher import WorkerContext
from rigcheck.cpulist import format_cpulist, parse_cpulist
from rigcheck.errors import UsageError
from rigcheck.model import snapshot_from_json, snapshot_to_dict
from rigcheck.model.bench import BENCH_SCHEMA, MatmulRow, Method, row_head
from rigcheck.model.snapshot import Gpu
from tests.support.cli import Rigcheck

torch = pytest.importorskip("torch")

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
HAS_CUDA = bool(torch.cuda.is_available())
H100 = snapshot_from_json((SNAPSHOTS / "healthy-8x-h100.json").read_text())
P2P_METHOD = Method(method_version="p2p-1", warmup=1, repeats=3, timer="perf_counter")


def cpu_context(rows: list[dict[str, Any]], progress: list[str] | None = None) -> WorkerContext:
    return WorkerContext(
        rank=0,
        world_size=1,
        local_rank=0,
        backend="gloo",
        device=torch.device("cpu"),
        on_row=rows.append,
        on_progress=(progress.append if progress is not None else (lambda _m: None)),
    )


# --- pure helpers ----------------------------------------------------------------------------------------


def test_cpulist_round_trip() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert format_cpulist({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert parse_cpulist("") == set()
    with pytest.raises(ValueError, match="bad CPU range"):
        parse_cpulist("5-2")
    with pytest.raises(ValueError, match="invalid literal"):
        parse_cpulist("a-b")


def test_plan_bindings() -> None:
    allowed = set(range(8))
    runs, notes = hostlink.plan_bindings({0, 1, 2, 3}, allowed, gpu=0)
    assert [(b.numa_bound, b.cpus) for b in runs] == [(False, None), (True, frozenset({0, 1, 2, 3}))]
    assert notes == []
    # one NUMA node (or node -1): every CPU is local, a bound run would be the same run
    runs, notes = hostlink.plan_bindings(set(range(8)), allowed, gpu=1)
    assert [b.numa_bound for b in runs] == [False]
    assert "same run" in notes[0]
    runs, notes = hostlink.plan_bindings(None, allowed, gpu=2)
    assert [b.numa_bound for b in runs] == [False]
    assert "unknown" in notes[0]
    runs, notes = hostlink.plan_bindings({16, 17}, allowed, gpu=3)
    assert [b.numa_bound for b in runs] == [False]
    assert "not allowed" in notes[0] or "none of its local CPUs" in notes[0]


def test_first_touch_is_done_by_the_calling_thread_alone() -> None:
    # The bound thread must write the pages itself: torch's intra-op threads keep their old affinity.
    seen: list[int] = []

    class Host:
        def fill_(self, value: int) -> None:
            seen.append(torch.get_num_threads())

    before = torch.get_num_threads()
    hostlink.first_touch(torch, Host())
    assert seen == [1]
    assert torch.get_num_threads() == before
    real = torch.zeros(1 << 20, dtype=torch.uint8)
    hostlink.first_touch(torch, real)
    assert bool((real == 1).all())


def test_local_cpus_prefers_nvml_affinity() -> None:
    cpus, source = hostlink.local_cpus(Gpu(index=0, cpu_affinity="0-3,8"), None)
    assert cpus == {0, 1, 2, 3, 8}
    assert source == "NVML CPU affinity"
    assert hostlink.local_cpus(Gpu(index=0), None) == (None, "unknown")


def test_pcie_theoretical_from_snapshot_link() -> None:
    # Idle at Gen1: the link runs at its max generation under load.
    gbps, link = hostlink.pcie_theoretical(Gpu(index=0, pcie_gen_max=5, pcie_width_max=16, pcie_gen_current=1))
    assert link == "Gen5 x16"
    assert gbps == pytest.approx(32 * 16 * 128 / 130 / 8)  # 63.02 GB/s per direction
    # Trained to x8 in an x16 slot (two cards sharing the lanes): x8 is what it has.
    narrow = Gpu(index=0, pcie_gen_max=4, pcie_gen_current=4, pcie_width_max=16, pcie_width_current=8)
    assert hostlink.pcie_theoretical(narrow) == (pytest.approx(16 * 8 * 128 / 130 / 8), "Gen4 x8")
    assert hostlink.pcie_theoretical(Gpu(index=0)) == (None, None)


def test_check_sample_tolerance_and_failure() -> None:
    k = 1024
    ref = torch.randn(4, 64, dtype=torch.float64) * math.sqrt(k)
    ok, err = matmul.check_sample(ref.to(torch.bfloat16), ref, "bf16", k)
    assert ok
    assert 0 < err <= matmul.RTOL["bf16"]
    bad = ref.clone()
    bad[2, 5] += 0.1 * math.sqrt(k)  # one wrong element, 10% of the sum's scale
    ok, err = matmul.check_sample(bad, ref, "bf16", k)
    assert not ok
    assert err > matmul.RTOL["bf16"]
    # fp32 is held much tighter than bf16: a bf16-rounded result fails as fp32
    assert not matmul.check_sample(ref.to(torch.bfloat16), ref, "fp32", k)[0]
    nan = ref.clone()
    nan[0, 0] = float("nan")
    assert matmul.check_sample(nan, ref, "fp16", k)[0] is False


def test_sample_indices() -> None:
    assert matmul.sample_indices(3, 4) == [0, 1, 2]
    idx = matmul.sample_indices(1000, 4)
    assert idx[0] == 0
    assert idx[-1] == 999
    assert len(idx) == 4


def test_parse_shape() -> None:
    assert matmul.parse_shape("3072x8192x8192") == (3072, 8192, 8192)
    assert matmul.parse_shape("512") == (512, 512, 512)
    for bad in ("12x", "0x4x4", "axbxc", "1x2x3x4"):
        with pytest.raises(UsageError, match="bad shape"):
            matmul.parse_shape(bad)


def test_plan_dtypes() -> None:
    assert matmul.plan_dtypes(["all"], cpu=False) == (("bf16", "fp16", "tf32", "fp32"), [])
    kept, notes = matmul.plan_dtypes(["bf16", "tf32", "fp16", "bf16"], cpu=True)
    assert kept == ("bf16",)
    assert len(notes) == 2
    assert notes[0].startswith("tf32 skipped")
    with pytest.raises(UsageError, match="only bf16 and fp32"):
        matmul.plan_dtypes(["fp16"], cpu=True)
    with pytest.raises(UsageError, match="unknown dtype"):
        matmul.plan_dtypes(["int8"], cpu=False)


def test_default_shapes_cover_the_mamf_sweep() -> None:
    ms = [m for m, n, k in matmul.GPU_SHAPES if (n, k) == (8192, 8192)]
    assert ms[0] == 1024
    assert ms[-1] == 15360
    assert 3072 in ms  # the reference sweep's best shape
    assert all(max(s) <= 1024 for s in matmul.default_shapes(cpu=True, quick=False))


def matmul_row(dtype: Any, tflops: float, correct: bool = True) -> MatmulRow:
    method = Method(method_version="matmul-1", warmup=0, repeats=1)
    return MatmulRow(
        **row_head(name="matmul", unit="TFLOPS", samples=[tflops], method=method, backend="gloo", world_size=1),
        rank=0,
        gpu=None,
        device_name="cpu",
        dtype=dtype,
        m=64,
        n=64,
        k=64,
        time_us_median=1.0,
        peak_tflops=None,
        peak_source=None,
        correct=correct,
        max_rel_error=0.0,
        best=False,
        tflops_median=tflops,
        tflops_min=tflops,
        tflops_max=tflops,
        fraction_of_peak=None,
        missing={"peak_tflops": "no catalogue peak for a CPU", "fraction_of_peak": "no catalogue peak for a CPU"},
    )


def test_mark_best_ignores_wrong_products() -> None:
    rows = [matmul_row("bf16", 10.0), matmul_row("bf16", 30.0, False), matmul_row("bf16", 20.0), matmul_row("fp32", 5)]
    marked, best = matmul.mark_best(rows)
    assert [r.best for r in marked] == [False, False, True, True]
    assert [(b.dtype, b.tflops_median) for b in best] == [("bf16", 20.0), ("fp32", 5.0)]


def test_copy_rates_count_bytes_once() -> None:
    assert membw.copy_rates(10**9, [0.5, 0.25]) == [2.0, 4.0]


def test_time_calls_counts_iters_and_runs_before_untimed() -> None:
    calls: list[str] = []
    times = common.time_calls(
        torch,
        torch.device("cpu"),
        lambda: calls.append("c"),
        warmup=1,
        repeats=3,
        iters=2,
        before=lambda: calls.append("b"),
    )
    assert len(times) == 3
    assert calls == ["b", "c", "c"] * 4
    with pytest.raises(ValueError, match="at least 1"):
        common.time_calls(torch, torch.device("cpu"), lambda: None, warmup=0, repeats=0)


def test_fp32_math_sets_and_restores_tf32() -> None:
    matmul_flags = torch.backends.cuda.matmul
    before = matmul_flags.fp32_precision
    with matmul.fp32_math(torch, "tf32", cuda=True):
        assert matmul_flags.fp32_precision == "tf32"
    with matmul.fp32_math(torch, "fp32", cuda=True):
        assert matmul_flags.fp32_precision == "ieee"
    with matmul.fp32_math(torch, "bf16", cuda=True):
        assert matmul_flags.fp32_precision == before
    assert matmul_flags.fp32_precision == before


# --- workers in-process on CPU ----------------------------------------------------------------------------


def test_matmul_worker_cpu() -> None:
    rows: list[dict[str, Any]] = []
    progress: list[str] = []
    payload = matmul.MatmulPayload(
        dtypes=("bf16", "fp32"), shapes=((64, 48, 32), (96, 96, 96)), warmup=1, repeats=3, flush_bytes=1 << 16
    )
    matmul.matmul_worker(cpu_context(rows, progress), payload)
    assert [(r["dtype"], r["m"], r["n"], r["k"]) for r in rows] == [
        ("bf16", 64, 48, 32),
        ("bf16", 96, 96, 96),
        ("fp32", 64, 48, 32),
        ("fp32", 96, 96, 96),
    ]
    for r in rows:
        assert r["correct"] is True
        assert r["unit"] == "TFLOPS"
        assert r["method_version"] == "matmul-1"
        assert r["repeats"] == 3
        assert r["tflops_min"] <= r["tflops_median"] <= r["tflops_max"]
        # the median time and the median rate describe the same products
        flops = 2 * r["m"] * r["n"] * r["k"]
        assert r["tflops_median"] == pytest.approx(flops / (r["time_us_median"] * 1e-6) / 1e12, rel=1e-9)
        assert r["peak_tflops"] is None  # no catalogue peak for a CPU
        assert r["fraction_of_peak"] is None
    assert len(progress) == 4


def test_matmul_worker_catches_a_wrong_product(monkeypatch: pytest.MonkeyPatch) -> None:
    real_mm = torch.mm

    def broken_mm(a: Any, b: Any, *, out: Any) -> Any:
        real_mm(a, b, out=out)
        out[-1, 0] += 1000  # one corrupted element, in a sampled row (the last)
        return out

    monkeypatch.setattr(torch, "mm", broken_mm)
    rows: list[dict[str, Any]] = []
    matmul.matmul_worker(
        cpu_context(rows),
        matmul.MatmulPayload(dtypes=("fp32",), shapes=((8, 8, 8),), warmup=0, repeats=1, flush_bytes=1024),
    )
    assert rows[0]["correct"] is False
    assert matmul.mark_best([MatmulRow.model_validate(r) for r in rows])[1] == []


def test_membw_worker_cpu() -> None:
    rows: list[dict[str, Any]] = []
    membw.membw_worker(cpu_context(rows), membw.MembwPayload(sizes=(1 << 16, 1000), warmup=1, repeats=3, iters=2))
    assert [r["size_bytes"] for r in rows] == [1 << 16, 1000 // 8 * 8]
    for r in rows:
        assert r["correct"] is True
        assert r["read_write_gbps"] == pytest.approx(2 * r["copy_gbps"])
        assert r["copy_gbps"] == r["median"]
        assert r["copy_gbps"] == pytest.approx(r["size_bytes"] / (r["time_us_median"] * 1e-6) / 1e9, rel=1e-9)
        assert r["method_version"] == "membw-1"


# --- p2p assembly with fake measurements ------------------------------------------------------------------


def fake_measure(src: int, dst: int, mode: str) -> p2p.PairMeasurement:
    # GPU 0<->1 fast, everything else slower; staged slower still; seconds per 1 GB copy
    base = 0.01 if {src, dst} == {0, 1} else 0.04
    if mode == "staged":
        base *= 4
    return p2p.PairMeasurement(
        unidirectional_s=[base, base * 1.1, base * 0.9],
        bidirectional_s=[base * 1.25],
        latency_s=[2e-6 if mode == "peer" else 20e-6],
        peer_access=mode == "peer",
        correct=(src, dst) != (2, 0),
    )


def test_p2p_rows_and_matrices_from_fake_measurements() -> None:
    size = 10**9
    method = P2P_METHOD

    def facts(a: int, b: int) -> p2p.PairFacts:
        return p2p.PairFacts(
            link="NV4" if {a, b} == {0, 1} else "SYS",
            peer_theoretical_gbps=100.0 if {a, b} == {0, 1} else 25.0,
            pcie_theoretical_gbps=25.0,
        )

    seen: list[str] = []
    rows = p2p.build_rows(3, fake_measure, facts, size_bytes=size, method=method, on_progress=seen.append)
    assert len(rows) == 3 * 2 * 2  # ordered pairs × modes
    assert len(seen) == 12
    r01 = next(r for r in rows if (r.src, r.dst, r.mode) == (0, 1, "peer"))
    assert r01.unidirectional_gbps == pytest.approx(100.0)  # 1e9 B / 0.01 s, the median sample
    assert r01.bidirectional_gbps == pytest.approx(2 * size / 0.0125 / 1e9)  # both directions' bytes
    assert r01.latency_us == pytest.approx(2.0)
    assert r01.fraction_of_theoretical == pytest.approx(1.0)
    r12s = next(r for r in rows if (r.src, r.dst, r.mode) == (1, 2, "staged"))
    assert r12s.unidirectional_gbps == pytest.approx(size / 0.16 / 1e9)
    assert r12s.theoretical_gbps == 25.0  # staged copies are held against PCIe
    assert next(r for r in rows if (r.src, r.dst) == (2, 0)).correct is False

    mats = p2p.matrices(rows, 3)
    uni = mats["unidirectional_gbps_peer"]
    assert [uni[i][i] for i in range(3)] == [None, None, None]
    assert uni[0][1] == pytest.approx(100.0)
    assert uni[1][2] == pytest.approx(25.0)
    assert mats["latency_us_staged"][2][1] == pytest.approx(20.0)
    lines = p2p.matrix_text(uni)
    assert lines[0].split()[1:] == ["0", "1", "2"]
    assert lines[1].split() == ["0", "-", "100.0", "25.0"]

    doc = p2p.p2p_document(rows, 3, method=method, size_bytes=size, iters=5, snap=H100).to_json_dict()
    assert doc["schema"] == BENCH_SCHEMA
    assert doc["benchmark"] == "p2p"
    assert doc["matrices"]["bidirectional_gbps_peer"][1][0] == pytest.approx(160.0)
    assert "comparison" not in doc  # --compare-p2p only
    assert "warnings" not in doc
    json.dumps(doc)  # plain JSON types only


def test_p2p_compare_is_the_guides_table_per_pair() -> None:
    """--compare-p2p on bench p2p: peer (P2P=Y) against staged (P2P=N) per ordered pair, with the guide's
    speed-up; a pair without peer access is flagged, and the document stays valid bench/1."""
    from rich.console import Console

    from rigcheck.report.bench.html import bench_html
    from rigcheck.report.bench.render import terminal
    from tests.contracts.test_schemas import validator

    size = 10**9
    method = P2P_METHOD

    def measure(src: int, dst: int, mode: str) -> p2p.PairMeasurement:
        got = fake_measure(src, dst, mode)
        no_peer = (src, dst) == (1, 2) and mode == "peer"
        return p2p.PairMeasurement(
            got.unidirectional_s, got.bidirectional_s, got.latency_s, False if no_peer else got.peer_access, True
        )

    rows = p2p.build_rows(3, measure, lambda a, b: p2p.PairFacts(), size_bytes=size, method=method)
    comp = p2p.p2p_comparison(rows)
    assert [(c.src, c.dst) for c in comp.pairs] == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    c01 = comp.pairs[0]
    assert [r.p2p for r in c01.rows] == ["Y", "N"]
    assert c01.rows[0].time_s == pytest.approx(0.01)  # 1 GB at the median 100 GB/s
    assert c01.rows[1].time_s == pytest.approx(0.04)
    assert c01.speedup_percent == pytest.approx(75.0)  # (0.04 - 0.01) / 0.04, as the guide counts
    assert c01.time_ratio == pytest.approx(4.0)
    assert len(comp.warnings) == 1
    assert "GPU 1 -> GPU 2" in comp.warnings[0]
    assert "host" in comp.pairs[3].rows[0].transport
    assert "NCCL_P2P_DISABLE" in comp.note

    document = p2p.p2p_document(rows, 3, method=method, size_bytes=size, iters=5, snap=None, comparison=comp)
    doc = document.to_json_dict()
    assert list(doc)[-2:] == ["comparison", "warnings"]  # after the matrices, as printed
    assert doc["warnings"] == comp.warnings
    validator("rigcheck.bench/1").validate(doc)
    broken = json.loads(json.dumps(doc))
    broken["comparison"]["pairs"][0]["rows"][0]["p2p"] = "yes"
    with pytest.raises(jsonschema.ValidationError, match="yes"):
        validator("rigcheck.bench/1").validate(broken)

    page = bench_html(document)
    assert 'class="comparison"' in page
    assert "staged through pinned host memory" in page

    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(terminal(document))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert out.index("p2p --compare-p2p") < out.index("p2p: GPU-to-GPU copies")  # the comparison first
    assert "0 -> 1" in out
    assert "+75.0%" in out
    assert "! GPU 1 -> GPU 2" in out


def test_p2p_compare_skips_a_pair_measured_in_one_mode() -> None:
    rows = p2p.build_rows(
        2, fake_measure, lambda a, b: p2p.PairFacts(), size_bytes=10**9, method=P2P_METHOD, modes=["peer"]
    )
    assert p2p.p2p_comparison(rows).pairs == []


def test_p2p_pair_facts_from_snapshot() -> None:
    snap = H100
    f = p2p.pair_facts(snap.gpu(0), snap.gpu(1), snap, "NVIDIA H100 80GB HBM3")
    assert f.link == "NV18"
    assert f.nvml_p2p_read == "ok"
    assert f.peer_theoretical_gbps == pytest.approx(18 * 25.0)  # NVLink 4: 25 GB/s per link per direction
    assert f.pcie_theoretical_gbps == pytest.approx(32 * 16 * 128 / 130 / 8)
    titan = snapshot_from_json((SNAPSHOTS / "2x-titan-rtx-nv2.json").read_text())
    g0, g1 = titan.gpu(0), titan.gpu(1)
    assert g0 is not None
    f2 = p2p.pair_facts(g0, g1, titan, g0.name or "")
    assert f2.nvlinks == 2
    assert f2.peer_theoretical_gbps == pytest.approx(50.0)  # TU102: two links of 25 GB/s per direction
    no_pair = p2p.pair_facts(None, None, snap, "x")
    assert no_pair.link is None
    assert no_pair.peer_theoretical_gbps is None


# --- GPU requirements, without a GPU ----------------------------------------------------------------------

needs_no_cuda = pytest.mark.skipif(HAS_CUDA, reason="checks the messages given where torch sees no GPU")


@needs_no_cuda
def test_gpu_only_benchmarks_refuse_in_one_line() -> None:
    with pytest.raises(UsageError, match="hostlink needs an NVIDIA GPU; ") as exc:
        hostlink.run_hostlink(snapshot=H100)
    assert "\n" not in str(exc.value)
    with pytest.raises(UsageError, match="p2p needs an NVIDIA GPU"):
        p2p.run_p2p(snapshot=H100)
    with pytest.raises(UsageError, match="add --cpu"):
        matmul.run_matmul(snapshot=H100)
    with pytest.raises(UsageError, match="add --cpu"):
        membw.run_membw(snapshot=H100)


# --- the CLI, through the launcher (one spawned CPU worker each) -----------------------------------------


def test_cli_matmul_cpu_json(rigcheck: Rigcheck) -> None:
    result = rigcheck(
        "bench", "matmul", "--cpu", "--shape", "32x32x32", "--shape", "48", "--dtype", "all", "--repeats", "2", "--json"
    )
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == BENCH_SCHEMA
    assert doc["benchmark"] == "matmul"
    assert doc["partial"] is False
    assert doc["method"]["method_version"] == "matmul-1"
    assert doc["method"]["timer"] == "perf_counter"
    assert doc["versions"]["torch"] == torch.__version__
    assert "gpus" in doc["snapshot"]
    assert [(r["dtype"], r["m"]) for r in doc["results"]] == [("bf16", 32), ("bf16", 48), ("fp32", 32), ("fp32", 48)]
    assert all(r["correct"] for r in doc["results"])
    assert sum(r["best"] for r in doc["results"]) == 2  # one per dtype
    assert any("fp16 skipped" in n for n in doc["notes"])
    assert any("tf32 skipped" in n for n in doc["notes"])


def test_cli_membw_cpu_table(rigcheck: Rigcheck) -> None:
    result = rigcheck("bench", "membw", "--cpu", "--size", "64K", "--repeats", "2", "--warmup", "0")
    assert result.code == 0, result.stderr
    assert "copy (GB/s)" in result.stdout
    assert "read+write (GB/s)" in result.stdout
    assert "64 KiB" in result.stdout
    assert "membw-1" in result.stdout


def test_run_matmul_two_cpu_ranks() -> None:
    document = matmul.run_matmul(
        cpu=True, world_size=2, shapes=[(16, 16, 16), (32, 32, 32)], warmup=0, repeats=2, snapshot=H100
    )
    doc = document.to_json_dict()
    assert doc["partial"] is False, doc["error"]
    assert doc["snapshot"] == snapshot_to_dict(H100)  # the machine the caller handed in
    assert doc["world_size"] == 2
    assert doc["backend"] == "gloo"
    assert sorted(r["rank"] for r in doc["results"]) == [0, 0, 1, 1]
    assert all(r["backend"] == "gloo" and r["world_size"] == 2 for r in doc["results"])
    assert sorted(b["rank"] for b in doc["best"]) == [0, 1]  # the best shape per rank
    # No catalogue peak for a CPU: null, with the reason beside it.
    for r in doc["results"]:
        assert r["peak_tflops"] is None
        assert r["fraction_of_peak"] is None
        assert r["missing"] == {
            "peak_tflops": "no catalogue peak for a CPU",
            "fraction_of_peak": "no catalogue peak for a CPU",
        }


@needs_no_cuda
def test_cli_gpu_commands_without_gpu(rigcheck: Rigcheck) -> None:
    """The no-GPU rule (docs/commands.md): exit 1, one line on stderr, nothing on stdout."""
    for args, hint in ((["hostlink", "--json"], None), (["matmul"], "--cpu")):
        result = rigcheck("bench", *args)
        assert result.code == 1, args
        assert result.stdout == ""
        line = result.stderr.strip()
        assert line.startswith("rigcheck: no NVIDIA GPU visible: ")
        assert "\n" not in line
        if hint is not None:
            assert hint in line


def test_cli_matmul_cpu_rejects_gpu_only_dtype(rigcheck: Rigcheck) -> None:
    assert "only bf16 and fp32" in rigcheck("bench", "matmul", "--cpu", "--dtype", "tf32").error()


# --- on a real GPU -----------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_matmul_small_sweep() -> None:
    document = matmul.run_matmul(
        dtypes=["bf16", "tf32"],
        shapes=[(1024, 1024, 1024), (2048, 2048, 2048)],
        warmup=2,
        repeats=5,
        warmup_s=0.5,
        snapshot=None,
    )
    doc = document.to_json_dict()
    assert doc["partial"] is False, doc["error"]
    assert doc["method"]["timer"] == "cuda_events"
    assert all(r["correct"] for r in doc["results"])
    assert all(r["tflops_median"] > 1.0 for r in doc["results"])
    assert len(doc["best"]) == 2


@pytest.mark.gpu
def test_gpu_membw_and_hostlink() -> None:
    from rigcheck.probe.live import probe_machine

    doc = membw.run_membw(sizes=[64 << 20], repeats=3, snapshot=None).to_json_dict()
    assert doc["results"][0]["correct"] is True
    assert doc["results"][0]["copy_gbps"] > 10
    doc = hostlink.run_hostlink(gpus=[0], size_bytes=16 << 20, repeats=2, snapshot=probe_machine()).to_json_dict()
    rows = doc["results"]
    assert {(r["direction"], r["memory"]) for r in rows} >= {
        ("h2d", "pinned"),
        ("d2h", "pinned"),
        ("h2d", "pageable"),
        ("d2h", "pageable"),
    }
    assert all(r["correct"] for r in rows)


@pytest.mark.gpu
@pytest.mark.skipif(HAS_CUDA and torch.cuda.device_count() < 2, reason="p2p needs two GPUs")
def test_gpu_p2p_pair() -> None:
    from rigcheck.probe.live import probe_machine

    document = p2p.run_p2p(size_bytes=16 << 20, repeats=2, iters=2, compare=True, snapshot=probe_machine())
    doc = document.to_json_dict()
    n = doc["gpus"]
    assert len(doc["results"]) == n * (n - 1) * 2
    assert all(r["correct"] for r in doc["results"])
    assert all(r["latency_us"] is not None and r["latency_us"] > 0 for r in doc["results"])
    comp = doc["comparison"]
    assert len(comp["pairs"]) == n * (n - 1)
    assert all(pair["speedup_percent"] is not None for pair in comp["pairs"])


def test_rate_column_keeps_small_cpu_figures_readable() -> None:
    from rigcheck.report.bench.render import rate

    assert [rate(x) for x in (799.44, 2.3456, 0.5234, 0.000123, None)] == ["799.4", "2.35", "0.523", "0.00012", "-"]
