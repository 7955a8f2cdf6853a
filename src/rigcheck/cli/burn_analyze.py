"""`rigcheck burn --analyze FILE [--json] [--html FILE]`: the burn verdict on a recorded trace (``rigcheck.burn/2``).

Exit codes: 0 nothing wrong; 1 a GPU throttled for heat, was lost, hit the hardware power brake for a second
or more, or has a failing counter or peer finding (corrected ECC at a rate its peers do not share, NVLink errors,
a clock far under its peers': :func:`rigcheck.checks.burn.judge.is_problem`); 2 a file that is not a trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import typer

from rigcheck.checks.burn.judge import BurnAggregator, analyze_trace, is_problem
from rigcheck.cli.common import emit, json_indent, write_pages
from rigcheck.cli.exits import EXIT_OK, EXIT_PROBLEMS, exit_code_for_error
from rigcheck.cli.streams import note
from rigcheck.errors import InputError
from rigcheck.model.burn import BurnDocument, GpuBurnAnalysis
from rigcheck.model.telemetry import Trace
from rigcheck.report.render import Format, RenderOptions


def analysis_exit_code(analyses: Iterable[GpuBurnAnalysis]) -> int:
    return EXIT_PROBLEMS if any(is_problem(a) for a in analyses) else EXIT_OK


def _analyze(path: str, *, plot: bool) -> tuple[Trace, list[GpuBurnAnalysis]]:
    """The trace (without its samples where it was streamed) and the verdicts, read in one pass where it can.

    One pass holds per GPU only running figures, so a 24 h trace fits in a few MiB; with ``plot`` (a page
    will be drawn) the samples are also thinned as they are read into the trace's ``plot`` (bounded too).
    When one pass cannot be exact (samples out of time order, a clock-only trace whose ceiling rose) the file
    is read again into memory, as is standard input (it cannot be read twice).
    """
    from rigcheck.model.telemetry import TracePlot
    from rigcheck.readers.trace.stream import TraceStream, read_trace

    if path != "-":
        stream = TraceStream(path)
        agg = BurnAggregator(stream.header.gpus)
        if plot:
            thinned = TracePlot()
            add, keep = agg.add, thinned.add
            for sample in stream:
                add(sample)
                keep(sample)
        else:
            agg.feed_batches(stream.batches())
        analyses = agg.finish(stream.header.interval_s)
        if analyses is not None:
            if plot:
                stream.header.plot = thinned
            return stream.header, analyses
    trace = read_trace(path)
    return trace, analyze_trace(trace)


def _gpu_burn(path: str) -> tuple[Trace, list[GpuBurnAnalysis], bool] | None:
    """gpu-burn's output read as a trace, judged, with gpu-burn's own verdicts added; None for any other file
    (standard input is left to the trace readers: it cannot be read twice)."""
    from rigcheck.inputs import open_input, read_input_chunk
    from rigcheck.readers.reference import gpu_burn as gb

    if path == "-":
        return None
    with open_input(path) as fh:
        head = read_input_chunk(fh, path).decode("utf-8", "replace")
    if not gb.looks_like_gpu_burn(head):
        return None
    from rigcheck.inputs import read_input_text

    run = gb.parse_gpu_burn(read_input_text(path, "gpu-burn output"), path)
    trace = gb.trace_of(run, path)
    return trace, gb.with_gpu_burn(analyze_trace(trace), run), gb.is_faulty(run)


def burn_analyze(file: Path, as_json: bool, html_file: Path | None = None, indent: int | None = None) -> None:
    """Analyse a recorded trace (rigcheck CSV/JSONL, nvidia-smi --query-gpu CSV or dmon, gpu-burn's output) and
    set the exit code."""
    faulty = False
    try:
        burn = _gpu_burn(str(file))
        if burn is not None:
            trace, analyses, faulty = burn
        else:
            trace, analyses = _analyze(str(file), plot=html_file is not None)
    except InputError as exc:
        note(f"error: {exc}")
        raise typer.Exit(exit_code_for_error(exc)) from None
    for line in trace.diagnostics:
        note(line)
    code = EXIT_PROBLEMS if faulty else analysis_exit_code(analyses)
    doc = BurnDocument.of_analysis(trace, analyses, code)
    write_pages(doc, html_file)
    emit(doc, Format.JSON if as_json else Format.TERMINAL, RenderOptions(indent=json_indent(indent)))
    raise typer.Exit(doc.exit_code)
