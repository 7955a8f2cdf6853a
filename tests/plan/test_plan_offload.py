"""`rigcheck plan --offload cpu|nvme`: the bytes per tier (DeepSpeed's estimators), the fit against a machine's
RAM and free space, the traffic and its time; and the plan without --offload unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.errors import UsageError
from rigcheck.plan.offload import Capacity, hostlink_from_bench, nvme_from_bench, plan_offload
from rigcheck.report.render import Format, render
from tests.contracts.test_schemas import assert_valid
from tests.support.cli import Rigcheck

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"
H100 = SNAPSHOTS / "healthy-8x-h100.json"  # host.memory_total_gib 2015.6
UNKNOWN = Capacity(None, None, "not known in this test")


def _plan(rigcheck: Rigcheck, *args: str) -> dict[str, Any]:
    result = rigcheck("plan", "--params", "7B", "--gpus", "8", *args, "--json")
    assert result.code == 0, result.stderr
    doc: dict[str, Any] = result.json
    return doc


def _hostlink_doc(gbps: float) -> dict[str, Any]:
    rows = [
        {"gpu": g, "direction": d, "memory": m, "gbps": gbps if m == "pinned" else gbps / 4, "value": 0}
        for g in (0, 1)
        for d in ("h2d", "d2h")
        for m in ("pinned", "pageable")
    ]
    return {"schema": "rigcheck.bench/1", "benchmark": "hostlink", "results": rows}


def _nvme_doc(read: float, write: float, **extra: Any) -> dict[str, Any]:
    rows = [
        {"name": "nvme_read", "unit": "GB/s", "value": read},
        {"name": "nvme_write", "unit": "GB/s", "value": write},
        {"name": "buffered_read", "unit": "GB/s", "value": 99.0},
    ]
    return {"schema": "rigcheck.bench/1", "benchmark": "nvme", "results": rows, **extra}


def test_zero3_cpu_asks_16_bytes_per_param_and_names_deepspeed(rigcheck: Rigcheck) -> None:
    doc = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--dtype", "bf16", "--from", str(H100))
    off = doc["offload"]
    assert off["cpu_bytes"] >= 16 * 7e9
    # DeepSpeed's zero3 estimator, zero_init, 1 node: params x 18 x 1.5
    assert off["cpu_bytes"] == pytest.approx(7e9 * 18 * 1.5)
    assert "DeepSpeed" in off["source"]
    assert "estimate_zero3_model_states_mem_needs" in off["source"]
    cpu = next(r for r in off["breakdown"] if r["tier"] == "cpu")
    assert cpu["optimizer_bytes"] + cpu["grads_bytes"] == 16 * 7e9  # fp32 master, momentum, variance, grads
    assert off["nvme_bytes"] == 0
    assert_valid(doc)


def test_zero3_cpu_fp32_still_at_least_16_bytes(rigcheck: Rigcheck) -> None:
    off = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--dtype", "fp32", "--from", str(H100))["offload"]
    assert off["cpu_bytes"] >= 16 * 7e9
    assert any("fp32" in a for a in off["assumptions"])


def test_zero2_cpu_keeps_params_and_grads_on_gpu(rigcheck: Rigcheck) -> None:
    off = _plan(rigcheck, "--strategy", "zero2", "--offload", "cpu", "--dtype", "bf16", "--from", str(H100))["offload"]
    gpu = next(r for r in off["breakdown"] if r["tier"] == "gpu")
    cpu = next(r for r in off["breakdown"] if r["tier"] == "cpu")
    assert off["gpu_bytes"] == 2 * 7e9  # DeepSpeed's zero2 estimator: 2 x params per GPU
    assert gpu["params_bytes"] == 2 * 7e9
    assert gpu["optimizer_bytes"] == 0
    assert cpu["params_bytes"] == 0
    assert cpu["optimizer_bytes"] == 12 * 7e9
    assert off["cpu_bytes"] == pytest.approx(7e9 * max(4 * 8, 16) * 1.5)
    assert off["nvme_bytes"] == 0
    assert "estimate_zero2_model_states_mem_needs" in off["source"]


def test_nvme_tier_holds_optimizer_and_params(rigcheck: Rigcheck) -> None:
    off = _plan(rigcheck, "--strategy", "zero3", "--offload", "nvme", "--dtype", "bf16", "--from", str(H100))["offload"]
    nvme = next(r for r in off["breakdown"] if r["tier"] == "nvme")
    cpu = next(r for r in off["breakdown"] if r["tier"] == "cpu")
    assert nvme["optimizer_bytes"] == 12 * 7e9
    assert nvme["params_bytes"] == 2 * 7e9
    assert off["nvme_bytes"] == nvme["total_bytes"] > 0
    assert cpu["optimizer_bytes"] == 0
    assert cpu["params_bytes"] == 0
    assert off["nvme_time_s"] > 0
    assert "assumed" in off["nvme_source"]
    fits = {f["tier"]: f for f in off["fit"]}
    assert fits["nvme"]["fits"] is None
    assert "missing" in fits["nvme"]
    assert fits["nvme"]["missing"]["fits"]


@pytest.mark.parametrize(
    ("strategy", "tier", "needle"),
    [
        ("ddp", "cpu", "DDP does not offload"),
        ("zero2", "nvme", "needs --strategy zero3"),
        ("fsdp", "cpu", "use --strategy zero2 or zero3"),
    ],
)
def test_refused_in_one_line(strategy: str, tier: str, needle: str, rigcheck: Rigcheck) -> None:
    args = ["plan", "--params", "7B", "--gpus", "8", "--strategy", strategy, "--offload", tier]
    result = rigcheck(*args)
    assert result.code == 2
    err = result.stderr.strip()
    assert needle in err
    assert len(err.splitlines()) == 1
    with pytest.raises(UsageError, match=needle):
        plan_offload(7_000_000_000, 8, strategy, "bf16", tier, ram=UNKNOWN, nvme_free=UNKNOWN)


def test_hostlink_from_changes_the_time(tmp_path: Path, rigcheck: Rigcheck) -> None:
    base = ["--strategy", "zero3", "--offload", "cpu", "--dtype", "bf16", "--from", str(H100)]
    assumed = _plan(rigcheck, *base)["offload"]
    path = tmp_path / "hostlink.json"
    path.write_text(json.dumps(_hostlink_doc(5.0)))
    measured = _plan(rigcheck, *base, "--from", str(path))["offload"]
    assert measured["host_h2d_gbps"] == 5.0
    assert measured["host_d2h_gbps"] == 5.0
    assert "measured" in measured["host_source"]
    assert "assumed" in assumed["host_source"]
    # per GPU: 2 x 2 B x 7e9 / 8 up, 2 B x 7e9 / 8 down, at 5 GB/s
    assert measured["host_time_s"] == pytest.approx((4 + 2) * 7e9 / 8 / 5e9)
    assert measured["host_time_s"] > assumed["host_time_s"]


def test_nvme_bench_gives_bandwidth_and_free_space(tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = tmp_path / "nvme.json"
    path.write_text(json.dumps(_nvme_doc(6.0, 4.0, path={"free_bytes": 10e12})))
    off = _plan(
        rigcheck,
        "--strategy",
        "zero3",
        "--offload",
        "nvme",
        "--dtype",
        "bf16",
        "--from",
        str(H100),
        "--from",
        str(path),
    )["offload"]
    assert (off["nvme_read_gbps"], off["nvme_write_gbps"]) == (6.0, 4.0)
    fits = {f["tier"]: f for f in off["fit"]}
    assert fits["nvme"]["fits"] is True
    assert fits["nvme"]["available_bytes"] == 10e12
    reads = sum(t["bytes"] for t in off["traffic"] if t["direction"] == "read")
    writes = sum(t["bytes"] for t in off["traffic"] if t["direction"] == "write")
    assert off["nvme_time_s"] == pytest.approx(reads / 6e9 + writes / 4e9)


def test_bench_readers_refuse_documents_without_rows() -> None:
    with pytest.raises(UsageError):
        hostlink_from_bench({"results": [{"direction": "h2d", "memory": "pageable", "gbps": 3.0}]}, "x")
    with pytest.raises(UsageError):
        nvme_from_bench({"results": "nope"}, "x")
    assert nvme_from_bench(_nvme_doc(2.0, 1.0), "x")[3] is None


def test_fit_against_snapshot_ram(tmp_path: Path, rigcheck: Rigcheck) -> None:
    small = json.loads((SNAPSHOTS / "2x-titan-rtx-nv2.json").read_text())
    gib = small["host"]["memory_total_gib"]
    off = _plan(
        rigcheck,
        "--strategy",
        "zero3",
        "--offload",
        "cpu",
        "--dtype",
        "bf16",
        "--from",
        str(SNAPSHOTS / "2x-titan-rtx-nv2.json"),
    )["offload"]
    fit = off["fit"][0]
    assert fit["available_bytes"] == pytest.approx(gib * 2**30)
    assert fit["fits"] is (off["cpu_bytes"] <= gib * 2**30)
    assert f"{gib:,.1f} GiB" in fit["verdict"]
    assert fit["verdict"].startswith("needs 189.0 GB of CPU RAM")
    big = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--dtype", "bf16", "--from", str(H100))["offload"][
        "fit"
    ][0]
    assert big["fits"] is True
    assert big["verdict"].endswith(": fits")
    small["host"]["memory_total_gib"] = None
    path = tmp_path / "no-ram.json"
    path.write_text(json.dumps(small))
    doc = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--from", str(path))
    unknown = doc["offload"]["fit"][0]
    assert unknown["fits"] is None
    assert unknown["available_bytes"] is None
    assert "memory_total_gib" in unknown["verdict"]
    assert_valid(doc)


def _no_probe(*_args: object) -> object:
    raise AssertionError("plan read the RAM of the machine it runs on without --ram local")


def test_target_ram_unknown_without_ram_or_snapshot(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    """The machine running plan is not the target: with no --ram and no snapshot the fit is unknown, with why."""
    monkeypatch.setattr("rigcheck.probe.host.probe_host", _no_probe)
    doc = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu")
    fit = doc["offload"]["fit"][0]
    assert fit["fits"] is None
    assert fit["available_bytes"] is None
    assert "--ram GIB" in fit["verdict"]
    assert "--ram local" in fit["missing"]["fits"]
    assert_valid(doc)


def test_target_ram_from_ram_option(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    monkeypatch.setattr("rigcheck.probe.host.probe_host", _no_probe)
    small = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--ram", "24")["offload"]["fit"][0]
    assert small["available_bytes"] == 24 * 2**30
    assert small["fits"] is False
    assert (
        small["verdict"]
        == "needs 189.0 GB of CPU RAM per node, the target (--ram 24) has 24.0 GiB: does not fit, 163.2 GB short"
    )
    # --ram is the target's: it wins over the snapshot's host memory
    big = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--ram", "512", "--from", str(H100))
    assert big["offload"]["fit"][0]["available_bytes"] == 512 * 2**30
    assert big["offload"]["fit"][0]["fits"] is True


def test_local_ram_only_when_asked(monkeypatch: pytest.MonkeyPatch, rigcheck: Rigcheck) -> None:
    from rigcheck.model.snapshot import Host

    monkeypatch.setattr("rigcheck.probe.host.probe_host", lambda *_: Host(memory_total_gib=256.0))
    fit = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--ram", "local")["offload"]["fit"][0]
    assert fit["available_bytes"] == 256 * 2**30
    assert fit["available_source"] == "the machine running plan (--ram local)"
    monkeypatch.setattr("rigcheck.probe.host.probe_host", lambda *_: Host(memory_total_gib=None))
    fit = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--ram", "local")["offload"]["fit"][0]
    assert fit["fits"] is None
    assert "unreadable" in fit["verdict"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ram", "64"], "go with --offload"),
        (["--offload", "cpu", "--strategy", "zero3", "--ram", "lots"], "--ram 'lots'"),
        (["--offload", "cpu", "--strategy", "zero3", "--ram", "-8"], "--ram '-8'"),
        (["--offload", "cpu", "--strategy", "zero3", "--ram", "nan"], "--ram 'nan'"),
    ],
)
def test_bad_ram_refused(args: list[str], needle: str, rigcheck: Rigcheck) -> None:
    assert needle in rigcheck("plan", "--params", "7B", "--gpus", "8", *args).error()


def test_nodes_divide_the_cpu_share(rigcheck: Rigcheck) -> None:
    one = _plan(rigcheck, "--strategy", "zero3", "--offload", "cpu", "--dtype", "bf16", "--from", str(H100))["offload"]
    two = _plan(
        rigcheck, "--strategy", "zero3", "--offload", "cpu", "--dtype", "bf16", "--nodes", "2", "--from", str(H100)
    )["offload"]
    assert two["cpu_bytes"] == pytest.approx(one["cpu_bytes"] / 2)
    assert two["gpus_per_node"] == 4
    args = ["plan", "--params", "7B", "--gpus", "8", "--nodes", "3", "--strategy", "zero3", "--offload", "cpu"]
    assert "divide" in rigcheck(*args).error()


def test_compute_time_compared(rigcheck: Rigcheck) -> None:
    off = _plan(
        rigcheck,
        "--strategy",
        "zero3",
        "--offload",
        "cpu",
        "--dtype",
        "bf16",
        "--gpu",
        "H100 SXM5",
        "--from",
        str(H100),
    )["offload"]
    assert off["compute_time_s"] > 0
    assert off["offload_to_compute"] == pytest.approx(off["offload_time_s"] / off["compute_time_s"])
    assert any("vs compute" in note for note in off["notes"])


def test_every_format_draws_the_offload_block(rigcheck: Rigcheck) -> None:
    from rigcheck.cli.plan import build_comm_plan

    doc = build_comm_plan("7B", 8, "zero3", "bf16", None, H100, None, None, None, None, offload="nvme")
    for fmt in (Format.MARKDOWN, Format.HTML):
        text = render(doc, fmt)
        assert isinstance(text, str)
        assert "Offload" in text
        assert "needs " in text
    result = rigcheck(
        "plan", "--params", "7B", "--gpus", "8", "--strategy", "zero3", "--offload", "cpu", "--from", str(H100)
    )
    assert "Offload to CPU" in result.stdout
    assert "CPU RAM" in result.stdout


def test_without_offload_no_offload_key(rigcheck: Rigcheck) -> None:
    doc = _plan(rigcheck, "--strategy", "zero3", "--from", str(H100))
    assert "offload" not in doc
    assert rigcheck("plan", "--params", "7B", "--gpus", "8", "--nodes", "2").error()


def _terminal(rigcheck: Rigcheck, *args: str) -> str:
    result = rigcheck("plan", "--params", "7B", *args)
    assert result.code == 0, result.stderr
    return " ".join(result.stdout.split())


def test_multinode_zero2_shows_deepspeeds_estimate_beside_its_own(rigcheck: Rigcheck) -> None:
    """Issue 23: 2 x 8 GPUs, ZeRO-2 CPU offload said it followed DeepSpeed's estimator and printed 336 GB alone;
    estimate_zero2_model_states_mem_needs gives 7e9 x max(4 x 16, 16) x 1.5 = 672 GB."""
    text = _terminal(rigcheck, "--gpus", "16", "--nodes", "2", "--strategy", "zero2", "--offload", "cpu")
    assert "672.0 GB" in text
    assert "CPU RAM 336.0 GB and NVMe 0.0 GB per node (672.0 GB and 0.0 GB for all 2)" in text
    assert "max(4 x 16 GPUs, 16)" in text
    assert "the 8 GPUs of one node" in text  # the why


@pytest.mark.parametrize(
    ("gpus", "nodes", "strategy", "dtype"),
    [
        ("8", "1", "zero2", "bf16"),
        ("16", "2", "zero2", "bf16"),
        ("16", "4", "zero1", "fp32"),
        ("16", "2", "zero3", "bf16"),
    ],
)
def test_cpu_bytes_against_deepspeeds_formulas(
    gpus: str, nodes: str, strategy: str, dtype: str, rigcheck: Rigcheck
) -> None:
    """The estimators' own arithmetic (stage_1_and_2.py / stage3.py, DeepSpeed 0.19.8), written out here."""
    p, t, n = 7e9, int(gpus), int(nodes)
    off = _plan(
        rigcheck,
        "--gpus",
        gpus,
        "--nodes",
        nodes,
        "--strategy",
        strategy,
        "--dtype",
        dtype,
        "--offload",
        "cpu",
        "--from",
        str(H100),
    )["offload"]
    deepspeed = p * max(4 * t, 16) * 1.5 if strategy != "zero3" else p * 18 / n * 1.5
    notes = " ".join(off["notes"])
    if strategy == "zero3" or n == 1:
        assert off["cpu_bytes"] == pytest.approx(deepspeed)  # the same figure: no second one printed
        assert "DeepSpeed's estimator" not in notes
    else:  # per node, 4 x this node's GPUs; the estimator's figure beside it
        assert off["cpu_bytes"] == pytest.approx(p * max(4 * t // n, 16) * 1.5)
        assert f"{deepspeed / 1e9:,.1f} GB" in notes
