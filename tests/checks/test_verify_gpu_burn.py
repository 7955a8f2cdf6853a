"""A saved gpu-burn run judged by verify: the verdict gpu-burn's output gives a GPU (FAULTY, a test that never
ran) fails verify's burn check too, as it fails `burn --analyze` (one rule: checks/burn_problems.load_problems)."""

from __future__ import annotations

from pathlib import Path

from rigcheck.checks.burn.judge import analyze_trace
from rigcheck.checks.verify.figures import Figure, burn_figures
from rigcheck.model.burn import BurnDocument, gpu_burn_problem
from rigcheck.readers.reference import gpu_burn as gb

FIX = Path(__file__).parent.parent / "fixtures" / "gpu-burn"


def _figures(name: str) -> list[Figure]:
    path = str(FIX / name)
    run = gb.parse_gpu_burn((FIX / name).read_text(encoding="utf-8"), path)
    trace = gb.trace_of(run, path)
    analyses = gb.with_gpu_burn(analyze_trace(trace), run)
    return burn_figures(BurnDocument.of_analysis(trace, analyses, exit_code=1 if gb.is_faulty(run) else 0))


def test_a_faulty_gpu_of_gpu_burn_fails_verify_burn() -> None:
    figures = _figures("16gpu-all-faulty-issue12.txt")
    assert figures
    assert all(any(p.startswith("FAULTY (gpu-burn)") for p in f.problems) for f in figures)


def test_a_gpu_burn_run_that_never_ran_fails_verify_burn() -> None:
    figures = _figures("8x-titan-rtx-no-cuda-devices-issue36.txt")
    assert figures
    assert all(any(p.startswith("FAILED (gpu-burn)") for p in f.problems) for f in figures)


def test_a_clean_gpu_burn_run_has_no_problem() -> None:
    figures = _figures("k80-azure-10s-issue8.txt")
    assert figures
    assert not any(gpu_burn_problem(p) for f in figures for p in f.problems)
