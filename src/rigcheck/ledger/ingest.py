"""Adding documents to the ledger: files or folders (every ``*.json`` under them), each document once (the
sha256 of its bytes is its key: adding it again changes nothing).

What is kept of a document, besides its key, schema, time and path: verify's node verdict and, per GPU, its
UUID, PCI bus id, index, verdict and figures (check id -> value); doctor's and a snapshot's GPUs (UUID, board
serial where the document has one, bus id, index, remapped-row counts and remapping failure as figures), the Xid
codes of their kernel log on each GPU (the xids table) and doctor's outcome as the node's verdict; a fleet's verdict
on each of its nodes, as a run of that node (a row part_of the fleet document); a live burn's GPUs (UUID, bus id)
with their corrected-ECC rate under load as the ``counters`` figure. The other rigcheck documents (bench, ...) are
kept as documents. A document's ``created_at`` is its own where it has
one (a snapshot's, doctor's embedded snapshot's), else the file's modification time, both as RFC 3339 UTC.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import sqlite3
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rigcheck.errors import InputError
from rigcheck.facts.xid import bus_key
from rigcheck.ledger import query
from rigcheck.ledger.store import transaction
from rigcheck.model.document import RFC3339, utc_now, utc_time

BATCH = 1000  # documents per transaction: a reader sees whole documents, a writer does not hold the lock for long
PARALLEL_FROM = 2000  # files: below, the workers' start and the pickling cost more than they save
CHUNK = 250  # files a worker task reads
MAX_WORKERS = 8


@dataclass(frozen=True)
class Sighting:
    uuid: str | None
    serial: str | None
    pci_bus_id: str | None
    index: int | None
    verdict: str | None
    figures: str  # JSON: check id -> value (made where the document is read: in a worker, in parallel)

    @property
    def key(self) -> str | None:
        """The GPU across documents: its UUID, else its board serial (as the ledger's rows, model/history)."""
        return self.uuid or self.serial


@dataclass(frozen=True)
class Extract:
    """What the ledger keeps of one document."""

    schema: str
    created_at: str | None  # the document's own, normalised; None: it has none
    node: str | None
    verdict: str | None
    sightings: list[Sighting]
    xids: list[tuple[Sighting, int]] = field(default_factory=list)  # (the GPU, the Xid code) per kernel-log line
    runs: list[tuple[str, str]] = field(default_factory=list)  # a fleet's (node, verdict), each a run of its own


@dataclass
class Added:
    new: int = 0
    known: int = 0
    not_rigcheck: list[str] = field(default_factory=list)  # the paths, each with why
    from_mtime: int = 0  # new documents whose created_at is their file's modification time
    from_name: int = 0  # ... a date in their file's (or folder's) name


def document_files(paths: Sequence[Path]) -> list[Path]:
    """The files to read: each file given, and every ``*.json`` under each folder given (sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise InputError("no such file or folder", path=str(path))
    return files


def rfc3339(value: object) -> str | None:
    """``value`` as RFC 3339 UTC ('2025-01-31T00:00:00Z') when it is a time with a zone, else None."""
    if not isinstance(value, str):
        return None
    try:
        when = utc_time(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None  # a time without its zone is not RFC 3339: the file's time is surer
    return when.astimezone(timezone.utc).strftime(RFC3339)


# A date, and maybe a time, in a file or folder name: verify-2025-01-31.json, 20250131T060000Z/node-05.json.
_NAMED = re.compile(
    r"(?<!\d)(20\d\d)-?([01]\d)-?([0-3]\d)(?:[T_]([0-2]\d):?([0-5]\d):?([0-5]\d)Z?)?(?!\d)", re.IGNORECASE
)


def named_time(path: Path, mtime: str | None) -> str | None:
    """The time a date in the file's name (else its folder's, else the folder above) gives, as RFC 3339 UTC; a
    date alone is the file's modification time where that falls on the same day (a copy's time does not), else
    its midnight UTC. None: no valid date there. A name's time is read as UTC."""
    for part in (path.name, path.parent.name, path.parent.parent.name):
        for match in _NAMED.finditer(part):
            year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
            try:
                when = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
            except ValueError:
                continue  # 20251399: not a date
            if match.group(4) is None and mtime is not None and mtime[:10] == when.strftime("%Y-%m-%d"):
                return mtime
            return when.strftime(RFC3339)
    return None


def mtime_utc(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime(RFC3339)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _figures(checks: object) -> dict[str, float]:
    out: dict[str, float] = {}
    for check in _list(checks):
        value = _dict(check).get("value")
        cid = _text(_dict(check).get("id"))
        if cid is not None and isinstance(value, int | float) and not isinstance(value, bool):
            out[cid] = float(value)
    return out


def _gpu(gpu: object, verdict: str | None, figures: dict[str, float]) -> Sighting:
    g = _dict(gpu)
    serial = _text(g.get("serial")) or _text(g.get("board_serial"))
    index, bus = _int(g.get("index")), _text(g.get("pci_bus_id"))
    return Sighting(_text(g.get("uuid")), serial, bus, index, verdict, json.dumps(figures))


REMAP_KEYS = ("remapped_rows_correctable", "remapped_rows_uncorrectable")


def _memory_figures(gpu: object) -> dict[str, float]:
    """A snapshot GPU's remapped-row counts and remapping failure (1.0), where read: history's escalation."""
    g = _dict(gpu)
    out = {k: float(g[k]) for k in REMAP_KEYS if _int(g.get(k)) is not None}
    if isinstance(g.get("remapped_rows_failure"), bool):
        out["remapped_rows_failure"] = float(g["remapped_rows_failure"])
    return out


def _snapshot_gpus(snap: dict[str, Any]) -> list[Sighting]:
    return [_gpu(g, None, _memory_figures(g)) for g in _list(snap.get("gpus"))]


def _snapshot_xids(snap: dict[str, Any], gpus: list[Sighting]) -> list[tuple[Sighting, int]]:
    """Each Xid line of the snapshot's kernel log on a GPU it holds (matched by bus id, as the doctor does)."""
    by_bus = {bus_key(s.pci_bus_id): s for s in gpus if s.pci_bus_id}
    out = []
    for event in _list(snap.get("kernel_events")):
        e = _dict(event)
        code, bus = _int(e.get("code")), _text(e.get("pci_bus_id"))
        if e.get("kind") == "xid" and code is not None and bus is not None and (gpu := by_bus.get(bus_key(bus))):
            out.append((gpu, code))
    return out


def _burn_gpus(doc: dict[str, Any]) -> list[Sighting]:
    """A live burn's GPUs (those with their UUID: `--analyze` of a trace has none) with their corrected-ECC rate
    under load as the ``counters`` figure, the rate verify's counters check reports: one series for the drift
    rule. A burn judges no GPU pass or fail: no verdict."""
    out = []
    for gpu in _list(doc.get("gpus")):
        g = _dict(gpu)
        rate = g.get("ecc_corrected_per_s")
        figures = {"counters": float(rate)} if isinstance(rate, int | float) and not isinstance(rate, bool) else {}
        if _text(g.get("uuid")):
            out.append(_gpu(g, None, figures))
    return out


def extract(doc: dict[str, Any]) -> Extract:
    """What the ledger keeps of a rigcheck document (its schema starts with 'rigcheck.')."""
    schema = str(doc["schema"])
    own_time = rfc3339(doc.get("created_at"))
    if schema == "rigcheck.verify/1":
        gpus = [
            _gpu(g, _text(_dict(g).get("verdict")), _figures(_dict(g).get("checks"))) for g in _list(doc.get("gpus"))
        ]
        return Extract(schema, own_time, _text(doc.get("host")), _text(doc.get("verdict")), gpus)
    if schema == "rigcheck.doctor/1":
        snap = _dict(doc.get("snapshot"))
        code = doc.get("exit_code")
        verdict = {0: "pass", 1: "fail"}.get(code) if isinstance(code, int) else None
        node = _text(_dict(snap.get("host")).get("hostname"))
        gpus = _snapshot_gpus(snap)
        when = own_time or rfc3339(snap.get("created_at"))
        return Extract(schema, when, node, verdict, gpus, _snapshot_xids(snap, gpus))
    if schema == "rigcheck.snapshot/1":
        gpus = _snapshot_gpus(doc)
        node = _text(_dict(doc.get("host")).get("hostname"))
        return Extract(schema, own_time, node, None, gpus, _snapshot_xids(doc, gpus))
    if schema == "rigcheck.burn/2":
        return Extract(schema, own_time, _text(doc.get("host")), None, _burn_gpus(doc))
    if schema == "rigcheck.fleet/1":
        nodes = [_dict(n) for n in _list(doc.get("nodes"))]
        runs = [
            (name, verdict) for n in nodes if (name := _text(n.get("name"))) and (verdict := _text(n.get("verdict")))
        ]
        return Extract(schema, own_time, None, _text(doc.get("verdict")), [], runs=runs)
    return Extract(schema, own_time, _text(doc.get("host")), None, [])


@dataclass(frozen=True)
class Prepared:
    """One file read, hashed and extracted, ready to write: what a worker process hands the writer."""

    digest: str
    source: str
    extract: Extract | None  # None: not a rigcheck document
    why: str  # why not, for None; for an unreadable file, what the error said
    mtime: str | None  # the file's modification time, the date of a document without its own (None: no file)
    named: str | None = None  # the time a date in its name gives (named_time), before the modification time
    unreadable: bool = False


def parse(data: bytes) -> tuple[str, dict[str, Any] | None, str]:
    """The bytes' content hash, their rigcheck document (None: not one) and, for None, why."""
    digest = hashlib.sha256(data).hexdigest()
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return digest, None, "not JSON"
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("rigcheck."):
        return digest, None, "no rigcheck schema"
    return digest, doc, ""


def prepare(path: Path) -> Prepared:
    """Read, hash and extract one file (in a worker process where add_files runs them in parallel)."""
    try:
        data = path.read_bytes()
        mtime = mtime_utc(path)
    except OSError as exc:
        return Prepared("", str(path), None, f"cannot read: {exc.strerror or exc}", None, unreadable=True)
    digest, doc, why = parse(data)
    return Prepared(digest, str(path), None if doc is None else extract(doc), why, mtime, named_time(path, mtime))


def prepare_many(paths: Sequence[Path]) -> list[Prepared]:
    return [prepare(p) for p in paths]


def default_workers(files: int) -> int:
    """Worker processes for ``files`` files: none (this process) under PARALLEL_FROM, else one per usable core
    (the writer, mostly inside SQLite, shares them): parsing JSON is most of an add's time."""
    if files < PARALLEL_FROM:
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS) if cores > 1 else 0


def _prepared(files: list[Path], workers: int) -> Iterator[Prepared]:
    """Each file prepared, in order: here, or in ``workers`` processes with at most 2 x workers chunks in flight
    (the writer's lag bounds the memory, not the number of files)."""
    if workers <= 0:
        yield from map(prepare, files)
        return
    chunks = [files[i : i + CHUNK] for i in range(0, len(files), CHUNK)]
    # fork where there is one: a worker starts in milliseconds and does not import the caller's __main__ again
    # (spawn would, and a script without a __main__ guard would run twice); it only reads files.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))
    try:
        todo, flight = deque(chunks), deque[Future[list[Prepared]]]()
        while todo and len(flight) < 2 * workers:
            flight.append(pool.submit(prepare_many, todo.popleft()))
        while flight:
            done = flight.popleft().result()
            if todo:
                flight.append(pool.submit(prepare_many, todo.popleft()))
            yield from done
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def add_files(
    conn: sqlite3.Connection,
    files: Sequence[Path],
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
) -> Added:
    """Add each file's document unless the ledger has it already; a batch of BATCH documents a transaction.
    ``progress(done, total)`` after each batch; ``workers``: processes that read and parse (default_workers)."""
    added = Added()
    files = list(files)
    pending: list[Prepared] = []
    seen = 0
    for item in _prepared(files, default_workers(len(files)) if workers is None else workers):
        seen += 1
        if item.unreadable:
            raise InputError(item.why, path=item.source)
        if item.extract is None:
            added.not_rigcheck.append(f"{item.source}: {item.why}")
            continue
        pending.append(item)
        if len(pending) >= BATCH:
            _write(conn, pending, added)
            pending.clear()
            if progress is not None:
                progress(seen, len(files))
    if pending:
        _write(conn, pending, added)
    return added


def add_document(conn: sqlite3.Connection, data: bytes, source: str) -> Added:
    """One document a command just printed (`verify --ledger`): dated by the document, else now (its run's end)."""
    added = Added()
    digest, doc, why = parse(data)
    if doc is None:
        added.not_rigcheck.append(f"{source}: {why}")
        return added
    _write(conn, [Prepared(digest, source, extract(doc), "", None)], added)
    return added


def _write(conn: sqlite3.Connection, batch: Sequence[Prepared], added: Added) -> None:
    """Each document the ledger lacks, in one transaction (a statement per table for the whole batch); one from a
    file without its own date is dated by the file's modification time, one from a command (no file) by now. Its
    GPUs with figures are marked for their trends to be fitted again (stale_trends)."""
    stamp = utc_now()
    with transaction(conn):
        digests = sorted({item.digest for item in batch})
        known: set[str] = set()
        for start in range(0, len(digests), query.CHUNK):
            chunk = digests[start : start + query.CHUNK]
            holes = ", ".join("?" * len(chunk))
            known |= {r[0] for r in conn.execute(f"SELECT hash FROM documents WHERE hash IN ({holes})", chunk)}
        documents: list[tuple[str | None, ...]] = []
        observations, xids, stale = [], [], set()
        for item in batch:
            ex = item.extract
            if ex is None or item.digest in known:
                added.known += ex is not None
                continue
            known.add(item.digest)  # the same bytes twice in one batch are one document
            if ex.created_at:
                created, created_from = ex.created_at, "document"
            elif item.named is not None:
                created, created_from = item.named, "name"
            elif item.mtime is not None:
                created, created_from = item.mtime, "mtime"
            else:
                created, created_from = stamp, "recorded"
            documents.append(
                (item.digest, ex.schema, created, created_from, ex.node, ex.verdict, item.source, stamp, None)
            )
            documents += [
                (
                    f"{item.digest}/{node}",
                    ex.schema,
                    created,
                    created_from,
                    node,
                    verdict,
                    item.source,
                    stamp,
                    item.digest,
                )
                for node, verdict in ex.runs
            ]
            observations += [
                (item.digest, created, ex.node, s.uuid, s.serial, s.pci_bus_id, s.index, s.verdict, s.figures)
                for s in ex.sightings
            ]
            xids += [(item.digest, created, ex.node, s.uuid, s.serial, s.pci_bus_id, code) for s, code in ex.xids]
            stale |= {s.key for s in ex.sightings if s.figures != "{}" and s.key}
            added.new += 1
            added.from_mtime += created_from == "mtime"
            added.from_name += created_from == "name"
        conn.executemany(
            "INSERT INTO documents (hash, schema, created_at, created_from, node, verdict, source, added_at, part_of)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            documents,
        )
        conn.executemany(
            "INSERT INTO observations (document, created_at, node, gpu_uuid, serial, pci_bus_id, gpu_index, verdict,"
            " figures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            observations,
        )
        conn.executemany(
            "INSERT INTO xids (document, created_at, node, gpu_uuid, serial, pci_bus_id, code)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            xids,
        )
        conn.executemany("INSERT OR IGNORE INTO stale_trends (gpu) VALUES (?)", [(k,) for k in sorted(stale)])
