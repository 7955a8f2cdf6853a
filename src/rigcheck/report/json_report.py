"""The machine-readable doctor report (schema ``rigcheck.doctor/1``)."""

from __future__ import annotations

import json
from typing import Any

from rigcheck.model import Finding, snapshot_to_dict
from rigcheck.report.base import DoctorReport

DOCTOR_SCHEMA = "rigcheck.doctor/1"


def findings_to_list(findings: list[Finding]) -> list[dict[str, Any]]:
    return [f.model_dump(mode="json") for f in findings]


def doctor_to_dict(report: DoctorReport) -> dict[str, Any]:
    return {
        "schema": DOCTOR_SCHEMA,
        "exit_code": report.exit_code,
        "strict": report.strict,
        "counts": report.counts,
        "findings": findings_to_list(report.findings),
        "snapshot": snapshot_to_dict(report.snapshot),
    }


def dumps(data: object) -> str:
    """JSON as rigcheck prints it: indented, UTF-8 kept readable, a final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_json(report: DoctorReport) -> str:
    return dumps(doctor_to_dict(report))
