"""The base of every command's result document, and what its generated JSON Schema must say.

A document is plain data (pydantic, no live objects): a command builds one, ``report/<document>.py`` draws it,
and its JSON Schema in ``rigcheck/schemas/`` is generated from it (``tools/update_schemas.py``). The rules
every document keeps, and its schema enforces:

- every key is always present (``required``) and no other key is allowed (``additionalProperties: false``);
- a null number has its reason: a record with a ``missing`` map (:class:`ReasonedRecord`) lists, for each of
  its nullable fields, ``if the field is null then missing names it``; the map's keys are those fields only;
- a document that embeds the snapshot or the findings refers to their own schemas (:data:`SnapshotRef`,
  :data:`FindingsRef`) instead of copying them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from rigcheck.model.finding import Finding
from rigcheck.model.snapshot import Snapshot

# A document's `created_at` (verify's, burn's and fleet's runs) and every time the ledger keeps: RFC 3339 in UTC, to
# the second ("2025-01-31T06:00:00Z"), so that times sort as text.
RFC3339: Final = "%Y-%m-%dT%H:%M:%SZ"


def utc_now() -> str:
    """Now, as a document's ``created_at``."""
    return datetime.now(timezone.utc).strftime(RFC3339)


def utc_time(text: str) -> datetime:
    """An ISO 8601 time, its "Z" read as UTC on every Python (3.10's fromisoformat takes no "Z")."""
    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)


# Field types for the embedded snapshot and findings: in the schema, a reference to their own files. pydantic
# resolves every "$ref" it sees, so the reference is written under EXTERNAL_REF and renamed to "$ref" when the
# schema is generated (rigcheck.model.schema).
EXTERNAL_REF = "x-rigcheck-ref"
SnapshotRef = Annotated[Snapshot, WithJsonSchema({EXTERNAL_REF: "../rigcheck.snapshot/1"})]
OptionalSnapshotRef = Annotated[
    Snapshot | None, WithJsonSchema({"anyOf": [{EXTERNAL_REF: "../rigcheck.snapshot/1"}, {"type": "null"}]})
]
FindingsRef = Annotated[list[Finding], WithJsonSchema({EXTERNAL_REF: "../rigcheck.findings/1"})]


def _nullable(prop: dict[str, Any]) -> bool:
    """Whether a property's schema (as pydantic writes it) admits null."""
    if prop.get("type") == "null" or (isinstance(prop.get("type"), list) and "null" in prop["type"]):
        return True
    return any(_nullable(alt) for alt in prop.get("anyOf", ()))


class Plain(BaseModel):
    """Any part of a document: strict keys; in the schema every field is required (all are always printed)."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def reason_rules(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """Add "a null has its reason" to a :class:`ReasonedRecord`'s schema (pydantic's json_schema_extra hook)."""
    props: dict[str, Any] = schema.get("properties", {})
    exempt: frozenset[str] = getattr(cls, "NOT_A_READING", frozenset())
    reasoned = [name for name, prop in props.items() if name != "missing" and name not in exempt and _nullable(prop)]
    extra_keys: tuple[str, ...] = getattr(cls, "MISSING_KEYS", ())
    missing = props.get("missing")
    if missing is not None:
        missing["propertyNames"] = {"enum": [*reasoned, *extra_keys]}
    rules = [
        {
            "if": {"properties": {name: {"type": "null"}}, "required": [name]},
            "then": {"properties": {"missing": {"required": [name]}}},
        }
        for name in reasoned
    ]
    if rules:
        schema["allOf"] = rules


class ReasonedRecord(Plain):
    """A record whose null fields each have a reason in ``missing`` (field name -> a ``Missing`` value).

    ``NOT_A_READING`` names nullable fields that are not readings (an echoed option, a label) and need no
    reason; ``MISSING_KEYS`` names keys the map may hold that are not fields of this record.
    """

    model_config = ConfigDict(json_schema_extra=reason_rules)

    NOT_A_READING: ClassVar[frozenset[str]] = frozenset()
    MISSING_KEYS: ClassVar[tuple[str, ...]] = ()


class Document(Plain):
    """A command's whole result. Subclasses declare their schema id first, as
    ``schema_: Literal["rigcheck.<name>/1"] = Field("rigcheck.<name>/1", alias="schema")`` (a field named
    ``schema`` would shadow a pydantic method)."""

    schema_: str = Field(alias="schema")

    def to_json_dict(self) -> dict[str, Any]:
        """The document as its JSON holds it (field aliases applied, enums as their values)."""
        return self.model_dump(mode="json", by_alias=True)
