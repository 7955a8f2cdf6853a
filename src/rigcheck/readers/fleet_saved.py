"""`rigcheck fleet --from DIR`: one saved document per node, collected by any means, read back as node reports.

Every ``*.json`` directly in the directory (not below it) is read, in name order, and is one node:

- ``rigcheck.snapshot/1`` (`rigcheck snapshot --json`), or the snapshot a ``rigcheck.doctor/1`` document
  carries: the node's machine. No check runs here (the probe layer is below the checks): ``findings`` is left
  empty, and the caller runs the checks on each snapshot;
- ``rigcheck.verify/1`` (`rigcheck verify --json`): the node's figures;
- a ``rigcheck.bench/1`` collective read from a multi-node nccl-tests output (`rigcheck bench allreduce --from
  all_reduce_perf.txt --json`): not a node, the fleet's collective (one per operation). A collective measured
  on one machine (a rigcheck run, or nccl-tests on one host) says nothing about the fleet and is refused.

The node's name is the snapshot's hostname, else the verify document's ``host``, else the file's stem. A
snapshot and a verify document of one node make one node (its machine and its figures); two of the same kind
for one node are an error naming both files. What cannot be used stops the read with one InputError line
naming the file: not a directory, no ``*.json`` in it, a file that is not JSON or is too large (the caps of
readers/saved.py), a document that fails validation, JSON of no rigcheck schema or of another one (a fleet
directory holds node documents only: a stray file is refused, never silently left out of the fleet).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rigcheck.errors import InputError
from rigcheck.model.bench import BENCH_SCHEMA, BenchSchema, CollectiveDocument
from rigcheck.model.doctor import DOCTOR_SCHEMA, DoctorDocument
from rigcheck.model.fleet import NodeReport
from rigcheck.model.io import snapshot_from_dict
from rigcheck.model.snapshot import SNAPSHOT_SCHEMA, Snapshot
from rigcheck.model.verify import VERIFY_SCHEMA, VerifyDocument
from rigcheck.readers.saved import json_files, read_json_document, validate_document

ACCEPTED = f"{SNAPSHOT_SCHEMA}, {DOCTOR_SCHEMA} or {VERIFY_SCHEMA}"
_COLLECTIVE_HINT = "a multi-node nccl-tests output, saved with `rigcheck bench allreduce --from FILE --json`"


@dataclass(frozen=True)
class SavedCollective:
    """A collective over several nodes, read from a file: the document and the file's name."""

    document: CollectiveDocument
    file: str


@dataclass(frozen=True)
class SavedFleet:
    """What a ``fleet --from`` directory holds: the nodes, in the order of their first file's name, and the
    collectives over them (at most one per operation)."""

    nodes: list[NodeReport]
    collectives: list[SavedCollective]


@dataclass
class _Node:
    """One node's documents so far, each with the file it came from."""

    snapshot: tuple[Snapshot, Path] | None = None
    verify: tuple[VerifyDocument, Path] | None = None


def _host(snapshot: Snapshot | None, verify: VerifyDocument | None) -> str | None:
    """The host name the document carries, if any."""
    hostname = snapshot.host.hostname if snapshot is not None else None
    if hostname is not None and hostname.strip():
        return hostname.strip()
    if verify is not None and verify.host is not None and verify.host.strip():
        return verify.host.strip()
    return None


def _name(snapshot: Snapshot | None, verify: VerifyDocument | None, path: Path) -> str:
    return _host(snapshot, verify) or path.stem


def _read(path: Path) -> tuple[Snapshot | None, VerifyDocument | None] | CollectiveDocument:
    """The file's snapshot or verify document, or a collective over several nodes; InputError naming it for
    anything else."""
    data = read_json_document(path)
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == BENCH_SCHEMA:
        return _collective(data, path)
    if schema == SNAPSHOT_SCHEMA:
        return snapshot_from_dict(data, path=str(path)), None
    if schema == DOCTOR_SCHEMA:
        doctor: DoctorDocument = validate_document(DoctorDocument, data, DOCTOR_SCHEMA, path)
        return doctor.snapshot, None
    if schema == VERIFY_SCHEMA:
        verify: VerifyDocument = validate_document(VerifyDocument, data, VERIFY_SCHEMA, path)
        return None, verify
    what = f"a {schema} document" if isinstance(schema, str) else "not a rigcheck document"
    raise InputError(f"{what}; a fleet directory holds one {ACCEPTED} per node", path=str(path))


def _collective(data: object, path: Path) -> CollectiveDocument:
    """A saved collective that ran over several hosts; InputError naming the file for any other bench document."""
    schema: BenchSchema = validate_document(BenchSchema, data, BENCH_SCHEMA, path)
    doc = schema.root
    if not isinstance(doc, CollectiveDocument):
        raise InputError(
            f"a bench {doc.benchmark} document, which measures one machine; a fleet directory holds one {ACCEPTED} "
            f"per node, and {_COLLECTIVE_HINT}",
            path=str(path),
        )
    hosts = doc.source.hosts if doc.source is not None else []
    if doc.source is None or len(hosts) == 1:
        where = f"on one host ({hosts[0]})" if hosts else "by rigcheck on one machine"
        raise InputError(
            f"a bench {doc.op} measured {where}, which says nothing about the fleet; save {_COLLECTIVE_HINT}",
            path=str(path),
        )
    return doc


def _twice(kind: str, name: str, first: Path, second: Path, directory: Path) -> InputError:
    return InputError(
        f"two {kind} documents for node {name}: {first.name} and {second.name}; keep one per node",
        path=str(directory),
    )


def _shared_names(read: list[tuple[Path, Snapshot | None, VerifyDocument | None]]) -> set[str]:
    """Host names held by more than one document of the same kind."""
    snapshots: Counter[str] = Counter()
    verifies: Counter[str] = Counter()
    for _, snapshot, verify in read:
        host = _host(snapshot, verify)
        if host is not None:  # a document without one is named by its file already
            (snapshots if snapshot is not None else verifies)[host] += 1
    return {name for counts in (snapshots, verifies) for name, n in counts.items() if n > 1}


def load_fleet_dir(directory: Path) -> SavedFleet:
    """The nodes saved in ``directory``, in the order of their first file's name (``findings`` empty: the caller
    runs the checks on each snapshot), and the collectives over them."""
    paths = json_files(directory, "one document per node")
    if not paths:
        raise InputError(f"no *.json file here: save one {ACCEPTED} per node in it", path=str(directory))
    read: list[tuple[Path, Snapshot | None, VerifyDocument | None]] = []
    collectives: dict[str, SavedCollective] = {}
    for path in paths:
        got = _read(path)
        if isinstance(got, CollectiveDocument):
            held = collectives.get(got.op)
            if held is not None:
                raise InputError(
                    f"two {got.op} collectives: {held.file} and {path.name}; keep one per operation",
                    path=str(directory),
                )
            collectives[got.op] = SavedCollective(got, path.name)
        else:
            read.append((path, *got))
    if not read:
        raise InputError(f"no node document here: save one {ACCEPTED} per node in it", path=str(directory))
    # A host name that several snapshots (or several verify documents) carry cannot tell their nodes apart — copies
    # of one image, or a name the files were made with: those nodes are named by their files instead.
    shared = _shared_names(read)
    nodes: dict[str, _Node] = {}
    for path, snapshot, verify in read:
        name = _name(snapshot, verify, path)
        if name in shared:
            name = path.stem
        node = nodes.setdefault(name, _Node())
        if snapshot is not None:
            if node.snapshot is not None:
                raise _twice("snapshot", name, node.snapshot[1], path, directory)
            node.snapshot = (snapshot, path)
        if verify is not None:
            if node.verify is not None:
                raise _twice("verify", name, node.verify[1], path, directory)
            node.verify = (verify, path)
    reports: list[NodeReport] = []
    for name, node in nodes.items():
        files = [held[1].name for held in (node.snapshot, node.verify) if held is not None]
        reports.append(
            NodeReport(
                name=name,
                node_rank=None,
                ranks=[],
                snapshot=node.snapshot[0] if node.snapshot is not None else None,
                findings=[],
                verify=node.verify[0] if node.verify is not None else None,
                versions={},
                source=" + ".join(str(directory / f) for f in files),
            )
        )
    return SavedFleet(reports, list(collectives.values()))
