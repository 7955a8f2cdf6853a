"""Small helpers for the check tests."""

from __future__ import annotations

from rigcheck.model import Finding, Severity


def ids(findings: list[Finding]) -> list[str]:
    return [f.id for f in findings]


def only(findings: list[Finding], finding_id: str, subject: str | None = None) -> Finding:
    """The one finding with this id (and subject); fails the test if there are none or several."""
    found = [f for f in findings if f.id == finding_id and (subject is None or f.subject == subject)]
    assert len(found) == 1, f"expected one {finding_id} ({subject}), got {[(f.id, f.subject) for f in findings]}"
    return found[0]


def severities(findings: list[Finding], finding_id: str) -> list[Severity]:
    return [f.severity for f in findings if f.id == finding_id]
