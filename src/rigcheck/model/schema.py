"""JSON Schemas of rigcheck's documents (the files in rigcheck/schemas/).

Two kinds:
- generated from the model: the snapshot and the findings (:func:`schema_files` gives their exact text; a test
  keeps the committed files current; ``tools/update_schemas.py`` rewrites them);
- hand-written, for the documents built as plain dicts (doctor, topo, power, thermal, power plan, bench, nccl-log,
  plan, burn, the trace header, the monitor summary): the files are the source; :func:`document_schema` loads them, and
  tests/test_schemas.py validates each command's real output against its schema.

Every schema's ``$id`` is the document's ``"schema"`` string (``rigcheck.doctor/1``). A schema that embeds
another refers to it relative to its own ``$id``: ``{"$ref": "../rigcheck.snapshot/1"}`` resolves to
``rigcheck.snapshot/1``. Validate with every schema registered under its ``$id`` (see :func:`document_schemas`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from rigcheck.model.finding import Finding
from rigcheck.model.snapshot import Snapshot

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

# Hand-written schemas: document schema string -> file under rigcheck/schemas/.
HAND_WRITTEN: dict[str, str] = {
    "rigcheck.doctor/1": "doctor-1.schema.json",
    "rigcheck.topo/1": "topo-1.schema.json",
    "rigcheck.power/1": "power-1.schema.json",
    "rigcheck.thermal/1": "thermal-1.schema.json",
    "rigcheck.power-plan/1": "power-plan-1.schema.json",
    "rigcheck.bench/1": "bench-1.schema.json",
    "rigcheck.nccl-log/1": "nccl-log-1.schema.json",
    "rigcheck.plan/1": "plan-1.schema.json",
    "rigcheck.burn/1": "burn-1.schema.json",
    "rigcheck.trace/1": "trace-1.schema.json",
    "rigcheck.monitor/1": "monitor-1.schema.json",
}


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


def schema_files() -> dict[str, str]:
    """The generated schemas: file name -> exact text, as committed under rigcheck/schemas/."""
    return {
        "snapshot-1.schema.json": json.dumps(snapshot_schema(), indent=2, sort_keys=True) + "\n",
        "findings-1.schema.json": json.dumps(findings_schema(), indent=2, sort_keys=True) + "\n",
    }


def document_schema(schema_id: str) -> dict[str, Any]:
    """The JSON Schema of the document whose ``"schema"`` is ``schema_id``; KeyError for an unknown one."""
    if schema_id == "rigcheck.snapshot/1":
        return snapshot_schema()
    if schema_id == "rigcheck.findings/1":
        return findings_schema()
    data: dict[str, Any] = json.loads((SCHEMA_DIR / HAND_WRITTEN[schema_id]).read_text(encoding="utf-8"))
    return data


def document_schemas() -> dict[str, dict[str, Any]]:
    """Every schema by its ``$id``: the generated ones and the hand-written ones (register them all to validate)."""
    ids = ["rigcheck.snapshot/1", "rigcheck.findings/1", *HAND_WRITTEN]
    return {schema_id: document_schema(schema_id) for schema_id in ids}
