"""JSON Schemas of rigcheck's documents (the files in rigcheck/schemas/).

Every schema is generated from its model: the snapshot, the findings, and each command's document
(:data:`GENERATED`: schema id -> file and the model class, a :class:`rigcheck.model.document.Document`).
:func:`schema_files` gives their exact text; a test keeps the committed files current; ``tools/update_schemas.py``
rewrites them. tests/contracts/test_schemas.py validates each command's real output against its schema.

Every schema's ``$id`` is the document's ``"schema"`` string (``rigcheck.doctor/1``). A schema that embeds
another refers to it relative to its own ``$id``: ``{"$ref": "../rigcheck.snapshot/1"}`` resolves to
``rigcheck.snapshot/1``. Validate with every schema registered under its ``$id`` (see :func:`document_schemas`).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from rigcheck.model.document import EXTERNAL_REF
from rigcheck.model.finding import Finding
from rigcheck.model.snapshot import Snapshot

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

# Generated document schemas: schema id -> (file under rigcheck/schemas/, "module:Class" of its model, title).
GENERATED: dict[str, tuple[str, str, str]] = {
    "rigcheck.bench/1": ("bench-1.schema.json", "rigcheck.model.bench:BenchSchema", "rigcheck bench ... --json"),
    "rigcheck.plan/1": ("plan-1.schema.json", "rigcheck.model.plan:PlanDocument", "rigcheck plan --json"),
    "rigcheck.doctor/1": ("doctor-1.schema.json", "rigcheck.model.doctor:DoctorDocument", "rigcheck doctor --json"),
    "rigcheck.topo/1": ("topo-1.schema.json", "rigcheck.model.topo:TopoDocument", "rigcheck topo --json"),
    "rigcheck.power/1": ("power-1.schema.json", "rigcheck.model.power_thermal:PowerDocument", "rigcheck power --json"),
    "rigcheck.thermal/1": (
        "thermal-1.schema.json",
        "rigcheck.model.power_thermal:ThermalDocument",
        "rigcheck thermal --json",
    ),
    "rigcheck.power-plan/1": (
        "power-plan-1.schema.json",
        "rigcheck.model.power_plan:PowerPlanDocument",
        "rigcheck power plan --json",
    ),
    "rigcheck.nccl-log/1": (
        "nccl-log-1.schema.json",
        "rigcheck.model.nccl_log:NcclLogDocument",
        "rigcheck nccl-log --json",
    ),
    "rigcheck.burn/2": (
        "burn-2.schema.json",
        "rigcheck.model.burn:BurnDocument",
        "rigcheck burn --json / rigcheck burn --analyze FILE --json",
    ),
    "rigcheck.monitor/2": (
        "monitor-2.schema.json",
        "rigcheck.model.monitor:MonitorDocument",
        "rigcheck monitor --json",
    ),
    "rigcheck.verify/1": ("verify-1.schema.json", "rigcheck.model.verify:VerifyDocument", "rigcheck verify --json"),
    "rigcheck.verify-bands/1": (
        "verify-bands-1.schema.json",
        "rigcheck.model.verify:VerifyBandsDocument",
        "rigcheck verify --explain --json",
    ),
    "rigcheck.fleet/1": ("fleet-1.schema.json", "rigcheck.model.fleet:FleetDocument", "rigcheck fleet --json"),
    "rigcheck.history/1": (
        "history-1.schema.json",
        "rigcheck.model.history:HistoryDocument",
        "rigcheck history show --json",
    ),
    "rigcheck.trace/2": (
        "trace-2.schema.json",
        "rigcheck.model.trace:TraceHeaderDocument",
        "rigcheck trace header (monitor / burn --csv / --jsonl)",
    ),
}

# Generated schemas of files rigcheck writes rather than documents it prints (a trace's header line): they have
# no report module (rigcheck.report.render.REPORT_MODULES).
FILE_FORMATS: frozenset[str] = frozenset({"rigcheck.trace/2"})


def snapshot_schema() -> dict[str, Any]:
    schema = Snapshot.model_json_schema(by_alias=True, mode="serialization")
    schema["$schema"] = DRAFT
    schema["$id"] = "rigcheck.snapshot/1"
    return schema


def findings_schema() -> dict[str, Any]:
    schema = TypeAdapter(list[Finding]).json_schema(mode="serialization")
    schema["$schema"] = DRAFT
    schema["$id"] = "rigcheck.findings/1"
    return schema


def _external_refs(node: Any) -> Any:
    """The schema with each EXTERNAL_REF key renamed to "$ref" (see rigcheck.model.document)."""
    if isinstance(node, dict):
        return {("$ref" if k == EXTERNAL_REF else k): _external_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_external_refs(v) for v in node]
    return node


def generated_schema(schema_id: str) -> dict[str, Any]:
    """The JSON Schema of a typed document, from its model (``GENERATED``)."""
    _, target, title = GENERATED[schema_id]
    module_name, _, class_name = target.partition(":")
    model = getattr(importlib.import_module(module_name), class_name)
    schema: dict[str, Any] = _external_refs(model.model_json_schema(by_alias=True, mode="serialization"))
    schema["$schema"] = DRAFT
    schema["$id"] = schema_id
    schema["title"] = title
    return schema


def _text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_files() -> dict[str, str]:
    """The generated schemas: file name -> exact text, as committed under rigcheck/schemas/."""
    files = {
        "snapshot-1.schema.json": _text(snapshot_schema()),
        "findings-1.schema.json": _text(findings_schema()),
    }
    for schema_id, (name, _, _) in GENERATED.items():
        files[name] = _text(generated_schema(schema_id))
    return files


def document_schema(schema_id: str) -> dict[str, Any]:
    """The JSON Schema of the document whose ``"schema"`` is ``schema_id``; KeyError for an unknown one."""
    if schema_id == "rigcheck.snapshot/1":
        return snapshot_schema()
    if schema_id == "rigcheck.findings/1":
        return findings_schema()
    return generated_schema(schema_id)


def document_schemas() -> dict[str, dict[str, Any]]:
    """Every schema by its ``$id`` (register them all to validate: documents refer to one another)."""
    ids = ["rigcheck.snapshot/1", "rigcheck.findings/1", *GENERATED]
    return {schema_id: document_schema(schema_id) for schema_id in ids}
