"""Opening the ledger file: a SQLite database in WAL mode (readers go on while one writer commits), its schema
version in the ``schema_version`` table and the migrations that bring an older file up to date, each in one
transaction. A file that is not a SQLite database, a SQLite database that is not a ledger, a ledger of a newer
rigcheck or a damaged one is refused with one line, and never written to."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from rigcheck.errors import InputError
from rigcheck.model.document import utc_now

SQLITE_MAGIC = b"SQLite format 3\x00"
APPLICATION_ID = 0x52434B4C  # "RCKL": marks the file as a rigcheck ledger (PRAGMA application_id)
BUSY_TIMEOUT_MS = 10_000  # a second writer waits this long for the first one's commit

Migration = Callable[[sqlite3.Connection], None]

V1_TABLES = """
CREATE TABLE documents (
    hash TEXT PRIMARY KEY,          -- sha256 of the file's bytes
    schema TEXT NOT NULL,           -- rigcheck.verify/1, ...
    created_at TEXT NOT NULL,       -- RFC 3339, UTC
    created_from TEXT NOT NULL,     -- 'document' (its own created_at), 'mtime' (the file's), 'recorded' (--ledger);
                                    -- v3: 'name' (a date in the file's name)
    node TEXT,                      -- the hostname it names, where it names one
    verdict TEXT,                   -- the node's verdict, where the document judges one
    source TEXT NOT NULL,           -- the path it was added from
    added_at TEXT NOT NULL
);
CREATE INDEX documents_node ON documents (node, created_at);
CREATE INDEX documents_verdict ON documents (verdict, node);
CREATE TABLE observations (
    document TEXT NOT NULL REFERENCES documents (hash),
    created_at TEXT NOT NULL,
    node TEXT,
    gpu_uuid TEXT,
    serial TEXT,
    pci_bus_id TEXT,
    gpu_index INTEGER,
    verdict TEXT,
    figures TEXT NOT NULL           -- JSON: check id -> value
);
CREATE INDEX observations_uuid ON observations (gpu_uuid, created_at);
CREATE INDEX observations_serial ON observations (serial, created_at);
CREATE INDEX observations_verdict ON observations (verdict);
CREATE INDEX observations_node ON observations (node, created_at);
"""


# v2: the Xid codes a document's kernel log showed, per GPU (history's escalation alerts). Documents added at v1
# have none: the ledger keeps no document's bytes to read them again.
V2_TABLES = """
CREATE TABLE xids (
    document TEXT NOT NULL REFERENCES documents (hash),
    created_at TEXT NOT NULL,
    node TEXT,
    gpu_uuid TEXT,
    serial TEXT,
    pci_bus_id TEXT,
    code INTEGER NOT NULL
);
CREATE INDEX xids_gpu ON xids (gpu_uuid, code, created_at);
"""


# v3: what makes `history show` answer in under a second over a year of a thousand nodes. Each GPU's trend of each
# figure over its drift window, fitted when documents are added (trends), the GPUs whose trends new documents made
# stale until they are fitted again (stale_trends: every GPU with figures when a v2 ledger is migrated; `show`
# fits a stale GPU itself and `add` stores it), and an index of the sightings with remapped-row counts (doctor's
# and snapshots', a few among many verify rows) for the escalation alerts. A fleet document judges many nodes: it is
# one document, and a run per node (a documents row each, part_of naming the fleet document), so that a fleet run
# counts for each node's offences as a verify of that node does.
V3_TABLES = """
CREATE TABLE trends (
    gpu TEXT NOT NULL,              -- UUID, else board serial
    figure TEXT NOT NULL,
    node TEXT,                      -- of its last run in the window
    first_at TEXT NOT NULL,
    last_at TEXT NOT NULL,
    points INTEGER NOT NULL,
    days REAL NOT NULL,
    slope_per_day REAL NOT NULL,
    start_level REAL NOT NULL,
    end_level REAL NOT NULL,
    PRIMARY KEY (gpu, figure)
);
CREATE TABLE stale_trends (gpu TEXT PRIMARY KEY);
INSERT INTO stale_trends SELECT DISTINCT COALESCE(gpu_uuid, serial) FROM observations
    WHERE figures != '{}' AND COALESCE(gpu_uuid, serial) IS NOT NULL;
CREATE INDEX observations_remaps ON observations (created_at) WHERE figures LIKE '%remapped_rows%';
CREATE INDEX documents_runs ON documents (node, verdict, created_at);
ALTER TABLE documents ADD COLUMN part_of TEXT;  -- a fleet document's run of one node: the fleet document's hash
"""


def _to_v1(conn: sqlite3.Connection) -> None:
    for statement in statements(V1_TABLES):
        conn.execute(statement)


def _to_v2(conn: sqlite3.Connection) -> None:
    for statement in statements(V2_TABLES):
        conn.execute(statement)


def statements(script: str) -> list[str]:
    """A script's statements, to run one by one inside a transaction (executescript would commit first)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE (the write lock now, not at the first write) ... COMMIT, or ROLLBACK on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _to_v3(conn: sqlite3.Connection) -> None:
    for statement in statements(V3_TABLES):
        conn.execute(statement)


# MIGRATIONS[k] takes a ledger from version k to k + 1; a new file is version 0 (the version table, nothing else).
MIGRATIONS: Sequence[Migration] = (_to_v1, _to_v2, _to_v3)


def default_path(env: Mapping[str, str], home: Path) -> Path:
    """$XDG_DATA_HOME/rigcheck/ledger.sqlite, else ~/.local/share/rigcheck/ledger.sqlite (the XDG default)."""
    data = env.get("XDG_DATA_HOME") or ""
    base = Path(data) if Path(data).is_absolute() else home / ".local" / "share"  # the spec ignores relative values
    return base / "rigcheck" / "ledger.sqlite"


def _refuse(path: Path, why: str) -> InputError:
    return InputError(f"{why}; the file is left as it is (use another --ledger)", path=str(path))


def _check_header(path: Path) -> None:
    """A non-empty file must start as a SQLite database does, before sqlite3 is let near it."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise InputError(f"cannot read the ledger: {exc.strerror or exc}", path=str(path)) from None
    if head and head != SQLITE_MAGIC:
        raise _refuse(path, "not a rigcheck ledger (not a SQLite database)")


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _prepare(conn: sqlite3.Connection, path: Path, migrations: Sequence[Migration]) -> None:
    """Check that the file is a ledger (or empty) and migrate it to the newest version, one transaction a step."""
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app_id != APPLICATION_ID and tables:
        raise _refuse(path, "a SQLite database, but not a rigcheck ledger")
    if app_id != APPLICATION_ID:
        with transaction(conn):
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    version = schema_version(conn)
    if version > len(migrations):
        raise _refuse(path, f"a ledger of schema version {version}, newer than this rigcheck's {len(migrations)}")
    for step in range(version, len(migrations)):
        with transaction(conn):  # one transaction: the step and its version row, or neither
            migrations[step](conn)
            conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (step + 1, utc_now()))


@contextmanager
def open_ledger(
    path: Path, *, create: bool = True, migrations: Sequence[Migration] = MIGRATIONS
) -> Iterator[sqlite3.Connection]:
    """The ledger at ``path``, migrated to the newest version, closed after. ``create=False`` (history show) refuses
    a missing file rather than creating one. sqlite3's errors on a damaged file become one-line InputErrors."""
    exists = path.exists()
    if exists:
        if not path.is_file():
            raise InputError("not a file", path=str(path))
        _check_header(path)
    elif not create:
        raise InputError("no ledger here (add documents first: rigcheck history add PATH...)", path=str(path))
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the ledger's folder: {exc.strerror or exc}", path=str(path)) from None
    conn = None
    try:
        # isolation_level=None: no implicit transactions; every write is inside transaction() explicitly.
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        _prepare(conn, path, migrations)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL's durable-enough setting: a crash loses no committed file
        yield conn
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise InputError(
                f"the ledger is busy: another writer held it for {BUSY_TIMEOUT_MS / 1000:g} s", path=str(path)
            ) from None
        raise InputError(f"cannot use the ledger: {exc}", path=str(path)) from None
    except sqlite3.DatabaseError as exc:
        # "file is not a database", "database disk image is malformed": the file is damaged; nothing was written.
        raise _refuse(path, f"not a usable ledger ({exc})") from None
    finally:
        if conn is not None:
            conn.close()
