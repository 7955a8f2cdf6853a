"""What every report format renders, and the exit code it implies."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from rigcheck.model import Finding, Gpu, Missing, Record, Severity, Snapshot

# Exit codes (DESIGN.md "Contracts"): 0 healthy, 1 problems found, 2 bad usage or input, 3 internal error.
EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

SEVERITY_ORDER: tuple[Severity, ...] = (
    Severity.FAIL,
    Severity.WARN,
    Severity.UNKNOWN,
    Severity.INFO,
    Severity.OK,
)

MISSING_WORDS: dict[Missing, str] = {
    Missing.NOT_SUPPORTED: "not supported",
    Missing.NO_PERMISSION: "no permission",
    Missing.GPU_LOST: "GPU lost",
    Missing.DRIVER_TOO_OLD: "driver too old",
    Missing.ERROR: "read error",
    Missing.REPORTED_NA: "N/A",
    Missing.NOT_IN_SOURCE: "not in input",
}


class Format(str, Enum):
    """Output formats of `rigcheck doctor`; every member has a renderer (tests walk them all)."""

    TERMINAL = "terminal"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


def exit_code_for(findings: list[Finding], *, strict: bool = False) -> int:
    """0 when healthy; 1 when any finding fails, or warns under ``strict``."""
    worst = {f.severity for f in findings}
    if Severity.FAIL in worst or (strict and Severity.WARN in worst):
        return EXIT_PROBLEMS
    return EXIT_OK


@dataclass
class DoctorReport:
    """A snapshot with the findings the checks drew from it."""

    snapshot: Snapshot
    findings: list[Finding]
    strict: bool = False
    counts: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        tally = Counter(f.severity.value for f in self.findings)
        self.counts = {s.value: tally.get(s.value, 0) for s in SEVERITY_ORDER}

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings, strict=self.strict)

    def by_severity(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity is severity]


def value_text(record: Record, name: str, unit: str = "", digits: int = 0) -> str:
    """A field as a report shows it: ``"72 W"``, or ``"n/a (not supported)"`` with the reason."""
    value = getattr(record, name)
    if value is None:
        reason = record.missing.get(name)
        return f"n/a ({MISSING_WORDS[reason]})" if reason else "n/a"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".rstrip() if unit else text


def gpu_label(gpu: Gpu) -> str:
    return f"GPU{gpu.index}"


def group_findings(findings: list[Finding]) -> list[tuple[Finding, list[str]]]:
    """Findings that say the same thing about several subjects, folded into one (first finding, subjects).

    An 8-GPU NVLink box has 28 identical pair findings; a person wants one line. Order is kept.
    """
    groups: dict[tuple[str, str, str, str | None], tuple[Finding, list[str]]] = {}
    for f in findings:
        key = (f.severity.value, f.id, f.message, f.advice)
        if key in groups:
            groups[key][1].append(f.subject)
        else:
            groups[key] = (f, [f.subject])
    return list(groups.values())


def subjects_text(subjects: list[str]) -> str:
    """``GPU0`` or ``4 GPUs`` / ``28 pairs``, for the subject column of a folded finding."""
    if len(subjects) == 1:
        return subjects[0]
    noun = (
        "pairs"
        if all("-" in s for s in subjects)
        else "GPUs"
        if all(s.startswith("GPU") for s in subjects)
        else "subjects"
    )
    return f"{len(subjects)} {noun}"


def subjects_list(subjects: list[str], *, limit: int = 8) -> str:
    shown = ", ".join(subjects[:limit])
    return shown + (f", … ({len(subjects) - limit} more)" if len(subjects) > limit else "")


def pcie_text(g: Gpu) -> str:
    """``gen4 x8 / gen4 x16`` (now / max), or the reason the link is unknown."""
    if g.pcie_gen_current is None and g.pcie_width_current is None:
        return value_text(g, "pcie_gen_current")
    now = f"gen{value_text(g, 'pcie_gen_current')} x{value_text(g, 'pcie_width_current')}"
    top = f"gen{value_text(g, 'pcie_gen_max')} x{value_text(g, 'pcie_width_max')}"
    return f"{now} / {top}"
