"""Run the calibration cases through the real CLI (in-process) and read rigcheck's verdict from each document.

Used by tests/contracts/test_calibration.py (0 healthy failed, 0 sick passed, the share judged) and by
tools/update_bands_doc.py (the lowest healthy figure beside each floor in docs/bands.md).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from rigcheck.cli.app import main

HERE = Path(__file__).parent
CASES_DIR = HERE / "cases"
MANIFEST = HERE / "manifest.json"

Outcome = Literal["pass", "fail", "unjudged"]
BUSBW_RE = re.compile(r"busbw ([0-9.]+) GB/s")
FLOOR_RE = re.compile(r"floor [0-9.]+ \(")


@dataclass(frozen=True)
class Case:
    id: str
    file: str
    tool: str
    hardware: str
    source: str
    verdict: Literal["healthy", "sick"]
    evidence: str
    command: tuple[str, ...]
    note: str = ""
    measurement: bool = True  # False: an incident of the shared corpus (a kernel log...), judged by the doctor

    @property
    def path(self) -> Path:
        return CASES_DIR / self.file

    def argv(self) -> list[str]:
        return [a.replace("{file}", str(self.path)) for a in self.command]


@dataclass(frozen=True)
class Figure:
    """One figure rigcheck held against a floor: a bench judgement, a verify check's band judgement."""

    check: str
    subject: str
    value: float
    floor: float
    verdict: str
    reason: str

    @property
    def condition(self) -> str:
        """What the floor was for, as the judgement says it: the bracket after "floor N (" in its reason."""
        found = FLOOR_RE.search(self.reason)
        if found is None:
            return ""
        depth, start = 1, found.end()
        for i in range(start, len(self.reason)):
            depth += {"(": 1, ")": -1}.get(self.reason[i], 0)
            if depth == 0:
                return self.reason[start:i]
        return self.reason[start:]


@dataclass
class Result:
    case: Case
    exit_code: int
    outcome: Outcome
    detail: str  # why: the failing or passing judgement's reason, or the error line
    figures: list[Figure] = field(default_factory=list)

    @property
    def misjudged(self) -> bool:
        return (self.case.verdict == "healthy" and self.outcome == "fail") or (
            self.case.verdict == "sick" and self.outcome == "pass"
        )


def load_cases() -> list[Case]:
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return [
        Case(
            id=c["id"],
            file=c["file"],
            tool=c["tool"],
            hardware=c["hardware"],
            source=c["source"],
            verdict=c["verdict"],
            evidence=c["evidence"],
            command=tuple(c["command"]),
            note=c.get("note", ""),
            measurement=c.get("measurement", True),
        )
        for c in data["cases"]
    ]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``rigcheck ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _figures(doc: dict[str, Any]) -> list[Figure]:
    """Every judgement of a figure against a floor in the document, whatever its shape: bench --from's
    ``judgement`` (one object or a list), verify's per-check judgements."""
    found: list[Figure] = []
    default = str(doc.get("op") or "allreduce")  # bench allgather's judgement names no op: the document does
    for node in _walk(doc):
        verdict = node.get("verdict")
        if verdict not in ("pass", "fail"):
            continue
        floor = _number(node.get("floor", node.get("band_floor_gbps", node.get("expected_min"))))
        value = _number(node.get("value", node.get("busbw_gbps", node.get("measured"))))
        reason = str(node.get("reason", ""))
        if value is None and (busbw := BUSBW_RE.search(reason)):
            value = float(busbw.group(1))  # bench allreduce --from states its figure in the reason only
        if floor is None or value is None:
            continue
        found.append(
            Figure(
                check=str(node.get("check", node.get("op", default))),
                subject=str(node.get("subject", "")),
                value=value,
                floor=floor,
                verdict=verdict,
                reason=reason,
            )
        )
    return found


def _verdicts(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(verdict, reason) of every pass/fail judgement in a document."""
    schema = str(doc.get("schema", ""))
    if schema.startswith("rigcheck.verify/"):
        top = doc.get("verdict")
        why = doc.get("drain_reason") or ("every check passed" if top == "pass" else "")
        return [(str(top), str(why))] if top in ("pass", "fail") else []
    if schema.startswith("rigcheck.doctor/"):  # a finding that fails makes the document's exit code 1
        failed = [str(f.get("id")) for f in doc.get("findings") or [] if f.get("severity") == "fail"]
        return [("fail", "doctor: " + ", ".join(failed))] if failed else [("pass", "doctor: no finding fails")]
    if schema.startswith("rigcheck.burn/"):
        gpus = doc.get("gpus") or []
        if not gpus:
            return []
        return [
            (
                "fail" if doc.get("exit_code") == 1 else "pass",
                f"{len(gpus)} GPU verdict(s), exit {doc.get('exit_code')}",
            )
        ]
    error = str(doc.get("error") or "")
    if error.startswith("the run failed"):  # the tool's own failure line (a CUDA or NCCL failure), not a cut file
        return [("fail", error)]
    wrong = [r for r in doc.get("results") or [] if isinstance(r, dict) and r.get("correct") is False]
    if wrong:  # the tool's own data check failed (nccl-tests #wrong, out of bounds): rigcheck marks the rows
        return [("fail", f"{len(wrong)} result row(s) with wrong data (correct: false)")]
    judgement = doc.get("judgement")
    entries = judgement if isinstance(judgement, list) else [judgement] if isinstance(judgement, dict) else []
    if not entries:
        entries = [n for n in _walk(doc) if n is not doc]
    return [(str(e["verdict"]), str(e.get("reason", ""))) for e in entries if e.get("verdict") in ("pass", "fail")]


def judge(case: Case) -> Result:
    result = _judge(case)
    result.detail = result.detail.replace(f"{CASES_DIR}/", "")  # no path of the machine that ran it
    return result


def _judge(case: Case) -> Result:
    code, out, err = run_cli(case.argv())
    first_err = next((line for line in err.splitlines() if line.strip()), "")
    try:
        doc = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        return Result(case, code, "unjudged", first_err or "no JSON document")
    verdicts = _verdicts(doc)
    figures = _figures(doc)
    failed = [reason for verdict, reason in verdicts if verdict == "fail"]
    if failed:
        return Result(case, code, "fail", failed[0], figures)
    if verdicts:
        return Result(case, code, "pass", verdicts[0][1], figures)
    reasons = [str(n.get("reason")) for n in _walk(doc) if n.get("verdict") == "unjudged" and n.get("reason")]
    return Result(case, code, "unjudged", reasons[0] if reasons else first_err or "no verdict in the document", figures)


@cache
def results() -> tuple[Result, ...]:
    """Every case judged once per process (the test and the doc generator share it)."""
    return tuple(judge(case) for case in load_cases())


def judged_share(rows: tuple[Result, ...]) -> float:
    """The share of the measurement cases rigcheck gave a pass or fail (incidents are judged by the doctor)."""
    measured = [r for r in rows if r.case.measurement]
    return sum(r.outcome != "unjudged" for r in measured) / max(len(measured), 1)


def summary(rows: tuple[Result, ...]) -> str:
    measured = [r for r in rows if r.case.measurement]
    judged = [r for r in measured if r.outcome != "unjudged"]
    lines = [
        f"calibration: {len(rows)} cases ({len(measured)} measurements, {len(rows) - len(measured)} incidents), "
        f"{len(judged)} measurements judged ({100 * judged_share(rows):.0f}%), "
        f"{sum(r.case.verdict == 'healthy' and r.outcome == 'fail' for r in rows)} healthy failed, "
        f"{sum(r.case.verdict == 'sick' and r.outcome == 'pass' for r in rows)} sick passed"
    ]
    lines += [f"  {r.case.id:<42} {r.case.verdict:<7} -> {r.outcome:<8} {r.detail[:110]}" for r in rows]
    return "\n".join(lines)
