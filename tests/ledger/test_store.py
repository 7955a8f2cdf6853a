"""The ledger file: created as SQLite in WAL mode at the newest schema version; migrated one transaction a step (a
v0 file, v1 -> v3, v2 -> v3 with its GPUs marked for their trends, a failing step rolled back); anything that is
not a ledger refused and left as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rigcheck.errors import InputError
from rigcheck.ledger.store import APPLICATION_ID, MIGRATIONS, default_path, open_ledger, schema_version


def test_a_new_ledger_is_wal_at_the_newest_version(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "ledger.sqlite"
    with open_ledger(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert schema_version(conn) == len(MIGRATIONS) == 3
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"documents", "observations", "xids", "schema_version"} <= tables


def test_a_v0_file_is_migrated_and_its_rows_kept(tmp_path: Path) -> None:
    """A version-0 ledger (the version table at 0, one row of an older table) comes up to v1, the row kept."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (0, '2024-01-01T00:00:00Z')")
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.execute("INSERT INTO notes VALUES ('kept')")
    conn.commit()
    conn.close()
    with open_ledger(path) as conn:
        assert schema_version(conn) == len(MIGRATIONS)
        assert conn.execute("SELECT text FROM notes").fetchall() == [("kept",)]
        assert conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 0


def test_a_later_step_runs_once_and_a_failing_one_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with open_ledger(path):
        pass

    def add_column(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE documents ADD COLUMN note TEXT")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("no such thing")

    with open_ledger(path, migrations=(*MIGRATIONS, add_column)) as conn:
        assert schema_version(conn) == len(MIGRATIONS) + 1
        assert "note" in {r[1] for r in conn.execute("PRAGMA table_info(documents)")}
    with (
        pytest.raises(InputError, match="no such thing"),
        open_ledger(path, migrations=(*MIGRATIONS, add_column, broken)),
    ):
        pass
    with open_ledger(path, migrations=(*MIGRATIONS, add_column)) as conn:
        assert schema_version(conn) == len(MIGRATIONS) + 1  # the failed step left no version row ...
        assert "half_done" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}  # ... and no table


def test_a_newer_ledger_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with open_ledger(path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (7, '2030-01-01T00:00:00Z')")
    with pytest.raises(InputError, match="schema version 7, newer than this rigcheck's 3"), open_ledger(path):
        pass


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"schema": "rigcheck.verify/1"}', "not a SQLite database"),
        (b"SQLite format 3\x00" + b"\x07" * 2000, "not a usable ledger"),  # the header, then garbage
    ],
    ids=["json", "damaged"],
)
def test_a_file_that_is_not_a_ledger_is_refused_and_left_alone(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(content)
    with pytest.raises(InputError, match=why), open_ledger(path):
        pass
    assert path.read_bytes() == content
    assert not (tmp_path / "ledger.sqlite-wal").exists()


def test_another_programs_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(InputError, match="not a rigcheck ledger"), open_ledger(path):
        pass
    assert path.read_bytes() == before


def test_show_does_not_create_a_ledger(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no ledger here"), open_ledger(tmp_path / "none.sqlite", create=False):
        pass
    assert not (tmp_path / "none.sqlite").exists()


def test_the_default_path_follows_xdg(tmp_path: Path) -> None:
    assert default_path({"XDG_DATA_HOME": "/data"}, tmp_path) == Path("/data/rigcheck/ledger.sqlite")
    assert default_path({}, tmp_path) == tmp_path / ".local/share/rigcheck/ledger.sqlite"
    assert default_path({"XDG_DATA_HOME": "rel"}, tmp_path) == tmp_path / ".local/share/rigcheck/ledger.sqlite"


def test_a_v1_ledger_gains_the_xids_table_and_keeps_its_rows(tmp_path: Path) -> None:
    """v1 -> v2 through the migrations: the documents of a v1 file stay, the xids table is added empty."""
    path = tmp_path / "v1.sqlite"
    with open_ledger(path, migrations=MIGRATIONS[:1]) as conn:
        conn.execute(
            "INSERT INTO documents VALUES ('h', 'rigcheck.verify/1', '2025-01-01T00:00:00Z', 'mtime', 'n', 'pass',"
            " 'x.json', '2025-01-02T00:00:00Z')"
        )
        assert schema_version(conn) == 1
    with open_ledger(path) as conn:
        assert schema_version(conn) == len(MIGRATIONS)
        assert conn.execute("SELECT hash, node FROM documents").fetchall() == [("h", "n")]
        assert conn.execute("SELECT COUNT(*) FROM xids").fetchone()[0] == 0


def test_a_v2_ledger_marks_its_gpus_for_their_trends(tmp_path: Path) -> None:
    """v2 -> v3: the GPUs with figures (UUID, else serial) are marked stale, the ones without are not; the
    sightings with remapped-row counts get their partial index."""
    path = tmp_path / "v2.sqlite"
    with open_ledger(path, migrations=MIGRATIONS[:2]) as conn:
        conn.execute(
            "INSERT INTO documents VALUES ('h', 'rigcheck.verify/1', '2025-01-01T00:00:00Z', 'mtime', 'n', 'pass',"
            " 'x.json', '2025-01-02T00:00:00Z')"
        )
        rows = [
            ("GPU-a", None, '{"membw": 2900.0}'),
            (None, "1650000000001", '{"remapped_rows_correctable": 1.0}'),
            ("GPU-c", None, "{}"),
        ]
        conn.executemany(
            "INSERT INTO observations VALUES ('h', '2025-01-01T00:00:00Z', 'n', ?, ?, NULL, 0, 'pass', ?)", rows
        )
    with open_ledger(path) as conn:
        assert schema_version(conn) == 3
        assert {r[0] for r in conn.execute("SELECT gpu FROM stale_trends")} == {"GPU-a", "1650000000001"}
        assert conn.execute("SELECT COUNT(*) FROM trends").fetchone()[0] == 0
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM observations WHERE figures LIKE '%remapped_rows%'"
        ).fetchall()
        assert "observations_remaps" in str(plan)
