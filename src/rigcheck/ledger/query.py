"""Reading the ledger for `history show`: the aggregates SQLite computes faster than Python would (the runs per
node), and the few rows the judge walks itself (the last runs of the nodes that failed, the sightings of the GPUs
that failed or were asked for). Nothing here judges: :mod:`rigcheck.checks.history` does."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import timedelta

from rigcheck.model.document import RFC3339, utc_time
from rigcheck.model.history import EXCLUDED_VERDICTS, NodeCount, RunRow, SightingRow, XidRow

CHUNK = 500  # keys bound in one IN (...): under SQLite's oldest limit on bound parameters (999)
_EXCLUDED = "(" + ", ".join(f"'{v}'" for v in sorted(EXCLUDED_VERDICTS)) + ")"


def _where(*, since: str | None, node: str | None, extra: Sequence[str] = ()) -> tuple[str, list[str]]:
    parts, args = list(extra), []
    if since is not None:
        parts.append("created_at >= ?")
        args.append(since)
    if node is not None:
        parts.append("node = ?")
        args.append(node)
    return (" WHERE " + " AND ".join(parts)) if parts else "", args


def document_count(conn: sqlite3.Connection) -> int:
    """The documents added (a fleet document's runs of its nodes are rows of their own, not documents)."""
    return int(conn.execute("SELECT COUNT(*) FROM documents WHERE part_of IS NULL").fetchone()[0])


def node_counts(conn: sqlite3.Connection, *, since: str | None, node: str | None) -> list[NodeCount]:
    """Per node: its runs (documents with a node verdict), the excluded ones and the latest excluded."""
    where, args = _where(since=since, node=node, extra=("node IS NOT NULL", "verdict IS NOT NULL"))
    rows = conn.execute(
        f"SELECT node, COUNT(*), SUM(verdict IN {_EXCLUDED}),"
        f" MAX(CASE WHEN verdict IN {_EXCLUDED} THEN created_at END) FROM documents{where} GROUP BY node",
        args,
    )
    return [NodeCount(r[0], int(r[1]), int(r[2] or 0), r[3]) for r in rows]


def last_runs(conn: sqlite3.Connection, nodes: Sequence[str], window: int, *, since: str | None) -> list[RunRow]:
    """The last ``window`` runs of each node named, newest first per node."""
    out: list[RunRow] = []
    for name in nodes:
        where, args = _where(since=since, node=name, extra=("verdict IS NOT NULL",))
        rows = conn.execute(
            f"SELECT created_at, node, verdict FROM documents{where} ORDER BY created_at DESC LIMIT ?",
            [*args, window],
        )
        out += [RunRow(r[0], r[1], r[2]) for r in rows]
    return out


def _sightings(conn: sqlite3.Connection, where: str, args: Sequence[object]) -> list[SightingRow]:
    rows = conn.execute(
        "SELECT created_at, node, gpu_uuid, serial, pci_bus_id, gpu_index, verdict, figures FROM observations"
        f"{where} ORDER BY created_at",
        list(args),
    )
    return [SightingRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7])) for r in rows]


def failed_gpus(conn: sqlite3.Connection, *, since: str | None) -> tuple[set[str], set[str]]:
    """The UUIDs and the board serials of the GPUs with an excluded sighting."""
    where, args = _where(since=since, node=None, extra=(f"verdict IN {_EXCLUDED}",))
    uuids, serials = set(), set()
    for uuid, serial in conn.execute(f"SELECT DISTINCT gpu_uuid, serial FROM observations{where}", args):
        if uuid:
            uuids.add(uuid)
        if serial:
            serials.add(serial)
    return uuids, serials


def gpus_on_node(conn: sqlite3.Connection, node: str, *, since: str | None) -> tuple[set[str], set[str]]:
    where, args = _where(since=since, node=node)
    rows = conn.execute(f"SELECT DISTINCT gpu_uuid, serial FROM observations{where}", args).fetchall()
    return {r[0] for r in rows if r[0]}, {r[1] for r in rows if r[1]}


def sightings_of(
    conn: sqlite3.Connection, uuids: set[str], serials: set[str], *, since: str | None
) -> list[SightingRow]:
    """Every sighting of these GPUs (by UUID or by serial), oldest first."""
    out: list[SightingRow] = []
    for column, keys in (("gpu_uuid", sorted(uuids)), ("serial", sorted(serials))):
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            marks = ", ".join("?" * len(chunk))
            where, args = _where(since=since, node=None, extra=(f"{column} IN ({marks})",))
            out += _sightings(conn, where, [*chunk, *args])
    unique = {(s.created_at, s.node, s.uuid, s.serial, s.pci_bus_id, s.index): s for s in out}
    return sorted(unique.values(), key=lambda s: s.created_at)


def sightings_with_figures(conn: sqlite3.Connection, *, since: str | None, node: str | None) -> list[SightingRow]:
    """Every sighting with a figure (of a node, from ``since`` on), oldest first."""
    where, args = _where(since=since, node=node, extra=("figures != '{}'",))
    return _sightings(conn, where, args)


# A GPU's key is its UUID, else its board serial: the rows of a key are those with that UUID, and those with no
# UUID and that serial.
_KEY_COLUMNS = (("gpu_uuid", "gpu_uuid IN ({})"), ("serial", "gpu_uuid IS NULL AND serial IN ({})"))


def _chunks(keys: Iterable[str]) -> list[list[str]]:
    ordered = sorted(keys)
    return [ordered[i : i + CHUNK] for i in range(0, len(ordered), CHUNK)]


def window_sightings(
    conn: sqlite3.Connection, keys: Iterable[str], window_days: float, *, since: str | None
) -> list[SightingRow]:
    """The sightings with figures of these GPUs (by key) that their drift windows can hold: from ``window_days``
    before the newest sighting of the chunk's oldest GPU (and from ``since``) on, oldest first. The fit narrows
    each GPU to its own window."""
    out: list[SightingRow] = []
    for chunk in _chunks(keys):
        holes = ", ".join("?" * len(chunk))
        for column, test in _KEY_COLUMNS:
            latest = conn.execute(
                f"SELECT MIN(newest) FROM (SELECT MAX(created_at) AS newest FROM observations"
                f" WHERE {test.format(holes)} GROUP BY {column})",
                chunk,
            ).fetchone()[0]
            if latest is None:
                continue
            opens = (utc_time(latest) - timedelta(days=window_days)).strftime(RFC3339)
            start = max(opens, since) if since is not None else opens
            where = f" WHERE {test.format(holes)} AND figures != '{{}}' AND created_at >= ?"
            out += _sightings(conn, where, [*chunk, start])
    out.sort(key=lambda s: s.created_at)
    return out


def remap_sightings(conn: sqlite3.Connection, *, since: str | None, node: str | None) -> list[SightingRow]:
    """The sightings with remapped-row counts (doctor's and snapshots'), oldest first: the LIKE is the partial
    index's own condition (observations_remaps), so SQLite reads that index, not every verify row."""
    where, args = _where(since=since, node=node, extra=("figures LIKE '%remapped_rows%'",))
    return _sightings(conn, where, args)


def xid_rows(conn: sqlite3.Connection, *, since: str | None, node: str | None) -> list[XidRow]:
    where, args = _where(since=since, node=node)
    rows = conn.execute(
        f"SELECT created_at, node, gpu_uuid, serial, pci_bus_id, code FROM xids{where} ORDER BY created_at", args
    )
    return [XidRow(r[0], r[1], r[2], r[3], r[4], int(r[5])) for r in rows]
