"""The doctor document (``rigcheck.doctor/1``): every finding about the rig and the snapshot they came from."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from rigcheck.model.document import Document, FindingsRef, Plain, SnapshotRef
from rigcheck.model.finding import Finding
from rigcheck.model.snapshot import Snapshot

DOCTOR_SCHEMA: Literal["rigcheck.doctor/1"] = "rigcheck.doctor/1"


class SeverityCounts(Plain):
    """Findings per severity, worst first."""

    fail: int = Field(ge=0)
    warn: int = Field(ge=0)
    unknown: int = Field(ge=0)
    info: int = Field(ge=0)
    ok: int = Field(ge=0)


def count_severities(findings: Iterable[Finding]) -> SeverityCounts:
    tally = Counter(f.severity.value for f in findings)
    return SeverityCounts(
        fail=tally["fail"], warn=tally["warn"], unknown=tally["unknown"], info=tally["info"], ok=tally["ok"]
    )


class DoctorDocument(Document):
    """Every finding about the rig and the snapshot they were drawn from (docs/commands.md)."""

    schema_: Literal["rigcheck.doctor/1"] = Field(DOCTOR_SCHEMA, alias="schema")
    exit_code: Literal[0, 1] = Field(description="the exit code of the run: 0 healthy, 1 problems found")
    strict: bool = Field(description="--strict: warn findings count as problems")
    counts: SeverityCounts = Field(description="findings per severity")
    findings: FindingsRef
    snapshot: SnapshotRef


def doctor_document(snapshot: Snapshot, findings: list[Finding], *, exit_code: int, strict: bool) -> DoctorDocument:
    """The document of one doctor run; ``exit_code`` is the CLI's decision (cli/exits.py)."""
    return DoctorDocument(
        exit_code=exit_code, strict=strict, counts=count_severities(findings), findings=findings, snapshot=snapshot
    )
