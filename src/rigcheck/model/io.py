"""Snapshot JSON in and out, validated on the way in."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from rigcheck.errors import SnapshotError
from rigcheck.model.snapshot import SNAPSHOT_SCHEMA, Snapshot


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    return snapshot.model_dump(mode="json", by_alias=True)


def snapshot_to_json(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    return json.dumps(snapshot_to_dict(snapshot), indent=indent)


def snapshot_from_dict(data: object, *, path: str | None = None) -> Snapshot:
    """Validate a decoded JSON document as a snapshot; raise SnapshotError in one line if it is not."""
    if not isinstance(data, dict):
        raise SnapshotError("not a rigcheck snapshot (the JSON is not an object)", path=path)
    schema = data.get("schema")
    if schema != SNAPSHOT_SCHEMA:
        if isinstance(schema, str) and schema.startswith("rigcheck.snapshot/"):
            raise SnapshotError(
                f"snapshot schema {schema!r} is not supported (this rigcheck reads {SNAPSHOT_SCHEMA!r})",
                path=path,
            )
        raise SnapshotError(
            f'not a rigcheck snapshot ("schema" is {schema!r}, expected {SNAPSHOT_SCHEMA!r})',
            path=path,
        )
    try:
        return Snapshot.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SnapshotError(f"invalid snapshot at {where}: {first['msg']}{more}", path=path) from None


def snapshot_from_json(text: str, *, path: str | None = None) -> Snapshot:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:  # nesting deeper than the stack: no snapshot is more than a few levels deep
        raise SnapshotError("not a rigcheck snapshot (JSON nested too deeply)", path=path) from None
    except ValueError:  # an integer of over 4,300 digits: int()'s guard, never a real snapshot's value
        raise SnapshotError("not a rigcheck snapshot (a number with thousands of digits)", path=path) from None
    return snapshot_from_dict(data, path=path)
