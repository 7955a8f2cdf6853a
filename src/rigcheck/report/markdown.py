"""The doctor report as Markdown, for pasting into an issue or a wiki page."""

from __future__ import annotations

from rigcheck.model import Finding, Severity
from rigcheck.report.base import SEVERITY_ORDER, DoctorReport, group_findings, pcie_text, subjects_list, value_text
from rigcheck.report.summary import machine_lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _finding_row(f: Finding, subjects: list[str]) -> str:
    cells = [f.severity.value.upper(), f"`{f.id}`", subjects_list(subjects), f.message, f.advice or ""]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def render_markdown(report: DoctorReport) -> str:
    snap = report.snapshot
    out: list[str] = ["# rigcheck doctor", ""]
    out += [f"- {line}" for line in machine_lines(snap)]
    out.append("")
    if snap.gpus:
        out += [
            "## GPUs",
            "",
            "| GPU | name | power draw / limit | temperature / slowdown | PCIe now / max | P-state |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for g in snap.gpus:
            if g.read_error is not None:
                detail = g.read_error_detail or g.read_error.value
                out.append(f"| {g.index} | unreadable: {_cell(detail)} | | | | |")
                continue
            power = f"{value_text(g, 'power_draw_w', 'W')} / {value_text(g, 'power_limit_w', 'W')}"
            temp = f"{value_text(g, 'temp_c', 'C')} / {value_text(g, 'temp_slowdown_c', 'C')}"
            cells = [str(g.index), g.name or "?", power, temp, pcie_text(g), value_text(g, "pstate")]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    out += ["## Findings", ""]
    counts = ", ".join(f"{n} {sev}" for sev, n in report.counts.items() if n)
    out += [f"{counts or 'no findings'}; exit code {report.exit_code}.", ""]
    problems = [f for f in report.findings if f.severity is not Severity.OK]
    if problems:
        out += ["| severity | id | subject | finding | advice |", "| --- | --- | --- | --- | --- |"]
        for sev in SEVERITY_ORDER:
            out += [_finding_row(f, subs) for f, subs in group_findings([p for p in problems if p.severity is sev])]
        out.append("")
    passed = [f for f in report.findings if f.severity is Severity.OK]
    if passed:
        out += ["<details><summary>Checks that passed</summary>", ""]
        out += [f"- `{f.id}` {f.subject}: {f.message}" for f in passed]
        out += ["", "</details>", ""]
    return "\n".join(out)
