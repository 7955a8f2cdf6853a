"""The runner of `rigcheck verify` (rigcheck.bench.verify.run): real gloo processes on CPU, one time budget.

The CPU pipeline runs for real (matmul, membw and all-reduce on gloo processes, ~7 s on two cores); the GPU
steps are exercised on this GPU-less machine through their failures (torch sees no CUDA device) and a burn
on CPU devices sampled by the fake NVML. One test, marked gpu, runs `quick` on a real GPU.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
from rich.console import Console

import rigcheck.bench.verify.run as runner
from rigcheck.bench.burn import run_burn
from rigcheck.bench.device.matmul import GPU_QUICK_SHAPES
from rigcheck.bench.device.membw import run_membw as real_membw
from rigcheck.bench.verify.run import CPU_BUDGET_S, LEVEL_BUDGET_S, NEEDS_GPU, run_verify
from rigcheck.bench.verify.steps import (
    BURN_OVERHEAD_S,
    CPU,
    PLANS,
    QUICK,
    judged_dtype,
    launched_status,
    matmul_dtypes,
    merge_rows,
)
from rigcheck.checks.verify.judge import Judged, NearFloor
from rigcheck.checks.verify.judge import judge as real_judge
from rigcheck.cli.exits import exit_code_for_burn, exit_code_for_verdict
from rigcheck.errors import BenchError, UsageError
from rigcheck.model.bench import MatmulBest, MatmulDocument, MatmulRow, Method, Versions, row_head
from rigcheck.model.snapshot import Snapshot
from rigcheck.model.verify import VERIFY_SCHEMA, VerifyCheck, VerifyDocument, VerifyInputs
from rigcheck.probe.nvml import NvmlPoller
from rigcheck.report.verify.render import headline, html, markdown, terminal
from tests.support.fakenvml import burn_power_capped_h100
from tests.support.snapshots import make_gpu, make_snapshot

CPU_STEPS = {
    "doctor": "done",
    "matmul": "done",
    "membw": "done",
    "fingerprint": "done",
    "hostlink": "not_applicable",
    "p2p": "not_applicable",
    "allreduce": "done",
    "burn": "not_applicable",
}


def _children() -> set[int]:
    """Processes whose parent is this one, but multiprocessing's resource tracker: spawn starts it once per
    interpreter and it ends with it (it is no worker left behind)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # it ended while we looked
        ppid = int(stat[stat.rfind(")") + 1 :].split()[1])
        if ppid == os.getpid() and b"resource_tracker" not in cmdline:
            found.add(int(entry.name))
    return found


def _no_process_left() -> None:
    assert multiprocessing.active_children() == []
    assert _children() == set()


def _steps(doc: VerifyDocument) -> dict[str, str]:
    return {s.name: s.status for s in doc.steps}


def _checks(doc: VerifyDocument) -> dict[str, VerifyCheck]:
    """Every check of the document by id (the GPUs' and the node's)."""
    found = {c.id: c for g in doc.gpus for c in g.checks}
    found.update({c.id: c for c in doc.node})
    return found


@pytest.fixture(scope="module")
def cpu_run() -> tuple[VerifyDocument, list[str], float]:
    lines: list[str] = []
    started = time.monotonic()
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True, on_progress=lines.append, host="ci")
    return doc, lines, time.monotonic() - started


# --- the CPU pipeline, for real ------------------------------------------------------------------------


def test_a_cpu_run_measures_matmul_membw_allreduce_and_skips_the_gpu_steps(
    cpu_run: tuple[VerifyDocument, list[str], float],
) -> None:
    doc, _lines, _took = cpu_run
    assert doc.to_json_dict()["schema"] == VERIFY_SCHEMA
    assert (doc.source, doc.level, doc.host) == ("cpu", "quick", "ci")
    assert [s.name for s in doc.steps] == list(CPU_STEPS)
    assert _steps(doc) == CPU_STEPS
    assert {s.reason for s in doc.steps if s.status == "not_applicable"} == {NEEDS_GPU}
    assert all(s.reason is None for s in doc.steps if s.status == "done")
    checks = _checks(doc)
    for check_id in ("matmul_bf16", "membw", "allreduce"):
        assert check_id in checks, sorted(checks)
        value = checks[check_id].value
        assert value is not None
        assert value > 0


def test_a_cpu_run_keeps_its_budget_and_leaves_no_process(cpu_run: tuple[VerifyDocument, list[str], float]) -> None:
    doc, _lines, took = cpu_run
    assert doc.budget_s == CPU_BUDGET_S
    assert 0 < doc.elapsed_s <= took + 0.001  # elapsed_s is rounded to the millisecond
    assert doc.elapsed_s < 30.0, f"{doc.elapsed_s:.1f} s: the CPU run must take well under its {CPU_BUDGET_S} s"
    for step in doc.steps:
        assert step.budget_s is not None
        assert step.elapsed_s <= step.budget_s + 5.0, step  # launched steps end at their share (+ teardown)
    _no_process_left()


def test_cpu_figures_are_not_judged_against_a_gpu_band(cpu_run: tuple[VerifyDocument, list[str], float]) -> None:
    doc, _lines, _took = cpu_run
    checks = _checks(doc)
    for check_id in ("matmul_bf16", "membw", "allreduce"):
        check = checks[check_id]
        assert check.expected_min is None
        bands = [j for j in check.judgements if j.rule == "band"]
        assert bands, check
        assert {j.verdict for j in bands} == {"not_judged"}


def test_cpu_figures_are_unjudged_everywhere_never_pass(cpu_run: tuple[VerifyDocument, list[str], float]) -> None:
    """No figure that no band judged says pass: not the check, not the GPU (rank), not the node, in no rendering.
    The node is unjudged, exit 0 (docs/verdicts.md), with no drain reason."""
    doc, _lines, _took = cpu_run
    figures = [c for c in _checks(doc).values() if c.value is not None and c.id != "doctor"]
    assert figures
    assert {c.verdict for c in figures} == {"unjudged"}
    assert {g.verdict for g in doc.gpus} == {"unjudged"}
    assert (doc.verdict, doc.drain_reason, exit_code_for_verdict(doc.verdict)) == ("unjudged", None, 0)
    data = doc.to_json_dict()
    checks = [c for g in data["gpus"] for c in g["checks"]] + data["node"]
    assert not [c["id"] for c in checks if c["verdict"] == "pass" and c["value"] is not None and c["id"] != "doctor"]
    assert headline(doc).startswith("UNJUDGED")
    md = markdown(doc)
    assert "**UNJUDGED" in md
    assert "- unjudged (CPU run: not judged against a GPU band): node allreduce, rank0 matmul_bf16" in md  # why
    assert "| rank0 | matmul_bf16 | unjudged |" in md
    # The fingerprint is no figure held to a GPU band: its ranks agreeing bit for bit is a pass on a CPU too.
    fingerprint = [line for line in md.splitlines() if "| fingerprint | pass | bit-equal |" in line]
    assert len(fingerprint) == len(doc.gpus)
    assert "| pass |" not in md.replace("| node | doctor | pass |", "").replace("| fingerprint | pass |", "")
    assert '<tr class="warn"><td>rank0</td><td>matmul_bf16</td><td>unjudged</td>' in html(doc)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(terminal(doc))
    shown = console.export_text()
    assert "UNJUDGED — CPU ranks" in shown
    assert "burn: not applicable: a CPU run" in shown


def test_progress_names_each_step_at_its_start_and_end(cpu_run: tuple[VerifyDocument, list[str], float]) -> None:
    _doc, lines, _took = cpu_run
    for name in ("matmul", "membw", "allreduce"):
        assert any(line.startswith(f"verify: {name} started") for line in lines), lines
        assert any(line.startswith(f"verify: {name} done in") and f"/{CPU_BUDGET_S:.0f} s" in line for line in lines)
    assert any(line.startswith(f"verify: hostlink {NEEDS_GPU}") for line in lines)
    assert any(line.startswith("rank ") for line in lines), "the benchmarks' own progress is passed on"


def test_set_up_does_not_eat_a_tiny_budgets_stage_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3 s budget gives matmul 0.75 s: starting two gloo workers takes longer than that (seconds on a busy
    machine). Its clock starts once they are in the process group; the set-up has a budget of its own, said in a
    note. Before, every launched step was cut short 'joining the process group'."""
    monkeypatch.setattr(runner, "fingerprint_runs", _no_launch)  # one launch fewer: matmul, membw, allreduce show it
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True, budget_s=3.0)
    launched = [s for s in doc.steps if s.name in ("matmul", "membw", "allreduce")]
    assert not [s for s in launched if "joining the process group" in (s.reason or "")], launched
    assert any(s.status == "done" for s in launched), launched
    assert any(n.startswith("set-up (starting the workers, joining the process group) took") for n in doc.notes)
    for s in launched:  # a step's time is its stage's: the set-up is not in it
        assert s.budget_s is not None
        assert s.elapsed_s <= s.budget_s + 5.0, s
    assert doc.budget_s == 3.0
    _no_process_left()


def test_a_set_up_over_its_own_budget_fails_the_step_and_names_the_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "plan_for", lambda _level, cpu: replace(CPU, setup_s=0.05))
    monkeypatch.setattr(runner, "run_collective", _no_launch)
    monkeypatch.setattr(runner, "run_membw", _no_launch)
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True)
    matmul = next(s for s in doc.steps if s.name == "matmul")
    assert matmul.status == "failed"
    assert matmul.reason is not None
    assert "did not join the process group within the 0.05 s set-up budget" in matmul.reason
    assert doc.verdict == "incomplete"
    _no_process_left()


def test_only_runs_the_stages_asked_for_and_leaves_the_others_out() -> None:
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True, only=["membw"])
    statuses = _steps(doc)
    assert (statuses["membw"], statuses["matmul"], statuses["allreduce"]) == ("done", "left_out", "left_out")
    assert {s.reason for s in doc.steps if s.status == "left_out"} == {"left out: --only membw"}
    assert not [c for c in _checks(doc).values() if c.id.startswith("matmul")]
    assert doc.verdict == "unjudged"  # left out is not incomplete: the node is judged on what was asked for
    with pytest.raises(UsageError, match="--only takes stages among"):
        run_verify(snapshot=Snapshot(), findings=[], cpu=True, only=["memory"])
    _no_process_left()


def _no_launch(*_args: Any, **_kwargs: Any) -> Any:
    raise BenchError("not measured in this test")


def test_a_step_raising_bench_error_is_failed_with_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**_kwargs: Any) -> Any:
        raise BenchError("the copy engine is on fire\n(second line)")

    monkeypatch.setattr(runner, "run_membw", broken)
    monkeypatch.setattr(runner, "fingerprint_runs", _no_launch)
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True)
    membw = next(s for s in doc.steps if s.name == "membw")
    assert (membw.status, membw.reason) == ("failed", "the copy engine is on fire (second line)")
    assert _steps(doc)["matmul"] == _steps(doc)["allreduce"] == "done"  # the other steps go on
    assert doc.verdict != "pass"
    _no_process_left()


def test_a_figure_near_its_floor_is_measured_again_and_judged_with_the_earlier_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []

    def judge(inputs: VerifyInputs, **kwargs: Any) -> Judged:
        seen.append((kwargs.get("remeasured"), inputs.membw))
        judged = real_judge(inputs, **kwargs)
        if len(seen) == 1:
            judged.near_floor = [NearFloor(step="membw", check_id="membw", gpu=0)]
        return judged

    launches: list[int] = []

    def membw(**kwargs: Any) -> Any:
        launches.append(kwargs["world_size"])
        return real_membw(**kwargs)

    def no_launch(*_args: Any, **_kwargs: Any) -> Any:
        raise BenchError("not measured in this test")

    monkeypatch.setattr(runner, "judge", judge)
    monkeypatch.setattr(runner, "run_membw", membw)
    monkeypatch.setattr(runner, "run_matmul", no_launch)
    monkeypatch.setattr(runner, "run_collective", no_launch)
    monkeypatch.setattr(runner, "fingerprint_runs", no_launch)
    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True)

    assert launches == [1, 1]
    assert len(seen) == 2
    (first_remeasured, first_doc), (remeasured, second_doc) = seen
    assert first_remeasured is None
    assert first_doc is not None
    first_figure = max(first_doc.results, key=lambda r: r.size_bytes).read_write_gbps
    assert remeasured == {(0, "membw"): [first_figure]}
    assert second_doc is not first_doc
    assert any("re-measured" in n for n in second_doc.notes)
    again = next(s for s in doc.steps if s.name == "membw re-measure")
    assert again.status == "done"
    _no_process_left()


# --- the GPU steps on a machine without one ------------------------------------------------------------


def _cpu_burn(poller: Any, **kwargs: Any) -> Any:
    """The real burn on a CPU device, tiny and short, whatever load the runner asked for."""
    kwargs.update(minutes=0.02, dtype="fp32")
    return partial(run_burn, device_for=lambda _i: torch.device("cpu"), size=32, preroll_s=0.2, interval_s=0.02)(
        poller, **kwargs
    )


def test_gpu_steps_without_a_gpu_fail_with_their_line_and_the_burn_reaches_the_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[float] = []

    def burn(poller: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["minutes"])
        return _cpu_burn(poller, **kwargs)

    monkeypatch.setattr(runner, "run_burn", burn)
    snap = make_snapshot([make_gpu(0)])
    with NvmlPoller(burn_power_capped_h100(1)) as poller:
        doc = run_verify(snapshot=snap, findings=[], burn_poller=poller, burn_exit_code=exit_code_for_burn)
    steps = {s.name: s for s in doc.steps}
    for name in ("matmul", "membw", "hostlink"):
        reason = steps[name].reason
        assert steps[name].status == "failed", steps[name]
        assert reason is not None
        assert "GPU" in reason
    assert steps["p2p"].reason == steps["allreduce"].reason == "not applicable: one GPU"
    assert steps["p2p"].status == steps["allreduce"].status == "not_applicable"
    assert steps["burn"].status == "done"
    assert asked == [pytest.approx(QUICK.burn_load_s / 60.0)]  # a minute of load fits the quick budget
    burn_check = next(c for c in doc.gpus[0].checks if c.id == "burn")
    assert burn_check.value is not None
    assert doc.verdict != "pass"
    assert doc.budget_s == LEVEL_BUDGET_S["quick"]


def test_without_a_poller_the_burn_is_skipped_with_the_reason() -> None:
    doc = run_verify(snapshot=make_snapshot([make_gpu(0)]), findings=[], budget_s=60.0)
    burn = next(s for s in doc.steps if s.name == "burn")
    assert burn.status == "skipped"
    assert burn.reason is not None
    assert "poller" in burn.reason


def test_a_burn_with_too_little_budget_is_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "run_burn", _cpu_burn)
    with NvmlPoller(burn_power_capped_h100(1)) as poller:
        # 30 s: the burn's 38 % share (11.4 s) leaves under 10 s of load once its overhead is paid
        doc = run_verify(
            snapshot=make_snapshot([make_gpu(0)]),
            findings=[],
            budget_s=30.0,
            burn_poller=poller,
            burn_exit_code=exit_code_for_burn,
        )
    burn = next(s for s in doc.steps if s.name == "burn")
    assert 30.0 * QUICK.shares["burn"] - BURN_OVERHEAD_S < 10.0
    assert burn.status == "cut_short"
    assert burn.reason is not None
    assert "budget" in burn.reason


def test_bad_arguments_are_usage_errors() -> None:
    snap = make_snapshot([make_gpu(0)])
    with pytest.raises(UsageError, match="no GPU 3"):
        run_verify(snapshot=snap, findings=[], gpus=[3])
    with pytest.raises(UsageError, match="positive"):
        run_verify(snapshot=snap, findings=[], budget_s=0.0)


def test_a_clock_past_the_budget_starts_no_step() -> None:
    ticks = iter([0.0, *([1000.0] * 100)])

    def clock() -> float:
        return next(ticks)

    doc = run_verify(snapshot=Snapshot(), findings=[], cpu=True, clock=clock)
    for step in doc.steps[1:]:
        if step.status != "not_applicable":
            assert (step.status, step.reason, step.elapsed_s) == ("cut_short", "budget spent", 0.0)
    assert doc.verdict == "incomplete"


# --- the plans and the pure helpers ---------------------------------------------------------------------


def test_every_plan_shares_at_most_the_budget() -> None:
    for name, plan in PLANS.items():
        assert sum(plan.shares.values()) <= 1.0, name
        assert set(plan.shares) == set(plan.steps), name  # every step it runs has a share, and only those
        if "prolog" not in name:
            assert set(plan.steps) == {"matmul", "membw", "fingerprint", "hostlink", "p2p", "allreduce", "burn"}
    # the burn's share of the quick budget holds its minute of load
    assert QUICK.shares["burn"] * LEVEL_BUDGET_S["quick"] >= QUICK.burn_load_s + BURN_OVERHEAD_S
    assert CPU.cpu_ranks == 2


def test_the_judged_dtype_is_the_skus_else_by_compute_capability() -> None:
    assert judged_dtype(make_gpu(0)) == "bf16"  # H100
    assert judged_dtype(make_gpu(0, name="Tesla V100-SXM2-32GB", compute_capability="7.0")) == "fp16"
    assert judged_dtype(make_gpu(0, name="Mystery 9000", compute_capability="8.9")) == "bf16"
    assert judged_dtype(make_gpu(0, name="Mystery 1000", compute_capability="7.5")) == "fp16"
    mixed = make_snapshot([make_gpu(0), make_gpu(1, name="Tesla V100-SXM2-32GB", compute_capability="7.0")])
    assert matmul_dtypes(mixed) == ("bf16", "fp16")
    assert matmul_dtypes(mixed, [1]) == ("fp16",)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (None, "done"),
        ("rank 1 (pid 42) did not finish within 5 s: last phase 'started', silent for 5.0 s", "cut_short"),
        ("interrupted (SIGTERM)", "cut_short"),
        ("rank 0 failed: RuntimeError: CUDA error: out of memory", "failed"),
        ("rank 1 exited with code -9 (SIGKILL)", "failed"),
    ],
)
def test_a_launched_benchmarks_error_gives_the_step_status(error: str | None, status: str) -> None:
    got, reason = launched_status(error)
    assert got == status
    assert (reason is None) == (error is None)
    if error is not None:
        assert reason is not None
        assert error in reason


def _matmul_doc(figures: dict[int, float]) -> MatmulDocument:
    method = Method(method_version="matmul-1", warmup=0, repeats=1)
    rows, best = [], []
    for gpu, tflops in figures.items():
        m, n, k = GPU_QUICK_SHAPES[0]
        rows.append(
            MatmulRow(
                **row_head(
                    name=f"matmul bf16 {m}x{n}x{k}",
                    unit="TFLOPS",
                    samples=[tflops],
                    method=method,
                    backend="nccl",
                    world_size=len(figures),
                    sizes=[m, n, k],
                ),
                rank=gpu,
                gpu=gpu,
                device_name="NVIDIA H100 80GB HBM3",
                dtype="bf16",
                m=m,
                n=n,
                k=k,
                time_us_median=1.0,
                peak_tflops=989.4,
                peak_source="datasheet",
                correct=True,
                max_rel_error=0.0,
                best=True,
                tflops_median=tflops,
                tflops_min=tflops,
                tflops_max=tflops,
                fraction_of_peak=tflops / 989.4,
                missing={},
            )
        )
        best.append(
            MatmulBest(
                rank=gpu, gpu=gpu, dtype="bf16", m=m, n=n, k=k, tflops_median=tflops, peak_tflops=989.4,
                fraction_of_peak=tflops / 989.4,
            )
        )  # fmt: skip
    return MatmulDocument(
        partial=False,
        error=None,
        method=method,
        backend="nccl",
        world_size=len(figures),
        versions=Versions(rigcheck=None, python=None, torch=None, cuda=None, nccl=None),
        snapshot=None,
        results=rows,
        notes=["first"],
        best=best,
    )


def test_a_remeasured_gpus_rows_replace_only_its_own() -> None:
    old = _matmul_doc({0: 700.0, 1: 560.0, 2: 710.0})
    new = _matmul_doc({0: 720.0, 1: 690.0})
    merged, got = merge_rows(old, new, {1}, "GPU 1 re-measured")
    assert got == {1}
    assert [(r.gpu, r.tflops_median) for r in merged.results] == [(0, 700.0), (1, 690.0), (2, 710.0)]
    assert [(b.gpu, b.tflops_median) for b in merged.best] == [(0, 700.0), (1, 690.0), (2, 710.0)]
    assert merged.notes == ["first", "GPU 1 re-measured"]
    # a GPU the new run has no row for keeps its first figure, and is not counted as re-measured
    same, none = merge_rows(old, new, {2}, "GPU 2 re-measured")
    assert (same, none) == (old, set())


def test_gpus_judges_those_and_notes_what_else_was_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "run_matmul", lambda **_kwargs: _matmul_doc({0: 700.0, 1: 700.0}))
    monkeypatch.setattr(runner, "run_burn", _cpu_burn)
    hostlink_gpus: list[Any] = []

    def hostlink(**kwargs: Any) -> Any:
        hostlink_gpus.append(kwargs["gpus"])
        raise UsageError("hostlink needs an NVIDIA GPU")

    monkeypatch.setattr(runner, "run_hostlink", hostlink)
    snap = make_snapshot([make_gpu(0), make_gpu(1)])
    with NvmlPoller(burn_power_capped_h100(2)) as poller:
        doc = run_verify(snapshot=snap, findings=[], gpus=[1], burn_poller=poller, burn_exit_code=exit_code_for_burn)
    assert [g.index for g in doc.gpus] == [1]
    assert hostlink_gpus == [[1]]
    assert any(n.startswith("matmul also measured GPU(s) 0, not judged") for n in doc.notes), doc.notes
    assert any(n.startswith("the burn also loaded GPU(s) 0") for n in doc.notes), doc.notes
    assert not any(n.startswith("membw also") for n in doc.notes)  # it failed: nothing measured on GPU 0


# --- on a real GPU --------------------------------------------------------------------------------------


@pytest.fixture
def live_poller() -> Iterator[Callable[[], Any]]:
    opened: list[Any] = []

    def open_() -> Any:
        from rigcheck.cli.monitor import open_poller

        opened.append(open_poller(None))
        return opened[-1]

    yield open_
    for poller in opened:
        poller.close()


@pytest.mark.gpu
def test_gpu_quick_fits_its_budget(live_poller: Callable[[], Any]) -> None:
    """~2 min on one H100: the whole quick level, burn included."""
    from rigcheck.checks.doctor import run_checks
    from rigcheck.cli.bench_common import machine

    snap = machine(cpu=False)
    lines: list[str] = []
    doc = run_verify(
        snapshot=snap,
        findings=run_checks(snap),
        level="quick",
        burn_poller=live_poller(),
        burn_exit_code=exit_code_for_burn,
        on_progress=lines.append,
    )
    assert doc.source == "live"
    assert doc.elapsed_s <= LEVEL_BUDGET_S["quick"]
    statuses = _steps(doc)
    for name in ("matmul", "membw", "hostlink", "burn"):
        assert statuses[name] == "done", (name, doc.steps)
    checks = _checks(doc)
    for check_id in ("membw", "hostlink_h2d", "hostlink_d2h", "burn"):
        value = checks[check_id].value
        assert value is not None
        assert value > 0
    assert any(c.startswith("matmul_") for c in checks)
    if len(snap.gpus) == 1:  # p2p and all-reduce do not apply: they do not keep a healthy card from passing
        assert statuses["p2p"] == statuses["allreduce"] == "not_applicable"
        assert not [s for s in doc.steps if s.status in ("skipped", "cut_short", "failed")], doc.steps
    _no_process_left()
