"""The doctor report for a person at a terminal (rich): worst findings first, one line each."""

from __future__ import annotations

from collections import Counter

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model import Finding, Severity, Snapshot
from rigcheck.report.base import (
    MISSING_WORDS,
    SEVERITY_ORDER,
    DoctorReport,
    group_findings,
    pcie_text,
    subjects_list,
    subjects_text,
    value_text,
)
from rigcheck.report.summary import machine_lines

SEVERITY_STYLE: dict[Severity, str] = {
    Severity.FAIL: "bold red",
    Severity.WARN: "yellow",
    Severity.UNKNOWN: "magenta",
    Severity.INFO: "cyan",
    Severity.OK: "green",
}


def gpu_table(snap: Snapshot) -> Table:
    """One row per GPU with the figures the guide cares about, reasons shown for missing ones."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("GPU", "name", "power draw / limit", "temp / slowdown", "PCIe now / max", "P-state", "clock events"):
        table.add_column(col)
    for g in snap.gpus:
        if g.read_error is not None:
            # The detail is in the health.gpu-unreadable finding; the table stays narrow.
            table.add_row(str(g.index), Text(f"unreadable ({MISSING_WORDS[g.read_error]})", style="bold red"))
            continue
        reasons = g.clock_event_reasons_active
        table.add_row(
            str(g.index),
            g.name or "?",
            f"{value_text(g, 'power_draw_w', 'W')} / {value_text(g, 'power_limit_w', 'W')}",
            f"{value_text(g, 'temp_c', 'C')} / {value_text(g, 'temp_slowdown_c', 'C')}",
            pcie_text(g),
            value_text(g, "pstate"),
            ", ".join(reasons)
            if reasons
            else ("none" if reasons is not None else value_text(g, "clock_event_reasons_active")),
        )
    return table


def finding_lines(findings: list[Finding]) -> list[RenderableType]:
    """Problems one per line, worst first, each with its advice indented beneath.

    The same finding about several subjects is one line naming them all.
    """
    out: list[RenderableType] = []
    for sev in SEVERITY_ORDER:
        if sev is Severity.OK:
            continue
        for f, subjects in group_findings([x for x in findings if x.severity is sev]):
            line = Text()
            line.append(f"{sev.value.upper():<7}", style=SEVERITY_STYLE[sev])
            line.append(f" {subjects_text(subjects):<11} ", style="bold")
            line.append(f.message)
            if len(subjects) > 1:
                line.append(f" — {subjects_list(subjects)}")
            line.append(f"  [{f.id}]", style="dim")
            out.append(line)
            if f.advice:
                out.append(Text(f"        → {f.advice}", style="dim" if sev is Severity.INFO else ""))
    return out


def passed_line(findings: list[Finding]) -> Text | None:
    passed = [f for f in findings if f.severity is Severity.OK]
    if not passed:
        return None
    per = Counter(f.category for f in passed)
    text = Text("OK      ", style=SEVERITY_STYLE[Severity.OK])
    text.append(f"{len(passed)} checks passed (" + ", ".join(f"{c} {n}" for c, n in sorted(per.items())) + ")")
    return text


def result_line(report: DoctorReport) -> Text:
    counts = ", ".join(f"{n} {sev}" for sev, n in report.counts.items() if n and sev != "ok") or "no problems"
    if not report.findings:
        verdict = "nothing to check"
    elif report.exit_code:
        verdict = "problems found"
    elif report.counts.get("warn"):
        verdict = "warnings to look at"
    elif report.counts.get("unknown"):
        verdict = "no problems found, but some checks could not decide"
    else:
        verdict = "healthy"
    style = "bold red" if report.exit_code else "bold green"
    text = Text("Result: ", style="bold")
    text.append(f"{verdict} ({counts})", style=style)
    text.append(f" — exit {report.exit_code}" + (" (--strict: warnings count)" if report.strict else ""))
    return text


def render_terminal(report: DoctorReport, topology: RenderableType | None = None) -> RenderableType:
    snap = report.snapshot
    parts: list[RenderableType] = [Text("rigcheck doctor", style="bold")]
    parts += [Text(line) for line in machine_lines(snap)]
    if snap.gpus:
        parts += [Text(""), gpu_table(snap)]
    if topology is not None:
        parts += [Text(""), topology]
    parts.append(Text(""))
    parts += finding_lines(report.findings)
    passed = passed_line(report.findings)
    if passed is not None:
        parts.append(passed)
    if snap.missing_functions:
        parts.append(Text("NVML functions this driver lacks: " + ", ".join(snap.missing_functions), style="dim"))
    parts += [Text(""), result_line(report)]
    return Group(*parts)
