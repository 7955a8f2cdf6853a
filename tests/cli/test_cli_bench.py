"""The measurement commands through the real entry point (rigcheck.cli.app.main), on two CPU processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Rigcheck

pytest.importorskip("torch")


def test_allreduce_contract_through_main(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("bench", "allreduce", "--cpu", "--world-size", "2", "--max-bytes", "64K", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "rigcheck.bench/1"
    assert doc["partial"] is False
    sizes = [r["size_bytes"] for r in doc["results"]]
    assert sizes == sorted(sizes)
    assert sizes[-1] == 65536
    for r in doc["results"]:
        assert {
            "op",
            "size_bytes",
            "time_us_median",
            "algbw_gbps",
            "busbw_gbps",
            "world_size",
            "backend",
            "correct",
        } <= set(r)
        assert (r["op"], r["world_size"], r["backend"], r["correct"]) == ("allreduce", 2, "gloo", True)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 2 * (2 - 1) / 2)


def test_allreduce_compare_p2p_through_main(tmp_path: Path, rigcheck: Rigcheck) -> None:
    page, markdown = tmp_path / "cmp.html", tmp_path / "cmp.md"
    argv = [
        "bench",
        "allreduce",
        "--cpu",
        "-n",
        "2",
        "--max-bytes",
        "4K",
        "--compare-p2p",
        "--json",
        "--html",
        str(page),
        "--markdown",
        str(markdown),
    ]
    code, out, err = rigcheck(*argv)
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["comparison"]["rows"]
    assert [r["p2p"] for r in rows] == ["Y", "N"]
    assert {r["transport"] for r in rows} == {"gloo (no NCCL)"}
    assert len(doc["runs"]) == 2
    assert "NCCL_P2P_DISABLE=1 changes nothing" in " ".join(doc["notes"])
    assert "<svg" in page.read_text()
    md = markdown.read_text().splitlines()
    assert md[0] == "# rigcheck bench allreduce-compare-p2p"
    assert "| P2P/NVLink | time (s) | busbw (GB/s) | transport (from NCCL_DEBUG=INFO) |" in md
    assert [line for line in md if line.startswith("## ")] == ["## P2P=Y (gloo (no NCCL))", "## P2P=N (gloo (no NCCL))"]


def test_plan_and_nccl_log_are_registered(rigcheck: Rigcheck) -> None:
    code, out, _ = rigcheck("plan", "--params", "124M", "--gpus", "2", "--strategy", "ddp", "--json")
    assert code == 0
    # bf16 mixed precision by default: 2 bytes a gradient, ring all-reduce's 2(N-1)/N = 1 on two GPUs
    assert json.loads(out)["wire_bytes_per_gpu_per_step"] == 248_000_000
    log = (
        Path(__file__).parent.parent / "fixtures" / "corpus" / "nccl-log" / "001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt"
    )
    code, out, _ = rigcheck("nccl-log", str(log), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["transports"] == ["P2P/CUMEM"]
    assert data["nccl_version"] == "2.28.9"


def test_burn_analyze_through_main(tmp_path: Path, rigcheck: Rigcheck) -> None:
    trace = Path(__file__).parent.parent / "fixtures" / "corpus" / "telemetry" / "smi-lms-torch-bf16-burn.csv"
    page = tmp_path / "burn.html"
    code, out, _ = rigcheck("burn", "--analyze", str(trace), "--json", "--html", str(page))
    assert code == 0
    gpu = json.loads(out)["gpus"][0]
    assert (gpu["limiter"], gpu["temp_c_max"]) == ("power", 70)
    assert "<svg" in page.read_text()
