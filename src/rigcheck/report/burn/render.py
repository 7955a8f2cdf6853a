"""Every rendering of ``rigcheck.burn/2`` (`rigcheck burn` and `burn --analyze FILE`): terminal, JSON, Markdown,
and the HTML page with plots over time (rigcheck.report.burn.html, imported only when a page is drawn)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Group, RenderableType
from rich.text import Text

from rigcheck.checks.burn.judge import is_problem
from rigcheck.model.burn import BurnDocument, GpuBurnAnalysis, GpuLoadSummary
from rigcheck.model.finding import Finding, Severity
from rigcheck.readers.reference.gpu_burn import TOOL as GPU_BURN
from rigcheck.readers.reference.gpu_burn import problem_verdict
from rigcheck.report.burn.load_lines import finding_lines, run_checks, run_notes, under_load
from rigcheck.report.common import md_prose
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import fmt, fmt_or_na


def _gpu_burn_problem(doc: BurnDocument, a: GpuBurnAnalysis) -> bool:
    """A fault gpu-burn's own output shows (wrong results, a dead process, a test that never ran on the GPU)."""
    return doc.source == GPU_BURN and problem_verdict(a.verdict)


def _style(doc: BurnDocument, a: GpuBurnAnalysis) -> str:
    if is_problem(a) or _gpu_burn_problem(doc, a):
        return "bold red"
    if a.verdict.startswith("hot") or a.limiter == "unknown":
        return "bold yellow"
    return "bold green"


def evidence(a: GpuBurnAnalysis) -> list[str]:
    """The numbers behind a GPU's verdict, one line each (none beyond the peak for a GPU never loaded)."""
    if a.loaded_s <= 0:
        return [f"temperature {fmt(a.temp_c_max, 'C')} peak"] if a.temp_c_max is not None else []
    cap = f", power cap reached after {fmt(a.time_to_power_cap_s, 's', 1)}" if a.time_to_power_cap_s is not None else ""
    lines = [
        f"loaded {fmt(a.loaded_s, 's', 1)}: power {fmt_or_na(a.power_draw_w_median_loaded, 'W')} median "
        f"of a {fmt_or_na(a.power_enforced_limit_w, 'W')} limit{cap}"
    ]
    if a.slowdown_margin_c is not None and a.temp_slowdown_c is not None:
        side = "under" if a.slowdown_margin_c >= 0 else "over"
        margin = f", {fmt(abs(a.slowdown_margin_c), 'C', 1)} {side} the card's {fmt(a.temp_slowdown_c, 'C')} slowdown"
    else:
        margin = ", slowdown threshold not in the trace"
    lines.append(
        f"temperature {fmt_or_na(a.temp_c_max, 'C')} peak (rise {fmt_or_na(a.temp_rise_c, 'C')}, plateau "
        f"{fmt_or_na(a.temp_plateau_c, 'C')}){margin}"
    )
    ref = (
        f"{fmt_or_na(a.sm_clock_max_mhz, 'MHz')} max"
        if a.sm_clock_max_mhz is not None
        else f"{fmt_or_na(a.sm_clock_mhz_first, 'MHz')} in the first seconds"
    )
    drop = ""
    if a.sm_clock_drop_percent is not None:  # negative: the clock ran above the reference (a boost past the max given)
        side = "above" if a.sm_clock_drop_percent < 0 else "below"
        drop = f", {fmt(abs(a.sm_clock_drop_percent), '%', 1)} {side} {ref}"
    lines.append(f"SM clock {fmt_or_na(a.sm_clock_mhz_median_loaded, 'MHz')} median while loaded{drop}")
    shares = [(name, share) for name, share in a.reasons_time_fraction.items() if share > 0]
    shares.sort(key=lambda item: -item[1])
    if a.reasons_time_fraction:
        text = ", ".join(f"{name} {share:.1%}" for name, share in shares) or "none"
    else:
        text = "not in the trace"
    lines.append(f"clock-event reasons while loaded: {text}")
    return lines


def _finding_style(f: Finding) -> str:
    return "bold red" if f.severity is Severity.FAIL else "bold yellow" if f.severity is Severity.WARN else ""


def throughput(load: GpuLoadSummary) -> tuple[str, bool]:
    """What the matmul load did on one GPU, and whether that is a problem (it failed, or computed wrong)."""
    if load.error is not None:
        return f"load FAILED: {load.error}", True
    sustained, first = load.tflops_sustained, load.tflops_first_10s
    text = f"{load.dtype} {load.matrix_size}×{load.matrix_size} matmul: "
    text += f"{sustained:.0f} TFLOPS sustained" if sustained is not None else "no whole second of load"
    if sustained is not None and first:
        text += f", {first:.0f} in the first 10 s ({(sustained - first) / first:+.1%})"
    if load.errors:
        when = f", first at {load.first_error_s:.1f} s" if load.first_error_s is not None else ""
        wrong = f"{load.errors} of {load.checks} checked results WRONG{when}: this GPU computes wrong answers"
        return f"{text}; {wrong}", True
    return (
        f"{text}; all {load.checks} checked results (of {load.matmuls} products) matched the first bit for bit",
        False,
    )


def _loads(doc: BurnDocument) -> dict[int, GpuLoadSummary]:
    return {g.index: g for g in doc.workload.gpus} if doc.workload is not None else {}


def title(doc: BurnDocument) -> str:
    if doc.workload is None:
        return f"rigcheck burn --analyze {doc.path} ({doc.source})"
    text = f"rigcheck burn: {doc.workload.load_s:.0f} s of {doc.workload.dtype} matmuls"
    return text + (" (interrupted: partial)" if doc.interrupted else "")


def conclusion(doc: BurnDocument) -> list[tuple[str, bool]]:
    """The closing lines, each with whether it names a problem."""
    loads = _loads(doc)
    wrong = [i for i, load in sorted(loads.items()) if load.errors]
    failed = [i for i, load in loads.items() if load.error is not None]
    burn_faults = [a.index for a in doc.gpus if _gpu_burn_problem(doc, a)]
    bad = sorted({a.index for a in doc.gpus if is_problem(a)} | set(failed) | set(wrong) | set(burn_faults))
    lines: list[tuple[str, bool]] = []
    log = doc.kernel_log
    if log is not None and any(f.severity is Severity.FAIL for f in log.findings):
        lines.append(("the kernel log shows a fault during the run on no GPU of the burn", True))
    if wrong:
        lines.append((f"WRONG RESULTS on GPU {', '.join(map(str, wrong))}", True))
    if burn_faults:
        lines.append((f"gpu-burn: GPU {', '.join(map(str, burn_faults))} faulty or never tested", True))
    if bad:
        lines.append((f"problems on GPU {', '.join(map(str, bad))}", True))
    elif doc.exit_code != 0 and not doc.is_run:  # gpu-burn aborted, or its output names no GPU: see the notes
        lines.append(("the run failed: " + (doc.diagnostics[-1] if doc.diagnostics else f"exit {doc.exit_code}"), True))
    elif doc.is_run:
        lines.append(("no GPU computed a wrong result, throttled for heat or was lost", False))
    else:
        lines.append(("no GPU throttled for heat or was lost", False))
    return lines


def gpu_lines(doc: BurnDocument, a: GpuBurnAnalysis) -> list[RenderableType]:
    """A few lines per GPU: the verdict, the numbers behind it, what the load did (a burn), the advice."""
    lines: list[RenderableType] = [Text.assemble((f"GPU{a.index}  ", "bold"), (a.verdict, _style(doc, a)))]
    lines += [Text(f"  {line}") for line in evidence(a) + under_load(a) + run_checks(doc, a)]
    for f in a.findings:
        text, advice = finding_lines(f)
        lines.append(Text(f"  {text}", style=_finding_style(f)))
        if advice:
            lines.append(Text(f"    advice: {advice}", style="dim"))
    if doc.is_run:
        load = _loads(doc).get(a.index)
        if load is None:
            lines.append(Text(""))
        else:
            text, bad = throughput(load)
            lines.append(Text(f"  {text}", style="bold red" if bad else ""))
    lines.append(Text(f"  advice: {a.advice}", style="dim"))
    return lines


def terminal(doc: BurnDocument) -> RenderableType:
    parts: list[RenderableType] = [Text(title(doc), style="bold")]
    for a in doc.gpus:
        parts += gpu_lines(doc, a)
    notes = run_notes(doc)
    if notes:
        parts.append(Text(""))
    for line, finding in notes:
        parts.append(Text(line, style=_finding_style(finding) if finding is not None else ""))
        if finding is not None and finding.advice:
            parts.append(Text(f"  advice: {finding.advice}", style="dim"))
    parts.append(Text(""))
    parts += [Text(line, style="bold red" if bad else "bold green") for line, bad in conclusion(doc)]
    return Group(*parts)


def markdown(doc: BurnDocument) -> str:
    out = [f"# {title(doc)}", ""]
    loads = _loads(doc)
    for a in doc.gpus:
        out += [f"## GPU{a.index}: {md_prose(a.verdict)}", ""]
        out += [f"- {md_prose(line)}" for line in evidence(a) + under_load(a) + run_checks(doc, a)]
        for f in a.findings:
            text, advice = finding_lines(f)
            out.append(f"- **{md_prose(text)}**" + (f" — {md_prose(advice)}" if advice else ""))
        if a.index in loads:
            out.append(f"- {md_prose(throughput(loads[a.index])[0])}")
        out += [f"- advice: {md_prose(a.advice)}", ""]
    notes = run_notes(doc)
    for line, finding in notes:
        advice = f" — {md_prose(finding.advice)}" if finding is not None and finding.advice else ""
        out.append(f"- {md_prose(line)}{advice}")
    if notes:
        out.append("")
    out += [f"**{md_prose(line)}**" if bad else md_prose(line) for line, bad in conclusion(doc)]
    if doc.diagnostics:
        out += ["", "Reading the trace:", "", *(f"- {md_prose(line)}" for line in doc.diagnostics)]
    return "\n".join(out) + "\n"


def html(doc: BurnDocument) -> str:
    from rigcheck.model.telemetry import Trace
    from rigcheck.report.burn.html import burn_html

    trace = doc.trace or Trace(source=doc.source, interval_s=doc.interval_s, path=doc.path)
    if doc.is_run:
        page_title = "rigcheck burn"
    else:
        page_title = f"rigcheck burn --analyze {Path(doc.path).name}" if doc.path else "rigcheck burn --analyze"
    checks = {a.index: run_checks(doc, a) for a in doc.gpus}
    return burn_html(trace, doc.gpus, title=page_title, checks=checks, notes=[line for line, _ in run_notes(doc)])


RENDERERS: Renderers[BurnDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)
