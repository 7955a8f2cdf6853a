"""The verdict contract (rigcheck.checks.verdicts, docs/verdicts.md): the document and the function say the same,
and doctor's outcome, verify's doctor check, its node verdict, outcome and Slurm line all follow it; the CLI's
exit codes (cli/exits.py) are the codes of those outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import FINDING_IDS
from rigcheck.checks.doctor.driver import DRIVER_IDS
from rigcheck.checks.verdicts import (
    NODE_RULES,
    STEP_RULES,
    contract_tables,
    doctor_outcome,
    drain_reason,
    family,
    finding_verdict,
    node_outcome,
    node_verdict,
    slurm_line,
)
from rigcheck.checks.verify.judge import judge
from rigcheck.cli.exits import OUTCOME_EXITS, exit_code_for, exit_code_for_verdict
from rigcheck.model.finding import Finding, Severity
from rigcheck.model.snapshot import Snapshot
from rigcheck.model.verify import VERDICT_ORDER, VerifyInputs, worst

DOC = Path(__file__).parent.parents[1] / "docs" / "verdicts.md"


def _tables(text: str) -> list[list[tuple[str, ...]]]:
    """Every Markdown table of ``text``, its rows as cells, the --- row left out."""
    tables: list[list[tuple[str, ...]]] = []
    current: list[tuple[str, ...]] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        if current is None:
            current = []
            tables.append(current)
        cells = tuple(c.strip() for c in line.strip().strip("|").split(" | "))
        if set("".join(cells)) != {"-"}:
            current.append(cells)
    return tables


def test_docs_verdicts_md_holds_the_functions_tables_word_for_word() -> None:
    assert _tables(DOC.read_text(encoding="utf-8")) == contract_tables(OUTCOME_EXITS)


def test_every_finding_family_is_in_the_contract() -> None:
    families = {row[0].strip("`") for row in contract_tables(OUTCOME_EXITS)[0][1:]}
    assert families == set(FINDING_IDS)
    for check, ids in FINDING_IDS.items():
        assert {family(i) for i in ids} == {check}, check


def _finding(severity: Severity, finding_id: str = "thermal.slowdown-active") -> Finding:
    """A synthetic finding of the host (the judge lists a GPU's findings only for a GPU the snapshot has)."""
    return Finding(id=finding_id, severity=severity, category=family(finding_id), subject="host", message="m")


@pytest.mark.parametrize(
    ("severity", "plain", "strict", "verify"),
    [
        (Severity.FAIL, 1, 1, "fail"),
        (Severity.WARN, 0, 1, "pass"),
        (Severity.UNKNOWN, 0, 0, "pass"),
        (Severity.INFO, 0, 0, "pass"),
        (Severity.OK, 0, 0, "pass"),
    ],
)
def test_doctor_exit_and_verify_doctor_check_follow_one_rule(
    severity: Severity, plain: int, strict: int, verify: str
) -> None:
    found = [_finding(severity), _finding(Severity.OK, "power.ok")]
    assert exit_code_for(found) == OUTCOME_EXITS[doctor_outcome(found)] == plain
    assert exit_code_for(found, strict=True) == strict
    assert finding_verdict(found[0]) == verify
    judged = judge(VerifyInputs(snapshot=Snapshot(), findings=found))
    doctor = next(c for c in judged.node if c.id == "doctor")
    assert doctor.verdict == verify
    if verify == "fail":
        assert judged.drain_reason == "rigcheck verify: fail doctor thermal.slowdown-active"


def test_a_cpu_run_does_not_count_the_driver_findings_and_nothing_else() -> None:
    for finding_id in DRIVER_IDS:
        assert finding_verdict(_finding(Severity.FAIL, finding_id), cpu=True) == "pass"
        assert finding_verdict(_finding(Severity.FAIL, finding_id), cpu=False) == "fail"
    assert finding_verdict(_finding(Severity.FAIL), cpu=True) == "fail"


def test_a_step_that_applies_and_did_not_end_keeps_the_node_from_passing() -> None:
    assert {s for s, r in STEP_RULES.items() if r.node == "pass"} == {"done", "not_applicable", "left_out"}
    assert node_verdict(["pass"], ["done", "not_applicable", "left_out"]) == "pass"
    for status in ("skipped", "cut_short", "failed"):
        assert node_verdict(["pass"], ["done", status]) == "incomplete"
        assert node_verdict(["unjudged"], [status]) == "incomplete"
        assert node_verdict(["fail"], [status]) == "fail"


def test_verdict_order_exit_codes_and_the_slurm_line() -> None:
    assert VERDICT_ORDER == ("pass", "unjudged", "incomplete", "fail")
    assert worst(["pass", "unjudged"]) == "unjudged"
    assert worst(["unjudged", "incomplete"]) == "incomplete"
    assert set(NODE_RULES) == set(VERDICT_ORDER)
    for verdict in VERDICT_ORDER:
        code = OUTCOME_EXITS[node_outcome(verdict)]
        assert exit_code_for_verdict(verdict) == code
        line = slurm_line(verdict, drain_reason(verdict, []))
        if code == 0:
            assert line is None
            assert drain_reason(verdict, ["anything"]) is None
        else:  # exit 1: always one non-empty line, even from a reason of no words
            assert line == f"rigcheck verify: {verdict}"
            assert slurm_line(verdict, None) == line
    assert node_outcome("unjudged") == "ok"
    assert exit_code_for_verdict("not a verdict") == 1


# A real input of each broken state (sources in each folder's README) and the words its advice must hold.
BROKEN_INPUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "fabric.not-registered": ("fabricmanager-extra/gpuop2511-q-fabric-in-progress-580.txt", ("wait", "re-check")),
    "fabric.manager-failed": ("fabricmanager-extra/gpuop356-service-start-job-failed.txt", ("restart", "log")),
    "health.driver-not-loaded": (
        "corpus/driver-errors/203-container-nvidia-smi-failed-couldnt-communicate.txt",
        ("load it", "modprobe nvidia"),
    ),
    "xid.driver-no-device": ("not-ready/bigdata133-dmesg-probe-not-called-3-devices.txt", ("load the NVIDIA driver",)),
    "xid.hardware": ("corpus/kernel-log/204-syslog-gt630-xid79-fallen-off-bus-375.txt", ("reseat", "RMA")),
    "pcie.width-below-max": ("corpus/smi-xml/001-tesla-t4-515-v11.xml", ("x16 slot", "reseat")),
}


def test_every_broken_state_has_a_real_input() -> None:
    from rigcheck.checks.verdicts import BROKEN_STATES

    assert {b.finding_id for b in BROKEN_STATES} == set(BROKEN_INPUTS)


@pytest.mark.parametrize("finding_id", sorted(BROKEN_INPUTS))
def test_a_broken_state_fails_with_its_action(finding_id: str) -> None:
    from rigcheck.checks.doctor import run_checks
    from rigcheck.readers.from_file import load_file

    name, words = BROKEN_INPUTS[finding_id]
    findings = run_checks(load_file(str(Path(__file__).parent.parent / "fixtures" / name)))
    found = [f for f in findings if f.id == finding_id]
    assert found
    assert all(f.severity is Severity.FAIL for f in found)
    assert all(w in (found[0].advice or "") for w in words), found[0].advice
    assert doctor_outcome(findings) == "problems"
