"""The communication planner: the issue's gpt2 figures, the formulas, bandwidth sources, the guide's result, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigcheck.errors import UsageError
from rigcheck.model import Gpu, GpuPair, LinkKind, Snapshot
from rigcheck.plan.comm import (
    ASSUMED_MFU,
    GPT2_PARAMS,
    STRATEGIES,
    busbw_from_bench,
    collectives,
    gpt2_param_count,
    link_busbw,
    model_state_bytes_per_gpu,
    parse_params,
    plan_comm,
    theoretical_busbw,
    wire_bytes_per_gpu,
)
from rigcheck.plan.guide import guide_rig_explanation
from rigcheck.report.render import Format, render
from tests.support.cli import Rigcheck

SCHEMA = "rigcheck.plan/1"


def test_gpt2_parameter_count() -> None:
    assert gpt2_param_count() == 124_439_808
    assert GPT2_PARAMS == 124_439_808
    assert gpt2_param_count(tied=False) == 124_439_808 + 50257 * 768


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("124M", 124_000_000),
        ("124m", 124_000_000),
        ("1.3B", 1_300_000_000),
        ("7e9", 7_000_000_000),
        ("124439808", 124_439_808),
        ("124,439,808", 124_439_808),
        ("gpt2", 124_439_808),
        ("350k", 350_000),
    ],
)
def test_parse_params(text: str, value: int) -> None:
    assert parse_params(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.5", "-3M", "1.2345k", "12 parsecs", "0"])
def test_parse_params_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_params(text)


def test_issue_check_gpt2_two_gpus_fp32() -> None:
    """The issue: gpt2 / 2 GPUs / fp32: DDP 496 MB per GPU per step, ZeRO-1/2 the same, ZeRO-3/FSDP 1.5x."""
    params = parse_params("124M")
    ddp = wire_bytes_per_gpu(params, 2, "ddp", "fp32")
    assert ddp == 496_000_000
    assert f"{ddp / 1e6:.0f} MB" == "496 MB"
    assert wire_bytes_per_gpu(params, 2, "zero1") == ddp
    assert wire_bytes_per_gpu(params, 2, "zero2") == ddp
    assert wire_bytes_per_gpu(params, 2, "zero3") == 1.5 * ddp
    assert wire_bytes_per_gpu(params, 2, "fsdp") == 1.5 * ddp
    # gpt2's exact count
    assert wire_bytes_per_gpu(GPT2_PARAMS, 2, "ddp") == 497_759_232


def test_ring_factor_and_dtype() -> None:
    # 2(n-1)/n x S: 8 GPUs, 1e9 params, bf16 -> 2 * 7/8 * 2e9
    assert wire_bytes_per_gpu(10**9, 8, "ddp", "bf16") == pytest.approx(3.5e9)
    assert wire_bytes_per_gpu(10**9, 8, "zero3", "fp16") == pytest.approx(5.25e9)
    assert wire_bytes_per_gpu(10**9, 1, "ddp") == 0
    ops = [c.op for c in collectives("zero3", 4, 100.0)]
    assert ops == ["all_gather", "all_gather", "reduce_scatter"]


def test_model_states_follow_zero_paper() -> None:
    # ZeRO paper Figure 1: 7.5B params, 64 GPUs, mixed precision (K = 12): 120 GB, 31.4 GB, 16.6 GB, 1.9 GB
    psi, n = 7.5e9, 64
    assert model_state_bytes_per_gpu(int(psi), n, "ddp", "bf16") / 1e9 == pytest.approx(120)
    assert model_state_bytes_per_gpu(int(psi), n, "zero1", "bf16") / 1e9 == pytest.approx(31.4, abs=0.1)
    assert model_state_bytes_per_gpu(int(psi), n, "zero2", "bf16") / 1e9 == pytest.approx(16.6, abs=0.1)
    assert model_state_bytes_per_gpu(int(psi), n, "zero3", "bf16") / 1e9 == pytest.approx(1.9, abs=0.1)


def test_comm_and_compute_times() -> None:
    plan = plan_comm(124_000_000, 2, "ddp", "fp32", busbw_gbps=10.0, tokens_per_step_per_gpu=4096, achieved_tflops=5)
    assert plan.comm_time_s == pytest.approx(496e6 / 10e9)
    assert plan.compute_time_s == pytest.approx(6 * 124e6 * 4096 / 5e12)
    assert plan.busbw_source == "given (--busbw)"
    comm, compute = plan.comm_time_s, plan.compute_time_s
    assert comm is not None
    assert compute is not None
    assert plan.comm_share == pytest.approx(comm / (comm + compute))
    assert plan.exposed_comm_s == 0.0  # 49.6 ms fits in the ~406 ms backward pass
    assert "fits inside the backward pass" in plan.advice[0]


def test_slow_link_is_called_out() -> None:
    plan = plan_comm(10**9, 8, "ddp", "bf16", busbw_gbps=1.0, tokens_per_step_per_gpu=1024, achieved_tflops=100)
    assert plan.exposed_comm_s is not None
    assert plan.exposed_comm_s > 3
    assert "longer than the backward pass" in plan.advice[0]
    assert any("communication-bound" in a for a in plan.advice)


def test_missing_bandwidth_and_flops_are_null_with_reasons() -> None:
    plan = plan_comm(124_000_000, 2, "zero3")
    doc = plan.to_json_dict()
    assert doc["comm_time_s"] is None
    assert "--busbw" in doc["comm_time_reason"]
    assert doc["compute_time_s"] is None
    assert "--tokens" in doc["compute_time_reason"]
    assert doc["wire_bytes_per_gpu_per_step"] == 744_000_000


def test_every_null_number_has_its_reason_in_missing() -> None:
    doc = plan_comm(124_000_000, 2, "zero3").to_json_dict()
    no_bw = "no bus bandwidth: pass --busbw GBPS, --from a bench result, --link, or a snapshot with GPU pairs"
    assert doc["missing"] == {
        "busbw_gbps": no_bw,
        "comm_time_s": no_bw,
        "flops_per_step_per_gpu": "no tokens per step: pass --tokens (sequences x sequence length per GPU)",
        "achieved_tflops": "no FLOPS: pass --tflops (achieved) or --model (catalog peak x an assumed utilisation)",
        "compute_time_s": "no tokens per step: pass --tokens (sequences x sequence length per GPU)",
        "comm_share": "the time on the wire and the compute time are unknown",
        "exposed_comm_s": "the time on the wire and the compute time are unknown",
        "gpu_memory_bytes": "no --model: the memory per GPU is unknown",
    }
    assert doc["missing"]["comm_time_s"] == doc["comm_time_reason"]  # the older sibling keys stay, same text
    assert doc["missing"]["compute_time_s"] == doc["compute_time_reason"]
    for row in doc["strategies"]:
        assert row["missing"] == {
            "comm_time_s": no_bw,
            "fits_model_states": "no --model: the memory per GPU is unknown",
        }


def test_missing_is_empty_when_everything_is_known() -> None:
    plan = plan_comm(124_000_000, 2, "ddp", "fp32", busbw_gbps=10.0, tokens_per_step_per_gpu=4096, gpu="TITAN RTX")
    doc = plan.to_json_dict()
    assert doc["missing"] == {}
    assert all(row["missing"] == {} for row in doc["strategies"])
    bw_only = plan_comm(124_000_000, 2, "ddp", busbw_gbps=10.0, tokens_per_step_per_gpu=4096).to_json_dict()
    assert bw_only["missing"]["comm_share"] == "the compute time is unknown"
    one = plan_comm(124_000_000, 1, "ddp").to_json_dict()
    assert one["comm_time_s"] == 0.0
    assert one["missing"]["busbw_gbps"] == "one GPU: nothing goes on the wire"
    one_gpu_snapshot = Snapshot(gpus=[Gpu(index=0, name="NVIDIA TITAN RTX")])
    lone = plan_comm(124_000_000, 2, "ddp", snapshot=one_gpu_snapshot).to_json_dict()
    assert lone["missing"]["busbw_gbps"].startswith("the snapshot has fewer than two GPUs to pair")


def test_catalog_peak_with_stated_mfu() -> None:
    plan = plan_comm(124_000_000, 2, "ddp", "fp32", tokens_per_step_per_gpu=4096, gpu="TITAN RTX", link="NV2")
    assert plan.busbw_gbps == 50.0  # TU102: 2 links x 25 GB/s per direction
    assert plan.achieved_tflops == pytest.approx(4608 * 1.770 * 2 / 1000 * ASSUMED_MFU)
    assert plan.tflops_source is not None
    assert "40% model FLOPs utilisation assumed" in plan.tflops_source
    assert plan.gpu_memory_bytes == 24 * 2**30
    bf16 = plan_comm(10**9, 8, "ddp", "bf16", tokens_per_step_per_gpu=4096, gpu="H100 SXM5")
    assert bf16.achieved_tflops is not None
    assert bf16.achieved_tflops > 100


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gpus": 0}, "--gpus"),
        ({"strategy": "zero4"}, "--strategy"),
        ({"dtype": "fp8"}, "--dtype"),
        ({"busbw_gbps": -1.0}, "--busbw"),
        ({"achieved_tflops": 0.0}, "--tflops"),
        ({"gpu": "Voodoo 5", "tokens_per_step_per_gpu": 1}, "--model"),
        ({"link": "NV2"}, "--model"),
        ({"link": "ethernet"}, "--link"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"params": 10**6, "gpus": 2, "strategy": "ddp"}
    args.update(kwargs)
    with pytest.raises(UsageError, match=message):
        plan_comm(**args)  # type: ignore[arg-type]


def test_link_names() -> None:
    bw, src = link_busbw("PCIe3x16", None)
    assert bw == pytest.approx(15.754, abs=0.001)
    assert "PCI-SIG" in src
    bw_nv, _ = link_busbw("NV4", "RTX 3090")
    assert bw_nv == pytest.approx(56.25)


def _snapshot(
    link: str, kind: LinkKind, nvlinks: int | None, gen: int | None = None, width: int | None = None
) -> Snapshot:
    gpus = [
        Gpu(index=i, name="NVIDIA TITAN RTX", architecture="Turing", pcie_gen_max=gen, pcie_width_max=width)
        for i in range(2)
    ]
    return Snapshot(gpus=gpus, pairs=[GpuPair(a=0, b=1, link=link, kind=kind, nvlinks=nvlinks)])


def test_theoretical_busbw_from_snapshot() -> None:
    nv = theoretical_busbw(_snapshot("NV2", "nvlink", 2), 2)
    assert nv is not None
    assert nv[0] == 50.0
    assert "Turing" in nv[1]
    pcie = theoretical_busbw(_snapshot("PHB", "host_bridge", None, gen=4, width=8), 2)
    assert pcie is not None
    assert pcie[0] == pytest.approx(15.754, abs=0.001)
    unknown = theoretical_busbw(_snapshot("PHB", "host_bridge", None), 2)
    assert unknown is not None
    assert "assumed PCIe 3.0 x16" in unknown[1]
    assert theoretical_busbw(_snapshot("NV2", "nvlink", 2), 1) is None
    plan = plan_comm(124_000_000, 2, "ddp", snapshot=_snapshot("NV2", "nvlink", 2))
    assert plan.comm_time_s == pytest.approx(496e6 / 50e9)


def test_busbw_from_bench_takes_largest_allreduce() -> None:
    doc = {
        "schema": "rigcheck.bench/1",
        "results": [
            {"op": "all_reduce", "size_bytes": 1 << 20, "busbw_gbps": 3.0},
            {"op": "all_reduce", "size_bytes": 1 << 30, "busbw_gbps": 40.5},
            {"op": "all_gather", "size_bytes": 1 << 31, "busbw_gbps": 99.0},
        ],
    }
    bw, src = busbw_from_bench(doc)
    assert bw == 40.5
    assert "1,073,741,824" in src
    with pytest.raises(UsageError):
        busbw_from_bench({"schema": "rigcheck.bench/1", "results": []})


def test_guide_rig_explanation() -> None:
    g = guide_rig_explanation()
    assert g.params == 124_439_808
    assert g.wire_bytes_per_gpu_per_step == 497_759_232
    assert g.measured_difference_s == pytest.approx(29.5, abs=0.01)
    assert g.nvlink_busbw_gbps == 50.0
    assert g.nvlink_comm_s_per_run == pytest.approx(200 * 497_759_232 / 50e9)
    ceiling, measured = g.scenarios
    assert ceiling.shm_busbw_gbps == pytest.approx(15.754, abs=0.001)
    assert ceiling.share_of_difference == pytest.approx(0.147, abs=0.001)
    assert measured.shm_busbw_gbps == 4.0
    assert measured.share_of_difference == pytest.approx(0.776, abs=0.001)
    assert g.implied_shm_busbw_gbps == pytest.approx(3.16, abs=0.01)
    assert 0.3 < g.implied_mfu_nvlink_run < 0.45
    for text in (g.params_source, g.wire_source, g.nvlink_busbw_source, g.fp32_peak_source, g.compute_source):
        assert text
    for scenario in g.scenarios:
        assert scenario.shm_busbw_source
    assert g.not_explained
    assert any("29.5 s" in line for line in g.explanation)
    assert g.model_dump(by_alias=True)["schema"] == "rigcheck.plan-guide/1"


# --- the renderings -------------------------------------------------------------------------------------------


def test_json_keeps_guide_out_unless_asked() -> None:
    plan = plan_comm(124_000_000, 2, "ddp", busbw_gbps=10.0)
    assert "guide" not in plan.to_json_dict()
    assert list(plan.to_json_dict())[-1] == "missing"
    plan.guide = guide_rig_explanation()
    assert list(plan.to_json_dict())[-1] == "guide"  # after `missing`, where the command has always put it


def test_markdown_and_html_show_the_strategy_table_and_the_guide() -> None:
    plan = plan_comm(GPT2_PARAMS, 2, "zero3", tokens_per_step_per_gpu=4096, gpu="TITAN RTX", link="NV2")
    plan.guide = guide_rig_explanation()
    md = render(plan, Format.MARKDOWN)
    assert isinstance(md, str)
    assert md.startswith("# rigcheck plan\n")
    assert "Bytes on the wire per GPU per step: **746.64 MB**" in md
    assert "| zero3 | 746.64 | 14.9 ms | 0.93 GiB |" in md
    assert "## The guide's NVLink result, explained" in md
    page = render(plan, Format.HTML)
    assert isinstance(page, str)
    assert '<tr><td><strong>zero3</strong></td><td class="num">746.64</td>' in page  # the chosen strategy
    assert "<td>ddp</td>" in page
    assert "Not explained by the bytes:" in page
    unknown = render(plan_comm(124_000_000, 2, "ddp"), Format.HTML)
    assert isinstance(unknown, str)
    assert '<td class="num na">n/a</td>' in unknown  # no bandwidth: the wire time is missing, and says so
    assert "The guide" not in unknown


# --- the command ------------------------------------------------------------------------------------------------


def test_cli_json_contract(rigcheck: Rigcheck) -> None:
    result = rigcheck("plan", "--params", "124M", "--gpus", "2", "--strategy", "ddp", "--json")
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == SCHEMA
    for key in ("wire_bytes_per_gpu_per_step", "comm_time_s", "compute_time_s", "strategy", "advice"):
        assert key in doc
    # the default: bf16 mixed precision, 2 bytes per gradient, said in the assumptions
    assert doc["wire_bytes_per_gpu_per_step"] == 248_000_000
    assert doc["inputs"]["dtype"] == "bf16"
    assert any(a.startswith("bf16 mixed precision (the default") and "--dtype fp32" in a for a in doc["assumptions"])
    assert doc["inputs"]["tokens_per_step_per_gpu"] == 4096
    assert any("4096" in a for a in doc["assumptions"])
    fp32 = rigcheck("plan", "--params", "124M", "--gpus", "2", "--dtype", "fp32", "--json").json
    assert fp32["wire_bytes_per_gpu_per_step"] == 496_000_000
    assert not any("mixed precision" in a for a in fp32["assumptions"])


@pytest.mark.parametrize(
    ("args", "dtype"),
    [
        (["--gpu", "H100 SXM5"], "bf16"),
        (["--gpu", "TITAN RTX"], "fp16"),  # Turing: no bf16, fp16 mixed precision
        (["--gpu", "TITAN V"], "fp16"),
        (["--gpu", "GeForce GTX 1080 Ti", "--tflops", "10"], "fp32"),  # no tensor cores
        (["--gpu", "TITAN RTX", "--explain-guide"], "fp32"),  # the guide's run
        (["--gpu", "TITAN RTX", "--dtype", "bf16", "--tflops", "30"], "bf16"),  # given: kept
    ],
)
def test_default_dtype_follows_the_gpu(args: list[str], dtype: str, rigcheck: Rigcheck) -> None:
    result = rigcheck("plan", "--params", "gpt2", "--gpus", "2", "--link", "PCIe3x16", *args, "--json")
    assert result.code == 0, result.stderr
    doc = result.json
    assert doc["inputs"]["dtype"] == dtype
    assert doc["compute_time_s"] > 0
    stated = [a for a in doc["assumptions"] if "dtype" in a or "precision" in a]
    assert len(stated) == (0 if "--dtype" in args else 1)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cli_every_strategy(strategy: str, rigcheck: Rigcheck) -> None:
    args = ["plan", "--params", "124M", "--gpus", "2", "--strategy", strategy, "--busbw", "50", "--dtype", "fp32"]
    args.append("--json")
    result = rigcheck(*args)
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    factor = 1.5 if strategy in {"zero3", "fsdp"} else 1.0
    assert doc["wire_bytes_per_gpu_per_step"] == 496_000_000 * factor
    assert doc["comm_time_s"] == pytest.approx(496e6 * factor / 50e9)


def test_cli_terminal_and_guide(rigcheck: Rigcheck) -> None:
    args = ["plan", "--params", "gpt2", "--gpus", "2", "--gpu", "TITAN RTX", "--link", "NV2", "--explain-guide"]
    result = rigcheck(*args)
    assert result.code == 0, result.stderr
    assert "Bytes on the wire per GPU per step: 497.76 MB" in result.stdout
    assert "Time on the wire per step: 10.0 ms" in result.stdout
    assert "The guide's NVLink result, explained" in result.stdout


def test_cli_from_bench_result(tmp_path: Path, rigcheck: Rigcheck) -> None:
    doc = {"schema": "rigcheck.bench/1", "results": [{"op": "all_reduce", "size_bytes": 1 << 30, "busbw_gbps": 4.0}]}
    path = tmp_path / "ar.json"
    path.write_text(json.dumps(doc))
    args = ["plan", "--params", "124M", "--from", str(path), "--dtype", "fp32", "--json"]
    result = rigcheck(*args)
    assert result.code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["busbw_gbps"] == 4.0
    assert out["comm_time_s"] == pytest.approx(0.124)


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "--params", "lots"],
        ["plan", "--params", "124M", "--strategy", "zero9"],
        ["plan", "--params", "124M", "--dtype", "int8"],
        ["plan", "--params", "124M", "--busbw", "10", "--from", "x.json"],
    ],
)
def test_cli_usage_errors(args: list[str], rigcheck: Rigcheck) -> None:
    assert rigcheck(*args).error()  # exit 2, one line
