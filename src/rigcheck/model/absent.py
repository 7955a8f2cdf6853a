"""Keys printed only when they hold something: :func:`absent_unless_set` fields, which the schema leaves optional
and never null.

Re-exported by rigcheck.model.bench, where they began; kept here so that file stays small.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field


def _is_unset(value: object) -> bool:
    return value is None or (isinstance(value, dict | list) and not value)


def _never_null(schema: dict[str, Any]) -> None:
    """A key that is absent rather than null: its schema without the null alternative (nor a default)."""
    alternatives = [alt for alt in schema.pop("anyOf", []) if alt.get("type") != "null"]
    if len(alternatives) == 1:
        schema.update(alternatives[0])
    elif alternatives:
        schema["anyOf"] = alternatives
    schema.pop("default", None)


def absent_unless_set(description: str = "", *, empty: Any = None) -> Any:
    """A field printed only when it holds something (not None, not empty); ``empty`` is its default.

    The generated schema leaves it out of ``required`` (pydantic does that for ``exclude_if``) and never null.
    """
    default: dict[str, Any] = {"default_factory": dict} if empty == {} else {"default": empty}
    return Field(**default, exclude_if=_is_unset, json_schema_extra=_never_null, description=description or None)
