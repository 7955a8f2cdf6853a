"""`history add`'s reading: worker processes give the ledger the same rows as this process does, in the same
order; an unreadable file stops the add with its path; progress is told per batch; the same bytes twice in one
batch are one document."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rigcheck.errors import InputError
from rigcheck.ledger.ingest import BATCH, add_files, default_workers, document_files
from rigcheck.ledger.store import open_ledger
from tests.support.ledger_fleet import write_fleet

ROWS = "SELECT document, created_at, node, gpu_uuid, pci_bus_id, gpu_index, verdict, figures FROM observations"


def _rows(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute(ROWS + " ORDER BY rowid").fetchall()


def test_workers_write_what_this_process_writes(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    assert write_fleet(folder, nodes=6, days=10) == 60
    files = document_files([folder])
    with open_ledger(tmp_path / "here.sqlite") as here, open_ledger(tmp_path / "workers.sqlite") as workers:
        add_files(here, files, workers=0)
        add_files(workers, files, workers=2)
        assert len(_rows(here)) == 120
        assert _rows(here) == _rows(workers)  # the same rows, inserted in the files' order
        stale = "SELECT gpu FROM stale_trends ORDER BY gpu"
        assert here.execute(stale).fetchall() == workers.execute(stale).fetchall() != []


def test_an_unreadable_file_stops_the_add_with_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write_fleet(folder, nodes=1, days=3)
    files = document_files([folder])
    gone = folder / "node-00" / "2025-01-02.json"
    gone.unlink()  # listed, then removed before it was read
    with open_ledger(tmp_path / "l.sqlite") as conn, pytest.raises(InputError, match="cannot read") as caught:
        add_files(conn, files, workers=2)
    assert str(gone) in str(caught.value)


def test_progress_is_told_each_batch_and_duplicates_in_a_batch_are_one(tmp_path: Path) -> None:
    doc = tmp_path / "one.json"
    write_fleet(tmp_path / "docs", nodes=1, days=1)
    doc.write_bytes(next((tmp_path / "docs").rglob("*.json")).read_bytes())
    told: list[tuple[int, int]] = []
    with open_ledger(tmp_path / "l.sqlite") as conn:
        added = add_files(conn, [doc] * (BATCH + 5), workers=0, progress=lambda done, total: told.append((done, total)))
    assert (added.new, added.known) == (1, BATCH + 4)
    assert told == [(BATCH, BATCH + 5)]


@pytest.mark.parametrize(("cores", "files", "workers"), [(1, 10**5, 0), (2, 10, 0), (2, 10**5, 2), (64, 10**5, 8)])
def test_workers_start_only_where_they_pay(
    monkeypatch: pytest.MonkeyPatch, cores: int, files: int, workers: int
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(cores)))
    assert default_workers(files) == workers


def test_a_fleet_document_is_one_document_and_a_run_of_each_node(tmp_path: Path) -> None:
    """`fleet --ledger` (and `history add` of a fleet document): each node's verdict counts for its offences."""
    from rigcheck.cli.history import history_document
    from rigcheck.ledger.ingest import add_document
    from rigcheck.model.history import Filters
    from rigcheck.report.render import json_text
    from tests.report.test_render_formats import fleet_sample

    fleet = fleet_sample()
    verdicts = {n.name: n.verdict for n in fleet.nodes}  # type: ignore[attr-defined]
    data = json_text(fleet).encode()
    path = tmp_path / "l.sqlite"
    with open_ledger(path) as conn:
        assert add_document(conn, data, "rigcheck fleet").new == 1
        assert add_document(conn, data, "rigcheck fleet").known == 1
    doc = history_document(path, Filters(node=None, gpu=None, since=None))
    assert doc.documents == 1
    assert doc.runs == len(verdicts) == 4
    assert sorted(o.node for o in doc.offenders) == sorted(n for n, v in verdicts.items() if v != "pass") != []


@pytest.mark.parametrize(
    ("path", "mtime", "expected"),
    [
        ("verify-2025-01-31.json", "2025-01-31T06:12:00Z", "2025-01-31T06:12:00Z"),  # the same day: the file's time
        ("verify-2025-01-31.json", "2026-11-28T10:00:00Z", "2025-01-31T00:00:00Z"),  # copied later: the name's day
        ("20250131T061500Z/node-05.json", None, "2025-01-31T06:15:00Z"),  # the folder's date and time
        ("2025-01-31/node-05/verify.json", None, "2025-01-31T00:00:00Z"),  # two folders up
        ("run-20251399.json", None, None),  # not a date
        ("job-4412025013112.json", None, None),  # digits inside a longer number
        ("verify.json", "2025-01-31T06:12:00Z", None),
    ],
)
def test_a_date_in_the_name_dates_a_document_without_one(path: str, mtime: str | None, expected: str | None) -> None:
    from rigcheck.ledger.ingest import named_time

    assert named_time(Path("/data") / path, mtime) == expected


def test_the_documents_date_comes_first_then_the_name_then_the_file(tmp_path: Path) -> None:
    import json
    import os

    from rigcheck.ledger.ingest import add_files

    doc = {"schema": "rigcheck.verify/1", "host": "n1", "verdict": "pass", "gpus": []}
    own = tmp_path / "verify-2025-02-01.json"
    own.write_text(json.dumps({**doc, "created_at": "2025-03-01T08:00:00+01:00", "n": 1}))
    named = tmp_path / "verify-2025-02-02.json"
    named.write_text(json.dumps({**doc, "n": 2}))
    plain = tmp_path / "verify.json"
    plain.write_text(json.dumps({**doc, "n": 3}))
    for f in (own, named, plain):
        os.utime(f, (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20Z
    with open_ledger(tmp_path / "l.sqlite") as conn:
        added = add_files(conn, [own, named, plain], workers=0)
        rows = conn.execute("SELECT source, created_at, created_from FROM documents ORDER BY source").fetchall()
    assert (added.from_name, added.from_mtime) == (1, 1)
    assert rows == [
        (str(own), "2025-03-01T07:00:00Z", "document"),
        (str(named), "2025-02-02T00:00:00Z", "name"),
        (str(plain), "2023-11-14T22:13:20Z", "mtime"),
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2025-01-31T06:00:00Z", "2025-01-31T06:00:00Z"),  # "Z": read on Python 3.10 too (model/document.utc_time)
        ("2025-01-31T07:00:00.5+01:00", "2025-01-31T06:00:00Z"),
        ("2025-01-31T06:00:00", None),  # no zone: not RFC 3339, the file's time is surer
        ("yesterday", None),
        (1738303200, None),
    ],
)
def test_a_documents_own_time_is_read_as_rfc3339_utc(given: object, expected: str | None) -> None:
    from rigcheck.ledger.ingest import rfc3339

    assert rfc3339(given) == expected
