"""`--ledger FILE` on doctor, verify and fleet: the printed document is recorded (once, whatever the runs), the
ledger's own trouble is one line on stderr and never the command's exit code."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.cli import Rigcheck

SNAPSHOT = "tests/fixtures/snapshots/2x-3090-phb-throttling.json"


def _documents(ledger: Path) -> list[tuple[str, str | None, str]]:
    with sqlite3.connect(ledger) as conn:
        query = "SELECT schema, node, created_from FROM documents WHERE part_of IS NULL ORDER BY schema"
        return list(conn.execute(query))


def test_doctor_and_verify_record_what_they_printed(rigcheck: Rigcheck, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    doctor = rigcheck("doctor", "--from", SNAPSHOT, "--ledger", ledger)
    assert doctor.code == 1  # the rig's verdict, recording or not
    again = rigcheck("doctor", "--from", SNAPSHOT, "--ledger", ledger)
    assert again.code == 1
    verify = rigcheck(
        "verify", "--from", "tests/fixtures/verify/h100x8-gpu3-slow", "--json", env={"RIGCHECK_LEDGER": str(ledger)}
    )
    assert verify.code == 1
    assert verify.json["verdict"] == "fail"  # stdout is the document alone
    # the same doctor document twice is one row (dated by its snapshot); verify's by the recording (a --from
    # judgement has no date of its own)
    rows = _documents(ledger)
    assert rows[0] == ("rigcheck.doctor/1", "club3090", "document")
    assert (rows[1][0], rows[1][2]) == ("rigcheck.verify/1", "recorded")
    assert len(rows) == 2
    shown = rigcheck("history", "show", "--json", "--ledger", ledger).json
    assert shown["documents"] == 2


def test_a_ledger_that_cannot_take_it_does_not_change_the_exit_code(rigcheck: Rigcheck, tmp_path: Path) -> None:
    not_a_ledger = tmp_path / "notes.txt"
    not_a_ledger.write_text("shopping list\n")
    result = rigcheck("doctor", "--from", SNAPSHOT, "--json", "--ledger", not_a_ledger)
    assert result.code == 1  # doctor's own code for this rig
    assert result.json["schema"] == "rigcheck.doctor/1"
    assert "rigcheck: doctor: not recorded in the ledger:" in result.stderr
    assert not_a_ledger.read_text() == "shopping list\n"  # refused, never overwritten


def test_fleet_from_saved_documents_records_the_fleet(rigcheck: Rigcheck, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    result = rigcheck("fleet", "--from", "tests/fixtures/fleet/4-nodes", "--json", "--ledger", ledger)
    assert result.code == 1
    assert [row[0] for row in _documents(ledger)] == ["rigcheck.fleet/1"]
    with sqlite3.connect(ledger) as conn:  # and a run of each of its four nodes
        runs = conn.execute("SELECT node, verdict FROM documents WHERE part_of IS NOT NULL ORDER BY node").fetchall()
    assert [node for node, _ in runs] == ["node01", "node02", "node03", "node04"]
