"""JSON Schemas of rigcheck's documents, generated from the model (the files in rigcheck/schemas/ are these)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from rigcheck.model.finding import Finding
from rigcheck.model.snapshot import Snapshot

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def snapshot_schema() -> dict[str, Any]:
    schema = Snapshot.model_json_schema(by_alias=True, mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "rigcheck.snapshot/1"
    return schema


def findings_schema() -> dict[str, Any]:
    schema = TypeAdapter(list[Finding]).json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "rigcheck.findings/1"
    return schema


def schema_files() -> dict[str, str]:
    """File name -> exact text, as committed under rigcheck/schemas/."""
    return {
        "snapshot-1.schema.json": json.dumps(snapshot_schema(), indent=2, sort_keys=True) + "\n",
        "findings-1.schema.json": json.dumps(findings_schema(), indent=2, sort_keys=True) + "\n",
    }
