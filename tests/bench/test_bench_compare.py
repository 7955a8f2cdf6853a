"""--compare-p2p: the guide's table, its speed-up arithmetic, and the transport checks on real and canned NCCL logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.bench.compare import (
    GLOO_TRANSPORT,
    NO_LOG_TRANSPORT,
    RunDocument,
    collective_figures,
    compare_p2p,
    speedup_percent,
    train_figures,
)
from rigcheck.errors import UsageError
from rigcheck.model import snapshot_from_json, snapshot_to_dict
from rigcheck.model.bench import (
    BENCH_SCHEMA,
    CollectiveDocument,
    CollectiveRow,
    Method,
    TrainDocument,
    TrainRow,
    Versions,
    row_head,
)
from tests.contracts.test_schemas import assert_valid

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus" / "nccl-log"
SNAPSHOT = snapshot_from_json((FIXTURES / "snapshots" / "2x-titan-rtx-nv2.json").read_text(encoding="utf-8"))
P2P_LOG = (CORPUS / "001-2x5060ti-vllm-tp2-p2p-cumem-2.28.9.txt").read_text()
MULTINODE_LOG = (CORPUS / "004-4node-32xa100-p2p-ipc-read-net-ib-2.10.3.txt").read_text()
# Synthetic: two ranks of one node with NCCL_P2P_DISABLE=1, so every channel goes through host memory.
SHM_LOG = """\
titan:2001:2001 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
titan:2001:2001 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1
titan:2002:2002 [1] NCCL INFO NCCL_P2P_DISABLE set by environment to 1
titan:2001:2001 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
titan:2002:2002 [1] NCCL INFO comm 0x56e0 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0
titan:2001:2001 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
titan:2001:2001 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via SHM/direct/direct
titan:2002:2002 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct
titan:2002:2002 [1] NCCL INFO Channel 01 : 1[1] -> 0[0] via SHM/direct/direct
"""

# The guide: 2 x TITAN RTX, gpt2, 200 steps, batch 4 per GPU.
GUIDE_P2P_S, GUIDE_NO_P2P_S = 101.9003, 131.4367
METHOD = Method(method_version="train-1", warmup=5, repeats=195, timer="cuda_events")
VERSIONS = Versions(rigcheck="0", python="3", torch="x", cuda="12.4", nccl="2.21.5", transformers="4")


def train_doc(
    runtime_s: float, *, backend: Any = "nccl", partial: bool = False, error: str | None = None, rows: int = 1
) -> TrainDocument:
    """A train run as run_train builds it: gpt2 on two GPUs, 1600 samples in ``runtime_s``."""
    row = TrainRow(
        **row_head(name="train", unit="ms", samples=[500.0], method=METHOD, backend=backend, world_size=2),
        model="gpt2",
        parameters=124_439_808,
        dtype="fp32",
        optimizer="AdamW lr 5e-05",
        data="generated tokens",
        steps=200,
        warmup_steps=5,
        timed_steps=195,
        batch_size=4,
        global_batch_size=8,
        seq_len=1024,
        train_runtime_s=runtime_s,
        samples_per_s=1600 / runtime_s,
        tokens_per_s=1600 / runtime_s * 1024,
        step_time_median_ms=500.0,
        step_time_p10_ms=490.0,
        step_time_p90_ms=510.0,
        step_time_min_ms=480.0,
        step_time_max_ms=600.0,
        peak_memory_bytes=10 << 30,
        peak_memory_kind="cuda max_memory_allocated",
        loss_first=10.9,
        loss_final=7.5,
        loss_finite=True,
        loss_decreased=True,
        correct=True,
    )
    return TrainDocument(
        partial=partial,
        error=error,
        method=METHOD,
        backend=backend,
        world_size=2,
        versions=VERSIONS,
        snapshot=SNAPSHOT,
        results=[row] * rows,
        notes=["how it was measured"],
        wall_s=runtime_s + 5,
    )


class FakeRuns:
    """A run function that hands back canned documents and logs, and records how it was called."""

    def __init__(self, with_p2p: tuple[RunDocument, str], without: tuple[RunDocument, str]) -> None:
        self.runs = {False: with_p2p, True: without}
        self.calls: list[tuple[dict[str, str], bool]] = []

    def __call__(self, env: dict[str, str], nccl_debug: bool) -> tuple[RunDocument, str]:
        self.calls.append((dict(env), nccl_debug))
        return self.runs[env.get("NCCL_P2P_DISABLE") == "1"]


def test_speedup_is_the_guides_formula() -> None:
    # (131.4367 - 101.9003) / 131.4367 = 22.47 %: the guide's "~23% faster"
    assert speedup_percent(GUIDE_P2P_S, GUIDE_NO_P2P_S) == pytest.approx(22.4716, abs=1e-3)
    assert speedup_percent(101.9, 131.4) == pytest.approx(22.45, abs=0.01)
    assert speedup_percent(10.0, 10.0) == 0.0
    assert speedup_percent(12.0, 10.0) == pytest.approx(-20.0)
    with pytest.raises(ValueError, match="positive"):
        speedup_percent(0.0, 1.0)


def test_guide_pair_on_real_and_synthetic_logs() -> None:
    runs = FakeRuns((train_doc(GUIDE_P2P_S), P2P_LOG), (train_doc(GUIDE_NO_P2P_S), SHM_LOG))
    compared = compare_p2p(runs, label="train")
    doc = compared.to_json_dict()
    assert_valid(doc)

    assert runs.calls == [({}, True), ({"NCCL_P2P_DISABLE": "1"}, True)]
    assert doc["schema"] == BENCH_SCHEMA
    assert doc["benchmark"] == "train-compare-p2p"
    assert doc["warnings"] == []
    assert not doc["partial"]
    rows = doc["comparison"]["rows"]
    assert [r["p2p"] for r in rows] == ["Y", "N"]
    assert [r["nccl_p2p_disable"] for r in rows] == [None, "1"]
    assert [r["time_s"] for r in rows] == [GUIDE_P2P_S, GUIDE_NO_P2P_S]
    assert rows[0]["samples_per_s"] == pytest.approx(1600 / GUIDE_P2P_S)
    assert rows[0]["transport"].startswith("P2P")
    assert rows[1]["transport"].startswith("SHM")
    assert round(doc["comparison"]["speedup_percent"], 1) == 22.5
    assert doc["comparison"]["time_ratio"] == pytest.approx(GUIDE_NO_P2P_S / GUIDE_P2P_S)

    # The logs are parsed, then taken out of the output; one snapshot at the top.
    with_p2p, without = doc["runs"]
    assert "nccl_log" not in with_p2p
    assert "nccl_log" not in without
    assert "snapshot" not in with_p2p
    assert doc["snapshot"] == snapshot_to_dict(SNAPSHOT)
    assert with_p2p["nccl"]["transports"] == ["P2P/CUMEM"]
    assert with_p2p["nccl"]["p2p_disabled"] is False
    assert without["nccl"]["transports"] == ["SHM/direct/direct"]
    assert without["nccl"]["p2p_disabled"] is True
    assert without["env"] == {"NCCL_P2P_DISABLE": "1"}
    assert [r["p2p"] for r in doc["results"]] == ["Y", "N"]
    json.dumps(doc)  # plain JSON all the way down


def test_no_p2p_run_that_still_used_p2p_is_called_out() -> None:
    runs = FakeRuns((train_doc(GUIDE_P2P_S), P2P_LOG), (train_doc(GUIDE_P2P_S), MULTINODE_LOG))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert len(doc["warnings"]) == 1
    warning = doc["warnings"][0]
    assert warning.startswith("train P2P=N:")
    assert "still used P2P" in warning
    assert "P2P/IPC/read" in warning
    assert "NET/IB" in doc["comparison"]["rows"][1]["transport"]


def test_p2p_run_that_fell_back_to_shm_is_called_out() -> None:
    runs = FakeRuns((train_doc(GUIDE_NO_P2P_S), SHM_LOG), (train_doc(GUIDE_NO_P2P_S), SHM_LOG))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert len(doc["warnings"]) == 1
    assert doc["warnings"][0].startswith("train P2P=Y:")
    assert "did not use P2P" in doc["warnings"][0]
    assert doc["comparison"]["speedup_percent"] == 0.0


def test_gloo_says_nccl_is_absent_instead_of_pretending() -> None:
    runs = FakeRuns((train_doc(2.0, backend="gloo"), ""), (train_doc(2.5, backend="gloo"), ""))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert [r["transport"] for r in doc["comparison"]["rows"]] == [GLOO_TRANSPORT, GLOO_TRANSPORT]
    assert doc["warnings"] == []
    assert any("no effect" in n or "changes nothing" in n for n in doc["notes"])
    assert doc["runs"][0]["nccl"] is None
    assert doc["comparison"]["speedup_percent"] == pytest.approx(20.0)


def test_nccl_run_without_a_log_is_not_checked_silently() -> None:
    runs = FakeRuns((train_doc(1.0), ""), (train_doc(1.2), "no nccl here at all\n"))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert [r["transport"] for r in doc["comparison"]["rows"]] == [NO_LOG_TRANSPORT, NO_LOG_TRANSPORT]
    assert len(doc["warnings"]) == 2
    assert "no NCCL_DEBUG=INFO output" in doc["warnings"][0]
    assert "could not be read" in doc["warnings"][1]


def test_a_failed_run_is_partial_and_has_no_speedup() -> None:
    failed = train_doc(1.0, partial=True, error="rank 1 exited with code -9 (SIGKILL)", rows=0)
    runs = FakeRuns((train_doc(1.0), P2P_LOG), (failed, SHM_LOG))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert_valid(doc)
    assert doc["partial"] is True
    assert doc["error"] == "rank 1 exited with code -9 (SIGKILL)"
    assert doc["comparison"]["speedup_percent"] is None
    assert doc["comparison"]["rows"][1]["time_s"] is None
    assert any("rank 1 exited" in w for w in doc["warnings"])


def sweep_doc(times_us: dict[int, tuple[float, float]]) -> CollectiveDocument:
    """An all-reduce run on two ranks: size -> (median time in us, busbw)."""
    method = Method(method_version="collectives-1", warmup=0, repeats=1, timer="cuda_events")
    rows = [
        CollectiveRow(
            **row_head(name="allreduce", unit="GB/s", samples=[bw], method=method, backend="nccl", world_size=2),
            op="allreduce",
            size_bytes=size,
            time_us_median=time_us,
            algbw_gbps=bw,
            busbw_gbps=bw,
            correct=True,
        )
        for size, (time_us, bw) in times_us.items()
    ]
    return CollectiveDocument(
        benchmark="allreduce",
        partial=False,
        error=None,
        method=method,
        backend="nccl",
        world_size=2,
        versions=VERSIONS,
        snapshot=None,
        results=rows,
        op="allreduce",
        sizes=list(times_us),
        wall_s=1.0,
        notes=[],
    )


def test_collective_figures_weight_time_by_size() -> None:
    time_s, busbw = collective_figures(sweep_doc({1000: (10.0, 0.1), 3000: (20.0, 0.3)}))
    # (1000 x 10 us + 3000 x 20 us) / 4000 = 17.5 us
    assert time_s == pytest.approx(17.5e-6)
    assert busbw == 0.3  # at the largest size


def test_a_run_without_rows_has_no_figures() -> None:
    assert collective_figures(sweep_doc({})) == (None, None)
    assert train_figures(train_doc(1.0, rows=0)) == (None, None)
    assert train_figures(train_doc(2.0)) == (2.0, 800.0)


def test_collective_comparison_is_valid_and_keeps_its_rows() -> None:
    fast, slow = sweep_doc({1024: (10.0, 0.2)}), sweep_doc({1024: (30.0, 0.07)})
    doc = compare_p2p(FakeRuns((fast, P2P_LOG), (slow, SHM_LOG)), label="allreduce").to_json_dict()
    assert_valid(doc)
    assert doc["benchmark"] == "allreduce-compare-p2p"
    assert [r["busbw_gbps"] for r in doc["comparison"]["rows"]] == [0.2, 0.07]
    assert doc["comparison"]["speedup_percent"] == pytest.approx(200 / 3)
    assert [list(r)[-1] for r in doc["results"]] == ["p2p", "p2p"]  # the tag comes last, as printed
    assert list(doc["runs"][0])[-4:] == ["p2p", "env", "transport", "nccl"]


def test_compare_refuses_to_run_inside_a_torchrun_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """NCCL caches NCCL_P2P_DISABLE per process: a second in-process run would silently compare P2P with P2P."""
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1")):
        monkeypatch.setenv(name, value)
    calls: list[dict[str, str]] = []

    def run(env: dict[str, str], nccl_debug: bool) -> tuple[RunDocument, str]:
        calls.append(env)
        return train_doc(1.0), ""

    with pytest.raises(UsageError, match="outside torchrun/srun"):
        compare_p2p(run, label="train")
    assert calls == []


def test_an_interrupted_first_run_keeps_its_rows_and_never_starts_the_second() -> None:
    """Ctrl-C or SIGTERM during the P2P run: the second (P2P off) run is not started; the document keeps the
    first run's rows, is partial, and says it was interrupted (the CLI then exits 130/143)."""
    import signal

    from rigcheck.errors import interrupted_text, was_interrupted

    cut = train_doc(1.0, partial=True, error=interrupted_text(signal.SIGTERM))
    runs = FakeRuns((cut, P2P_LOG), (train_doc(1.3), SHM_LOG))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert len(runs.calls) == 1
    assert_valid(doc)
    assert doc["partial"] is True
    assert was_interrupted(doc["error"])
    assert len(doc["runs"]) == 1
    assert len(doc["results"]) == 1
    assert doc["comparison"]["speedup_percent"] is None


# --- NCCL_P2P_DISABLE already set in the user's environment ---------------------------------------------------
def test_inherited_p2p_disable_is_overridden_for_the_p2p_run_and_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the override, the "P2P allowed" run would inherit NCCL_P2P_DISABLE=1 and compare off with off."""
    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    runs = FakeRuns((train_doc(GUIDE_P2P_S), P2P_LOG), (train_doc(GUIDE_NO_P2P_S), SHM_LOG))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert_valid(doc)
    assert runs.calls == [({"NCCL_P2P_DISABLE": "0"}, True), ({"NCCL_P2P_DISABLE": "1"}, True)]
    assert [r["nccl_p2p_disable"] for r in doc["comparison"]["rows"]] == ["0", "1"]
    assert [n for n in doc["notes"] if n.startswith("NCCL_P2P_DISABLE='1' was set")]
    assert doc["warnings"] == []  # the comparison is still a true one: the CLI's exit stays 0
    assert doc["comparison"]["speedup_percent"] == pytest.approx(22.4716, abs=1e-3)


def test_nothing_added_when_nothing_is_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCCL_P2P_DISABLE", raising=False)
    runs = FakeRuns((train_doc(GUIDE_P2P_S), P2P_LOG), (train_doc(GUIDE_NO_P2P_S), SHM_LOG))
    doc = compare_p2p(runs, label="train").to_json_dict()
    assert runs.calls[0] == ({}, True)
    assert not [n for n in doc["notes"] if "was set in this environment" in n]


def test_cli_prints_one_warning_line_for_an_inherited_p2p_disable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import typer

    from rigcheck.cli.bench_common import finish

    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    runs = FakeRuns((train_doc(GUIDE_P2P_S), P2P_LOG), (train_doc(GUIDE_NO_P2P_S), SHM_LOG))
    compared = compare_p2p(runs, label="train")
    with pytest.raises(typer.Exit) as exited:
        finish(compared, as_json=True)
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "NCCL_P2P_DISABLE" in line] == [
        "rigcheck: warning: NCCL_P2P_DISABLE='1' was set in this environment: the P2P-allowed run set "
        "NCCL_P2P_DISABLE=0 so that it measures P2P (unset it to run your own jobs with P2P)"
    ]
    assert exited.value.exit_code == 0
