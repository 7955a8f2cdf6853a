"""Read `dcgmi diag -r N -j` (DCGM's active diagnostics as JSON) into :class:`rigcheck.model.dcgm.DcgmDiag`. Pure.

DCGM has written two layouts, both read here, by their shape rather than by a version number:

- 3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results": [...]}]}],
  "version"?}}``; a result names its GPU as ``"gpu_id": "3"`` (dcgmi) or ``"gpu_ids": "0,1,2"`` (the software
  tests' one result for all GPUs), carries ``status`` and optional ``warnings`` (strings, or objects with
  ``warning`` and ``error_id``) and ``info``;
- 4.x: ``{"DCGM Diagnostic": {"test_categories": [...], "runtime_error"?}, "entity_groups", "metadata":
  {"version", "Driver Version Detected"}}``; a result names its entity (``entity_group`` "GPU", ``entity_id``),
  a test may carry a ``test_summary``.

The table dcgmi prints without ``-j`` is read into the same model by rigcheck.readers.reference.dcgm_diag_text.

Keys this reader does not know are ignored; a result for no single GPU (a software test, several GPUs, a CPU or
NVSwitch entity) is the node's. JSON that is not a DCGM diagnostic is one InputError line saying what it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from rigcheck.errors import InputError
from rigcheck.model.dcgm import DcgmDevice, DcgmDiag, DcgmMessage, DcgmResult, DcgmStatus, DcgmTest
from rigcheck.readers.reference.dcgm_diag_text import looks_like_dcgm_text, parse_dcgm_diag_table

ROOT_4X: Final = "DCGM Diagnostic"
ROOT_3X: Final = "DCGM GPU Diagnostic"
_STATUS: Final[dict[str, DcgmStatus]] = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "warn": "warn",
    "warning": "warn",
    "skip": "skip",
    "skipped": "skip",
    "not run": "not-run",
    "not_run": "not-run",
    "notrun": "not-run",
    "not-run": "not-run",
}
_SHOWN_KEYS: Final = 4  # keys named when a JSON object is not a DCGM diagnostic


def is_dcgm_diag(data: object) -> bool:
    """Whether decoded JSON is a `dcgmi diag -j` output (either layout), by its top-level key."""
    return isinstance(data, dict) and (ROOT_4X in data or ROOT_3X in data)


def parse_dcgm_diag_text(text: str, *, path: str | None = None) -> DcgmDiag:
    """:func:`parse_dcgm_diag` of JSON text, text around the JSON allowed (:func:`diag_in_text`), or of the table
    dcgmi prints without -j (rigcheck.readers.reference.dcgm_diag_text); InputError when it holds neither (a truncated
    file,
    ...)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        embedded = diag_in_text(text)
        if embedded is None:
            if not text.lstrip().startswith("{") and looks_like_dcgm_text(text):
                return parse_dcgm_diag_table(text, path=path)
            raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from None
        data = embedded.data
    return parse_dcgm_diag(data, path=path)


@dataclass(frozen=True)
class EmbeddedDiag:
    """A diagnostic's decoded JSON found inside other text, and how many lines of that text came around it."""

    data: object
    lines_before: int
    lines_after: int

    def note(self, name: str) -> str:
        around = [
            f"{count} line{'s' if count != 1 else ''} {where}"
            for count, where in ((self.lines_before, "before"), (self.lines_after, "after"))
            if count
        ]
        return f"{name}: the DCGM diagnostic's JSON was read; {' and '.join(around)} it are not JSON and were skipped"


def diag_in_text(text: str) -> EmbeddedDiag | None:
    """The `dcgmi diag -j` JSON in a file that holds other lines too (a log header or a prompt captured with
    it, a warning sent to the same file): the first JSON object that starts a line and is a DCGM diagnostic.
    None when there is none. Only DCGM's root keys are looked for: other JSON around text stays an error."""
    if ROOT_4X not in text and ROOT_3X not in text:
        return None
    decoder = json.JSONDecoder()
    offset = 0
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        body = line.lstrip()
        if body.startswith("{"):
            try:
                data, end = decoder.raw_decode(text, offset + len(line) - len(body))
            except json.JSONDecodeError:
                data, end = None, 0
            if is_dcgm_diag(data):
                return EmbeddedDiag(data, number, len(text[end:].strip().splitlines()))
        offset += len(line)
    return None


def parse_dcgm_diag(data: object, *, path: str | None = None) -> DcgmDiag:
    """The diagnostic decoded JSON holds; InputError naming what the JSON is when it is not one."""
    if not is_dcgm_diag(data):
        raise InputError(f"{_what(data)}, not a DCGM diagnostic (`dcgmi diag -r N -j` output)", path=path)
    assert isinstance(data, dict)
    layout: Literal["3.x", "4.x"] = "4.x" if ROOT_4X in data else "3.x"
    root = data[ROOT_4X if layout == "4.x" else ROOT_3X]
    if not isinstance(root, dict):
        raise InputError(
            f'a DCGM diagnostic whose "{ROOT_4X if layout == "4.x" else ROOT_3X}" is not an object', path=path
        )
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    runtime_error = _text(root.get("runtime_error")) or _text(data.get("runtime_error"))
    categories = root.get("test_categories")
    if categories is None and isinstance(root.get("tests"), list):
        categories = [{"tests": root["tests"]}]  # a layout with the tests not grouped into categories
    if not isinstance(categories, list):
        if runtime_error is None:
            raise InputError("a DCGM diagnostic with no test_categories and no runtime_error", path=path)
        categories = []
    tests = [
        _test(test, category.get("category"), n)
        for category in categories
        if isinstance(category, dict) and isinstance(category.get("tests"), list)
        for n, test in enumerate(category["tests"], start=1)
        if isinstance(test, dict)
    ]
    return DcgmDiag(
        layout=layout,
        version=_first_text(metadata, root, data, key="version"),
        driver=_first_text(metadata, root, data, key="Driver Version Detected"),
        runtime_error=runtime_error,
        tests=tests,
        devices=_devices(data.get("entity_groups")),
    )


def _devices(groups: object) -> list[DcgmDevice]:
    """4.x: the GPUs of the run and their PCI device ids, from ``entity_groups`` (group "GPU")."""
    out: list[DcgmDevice] = []
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict) or (_text(group.get("entity_group")) or "").upper() != "GPU":
            continue
        entities = group.get("entities")
        for entity in entities if isinstance(entities, list) else []:
            if isinstance(entity, dict) and (device := _text(entity.get("device_id"))) is not None:
                out.append(DcgmDevice(gpu=_int(entity.get("entity_id")), device_id=device))
    return out


def _what(data: object) -> str:
    """What a decoded JSON is, in a few words, for the error line."""
    if isinstance(data, dict):
        schema = data.get("schema")
        if isinstance(schema, str):
            return f"a {schema} document"
        if not data:
            return "an empty JSON object"
        keys = ", ".join(json.dumps(k) for k in list(data)[:_SHOWN_KEYS])
        more = ", ..." if len(data) > _SHOWN_KEYS else ""
        return f"a JSON object with keys {keys}{more}"
    if isinstance(data, list):
        return "a JSON array"
    return f"a JSON {type(data).__name__}" if data is not None else "JSON null"


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _first_text(*objects: Mapping[str, object], key: str) -> str | None:
    """The first of ``objects`` that gives ``key`` as text: DCGM moved its metadata between versions."""
    return next((t for obj in objects if (t := _text(obj.get(key))) is not None), None)


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _status(value: object) -> tuple[DcgmStatus, str]:
    raw = _text(value) or ""
    return _STATUS.get(raw.lower().replace("-", " ").strip(), "unknown" if raw else "not-run"), raw or "(none)"


def _messages(value: object) -> list[DcgmMessage]:
    """DCGM's warnings or errors: strings (old), objects with "warning"/"msg" and "error_id" (2.2 on)."""
    items = value if isinstance(value, list) else [value] if value is not None else []
    out: list[DcgmMessage] = []
    for item in items:
        if isinstance(item, dict):
            text = _first_text(item, key="warning") or _first_text(item, key="msg") or _first_text(item, key="message")
            error_id = _int(item.get("error_id", item.get("error_code")))
            if text is not None or error_id is not None:
                out.append(DcgmMessage(text=text or "", error_id=error_id))
        elif (text := _text(item)) is not None:
            out.append(DcgmMessage(text=text, error_id=None))
    return out


def _info(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value] if value is not None else []
    texts = [_text(i) if not isinstance(i, dict) else _first_text(i, key="msg") for i in items]
    return [t for t in texts if t is not None]


def _subject(result: Mapping[str, object]) -> tuple[int | None, str | None]:
    """The GPU a result is of, else (None, what it is of when that is said)."""
    group = _text(result.get("entity_group"))
    if group is not None or "entity_id" in result:
        entity = _int(result.get("entity_id"))
        if (group or "GPU").upper() == "GPU" and entity is not None:
            return entity, None
        return None, f"{group or 'entity'} {result.get('entity_id')}"
    for key in ("gpu_id", "gpu_ids"):
        value = result.get(key)
        if (single := _int(value)) is not None:
            return single, None
        if isinstance(value, str) and value.strip():
            ids = [p.strip() for p in value.split(",") if p.strip()]
            if len(ids) == 1 and ids[0].isdigit():
                return int(ids[0]), None
            return None, f"GPUs {','.join(ids)}"
    return None, None


def _result(result: Mapping[str, object]) -> DcgmResult:
    gpu, entity = _subject(result)
    status, raw = _status(result.get("status"))
    warnings = _messages(result.get("warnings")) + _messages(result.get("errors"))
    return DcgmResult(
        gpu=gpu, entity=entity, status=status, status_text=raw, warnings=warnings, info=_info(result.get("info"))
    )


def _test(test: Mapping[str, object], category: object, n: int) -> DcgmTest:
    raw = test.get("results")
    results = [_result(r) for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
    summary = test.get("test_summary")
    if isinstance(summary, dict):
        # 4.x: the summary speaks for the node when no result does, or when it fails and no result says why.
        node = _result(summary)
        if not results or (node.status == "fail" and all(r.status != "fail" for r in results)):
            results.append(node.model_copy(update={"gpu": None, "entity": None}))
    return DcgmTest(name=_text(test.get("name")) or f"test {n}", category=_text(category), results=results)
