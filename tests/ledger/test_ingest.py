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
