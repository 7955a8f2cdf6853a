"""`rigcheck verify --from DIR`: the rigcheck documents saved in a directory, read back as the judge's inputs.

Every ``*.json`` directly in the directory (not below it) is read, in name order:

- ``rigcheck.snapshot/1`` — the machine; a ``rigcheck.doctor/1`` document carries one too (its findings are not
  used: the caller runs the checks again, with its own site file). Without either, the snapshot a bench
  document embeds;
- ``rigcheck.bench/1`` — by ``benchmark``: matmul, membw, hostlink, p2p, allreduce; any other benchmark is
  ignored with a note;
- ``rigcheck.burn/2`` — the burn (a ``rigcheck.burn/1`` one too: the same with its power keys' old names);
- a DCGM diagnostic (`dcgmi diag -r N -j`, no "schema" key: known by its top-level key) — judged as
  ``dcgm.<test>`` checks (rigcheck.checks.verify.dcgm); one saved with other lines around its JSON is read
  with a note; so is the table dcgmi prints without ``-j``, saved as ``*.txt``, ``*.log`` or ``*.out`` (or under
  a ``.json`` name), read by rigcheck.readers.reference.dcgm_diag_text. A directory holding the diagnostic and no
  snapshot is
  the machine the diagnostic ran on (rigcheck.readers.reference.dcgm_machine).

Another rigcheck schema, or JSON of no rigcheck schema, is skipped with a note. What cannot be used stops the
read with one line of InputError naming the file: not JSON, a rigcheck document that fails validation, two
documents of the same measurement, no snapshot at all (nor a DCGM diagnostic), CPU and GPU results mixed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from rigcheck.errors import InputError
from rigcheck.inputs import MAX_INPUT_BYTES, input_limits, read_capped
from rigcheck.model.bench import (
    BENCH_SCHEMA,
    BenchBaseDocument,
    CollectiveDocument,
    HostlinkDocument,
    MatmulDocument,
    MembwDocument,
    P2PDocument,
    parse_bench,
)
from rigcheck.model.burn import BURN_SCHEMA, BURN_SCHEMA_V1, BurnDocument, burn_v1_upgraded
from rigcheck.model.dcgm import DcgmDiag
from rigcheck.model.doctor import DOCTOR_SCHEMA, DoctorDocument
from rigcheck.model.io import snapshot_from_dict
from rigcheck.model.snapshot import SNAPSHOT_SCHEMA, Snapshot
from rigcheck.model.verify import VERIFY_SCHEMA, VerifyDocument, VerifyInputs
from rigcheck.readers.reference.dcgm_diag import diag_in_text, is_dcgm_diag, parse_dcgm_diag
from rigcheck.readers.reference.dcgm_diag_text import looks_like_dcgm_text, parse_dcgm_diag_table
from rigcheck.readers.reference.dcgm_machine import machine_of

# The measurements a directory may hold, one document each.
JUDGED_BENCHMARKS = ("matmul", "membw", "hostlink", "p2p", "allreduce")


@dataclass
class _Found:
    """The documents found so far, each with the file it came from."""

    snapshot: tuple[Snapshot, str] | None = None
    doctor: tuple[Snapshot, str] | None = None
    bench: dict[str, tuple[BenchBaseDocument, str]] = field(default_factory=dict)
    burn: tuple[BurnDocument, str] | None = None
    dcgm: tuple[DcgmDiag, str] | None = None
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_json_document(path: Path, notes: list[str] | None = None) -> object:
    """The decoded JSON of one file; InputError naming it when it cannot be read or is not JSON. A `dcgmi diag
    -j` output saved with other lines around its JSON is read, with a line in ``notes`` saying so."""
    where = str(path)
    try:
        raw = read_capped(where, MAX_INPUT_BYTES)
    except PermissionError:
        raise InputError("permission denied", path=where) from None
    except OSError as exc:  # vanished since listed, EIO, a FIFO that refuses: still the user's file
        raise InputError(f"cannot read: {exc.strerror or exc}", path=where) from None
    if len(raw) > MAX_INPUT_BYTES:
        raise InputError(f"too large for a rigcheck document (over {MAX_INPUT_BYTES // 2**20} MiB)", path=where)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not JSON (not UTF-8 text)", path=where) from None
    if not text.strip():
        raise InputError("not JSON (the file is empty)", path=where)
    with input_limits(where):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            embedded = diag_in_text(text)
            if embedded is None:
                raise InputError(f"not JSON: {exc.msg}", path=where, line=exc.lineno) from None
    if notes is not None:
        notes.append(embedded.note(path.name))
    return embedded.data


def _invalid(exc: ValidationError, schema: str, path: Path) -> InputError:
    first = exc.errors()[0]
    at = ".".join(str(p) for p in first["loc"]) or "(top)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return InputError(f"not a valid {schema} document: {at}: {first['msg']}{more}", path=str(path))


def validate_document(model: type[BaseModel], data: object, schema: str, path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc, schema, path) from None


def _once(held: tuple[Any, str] | None, what: str, path: Path) -> None:
    if held is not None:
        raise InputError(f"two {what} documents: {held[1]} and {path.name}; keep one", path=str(path.parent))


def _take(found: _Found, path: Path, data: object) -> None:
    """File one decoded document under what it measures."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema is None and is_dcgm_diag(data):
        diag = parse_dcgm_diag(data, path=str(path))
        _once(found.dcgm, "DCGM diagnostic", path)
        found.dcgm = (diag, path.name)
        found.files.append(path.name)
        return
    if not isinstance(schema, str) or not schema.startswith("rigcheck."):
        found.notes.append(f"{path.name}: not a rigcheck document, skipped")
        return
    name = path.name
    if schema == SNAPSHOT_SCHEMA:
        snapshot = snapshot_from_dict(data, path=str(path))
        _once(found.snapshot, "snapshot", path)
        found.snapshot = (snapshot, name)
    elif schema == DOCTOR_SCHEMA:
        doctor: DoctorDocument = validate_document(DoctorDocument, data, schema, path)
        _once(found.doctor, "doctor", path)
        found.doctor = (doctor.snapshot, name)
    elif schema in (BURN_SCHEMA, BURN_SCHEMA_V1):
        if schema == BURN_SCHEMA_V1 and isinstance(data, dict):
            data = burn_v1_upgraded(data)
        burn: BurnDocument = validate_document(BurnDocument, data, schema, path)
        _once(found.burn, "burn", path)
        found.burn = (burn, name)
    elif schema == BENCH_SCHEMA:
        try:
            doc = parse_bench(data)
        except ValidationError as exc:
            raise _invalid(exc, schema, path) from None
        if not isinstance(doc, BenchBaseDocument) or doc.benchmark not in JUDGED_BENCHMARKS:
            found.notes.append(f"{name}: bench {doc.benchmark} is not one verify judges, ignored")
            return
        _once(found.bench.get(doc.benchmark), f"bench {doc.benchmark}", path)
        found.bench[doc.benchmark] = (doc, name)
    else:
        found.notes.append(f"{name}: {schema} is not a document verify judges, skipped")
        return
    found.files.append(name)


def _on_cpu(doc: BenchBaseDocument) -> bool:
    """Measured on CPU processes: gloo, or rows without a GPU."""
    return doc.backend == "gloo" or any(getattr(r, "gpu", 0) is None for r in doc.results)


def _cpu(found: _Found, directory: Path) -> bool:
    """Whether the bench documents ran on CPU; InputError when some did and some did not."""
    kinds = {name: _on_cpu(doc) for doc, name in found.bench.values()}
    if len(set(kinds.values())) > 1:
        cpu = next(n for n, c in kinds.items() if c)
        gpu = next(n for n, c in kinds.items() if not c)
        raise InputError(f"CPU and GPU results mixed: {cpu} ran on CPU, {gpu} on GPUs", path=str(directory))
    return any(kinds.values())


def _snapshot(found: _Found, directory: Path, seen: int) -> Snapshot:
    """The snapshot file's, else the doctor document's, else the first bench document's that embeds one."""
    if found.snapshot is not None:
        if found.doctor is not None:
            found.notes.append(f"{found.doctor[1]}: its snapshot is not used ({found.snapshot[1]} is)")
        return found.snapshot[0]
    if found.doctor is not None:
        return found.doctor[0]
    for doc, name in sorted(found.bench.values(), key=lambda held: held[1]):
        if doc.snapshot is not None:
            found.notes.append(f"the machine is the snapshot embedded in {name} (no snapshot file)")
            return doc.snapshot
    if not seen:
        raise InputError("no rigcheck documents here (no *.json file, no saved dcgmi diag output)", path=str(directory))
    if found.dcgm is not None:  # the GPUs are those the diagnostic ran on (rigcheck.readers.reference.dcgm_machine)
        snapshot, notes = machine_of(*found.dcgm)
        found.notes[:0] = notes
        return snapshot
    raise InputError(
        f"no snapshot: none of its {seen} JSON files is a rigcheck snapshot or doctor document, and no bench "
        "document embeds one (save `rigcheck snapshot --json` beside them)",
        path=str(directory),
    )


def _bench(found: _Found, benchmark: str, kind: type[BenchBaseDocument]) -> Any:
    held = found.bench.get(benchmark)
    return held[0] if held is not None and isinstance(held[0], kind) else None


def json_files(directory: Path, holding: str) -> list[Path]:
    """The ``*.json`` files of a ``--from`` directory, sorted; InputError naming it when it is missing, is not a
    directory or cannot be listed (``holding``: what the directory is for, said in the error)."""
    where = str(directory)
    if not directory.exists():
        raise InputError("no such directory", path=where)
    if not directory.is_dir():
        raise InputError(f"not a directory (--from takes the directory holding {holding})", path=where)
    try:
        return sorted(p for p in directory.glob("*.json") if p.is_file())
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", path=where) from None


# Where a `dcgmi diag` table (dcgmi without -j) is saved: `dcgmi diag -r 3 > diag.txt`, `| tee dcgmi-r3.log`.
TABLE_SUFFIXES = (".txt", ".log", ".out")


def _dcgm_table(path: Path) -> DcgmDiag | None:
    """The diagnostic of a `dcgmi diag` table saved in ``path`` (also under a .json name), None when the file is
    not one; InputError saying how to save the JSON when it is one that cannot be read."""
    try:
        raw = read_capped(str(path), MAX_INPUT_BYTES)
    except OSError:
        return None  # read_json_document says why, for a .json file; another file is simply not a table
    text = raw.decode("utf-8-sig", errors="replace")
    if text.lstrip().startswith("{") or not looks_like_dcgm_text(text):
        return None
    return parse_dcgm_diag_table(text, path=str(path))


def _take_table(found: _Found, path: Path, diag: DcgmDiag) -> None:
    _once(found.dcgm, "DCGM diagnostic", path)
    found.dcgm = (diag, path.name)
    found.files.append(path.name)
    found.notes.append(
        f"{path.name}: the `dcgmi diag` table was read; it holds no DCGM error ids, and a test's info lines only "
        "with -v (`dcgmi diag -r 3 -j > diag.json` saves both)"
    )


def load_saved(directory: Path) -> VerifyInputs:
    """The documents saved in ``directory`` as the judge's inputs (``findings`` left empty: the caller runs the
    checks); ``files`` names the documents used, ``notes`` the files skipped or ignored. A `dcgmi diag` table
    (*.txt, *.log, *.out, or a *.json that is the table) is read as the DCGM diagnostic."""
    paths = json_files(directory, "the saved documents")
    tables = sorted(p for suffix in TABLE_SUFFIXES for p in directory.glob(f"*{suffix}") if p.is_file())
    found = _Found()
    for path in paths:
        table = _dcgm_table(path)
        if table is not None:
            _take_table(found, path, table)
        else:
            _take(found, path, read_json_document(path, found.notes))
    for path in tables:
        if (table := _dcgm_table(path)) is not None:
            _take_table(found, path, table)
    snapshot = _snapshot(found, directory, len(paths) + sum(p.name in found.files for p in tables))
    return VerifyInputs(
        snapshot=snapshot,
        findings=[],
        cpu=_cpu(found, directory),
        matmul=_bench(found, "matmul", MatmulDocument),
        membw=_bench(found, "membw", MembwDocument),
        hostlink=_bench(found, "hostlink", HostlinkDocument),
        p2p=_bench(found, "p2p", P2PDocument),
        allreduce=_bench(found, "allreduce", CollectiveDocument),
        burn=found.burn[0] if found.burn is not None else None,
        dcgm=found.dcgm[0] if found.dcgm is not None else None,
        dcgm_file=found.dcgm[1] if found.dcgm is not None else None,
        files=found.files,
        notes=found.notes,
    )


def load_baseline(path: Path) -> VerifyDocument:
    """An earlier `verify --json` (``--baseline FILE``); anything else is one InputError line naming the file."""
    data = read_json_document(path)
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != VERIFY_SCHEMA:
        what = f"a {schema} document" if isinstance(schema, str) else "not a rigcheck document"
        raise InputError(
            f"{what}; --baseline takes a `rigcheck verify --json` output ({VERIFY_SCHEMA})", path=str(path)
        )
    doc: VerifyDocument = validate_document(VerifyDocument, data, VERIFY_SCHEMA, path)
    return doc
