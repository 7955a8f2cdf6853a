"""`rigcheck burn --analyze FILE [--json] [--html FILE]`: the burn verdict on a recorded trace (``rigcheck.burn/1``).

Exit codes: 0 nothing wrong; 1 a GPU throttled for heat, was lost, or hit the hardware power brake for
a second or more (:func:`rigcheck.checks.burn.is_problem`); 2 a file that is not a trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import typer

from rigcheck.checks.burn import analyze_trace, is_problem
from rigcheck.cli.common import emit, note, write_rendering
from rigcheck.cli.exits import EXIT_OK, EXIT_PROBLEMS
from rigcheck.errors import InputError
from rigcheck.model.burn import BurnResult, GpuBurnAnalysis
from rigcheck.report.render import Format


def analysis_exit_code(analyses: Iterable[GpuBurnAnalysis]) -> int:
    return EXIT_PROBLEMS if any(is_problem(a) for a in analyses) else EXIT_OK


def burn_analyze(file: Path, as_json: bool, html_file: Path | None = None) -> None:
    """Analyse a recorded trace (rigcheck CSV/JSONL, or nvidia-smi --query-gpu CSV) and set the exit code."""
    from rigcheck.probe.trace import read_trace

    try:
        trace = read_trace(str(file))
    except InputError as exc:
        note(f"error: {exc}")
        raise typer.Exit(exc.exit_code) from None
    for line in trace.diagnostics:
        note(line)
    analyses = analyze_trace(trace)
    doc = BurnResult.of_analysis(trace, analyses, analysis_exit_code(analyses))
    if html_file is not None:
        write_rendering(html_file, doc, Format.HTML)
    emit(doc, Format.JSON if as_json else Format.TERMINAL)
    raise typer.Exit(doc.exit_code)
