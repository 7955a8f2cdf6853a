"""The model: JSON round trips, validation on the way in, and the committed JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from rigcheck.errors import SnapshotError
from rigcheck.model import (
    Finding,
    Gpu,
    Missing,
    Severity,
    Snapshot,
    snapshot_from_json,
    snapshot_to_dict,
    snapshot_to_json,
)
from rigcheck.model.schema import SCHEMA_DIR, findings_schema, schema_files, snapshot_schema


def _snapshot() -> Snapshot:
    gpu = Gpu(index=0, name="NVIDIA GeForce RTX 3090", power_limit_w=350.0, clock_event_reasons_active=["idle"])
    gpu.mark_missing("power_draw_w", Missing.NOT_SUPPORTED)
    return Snapshot(gpus=[gpu])


def test_round_trip_keeps_values_and_reasons() -> None:
    snap = _snapshot()
    back = snapshot_from_json(snapshot_to_json(snap))
    assert back == snap
    assert back.gpus[0].missing == {"power_draw_w": Missing.NOT_SUPPORTED}
    data = snapshot_to_dict(back)
    assert data["schema"] == "rigcheck.snapshot/1"
    assert data["gpus"][0]["missing"] == {"power_draw_w": "not_supported"}
    assert data["gpus"][0]["power_draw_w"] is None


def test_mark_missing_rejects_unknown_field() -> None:
    with pytest.raises(KeyError):
        Gpu(index=0).mark_missing("watts", Missing.ERROR)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"schema": "rigcheck.snapshot/2", "gpus": []}', "'rigcheck.snapshot/2' is not supported"),
        ('{"gpus": []}', "not a rigcheck snapshot"),
        ("[1, 2]", "not an object"),
        ('{"schema": "rigcheck.snapshot/1", "gpus": [{"name": "x"}]}', "gpus.0.index"),
        ('{"schema": "rigcheck.snapshot/1", "gpus": "many"}', "invalid snapshot at gpus"),
        ('{"schema": "rigcheck.snapshot/1", "surprise": 1}', "surprise"),
        ('{"schema": "rigcheck.snapshot/1",\n "gpus": [}', "not valid JSON"),
    ],
)
def test_bad_snapshots_are_one_line_errors(text: str, needle: str) -> None:
    with pytest.raises(SnapshotError) as info:
        snapshot_from_json(text, path="rig.json")
    message = str(info.value)
    assert needle in message
    assert message.startswith("rig.json")
    assert "\n" not in message


def test_json_error_names_the_line() -> None:
    with pytest.raises(SnapshotError) as info:
        snapshot_from_json('{\n"schema": "rigcheck.snapshot/1",\n"gpus": [,]}', path="rig.json")
    assert info.value.line == 3
    assert str(info.value).startswith("rig.json:3: ")


def test_committed_schemas_are_current() -> None:
    for name, text in schema_files().items():
        committed = (SCHEMA_DIR / name).read_text()
        assert committed == text, f"{name} is stale: run `python tools/update_schemas.py`"


def test_snapshot_json_validates_against_schema() -> None:
    data = snapshot_to_dict(_snapshot())
    jsonschema.validate(data, snapshot_schema())
    data["gpus"][0]["power_limit_w"] = "350 W"  # numbers as strings are what the schema forbids
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, snapshot_schema())


def test_findings_schema_accepts_a_finding() -> None:
    f = Finding(id="power.limit-below-default", severity=Severity.WARN, category="power", subject="GPU0", message="m")
    doc = json.loads(json.dumps([f.model_dump(mode="json")]))
    jsonschema.validate(doc, findings_schema())
    doc[0]["severity"] = "dire"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, findings_schema())


def test_severity_rank_orders_worst_first() -> None:
    ranked = sorted(Severity, key=lambda s: -s.rank)
    assert ranked == [Severity.FAIL, Severity.WARN, Severity.UNKNOWN, Severity.INFO, Severity.OK]


def test_schema_dir_is_packaged() -> None:
    assert SCHEMA_DIR.is_dir()
    assert Path(SCHEMA_DIR, "snapshot-1.schema.json").exists()
