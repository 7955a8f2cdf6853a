"""The trends the ledger caches (schema v3): each GPU's Theil-Sen line of each figure over its drift window, fitted
when documents are added rather than at every `history show` (a year of a thousand 8-GPU nodes holds ~3 million
sightings; a month of them is ~240,000 to fit). The fitting is the judge's (checks/history/drift.fit_trends),
handed in by the command: this layer stores, it does not judge.

A document's GPUs with figures are marked stale when it is added (ingest.py); :func:`refresh` fits them again and
clears the mark in one transaction, so a writer that adds meanwhile waits and its GPUs stay marked. `show` fits a
GPU that is still stale itself (query.window_sightings), so the cache makes `show` fast and never wrong."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from rigcheck.ledger import query
from rigcheck.ledger.store import transaction
from rigcheck.model.history import SightingRow, TrendRow

Fit = Callable[[Sequence[SightingRow]], list[TrendRow]]

_COLUMNS = "gpu, figure, node, first_at, last_at, points, days, slope_per_day, start_level, end_level"


def cached(conn: sqlite3.Connection, *, gpu: str | None = None) -> list[TrendRow]:
    """The cached trends (of one GPU, by its UUID or serial key, where ``gpu`` is given)."""
    where, args = (" WHERE gpu = ?", [gpu]) if gpu is not None else ("", [])
    rows = conn.execute(f"SELECT {_COLUMNS} FROM trends{where}", args)
    return [TrendRow(*r) for r in rows]


def stale(conn: sqlite3.Connection) -> set[str]:
    """The GPUs whose cached trends documents added since have made out of date."""
    return {r[0] for r in conn.execute("SELECT gpu FROM stale_trends")}


def refresh(conn: sqlite3.Connection, fit: Fit, window_days: float) -> int:
    """Fit every stale GPU's trends again and store them, in one transaction; the number of GPUs fitted."""
    with transaction(conn):
        keys = stale(conn)
        if not keys:
            return 0
        fitted = fit(query.window_sightings(conn, keys, window_days, since=None))
        marks = sorted(keys)
        for start in range(0, len(marks), query.CHUNK):
            chunk = marks[start : start + query.CHUNK]
            holes = ", ".join("?" * len(chunk))
            conn.execute(f"DELETE FROM trends WHERE gpu IN ({holes})", chunk)
            conn.execute(f"DELETE FROM stale_trends WHERE gpu IN ({holes})", chunk)
        conn.executemany(
            f"INSERT INTO trends ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (t.gpu, t.figure, t.node, t.first_at, t.last_at, t.points, t.days, t.slope_per_day, t.start, t.end)
                for t in fitted
            ],
        )
    return len(keys)
